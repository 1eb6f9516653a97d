//! The choke point (issue 23): a pane whose foreground is a plain shell gets
//! nothing typed, from every entry point (CLI send, `send -f` as the plugin
//! runs it, fan-out, the queue, the MCP server) and with every combination of
//! the flags that could be read as "type anyway". Each case: the documented
//! exit code, no marker file, the shell's screen unchanged. And targets that
//! name one pane twice deliver to it once.

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

/// A plain shell pane whose prompt is drawn and that is past the launch grace.
fn shell_pane(srv: &TmuxServer, argv: &[&str]) -> String {
    let pane = srv.window(argv);
    let t = Instant::now();
    while srv.capture(&pane).trim().is_empty() {
        assert!(t.elapsed() < Duration::from_secs(10), "no shell prompt");
        std::thread::sleep(Duration::from_millis(50));
    }
    // a pane younger than the launch grace is waited on for its agent
    std::thread::sleep(Duration::from_millis(2100));
    pane
}

/// Nothing reached the shell: no marker, the same screen.
fn untouched(srv: &TmuxServer, pane: &str, marker: &Path, before: &str, what: &str) {
    assert!(!marker.exists(), "{what}: the body ran as a command");
    assert_eq!(srv.capture(pane), before, "{what}: something was typed");
}

/// Every combination of the flags, `PROMPTGATE_GATE=off`, and the body given
/// as a file (the plugin's `send --json -f FILE`), against a plain bash and sh.
#[test]
fn a_plain_shell_gets_nothing_whatever_the_flags() {
    let srv = TmuxServer::new(100, 30, &[]);
    let marker = srv.dir.path().join("pwned");
    let body = format!("touch {}", marker.display());
    let file = srv.dir.path().join("prompt.md");
    std::fs::write(&file, &body).unwrap();
    let file = file.display().to_string();
    // the flags that could be read as "type anyway", besides --force and --agent
    const OTHERS: [&str; 6] = [
        "--when-ready",
        "--no-verify",
        "--replace-draft",
        "--cancel-mode",
        "--wait-busy",
        "--wait-dialog",
    ];
    // none of them, each alone, all together
    let mut sets: Vec<Vec<&str>> = vec![vec![]];
    sets.extend(OTHERS.iter().map(|f| vec![*f]));
    sets.push(OTHERS.to_vec());
    for shell in [vec!["bash", "--norc", "--noprofile"], vec!["sh"]] {
        let pane = shell_pane(&srv, &shell);
        let before = srv.capture(&pane);
        // every combination of --agent, --force and PROMPTGATE_GATE=off, with
        // each set of the others (sh: with none of them), the body as an
        // argument or, as the plugin gives it, a file
        for (n, others) in sets.iter().enumerate() {
            if shell[0] == "sh" && n > 0 {
                break;
            }
            for core in 0u32..8 {
                let (with_agent, forced, gate_off) = (core & 1 != 0, core & 2 != 0, core & 4 != 0);
                let as_plugin = (n + core as usize) % 2 == 1;
                let mut args: Vec<&str> = vec!["send", "-t", &pane, "--timeout", "2"];
                args.extend(others);
                if with_agent {
                    args.extend(["--agent", "claude"]);
                }
                if forced {
                    args.push("--force");
                }
                if as_plugin {
                    args.extend(["--json", "-f", &file]);
                } else {
                    args.push(&body);
                }
                let mut c = srv.pg_cmd(&args);
                if gate_off {
                    c.env("PROMPTGATE_GATE", "off");
                }
                let o = c.output().unwrap();
                let what = format!("{}: {args:?} gate_off={gate_off}", shell[0]);
                // without --agent: nobody (24); with it and the gate on: the
                // shell is what the agent left (25); the gate skipped: the
                // choke point (24)
                let want = if with_agent && !forced && !gate_off {
                    25
                } else {
                    24
                };
                assert_eq!(code(&o), want, "{what}: {}", stderr(&o));
                untouched(&srv, &pane, &marker, &before, &what);
            }
        }
        // the same, without even the name of an agent, as PROMPTGATE_GATE=off only
        let o = srv
            .pg_cmd(&["send", "-t", &pane, &body])
            .env("PROMPTGATE_GATE", "off")
            .output()
            .unwrap();
        assert_eq!(code(&o), 24, "{}", stderr(&o));
        untouched(&srv, &pane, &marker, &before, "gate off");
    }
}

/// Fan-out (several -t, --all-agents), the queue and the MCP server: the agent
/// gets its prompt, the shell nothing; the one flag that types into a shell is
/// `--to-any-process`, which nothing else implies.
#[test]
fn fan_out_queue_and_mcp_never_type_into_a_shell() {
    let srv = TmuxServer::new(100, 30, &[]);
    let (agent, transcript) = srv.fake("claude", &["--busy-ms", "200"]);
    srv.wait_state(&agent, "ready", 15.0);
    let pane = shell_pane(&srv, &["bash", "--norc", "--noprofile"]);
    let marker = srv.dir.path().join("pwned");
    let body = format!("touch {}", marker.display());
    let before = srv.capture(&pane);

    // several -t: the agent's lands, the shell's is refused (35: some consumed)
    for extra in [vec![], vec!["--agent", "claude", "--force"]] {
        let mut args = vec!["send", "--json", "-t", &agent, "-t", &pane];
        args.extend(&extra);
        args.push(&body);
        let o = srv
            .pg_cmd(&args)
            .env("PROMPTGATE_GATE", "off")
            .output()
            .unwrap();
        assert_eq!(code(&o), 35, "{extra:?}: {}", stderr(&o));
        let v = json_out(&o);
        let row = v["targets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["pane"] == pane.as_str())
            .cloned()
            .unwrap();
        assert_eq!(row["exit_code"], 24, "{row}");
        untouched(&srv, &pane, &marker, &before, "fan-out");
        srv.wait_state(&agent, "ready", 10.0);
    }
    assert_eq!(prompts(&transcript).len(), 2);

    // --all-agents: the shell is no agent pane
    let o = srv
        .pg_cmd(&["send", "--all-agents", "--json", &body])
        .env("PROMPTGATE_GATE", "off")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_out(&o)["summary"]["total"], 1);
    untouched(&srv, &pane, &marker, &before, "--all-agents");
    srv.wait_state(&agent, "ready", 10.0);

    // the queue, with the agent named and the gate off
    let qdir = srv.dir.path().join("queue");
    let queue = |args: &[&str]| {
        srv.pg_cmd(&["queue"])
            .args(args)
            .env("PROMPTGATE_QUEUE_DIR", &qdir)
            .env("PROMPTGATE_GATE", "off")
            .output()
            .unwrap()
    };
    let _ = queue(&["add", "-t", &pane, "--agent", "claude", &body]);
    let o = queue(&["run", "--once", "--max-secs", "5", "--gate-timeout", "1"]);
    assert_ne!(code(&o), 0, "{}", stderr(&o));
    untouched(&srv, &pane, &marker, &before, "queue run");

    // the MCP server's send_prompt, with the gate off
    let mut mcp = Mcp::start(&srv, &[("PROMPTGATE_GATE", "off")]);
    let r = mcp.call(
        2,
        "tools/call",
        json!({"name": "send_prompt", "arguments": {"target": pane, "body": body}}),
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    untouched(&srv, &pane, &marker, &before, "mcp send_prompt");
    drop(mcp);

    // --to-any-process: the documented way in (with --agent and --force)
    let o = srv.pg(&[
        "send",
        "-t",
        &pane,
        "--agent",
        "claude",
        "--force",
        "--to-any-process",
        "--verify-timeout",
        "0",
        &body,
    ]);
    assert_ne!(code(&o), 24, "{}", stderr(&o));
    let t = Instant::now();
    while !marker.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "--to-any-process typed nothing"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A pane title outlives the program that set it: a python REPL or a shell
/// started where claude ran is still titled `✳ Claude Code`. Neither is an
/// agent: refused 24 with nothing typed, forced, gate off, or in a fan-out.
#[test]
fn a_stale_agent_title_makes_no_pane_an_agent() {
    let srv = TmuxServer::new(100, 30, &[]);
    let marker = srv.dir.path().join("pwned");
    for argv in [vec!["python3", "-q"], vec!["bash", "--norc", "--noprofile"]] {
        let pane = shell_pane(&srv, &argv);
        srv.tmux(&["select-pane", "-t", &pane, "-T", "✳ Claude Code"]);
        let title = srv.tmux_out(&["display", "-p", "-t", &pane, "#{pane_title}"]);
        assert_eq!(title.trim(), "✳ Claude Code");
        let body = match argv[0] {
            "python3" => format!("open('{}','w')", marker.display()),
            _ => format!("touch {}", marker.display()),
        };
        let before = srv.capture(&pane);
        for (extra, gate_off) in [
            (vec!["-t", pane.as_str(), "--force"], false),
            (vec!["-t", pane.as_str()], true),
            (vec!["--all-agents", "--force"], false),
        ] {
            let mut args = vec!["send", "--timeout", "2"];
            args.extend(&extra);
            args.push(&body);
            let mut c = srv.pg_cmd(&args);
            if gate_off {
                c.env("PROMPTGATE_GATE", "off");
            }
            let o = c.output().unwrap();
            let what = format!("{}: {args:?} gate_off={gate_off}", argv[0]);
            assert_eq!(code(&o), 24, "{what}: {}", stderr(&o));
            untouched(&srv, &pane, &marker, &before, &what);
        }
        let o = srv.pg(&["state", "-t", &pane]);
        assert!(text(&o.stdout).contains("not-agent"), "{}", text(&o.stdout));
        srv.tmux(&["kill-pane", "-t", &pane]);
    }
}

/// `-t %5 -t main:1.0` naming the same pane: delivered once, with a note.
#[test]
fn targets_naming_one_pane_deliver_once() {
    let srv = TmuxServer::new(100, 30, &[]);
    let (agent, transcript) = srv.fake("claude", &["--busy-ms", "200"]);
    srv.wait_state(&agent, "ready", 15.0);
    let name = srv.pane_name(&agent);
    let o = srv.pg(&[
        "send", "--json", "-t", &agent, "-t", &name, "-t", &agent, "once",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(v["summary"]["total"], 1, "{v}");
    assert_eq!(v["duplicates"].as_array().unwrap().len(), 2, "{v}");
    assert!(stderr(&o).contains("names pane"), "{}", stderr(&o));
    srv.wait_state(&agent, "ready", 10.0);
    assert_eq!(prompts(&transcript), vec!["once"]);
}

/// `promptgate mcp` spoken to line by line (JSON-RPC over stdio).
struct Mcp {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
}

impl Mcp {
    fn start(srv: &TmuxServer, env: &[(&str, &str)]) -> Mcp {
        let mut c = srv.pg_cmd(&["mcp"]);
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut m = Mcp { child, stdin, out };
        let init = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
        let r = m.call(1, "initialize", init);
        assert!(r["result"].is_object(), "{r}");
        m.line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        m
    }

    fn line(&mut self, l: &str) {
        self.stdin.write_all(l.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// A request, and its answer (notifications before it are skipped).
    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.line(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        loop {
            let mut l = String::new();
            assert!(self.out.read_line(&mut l).unwrap() > 0, "mcp closed");
            let v: Value = serde_json::from_str(&l).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `--force` skips the wait for ready, never these: a body typed into a dialog
/// (its `1` or `y` can approve a tool call) or into a pane in copy/view mode
/// (the keys drive the mode). Refused 21 / 23, nothing typed, whatever other
/// flag comes with it; `--cancel-mode` still leaves the mode first.
#[test]
fn a_forced_send_never_types_into_a_dialog_or_copy_mode() {
    let srv = TmuxServer::new(100, 30, &[]);
    for like in ["claude", "codex", "opencode"] {
        let (pane, transcript) = srv.fake(like, &["--dialog", "permission"]);
        srv.wait_state(&pane, "dialog:permission", 10.0);
        for extra in [
            vec!["--force"],
            vec!["--force", "--no-verify"],
            vec!["--force", "--wait-dialog", "--timeout", "1"],
            vec!["--force", "--replace-draft", "--cancel-mode"],
        ] {
            let mut args = vec!["send", "-t", &pane];
            args.extend(&extra);
            args.push("1");
            let o = srv.pg(&args);
            assert_eq!(code(&o), 21, "{like} {extra:?}: {}", stderr(&o));
            assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
        }
        // PROMPTGATE_GATE=off is --force
        let o = srv
            .pg_cmd(&["send", "-t", &pane, "y"])
            .env("PROMPTGATE_GATE", "off")
            .output()
            .unwrap();
        assert_eq!(code(&o), 21, "{like} gate off: {}", stderr(&o));
        assert!(records(&transcript, "dialog-input").is_empty(), "{like}");
        assert!(prompts(&transcript).is_empty(), "{like}");
    }
    // copy mode: refused forced, delivered once with --cancel-mode
    let (pane, transcript) = srv.fake("claude", &[]);
    srv.wait_state(&pane, "ready", 10.0);
    srv.tmux(&["copy-mode", "-t", &pane]);
    srv.wait_state(&pane, "in-mode", 5.0);
    let o = srv.pg(&["send", "-t", &pane, "--force", "in copy mode"]);
    assert_eq!(code(&o), 23, "{}", stderr(&o));
    assert!(prompts(&transcript).is_empty());
    let o = srv.pg(&[
        "send",
        "-t",
        &pane,
        "--force",
        "--cancel-mode",
        "after copy mode",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&transcript), vec!["after copy mode".to_string()]);
    // a draft: someone's half-typed text would go to the agent joined to the
    // body. Refused 26; --replace-draft clears it first, then the body alone
    srv.wait_state(&pane, "ready", 10.0);
    srv.tmux(&["send-keys", "-t", &pane, "-l", "half typed by hand"]);
    srv.wait_state(&pane, "draft", 5.0);
    for gate_off in [false, true] {
        let mut c = srv.pg_cmd(&["send", "-t", &pane, "--force", "the body"]);
        if gate_off {
            c.env("PROMPTGATE_GATE", "off");
        }
        let o = c.output().unwrap();
        assert_eq!(code(&o), 26, "{}", stderr(&o));
    }
    assert_eq!(srv.state(&pane), "draft");
    let o = srv.pg(&[
        "send",
        "-t",
        &pane,
        "--force",
        "--replace-draft",
        "the body",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        prompts(&transcript),
        vec!["after copy mode".to_string(), "the body".to_string()]
    );
    // busy, with text typed into its composer meanwhile: a forced send (the way
    // to queue a prompt in a busy agent) is refused 26 all the same
    let (pane, transcript) = srv.fake("claude", &["--busy-ms", "4000"]);
    srv.wait_state(&pane, "ready", 10.0);
    srv.pg(&["send", "-t", &pane, "start a turn"]);
    srv.wait_state(&pane, "busy", 5.0);
    srv.tmux(&["send-keys", "-t", &pane, "-l", "typed while busy"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let o = srv.pg(&["send", "-t", &pane, "--force", "the body"]);
    assert_eq!(code(&o), 26, "{}", stderr(&o));
    assert_eq!(prompts(&transcript), vec!["start a turn".to_string()]);
}

/// `--cancel-mode` leaves copy mode only in a pane that may be typed into: a
/// shell in copy mode is refused 24 with its mode (selection, scroll
/// position) kept, gated or forced, with or without `--agent`.
#[test]
fn cancel_mode_leaves_a_shells_copy_mode_alone() {
    let srv = TmuxServer::new(100, 30, &[]);
    let pane = shell_pane(&srv, &["bash", "--norc", "--noprofile"]);
    let marker = srv.dir.path().join("pwned");
    let body = format!("touch {}", marker.display());
    srv.tmux(&["copy-mode", "-t", &pane]);
    let in_mode = || srv.tmux_out(&["display", "-p", "-t", &pane, "#{pane_in_mode}"]);
    assert_eq!(in_mode().trim(), "1");
    for extra in [
        vec!["--agent", "claude"],
        vec!["--agent", "claude", "--force"],
        vec!["--force"],
        vec![],
    ] {
        let mut args = vec!["send", "-t", &pane, "--cancel-mode", "--timeout", "2"];
        args.extend(&extra);
        args.push(&body);
        let o = srv.pg(&args);
        assert_eq!(code(&o), 24, "{extra:?}: {}", stderr(&o));
        assert_eq!(in_mode().trim(), "1", "{extra:?}: copy mode was left");
        assert!(!marker.exists(), "{extra:?}: typed");
    }
}

/// `--to-any-process` is send's alone: `ask` (which takes send's flags)
/// refuses it in one line, exit 2, nothing typed, with --json one object, and
/// does not list it in its help.
#[test]
fn ask_refuses_to_any_process() {
    let srv = TmuxServer::new(100, 30, &[]);
    let pane = shell_pane(&srv, &["bash", "--norc", "--noprofile"]);
    let marker = srv.dir.path().join("pwned-ask");
    let body = format!("touch {}", marker.display());
    let before = srv.capture(&pane);
    for json in [false, true] {
        let mut args = vec![
            "ask",
            "-t",
            &pane,
            "--agent",
            "claude",
            "--force",
            "--to-any-process",
            "--done-timeout",
            "2",
        ];
        if json {
            args.push("--json");
        }
        args.push(&body);
        let o = srv.pg(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert_eq!(e.trim().lines().count(), 1, "{e:?}");
        assert!(e.contains("--to-any-process"), "{e}");
        if json {
            assert_eq!(json_out(&o)["exit_code"], 2, "{}", text(&o.stdout));
        }
        untouched(&srv, &pane, &marker, &before, "ask --to-any-process");
    }
    let help = text(&srv.pg(&["ask", "--help"]).stdout);
    assert!(!help.contains("--to-any-process"), "{help}");
    let help = text(&srv.pg(&["send", "--help"]).stdout);
    assert!(help.contains("--to-any-process"), "{help}");
}

/// The MCP server after a delivery: a SIGTERM ends it as before the first one
/// (it used to be held for good, and every later send failed "stopped by
/// SIGTERM before anything was typed").
#[test]
fn the_mcp_server_ends_on_sigterm_after_a_delivery() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, t) = srv.fake("claude", &[]);
    srv.wait_state(&pane, "ready", 15.0);
    let mut mcp = Mcp::start(&srv, &[]);
    let r = mcp.call(
        2,
        "tools/call",
        json!({"name": "send_prompt", "arguments": {"target": pane, "body": "one delivery"}}),
    );
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(prompts(&t), vec!["one delivery"]);
    // (the server this test started, by its PID)
    unsafe { libc::kill(mcp.child.id() as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = mcp.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the server kept running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
}
