//! `promptgate demo`: a private tmux server, a simulated agent, and the gate and
//! one delivery, narrated. Needs only tmux: no real agent, no network.
//!
//! `-L NAME` / `-S PATH` choose the server (default: a new private one). On a
//! server that already runs, the demo opens a session of its own and, unless
//! `--keep`, closes only that session. Its sends go to a private delivery log in
//! its temporary directory, never to the user's.

use crate::app::cli::DemoArgs;
use crate::app::out::out;
use crate::core::error::{Error, Result};
use crate::io::tmux::{Process, Server, Tmux};
use std::process::Command;
use std::time::{Duration, Instant};

pub fn run(server: &Server, remote: bool, a: DemoArgs) -> Result<i32> {
    if remote {
        return Err(Error::Usage(
            "demo runs its simulated agent on this machine; --host is not supported".into(),
        ));
    }
    let (d, guard) = Demo::start(server, &a)?;
    d.watch_until_dialog()?;
    d.send_into_the_dialog()?;
    d.dismiss_the_dialog()?;
    d.send_when_ready(&a.body)?;
    let n = d.what_the_agent_received(&a.body)?;
    d.say_where_things_are(a.keep)?;
    drop(guard);
    if !a.keep {
        let _ = std::fs::remove_dir_all(&d.dir);
    }
    Ok(if n == 1 { 0 } else { 1 })
}

/// One demo: its server, session, simulated agent and files.
struct Demo {
    exe: std::path::PathBuf,
    server: Server,
    tmux: Process,
    spec: String,
    session: String,
    /// The server ran before the demo (the demo added a session to it).
    existed: bool,
    pane: String,
    dialog: &'static str,
    dir: std::path::PathBuf,
    transcript: std::path::PathBuf,
    log: std::path::PathBuf,
}

impl Demo {
    /// The server (a new private one by default), a session running the
    /// simulated agent, and what stops them.
    fn start(server: &Server, a: &DemoArgs) -> Result<(Demo, Cleanup)> {
        let exe = std::env::current_exe()?;
        let exe_s = exe.display().to_string();
        let me = format!("promptgate-demo-{}", std::process::id());
        let server = match server {
            Server::Default => Server::Name(me.clone()),
            s => s.clone(),
        };
        let tmux = Process::new(server.clone());
        // A server that already runs is someone's: the demo adds a session and removes only that.
        let existed = tmux.run(&["list-sessions"], None, None).is_ok();
        let session = if existed { me.clone() } else { "demo".into() };
        let dir = std::env::temp_dir().join(&me);
        std::fs::create_dir_all(&dir)?;
        let transcript = dir.join("transcript.jsonl");
        let log = dir.join("deliveries.jsonl");
        // the simulated agent keeps its record (as the real one does) in a HOME of
        // its own, so the receipt's proof comes from that record
        let home = format!("HOME={}", dir.join("home").display());
        // OpenCode has no trust dialog: its look-alike opens its permission prompt
        let dialog = if a.like == "opencode" {
            "permission"
        } else {
            "trust"
        };
        let argv: Vec<String> = [
            "env",
            &home,
            &exe_s,
            "fake-agent",
            "--records",
            "--like",
            &a.like,
            "--blank-ms",
            "1500",
            "--dialog",
            dialog,
            "--busy-ms",
            "2500",
            "--transcript",
            &transcript.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let pane = tmux.new_session(&session, 100, 30, &argv)?;
        let guard = Cleanup {
            tmux: tmux.clone(),
            keep: a.keep,
            session: existed.then(|| session.clone()),
        };
        let spec = server.spec();
        out(&format!(
            "promptgate demo: a simulated {} agent in pane {pane} on the {} server {spec}",
            a.like,
            if existed { "running" } else { "private" }
        ))?;
        let d = Demo {
            exe,
            server,
            tmux,
            spec,
            session,
            existed,
            pane,
            dialog,
            dir,
            transcript,
            log,
        };
        Ok((d, guard))
    }

    /// Run promptgate on the demo's server, its sends logged to the demo's log.
    fn pg(&self, args: &[&str]) -> Result<std::process::Output> {
        Command::new(&self.exe)
            .args(self.server.args())
            .args(args)
            .env("PROMPTGATE_LOG", &self.log)
            .output()
            .map_err(Error::Io)
    }

    /// The pane's state word (`promptgate state`), and its whole line.
    fn state(&self) -> Result<(String, String)> {
        let o = self.pg(&["state", "-t", &self.pane])?;
        let line = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let state = line.split('\t').nth(2).unwrap_or("?").to_string();
        Ok((state, line))
    }

    fn show(&self, label: &str, o: &std::process::Output) -> Result<()> {
        let text = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let err = String::from_utf8_lossy(&o.stderr).trim().to_string();
        out(&format!(
            "{label} (exit {}):",
            o.status.code().unwrap_or(-1)
        ))?;
        for l in text.lines().chain(err.lines()) {
            out(&format!("    {l}"))?;
        }
        Ok(())
    }

    /// Each state the agent shows as it starts, until its dialog opens.
    fn watch_until_dialog(&self) -> Result<()> {
        out(&format!(
            "It stays blank for 1.5 s, then opens a {} dialog. Watching its state:",
            self.dialog
        ))?;
        let start = Instant::now();
        let mut last = String::new();
        while start.elapsed() < Duration::from_secs(6) {
            let (state, line) = self.state()?;
            if state != last {
                out(&format!("  {:>5} ms  {line}", start.elapsed().as_millis()))?;
                last = state.clone();
            }
            if state.starts_with("dialog") {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    fn send_into_the_dialog(&self) -> Result<()> {
        self.show(
            "\n$ promptgate send -t PANE 'yes 1' (into the dialog)",
            &self.pg(&["send", "-t", &self.pane, "yes 1"])?,
        )?;
        out("  Refused, nothing typed: a `1` typed into a dialog could approve it.")
    }

    /// The user's Enter closes the dialog; a person sends once it has gone (on
    /// a loaded machine the agent may take a moment to read the Enter, and a
    /// send that still saw the dialog would be refused).
    fn dismiss_the_dialog(&self) -> Result<()> {
        out(
            "\nThe user dismisses the dialog with Enter; now the gate waits for a real, still prompt.",
        )?;
        let mut t = self.tmux.clone();
        t.send_key(&self.pane, "Enter")?;
        let gone = Instant::now();
        while gone.elapsed() < Duration::from_secs(10) {
            if !self.state()?.0.starts_with("dialog") {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    fn send_when_ready(&self, body: &str) -> Result<()> {
        self.show(
            &format!("$ promptgate send -t PANE --json {body:?}"),
            &self.pg(&["send", "-t", &self.pane, "--json", body])?,
        )?;
        self.show(
            "$ promptgate state -t PANE (right after)",
            &self.pg(&["state", "-t", &self.pane])?,
        )
    }

    /// The prompts in the agent's transcript, each checked against the body;
    /// how many there were.
    fn what_the_agent_received(&self, body: &str) -> Result<usize> {
        out("\nWhat the agent received (its transcript):")?;
        let got = std::fs::read_to_string(&self.transcript).unwrap_or_default();
        let mut n = 0;
        for l in got.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_default();
            if v["kind"] == "prompt" {
                n += 1;
                let text = v["text"].as_str().unwrap_or("");
                out(&format!(
                    "    prompt #{n}: {text:?} ({})",
                    if text == body {
                        "byte-exact"
                    } else {
                        "DIFFERENT"
                    }
                ))?;
            }
        }
        out(&format!(
            "  {n} prompt(s) received; the body was delivered {}.",
            if n == 1 {
                "exactly once"
            } else {
                "NOT exactly once"
            }
        ))?;
        Ok(n)
    }

    /// Where the demo's log went, and with --keep how to reach what stays.
    fn say_where_things_are(&self, keep: bool) -> Result<()> {
        let (spec, session, pane) = (&self.spec, &self.session, &self.pane);
        let logged = std::fs::read_to_string(&self.log)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if !keep {
            return out(&format!(
                "\nThe demo's sends ({logged} records) went to its own delivery log in {}, removed with the demo, not to yours.",
                self.dir.display()
            ));
        }
        let attach = format!("tmux {spec} attach -t ={session}");
        let stop = if self.existed {
            format!("tmux {spec} kill-session -t ={session}")
        } else {
            format!("tmux {spec} kill-server")
        };
        out(&format!(
            "\nThe demo's sends ({logged} records) went to its own delivery log, {}, not to yours.",
            self.log.display()
        ))?;
        out(&format!(
            "The demo agent is still running in {pane}: {attach}   (stop it: {stop})"
        ))?;
        out(&format!(
            "Its files (delivery log, transcript, HOME) stay in {} until you remove them: rm -rf {}",
            self.dir.display(),
            crate::io::tmux::sh_quote(&self.dir.display().to_string())
        ))?;
        out(&format!(
            "Try it by hand: promptgate {spec} send -t {pane} \"your prompt\"   (transcript: {})",
            self.transcript.display()
        ))
    }
}

/// Stops what the demo started: its own server, or only its session on a
/// server that already ran (`session`).
struct Cleanup {
    tmux: Process,
    keep: bool,
    session: Option<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        match &self.session {
            Some(s) => {
                let _ = self
                    .tmux
                    .run(&["kill-session", "-t", &format!("={s}")], None, None);
            }
            None => {
                let _ = self.tmux.kill_server();
            }
        }
    }
}
