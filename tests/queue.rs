//! The durable queue survives a watcher killed with SIGKILL at random points:
//! every prompt lands exactly once, in order per pane.

mod common;
use common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn queue_cmd(srv: &TmuxServer, qdir: &std::path::Path, args: &[&str]) -> std::process::Command {
    let mut c = srv.pg_cmd(&["queue"]);
    c.args(args).env("PROMPTGATE_QUEUE_DIR", qdir);
    c
}

#[test]
fn killed_watcher_never_loses_or_repeats_a_prompt() {
    let srv = TmuxServer::new(100, 30, &[]);
    let qdir = srv.dir.path().join("queue");
    let likes = ["claude", "codex", "gemini", "claude"];
    let panes: Vec<(String, std::path::PathBuf)> = likes
        .iter()
        .map(|l| srv.fake(l, &["--busy-ms", "80"]))
        .collect();
    for (p, _) in &panes {
        srv.wait_state(p, "ready", 15.0);
    }
    let mut want: Vec<Vec<String>> = vec![Vec::new(); panes.len()];
    for n in 0..50 {
        for (i, (p, _)) in panes.iter().enumerate() {
            let body = if n % 7 == 3 {
                format!("pane {i} prompt {n:03}: several lines\nline two of {n}\nline three;")
            } else {
                format!("pane {i} prompt {n:03}: run the next step")
            };
            let o = queue_cmd(&srv, &qdir, &["add", "-t", p, &body])
                .output()
                .unwrap();
            assert_eq!(code(&o), 0, "{}", stderr(&o));
            want[i].push(body);
        }
    }
    let remaining = || -> usize {
        let o = queue_cmd(&srv, &qdir, &["list", "--json"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).lines().count()
    };
    assert_eq!(remaining(), 200);
    // Kill the watcher at pseudo-random points, 30 times across the run, then let
    // the last one drain the queue. Each life is long enough to make progress on a
    // loaded 2-core machine, short enough to land in every phase of a delivery.
    let mut seed: u64 = 0x9e3779b97f4a7c15;
    let mut kills = 0;
    let start = Instant::now();
    while remaining() > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "queue did not drain: {} left",
            remaining()
        );
        let mut w = queue_cmd(&srv, &qdir, &["run", "--interval", "50"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if kills < 30 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            std::thread::sleep(Duration::from_millis(300 + seed % 2200));
            w.kill().unwrap(); // SIGKILL
            kills += 1;
        } else {
            while remaining() > 0 && start.elapsed() < Duration::from_secs(600) {
                std::thread::sleep(Duration::from_millis(200));
            }
            w.kill().unwrap();
        }
        w.wait().unwrap();
    }
    assert!(kills >= 5, "the watcher was killed only {kills} times");
    std::thread::sleep(Duration::from_millis(300));
    for (i, (_, t)) in panes.iter().enumerate() {
        assert_eq!(
            prompts(t),
            want[i],
            "pane {i}: every prompt exactly once, in order"
        );
    }
    eprintln!(
        "drained 200 prompts through {kills} SIGKILLed watchers in {:?}",
        start.elapsed()
    );
}

#[test]
fn held_items_stay_with_their_receipt_and_drop_removes_them() {
    let srv = TmuxServer::new(100, 30, &[]);
    let qdir = srv.dir.path().join("queue");
    let (pane, transcript) = srv.fake("claude", &["--dialog", "trust"]);
    srv.wait_state(&pane, "dialog:trust", 10.0);
    let o = queue_cmd(&srv, &qdir, &["add", "-t", &pane, "wait for the dialog"])
        .output()
        .unwrap();
    let id = String::from_utf8_lossy(&o.stdout).trim().to_string();
    // the status segment shows the queue length
    let mut c = srv.pg_cmd(&["status", "--format", "plain"]);
    c.env("PROMPTGATE_QUEUE_DIR", &qdir);
    let seg = String::from_utf8_lossy(&c.output().unwrap().stdout)
        .trim()
        .to_string();
    assert!(seg.ends_with("!+1"), "status segment {seg:?}");
    let o = queue_cmd(&srv, &qdir, &["run", "--once", "--gate-timeout", "0.5"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 20, "{}", stderr(&o));
    let o = queue_cmd(&srv, &qdir, &["list"]).output().unwrap();
    let list = String::from_utf8_lossy(&o.stdout);
    assert!(
        list.contains(&id) && list.contains("pending") && list.contains("not-sent"),
        "{list}"
    );
    assert!(records(&transcript, "dialog-input").is_empty());
    // a person closes the dialog; the next run delivers
    srv.tmux(&["send-keys", "-t", &pane, "Enter"]);
    let o = queue_cmd(&srv, &qdir, &["run", "--once"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&transcript), vec!["wait for the dialog"]);
    let o = queue_cmd(&srv, &qdir, &["drop", &id]).output().unwrap();
    assert_eq!(code(&o), 2, "already delivered and gone");
    // only one watcher per server
    let mut w = queue_cmd(&srv, &qdir, &["run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let o = queue_cmd(&srv, &qdir, &["run", "--once"]).output().unwrap();
    assert_eq!(code(&o), 28, "{}", stderr(&o));
    w.kill().unwrap();
    w.wait().unwrap();
}
