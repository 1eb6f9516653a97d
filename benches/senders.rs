//! `cargo bench --bench senders` (what `scripts/bench.sh` runs): reliability and
//! latency of `promptgate send` against two senders that people use today.
//!
//! A private tmux server runs fake agents (`promptgate fake-agent`) whose knobs
//! are drawn for each trial from a fixed seed: time to first paint (0-8 s),
//! flicker, a start-up dialog and a late dialog that a helper dismisses after a
//! random time, a busy period, and the faults (1022-byte unframed read loss, the
//! 120 ms paste-burst Enter window, Enter lost before the first paint), and on
//! half the busy trials a failed turn (`--fail-turns 1`: claude's box then shows
//! its dim `Resend your message to try again` placeholder). The same
//! trials (same knobs, same body) run for each sender, many panes at a time, and
//! each is judged by the fake agent's transcript: exactly once, byte-exact after
//! `promptgate::core::plan::sanitise`, no early submit.
//!
//! Senders:
//! * `promptgate`: `promptgate send -t P --wait-dialog --wait-busy --timeout 30
//!   --json -f BODY` (the safety defaults untouched; `--wait-dialog` because a
//!   helper closes the dialogs, `--wait-busy` because some trials start busy).
//! * `promptgate --settle 0`, on the cold trials only: the trade-off of the
//!   start-up settle window (not a default; shown for the latency comparison).
//! * `fixed-sleep` and `telepty-gate`: BASELINES, the two bash scripts in
//!   `benches/baselines/` (the real-agent trials, `scripts/real-bench.sh`, run the same).
//!
//! Also measured in the same run: a fan-out of one prompt to 16 panes against one
//! pane, and the cost of one poll over the control-mode connection against a
//! forked tmux client per poll.
//!
//! Flags: `--quick`, `--trials N`, `--parallel N`, `--seed N`, `--out FILE.json`,
//! `--fanout-rounds N`, `--no-settle0`, `--keep DIR` (keep the failed jobs' files),
//! `--only ID[,ID...]` and `--repeat N` (run those trials again, to reproduce one).

#[path = "../tests/common/mod.rs"]
mod common;

use promptgate::core::detect::detect;
use promptgate::core::plan::sanitise;
use promptgate::core::profile::Profiles;
use promptgate::io::tmux::{Control, Process, Server, Tmux};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

// ------------------------------------------------------------------ baselines

/// BASELINE (b), not promptgate: the fixed-sleep sender of many orchestration
/// scripts. Prints the moment its Enter was written (epoch microseconds).
const FIXED_SLEEP_SH: &str = include_str!("baselines/fixed-sleep.sh");

/// BASELINE (c), not promptgate: a telepty-style gate.
const TELEPTY_SH: &str = include_str!("baselines/telepty-gate.sh");

/// The prompt symbol the telepty-style gate looks for, per agent.
fn symbol(like: &str) -> &'static str {
    match like {
        "claude" => "❯",
        "codex" => "›",
        "opencode" => "┃",
        _ => ">",
    }
}

// ------------------------------------------------------------------ trials

/// splitmix64: a tiny seeded PRNG, enough for drawing knobs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in lo..=hi.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.next() as usize % xs.len()]
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Start {
    /// The send is issued at launch.
    Cold,
    /// The agent is idle: painted, dialogs closed.
    Warm,
    /// The agent is busy with an earlier prompt when the send is issued.
    Busy,
}

impl Start {
    fn name(self) -> &'static str {
        match self {
            Start::Cold => "cold",
            Start::Warm => "warm",
            Start::Busy => "warm-busy",
        }
    }
}

/// A prompt is first *stable* once it has shown, unchanged, for this long: the
/// gate's stability window, the earliest moment anyone reading the screen can
/// tell a composer that stays from one that flickers. (The seed spec and the
/// telepty-style baseline use 200 ms; the shorter window is the stricter target.)
const STABLE_MS: f64 = 100.0;

const DIALOGS: [&str; 4] = ["trust", "api-key", "permission", "onboarding"];
const BODIES: [&str; 7] = [
    "1 line",
    "multi-line",
    "5 KB",
    "64 KB",
    "unicode",
    "trailing ;",
    "ESC[201~ inside",
];

#[derive(Clone, Debug)]
struct Trial {
    /// Index in this run (differs from `id` with --only/--repeat).
    run: usize,
    /// The trial number: with the seed, it fixes the knobs and the body.
    id: usize,
    seed: u64,
    like: &'static str,
    start: Start,
    blank_ms: u64,
    flicker: u64,
    dialog: Option<&'static str>,
    late_dialog: Option<&'static str>,
    /// Before the late dialog opens, the not-ready start-up composer shows this
    /// long (codex measured ~150 and ~450 ms before its first-run dialogs).
    flash_ms: u64,
    /// How long the helper lets the first and the second dialog stand.
    dismiss_ms: [u64; 2],
    busy_ms: u64,
    /// Warm trials: how long the agent has been idle (no output) when the send
    /// is issued, 400-4000 ms.
    idle_ms: u64,
    read_1022: bool,
    paste_burst: bool,
    early_enter_lost: bool,
    /// Busy trials: the earlier prompt's turn fails (`--fail-turns 1`), as offline
    /// or on an API error; claude's box then shows its dim after-error placeholder.
    fail_turn: bool,
    /// gemini: ms from its first ready screen to the banner landing (the prompt
    /// moves down; an Enter before that is lost), as the real one starts.
    jump_ms: u64,
    body_kind: &'static str,
    body: Vec<u8>,
}

impl Trial {
    fn new(master: u64, id: usize, run: usize) -> Trial {
        let seed = Rng(master ^ (id as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)).next();
        let mut r = Rng(seed);
        let like = r.pick(&["claude", "codex", "gemini", "opencode"]);
        let start = match r.range(0, 9) {
            0..=3 => Start::Cold,
            4..=7 => Start::Warm,
            _ => Start::Busy,
        };
        let blank_ms = r.range(0, 8000);
        let flicker = if r.chance(0.5) { r.range(1, 4) } else { 0 };
        let dialog = r.chance(0.3).then(|| r.pick(&DIALOGS));
        let late_dialog = r.chance(0.15).then(|| r.pick(&DIALOGS));
        let dismiss_ms = [r.range(300, 3000), r.range(300, 3000)];
        let busy_ms = r.range(500, 4000);
        let read_1022 = r.chance(0.5);
        let paste_burst = r.chance(0.5);
        let early_enter_lost = r.chance(0.5);
        let body_kind = r.pick(&BODIES);
        let body = make_body(body_kind, id, &mut r);
        // A stream of its own, so that the knobs above stay as in earlier runs.
        let idle_ms = Rng(seed ^ 0x1D1E_1D1E_1D1E_1D1E).range(400, 4000);
        let flash_ms = Rng(seed ^ 0xF1A5_F1A5_F1A5_F1A5).range(150, 450);
        let fail_turn = start == Start::Busy && Rng(seed ^ 0xFA11_FA11_FA11_FA11).chance(0.5);
        // real gemini 0.58.0 / 0.61.0: 150-390 ms measured here, up to 661 ms in
        // the fixtures' 18 timed start-ups
        let jump_ms = if like == "gemini" {
            Rng(seed ^ 0x1A3B_1A3B_1A3B_1A3B).range(150, 700)
        } else {
            0
        };
        Trial {
            run,
            id,
            seed,
            like,
            start,
            blank_ms,
            flicker,
            dialog,
            late_dialog,
            flash_ms,
            dismiss_ms,
            busy_ms,
            idle_ms,
            read_1022,
            paste_burst,
            early_enter_lost,
            fail_turn,
            jump_ms,
            body_kind,
            body,
        }
    }

    fn fake_args(&self) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "--like".into(),
            self.like.into(),
            "--blank-ms".into(),
            self.blank_ms.to_string(),
            "--busy-ms".into(),
            self.busy_ms.to_string(),
        ];
        if self.flicker > 0 {
            a.extend(["--flicker".into(), self.flicker.to_string()]);
        }
        if let Some(d) = self.dialog {
            a.extend(["--dialog".into(), d.into()]);
        }
        if let Some(d) = self.late_dialog {
            a.extend(["--fault-late-dialog".into(), d.into()]);
            a.extend(["--late-dialog-flash-ms".into(), self.flash_ms.to_string()]);
        }
        if self.read_1022 {
            a.push("--fault-read-1022".into());
        }
        if self.paste_burst {
            a.extend(["--fault-paste-burst-ms".into(), "120".into()]);
        }
        if self.early_enter_lost {
            a.push("--fault-early-enter-lost".into());
        }
        if self.fail_turn {
            a.extend(["--fail-turns".into(), "1".into()]);
        }
        if self.jump_ms > 0 {
            a.extend(["--start-jump-ms".into(), self.jump_ms.to_string()]);
        }
        a
    }

    fn knobs(&self) -> Value {
        json!({
            "trial": self.id, "run": self.run, "seed": format!("{:#018x}", self.seed), "like": self.like,
            "start": self.start.name(), "blank_ms": self.blank_ms, "flicker": self.flicker,
            "dialog": self.dialog, "late_dialog": self.late_dialog, "flash_ms": self.flash_ms, "dismiss_ms": self.dismiss_ms,
            "busy_ms": self.busy_ms, "idle_ms": self.idle_ms, "read_1022": self.read_1022, "paste_burst_120ms": self.paste_burst,
            "early_enter_lost": self.early_enter_lost, "fail_turn": self.fail_turn, "jump_ms": self.jump_ms, "body": self.body_kind, "body_bytes": self.body.len(),
            "fake_agent_args": self.fake_args().join(" "),
        })
    }
}

fn make_body(kind: &str, id: usize, r: &mut Rng) -> Vec<u8> {
    let filler = |n: usize| {
        let mut s = String::new();
        let mut i = 0;
        while s.len() < n {
            s.push_str(&format!(
                "{id:05}-{i:05} the quick brown fox jumps over the lazy dog\n"
            ));
            i += 1;
        }
        s.truncate(n - 1);
        s.push('.');
        s
    };
    let s = match kind {
        "1 line" => format!("trial {id}: fix the failing test in src/lib.rs"),
        "multi-line" => (0..r.range(2, 8))
            .map(|i| format!("line {i} of trial {id}: check the parser and the tests"))
            .collect::<Vec<_>>()
            .join("\n"),
        "5 KB" => filler(5 * 1024),
        "64 KB" => filler(64 * 1024),
        "unicode" => {
            format!("trial {id}: 修复测试 🦀 émoji ✅ — 日本語のテキスト\n第二行 👍🏽 café 한국어")
        }
        "trailing ;" => format!("trial {id}: run the suite;"),
        _ => format!("trial {id}: before \x1b[201~ after"),
    };
    s.into_bytes()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
enum Sender {
    Promptgate,
    FixedSleep,
    Telepty,
    PromptgateSettle0,
}

impl Sender {
    fn name(self) -> &'static str {
        match self {
            Sender::Promptgate => "promptgate",
            Sender::FixedSleep => "fixed-sleep (baseline)",
            Sender::Telepty => "telepty-gate (baseline)",
            Sender::PromptgateSettle0 => "promptgate --settle 0",
        }
    }
    fn key(self) -> &'static str {
        match self {
            Sender::Promptgate => "promptgate",
            Sender::FixedSleep => "fixed_sleep",
            Sender::Telepty => "telepty_gate",
            Sender::PromptgateSettle0 => "promptgate_settle0",
        }
    }
}

// ------------------------------------------------------------------ harness

fn epoch_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// A private tmux server, killed on drop.
struct Srv {
    sock: String,
}

impl Srv {
    fn new(name: &str) -> Srv {
        let sock = format!("pgbench-{name}-{}", std::process::id());
        let s = Srv { sock };
        let o = s.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "bench",
            "-x",
            "120",
            "-y",
            "40",
            "sleep",
            "100000",
        ]);
        assert!(o.status.success(), "tmux new-session: {}", err(&o));
        s.run(&["set-option", "-g", "remain-on-exit", "off"]);
        s
    }
    fn alive(&self) -> bool {
        self.run(&["has-session", "-t", "=bench"]).status.success()
    }
    fn run(&self, args: &[&str]) -> Output {
        common::tmux_on(&self.sock, args)
    }
    /// A new window running the fake agent; its pane id.
    fn fake(&self, bin: &Path, transcript: &Path, args: &[String]) -> Option<String> {
        let b = bin.display().to_string();
        let t = transcript.display().to_string();
        // a HOME of its own, where it keeps its record as the real agent does
        // (promptgate's receipts then carry proof from it; nothing of the user's)
        let home = transcript.with_extension("home");
        let h = format!("HOME={}", home.display());
        let mut argv: Vec<&str> = vec![
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            "=bench:",
            "env",
            &h,
            &b,
            "fake-agent",
            "--records",
            "--transcript",
            &t,
        ];
        argv.extend(args.iter().map(String::as_str));
        let o = self.run(&argv);
        let p = String::from_utf8_lossy(&o.stdout).trim().to_string();
        (o.status.success() && p.starts_with('%')).then_some(p)
    }
}

impl Drop for Srv {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).trim().to_string()
}

/// Reads a fake agent's transcript as it grows, and plays the helper who closes
/// dialogs: each dialog is dismissed with Enter `dismiss_ms[k]` after it shows.
struct Watch {
    path: PathBuf,
    off: u64,
    partial: Vec<u8>,
    recs: Vec<Value>,
    open_dialog: Option<(f64, usize)>,
    dialogs: usize,
    dismissed: usize,
    pressed: usize,
    /// The dialogs the helper pressed Enter on (by index).
    helper_pressed: Vec<usize>,
    /// Dialogs dismissed by somebody else: the sender pressed Enter into a dialog.
    sender_dismissed: usize,
    ready: bool,
    prompts: usize,
    last_event: f64,
}

impl Watch {
    fn new(path: PathBuf) -> Watch {
        Watch {
            path,
            off: 0,
            partial: Vec::new(),
            recs: Vec::new(),
            open_dialog: None,
            dialogs: 0,
            dismissed: 0,
            pressed: 0,
            helper_pressed: Vec::new(),
            sender_dismissed: 0,
            ready: false,
            prompts: 0,
            last_event: epoch_ms(),
        }
    }

    fn poll(&mut self) {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return;
        };
        if f.seek(SeekFrom::Start(self.off)).is_err() {
            return;
        }
        let mut buf = Vec::new();
        if f.read_to_end(&mut buf).is_err() {
            return;
        }
        self.off += buf.len() as u64;
        self.partial.extend_from_slice(&buf);
        while let Some(i) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=i).collect();
            let Ok(v) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            let at = v["at_ms"].as_f64().unwrap_or(0.0);
            match v["kind"].as_str().unwrap_or("") {
                "ready" => self.ready = true,
                "dialog-shown" => {
                    self.open_dialog = Some((at, self.dialogs));
                    self.dialogs += 1;
                }
                "dialog-dismissed" => {
                    if let Some((_, k)) = self.open_dialog {
                        if !self.helper_pressed.contains(&k) {
                            self.sender_dismissed += 1;
                        }
                    }
                    self.open_dialog = None;
                    self.dismissed += 1;
                }
                "prompt" => self.prompts += 1,
                _ => {}
            }
            self.last_event = self.last_event.max(at);
            self.recs.push(v);
        }
    }

    /// Read on, and press Enter on a dialog whose time has come.
    fn tick(&mut self, srv: &Srv, pane: &str, dismiss_ms: &[u64; 2]) {
        self.poll();
        if let Some((at, k)) = self.open_dialog {
            if self.pressed <= k && epoch_ms() >= at + dismiss_ms[k.min(1)] as f64 {
                self.poll(); // the very latest, to not press Enter into a composer
                if self.open_dialog.is_some_and(|(_, j)| j == k) {
                    self.helper_pressed.push(k);
                    srv.run(&["send-keys", "-t", pane, "Enter"]);
                }
                self.pressed = k + 1;
            }
        }
    }

    /// Painted, every dialog (the late one too) closed, and quiet for `quiet_ms`.
    fn idle(&self, t: &Trial, quiet_ms: u64) -> bool {
        let want = t.dialog.is_some() as usize + t.late_dialog.is_some() as usize;
        self.ready
            && self.open_dialog.is_none()
            && self.dismissed >= want
            && epoch_ms() - self.last_event >= quiet_ms as f64
    }

    fn of(&self, kind: &str) -> impl Iterator<Item = &Value> {
        let kind = kind.to_string();
        self.recs.iter().filter(move |v| v["kind"] == kind.as_str())
    }
}

struct Ctx {
    bin: PathBuf,
    dir: PathBuf,
    /// The trials' tmux server, replaced if it dies (tmux 3.3a can segfault, see
    /// the docs); `gen` counts the replacements.
    srv: RwLock<Arc<Srv>>,
    gen: AtomicUsize,
    crashes: Mutex<Vec<Value>>,
    fixed_sleep: PathBuf,
    telepty: PathBuf,
}

impl Ctx {
    fn current(&self) -> (Arc<Srv>, usize) {
        let g = self.srv.read().unwrap();
        (g.clone(), self.gen.load(Ordering::SeqCst))
    }

    /// The server of generation `seen` died: start a new one (once).
    fn restart(&self, seen: usize, done: usize) {
        let mut g = self.srv.write().unwrap();
        if self.gen.load(Ordering::SeqCst) != seen {
            return;
        }
        eprintln!(
            "  the trials' tmux server {} died after {done} jobs; starting a new one, re-running the jobs in flight",
            g.sock
        );
        self.crashes
            .lock()
            .unwrap()
            .push(json!({"server": g.sock, "after_jobs": done, "at_ms": epoch_ms() as u64}));
        *g = Arc::new(Srv::new(&format!("trials{}", seen + 1)));
        self.gen.fetch_add(1, Ordering::SeqCst);
    }
}

/// The result of one (trial, sender).
#[derive(Clone, Debug)]
struct Job {
    trial: usize,
    sender: Sender,
    start: Start,
    outcome: &'static str,
    detail: String,
    exit: i32,
    /// ms from invocation to the submit keystroke written.
    submit: Option<f64>,
    /// ms from invocation to the agent's `prompt` record.
    consumed: Option<f64>,
    /// ms from the prompt's first stable moment (cold: shown and unchanged for
    /// `STABLE_MS`) to the first body byte / the submit / consumed.
    stable_type: Option<f64>,
    stable_submit: Option<f64>,
    stable_consumed: Option<f64>,
    /// ms from the moment the composer last appeared (cold) to consumed.
    shown_consumed: Option<f64>,
    /// The sender pressed Enter on a dialog (accepting it), landed or not.
    enter_into_dialog: bool,
    wall_ms: f64,
}

fn run_job(ctx: &Ctx, srv: &Srv, t: &Trial, sender: Sender, attempt: u32, keep: bool) -> Job {
    // A new name for each attempt: a re-run must not read the crashed attempt's transcript.
    let tag = format!("{:05}-{:05}-{}-{attempt}", t.run, t.id, sender.key());
    let transcript = ctx.dir.join(format!("{tag}.jsonl"));
    let body_file = ctx.dir.join(format!("{tag}.body"));
    std::fs::write(&body_file, &t.body).unwrap();
    let expected = sanitise(&t.body).expect("bench bodies are valid").0;
    let mut job = Job {
        trial: t.run,
        sender,
        start: t.start,
        outcome: "harness-error",
        detail: String::new(),
        exit: -1,
        submit: None,
        consumed: None,
        stable_type: None,
        stable_submit: None,
        stable_consumed: None,
        shown_consumed: None,
        enter_into_dialog: false,
        wall_ms: 0.0,
    };
    let t_job = Instant::now();
    let Some(pane) = srv.fake(&ctx.bin, &transcript, &t.fake_args()) else {
        job.detail = "could not open the window".into();
        return job;
    };
    let mut w = Watch::new(transcript.clone());
    let pause = Duration::from_millis(15);
    // Warm and busy: wait until idle (the helper closes the dialogs meanwhile):
    // a warm trial for its drawn idle time, a busy one 400 ms before its earlier prompt.
    let mut pre: Option<String> = None;
    if t.start != Start::Cold {
        let quiet_ms = if t.start == Start::Warm {
            t.idle_ms
        } else {
            400
        };
        let until = Instant::now() + Duration::from_secs(45);
        while !w.idle(t, quiet_ms) {
            if Instant::now() > until {
                job.detail = "never idle".into();
                srv.run(&["kill-pane", "-t", &pane]);
                return job;
            }
            w.tick(srv, &pane, &t.dismiss_ms);
            std::thread::sleep(pause);
        }
    }
    if t.start == Start::Busy {
        let text = format!("earlier prompt that keeps trial {} busy", t.id);
        srv.run(&["send-keys", "-t", &pane, "-l", &text]);
        std::thread::sleep(Duration::from_millis(250));
        srv.run(&["send-keys", "-t", &pane, "Enter"]);
        let until = Instant::now() + Duration::from_secs(5);
        while w.prompts == 0 && Instant::now() < until {
            std::thread::sleep(pause);
            w.poll();
        }
        if w.prompts == 0 {
            job.detail = "the earlier prompt did not land".into();
            srv.run(&["kill-pane", "-t", &pane]);
            return job;
        }
        pre = Some(text);
    }
    // The send.
    let out_file = ctx.dir.join(format!("{tag}.out"));
    let err_file = ctx.dir.join(format!("{tag}.err"));
    let mut cmd = match sender {
        Sender::Promptgate | Sender::PromptgateSettle0 => {
            let mut c = common::pg_with(&ctx.bin, &srv.sock, &["send", "-t", &pane]);
            c.args(["--wait-dialog", "--wait-busy", "--timeout", "30", "--json"])
                .arg("-f")
                .arg(&body_file);
            if sender == Sender::PromptgateSettle0 {
                c.args(["--settle", "0"]);
            }
            c.env("PROMPTGATE_LOG", "off")
                .env("XDG_RUNTIME_DIR", ctx.dir.join("run"));
            c
        }
        Sender::FixedSleep => {
            let mut c = Command::new("bash");
            c.arg(&ctx.fixed_sleep)
                .args([&srv.sock, &pane])
                .arg(&body_file);
            c
        }
        Sender::Telepty => {
            let mut c = Command::new("bash");
            c.arg(&ctx.telepty)
                .args([&srv.sock, &pane])
                .arg(&body_file)
                .arg(symbol(t.like));
            c
        }
    };
    cmd.env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_file).unwrap())
        .stderr(std::fs::File::create(&err_file).unwrap());
    let t0 = epoch_ms();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            job.detail = format!("spawn: {e}");
            return job;
        }
    };
    let until = Instant::now() + Duration::from_secs(60);
    let status = loop {
        w.tick(srv, &pane, &t.dismiss_ms);
        if let Ok(Some(s)) = child.try_wait() {
            break Some(s);
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    job.exit = status.and_then(|s| s.code()).unwrap_or(-1);
    // Let queued prompts land and late effects show (a duplicate, say).
    let exited = Instant::now();
    loop {
        w.tick(srv, &pane, &t.dismiss_ms);
        let queued = w.of("queued").count();
        let unqueued = w.of("prompt").filter(|v| v["queued"] == true).count();
        let el = exited.elapsed();
        if el >= Duration::from_millis(700) && queued <= unqueued {
            break;
        }
        if el >= Duration::from_millis(t.busy_ms + 3000) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    srv.run(&["kill-pane", "-t", &pane]);
    let stdout = std::fs::read_to_string(&out_file).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_file).unwrap_or_default();
    // Epoch ms of the first body byte and of the submit keystroke written.
    let (type_at, submit_at) = match sender {
        Sender::Promptgate | Sender::PromptgateSettle0 => {
            let rec: Value = stdout
                .lines()
                .last()
                .and_then(|l| serde_json::from_str(l).ok())
                .unwrap_or_default();
            // ms resolution: take the middle of the ms. `time_ms` is stamped as the
            // gate opens, right before typing.
            let f = |v: &Value| v.as_f64().filter(|&v| v > 0.0).map(|v| v + 0.5);
            (f(&rec["time_ms"]), f(&rec["timings"]["submit_at_ms"]))
        }
        _ => {
            let f = |k: &str| {
                stdout
                    .lines()
                    .find_map(|l| l.strip_prefix(k))
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .map(|us| us / 1000.0)
            };
            (f("type_at_us="), f("submit_at_us="))
        }
    };
    judge(
        &mut job,
        &w,
        t,
        &expected,
        pre.as_deref(),
        t0,
        (type_at, submit_at),
    );
    if job.outcome != "ok" {
        let tail: String = stderr
            .lines()
            .last()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        if !tail.is_empty() {
            job.detail = format!("{}; stderr: {tail}", job.detail);
        }
    }
    job.wall_ms = t_job.elapsed().as_secs_f64() * 1000.0;
    if !keep || job.outcome == "ok" {
        for f in [&transcript, &body_file, &out_file, &err_file] {
            let _ = std::fs::remove_file(f);
        }
    }
    job
}

/// Exactly once, byte-exact, no early submit, nothing typed into a dialog.
fn judge(
    job: &mut Job,
    w: &Watch,
    t: &Trial,
    expected: &str,
    pre: Option<&str>,
    t0: f64,
    (type_at, submit_at): (Option<f64>, Option<f64>),
) {
    let mut prompts: Vec<&Value> = w.of("prompt").collect();
    if let Some(p) = pre {
        if prompts.first().and_then(|v| v["text"].as_str()) == Some(p) {
            prompts.remove(0);
        }
    }
    let texts: Vec<&str> = prompts
        .iter()
        .map(|v| v["text"].as_str().unwrap_or(""))
        .collect();
    let into_dialog = w.of("dialog-input").count();
    let dropped = w.of("fault-dropped").count();
    let early_input = w.of("early-input").count();
    let first_at = prompts.first().and_then(|v| v["at_ms"].as_f64());
    // A prompt recorded well before the sender's submit key: the body (or part) went early.
    let before_submit = match (first_at, submit_at) {
        (Some(p), Some(s)) => p + 1.0 < s - 50.0,
        _ => false,
    };
    let split = texts.len() > 1 && texts[0] != expected && expected.starts_with(texts[0]);
    job.outcome = if texts == [expected] && into_dialog == 0 && !before_submit {
        "ok"
    } else if split || before_submit {
        "early-submit"
    } else if texts.is_empty() && into_dialog > 0 {
        "typed-into-dialog"
    } else if texts.is_empty() {
        "lost"
    } else if texts.len() > 1 {
        "duplicate"
    } else {
        "mangled"
    };
    let mut d = Vec::new();
    if job.outcome != "ok" {
        d.push(format!("{} prompt(s)", texts.len()));
        if let Some(x) = texts.first() {
            let (a, b) = (x.chars().count(), expected.chars().count());
            if *x != expected {
                let at = x
                    .chars()
                    .zip(expected.chars())
                    .take_while(|(p, q)| p == q)
                    .count();
                let near =
                    |s: &str| -> String { s.chars().skip(at.saturating_sub(4)).take(12).collect() };
                d.push(format!(
                    "got {a} chars, want {b}, first difference at char {at}: got {:?}, want {:?}",
                    near(x),
                    near(expected)
                ));
            }
        }
        if into_dialog > 0 {
            d.push(format!("{into_dialog} dialog-input"));
        }
        if dropped > 0 {
            d.push(format!("{dropped} fault-dropped reads"));
        }
        if early_input > 0 {
            d.push("early-input".into());
        }
        d.push(format!("exit {}", job.exit));
    }
    job.detail = d.join(", ");
    job.enter_into_dialog = w.sender_dismissed > 0;
    job.submit = submit_at.map(|s| s - t0);
    if job.outcome == "ok" {
        job.consumed = first_at.map(|p| p + 0.5 - t0);
        if t.start == Start::Cold {
            // The composer last (re)appeared at `shown` (first paint, the last
            // dialog closed, or gemini's banner landing and moving it down) and
            // stayed; it is first stable STABLE_MS later.
            let p = first_at.unwrap_or(f64::MAX);
            let shown = w
                .recs
                .iter()
                .filter(|v| {
                    matches!(
                        v["kind"].as_str(),
                        Some("ready" | "dialog-dismissed" | "start-jump")
                    )
                })
                .filter_map(|v| v["at_ms"].as_f64())
                .filter(|&a| a <= p)
                .fold(f64::MIN, f64::max);
            if shown > f64::MIN {
                let stable = shown + STABLE_MS;
                job.shown_consumed = first_at.map(|p| p - shown);
                job.stable_consumed = first_at.map(|p| p - stable);
                job.stable_type = type_at.map(|s| s - (stable + 0.5));
                job.stable_submit = submit_at.map(|s| s - (stable + 0.5));
            }
        }
    }
}

// ------------------------------------------------------------------ stats

fn pct(xs: &[f64], p: f64) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((p / 100.0) * v.len() as f64).ceil() as usize;
    Some(v[i.clamp(1, v.len()) - 1])
}

fn ms(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.0}")).unwrap_or_else(|| "-".into())
}

fn p50p95(xs: &[f64]) -> (String, Value) {
    let (a, b) = (pct(xs, 50.0), pct(xs, 95.0));
    (
        format!("{} / {}", ms(a), ms(b)),
        json!({"p50": a, "p95": b, "n": xs.len()}),
    )
}

// ------------------------------------------------------------------ poll cost

/// Cost of one poll: a control-mode read against a one-shot (forked) tmux client.
fn poll_cost(bin: &Path, dir: &Path, quick: bool) -> Value {
    let srv = Srv::new("poll");
    let tr = dir.join("poll.jsonl");
    let Some(pane) = srv.fake(bin, &tr, &["--like".into(), "claude".into()]) else {
        return json!({"error": "no pane"});
    };
    let mut w = Watch::new(tr);
    let until = Instant::now() + Duration::from_secs(10);
    while !w.ready && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        w.poll();
    }
    std::thread::sleep(Duration::from_millis(300));
    let server = Server::Name(srv.sock.clone());
    let mut one = Process::new(server.clone());
    let mut ctl = Control::attached(server, &pane);
    let profiles = Profiles::builtin();
    let claude = profiles.get("claude").unwrap();
    let (blocks, n_fork, n_ctl) = if quick { (5, 10, 100) } else { (10, 40, 400) };
    let (mut fork, mut cm, mut cmd) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        let _ = one.read(&pane);
        let _ = ctl.read(&pane);
    }
    for _ in 0..blocks {
        for _ in 0..n_fork {
            let t = Instant::now();
            let _ = std::hint::black_box(one.read(&pane));
            fork.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        for _ in 0..n_ctl {
            let t = Instant::now();
            let _ = std::hint::black_box(ctl.read(&pane));
            cm.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        for _ in 0..n_ctl / 4 {
            let t = Instant::now();
            if let Ok(s) = ctl.read(&pane) {
                std::hint::black_box(detect(claude, &s));
            }
            cmd.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    let st = |xs: &[f64]| {
        json!({"p50_ms": pct(xs, 50.0), "p95_ms": pct(xs, 95.0),
               "mean_ms": xs.iter().sum::<f64>() / xs.len().max(1) as f64, "n": xs.len()})
    };
    json!({
        "pane": "claude fake agent, 120x40, idle",
        "control_connected": ctl.connected(),
        "control_mode": st(&cm),
        "control_mode_plus_detect": st(&cmd),
        "forked_client": st(&fork),
    })
}

// ------------------------------------------------------------------ fan-out

fn timed_send(
    bin: &Path,
    sock: &str,
    dir: &Path,
    targets: &[String],
    extra: &[&str],
    body: &str,
) -> (f64, Value, i32) {
    let mut c = common::pg_with(bin, sock, &["send"]);
    for t in targets {
        c.args(["-t", t]);
    }
    c.args(["--wait-busy", "--json"])
        .args(extra)
        .arg(body)
        .env("PROMPTGATE_LOG", "off")
        .env("XDG_RUNTIME_DIR", dir.join("run"));
    let t = Instant::now();
    let o = c.output().expect("promptgate");
    let el = t.elapsed().as_secs_f64() * 1000.0;
    (el, common::json_out(&o), common::code(&o))
}

fn fanout(bin: &Path, dir: &Path, rounds: usize) -> Value {
    let srv = Srv::new("fanout");
    let likes = ["claude", "codex", "gemini", "opencode"];
    let mut panes = Vec::new();
    let mut watches = Vec::new();
    for i in 0..16 {
        let tr = dir.join(format!("fanout-{i}.jsonl"));
        let args: Vec<String> = [
            "--like",
            likes[i % likes.len()],
            "--busy-ms",
            "200",
            "--fault-paste-burst-ms",
            "120",
            "--fault-read-1022",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let Some(p) = srv.fake(bin, &tr, &args) else {
            return json!({"error": "no pane"});
        };
        panes.push(p);
        watches.push(Watch::new(tr));
    }
    let until = Instant::now() + Duration::from_secs(20);
    while watches.iter().any(|w| !w.ready) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        watches.iter_mut().for_each(Watch::poll);
    }
    std::thread::sleep(Duration::from_millis(600));
    let mut want: Vec<Vec<String>> = vec![Vec::new(); 16];
    let (mut single, mut fan, mut fan0) = (Vec::new(), Vec::new(), Vec::new());
    // each agent's own single sends: the slowest agent alone is the floor of
    // a fan-out to all of them (OpenCode's profile waits 150 ms between its
    // paste and Enter, Claude's 30 ms)
    let mut alone: Vec<Vec<f64>> = vec![Vec::new(); likes.len()];
    let mut failures = Vec::new();
    // Every send, single or fan-out, comes after all panes have been quiet for
    // 2.5 s: both take the same gate path (tmux's activity clock proves the
    // stillness), so the ratio is the cost of fanning out alone.
    let idle = || std::thread::sleep(Duration::from_millis(2500));
    for r in 0..rounds {
        for (k, p) in panes.iter().enumerate() {
            let body = format!("single send, round {r}, pane {k}");
            let (el, v, code) =
                timed_send(bin, &srv.sock, dir, std::slice::from_ref(p), &[], &body);
            if code != 0 {
                failures.push(format!("single {p}: exit {code} {v}"));
            }
            single.push(el);
            alone[k % likes.len()].push(el);
            want[k].push(body);
        }
        idle();
        for (label, extra, acc) in [
            ("fan-out", &[][..], &mut fan),
            ("fan-out --stagger 0", &["--stagger", "0"][..], &mut fan0),
        ] {
            let body = format!("{label}, round {r}: run the tests and report");
            let (el, v, code) = timed_send(bin, &srv.sock, dir, &panes, extra, &body);
            if code != 0 || v["summary"]["consumed"] != 16 {
                failures.push(format!("{label} round {r}: exit {code} {}", v["summary"]));
            }
            acc.push(el);
            want.iter_mut().for_each(|w| w.push(body.clone()));
            idle();
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let crashed = !srv.alive();
    let mut exact = 0;
    for (k, w) in watches.iter_mut().enumerate() {
        w.poll();
        let got: Vec<&str> = w
            .of("prompt")
            .map(|v| v["text"].as_str().unwrap_or(""))
            .collect();
        if got == want[k] {
            exact += 1;
        } else {
            failures.push(format!(
                "pane {}: {} prompts, want {}",
                panes[k],
                got.len(),
                want[k].len()
            ));
        }
    }
    let s50 = pct(&single, 50.0).unwrap_or(0.0);
    let f50 = pct(&fan, 50.0).unwrap_or(0.0);
    let z50 = pct(&fan0, 50.0).unwrap_or(0.0);
    let each: serde_json::Map<String, Value> = likes
        .iter()
        .zip(&alone)
        .map(|(l, a)| (l.to_string(), json!(pct(a, 50.0))))
        .collect();
    let w50 = alone
        .iter()
        .filter_map(|a| pct(a, 50.0))
        .fold(0.0_f64, f64::max);
    json!({
        "panes": 16, "rounds": rounds, "agents": "claude/codex/gemini/opencode round-robin, paste-burst and read-1022 faults on",
        "command": "promptgate send -t P1 ... -t P16 --wait-busy --json BODY (default --stagger 2)",
        "single_ms": {"p50": s50, "p95": pct(&single, 95.0), "n": single.len()},
        "fanout_ms": {"p50": f50, "max": pct(&fan, 100.0), "n": fan.len()},
        "fanout_stagger0_ms": {"p50": z50, "max": pct(&fan0, 100.0), "n": fan0.len()},
        "single_p50_by_agent_ms": each,
        "slowest_agent_alone_p50_ms": w50,
        "ratio": f50 / s50.max(1e-9),
        "ratio_slowest_alone": f50 / w50.max(1e-9),
        "ratio_stagger0": z50 / s50.max(1e-9),
        "panes_exact": exact,
        "failures": failures,
        "server_crashed": crashed,
    })
}

// ------------------------------------------------------------------ machine

fn sh(cmd: &str) -> String {
    Command::new("sh")
        .args(["-c", cmd])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn machine() -> Value {
    json!({
        "nproc": sh("nproc"),
        "uname": sh("uname -a"),
        "tmux": sh("tmux -V"),
        "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'"),
        "loadavg_start": sh("cut -d' ' -f1-3 /proc/loadavg"),
    })
}

// ------------------------------------------------------------------ main

struct Opts {
    quick: bool,
    trials: usize,
    parallel: usize,
    seed: u64,
    out: PathBuf,
    fanout_rounds: usize,
    settle0: bool,
    keep: Option<PathBuf>,
    only: Option<Vec<usize>>,
    repeat: usize,
}

fn opts() -> Opts {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let mut o = Opts {
        quick,
        trials: if quick { 40 } else { 1000 },
        parallel: 24,
        seed: 20_240_601,
        out: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench/senders.json"),
        fanout_rounds: if quick { 2 } else { 5 },
        settle0: true,
        keep: None,
        only: None,
        repeat: 1,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().unwrap_or_default();
        match a.as_str() {
            "--quick" | "--bench" | "--test" => {}
            "--trials" => o.trials = val().parse().expect("--trials N"),
            "--parallel" => o.parallel = val().parse().expect("--parallel N"),
            "--seed" => o.seed = val().parse().expect("--seed N"),
            "--out" => o.out = PathBuf::from(val()),
            "--fanout-rounds" => o.fanout_rounds = val().parse().expect("--fanout-rounds N"),
            "--no-settle0" => o.settle0 = false,
            "--keep" => o.keep = Some(PathBuf::from(val())),
            "--only" => {
                o.only = Some(
                    val()
                        .split(',')
                        .map(|x| x.trim().parse().expect("--only N[,N...]"))
                        .collect(),
                )
            }
            "--repeat" => o.repeat = val().parse::<usize>().expect("--repeat N").max(1),
            other => {
                eprintln!("senders bench: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    o.parallel = o.parallel.max(1);
    o
}

fn main() {
    if std::env::args().any(|a| a == "--test") {
        println!("senders bench: skipped under cargo test (run scripts/bench.sh)");
        return;
    }
    let o = opts();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_promptgate"));
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("senders bench: tmux is not installed; skipping");
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = o.keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).unwrap();
    // A private copy of the binary: a rebuild in the tree during the run cannot swap it.
    let bin = {
        let d = tmp.path().join("bin");
        std::fs::create_dir_all(&d).unwrap();
        let copy = d.join("promptgate");
        std::fs::copy(&bin, &copy).expect("copy the promptgate binary");
        copy
    };
    let started = Instant::now();
    let mut meta = machine();
    meta["command"] = format!(
        "scripts/bench.sh{} (seed {}, {} trials, {} panes at a time)",
        if o.quick { " --quick" } else { "" },
        o.seed,
        o.trials,
        o.parallel
    )
    .into();
    meta["build"] = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
    .into();
    eprintln!(
        "senders bench: {} trials x senders, {} at a time, seed {}; transcripts in {} \
         (1,000 trials take about 15 minutes on 2 cores; --quick about one)",
        o.trials,
        o.parallel,
        o.seed,
        dir.display()
    );

    eprintln!("senders bench: poll cost ...");
    let poll = poll_cost(&bin, &dir, o.quick);

    let fixed_sleep = dir.join("fixed-sleep.sh");
    let telepty = dir.join("telepty-gate.sh");
    std::fs::write(&fixed_sleep, FIXED_SLEEP_SH).unwrap();
    std::fs::write(&telepty, TELEPTY_SH).unwrap();
    let ctx = Ctx {
        bin: bin.clone(),
        dir: dir.clone(),
        srv: RwLock::new(Arc::new(Srv::new("trials0"))),
        gen: AtomicUsize::new(0),
        crashes: Mutex::new(Vec::new()),
        fixed_sleep,
        telepty,
    };
    let ids: Vec<usize> = match &o.only {
        Some(v) => v.clone(),
        None => (0..o.trials).collect(),
    };
    let trials: Vec<Trial> = (0..o.repeat)
        .flat_map(|_| ids.iter())
        .enumerate()
        .map(|(run, &id)| Trial::new(o.seed, id, run))
        .collect();
    let mut queue: VecDeque<(usize, Sender, u32)> = VecDeque::new();
    for t in &trials {
        for s in [Sender::Promptgate, Sender::FixedSleep, Sender::Telepty] {
            queue.push_back((t.run, s, 0));
        }
        if o.settle0 && t.start == Start::Cold {
            queue.push_back((t.run, Sender::PromptgateSettle0, 0));
        }
    }
    let total = queue.len();
    let queue = Mutex::new(queue);
    let done = AtomicUsize::new(0);
    let rerun = AtomicUsize::new(0);
    let results: Mutex<Vec<Job>> = Mutex::new(Vec::new());
    let keep = o.keep.is_some();
    let t_trials = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..o.parallel {
            s.spawn(|| loop {
                let Some((tid, sender, tries)) = queue.lock().unwrap().pop_front() else {
                    break;
                };
                let (srv, gen) = ctx.current();
                let mut j = run_job(&ctx, &srv, &trials[tid], sender, tries, keep);
                if !srv.alive() {
                    // Not the sender's doing: the server crashed under it. Run it again.
                    ctx.restart(gen, done.load(Ordering::SeqCst));
                    if tries < 3 {
                        rerun.fetch_add(1, Ordering::SeqCst);
                        queue.lock().unwrap().push_back((tid, sender, tries + 1));
                        continue;
                    }
                    j.outcome = "harness-error";
                    j.detail =
                        format!("the tmux server crashed {} times under this job", tries + 1);
                }
                if j.outcome != "ok" && sender == Sender::Promptgate {
                    eprintln!(
                        "  promptgate FAILED trial {tid}: {} ({}) knobs {}",
                        j.outcome,
                        j.detail,
                        trials[tid].knobs()
                    );
                }
                results.lock().unwrap().push(j);
                let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                if n.is_multiple_of(50) || n == total {
                    eprintln!("  [{n}/{total}] {:.0} s", t_trials.elapsed().as_secs_f64());
                }
            });
        }
    });
    let trials_s = t_trials.elapsed().as_secs_f64();
    let mut jobs = results.into_inner().unwrap();
    jobs.sort_by_key(|j| (j.trial, j.sender));
    meta["tmux_server_crashes"] = ctx.crashes.lock().unwrap().clone().into();
    meta["jobs_rerun_after_a_crash"] = rerun.load(Ordering::SeqCst).into();
    drop(ctx);

    eprintln!("senders bench: fan-out ...");
    let mut fan = if o.fanout_rounds > 0 {
        fanout(&bin, &dir, o.fanout_rounds)
    } else {
        json!({"skipped": true})
    };
    for _ in 0..2 {
        if fan["server_crashed"] != true {
            break;
        }
        eprintln!("  the fan-out's tmux server died; once more on a fresh one");
        fan = fanout(&bin, &dir, o.fanout_rounds);
    }
    meta["loadavg_end"] = sh("cut -d' ' -f1-3 /proc/loadavg").into();
    meta["trials_seconds"] = trials_s.round().into();
    meta["total_seconds"] = started.elapsed().as_secs_f64().round().into();

    let report = report(&o, &trials, &jobs, &poll, &fan, meta);
    println!("{}", report.0);
    if let Some(d) = o.out.parent() {
        let _ = std::fs::create_dir_all(d);
    }
    std::fs::write(&o.out, serde_json::to_string_pretty(&report.1).unwrap()).unwrap();
    std::fs::write(o.out.with_extension("md"), &report.0).unwrap();
    eprintln!(
        "senders bench: JSON written to {} (the table also to {})",
        o.out.display(),
        o.out.with_extension("md").display()
    );
}

const OUTCOMES: [&str; 6] = [
    "lost",
    "duplicate",
    "early-submit",
    "mangled",
    "typed-into-dialog",
    "harness-error",
];

const SENDERS: [Sender; 4] = [
    Sender::Promptgate,
    Sender::FixedSleep,
    Sender::Telepty,
    Sender::PromptgateSettle0,
];

/// The markdown table and the same as JSON, section by section.
fn report(
    o: &Opts,
    trials: &[Trial],
    jobs: &[Job],
    poll: &Value,
    fan: &Value,
    meta: Value,
) -> (String, Value) {
    let mut r = Report {
        o,
        trials,
        jobs,
        md: String::new(),
        js: json!({"meta": meta, "seed": o.seed, "trials": trials.len(), "quick": o.quick}),
    };
    r.reliability();
    r.by_condition();
    let lat = r.latency();
    r.cold_by_agent();
    r.warm_by_idle();
    r.scale(poll, fan);
    r.verdicts(&lat, poll, fan);
    r.failures();
    (r.md, r.js)
}

/// The report as it is written: the markdown and the same as JSON.
struct Report<'a> {
    o: &'a Opts,
    trials: &'a [Trial],
    jobs: &'a [Job],
    md: String,
    js: Value,
}

impl Report<'_> {
    /// The machine, the run, and how many prompts each sender landed.
    fn reliability(&mut self) {
        let Report { jobs, md, js, .. } = self;
        let of = |s: Sender| jobs.iter().filter(move |j| j.sender == s);
        let senders = SENDERS;
        md.push_str(&format!(
            "Machine: {} cores, {}; {}; {}\nRun: {}; trials {:.0} s, total {:.0} s; load average {} at start, {} at end\n\n",
            js["meta"]["nproc"].as_str().unwrap_or("?"),
            js["meta"]["cpu"].as_str().unwrap_or("?"),
            js["meta"]["tmux"].as_str().unwrap_or("?"),
            js["meta"]["uname"].as_str().unwrap_or("?"),
            js["meta"]["command"].as_str().unwrap_or("?"),
            js["meta"]["trials_seconds"].as_f64().unwrap_or(0.0),
            js["meta"]["total_seconds"].as_f64().unwrap_or(0.0),
            js["meta"]["loadavg_start"].as_str().unwrap_or("?"),
            js["meta"]["loadavg_end"].as_str().unwrap_or("?"),
        ));
        let crashes = js["meta"]["tmux_server_crashes"]
            .as_array()
            .map_or(0, Vec::len);
        md.push_str(&format!(
            "tmux server crashes during the trials: {crashes} (each time a fresh server was started and the {} jobs in flight were run again)\n\n",
            js["meta"]["jobs_rerun_after_a_crash"]
        ));
        md.push_str("Reliability: landed = exactly once, byte-exact (after sanitise), no early submit, nothing typed into a dialog. The last column (not part of landed) counts the trials where the sender itself pressed Enter on a dialog, accepting it\n\n");
        md.push_str("| sender | trials | landed | rate | lost | duplicate | early submit | mangled | typed into dialog | harness error | pressed Enter on a dialog |\n");
        md.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        let mut rel = serde_json::Map::new();
        for s in senders {
            let n = of(s).count();
            if n == 0 {
                continue;
            }
            let ok = of(s).filter(|j| j.outcome == "ok").count();
            let mut row = format!(
                "| {} | {n} | {ok} | {:.1}% |",
                s.name(),
                100.0 * ok as f64 / n as f64
            );
            let mut m = serde_json::Map::new();
            for k in OUTCOMES {
                let c = of(s).filter(|j| j.outcome == k).count();
                row.push_str(&format!(" {c} |"));
                m.insert(k.into(), c.into());
            }
            let dialog_enter = of(s).filter(|j| j.enter_into_dialog).count();
            row.push_str(&format!(" {dialog_enter} |"));
            md.push_str(&row);
            md.push('\n');
            rel.insert(
                s.key().into(),
                json!({"trials": n, "landed": ok, "rate": ok as f64 / n as f64, "failures": m,
                       "pressed_enter_on_a_dialog": dialog_enter}),
            );
        }
        js["reliability"] = rel.into();
    }

    /// Landed, by the condition a trial had.
    fn by_condition(&mut self) {
        let Report {
            trials,
            jobs,
            md,
            js,
            ..
        } = self;
        let of = |s: Sender| jobs.iter().filter(move |j| j.sender == s);
        md.push_str(
            "\nLanded, by condition (trials with that condition; same trials for each sender)\n\n",
        );
        md.push_str("| condition | trials | promptgate | fixed-sleep | telepty-gate |\n|---|---:|---:|---:|---:|\n");
        type Cond = (String, Box<dyn Fn(&Trial) -> bool>);
        let mut conds: Vec<Cond> = vec![
            ("all".into(), Box::new(|_| true)),
            (
                "cold (send at launch)".into(),
                Box::new(|t| t.start == Start::Cold),
            ),
            ("warm (idle)".into(), Box::new(|t| t.start == Start::Warm)),
            ("warm, busy".into(), Box::new(|t| t.start == Start::Busy)),
            ("start-up dialog".into(), Box::new(|t| t.dialog.is_some())),
            ("late dialog".into(), Box::new(|t| t.late_dialog.is_some())),
            ("flicker".into(), Box::new(|t| t.flicker > 0)),
            ("1022-byte read loss".into(), Box::new(|t| t.read_1022)),
            (
                "120 ms paste-burst Enter".into(),
                Box::new(|t| t.paste_burst),
            ),
            (
                "Enter lost before paint".into(),
                Box::new(|t| t.early_enter_lost),
            ),
        ];
        for b in BODIES {
            conds.push((format!("body: {b}"), Box::new(move |t| t.body_kind == b)));
        }
        for l in ["claude", "codex", "gemini", "opencode"] {
            conds.push((format!("agent: {l}"), Box::new(move |t| t.like == l)));
        }
        let mut bycond = Vec::new();
        for (name, f) in &conds {
            let ids: Vec<usize> = trials.iter().filter(|t| f(t)).map(|t| t.run).collect();
            let mut row = format!("| {name} | {} |", ids.len());
            let mut v = json!({"condition": name, "trials": ids.len()});
            for s in [Sender::Promptgate, Sender::FixedSleep, Sender::Telepty] {
                let n = of(s)
                    .filter(|j| ids.binary_search(&j.trial).is_ok())
                    .count();
                let ok = of(s)
                    .filter(|j| j.outcome == "ok" && ids.binary_search(&j.trial).is_ok())
                    .count();
                let r = if n > 0 {
                    100.0 * ok as f64 / n as f64
                } else {
                    0.0
                };
                row.push_str(&format!(" {r:.1}% |"));
                v[s.key()] = json!({"landed": ok, "of": n});
            }
            md.push_str(&row);
            md.push('\n');
            bycond.push(v);
        }
        js["by_condition"] = bycond.into();
    }

    /// Latency of the trials that landed, per sender; the table, also for the verdicts.
    fn latency(&mut self) -> serde_json::Map<String, Value> {
        let Report { jobs, md, js, .. } = self;
        let of = |s: Sender| jobs.iter().filter(move |j| j.sender == s);
        let senders = SENDERS;
        md.push_str("\nLatency, ms, p50 / p95, over the trials that landed. `submit`: invocation to the submit keystroke written; `consumed`: invocation to the agent's prompt record; `after shown`: from the moment the composer last appeared (first paint, or the last dialog closed) and stayed; `after stable`: from the moment it had then held still for 100 ms (first stable)\n\n");
        md.push_str("| sender | warm: submit | warm: consumed | warm busy: consumed | cold: submit | cold: consumed | cold: consumed after shown | cold: typing after stable | cold: submit after stable | cold: consumed after stable |\n");
        md.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        let mut lat = serde_json::Map::new();
        for s in senders {
            if of(s).count() == 0 {
                continue;
            }
            let col = |st: Start, f: fn(&Job) -> Option<f64>| -> Vec<f64> {
                of(s)
                    .filter(|j| j.start == st && j.outcome == "ok")
                    .filter_map(f)
                    .collect()
            };
            let cells = [
                ("warm_submit", col(Start::Warm, |j| j.submit)),
                ("warm_consumed", col(Start::Warm, |j| j.consumed)),
                ("busy_consumed", col(Start::Busy, |j| j.consumed)),
                ("cold_submit", col(Start::Cold, |j| j.submit)),
                ("cold_consumed", col(Start::Cold, |j| j.consumed)),
                (
                    "cold_consumed_after_shown",
                    col(Start::Cold, |j| j.shown_consumed),
                ),
                (
                    "cold_type_after_stable",
                    col(Start::Cold, |j| j.stable_type),
                ),
                (
                    "cold_submit_after_stable",
                    col(Start::Cold, |j| j.stable_submit),
                ),
                (
                    "cold_consumed_after_stable",
                    col(Start::Cold, |j| j.stable_consumed),
                ),
            ];
            let mut row = format!("| {} |", s.name());
            let mut m = serde_json::Map::new();
            for (k, xs) in cells {
                let (txt, v) = p50p95(&xs);
                row.push_str(&format!(" {txt} |"));
                m.insert(k.into(), v);
            }
            md.push_str(&row);
            md.push('\n');
            lat.insert(s.key().into(), m.into());
        }
        js["latency_ms"] = lat.clone().into();
        lat
    }

    /// Cold latency by agent: each profile has its own start-up settle window.
    fn cold_by_agent(&mut self) {
        let Report {
            trials,
            jobs,
            md,
            js,
            ..
        } = self;
        let of = |s: Sender| jobs.iter().filter(move |j| j.sender == s);
        let senders = SENDERS;
        md.push_str("\nCold: consumed after the prompt was first stable, by agent look, ms, p50 / p95, over the trials that landed\n\n| sender | claude | codex | gemini | opencode |\n|---|---:|---:|---:|---:|\n");
        let mut cold_by = serde_json::Map::new();
        for s in senders {
            if of(s).filter(|j| j.start == Start::Cold).count() == 0 {
                continue;
            }
            let mut row = format!("| {} |", s.name());
            let mut m = serde_json::Map::new();
            for like in ["claude", "codex", "gemini", "opencode"] {
                let xs: Vec<f64> = of(s)
                    .filter(|j| j.start == Start::Cold && j.outcome == "ok")
                    .filter(|j| trials[j.trial].like == like)
                    .filter_map(|j| j.stable_consumed)
                    .collect();
                let (txt, v) = p50p95(&xs);
                row.push_str(&format!(" {txt} |"));
                m.insert(like.into(), v);
            }
            md.push_str(&row);
            md.push('\n');
            cold_by.insert(s.key().into(), m.into());
        }
        js["cold_after_stable_by_agent_ms"] = cold_by.into();
    }

    /// Warm latency by how long the agent had been idle.
    fn warm_by_idle(&mut self) {
        let Report {
            trials,
            jobs,
            md,
            js,
            ..
        } = self;
        let of = |s: Sender| jobs.iter().filter(move |j| j.sender == s);
        let senders = SENDERS;
        // Warm latency by how long the agent had been idle: tmux's activity clock
        // (one-second grain) proves stillness only from about 2 s of quiet.
        md.push_str("\nWarm latency by how long the agent had been idle when the send was issued (drawn per trial, 0.4-4 s), ms, p50 / p95, over the trials that landed\n\n");
        md.push_str("| sender | idle < 2 s: trials | submit | consumed | idle >= 2 s: trials | submit | consumed |\n|---|---:|---:|---:|---:|---:|---:|\n");
        let mut by_idle = serde_json::Map::new();
        for s in senders {
            if of(s).filter(|j| j.start == Start::Warm).count() == 0 {
                continue;
            }
            let mut row = format!("| {} |", s.name());
            let mut m = serde_json::Map::new();
            for (key, long) in [("idle_under_2s", false), ("idle_2s_or_more", true)] {
                let ok: Vec<&Job> = of(s)
                    .filter(|j| j.start == Start::Warm && j.outcome == "ok")
                    .filter(|j| (trials[j.trial].idle_ms >= 2000) == long)
                    .collect();
                let sub: Vec<f64> = ok.iter().filter_map(|j| j.submit).collect();
                let con: Vec<f64> = ok.iter().filter_map(|j| j.consumed).collect();
                let (ts, vs) = p50p95(&sub);
                let (tc, vc) = p50p95(&con);
                row.push_str(&format!(" {} | {ts} | {tc} |", ok.len()));
                m.insert(
                    key.into(),
                    json!({"trials": ok.len(), "submit": vs, "consumed": vc}),
                );
            }
            md.push_str(&row);
            md.push('\n');
            by_idle.insert(s.key().into(), m.into());
        }
        js["warm_latency_by_idle_ms"] = by_idle.into();
    }

    /// The fan-out and the cost of one poll.
    fn scale(&mut self, poll: &Value, fan: &Value) {
        let Report { md, js, .. } = self;
        md.push_str(&format!(
            "\nFan-out, one prompt to 16 panes (median of {} rounds): one pane {} ms, 16 panes {} ms = {:.2}x (with --stagger 0: {} ms = {:.2}x); against the slowest agent alone ({} ms): {:.2}x; panes byte-exact {}/16\n",
            fan["rounds"], ms(fan["single_ms"]["p50"].as_f64()), ms(fan["fanout_ms"]["p50"].as_f64()),
            fan["ratio"].as_f64().unwrap_or(0.0), ms(fan["fanout_stagger0_ms"]["p50"].as_f64()),
            fan["ratio_stagger0"].as_f64().unwrap_or(0.0),
            ms(fan["slowest_agent_alone_p50_ms"].as_f64()),
            fan["ratio_slowest_alone"].as_f64().unwrap_or(0.0), fan["panes_exact"],
        ));
        let pm = |k: &str, f: &str| {
            poll[k][f]
                .as_f64()
                .map(|v| format!("{v:.3}"))
                .unwrap_or("-".into())
        };
        md.push_str(&format!(
            "\nOne poll (display + capture of a 120x40 pane), ms: control mode p50 {} p95 {} (with detect p50 {}); forked client p50 {} p95 {}\n",
            pm("control_mode", "p50_ms"), pm("control_mode", "p95_ms"), pm("control_mode_plus_detect", "p50_ms"),
            pm("forked_client", "p50_ms"), pm("forked_client", "p95_ms"),
        ));
        js["fanout"] = fan.clone();
        js["poll"] = poll.clone();
    }

    /// Each target against what was measured.
    fn verdicts(&mut self, lat: &serde_json::Map<String, Value>, poll: &Value, fan: &Value) {
        let Report {
            o, jobs, md, js, ..
        } = self;
        let of = |s: Sender| jobs.iter().filter(move |j| j.sender == s);
        let pm = |k: &str, f: &str| {
            poll[k][f]
                .as_f64()
                .map(|v| format!("{v:.3}"))
                .unwrap_or("-".into())
        };
        let l = |s: &str, k: &str, p: &str| lat.get(s).and_then(|v| v[k][p].as_f64());
        let pg_rate = js["reliability"]["promptgate"]["rate"]
            .as_f64()
            .unwrap_or(0.0);
        let n_min = [Sender::Promptgate, Sender::FixedSleep, Sender::Telepty]
            .iter()
            .map(|&s| of(s).count())
            .min()
            .unwrap_or(0);
        let mut verdicts = Vec::new();
        let mut verdict = |target: String, measured: String, met: bool, miss: String| {
            verdicts
                .push(json!({"target": target, "measured": measured, "met": met, "miss": miss}));
        };
        verdict(
            "at least 1,000 trials per sender".into(),
            format!("{n_min}"),
            n_min >= 1000,
            if n_min >= 1000 {
                String::new()
            } else {
                format!(
                    "{} short{}",
                    1000 - n_min,
                    if o.quick { " (--quick)" } else { "" }
                )
            },
        );
        verdict(
            "promptgate lands 100%".into(),
            format!("{:.2}%", 100.0 * pg_rate),
            pg_rate >= 1.0,
            format!(
                "{} failed",
                of(Sender::Promptgate).filter(|j| j.outcome != "ok").count()
            ),
        );
        for (what, k) in [("submit", "warm_submit"), ("consumed", "warm_consumed")] {
            for (base, bkey, f) in [
                ("fixed-sleep", "fixed_sleep", 0.25),
                ("telepty-gate", "telepty_gate", 0.4),
            ] {
                let (a, b) = (l("promptgate", k, "p50"), l(bkey, k, "p50"));
                if let (Some(a), Some(b)) = (a, b) {
                    let lim = f * b;
                    verdict(
                        format!("warm p50 to {what} <= {f}x {base}'s"),
                        format!("{a:.0} ms vs {b:.0} ms = {:.2}x (limit {lim:.0} ms)", a / b),
                        a <= lim,
                        if a <= lim {
                            String::new()
                        } else {
                            format!("{:.0} ms over ({:.2}x the limit)", a - lim, a / lim)
                        },
                    );
                }
            }
        }
        for (s, label) in [
            ("promptgate", "promptgate"),
            ("promptgate_settle0", "promptgate --settle 0"),
        ] {
            if let (Some(a), Some(b), Some(c)) = (
                l(s, "cold_consumed_after_stable", "p50"),
                l(s, "cold_consumed_after_stable", "p95"),
                l(s, "cold_consumed_after_shown", "p50"),
            ) {
                // p50, as the warm target; the p95 gets a row of its own.
                verdict(
                    format!("cold: {label} delivered (consumed) within 150 ms after the prompt is first stable, p50"),
                    format!("p50 {a:.0} ms (after first shown: {c:.0} ms)"),
                    a <= 150.0,
                    if a <= 150.0 { String::new() } else { format!("{:.0} ms over", a - 150.0) },
                );
                verdict(
                    format!("cold: {label}, the same at p95"),
                    format!("p95 {b:.0} ms"),
                    b <= 150.0,
                    if b <= 150.0 {
                        String::new()
                    } else {
                        format!("{:.0} ms over", b - 150.0)
                    },
                );
            }
        }
        let ratio = fan["ratio"].as_f64().unwrap_or(f64::MAX);
        let floor = fan["ratio_slowest_alone"].as_f64().unwrap_or(f64::MAX);
        verdict(
            "fan-out to 16 panes <= 1.5x one pane".into(),
            format!("{ratio:.2}x ({floor:.2}x the slowest of its agents alone)"),
            ratio <= 1.5,
            if ratio <= 1.5 {
                String::new()
            } else {
                format!(
                    "{:.2}x over ({:.0} ms over 1.5x)",
                    ratio - 1.5,
                    fan["fanout_ms"]["p50"].as_f64().unwrap_or(0.0)
                        - 1.5 * fan["single_ms"]["p50"].as_f64().unwrap_or(0.0)
                )
            },
        );
        let cp = poll["control_mode"]["p50_ms"].as_f64().unwrap_or(f64::MAX);
        verdict(
            "control-mode poll <= 0.3 ms".into(),
            format!(
                "p50 {cp:.3} ms (forked client p50 {} ms)",
                pm("forked_client", "p50_ms")
            ),
            cp <= 0.3,
            if cp <= 0.3 {
                String::new()
            } else {
                format!("{:.3} ms over", cp - 0.3)
            },
        );
        md.push_str("\nTargets\n\n| target | measured | verdict |\n|---|---|---|\n");
        for v in &verdicts {
            md.push_str(&format!(
                "| {} | {} | {} |\n",
                v["target"].as_str().unwrap_or(""),
                v["measured"].as_str().unwrap_or(""),
                if v["met"] == true {
                    "met".to_string()
                } else {
                    format!("MISSED: {}", v["miss"].as_str().unwrap_or(""))
                }
            ));
        }
        js["verdicts"] = verdicts.into();
    }

    /// promptgate's failures in full, and every job and trial as JSON.
    fn failures(&mut self) {
        let Report {
            trials,
            jobs,
            md,
            js,
            ..
        } = self;
        // Failures of promptgate, in full; the baselines' as counts above and rows below.
        let fails: Vec<Value> = jobs
            .iter()
            .filter(|j| j.outcome != "ok" && matches!(j.sender, Sender::Promptgate | Sender::PromptgateSettle0))
            .map(|j| json!({"sender": j.sender.name(), "outcome": j.outcome, "detail": j.detail, "knobs": trials[j.trial].knobs()}))
            .collect();
        if !fails.is_empty() {
            md.push_str("\npromptgate failures\n\n");
            for f in &fails {
                md.push_str(&format!(
                    "- {} {}: {} ({}); {}\n",
                    f["sender"].as_str().unwrap_or(""),
                    f["knobs"]["trial"],
                    f["outcome"].as_str().unwrap_or(""),
                    f["detail"].as_str().unwrap_or(""),
                    f["knobs"]
                ));
            }
        }
        js["promptgate_failures"] = fails.into();
        js["jobs"] = jobs
            .iter()
            .map(|j| json!({"trial": j.trial, "sender": j.sender.key(), "start": j.start.name(), "outcome": j.outcome,
                "detail": j.detail, "exit": j.exit, "submit_ms": j.submit, "consumed_ms": j.consumed,
                "after_stable_type_ms": j.stable_type, "after_stable_submit_ms": j.stable_submit, "after_stable_consumed_ms": j.stable_consumed, "after_shown_consumed_ms": j.shown_consumed, "enter_into_dialog": j.enter_into_dialog, "wall_ms": j.wall_ms.round()}))
            .collect::<Vec<_>>()
            .into();
        js["trial_knobs"] = trials.iter().map(Trial::knobs).collect::<Vec<_>>().into();
    }
}
