//! `promptgate status`: every agent pane's state as one compact glyph, for the
//! status line. Two tmux calls whatever the number of panes: one `list-panes -a`
//! and one batched read (`display -p` + `capture-pane -p` for every pane that
//! may hold an agent, in one client). Panes with a shell in the foreground are
//! not read at all.
//!
//! The tmux plugin's watcher (`promptgate watch`) keeps the same segment in the
//! user options `@promptgate-status` (per session) and `@promptgate-status-all`.

use crate::app::cli::{StatusArgs, StatusFormat};
use crate::app::out::out;
use crate::core::detect::{is_shell, State};
use crate::core::error::Result;
use crate::core::identify::identify;
use crate::core::profile::Profiles;
use crate::core::screen::{normalise_command, Screen};
use crate::engine::observe::{not_agent, observe_screen, observe_with, Observed};
use crate::io::tmux::{PaneLoc, Process, Server, Tmux};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One agent pane and its state.
#[derive(Debug, Clone)]
pub struct Row {
    pub loc: PaneLoc,
    pub agent: String,
    pub state: State,
    pub reason: String,
    /// Prompts waiting in the durable queue for this pane.
    pub queued: usize,
}

/// Fill in each row's queue length (`promptgate queue`), read from the queue directory.
pub fn add_queue_counts(rows: &mut [Row], server: &Server) {
    let counts = crate::engine::queue::counts(&crate::engine::queue::dir(), &server.spec());
    for r in rows {
        r.queued = counts.get(&r.loc.id).copied().unwrap_or(0);
    }
}

pub fn run(server: &Server, profiles: &Profiles, a: StatusArgs) -> Result<i32> {
    let mut tmux = Process::new(server.clone());
    let locs: Vec<PaneLoc> = tmux
        .locate_panes()?
        .into_iter()
        .filter(|l| {
            a.session
                .as_deref()
                .is_none_or(|s| s == l.session_id || s == l.session)
        })
        .collect();
    let mut rows = observe_all(profiles, &mut tmux, locs, &mut Identities::default());
    add_queue_counts(&mut rows, server);
    match a.format {
        StatusFormat::Tmux => out(&segment(&rows, true))?,
        StatusFormat::Plain => out(&segment(&rows, false))?,
        StatusFormat::Tsv => {
            for r in &rows {
                let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
                out(&format!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    r.loc.id,
                    r.loc.session_id,
                    clean(&r.loc.target()),
                    r.agent,
                    r.state,
                    glyph(&r.state).0,
                    clean(&r.reason)
                ))?;
            }
        }
        StatusFormat::Json => {
            for r in &rows {
                out(&serde_json::json!({
                    "pane": r.loc.id,
                    "session_id": r.loc.session_id,
                    "target": r.loc.target(),
                    "agent": r.agent,
                    "state": r.state.to_string(),
                    "glyph": glyph(&r.state).0,
                    "label": label(r, &rows),
                    "reason": r.reason,
                })
                .to_string())?;
            }
        }
    }
    Ok(0)
}

/// Read every pane that may hold an agent in one batch and keep the agent panes.
pub fn observe_all(
    profiles: &Profiles,
    tmux: &mut dyn Tmux,
    locs: Vec<PaneLoc>,
    ids: &mut Identities,
) -> Vec<Row> {
    let locs: Vec<PaneLoc> = locs
        .into_iter()
        .filter(|l| {
            // a shell pane is read only when its foreground job runs more than
            // shells (`sh -c "claude; exec sh"`): that may be a wrapped agent
            !l.dead
                && (!is_shell(&normalise_command(&l.command))
                    || (!crate::io::tmux::is_remote()
                        && l.pid.is_some_and(crate::io::proc::job_beyond_shell)))
        })
        .collect();
    let panes: Vec<String> = locs.iter().map(|l| l.id.clone()).collect();
    let screens = tmux.read_many(&panes);
    locs.into_iter()
        .zip(screens)
        .filter_map(|(loc, screen)| {
            let o = ids.observe(profiles, &loc.id, screen.ok()?).ok()?;
            let agent = o.identity.agent.clone()?;
            Some(Row {
                agent,
                state: o.verdict.state.clone(),
                reason: o.verdict.reason(),
                queued: 0,
                loc,
            })
        })
        .collect()
}

/// Who runs in each pane, remembered while the pane's process and foreground
/// command stay the same (a miss costs a walk of `/proc`). "Nobody" is only
/// remembered for a few seconds: an agent may still be painting its banner.
#[derive(Default)]
pub struct Identities {
    seen: HashMap<String, Seen>,
}

struct Seen {
    pid: Option<u32>,
    command: Option<String>,
    agent: Option<String>,
    /// The agent's status file, found with the agent (read at every look).
    status: Option<crate::io::record::StatusFile>,
    at: Instant,
}

const NOBODY_TTL: Duration = Duration::from_secs(5);

impl Identities {
    pub fn observe(&mut self, profiles: &Profiles, pane: &str, screen: Screen) -> Result<Observed> {
        let hit = self.seen.get(pane).filter(|s| {
            s.pid == screen.pid
                && s.command == screen.command
                && (s.agent.is_some() || s.at.elapsed() < NOBODY_TTL)
        });
        let hit_agent = hit.map(|s| (s.agent.clone(), s.status.clone()));
        let was_hit = hit_agent.is_some();
        let o = match hit_agent {
            Some((Some(a), status)) => {
                let mut o = observe_with(profiles, Some(&a), pane, screen, Some(status))?;
                o.identity.how = crate::core::identify::IdentifiedBy::Remembered;
                o
            }
            Some((None, _)) => {
                // nobody a moment ago: only the cheap checks (command, screen signature)
                let identity = identify(profiles, None, &screen, &[])?;
                match identity.agent.clone() {
                    Some(a) => observe_screen(profiles, Some(&a), pane, screen)?,
                    None => Observed {
                        pane: pane.to_string(),
                        verdict: not_agent(&screen, &identity),
                        identity,
                        screen,
                        status: None,
                    },
                }
            }
            None => observe_screen(profiles, None, pane, screen)?,
        };
        // `at` is when the full identification (with /proc) last ran
        let at = match (was_hit, self.seen.get(pane)) {
            (true, Some(s)) => s.at,
            _ => Instant::now(),
        };
        self.seen.insert(
            pane.to_string(),
            Seen {
                pid: o.screen.pid,
                command: o.screen.command.clone(),
                agent: o.identity.agent.clone(),
                status: o.status.clone(),
                at,
            },
        );
        Ok(o)
    }

    /// Forget panes that are gone.
    pub fn retain(&mut self, live: &[PaneLoc]) {
        self.seen.retain(|p, _| live.iter().any(|l| &l.id == p));
    }
}

/// The glyph of a state and its tmux style.
pub fn glyph(state: &State) -> (&'static str, &'static str) {
    match state {
        State::Ready => ("●", "fg=green"),
        State::Busy => ("◐", "fg=yellow"),
        State::Draft => ("✎", "fg=cyan"),
        State::Dialog(_) => ("!", "fg=red,bold"),
        State::Starting => ("○", "dim"),
        State::Exited => ("✗", "fg=red"),
        State::InMode => ("≡", "fg=blue"),
        State::NotAgent | State::Unknown => ("?", "default"),
    }
}

/// One letter per agent: C(laude), X (codex), G(emini), else the name's first letter.
pub fn letter(agent: &str) -> String {
    match agent {
        "claude" => "C".into(),
        "codex" => "X".into(),
        "gemini" => "G".into(),
        a => a
            .chars()
            .next()
            .map(|c| c.to_uppercase().to_string())
            .unwrap_or_default(),
    }
}

/// `C1` for claude in window 1; `C1.2` when another agent pane shares the window.
pub fn label(r: &Row, all: &[Row]) -> String {
    let shared = all.iter().any(|o| {
        o.loc.id != r.loc.id && o.loc.session_id == r.loc.session_id && o.loc.window == r.loc.window
    });
    if shared {
        format!("{}{}.{}", letter(&r.agent), r.loc.window, r.loc.pane)
    } else {
        format!("{}{}", letter(&r.agent), r.loc.window)
    }
}

/// `C1● X2◐+3` (`+3`: three prompts queued), styled with `#[…]` for tmux when `styled`.
pub fn segment(rows: &[Row], styled: bool) -> String {
    rows.iter()
        .map(|r| {
            let (g, style) = glyph(&r.state);
            let q = if r.queued > 0 {
                format!("+{}", r.queued)
            } else {
                String::new()
            };
            if styled {
                format!("{}#[{style}]{g}#[default]{q}", label(r, rows))
            } else {
                format!("{}{g}{q}", label(r, rows))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, session: &str, window: u32, pane: u32, agent: &str, state: State) -> Row {
        Row {
            loc: PaneLoc {
                id: id.into(),
                session_id: session.into(),
                session: "main".into(),
                window,
                pane,
                pid: None,
                command: agent.into(),
                dead: false,
                window_name: String::new(),
                path: String::new(),
            },
            agent: agent.into(),
            state,
            reason: String::new(),
            queued: 0,
        }
    }

    #[test]
    fn segments_are_compact_and_unambiguous() {
        let rows = vec![
            row("%1", "$0", 1, 0, "claude", State::Ready),
            row("%2", "$0", 2, 0, "codex", State::Busy),
            row("%3", "$0", 2, 1, "gemini", State::Dialog("trust".into())),
        ];
        assert_eq!(segment(&rows, false), "C1● X2.0◐ G2.1!");
        assert_eq!(segment(&rows[..1], true), "C1#[fg=green]●#[default]");
        assert_eq!(segment(&[], true), "");
        let mut q = rows[1].clone();
        q.queued = 3;
        assert_eq!(segment(&[q], false), "X2◐+3");
        assert_eq!(letter("aider"), "A");
    }
}
