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
        let l = crate::io::tmux::Launcher::from_env();
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
    fn sh(&self, script: &str, args: &[&str]) -> Option<Vec<u8>> {
        let Files::Remote(ssh) = self else {
            return None;
        };
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

    /// A whole (small) file.
    pub fn read(&self, p: &Path) -> Option<Vec<u8>> {
        match self {
            Files::Local => std::fs::read(p).ok(),
            Files::Remote(_) => self.sh("cat -- \"$1\"", &[&p.to_string_lossy()]),
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

    /// A file's size in bytes (`None`: no such file).
    pub fn len(&self, p: &Path) -> Option<u64> {
        match self {
            Files::Local => std::fs::metadata(p).ok().map(|m| m.len()),
            Files::Remote(_) => {
                let out = self.sh("test -f \"$1\" && wc -c < \"$1\"", &[&p.to_string_lossy()])?;
                String::from_utf8_lossy(&out).trim().parse().ok()
            }
        }
    }

    /// The bytes of a file from `offset` on (from 0 when it shrank).
    pub fn read_from(&self, p: &Path, offset: u64) -> Option<Vec<u8>> {
        match self {
            Files::Local => {
                let mut f = std::fs::File::open(p).ok()?;
                let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                let from = if len < offset { 0 } else { offset };
                f.seek(SeekFrom::Start(from)).ok()?;
                let mut buf = Vec::new();
                f.read_to_end(&mut buf).ok()?;
                Some(buf)
            }
            Files::Remote(_) => self.sh(
                "n=$(wc -c < \"$1\") || exit 1; if [ \"$n\" -lt \"$2\" ]; then cat -- \"$1\"; else tail -c +$(($2 + 1)) -- \"$1\"; fi",
                &[&p.to_string_lossy(), &offset.to_string()],
            ),
        }
    }

    /// The files of `dir` whose names start with `pre` and end with `post`,
    /// newest first.
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
                    .map(|e| {
                        let t = e
                            .metadata()
                            .and_then(|m| m.modified())
                            .unwrap_or(std::time::UNIX_EPOCH);
                        (t, e.path())
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

    /// A process's environment (`/proc/PID/environ`).
    pub fn environ(&self, pid: u32) -> Option<BTreeMap<String, String>> {
        let raw = self.read(Path::new(&format!("/proc/{pid}/environ")))?;
        Some(
            raw.split(|b| *b == 0)
                .filter_map(|kv| {
                    let kv = String::from_utf8_lossy(kv);
                    kv.split_once('=')
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                })
                .collect(),
        )
    }

    /// The processes under `root`, itself first.
    pub fn process_tree(&self, root: u32) -> Vec<Proc> {
        if !self.is_remote() {
            return crate::io::proc::process_tree(root);
        }
        // one line a process: pid, ppid, comm, then its argv joined by spaces
        let Some(out) = self.sh("ps -e -o pid= -o ppid= -o comm= -o args=", &[]) else {
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
        }
    }
}
