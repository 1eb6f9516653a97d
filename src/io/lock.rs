//! A per-pane lock across processes: `flock(2)` on a file keyed by the server
//! socket and the pane id (`crate::io::store::FileLock`). The kernel releases it
//! when the holder dies, so a killed sender never wedges a pane. A released
//! lock's file stays while its mtime matters (it tells the next taker when the
//! pane last had a sender) and is removed once idle for [`IDLE`]: by whoever
//! releases a lock next, under the lock, so no taker ever holds a removed file.

use crate::core::error::{Error, Result};
use crate::io::store::FileLock;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Held until dropped. Taking and releasing it stamp the file's mtime, so that
/// the next taker knows when the pane last had a sender.
pub struct PaneLock {
    lock: FileLock,
    pub path: PathBuf,
    pub waited_ms: u64,
    /// When a sender last took or released this lock (Unix ms; 0: never).
    pub last_held_ms: u128,
}

/// How long a released lock's file stays (its mtime says when the pane last
/// had a sender; a taker compares it with a read made moments before).
pub const IDLE: Duration = Duration::from_secs(120);

impl Drop for PaneLock {
    fn drop(&mut self) {
        // before the file closes and the kernel releases the lock
        let _ = self.lock.file.set_modified(SystemTime::now());
        sweep(&self.lock.path);
    }
}

/// Remove the lock files beside `mine` that nobody holds and nobody used for
/// [`IDLE`].
fn sweep(mine: &std::path::Path) {
    let Some(dir) = mine.parent() else { return };
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p != mine && p.extension().is_some_and(|x| x == "lock") {
            FileLock::sweep(&p, IDLE);
        }
    }
}

fn unix_ms(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

/// Where the lock files of a server whose socket is not in a private
/// directory live: `$XDG_RUNTIME_DIR/promptgate`, else
/// `/run/user/<uid>/promptgate` where the system made that directory for this
/// user, else `$TMPDIR/promptgate-<uid>` (made private: see `store::private_dir`).
fn lock_dir_and_source() -> (PathBuf, &'static str) {
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return (
            PathBuf::from(d).join("promptgate"),
            "the lock directory (under XDG_RUNTIME_DIR)",
        );
    }
    let uid = unsafe { libc::getuid() };
    // Without XDG_RUNTIME_DIR (cron, `sudo -u`, a service): the runtime
    // directory it would name, where the system made one for this user, so that
    // a sender started with and one started without it lock the same files.
    let run = PathBuf::from(format!("/run/user/{uid}"));
    if std::fs::symlink_metadata(&run)
        .is_ok_and(|m| m.is_dir() && std::os::unix::fs::MetadataExt::uid(&m) == uid)
    {
        return (
            run.join("promptgate"),
            "the lock directory (under /run/user)",
        );
    }
    (
        std::env::temp_dir().join(format!("promptgate-{uid}")),
        "the lock directory (under the temporary directory)",
    )
}

/// Where the locks of `server`'s panes live: beside a local server's socket
/// when that is in a directory only this user may use (tmux's own
/// `/tmp/tmux-UID`), so that every sender to that server takes the same lock
/// whatever its environment (`XDG_RUNTIME_DIR`, `TMPDIR`); else [`lock_dir_and_source`].
fn pane_lock_dir(server: &str) -> (PathBuf, &'static str) {
    use std::os::unix::fs::MetadataExt;
    let sock = std::path::Path::new(server);
    if let Some(parent) = sock.parent().filter(|_| sock.is_absolute()) {
        let me = unsafe { libc::geteuid() };
        if std::fs::symlink_metadata(parent)
            .is_ok_and(|m| m.is_dir() && m.uid() == me && m.mode() & 0o077 == 0)
        {
            return (
                parent.join(".promptgate-locks"),
                "the lock directory (beside the tmux socket)",
            );
        }
    }
    lock_dir_and_source()
}

/// The file that locks `pane` on `server` (`server`: the canonical socket path
/// of a local server), where [`PaneLock::acquire`] takes it.
pub fn pane_lock_path(server: &str, pane: &str) -> PathBuf {
    lock_file(&pane_lock_dir(server).0, server, pane)
}

fn lock_file(dir: &std::path::Path, server: &str, pane: &str) -> PathBuf {
    dir.join(format!("{}.lock", key(server, pane)))
}

/// A file name for `pane` on `server`: a hash that keys it, then the pane for
/// a person reading the directory.
pub fn key(server: &str, pane: &str) -> String {
    // FNV-1a: stable across runs and builds (unlike DefaultHasher).
    let mut h: u64 = 0xcbf29ce484222325;
    for b in server.bytes().chain([0]).chain(pane.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    // the hash keys it; the rest is only for a person reading the directory
    format!(
        "{h:016x}-{}",
        crate::io::store::safe_name(pane.trim_start_matches('%'))
    )
}

impl PaneLock {
    /// Take the lock for `pane` on `server`, waiting up to `timeout`.
    pub fn acquire(server: &str, pane: &str, timeout: Duration) -> Result<PaneLock> {
        Self::acquire_with(server, pane, timeout, &mut || {})
    }

    /// [`PaneLock::acquire`], calling `waiting` each time it finds the lock held
    /// (about every 5 ms), for a progress display.
    pub fn acquire_with(
        server: &str,
        pane: &str,
        timeout: Duration,
        waiting: &mut dyn FnMut(),
    ) -> Result<PaneLock> {
        let (dir, what) = pane_lock_dir(server);
        let dir = crate::io::store::private_dir(&dir, what)?;
        let path = lock_file(&dir, server, pane);
        let start = Instant::now();
        loop {
            if let Some(lock) = FileLock::try_take(&path, false)? {
                let last_held_ms = match lock.existed {
                    true => lock
                        .file
                        .metadata()
                        .map_err(|e| crate::io::store::err("cannot read the lock file", &path, e))?
                        .modified()
                        .map_or(u128::MAX, unix_ms),
                    false => 0,
                };
                let _ = lock.file.set_modified(SystemTime::now());
                return Ok(PaneLock {
                    lock,
                    path,
                    waited_ms: start.elapsed().as_millis() as u64,
                    last_held_ms,
                });
            }
            if start.elapsed() >= timeout {
                return Err(Error::Locked(
                    pane.to_string(),
                    start.elapsed().as_millis() as u64,
                ));
            }
            waiting();
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

    #[test]
    fn a_taker_learns_when_the_pane_last_had_a_sender() {
        let server = format!("/tmp/test-lock-stamp-{}", std::process::id());
        let t0 = unix_ms(SystemTime::now());
        let a = PaneLock::acquire(&server, "%7", Duration::from_millis(10)).unwrap();
        assert_eq!(a.last_held_ms, 0, "a new lock file: nobody before");
        std::thread::sleep(Duration::from_millis(20));
        drop(a);
        let released = unix_ms(SystemTime::now());
        let b = PaneLock::acquire(&server, "%7", Duration::from_millis(10)).unwrap();
        assert!(
            b.last_held_ms >= t0 + 20 && b.last_held_ms <= released,
            "{}",
            b.last_held_ms
        );
        let _ = std::fs::remove_file(&b.path);
    }
}
