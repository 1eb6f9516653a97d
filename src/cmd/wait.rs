use super::live::Live;
use super::{out, secs, target};
use crate::cli::{GateFlags, WaitArgs};
use crate::detect::detect;
use crate::error::{not_ready, Result};
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
        cancel: None,
    }
}

/// Identify the agent on the first read (`screen`, a read taken just now, or a
/// new one), then run the gate with its profile, drawing the live status line
/// `live` while it waits (erased at the end).
pub fn gate_live(
    tmux: &mut dyn Tmux,
    profiles: &Profiles,
    agent: Option<&str>,
    pane: &str,
    opts: &GateOpts,
    screen: Option<crate::screen::Screen>,
    mut live: Option<&mut Live>,
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
    if let Some(l) = live.as_deref_mut() {
        l.begin(pane, &name, opts.timeout);
    }
    // the agent's own state file, found once, read at every look
    let status = first.status.clone();
    let mut pending = Some(first.screen);
    let mut read = || {
        let s = match pending.take() {
            Some(s) => s,
            None => {
                let mut s = tmux.read(pane)?;
                if let Some(f) = &status {
                    s.agent_status = f.read();
                }
                s
            }
        };
        if let Some(l) = live.as_deref_mut() {
            l.tick(|| detect(profile, &s).state);
        }
        Ok(s)
    };
    let r = wait(profile, opts, &clock, &mut read);
    if let Some(l) = live {
        l.clear();
    }
    Ok((Some(name), r?))
}

/// `wait`: the gate alone. It waits through `busy` (always: a command named
/// `wait` waits), through a start-up, and through a dialog only with
/// `--wait-dialog`; without it a dialog ends the wait at once (exit 21), since
/// only a person should answer one.
pub fn run(server: &Server, profiles: &Profiles, a: WaitArgs) -> Result<i32> {
    let pane = Process::new(server.clone()).resolve(&target(&a.t.target)?)?;
    if a.until_done {
        return run_until_done(server, profiles, &a, &pane);
    }
    let mut tmux = Control::new(server.clone(), &pane);
    let mut o = opts(&a.gate);
    o.wait_busy = true;
    let mut live = Live::new(!a.json);
    let (agent, r) = gate_live(
        &mut tmux,
        profiles,
        a.t.agent.as_deref(),
        &pane,
        &o,
        None,
        Some(&mut live),
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
