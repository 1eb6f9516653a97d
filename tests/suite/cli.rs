//! Bad input gets a one-line error and a documented exit code, and types nothing.

use crate::common;
use common::*;

fn fixture(name: &str) -> String {
    format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> std::process::Output {
    std::process::Command::new(bin())
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .unwrap()
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

#[test]
fn detect_classifies_a_saved_capture() {
    let o = run(&[
        "detect",
        "--agent",
        "claude",
        "--screen",
        &fixture("claude/04-trust-dialog.txt"),
    ]);
    assert_eq!(code(&o), 0);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("\tdialog:trust\t"), "{out}");
    let o = run(&[
        "detect",
        "--agent",
        "codex",
        "--json",
        "--screen",
        &fixture("codex/06-idle-composer.txt"),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["state"], "ready");
    assert_eq!(v["evidence"]["row"], 36);
}

#[test]
fn unknown_agent_is_exit_7() {
    let o = run(&[
        "detect",
        "--agent",
        "nope",
        "--screen",
        &fixture("claude/04-trust-dialog.txt"),
    ]);
    assert_eq!(code(&o), 7);
    one_line_error(&o);
    assert!(stderr(&o).contains("claude, codex, gemini"));
}

#[test]
fn unreadable_or_empty_screen_file_is_exit_9() {
    let o = run(&[
        "detect",
        "--agent",
        "claude",
        "--screen",
        "/nonexistent/screen.txt",
    ]);
    assert_eq!(code(&o), 9);
    one_line_error(&o);
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "\n\n").unwrap();
    let o = run(&[
        "detect",
        "--agent",
        "claude",
        "--screen",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 9);
    one_line_error(&o);
}

#[test]
fn no_server_is_exit_4() {
    let o = run(&[
        "-L",
        &format!("promptgate-test-none-{}", std::process::id()),
        "state",
        "-t",
        "x",
    ]);
    assert_eq!(code(&o), 4);
    one_line_error(&o);
}

#[test]
fn nonexistent_pane_is_exit_5() {
    let srv = TmuxServer::new(80, 24, &[]);
    for t in ["%999", "nosuchsession", "main:9.9"] {
        let o = srv.pg(&["state", "-t", t]);
        assert_eq!(code(&o), 5, "{t}: {}", stderr(&o));
        one_line_error(&o);
    }
    // `-t mai` must not match session `main` by prefix
    let o = srv.pg(&["state", "-t", "mai"]);
    assert_eq!(code(&o), 5);
    // tmux's own exact form names the session as the bare name does
    for t in ["=main", "=main:", "main"] {
        let o = srv.pg(&["state", "-t", t]);
        assert_eq!(code(&o), 0, "{t}: {}", stderr(&o));
    }
    let o = srv.pg(&["state", "-t", "=mai"]);
    assert_eq!(code(&o), 5);
}

/// Whatever a user passes (a target, an id, a subcommand with a newline or an
/// escape sequence in it), the error is one line and writes no control byte.
#[test]
fn hostile_names_get_a_one_line_error_with_no_control_bytes() {
    let srv = TmuxServer::new(80, 24, &[]);
    let hostile = "a\nb\r\u{1b}[2J\u{1b}]0;title\u{7}";
    for args in [
        vec!["state", "-t", hostile],
        vec!["send", "-t", hostile, "hi"],
        vec!["queue", "drop", hostile],
        vec![hostile],
    ] {
        let o = srv.pg(&args);
        assert!([2, 5].contains(&code(&o)), "{args:?}: {}", stderr(&o));
        one_line_error(&o);
        let e = stderr(&o);
        assert!(
            !e.trim_end().chars().any(|c| c.is_control() && c != '\t'),
            "{e:?}"
        );
    }
}

#[test]
fn usage_errors_are_exit_2() {
    assert_eq!(code(&run(&["state", "--bogus"])), 2);
    assert_eq!(code(&run(&["state"])), 2, "no -t outside tmux");
}

#[test]
fn bad_bodies_are_exit_10_and_touch_no_pane() {
    // No server at all: a bad body must be refused before tmux is ever asked.
    let none = format!("promptgate-test-none-{}", std::process::id());
    let send = |body: &[u8]| {
        let mut c = std::process::Command::new(bin());
        c.args(["-L", &none, "send", "-t", "%0", "-f", "-"]);
        output_with_stdin(&mut c, body)
    };
    for (what, body) in [
        ("invalid UTF-8", b"hello \xff\xfe world".to_vec()),
        ("empty", b"".to_vec()),
        ("whitespace only", b"  \n\t\n".to_vec()),
        ("10 MB", vec![b'a'; 10 * 1024 * 1024]),
    ] {
        let o = send(&body);
        assert_eq!(code(&o), 10, "{what}: {}", stderr(&o));
        one_line_error(&o);
    }
    // a file that never ends, a directory, a missing file: read no further than
    // the limit, in moments and in little memory (this once grew to 3.6 GB)
    for f in ["/dev/zero", "/", "/nonexistent-promptgate-body"] {
        let t = std::time::Instant::now();
        let o = run(&["-L", &none, "send", "-t", "%0", "-f", f]);
        assert_eq!(code(&o), 10, "{f}: {}", stderr(&o));
        one_line_error(&o);
        assert!(stderr(&o).contains(f), "{f}: {}", stderr(&o));
        assert!(t.elapsed() < std::time::Duration::from_secs(20), "{f}");
    }
    let o = run(&["-L", &none, "send", "-t", "%0", "-f", "/dev/zero"]);
    assert!(
        stderr(&o).contains("more than 4194304 bytes"),
        "{}",
        stderr(&o)
    );
    // the same bound on the other files a user names
    let o = run(&["--profiles", "/dev/zero", "profiles"]);
    assert_eq!(code(&o), 8, "{}", stderr(&o));
    one_line_error(&o);
    let o = run(&["detect", "--agent", "claude", "--screen", "/dev/zero"]);
    assert_eq!(code(&o), 9, "{}", stderr(&o));
    one_line_error(&o);
}

#[test]
fn plan_prints_chunks_without_tmux() {
    let o = run(&[
        "-L",
        "promptgate-test-none",
        "plan",
        "--agent",
        "claude",
        "line one\nline two",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("paste") && out.contains("Enter"), "{out}");
    let o = run(&["plan", "--agent", "codex", "--json", "hi;"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["plan"]["chunks"][0]["how"], "paste");
    assert_eq!(v["plan"]["chunks"][0]["text"], "hi;");
    assert_eq!(v["plan"]["chunks"][1]["how"], "submit");
}

#[test]
fn a_shell_pane_is_not_an_agent_and_gets_nothing() {
    let srv = TmuxServer::new(80, 24, &["sh"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let before = srv.capture("main:");
    assert_eq!(srv.state("main:"), "not-agent");
    let o = srv.pg(&["send", "-t", "main:", "echo typed-into-a-shell"]);
    assert_eq!(code(&o), 24, "{}", stderr(&o));
    one_line_error(&o);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(srv.capture("main:"), before, "nothing was typed");
}

#[test]
fn user_profiles_file_adds_an_agent() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("agents.toml");
    let shown = run(&["profiles", "--show", "claude"]);
    let text =
        String::from_utf8_lossy(&shown.stdout).replace("name = \"claude\"", "name = \"my-claude\"");
    std::fs::write(&f, text).unwrap();
    let o = run(&[
        "--profiles",
        f.to_str().unwrap(),
        "detect",
        "--agent",
        "my-claude",
        "--screen",
        &fixture("claude/09-idle-after-apikey.txt"),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("\tready\t"));
    std::fs::write(&f, "[[agent]]\nname = 1\n").unwrap();
    let o = run(&["--profiles", f.to_str().unwrap(), "profiles"]);
    assert_eq!(code(&o), 8);
    one_line_error(&o);
}

#[test]
fn tmux_missing_is_exit_3() {
    let o = std::process::Command::new(bin())
        .args(["state", "-t", "%0"])
        .env("PROMPTGATE_TMUX", "/nonexistent/tmux")
        .output()
        .unwrap();
    assert_eq!(code(&o), 3);
    one_line_error(&o);
}

#[test]
fn wait_reports_readiness_and_refusals() {
    let srv = TmuxServer::new(80, 24, &[]);
    let (pane, _t) = srv.fake("gemini", &["--dialog", "api-key"]);
    srv.wait_state(&pane, "dialog:api-key", 10.0);
    let o = srv.pg(&["wait", "-t", &pane, "--json"]);
    assert_eq!(code(&o), 21);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["ready"].as_bool(), v["state"].as_str()),
        (Some(false), Some("dialog:api-key"))
    );
    srv.tmux(&["send-keys", "-t", &pane, "Enter"]);
    let o = srv.pg(&["wait", "-t", &pane, "--timeout", "10"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("\tgemini\tready\t"));
    let sh = srv.window(&["sh"]);
    let o = srv.pg(&["wait", "-t", &sh, "--timeout", "1"]);
    assert_eq!(code(&o), 24, "{}", stderr(&o));
}

/// With no `-t`, `$TMUX_PANE` names a pane of the server `$TMUX` names: with
/// `-L` / `-S` choosing another server, the same id there is someone else's
/// pane. Exit 2 asking for `-t`, nothing typed; on the server `$TMUX` names
/// (by `-L` or `-S`) the current pane is the default as before.
#[test]
fn the_current_pane_is_the_default_only_on_its_own_server() {
    let a = TmuxServer::new(80, 24, &[]);
    let b = TmuxServer::new(100, 30, &[]);
    let (pane, transcript) = b.fake("claude", &[]);
    b.wait_state(&pane, "ready", 15.0);
    let sock = |s: &TmuxServer| {
        s.tmux_out(&["display", "-p", "#{socket_path}"])
            .trim()
            .to_string()
    };
    let (sock_a, sock_b) = (sock(&a), sock(&b));
    let qdir = b.dir.path().join("queue");
    let with_env = |server: &[&str], tmux: &str, args: &[&str]| {
        let mut c = std::process::Command::new(bin());
        c.args(server)
            .args(args)
            .env("TMUX", format!("{tmux},1234,0"))
            .env("TMUX_PANE", &pane)
            .env("PROMPTGATE_QUEUE_DIR", &qdir)
            .env("PROMPTGATE_LOG", b.dir.path().join("deliveries.jsonl"))
            .env("XDG_RUNTIME_DIR", b.dir.path());
        c.output().unwrap()
    };
    let cap = b.dir.path().join("cap").display().to_string();
    let by_name = ["-L", b.socket.as_str()];
    let by_path = ["-S", sock_b.as_str()];
    for server in [&by_name[..], &by_path[..]] {
        for args in [
            vec!["send", "meant for my own pane on server A"],
            vec!["ask", "--done-timeout", "2", "meant for server A"],
            vec!["state"],
            vec!["wait", "--timeout", "1"],
            vec!["capture", "--output", &cap],
            vec!["queue", "add", "queued for server A"],
        ] {
            let o = with_env(server, &sock_a, &args);
            assert_eq!(code(&o), 2, "{server:?} {args:?}: {}", stderr(&o));
            one_line_error(&o);
            assert!(stderr(&o).contains("give -t PANE"), "{}", stderr(&o));
        }
    }
    // tmux reached through a launcher that says it is another machine's (as
    // `--host` and an ssh PROMPTGATE_TMUX are): the pane id is not this one's
    let o = {
        let mut c = std::process::Command::new(bin());
        c.args(["-L", b.socket.as_str(), "send", "meant for server A"])
            .env("TMUX", format!("{sock_b},1234,0"))
            .env("TMUX_PANE", &pane)
            .env("PROMPTGATE_TMUX", "tmux")
            .env("PROMPTGATE_TMUX_REMOTE", "1")
            .env("PROMPTGATE_LOG", b.dir.path().join("deliveries.jsonl"))
            .env("XDG_RUNTIME_DIR", b.dir.path());
        c.output().unwrap()
    };
    assert_eq!(code(&o), 2, "remote launcher: {}", stderr(&o));
    one_line_error(&o);
    assert!(prompts(&transcript).is_empty(), "typed on the other server");
    assert!(
        std::fs::read_dir(&qdir).map_or(true, |d| d.count() == 0)
            || !std::fs::read_to_string(qdir.join("queue.jsonl"))
                .unwrap_or_default()
                .contains("server A"),
        "queued"
    );
    // the server $TMUX names, chosen by -L or -S: the current pane as before
    for server in [&by_name[..], &by_path[..]] {
        let o = with_env(server, &sock_b, &["state"]);
        assert_eq!(code(&o), 0, "{server:?}: {}", stderr(&o));
        assert!(text(&o.stdout).starts_with(&pane), "{}", text(&o.stdout));
    }
    let o = with_env(&by_name, &sock_b, &["send", "on my own server"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&transcript), vec!["on my own server".to_string()]);
}

/// An argument that is not UTF-8: a one-line usage error (exit 2), with
/// `--json` one JSON object, never a panic; as a file name to a fleet's
/// `send -f`, the normal path (each host fails to connect here: 39).
#[test]
fn a_non_utf8_argument_is_a_one_line_error_never_a_panic() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let srv = TmuxServer::new(80, 24, &[]);
    let raw = |b: &'static [u8]| OsStr::from_bytes(b);
    let run_os = |args: &[&OsStr]| {
        let mut c = srv.pg_cmd(&[]);
        c.args(args);
        c.output().unwrap()
    };
    let s = |t: &'static str| OsStr::new(t);
    for (args, json) in [
        (
            vec![
                s("send"),
                s("-t"),
                s("%0"),
                s("--nosuchflag"),
                raw(b"caf\xe9"),
            ],
            false,
        ),
        (vec![s("send"), s("-t"), raw(b"\xff"), s("x")], false),
        (
            vec![s("send"), s("--json"), s("-t"), raw(b"\xff"), s("x")],
            true,
        ),
        (vec![s("state"), s("-t"), raw(b"\xff")], false),
    ] {
        let o = run_os(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        one_line_error(&o);
        if json {
            assert_eq!(json_out(&o)["exit_code"], 2, "{}", text(&o.stdout));
        }
    }
    // a body that is not UTF-8: a bad body (10), as before
    let o = run_os(&[s("send"), s("-t"), s("%0"), raw(b"caf\xe9")]);
    assert_eq!(code(&o), 10, "{}", stderr(&o));
    one_line_error(&o);
    // a fleet's -f with a file name that is not UTF-8: passed on as it is
    let file = srv.dir.path().join(OsStr::from_bytes(b"\xff.txt"));
    std::fs::write(&file, "hello").unwrap();
    let mut c = srv.pg_cmd(&["send", "--host", "h1", "--host", "h2", "-t", "%1"]);
    c.arg("-f").arg(&file).env("PROMPTGATE_SSH", "false");
    let o = c.output().unwrap();
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    assert_eq!(code(&o), 39, "{}", stderr(&o));
}
