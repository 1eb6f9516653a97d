//! `promptgate send`: the main job. Sanitise first (a bad body types nothing),
//! then identify, lock the pane, gate, type, settle, submit, and verify.

use super::{observe, observe_at_launch, out, read_body, refusal, secs, target};
use crate::cli::SendArgs;
use crate::deliver::{check_same_pane, ensure_same_pane, press, settle, submit, type_body, Typed};
use crate::detect::{detect, State};
use crate::error::{fanout_code, receipt_code, Error, Refused, Result};
use crate::gate::{Clock, GateResult, SystemClock};
use crate::lock::PaneLock;
use crate::plan::{plan_for_pane, sanitise, Plan};
use crate::profile::{Profile, Profiles};
use crate::screen::Screen;
use crate::tmux::{Control, Guard, Process, Server, Tmux};
use crate::verify::{judge, Judgement, Receipt};
use serde_json::json;
use std::time::Duration;

pub fn run(server: &Server, profiles: &Profiles, mut a: SendArgs) -> Result<i32> {
    // The old fan-out form, `--agent NAME` with no -t outside tmux (where there
    // is no current pane for it to mean): still every NAME pane, with a note.
    let fan_out_flag = a.all_agents || a.every.is_some();
    if a.targets.is_empty() && !fan_out_flag && a.agent.is_some() && target(&None).is_err() {
        eprintln!("promptgate: note: --agent NAME without -t as a fan-out is deprecated; use --every NAME");
        a.every = a.agent.take();
    }
    if a.session.is_some() && !(a.all_agents || a.every.is_some()) {
        return Err(Error::Usage(
            "--session limits a fan-out: give --all-agents or --every AGENT too".into(),
        ));
    }
    let raw = read_body(&a.body)?;
    // Refuse a bad body before anything touches a pane.
    sanitise(&raw)?;
    if let Some(name) = a.agent.as_ref().or(a.every.as_ref()) {
        profiles.get(name)?;
    }
    let fan_out = a.targets.len() > 1 || a.all_agents || a.every.is_some();
    let shared = Shared::new(Duration::from_millis(a.stagger));
    if !fan_out {
        let t = match a.targets.first() {
            Some(t) => t.clone(),
            None => target(&None)?,
        };
        // one target: a person at a terminal sees a live status line while it waits
        let shared = shared.with_live(!a.json);
        let mut o = deliver_to(server, profiles, &a, &t, &raw, &shared, None);
        // --until-done: the turn the prompt started, in the same receipt
        let mut turn = None;
        if a.until_done && o.code == 0 {
            if let Some(rec) = o.rec.as_mut() {
                let agent = rec["agent"].as_str().unwrap_or("").to_string();
                let done = secs(a.done_timeout);
                match super::until_done(server, profiles, &agent, &o.pane, done, true, None) {
                    Ok(t) => {
                        o.code = super::turn_code(&t);
                        rec["turn"] = serde_json::to_value(&t).unwrap_or_default();
                        rec["exit_code"] = o.code.into();
                        turn = Some(t);
                    }
                    Err(e) => {
                        o.code = e.exit_code();
                        rec["turn"] = json!({"done": false, "error": e.to_string()});
                        rec["exit_code"] = o.code.into();
                    }
                }
            }
        }

        // a receipt other than consumed says why, in `error`, as the stderr line does
        let why = o.rec.as_ref().map(|rec| {
            let r = rec["receipt"].as_str().unwrap_or("?");
            let ev = rec["evidence"]["rule"].as_str().unwrap_or("");
            format!("receipt {r} ({ev}) for {}", o.pane)
        });
        if let Some(mut rec) = o.rec.clone() {
            if o.code != 0 && rec.get("error").is_none() {
                rec["error"] = why.clone().unwrap_or_default().into();
            }
            finish(&rec, a.json)?;
        } else if let Some(e) = o.err.as_ref().filter(|_| a.json) {
            super::not_sent_json(
                json!({"pane": o.pane, "error": e.to_string(), "exit_code": o.code}),
            )?;
        }
        if let Some(e) = o.err {
            return Err(e);
        }
        if let Some(t) = turn.as_ref().filter(|_| !a.json) {
            out(&super::turn_line(&o.pane, t))?;
        } else if o.code != 0 && !a.json {
            let changes = o.rec.as_ref().map(changes_text).unwrap_or_default();
            eprintln!("promptgate: {}{changes}", why.unwrap_or_default());
        }
        return Ok(o.code);
    }
    let targets = select_targets(server, profiles, &a)?;
    let shared = match targets.first() {
        Some(t) if targets.len() > 1 => shared.with_connection(server, t),
        _ => shared,
    };
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = targets
            .iter()
            .map(|t| {
                let (a, raw, shared) = (&a, &raw, &shared);
                s.spawn(move || deliver_to(server, profiles, a, t, raw, shared, None))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("sender thread"))
            .collect()
    });
    let consumed = outcomes.iter().filter(|o| o.code == 0).count();
    let total = outcomes.len();
    let exit = fanout_code(consumed, total);
    let rows: Vec<serde_json::Value> = outcomes
        .iter()
        .map(|o| {
            if let Some(rec) = &o.rec {
                crate::log::append(rec);
            }
            let mut r = o
                .rec
                .clone()
                .unwrap_or_else(|| json!({"pane": o.pane, "receipt": "not-sent"}));
            r["exit_code"] = o.code.into();
            if let Some(e) = &o.err {
                r["error"] = e.to_string().into();
            }
            r
        })
        .collect();
    let summary = format!("{consumed} of {total} consumed");
    if a.json {
        super::out_json(
            &json!({"targets": rows, "summary": {"consumed": consumed, "total": total, "text": summary}, "exit_code": exit, "error": (exit != 0).then_some(&summary)}),
        )?;
    } else {
        for r in &rows {
            let why = r["error"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| r["evidence"]["rule"].as_str().unwrap_or("").to_string());
            out(&format!(
                "{}\t{}\t{}\t{}",
                r["pane"].as_str().unwrap_or("?"),
                r["agent"].as_str().unwrap_or("-"),
                r["receipt"].as_str().unwrap_or("?"),
                why
            ))?;
        }
        out(&format!("promptgate: {summary}"))?;
    }
    Ok(exit)
}

/// The panes a fan-out goes to: the `-t` list, or every agent pane of the server
/// (of `--session`, of `--every`).
fn select_targets(server: &Server, profiles: &Profiles, a: &SendArgs) -> Result<Vec<String>> {
    if !a.targets.is_empty() {
        return Ok(a.targets.clone());
    }
    let mut tmux = Process::new(server.clone());
    let mut panes = Vec::new();
    for p in tmux.list_panes()? {
        if a.session
            .as_deref()
            .is_some_and(|s| p.target.split(':').next() != Some(s))
        {
            continue;
        }
        let Ok(o) = observe(&mut tmux, profiles, None, &p.id) else {
            continue;
        };
        let Some(agent) = o.identity.agent else {
            continue;
        };
        if a.every.as_deref().is_none_or(|want| want == agent) {
            panes.push(p.id);
        }
    }
    if panes.is_empty() {
        return Err(Error::refused(
            Refused::NotAgent,
            "no agent panes to send to",
        ));
    }
    Ok(panes)
}

/// What is shared by the senders of one fan-out: the submit slot, so that no
/// two targets press their submit key in the same moment.
/// And one control-mode connection that all of them poll through.
pub struct Shared {
    last_submit: std::sync::Mutex<Option<std::time::Instant>>,
    stagger: Duration,
    conn: Option<crate::tmux::SharedControl>,
    /// Draw the live status line while the gate waits (one target, not --json).
    live: bool,
    /// Set when the caller gives up (MCP cancellation): the gate stops before typing.
    cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Shared {
    /// A caller that can give up: once `flag` is set, a gate still waiting stops
    /// (nothing typed); a send that has begun typing finishes.
    pub fn with_cancel(mut self, flag: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Shared {
        self.cancel = Some(flag);
        self
    }

    pub fn new(stagger: Duration) -> Shared {
        Shared {
            last_submit: std::sync::Mutex::new(None),
            stagger,
            conn: None,
            live: false,
            cancel: None,
        }
    }

    /// Draw a live status line on stderr while the gate waits, when `on` and
    /// stderr is a terminal.
    pub fn with_live(mut self, on: bool) -> Shared {
        self.live = on;
        self
    }

    /// Poll every target through one connection (attached now, through `pane`).
    pub fn with_connection(mut self, server: &Server, pane: &str) -> Shared {
        self.conn = Control::for_fanout(server.clone(), pane);
        self
    }

    /// Run `f` (the submit) in its own moment: at least `stagger` after the last one.
    fn in_slot<T>(&self, f: impl FnOnce() -> T) -> T {
        let mut last = self.last_submit.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = *last {
            let wait = (l + self.stagger).saturating_duration_since(std::time::Instant::now());
            std::thread::sleep(wait);
        }
        let r = f();
        *last = Some(std::time::Instant::now());
        r
    }
}

/// Called with `typing` before the first byte and `submitting` before the submit key
/// (the durable queue journals these).
pub type PhaseHook<'a> = Option<&'a (dyn Fn(&str) + Sync)>;

/// One target's result: the receipt record (when the gate ran), the exit code, the error.
pub struct Outcome {
    pub pane: String,
    pub rec: Option<serde_json::Value>,
    pub code: i32,
    pub err: Option<Error>,
}

impl Outcome {
    fn failed(pane: &str, e: Error) -> Outcome {
        Outcome {
            pane: pane.to_string(),
            rec: None,
            code: e.exit_code(),
            err: Some(e),
        }
    }
}

/// The whole pipeline for one target. Never panics, never returns early without an Outcome.
pub fn deliver_to(
    server: &Server,
    profiles: &Profiles,
    a: &SendArgs,
    target: &str,
    raw: &[u8],
    shared: &Shared,
    hook: PhaseHook,
) -> Outcome {
    let clock = SystemClock::new();
    let mut tmux = Control::new(server.clone(), target);
    if let Some(c) = &shared.conn {
        tmux.adopt(c.clone());
    }
    let read_at = crate::tmux::now_ms();
    let (pane, screen) = match tmux.resolve_read(target) {
        Ok(v) => v,
        Err(e) => return Outcome::failed(target, e),
    };
    let mut live = super::live::Live::new(shared.live);
    let prep = (|| {
        let server_key = tmux.server_key()?;
        // a pane launched a moment ago may not show its agent yet
        let (first, read_at) = observe_at_launch(
            &mut tmux,
            profiles,
            a.agent.as_deref(),
            &pane,
            screen,
            read_at,
        )?;
        let Some(agent) = first.identity.agent.clone() else {
            return Err(refusal(
                &first.verdict.state,
                &first.verdict.reason(),
                false,
            ));
        };
        let pl = plan_for_pane(
            raw,
            profiles.get(&agent)?.capability(),
            first.screen.bracketed_paste,
        )?;
        let pane_pid = first.screen.pid;
        live.begin(&pane, &agent, secs(a.lock_timeout));
        let lock = PaneLock::acquire_with(&server_key, &pane, secs(a.lock_timeout), &mut || {
            live.tick_with(|| {
                let why = "waiting for another sender to this pane to finish";
                ("locked".into(), why.into())
            })
        });
        live.clear();
        let lock = lock?;
        // the read that identified the agent is the gate's first poll, unless
        // another sender held the pane since it began (it may show that one's body)
        let first = (lock.waited_ms == 0 && lock.last_held_ms < read_at).then_some(first.screen);
        Ok((server_key, agent, pl, lock, first, pane_pid))
    })();
    let (server_key, agent, mut pl, lock, mut first, pane_pid) = match prep {
        Ok(v) => v,
        Err(e) => return Outcome::failed(&pane, e),
    };
    let profile = match profiles.get(&agent) {
        Ok(p) => p,
        Err(e) => return Outcome::failed(&pane, e),
    };
    let force = forced(a);
    // the agent's own record, marked before anything is typed (proof of receipt)
    let mark = crate::record::mark(profile, pane_pid);
    let hook_mark = crate::record::HookMark::new(&server_key, &pane);
    // time spent gating (every gate, if it gated again), not delivering
    let mut gate_time = Duration::ZERO;
    // Gate, then deliver; when the pane changed after the gate's last look and
    // nothing was typed (the look before typing, or tmux's own check on the
    // paste), gate again, a few times.
    let mut regates: Vec<String> = Vec::new();
    let mut untyped = false;
    let mut opened_ms;
    let (gate, run) = loop {
        let t_gate = clock.now();
        let gate = match if force {
            forced_gate(&mut tmux, profile, &pane)
        } else {
            run_gate(
                &mut tmux,
                profiles,
                profile,
                (a, shared),
                &pane,
                first.take(),
                &mut live,
            )
        } {
            Ok(g) => g,
            Err(e) => return Outcome::failed(&pane, e),
        };
        gate_time += clock.now() - t_gate;
        // the receipt's time: when the gate opened, right before typing
        opened_ms = crate::tmux::now_ms();
        if !gate.ready && !force {
            break (gate, None);
        }
        // the agent may have turned bracketed paste on or off since the first look
        if gate.screen.bracketed_paste.is_some() {
            match plan_for_pane(raw, profile.capability(), gate.screen.bracketed_paste) {
                Ok(p) => pl = p,
                Err(e) => {
                    untyped = true;
                    break (gate, Some(Err(e)));
                }
            }
        }
        let job = Job {
            profile,
            pane: &pane,
            plan: &pl,
            pid: gate.screen.pid,
            gate_screen: &gate.screen,
            args: a,
            shared,
            hook,
        };
        match job.run(&mut tmux, &clock, &mut live) {
            Ok(Step::Regate(why)) if regates.len() < MAX_REGATES => regates.push(why),
            Ok(Step::Regate(why)) => {
                untyped = true;
                let e = Error::PaneChanged(
                    pane.clone(),
                    format!(
                        "it changed after each of {} ready looks, before anything was typed; nothing typed (last: {why})",
                        MAX_REGATES + 1
                    ),
                );
                break (gate, Some(Err(e)));
            }
            Ok(Step::Done(d)) => break (gate, Some(Ok(*d))),
            Err(e) => break (gate, Some(Err(e))),
        }
    };
    let gate_ms = gate_time.as_millis() as u64;
    let mut rec = json!({
        "time_ms": opened_ms as u64,
        "pane": pane,
        "server": server_key,
        "agent": agent,
        "bytes_in": pl.bytes_in,
        "bytes_out": pl.bytes_out,
        "framing": pl.framing,
        "chunks": pl.chunks.len(),
        "changes": pl.changes,
        "forced": force,
        "control_mode": tmux.connected(),
        "lock_waited_ms": lock.waited_ms,
        "gate": {"ready": gate.ready, "state": gate.state.to_string(), "waited_ms": gate.waited_ms, "polls": gate.polls, "reason": gate.reason, "regated": regates},
    });
    let Some(run) = run else {
        let e = refusal(&gate.state, &gate.reason, gate.timed_out);
        rec["receipt"] = "not-sent".into();
        rec["error"] = e.to_string().into();
        rec["exit_code"] = e.exit_code().into();
        return Outcome {
            pane,
            rec: Some(rec),
            code: e.exit_code(),
            err: Some(e),
        };
    };
    let (code, err) = match run {
        Ok((typed, mut j, resubmits, verify_ms)) => {
            let proof = prove(&mark, &hook_mark, profile, &pl, &mut j);
            rec["proof"] = serde_json::to_value(&proof).unwrap_or_default();
            rec["receipt"] = j.receipt.to_string().into();
            rec["evidence"] = serde_json::to_value(&j.evidence).unwrap_or_default();
            rec["resubmits"] = resubmits.into();
            rec["timings"] = json!({"gate_ms": gate_ms, "type_ms": typed.type_ms, "settle_ms": typed.settle_ms, "settled": typed.settled, "verify_ms": verify_ms, "total_ms": clock.now().as_millis() as u64, "submit_at_ms": typed.submit_at_ms});
            (receipt_code(&j.receipt), None)
        }
        Err(e) => {
            // nothing typed (the pane kept changing): not-sent, as a gate refusal
            rec["receipt"] = if untyped { "not-sent" } else { "failed" }.into();
            rec["error"] = e.to_string().into();
            (e.exit_code(), Some(e))
        }
    };
    rec["exit_code"] = code.into();
    drop(lock);
    Outcome {
        pane,
        rec: Some(rec),
        code,
        err,
    }
}

/// Read the agent's own record after the submit: a `consumed` (or `unknown`)
/// receipt whose record holds other text than the body is `mangled`; an
/// `unknown` one whose record holds the body is `consumed`.
fn prove(
    mark: &std::result::Result<crate::record::Mark, String>,
    hooks: &crate::record::HookMark,
    profile: &Profile,
    pl: &Plan,
    j: &mut crate::verify::Judgement,
) -> crate::record::Proof {
    let body: String = pl.body_chunks().iter().map(|c| c.text.as_str()).collect();
    if !matches!(j.receipt, Receipt::Consumed | Receipt::Unknown) {
        return crate::record::Proof::screen(&body, &format!("the receipt is {}", j.receipt));
    }
    let mut proof = match mark {
        Ok(m) => m.prove(&body),
        Err(why) => crate::record::Proof::screen(&body, why),
    };
    // a hook's prompt event (`promptgate hooks install`) proves what no record did
    if proof.matched != "exact" && proof.matched != "differs" {
        if let Some(h) = hooks.prove(profile.def.record.as_ref(), &body) {
            proof = h;
        }
    }
    let rule = |r: &str| crate::detect::Evidence {
        rule: r.into(),
        row: None,
        col: None,
        text: proof.path.clone().unwrap_or_default(),
    };
    match proof.matched {
        "differs" => {
            j.receipt = Receipt::Mangled;
            j.evidence = rule("record.differs");
        }
        "exact" if j.receipt == Receipt::Unknown => {
            j.receipt = Receipt::Consumed;
            j.evidence = rule("record.exact");
        }
        _ => {}
    }
    proof
}

/// `--force`, or `PROMPTGATE_GATE=off`: skip the gate (still plan, sanitise, verify).
fn forced(a: &SendArgs) -> bool {
    a.force || std::env::var("PROMPTGATE_GATE").is_ok_and(|v| v == "off" || v == "0")
}

fn finish(rec: &serde_json::Value, json: bool) -> Result<()> {
    crate::log::append(rec);
    if json {
        super::out_json(rec)?;
    } else if rec["receipt"] == "consumed" {
        out(&format!(
            "{}\t{}\tconsumed\t{} bytes, {}, gate {} ms{}",
            rec["pane"].as_str().unwrap_or(""),
            rec["agent"].as_str().unwrap_or(""),
            rec["bytes_out"],
            rec["framing"].as_str().unwrap_or(""),
            rec["gate"]["waited_ms"],
            changes_text(rec)
        ))?;
    }
    Ok(())
}

/// What sanitising changed, for a plain line: `; 2 changes: removed
/// paste-frame marker ESC[201~ x1, removed control byte x1` (empty if none).
fn changes_text(rec: &serde_json::Value) -> String {
    let Some(list) = rec["changes"].as_array().filter(|l| !l.is_empty()) else {
        return String::new();
    };
    let n: u64 = list.iter().filter_map(|c| c["count"].as_u64()).sum();
    let each: Vec<String> = list
        .iter()
        .map(|c| format!("{} x{}", c["what"].as_str().unwrap_or("?"), c["count"]))
        .collect();
    format!(
        "; {n} change{}: {}",
        if n == 1 { "" } else { "s" },
        each.join(", ")
    )
}

/// `--force`: no waiting, but never into a dead pane.
fn forced_gate(tmux: &mut dyn Tmux, profile: &Profile, pane: &str) -> Result<GateResult> {
    let s = tmux.read(pane)?;
    let v = detect(profile, &s);
    if s.dead {
        return Err(refusal(&State::Exited, "pane_dead=1", false));
    }
    Ok(GateResult {
        ready: true,
        timed_out: false,
        state: v.state.clone(),
        waited_ms: 0,
        polls: 1,
        reason: "gate skipped (--force)".into(),
        evidence: v.evidence.clone(),
        verdict: v,
        screen: s,
    })
}

/// The gate, with the two guards that can fix the pane first: --cancel-mode, --replace-draft.
fn run_gate(
    tmux: &mut Control,
    profiles: &Profiles,
    profile: &Profile,
    (a, shared): (&SendArgs, &Shared),
    pane: &str,
    mut first: Option<Screen>,
    live: &mut super::live::Live,
) -> Result<GateResult> {
    let mut opts = super::wait::opts(&a.gate);
    opts.cancel = shared.cancel.clone();
    if a.when_ready {
        opts.wait_busy = true;
        opts.timeout = opts.timeout.max(Duration::from_secs(600));
    }
    let mut cancelled = false;
    let mut cleared = false;
    loop {
        let (_, g) = super::wait::gate_live(
            tmux,
            profiles,
            Some(profile.name()),
            pane,
            &opts,
            first.take(),
            Some(live),
        )?;
        if g.state == State::InMode && a.cancel_mode && !cancelled {
            tmux.cancel_mode(pane)?;
            cancelled = true;
            continue;
        }
        if g.state == State::Draft
            && a.replace_draft
            && !cleared
            && !profile.capability().clear_keys.is_empty()
        {
            crate::deliver::clear_draft(tmux, pane, profile)?;
            cleared = true;
            continue;
        }
        return Ok(g);
    }
}

type Delivered = (Typed, Judgement, u32, u64);

/// How a delivery ended: done (whatever the receipt), or nothing typed because
/// the pane changed after the gate's last look (gate again).
enum Step {
    Done(Box<Delivered>),
    Regate(String),
}

/// How many times a send gates again when the pane changed before the paste.
const MAX_REGATES: usize = 3;
/// How many times tmux may hold the submit key back (the pane changed after the
/// last look) before the send gives up, with the body typed.
const MAX_HELD_BACK: u32 = 5;

/// How old (ms) a screen may be and still count as the look before a write.
const FRESH_MS: u128 = 20;

/// One delivery into one pane, after the gate said ready.
struct Job<'a> {
    profile: &'a Profile,
    pane: &'a str,
    plan: &'a Plan,
    pid: Option<u32>,
    /// The gate's last screen: looked at again before typing unless it is fresh.
    gate_screen: &'a Screen,
    args: &'a SendArgs,
    shared: &'a Shared,
    hook: PhaseHook<'a>,
}

impl Job<'_> {
    fn run(
        &self,
        tmux: &mut Control,
        clock: &dyn Clock,
        live: &mut super::live::Live,
    ) -> Result<Step> {
        let Job {
            profile,
            pane,
            plan: pl,
            pid,
            gate_screen,
            args: a,
            shared,
            hook,
        } = *self;
        let force = forced(a);
        // A screen read this very moment, of the live process the gate saw, is the
        // look before a write: it is not read again.
        let fresh = |s: &Screen| {
            crate::tmux::now_ms().saturating_sub(s.taken_at_ms) <= FRESH_MS
                && !s.dead
                && s.pid == pid
        };
        let s0 = if fresh(gate_screen) {
            gate_screen.clone()
        } else {
            check_same_pane(tmux, pane, pid)?
        };
        let v0 = detect(profile, &s0);
        if !force && v0.state != State::Ready {
            return Ok(Step::Regate(format!(
                "changed after the gate, before typing: {} ({})",
                v0.state,
                v0.reason()
            )));
        }
        if let Some(h) = hook {
            h("typing");
        }
        // tmux pastes only while the pane is as that look saw it
        let guard = Guard::of(&s0);
        let Some(mut typed) = type_body(tmux, pane, pl, clock, guard.as_ref())? else {
            return Ok(Step::Regate(format!(
                "changed after the gate's last look ({}), before the paste; tmux held it back",
                guard.as_ref().map_or("", |g| g.expected())
            )));
        };
        let typed_at = clock.now();
        let kib = (pl.bytes_out as u64).div_ceil(1024);
        // Drawn and still for 60 ms, or for the whole submit delay when that is shorter.
        let quiet = Duration::from_millis(pl.submit().delay_before_ms.min(60));
        let settle_max = Duration::from_millis(1500 + 20 * kib).min(Duration::from_secs(20));
        let settled = settle(tmux, pane, profile, clock, quiet, settle_max, &mut typed)?;
        // The submit delay runs from when the body showed on screen (the agent had
        // read it all), not from when tmux took it: a loaded agent reads late.
        let delay = Duration::from_millis(pl.submit().delay_before_ms);
        let since = clock.now() - typed.shown_at.map_or(typed_at, |s| s.max(typed_at));
        if since < delay {
            clock.sleep(delay - since);
        }
        // The last look before the submit key: never press it into a dialog. When
        // settle's last read is that fresh (no delay left to wait), it is that look.
        let mut before = if fresh(&settled) {
            settled
        } else {
            check_same_pane(tmux, pane, pid)?
        };
        // tmux presses the key only while the pane is as the last look saw it; if
        // it changed, look again once it holds still (through a dialog that someone
        // closes, with --wait-dialog).
        let mut held_back = 0;
        let mut announced = false;
        loop {
            let vb = detect(profile, &before);
            if let State::Dialog(_) = vb.state {
                if a.gate.wait_dialog && held_back <= MAX_HELD_BACK {
                    held_back += 1;
                    let wait = secs(a.gate.timeout);
                    before = settle(tmux, pane, profile, clock, quiet, wait, &mut typed)?;
                    if !matches!(detect(profile, &before).state, State::Dialog(_)) {
                        continue;
                    }
                }
                let evidence = crate::detect::Evidence {
                    rule: "verify.dialog-before-submit".into(),
                    ..vb.evidence.clone()
                };
                let j = Judgement {
                    receipt: Receipt::Refused,
                    evidence,
                    verdict: vb,
                };
                return Ok(Step::Done(Box::new((typed, j, 0, 0))));
            }
            if let Some(h) = hook.filter(|_| !announced) {
                h("submitting");
                announced = true;
            }
            let guard = Guard::of(&before);
            if shared.in_slot(|| submit(tmux, pane, pl, guard.as_ref()))? {
                break;
            }
            held_back += 1;
            if held_back > MAX_HELD_BACK {
                return Err(Error::PaneChanged(
                    pane.to_string(),
                    format!(
                        "it kept changing in the moment before the submit ({held_back} looks); the body is typed but not submitted"
                    ),
                ));
            }
            before = settle(tmux, pane, profile, clock, quiet, settle_max, &mut typed)?;
            ensure_same_pane(pane, &before, pid)?;
        }
        typed.submit_at_ms = crate::tmux::now_ms() as u64;
        if a.no_verify {
            let j = Judgement {
                receipt: Receipt::Consumed,
                evidence: crate::detect::Evidence {
                    rule: "verify.skipped".into(),
                    ..Default::default()
                },
                verdict: detect(profile, &before),
            };
            return Ok(Step::Done(Box::new((typed, j, 0, 0))));
        }
        live.begin(pane, profile.name(), secs(a.verify_timeout));
        let verified = verify_loop(
            tmux,
            profile,
            pane,
            pl,
            &before,
            secs(a.verify_timeout),
            clock,
            Some(live),
        );
        live.clear();
        let (j, resubmits, ms) = verified?;
        Ok(Step::Done(Box::new((typed, j, resubmits, ms))))
    }
}

/// Watch until consumed or refused; press submit again (bounded) while stranded.
/// `live`, begun by the caller, is redrawn on each look.
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_loop(
    tmux: &mut Control,
    profile: &Profile,
    pane: &str,
    pl: &Plan,
    before: &Screen,
    timeout: Duration,
    clock: &dyn Clock,
    mut live: Option<&mut super::live::Live>,
) -> Result<(Judgement, u32, u64)> {
    let start = clock.now();
    let mut resubmits = 0u32;
    let mut stranded_since: Option<Duration> = None;
    let mut last_press = start;
    let grace = Duration::from_millis(pl.submit().delay_before_ms.saturating_add(400));
    loop {
        clock.sleep(Duration::from_millis(25));
        let s = match tmux.read(pane) {
            Ok(s) => s,
            Err(e) => {
                return Err(Error::refused(
                    Refused::Gone,
                    format!("pane went away after the submit: {e}"),
                ))
            }
        };
        let j = judge(profile, &pl.body, before, &s);
        if let Some(l) = live.as_deref_mut() {
            l.tick_with(|| {
                let why = "submitted; waiting for proof that the agent took the prompt";
                (j.verdict.state.to_string(), why.into())
            });
        }
        let now = clock.now();
        match j.receipt {
            Receipt::Consumed | Receipt::Refused => {
                return Ok((j, resubmits, (now - start).as_millis() as u64))
            }
            Receipt::Stranded => {
                let since = *stranded_since.get_or_insert(now);
                if now - since >= grace
                    && now - last_press >= grace
                    && resubmits < profile.capability().resubmit_max
                {
                    // An Enter that became a newline left a blank last row: take
                    // it back first, or the agent would get the body plus "\n".
                    // Each key only while the pane is as the last look saw it (a
                    // look with no cursor cannot guard: the key goes as it is).
                    let mut look = s;
                    let mut pressed = true;
                    if j.verdict
                        .composer
                        .as_ref()
                        .is_some_and(|c| c.trailing_newline)
                    {
                        pressed = press(tmux, pane, "BSpace", Guard::of(&look).as_ref())?;
                        if pressed {
                            clock.sleep(Duration::from_millis(pl.submit().delay_before_ms));
                            look = tmux.read(pane)?;
                        }
                    }
                    if pressed && press(tmux, pane, &pl.submit().text, Guard::of(&look).as_ref())? {
                        resubmits += 1;
                        last_press = now;
                    }
                    stranded_since = None;
                }
            }
            _ => stranded_since = None,
        }
        if now - start >= timeout {
            return Ok((j, resubmits, (now - start).as_millis() as u64));
        }
    }
}
