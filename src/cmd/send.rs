//! `promptgate send`: the main job. Sanitise first (a bad body types nothing),
//! then identify, lock the pane, gate, type, settle, submit, and verify.

use super::{observe, out, read_body, secs, target};
use crate::cli::SendArgs;
use crate::deliver::{deliver_to, Outcome, Shared};
use crate::error::{fanout_code, Error, Refused, Result};
use crate::plan::Body;
use crate::profile::Profiles;
use crate::tmux::{Process, Server, Tmux};
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
    // Sanitised once, before anything touches a pane: a bad body types nothing.
    let body = Body::sanitise(&read_body(&a.body)?)?;
    let opts = a.opts(crate::cli::gate_off_from_env());
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
        let mut o = deliver_to(server, profiles, &opts, &t, &body, &shared, None);
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
                let (opts, body, shared) = (&opts, &body, &shared);
                s.spawn(move || deliver_to(server, profiles, opts, t, body, shared, None))
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
