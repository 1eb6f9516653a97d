//! Where an agent's own files are read: on this machine, or on the machine tmux
//! runs on, through the same ssh that reaches tmux (`--host`,
//! `PROMPTGATE_TMUX="ssh HOST tmux"`).
//!
//! The record reader (`record.rs`) needs little: the processes under a pane,
//! a process's environment and directory, which files match a pattern, a
//! file's size, and the bytes appended after an offset (a record is tailed,
//! never re-read). Over ssh each of those is one `sh -c` on the far side, its
//! arguments quoted for the far shell.

use crate::core::identify::Proc;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// This machine, or the far side of an ssh (the command that reaches it, such
/// as `ssh -p 22 HOST`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Files {
    Local,
    Remote(Vec<String>),
}

impl Files {
    /// Where the agents of the tmux that promptgate talks to keep their files.
    pub fn of_tmux() -> Files {
        // this process's launcher: `--host` or `PROMPTGATE_TMUX` (the record
        // is read where tmux runs, never on this machine by mistake)
        let l = crate::io::tmux::Launcher::current();
        if l.remote && l.argv.len() > 1 {
            // `ssh [opts] HOST tmux`: the same ssh, without the final `tmux`
            Files::Remote(l.argv[..l.argv.len() - 1].to_vec())
        } else {
            Files::Local
        }
    }

    pub fn is_remote(&self) -> bool {
        matches!(self, Files::Remote(_))
    }

    /// Run `script` with `args` ($1 …) on the far side; its stdout on success.
    /// Through this process's one long-lived far shell ([`FarShell`]) when it
    /// runs; else (or when the call is not one line) a login of its own.
    fn sh(&self, script: &str, args: &[&str]) -> Option<Vec<u8>> {
        let Files::Remote(ssh) = self else {
            return None;
        };
        let mut line = format!("sh -c {} sh", crate::io::tmux::sh_quote(script));
        for a in args {
            line.push(' ');
            line.push_str(&crate::io::tmux::sh_quote(a));
        }
        if !line.contains(['\n', '\r']) {
            if let Some(r) = FarShell::run(ssh, &line) {
                return r;
            }
        }
        let mut c = Command::new(&ssh[0]);
        c.args(&ssh[1..])
            .arg("sh")
            .arg("-c")
            .arg(crate::io::tmux::sh_quote(script))
            .arg("sh")
            .args(args.iter().map(|a| crate::io::tmux::sh_quote(a)))
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        let o = c.output().ok()?;
        o.status.success().then_some(o.stdout)
    }

    /// A whole (small) file: a regular one, not through a symlink (a FIFO
    /// planted where a record is would block the read for good).
    pub fn read(&self, p: &Path) -> Option<Vec<u8>> {
        match self {
            Files::Local => {
                let mut f = open_regular(p)?;
                let mut buf = Vec::new();
                f.read_to_end(&mut buf).ok()?;
                Some(buf)
            }
            Files::Remote(_) => self.sh(
                "[ -f \"$1\" ] && [ ! -L \"$1\" ] && cat -- \"$1\"",
                &[&p.to_string_lossy()],
            ),
        }
    }

    /// Where a symbolic link (`/proc/PID/cwd`) points.
    pub fn read_link(&self, p: &Path) -> Option<PathBuf> {
        match self {
            Files::Local => std::fs::read_link(p).ok(),
            Files::Remote(_) => {
                let out = self.sh("readlink -- \"$1\"", &[&p.to_string_lossy()])?;
                let s = String::from_utf8_lossy(&out)
                    .trim_end_matches('\n')
                    .to_string();
                (!s.is_empty()).then(|| PathBuf::from(s))
            }
        }
    }

    pub fn is_dir(&self, p: &Path) -> bool {
        match self {
            Files::Local => p.is_dir(),
            Files::Remote(_) => self.sh("test -d \"$1\"", &[&p.to_string_lossy()]).is_some(),
        }
    }

    /// Whether any of `dirs` is a directory (over ssh: one round trip for all).
    pub fn any_dir(&self, dirs: &[&Path]) -> bool {
        match self {
            Files::Local => dirs.iter().any(|d| d.is_dir()),
            Files::Remote(_) if dirs.is_empty() => false,
            Files::Remote(_) => {
                let args: Vec<String> = dirs.iter().map(|d| d.to_string_lossy().into()).collect();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                self.sh(
                    "for d in \"$@\"; do [ -d \"$d\" ] && exit 0; done; exit 1",
                    &args,
                )
                .is_some()
            }
        }
    }

    /// A file's size in bytes (`None`: no such file, or not a regular one).
    pub fn len(&self, p: &Path) -> Option<u64> {
        match self {
            Files::Local => std::fs::metadata(p)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len()),
            Files::Remote(_) => {
                let out = self.sh("test -f \"$1\" && wc -c < \"$1\"", &[&p.to_string_lossy()])?;
                String::from_utf8_lossy(&out).trim().parse().ok()
            }
        }
    }

    /// [`len`](Self::len) of each of `paths` (over ssh: one round trip for all).
    pub fn lens(&self, paths: &[PathBuf]) -> Vec<Option<u64>> {
        if !self.is_remote() || paths.len() < 2 {
            return paths.iter().map(|p| self.len(p)).collect();
        }
        let args: Vec<String> = paths.iter().map(|p| p.to_string_lossy().into()).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // one line a path: its size, or `-`
        let out = self
            .sh(
                "for f in \"$@\"; do if [ -f \"$f\" ] && n=$(wc -c < \"$f\"); then echo $n; else echo -; fi; done",
                &args,
            )
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&out);
        let mut got: Vec<Option<u64>> = text.lines().map(|l| l.trim().parse().ok()).collect();
        got.resize(paths.len(), None);
        got
    }

    /// The bytes of a file from `offset` on (from 0 when it shrank).
    pub fn read_from(&self, p: &Path, offset: u64) -> Option<Vec<u8>> {
        match self {
            Files::Local => {
                let mut f = open_regular(p)?;
                let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                let from = if len < offset { 0 } else { offset };
                f.seek(SeekFrom::Start(from)).ok()?;
                let mut buf = Vec::new();
                f.read_to_end(&mut buf).ok()?;
                Some(buf)
            }
            Files::Remote(_) => self.sh(
                "[ -f \"$1\" ] && [ ! -L \"$1\" ] || exit 1; n=$(wc -c < \"$1\") || exit 1; if [ \"$n\" -lt \"$2\" ]; then cat -- \"$1\"; else tail -c +$(($2 + 1)) -- \"$1\"; fi",
                &[&p.to_string_lossy(), &offset.to_string()],
            ),
        }
    }

    /// The files (regular ones) and directories of `dir` whose names start with
    /// `pre` and end with `post`, newest first.
    pub fn list(&self, dir: &Path, pre: &str, post: &str) -> Vec<PathBuf> {
        let fits =
            |n: &str| n.len() >= pre.len() + post.len() && n.starts_with(pre) && n.ends_with(post);
        match self {
            Files::Local => {
                let Ok(rd) = std::fs::read_dir(dir) else {
                    return Vec::new();
                };
                let mut v: Vec<(std::time::SystemTime, PathBuf)> = rd
                    .flatten()
                    .filter(|e| fits(&e.file_name().to_string_lossy()))
                    // regular files and directories only (the entry's own type: a
                    // link, a FIFO or a socket is never opened as a record)
                    .filter_map(|e| {
                        let m = e.metadata().ok().filter(|m| m.is_file() || m.is_dir())?;
                        Some((m.modified().unwrap_or(std::time::UNIX_EPOCH), e.path()))
                    })
                    .collect();
                v.sort_by_key(|e| std::cmp::Reverse(e.0));
                v.into_iter().map(|(_, p)| p).collect()
            }
            Files::Remote(_) => {
                let Some(out) = self.sh("cd -- \"$1\" && ls -1t", &[&dir.to_string_lossy()]) else {
                    return Vec::new();
                };
                String::from_utf8_lossy(&out)
                    .lines()
                    .filter(|n| fits(n))
                    .map(|n| dir.join(n))
                    .collect()
            }
        }
    }

    /// A process's environment and directory, `Err` naming the one that could
    /// not be read (over ssh: one round trip for both).
    pub fn environ_cwd(
        &self,
        pid: u32,
    ) -> std::result::Result<(BTreeMap<String, String>, PathBuf), &'static str> {
        if !self.is_remote() {
            let env = self.environ(pid).ok_or("environment")?;
            let cwd = self
                .read_link(Path::new(&format!("/proc/{pid}/cwd")))
                .ok_or("directory")?;
            return Ok((env, cwd));
        }
        // the directory, a NUL, then the environment as it is
        let out = self
            .sh(
                "d=$(readlink -- \"/proc/$1/cwd\") && [ -n \"$d\" ] || exit 1; printf '%s\\0' \"$d\"; cat -- \"/proc/$1/environ\"",
                &[&pid.to_string()],
            )
            .ok_or("environment and directory")?;
        let at = out.iter().position(|b| *b == 0).ok_or("directory")?;
        let cwd = PathBuf::from(String::from_utf8_lossy(&out[..at]).into_owned());
        Ok((parse_environ(&out[at + 1..]), cwd))
    }

    /// A process's environment (`/proc/PID/environ`).
    pub fn environ(&self, pid: u32) -> Option<BTreeMap<String, String>> {
        let raw = self.read(Path::new(&format!("/proc/{pid}/environ")))?;
        Some(parse_environ(&raw))
    }
}

/// [`crate::io::store::open_regular`], `None` for any refusal.
fn open_regular(p: &Path) -> Option<std::fs::File> {
    crate::io::store::open_regular(p).ok()
}

/// One `sh` on the far side, started once per process through the same ssh,
/// that runs each read sent to it in turn: one ssh session for all of a
/// send's reads, where each read would start an ssh client and log in again
/// (most of a remote send's CPU time). A shell that fails is not started again;
/// reads then log in each.
struct FarShell {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
}

/// The far shell of this process (for the one ssh it was started through), or
/// `None` once it failed.
type Shells = Option<(Vec<String>, Option<FarShell>)>;
static FAR: std::sync::Mutex<Shells> = std::sync::Mutex::new(None);

/// Each line read is run with no input and its output kept; then
/// `STATUS LENGTH` and the output's bytes are written back.
const FAR_LOOP: &str = "T=$(mktemp) || exit 1; trap 'rm -f \"$T\"' EXIT; \
while IFS= read -r line; do eval \"$line\" </dev/null >\"$T\" 2>/dev/null; rc=$?; \
n=$(wc -c <\"$T\") || exit 1; printf '%s %s\\n' \"$rc\" $n; cat -- \"$T\"; done";

impl FarShell {
    fn start(ssh: &[String]) -> Option<FarShell> {
        let mut c = Command::new(&ssh[0]);
        c.args(&ssh[1..])
            .arg("sh")
            .arg("-c")
            .arg(crate::io::tmux::sh_quote(FAR_LOOP))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // it ends with this process (its input closes then too)
        let mut child = crate::io::proc::spawn_tied(c).ok()?;
        let input = child.stdin.take()?;
        let output = std::io::BufReader::new(child.stdout.take()?);
        Some(FarShell {
            child,
            input,
            output,
        })
    }

    /// `Some(stdout on success)`: the far shell ran `line`; `None`: there is
    /// no far shell (run it another way).
    fn run(ssh: &[String], line: &str) -> Option<Option<Vec<u8>>> {
        let mut far = FAR.lock().unwrap_or_else(|e| e.into_inner());
        if far.as_ref().is_none_or(|(via, _)| via.as_slice() != ssh) {
            *far = Some((ssh.to_vec(), FarShell::start(ssh)));
        }
        let (_, shell) = far.as_mut()?;
        let sh = shell.as_mut()?;
        match sh.ask(line) {
            Some(r) => Some(r),
            None => {
                // it failed: never again in this process
                let _ = sh.child.kill();
                let _ = sh.child.wait();
                *shell = None;
                None
            }
        }
    }

    fn ask(&mut self, line: &str) -> Option<Option<Vec<u8>>> {
        use std::io::{BufRead, Write};
        writeln!(self.input, "{line}").ok()?;
        self.input.flush().ok()?;
        let mut head = String::new();
        self.output.read_line(&mut head).ok()?;
        let mut w = head.split_whitespace();
        let rc: i32 = w.next()?.parse().ok()?;
        let n: usize = w.next()?.parse().ok()?;
        let mut out = vec![0; n];
        self.output.read_exact(&mut out).ok()?;
        Some((rc == 0).then_some(out))
    }
}

/// `KEY=VALUE` entries, each ended by a NUL (as `/proc/PID/environ`).
fn parse_environ(raw: &[u8]) -> BTreeMap<String, String> {
    raw.split(|b| *b == 0)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

impl Files {
    /// The far side's process list, one line a process: pid, ppid, comm, then
    /// its argv joined by spaces. Taken once for the targets of a fan-out
    /// that ask within half a second of each other (one round trip, not one
    /// each: it only places each agent's record).
    fn processes(&self) -> Option<Vec<u8>> {
        type Taken = Option<(std::time::Instant, Vec<String>, Vec<u8>)>;
        static LAST: std::sync::Mutex<Taken> = std::sync::Mutex::new(None);
        let Files::Remote(ssh) = self else {
            return None;
        };
        // held while it is taken: the others wait for it, then read it
        let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, via, out)) = last.as_ref() {
            if via == ssh && at.elapsed() < std::time::Duration::from_millis(500) {
                return Some(out.clone());
            }
        }
        let out = self.sh("ps -e -o pid= -o ppid= -o comm= -o args=", &[])?;
        *last = Some((std::time::Instant::now(), ssh.clone(), out.clone()));
        Some(out)
    }

    /// The processes under `root`, itself first.
    pub fn process_tree(&self, root: u32) -> Vec<Proc> {
        if !self.is_remote() {
            return crate::io::proc::process_tree(root);
        }
        let Some(out) = self.processes() else {
            return Vec::new();
        };
        let text = String::from_utf8_lossy(&out);
        let all: Vec<(u32, u32, Proc)> = text
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let pid = w.next()?.parse().ok()?;
                let ppid = w.next()?.parse().ok()?;
                let comm = w.next()?.to_string();
                let argv = w.map(str::to_string).collect();
                Some((pid, ppid, Proc { pid, comm, argv }))
            })
            .collect();
        let mut tree = vec![root];
        let mut i = 0;
        while i < tree.len() {
            let parent = tree[i];
            tree.extend(
                all.iter()
                    .filter(|(_, pp, _)| *pp == parent)
                    .map(|(p, _, _)| *p),
            );
            i += 1;
        }
        tree.iter()
            .filter_map(|pid| {
                all.iter()
                    .find(|(p, _, _)| p == pid)
                    .map(|(_, _, pr)| pr.clone())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sh` standing in for ssh: the far side is this machine, reached the way
    /// ssh reaches it (one command line for a shell).
    fn far() -> Files {
        Files::Remote(vec!["sh".into(), "-c".into(), "eval \"$0 $*\"".into()])
    }

    #[test]
    fn the_far_side_reads_what_this_side_reads() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("it's a $file.jsonl");
        std::fs::write(&f, "one\ntwo\n").unwrap();
        std::fs::write(dir.path().join("other.txt"), "x").unwrap();
        for files in [Files::Local, far()] {
            assert_eq!(files.len(&f), Some(8), "{files:?}");
            assert_eq!(files.read_from(&f, 4).unwrap(), b"two\n", "{files:?}");
            // a file that shrank is read whole
            assert_eq!(
                files.read_from(&f, 100).unwrap(),
                b"one\ntwo\n",
                "{files:?}"
            );
            assert_eq!(files.read(&f).unwrap(), b"one\ntwo\n");
            assert!(files.is_dir(dir.path()) && !files.is_dir(&f));
            assert_eq!(files.list(dir.path(), "it", ".jsonl"), vec![f.clone()]);
            assert_eq!(files.len(&dir.path().join("none")), None);
            let me = std::process::id();
            assert!(files.environ(me).unwrap().contains_key("PATH"));
            assert!(files
                .read_link(Path::new(&format!("/proc/{me}/cwd")))
                .is_some());
            let tree = files.process_tree(me);
            assert_eq!(tree.first().map(|p| p.pid), Some(me), "{files:?}");
            // the batched reads: one round trip each over ssh, the same answers
            let (env, cwd) = files.environ_cwd(me).unwrap();
            assert_eq!(env, files.environ(me).unwrap(), "{files:?}");
            assert_eq!(cwd, std::env::current_dir().unwrap(), "{files:?}");
            assert!(files.environ_cwd(u32::MAX - 1).is_err());
            let none = dir.path().join("none");
            assert_eq!(
                files.lens(&[f.clone(), none.clone(), dir.path().to_path_buf(), f.clone()]),
                vec![Some(8), None, None, Some(8)],
                "{files:?}"
            );
            assert!(files.any_dir(&[&f, &none, dir.path()]), "{files:?}");
            assert!(
                !files.any_dir(&[&f, &none]) && !files.any_dir(&[]),
                "{files:?}"
            );
        }
    }
}
