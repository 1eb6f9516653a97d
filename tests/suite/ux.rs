//! What a person sees: the live status line while a send or wait waits (on a
//! terminal only), `wait` waiting through busy, the demo's private server and log,
//! and the simulated agent for trying it by hand. Every test runs on a private
//! tmux server; a command that needs a terminal runs in a pane of that server.

use crate::common;
use common::*;
use std::time::{Duration, Instant};

/// A shell command line that runs `promptgate -L <srv> ARGS` in a pane of `srv`,
/// with the test's private log and runtime dir, then prints `exit=CODE` and stays.
fn in_pane(srv: &TmuxServer, args: &str) -> String {
    let log = srv.dir.path().join("deliveries.jsonl");
    format!(
        "PROMPTGATE_LOG='{}' XDG_RUNTIME_DIR='{}' '{}' -L '{}' {args}; echo exit=$?; sleep 60",
        log.display(),
        srv.dir.path().display(),
        bin().display(),
        srv.socket
    )
}

/// Capture `pane` until `done` says so (returns every capture), or panic after `secs`.
fn captures_until(
    srv: &TmuxServer,
    pane: &str,
    secs: f64,
    done: impl Fn(&str) -> bool,
) -> Vec<String> {
    let start = Instant::now();
    let mut seen = Vec::new();
    loop {
        let c = srv.capture(pane);
        let stop = done(&c);
        seen.push(c);
        if stop {
            return seen;
        }
        assert!(
            start.elapsed() < Duration::from_secs_f64(secs),
            "pane {pane} after {secs}s:\n{}",
            seen.last().unwrap()
        );
        std::thread::sleep(Duration::from_millis(40));
    }
}

/// A fake claude made busy for `busy_ms` by one prompt; returns its pane.
fn busy_agent(srv: &TmuxServer, busy_ms: &str) -> (String, std::path::PathBuf) {
    let (pane, t) = srv.fake("claude", &["--busy-ms", busy_ms]);
    srv.wait_state(&pane, "ready", 15.0);
    let o = srv.pg(&["send", "-t", &pane, "make it busy"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(srv.state(&pane), "busy");
    (pane, t)
}

#[test]
fn a_send_that_waits_on_a_terminal_shows_one_live_status_line_and_clears_it() {
    let srv = TmuxServer::new(160, 30, &[]);
    let (pane, t) = busy_agent(&srv, "3000");
    let cmd = in_pane(&srv, &format!("send -t {pane} --wait-busy 'the next step'"));
    let runner = srv.window(&["sh", "-c", &cmd]);
    let seen = captures_until(&srv, &runner, 20.0, |c| c.contains("exit="));
    let status = seen
        .iter()
        .flat_map(|c| c.lines())
        .find(|l| l.starts_with("promptgate: ") && l.contains(" busy · "))
        .unwrap_or_else(|| panic!("no status line in any capture:\n{}", seen.join("\n--\n")));
    assert!(
        status.contains(&format!("{pane} claude busy · "))
            && status.contains(" s of 15 s · ")
            && status.contains("waiting for the agent to finish its turn"),
        "{status:?}"
    );
    let last = seen.last().unwrap();
    assert!(last.contains("exit=0"), "{last}");
    assert!(last.contains("consumed"), "{last}");
    assert!(
        !last.contains("waiting for"),
        "the status line is erased at the end:\n{last}"
    );
    assert_eq!(prompts(&t), vec!["make it busy", "the next step"]);
}

#[test]
fn a_send_waiting_for_another_senders_lock_says_so_on_a_terminal() {
    let srv = TmuxServer::new(160, 30, &[]);
    let (pane, t) = busy_agent(&srv, "3000");
    // the first sender holds the pane's lock while it waits out the turn
    let first = srv
        .pg_cmd(&["send", "-t", &pane, "--wait-busy", "first"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // until it holds it: a fixed 300 ms was not enough on a loaded machine (the
    // second sender then took the lock first and waited on the busy agent)
    // (beside the server's socket, where every sender to it locks)
    let socket = srv.tmux_out(&["display", "-p", "#{socket_path}"]);
    let socket = std::fs::canonicalize(socket.trim()).unwrap();
    let lock = promptgate::io::lock::pane_lock_path(socket.to_str().unwrap(), &pane);
    let t0 = std::time::Instant::now();
    while !(lock.exists()
        && matches!(
            promptgate::io::store::FileLock::try_take(&lock, false),
            Ok(None)
        ))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the first sender never took the pane's lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let cmd = in_pane(&srv, &format!("send -t {pane} --wait-busy second"));
    let runner = srv.window(&["sh", "-c", &cmd]);
    let seen = captures_until(&srv, &runner, 30.0, |c| c.contains("exit="));
    assert!(
        seen.iter()
            .any(|c| c.contains(&format!("{pane} claude locked · "))
                && c.contains(" s of 120 s · waiting for another sender to this pane to finish")),
        "{seen:#?}"
    );
    let last = seen.last().unwrap();
    assert!(
        last.contains("exit=0") && !last.contains("waiting for"),
        "{last}"
    );
    let o = first.wait_with_output().unwrap();
    assert_eq!(code(&o), 0);
    assert_eq!(prompts(&t), vec!["make it busy", "first", "second"]);
}

#[test]
fn a_send_watching_for_its_receipt_says_so_on_a_terminal() {
    let srv = TmuxServer::new(160, 30, &[]);
    let (pane, _t) = busy_agent(&srv, "8000");
    // --force types into the busy agent, which parks the prompt: verify watches
    // for proof until --verify-timeout
    let cmd = in_pane(
        &srv,
        &format!("send -t {pane} --force --verify-timeout 3 parked"),
    );
    let runner = srv.window(&["sh", "-c", &cmd]);
    let seen = captures_until(&srv, &runner, 30.0, |c| c.contains("exit="));
    assert!(
        seen.iter().any(|c| c.contains(&format!("{pane} claude "))
            && c.contains(
                " s of 3 s · submitted; waiting for proof that the agent took the prompt"
            )),
        "{seen:#?}"
    );
    let last = seen.last().unwrap();
    assert!(last.contains("exit=31"), "queued: {last}");
    assert!(!last.contains("waiting for proof"), "erased: {last}");
}

#[test]
fn ctrl_c_during_a_wait_erases_the_status_line() {
    let srv = TmuxServer::new(160, 30, &[]);
    let (pane, t) = busy_agent(&srv, "8000");
    // the shell survives the Ctrl-C (a trap), to report how promptgate ended
    let cmd = format!(
        "trap 'true' INT; {}",
        in_pane(&srv, &format!("wait -t {pane} --timeout 20"))
    );
    let runner = srv.window(&["sh", "-c", &cmd]);
    captures_until(&srv, &runner, 10.0, |c| c.contains("waiting for the agent"));
    srv.tmux(&["send-keys", "-t", &runner, "C-c"]);
    let seen = captures_until(&srv, &runner, 10.0, |c| c.contains("exit="));
    let last = seen.last().unwrap();
    assert!(last.contains("exit=130"), "killed by SIGINT:\n{last}");
    assert!(!last.contains("waiting for"), "erased:\n{last}");
    assert_eq!(prompts(&t), vec!["make it busy"]);
}

#[test]
fn no_status_line_when_stderr_is_not_a_terminal_or_with_json() {
    let srv = TmuxServer::new(160, 30, &[]);
    // stderr piped: nothing at all on it
    let (pane, _t) = busy_agent(&srv, "2000");
    let o = srv.pg(&["send", "-t", &pane, "--wait-busy", "piped"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "nothing on a piped stderr");
    let o = srv.pg(&["wait", "-t", &pane, "--timeout", "10"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "nothing on a piped stderr");
    // --json on a terminal: no line either
    srv.wait_state(&pane, "ready", 10.0);
    let o = srv.pg(&["send", "-t", &pane, "busy again"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let cmd = in_pane(
        &srv,
        &format!("send -t {pane} --wait-busy --json 'as json'"),
    );
    let runner = srv.window(&["sh", "-c", &cmd]);
    let seen = captures_until(&srv, &runner, 20.0, |c| c.contains("exit="));
    assert!(seen.last().unwrap().contains("exit=0"), "{seen:?}");
    for c in &seen {
        assert!(
            !c.contains("waiting for"),
            "no status line with --json:\n{c}"
        );
    }
}

#[test]
fn a_wait_on_a_terminal_shows_the_status_line_too() {
    let srv = TmuxServer::new(160, 30, &[]);
    let (pane, _t) = busy_agent(&srv, "2500");
    let cmd = in_pane(&srv, &format!("wait -t {pane} --timeout 20"));
    let runner = srv.window(&["sh", "-c", &cmd]);
    let seen = captures_until(&srv, &runner, 20.0, |c| c.contains("exit="));
    assert!(
        seen.iter()
            .any(|c| c.contains(&format!("{pane} claude busy · ")) && c.contains(" s of 20 s · ")),
        "{seen:?}"
    );
    let last = seen.last().unwrap();
    assert!(last.contains("exit=0") && last.contains("ready"), "{last}");
    assert!(!last.contains("waiting for"), "erased:\n{last}");
}

#[test]
fn a_timed_out_wait_or_send_hints_at_timeout() {
    let srv = TmuxServer::new(120, 30, &[]);
    let (pane, t) = busy_agent(&srv, "5000");
    let o = srv.pg(&["wait", "-t", &pane, "--timeout", "0.5"]);
    assert_eq!(code(&o), 20, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("timed out") && stderr(&o).contains("raise --timeout"),
        "{}",
        stderr(&o)
    );
    let o = srv.pg(&[
        "send",
        "-t",
        &pane,
        "--wait-busy",
        "--timeout",
        "0.5",
        "late",
    ]);
    assert_eq!(code(&o), 20, "{}", stderr(&o));
    assert!(stderr(&o).contains("raise --timeout"), "{}", stderr(&o));
    assert_eq!(prompts(&t), vec!["make it busy"], "nothing typed");
}

#[test]
fn wait_waits_through_busy_up_to_its_timeout() {
    let srv = TmuxServer::new(120, 30, &[]);
    let (pane, _t) = busy_agent(&srv, "2000");
    let start = Instant::now();
    let o = srv.pg(&["wait", "-t", &pane, "--timeout", "15"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        start.elapsed() > Duration::from_millis(1000),
        "it waited for the turn to end ({:?})",
        start.elapsed()
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("\tclaude\tready\t"));
}

#[test]
fn wait_on_a_dialog_returns_at_once_and_never_says_nothing_typed() {
    let srv = TmuxServer::new(120, 30, &[]);
    let (pane, t) = srv.fake("claude", &["--dialog", "trust"]);
    srv.wait_state(&pane, "dialog:trust", 10.0);
    let start = Instant::now();
    let o = srv.pg(&["wait", "-t", &pane, "--timeout", "15"]);
    assert_eq!(code(&o), 21, "{}", stderr(&o));
    assert!(start.elapsed() < Duration::from_secs(5), "at once");
    let e = stderr(&o);
    assert!(!e.contains("nothing typed"), "{e}");
    assert!(e.contains("dialog") && e.contains("--wait-dialog"), "{e}");
    // --wait-dialog: waits (typing nothing) until a person closes it
    let w = srv
        .pg_cmd(&["wait", "-t", &pane, "--wait-dialog", "--timeout", "20"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    srv.tmux(&["send-keys", "-t", &pane, "Enter"]);
    let o = w.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // the only key the dialog got is the person's Enter
    assert!(records(&t, "dialog-input").iter().all(|r| r["bytes"]
        .as_str()
        .unwrap_or("")
        .trim()
        .is_empty()));
    assert!(prompts(&t).is_empty());
}

#[test]
fn fake_agent_is_listed_in_help_for_trying_it_by_hand() {
    let o = std::process::Command::new(bin())
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    let line = help
        .lines()
        .find(|l| l.trim_start().starts_with("fake-agent "))
        .unwrap_or_else(|| panic!("fake-agent missing from --help:\n{help}"));
    assert!(line.contains("simulated agent"), "{line}");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/usage.md")).unwrap();
    assert!(readme.contains("## Try it by hand"));
    assert!(readme.contains("'promptgate fake-agent --like claude --dialog trust"));
}

/// The "Try it by hand" steps of docs/usage.md, on a private server (a shorter busy time).
#[test]
fn the_try_it_by_hand_steps_behave_as_the_readme_says() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("try.jsonl");
    let b = bin();
    let srv = TmuxServer::new(
        120,
        30,
        &[
            b.to_str().unwrap(),
            "fake-agent",
            "--like",
            "claude",
            "--dialog",
            "trust",
            "--busy-ms",
            "1500",
            "--transcript",
            t.to_str().unwrap(),
        ],
    );
    srv.wait_state("main", "dialog:trust", 10.0);
    let o = srv.pg(&["send", "-t", "main", "hello"]);
    assert_eq!(code(&o), 21, "{}", stderr(&o));
    srv.tmux(&["send-keys", "-t", "main", "Enter"]);
    // a person types the next command after the dialog has gone
    srv.wait_state("main", "ready", 10.0);
    let o = srv.pg(&["send", "-t", "main", "hello"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("\tclaude\tconsumed\t"));
    let o = srv.pg(&["send", "-t", "main", "next"]);
    assert_eq!(code(&o), 22, "{}", stderr(&o));
    let o = srv.pg(&["send", "-t", "main", "--wait-busy", "next"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = srv.pg(&["wait", "-t", "main"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&t), vec!["hello", "next"]);
}

/// Kills a tmux server this test started (by socket name) when dropped.
struct KillServer(String);

impl Drop for KillServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .output();
    }
}

fn demo(args: &[&str], state_home: &std::path::Path) -> std::process::Output {
    std::process::Command::new(bin())
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env_remove("PROMPTGATE_LOG")
        .env("XDG_STATE_HOME", state_home)
        .output()
        .unwrap()
}

#[test]
fn demo_keep_runs_on_the_server_named_by_l_and_never_writes_the_users_log() {
    let name = format!("promptgate-test-demo-{}", std::process::id());
    let _kill = KillServer(name.clone());
    let home = tempfile::tempdir().unwrap();
    let o = demo(&["-L", &name, "demo", "--keep"], home.path());
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 0, "{text}{}", stderr(&o));
    assert!(text.contains(&format!("server -L {name}")), "{text}");
    let has = std::process::Command::new("tmux")
        .args(["-L", &name, "has-session", "-t", "=demo"])
        .output()
        .unwrap();
    assert!(has.status.success(), "the demo's agent runs on -L {name}");
    assert!(
        !home.path().join("promptgate").exists(),
        "nothing written under the user's XDG_STATE_HOME"
    );
    // it says where its sends went: a private log holding the demo's two sends
    let line = text
        .lines()
        .find(|l| l.contains("went to its own delivery log"))
        .unwrap_or_else(|| panic!("{text}"));
    let log = line
        .split(", ")
        .nth(1)
        .filter(|p| p.ends_with("deliveries.jsonl"))
        .unwrap_or_else(|| panic!("{line}"));
    let records = std::fs::read_to_string(log).unwrap();
    assert_eq!(records.lines().count(), 2, "{records}");
    let dir = std::path::Path::new(log).parent().unwrap();
    assert!(dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("promptgate-demo-"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn demo_on_a_running_server_removes_only_its_own_session() {
    let srv = TmuxServer::new(80, 24, &[]);
    let home = tempfile::tempdir().unwrap();
    let o = demo(&["-L", &srv.socket, "demo"], home.path());
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 0, "{text}{}", stderr(&o));
    assert!(text.contains("on the running server"), "{text}");
    assert!(text.contains("removed with the demo"), "{text}");
    assert_eq!(
        srv.tmux_out(&["list-sessions", "-F", "#{session_name}"])
            .trim(),
        "main"
    );
    assert!(!home.path().join("promptgate").exists());
}

/// `/exit` asks the agent to quit: the agent exiting (its pane closing with
/// it) is the prompt taken, `consumed`, not `unknown` (34).
#[test]
fn sending_exit_is_consumed_when_the_agent_exits() {
    let srv = TmuxServer::new(120, 30, &[]);
    let (pane, t) = srv.fake("claude", &["--busy-ms", "150"]);
    srv.wait_state(&pane, "ready", 10.0);
    let o = srv.pg(&["send", "-t", &pane, "--json", "/exit"]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(code(&o), 0, "{out} {}", stderr(&o));
    assert!(out.contains("\"receipt\":\"consumed\""), "{out}");
    assert!(out.contains("verify.exit-command"), "{out}");
    assert_eq!(prompts(&t), vec!["/exit"]);
}
