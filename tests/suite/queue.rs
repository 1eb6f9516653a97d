//! The durable queue survives a watcher killed with SIGKILL at random points:
//! every prompt lands exactly once, in order per pane.

use crate::common;
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
        // with their records: a killed watcher's item is checked against them
        .map(|l| srv.fake(l, &["--busy-ms", "80", "--records"]))
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

/// Queue `body` for `pane` and leave its item as a killed watcher would have:
/// at `phase`, with the record's mark from before anything was typed (no
/// record file yet: every file is new). Returns the item's id and file.
fn add_as_killed(
    srv: &TmuxServer,
    qdir: &std::path::Path,
    pane: &str,
    body: &str,
    phase: &str,
) -> (String, std::path::PathBuf) {
    let o = queue_cmd(srv, qdir, &["add", "-t", pane, body])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let id = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let file = qdir.join(format!("{id}.json"));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["phase"] = phase.into();
    v["record_mark"] = serde_json::json!({"sizes": {}, "complete": true});
    std::fs::write(&file, v.to_string()).unwrap();
    (id, file)
}

/// A watcher killed after the agent took its prompt, before it could journal
/// the receipt: the item still says `typing` and the composer is empty (as when
/// nothing was typed). The agent's record, as of the mark journalled with the
/// phase, holds the body: the recovery says consumed and types nothing again.
/// An item whose body the record does not hold is typed once, as before.
#[test]
fn a_killed_watchers_item_the_record_holds_is_never_typed_again() {
    let srv = TmuxServer::new(100, 30, &[]);
    let qdir = srv.dir.path().join("queue");
    for like in ["claude", "gemini"] {
        let (pane, transcript) = srv.fake(like, &["--records", "--busy-ms", "100"]);
        srv.wait_state(&pane, "ready", 15.0);
        let add = |body: &str| add_as_killed(&srv, &qdir, &pane, body, "typing").1;
        let taken = format!("{like}: taken before the watcher died");
        let file = add(&taken);
        // the dead watcher's typing and Enter, which the agent took and recorded
        let o = srv.pg_cmd(&["send", "-t", &pane, &taken]).output().unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        srv.wait_state(&pane, "ready", 10.0);
        let o = queue_cmd(&srv, &qdir, &["run", "--once"]).output().unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(!file.exists(), "{like}: the recovered item is still queued");
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            prompts(&transcript),
            vec![taken.clone()],
            "{like}: typed again"
        );
        // not in the record: nothing was typed before the crash, so it is typed now
        let fresh = format!("{like}: never typed before the watcher died");
        let file = add(&fresh);
        for _ in 0..2 {
            let o = queue_cmd(&srv, &qdir, &["run", "--once"]).output().unwrap();
            assert_eq!(code(&o), 0, "{}", stderr(&o));
            srv.wait_state(&pane, "ready", 10.0);
        }
        assert!(!file.exists(), "{like}: the item is still queued");
        assert_eq!(prompts(&transcript), vec![taken, fresh], "{like}");
    }
}

/// A watcher killed between typing the body and pressing Enter: the item says
/// `submitting` and the body sits in the composer. The recovery presses the
/// submit key once and proves the prompt from the agent's record, as a send
/// does (the record watched beside the screen: once it holds the body, no
/// submit key is pressed again).
#[test]
fn a_killed_watchers_typed_body_is_submitted_once_with_the_records_proof() {
    let srv = TmuxServer::new(100, 30, &[]);
    let qdir = srv.dir.path().join("queue");
    let (pane, transcript) = srv.fake("claude", &["--records", "--busy-ms", "100"]);
    srv.wait_state(&pane, "ready", 15.0);
    let body = "typed by the watcher that died before its Enter";
    let (id, file) = add_as_killed(&srv, &qdir, &pane, body, "submitting");
    // the dead watcher's typing, without its Enter
    srv.tmux(&["send-keys", "-t", &pane, "-l", body]);
    srv.wait_state(&pane, "draft", 10.0);
    let o = queue_cmd(&srv, &qdir, &["run", "--once"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!file.exists(), "the recovered item is still queued");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(prompts(&transcript), vec![body.to_string()]);
    let log = std::fs::read_to_string(srv.dir.path().join("deliveries.jsonl")).unwrap();
    let rec: serde_json::Value = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .rfind(|r| r["queue_id"] == id.as_str())
        .unwrap_or_else(|| panic!("no log line for {id} in {log}"));
    assert_eq!(rec["receipt"], "consumed", "{rec}");
    assert_eq!(
        rec["evidence"]["rule"], "queue.recovered-submitted",
        "{rec}"
    );
    assert_eq!(rec["proof"]["match"], "exact", "{rec}");
}

/// A watcher journalled `submitting` (with its record mark) and died before
/// its Enter; the draft was then cleared (or the agent restarted). The next
/// watcher finds an empty composer, but the agent's own record, known to be
/// this agent's, has no entry for the body: not `consumed` (delivered zero
/// times), not typed again by itself (it may have been taken): held as
/// `unproven`, and `queue list` says why.
#[test]
fn a_recovered_item_the_record_never_got_is_held_not_called_consumed() {
    let srv = TmuxServer::new(120, 40, &[]);
    let qdir = srv.dir.path().join("queue");
    std::fs::create_dir_all(&qdir).unwrap();
    let home = srv.dir.path().join("home-rec");
    let (pane, transcript) = srv.fake_in(&home, "claude", &["--records", "--busy-ms", "200"]);
    srv.wait_state(&pane, "ready", 10.0);
    // the record exists, and is known to be this agent's
    assert_eq!(
        code(&srv.pg(&["send", "-t", &pane, "an earlier prompt"])),
        0
    );
    srv.wait_state(&pane, "ready", 10.0);
    let mut sizes = serde_json::Map::new();
    for d in std::fs::read_dir(home.join(".claude/projects"))
        .unwrap()
        .flatten()
    {
        for f in std::fs::read_dir(d.path()).unwrap().flatten() {
            let len = f.metadata().unwrap().len();
            sizes.insert(f.path().display().to_string(), len.into());
        }
    }
    let id = "00000000000000000001-00001-000";
    let item = serde_json::json!({"id": id, "server": format!("-L {}", srv.socket), "pane": pane,
        "agent": null, "body": "never delivered", "created_ms": 1, "phase": "submitting",
        "attempts": 1, "record_mark": {"sizes": sizes, "complete": true}});
    let file = qdir.join(format!("{id}.json"));
    std::fs::write(&file, item.to_string()).unwrap();
    let o = queue_cmd(&srv, &qdir, &["run", "--once"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(code(&o), 20, "{out}{}", stderr(&o));
    assert!(out.contains("held") && out.contains("unproven"), "{out}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(prompts(&transcript), vec!["an earlier prompt"]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["phase"], "held", "{v}");
    assert_eq!(v["last_receipt"], "unproven", "{v}");
    let o = queue_cmd(&srv, &qdir, &["list"]).output().unwrap();
    let list = String::from_utf8_lossy(&o.stdout);
    assert!(list.contains(id) && list.contains("unproven"), "{list}");
    let log = std::fs::read_to_string(srv.dir.path().join("deliveries.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["queue_id"] == id)
        .collect();
    assert_eq!(recs.len(), 1, "{log}");
    assert_eq!(recs[0]["receipt"], "unproven", "{log}");
    assert_eq!(
        recs[0]["evidence"]["rule"], "queue.recovered-record-lacks-body",
        "{log}"
    );
    // held: the next watcher leaves it alone, and types nothing
    let o = queue_cmd(&srv, &qdir, &["run", "--once"]).output().unwrap();
    assert_eq!(code(&o), 20, "{}", stderr(&o));
    assert_eq!(prompts(&transcript), vec!["an earlier prompt"]);
}

/// The fake agent's command line, its transcript `t` and HOME `home`.
fn fake_argv(home: &std::path::Path, t: &std::path::Path) -> Vec<String> {
    let _ = std::fs::create_dir_all(home);
    [
        "env",
        "-u",
        "CODEX_HOME",
        "-u",
        "CLAUDE_CONFIG_DIR",
        &format!("HOME={}", home.display()),
        bin().to_str().unwrap(),
        "fake-agent",
        "--like",
        "claude",
        "--transcript",
        t.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

/// A prompt queued for `%0`, then the tmux server restarts (or is killed and
/// started again): its new `%0` is another pane, another project's agent. The
/// watcher holds the prompt, types nothing there, and `queue list` says why.
#[test]
fn a_prompt_queued_before_the_server_restarted_is_held_not_typed_into_its_new_pane() {
    let dir = tempfile::tempdir().unwrap();
    let socket = format!("promptgate-test-{}-restart", std::process::id());
    // whatever happens, the servers on this socket end with the test
    struct Kill(String);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = tmux_on(&self.0, &["kill-server"]);
        }
    }
    let _kill = Kill(socket.clone());
    let qdir = dir.path().join("queue");
    let t = |n: &str| dir.path().join(format!("{n}.jsonl"));
    // %0 and %1, an agent in each
    let start = |session: &str, t0: &std::path::Path, t1: &std::path::Path| {
        let argv = fake_argv(&dir.path().join("home"), t0);
        let mut args: Vec<&str> = vec!["-f", "/dev/null", "new-session", "-d", "-s", session];
        args.extend(["-x", "120", "-y", "40"]);
        args.extend(argv.iter().map(String::as_str));
        // (the last server may still be on its way out: try again a moment later)
        let t0 = Instant::now();
        loop {
            let o = tmux_on(&socket, &args);
            if o.status.success() {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "{}", stderr(&o));
            std::thread::sleep(Duration::from_millis(100));
        }
        let argv = fake_argv(&dir.path().join("home"), t1);
        let target = format!("={session}:");
        let mut args: Vec<&str> = vec!["new-window", "-d", "-t", &target];
        args.extend(argv.iter().map(String::as_str));
        assert!(tmux_on(&socket, &args).status.success());
    };
    let pg = |args: &[&str]| {
        let mut c = pg_on(&socket, dir.path(), args);
        c.env("PROMPTGATE_QUEUE_DIR", &qdir);
        c.output().unwrap()
    };
    let ready = |secs: f64| {
        let t0 = Instant::now();
        for pane in ["%0", "%1"] {
            loop {
                let o = pg(&["state", "-t", pane]);
                if String::from_utf8_lossy(&o.stdout).contains("ready") {
                    break;
                }
                assert!(t0.elapsed().as_secs_f64() < secs, "{pane} not ready");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    start("projA", &t("a0"), &t("a1"));
    ready(15.0);
    let add = |pane: &str, body: &str| {
        let o = pg(&["queue", "add", "-t", pane, body]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let id = add("%0", "PROJECT A ONLY: rm -rf build/ and rebuild");
    // %1's watcher stopped at the submit, before the server went
    let id1 = add("%1", "PROJECT A ONLY: the other pane");
    let file = qdir.join(format!("{id1}.json"));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["phase"] = "submitting".into();
    std::fs::write(&file, v.to_string()).unwrap();
    tmux_on(&socket, &["kill-server"]);
    while tmux_on(&socket, &["has-session"]).status.success() {
        std::thread::sleep(Duration::from_millis(50));
    }
    // the socket's next server: another project's agents at %0 and %1
    start("projB", &t("b0"), &t("b1"));
    ready(15.0);
    let o = pg(&["queue", "run", "--once"]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(code(&o), 20, "{out}{}", stderr(&o));
    assert_eq!(out.matches("\theld\t").count(), 2, "{out}");
    std::thread::sleep(Duration::from_millis(300));
    for n in ["a0", "a1", "b0", "b1"] {
        assert!(
            prompts(&t(n)).is_empty(),
            "typed into {n}: {:?}",
            prompts(&t(n))
        );
    }
    let o = pg(&["queue", "list"]);
    let list = String::from_utf8_lossy(&o.stdout);
    let line = |id: &str| {
        list.lines()
            .find(|l| l.starts_with(id))
            .unwrap_or("")
            .to_string()
    };
    let l0 = line(&id);
    assert!(
        l0.contains("\theld\tnot-sent\t")
            && l0.contains("server restarted")
            && l0.contains("projA"),
        "{list}"
    );
    let l1 = line(&id1);
    assert!(
        l1.contains("\theld\tunknown\t")
            && l1.contains("server restarted")
            && l1.contains("while submitting"),
        "{list}"
    );
}

/// The pane's first process stays while an agent restarts inside its shell:
/// the prompt is delivered to the agent running there now. A pane respawned
/// with another process (`respawn-pane -k`) is not the pane it was queued
/// for: held, nothing typed.
#[test]
fn an_agent_restarted_in_its_shell_gets_the_prompt_and_a_respawned_pane_does_not() {
    let srv = TmuxServer::new(120, 40, &[]);
    let qdir = srv.dir.path().join("queue");
    let home = srv.dir.path().join("home");
    let pane = srv.window(&["sh"]);
    let run_in_shell = |t: &std::path::Path| {
        let line: Vec<String> = fake_argv(&home, t)
            .iter()
            .map(|w| format!("'{w}'"))
            .collect();
        srv.tmux(&["send-keys", "-t", &pane, "-l", &line.join(" ")]);
        srv.tmux(&["send-keys", "-t", &pane, "Enter"]);
        srv.wait_state(&pane, "ready", 15.0);
    };
    let (t1, t2, t3) = (
        srv.dir.path().join("t1.jsonl"),
        srv.dir.path().join("t2.jsonl"),
        srv.dir.path().join("t3.jsonl"),
    );
    run_in_shell(&t1);
    let add = |body: &str| {
        let o = queue_cmd(&srv, &qdir, &["add", "-t", &pane, body])
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    add("for whichever agent runs in this pane");
    // the agent quits (Ctrl-C on an empty composer) and starts again in the shell
    srv.tmux(&["send-keys", "-t", &pane, "C-c"]);
    let t0 = Instant::now();
    while !srv
        .tmux_out(&["display", "-p", "-t", &pane, "#{pane_current_command}"])
        .starts_with("sh")
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the agent did not quit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    run_in_shell(&t2);
    let o = queue_cmd(&srv, &qdir, &["run", "--once"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&t2), vec!["for whichever agent runs in this pane"]);
    srv.wait_state(&pane, "ready", 10.0);
    // the pane respawned: another first process
    let id = add("for the pane as it was");
    let mut args = vec!["respawn-pane", "-k", "-t", &pane];
    let argv = fake_argv(&home, &t3);
    args.extend(argv.iter().map(String::as_str));
    srv.tmux(&args);
    srv.wait_state(&pane, "ready", 15.0);
    let o = queue_cmd(&srv, &qdir, &["run", "--once"]).output().unwrap();
    assert_eq!(code(&o), 20, "{}", stderr(&o));
    std::thread::sleep(Duration::from_millis(300));
    assert!(prompts(&t3).is_empty(), "{:?}", prompts(&t3));
    let o = queue_cmd(&srv, &qdir, &["list"]).output().unwrap();
    let list = String::from_utf8_lossy(&o.stdout);
    assert!(
        list.contains(&id) && list.contains("held") && list.contains("replaced"),
        "{list}"
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

/// `queue drop` of an item a watcher is delivering (its gate waiting for the busy
/// pane): the watcher holds a copy it would type, so drop waits for its claim a
/// little, then refuses (28) and the prompt lands once; an item whose watcher gave
/// up its wait in time is dropped and never typed.
#[test]
fn a_dropped_prompt_is_never_delivered_and_a_held_one_is_not_dropped() {
    let srv = TmuxServer::new(120, 40, &[]);
    let qdir = srv.dir.path().join("queue");
    let (pane, transcript) = srv.fake("claude", &["--busy-ms", "2500"]);
    srv.wait_state(&pane, "ready", 10.0);
    let add = |body: &str| {
        let o = queue_cmd(&srv, &qdir, &["add", "-t", &pane, body])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let watcher = |gate: &str| {
        queue_cmd(&srv, &qdir, &["run", "--once", "--gate-timeout", gate])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // a watcher whose gate waits 30 s holds the item: not dropped, delivered once
    assert_eq!(code(&srv.pg(&["send", "-t", &pane, "first"])), 0);
    let id = add("held by its watcher");
    let w = watcher("30");
    std::thread::sleep(Duration::from_millis(500));
    let t = Instant::now();
    let o = queue_cmd(&srv, &qdir, &["drop", &id, "--wait", "0.5"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 28, "{}", stderr(&o));
    assert!(stderr(&o).contains("being delivered now"), "{}", stderr(&o));
    assert!(
        t.elapsed() >= Duration::from_millis(500),
        "drop waited for the claim"
    );
    let w = w.wait_with_output().unwrap();
    assert_eq!(code(&w), 0);
    assert_eq!(prompts(&transcript), vec!["first", "held by its watcher"]);
    // busy again; a watcher whose gate gives up after 0.5 s lets its claim go,
    // and a drop that waits for it drops the prompt: never typed
    srv.wait_state(&pane, "ready", 15.0);
    assert_eq!(code(&srv.pg(&["send", "-t", &pane, "second"])), 0);
    let id = add("dropped before delivery");
    let w = watcher("0.5");
    std::thread::sleep(Duration::from_millis(200));
    let o = queue_cmd(&srv, &qdir, &["drop", &id]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let _ = w.wait_with_output();
    srv.wait_state(&pane, "ready", 15.0);
    let o = queue_cmd(&srv, &qdir, &["run", "--once"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        prompts(&transcript),
        vec!["first", "held by its watcher", "second"]
    );
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

/// `promptgate -S SOCKET_PATH queue ARGS` for this server (the same lock and log
/// directories as `queue_cmd`).
fn queue_cmd_s(srv: &TmuxServer, qdir: &std::path::Path, args: &[&str]) -> std::process::Command {
    let path = srv
        .tmux_out(&["display-message", "-p", "#{socket_path}"])
        .trim()
        .to_string();
    let mut c = std::process::Command::new(bin());
    c.args(["-S", &path, "queue"])
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env("PROMPTGATE_LOG", srv.dir.path().join("deliveries.jsonl"))
        .env("XDG_RUNTIME_DIR", srv.dir.path())
        .env("PROMPTGATE_QUEUE_DIR", qdir);
    c
}

/// A process this test started, killed (by its PID) when the test ends, even
/// by a failed assertion.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `timeout 60 CMD`: a FIFO that hangs the command fails the test instead of
/// hanging it.
fn bounded(c: std::process::Command) -> std::process::Output {
    let mut t = std::process::Command::new("timeout");
    t.arg("60").arg(c.get_program()).args(c.get_args());
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => t.env(k, v),
            None => t.env_remove(k),
        };
    }
    t.output().unwrap()
}

#[test]
fn a_renamed_or_linked_item_is_one_item_and_fifos_and_outside_links_are_refused() {
    let srv = TmuxServer::new(100, 30, &[]);
    let qdir = srv.dir.path().join("queue");
    let (pane, t) = srv.fake("claude", &[]);
    srv.wait_state(&pane, "ready", 15.0);
    let add = |body: &str| {
        let o = queue_cmd(&srv, &qdir, &["add", "-t", &pane, body])
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    // one item under four names: renamed, hard-linked, symlinked inside the dir
    let a = add("only once, whatever its file is called");
    std::fs::rename(qdir.join(format!("{a}.json")), qdir.join("renamed.json")).unwrap();
    std::fs::hard_link(qdir.join("renamed.json"), qdir.join("hard.json")).unwrap();
    std::os::unix::fs::symlink("renamed.json", qdir.join("soft.json")).unwrap();
    // an item whose file lives elsewhere, linked in: refused, never typed
    let b = add("from outside the queue directory");
    let out = srv.dir.path().join("elsewhere");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::rename(qdir.join(format!("{b}.json")), out.join("b.json")).unwrap();
    std::os::unix::fs::symlink(out.join("b.json"), qdir.join("outside.json")).unwrap();
    // a FIFO named like an item: never opened for a blocking read
    let fifo = std::ffi::CString::new(qdir.join("fifo.json").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);

    let o = bounded(queue_cmd(&srv, &qdir, &["list"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let list = String::from_utf8_lossy(&o.stdout);
    assert_eq!(list.lines().count(), 1, "one item, not four: {list}");
    assert!(list.contains(&a), "{list}");
    let e = stderr(&o);
    assert!(e.contains("fifo.json") && e.contains("a FIFO"), "{e}");
    assert!(
        e.contains("outside.json") && e.contains("symlink out of"),
        "{e}"
    );
    // the plugin's status counts read the same directory
    let mut c = srv.pg_cmd(&["status", "--format", "plain"]);
    c.env("PROMPTGATE_QUEUE_DIR", &qdir);
    let o = bounded(c);
    assert!(
        text(&o.stdout).trim().ends_with("+1"),
        "{}",
        text(&o.stdout)
    );

    // through -S SOCKET_PATH as well (its lock file is named safely)
    let o = bounded(queue_cmd(
        &srv,
        &qdir,
        &["run", "--once", "--max-secs", "8"],
    ));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        prompts(&t),
        vec!["only once, whatever its file is called"],
        "delivered exactly once; {}",
        text(&o.stdout)
    );
    for n in ["renamed.json", "hard.json", "soft.json"] {
        assert!(
            std::fs::symlink_metadata(qdir.join(n)).is_err(),
            "{n}: every name of a delivered item goes"
        );
    }
    assert!(
        out.join("b.json").exists(),
        "a file elsewhere is not touched"
    );
}

#[test]
fn a_queue_dir_spelled_two_ways_is_one_queue_and_socket_paths_work() {
    let srv = TmuxServer::new(100, 30, &[]);
    let qdir = srv.dir.path().join("queue");
    std::fs::create_dir_all(&qdir).unwrap();
    let alias = srv.dir.path().join("alias");
    std::os::unix::fs::symlink(&qdir, &alias).unwrap();
    let slash = std::path::PathBuf::from(format!("{}/", qdir.display()));
    let mut w = KillOnDrop(
        queue_cmd(&srv, &qdir, &["run"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // the watcher has its lock once it has said what it watches
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(w.0.stdout.as_mut().unwrap()),
        &mut first,
    )
    .unwrap();
    assert!(first.starts_with("queue: nothing queued"), "{first}");
    for d in [&alias, &slash] {
        let o = bounded(queue_cmd(&srv, d, &["run", "--once"]));
        assert_eq!(code(&o), 28, "{}: {}", d.display(), stderr(&o));
        assert!(
            stderr(&o).contains("a queue watcher already runs"),
            "{}",
            stderr(&o)
        );
    }
    // a second watcher started with another runtime directory, or none, meets
    // the first all the same (the lock lives in the queue directory)
    let other = tempfile::tempdir().unwrap();
    for xdg in [Some(other.path()), None] {
        let mut c = queue_cmd(&srv, &qdir, &["run", "--once"]);
        match xdg {
            Some(x) => c.env("XDG_RUNTIME_DIR", x),
            None => c.env_remove("XDG_RUNTIME_DIR"),
        };
        let o = bounded(c);
        assert_eq!(code(&o), 28, "XDG_RUNTIME_DIR {xdg:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("a queue watcher already runs"));
    }
    drop(w);
    // -S SOCKET_PATH with no other watcher runs (it said "already runs")
    let (pane, t) = srv.fake("claude", &[]);
    srv.wait_state(&pane, "ready", 15.0);
    let o = bounded(queue_cmd_s(
        &srv,
        &alias,
        &["add", "-t", &pane, "by socket path"],
    ));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // a run for another server says where the prompt waits
    let o = bounded(queue_cmd(&srv, &slash, &["run", "--once"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let said = text(&o.stdout);
    assert!(
        said.contains("1 prompt(s) wait for other servers: -S /"),
        "{said}"
    );
    let o = bounded(queue_cmd_s(&srv, &qdir, &["run", "--once"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&t), vec!["by socket path"]);
    // no lock file has a space in its name
    for e in std::fs::read_dir(qdir.join(".claims")).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        assert!(!n.contains(' ') && !n.contains('/'), "{n}");
    }
}

#[test]
fn bad_xdg_directories_are_named_with_what_they_were_for() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let run = |var: &str, queue_dir: Option<&std::path::Path>| {
        let mut c = std::process::Command::new(bin());
        c.args([
            "-L",
            "promptgate-test-no-such-server",
            "queue",
            "run",
            "--once",
        ])
        .env_remove("TMUX")
        .env_remove("PROMPTGATE_QUEUE_DIR")
        .env("XDG_STATE_HOME", d.path())
        .env("XDG_RUNTIME_DIR", d.path())
        .env(var, &file);
        if let Some(q) = queue_dir {
            c.env("PROMPTGATE_QUEUE_DIR", q);
        }
        let o = c.output().unwrap();
        (code(&o), stderr(&o))
    };
    let (c, e) = run("XDG_STATE_HOME", None);
    assert_ne!(c, 0, "{e}");
    assert!(
        e.contains("the queue directory (under XDG_STATE_HOME)")
            && e.contains(&format!("{}/promptgate/queue", file.display()))
            && e.contains("Not a directory"),
        "{e}"
    );
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    // the watcher's lock lives in the queue directory: a runtime directory
    // that is a file stops nothing
    let (c, e) = run("XDG_RUNTIME_DIR", Some(&d.path().join("q")));
    assert_eq!(c, 0, "{e}");
}

#[test]
fn on_a_full_disk_the_queue_types_nothing_it_could_not_journal() {
    if let Err(why) = private_mounts() {
        eprintln!("skipped: a full disk needs a private tmpfs mount: {why}");
        return;
    }
    let srv = TmuxServer::new(100, 30, &[]);
    let qdir = srv.dir.path().join("queue-on-tmpfs");
    std::fs::create_dir_all(&qdir).unwrap();
    let (pane, t) = srv.fake("claude", &[]);
    srv.wait_state(&pane, "ready", 15.0);
    // all in one private mount namespace: the tmpfs is gone when it ends
    let script = r#"
        set -u
        mount -t tmpfs -o size=128k tmpfs "$Q" || exit 90
        mkdir "$Q/.claims"
        "$PG" -L "$SOCK" queue add -t "$PANE" "typed once, after the disk has room" || exit 91
        dd if=/dev/zero of="$Q/.fill" bs=1k 2>/dev/null
        "$PG" -L "$SOCK" queue run --once --max-secs 2 --gate-timeout 0.5
        echo "full-run-exit=$?"
        "$PG" -L "$SOCK" queue list
        echo "list-exit=$?"
        rm "$Q/.fill"
        "$PG" -L "$SOCK" queue run --once
        echo "room-run-exit=$?"
    "#;
    let o = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", script])
        .env("Q", &qdir)
        .env("PG", bin())
        .env("SOCK", &srv.socket)
        .env("PANE", &pane)
        .env("PROMPTGATE_QUEUE_DIR", &qdir)
        .env("PROMPTGATE_LOG", srv.dir.path().join("deliveries.jsonl"))
        .env("XDG_RUNTIME_DIR", srv.dir.path())
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .unwrap();
    let said = text(&o.stdout);
    let e = stderr(&o);
    assert!(
        said.contains("full-run-exit=20"),
        "the full-disk run ends with the prompt still queued\n{said}\n{e}"
    );
    assert!(e.contains("cannot journal typing"), "{e}");
    assert!(e.contains("No space left on device"), "{e}");
    assert!(said.contains("room-run-exit=0"), "{said}\n{e}");
    assert_eq!(
        prompts(&t),
        vec!["typed once, after the disk has room"],
        "nothing typed while the journal could not be written, then once\n{said}\n{e}"
    );
}

/// A server, a queue directory and a fake Claude Code that records its
/// replies and stays busy `busy_ms` a turn, ready: (server, queue, pane, transcript).
fn asked_setup(busy_ms: &str) -> (TmuxServer, std::path::PathBuf, String, std::path::PathBuf) {
    let srv = TmuxServer::new(100, 30, &[]);
    let qdir = srv.dir.path().join("queue");
    let home = srv.dir.path().join("home-asked");
    let (pane, t) = srv.fake_in(&home, "claude", &["--records", "--busy-ms", busy_ms]);
    srv.wait_state(&pane, "ready", 15.0);
    (srv, qdir, pane, t)
}

#[test]
fn an_asked_prompt_keeps_its_own_answer_and_the_next_prompt_waits_for_it() {
    let (srv, qdir, pane, t) = asked_setup("1200");
    let mut ids = Vec::new();
    for (body, ask) in [
        ("first, asked", true),
        ("second, plain", false),
        ("third, asked", true),
    ] {
        let mut args = vec!["add", "-t", &pane];
        if ask {
            args.push("--ask");
        }
        args.push(body);
        let o = queue_cmd(&srv, &qdir, &args).output().unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        ids.push(text(&o.stdout).trim().to_string());
    }
    // still queued: no answer yet, and it says so
    let o = queue_cmd(&srv, &qdir, &["answer", &ids[0]])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("is still queued"), "{}", stderr(&o));
    let o = bounded(queue_cmd(
        &srv,
        &qdir,
        &["run", "--once", "--max-secs", "60"],
    ));
    assert_eq!(code(&o), 0, "{}\n{}", text(&o.stdout), stderr(&o));
    let out = text(&o.stdout);
    // the plain prompt went in only after the first one's turn ended and its
    // answer was kept: each answer is the reply to its own prompt
    let at = |what: &str, id: &str| {
        out.lines()
            .position(|l| l.contains(&format!("\t{what}\t{id}")))
            .unwrap_or_else(|| panic!("no {what} line for {id}:\n{out}"))
    };
    assert!(at("answered", &ids[0]) < at("delivered", &ids[1]), "{out}");
    assert!(!out.contains(&format!("\tanswered\t{}", ids[1])), "{out}");
    assert_eq!(
        prompts(&t),
        vec!["first, asked", "second, plain", "third, asked"]
    );
    for (id, n) in [(&ids[0], 1), (&ids[2], 3)] {
        let o = queue_cmd(&srv, &qdir, &["answer", id]).output().unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(
            text(&o.stdout),
            format!("Fake reply to prompt {n} (promptgate fake-agent).\n")
        );
        let o = queue_cmd(&srv, &qdir, &["answer", id, "--json"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["state"], "answered");
        assert_eq!(v["result"]["receipt"], "consumed");
        assert_eq!(
            v["result"]["answer"]["text"],
            format!("Fake reply to prompt {n} (promptgate fake-agent).")
        );
    }
    // the plain prompt keeps no answer; the list names the two that do
    let o = queue_cmd(&srv, &qdir, &["answer", &ids[1]])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let o = queue_cmd(&srv, &qdir, &["answer"]).output().unwrap();
    let list = text(&o.stdout);
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(list.lines().all(|l| l.contains("\tanswered\t")), "{list}");
}

/// A watcher killed while it waits for an asked prompt's turn: the next
/// watcher waits for that turn again and keeps the answer to that prompt
/// (from the record's marks kept before it was typed), and types nothing again.
#[test]
fn an_asked_prompts_answer_survives_its_watcher_being_killed_mid_turn() {
    let (srv, qdir, pane, t) = asked_setup("3000");
    let id = add_asked(&srv, &qdir, &pane, "asked, then killed");
    let mut w = KillOnDrop(
        queue_cmd(&srv, &qdir, &["run"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(w.0.stdout.take().unwrap()));
    let delivered = lines
        .by_ref()
        .map_while(|l| l.ok())
        .find(|l| l.contains(&format!("\tdelivered\t{id}")));
    assert!(delivered.is_some(), "the watcher never said it delivered");
    // killed during the turn (by its PID: this test started it)
    w.0.kill().unwrap();
    let _ = w.0.wait();
    let o = queue_cmd(&srv, &qdir, &["answer", &id, "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["state"], "stopped", "{v}");
    answered_by_the_next_watcher(&srv, &qdir, &id, &t, "asked, then killed");
}

/// The queue holds prompts and agents' answers: the directories it makes are
/// this user's alone (0700) and so is every item it writes (0600), whatever
/// the umask.
#[test]
fn queued_prompts_are_private_files_in_private_directories() {
    use std::os::unix::fs::PermissionsExt;
    let srv = TmuxServer::new(100, 30, &[]);
    let qdir = srv.dir.path().join("state").join("queue");
    let (pane, _t) = srv.fake("claude", &[]);
    srv.wait_state(&pane, "ready", 15.0);
    let o = queue_cmd(&srv, &qdir, &["add", "-t", &pane, "a private prompt"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let id = text(&o.stdout).trim().to_string();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&qdir), 0o700);
    assert_eq!(mode(qdir.parent().unwrap()), 0o700);
    assert_eq!(mode(&qdir.join(format!("{id}.json"))), 0o600);
}

/// A watcher killed the moment it journalled the submit of an asked prompt
/// (before it kept the answer): the next watcher finds the prompt taken (or
/// submits it once), keeps the answer to it, and types nothing again.
#[test]
fn an_asked_prompt_whose_watcher_died_at_the_submit_still_gets_its_answer() {
    let (srv, qdir, pane, t) = asked_setup("2000");
    let id = add_asked(&srv, &qdir, &pane, "asked, cut at the submit");
    let item = qdir.join(format!("{id}.json"));
    let mut w = KillOnDrop(
        queue_cmd(&srv, &qdir, &["run"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    while !std::fs::read_to_string(&item).is_ok_and(|s| s.contains("\"submitting\"")) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "never journalled the submit"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // killed there (by its PID: this test started it)
    w.0.kill().unwrap();
    let _ = w.0.wait();
    answered_by_the_next_watcher(&srv, &qdir, &id, &t, "asked, cut at the submit");
}

/// `queue add --ask` of `body` to `pane`: its id.
fn add_asked(srv: &TmuxServer, qdir: &std::path::Path, pane: &str, body: &str) -> String {
    let o = queue_cmd(srv, qdir, &["add", "-t", pane, "--ask", body])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    text(&o.stdout).trim().to_string()
}

/// The next watcher (`queue run --once`) keeps the answer of asked item `id`,
/// the reply to its prompt, and `body` was typed once.
fn answered_by_the_next_watcher(
    srv: &TmuxServer,
    qdir: &std::path::Path,
    id: &str,
    t: &std::path::Path,
    body: &str,
) {
    let o = bounded(queue_cmd(srv, qdir, &["run", "--once", "--max-secs", "30"]));
    assert_eq!(code(&o), 0, "{}\n{}", text(&o.stdout), stderr(&o));
    assert!(
        text(&o.stdout).contains(&format!("\tanswered\t{id}")),
        "{}",
        text(&o.stdout)
    );
    let o = queue_cmd(srv, qdir, &["answer", id]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        text(&o.stdout),
        "Fake reply to prompt 1 (promptgate fake-agent).\n"
    );
    assert_eq!(prompts(t), vec![body]);
}
