//! deliver: run a plan through the tmux adapter.
//!
//! Body chunks go in order (pastes through a private buffer, keys literally);
//! the first failed write aborts the rest and nothing is ever re-typed. Then
//! the body is left to settle on screen, and the submit key goes as its own
//! tmux call once the submit delay has passed since the last write.

use crate::detect::detect;
use crate::error::{Error, Result};
use crate::gate::Clock;
use crate::plan::{How, Plan};
use crate::profile::Profile;
use crate::screen::Screen;
use crate::tmux::{Guard, Tmux};
use serde::Serialize;
use std::time::Duration;

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
    crate::interrupt::begin_typing()?;
    for (i, c) in chunks.iter().enumerate() {
        if c.delay_before_ms > 0 {
            clock.sleep(Duration::from_millis(c.delay_before_ms));
        }
        let r = match c.how {
            How::Paste => tmux.paste_guarded(pane, &c.text, guard.filter(|_| i == 0)),
            How::Keys => tmux.send_literal(pane, &c.text).map(|()| true),
            How::Submit => unreachable!("body_chunks holds no submit"),
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
