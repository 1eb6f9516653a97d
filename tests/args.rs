//! Argument parsing and validation: flags are flags wherever they stand, every
//! value is checked before anything touches a pane, and every error is one line
//! (issues 14 and 15). Live checks use a private tmux server and a fake agent.

mod common;
use common::*;

fn run(args: &[&str]) -> std::process::Output {
    std::process::Command::new(bin())
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env("PROMPTGATE_LOG", "off")
        .output()
        .unwrap()
}

fn out(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn one_line_error(o: &std::process::Output) {
    let e = stderr(o);
    assert_eq!(
        e.trim().lines().count(),
        1,
        "stderr should be one line: {e:?}"
    );
    assert!(e.starts_with("promptgate: "), "{e:?}");
}

/// A server with a ready fake claude; returns the server, its pane and transcript.
fn ready_claude() -> (TmuxServer, String, std::path::PathBuf) {
    let srv = TmuxServer::new(100, 30, &[]);
    let (pane, t) = srv.fake("claude", &[]);
    srv.wait_state(&pane, "ready", 10.0);
    (srv, pane, t)
}

#[test]
fn flags_after_the_body_are_flags_not_prompt_text() {
    let (srv, pane, t) = ready_claude();
    let o = srv.pg(&["send", "-t", &pane, "fix it", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(out(&o).trim()).expect("a JSON receipt");
    assert_eq!(v["receipt"], "consumed");
    srv.wait_state(&pane, "ready", 10.0);
    // several words are still joined, and a flag among them is still a flag
    let o = srv.pg(&["send", "-t", &pane, "two", "--wait-busy", "words"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&t), vec!["fix it", "two words"]);
}

#[test]
fn a_mistyped_or_unknown_flag_is_exit_2_and_types_nothing() {
    let (srv, pane, t) = ready_claude();
    let before = srv.capture(&pane);
    for args in [
        vec!["send", "-t", &pane, "--wait-bussy", "next step"],
        vec!["send", "-t", &pane, "next step", "--wait-bussy"],
        vec!["send", "-t", &pane, "next step", "--jsno"],
        vec!["send", "-t", &pane, "next", "-x", "step"],
    ] {
        let o = srv.pg(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        one_line_error(&o);
        assert!(out(&o).is_empty(), "{args:?}");
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(srv.capture(&pane), before, "nothing was typed");
    assert!(prompts(&t).is_empty());
    let o = srv.pg(&["send", "-t", &pane, "--wait-bussy", "x"]);
    assert!(stderr(&o).contains("--wait-busy"), "names the flag meant");
}

#[test]
fn a_body_that_begins_with_a_dash_goes_after_double_dash() {
    let o = run(&[
        "plan",
        "--agent",
        "claude",
        "--json",
        "--",
        "-v is broken",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["plan"]["body"], "-v is broken --json");
    let o = run(&["plan", "--agent", "claude", "-v is broken"]);
    assert_eq!(code(&o), 2);
    one_line_error(&o);
    assert!(stderr(&o).contains("'--"), "says to use --: {}", stderr(&o));
    for cmd in [
        &["send", "--help"][..],
        &["plan", "--help"],
        &["queue", "add", "--help"],
    ] {
        let help = out(&run(cmd));
        assert!(help.contains("after `--`"), "{cmd:?} help: {help}");
    }
}

#[test]
fn an_empty_or_blank_target_is_exit_2_for_every_command_that_takes_t() {
    let (srv, pane, t) = ready_claude();
    let qdir = srv.dir.path().join("queue");
    for empty in ["", " ", "\t"] {
        for args in [
            vec!["send", "-t", empty, "hello"],
            vec!["send", "-t", &pane, "-t", empty, "hello"],
            vec!["send", "--target", empty, "--force", "hello"],
            vec!["state", "-t", empty],
            vec!["explain", "-t", empty],
            vec!["wait", "-t", empty],
            vec!["capture", "-t", empty, "-o", "/nonexistent/x"],
            vec!["queue", "add", "-t", empty, "hello"],
        ] {
            // inside tmux, where tmux itself would read an empty target as this pane
            let o = srv
                .pg_cmd(&args)
                .env("TMUX_PANE", &pane)
                .env("PROMPTGATE_QUEUE_DIR", &qdir)
                .output()
                .unwrap();
            assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
            one_line_error(&o);
            assert!(stderr(&o).contains("empty target"), "{}", stderr(&o));
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(prompts(&t).is_empty(), "nothing was sent");
    assert!(!qdir.exists() || std::fs::read_dir(&qdir).unwrap().next().is_none());
    for args in [
        ["-L", "", "state"],
        ["-S", " ", "state"],
        ["--host", "", "state"],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 2, "{args:?}");
        one_line_error(&o);
    }
}
