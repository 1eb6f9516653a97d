//! `promptgate send`: the main job. Sanitise first (a bad body types nothing),
//! then identify, lock the pane, gate, type, settle, submit, and verify.

use super::{out, read_body, secs, target};
use crate::app::cli::SendArgs;
use crate::core::error::{fanout_code, notice, Error, Result};
use crate::core::plan::Body;
use crate::core::profile::Profiles;
use crate::engine::deliver::{deliver_to, Shared};
use crate::engine::fanout;
use crate::engine::receipt::{Receipt, ReceiptKind, TurnReport};
use crate::engine::sink::{Finished, Quiet, Sink};
use crate::io::tmux::Server;
use serde_json::json;
use std::time::Duration;

pub fn run(server: &Server, profiles: &Profiles, mut a: SendArgs) -> Result<i32> {
    // The old fan-out form, `--agent NAME` with no -t outside tmux (where there
    // is no current pane for it to mean): still every NAME pane, with a note.
    let fan_out_flag = a.all_agents || a.every.is_some();
    if a.targets.is_empty()
        && !fan_out_flag
        && a.agent.is_some()
        && crate::app::cli::current_pane().is_none()
    {
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
    let opts = a.opts(crate::app::cli::gate_off_from_env());
    if let Some(name) = a.agent.as_ref().or(a.every.as_ref()) {
        profiles.get(name)?;
    }
    let fan_out = a.targets.len() > 1 || a.all_agents || a.every.is_some();
    let shared = Shared::new(Duration::from_millis(a.stagger));
    if !fan_out {
        let t = match a.targets.first() {
            Some(t) => t.clone(),
            None => target(server, &None)?,
        };
        // one target: a person at a terminal sees a live status line while it waits
        let mut live = crate::io::live::Live::new(!a.json);
        let mut o = deliver_to(server, profiles, &opts, &t, &body, &shared, &mut live);
        // --until-done: the turn the prompt started, in the same receipt
        let turn = match a.until_done {
            true => {
                let _wait = crate::io::interrupt::Waiting::begin();
                o.follow_turn(server, profiles, secs(a.done_timeout))
            }
            false => None,
        };

        // a receipt other than consumed says why, in `error`, as the stderr line does
        // (and a consumed prompt whose turn was not waited for to its end, why not)
        let why = o.rec.as_ref().map(|rec| match &rec.turn {
            Some(TurnReport::Failed { error, .. }) => {
                format!("{} {}: {error}", o.pane, rec.receipt)
            }
            _ => format!("receipt {} ({}) for {}", rec.receipt, rec.rule(), o.pane),
        });
        if let Some(mut rec) = o.rec.clone() {
            if o.code != 0 && rec.error.is_none() {
                rec.error = why.clone();
            }
            finish(&rec, a.json, &mut live)?;
        } else if let Some(e) = o.err.as_ref().filter(|_| a.json) {
            let mut v = json!({"pane": o.pane, "error": e.to_string(), "exit_code": o.code});
            if let Some(n) = notice(&o.pane, None, None, o.code, None) {
                v["notice"] = n.into();
            }
            super::not_sent_json(v)?;
        }
        if let Some(e) = o.err {
            return Err(e);
        }
        if let Some(t) = turn.as_ref().filter(|_| !a.json) {
            out(&super::turn_line(&o.pane, t))?;
        } else if o.code != 0 && !a.json {
            let changes = o
                .rec
                .as_ref()
                .map(Receipt::changes_text)
                .unwrap_or_default();
            eprintln!("promptgate: {}{changes}", why.unwrap_or_default());
        }
        return Ok(o.code);
    }
    let (targets, duplicates) = super::fan_out_panes(
        server,
        profiles,
        &a.targets,
        (a.session.as_deref(), a.every.as_deref()),
        "sent to it once",
    )?;
    let mut outcomes = fanout::deliver_all(server, profiles, &opts, &body, &targets, shared);
    // --until-done: each consumed prompt's turn, followed at once in every pane;
    // its end decides that pane's code, and the codes combine as the fan-out's
    let turns: Vec<Option<crate::engine::gate::Turn>> = match a.until_done {
        true => {
            let timeout = secs(a.done_timeout);
            let _wait = crate::io::interrupt::Waiting::begin();
            std::thread::scope(|s| {
                let handles: Vec<_> = outcomes
                    .iter_mut()
                    .map(|o| s.spawn(move || o.follow_turn(server, profiles, timeout)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("turn thread"))
                    .collect()
            })
        }
        false => Vec::new(),
    };
    let ok = outcomes.iter().filter(|o| o.code == 0).count();
    let total = outcomes.len();
    let exit = fanout_code(ok, total);
    let consumed = match a.until_done {
        true => outcomes
            .iter()
            .filter(|o| {
                o.rec
                    .as_ref()
                    .is_some_and(|r| r.receipt == ReceiptKind::Consumed)
            })
            .count(),
        false => ok,
    };
    for rec in outcomes.iter().filter_map(|o| o.rec.as_ref()) {
        Quiet.finish(&Finished::Receipt(rec));
    }
    let rows = fanout::rows(&outcomes);
    // `--no-verify`: submitted, not looked at; never called consumed
    let mut summary = match a.no_verify {
        true => format!("{consumed} of {total} submitted (not verified)"),
        false => format!("{consumed} of {total} consumed"),
    };
    if a.until_done {
        summary += &format!(", {ok} turns done");
    }
    if a.json {
        let mut sum = match a.no_verify {
            true => json!({"submitted": consumed, "consumed": 0, "total": total, "text": summary}),
            false => json!({"consumed": consumed, "total": total, "text": summary}),
        };
        if a.until_done {
            sum["done"] = ok.into();
        }
        super::out_json(
            &json!({"targets": rows, "duplicates": duplicates, "summary": sum, "exit_code": exit, "error": (exit != 0).then_some(&summary)}),
        )?;
    } else {
        for r in &rows {
            let why = fanout::why(r);
            out(&format!(
                "{}\t{}\t{}\t{}",
                r["pane"].as_str().unwrap_or("?"),
                r["agent"].as_str().unwrap_or("-"),
                r["receipt"].as_str().unwrap_or("?"),
                why
            ))?;
        }
        for (o, t) in outcomes.iter().zip(&turns) {
            if let Some(t) = t {
                out(&super::turn_line(&o.pane, t))?;
            }
        }
        out(&format!("promptgate: {summary}"))?;
    }
    Ok(exit)
}

fn finish(rec: &Receipt, json: bool, sink: &mut dyn Sink) -> Result<()> {
    sink.finish(&Finished::Receipt(rec));
    if json {
        let mut v = rec.to_json();
        let total = rec.timings.as_ref().map(|t| t.total_ms);
        let state = Some(rec.gate.state.as_str());
        if let Some(n) = notice(&rec.pane, Some(&rec.agent), state, rec.exit_code, total) {
            v["notice"] = match rec.receipt {
                // --no-verify: the key was pressed; nothing proves it was taken
                ReceiptKind::Submitted => format!(
                    "sent to {} ({}), submitted, not verified (--no-verify)",
                    rec.pane, rec.agent
                )
                .into(),
                _ => n.into(),
            };
        }
        super::out_json(&v)?;
    } else if matches!(rec.receipt, ReceiptKind::Consumed | ReceiptKind::Submitted) {
        out(&format!(
            "{}\t{}\t{}\t{} bytes, {}, gate {} ms{}",
            rec.pane,
            rec.agent,
            rec.receipt.as_str(),
            rec.bytes_out,
            rec.framing,
            rec.gate.waited_ms,
            rec.changes_text()
        ))?;
    }
    Ok(())
}
