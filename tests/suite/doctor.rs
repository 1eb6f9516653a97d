//! `promptgate doctor` on a private tmux server: a fake codex whose package.json
//! names a release newer than the profile's checked ones is reported, with how to
//! contribute captures, and the exit status is 40; a checked release exits 0.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Server(String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .env_remove("TMUX")
            .stderr(Stdio::null())
            .status();
    }
}

/// A fake codex inside an npm-like package dir.
fn start(dir: &Path, version: &str, tag: &str) -> Server {
    let pkg = dir.join("node_modules/@openai/codex");
    std::fs::create_dir_all(pkg.join("bin")).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        format!(r#"{{"name":"@openai/codex","version":"{version}"}}"#),
    )
    .unwrap();
    let launcher = pkg.join("bin/codex.sh");
    std::fs::write(
        &launcher,
        format!(
            // exec: the agent, not a shell, is the pane's command; its transcript path
            // (an argv word) lies inside the package, as a node script's path would
            "#!/bin/sh\nexec '{}' fake-agent --like codex --cwd-label /tmp/proj --transcript '{}'\n",
            env!("CARGO_BIN_EXE_promptgate"),
            pkg.join("bin/transcript.jsonl").display()
        ),
    )
    .unwrap();
    let sock = format!("promptgate-doctor-{}-{tag}", std::process::id());
    let st = Command::new("tmux")
        .args([
            "-L",
            &sock,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
        ])
        .arg(format!("/bin/sh {}", launcher.display()))
        .env_remove("TMUX")
        .status()
        .unwrap();
    assert!(st.success());
    Server(sock)
}

fn doctor(sock: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_promptgate"))
        .args(["-L", sock, "doctor"])
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .unwrap()
}

fn wait_ready(sock: &str) -> String {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let o = doctor(sock, &[]);
        let s = String::from_utf8_lossy(&o.stdout).into_owned();
        if s.contains("state: ready") || Instant::now() > end {
            return s;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_release_newer_than_the_checked_ones_is_reported_and_exits_40() {
    let d = tempfile::tempdir().unwrap();
    let srv = start(d.path(), "0.999.0", "new");
    let out = wait_ready(&srv.0);
    assert!(out.starts_with("tmux: server "), "{out}");
    assert!(
        out.contains("codex 0.999.0 (from ") && out.contains("NEWER than every checked release"),
        "{out}"
    );
    assert!(out.contains("state: ready"), "{out}");
    let o = doctor(&srv.0, &[]);
    assert_eq!(o.status.code(), Some(40));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("newer than the newest release its profile was checked against")
            && err.contains("promptgate capture"),
        "{err}"
    );
    let j = doctor(&srv.0, &["--json"]);
    let text = String::from_utf8_lossy(&j.stdout);
    let pane: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(pane["agent"], "codex");
    assert_eq!(pane["release"]["version"], "0.999.0");
    assert_eq!(pane["standing"], "newer");
}

#[test]
fn a_checked_release_exits_0() {
    let d = tempfile::tempdir().unwrap();
    let srv = start(d.path(), "0.171.0", "ok");
    let out = wait_ready(&srv.0);
    assert!(
        out.contains("codex 0.171.0 (from ") && out.contains(": checked"),
        "{out}"
    );
    let o = doctor(&srv.0, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn without_a_server_it_checks_tmux_path_and_installed_agents_then_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let stub = dir.path().join("claude");
    std::fs::write(&stub, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&stub, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let none = format!("promptgate-test-none-{}", std::process::id());
    // -L after the command, as on every command that talks to tmux
    let o = Command::new(env!("CARGO_BIN_EXE_promptgate"))
        .args(["doctor", "-L", &none])
        .env("PATH", &path)
        .output()
        .unwrap();
    let so = String::from_utf8_lossy(&o.stdout);
    // a fresh install, no server yet: checked, and not an error
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(
        so.contains("tmux: no server running; client: tmux "),
        "{so}"
    );
    assert!(!so.contains("server ?"), "{so}");
    assert!(so.contains("server: none running"), "{so}");
    assert!(so.contains("promptgate on PATH: "), "{so}");
    assert!(
        so.contains(&format!(
            "agent: claude release unknown at {}",
            stub.display()
        )),
        "{so}"
    );
    assert_eq!(String::from_utf8_lossy(&o.stderr), "", "{o:?}");
}
