//! Looking at a pane: read -> identify -> detect ([`observe`]), and waiting on
//! what it shows: the gate for one pane ([`gate_live`]) and the end of a turn
//! ([`until_done`]).

use crate::core::detect::{detect, Evidence, State, Verdict};
use crate::core::error::{Error, Result};
use crate::core::identify::{identify, Identity};
use crate::core::profile::Profiles;
use crate::core::screen::Screen;
use crate::engine::gate::{wait, wait_turn, GateOpts, GateResult, SystemClock, Turn};
use crate::engine::sink::Sink;
use crate::io::proc::process_tree;
use crate::io::tmux::{Server, Tmux};

/// One look at a pane: the screen, who runs there, and the verdict.
#[derive(Debug, Clone)]
pub struct Observed {
    pub pane: String,
    pub screen: Screen,
    pub identity: Identity,
    pub verdict: Verdict,
    /// The agent's own status file (`[status]`), where it keeps one: found
    /// once, so that later looks only read it.
    pub status: Option<crate::io::record::StatusFile>,
}

pub fn observe(
    tmux: &mut dyn Tmux,
    profiles: &Profiles,
    agent: Option<&str>,
    pane: &str,
) -> Result<Observed> {
    let screen = tmux.read(pane)?;
    observe_screen(profiles, agent, pane, screen)
}

/// A pane whose process started less than this ago may still be turning into its
/// agent (`sh -c`, a launcher or wrapper that execs it): it is looked at again.
pub const LAUNCH_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// [`observe_screen`]; when no agent is identified (and none was named), or a
/// shell is in the foreground with no agent in its job yet (`sh -c "sleep 1;
/// claude"`), in a pane whose process is younger than [`LAUNCH_GRACE`], read it
/// again every 50 ms until an agent shows, or the grace is over. Returns the observation and when (Unix ms) the
/// read it rests on was asked for.
pub fn observe_at_launch(
    tmux: &mut dyn Tmux,
    profiles: &Profiles,
    agent: Option<&str>,
    pane: &str,
    screen: Screen,
    read_at: u128,
) -> Result<(Observed, u128)> {
    let mut o = observe_screen(profiles, agent, pane, screen)?;
    let mut at = read_at;
    let young = |o: &Observed| {
        let unknown = o.identity.agent.is_none() && agent.is_none();
        let shell =
            o.verdict.state == State::Exited && o.verdict.evidence.rule == "pane.shell-foreground";
        (unknown || shell)
            && !o.screen.dead
            && !crate::io::tmux::is_remote()
            && o.screen
                .pid
                .and_then(crate::io::proc::process_age)
                .is_some_and(|age| age < LAUNCH_GRACE)
    };
    while young(&o) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        at = crate::io::tmux::now_ms();
        o = observe(tmux, profiles, agent, pane)?;
    }
    Ok((o, at))
}

pub fn observe_screen(
    profiles: &Profiles,
    agent: Option<&str>,
    pane: &str,
    screen: Screen,
) -> Result<Observed> {
    observe_with(profiles, agent, pane, screen, None)
}

/// [`observe_screen`]; `known`: the agent's status file as an earlier look
/// found it (`Some(None)`: it keeps none), so that this one walks no `/proc`.
pub fn observe_with(
    profiles: &Profiles,
    agent: Option<&str>,
    pane: &str,
    screen: Screen,
    known: Option<Option<crate::io::record::StatusFile>>,
) -> Result<Observed> {
    let procs = match (agent, screen.pid) {
        (None, Some(pid)) if !crate::io::tmux::is_remote() => process_tree(pid),
        _ => Vec::new(),
    };
    let identity = identify(profiles, agent, &screen, &procs)?;
    let mut screen = screen;
    let mut status = None;
    let verdict = match &identity.agent {
        Some(name) => {
            let p = profiles.get(name)?;
            // the agent's own state, where it publishes one
            status = known.unwrap_or_else(|| crate::io::record::status_file(p, screen.pid, &procs));
            screen.agent_status = status.as_ref().and_then(|f| f.read());
            detect(p, &screen)
        }
        None => not_agent(&screen, &identity),
    };
    Ok(Observed {
        pane: pane.to_string(),
        screen,
        identity,
        verdict,
        status,
    })
}

/// The verdict for a pane where no agent was identified.
pub fn not_agent(screen: &Screen, id: &Identity) -> Verdict {
    let (state, rule) = if screen.dead {
        (State::Exited, "pane.dead")
    } else if screen.in_mode {
        (State::InMode, "pane.in-mode")
    } else {
        (State::NotAgent, "identify.none")
    };
    Verdict {
        agent: "-".into(),
        state,
        evidence: Evidence {
            rule: rule.into(),
            row: None,
            col: None,
            text: id.detail.clone(),
        },
        composer: None,
        checks: Vec::new(),
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
    screen: Option<crate::core::screen::Screen>,
    mut sink: Option<&mut dyn Sink>,
) -> Result<(Option<String>, GateResult)> {
    let first = match screen {
        Some(s) => observe_screen(profiles, agent, pane, s)?,
        None => observe(tmux, profiles, agent, pane)?,
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
    if !crate::io::tmux::is_remote() {
        opts.process_age = first.screen.pid.and_then(crate::io::proc::foreground_age);
    }
    let opts = &opts;
    if let Some(l) = sink.as_deref_mut() {
        l.wait_begins(pane, &name, opts.timeout);
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
        if let Some(l) = sink.as_deref_mut() {
            l.waiting(&mut || {
                let st = detect(profile, &s).state;
                let why = crate::io::live::waiting_for(&st);
                (st.to_string(), why.to_string())
            });
        }
        Ok(s)
    };
    let r = wait(profile, opts, &clock, &mut read);
    if let Some(l) = sink {
        l.wait_ends();
    }
    Ok((Some(name), r?))
}

/// Wait for the turn running in `pane` to end (`--until-done`, MCP `wait_done`):
/// busy, then ready. `start`: what is known about the turn's start (a `bool` is
/// `fresh`: a prompt was just submitted, its turn may not show busy yet; see
/// [`crate::engine::gate::TurnStart`]). `cancel`, when set, stops the wait (`Err`).
pub fn until_done(
    server: &Server,
    profiles: &Profiles,
    agent: &str,
    pane: &str,
    timeout: std::time::Duration,
    start: impl Into<crate::engine::gate::TurnStart>,
    cancel: Option<&std::sync::atomic::AtomicBool>,
) -> Result<Turn> {
    let profile = profiles.get(agent)?;
    let mut start = start.into();
    if start == crate::engine::gate::TurnStart::Taken
        && profile.def.record.as_ref().is_some_and(|r| r.input_history)
    {
        start = crate::engine::gate::TurnStart::Submitted;
    }
    let mut tmux = crate::io::tmux::Control::new(server.clone(), pane);
    // the agent's own end-of-turn hook, where promptgate's hooks are installed
    let hooks = tmux
        .server_key()
        .ok()
        .map(|key| crate::io::record::HookMark::new(&key, pane));
    let mut hook_end = || hooks.as_ref().and_then(|h| h.turn_end());
    let mut read = || {
        if cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::SeqCst)) {
            return Err(Error::Other("cancelled".into()));
        }
        tmux.read(pane)
    };
    wait_turn(
        profile,
        &SystemClock::new(),
        timeout,
        start,
        &mut read,
        &mut hook_end,
    )
}
