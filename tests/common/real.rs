//! Real agents on the scripted model (tests/real_turns.rs, tests/real_ask.rs):
//! the model (`scripts/model.sh`) and one agent on its own tmux server
//! (`scripts/real-agents.sh start AGENT ready 120 40` with `MODEL_URL`), each
//! stopped by its PID or socket when dropped.

use super::{json_out, text};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn key_values(out: &[u8]) -> HashMap<String, String> {
    text(out)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The scripted model, stopped by its PID when dropped.
pub struct Model {
    pub pid: String,
    pub port: String,
    pub url: String,
}

impl Model {
    pub fn start() -> Model {
        let o = Command::new(root().join("scripts/model.sh"))
            .arg("start")
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(o.status.success(), "model.sh start: {}", text(&o.stderr));
        let kv = key_values(&o.stdout);
        Model {
            pid: kv["pid"].clone(),
            port: kv["port"].clone(),
            url: kv["url"].clone(),
        }
    }

    /// aimock's request journal: every request, with `timestamp` (ms) and `body`.
    pub fn journal(&self) -> Vec<Value> {
        let o = Command::new(root().join("scripts/model.sh"))
            .args(["journal", &self.port])
            .output()
            .unwrap();
        assert!(o.status.success(), "model.sh journal: {}", text(&o.stderr));
        serde_json::from_slice(&o.stdout).expect("the journal is a JSON array")
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = Command::new(root().join("scripts/model.sh"))
            .args(["stop", &self.pid])
            .output();
    }
}

/// One real agent pointed at the model, on its own tmux server; stopped by PID.
pub struct Agent {
    pub name: &'static str,
    pub version: String,
    pub socket: String,
    pub pane: String,
    pub run: PathBuf,
    pub project: PathBuf,
    pub record: String,
    pub tmp: tempfile::TempDir,
    pub stopped: bool,
}

impl Agent {
    pub fn start(name: &'static str, model: &Model) -> Agent {
        Agent::start_on(name, Some(model), &[])
    }

    /// The agent on the model, or with none (`None`: offline, as the
    /// real-agent suite runs it), with `env` for `scripts/real-agents.sh start`.
    pub fn start_on(name: &'static str, model: Option<&Model>, env: &[(&str, &str)]) -> Agent {
        let mut c = Command::new(root().join("scripts/real-agents.sh"));
        c.env_remove("MODEL_URL").envs(env.iter().copied());
        if let Some(m) = model {
            c.env("MODEL_URL", &m.url);
        }
        let o = c
            .args(["start", name, "ready", "120", "40"])
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "real-agents.sh start {name}: {}",
            text(&o.stderr)
        );
        let kv = key_values(&o.stdout);
        Agent {
            name,
            version: kv["version"].clone(),
            socket: kv["socket"].clone(),
            pane: kv["pane"].clone(),
            run: PathBuf::from(&kv["run"]),
            project: PathBuf::from(&kv["project"]),
            record: kv
                .get("record_sessions")
                .unwrap_or(&kv["record"])
                .to_string(),
            tmp: tempfile::tempdir().unwrap(),
            stopped: false,
        }
    }

    pub fn pg(&self, args: &[&str]) -> Output {
        let mut c = super::pg_on(&self.socket, self.tmp.path(), args);
        c.stdin(Stdio::null());
        c.output().unwrap()
    }

    pub fn capture(&self) -> String {
        text(&super::tmux_on(&self.socket, &["capture-pane", "-p", "-t", &self.pane]).stdout)
    }

    pub fn key(&self, key: &str) {
        let o = super::tmux_on(&self.socket, &["send-keys", "-t", &self.pane, key]);
        assert!(o.status.success(), "send-keys {key}: {}", text(&o.stderr));
    }

    /// Refuse the tool-approval dialog on screen. Escape does it everywhere
    /// but in Kilo 7.7.7, which keeps its prompt open on Escape: Reject is two
    /// to the right, then it asks what to do instead (still a dialog), and
    /// Enter leaves that empty.
    pub fn reject_tool(&self) {
        if self.name != "kilo" {
            return self.key("Escape");
        }
        for k in ["Right", "Right", "Enter"] {
            self.key(k);
            std::thread::sleep(Duration::from_millis(400));
        }
        self.wait_state("dialog:permission", 10);
        self.key("Enter");
    }

    pub fn state(&self) -> String {
        let v = json_out(&self.pg(&["state", "-t", &self.pane, "--json"]));
        v["state"].as_str().unwrap_or("error").to_string()
    }

    /// Poll `state` until it is `want`; panic with the screen after `secs`.
    pub fn wait_state(&self, want: &str, secs: u64) {
        self.wait_state_held(want, secs, 0)
    }

    /// After a start: `ready`, and still `ready` on every look for `hold_ms`
    /// (codex 0.171.0 in CI spun its title again after its first ready look,
    /// while it still reached the model). Panics after `secs`.
    pub fn wait_ready_held(&self, secs: u64, hold_ms: u64) {
        self.wait_state_held("ready", secs, hold_ms)
    }

    /// Poll `state` until it is `want` on every look for `hold_ms`; panic with
    /// the screen after `secs`.
    fn wait_state_held(&self, want: &str, secs: u64, hold_ms: u64) {
        let start = Instant::now();
        let mut since: Option<Instant> = None;
        loop {
            let st = self.state();
            if st != want {
                since = None;
            } else if since.get_or_insert_with(Instant::now).elapsed().as_millis()
                >= hold_ms as u128
            {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(secs),
                "{} {}: waited {secs} s for {want} (held {hold_ms} ms), last {st}\n{}",
                self.name,
                self.version,
                self.capture()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The user messages in the agent's own record, oldest first.
    pub fn records(&self) -> Vec<String> {
        let o = Command::new(root().join("scripts/real-agents.sh"))
            .args(["record", self.name, &self.record])
            .output()
            .unwrap();
        assert!(o.status.success(), "record: {}", text(&o.stderr));
        text(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str::<String>(l).expect("record line is a JSON string"))
            .collect()
    }

    pub fn stop(&mut self) {
        let o = Command::new(root().join("scripts/real-agents.sh"))
            .args(["stop", &self.socket])
            .output()
            .unwrap();
        self.stopped = true;
        assert!(o.status.success(), "stop: {}", text(&o.stderr));
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.run);
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = Command::new(root().join("scripts/real-agents.sh"))
                .args(["stop", &self.socket])
                .output();
            eprintln!(
                "{}: stopped {}; run dir kept: {}",
                self.name,
                self.socket,
                self.run.display()
            );
        }
    }
}
