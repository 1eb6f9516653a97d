//! Live: what runs in a pane decides before what it shows. An editor, a pager
//! or a shell that shows a saved capture of an agent's screen is no agent (exit
//! 24, nothing typed, even with `--agent`); an agent started under a shell that
//! stays (`sh -c "claude; exec sh"`, wrappers at any depth) is the agent.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A real capture of Claude Code's ready box (what `promptgate capture` saves).
fn claude_capture(dir: &Path) -> PathBuf {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude/05-idle-after-onboarding.txt");
    let dst = dir.join("claude-box.txt");
    std::fs::copy(src, &dst).unwrap();
    dst
}

fn have(prog: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Poll until the pane shows `text`.
fn wait_for_text(srv: &TmuxServer, pane: &str, text: &str) {
    let t = Instant::now();
    loop {
        let c = srv.capture(pane);
        if c.contains(text) {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "pane {pane} never showed {text:?}:\n{c}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `state` says not-agent; `send` (plain, with `--agent claude`, and with
/// `--agent claude --force`) exits 24 (a shell's pane with `--agent` and the
/// gate on: 25, the agent's gone), and nothing reaches the program: its screen
/// stays and `:!touch` never runs.
fn refused_untouched(srv: &TmuxServer, pane: &str, what: &str, shell: bool) {
    let pwned = srv.dir.path().join("pwned");
    let body = format!(":!touch {}", pwned.display());
    assert_eq!(
        srv.state(pane),
        "not-agent",
        "{what}:\n{}",
        srv.capture(pane)
    );
    let before = srv.capture(pane);
    let mut runs: Vec<Vec<&str>> = vec![vec!["send", "-t", pane, &body]];
    runs.push(vec!["send", "--agent", "claude", "-t", pane, &body]);
    runs.push(vec![
        "send", "--agent", "claude", "--force", "-t", pane, &body,
    ]);
    for args in runs {
        let o = srv.pg(&args);
        let want = if shell && args.len() == 6 { 25 } else { 24 };
        assert_eq!(code(&o), want, "{what}: {args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(!pwned.exists(), "{what}: the body ran as a command");
    assert_eq!(srv.capture(pane), before, "{what}: something was typed");
}

#[test]
fn an_editor_a_pager_or_a_shell_showing_a_capture_is_not_an_agent() {
    let srv = TmuxServer::new(120, 40, &[]);
    let cap = claude_capture(srv.dir.path());
    let cap = cap.to_str().unwrap();
    let mut viewers: Vec<(&str, Vec<String>)> = Vec::new();
    let vim = ["vim", "vi", "vim.tiny"].into_iter().find(|v| have(v));
    // vim with its cursor on the `❯` line: the box's geometry holds exactly
    if let Some(vim) = vim {
        let argv = format!("{vim} -Nu NONE -n +15 {cap}");
        viewers.push((vim, argv.split(' ').map(String::from).collect()));
        // the editor run by a shell that stays: the shell leads the job
        viewers.push((
            "sh -c vim",
            vec!["sh".into(), "-c".into(), format!("{argv}; exec sh")],
        ));
    } else {
        eprintln!("no vim here: the editor case is skipped");
    }
    if have("less") {
        viewers.push(("less", vec!["less".into(), cap.into()]));
    } else {
        eprintln!("no less here: the pager case is skipped");
    }
    for (what, argv) in &viewers {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let pane = srv.window(&argv);
        wait_for_text(&srv, &pane, "Claude Code v2.1.197");
        std::thread::sleep(Duration::from_millis(200));
        refused_untouched(&srv, &pane, what, false);
    }

    // a shell that has `cat`-ed the capture: its prompt under the box
    let pane = srv.window(&["sh"]);
    srv.tmux(&["send-keys", "-t", &pane, &format!("cat {cap}"), "Enter"]);
    wait_for_text(&srv, &pane, "? for shortcuts");
    std::thread::sleep(Duration::from_millis(200));
    refused_untouched(&srv, &pane, "sh after cat", true);
}

/// `sh -c "<fake agent>; exec sh"` (and the agent two shells deep): ready, each
/// send lands once, and once the agent quits the shell it leaves is `exited`.
#[test]
fn an_agent_under_a_shell_that_stays_is_the_agent() {
    let srv = TmuxServer::new(100, 30, &[]);
    for (like, depth) in [("claude", 1), ("gemini", 2), ("codex", 1)] {
        let transcript = srv.dir.path().join(format!("{like}.jsonl"));
        let agent = format!(
            "{} fake-agent --like {like} --busy-ms 200 --transcript {}",
            bin().display(),
            transcript.display()
        );
        let script = if depth == 1 {
            format!("{agent}; exec sh")
        } else {
            format!("bash -c '{agent}; echo agent gone'; exec sh")
        };
        let pane = srv.window(&["sh", "-c", &script]);
        srv.wait_state(&pane, "ready", 10.0);
        let cmd = srv.tmux_out(&["display", "-p", "-t", &pane, "#{pane_current_command}"]);
        assert_eq!(cmd.trim(), "sh", "{like}: the shell leads the pane's job");
        // the status listing reads the shell pane too, and finds the agent
        let tsv = srv.pg(&["status", "--format", "tsv"]);
        let tsv = String::from_utf8_lossy(&tsv.stdout);
        assert!(
            tsv.lines().any(|l| l.contains(&pane) && l.contains(like)),
            "{like}: status --format tsv:\n{tsv}"
        );
        let o = srv.pg(&["send", "-t", &pane, "first"]);
        assert_eq!(code(&o), 0, "{like}: {}", stderr(&o));
        let o = srv.pg(&[
            "send",
            "--wait-busy",
            "--agent",
            like,
            "-t",
            &pane,
            "second",
        ]);
        assert_eq!(code(&o), 0, "{like}: {}", stderr(&o));
        assert_eq!(prompts(&transcript), vec!["first", "second"], "{like}");

        // the agent quits (Ctrl-C on its empty composer); the shell stays
        srv.wait_state(&pane, "ready", 5.0);
        // one Ctrl-C: the fake quits on it, and a second one would reach the
        // shells left in the foreground as SIGINT and close the pane
        srv.tmux(&["send-keys", "-t", &pane, "C-c"]);
        let t = Instant::now();
        while records(&transcript, "exit").is_empty() {
            assert!(t.elapsed() < Duration::from_secs(5), "{like} did not quit");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        let o = srv.pg(&["send", "--agent", like, "-t", &pane, "never"]);
        assert_eq!(code(&o), 25, "{like}: {}", stderr(&o));
        assert_eq!(prompts(&transcript).len(), 2, "{like}");
    }
}

/// The start-up age that decides a settle is the wrapped agent's, not the age of
/// the shell that started it later.
#[test]
fn the_start_up_age_is_the_wrapped_agents() {
    let srv = TmuxServer::new(100, 30, &[]);
    let script = format!(
        "sleep 2.5; {} fake-agent --like gemini; exec sh",
        bin().display()
    );
    let pane = srv.window(&["sh", "-c", &script]);
    srv.wait_state(&pane, "ready", 15.0);
    let pid: u32 = srv
        .tmux_out(&["display", "-p", "-t", &pane, "#{pane_pid}"])
        .trim()
        .parse()
        .unwrap();
    let shell = promptgate::io::proc::process_age(pid).unwrap();
    let agent = promptgate::io::proc::foreground_age(pid).unwrap();
    assert!(
        agent + Duration::from_secs(2) < shell,
        "agent {agent:?}, shell {shell:?}"
    );
}

/// A send the moment such a pane opens, before the shell has started the agent:
/// the launch grace waits for it, with or without `--agent`.
#[test]
fn a_send_at_launch_waits_for_the_agent_a_shell_starts() {
    let srv = TmuxServer::new(100, 30, &[]);
    for flag in [false, true] {
        let transcript = srv.dir.path().join(format!("launch-{flag}.jsonl"));
        let script = format!(
            "sleep 0.6; {} fake-agent --like claude --transcript {}; exec sh",
            bin().display(),
            transcript.display()
        );
        let pane = srv.window(&["sh", "-c", &script]);
        let mut args = vec!["send", "-t", &pane];
        if flag {
            args.extend(["--agent", "claude"]);
        }
        args.push("right after launch");
        let o = srv.pg(&args);
        assert_eq!(code(&o), 0, "--agent {flag}: {}", stderr(&o));
        assert_eq!(prompts(&transcript), vec!["right after launch"]);
    }
}

/// Each prompt that quotes a dialog, sent with `promptgate send` to each agent:
/// it lands once, and the next send lands too (the echo above is no dialog).
#[test]
fn prompts_that_quote_a_dialog_land_and_do_not_strand_the_next() {
    let srv = TmuxServer::new(100, 30, &[]);
    for like in ["claude", "codex", "gemini"] {
        let (pane, transcript) = srv.fake(like, &["--busy-ms", "150"]);
        srv.wait_state(&pane, "ready", 10.0);
        for q in QUOTES {
            let o = output_with_stdin(
                &mut srv.pg_cmd(&["send", "--wait-busy", "-t", &pane, "-f", "-"]),
                q.as_bytes(),
            );
            assert_eq!(code(&o), 0, "{like}: {q:?}: {}", stderr(&o));
        }
        let o = srv.pg(&["send", "--wait-busy", "-t", &pane, "and the next one"]);
        assert_eq!(code(&o), 0, "{like}: {}", stderr(&o));
        let mut want: Vec<&str> = QUOTES.to_vec();
        want.push("and the next one");
        assert_eq!(prompts(&transcript), want, "{like}: each once, byte-exact");
    }
}
