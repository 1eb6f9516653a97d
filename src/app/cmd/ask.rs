//! `promptgate ask`: deliver as `send` does, wait for the turn the prompt
//! started, print the agent's answer from its own record (`ask.rs`).

use super::{out, read_body, secs, target};
use crate::app::cli::AskArgs;
use crate::core::error::{Error, Result};
use crate::core::plan::Body;
use crate::core::profile::Profiles;
use crate::engine::ask::{ask_all, ask_one, AskOpts, Asked};
use crate::engine::deliver::Shared;
use crate::engine::sink::{Finished, Quiet, Sink};
use crate::io::tmux::Server;
use serde_json::json;
use std::time::Duration;

pub fn run(server: &Server, profiles: &Profiles, a: AskArgs) -> Result<i32> {
    let AskArgs {
        send: s,
        from_screen,
    } = a;
    if s.session.is_some() && !(s.all_agents || s.every.is_some()) {
        return Err(Error::Usage(
            "--session limits a fan-out: give --all-agents or --every AGENT too".into(),
        ));
    }
    // Sanitised once, before anything touches a pane: a bad body types nothing.
    let body = Body::sanitise(&read_body(&s.body)?)?;
    let opts = s.opts(crate::app::cli::gate_off_from_env());
    if let Some(name) = s.agent.as_ref().or(s.every.as_ref()) {
        profiles.get(name)?;
    }
    let ask = AskOpts {
        done_timeout: secs(s.done_timeout),
        from_screen,
        // once the prompt is delivered, Ctrl-C stops the wait, never the agent
        stop_on_signal: true,
    };
    let fan_out = s.targets.len() > 1 || s.all_agents || s.every.is_some();
    let shared = Shared::new(Duration::from_millis(s.stagger));
    let stop = None;
    if !fan_out {
        let t = match s.targets.first() {
            Some(t) => t.clone(),
            None => target(server, &None)?,
        };
        let mut live = crate::io::live::Live::new(!s.json);
        let asked = ask_one(
            server, profiles, &opts, &t, &body, &shared, ask, stop, &mut live,
        );
        if let Some(rec) = &asked.rec {
            live.finish(&Finished::Receipt(rec));
        }
        if s.json {
            super::out_json(&asked.to_json())?;
        } else {
            if let Some(a) = asked.answer.as_ref().filter(|a| !a.text.is_empty()) {
                out(&a.text)?;
            }
            eprintln!("promptgate: {}", one_line(&asked.receipt_line()));
            if let Some(a) = &asked.answer {
                for p in &a.other_prompts {
                    eprintln!(
                        "promptgate: another prompt entered the agent meanwhile (its reply is not in the answer): {}",
                        one_line(p)
                    );
                }
            }
        }
        return Ok(asked.code);
    }
    let (targets, duplicates) = super::fan_out_panes(
        server,
        profiles,
        &s.targets,
        (s.session.as_deref(), s.every.as_deref()),
        "asked once",
    )?;
    let all = ask_all(server, profiles, &opts, &body, &targets, shared, ask, stop);
    for rec in all.iter().filter_map(|a| a.rec.as_ref()) {
        Quiet.finish(&Finished::Receipt(rec));
    }
    let answered = all.iter().filter(|a| a.code == 0).count();
    let exit = crate::core::error::fanout_code(answered, all.len());
    let summary = format!("{answered} of {} answered", all.len());
    if s.json {
        let rows: Vec<_> = all.iter().map(Asked::to_json).collect();
        super::out_json(&json!({
            "targets": rows,
            "duplicates": duplicates,
            "summary": {"answered": answered, "total": all.len(), "text": summary},
            "exit_code": exit,
            "error": (exit != 0).then_some(&summary),
        }))?;
    } else {
        for a in &all {
            out(&format!("=== {} {}", a.pane, a.agent()))?;
            if let Some(t) = a.answer.as_ref().filter(|t| !t.text.is_empty()) {
                out(&t.text)?;
            }
            eprintln!("promptgate: {}", one_line(&a.receipt_line()));
        }
        eprintln!("promptgate: {summary}");
    }
    Ok(exit)
}

fn one_line(s: &str) -> String {
    let s = s.replace('\n', " ");
    match s.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}
