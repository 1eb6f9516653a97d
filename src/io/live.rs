//! One live status line on stderr while `send` or `wait` waits for a pane: the
//! target, its state, the time waited against the timeout, and what the wait is
//! for. Only for a person at a terminal: never when stderr is not a tty, never
//! with `--json`. It shows once a wait has lasted [`SHOW_AFTER`] (a send to a
//! ready agent never flashes one), is redrawn in place, and is erased when the
//! wait ends, so the command's own output starts on a clean line.

use crate::core::detect::State;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A wait shorter than this shows no line.
pub const SHOW_AFTER: Duration = Duration::from_millis(300);
/// The line is redrawn at most this often.
const REDRAW: Duration = Duration::from_millis(100);

pub struct Live {
    on: bool,
    pane: String,
    agent: String,
    timeout: Duration,
    start: Instant,
    last_draw: Option<Instant>,
    drawn: bool,
}

/// A line is on the terminal now: a signal that ends the process erases it
/// first (`crate::io::interrupt`), so the shell's prompt does not start after it.
use crate::io::interrupt::LINE_DRAWN as DRAWN;

/// Whether stderr is a terminal.
pub fn stderr_is_tty() -> bool {
    unsafe { libc::isatty(2) == 1 }
}

impl Live {
    /// A status line that draws only if `wanted` (not `--json`), stderr is a tty,
    /// and the terminal can erase a line (`TERM` is not `dumb`).
    pub fn new(wanted: bool) -> Live {
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        let on = wanted && stderr_is_tty() && !dumb;
        Live {
            on,
            pane: String::new(),
            agent: String::new(),
            timeout: Duration::ZERO,
            start: Instant::now(),
            last_draw: None,
            drawn: false,
        }
    }

    /// A wait begins: its pane, agent and timeout; the clock starts now.
    pub fn begin(&mut self, pane: &str, agent: &str, timeout: Duration) {
        self.pane = pane.to_string();
        self.agent = agent.to_string();
        self.timeout = timeout;
        self.start = Instant::now();
        self.last_draw = None;
    }

    /// Whether a redraw is due now (`state` is then worth computing).
    pub fn due(&self) -> bool {
        self.on
            && self.start.elapsed() >= SHOW_AFTER
            && self.last_draw.is_none_or(|t| t.elapsed() >= REDRAW)
    }

    /// Redraw the line for the agent's `state`, if one is due.
    pub fn tick(&mut self, state: impl FnOnce() -> State) {
        self.tick_with(|| {
            let s = state();
            (s.to_string(), waiting_for(&s).to_string())
        })
    }

    /// Redraw the line, if one is due, with `what`: (a state word, what the wait is for).
    pub fn tick_with(&mut self, what: impl FnOnce() -> (String, String)) {
        if !self.due() {
            return;
        }
        let (state, waiting) = what();
        let line = status_line(
            &self.pane,
            &self.agent,
            &state,
            self.start.elapsed(),
            self.timeout,
            &waiting,
        );
        let cut: String = line.chars().take(columns().saturating_sub(1)).collect();
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r\x1b[K{cut}");
        let _ = e.flush();
        self.drawn = true;
        DRAWN.store(true, Ordering::Relaxed);
        self.last_draw = Some(Instant::now());
    }

    /// Erase the line, if one is drawn.
    pub fn clear(&mut self) {
        if self.drawn {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[K");
            let _ = e.flush();
            self.drawn = false;
            DRAWN.store(false, Ordering::Relaxed);
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.clear();
    }
}

/// What a wait in `state` is waiting for.
pub fn waiting_for(state: &State) -> &'static str {
    match state {
        State::Ready => "waiting for the screen to hold still",
        State::Busy => "waiting for the agent to finish its turn",
        State::Starting => "waiting for the agent to finish starting",
        State::Dialog(_) => "waiting for someone to close the dialog (nothing is typed into it)",
        _ => "waiting for a ready prompt",
    }
}

/// `promptgate: %3 claude busy · 4.2 s of 15 s · waiting for the agent to finish its turn`
pub fn status_line(
    pane: &str,
    agent: &str,
    state: &str,
    waited: Duration,
    timeout: Duration,
    waiting: &str,
) -> String {
    format!(
        "promptgate: {pane} {agent} {state} · {:.1} s of {} · {waiting} (Ctrl-C stops)",
        waited.as_secs_f64(),
        secs_label(timeout),
    )
}

fn secs_label(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// The terminal's width (of stderr), or 80.
fn columns() -> usize {
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    if unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut ws) } == 0 && ws.ws_col > 0 {
        ws.ws_col as usize
    } else {
        80
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_target_state_time_and_what_it_waits_for() {
        let l = status_line(
            "%3",
            "claude",
            "busy",
            Duration::from_millis(4230),
            Duration::from_secs(15),
            waiting_for(&State::Busy),
        );
        assert_eq!(
            l,
            "promptgate: %3 claude busy · 4.2 s of 15 s · waiting for the agent to finish its turn (Ctrl-C stops)"
        );
    }

    #[test]
    fn no_line_when_not_wanted() {
        let mut l = Live::new(false);
        l.begin("%1", "claude", Duration::from_secs(1));
        std::thread::sleep(SHOW_AFTER);
        assert!(!l.due());
    }
}
