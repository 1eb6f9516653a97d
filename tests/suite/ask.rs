//! `promptgate ask`: fake agents (`--records`) in a private tmux server write
//! each reply where and as their real counterpart does; `ask` delivers as
//! `send` does, waits for the turn, and returns that reply from the record.
use crate::common;
use common::*;
use std::path::PathBuf;

/// The reply every fake here gives: several lines, a tab, trailing blanks
/// inside (the answer is compared byte for byte).
const REPLY: &str = "The answer is 42.\\n\tindented line  \\nlast line";
const REPLY_TEXT: &str = "The answer is 42.\n\tindented line  \nlast line";

fn fake(srv: &TmuxServer, like: &str, tag: &str, extra: &[&str]) -> (String, PathBuf) {
    let home = srv.dir.path().join(format!("home-{like}-{tag}"));
    let mut args = vec!["--records", "--busy-ms", "300", "--reply", REPLY];
    args.extend_from_slice(extra);
    let (pane, transcript) = srv.fake_in(&home, like, &args);
    srv.wait_state(&pane, "ready", 10.0);
    (pane, transcript)
}

/// The fake's deterministic usage for a prompt and a reply (`FakeReply::to`).
fn usage(prompt: &str, reply: &str) -> (u64, u64, u64) {
    (prompt.len() as u64 + 11, reply.len() as u64, 7)
}

fn answers_byte_for_byte(like: &str) {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, _) = fake(&srv, like, "plain", &[]);
    let prompt = "what is the answer?";
    let o = srv.pg(&["ask", "-t", &pane, prompt]);
    assert_eq!(code(&o), 0, "{like}: {}", stderr(&o));
    assert_eq!(text(&o.stdout), format!("{REPLY_TEXT}\n"), "{like}");
    assert!(stderr(&o).contains("consumed"), "{like}: {}", stderr(&o));

    srv.wait_state(&pane, "ready", 10.0);
    let o = srv.pg(&["ask", "-t", &pane, "--json", "and again?"]);
    assert_eq!(code(&o), 0, "{like}: {}", stderr(&o));
    let r = json_out(&o);
    assert_eq!(r["receipt"], "consumed", "{r}");
    let a = &r["answer"];
    assert_eq!(a["text"], REPLY_TEXT, "{like}: {a}");
    assert_eq!(a["source"], "transcript", "{a}");
    assert!(a["path"].as_str().is_some_and(|p| !p.is_empty()), "{a}");
    let (i, out, cache) = usage("and again?", REPLY_TEXT);
    assert_eq!(a["tokens"]["input"], i, "{like}: {a}");
    assert_eq!(a["tokens"]["output"], out, "{like}: {a}");
    assert_eq!(a["tokens"]["cache"], cache, "{like}: {a}");
    assert_eq!(a["tool_calls"], serde_json::json!([]), "{a}");
    assert!(
        a["ended_at_ms"].as_u64() >= a["started_at_ms"].as_u64(),
        "{a}"
    );
    assert!(a["ended_by"].is_string(), "{a}");
    assert_eq!(r["turn"]["done"], true, "{r}");
}

#[test]
fn claude_answer_is_the_reply_byte_for_byte() {
    answers_byte_for_byte("claude");
}

#[test]
fn codex_answer_is_the_reply_byte_for_byte() {
    answers_byte_for_byte("codex");
}

#[test]
fn gemini_answer_is_the_reply_byte_for_byte() {
    answers_byte_for_byte("gemini");
}

#[test]
fn opencode_answer_is_the_reply_byte_for_byte_from_its_session_store() {
    answers_byte_for_byte("opencode");
}

#[test]
fn a_tool_call_is_reported_with_its_name() {
    let srv = TmuxServer::new(120, 40, &[]);
    for like in ["claude", "codex", "gemini", "opencode"] {
        let (pane, _) = fake(&srv, like, "tool", &["--reply-tool", "Bash"]);
        let o = srv.pg(&["ask", "-t", &pane, "--json", "list the files"]);
        assert_eq!(code(&o), 0, "{like}: {}", stderr(&o));
        let a = &json_out(&o)["answer"];
        assert_eq!(a["tool_calls"][0]["name"], "Bash", "{like}: {a}");
        assert_eq!(a["tool_calls"][0]["status"], "approved", "{like}: {a}");
        assert!(
            a["tool_calls"][0]["input_summary"]
                .as_str()
                .unwrap_or("")
                .contains("promptgate fake-agent"),
            "{like}: {a}"
        );
        assert_eq!(a["text"], REPLY_TEXT, "{like}: {a}");
    }
}

#[test]
fn an_approval_stop_gets_its_exit_code_and_the_dialog_and_nothing_is_typed_into_it() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, transcript) = fake(&srv, "claude", "approval", &["--approval-turns", "1"]);
    let o = srv.pg(&["ask", "-t", &pane, "--json", "run something"]);
    assert_eq!(code(&o), 41, "{}", stderr(&o));
    let r = json_out(&o);
    let a = &r["answer"];
    assert!(
        a["dialog"]
            .as_str()
            .unwrap_or("")
            .contains("echo 'promptgate fake-agent'"),
        "the dialog's text says what it asks to run: {a}"
    );
    assert_eq!(a["tool_calls"][0]["name"], "Bash", "{a}");
    assert_eq!(a["tool_calls"][0]["status"], "pending", "{a}");
    assert!(
        r["error"]
            .as_str()
            .unwrap_or("")
            .contains("approval dialog"),
        "{r}"
    );
    assert!(
        records(&transcript, "dialog-input").is_empty(),
        "nothing typed into the dialog"
    );
    // plain: the dialog's words on stderr, nothing on stdout
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, _) = fake(&srv, "codex", "approval", &["--approval-turns", "1"]);
    let o = srv.pg(&["ask", "-t", &pane, "run something"]);
    assert_eq!(code(&o), 41, "{}", stderr(&o));
    assert_eq!(text(&o.stdout), "");
    assert!(stderr(&o).contains("approval dialog"), "{}", stderr(&o));
}

#[test]
fn an_api_error_turn_gets_its_exit_code_and_the_error_text() {
    let srv = TmuxServer::new(120, 40, &[]);
    for like in ["claude", "codex", "gemini"] {
        let (pane, _) = fake(&srv, like, "error", &["--fail-turns", "1"]);
        let o = srv.pg(&["ask", "-t", &pane, "--json", "hello?"]);
        assert_eq!(code(&o), 42, "{like}: {}", stderr(&o));
        let a = &json_out(&o)["answer"];
        assert!(
            a["error"]
                .as_str()
                .unwrap_or("")
                .contains("Can't reach the API server"),
            "{like}: {a}"
        );
    }
}

#[test]
fn a_prompt_typed_by_hand_during_the_turn_is_reported_not_mixed_in() {
    let srv = TmuxServer::new(120, 40, &[]);
    let home = srv.dir.path().join("home-hand");
    let (pane, _) = srv.fake_in(
        &home,
        "claude",
        &["--records", "--busy-ms", "1500", "--reply", "mine"],
    );
    srv.wait_state(&pane, "ready", 10.0);
    let child = srv
        .pg_cmd(&["ask", "-t", &pane, "--json", "my question"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    srv.wait_state(&pane, "busy", 10.0);
    srv.submit_by_hand(&pane, "typed by hand", 10.0);
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let a = &json_out(&o)["answer"];
    assert_eq!(a["text"], "mine", "{a}");
    assert_eq!(a["other_prompts"][0], "typed by hand", "{a}");
}

#[test]
fn no_reply_in_the_record_is_nothing_unless_from_screen() {
    // an agent that keeps no record (a fake without --records)
    let srv = TmuxServer::new(120, 40, &[]);
    let home = srv.dir.path().join("home-opencode-none");
    let (pane, _) = srv.fake_in(&home, "opencode", &["--busy-ms", "300", "--reply", REPLY]);
    srv.wait_state(&pane, "ready", 10.0);
    let o = srv.pg(&["ask", "-t", &pane, "--json", "anyone?"]);
    assert_eq!(code(&o), 43, "{}", stderr(&o));
    let a = &json_out(&o)["answer"];
    assert_eq!(a["source"], "none", "{a}");
    assert_eq!(a["text"], "", "{a}");
    srv.wait_state(&pane, "ready", 10.0);
    let o = srv.pg(&[
        "ask",
        "-t",
        &pane,
        "--json",
        "--from-screen",
        "anyone there?",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let a = &json_out(&o)["answer"];
    assert_eq!(a["source"], "screen", "{a}");
    assert!(
        a["text"]
            .as_str()
            .unwrap_or("")
            .contains("The answer is 42."),
        "{a}"
    );
}

#[test]
fn fan_out_answers_beside_each_pane_and_agent() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (p1, t1) = fake(&srv, "claude", "fan", &[]);
    let (p2, _) = fake(&srv, "codex", "fan", &[]);
    let o = srv.pg(&["ask", "-t", &p1, "-t", &p2, "--json", "compare"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = json_out(&o);
    let rows = r["targets"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{r}");
    for (row, (pane, agent)) in rows.iter().zip([(&p1, "claude"), (&p2, "codex")]) {
        assert_eq!(row["pane"], pane.as_str(), "{row}");
        assert_eq!(row["agent"], agent, "{row}");
        assert_eq!(row["answer"]["text"], REPLY_TEXT, "{row}");
    }
    assert_eq!(r["summary"]["answered"], 2, "{r}");
    // plain: a labelled block per pane
    srv.wait_state(&p1, "ready", 10.0);
    srv.wait_state(&p2, "ready", 10.0);
    let o = srv.pg(&["ask", "-t", &p1, "-t", &p2, "compare again"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = text(&o.stdout);
    assert!(
        out.contains(&format!("=== {p1} claude\n{REPLY_TEXT}\n")),
        "{out}"
    );
    assert!(
        out.contains(&format!("=== {p2} codex\n{REPLY_TEXT}\n")),
        "{out}"
    );
    // three targets naming one pane (its id, its name, its id again): asked
    // once, with a note for each dropped
    srv.wait_state(&p1, "ready", 10.0);
    let name = srv.pane_name(&p1);
    let o = srv.pg(&[
        "ask",
        "--json",
        "-t",
        &p1,
        "-t",
        &name,
        "-t",
        &p1,
        "only once",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = json_out(&o);
    assert_eq!(r["summary"]["total"], 1, "{r}");
    assert_eq!(r["duplicates"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(
        stderr(&o).matches("asked once").count(),
        2,
        "{}",
        stderr(&o)
    );
    let asked = prompts(&t1).iter().filter(|p| *p == "only once").count();
    assert_eq!(asked, 1, "{:?}", prompts(&t1));
}

#[test]
fn bad_input_types_nothing() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, transcript) = fake(&srv, "claude", "bad", &[]);
    let o = srv.pg(&["ask", "-t", &pane, "--session", "x", "hi"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    let o = srv.pg(&["ask", "-t", &pane, "--done-timeout", "-1", "hi"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(prompts(&transcript).is_empty());
}

/// `ask`, and `send --until-done`, stopped by Ctrl-C while the turn runs: the
/// wait stops at once (never the agent), the prompt stays delivered, and the
/// exit is 44: 130 would say nothing was typed, and invite a second send.
#[test]
fn ctrl_c_during_the_wait_leaves_the_prompt_delivered_and_says_so() {
    let srv = TmuxServer::new(120, 40, &[]);
    for (i, args) in [&["ask"][..], &["send", "--until-done"][..]]
        .iter()
        .enumerate()
    {
        let home = srv.dir.path().join(format!("home-ctrl-c-{i}"));
        let (pane, transcript) =
            srv.fake_in(&home, "claude", &["--records", "--busy-ms", "600000"]);
        srv.wait_state(&pane, "ready", 10.0);
        let mut a = args.to_vec();
        a.extend(["-t", &pane, "a long one"]);
        let mut cmd = srv.pg_cmd(&a);
        // A test run started in the background (`cmd &`, nohup) ignores SIGINT, and
        // promptgate keeps a signal ignored that its caller ignores: give the child
        // the default, as a terminal would.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        srv.wait_state(&pane, "busy", 10.0);
        // the prompt is in the agent's record before the signal is sent
        let t = std::time::Instant::now();
        while prompts(&transcript).is_empty() && t.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(30));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        let t = std::time::Instant::now();
        std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "{args:?}: not at once"
        );
        // delivered, then stopped: 44, never 130 (which says nothing was typed)
        assert_eq!(code(&o), 44, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("the agent keeps working"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(prompts(&transcript), vec!["a long one"]);
        assert_eq!(srv.state(&pane), "busy", "the agent was not stopped");
    }
}

#[test]
fn the_same_question_twice_gets_the_second_reply_never_the_first() {
    let srv = TmuxServer::new(120, 40, &[]);
    for like in ["claude", "codex", "gemini"] {
        let home = srv.dir.path().join(format!("home-twice-{like}"));
        let (pane, _) = srv.fake_in(&home, like, &["--records", "--busy-ms", "300"]);
        srv.wait_state(&pane, "ready", 10.0);
        for n in 1..=2 {
            srv.wait_state(&pane, "ready", 10.0);
            let o = srv.pg(&["ask", "-t", &pane, "the same words"]);
            assert_eq!(code(&o), 0, "{like}: {}", stderr(&o));
            assert_eq!(
                text(&o.stdout),
                format!("Fake reply to prompt {n} (promptgate fake-agent).\n"),
                "{like}"
            );
        }
    }
}

/// Two Gemini sessions in one project asked the same question at once (a
/// fan-out), one still writing its session file: neither pane is given the
/// other's reply (nothing in Gemini's files ties a session to its process, so
/// an answer both sessions could be is withheld and says why).
#[test]
fn a_fan_out_to_two_sessions_of_one_project_never_swaps_their_answers() {
    let srv = TmuxServer::new(120, 40, &[]);
    let home = srv.dir.path().join("home-shared");
    let (a, _) = srv.fake_in(
        &home,
        "gemini",
        &["--records", "--busy-ms", "2500", "--reply", "reply from A"],
    );
    let (b, _) = srv.fake_in(
        &home,
        "gemini",
        &["--records", "--busy-ms", "100", "--reply", "reply from B"],
    );
    srv.wait_state(&a, "ready", 10.0);
    srv.wait_state(&b, "ready", 10.0);
    // B's session file keeps changing (a streaming agent appends updates) while A
    // works, so it is the newest file when A's turn ends
    let h = home.clone();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let chats = std::fs::read_dir(h.join(".gemini/tmp"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
            .join("chats");
        let bf = std::fs::read_dir(&chats)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                std::fs::read_to_string(p)
                    .unwrap_or_default()
                    .contains("reply from B")
            })
            .unwrap();
        for _ in 0..250 {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(&bf).unwrap();
            writeln!(
                f,
                "{{\"id\":\"s\",\"type\":\"info\",\"content\":\"B streaming\"}}"
            )
            .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });
    let o = srv.pg(&["ask", "--json", "-t", &a, "-t", &b, "compare notes"]);
    writer.join().unwrap();
    let r = json_out(&o);
    for (pane, other) in [(&a, "reply from B"), (&b, "reply from A")] {
        let row = r["targets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["pane"] == pane.as_str())
            .unwrap()
            .clone();
        assert_ne!(row["answer"]["text"], other, "{row}");
    }
}

/// A FIFO named like a record file in the agent's record directory: `ask`
/// never blocks opening it (it used to, before typing, for good).
#[test]
fn ask_never_blocks_on_a_fifo_in_the_record_directory() {
    let srv = TmuxServer::new(120, 40, &[]);
    let home = srv.dir.path().join("home-fifo");
    let (pane, _) = srv.fake_in(&home, "claude", &["--records", "--busy-ms", "200"]);
    srv.wait_state(&pane, "ready", 10.0);
    assert_eq!(code(&srv.pg(&["ask", "-t", &pane, "warm up"])), 0);
    let projects = home.join(".claude/projects");
    let dir = std::fs::read_dir(&projects)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let fifo = std::ffi::CString::new(dir.join("zz.jsonl").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    srv.wait_state(&pane, "ready", 10.0);
    let mut child = srv.pg_cmd(&["ask", "-t", &pane, "second"]).spawn().unwrap();
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(15) {
        if let Some(st) = child.try_wait().unwrap() {
            assert_eq!(st.code(), Some(0));
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("ask still blocked on the FIFO after 15 s");
}

/// A person types the very words of the prompt during its turn: the answer is
/// the reply to the asked prompt, and the person's is reported, never returned.
#[test]
fn the_same_words_typed_by_hand_during_the_turn_are_not_the_answer() {
    let srv = TmuxServer::new(120, 40, &[]);
    let home = srv.dir.path().join("home-same");
    let (pane, _) = srv.fake_in(&home, "claude", &["--records", "--busy-ms", "1500"]);
    srv.wait_state(&pane, "ready", 10.0);
    let child = srv
        .pg_cmd(&["ask", "-t", &pane, "--json", "same words"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    srv.wait_state(&pane, "busy", 10.0);
    srv.submit_by_hand(&pane, "same words", 10.0);
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let a = &json_out(&o)["answer"];
    assert!(
        a["text"].as_str().unwrap_or_default().contains("prompt 1"),
        "{a}"
    );
    assert_eq!(a["other_prompts"][0], "same words", "{a}");
}

/// `--done-timeout` bounds `ask`: a turn still running at the timeout is read
/// once, not waited on for the reply wait on top (20 after ~1 s, not ~4 s).
#[test]
fn the_done_timeout_bounds_the_wait() {
    let srv = TmuxServer::new(120, 40, &[]);
    let home = srv.dir.path().join("home-timeout");
    let (pane, transcript) = srv.fake_in(&home, "claude", &["--records", "--busy-ms", "10000"]);
    srv.wait_state(&pane, "ready", 10.0);
    let t = std::time::Instant::now();
    let o = srv.pg(&["ask", "-t", &pane, "--done-timeout", "1", "a long one"]);
    assert_eq!(code(&o), 20, "{}", stderr(&o));
    assert!(
        t.elapsed() < std::time::Duration::from_secs(3),
        "{:?}: {}",
        t.elapsed(),
        stderr(&o)
    );
    assert_eq!(prompts(&transcript), vec!["a long one"]);
}
