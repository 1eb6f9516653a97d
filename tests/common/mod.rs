//! Test helpers: a private tmux server per test (never the user's), killed on drop.
#![allow(dead_code)]

pub mod real;
pub mod sshd;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static SEQ: AtomicUsize = AtomicUsize::new(0);

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_promptgate"))
}

pub struct TmuxServer {
    pub socket: String,
    pub dir: tempfile::TempDir,
}

impl TmuxServer {
    /// A new private server with one session `main` running `argv` (`sh` when empty).
    pub fn new(width: u16, height: u16, argv: &[&str]) -> TmuxServer {
        let socket = format!(
            "promptgate-test-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        );
        let dir = tempfile::tempdir().unwrap();
        let s = TmuxServer { socket, dir };
        let (w, h) = (width.to_string(), height.to_string());
        let mut args = vec![
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            &w,
            "-y",
            &h,
        ];
        args.extend_from_slice(argv);
        let o = s.tmux(&args);
        assert!(
            o.status.success(),
            "new-session: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        s.tmux(&["set-option", "-g", "remain-on-exit", "off"]);
        s
    }

    pub fn tmux(&self, args: &[&str]) -> Output {
        tmux_on(&self.socket, args)
    }

    pub fn tmux_out(&self, args: &[&str]) -> String {
        String::from_utf8_lossy(&self.tmux(args).stdout).into_owned()
    }

    /// `session:window.pane`, the name (not the id) of `pane`.
    pub fn pane_name(&self, pane: &str) -> String {
        let f = "#{session_name}:#{window_index}.#{pane_index}";
        self.tmux_out(&["display", "-p", "-t", pane, f])
            .trim()
            .to_string()
    }

    /// A new window running `argv`; returns its pane id.
    pub fn window(&self, argv: &[&str]) -> String {
        let mut args = vec!["new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "=main:"];
        args.extend_from_slice(argv);
        self.tmux_out(&args).trim().to_string()
    }

    /// The fake agent in a new window, with a transcript in the temp dir and a
    /// HOME of its own (nothing of the user's is read or written).
    pub fn fake(&self, like: &str, extra: &[&str]) -> (String, PathBuf) {
        let home = self.dir.path().join("fake-home");
        self.fake_in(&home, like, extra)
    }

    /// [`fake`](Self::fake) with `home` as its HOME (made here; `CODEX_HOME` and
    /// `CLAUDE_CONFIG_DIR` unset, so its agent's files are under `home`).
    pub fn fake_in(&self, home: &Path, like: &str, extra: &[&str]) -> (String, PathBuf) {
        let transcript = self.dir.path().join(format!(
            "transcript-{}.jsonl",
            SEQ.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::create_dir_all(home);
        let b = bin();
        let t = transcript.display().to_string();
        let h = format!("HOME={}", home.display());
        let mut argv = vec![
            "env",
            "-u",
            "CODEX_HOME",
            "-u",
            "CLAUDE_CONFIG_DIR",
            &h,
            b.to_str().unwrap(),
            "fake-agent",
            "--like",
            like,
            "--transcript",
            &t,
        ];
        argv.extend_from_slice(extra);
        (self.window(&argv), transcript)
    }

    /// `promptgate -L <this server> ARGS`.
    pub fn pg(&self, args: &[&str]) -> Output {
        self.pg_cmd(args).output().unwrap()
    }

    pub fn pg_cmd(&self, args: &[&str]) -> Command {
        pg_on(&self.socket, self.dir.path(), args)
    }

    /// The state word of `promptgate state -t PANE`.
    pub fn state(&self, pane: &str) -> String {
        let o = self.pg(&["state", "-t", pane]);
        String::from_utf8_lossy(&o.stdout)
            .split('\t')
            .nth(2)
            .unwrap_or("")
            .trim()
            .to_string()
    }

    /// Poll until the pane's state is `want`, or panic after `secs`.
    pub fn wait_state(&self, pane: &str, want: &str, secs: f64) {
        let start = Instant::now();
        let mut last = String::new();
        while start.elapsed() < Duration::from_secs_f64(secs) {
            last = self.state(pane);
            if last == want {
                return;
            }
            std::thread::sleep(Duration::from_millis(30));
        }
        panic!(
            "pane {pane}: wanted {want}, still {last} after {secs}s\n{}",
            self.tmux_out(&["capture-pane", "-p", "-t", pane])
        );
    }

    /// A person types `text` and presses Enter; the agent is then busy (seen
    /// within `secs`).
    pub fn submit_by_hand(&self, pane: &str, text: &str, secs: f64) {
        self.tmux(&["send-keys", "-t", pane, "-l", text]);
        self.tmux(&["send-keys", "-t", pane, "Enter"]);
        self.wait_state(pane, "busy", secs);
    }

    pub fn capture(&self, pane: &str) -> String {
        self.tmux_out(&["capture-pane", "-p", "-t", pane])
    }
}

/// `tmux -L SOCKET ARGS`, outside any tmux client's environment.
pub fn tmux_on(socket: &str, args: &[&str]) -> Output {
    Command::new("tmux")
        .args(["-L", socket])
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .expect("tmux")
}

/// `promptgate -L SOCKET ARGS`, its delivery log and lock files under `dir`.
pub fn pg_on(socket: &str, dir: &Path, args: &[&str]) -> Command {
    let mut c = pg_with(&bin(), socket, args);
    c.env("PROMPTGATE_LOG", dir.join("deliveries.jsonl"))
        .env("XDG_RUNTIME_DIR", dir);
    c
}

/// `BIN -L SOCKET ARGS` (a promptgate binary), outside any tmux client's environment.
pub fn pg_with(bin: &Path, socket: &str, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(["-L", socket])
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE");
    c
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// The prompts a fake agent recorded, in order.
pub fn prompts(transcript: &Path) -> Vec<String> {
    records(transcript, "prompt")
        .into_iter()
        .map(|v| v["text"].as_str().unwrap_or("").to_string())
        .collect()
}

pub fn records(transcript: &Path, kind: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(transcript)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == kind)
        .collect()
}

/// Run `cmd` with `input` on its stdin (fed from a thread, so a large body cannot
/// deadlock against the child's output).
pub fn output_with_stdin(cmd: &mut Command, input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let w = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let o = child.wait_with_output().unwrap();
    w.join().unwrap();
    o
}

/// A user profiles file in `dir`: the built-in `base` renamed to `name`, with
/// `(from, to)` text replacements. Returns its path.
pub fn custom_profile(dir: &Path, base: &str, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let shown = Command::new(bin())
        .args(["profiles", "--show", base])
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&shown.stdout)
        .replace(&format!("name = \"{base}\""), &format!("name = \"{name}\""));
    for (from, to) in edits {
        assert!(text.contains(from), "profile {base} has no {from:?}");
        text = text.replace(from, to);
    }
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The last JSON line of a command's stdout (`{}` when there is none).
pub fn json_out(o: &Output) -> serde_json::Value {
    let out = text(&o.stdout);
    serde_json::from_str(out.lines().last().unwrap_or("{}")).unwrap_or_default()
}

/// Prompts that quote a dialog's words (issue 15 item 7), one per dialog phrase
/// (`\n` is a newline), then the other agents' own dialog words: [`QUOTES`] is
/// the first part.
pub const QUOTES_EVERY_AGENT: &[&str] = &[
    "Do you want to create a test for this?",
    "Press Enter to continue when done",
    "Yes, I trust this folder",
    "Is this a project you created or one you trust?",
    "pick one:\n❯ 1. Yes",
    "Allow once",
    "Do you want to proceed? ❯ 1. Yes",
    // the other agents' own dialog words
    "Would you like to run the following command? › 1. Yes, proceed (y)",
    "Do you trust the files in this folder? 1. Trust and continue",
];

/// The prompts that quote a dialog's words (issue 15 item 7).
pub const QUOTES: &[&str] = QUOTES_EVERY_AGENT.split_at(7).0;

/// Whether this test may mount a tmpfs in a private mount namespace (root and
/// `unshare -m`); the reason when not.
pub fn private_mounts() -> Result<(), String> {
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    let o = Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            "mount -t tmpfs -o size=64k tmpfs /mnt && umount /mnt",
        ])
        .output()
        .map_err(|e| format!("unshare: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "unshare -m with a tmpfs mount failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(())
}
