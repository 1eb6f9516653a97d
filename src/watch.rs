//! `promptgate watch`: the tmux plugin's one watcher per server.
//!
//! It polls every pane over one control-mode connection (a list, one batched
//! read, one options query per round), keeps the status segment in the user
//! options `@promptgate-status` (per session) and `@promptgate-status-all`, and
//! when an agent pane goes from `busy` to `ready` shows a message naming it on
//! every client (and rings their bells, if asked). It does not use tmux's
//! `monitor-silence`, which fires once and then not again until the window is
//! visited.
//!
//! One per server: an `flock` on a file keyed by the server's socket; a second
//! watcher exits at once with status 0. It exits when the server goes away, or
//! when `@promptgate-watch` is set to `off`. `@promptgate-notify` and
//! `@promptgate-bell` (`on`/`off`) are read every round and override the flags,
//! so they can be changed without restarting it. It prints nothing.

use crate::cli::WatchArgs;
use crate::detect::State;
use crate::error::{Error, Result};
use crate::lock::PaneLock;
use crate::profile::Profiles;
use crate::status::{observe_all, segment, Identities, Row};
use crate::tmux::{Control, PaneLoc, Process, Server, Tmux};
use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

/// A state must be seen this many rounds in a row before it counts: one odd frame
/// (a spinner between two glyphs, a redraw) is no transition.
const CONFIRM: u32 = 2;
const RECONNECT: Duration = Duration::from_secs(10);
const OPTIONS: &str = "#{@promptgate-watch}\t#{@promptgate-notify}\t#{@promptgate-bell}";

struct Track {
    stable: State,
    candidate: State,
    seen: u32,
    busy_since: Option<Instant>,
}

pub fn run(server: &Server, profiles: &Profiles, a: WatchArgs) -> Result<i32> {
    let one = Process::new(server.clone());
    let key = match one.clone().server_key() {
        Ok(k) => k,
        Err(Error::NoServer(_)) => return Ok(0),
        Err(e) => return Err(e),
    };
    let _me = match PaneLock::acquire(&key, "watch", Duration::ZERO) {
        Ok(l) => l,
        Err(Error::Locked(..)) => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut w = Watcher {
        one,
        server: server.clone(),
        ctl: None,
        next_connect: Instant::now(),
        ids: Identities::default(),
        tracks: HashMap::new(),
        shown: HashMap::new(),
        shown_all: None,
    };
    let interval = Duration::from_millis(a.interval.max(20));
    loop {
        match w.round(profiles, &a) {
            Ok(true) => {}
            Ok(false) => {
                w.clear_status();
                return Ok(0);
            }
            Err(Error::NoServer(_)) => return Ok(0),
            Err(_) => {}
        }
        std::thread::sleep(interval);
    }
}

struct Watcher {
    one: Process,
    server: Server,
    ctl: Option<Control>,
    next_connect: Instant,
    ids: Identities,
    tracks: HashMap<String, Track>,
    /// The segment last written per session id ("" = unset).
    shown: HashMap<String, String>,
    shown_all: Option<String>,
}

impl Watcher {
    /// One poll. `Ok(false)`: asked to stop.
    fn round(&mut self, profiles: &Profiles, a: &WatchArgs) -> Result<bool> {
        if self.ctl.as_ref().is_none_or(|c| !c.connected()) && Instant::now() >= self.next_connect {
            self.next_connect = Instant::now() + RECONNECT;
            if let Some(first) = self.one.locate_panes()?.first() {
                self.ctl = Some(Control::new(self.server.clone(), &first.id));
            }
        }
        let Some(t) = self.ctl.as_mut() else {
            // no panes yet: the server is still there (locate_panes succeeded)
            return Ok(true);
        };
        let opts = t.format(OPTIONS)?;
        let f: Vec<&str> = opts.split('\t').collect();
        let opt = |i: usize| f.get(i).copied().unwrap_or("");
        if opt(0) == "off" {
            return Ok(false);
        }
        let on = |v: &str, flag: bool| match v {
            "on" | "1" | "yes" => true,
            "off" | "0" | "no" => false,
            _ => flag,
        };
        let (notify, bell) = (on(opt(1), a.notify), on(opt(2), a.bell));
        let locs = t.locate_panes()?;
        let mut rows = observe_all(profiles, t, locs.clone(), &mut self.ids);
        crate::status::add_queue_counts(&mut rows, &self.server);
        self.ids.retain(&locs);
        let done = self.transitions(&rows);
        if notify && !done.is_empty() {
            self.notify(&done, bell, a.display_ms);
        }
        self.update_status(&locs, &rows);
        Ok(true)
    }

    /// Track each pane's confirmed state; return the panes that just went busy -> ready.
    fn transitions(&mut self, rows: &[Row]) -> Vec<(Row, Option<Duration>)> {
        let mut done = Vec::new();
        self.tracks
            .retain(|p, _| rows.iter().any(|r| &r.loc.id == p));
        for r in rows {
            let t = self.tracks.entry(r.loc.id.clone()).or_insert(Track {
                stable: r.state.clone(),
                candidate: r.state.clone(),
                seen: CONFIRM,
                busy_since: None,
            });
            if t.candidate == r.state {
                t.seen += 1;
            } else {
                t.candidate = r.state.clone();
                t.seen = 1;
            }
            if t.seen >= CONFIRM && t.candidate != t.stable {
                let was = std::mem::replace(&mut t.stable, t.candidate.clone());
                if t.stable == State::Busy {
                    t.busy_since = Some(Instant::now());
                }
                if was == State::Busy && t.stable == State::Ready {
                    done.push((r.clone(), t.busy_since.take().map(|s| s.elapsed())));
                }
            }
        }
        done
    }

    fn notify(&mut self, done: &[(Row, Option<Duration>)], bell: bool, ms: u64) {
        let clients: Vec<_> = self
            .one
            .list_clients()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !c.control)
            .collect();
        for (r, busy) in done {
            let took = busy
                .map(|d| format!(" after {}", human(d)))
                .unwrap_or_default();
            let queued = match r.queued {
                0 => String::new(),
                n => format!(" ({n} queued)"),
            };
            let msg = format!(
                "promptgate: {} {} ({}) is done{took}, ready for input{queued}",
                r.loc.id,
                r.agent,
                r.loc.target()
            );
            let mut shown = 0;
            for c in &clients {
                if self
                    .one
                    .display_message(Some(&c.name), Some(ms), &msg)
                    .is_ok()
                {
                    shown += 1;
                }
            }
            // tmux 3.2's display-message takes no client name (its -c is a
            // bare flag there): show it on tmux's choice of client instead
            if shown == 0 && !clients.is_empty() {
                let _ = self.one.display_message(None, Some(ms), &msg);
            }
        }
        if bell {
            for c in &clients {
                if let Ok(mut tty) = std::fs::OpenOptions::new().write(true).open(&c.tty) {
                    let _ = tty.write_all(b"\x07");
                }
            }
        }
    }

    /// Write the segments that changed: per session, and for the whole server.
    fn update_status(&mut self, locs: &[PaneLoc], rows: &[Row]) {
        let mut sessions: Vec<&str> = locs.iter().map(|l| l.session_id.as_str()).collect();
        sessions.sort();
        sessions.dedup();
        for s in sessions {
            let mine: Vec<Row> = rows
                .iter()
                .filter(|r| r.loc.session_id == s)
                .cloned()
                .collect();
            let seg = segment(&mine, true);
            if self.shown.get(s) == Some(&seg) {
                continue;
            }
            let value = (!seg.is_empty()).then_some(seg.as_str());
            if self
                .one
                .set_user_option(Some(s), "@promptgate-status", value)
                .is_ok()
            {
                self.shown.insert(s.to_string(), seg);
            }
        }
        self.shown
            .retain(|s, _| locs.iter().any(|l| &l.session_id == s));
        let all = segment(rows, true);
        if self.shown_all.as_deref() != Some(all.as_str()) {
            let value = (!all.is_empty()).then_some(all.as_str());
            if self
                .one
                .set_user_option(None, "@promptgate-status-all", value)
                .is_ok()
            {
                self.shown_all = Some(all);
            }
        }
    }

    /// On a requested stop: leave no stale segment behind.
    fn clear_status(&mut self) {
        for s in self.shown.keys() {
            let _ = self
                .one
                .set_user_option(Some(s), "@promptgate-status", None);
        }
        let _ = self
            .one
            .set_user_option(None, "@promptgate-status-all", None);
    }
}

fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}
