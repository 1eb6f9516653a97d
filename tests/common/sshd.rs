//! A throwaway sshd on the loopback address, for the tests that reach tmux over
//! ssh (tests/ssh.rs, tests/fleet.rs).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One sshd, killed (by its pid) when dropped.
pub struct Sshd {
    child: Child,
    pub port: u16,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sshd binary; a test that needs one and finds none fails with what to install.
pub fn sshd_binary() -> PathBuf {
    ["/usr/sbin/sshd", "/usr/bin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!("no sshd: install openssh-server (.ci/run does), or leave this ignored test out")
        })
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// An ed25519 key without a passphrase at `path` (and `path`.pub).
pub fn keygen(path: &Path) {
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
}

/// `dir/host_key`, `dir/user_key` and `dir/authorized_keys` (the user key's).
pub fn keys(dir: &Path) {
    keygen(&dir.join("host_key"));
    keygen(&dir.join("user_key"));
    std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
    let _ = std::fs::create_dir_all("/run/sshd");
}

/// An sshd on `port` with the keys of [`keys`] in `dir` (its config and pid file
/// named with `tag`), whose sessions (multiplexed ones too) get `env` (`SetEnv`);
/// returned once it listens.
pub fn start(dir: &Path, tag: &str, port: u16, env: &str) -> Sshd {
    let config = dir.join(format!("sshd_config{tag}"));
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\nPidFile {}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\nLogLevel ERROR\nAcceptEnv LANG\nSetEnv {env}\nMaxStartups 100:30:200\nMaxSessions 100\n",
            dir.join("host_key").display(),
            dir.join("authorized_keys").display(),
            dir.join(format!("sshd{tag}.pid")).display()
        ),
    )
    .unwrap();
    let child = Command::new(sshd_binary())
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let s = Sshd { child, port };
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "sshd did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    s
}
