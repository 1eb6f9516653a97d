//! Fan-out: one body to many panes at once, each its own [`Delivery`], their
//! submits in turns of the shared submit slot, polled through one control-mode
//! connection.
//!
//! [`Delivery`]: crate::engine::deliver::Delivery

use crate::core::error::{Error, Refused, Result};
use crate::core::plan::Body;
use crate::core::profile::Profiles;
use crate::engine::deliver::{deliver_to, Outcome, SendOpts, Shared};
use crate::engine::observe::observe_screen;
use crate::engine::sink::Quiet;
use crate::io::tmux::{Process, Server, Tmux};
use serde_json::json;

/// Every agent pane of the server (of `session`, running `every`).
pub fn agent_panes(
    server: &Server,
    profiles: &Profiles,
    session: Option<&str>,
    every: Option<&str>,
) -> Result<Vec<String>> {
    let mut tmux = Process::new(server.clone());
    let mut panes = Vec::new();
    // a window linked into several sessions (grouped sessions, `link-window`)
    // lists its panes once per session: each pane once, or it gets the body twice
    let mut seen = std::collections::HashSet::new();
    let listed: Vec<_> = tmux
        .list_panes()?
        .into_iter()
        .filter(|p| session.is_none_or(|s| p.target.split(':').next() == Some(s)))
        .filter(|p| seen.insert(p.id.clone()))
        .collect();
    // one batched read for all of them (over ssh one round trip, not one a pane)
    let ids: Vec<String> = listed.iter().map(|p| p.id.clone()).collect();
    for (p, screen) in listed.into_iter().zip(tmux.read_many(&ids)) {
        let Ok(o) = screen.and_then(|s| observe_screen(profiles, None, &p.id, s)) else {
            continue;
        };
        let Some(agent) = o.identity.agent else {
            continue;
        };
        if every.is_none_or(|want| want == agent) {
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

/// The targets as pane ids, each pane once, in the order first named: `-t %5
/// -t work:1.0` naming one pane delivers to it once. Returns the panes and,
/// for each target dropped, (the target, the pane an earlier one named). A
/// target tmux cannot resolve stays as given (its delivery says no such pane).
pub fn unique_panes(
    tmux: &mut dyn Tmux,
    targets: &[String],
) -> (Vec<String>, Vec<(String, String)>) {
    let mut panes: Vec<String> = Vec::new();
    let mut dropped = Vec::new();
    for t in targets {
        // a pane id names itself: no round trip (a fan-out to 16 panes by id
        // spent ~60 ms here, one tmux client each). A resolve would return it
        // unchanged or fail and keep it as given (`%05`: promptgate takes a
        // pane id only as tmux prints it), so the result is the same.
        let pane = match crate::io::tmux::is_pane_id(t) {
            true => t.clone(),
            false => tmux.resolve(t).unwrap_or_else(|_| t.clone()),
        };
        if panes.contains(&pane) {
            dropped.push((t.clone(), pane));
        } else {
            panes.push(pane);
        }
    }
    (panes, dropped)
}

/// Deliver `body` to every target at once, one thread each, sharing `shared`
/// (and, for more than one target, one control-mode connection).
pub fn deliver_all(
    server: &Server,
    profiles: &Profiles,
    opts: &SendOpts,
    body: &Body,
    targets: &[String],
    shared: Shared,
) -> Vec<Outcome> {
    let shared = match targets.first() {
        Some(t) if targets.len() > 1 => shared.with_connection(server, t),
        _ => shared,
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = targets
            .iter()
            .map(|t| {
                let shared = &shared;
                s.spawn(move || deliver_to(server, profiles, opts, t, body, shared, &mut Quiet))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("sender thread"))
            .collect()
    })
}

/// Why a row of the report ended as it did, for a plain line: its error, else
/// the rule that decided its receipt.
pub fn why(row: &serde_json::Value) -> String {
    row["error"]
        .as_str()
        .or_else(|| row["evidence"]["rule"].as_str())
        .unwrap_or("")
        .to_string()
}

/// One row per target for the report.
pub fn rows(outcomes: &[Outcome]) -> Vec<serde_json::Value> {
    outcomes
        .iter()
        .map(|o| {
            let mut r = match &o.rec {
                Some(rec) => rec.to_json(),
                None => crate::engine::sink::not_sent(json!({"pane": o.pane})),
            };
            r["exit_code"] = o.code.into();
            if let Some(e) = &o.err {
                r["error"] = e.to_string().into();
            }
            r
        })
        .collect()
}
