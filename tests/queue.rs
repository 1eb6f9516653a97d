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
#[ignore = "slow live suite: a plain cargo test leaves it out; run with --ignored or --include-ignored (.ci/run and the tmux matrix do)"]
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
    // (--once looks once: the agent must have drawn its composer by then)
    srv.wait_state(&pane, "ready", 10.0);
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

#[test]
fn queue_add_into_a_shell_pane_is_refused_as_not_agent() {
    let srv = TmuxServer::new(100, 30, &["sh"]);
    let qdir = srv.dir.path().join("queue");
    std::thread::sleep(Duration::from_millis(300));
    let o = queue_cmd(
        &srv,
        &qdir,
        &["add", "-t", "main:", "echo typed-into-a-shell"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&o), 24, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no agent") && stderr(&o).contains("nothing queued"),
        "{}",
        stderr(&o)
    );
    let o = queue_cmd(&srv, &qdir, &["list"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "", "nothing queued");
}

#[test]
fn queue_drop_takes_any_unique_prefix_of_the_id() {
    let srv = TmuxServer::new(100, 30, &[]);
    let qdir = srv.dir.path().join("queue");
    let (pane, _t) = srv.fake("claude", &["--dialog", "trust"]);
    srv.wait_state(&pane, "dialog:trust", 10.0);
    let add = |body: &str| {
        let o = queue_cmd(&srv, &qdir, &["add", "-t", &pane, body])
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let (a, b) = (add("first"), add("second"));
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    assert!(common > 0);
    // ambiguous: a clear error, nothing dropped
    let o = queue_cmd(&srv, &qdir, &["drop", &a[..common]])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ambiguous") && stderr(&o).contains(&a),
        "{}",
        stderr(&o)
    );
    // unique: dropped, and named in full
    let o = queue_cmd(&srv, &qdir, &["drop", &b[..common + 1]])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("dropped {b}")
    );
    let o = queue_cmd(&srv, &qdir, &["list"]).output().unwrap();
    let list = String::from_utf8_lossy(&o.stdout);
    assert!(list.contains(&a) && !list.contains(&b), "{list}");
    let o = queue_cmd(&srv, &qdir, &["drop", "no-such-id"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn queue_run_once_with_nothing_to_do_says_so() {
    let srv = TmuxServer::new(100, 30, &[]);
    let qdir = srv.dir.path().join("queue");
    // an empty queue: exit 0, and says so
    let o = queue_cmd(&srv, &qdir, &["run", "--once"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("nothing queued for server -L promptgate-test-"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // a prompt that cannot be delivered now: exit 20, naming it and why
    let (pane, _t) = srv.fake("claude", &["--dialog", "trust"]);
    srv.wait_state(&pane, "dialog:trust", 10.0);
    for body in ["later", "later still"] {
        let o = queue_cmd(&srv, &qdir, &["add", "-t", &pane, body])
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let o = queue_cmd(&srv, &qdir, &["run", "--once"]).output().unwrap();
    assert_eq!(code(&o), 20, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("2 left that cannot be delivered now")
            && e.contains(&format!("{pane} pending (dialog:trust)"))
            && e.contains(&format!(
                "{pane} pending (behind an earlier prompt for this pane)"
            )),
        "{e}"
    );
}

#[test]
fn queue_run_prints_progress_while_it_delivers() {
    use std::io::BufRead;
    let srv = TmuxServer::new(100, 30, &[]);
    let qdir = srv.dir.path().join("queue");
    let (pane, t) = srv.fake("claude", &["--busy-ms", "1500"]);
    srv.wait_state(&pane, "ready", 15.0);
    let o = srv.pg(&["send", "-t", &pane, "make it busy"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for body in ["step one", "step two"] {
        let o = queue_cmd(&srv, &qdir, &["add", "-t", &pane, body])
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let mut w = queue_cmd(&srv, &qdir, &["run", "--gate-timeout", "0.3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = w.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(stdout)
            .lines()
            .map_while(|l| l.ok())
        {
            let _ = tx.send(l);
        }
    });
    let mut lines: Vec<String> = Vec::new();
    let start = Instant::now();
    while lines.iter().filter(|l| l.contains("\tdelivered\t")).count() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "watcher output so far: {lines:#?}"
        );
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(200)) {
            lines.push(l);
        }
    }
    // the watcher is still running: this output came while it worked
    assert!(w.try_wait().unwrap().is_none());
    w.kill().unwrap();
    w.wait().unwrap();
    assert!(
        lines[0].starts_with("queue: 2 prompt(s) for 1 pane(s) on server"),
        "{lines:#?}"
    );
    // a busy agent is reported when it turns busy, not every round (about five
    // rounds of 0.3 s per prompt here): never the same line twice in a row
    let waiting: Vec<&String> = lines.iter().filter(|l| l.contains("\twaiting\t")).collect();
    assert!(!waiting.is_empty(), "{lines:#?}");
    assert!(waiting.windows(2).all(|w| w[0] != w[1]), "{lines:#?}");
    assert!(
        waiting[0].contains("claude busy: not ready yet"),
        "{lines:#?}"
    );
    let delivered: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("\tdelivered\t"))
        .collect();
    assert!(delivered[0].starts_with(&format!("{pane}\tdelivered\t")));
    assert!(
        delivered[0].ends_with("claude consumed \"step one\""),
        "{lines:#?}"
    );
    assert!(
        delivered[1].ends_with("claude consumed \"step two\""),
        "{lines:#?}"
    );
    assert_eq!(prompts(&t), vec!["make it busy", "step one", "step two"]);
}
