//! deliver: the whole delivery of one body into one pane ([`Delivery::run`]):
//! identify, lock, gate, type, settle, submit, verify.
//!
//! Body chunks go in order (pastes through a private buffer, keys literally);
//! the first failed write aborts the rest and nothing is ever re-typed. Then
//! the body is left to settle on screen, and the submit key goes as its own
//! tmux call once the submit delay has passed since the body showed, only
//! while the pane is as the last look saw it, and never into a dialog.
//!
//! `send` (one target or a fan-out), the queue and the MCP server all call it
//! with plain [`SendOpts`].

use crate::core::detect::refusal;
use crate::core::detect::{detect, State};
use crate::core::error::{Error, Refused, Result};
use crate::core::plan::{plan_body_for_pane, Body, ChunkKind, Plan};
use crate::core::profile::{Profile, Profiles};
use crate::core::screen::Screen;
use crate::core::verify::receipt_code;
use crate::core::verify::{judge, Judgement, ReceiptKind};
use crate::engine::gate::{Clock, GateOpts, GateResult, SystemClock};
use crate::engine::observe::observe_at_launch;
use crate::engine::receipt::{GateSummary, Receipt, Timings, TurnReport};
pub use crate::engine::sink::Phase;
use crate::engine::sink::Sink;
use crate::io::lock::PaneLock;
use crate::io::tmux::{Control, Guard, Server, Tmux};
use serde::Serialize;
use std::time::Duration;

/// How to deliver, whoever asks (the CLI converts its flags into these).
#[derive(Debug, Clone)]
pub struct SendOpts {
    /// The agent, when named (`--agent`): not identified then.
    pub agent: Option<String>,
    /// The gate's options (`--timeout`, `--wait-busy`, `--wait-dialog`, ...).
    pub gate: GateOpts,
    /// `--when-ready`: wait through busy, for at least 10 minutes.
    pub when_ready: bool,
    /// Skip the gate (`--force`, or `PROMPTGATE_GATE=off`).
    pub force: bool,
    pub cancel_mode: bool,
    pub replace_draft: bool,
    pub verify_timeout: Duration,
    pub no_verify: bool,
    pub lock_timeout: Duration,
    /// `send --to-any-process` only: type even where [`may_type`] finds no
    /// agent. Never implied by another flag, never set from the environment,
    /// never by the queue or the MCP server.
    pub to_any_process: bool,
    /// The pane's process it must be (`#{pane_pid}`): the queue's, for the pane
    /// an item was queued for. A look that shows another refuses before
    /// anything is typed or pressed; `None`: whatever the first look saw.
    pub pane_pid: Option<u32>,
}

impl Default for SendOpts {
    /// `send`'s defaults.
    fn default() -> SendOpts {
        SendOpts {
            agent: None,
            gate: GateOpts::default(),
            when_ready: false,
            force: false,
            cancel_mode: false,
            replace_draft: false,
            verify_timeout: Duration::from_secs(10),
            no_verify: false,
            lock_timeout: Duration::from_secs(120),
            to_any_process: false,
            pane_pid: None,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Typed {
    pub chunks_sent: usize,
    pub type_ms: u64,
    pub settle_ms: u64,
    pub settled: bool,
    /// When the final picture of the typed body first showed (clock time): the
    /// agent had read every byte by then, so the submit delay counts from here.
    #[serde(skip)]
    pub shown_at: Option<Duration>,
    /// When the (first) submit key was written: Unix epoch ms (0 if never).
    pub submit_at_ms: u64,
}

/// The one choke point: may bytes be typed into this pane now? Asked of the
/// last look before anything is typed into a pane (the body, a draft's clear
/// keys, a queue's resumed submit), whoever asks (`send`, a fan-out, the queue,
/// the MCP server) and whatever they asked with (`--agent`, `--force`,
/// `PROMPTGATE_GATE=off`, `--when-ready`, `--no-verify`): a pane whose
/// foreground is not an agent ([`crate::core::identify::typable`]) gets nothing,
/// with exit 24. Only `send --to-any-process` skips it.
pub fn may_type(profiles: &Profiles, pane: &str, s: &Screen, opts: &SendOpts) -> Result<()> {
    match why_not_type(profiles, s, opts) {
        None => Ok(()),
        Some((Refused::KeysAstray, why)) => Err(Error::refused(
            Refused::KeysAstray,
            format!("refused: keys to pane {pane} would not reach it alone, nothing typed: {why}"),
        )),
        Some((refused, why)) => Err(Error::refused(
            refused,
            format!("refused: no agent runs in pane {pane}, nothing typed: {why}"),
        )),
    }
}

/// Why bytes may not be typed into the pane `s` shows (the refusal and its
/// reason), or `None` when they may: [`may_type`]'s question, for a caller
/// that words its own answer (the look before the submit key).
fn why_not_type(profiles: &Profiles, s: &Screen, opts: &SendOpts) -> Option<(Refused, String)> {
    // whatever runs there, and --force or not: the keys would go elsewhere too
    // (every pane of a synchronized window) or nowhere
    if let Some(why) = &s.keys_astray {
        return Some((Refused::KeysAstray, why.clone()));
    }
    if opts.to_any_process {
        return None;
    }
    let job = match (&s.foreground, s.pid) {
        (Some(job), _) => Some(job.clone()),
        (None, Some(pid)) if !crate::io::tmux::is_remote() => {
            crate::io::proc::foreground_procs(pid)
        }
        _ => None,
    };
    crate::core::identify::typable(profiles, s, job.as_deref())
        .err()
        .map(|why| (Refused::NotAgent, why))
}

/// The pane must still be the process the gate saw, and alive.
pub fn check_same_pane(
    tmux: &mut dyn Tmux,
    pane: &str,
    expected_pid: Option<u32>,
) -> Result<Screen> {
    let s = tmux.read(pane)?;
    ensure_same_pane(pane, &s, expected_pid)?;
    Ok(s)
}

/// A read shows the pane alive and still the process the gate saw.
pub fn ensure_same_pane(pane: &str, s: &Screen, expected_pid: Option<u32>) -> Result<()> {
    if s.dead {
        return Err(Error::PaneChanged(pane.into(), "the pane is dead".into()));
    }
    if let (Some(want), Some(have)) = (expected_pid, s.pid) {
        if want != have {
            return Err(Error::PaneChanged(
                pane.into(),
                format!("pane_pid is {have}, the gate saw {want}"),
            ));
        }
    }
    Ok(())
}

/// Type the body chunks (not the submit). Aborts on the first failed write.
/// With a `guard`, a first chunk that is a paste goes only while the pane is as
/// the guard saw it (tmux checks both in one step): `Ok(None)` when it was not,
/// and nothing was typed.
pub fn type_body(
    tmux: &mut dyn Tmux,
    pane: &str,
    plan: &Plan,
    clock: &dyn Clock,
    guard: Option<&Guard>,
) -> Result<Option<Typed>> {
    let start = clock.now();
    let chunks = plan.body_chunks();
    let total = plan.chunks.len();
    // from here a Ctrl-C or a kill waits until the send has finished
    crate::io::interrupt::begin_typing()?;
    for (i, c) in chunks.iter().enumerate() {
        if c.delay_before_ms > 0 {
            clock.sleep(Duration::from_millis(c.delay_before_ms));
        }
        let r = match c.how {
            ChunkKind::Paste => tmux.paste_guarded(pane, &c.text, guard.filter(|_| i == 0)),
            ChunkKind::Keys => tmux.send_literal(pane, &c.text).map(|()| true),
            ChunkKind::Submit => unreachable!("body_chunks holds no submit"),
        };
        if matches!(r, Ok(false)) {
            return Ok(None);
        }
        if let Err(e) = r {
            return Err(Error::DeliveryFailed {
                sent: i,
                total,
                msg: e.to_string(),
            });
        }
    }
    Ok(Some(Typed {
        chunks_sent: chunks.len(),
        type_ms: (clock.now() - start).as_millis() as u64,
        ..Typed::default()
    }))
}

/// Wait until the typed body shows in the composer and the picture holds still
/// for `quiet`, at most `max`. Returns the last screen (the "before" of verify).
pub fn settle(
    tmux: &mut dyn Tmux,
    pane: &str,
    profile: &Profile,
    clock: &dyn Clock,
    quiet: Duration,
    max: Duration,
    typed: &mut Typed,
) -> Result<Screen> {
    let start = clock.now();
    let mut prev = tmux.read(pane)?;
    let mut since = clock.now();
    loop {
        clock.sleep(Duration::from_millis(10));
        let s = tmux.read(pane)?;
        let now = clock.now();
        if !s.same_picture(&prev) {
            since = now;
        }
        let shows = detect(profile, &s).composer.is_some_and(|c| !c.empty);
        if shows && now - since >= quiet {
            typed.settled = true;
            typed.shown_at = Some(since);
            typed.settle_ms = (now - start).as_millis() as u64;
            return Ok(s);
        }
        if s.dead || now - start >= max {
            typed.settle_ms = (now - start).as_millis() as u64;
            return Ok(s);
        }
        prev = s;
    }
}

/// Clear a draft from the composer with the profile's keys, one tmux call each.
pub fn clear_draft(tmux: &mut dyn Tmux, pane: &str, profile: &Profile) -> Result<()> {
    for k in &profile.capability().clear_keys {
        tmux.send_key(pane, k)?;
        std::thread::sleep(Duration::from_millis(60));
    }
    Ok(())
}

/// Press `key`, as its own tmux call; with a `guard`, only while the pane is as
/// the guard saw it (`Ok(false)`: not pressed).
pub fn press(tmux: &mut dyn Tmux, pane: &str, key: &str, guard: Option<&Guard>) -> Result<bool> {
    match guard {
        Some(g) => tmux.send_key_guarded(pane, key, g),
        None => tmux.send_key(pane, key).map(|()| true),
    }
}

/// Press the submit key ([`press`]).
pub fn submit(tmux: &mut dyn Tmux, pane: &str, plan: &Plan, guard: Option<&Guard>) -> Result<bool> {
    let total = plan.chunks.len();
    press(tmux, pane, &plan.submit().text, guard).map_err(|e| Error::DeliveryFailed {
        sent: total - 1,
        total,
        msg: e.to_string(),
    })
}

/// What is shared by the senders of one fan-out: the submit slot, so that no
/// two targets press their submit key in the same moment.
/// And one control-mode connection that all of them poll through.
pub struct Shared {
    last_submit: std::sync::Mutex<Option<std::time::Instant>>,
    stagger: Duration,
    conn: Option<crate::io::tmux::SharedConn>,
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

    /// The caller gave up (see [`Shared::with_cancel`]).
    fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::SeqCst))
    }

    pub fn new(stagger: Duration) -> Shared {
        Shared {
            last_submit: std::sync::Mutex::new(None),
            stagger,
            conn: None,
            cancel: None,
        }
    }

    /// Poll every target through one connection (attached now, through `pane`).
    pub fn with_connection(mut self, server: &Server, pane: &str) -> Shared {
        self.conn = Control::for_fanout(server.clone(), pane);
        self
    }

    /// Run `f` (the submit) in its own moment: at least `stagger` after the last one.
    pub fn in_slot<T>(&self, f: impl FnOnce() -> T) -> T {
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

/// One target's result: the receipt record (when the gate ran), the exit code, the error.
pub struct Outcome {
    pub pane: String,
    pub rec: Option<Receipt>,
    pub code: i32,
    pub err: Option<Error>,
}

impl Outcome {
    /// `--until-done`: once the prompt was consumed, wait for the turn it started
    /// to end (at most `timeout`); the turn goes into the receipt, and its end
    /// decides the exit code.
    pub fn follow_turn(
        &mut self,
        server: &Server,
        profiles: &Profiles,
        timeout: Duration,
    ) -> Option<crate::engine::gate::Turn> {
        let rec = self.rec.as_mut().filter(|_| self.code == 0)?;
        let start = rec.turn_start();
        // a signal now stops this wait, never the agent: the prompt is delivered
        let stop = &crate::io::interrupt::STOP_WAIT;
        let t = crate::engine::observe::until_done(
            server,
            profiles,
            &rec.agent,
            &self.pane,
            timeout,
            start,
            Some(stop),
        );
        let (code, turn) = match &t {
            Ok(t) => (
                crate::core::verify::turn_code(t),
                TurnReport::Ended(t.clone()),
            ),
            Err(_) if stop.load(std::sync::atomic::Ordering::SeqCst) => (
                crate::core::error::code::STOPPED_AFTER_DELIVERY,
                TurnReport::failed(
                    "stopped waiting: the prompt was delivered and the agent keeps working",
                ),
            ),
            Err(e) => (e.exit_code(), TurnReport::failed(e.to_string())),
        };
        self.code = code;
        rec.turn = Some(turn);
        rec.exit_code = code;
        t.ok()
    }

    fn failed(pane: &str, e: Error) -> Outcome {
        Outcome {
            pane: pane.to_string(),
            rec: None,
            code: e.exit_code(),
            err: Some(e),
        }
    }
}

/// [`Delivery::run`] to `target` on `server`, through a control-mode connection
/// (the fan-out's shared one, when there is one) and the system clock,
/// reporting to `sink` as it goes.
pub fn deliver_to(
    server: &Server,
    profiles: &Profiles,
    opts: &SendOpts,
    target: &str,
    body: &Body,
    shared: &Shared,
    sink: &mut dyn Sink,
) -> Outcome {
    let clock = SystemClock::new();
    let mut tmux = Control::new(server.clone(), target);
    if let Some(c) = &shared.conn {
        tmux.adopt(c.clone());
    }
    Delivery {
        profiles,
        target,
        body,
        opts,
        shared,
    }
    .run(&mut tmux, &clock, sink)
}

/// One delivery of a sanitised body to one target: identify, lock the pane,
/// gate (again, when the pane changed before anything was typed), type,
/// settle, submit (in the shared submit slot, never into a dialog), verify
/// (pressing submit again while stranded, at most the profile's
/// `resubmit_max` times), and prove from the agent's own record.
pub struct Delivery<'a> {
    pub profiles: &'a Profiles,
    /// A pane id or any target tmux resolves to one.
    pub target: &'a str,
    pub body: &'a Body,
    pub opts: &'a SendOpts,
    pub shared: &'a Shared,
}

/// Found before the gate: the agent, the plan, the pane's lock.
struct Prepared {
    server_key: String,
    agent: String,
    plan: Plan,
    lock: PaneLock,
    /// The read that identified the agent, when the gate may take it as its
    /// first poll (no other sender held the pane since it was made).
    first: Option<Screen>,
    pane_pid: Option<u32>,
    /// Told the body when the submit key is pressed (the proof's wait begins).
    submitted: Option<std::sync::mpsc::Sender<String>>,
    /// Set by the proof's wait once the agent's own record holds the body: the
    /// verify then never presses submit again (the agent took the prompt, whatever
    /// the screen still shows).
    taken: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// The submit key may have reached the pane: set before its tmux call,
    /// cleared only when tmux held it back. An error after it cannot say the
    /// prompt was not taken.
    pressed: std::sync::atomic::AtomicBool,
}

/// What gating and typing came to.
struct Attempt {
    /// The last gate (the one before typing, when it gated again).
    gate: GateResult,
    /// `None`: the gate did not open, nothing typed.
    run: Option<Result<Delivered>>,
    /// Why it gated again, each time the pane changed before anything was typed.
    regates: Vec<String>,
    /// Nothing was typed (the pane kept changing, the plan failed, the choke point).
    untyped: bool,
    /// Time spent gating (every gate), not delivering.
    gate_time: Duration,
    /// When the gate opened (Unix ms), right before typing.
    opened_ms: u128,
}

impl Delivery<'_> {
    /// The whole pipeline for one target, in order, telling `sink` as it goes
    /// (its waits and phases). Never panics, never returns early without an
    /// Outcome.
    pub fn run(&self, tmux: &mut dyn Tmux, clock: &dyn Clock, sink: &mut dyn Sink) -> Outcome {
        let read_at = crate::io::tmux::now_ms();
        let (pane, screen) = match tmux.resolve_read(self.target) {
            Ok(v) => v,
            Err(e) => return Outcome::failed(self.target, e),
        };
        let mut prep = match self.prepare(tmux, &pane, screen, read_at, sink) {
            Ok(p) => p,
            Err(e) => return Outcome::failed(&pane, e),
        };
        let profile = match self.profiles.get(&prep.agent) {
            Ok(p) => p,
            Err(e) => return Outcome::failed(&pane, e),
        };
        // the agent's own record, marked before anything is typed (proof of
        // receipt); `--no-verify` returns right after the submit key and looks
        // at no record
        let mark = match self.opts.no_verify {
            true => Err(NOT_VERIFIED.to_string()),
            false => crate::io::record::mark(profile, prep.pane_pid),
        };
        if let Ok(m) = &mark {
            sink.marked(&m.saved());
        }
        let hook_mark = crate::io::record::HookMark::new(&prep.server_key, &pane);
        // the record's proof waits from the submit key on (the body comes
        // when it is pressed), in a thread of its own, while the screen is
        // verified (it was one after the other)
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let taken = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (attempt, early) = prove_beside(
            &mark,
            move || rx.recv().ok(),
            &taken,
            || {
                prep.submitted = Some(tx);
                // only a record that is looked at can say so
                prep.taken = mark.is_ok().then(|| taken.clone());
                let attempt = self.gate_and_type(tmux, clock, profile, &pane, &mut prep, sink);
                prep.submitted = None;
                attempt
            },
            |attempt| match attempt {
                Ok(Attempt {
                    run: Some(Ok(d)), ..
                }) => Some(d.judgement.receipt),
                _ => None,
            },
        );
        let attempt = match attempt {
            Ok(a) => a,
            Err(e) => return Outcome::failed(&pane, e),
        };
        let mut rec = self.receipt(tmux, &pane, &prep, &attempt);
        let (code, err) = match attempt.run {
            // the gate did not open: its refusal
            None => {
                let g = &attempt.gate;
                let e = refusal(&g.state, &g.reason, g.timed_out);
                (e.exit_code(), Some(e))
            }
            Some(Ok(d)) => {
                let mut j = d.judgement;
                let proof = match self.opts.no_verify {
                    true => crate::io::record::Proof::screen(&prep.plan.typed_text(), NOT_VERIFIED),
                    false => prove(&mark, &hook_mark, profile, &prep.plan, &mut j, early),
                };
                rec.proof = Some(proof);
                rec.receipt = j.receipt;
                rec.evidence = Some(j.evidence);
                rec.resubmits = Some(d.resubmits);
                rec.timings = Some(Timings {
                    gate_ms: attempt.gate_time.as_millis() as u64,
                    type_ms: d.typed.type_ms,
                    settle_ms: d.typed.settle_ms,
                    settled: d.typed.settled,
                    verify_ms: d.verify_ms,
                    total_ms: clock.now().as_millis() as u64,
                    submit_at_ms: d.typed.submit_at_ms,
                });
                (receipt_code(&j.receipt), None)
            }
            // an error after the submit key may have reached the pane (a read
            // that timed out in the verify, a submit call that lost its
            // connection): the agent may have taken the prompt, so `unknown`
            // (34: look before sending again), never `failed`, which a wrapper
            // may retry
            Some(Err(e))
                if !attempt.untyped && prep.pressed.load(std::sync::atomic::Ordering::SeqCst) =>
            {
                rec.receipt = ReceiptKind::Unknown;
                let e = Error::Other(format!(
                    "{e}; the submit key was pressed: the agent may have taken the prompt (look at the pane before sending it again)"
                ));
                (receipt_code(&ReceiptKind::Unknown), Some(e))
            }
            Some(Err(e)) => {
                // nothing typed (the pane kept changing): not-sent, as a gate refusal
                rec.receipt = if attempt.untyped {
                    ReceiptKind::NotSent
                } else {
                    ReceiptKind::Failed
                };
                (e.exit_code(), Some(e))
            }
        };
        if let Some(e) = &err {
            rec.error = Some(e.to_string());
        }
        rec.exit_code = code;
        drop(prep.lock);
        Outcome {
            pane,
            rec: Some(rec),
            code,
            err,
        }
    }

    /// Identify the agent (a pane launched a moment ago may not show it yet),
    /// plan the body for it, and take the pane's lock.
    fn prepare(
        &self,
        tmux: &mut dyn Tmux,
        pane: &str,
        screen: Screen,
        read_at: u128,
        sink: &mut dyn Sink,
    ) -> Result<Prepared> {
        let (profiles, a) = (self.profiles, self.opts);
        let server_key = tmux.server_key()?;
        let (first, read_at) =
            observe_at_launch(tmux, profiles, a.agent.as_deref(), pane, screen, read_at)?;
        let Some(agent) = first.identity.agent.clone() else {
            // with --cancel-mode, copy mode is not what stops the send: no
            // agent runs there (24), and its mode stays as it is
            if first.verdict.state == State::InMode && a.cancel_mode {
                return Err(refusal(&State::NotAgent, &first.identity.detail, false));
            }
            return Err(refusal(
                &first.verdict.state,
                &first.verdict.reason(),
                false,
            ));
        };
        let plan = plan_body_for_pane(
            self.body,
            profiles.get(&agent)?.capability(),
            first.screen.bracketed_paste,
        )?;
        let pane_pid = first.screen.pid;
        // not the pane it was meant for (a queued prompt's): nothing typed
        if let (Some(want), Some(have)) = (a.pane_pid, pane_pid) {
            if want != have {
                return Err(Error::PaneChanged(
                    pane.into(),
                    format!("pane_pid is {have}, not {want}: not the pane it was meant for"),
                ));
            }
        }
        sink.wait_begins(pane, &agent, a.lock_timeout);
        let lock = PaneLock::acquire_with(&server_key, pane, a.lock_timeout, &mut || {
            sink.waiting(&mut || {
                let why = "waiting for another sender to this pane to finish";
                ("locked".into(), why.into())
            })
        });
        sink.wait_ends();
        let lock = lock?;
        // the read that identified the agent is the gate's first poll, unless
        // another sender held the pane since it began (it may show that one's body)
        let first = (lock.waited_ms == 0 && lock.last_held_ms < read_at).then_some(first.screen);
        Ok(Prepared {
            server_key,
            agent,
            plan,
            lock,
            first,
            pane_pid,
            submitted: None,
            taken: None,
            pressed: Default::default(),
        })
    }

    /// Gate, then type and verify; when the pane changed after the gate's last
    /// look and nothing was typed (the look before typing, or tmux's own check
    /// on the paste), gate again, a few times. An error of the gate itself ends
    /// the delivery with no receipt.
    fn gate_and_type(
        &self,
        tmux: &mut dyn Tmux,
        clock: &dyn Clock,
        profile: &Profile,
        pane: &str,
        prep: &mut Prepared,
        sink: &mut dyn Sink,
    ) -> Result<Attempt> {
        let (a, shared, force) = (self.opts, self.shared, self.opts.force);
        let mut regates: Vec<String> = Vec::new();
        let mut untyped = false;
        let mut gate_time = Duration::ZERO;
        let mut opened_ms;
        let (gate, run) = loop {
            let t_gate = clock.now();
            // a caller that gave up while the lock was waited for (or between
            // two gates) gets nothing typed, --force or not (the gate itself
            // stops on it too)
            if shared.cancelled() {
                return Err(Error::Cancelled);
            }
            let gate = if force {
                forced_gate(tmux, self.profiles, profile, pane, a)?
            } else {
                let first = prep.first.take();
                run_gate(tmux, self.profiles, profile, (a, shared), pane, first, sink)?
            };
            gate_time += clock.now() - t_gate;
            opened_ms = crate::io::tmux::now_ms();
            if !gate.ready && !force {
                break (gate, None);
            }
            // the agent may have turned bracketed paste on or off since the first look
            if gate.screen.bracketed_paste.is_some() {
                match plan_body_for_pane(
                    self.body,
                    profile.capability(),
                    gate.screen.bracketed_paste,
                ) {
                    Ok(p) => prep.plan = p,
                    Err(e) => {
                        untyped = true;
                        break (gate, Some(Err(e)));
                    }
                }
            }
            let job = Job {
                profiles: self.profiles,
                profile,
                pane,
                plan: &prep.plan,
                pid: a.pane_pid.or(gate.screen.pid),
                gate: &gate,
                opts: a,
                shared,
                submitted: prep.submitted.as_ref(),
                taken: prep.taken.as_deref(),
                pressed: &prep.pressed,
            };
            match job.run(tmux, clock, sink) {
                Ok(Step::Regate(why)) if regates.len() < MAX_REGATES => regates.push(why),
                Ok(Step::Regate(why)) => {
                    untyped = true;
                    let e = Error::PaneChanged(
                        pane.to_string(),
                        format!(
                            "it changed after each of {} ready looks, before anything was typed; nothing typed (last: {why})",
                            MAX_REGATES + 1
                        ),
                    );
                    break (gate, Some(Err(e)));
                }
                Ok(Step::Done(d)) => break (gate, Some(Ok(*d))),
                Ok(Step::Refused(e)) => {
                    untyped = true;
                    break (gate, Some(Err(e)));
                }
                Err(e) => break (gate, Some(Err(e))),
            }
        };
        Ok(Attempt {
            gate,
            run,
            regates,
            untyped,
            gate_time,
            opened_ms,
        })
    }

    /// The receipt as the gate left it: not sent until the typing says otherwise.
    fn receipt(&self, tmux: &dyn Tmux, pane: &str, prep: &Prepared, at: &Attempt) -> Receipt {
        let (pl, gate) = (&prep.plan, &at.gate);
        Receipt {
            time_ms: at.opened_ms as u64,
            pane: pane.to_string(),
            server: prep.server_key.clone(),
            agent: prep.agent.clone(),
            bytes_in: pl.bytes_in,
            bytes_out: pl.bytes_out,
            framing: pl.framing,
            chunks: pl.chunks.len(),
            changes: pl.changes.clone(),
            forced: self.opts.force,
            control_mode: tmux.connected(),
            lock_waited_ms: prep.lock.waited_ms,
            gate: GateSummary {
                ready: gate.ready,
                state: gate.state.to_string(),
                waited_ms: gate.waited_ms,
                polls: gate.polls,
                reason: gate.reason.clone(),
                regated: at.regates.clone(),
            },
            proof: None,
            receipt: ReceiptKind::NotSent,
            error: None,
            evidence: None,
            resubmits: None,
            timings: None,
            exit_code: 0,
            turn: None,
            via: None,
        }
    }
}

/// Why a `--no-verify` send has no proof.
const NOT_VERIFIED: &str = "not looked for (--no-verify)";

/// Read the agent's own record after the submit: a `consumed` (or `unknown`)
/// receipt whose record holds this send's entry with other text is `mangled`;
/// an `unknown` one whose record holds the body is `consumed`; a `consumed`
/// one whose own record (known to be this agent's) stays without this send's
/// entry past its wait is `unproven` (the screen looked taken; the agent
/// recorded nothing).
fn prove(
    mark: &std::result::Result<crate::io::record::Mark, String>,
    hooks: &crate::io::record::HookMark,
    profile: &Profile,
    pl: &Plan,
    j: &mut crate::core::verify::Judgement,
    early: Option<crate::io::record::Proof>,
) -> crate::io::record::Proof {
    let body = pl.typed_text();
    if !matches!(j.receipt, ReceiptKind::Consumed | ReceiptKind::Unknown) {
        return crate::io::record::Proof::screen(&body, &format!("the receipt is {}", j.receipt));
    }
    // the wait that ran beside the verify decides when it found the body; any
    // other finding is looked for again, from now (a resubmit may have been the
    // press the agent took, later than the first)
    let early = early.filter(|p| crate::io::record::is_exact(p.matched));
    let mut proof = match (early, mark) {
        (Some(p), _) => p,
        (None, Ok(m)) => m.prove(&body),
        (None, Err(why)) => crate::io::record::Proof::screen(&body, why),
    };
    // a hook's prompt event (`promptgate hooks install`) proves what no record did
    if !crate::io::record::is_exact(proof.matched) && proof.matched != "mangled" {
        if let Some(h) = hooks.prove(profile.def.record.as_ref(), &body) {
            proof = h;
        }
    }
    let rule = |r: &str| crate::core::detect::Evidence {
        rule: r.into(),
        row: None,
        col: None,
        text: proof.path.clone().unwrap_or_default(),
    };
    match proof.matched {
        "mangled" => {
            j.receipt = ReceiptKind::Mangled;
            j.evidence = rule("record.mangled");
        }
        m if crate::io::record::is_exact(m) && j.receipt == ReceiptKind::Unknown => {
            j.receipt = ReceiptKind::Consumed;
            j.evidence = rule("record.exact");
        }
        "absent" | "not-yet" if j.receipt == ReceiptKind::Consumed && proof.owner_proven() => {
            j.receipt = ReceiptKind::Unproven;
            j.evidence = rule(&format!("record.{}", proof.matched));
        }
        _ => {}
    }
    proof
}

/// Run `work` (the typing, the submit key and the screen's verify) while the
/// agent's record is watched for the body in a thread of its own: the body
/// comes from `body` (when the submit key is pressed, or at once), and a record
/// that holds it sets `taken`, which keeps the verify from pressing submit
/// again. Once `work` is done, a receipt the record cannot change (`receipt`
/// says which it came to: anything but `consumed` or `unknown`) stops the
/// wait. Returns what `work` returned and the proof found beside it.
fn prove_beside<T>(
    mark: &std::result::Result<crate::io::record::Mark, String>,
    body: impl FnOnce() -> Option<String> + Send,
    taken: &std::sync::atomic::AtomicBool,
    work: impl FnOnce() -> T,
    receipt: impl FnOnce(&T) -> Option<ReceiptKind>,
) -> (T, Option<crate::io::record::Proof>) {
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let proving = mark.as_ref().ok().map(|m| {
            let stop = &stop;
            s.spawn(move || {
                let body = body()?;
                let p = m.prove_unless(&body, stop);
                if crate::io::record::is_exact(p.matched) {
                    taken.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                Some(p)
            })
        });
        let out = work();
        if !matches!(
            receipt(&out),
            Some(ReceiptKind::Consumed | ReceiptKind::Unknown)
        ) {
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let early = proving.and_then(|h| h.join().ok().flatten());
        (out, early)
    })
}

/// Press the submit key of a body already typed (a queue item a killed watcher
/// left in the composer), then verify as a send does: the agent's record is
/// marked before the key and watched beside the screen, so a record that takes
/// the body ends the verify as consumed and no submit key is pressed again
/// (an agent that leaves the accepted line where its composer was would take a
/// second Enter as a second prompt). Returns the judgement and its proof.
#[allow(clippy::too_many_arguments)]
pub(crate) fn submit_and_prove(
    tmux: &mut dyn Tmux,
    profile: &Profile,
    pane: &str,
    pl: &Plan,
    before: &Screen,
    server_key: &str,
    timeout: Duration,
    clock: &dyn Clock,
) -> Result<(crate::core::verify::Judgement, crate::io::record::Proof)> {
    let mark = crate::io::record::mark(profile, before.pid);
    let hook_mark = crate::io::record::HookMark::new(server_key, pane);
    let taken = std::sync::atomic::AtomicBool::new(false);
    let body = pl.typed_text();
    let (verified, early) = prove_beside(
        &mark,
        move || Some(body),
        &taken,
        || {
            let pressed = submit(tmux, pane, pl, Guard::of(before).as_ref())?;
            if !pressed {
                return Err(Error::PaneChanged(
                    pane.to_string(),
                    "it changed since the look before the submit key; nothing pressed".into(),
                ));
            }
            let t = mark.is_ok().then_some(&taken);
            verify_loop(
                tmux, profile, pane, pl, before, false, timeout, clock, None, t,
            )
        },
        |verified| verified.as_ref().ok().map(|(j, _, _)| j.receipt),
    );
    let (mut j, _, _) = verified?;
    let proof = prove(&mark, &hook_mark, profile, pl, &mut j, early);
    Ok((j, proof))
}

/// `--force`: no waiting, but never into a dead pane.
fn forced_gate(
    tmux: &mut dyn Tmux,
    profiles: &Profiles,
    profile: &Profile,
    pane: &str,
    a: &SendOpts,
) -> Result<GateResult> {
    let mut s = tmux.read(pane)?;
    if s.dead {
        return Err(refusal(&State::Exited, "pane_dead=1", false));
    }
    // --cancel-mode still leaves copy/view mode first (see Job::run), only in
    // a pane that may be typed into: a shell's copy mode (its selection, its
    // scroll position) is left as it is, and the send refused
    if s.in_mode && a.cancel_mode {
        may_type(profiles, pane, &s, a)?;
        tmux.cancel_mode(pane)?;
        s = tmux.read(pane)?;
    }
    // --replace-draft still clears an idle agent's draft first (never a busy
    // one's: its clear keys, Escape or Ctrl-C, would stop the turn)
    if a.replace_draft
        && detect(profile, &s).state == State::Draft
        && !profile.capability().clear_keys.is_empty()
    {
        // one look can be a torn frame (a busy agent's spinner row mid-redraw),
        // and the clear keys (Escape, Ctrl-C) would stop its turn: the draft
        // is cleared only when a second look a moment later shows the same
        // picture; else it stays, and the send is refused as a draft (26)
        std::thread::sleep(Duration::from_millis(100));
        let again = tmux.read(pane)?;
        if again.same_picture(&s) && detect(profile, &again).state == State::Draft {
            may_type(profiles, pane, &again, a)?;
            clear_draft(tmux, pane, profile)?;
            s = tmux.read(pane)?;
        } else {
            s = again;
        }
    }
    let v = detect(profile, &s);
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
    tmux: &mut dyn Tmux,
    profiles: &Profiles,
    profile: &Profile,
    (a, shared): (&SendOpts, &Shared),
    pane: &str,
    mut first: Option<Screen>,
    sink: &mut dyn Sink,
) -> Result<GateResult> {
    // keys that would reach other panes too (a synchronized window), or none
    // (input off): refused at the first look, not after waiting for a busy
    // agent to be free
    if let Some(s) = first.as_ref().filter(|s| s.keys_astray.is_some()) {
        may_type(profiles, pane, s, a)?;
    }
    let mut opts = a.gate.clone();
    opts.cancel = shared.cancel.clone();
    if a.when_ready {
        opts.wait_busy = true;
        opts.timeout = opts.timeout.max(Duration::from_secs(600));
    }
    let mut cancelled = false;
    let mut cleared = false;
    loop {
        let (_, g) = crate::engine::observe::gate_live(
            tmux,
            profiles,
            Some(profile.name()),
            pane,
            &opts,
            first.take(),
            Some(&mut *sink),
        )?;
        if g.state == State::InMode && a.cancel_mode && !cancelled {
            // never a mode left in a pane nothing may be typed into
            may_type(profiles, pane, &g.screen, a)?;
            tmux.cancel_mode(pane)?;
            cancelled = true;
            continue;
        }
        if g.state == State::Draft
            && a.replace_draft
            && !cleared
            && !profile.capability().clear_keys.is_empty()
        {
            may_type(profiles, pane, &g.screen, a)?;
            clear_draft(tmux, pane, profile)?;
            cleared = true;
            continue;
        }
        return Ok(g);
    }
}

/// What the typing and the verification came to.
struct Delivered {
    typed: Typed,
    judgement: Judgement,
    resubmits: u32,
    verify_ms: u64,
}

/// How a delivery ended: done (whatever the receipt), or nothing typed because
/// the pane changed after the gate's last look (gate again).
enum Step {
    Done(Box<Delivered>),
    Regate(String),
    /// Nothing typed: the choke point ([`may_type`]) found no agent in the pane,
    /// or a forced send found a dialog, copy mode or a draft.
    Refused(Error),
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
    profiles: &'a Profiles,
    profile: &'a Profile,
    pane: &'a str,
    plan: &'a Plan,
    pid: Option<u32>,
    /// The gate's last look (its screen, read again before typing unless it is
    /// fresh, and the state it read there).
    gate: &'a GateResult,
    opts: &'a SendOpts,
    shared: &'a Shared,
    /// Told the body the moment the submit key is pressed: the proof from the
    /// agent's record starts waiting then, beside the screen's verify.
    submitted: Option<&'a std::sync::mpsc::Sender<String>>,
    /// Set once the agent's record holds the body (see `Prepared::taken`).
    taken: Option<&'a std::sync::atomic::AtomicBool>,
    /// See `Prepared::pressed`.
    pressed: &'a std::sync::atomic::AtomicBool,
}

impl Job<'_> {
    fn run(&self, tmux: &mut dyn Tmux, clock: &dyn Clock, sink: &mut dyn Sink) -> Result<Step> {
        let Job {
            profiles,
            profile,
            pane,
            plan: pl,
            pid,
            gate,
            opts: a,
            shared,
            submitted,
            taken,
            pressed,
        } = *self;
        let force = a.force;
        // A screen read this very moment, of the live process the gate saw, is the
        // look before a write: it is not read again.
        let fresh = |s: &Screen| {
            crate::io::tmux::now_ms().saturating_sub(s.taken_at_ms) <= FRESH_MS
                && !s.dead
                && s.pid == pid
        };
        let s0 = if fresh(&gate.screen) {
            gate.screen.clone()
        } else {
            check_same_pane(tmux, pane, pid)?
        };
        if let Err(e) = may_type(profiles, pane, &s0, a) {
            return Ok(Step::Refused(e));
        }
        let v0 = detect(profile, &s0);
        // --force skips the wait, never these: a body (or its `1`, `y`) typed into a
        // dialog can answer it (approve a tool call), keys sent to a pane in
        // copy/view mode drive the mode, not the agent, and a body typed after a
        // draft (someone's half-typed text, busy or not) goes to the agent joined
        // to it: a prompt nobody wrote
        if force {
            let draft = v0.composer.as_ref().is_some_and(|c| !c.empty);
            let refused = match v0.state {
                State::Dialog(_) | State::InMode | State::Draft => Some(v0.state.clone()),
                _ if draft => Some(State::Draft),
                // no composer and no known picture: what the profile cannot read
                // (a new release's dialog, a menu) may take a `1` or an Enter
                State::Unknown | State::Starting if v0.composer.is_none() && !a.to_any_process => {
                    Some(v0.state.clone())
                }
                _ => None,
            };
            if let Some(state) = refused {
                let reason = match state {
                    State::Unknown | State::Starting => format!(
                        "{} (no composer on screen: --force types only where the agent's composer shows, or into a busy agent)",
                        v0.reason()
                    ),
                    _ => format!("{} (--force skips the wait, not this)", v0.reason()),
                };
                return Ok(Step::Refused(refusal(&state, &reason, false)));
            }
        }
        // a forced send into a busy agent, by any look before the typing: the
        // look before the submit alone can be torn (a spinner row mid-redraw)
        let busy_seen = v0.state == State::Busy || gate.state == State::Busy;
        if !force && v0.state != State::Ready {
            return Ok(Step::Regate(format!(
                "changed after the gate, before typing: {} ({})",
                v0.state,
                v0.reason()
            )));
        }
        // told (the queue journals it) before the first byte, or nothing is typed
        if shared.cancelled() {
            return Ok(Step::Refused(Error::Cancelled));
        }
        sink.phase(Phase::Typing)?;
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
            // the agent still in front: one that exited since the paste left a
            // shell there, which would run the body as a command
            if let Some((refused, why)) = why_not_type(profiles, &before, a) {
                let what = match refused {
                    Refused::KeysAstray => "keys would not reach it alone",
                    _ => "no agent runs in it now",
                };
                return Err(Error::PaneChanged(
                    pane.to_string(),
                    format!(
                        "in the moment before the submit, {what}: {why}; the body is typed but not submitted"
                    ),
                ));
            }
            let vb = detect(profile, &before);
            if let State::Dialog(_) = vb.state {
                if a.gate.wait_dialog && held_back <= MAX_HELD_BACK {
                    held_back += 1;
                    let wait = a.gate.timeout;
                    before = settle(tmux, pane, profile, clock, quiet, wait, &mut typed)?;
                    if !matches!(detect(profile, &before).state, State::Dialog(_)) {
                        continue;
                    }
                }
                let evidence = crate::core::detect::Evidence {
                    rule: "verify.dialog-before-submit".into(),
                    ..vb.evidence.clone()
                };
                let j = Judgement {
                    receipt: ReceiptKind::Refused,
                    evidence,
                    verdict: vb,
                };
                return Ok(Step::Done(Box::new(Delivered {
                    typed,
                    judgement: j,
                    resubmits: 0,
                    verify_ms: 0,
                })));
            }
            // the submit key goes where the agent's composer shows (with the
            // body), or where a rule reads the agent's own states (a draft
            // that overflows the box, as Aider's 5 KB paste does, shows no
            // composer; a busy agent queues a forced send): a picture no rule
            // reads and with no composer (a dialog of a newer release, a menu)
            // could take the Enter as its answer
            // (`--to-any-process`: whatever runs there, as asked)
            if vb.composer.is_none()
                && !matches!(vb.state, State::Busy | State::Draft | State::Ready)
                && !a.to_any_process
            {
                if held_back < MAX_HELD_BACK {
                    held_back += 1;
                    before = settle(tmux, pane, profile, clock, quiet, settle_max, &mut typed)?;
                    continue;
                }
                return Err(Error::PaneChanged(
                    pane.to_string(),
                    format!(
                        "in the moment before the submit no composer shows ({}: {}); the body is typed but not submitted",
                        vb.state,
                        vb.reason()
                    ),
                ));
            }
            if !announced {
                sink.phase(Phase::Submitting)?;
                announced = true;
            }
            let guard = Guard::of(&before);
            // when the submit key was issued (its tmux call may return much later
            // on a loaded machine, after the agent has already taken the prompt)
            let mut pressed_at = 0;
            // (an error of the call leaves it set: the key may have reached tmux)
            pressed.store(true, std::sync::atomic::Ordering::SeqCst);
            if shared.in_slot(|| {
                pressed_at = crate::io::tmux::now_ms() as u64;
                submit(tmux, pane, pl, guard.as_ref())
            })? {
                typed.submit_at_ms = pressed_at;
                if let Some(tx) = submitted {
                    let _ = tx.send(pl.typed_text());
                }
                break;
            }
            // tmux held the key back: not pressed
            pressed.store(false, std::sync::atomic::Ordering::SeqCst);
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
        if a.no_verify {
            let j = Judgement {
                receipt: ReceiptKind::Submitted,
                evidence: crate::core::detect::Evidence {
                    rule: "verify.skipped".into(),
                    ..Default::default()
                },
                verdict: detect(profile, &before),
            };
            return Ok(Step::Done(Box::new(Delivered {
                typed,
                judgement: j,
                resubmits: 0,
                verify_ms: 0,
            })));
        }
        sink.wait_begins(pane, profile.name(), a.verify_timeout);
        let verified = verify_loop(
            tmux,
            profile,
            pane,
            pl,
            &before,
            busy_seen,
            a.verify_timeout,
            clock,
            Some(&mut *sink),
            taken,
        );
        sink.wait_ends();
        let (j, resubmits, ms) = verified?;
        Ok(Step::Done(Box::new(Delivered {
            typed,
            judgement: j,
            resubmits,
            verify_ms: ms,
        })))
    }
}

/// How long a dialog seen after the submit waits for the agent's record to show
/// the body (the dialog then belongs to the turn the prompt started).
const RECORD_AFTER_DIALOG: Duration = Duration::from_millis(1500);

/// How long a prompt submitted while the agent was busy (a forced send) is
/// watched for the agent's queue marker before the screen's "consumed" is
/// believed: the agent was busy before the submit, so busy after it says
/// nothing, and Copilot, OpenCode and Kilo draw their queue marker a moment
/// after the composer empties (a real forced send read `consumed` 61-68 ms
/// after its Enter, the prompt parked until the turn ended).
const QUEUE_DRAWN: Duration = Duration::from_millis(1500);

/// Watch until consumed or refused; press submit again (bounded) while stranded.
/// `sink`, whose wait the caller began, is told of each look. `taken` (set by the
/// wait on the agent's own record once it holds the body) ends a stranded look as
/// consumed and keeps the submit key from being pressed again: an agent can leave
/// the accepted text where its composer was for a while (Aider's prompt_toolkit
/// line, until the model answers), and a second Enter there is a second prompt.
/// `busy_seen`: a look before `before` (the gate's, the one before typing) read
/// the agent busy; `before` alone could be a torn frame.
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_loop(
    tmux: &mut dyn Tmux,
    profile: &Profile,
    pane: &str,
    pl: &Plan,
    before: &Screen,
    busy_seen: bool,
    timeout: Duration,
    clock: &dyn Clock,
    mut sink: Option<&mut dyn Sink>,
    taken: Option<&std::sync::atomic::AtomicBool>,
) -> Result<(Judgement, u32, u64)> {
    let start = clock.now();
    let mut resubmits = 0u32;
    let mut stranded_since: Option<Duration> = None;
    let mut last_press = start;
    let grace = Duration::from_millis(
        pl.submit()
            .delay_before_ms
            .saturating_add(profile.capability().resubmit_after_ms),
    );
    // when a dialog was first seen after the submit (see the Refused arm)
    let mut dialog_since: Option<Duration> = None;
    // busy at the submit, with a queue the agent shows (see QUEUE_DRAWN)
    let may_park =
        !profile.queued.is_empty() && (busy_seen || detect(profile, before).state == State::Busy);
    // the agent's queue marker, first seen (rule, ms after the submit): a later
    // `consumed` is the parked prompt run, and says so
    let mut parked: Option<(String, u64)> = None;
    loop {
        clock.sleep(Duration::from_millis(25));
        let s = match tmux.read(pane) {
            Ok(s) => s,
            // `/exit` closed the agent and its pane with it: asked for, and done
            Err(_) if crate::core::verify::is_exit_command(&pl.body) => {
                let j = crate::core::verify::Judgement {
                    receipt: ReceiptKind::Consumed,
                    evidence: crate::core::detect::Evidence {
                        rule: "verify.exit-command (pane closed)".into(),
                        row: None,
                        col: None,
                        text: String::new(),
                    },
                    verdict: detect(profile, before),
                };
                return Ok((j, resubmits, (clock.now() - start).as_millis() as u64));
            }
            Err(e) => {
                return Err(Error::refused(
                    Refused::Gone,
                    format!("pane went away after the submit: {e}"),
                ))
            }
        };
        let j = judge(profile, &pl.body, before, &s);
        if let Some(l) = sink.as_deref_mut() {
            l.waiting(&mut || {
                let why = "submitted; waiting for proof that the agent took the prompt";
                (j.verdict.state.to_string(), why.into())
            });
        }
        let now = clock.now();
        let held = || taken.is_some_and(|t| t.load(std::sync::atomic::Ordering::SeqCst));
        match j.receipt {
            // A prompt that may sit in the agent's queue (a forced send into a busy
            // agent, its queue marker seen or not drawn yet) and shows where the
            // composer was: not stranded, and the record holding the body proves
            // nothing (Kilo and OpenCode write their input history as they park a
            // prompt, drawn for a moment in the composer before the `QUEUED` badge:
            // a real forced send read `consumed` 35 ms after its Enter). Look
            // again, press nothing (a second Enter would submit it twice).
            ReceiptKind::Stranded
                if parked.is_some() || (may_park && now - start < QUEUE_DRAWN) =>
            {
                stranded_since = None;
            }
            // Once the agent's record holds the body, it took the prompt: a body
            // still shown where the composer was is not stranded (never pressed
            // again), and a dialog after the submit is the turn's own (a tool
            // approval, drawn before any busy look when the model answers at once)
            // rather than one that took the Enter.
            ReceiptKind::Refused | ReceiptKind::Stranded if held() => {
                let why = match j.receipt {
                    ReceiptKind::Refused => {
                        format!("then {}: the turn it started", j.evidence.rule)
                    }
                    _ => "the screen still shows it where the composer was".into(),
                };
                let j = Judgement {
                    receipt: ReceiptKind::Consumed,
                    evidence: crate::core::detect::Evidence {
                        rule: format!("verify.record-holds-body ({why})"),
                        ..j.evidence
                    },
                    verdict: j.verdict,
                };
                return Ok((j, resubmits, (now - start).as_millis() as u64));
            }
            // a dialog, the record not (yet) holding the body: while it is looked
            // at, give it a moment (Claude writes its transcript ~150 ms after the
            // submit), pressing nothing; the loop's own timeout ends this wait too
            ReceiptKind::Refused
                if taken.is_some()
                    && now - *dialog_since.get_or_insert(now) < RECORD_AFTER_DIALOG => {}
            // the composer emptied under a busy agent: taken, or parked in its
            // queue with the marker not drawn yet; look again (a record that
            // holds the body says no more: an agent can record a prompt as it
            // parks it, Kilo's and OpenCode's input history)
            ReceiptKind::Consumed if may_park && now - start < QUEUE_DRAWN => {}
            ReceiptKind::Consumed if parked.is_some() => {
                let (rule, at) = parked.take().unwrap_or_default();
                let mut j = j;
                j.evidence.rule = format!(
                    "verify.left-the-queue ({rule} seen {at} ms after the submit, then {})",
                    j.evidence.rule
                );
                return Ok((j, resubmits, (now - start).as_millis() as u64));
            }
            ReceiptKind::Consumed | ReceiptKind::Refused => {
                return Ok((j, resubmits, (now - start).as_millis() as u64))
            }
            ReceiptKind::Queued => {
                let at = (now - start).as_millis() as u64;
                parked.get_or_insert_with(|| (j.evidence.rule.clone(), at));
                stranded_since = None;
            }
            ReceiptKind::Stranded => {
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
            // parked, and shown where the composer was at the last look: still queued
            let j = match &parked {
                Some((rule, at)) if j.receipt == ReceiptKind::Stranded && held() => Judgement {
                    receipt: ReceiptKind::Queued,
                    evidence: crate::core::detect::Evidence {
                        rule: format!("{rule} (seen {at} ms after the submit; still parked)"),
                        ..j.evidence
                    },
                    verdict: j.verdict,
                },
                _ => j,
            };
            return Ok((j, resubmits, (now - start).as_millis() as u64));
        }
    }
}

/// [`Delivery::run`] through a scripted tmux ([`crate::io::tmux::fake`]) and a
/// clock that moves only when slept on: the order of the steps, in
/// milliseconds, with no tmux server.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::code;
    use crate::engine::gate::ManualClock;
    use crate::io::tmux::fake::FakeTmux;

    const PANE: &str = "%1";
    const BODY: &str = "hello world";

    fn fixture(name: &str) -> Screen {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut s = crate::io::capture::load(&root.join(format!("{name}.txt")), None).unwrap();
        // no process to look at in /proc: the pane's pid is unknown
        s.pid = None;
        s
    }

    fn ready() -> Screen {
        fixture("claude/05-idle-after-onboarding")
    }
    /// `hello world` in the composer.
    fn typed() -> Screen {
        fixture("claude/10-typed-hello")
    }
    /// `hello world` echoed, the agent busy with it.
    fn submitted() -> Screen {
        fixture("claude/11-submit-0.2s")
    }
    fn dialog() -> Screen {
        fixture("claude/04-trust-dialog")
    }

    /// Where the body was written (pasted or typed as keys), if it was.
    fn typed_at(log: &[String]) -> Option<usize> {
        log.iter()
            .position(|l| l.starts_with("paste ") || l.starts_with("literal "))
    }

    /// How many log entries since the body was written start with `prefix`.
    fn since_typed(log: &[String], prefix: &str) -> usize {
        typed_at(log).map_or(0, |at| {
            log[at..].iter().filter(|l| l.starts_with(prefix)).count()
        })
    }

    fn run(tmux: &mut FakeTmux, body: &str, opts: &SendOpts) -> (Outcome, Duration) {
        let profiles = Profiles::builtin();
        let body = Body::sanitise(body.as_bytes()).unwrap();
        let shared = Shared::new(Duration::ZERO);
        let clock = ManualClock::default();
        let o = Delivery {
            profiles: &profiles,
            target: PANE,
            body: &body,
            opts,
            shared: &shared,
        }
        .run(tmux, &clock, &mut crate::engine::sink::Quiet);
        (o, clock.now())
    }

    fn claude() -> SendOpts {
        SendOpts {
            agent: Some("claude".into()),
            ..SendOpts::default()
        }
    }

    fn receipt(o: &Outcome) -> String {
        o.rec.as_ref().expect("a receipt").receipt.to_string()
    }

    /// The body still shows where the composer was (Aider leaves the accepted
    /// line there until the model answers) but the agent's record holds it: the
    /// verify ends consumed at once and never presses the submit key again
    /// (a second Enter is a second, empty prompt). Without the record's word the
    /// same screen is stranded and pressed again.
    #[test]
    fn a_body_the_record_holds_is_never_submitted_twice() {
        let profiles = Profiles::builtin();
        let profile = profiles.get("claude").unwrap();
        let pl = crate::core::plan::plan(BODY.as_bytes(), profile.capability()).unwrap();
        let stranded = || {
            FakeTmux::new(
                PANE,
                Box::new(|_: &[String], _: &str| ("typed".into(), typed())),
            )
        };
        let run = |tmux: &mut FakeTmux, taken: Option<&std::sync::atomic::AtomicBool>| {
            let clock = ManualClock::default();
            let t = Duration::from_secs(5);
            verify_loop(
                tmux,
                profile,
                PANE,
                &pl,
                &ready(),
                false,
                t,
                &clock,
                None,
                taken,
            )
            .unwrap()
        };
        let held = std::sync::atomic::AtomicBool::new(true);
        let mut tmux = stranded();
        let (j, resubmits, _) = run(&mut tmux, Some(&held));
        assert_eq!(j.receipt, ReceiptKind::Consumed);
        assert!(
            j.evidence.rule.starts_with("verify.record-holds-body"),
            "{}",
            j.evidence.rule
        );
        assert_eq!((resubmits, tmux.calls("key").len()), (0, 0));

        let not_yet = std::sync::atomic::AtomicBool::new(false);
        let mut tmux = stranded();
        let (j, resubmits, _) = run(&mut tmux, Some(&not_yet));
        assert_eq!(j.receipt, ReceiptKind::Stranded);
        assert!(resubmits > 0 && !tmux.calls("key Enter").is_empty());

        // a dialog after the submit: the turn's own (a tool approval) when the
        // record holds the body; refused when it does not, after a moment to
        // look; at once when no record is looked at. Never a key.
        let on_dialog = || {
            FakeTmux::new(
                PANE,
                Box::new(|_: &[String], _: &str| ("dialog".into(), dialog())),
            )
        };
        let mut tmux = on_dialog();
        let (j, _, _) = run(&mut tmux, Some(&held));
        assert_eq!(j.receipt, ReceiptKind::Consumed, "{}", j.evidence.rule);
        assert!(j
            .evidence
            .rule
            .starts_with("verify.record-holds-body (then "));
        let mut tmux = on_dialog();
        let (j, _, ms) = run(&mut tmux, Some(&not_yet));
        assert_eq!(j.receipt, ReceiptKind::Refused);
        assert!(ms >= RECORD_AFTER_DIALOG.as_millis() as u64, "{ms}");
        let mut tmux = on_dialog();
        let (j, _, ms) = run(&mut tmux, None);
        assert_eq!((j.receipt, ms < 100), (ReceiptKind::Refused, true), "{ms}");
        assert!(tmux.calls("key").is_empty());
    }

    /// A forced send into a busy Copilot: the composer empties at the Enter and
    /// the agent's `[pending]` row is drawn a moment later (real screens: the
    /// streaming reply, then the prompt parked under it). The first looks show
    /// busy and an empty composer, which is not proof it ran: the receipt is
    /// `queued` once the marker shows. When no marker shows, `consumed` after the
    /// window; an agent idle at the submit is `consumed` at the first look.
    #[test]
    fn a_prompt_submitted_to_a_busy_agent_is_watched_for_its_queue_marker() {
        let profiles = Profiles::builtin();
        let profile = profiles.get("copilot").unwrap();
        let body = "pg-quick queued second prompt";
        let pl = crate::core::plan::plan(body.as_bytes(), profile.capability()).unwrap();
        let streaming = || fixture("copilot/v1.0.102-41-model-streaming-120x40");
        // the looks after the submit: the parked prompt's marker from look
        // `from` up to (not including) look `to`; busy with no marker otherwise
        let run = |from: usize, to: usize, before: Screen, busy_seen: bool| {
            let reads = std::sync::atomic::AtomicUsize::new(0);
            let mut tmux = FakeTmux::new(
                PANE,
                Box::new(move |_: &[String], _: &str| {
                    let n = reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    match (from..to).contains(&n) {
                        true => (
                            "parked".into(),
                            fixture("copilot/v1.0.102-45-model-queued-prompt-120x40"),
                        ),
                        false => ("streaming".into(), streaming()),
                    }
                }),
            );
            let clock = ManualClock::default();
            let t = Duration::from_secs(3);
            let (j, _, ms) = verify_loop(
                &mut tmux, profile, PANE, &pl, &before, busy_seen, t, &clock, None, None,
            )
            .unwrap();
            (j, ms)
        };
        // the marker drawn at the fourth look (~100 ms), kept: queued, held to the timeout
        let (j, ms) = run(3, usize::MAX, streaming(), false);
        assert_eq!((j.receipt, ms >= 3000), (ReceiptKind::Queued, true), "{ms}");
        // the turn ends and the agent runs the prompt (the marker gone, busy
        // again): consumed, its evidence saying it left the queue
        let (j, ms) = run(3, 40, streaming(), false);
        assert_eq!(j.receipt, ReceiptKind::Consumed);
        assert!(
            j.evidence
                .rule
                .starts_with("verify.left-the-queue (copilot.pending seen "),
            "{}",
            j.evidence.rule
        );
        assert!((1000..3000).contains(&ms), "{ms}");
        // never drawn: consumed, after the window and not at the first look
        let (j, ms) = run(usize::MAX, usize::MAX, streaming(), false);
        assert_eq!(j.receipt, ReceiptKind::Consumed);
        assert!(ms >= QUEUE_DRAWN.as_millis() as u64 && ms < 3000, "{ms}");
        // idle before the submit: the first busy look is the agent taking it
        let ready = fixture("copilot/v1.0.102-ready-120x40");
        assert_eq!(detect(profile, &ready).state, State::Ready);
        let (j, ms) = run(usize::MAX, usize::MAX, ready.clone(), false);
        assert_eq!((j.receipt, ms < 100), (ReceiptKind::Consumed, true), "{ms}");
        // the look before the submit torn (no busy row drawn in it) while the
        // gate's look read busy: still watched for the marker, still queued
        let (j, ms) = run(3, usize::MAX, ready, true);
        assert_eq!((j.receipt, ms >= 3000), (ReceiptKind::Queued, true), "{ms}");
    }

    /// A forced send into a busy agent whose record takes the prompt as it parks
    /// it (Kilo's and OpenCode's input history): the prompt is drawn a moment
    /// where the composer was, the record already holds it, and only then the
    /// queue marker. Neither look is proof that it ran, and no submit key is
    /// pressed again: `queued` while parked, `consumed` once it left the queue.
    #[test]
    fn a_parked_prompt_the_record_holds_is_not_consumed_until_it_runs() {
        let profiles = Profiles::builtin();
        let profile = profiles.get("copilot").unwrap();
        const BODY: &str = "pg-quick queued second prompt";
        let pl = crate::core::plan::plan(BODY.as_bytes(), profile.capability()).unwrap();
        fn streaming() -> Screen {
            fixture("copilot/v1.0.102-41-model-streaming-120x40")
        }
        // the body drawn in the composer of the busy agent (the moment before its
        // queue marker)
        fn shown() -> Screen {
            let mut s = streaming();
            let row = s.rows.iter().position(|r| r.trim_end() == "❯").unwrap();
            s.rows[row] = format!("❯ {BODY}");
            s.styles = None;
            s
        }
        let before = streaming();
        assert_eq!(
            judge(profile, BODY, &before, &shown()).receipt,
            ReceiptKind::Stranded
        );
        // looks: shown (0..3), then the marker (3..to), then running (busy)
        let run = |to: usize| {
            let reads = std::sync::atomic::AtomicUsize::new(0);
            let mut tmux = FakeTmux::new(
                PANE,
                Box::new(move |_: &[String], _: &str| {
                    let n = reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    match n {
                        0..3 => ("shown".into(), shown()),
                        n if n < to => (
                            "parked".into(),
                            fixture("copilot/v1.0.102-45-model-queued-prompt-120x40"),
                        ),
                        _ => ("streaming".into(), streaming()),
                    }
                }),
            );
            let clock = ManualClock::default();
            let held = std::sync::atomic::AtomicBool::new(true);
            let t = Duration::from_secs(3);
            let (j, _, ms) = verify_loop(
                &mut tmux,
                profile,
                PANE,
                &pl,
                &before,
                true,
                t,
                &clock,
                None,
                Some(&held),
            )
            .unwrap();
            (j, ms, tmux.calls("key").len())
        };
        let (j, ms, keys) = run(usize::MAX);
        assert_eq!(
            (j.receipt, ms >= 3000, keys),
            (ReceiptKind::Queued, true, 0),
            "{ms}"
        );
        let (j, ms, keys) = run(40);
        assert_eq!((j.receipt, keys), (ReceiptKind::Consumed, 0), "{ms}");
        assert!(
            j.evidence.rule.starts_with("verify.left-the-queue ("),
            "{}",
            j.evidence.rule
        );
    }

    /// The choke point: a shell in the foreground gets nothing, whatever the
    /// flags say (`--agent`, `--force`, `--when-ready`, `--no-verify`,
    /// `--replace-draft`); exit 24, or the gate's own refusal.
    #[test]
    fn nothing_is_typed_into_a_shell_whatever_the_flags() {
        let shell = || {
            let mut s = ready();
            s.command = Some("bash".into());
            s
        };
        for (force, when_ready, no_verify, replace_draft) in [
            (true, false, false, false),
            (true, true, true, true),
            (false, true, false, true),
            (false, false, true, false),
        ] {
            let mut tmux = FakeTmux::new(PANE, Box::new(move |_, _| ("shell".into(), shell())));
            let opts = SendOpts {
                force,
                when_ready,
                no_verify,
                replace_draft,
                ..claude()
            };
            let (o, _) = run(&mut tmux, BODY, &opts);
            assert!(
                [code::REFUSED_NOT_AGENT, code::REFUSED_EXITED].contains(&o.code),
                "{}: {:?}",
                o.code,
                o.err
            );
            if force {
                assert_eq!(o.code, code::REFUSED_NOT_AGENT);
            }
            assert!(
                tmux.log.iter().all(|l| l.starts_with("read ")),
                "{:?}",
                tmux.log
            );
        }
        // `--to-any-process` (with --agent and --force) is the one way in
        let mut tmux = FakeTmux::new(PANE, Box::new(move |_, _| ("shell".into(), shell())));
        let opts = SendOpts {
            force: true,
            to_any_process: true,
            verify_timeout: Duration::ZERO,
            ..claude()
        };
        let _ = run(&mut tmux, BODY, &opts);
        assert!(typed_at(&tmux.log).is_some(), "{:?}", tmux.log);
    }

    /// The body shows only on the 8th read after it was typed: the Enter waits
    /// for it (and for it to hold still), then the agent takes the prompt.
    #[test]
    fn no_enter_before_the_body_is_drawn() {
        let t0 = std::time::Instant::now();
        let mut tmux = FakeTmux::new(
            PANE,
            Box::new(|log: &[String], _: &str| {
                if log.iter().any(|l| l == "key Enter") {
                    return ("submitted".into(), submitted());
                }
                match since_typed(log, "read") {
                    _ if typed_at(log).is_none() => ("ready".into(), ready()),
                    n if n < 8 => ("not-drawn".into(), ready()),
                    _ => ("typed".into(), typed()),
                }
            }),
        );
        let (o, _) = run(&mut tmux, BODY, &claude());
        assert_eq!(o.code, 0, "{:?} {:?}\n{:#?}", o.err, o.rec, tmux.log);
        assert_eq!(receipt(&o), "consumed");
        assert_eq!(tmux.calls("paste"), vec!["paste hello world"]);
        assert_eq!(tmux.calls("key"), vec!["key Enter"], "{:#?}", tmux.log);
        let enter = tmux.log.iter().position(|l| l == "key Enter").unwrap();
        let drawn = tmux.log.iter().position(|l| l == "read typed").unwrap();
        assert!(
            drawn < enter,
            "Enter before the body showed: {:#?}",
            tmux.log
        );
        // the look right before the Enter saw the body
        let last_look = tmux.log[..enter]
            .iter()
            .rev()
            .find(|l| l.starts_with("read") || l.starts_with("look"))
            .unwrap();
        assert!(last_look.ends_with("typed"), "{:#?}", tmux.log);
        assert!(t0.elapsed() < Duration::from_secs(2), "no real waiting");
    }

    /// A dialog drawn after the last look, in the moment of the submit: tmux
    /// holds the Enter back (the guard), the next look sees the dialog, and the
    /// receipt is refused with no Enter pressed.
    #[test]
    fn no_enter_into_a_dialog_drawn_after_the_last_look() {
        let mut tmux = FakeTmux::new(
            PANE,
            Box::new(|log: &[String], verb: &str| {
                if typed_at(log).is_some() && (verb == "look" || since_typed(log, "look") > 0) {
                    return ("dialog".into(), dialog());
                }
                if typed_at(log).is_some() {
                    return ("typed".into(), typed());
                }
                ("ready".into(), ready())
            }),
        );
        let (o, _) = run(&mut tmux, BODY, &claude());
        assert!(tmux.calls("key").is_empty(), "{:#?}", tmux.log);
        assert_eq!(tmux.calls("held"), vec!["held Enter"], "{:#?}", tmux.log);
        assert_eq!(receipt(&o), "refused", "{:?}", o.err);
        assert_eq!(o.code, code::RECEIPT_REFUSED);
        let rec = o.rec.unwrap();
        assert_eq!(rec.rule(), "verify.dialog-before-submit");
    }

    /// A picture no rule reads and with no composer replaces the composer
    /// after the paste (a dialog of a newer release, a menu): the Enter, which
    /// could answer it, is never pressed; the body is typed but not submitted.
    #[test]
    fn no_enter_into_a_picture_with_no_composer() {
        let unknown = || {
            let mut s = dialog();
            for (i, r) in s.rows.iter_mut().enumerate() {
                *r = match i {
                    3 => " Pick what this tool may do next:".into(),
                    5 => "   > Allow it always".into(),
                    6 => "     Allow it this time".into(),
                    7 => "     Do not allow it".into(),
                    _ => String::new(),
                };
            }
            s
        };
        let v = crate::core::detect::detect(
            &Profiles::builtin().get("claude").unwrap().clone(),
            &unknown(),
        );
        assert!(v.composer.is_none(), "{v:?}");
        assert!(
            !matches!(v.state, State::Dialog(_) | State::Busy),
            "{}",
            v.state
        );
        for force in [false, true] {
            let mut tmux = FakeTmux::new(
                PANE,
                Box::new(
                    move |log: &[String], _: &str| match typed_at(log).is_some() {
                        true => ("unknown".into(), unknown()),
                        false => ("ready".into(), ready()),
                    },
                ),
            );
            let opts = SendOpts { force, ..claude() };
            let (o, _) = run(&mut tmux, BODY, &opts);
            assert!(tmux.calls("key").is_empty(), "{:#?}", tmux.log);
            assert_eq!(o.code, code::PANE_CHANGED, "{:?}", o.err);
            assert!(
                o.err
                    .as_ref()
                    .is_some_and(|e| e.to_string().contains("no composer shows")),
                "{:?}",
                o.err
            );
        }
        // --force at such a picture types nothing at all
        let mut tmux = FakeTmux::new(PANE, Box::new(move |_, _| ("unknown".into(), unknown())));
        let opts = SendOpts {
            force: true,
            ..claude()
        };
        let (o, _) = run(&mut tmux, BODY, &opts);
        assert!(typed_at(&tmux.log).is_none(), "{:#?}", tmux.log);
        assert!(tmux.calls("key").is_empty(), "{:#?}", tmux.log);
        assert_ne!(o.code, 0);
    }

    /// A read that fails after the submit key (tmux timed out on a loaded
    /// machine): the agent may have taken the prompt, so the receipt is
    /// `unknown` (34), never `failed` (30), which a wrapper may send again on.
    #[test]
    fn an_error_after_the_submit_key_is_unknown_not_failed() {
        let mut tmux = FakeTmux::new(
            PANE,
            Box::new(|log: &[String], _: &str| match typed_at(log).is_some() {
                true => ("typed".into(), typed()),
                false => ("ready".into(), ready()),
            }),
        );
        tmux.fail_reads_after_key = true;
        let (o, _) = run(&mut tmux, BODY, &claude());
        assert_eq!(tmux.calls("key"), vec!["key Enter"], "{:#?}", tmux.log);
        assert_eq!(receipt(&o), "unknown", "{:?}", o.err);
        assert_eq!(o.code, code::RECEIPT_UNKNOWN, "{:?}", o.err);
        assert!(
            o.err
                .as_ref()
                .is_some_and(|e| e.to_string().contains("may have taken")),
            "{:?}",
            o.err
        );
    }

    /// The Enter keeps not taking (the body stays in the composer): submit is
    /// pressed again at most the profile's `resubmit_max` times, then the
    /// receipt is stranded.
    #[test]
    fn resubmit_at_most_n_times() {
        let mut tmux = FakeTmux::new(
            PANE,
            Box::new(|log: &[String], _: &str| match typed_at(log).is_some() {
                true => ("typed".into(), typed()),
                false => ("ready".into(), ready()),
            }),
        );
        let max = Profiles::builtin()
            .get("claude")
            .unwrap()
            .capability()
            .resubmit_max as usize;
        assert!(max > 0);
        let (o, waited) = run(&mut tmux, BODY, &claude());
        assert_eq!(receipt(&o), "stranded", "{:?}", o.err);
        assert_eq!(o.code, code::RECEIPT_STRANDED);
        assert_eq!(
            tmux.calls("key Enter").len(),
            1 + max,
            "{:#?}",
            tmux.calls("key")
        );
        assert_eq!(o.rec.unwrap().resubmits, Some(max as u32));
        assert_eq!(tmux.calls("paste").len(), 1, "typed once");
        // the verify timeout ran out on the clock, not in real time
        assert!(waited >= claude().verify_timeout);
    }

    /// A write that fails aborts the delivery: nothing typed again, no Enter.
    #[test]
    fn a_failed_write_aborts_without_retyping() {
        for body in [BODY, "line one\nline two\nline three"] {
            let mut tmux = FakeTmux::new(
                PANE,
                Box::new(|log: &[String], _: &str| {
                    match log.iter().any(|l| l.starts_with("failed")) {
                        true => ("typed".into(), typed()),
                        false => ("ready".into(), ready()),
                    }
                }),
            );
            tmux.fail_writes = true;
            let (o, _) = run(&mut tmux, body, &claude());
            assert_eq!(o.code, code::DELIVERY_FAILED, "{body:?}: {:?}", o.err);
            assert!(matches!(o.err, Some(Error::DeliveryFailed { sent: 0, .. })));
            assert_eq!(receipt(&o), "failed");
            let writes: Vec<&String> = tmux
                .log
                .iter()
                .filter(|l| !l.starts_with("read") && !l.starts_with("look"))
                .collect();
            assert_eq!(
                writes.len(),
                1,
                "{body:?}: one failed write, no other: {writes:?}"
            );
            assert!(writes[0].starts_with("failed"), "{writes:?}");
        }
    }
}
