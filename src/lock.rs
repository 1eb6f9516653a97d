//! A per-pane lock across processes: `flock(2)` on a file keyed by the server
//! socket and the pane id. The kernel releases it when the holder dies, so a
//! killed sender never wedges a pane.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub struct PaneLock {
    _file: File,
    pub path: PathBuf,
    pub waited_ms: u64,
}

/// Where the lock files live: `$XDG_RUNTIME_DIR/promptgate` or `/tmp/promptgate-<uid>`.
pub fn lock_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("promptgate");
    }
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir().join(format!("promptgate-{uid}"))
}

fn key(server: &str, pane: &str) -> String {
    // FNV-1a: stable across runs and builds (unlike DefaultHasher).
    let mut h: u64 = 0xcbf29ce484222325;
    for b in server.bytes().chain([0]).chain(pane.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}-{}", pane.trim_start_matches('%'))
}

impl PaneLock {
    /// Take the lock for `pane` on `server`, waiting up to `timeout`.
    pub fn acquire(server: &str, pane: &str, timeout: Duration) -> Result<PaneLock> {
        let dir = lock_dir();
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{}.lock", key(server, pane)));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        let start = Instant::now();
        loop {
            let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if r == 0 {
                return Ok(PaneLock {
                    _file: file,
                    path,
                    waited_ms: start.elapsed().as_millis() as u64,
                });
            }
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(Error::Io(err));
            }
            if start.elapsed() >= timeout {
                return Err(Error::Locked(
                    pane.to_string(),
                    start.elapsed().as_millis() as u64,
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_taker_waits_then_times_out() {
        let server = format!("/tmp/test-lock-{}", std::process::id());
        let a = PaneLock::acquire(&server, "%1", Duration::from_millis(10)).unwrap();
        let b = PaneLock::acquire(&server, "%1", Duration::from_millis(30));
        assert!(matches!(b, Err(Error::Locked(..))));
        let c = PaneLock::acquire(&server, "%2", Duration::from_millis(10));
        assert!(c.is_ok(), "other panes are independent");
        drop(a);
        assert!(PaneLock::acquire(&server, "%1", Duration::from_millis(10)).is_ok());
    }
}
