//! A model-based test of the durable queue: random operations on a real queue
//! directory (add, rename a file, hard- or sym-link it, watchers started by
//! aliases of the directory, one at a time or two at once, a watcher killed at
//! a random moment, the disk full and room again) against a reference model:
//! every prompt is typed at most once, and every prompt that was queued and not
//! held for a person is typed exactly once after a final run with room.
//!
//! The disk is a small tmpfs in a private mount namespace: the test runs itself
//! again under `unshare -m` (root only); elsewhere it runs without the disk-full
//! operations and says why. `PROMPTGATE_MODEL_CASES` sets the number of cases
//! (default 3; each takes some seconds).

use crate::common;
use common::*;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[derive(Debug, Clone)]
enum Op {
    Add { pane: usize },
    Rename { k: usize },
    HardLink { k: usize },
    SymLink { k: usize },
    Run { alias: usize },
    Kill { alias: usize, ms: u64 },
    Two { a: usize, b: usize },
    Full,
    Room,
}

fn op(full: bool) -> impl Strategy<Value = Op> {
    let base = prop_oneof![
        4 => (0..2usize).prop_map(|pane| Op::Add { pane }),
        1 => (0..8usize).prop_map(|k| Op::Rename { k }),
        1 => (0..8usize).prop_map(|k| Op::HardLink { k }),
        1 => (0..8usize).prop_map(|k| Op::SymLink { k }),
        2 => (0..3usize).prop_map(|alias| Op::Run { alias }),
        2 => (0..3usize, 100..2000u64).prop_map(|(alias, ms)| Op::Kill { alias, ms }),
        1 => (0..3usize, 0..3usize).prop_map(|(a, b)| Op::Two { a, b }),
    ];
    let full_ops = prop_oneof![Just(Op::Full), Just(Op::Room)];
    prop_oneof![6 => base, (if full { 1 } else { 0 }) => full_ops]
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct World {
    srv: TmuxServer,
    panes: Vec<(String, PathBuf)>,
    qdir: PathBuf,
    aliases: Vec<PathBuf>,
    /// Every body tried, with its id when `queue add` took it.
    added: Vec<(String, Option<String>)>,
    seq: usize,
}

impl World {
    fn new(on_tmpfs: bool) -> World {
        let srv = TmuxServer::new(100, 30, &[]);
        let qdir = srv.dir.path().join("queue");
        std::fs::create_dir_all(&qdir).unwrap();
        if on_tmpfs {
            let o = Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
                .arg(&qdir)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", stderr(&o));
        }
        let link = srv.dir.path().join("queue-alias");
        std::os::unix::fs::symlink(&qdir, &link).unwrap();
        let aliases = vec![
            qdir.clone(),
            PathBuf::from(format!("{}/", qdir.display())),
            link,
        ];
        let panes = (0..2)
            .map(|_| srv.fake("claude", &["--busy-ms", "60"]))
            .collect::<Vec<_>>();
        for (p, _) in &panes {
            srv.wait_state(p, "ready", 20.0);
        }
        World {
            srv,
            panes,
            qdir,
            aliases,
            added: Vec::new(),
            seq: 0,
        }
    }

    fn cmd(&self, alias: usize, args: &[&str]) -> Command {
        let mut c = self.srv.pg_cmd(&["queue"]);
        c.args(args)
            .env("PROMPTGATE_QUEUE_DIR", &self.aliases[alias % 3])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    }

    /// A regular file (not a symlink) in the queue directory that holds item `k`.
    fn file_of(&self, k: usize) -> Option<PathBuf> {
        let ids: Vec<&String> = self.added.iter().filter_map(|(_, i)| i.as_ref()).collect();
        let id = ids.get(k % ids.len().max(1))?;
        let needle = format!("\"id\": \"{id}\"");
        std::fs::read_dir(&self.qdir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file())
                    && !p.file_name().unwrap().to_string_lossy().starts_with('.')
            })
            .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(&needle)))
    }

    fn name(&mut self) -> PathBuf {
        self.seq += 1;
        self.qdir.join(format!("alias-{}.json", self.seq))
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Add { pane } => {
                let body = format!("model prompt {} for pane {pane}", self.added.len());
                let o = self
                    .cmd(0, &["add", "-t", &self.panes[pane].0, &body])
                    .stdout(Stdio::piped())
                    .output()
                    .unwrap();
                let id = (code(&o) == 0).then(|| text(&o.stdout).trim().to_string());
                self.added.push((body, id));
            }
            Op::Rename { k } => {
                if let Some(f) = self.file_of(k) {
                    let n = self.name();
                    let _ = std::fs::rename(f, n);
                }
            }
            Op::HardLink { k } => {
                if let Some(f) = self.file_of(k) {
                    let n = self.name();
                    let _ = std::fs::hard_link(f, n);
                }
            }
            Op::SymLink { k } => {
                if let Some(f) = self.file_of(k) {
                    let n = self.name();
                    let _ = std::os::unix::fs::symlink(f.file_name().unwrap(), n);
                }
            }
            Op::Run { alias } => {
                let _ = self
                    .cmd(
                        alias,
                        &["run", "--once", "--max-secs", "3", "--interval", "50"],
                    )
                    .status();
            }
            Op::Kill { alias, ms } => {
                let w = Kill(
                    self.cmd(alias, &["run", "--interval", "50"])
                        .spawn()
                        .unwrap(),
                );
                std::thread::sleep(Duration::from_millis(ms));
                drop(w); // SIGKILL
            }
            Op::Two { a, b } => {
                let args = ["run", "--once", "--max-secs", "3", "--interval", "50"];
                let x = Kill(self.cmd(a, &args).spawn().unwrap());
                let y = Kill(self.cmd(b, &args).spawn().unwrap());
                for mut w in [x, y] {
                    let _ = w.0.wait();
                }
            }
            Op::Full => fill(&self.qdir.join(".fill")),
            Op::Room => {
                let _ = std::fs::remove_file(self.qdir.join(".fill"));
            }
        }
    }

    /// Room again, and runs until nothing is left but prompts held for a person.
    fn drain(&mut self) -> Vec<String> {
        let _ = std::fs::remove_file(self.qdir.join(".fill"));
        for _ in 0..6 {
            let _ = self
                .cmd(
                    0,
                    &["run", "--once", "--max-secs", "10", "--interval", "50"],
                )
                .status();
            let held = self.left();
            if held.iter().all(|l| l.contains("\theld\t")) {
                return held;
            }
        }
        self.left()
    }

    fn left(&self) -> Vec<String> {
        let o = self
            .cmd(0, &["list"])
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        text(&o.stdout).lines().map(str::to_string).collect()
    }
}

/// Fill the disk the file is on.
fn fill(path: &Path) {
    use std::io::Write;
    let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    else {
        return;
    };
    let block = [0u8; 4096];
    while f.write_all(&block).is_ok() {}
    let _ = f.sync_all();
}

fn check(ops: &[Op], on_tmpfs: bool) -> Result<(), TestCaseError> {
    let mut w = World::new(on_tmpfs);
    for op in ops {
        w.apply(op);
    }
    let held = w.drain();
    std::thread::sleep(Duration::from_millis(300));
    let typed: Vec<String> = w.panes.iter().flat_map(|(_, t)| prompts(t)).collect();
    let result = (|| {
        for (body, id) in &w.added {
            let n = typed.iter().filter(|t| *t == body).count();
            prop_assert!(n <= 1, "{body:?} typed {n} times; ops {ops:?}");
            match id {
                None => prop_assert_eq!(n, 0, "{:?} was never queued; ops {:?}", body, ops),
                Some(id) if held.iter().any(|l| l.starts_with(id.as_str())) => {}
                Some(_) => prop_assert_eq!(
                    n,
                    1,
                    "{:?} not delivered; left {:?}; ops {:?}",
                    body,
                    held,
                    ops
                ),
            }
        }
        Ok(())
    })();
    if on_tmpfs {
        let _ = Command::new("umount").arg("-l").arg(&w.qdir).status();
    }
    result
}

fn cases() -> u32 {
    std::env::var("PROMPTGATE_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

fn run_model(on_tmpfs: bool) {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: cases(),
        max_shrink_iters: 4,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = proptest::collection::vec(op(on_tmpfs), 4..12).prop_map(|mut v| {
        // something to deliver in every case
        v.insert(0, Op::Add { pane: 0 });
        v.insert(1, Op::Add { pane: 1 });
        v
    });
    let r = runner.run(&strategy, |ops| check(&ops, on_tmpfs));
    if let Err(e) = r {
        panic!("{e}");
    }
}

#[test]
fn queue_model_every_prompt_at_most_once_and_exactly_once_when_nothing_failed() {
    const NS: &str = "PROMPTGATE_TEST_IN_MOUNT_NS";
    if std::env::var_os(NS).is_some() {
        return run_model(true);
    }
    match private_mounts() {
        Ok(()) => {
            // the same test again, in a private mount namespace
            let exe = std::env::current_exe().unwrap();
            let o = Command::new("unshare")
                .arg("-m")
                .arg(exe)
                .args([
                    "--exact",
                    // the test's path in its binary: `module::name`, without the crate
                    &format!(
                        "{}::queue_model_every_prompt_at_most_once_and_exactly_once_when_nothing_failed",
                        module_path!().split_once("::").map_or("", |(_, m)| m)
                    ),
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(NS, "1")
                .output()
                .unwrap();
            let out = format!("{}{}", text(&o.stdout), stderr(&o));
            assert!(
                o.status.success() && out.contains("1 passed"),
                "in a private mount namespace:\n{out}"
            );
        }
        Err(why) => {
            eprintln!("no disk-full operations (they need a private tmpfs mount): {why}");
            run_model(false);
        }
    }
}
