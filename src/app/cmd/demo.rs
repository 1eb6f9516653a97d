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
    let pg = |args: &[&str]| {
        Command::new(&exe)
            .args(server.args())
            .args(args)
            .env("PROMPTGATE_LOG", &log)
            .output()
            .map_err(Error::Io)
    };
    let show = |label: &str, o: &std::process::Output| -> Result<()> {
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
    };
    out(&format!(
        "promptgate demo: a simulated {} agent in pane {pane} on the {} server {spec}",
        a.like,
        if existed { "running" } else { "private" }
    ))?;
    out(&format!(
        "It stays blank for 1.5 s, then opens a {dialog} dialog. Watching its state:"
    ))?;
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < Duration::from_secs(6) {
        let o = pg(&["state", "-t", &pane])?;
        let line = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let state = line.split('\t').nth(2).unwrap_or("?").to_string();
        if state != last {
            out(&format!("  {:>5} ms  {line}", start.elapsed().as_millis()))?;
            last = state.clone();
        }
        if state.starts_with("dialog") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    show(
        "\n$ promptgate send -t PANE 'yes 1' (into the dialog)",
        &pg(&["send", "-t", &pane, "yes 1"])?,
    )?;
    out("  Refused, nothing typed: a `1` typed into a dialog could approve it.")?;
    out(
        "\nThe user dismisses the dialog with Enter; now the gate waits for a real, still prompt.",
    )?;
    let mut t = tmux.clone();
    t.send_key(&pane, "Enter")?;
    // A person sends once the dialog has gone; on a loaded machine the agent may
    // take a moment to read the Enter, and a send that still saw the dialog
    // would be refused.
    let gone = Instant::now();
    while gone.elapsed() < Duration::from_secs(10) {
        let o = pg(&["state", "-t", &pane])?;
        let line = String::from_utf8_lossy(&o.stdout).to_string();
        if !line.split('\t').nth(2).unwrap_or("").starts_with("dialog") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let body = a.body.clone();
    show(
        &format!("$ promptgate send -t PANE --json {body:?}"),
        &pg(&["send", "-t", &pane, "--json", &body])?,
    )?;
    show(
        "$ promptgate state -t PANE (right after)",
        &pg(&["state", "-t", &pane])?,
    )?;
    out("\nWhat the agent received (its transcript):")?;
    let got = std::fs::read_to_string(&transcript).unwrap_or_default();
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
    let logged = std::fs::read_to_string(&log)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    if a.keep {
        let attach = format!("tmux {spec} attach -t ={session}");
        let stop = if existed {
            format!("tmux {spec} kill-session -t ={session}")
        } else {
            format!("tmux {spec} kill-server")
        };
        out(&format!(
            "\nThe demo's sends ({logged} records) went to its own delivery log, {}, not to yours.",
            log.display()
        ))?;
        out(&format!(
            "The demo agent is still running in {pane}: {attach}   (stop it: {stop})"
        ))?;
        out(&format!(
            "Its files (delivery log, transcript, HOME) stay in {} until you remove them: rm -rf {}",
            dir.display(),
            crate::app::cmd::mcp::sh_quote(&dir.display().to_string())
        ))?;
        out(&format!(
            "Try it by hand: promptgate {spec} send -t {pane} \"your prompt\"   (transcript: {})",
            transcript.display()
        ))?;
    } else {
        out(&format!(
            "\nThe demo's sends ({logged} records) went to its own delivery log in {}, removed with the demo, not to yours.",
            dir.display()
        ))?;
    }
    drop(guard);
    if !a.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(if n == 1 { 0 } else { 1 })
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
