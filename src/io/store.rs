//! The one layer for everything promptgate keeps or edits on disk: the queue,
//! the delivery log, the lock files, the agents' hook settings.
//!
//! - [`dir`]: a directory made and canonicalised once, so that two spellings of
//!   one directory (a trailing slash, a symlink to it) are one directory.
//! - [`read_regular`]: only regular files are read; a FIFO, a device, a socket
//!   or a link out of the directory it must stay in is refused, never opened in
//!   a way that blocks (`O_NONBLOCK`, then `fstat`).
//! - [`write_atomic`]: a temporary file beside the target, fsync, rename over,
//!   fsync the directory; the target's mode and owner are kept, and a symlink
//!   is written through to its target (a dotfiles link stays a link).
//! - [`FileLock`]: an `flock(2)` on a file with a safe name, that the kernel
//!   releases when the holder dies; it can remove its file when released
//!   without a race (a taker checks that the file it locked is still the one
//!   at the path).
//!
//! Every error names the path and what it was for.

use crate::core::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Component, Path, PathBuf};

/// An I/O error that names what it was for and the path.
pub fn err(purpose: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Io(std::io::Error::new(
        e.kind(),
        format!("{purpose} {}: {e}", path.display()),
    ))
}

/// Make `path` (and its parents) a directory, and return its canonical path.
/// `purpose` names it in errors ("the queue directory").
pub fn dir(path: &Path, purpose: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(path).map_err(|e| err(&format!("cannot create {purpose}"), path, e))?;
    let c = std::fs::canonicalize(path)
        .map_err(|e| err(&format!("cannot resolve {purpose}"), path, e))?;
    if !c.is_dir() {
        return Err(err(
            &format!("cannot use {purpose}"),
            path,
            std::io::Error::from_raw_os_error(libc::ENOTDIR),
        ));
    }
    Ok(c)
}

/// [`dir`] for promptgate's own state that a person may point elsewhere (the
/// queue and its claims and answers): the directories it makes are `0700`; one
/// that exists is used with the mode its owner gave it, and refused when
/// another user owns it (their items would be typed into our agents, and they
/// would read our prompts and answers).
pub fn own_dir(path: &Path, purpose: &str) -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|e| err(&format!("cannot create {purpose}"), path, e))?;
    let c = dir(path, purpose)?;
    let m = std::fs::metadata(&c).map_err(|e| err(&format!("cannot use {purpose}"), &c, e))?;
    let me = unsafe { libc::geteuid() };
    if m.uid() != me {
        return Err(Error::Other(format!(
            "cannot use {purpose} {}: it is a directory of user {}, not of this user ({me})",
            c.display(),
            m.uid()
        )));
    }
    Ok(c)
}

/// [`dir`] for a directory only this user may use (locks, hook events; often
/// under a shared `/tmp`): made `0700`, and refused unless it is a directory
/// (not a symlink) owned by this user. Another user's directory planted at the
/// predictable name would read our prompts and plant links and locks there.
pub fn private_dir(path: &Path, purpose: &str) -> Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| err(&format!("cannot create {purpose}"), path, e))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(err(&format!("cannot create {purpose}"), path, e)),
    }
    let m = std::fs::symlink_metadata(path)
        .map_err(|e| err(&format!("cannot use {purpose}"), path, e))?;
    let me = unsafe { libc::geteuid() };
    if !m.file_type().is_dir() || m.uid() != me {
        let what = if m.file_type().is_dir() {
            format!("a directory of user {}", m.uid())
        } else {
            kind_of(&m).to_string()
        };
        return Err(Error::Other(format!(
            "cannot use {purpose} {}: it is {what}, not a directory of this user ({me}); remove it",
            path.display()
        )));
    }
    if m.mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| err(&format!("cannot make {purpose} private"), path, e))?;
    }
    dir(path, purpose)
}

/// The canonical path of a directory that may not exist yet: its nearest
/// existing ancestor canonicalised, the rest appended (`..` refused).
pub fn canonical_lenient(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut p = path.to_path_buf();
    loop {
        if let Ok(c) = std::fs::canonicalize(&p) {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (p.file_name().map(|s| s.to_owned()), p.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                p = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// [`Refusal::NotRegular`]'s words for a path that is a symbolic link
/// ([`open_regular`] follows none).
pub const A_SYMLINK: &str = "a symlink";

/// Why a file was not read.
#[derive(Debug)]
pub enum Refusal {
    /// Not there (removed meanwhile).
    Missing,
    /// Not a regular file, or a link out of its directory: one line saying which.
    NotRegular(String),
    /// Read failed.
    Io(std::io::Error),
}

/// What kind of file the mode is, in a word.
fn kind_of(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symlink"
    } else {
        "not a regular file"
    }
}

/// Read a regular file. A symlink is followed only when its target stays inside
/// `within` (when given); a FIFO, a device or a socket is refused without
/// blocking. `limit` caps the bytes read.
pub fn read_regular(
    path: &Path,
    within: Option<&Path>,
    limit: u64,
) -> std::result::Result<Vec<u8>, Refusal> {
    let lmeta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Refusal::Missing),
        Err(e) => return Err(Refusal::Io(e)),
    };
    let target = if lmeta.file_type().is_symlink() {
        let t = match std::fs::canonicalize(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Refusal::NotRegular("a symlink to nothing".into()))
            }
            Err(e) => return Err(Refusal::Io(e)),
        };
        if let Some(w) = within {
            if t.parent() != Some(w) {
                return Err(Refusal::NotRegular(format!(
                    "a symlink out of {} (to {})",
                    w.display(),
                    t.display()
                )));
            }
        }
        t
    } else {
        path.to_path_buf()
    };
    let f = open_regular(&target)?;
    let mut buf = Vec::new();
    f.take(limit).read_to_end(&mut buf).map_err(Refusal::Io)?;
    Ok(buf)
}

/// Open `path` for reading only if it is a regular file reached without a
/// symlink: opened `O_NOFOLLOW | O_NONBLOCK` (a link or a FIFO swapped in after
/// any earlier check is neither followed nor blocks), then checked with
/// `fstat`. The one way promptgate opens a file it did not write itself.
pub fn open_regular(path: &Path) -> std::result::Result<File, Refusal> {
    let f = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Refusal::Missing),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(Refusal::NotRegular(A_SYMLINK.into()))
        }
        Err(e) => return Err(Refusal::Io(e)),
    };
    let m = f.metadata().map_err(Refusal::Io)?;
    if !m.file_type().is_file() {
        return Err(Refusal::NotRegular(kind_of(&m).into()));
    }
    Ok(f)
}

/// Follow `path` through symlinks to the file they name (which may not exist
/// yet): writes go there, so a link stays a link.
pub fn write_target(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(&p) {
                Ok(t) => {
                    p = match p.parent() {
                        Some(d) if t.is_relative() => d.join(t),
                        _ => t,
                    }
                }
                Err(_) => return p,
            },
            _ => return p,
        }
    }
    p
}

fn fsync_dir(d: &Path) -> std::io::Result<()> {
    File::open(d)?.sync_all()
}

/// Write `bytes` to `path` atomically and durably: a temporary file beside the
/// target, fsync, rename over, fsync the directory. A symlink is written through
/// to its target; an existing file keeps its mode and owner. On any failure the
/// file is as it was and the error names `purpose` and the path.
pub fn write_atomic(path: &Path, bytes: &[u8], purpose: &str) -> Result<()> {
    let target = write_target(path);
    let old = std::fs::metadata(&target).ok().filter(|m| m.is_file());
    write_file(&target, bytes, purpose, old, 0o666)
}

/// [`write_atomic`], the file getting the mode and owner of `like` (a backup
/// of a private settings file is as private as the file).
pub fn write_atomic_like(path: &Path, bytes: &[u8], purpose: &str, like: &Path) -> Result<()> {
    let target = write_target(path);
    let keep = std::fs::metadata(like)
        .ok()
        .filter(|m| m.is_file())
        .or_else(|| std::fs::metadata(&target).ok().filter(|m| m.is_file()));
    write_file(&target, bytes, purpose, keep, 0o666)
}

/// [`write_atomic`] that replaces whatever is at `path` (a symlink there is
/// replaced, never followed): for files promptgate alone owns, such as a queue
/// item, where a link would write elsewhere. The file is this user's, mode
/// `0600` (it holds a prompt, or an agent's answer).
pub fn replace_atomic(path: &Path, bytes: &[u8], purpose: &str) -> Result<()> {
    write_file(path, bytes, purpose, None, 0o600)
}

/// Write `target` through a temporary file beside it; the new file gets
/// `old`'s owner and mode, or `mode` (less the umask) where there is none.
fn write_file(
    target: &Path,
    bytes: &[u8],
    purpose: &str,
    old: Option<std::fs::Metadata>,
    mode: u32,
) -> Result<()> {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = parent.join(format!(".{name}.pg-tmp-{}-{seq}", std::process::id()));
    let fail = |e: std::io::Error| {
        let _ = std::fs::remove_file(&tmp);
        err(&format!("cannot write {purpose}"), target, e)
    };
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if old.is_some() { 0o600 } else { mode })
        .open(&tmp)
        .map_err(fail)?;
    (|| -> std::io::Result<()> {
        f.write_all(bytes)?;
        if let Some(m) = &old {
            let fd = f.as_raw_fd();
            // the owner first (it may clear set-id bits), then the mode
            if m.uid() != unsafe { libc::geteuid() } || m.gid() != unsafe { libc::getegid() } {
                // only root may give a file away; otherwise it stays ours
                let _ = unsafe { libc::fchown(fd, m.uid(), m.gid()) };
            }
            if unsafe { libc::fchmod(fd, m.mode() & 0o7777) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        f.sync_all()?;
        std::fs::rename(&tmp, target)?;
        fsync_dir(&parent)
    })()
    .map_err(fail)
}

/// Remove `path` (not what it links to) and fsync its directory. `Ok(false)`: it
/// was not there.
pub fn remove(path: &Path, purpose: &str) -> Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => {
            if let Some(d) = path.parent() {
                let _ = fsync_dir(d);
            }
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(err(&format!("cannot remove {purpose}"), path, e)),
    }
}

/// Append one line to a log file in a single `write` (`O_APPEND`: lines from
/// several processes never interleave). A FIFO or a device there is refused.
pub fn append_line(path: &Path, line: &[u8], purpose: &str) -> Result<()> {
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| err(&format!("cannot open {purpose}"), path, e))?;
    let m = f
        .metadata()
        .map_err(|e| err(&format!("cannot open {purpose}"), path, e))?;
    if !m.is_file() {
        return Err(Error::Other(format!(
            "{purpose} {} is {}, not a regular file; not written",
            path.display(),
            kind_of(&m)
        )));
    }
    (&f).write_all(line)
        .map_err(|e| err(&format!("cannot write {purpose}"), path, e))
}

/// A name that is safe as one path component: letters, digits, `-`, `_`, `.`
/// kept, anything else `_`, never starting with `.`, at most 100 bytes.
pub fn safe_name(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if out.starts_with('.') || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

/// Whether `s` is one plain path component (no `/`, not `.` or `..`, no NUL).
pub fn is_plain_name(s: &str) -> bool {
    let p = Path::new(s);
    !s.is_empty()
        && !s.contains('\0')
        && p.components().count() == 1
        && matches!(p.components().next(), Some(Component::Normal(_)))
}

/// An exclusive `flock(2)` on a file; released by the kernel when the holder
/// dies. With `remove_on_drop` the file is unlinked while still held, and a
/// taker that finds its file unlinked (or replaced) under it tries again: two
/// holders of one name at once are impossible.
pub struct FileLock {
    pub file: File,
    pub path: PathBuf,
    /// The file existed before this taker opened it.
    pub existed: bool,
    remove_on_drop: bool,
}

impl FileLock {
    /// Try once (not blocking). `Ok(None)`: someone else holds it.
    pub fn try_take(path: &Path, remove_on_drop: bool) -> Result<Option<FileLock>> {
        Self::try_take_opts(path, remove_on_drop, true)
    }

    fn try_take_opts(path: &Path, remove_on_drop: bool, create: bool) -> Result<Option<FileLock>> {
        loop {
            let existed = std::fs::symlink_metadata(path).is_ok();
            if !existed && !create {
                return Ok(None);
            }
            let file = OpenOptions::new()
                .create(create)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
                .open(path)
                .map_err(|e| err("cannot open the lock file", path, e))?;
            let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if r != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                    return Ok(None);
                }
                return Err(err("cannot lock", path, e));
            }
            // still the file at the path? (a releaser may have unlinked it between
            // our open and our flock)
            let held = file.metadata().map_err(|e| err("cannot lock", path, e))?;
            match std::fs::symlink_metadata(path) {
                Ok(m) if m.dev() == held.dev() && m.ino() == held.ino() => {
                    if !held.is_file() {
                        return Err(Error::Other(format!(
                            "lock file {} is {}, not a regular file",
                            path.display(),
                            kind_of(&held)
                        )));
                    }
                    return Ok(Some(FileLock {
                        file,
                        path: path.to_path_buf(),
                        existed,
                        remove_on_drop,
                    }));
                }
                _ => continue,
            }
        }
    }

    /// Remove the file now if nobody holds it and it was last touched more than
    /// `idle` ago (by its mtime). Safe against a concurrent taker (see above).
    pub fn sweep(path: &Path, idle: std::time::Duration) {
        let Ok(m) = std::fs::symlink_metadata(path) else {
            return;
        };
        let old = m
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|a| a > idle);
        if !old || !m.is_file() {
            return;
        }
        // never creates it (it may have gone meanwhile)
        if let Ok(Some(mut l)) = FileLock::try_take_opts(path, true, false) {
            // someone stamped it between our look and our lock: keep it
            let still_old = l
                .file
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|a| a > idle);
            l.remove_on_drop = still_old;
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        if self.remove_on_drop {
            // unlinked while held: a taker that opened it meanwhile sees its inode
            // gone from the path and opens the path again. Only our own file:
            // one someone removed and another taker made again at the path
            // (an outside `rm` of the directory) is that taker's lock
            let ours = match (self.file.metadata(), std::fs::symlink_metadata(&self.path)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            };
            if ours {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn write_keeps_mode_and_writes_through_a_symlink() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real.json");
        std::fs::write(&real, "old").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write_atomic(&link, b"new", "the test file").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // no temporary file left behind
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("x.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        match read_regular(&fifo, None, 1 << 20) {
            Err(Refusal::NotRegular(w)) => assert_eq!(w, "a FIFO"),
            other => panic!("{other:?}"),
        }
        // a link out of the directory is refused; one inside is read
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("o.json"), "x").unwrap();
        std::fs::write(d.path().join("in.json"), "y").unwrap();
        std::os::unix::fs::symlink(out.path().join("o.json"), d.path().join("l.json")).unwrap();
        std::os::unix::fs::symlink("in.json", d.path().join("m.json")).unwrap();
        let w = std::fs::canonicalize(d.path()).unwrap();
        assert!(matches!(
            read_regular(&d.path().join("l.json"), Some(&w), 100),
            Err(Refusal::NotRegular(_))
        ));
        assert_eq!(
            read_regular(&d.path().join("m.json"), Some(&w), 100).unwrap(),
            b"y"
        );
    }

    #[test]
    fn errors_name_the_path_and_the_purpose() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("file");
        std::fs::write(&f, "").unwrap();
        let e = dir(&f.join("promptgate"), "the queue directory")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the queue directory") && e.contains(f.to_str().unwrap()),
            "{e}"
        );
    }

    #[test]
    fn a_lock_removed_on_release_is_never_held_twice() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.lock");
        let a = FileLock::try_take(&p, true).unwrap().unwrap();
        assert!(FileLock::try_take(&p, true).unwrap().is_none());
        drop(a);
        assert!(!p.exists(), "removed when released");
        let b = FileLock::try_take(&p, true).unwrap().unwrap();
        assert!(FileLock::try_take(&p, true).unwrap().is_none());
        drop(b);
        assert_eq!(safe_name("-L my server/x"), "-L_my_server_x");
        assert_eq!(safe_name(".."), "_..");
        assert!(is_plain_name("abc-1") && !is_plain_name("../x") && !is_plain_name(".."));
    }

    #[test]
    fn sweep_removes_only_idle_unheld_lock_files() {
        let d = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
        let (idle, held, fresh) = (
            d.path().join("idle.lock"),
            d.path().join("held.lock"),
            d.path().join("fresh.lock"),
        );
        for p in [&idle, &held, &fresh] {
            std::fs::write(p, "").unwrap();
        }
        for p in [&idle, &held] {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let h = FileLock::try_take(&held, false).unwrap().unwrap();
        let idle_for = std::time::Duration::from_secs(120);
        for p in [&idle, &held, &fresh, &d.path().join("gone.lock")] {
            FileLock::sweep(p, idle_for);
        }
        assert!(!idle.exists(), "idle and not held: removed");
        assert!(held.exists() && fresh.exists());
        assert!(!d.path().join("gone.lock").exists(), "never created");
        drop(h);
    }
}
