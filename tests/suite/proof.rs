//! Proof from the agent's own record: each fake agent (`--records`) writes every
//! prompt where and as its real counterpart does, under its own HOME; a receipt
//! carries `proof` from that record, and a body the agent recorded otherwise is
//! `mangled` (exit 37), never `consumed`.
use crate::common;
use common::*;
use std::path::{Path, PathBuf};

/// A fake agent `like` with `--records` and its own HOME; returns (pane, home, transcript).
fn fake_with_home(srv: &TmuxServer, like: &str, extra: &[&str]) -> (String, PathBuf, PathBuf) {
    let home = srv.dir.path().join(format!("home-{like}-{}", extra.len()));
    let mut args = vec!["--records", "--busy-ms", "200"];
    args.extend_from_slice(extra);
    let (pane, transcript) = srv.fake_in(&home, like, &args);
    (pane, home, transcript)
}

fn sha256(b: &[u8]) -> String {
    let o = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b)?;
            c.wait_with_output()
        })
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string()
}

fn receipt(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_default()
}

/// `history`: the agent's input history, written sooner than its record
/// (`[record] history`): the proof comes from there and names the record.
fn proves_each_body(like: &str, record_under: &str, history: Option<&str>) {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, home, _) = fake_with_home(&srv, like, &[]);
    srv.wait_state(&pane, "ready", 10.0);
    let bodies: Vec<Vec<u8>> = vec![
        b"fix the failing test".to_vec(),
        b"line one\n\tindented line two\nline three".to_vec(),
        (0..100)
            .map(|i| format!("{i:04} five kilobytes of numbered lines, more or less\n"))
            .collect::<String>()
            .trim_end()
            .as_bytes()
            .to_vec(),
    ];
    for body in bodies {
        srv.wait_state(&pane, "ready", 10.0);
        let file = srv.dir.path().join("body");
        std::fs::write(&file, &body).unwrap();
        let o = srv.pg(&["send", "-t", &pane, "-f", file.to_str().unwrap(), "--json"]);
        let r = receipt(&o);
        assert_eq!(code(&o), 0, "{like}: {} {r}", stderr(&o));
        assert_eq!(r["receipt"], "consumed", "{r}");
        let p = &r["proof"];
        assert_eq!(p["match"], "exact", "{like}: {p}");
        assert_eq!(p["sha256"], sha256(&body), "{like}: {p}");
        let path = match history {
            Some(h) => {
                assert_eq!(p["source"], "history", "{like}: {p}");
                assert_eq!(p["path"].as_str(), home.join(h).to_str(), "{like}: {p}");
                p["record"].as_str().unwrap_or("")
            }
            None => {
                assert_eq!(p["source"], "transcript", "{like}: {p}");
                p["path"].as_str().unwrap_or("")
            }
        };
        assert!(
            Path::new(path).starts_with(home.join(record_under)),
            "{like}: {path} not under {record_under}"
        );
    }
}

#[test]
fn claude_receipts_carry_exact_proof_from_its_session_transcript() {
    // (the 5 KB body is kept in Claude's paste cache, named from its history)
    proves_each_body("claude", ".claude/projects", Some(".claude/history.jsonl"));
}

#[test]
fn codex_receipts_carry_exact_proof_from_its_history() {
    proves_each_body("codex", ".codex/sessions/", None);
}

#[test]
fn gemini_receipts_carry_exact_proof_from_its_logs() {
    proves_each_body("gemini", ".gemini/tmp", None);
}

#[test]
fn an_agent_that_lost_bytes_is_mangled_never_consumed() {
    let srv = TmuxServer::new(120, 40, &[]);
    // unpaced raw keys in big chunks into an agent that drops 1022-byte reads
    let profiles = custom_profile(
        srv.dir.path(),
        "claude",
        "lossyclaude",
        &[
            ("bracketed_paste = true", "bracketed_paste = false"),
            ("raw_chunk_max = 63", "raw_chunk_max = 8000"),
            ("pacing_ms = 20", "pacing_ms = 0"),
        ],
    );
    let (pane, _, transcript) = fake_with_home(
        &srv,
        "claude",
        &["--no-bracketed-paste", "--fault-read-1022"],
    );
    srv.wait_state(&pane, "ready", 10.0);
    let body: String = (0..200)
        .map(|i| format!("{i:04} a line of a body that loses bytes on the way in. "))
        .collect();
    let o = srv.pg(&[
        "send",
        "--profiles",
        profiles.to_str().unwrap(),
        "--agent",
        "lossyclaude",
        "-t",
        &pane,
        "--json",
        body.trim_end(),
    ]);
    let r = receipt(&o);
    let got = prompts(&transcript);
    assert_eq!(got.len(), 1, "{r}");
    assert_ne!(got[0], body.trim_end(), "the fault lost nothing: no test");
    assert_eq!(r["receipt"], "mangled", "{r}");
    assert_eq!(code(&o), 37, "{}", stderr(&o));
    let p = &r["proof"];
    assert_eq!(p["match"], "mangled", "{p}");
    assert_eq!(p["owner"], "registry", "{p}");
    assert!(
        p["diff"]["sent"].is_string() && p["diff"]["recorded"].is_string(),
        "{p}"
    );
    assert_eq!(p["body_len"], body.trim_end().len(), "{p}");
    assert_eq!(p["record_len"], got[0].len(), "{p}");
    let first = p["first_difference"].as_u64().unwrap() as usize;
    assert_eq!(body.as_bytes()[..first], got[0].as_bytes()[..first], "{p}");
    assert_ne!(
        body.as_bytes().get(first),
        got[0].as_bytes().get(first),
        "{p}"
    );
}

#[test]
fn without_a_readable_record_the_screen_judges_and_says_so() {
    // no --records: the agent writes no record
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, _) = srv.fake("codex", &["--busy-ms", "200"]);
    srv.wait_state(&pane, "ready", 10.0);
    let o = srv.pg(&["send", "-t", &pane, "--json", "no record here"]);
    let r = receipt(&o);
    assert_eq!(code(&o), 0, "{r}");
    assert_eq!(r["receipt"], "consumed");
    // the record file may exist from the user's real codex: then it is absent
    let m = r["proof"]["match"].as_str().unwrap_or("");
    assert!(
        (r["proof"]["source"] == "transcript" && m == "absent") || r["proof"]["source"] == "screen",
        "{r}"
    );
}

/// Claude's session registry (`~/.claude/sessions/<pid>.json`) as a second
/// witness: a busy or waiting status vetoes a ready-looking screen, and the
/// evidence names it; it never overrides a dialog on screen.
#[test]
fn the_agents_own_status_vetoes_ready_but_never_a_dialog() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, home, transcript) = fake_with_home(&srv, "claude", &[]);
    srv.wait_state(&pane, "ready", 10.0);
    let dir = home.join(".claude/sessions");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("the fake keeps a session registry");
    let set = |status: &str| {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        v["status"] = status.into();
        std::fs::write(&file, v.to_string()).unwrap();
    };
    for status in ["busy", "waiting"] {
        set(status);
        let o = srv.pg(&["state", "-t", &pane, "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["state"], "busy", "{status}: {v}");
        assert_eq!(v["evidence"]["rule"], format!("status.{status}"), "{v}");
        let o = srv.pg(&["send", "-t", &pane, "refused while the agent says busy"]);
        assert_eq!(code(&o), 22, "{status}: {}", stderr(&o));
    }
    set("idle");
    srv.wait_state(&pane, "ready", 5.0);
    let o = srv.pg(&["send", "-t", &pane, "--json", "now it lands"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&transcript), vec!["now it lands"]);
    // the fake itself says busy during its turn, idle after
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(s["status"] == "busy" || s["status"] == "idle", "{s}");

    // a dialog on screen stays a dialog, whatever the registry says
    let (dialog, dhome, _) = fake_with_home(&srv, "claude", &["--dialog", "trust"]);
    srv.wait_state(&dialog, "dialog:trust", 10.0);
    let f = std::fs::read_dir(dhome.join(".claude/sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    for status in ["idle", "busy"] {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        v["status"] = status.into();
        std::fs::write(&f, v.to_string()).unwrap();
        assert_eq!(srv.state(&dialog), "dialog:trust", "{status}");
    }
}

/// Two sessions of one agent in one project (one HOME, one directory), each
/// sent its own prompt at the same moment by its own `send`: each receipt is
/// proven from the record that agent wrote, never the other session's (Claude:
/// the file its session registry names; Codex: the rollout it holds open).
fn two_sessions_prove_their_own(like: &str, owner: &str) {
    let srv = TmuxServer::new(120, 40, &[]);
    let home = srv.dir.path().join("shared-home");
    let args = ["--records", "--busy-ms", "200"];
    let (a, _) = srv.fake_in(&home, like, &args);
    let (b, _) = srv.fake_in(&home, like, &args);
    for round in 0..3 {
        srv.wait_state(&a, "ready", 10.0);
        srv.wait_state(&b, "ready", 10.0);
        let send = |pane: &str| {
            let body = format!("round {round}: the prompt for {pane} alone, in full");
            let cmd = srv.pg_cmd(&["send", "-t", pane, "--json", &body]);
            (body, cmd)
        };
        let (body_a, mut cmd_a) = send(&a);
        let (body_b, mut cmd_b) = send(&b);
        let ta = std::thread::spawn(move || cmd_a.output().unwrap());
        let tb = std::thread::spawn(move || cmd_b.output().unwrap());
        for (pane, body, o) in [
            (&a, body_a, ta.join().unwrap()),
            (&b, body_b, tb.join().unwrap()),
        ] {
            let r = receipt(&o);
            assert_eq!(
                code(&o),
                0,
                "{like} round {round} {pane}: {} {r}",
                stderr(&o)
            );
            let p = &r["proof"];
            assert_eq!(p["match"], "exact", "{like} round {round} {pane}: {p}");
            assert_eq!(p["owner"], owner, "{like} round {round} {pane}: {p}");
            assert_eq!(p["sha256"], sha256(body.as_bytes()), "{p}");
            // the file is the one this pane's agent writes: its pid is in its name
            // (proven from the shared input history: the entry of its session,
            // and the record it names)
            let pid = srv.tmux_out(&["display", "-p", "-t", pane, "#{pane_pid}"]);
            let path = match p["source"].as_str() {
                Some("history") => p["record"].as_str().unwrap_or(""),
                _ => p["path"].as_str().unwrap_or(""),
            };
            assert!(
                path.contains(&format!("fake-{}", pid.trim())),
                "{like} round {round} {pane} (pid {}): {path}",
                pid.trim()
            );
        }
    }
}

#[test]
fn two_claude_sessions_in_one_project_each_prove_their_own_prompt() {
    two_sessions_prove_their_own("claude", "registry");
}

#[test]
fn two_codex_sessions_sharing_codex_home_each_prove_their_own_prompt() {
    two_sessions_prove_their_own("codex", "open-file");
}

/// The screen shows the prompt taken, but the agent's own record (the file its
/// session registry names) gets no entry: not a silent exit 0 but `unproven`
/// (exit 38), the proof `absent` from that file.
#[test]
fn consumed_on_screen_with_no_entry_in_its_own_record_is_unproven() {
    let srv = TmuxServer::new(120, 40, &[]);
    let home = srv.dir.path().join("home-unproven");
    // no --records: this agent records nothing; its registry is written here
    let (pane, _) = srv.fake_in(&home, "claude", &["--busy-ms", "200"]);
    srv.wait_state(&pane, "ready", 10.0);
    let pid = srv.tmux_out(&["display", "-p", "-t", &pane, "#{pane_pid}"]);
    let pid = pid.trim();
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
    let dashed: String = cwd
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let claude = home.join(".claude");
    std::fs::create_dir_all(claude.join("projects").join(&dashed)).unwrap();
    std::fs::create_dir_all(claude.join("sessions")).unwrap();
    std::fs::write(
        claude.join(format!("sessions/{pid}.json")),
        format!(r#"{{"pid":{pid},"sessionId":"s-{pid}","status":"idle"}}"#),
    )
    .unwrap();
    let o = srv.pg(&[
        "send",
        "-t",
        &pane,
        "--json",
        "a prompt the agent never records",
    ]);
    let r = receipt(&o);
    assert_eq!(code(&o), 38, "{} {r}", stderr(&o));
    assert_eq!(r["receipt"], "unproven", "{r}");
    assert_eq!(r["proof"]["match"], "absent", "{r}");
    assert_eq!(r["proof"]["owner"], "registry", "{r}");
    assert!(
        r["proof"]["path"]
            .as_str()
            .unwrap_or("")
            .ends_with(&format!("s-{pid}.jsonl")),
        "{r}"
    );
}

/// `--stable 60` and a permission dialog that opens right after the paste:
/// the send may type before the dialog and its Enter then answers the dialog.
/// Whatever the timing, a send that exits 0 is one the agent took and
/// recorded; one the agent did not take is refused before typing, or ends
/// `unproven` (38) or another non-zero receipt, never a silent 0.
#[test]
fn a_dialog_right_after_the_paste_is_never_a_silent_exit_0() {
    let srv = TmuxServer::new(120, 40, &[]);
    for round in 0..2 {
        let home = srv.dir.path().join(format!("home-late-{round}"));
        let (pane, transcript) = srv.fake_in(
            &home,
            "claude",
            &[
                "--records",
                "--busy-ms",
                "200",
                "--fault-late-dialog",
                "permission",
            ],
        );
        let body = format!("round {round}: a prompt racing a permission dialog");
        let o = srv.pg(&["send", "-t", &pane, "--stable", "60", "--json", &body]);
        let r = receipt(&o);
        let got = prompts(&transcript);
        if code(&o) == 0 {
            assert_eq!(
                got,
                vec![body.clone()],
                "exit 0 but the agent took {got:?}: {r}"
            );
            assert!(
                r["proof"]["match"] == "exact" || r["proof"]["source"] == "hook",
                "{r}"
            );
        }
        eprintln!(
            "round {round}: exit {} receipt {} proof {}",
            code(&o),
            r["receipt"],
            r["proof"]
        );
    }
}

/// `--no-verify` returns right after the submit key: no look at the screen
/// after it and none at the record (its proof says so); the body still lands once.
#[test]
fn no_verify_returns_after_the_submit_without_waiting_for_the_record() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, _, transcript) = fake_with_home(&srv, "claude", &[]);
    srv.wait_state(&pane, "ready", 10.0);
    let o = srv.pg(&["send", "-t", &pane, "--no-verify", "--json", "unverified"]);
    let r = receipt(&o);
    assert_eq!(code(&o), 0, "{} {r}", stderr(&o));
    assert_eq!(r["evidence"]["rule"], "verify.skipped", "{r}");
    // pressed, not proven: never called `consumed`
    assert_eq!(r["receipt"], "submitted", "{r}");
    assert!(
        r["notice"]
            .as_str()
            .is_some_and(|n| n.contains("not verified")),
        "{r}"
    );
    assert_eq!(r["proof"]["source"], "screen", "{r}");
    assert_eq!(r["proof"]["why"], "not looked for (--no-verify)", "{r}");
    assert_eq!(r["timings"]["verify_ms"], 0, "{r}");
    let t0 = std::time::Instant::now();
    while prompts(&transcript).is_empty() && t0.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(prompts(&transcript), vec!["unverified"]);
}
