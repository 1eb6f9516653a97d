//! Agents on another machine: every tmux call over ssh, against a real sshd on
//! the loopback address with a throwaway host key and user key.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Sshd {
    child: Child,
    port: u16,
    key: PathBuf,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sshd_binary() -> Option<PathBuf> {
    ["/usr/sbin/sshd", "/usr/bin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn start_sshd(dir: &Path) -> Option<Sshd> {
    let Some(sshd) = sshd_binary() else {
        panic!("no sshd: install openssh-server (.ci/run does), or leave this ignored test out");
    };
    let keygen = |path: &Path| {
        let o = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(path)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "ssh-keygen: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let (host_key, user_key) = (dir.join("host_key"), dir.join("user_key"));
    keygen(&host_key);
    keygen(&user_key);
    std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
    let _ = std::fs::create_dir_all("/run/sshd");
    let port = 20000 + (std::process::id() % 20000) as u16;
    let config = dir.join("sshd_config");
    // the far shell's HOME: empty, so no start-up file of this machine's user
    // runs there (a stale pyenv rehash lock made each login here take 60 s)
    let far_home = dir.join("far-home");
    std::fs::create_dir_all(&far_home).unwrap();
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\nPidFile {}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\nLogLevel ERROR\nAcceptEnv LANG\nSetEnv HOME={}\nMaxStartups 100:30:200\nMaxSessions 100\n",
            host_key.display(),
            dir.join("authorized_keys").display(),
            dir.join("sshd.pid").display(),
            far_home.display()
        ),
    )
    .unwrap();
    let child = Command::new(sshd)
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let s = Sshd {
        child,
        port,
        key: user_key,
    };
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "sshd did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
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

impl Sshd {
    fn tmux_over_ssh(&self) -> String {
        format!(
            "ssh -p {} -i {} -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR 127.0.0.1 tmux",
            self.port,
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
