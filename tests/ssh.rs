//! Agents on another machine: every tmux call over ssh, against a real sshd on
//! the loopback address with a throwaway host key and user key.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The far end: an sshd, and the user key that logs in to it.
struct Remote {
    sshd: common::sshd::Sshd,
    key: PathBuf,
}

fn start_sshd(dir: &Path) -> Option<Remote> {
    common::sshd::keys(dir);
    // the far shell's HOME: empty, so no start-up file of this machine's user
    // runs there (a stale pyenv rehash lock made each login here take 60 s)
    let far_home = dir.join("far-home");
    std::fs::create_dir_all(&far_home).unwrap();
    let port = 20000 + (std::process::id() % 20000) as u16;
    let s = Remote {
        sshd: common::sshd::start(dir, "", port, &format!("HOME={}", far_home.display())),
        key: dir.join("user_key"),
    };
    // A machine whose login shell takes longer than promptgate's 20 s box for a
    // tmux call over ssh (its start-up files hang: a stale pyenv rehash lock,
    // ~/.pyenv/shims/.pyenv-shim, made every login here take 60 s) cannot run
    // this test (the far HOME above keeps this user's start-up files out).
    let t = Instant::now();
    let ok = Command::new("sh")
        .args(["-c", &format!("{} -V", s.tmux_over_ssh())])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    // a test that could not run fails: it never reads as passed
    assert!(
        ok && t.elapsed() <= Duration::from_secs(10),
        "the ssh test could not run: one tmux call over ssh to 127.0.0.1 took {:.1} s (ok: {ok})",
        t.elapsed().as_secs_f64()
    );
    Some(s)
}

impl Remote {
    fn tmux_over_ssh(&self) -> String {
        format!(
            "ssh -p {} -i {} -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR 127.0.0.1 tmux",
            self.sshd.port,
            self.key.display()
        )
    }
}

#[test]
#[ignore = "needs a local sshd (openssh-server); run with --include-ignored (.ci/run does)"]
fn send_over_ssh_is_byte_exact_and_still_refuses_a_dialog() {
    let srv = TmuxServer::new(120, 40, &[]);
    let Some(sshd) = start_sshd(srv.dir.path()) else {
        return;
    };
    let via = sshd.tmux_over_ssh();
    let (pane, transcript) = srv.fake("claude", &["--busy-ms", "200"]);
    srv.wait_state(&pane, "ready", 10.0);
    let remote = |args: &[&str]| {
        let mut c = srv.pg_cmd(args);
        c.env("PROMPTGATE_TMUX", &via)
            .env("PROMPTGATE_CONTROL", "on");
        c
    };
    // state and send through ssh
    let o = remote(&["state", "-t", &pane]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("\tclaude\tready\t"),
        "{} {}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
    let one = "one line over ssh; with 'quotes' and $(id) and #{pane_id}";
    let o = remote(&["send", "-t", &pane, "--json", one])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        r["control_mode"], true,
        "polling used one ssh session in control mode"
    );
    assert!(r["server"].as_str().unwrap().starts_with("ssh "), "{r}");
    // 1 MB through load-buffer's stdin, over ssh
    let big: String = (0..20_000)
        .map(|i| format!("{i:06} lorem ipsum dolor sit amet, consectetur adipiscing\n"))
        .collect();
    let o = output_with_stdin(
        &mut remote(&["send", "-t", &pane, "--wait-busy", "-f", "-"]),
        big.as_bytes(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        prompts(&transcript),
        vec![one.to_string(), big.trim_end_matches('\n').to_string()]
    );

    // the gate still refuses a dialog, over ssh
    let (dpane, dtranscript) = srv.fake("codex", &["--dialog", "trust"]);
    srv.wait_state(&dpane, "dialog:trust", 10.0);
    let o = remote(&["send", "-t", &dpane, "1"]).output().unwrap();
    assert_eq!(code(&o), 21, "{}", stderr(&o));
    assert!(records(&dtranscript, "dialog-input").is_empty());
    // the choke point over ssh, where no /proc of tmux's machine is read: a
    // plain shell gets nothing, even named as an agent and forced (exit 24)
    let shell = srv.window(&["sh"]);
    std::thread::sleep(Duration::from_millis(2100));
    let marker = srv.dir.path().join("pwned-over-ssh");
    let before = srv.capture(&shell);
    let touch = format!("touch {}", marker.display());
    for extra in [&["--force"][..], &["--force", "--no-verify"][..]] {
        let mut args = vec!["send", "-t", &shell, "--agent", "claude"];
        args.extend(extra);
        args.push(&touch);
        let o = remote(&args).output().unwrap();
        assert_eq!(code(&o), 24, "{args:?}: {}", stderr(&o));
    }
    let o = remote(&["send", "-t", &shell, &touch])
        .env("PROMPTGATE_GATE", "off")
        .output()
        .unwrap();
    assert_eq!(code(&o), 24, "{}", stderr(&o));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "the body ran as a command over ssh");
    assert_eq!(srv.capture(&shell), before);
    // proof from the agent's own record, read on tmux's side through the same ssh
    let home = srv.dir.path().join("home-records");
    let (rpane, _) = srv.fake_in(&home, "codex", &["--records", "--busy-ms", "200"]);
    srv.wait_state(&rpane, "ready", 10.0);
    let body = "recorded over ssh:\n\tits own 'record' with $HOME";
    let o = remote(&["send", "-t", &rpane, "--json", body])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["proof"]["source"], "transcript", "{r}");
    assert_eq!(r["proof"]["match"], "exact", "{r}");
    assert!(
        r["proof"]["path"]
            .as_str()
            .unwrap_or("")
            .starts_with(home.to_str().unwrap()),
        "{r}"
    );

    // `--host`: one ssh connection for the whole send (a master of its own,
    // ended with it), and the record read on tmux's side through it
    let log = srv.dir.path().join("ssh-calls.log");
    let wrap = srv.dir.path().join("ssh-wrap");
    std::fs::write(
        &wrap,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec ssh \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrap, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let ssh_opts = via
        .trim_end_matches(" 127.0.0.1 tmux")
        .trim_start_matches("ssh ");
    let body = "recorded over --host: one connection";
    let o = srv
        .pg_cmd(&["--host", "127.0.0.1", "send", "-t", &rpane, "--json", body])
        .env("PROMPTGATE_SSH", format!("{} {ssh_opts}", wrap.display()))
        .env("PROMPTGATE_CONTROL", "on")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["proof"]["match"], "exact", "{r}");
    assert!(
        r["proof"]["path"]
            .as_str()
            .unwrap_or("")
            .starts_with(home.to_str().unwrap()),
        "{r}"
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    let masters: Vec<&str> = calls.lines().filter(|l| l.contains(" -M ")).collect();
    assert_eq!(masters.len(), 1, "one connection: {calls}");
    let sock = masters[0]
        .split_whitespace()
        .skip_while(|w| *w != "-S")
        .nth(1)
        .unwrap()
        .to_string();
    assert!(
        calls.lines().all(|l| l.contains(&format!("-S {sock}"))),
        "every call through the one connection: {calls}"
    );
    assert!(
        calls.lines().any(|l| l.contains(" sh -c ")),
        "the record is read on tmux's side: {calls}"
    );
    let sock_dir = Path::new(&sock).parent().unwrap();
    assert!(
        !sock_dir.exists(),
        "the connection's directory is left behind"
    );

    // --host is the short form (an unknown host fails as no server, quickly)
    let o = srv
        .pg_cmd(&[
            "--host",
            "promptgate-no-such-host.invalid",
            "state",
            "-t",
            &pane,
        ])
        .output()
        .unwrap();
    assert!(
        [4, 6].contains(&code(&o)),
        "exit {}: {}",
        code(&o),
        stderr(&o)
    );
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
}
