//! Real turns (issue 26): the real agents talk to a scripted local model
//! (`scripts/model.sh`: a pinned `@copilotkit/aimock` on a free 127.0.0.1 port
//! with the fixtures of `tests/model/`), so that their turns stream, finish,
//! fail and ask for approval as they do for users. One test per agent, at
//! 120x40, in the release column `PROMPTGATE_REAL_RELEASE` picks (newest or
//! previous, scripts/real-agents.versions). Ignored unless asked for:
//!
//! ```text
//! scripts/real-agents.sh install claude codex gemini copilot && scripts/model.sh install
//! PROMPTGATE_REAL_AGENTS=1 cargo test --test real_turns -- --include-ignored --nocapture --test-threads=1
//! ```
//!
//! Each test, on the real agent:
//! - `send --until-done` of a prompt the model answers at once: the receipt's
//!   turn is done and the answer is on the screen;
//! - (c) a second one: promptgate exits after the model's answer (its request in
//!   aimock's journal; the answer is one burst) and well before the old fixed 3 s
//!   start grace would have let it (bound 2.5 s; the measured figure is a `REPORT`
//!   line: the issue's 500 ms goal is met on an idle machine, not under load);
//! - (b) during a reply that streams for ~12 s, a send is refused busy (22), nothing
//!   of it reaches the agent's record or the screen; `send --wait-busy` lands once,
//!   its request reaching the model only after the streamed reply's last content
//!   chunk;
//! - (d) Claude Code: a forced send during a stream is `queued` (31) when the
//!   verify ends first, and `consumed` with exact proof once it runs when it waits;
//!   the other agents that park a prompt sent while they work (Gemini, Copilot,
//!   OpenCode, Kilo, Qwen before 0.24): a forced send during the long stream is
//!   `consumed` with exact proof once the agent runs it, its evidence
//!   `verify.left-the-queue` (the queue marker seen first), and in its record
//!   once (their `queued` receipt on each real capture: `tests/suite/fixtures.rs`);
//! - (e) the watcher (`watch --notify`) shows one done message for one turn;
//! - (a) the model answers with a shell tool call `rm -r pg-marker`: the agent's
//!   approval dialog shows (`state` = `dialog:permission`), a send of `1` into it
//!   is refused (21) and the screen stays as it was; after Escape the marker
//!   folder is still there: the command never ran.
//! - (f) the same for a file write (claude, codex, gemini, copilot): refused (21),
//!   the screen as it was, and after Escape the file does not exist.
//!
//! The model and each agent are stopped by PID (also from Drop guards). Lines
//! starting with `REPORT` are the measured results (docs/real-turns.md).

mod common;
use common::{code, json_out, text};
use serde_json::Value;
use std::process::Output;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::real::{Agent, Model};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

impl Model {
    /// The times of the requests that the fixture matching `key` answered, from
    /// `since` (ms) on. The journal's copy of a large request can leave its messages
    /// out (qwen's): the matched fixture says which prompt it carried.
    fn answered(&self, key: &str, since: u64) -> Vec<u64> {
        self.journal()
            .iter()
            .filter(|e| e["response"]["fixture"]["match"]["userMessage"].as_str() == Some(key))
            // not a turn: the conversation's title, asked for on the side (Kilo
            // 7.7.7 asks after the first turn, quoting its prompt)
            .filter(|e| {
                !e["body"]
                    .to_string()
                    .contains("Generate a title for this conversation")
            })
            .filter_map(|e| e["timestamp"].as_u64())
            .filter(|t| *t >= since)
            .collect()
    }
}

impl Agent {
    /// `promptgate send BODY EXTRA… --json`: (exit code, receipt).
    fn send(&self, body: &str, extra: &[&str]) -> (i32, Value, Output) {
        let mut args = vec!["send", "-t", &self.pane, "--json", "--timeout", "60"];
        args.extend_from_slice(extra);
        args.push(body);
        let o = self.pg(&args);
        (code(&o), json_out(&o), o)
    }

    fn send_ok(&self, body: &str, extra: &[&str]) -> Value {
        let (c, r, o) = self.send(body, extra);
        assert_eq!(
            (c, r["receipt"].as_str()),
            (0, Some("consumed")),
            "{} {}: send {body:?} {extra:?}: {}\n{r}\n{}",
            self.name,
            self.version,
            text(&o.stderr),
            self.capture()
        );
        r
    }
}

/// How many times `body` is in the record.
fn count(records: &[String], body: &str) -> usize {
    records.iter().filter(|m| m.trim_end() == body).count()
}

/// Send `prompt` (the model answers with a tool call), wait for the agent's
/// approval dialog, and check that a send of `1` into it is refused (21) with
/// the screen as it was half a second later, each row compared through `calm`
/// (what the dialog animates by itself).
fn refused_in_dialog(a: &Agent, prompt: &str, what: &str, calm: impl Fn(&str) -> String) {
    let name = a.name;
    a.send_ok(prompt, &[]);
    a.wait_state("dialog:permission", 60);
    // the dialog may be read while the agent still draws it (copilot 1.0.102 in
    // CI: its transcript and scrollbar above the box still moving): the screen
    // before is the one that held still for half a second (through `calm`)
    let rows = |s: &str| s.lines().map(&calm).collect::<Vec<_>>();
    let mut before = a.capture();
    let t0 = std::time::Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let again = a.capture();
        if rows(&again) == rows(&before) || t0.elapsed() > Duration::from_secs(10) {
            break;
        }
        before = again;
    }
    let (c, r, o) = a.send("1", &[]);
    assert_eq!(
        c,
        21,
        "{name}: a send into {what}: {}\n{r}",
        text(&o.stderr)
    );
    std::thread::sleep(Duration::from_millis(500));
    let still = a.capture();
    assert_eq!(
        rows(&before),
        rows(&still),
        "{name}: the screen changed after the refused send\n{still}"
    );
}

fn real_turns(name: &'static str) {
    let model = Model::start();
    let mut a = Agent::start(name, &model);

    // codex's start-up shows busy (its title spinner) while it reaches the model
    a.wait_ready_held(60, 1500);

    // (d) a finished turn's answer is on screen (the first turn after the start
    // also carries the agent's own start-up work: codex 0.171.0 in CI spun its
    // title again after the ready look, so the first send waits out a busy)
    a.send_ok("pg-quick: the first turn", &["--until-done", "--wait-busy"]);
    let screen = a.capture();
    assert!(
        screen.contains("PG-QUICK-ANSWER"),
        "{name}: the finished turn's answer is not on screen\n{screen}"
    );

    // (c) a turn the model answers at once: --until-done ends soon after it
    let quick = "pg-quick: answer with one word";
    let r = a.send_ok(quick, &["--until-done"]);
    let exit_ms = now_ms();
    assert!(
        matches!(
            r["proof"]["source"].as_str(),
            Some("transcript" | "history")
        ),
        "{name}: proof {}",
        r["proof"]
    );
    assert_eq!(
        r["turn"]["done"].as_bool(),
        Some(true),
        "{name}: turn {}",
        r["turn"]
    );
    let submit = r["timings"]["submit_at_ms"].as_u64().unwrap_or(0);
    let last = model
        .answered("pg-quick", submit)
        .into_iter()
        .max()
        .expect("the model got the prompt");
    assert!(
        exit_ms >= last,
        "{name}: --until-done ended before the model answered"
    );
    let late = exit_ms - last;
    eprintln!(
        "REPORT real_turns {name} {} until-done: turn_ms {} saw_busy {}; exit {late} ms after the model's answer",
        a.version, r["turn"]["turn_ms"], r["turn"]["saw_busy"]
    );
    // Not the fixed 3 s start grace (before: exit 3.4 s after the answer of a 0.1 s
    // turn). The issue's goal is 500 ms: measured 0.1-0.6 s on an idle machine, up
    // to 1.4 s under load, as the agent's own repaint after the answer (Claude ~0.15 s
    // idle, over 1 s under load) and the 250 ms of stillness a turn never seen busy
    // needs add up (docs/real-turns.md): a bound of 0.5 s would not pass reliably.
    assert!(
        late <= 2500,
        "{name} {}: --until-done exited {late} ms after the model's answer (turn {})",
        a.version,
        r["turn"]
    );

    // (b) busy with a streaming reply: refused (22), nothing typed; --wait-busy lands once, after it
    let stream = "pg-stream-long: tell me a long story";
    let stream_submit = a.send_ok(stream, &[])["timings"]["submit_at_ms"]
        .as_u64()
        .unwrap_or(0);
    a.wait_state("busy", 30);
    let refused = "refused while busy: pg-quick";
    let (c, r, o) = a.send(refused, &[]);
    assert_eq!(
        c,
        22,
        "{name}: a send while streaming: {}\n{r}",
        text(&o.stderr)
    );
    let screen = a.capture();
    assert!(
        !screen.contains("refused while busy"),
        "{name}: typed while busy\n{screen}"
    );
    // Codex's own record says the turn runs (its `[status]`, the rollout's last
    // turn event): while a reply streams, 0.171 draws no busy mark on screen,
    // only the title's spinner, which a user's config or tmux can hide
    if name == "codex" {
        let ex = text(&a.pg(&["explain", "-t", &a.pane]).stdout);
        assert!(
            ex.lines()
                .any(|l| l.contains("status.busy") && l.contains("payload.type=task_started")),
            "{name} {}: the rollout's turn event during the stream\n{ex}",
            a.version
        );
    }
    // (d') the agents that park a prompt sent with Enter while they work (Gemini,
    // Copilot, OpenCode, Kilo, Qwen before 0.24, where Enter steers the running
    // turn; Claude has its own check below): a forced send during the stream is
    // queued by the agent and, with a verify that outlasts the stream, `consumed`
    // with exact proof from the record once the agent runs it; in the record once
    let parks = match name {
        "gemini" | "copilot" | "opencode" | "kilo" => true,
        "qwen" => a
            .version
            .split('.')
            .nth(1)
            .and_then(|m| m.parse::<u32>().ok())
            .is_some_and(|m| m < 24),
        _ => false,
    };
    let parked = "parked in the stream: pg-quick";
    if parks {
        let (c, r, o) = a.send(parked, &["--force", "--verify-timeout", "60"]);
        assert_eq!(
            (c, r["receipt"].as_str()),
            (0, Some("consumed")),
            "{name} {}: a forced send while streaming: {}\n{r}\n{}",
            a.version,
            text(&o.stderr),
            a.capture()
        );
        assert_eq!(r["proof"]["match"], "exact", "{name}: {r}");
        // not `consumed` at the Enter: the receipt saw the agent's queue marker
        // and waited for the prompt to leave the queue
        let rule = r["evidence"]["rule"].as_str().unwrap_or_default();
        assert!(
            rule.starts_with("verify.left-the-queue ("),
            "{name} {}: the parked prompt's receipt: {r}",
            a.version
        );
        eprintln!(
            "REPORT real_turns {name} {} queued: a forced send during the stream was parked and consumed with exact proof {} ms after its submit ({rule})",
            a.version, r["timings"]["verify_ms"]
        );
    }
    let after = "after the stream: pg-quick";
    let after_submit = a.send_ok(after, &["--wait-busy"])["timings"]["submit_at_ms"]
        .as_u64()
        .unwrap_or(0);
    // the request may reach the model a moment after the receipt (Kilo 7.7.7:
    // about a second after its prompt is on screen and in its history)
    let first = |key: &str, since: u64| -> u64 {
        let t0 = std::time::Instant::now();
        let mut got = model.answered(key, since);
        while got.is_empty() && t0.elapsed() < Duration::from_secs(15) {
            std::thread::sleep(Duration::from_millis(200));
            got = model.answered(key, since);
        }
        *got.first().unwrap_or_else(|| {
            let seen: Vec<String> = model
                .journal()
                .iter()
                .map(|e| {
                    format!(
                        "{} {}",
                        e["timestamp"], e["response"]["fixture"]["match"]["userMessage"]
                    )
                })
                .collect();
            panic!("{name}: no request for {key} answered since {since}; journal: {seen:?}")
        })
    };
    let stream_at = first("pg-stream-long", stream_submit);
    let after_at = first("pg-quick", after_submit);
    // 120 content chunks of 8 characters, 100 ms apart (tests/model/turns.json)
    let content_end = stream_at + 120 * 100;
    eprintln!(
        "REPORT real_turns {name} {} wait-busy: the prompt reached the model {} ms after the stream began",
        a.version,
        after_at - stream_at
    );
    assert!(
        after_at >= content_end,
        "{name}: --wait-busy landed {} ms into a stream of >= {} ms",
        after_at - stream_at,
        content_end - stream_at
    );
    a.wait_state("ready", 30);
    let recs = a.records();
    assert_eq!(count(&recs, after), 1, "{name}: record {recs:?}");
    assert_eq!(count(&recs, refused), 0, "{name}: record {recs:?}");
    assert_eq!(count(&recs, stream), 1, "{name}: record {recs:?}");
    if parks {
        assert_eq!(count(&recs, parked), 1, "{name}: record {recs:?}");
    }

    // (d) where the agent queues a prompt typed while it works (Claude Code: `Queued`,
    // `Press up to edit queued messages`): a forced send during a stream is
    // `queued` (31) when the verify ends first; with a verify that outlasts the
    // stream it is `consumed` once the agent runs it, proven from its record
    if name == "claude" {
        let queue = |body: &str, verify: &str| {
            let submit = a.send_ok("pg-stream-short: a short story", &[])["timings"]
                ["submit_at_ms"]
                .as_u64()
                .unwrap_or(0);
            a.wait_state("busy", 30);
            let (c, r, o) = a.send(body, &["--force", "--verify-timeout", verify]);
            let _ = first("pg-stream-short", submit);
            (c, r, o)
        };
        let parked = "parked while busy: pg-quick";
        let (c, r, o) = queue(parked, "1");
        assert_eq!(
            c,
            31,
            "{name}: a forced send while streaming: {}\n{r}",
            text(&o.stderr)
        );
        assert_eq!(r["receipt"], "queued", "{name}: {r}");
        a.wait_state("ready", 60);
        let ran = "queued then run: pg-quick";
        let (c, r, o) = queue(ran, "60");
        assert_eq!(c, 0, "{name}: {}\n{r}", text(&o.stderr));
        assert_eq!(r["receipt"], "consumed", "{name}: {r}");
        assert_eq!(r["proof"]["match"], "exact", "{name}: {r}");
        assert!(
            r["evidence"]["rule"]
                .as_str()
                .is_some_and(|x| x.starts_with("verify.left-the-queue (")),
            "{name}: {r}"
        );
        a.wait_state("ready", 60);
        let recs = a.records();
        assert_eq!(
            count(&recs, parked),
            1,
            "{name}: the parked prompt ran once: {recs:?}"
        );
        assert_eq!(count(&recs, ran), 1, "{name}: record {recs:?}");
        eprintln!(
            "REPORT real_turns {name} {} queued: 31 when the verify ends first, consumed with exact proof after {} ms when it waits",
            a.version, r["timings"]["verify_ms"]
        );
    }

    // (e) the plugin's watcher (`watch --notify`) tells once per turn that the
    // agent is done: a message on each attached client
    {
        let dones = || -> usize {
            text(&common::tmux_on(&a.socket, &["show-messages"]).stdout)
                .lines()
                // the messages shown, not the logged display-message commands
                .filter_map(|l| l.split_once(" message: ").map(|(_, m)| m.to_string()))
                .filter(|m| m.starts_with(&format!("promptgate: {} ", a.pane)))
                .filter(|l| l.contains("is done"))
                .count()
        };
        let client = common::TmuxServer::new(
            120,
            40,
            &[
                "env", "-u", "TMUX", "tmux", "-L", &a.socket, "attach", "-t", &a.pane,
            ],
        );
        let mut watcher = common::pg_on(
            &a.socket,
            a.tmp.path(),
            &["watch", "--notify", "--interval", "100"],
        )
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
        // the watcher is running once its control-mode client is attached
        let t0 = std::time::Instant::now();
        while !text(
            &common::tmux_on(&a.socket, &["list-clients", "-F", "#{client_control_mode}"]).stdout,
        )
        .lines()
        .any(|l| l == "1")
            && t0.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        let before = dones();
        a.send_ok(
            "pg-stream-short: a short story for the watcher",
            &["--until-done"],
        );
        let t0 = std::time::Instant::now();
        while dones() == before && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
        }
        // and no second notice for the same turn
        std::thread::sleep(Duration::from_millis(1500));
        let got = dones() - before;
        let log: Vec<String> = text(&common::tmux_on(&a.socket, &["show-messages"]).stdout)
            .lines()
            .filter(|l| l.contains(" message: "))
            .map(str::to_string)
            .collect();
        let _ = watcher.kill();
        let _ = watcher.wait();
        drop(client);
        assert_eq!(got, 1, "{name}: done notices for one turn: {log:?}");
        eprintln!(
            "REPORT real_turns {name} {} watcher: one done notice for the turn",
            a.version
        );
    }

    // (a) the approval dialog of a shell command that would remove the marker
    // (aider has no shell tool call: its approvals are inline yes/no questions)
    if name == "aider" {
        a.stop();
        return;
    }
    // (f) the approval dialog of a file write: the model creates `pg-written.txt`
    // (codex: `../pg-written-outside.txt`, as it writes inside its workspace
    // without asking; copilot: its freeform `apply_patch`). Qwen 0.24.4 (its
    // default Auto mode), OpenCode and Kilo write files without asking.
    // a tool row's running seconds (`31s`), which both dialogs' screens drop
    let ticks = regex::Regex::new(r"\s+\d+[smh]\s*$").unwrap();
    if let Some((prompt, file)) = match name {
        "claude" | "gemini" => Some((
            "pg-tool-write: create the file",
            a.project.join("pg-written.txt"),
        )),
        "copilot" => Some((
            "pg-create-file: create the file",
            a.project.join("pg-written.txt"),
        )),
        "codex" => Some((
            "pg-tool-write: create the file",
            a.project.parent().unwrap().join("pg-written-outside.txt"),
        )),
        _ => None,
    } {
        // claude blinks the tool's `●`; copilot's tool row counts seconds (`31s`)
        refused_in_dialog(&a, prompt, "the file-write dialog", |l| {
            ticks.replace(&l.replace(['●', '○'], " "), "").into_owned()
        });
        a.reject_tool();
        a.wait_state("ready", 30);
        assert!(
            !file.exists(),
            "{name}: {} exists: the write ran\n{}",
            file.display(),
            a.capture()
        );
        eprintln!(
            "REPORT real_turns {name} {} file-write dialog: refused 21, nothing typed, no file",
            a.version
        );
        // a turn between: an agent that keeps the rejected turn's message in the
        // next request (claude beside the tool's result, gemini joined to the next
        // prompt's text) would have the model see the write asked for again
        // (copilot goes back to work a moment after the Escape: the send waits it out)
        a.send_ok(
            "pg-quick: after the write",
            &["--until-done", "--wait-busy"],
        );
    }

    let marker = a.project.join("pg-marker");
    std::fs::create_dir(&marker).unwrap();
    // copilot's request carries tools without a `function` member, which aimock's
    // tool-name match cannot read: its fixture matches the prompt alone
    // (opencode and kilo call their `bash` tool the same way)
    let tool = if matches!(name, "copilot" | "opencode" | "kilo") {
        "pg-bash-rm: remove the marker folder"
    } else {
        "pg-tool-rm: remove the marker folder"
    };
    // the dialog holds still: the screen after the refusal is the screen before
    // it (claude blinks the `●` of a tool call waiting for approval)
    // (copilot's tool row may count seconds, as in the write dialog)
    refused_in_dialog(&a, tool, "the approval dialog", |l| {
        ticks.replace(&l.replacen('●', " ", 1), "").into_owned()
    });
    eprintln!(
        "REPORT real_turns {name} {} approval dialog: refused 21, nothing typed",
        a.version
    );
    a.reject_tool();
    a.wait_state("ready", 30);
    assert!(
        marker.is_dir(),
        "{name}: the marker is gone: the command ran\n{}",
        a.capture()
    );
    a.stop();
}

#[test]
#[ignore = "real agents: PROMPTGATE_REAL_AGENTS=1 cargo test --test real_turns -- --include-ignored"]
fn claude_real_turns_120x40() {
    real_turns("claude");
}

#[test]
#[ignore = "real agents: PROMPTGATE_REAL_AGENTS=1 cargo test --test real_turns -- --include-ignored"]
fn codex_real_turns_120x40() {
    real_turns("codex");
}

#[test]
#[ignore = "real agents: PROMPTGATE_REAL_AGENTS=1 cargo test --test real_turns -- --include-ignored"]
fn copilot_real_turns_120x40() {
    real_turns("copilot");
}

#[test]
#[ignore = "real agents: PROMPTGATE_REAL_AGENTS=1 cargo test --test real_turns -- --include-ignored"]
fn gemini_real_turns_120x40() {
    real_turns("gemini");
}

#[test]
#[ignore = "real agents: PROMPTGATE_REAL_AGENTS=1 cargo test --test real_turns -- --include-ignored"]
fn opencode_real_turns_120x40() {
    real_turns("opencode");
}

#[test]
#[ignore = "real agents: PROMPTGATE_REAL_AGENTS=1 cargo test --test real_turns -- --include-ignored"]
fn kilo_real_turns_120x40() {
    real_turns("kilo");
}

#[test]
#[ignore = "real agents: PROMPTGATE_REAL_AGENTS=1 cargo test --test real_turns -- --include-ignored"]
fn qwen_real_turns_120x40() {
    real_turns("qwen");
}

#[test]
#[ignore = "real agents: PROMPTGATE_REAL_AGENTS=1 cargo test --test real_turns -- --include-ignored"]
fn aider_real_turns_120x40() {
    real_turns("aider");
}
