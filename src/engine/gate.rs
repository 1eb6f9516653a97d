//! The gate: poll a pane until it is really ready for input, or say why not.
//!
//! Ready means: the detector says `ready` and the picture has not changed for
//! the stability window. An exited agent, a pane in a mode (or busy without
//! `wait_busy`) end the wait at once; a dialog or a draft ends it once the
//! picture has held still for the window (a frame half drawn is not evidence).
//! The reader and the clock are passed in, so tests drive the loop with
//! scripted screens.

use crate::core::detect::{detect, Evidence, State, Verdict};
use crate::core::error::Result;
use crate::core::profile::Profile;
use crate::core::screen::Screen;
use serde::Serialize;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct GateOpts {
    pub timeout: Duration,
    pub interval: Duration,
    pub stable: Duration,
    pub wait_busy: bool,
    /// Wait through dialogs too (never typing into them) until a person closes them.
    pub wait_dialog: bool,
    /// When the gate saw the agent starting up (blank, loading, a first-run
    /// dialog), the ready screen must hold still this long instead of `stable`:
    /// a start-up can paint a prompt and then move it, or open a dialog over it.
    /// `None`: the profile's `startup_settle_ms`.
    pub settle_after_start: Option<Duration>,
    /// How long ago the pane's foreground job started, when known (a local pane):
    /// one younger than [`STARTING_FOR`] counts as starting up even if its prompt
    /// already shows when the wait begins (gemini draws its prompt, holds it still
    /// for up to ~0.7 s, and then moves it when its banner lands).
    pub process_age: Option<Duration>,
    /// Set by a caller that gave up (an MCP client's cancellation): the gate
    /// stops at its next look, before anything is typed.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// A foreground job younger than this may still be starting up: see `process_age`.
pub const STARTING_FOR: Duration = Duration::from_secs(20);

impl Default for GateOpts {
    fn default() -> Self {
        GateOpts {
            timeout: Duration::from_secs(15),
            interval: Duration::from_millis(25),
            stable: Duration::from_millis(100),
            wait_busy: false,
            wait_dialog: false,
            settle_after_start: None,
            process_age: None,
            cancel: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct GateResult {
    pub ready: bool,
    /// The wait ran out of time (rather than ending on a final state).
    pub timed_out: bool,
    pub state: State,
    pub waited_ms: u64,
    pub polls: u32,
    pub reason: String,
    pub evidence: Evidence,
    #[serde(skip)]
    pub verdict: Verdict,
    #[serde(skip)]
    pub screen: Screen,
}

pub trait Clock {
    fn now(&self) -> Duration;
    fn sleep(&self, d: Duration);
}

/// A clock that moves only when it is slept on (for tests: a wait of minutes
/// runs in microseconds).
#[derive(Debug, Default)]
pub struct ManualClock(std::cell::Cell<Duration>);

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        self.0.get()
    }
    fn sleep(&self, d: Duration) {
        self.0.set(self.0.get() + d)
    }
}

/// The real clock.
pub struct SystemClock(Instant);

impl SystemClock {
    pub fn new() -> Self {
        SystemClock(Instant::now())
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// States that end the wait at once: nothing good can come of waiting them out.
fn is_final(state: &State, opts: &GateOpts) -> bool {
    match state {
        State::Exited | State::InMode | State::NotAgent | State::Draft => true,
        State::Busy => !opts.wait_busy,
        State::Dialog(_) => !opts.wait_dialog,
        _ => false,
    }
}

pub use crate::core::verify::Turn;

/// A turn is over when the agent goes from busy to ready (the watcher's done
/// notices; [`wait_turn`] reads it the same way, and also takes the agent's
/// own end-of-turn hook event).
pub fn turn_ended(was: &State, now: &State) -> bool {
    *was == State::Busy && *now == State::Ready
}

/// A prompt just submitted may take this long to show its agent busy: a ready
/// screen before then does not end the turn that has not begun. Only when
/// nothing else says the turn began ([`TurnStart::Submitted`]).
pub const TURN_START_GRACE: Duration = Duration::from_secs(3);

/// With [`TurnStart::Taken`], a ready screen ends the turn once the picture has
/// held still this long (a spinner, a streaming reply or a status clock moves
/// more often): it is not the instant between the prompt's echo and the first
/// paint of the agent's busy row.
pub const TAKEN_STILL: Duration = Duration::from_millis(250);

/// What is known, when the wait begins, about the turn it waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnStart {
    /// Nothing was just submitted: a ready agent has no turn running and is done at once.
    Running,
    /// A prompt was just submitted and nothing shows its turn began: a ready
    /// screen counts once busy was seen, or after [`TURN_START_GRACE`].
    Submitted,
    /// The agent's own record holds the prompt just submitted: its turn began
    /// (it may be over already, shorter than one look). A ready screen counts
    /// once it held still for [`TAKEN_STILL`].
    Taken,
}

impl From<bool> for TurnStart {
    /// `fresh`: a prompt was just submitted.
    fn from(fresh: bool) -> TurnStart {
        if fresh {
            TurnStart::Submitted
        } else {
            TurnStart::Running
        }
    }
}

/// Poll `read` until the running turn ends: busy, then ready. A dialog (it
/// needs a person), an exit or no agent end the wait too, as not done. A
/// ready screen counts once busy was seen, or as `start` says ([`TurnStart`]:
/// at once when nothing was just submitted; once still for [`TAKEN_STILL`]
/// when the agent's record shows the prompt taken; otherwise after
/// [`TURN_START_GRACE`]). A plain `bool` is `fresh`: a prompt was just submitted.
///
/// `hook_end` reports the agent's own end-of-turn event (`Stop`, `AfterAgent`)
/// that arrived since the wait began, where hooks are installed: it ends the
/// turn as soon as it is seen, before the screen repaints.
pub fn wait_turn(
    profile: &Profile,
    clock: &dyn Clock,
    timeout: Duration,
    start_as: impl Into<TurnStart>,
    read: &mut dyn FnMut() -> Result<Screen>,
    hook_end: &mut dyn FnMut() -> Option<String>,
) -> Result<Turn> {
    let start_as = start_as.into();
    let start = clock.now();
    let done_still = Duration::from_millis(profile.capability().done_still_ms);
    let mut saw_busy = false;
    let mut prev: Option<Screen> = None;
    let mut still_since = start;
    let mut moved = false;
    loop {
        let ended = hook_end();
        let screen = read()?;
        let v = detect(profile, &screen);
        let now = clock.now();
        let t = now - start;
        saw_busy |= v.state == State::Busy;
        let changed = prev.as_ref().is_some_and(|p| !p.same_picture(&screen));
        if prev.is_none() || changed {
            still_since = now;
        }
        moved |= changed;
        // tmux's own quiet time counts only while the picture has not moved in this wait
        let quiet = match screen.quiet_ms {
            Some(q) if !moved => Duration::from_millis(q),
            _ => Duration::ZERO,
        };
        let held = (now - still_since).max(quiet);
        prev = Some(screen);
        let begun = match start_as {
            TurnStart::Running => true,
            TurnStart::Taken => held >= TAKEN_STILL,
            TurnStart::Submitted => t >= TURN_START_GRACE,
        };
        let end = |done: bool, timed_out: bool, v: &Verdict| Turn {
            done,
            state: v.state.clone(),
            reason: v.reason(),
            turn_ms: t.as_millis() as u64,
            saw_busy,
            timed_out,
            ended_by: done.then(|| "screen".to_string()),
        };
        if let Some(why) = ended {
            // the agent says its turn is over; a dialog on screen still needs a person
            if !matches!(v.state, State::Dialog(_)) {
                return Ok(Turn {
                    state: State::Ready,
                    reason: format!("the agent's {why} event"),
                    ended_by: Some(why),
                    ..end(true, false, &v)
                });
            }
        }
        match v.state {
            // an agent still drawing its reply after its busy marker went away
            // (the profile's `done_still_ms`) is not done until the picture holds
            State::Ready if (saw_busy || begun) && held >= done_still => {
                return Ok(end(true, false, &v))
            }
            State::Dialog(_) | State::Exited | State::NotAgent | State::InMode => {
                return Ok(end(false, false, &v))
            }
            _ => {}
        }
        if t >= timeout {
            return Ok(end(false, true, &v));
        }
        // a turn already taken may be over: look more often, so that its end is not
        // reported a whole poll late
        let every = if start_as == TurnStart::Taken {
            50
        } else {
            100
        };
        clock.sleep(
            Duration::from_millis(every)
                .min(timeout.saturating_sub(t))
                .max(Duration::from_millis(1)),
        );
    }
}

/// Poll `read` until ready-and-stable, a final state, or the timeout.
pub fn wait(
    profile: &Profile,
    opts: &GateOpts,
    clock: &dyn Clock,
    read: &mut dyn FnMut() -> Result<Screen>,
) -> Result<GateResult> {
    let start = clock.now();
    let mut polls = 0u32;
    let mut prev: Option<Screen> = None;
    let mut stable_since = start;
    // Why this wait counts as a start-up, for the reason (`explain`).
    let mut cold: Option<String> = opts
        .process_age
        .filter(|a| *a < STARTING_FOR)
        .map(|a| format!("its foreground job is {:.1} s old", a.as_secs_f64()));
    let mut moved = false;
    let settle = opts.settle_after_start.unwrap_or(Duration::from_millis(
        profile.capability().startup_settle_ms,
    ));
    // The profile's start-up moves of the ready composer (none when `--settle`
    // was given: the caller's settle is kept as asked).
    let final_after = match opts.settle_after_start {
        None => profile.capability().startup_moves,
        Some(_) => 0,
    };
    // The ready composer's first row at the last ready look (a dialog, busy or
    // draft look since forgets it), and how often it moved down between ready
    // looks (a banner inserted above pushes it down; a screen that scrolls moves
    // it up, which is not the start-up's move).
    let mut ready_row: Option<usize> = None;
    let mut moves = 0u32;
    loop {
        if opts
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::SeqCst))
        {
            return Err(crate::core::error::Error::Cancelled);
        }
        // a Ctrl-C held while another target of this process typed: this one
        // has typed nothing, and stops now rather than at its gate's timeout
        if let Some(sig) = crate::io::interrupt::pending() {
            return Err(crate::core::error::Error::Interrupted(sig));
        }
        let screen = read()?;
        polls += 1;
        let now = clock.now();
        let changed = prev.as_ref().is_some_and(|p| !p.same_picture(&screen));
        if prev.is_none() || changed {
            stable_since = now;
        }
        moved |= changed;
        let verdict = detect(profile, &screen);
        // A start-up (blank, banner, loading layout, first-run dialog) can paint a
        // prompt and then move it or open a dialog over it; busy -> ready cannot.
        if cold.is_none()
            && matches!(
                verdict.state,
                State::Starting | State::Unknown | State::Dialog(_)
            )
        {
            cold = Some(format!("it was {} during this wait", verdict.state));
        }
        match (&verdict.state, verdict.composer.as_ref().map(|c| c.row)) {
            (State::Ready, Some(row)) => {
                if ready_row.is_some_and(|r| row > r) {
                    moves += 1;
                }
                ready_row = Some(row);
            }
            // a frame half drawn between two ready ones (the jump itself)
            (State::Starting | State::Unknown, _) => {}
            _ => ready_row = None,
        }
        // A start-up whose known moves were all seen is over: its layout is final.
        let layout_final = final_after > 0 && moves >= final_after;
        let need = if cold.is_some() && !layout_final {
            opts.stable.max(settle)
        } else {
            opts.stable
        };
        let waited = (now - start).as_millis() as u64;
        // tmux saw no output in the window for `quiet_ms`: the picture held still
        // that long before this poll. Not trusted once the picture has moved
        // during this wait (a resize moves it before the app writes anything).
        let quiet = match screen.quiet_ms {
            Some(q) if !moved => Duration::from_millis(q),
            _ => Duration::ZERO,
        };
        let held = (now - stable_since).max(quiet);
        let done = |ready: bool, reason: String, verdict: Verdict, screen: Screen| GateResult {
            ready,
            timed_out: !ready && now - start >= opts.timeout && !is_final(&verdict.state, opts),
            state: verdict.state.clone(),
            waited_ms: waited,
            polls,
            reason,
            evidence: verdict.evidence.clone(),
            verdict,
            screen,
        };
        if verdict.state == State::Ready && held >= need {
            let after = match &cold {
                Some(why) if layout_final => format!(
                    " after start-up ({why}; its prompt moved {moves} time{}, as the \
                     profile's start-up does: the layout is final)",
                    if moves == 1 { "" } else { "s" }
                ),
                Some(why) => format!(" after start-up ({why}; {} ms needed)", need.as_millis()),
                None => String::new(),
            };
            let reason = format!(
                "ready and still for {} ms{after} ({})",
                held.as_millis(),
                verdict.reason()
            );
            return Ok(done(true, reason, verdict, screen));
        }
        // A draft or a dialog read off the screen is believed once the picture
        // holds still for the window: an agent redrawing after a turn (or tmux
        // caught between two writes of one frame) can show a half-drawn picture
        // with the cursor on a transcript row. What tmux reports (dead, in a
        // mode) and busy (spinners never hold still) end the wait at once.
        let settled = match verdict.state {
            State::Draft | State::Dialog(_) => held >= opts.stable,
            _ => true,
        };
        if is_final(&verdict.state, opts) && settled {
            let reason = format!("{} ({})", verdict.state, verdict.reason());
            return Ok(done(false, reason, verdict, screen));
        }
        if now - start >= opts.timeout {
            let reason = format!(
                "timed out after {} ms; last state {} ({})",
                waited,
                verdict.state,
                verdict.reason()
            );
            return Ok(done(false, reason, verdict, screen));
        }
        prev = Some(screen);
        let left = opts.timeout.saturating_sub(now - start);
        // A ready screen is looked at again when its window would be full, not
        // a whole interval later.
        let mut pause = opts.interval.min(left.max(Duration::from_millis(1)));
        if verdict.state == State::Ready {
            pause = pause.min(need.saturating_sub(held).max(Duration::from_millis(1)));
        }
        clock.sleep(pause);
    }
}
