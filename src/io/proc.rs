//! The processes under a pane, read from `/proc`: the foreground job, the
//! process tree, a process's age. (Which of them is an agent is
//! `crate::core::identify`, which reads nothing.)

use crate::core::identify::proc_name;
use crate::core::screen::{Proc, Screen};

/// Field `n` (1-based, as proc(5) numbers them: 4 ppid, 22 starttime) of a
/// `/proc/PID/stat` line. The comm (field 2) is in parentheses and may hold
/// spaces: the fields from 3 on follow its last `)`.
fn stat_field(stat: &str, n: usize) -> Option<&str> {
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(n.checked_sub(3)?)
}

/// How long ago process `pid` started, from this machine's `/proc` (its start
/// time survives `exec`, so for a pane's process this is the pane's age).
pub fn process_age(pid: u32) -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let start_ticks: f64 = stat_field(&stat, 22)?.parse().ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0)
        .then(|| std::time::Duration::from_secs_f64((uptime - start_ticks / hz as f64).max(0.0)))
}

/// The pane's foreground job: the leader of the process group that owns the
/// terminal of `pane_pid` (`tpgid`, field 8), or `pane_pid` itself when there is
/// none or that leader is gone.
pub fn foreground_pid(pane_pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pane_pid}/stat")).ok()?;
    let tpgid: i64 = stat_field(&stat, 8)?.parse().ok()?;
    let alive = |p: i64| std::path::Path::new(&format!("/proc/{p}")).exists();
    Some(if tpgid > 0 && alive(tpgid) {
        tpgid as u32
    } else {
        pane_pid
    })
}

/// How long ago the pane's foreground job started: an agent launched from a
/// long-lived shell is young even though the shell (`pane_pid`) is not. When a
/// shell that stays leads the job (`sh -c "…; claude"`, a wrapper that restarts
/// its agent), the age of the program it started: the first process of the job
/// that is not a shell.
pub fn foreground_age(pane_pid: u32) -> Option<std::time::Duration> {
    let leader = foreground_pid(pane_pid)?;
    let comm = std::fs::read_to_string(format!("/proc/{leader}/comm")).unwrap_or_default();
    if crate::core::screen::is_shell(comm.trim()) {
        if let Some(p) = foreground_procs(pane_pid)
            .unwrap_or_default()
            .iter()
            .find(|p| !crate::core::screen::is_shell(&proc_name(p)))
        {
            return process_age(p.pid);
        }
    }
    process_age(leader)
}

/// One process's `comm` and argv, from `/proc`.
fn proc_info(pid: u32) -> Proc {
    Proc {
        pid,
        comm: std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .unwrap_or_default()
            .trim()
            .to_string(),
        argv: std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| {
                b.split(|c| *c == 0)
                    .filter(|s| !s.is_empty())
                    .map(|s| String::from_utf8_lossy(s).into_owned())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The children of `pid` from `/proc/PID/task/*/children` (every thread's);
/// `None` where the kernel has no such file.
fn children(pid: u32) -> Option<Vec<u32>> {
    let main = format!("/proc/{pid}/task/{pid}/children");
    if !std::path::Path::new(&main).exists() {
        return None;
    }
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let f = t.path().join("children");
        if let Ok(text) = std::fs::read_to_string(f) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    Some(out)
}

/// The pane's foreground job: the processes under `pane_pid` (itself included,
/// any depth, parents first) in the process group that owns its terminal. A
/// shell that stays (`sh -c "claude; exec sh"`, a wrapper script, `nix develop
/// -c`) is the job's leader, and the agent it started is in the job too; an
/// agent put in the background is not. `None` without `/proc`.
pub fn foreground_procs(pane_pid: u32) -> Option<Vec<Proc>> {
    let stat = std::fs::read_to_string(format!("/proc/{pane_pid}/stat")).ok()?;
    let tpgid = stat_field(&stat, 8)?.to_string();
    let pgid_of = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| stat_field(&s, 5).map(str::to_string))
    };
    // Walk down by the children files; without them, from a whole /proc scan.
    let tree: Vec<u32> = match children(pane_pid) {
        Some(first) => {
            let mut tree = vec![pane_pid];
            let mut queue = std::collections::VecDeque::from(first);
            while let Some(pid) = queue.pop_front() {
                if tree.len() >= 4096 || tree.contains(&pid) {
                    continue;
                }
                tree.push(pid);
                queue.extend(children(pid).unwrap_or_default());
            }
            tree
        }
        None => process_tree(pane_pid).into_iter().map(|p| p.pid).collect(),
    };
    Some(
        tree.into_iter()
            .filter(|p| pgid_of(*p).as_deref() == Some(tpgid.as_str()))
            .map(proc_info)
            .collect(),
    )
}

/// The pane's foreground job holds a program other than shells (a launcher or
/// wrapper that stays, with what it started).
pub fn job_beyond_shell(pane_pid: u32) -> bool {
    foreground_procs(pane_pid).is_some_and(|job| {
        job.iter()
            .any(|pr| !crate::core::screen::is_shell(&proc_name(pr)))
    })
}

/// Note the pane's foreground job in `s` when a shell is in the foreground (a
/// local pane): then `detect` tells a shell that is back at its prompt from one
/// that runs the agent. Other reads stay as cheap as they were.
pub fn note_foreground(s: &mut Screen) {
    if s.dead
        || !s
            .command
            .as_deref()
            .is_some_and(crate::core::screen::is_shell)
    {
        return;
    }
    if let Some(pid) = s.pid {
        s.foreground = foreground_procs(pid);
    }
}

/// The processes under `root` (itself included), read from `/proc`. Empty where
/// there is no `/proc`.
pub fn process_tree(root: u32) -> Vec<Proc> {
    if let Some(tree) = tree_by_children(root) {
        return tree.into_iter().map(proc_info).collect();
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut all: Vec<(u32, u32)> = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid = stat_field(&stat, 4)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        all.push((pid, ppid));
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(all.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    tree.into_iter().map(proc_info).collect()
}

/// The pids under `root` (itself first, breadth first) from each thread's
/// `/proc/PID/task/TID/children`: only the tree is read, not every process of
/// the machine. `None` where the kernel has no such file (then `/proc` is walked).
fn tree_by_children(root: u32) -> Option<Vec<u32>> {
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let pid = tree[i];
        match std::fs::read_dir(format!("/proc/{pid}/task")) {
            Ok(tasks) => {
                for t in tasks.flatten() {
                    // the kernel lists children without a lock: a read while other
                    // threads of the process fork or reap can skip one, so each file
                    // is read twice and the two lists joined
                    let file = t.path().join("children");
                    match std::fs::read_to_string(&file) {
                        Ok(c) => {
                            let again = std::fs::read_to_string(&file).unwrap_or_default();
                            for pid in c
                                .split_whitespace()
                                .chain(again.split_whitespace())
                                .filter_map(|p| p.parse::<u32>().ok())
                            {
                                if !tree.contains(&pid) {
                                    tree.push(pid);
                                }
                            }
                        }
                        // a thread that ended meanwhile is fine; no such file at all is not
                        Err(e)
                            if i == 0
                                && e.kind() == std::io::ErrorKind::NotFound
                                && t.path().exists() =>
                        {
                            return None
                        }
                        Err(_) => {}
                    }
                }
            }
            Err(_) if i == 0 => return None,
            Err(_) => {}
        }
        i += 1;
    }
    Some(tree)
}

/// Whether process `pid` exists (a signal 0 reaches it, or it is another user's).
pub fn alive(pid: u32) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if p <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists
    let sent = unsafe { libc::kill(p, 0) == 0 };
    sent || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Start `cmd` as a child that ends with this process: on Linux it gets
/// SIGTERM when its parent goes (`PR_SET_PDEATHSIG`). That signal follows the
/// *thread* that spawned it, not the process, so the child is spawned by one
/// thread that lives as long as the process: a far shell or control-mode
/// client started by a short-lived thread (a record's proof, one pane's
/// delivery of a fan-out) was killed when that thread ended, and every later
/// call paid for a new ssh session (a 4-host fleet started 62 where 30 do).
pub fn spawn_tied(mut cmd: std::process::Command) -> std::io::Result<std::process::Child> {
    #[cfg(target_os = "linux")]
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    type Ask = (
        std::process::Command,
        std::sync::mpsc::Sender<std::io::Result<std::process::Child>>,
    );
    static SPAWNER: std::sync::OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<Ask>>> =
        std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Ask>();
        std::thread::spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
        });
        std::sync::Mutex::new(tx)
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let sent = spawner
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send((cmd, tx));
    match sent {
        Ok(()) => rx
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread is gone"))),
        Err(std::sync::mpsc::SendError((mut cmd, _))) => cmd.spawn(),
    }
}

/// The pane of the nearest process (this one, then its ancestors) that has a
/// `TMUX_PANE`: the caller's pane.
pub fn caller_panes() -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(p) = std::env::var("TMUX_PANE") {
        if !p.is_empty() {
            out.push(p);
        }
    }
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..32 {
        if pid <= 1 {
            break;
        }
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) {
            for kv in env.split(|b| *b == 0) {
                if let Some(v) = kv.strip_prefix(b"TMUX_PANE=") {
                    let v = String::from_utf8_lossy(v).into_owned();
                    if !v.is_empty() && !out.contains(&v) {
                        out.push(v);
                    }
                }
            }
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        pid = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child started by a thread that then ends lives on (it was killed
    /// with the thread: a far shell started by a record's proof thread).
    #[test]
    fn a_tied_child_outlives_the_thread_that_started_it() {
        let mut child = std::thread::spawn(|| {
            let mut c = std::process::Command::new("sleep");
            c.arg("5");
            spawn_tied(c).unwrap()
        })
        .join()
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let alive = child.try_wait().unwrap().is_none();
        let _ = child.kill();
        let _ = child.wait();
        assert!(alive, "the child died with the thread that started it");
    }

    #[test]
    fn the_tree_from_children_files_is_the_tree_of_the_whole_walk() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id();
        // other tests fork and reap meanwhile: a look may still miss the child
        // (see tree_by_children); one of a few looks finds it
        let quick = (0..50)
            .map(|i| {
                if i > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                tree_by_children(me).expect("this kernel has children files")
            })
            .find(|t| t.contains(&child.id()))
            .unwrap_or_else(|| panic!("{} never in the children files", child.id()));
        assert_eq!(quick[0], me);
        // (spread over a second: under a full test run every look of a quick
        // burst can fall in other tests' forks)
        let seen = (0..50).any(|_| {
            let found = process_tree(me)
                .iter()
                .any(|p| p.pid == child.id() && p.comm == "sleep");
            if !found {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            found
        });
        assert!(seen, "the sleep child is in the process tree");
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(tree_by_children(u32::MAX - 7), None);
    }

    #[test]
    fn stat_fields_count_past_a_comm_with_spaces() {
        let stat = "42 (a b) c) S 7 42 42 0 -1 4 0 0 0 0 1 2 0 0 20 0 1 0 987654 1 2";
        assert_eq!(stat_field(stat, 3), Some("S"));
        assert_eq!(stat_field(stat, 4), Some("7"));
        assert_eq!(stat_field(stat, 22), Some("987654"));
        assert_eq!(stat_field(stat, 2), None);
    }

    #[test]
    fn this_process_is_young() {
        let age = process_age(std::process::id()).unwrap();
        assert!(age < std::time::Duration::from_secs(600), "{age:?}");
        assert!(process_age(u32::MAX).is_none());
    }
}
