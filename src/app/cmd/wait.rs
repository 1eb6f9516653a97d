use super::gate_live;
use super::{out, target};
use crate::app::cli::WaitArgs;
use crate::core::detect::not_ready;
use crate::core::error::Result;
use crate::core::profile::Profiles;
use crate::io::live::Live;
use crate::io::tmux::{Control, Process, Server, Tmux};

/// `wait`: the gate alone. It waits through `busy` (always: a command named
/// `wait` waits), through a start-up, and through a dialog only with
/// `--wait-dialog`; without it a dialog ends the wait at once (exit 21), since
/// only a person should answer one.
pub fn run(server: &Server, profiles: &Profiles, a: WaitArgs) -> Result<i32> {
    let pane = Process::new(server.clone()).resolve(&target(server, &a.t.target)?)?;
    if a.until_done {
        return run_until_done(server, profiles, &a, &pane);
    }
    let mut tmux = Control::new(server.clone(), &pane);
    let mut o = a.gate.opts();
    o.wait_busy = true;
    let mut live = Live::new(!a.json);
    let (agent, r) = gate_live(
        &mut tmux,
        profiles,
        a.t.agent.as_deref(),
        &pane,
        &o,
        None,
        Some(&mut live as &mut dyn crate::engine::sink::Sink),
    )?;
    if a.json {
        let mut v = serde_json::to_value(&r).unwrap_or_default();
        v["pane"] = pane.clone().into();
        v["agent"] = agent.clone().into();
        v["state"] = r.state.to_string().into();
        v["control_mode"] = tmux.connected().into();
        // every --json outcome says how it ended, as send's receipt does
        let e = (!r.ready).then(|| super::refusal(&r.state, &r.reason, r.timed_out));
        v["exit_code"] = e.as_ref().map_or(0, |e| e.exit_code()).into();
        v["error"] = e.map(|e| e.to_string()).into();
        super::out_json(&v)?;
    } else if r.ready {
        out(&format!(
            "{pane}\t{}\tready\twaited {} ms, {} polls: {}",
            agent.as_deref().unwrap_or("-"),
            r.waited_ms,
            r.polls,
            r.reason
        ))?;
    }
    if r.ready {
        return Ok(0);
    }
    let e = not_ready(&r.state, &r.reason, r.timed_out);
    if a.json {
        return Ok(e.exit_code());
    }
    Err(e)
}

/// `wait --until-done`: the turn running now, to its end (done at once when
/// none runs).
fn run_until_done(server: &Server, profiles: &Profiles, a: &WaitArgs, pane: &str) -> Result<i32> {
    let mut tmux = Control::new(server.clone(), pane);
    let first = super::observe(&mut tmux, profiles, a.t.agent.as_deref(), pane)?;
    let Some(agent) = first.identity.agent.clone() else {
        return Err(super::refusal(
            &first.verdict.state,
            &first.verdict.reason(),
            false,
        ));
    };
    let done = super::secs(a.done_timeout);
    let t = super::until_done(server, profiles, &agent, pane, done, false, None)?;
    let code = super::turn_code(&t);
    if a.json {
        let mut v = serde_json::to_value(&t).unwrap_or_default();
        v["pane"] = pane.into();
        v["agent"] = agent.into();
        v["exit_code"] = code.into();
        super::out_json(&v)?;
    } else {
        out(&super::turn_line(pane, &t))?;
    }
    Ok(code)
}
