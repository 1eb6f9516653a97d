//! `promptgate demo`: a private tmux server, a simulated agent, and the gate and
//! one delivery, narrated. Needs only tmux: no real agent, no network.

use super::out;
use crate::cli::DemoArgs;
use crate::error::{Error, Result};
use crate::tmux::{Process, Server, Tmux};
use std::process::Command;
use std::time::{Duration, Instant};

pub fn run(a: DemoArgs) -> Result<i32> {
    let exe = std::env::current_exe()?;
    let exe_s = exe.display().to_string();
    let socket = format!("promptgate-demo-{}", std::process::id());
    let dir = std::env::temp_dir().join(&socket);
    std::fs::create_dir_all(&dir)?;
    let transcript = dir.join("transcript.jsonl");
    let tmux = Process::new(Server::Name(socket.clone()));
    let argv: Vec<String> = [
        &exe_s,
        "fake-agent",
        "--like",
        &a.like,
        "--blank-ms",
        "1500",
        "--dialog",
        "trust",
        "--busy-ms",
        "2500",
        "--transcript",
        &transcript.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let pane = tmux.new_session("demo", 100, 30, &argv)?;
    let guard = Cleanup {
        tmux: tmux.clone(),
        keep: a.keep,
    };
    let pg = |args: &[&str]| {
        Command::new(&exe)
            .args(["-L", &socket])
            .args(args)
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
        "promptgate demo: a simulated {} agent in pane {pane} on the private server -L {socket}",
        a.like
    ))?;
    out("It stays blank for 1.5 s, then opens a trust dialog. Watching its state:")?;
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
    if a.keep {
        out(&format!("\nThe demo server is still running: tmux -L {socket} attach   (stop it: tmux -L {socket} kill-server)"))?;
    }
    drop(guard);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(if n == 1 { 0 } else { 1 })
}

struct Cleanup {
    tmux: Process,
    keep: bool,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.keep {
            let _ = self.tmux.kill_server();
        }
    }
}
