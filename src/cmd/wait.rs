use super::{out, refusal, secs, target};
use crate::cli::{GateFlags, WaitArgs};
use crate::error::Result;
use crate::gate::{wait, GateOpts, GateResult, SystemClock};
use crate::profile::Profiles;
use crate::tmux::{Control, Process, Server, Tmux};
use std::time::Duration;

pub fn opts(g: &GateFlags) -> GateOpts {
    GateOpts {
        timeout: secs(g.timeout),
        interval: Duration::from_millis(g.interval.max(1)),
        stable: Duration::from_millis(g.stable),
        wait_busy: g.wait_busy,
        wait_dialog: g.wait_dialog,
        settle_after_start: g.settle.map(Duration::from_millis),
        process_age: None,
    }
}

/// Identify the agent on the first read, then run the gate with its profile.
pub fn gate(
    tmux: &mut dyn Tmux,
    profiles: &Profiles,
    agent: Option<&str>,
    pane: &str,
    opts: &GateOpts,
) -> Result<(Option<String>, GateResult)> {
    gate_from(tmux, profiles, agent, pane, opts, None)
}

/// [`gate`], with `screen` (a read taken just now) as its first poll.
pub fn gate_from(
    tmux: &mut dyn Tmux,
    profiles: &Profiles,
    agent: Option<&str>,
    pane: &str,
    opts: &GateOpts,
    screen: Option<crate::screen::Screen>,
) -> Result<(Option<String>, GateResult)> {
    let first = match screen {
        Some(s) => super::observe_screen(profiles, agent, pane, s)?,
        None => super::observe(tmux, profiles, agent, pane)?,
    };
    let Some(name) = first.identity.agent.clone() else {
        let v = first.verdict;
        let r = GateResult {
            ready: false,
            timed_out: false,
            state: v.state.clone(),
            waited_ms: 0,
            polls: 1,
            reason: format!("{} ({})", v.state, v.reason()),
            evidence: v.evidence.clone(),
            verdict: v,
            screen: first.screen,
        };
        return Ok((None, r));
    };
    let profile = profiles.get(&name)?;
    let clock = SystemClock::new();
    let mut opts = opts.clone();
    if !crate::tmux::is_remote() {
        opts.process_age = first.screen.pid.and_then(crate::identify::foreground_age);
    }
    let opts = &opts;
    let mut pending = Some(first.screen);
    let mut read = || match pending.take() {
        Some(s) => Ok(s),
        None => tmux.read(pane),
    };
    let r = wait(profile, opts, &clock, &mut read)?;
    Ok((Some(name), r))
}

pub fn run(server: &Server, profiles: &Profiles, a: WaitArgs) -> Result<i32> {
    let pane = Process::new(server.clone()).resolve(&target(&a.t.target)?)?;
    let mut tmux = Control::new(server.clone(), &pane);
    let o = opts(&a.gate);
    let (agent, r) = gate(&mut tmux, profiles, a.t.agent.as_deref(), &pane, &o)?;
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
    let e = refusal(&r.state, &r.reason, r.timed_out);
    if a.json {
        return Ok(e.exit_code());
    }
    Err(e)
}
