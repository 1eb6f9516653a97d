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

use crate::app::cli::WatchArgs;
use crate::app::cmd::status::{observe_all, segment, Identities, Row};
use crate::core::detect::State;
use crate::core::error::{Error, Result};
use crate::core::profile::Profiles;
use crate::io::lock::PaneLock;
use crate::io::tmux::{Control, PaneLoc, Process, Server, Tmux};
use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

/// The done notice of each pane whose turn ended.
fn notices(done: &[(Row, Option<Duration>)]) -> Vec<String> {
    done.iter()
        .map(|(r, busy)| {
            let took = busy
                .map(|d| format!(" after {}", human(d)))
                .unwrap_or_default();
            let queued = match r.queued {
                0 => String::new(),
                n => format!(" ({n} queued)"),
            };
            format!(
                "promptgate: {} {} ({}) is done{took}, ready for input{queued}",
                r.loc.id,
                r.agent,
                r.loc.target()
            )
        })
        .collect()
}

/// A state must be seen this many rounds in a row before it counts: one odd frame
/// (a spinner between two glyphs, a redraw) is no transition.
const CONFIRM: u32 = 2;
const RECONNECT: Duration = Duration::from_secs(10);
const OPTIONS: &str =
    "#{@promptgate-watch}\t#{@promptgate-notify}\t#{@promptgate-bell}\t#{@promptgate-result-until}";

struct Track {
    stable: State,
    candidate: State,
    seen: u32,
    busy_since: Option<Instant>,
    /// The pane's hook events from here on (promptgate's hooks, where installed).
    hooks: crate::io::record::HookMark,
    /// The agent's own end-of-turn event ended the turn: busy looks are the
    /// screen catching up, until it shows ready.
    hook_ended: bool,
}

pub fn run(server: &Server, profiles: &Profiles, a: WatchArgs) -> Result<i32> {
    let one = Process::new(server.clone());
    if a.auto && !has_work(&one) {
        return Ok(0);
    }
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
        key: key.clone(),
        shown: HashMap::new(),
        shown_all: None,
        held: Vec::new(),
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

/// `--auto`: whether the watcher has work on this server: it is asked for
/// (`@promptgate-watch on`), notices are on, or a status line shows the segment.
fn has_work(tmux: &Process) -> bool {
    let opt = |name: &str| {
        tmux.run(&["show-options", "-gqv", name], None, None)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    if opt("@promptgate-watch") == "on" || opt("@promptgate-notify") == "on" {
        return true;
    }
    ["status-left", "status-right"]
        .iter()
        .map(|o| opt(o))
        .chain(std::iter::once(
            tmux.run(&["show-options", "-g", "status-format"], None, None)
                .unwrap_or_default(),
        ))
        .any(|v| v.contains("@promptgate-status"))
}

struct Watcher {
    one: Process,
    server: Server,
    ctl: Option<Control>,
    next_connect: Instant,
    ids: Identities,
    tracks: HashMap<String, Track>,
    /// The server's key, which names the panes' hook files.
    key: String,
    /// The segment last written per session id ("" = unset).
    shown: HashMap<String, String>,
    shown_all: Option<String>,
    /// Done notices held back while a result of the plugin's keys is on the
    /// status line: shown once it has had its time.
    held: Vec<String>,
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
        crate::app::cmd::status::add_queue_counts(&mut rows, &self.server);
        self.ids.retain(&locs);
        let done = self.transitions(&rows);
        // A send's or broadcast's result (the plugin sets @promptgate-result-until,
        // epoch ms) stays on the status line for its time: a done notice waits.
        let until: u128 = opt(3).trim().parse().unwrap_or(0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let result_showing = now < until;
        if notify && !done.is_empty() {
            let msgs = notices(&done);
            if result_showing {
                self.held.extend(msgs);
                if bell {
                    self.ring();
                }
            } else {
                self.show(&msgs, bell, a.display_ms);
            }
        }
        if !result_showing && !self.held.is_empty() {
            let msgs = std::mem::take(&mut self.held);
            if notify {
                self.show(&msgs, false, a.display_ms);
            }
        }
        self.update_status(&locs, &rows);
        Ok(true)
    }

    /// Track each pane's confirmed state; return the panes whose turn just ended:
    /// busy, then ready (as `gate::wait_turn` reads it), or the agent's own
    /// `Stop`/`AfterAgent` hook event while it was busy, whichever comes first.
    fn transitions(&mut self, rows: &[Row]) -> Vec<(Row, Option<Duration>)> {
        let mut done = Vec::new();
        self.tracks
            .retain(|p, _| rows.iter().any(|r| &r.loc.id == p));
        for r in rows {
            let key = &self.key;
            let t = self
                .tracks
                .entry(r.loc.id.clone())
                .or_insert_with(|| Track {
                    stable: r.state.clone(),
                    candidate: r.state.clone(),
                    seen: CONFIRM,
                    busy_since: None,
                    hooks: crate::io::record::HookMark::new(key, &r.loc.id),
                    hook_ended: false,
                });
            // Every end-of-turn hook event is one turn that ended, whatever
            // the screen showed (a turn shorter than two looks never shows
            // busy twice; the next may begin before a look sees ready).
            let ends = t.hooks.take_turn_ends();
            if ends > 0 {
                let took = t.busy_since.take().map(|s| s.elapsed());
                for i in 0..ends {
                    done.push((r.clone(), if i + 1 == ends { took } else { None }));
                }
                // the busy the screen may still show is the turn just ended
                (t.stable, t.candidate, t.seen) = (State::Ready, State::Ready, CONFIRM);
                t.hook_ended = true;
            }
            if t.hook_ended {
                if r.state == State::Busy {
                    continue;
                }
                t.hook_ended = false;
            }
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
                if crate::engine::gate::turn_ended(&was, &t.stable) {
                    done.push((r.clone(), t.busy_since.take().map(|s| s.elapsed())));
                }
            }
        }
        done
    }

    /// Show each message on every client (not control-mode ones).
    fn show(&mut self, msgs: &[String], bell: bool, ms: u64) {
        let clients: Vec<_> = self
            .one
            .list_clients()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !c.control)
            .collect();
        for msg in msgs {
            let mut shown = 0;
            for c in &clients {
                if self
                    .one
                    .display_message(Some(&c.name), Some(ms), msg)
                    .is_ok()
                {
                    shown += 1;
                }
            }
            // tmux 3.2's display-message takes no client name (its -c is a
            // bare flag there): show it on tmux's choice of client instead
            if shown == 0 && !clients.is_empty() {
                let _ = self.one.display_message(None, Some(ms), msg);
            }
        }
        if bell {
            self.ring();
        }
    }

    /// Ring every client's terminal bell.
    fn ring(&mut self) {
        let clients = self.one.list_clients().unwrap_or_default();
        for c in clients.iter().filter(|c| !c.control) {
            if let Ok(mut tty) = std::fs::OpenOptions::new().write(true).open(&c.tty) {
                let _ = tty.write_all(b"\x07");
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
