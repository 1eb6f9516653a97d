//! Argument parsing and validation: flags are flags wherever they stand, every
//! value is checked before anything touches a pane, and every error is one line
//! (issues 14 and 15). Live checks use a private tmux server and a fake agent.

use crate::common;
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
    let o = srv.pg(&["capture", "-t", &pane, "-o", ""]);
    assert_eq!(code(&o), 2, "capture -o '': {}", stderr(&o));
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

/// Every numeric flag of every command, with a value that parses.
const NUMERIC: &[(&[&str], &str)] = &[
    (&["send", "-t", "%0"], "--timeout"),
    (&["send", "-t", "%0"], "--interval"),
    (&["send", "-t", "%0"], "--stable"),
    (&["send", "-t", "%0"], "--settle"),
    (&["send", "-t", "%0"], "--stagger"),
    (&["send", "-t", "%0"], "--verify-timeout"),
    (&["send", "-t", "%0"], "--lock-timeout"),
    (&["wait", "-t", "%0"], "--timeout"),
    (&["wait", "-t", "%0"], "--interval"),
    (&["wait", "-t", "%0"], "--stable"),
    (&["wait", "-t", "%0"], "--settle"),
    (&["queue", "run"], "--max-secs"),
    (&["queue", "run"], "--interval"),
    (&["queue", "run"], "--gate-timeout"),
    (&["queue", "run"], "--verify-timeout"),
    (&["watch"], "--interval"),
    (&["watch"], "--display-ms"),
];

#[test]
fn every_numeric_flag_rejects_inf_nan_negative_and_huge_values_with_exit_2() {
    // no server: a value that got past the parser would end in exit 4, not 2
    let none = format!("promptgate-test-none-{}", std::process::id());
    for (cmd, flag) in NUMERIC {
        for bad in [
            "inf",
            "-inf",
            "nan",
            "NaN",
            "-1",
            "1e308",
            "1e400",
            "",
            "x",
            "18446744073709551616",
        ] {
            let mut args = vec!["-L", &none];
            args.extend_from_slice(cmd);
            let joined = format!("{flag}={bad}");
            args.push(&joined);
            if cmd[0] == "send" {
                args.push("body");
            }
            let o = run(&args);
            assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
            one_line_error(&o);
            assert!(stderr(&o).contains(flag), "names the flag: {}", stderr(&o));
            // and as a separate word
            let pos = args.len() - if cmd[0] == "send" { 2 } else { 1 };
            args.splice(pos..=pos, [*flag, bad]);
            let o = run(&args);
            assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
            one_line_error(&o);
        }
    }
}

#[test]
fn the_largest_documented_values_deliver_without_a_panic() {
    let (srv, pane, t) = ready_claude();
    let o = srv.pg(&[
        "send",
        "-t",
        &pane,
        "--timeout",
        "86400",
        "--verify-timeout",
        "3600",
        "--lock-timeout",
        "86400",
        "--interval",
        "60000",
        "--stable",
        "0",
        "--settle",
        "0",
        "--stagger",
        "60000",
        "largest",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&t), vec!["largest"]);
}

mod props {
    //! No command line, however hostile, makes the parser (or the one-line usage
    //! error) panic, and whatever parses holds numbers that no clock overflows on.
    //! Also: detect, over arbitrary screens, never panics.

    use clap::Parser;
    use promptgate::app::cli::{Cli, Command, QueueCmd, DAY, HOUR, MINUTE_MS, YEAR};
    use promptgate::app::cmd::secs;
    use proptest::prelude::*;
    use std::time::{Duration, Instant};

    const WORDS: &[&str] = &[
        "send",
        "wait",
        "state",
        "explain",
        "detect",
        "capture",
        "plan",
        "profiles",
        "queue",
        "add",
        "run",
        "list",
        "drop",
        "status",
        "watch",
        "demo",
        "completions",
        "man",
        "bash",
        "-t",
        "--target",
        "-f",
        "--file",
        "-",
        "--",
        "-L",
        "-S",
        "--host",
        "--json",
        "--agent",
        "--every",
        "--all-agents",
        "--session",
        "--timeout",
        "--interval",
        "--stable",
        "--settle",
        "--stagger",
        "--verify-timeout",
        "--lock-timeout",
        "--max-secs",
        "--gate-timeout",
        "--display-ms",
        "--wait-busy",
        "--force",
        "--when-ready",
        "--no-verify",
        "--once",
        "--help",
        "-h",
        "--version",
        "claude",
        "%0",
        "inf",
        "-inf",
        "nan",
        "-1",
        "1e308",
        "0",
        "86400",
        "86400.0001",
        "60000",
        "60001",
        "18446744073709551615",
        "",
        " ",
        "\t",
        "=",
        "--timeout=inf",
        "--interval=-0",
        "-t=",
        "-tx",
        "--x",
        "-",
        "é",
        "\u{202e}",
        "fix it",
    ];

    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => prop::sample::select(WORDS).prop_map(str::to_string),
            1 => any::<String>(),
            1 => (any::<f64>()).prop_map(|f| f.to_string()),
            1 => (any::<i64>()).prop_map(|i| i.to_string()),
        ]
    }

    fn checked(s: f64, max: f64) {
        assert!(s.is_finite() && (0.0..=max).contains(&s), "{s} past {max}");
        let _ = Instant::now() + secs(s);
    }

    fn checked_ms(ms: u64) {
        assert!(ms <= 10 * MINUTE_MS, "{ms}");
        let _ = Instant::now() + Duration::from_millis(ms);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn no_command_line_makes_the_parser_panic(
            head in prop::sample::select(&["", "send", "wait", "queue run", "watch", "plan --agent claude"][..]),
            rest in prop::collection::vec(word(), 0..12),
        ) {
            let words: Vec<String> = head.split_whitespace().map(str::to_string).chain(rest).collect();
            let argv: Vec<String> = std::iter::once("promptgate".to_string()).chain(words.iter().cloned()).collect();
            match Cli::try_parse_from(&argv) {
                Err(e) => {
                    let line = promptgate::app::cli::usage_line(&e, &words);
                    prop_assert!(!line.contains('\n'), "{line:?}");
                }
                Ok(cli) => match cli.command {
                    Command::Send(a) => {
                        for t in &a.targets {
                            prop_assert!(!t.trim().is_empty());
                        }
                        checked(a.gate.timeout, DAY);
                        checked(a.verify_timeout, HOUR);
                        checked(a.lock_timeout, DAY);
                        for ms in [a.gate.interval, a.gate.stable, a.gate.settle.unwrap_or(0), a.stagger] {
                            checked_ms(ms);
                        }
                    }
                    Command::Wait(a) => {
                        prop_assert!(a.t.target.is_none_or(|t| !t.trim().is_empty()));
                        checked(a.gate.timeout, DAY);
                        for ms in [a.gate.interval, a.gate.stable, a.gate.settle.unwrap_or(0)] {
                            checked_ms(ms);
                        }
                    }
                    Command::Queue(q) => if let QueueCmd::Run(r) = q.cmd {
                        checked(r.max_secs.unwrap_or(0.0), YEAR);
                        checked(r.gate_timeout, DAY);
                        checked(r.verify_timeout, HOUR);
                        checked_ms(r.interval);
                    },
                    Command::Watch(w) => {
                        checked_ms(w.interval);
                        checked_ms(w.display_ms);
                    }
                    _ => {}
                },
            }
        }

        #[test]
        fn secs_never_panics(s in any::<f64>()) {
            let _ = Instant::now() + secs(s);
        }

        #[test]
        fn detect_never_panics_on_an_arbitrary_screen(
            rows in prop::collection::vec(
                prop_oneof![
                    any::<String>(),
                    prop::sample::select(&[
                        "❯\u{a0}", "› ", " > ", "─────", "esc to interrupt", "Do you trust",
                        "❯ 1. Yes", "[Pasted text #1 +3 lines]", "",
                    ][..]).prop_map(str::to_string),
                ],
                0..40,
            ),
            cursor in prop::option::of((0usize..300, 0usize..60)),
            w in 0usize..300,
            h in 0usize..60,
            flags in any::<(bool, bool, bool, Option<bool>)>(),
        ) {
            let meta = format!(
                "pane_width={w}\npane_height={h}\n{}pane_in_mode={}\npane_dead={}\nalternate_on={}\n{}",
                cursor.map(|(x, y)| format!("cursor_x={x}\ncursor_y={y}\n")).unwrap_or_default(),
                flags.0 as u8, flags.1 as u8, flags.2 as u8,
                flags.3.map(|v| format!("cursor_flag={}\n", v as u8)).unwrap_or_default(),
            );
            let screen = promptgate::core::screen::Screen::from_capture(&rows.join("\n"), &meta);
            for p in profiles().iter() {
                let _ = promptgate::core::detect::detect(p, &screen);
            }
        }
    }

    fn profiles() -> &'static promptgate::core::profile::Profiles {
        static P: std::sync::OnceLock<promptgate::core::profile::Profiles> =
            std::sync::OnceLock::new();
        P.get_or_init(promptgate::core::profile::Profiles::builtin)
    }
}

/// stdout is exactly one JSON object whose `exit_code` is the exit status and
/// that has an `error` (a string unless the command succeeded).
fn one_json_object(o: &std::process::Output) -> serde_json::Value {
    let text = out(o);
    assert_eq!(
        text.trim().lines().count(),
        1,
        "one line on stdout: {text:?}"
    );
    let v: serde_json::Value = serde_json::from_str(text.trim()).expect("JSON");
    assert_eq!(v["exit_code"], code(o), "{v}");
    if code(o) != 0 {
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    } else {
        assert!(v.get("error").is_none() || v["error"].is_null(), "{v}");
    }
    v
}

#[test]
fn with_json_every_outcome_is_one_json_object_with_exit_code_and_error() {
    let none = format!("promptgate-test-none-{}", std::process::id());
    // no server
    for args in [
        vec!["-L", &none, "send", "-t", "%0", "--json", "hi"],
        vec!["-L", &none, "wait", "-t", "%0", "--json"],
        vec!["-L", &none, "state", "-t", "%0", "--json"],
        vec!["-L", &none, "explain", "-t", "%0", "--json"],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 4, "{args:?}");
        one_json_object(&o);
    }
    // usage errors after parsing, and from the parser itself
    for args in [
        vec!["send", "--json", "no target"],
        vec!["wait", "--json"],
        vec!["send", "-t", "%0", "--jsno", "--json", "x"],
        vec!["send", "-t", "", "--json", "x"],
        vec!["wait", "-t", "%0", "--timeout", "inf", "--json"],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 2, "{args:?}");
        one_json_object(&o);
    }
    // unknown agent, unreadable screen, bad body
    let o = run(&["plan", "--agent", "nope", "--json", "x"]);
    assert_eq!(code(&o), 7);
    one_json_object(&o);
    let o = run(&[
        "detect",
        "--agent",
        "claude",
        "--screen",
        "/nonexistent",
        "--json",
    ]);
    assert_eq!(code(&o), 9);
    one_json_object(&o);
    let mut c = std::process::Command::new(bin());
    c.args(["-L", &none, "send", "-t", "%0", "--json", "-f", "-"]);
    let o = output_with_stdin(&mut c, b"  \n");
    assert_eq!(code(&o), 10);
    assert_eq!(one_json_object(&o)["receipt"], "not-sent");

    let (srv, pane, t) = ready_claude();
    // missing pane
    for args in [
        vec!["send", "-t", "%999", "--json", "hi"],
        vec!["wait", "-t", "%999", "--json"],
        vec!["state", "-t", "%999", "--json"],
    ] {
        let o = srv.pg(&args);
        assert_eq!(code(&o), 5, "{args:?}: {}", stderr(&o));
        one_json_object(&o);
    }
    // a send that ended before any receipt is in the delivery log too (the
    // plugin, which reads only stdout, logged these itself when stdout was empty)
    let log = std::fs::read_to_string(srv.dir.path().join("deliveries.jsonl")).unwrap_or_default();
    assert!(
        log.lines().any(|l| l.contains("\"pane\":\"%999\"")
            && l.contains("not-sent")
            && l.contains("time_ms")),
        "{log}"
    );
    // a refusal: a shell pane
    let sh = srv.window(&["sh"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let o = srv.pg(&["send", "-t", &sh, "--json", "echo no"]);
    assert_eq!(code(&o), 24, "{}", stderr(&o));
    assert_eq!(one_json_object(&o)["receipt"], "not-sent");
    let o = srv.pg(&["wait", "-t", &sh, "--timeout", "1", "--json"]);
    assert_eq!(code(&o), 24, "{}", stderr(&o));
    one_json_object(&o);
    // success
    let o = srv.pg(&["wait", "-t", &pane, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    one_json_object(&o);
    let o = srv.pg(&["send", "-t", &pane, "--json", "ok"]);
    assert_eq!(one_json_object(&o)["receipt"], "consumed");
    assert_eq!(prompts(&t), vec!["ok"]);
    // --json has help text on every command that takes it
    for cmd in [
        "wait", "plan", "state", "explain", "detect", "send", "profiles",
    ] {
        let help = out(&run(&[cmd, "--help"]));
        let line = help.lines().find(|l| l.contains("--json")).unwrap_or("");
        assert!(line.contains("JSON"), "{cmd} --help: {line:?}");
    }
}

#[test]
fn fan_out_has_its_own_flag_every_and_agent_always_names_the_profile() {
    let srv = TmuxServer::new(100, 30, &[]);
    let (a, ta) = srv.fake("claude", &[]);
    let (b, tb) = srv.fake("gemini", &[]);
    srv.wait_state(&a, "ready", 10.0);
    srv.wait_state(&b, "ready", 10.0);
    let o = srv.pg(&[
        "send",
        "--every",
        "gemini",
        "--session",
        "main",
        "only gemini",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&tb), vec!["only gemini"]);
    assert!(prompts(&ta).is_empty());
    srv.wait_state(&b, "ready", 10.0);
    // inside tmux, --agent with no -t is the current pane with that profile
    // (on the server $TMUX names, which -L chooses here)
    let sock = srv.tmux_out(&["display", "-p", "#{socket_path}"]);
    let o = srv
        .pg_cmd(&["send", "--agent", "claude", "the current pane"])
        .env("TMUX", format!("{},1,0", sock.trim()))
        .env("TMUX_PANE", &a)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&ta), vec!["the current pane"]);
    assert_eq!(prompts(&tb), vec!["only gemini"]);
    // outside tmux the old fan-out form still works, with a note
    let o = srv.pg(&["send", "--agent", "gemini", "--wait-busy", "old form"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("--every"), "{}", stderr(&o));
    assert_eq!(prompts(&tb), vec!["only gemini", "old form"]);
    // --every does not mix with -t, --agent or --all-agents; --session needs a fan-out
    for args in [
        vec!["send", "--every", "claude", "-t", &a, "x"],
        vec!["send", "--every", "claude", "--agent", "claude", "x"],
        vec!["send", "--every", "claude", "--all-agents", "x"],
        vec!["send", "-t", &a, "--session", "main", "x"],
        // --to-any-process: one pane named with -t, with --agent, no fan-out
        vec!["send", "-t", &a, "--to-any-process", "--force", "x"],
        vec!["send", "--all-agents", "--to-any-process", "--force", "x"],
        vec!["send", "--every", "claude", "--to-any-process", "x"],
        vec![
            "send",
            "-t",
            &a,
            "-t",
            &b,
            "--agent",
            "claude",
            "--to-any-process",
            "x",
        ],
        vec!["send", "--agent", "claude", "--to-any-process", "x"],
    ] {
        let o = srv.pg(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        one_line_error(&o);
    }
    let o = srv.pg(&["send", "--every", "nope", "x"]);
    assert_eq!(code(&o), 7);
    assert_eq!(prompts(&ta), vec!["the current pane"]);
    assert_eq!(prompts(&tb), vec!["only gemini", "old form"]);
}

#[test]
fn the_plain_receipt_line_shows_what_sanitising_changed() {
    let (srv, pane, t) = ready_claude();
    let mut c = srv.pg_cmd(&["send", "-t", &pane, "-f", "-"]);
    let o = output_with_stdin(&mut c, b"abc \x1b[201~ def \x1b[31m red");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let line = out(&o);
    assert!(line.contains("\tconsumed\t"), "{line}");
    assert!(
        line.contains(
            "; 2 changes: removed paste-frame marker ESC[201~ x1, removed control byte x1"
        ),
        "{line}"
    );
    assert_eq!(prompts(&t), vec!["abc  def [31m red"]);
    srv.wait_state(&pane, "ready", 10.0);
    // nothing changed: nothing said
    let o = srv.pg(&["send", "-t", &pane, "clean"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!out(&o).contains("change"), "{}", out(&o));
}

#[test]
fn completions_for_bash_zsh_and_fish_and_a_man_page() {
    for (shell, mark) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef promptgate"),
        ("fish", "complete -c promptgate"),
    ] {
        let o = run(&["completions", shell]);
        assert_eq!(code(&o), 0, "{shell}: {}", stderr(&o));
        let text = out(&o);
        assert!(text.contains(mark), "{shell}");
        assert!(
            text.contains("every") && text.contains("wait-busy"),
            "{shell}"
        );
    }
    let o = run(&["completions", "tcsh"]);
    assert_eq!(code(&o), 2);
    one_line_error(&o);
    let page = out(&run(&["man"]));
    assert!(page.contains(".TH promptgate 1"), "{page}");
    assert!(
        page.contains(".SH \"EXIT STATUS\"") && page.contains("fan\\-out"),
        "{page}"
    );
    let send = out(&run(&["man", "send"]));
    assert!(
        send.contains(".TH promptgate-send 1") && send.contains("\"promptgate 0."),
        "{send}"
    );
    assert!(send.contains("\\-\\-verify\\-timeout"), "{send}");
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for f in [
        "promptgate.1",
        "promptgate-send.1",
        "promptgate-queue-add.1",
    ] {
        assert!(dir.path().join(f).exists(), "{f}");
    }
    let top = std::fs::read_to_string(dir.path().join("promptgate.1")).unwrap();
    assert!(top.contains("EXIT STATUS"));
    assert_eq!(code(&run(&["man", "nope"])), 2);
}

#[test]
fn plan_and_the_other_offline_commands_take_no_tmux_server_flags() {
    let server_flags = |help: &str| {
        help.lines().any(|l| {
            l.trim_start().starts_with("-L ")
                || l.trim_start().starts_with("-S ")
                || l.contains("--host")
        })
    };
    for cmd in [
        &["plan"][..],
        &["detect"],
        &["profiles"],
        &["completions"],
        &["man"],
        &["queue", "list"],
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        let help = out(&run(&args));
        assert!(!help.is_empty(), "{cmd:?}");
        assert!(
            !server_flags(&help),
            "{cmd:?} --help lists -L/-S/--host:\n{help}"
        );
    }
    for cmd in [
        &["send"][..],
        &["wait"],
        &["state"],
        &["explain"],
        &["capture"],
        &["queue", "add"],
        &["queue", "run"],
        &["status"],
        &["watch"],
        &["mcp"],
        &["doctor"],
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        assert!(server_flags(&out(&run(&args))), "{cmd:?}");
    }
    let o = run(&["plan", "-L", "x", "--agent", "claude", "hi"]);
    assert_eq!(code(&o), 2);
    one_line_error(&o);
    // before the command (all of them) or after it (tmux commands): the same server
    let none = format!("promptgate-test-none-{}", std::process::id());
    assert_eq!(
        code(&run(&["-L", &none, "plan", "--agent", "claude", "hi"])),
        0
    );
    for args in [
        vec!["-L", &none, "state", "-t", "%0"],
        vec!["state", "-L", &none, "-t", "%0"],
        vec!["-L", "other", "state", "-L", &none, "-t", "%0"],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 4, "{args:?}");
        assert!(stderr(&o).contains(&none), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn profile_errors_are_one_line_naming_the_file_and_the_right_line() {
    let dir = tempfile::tempdir().unwrap();
    let shown = out(&run(&["profiles", "--show", "claude"]));
    let base = shown.replace("name = \"claude\"", "name = \"mine\"");
    let line_of = |text: &str, needle: &str| {
        text.lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?}"))
            + 1
    };
    let check = |name: &str, text: &str, line: usize, says: &str| {
        let f = dir.path().join(format!("{name}.toml"));
        std::fs::write(&f, text).unwrap();
        let o = run(&["--profiles", f.to_str().unwrap(), "profiles"]);
        assert_eq!(code(&o), 8, "{name}: {}", stderr(&o));
        one_line_error(&o);
        let want = format!("{} line {line}: ", f.display());
        assert!(
            stderr(&o).contains(&want),
            "{name}: want {want:?} in {}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains(says),
            "{name}: want {says:?} in {}",
            stderr(&o)
        );
    };
    // a bad regex: the file, its line, the pattern and why, in one line
    let bad = base.replacen(
        "regex = \"esc to interrupt\"",
        "regex = \"(esc to interrupt\"",
        1,
    );
    check("regex", &bad, line_of(&bad, "(esc to"), "unclosed group");
    let bad = base.replacen("prompt = ['", "prompt = ['[", 1);
    check(
        "prompt",
        &bad,
        line_of(&bad, "prompt = ['["),
        "composer.prompt[0]",
    );
    // an unknown key: its own line, not the one before
    let bad = base.replacen("cursor_row = false", "cursor_rwo = false", 1);
    check("key", &bad, line_of(&bad, "cursor_rwo"), "cursor_rwo");
    let bad = base.replacen("submit_delay_ms", "submit_dealy_ms", 1);
    check(
        "delivery",
        &bad,
        line_of(&bad, "submit_dealy_ms"),
        "submit_dealy_ms",
    );
    let bad = base.replacen("description =", "descripton =", 1);
    check("top", &bad, line_of(&bad, "descripton"), "descripton");
    // a delay no clock can add: refused when the file is loaded, not mid-send
    let bad = base.replacen(
        "submit_delay_ms = 130",
        "submit_delay_ms = 9223372036854775807",
        1,
    );
    check(
        "huge",
        &bad,
        line_of(&bad, "submit_delay_ms = 9223"),
        "is over 60000",
    );
    // a start-up that moves its prompt more than 10 times is a typo
    let bad = base.replacen(
        "submit_delay_ms = 130",
        "submit_delay_ms = 130\nstartup_moves = 4294967295",
        1,
    );
    check(
        "moves",
        &bad,
        line_of(&bad, "startup_moves"),
        "startup_moves = 4294967295 is over 10",
    );
    // the same agent twice in one file: the second one's line
    let twice = format!("{base}\n{base}");
    let second = base.lines().count() + 1 + line_of(&base, "name = \"mine\"");
    check("twice", &twice, second, "'mine' is defined twice");
    // a good file still loads
    let f = dir.path().join("good.toml");
    std::fs::write(&f, &base).unwrap();
    assert_eq!(
        code(&run(&["--profiles", f.to_str().unwrap(), "profiles"])),
        0
    );
}

#[test]
fn the_small_things_a_new_user_meets_first() {
    // the man page's synopsis names each option's value
    let man = out(&run(&["man"]));
    let synopsis = man
        .lines()
        .find(|l| l.starts_with("\\fBpromptgate\\fR"))
        .unwrap();
    assert!(
        synopsis.contains("[\\fB\\-L\\fR \\fINAME\\fR]"),
        "{synopsis}"
    );
    assert!(!synopsis.contains("\\-L \\fR]"), "{synopsis}");
    let send = out(&run(&["man", "send"]));
    assert!(send.contains("[\\fB\\-t\\fR|\\fB\\-\\-target\\fR \\fIPANE\\fR]"));
    // detect takes the agent from the capture's .meta
    let screen = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/claude/04-trust-dialog.txt"
    );
    let o = run(&["detect", "--screen", screen]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(out(&o).contains("\tclaude\tdialog:trust\t"), "{}", out(&o));
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("screen.txt");
    std::fs::copy(screen, &bare).unwrap();
    let o = run(&["detect", "--screen", bare.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    one_line_error(&o);
    assert!(stderr(&o).contains("give --agent"), "{}", stderr(&o));
    // outside tmux without -t: say to give -t
    for cmd in ["state", "explain", "wait"] {
        let o = run(&[cmd]);
        assert_eq!(code(&o), 2, "{cmd}");
        one_line_error(&o);
        assert!(stderr(&o).contains("give -t PANE"), "{cmd}: {}", stderr(&o));
    }
}

/// A host that is an ssh option or holds a space or a shell character never
/// reaches ssh: exit 2, one line, for every command that takes `--host`, and in
/// a fleet; `box` and `BOX` are one machine, asked once.
#[test]
fn a_host_that_is_an_option_or_shell_words_is_exit_2() {
    let marker = tempfile::tempdir().unwrap();
    let touched = marker.path().join("injected");
    let inject = format!("box touch {};", touched.display());
    for host in [
        "-oProxyCommand=touch /tmp/x",
        inject.as_str(),
        "h$(id)",
        "h`id`",
        "a|b",
    ] {
        for cmd in [
            vec!["state", "-t", "%0"],
            vec!["watch", "--once"],
            vec!["send", "-t", "%0", "hi"],
        ] {
            let mut args = vec!["--host", host];
            args.extend(cmd.iter().copied());
            let o = run(&args);
            assert_eq!(code(&o), 2, "{host:?} {cmd:?}: {}", stderr(&o));
            one_line_error(&o);
        }
        let o = run(&["--host", host, "--host", "other", "send", "-t", "%0", "hi"]);
        assert_eq!(code(&o), 2, "{host:?} fleet: {}", stderr(&o));
    }
    assert!(!touched.exists(), "a host's words ran as a command");
}
