//! One small file per command. Shared here: opening a pane, observing it
//! (read -> identify -> detect), refusals, and output that survives a closed pipe.

mod capture;
mod demo;
mod detect;
mod docs;
pub mod doctor;
mod explain;
mod hooks;
pub mod live;
mod mcp;
mod plan;
mod profiles;
mod queue;
mod send;
mod state;
pub mod status;
mod wait;
pub mod watch;

use crate::cli::{Cli, Command};
use crate::detect::{detect, Evidence, State, Verdict};
use crate::error::{Error, Result};
use crate::identify::{identify, process_tree, Identity};
use crate::profile::Profiles;
use crate::screen::Screen;
use crate::tmux::{Server, Tmux};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;

pub fn run(cli: Cli) -> Result<i32> {
    let srv = cli.server();
    if let Some(h) = &srv.host {
        // Before any thread starts: every tmux call of this process goes over ssh.
        std::env::set_var("PROMPTGATE_TMUX", format!("ssh -o BatchMode=yes {h} tmux"));
    }
    let server = match (&srv.socket_name, &srv.socket_path) {
        (Some(n), _) => Server::Name(n.clone()),
        (_, Some(p)) => Server::Path(p.clone()),
        _ => Server::Default,
    };
    let profiles = || Profiles::load(cli.profiles.as_deref());
    match cli.command {
        Command::State(a) => state::run(&server, &profiles()?, a),
        Command::Explain(a) => explain::run(&server, &profiles()?, a),
        Command::Detect(a) => detect::run(&profiles()?, a),
        Command::Capture(a) => capture::run(&server, &profiles()?, a),
        Command::Wait(a) => wait::run(&server, &profiles()?, a),
        Command::Send(a) => send::run(&server, &profiles()?, a),
        Command::Plan(a) => plan::run(&profiles()?, a),
        Command::Profiles(a) => profiles::run(&profiles()?, cli.profiles.as_deref(), a),
        Command::Queue(a) => queue::run(&server, &profiles()?, a),
        Command::Demo(a) => demo::run(&server, srv.host.is_some(), a),
        Command::Status(a) => status::run(&server, &profiles()?, a),
        Command::Watch(a) => watch::run(&server, &profiles()?, a),
        Command::Mcp(a) => mcp::run(&server, profiles()?, a),
        Command::Hooks(a) => hooks::run(a),
        Command::HookEvent(a) => {
            crate::hooks::record_event(&a.agent, &a.event);
            Ok(0)
        }
        Command::Completions(a) => docs::completions(a),
        Command::Man(a) => docs::man(a),
        Command::Doctor(a) => doctor::run(&server, &profiles()?, a),
        Command::FakeAgent(a) => fake_agent(a),
    }
}

/// The simulated agent runs under its agent's name (argv[0] = `claude`, ...), so
/// that tmux's `pane_current_command` names it as it names the real CLI. Set
/// `PROMPTGATE_FAKE_ARGV0=keep` to run it as `promptgate` instead.
fn fake_agent(a: crate::fake_agent::FakeAgentArgs) -> Result<i32> {
    use std::os::unix::process::CommandExt;
    if std::env::var_os("PROMPTGATE_FAKE_ARGV0").is_none() {
        let exe = std::env::current_exe()?;
        let err = std::process::Command::new(exe)
            .arg0(a.like.name())
            .args(std::env::args_os().skip(1))
            .env("PROMPTGATE_FAKE_ARGV0", "keep")
            .exec();
        return Err(Error::Other(format!("fake-agent: cannot exec: {err}")));
    }
    crate::fake_agent::run(&a)
        .map(|_| 0)
        .map_err(|e| Error::Other(format!("fake-agent: {e:#}")))
}

/// `-t` or, inside tmux, the current pane.
pub fn target(t: &Option<String>) -> Result<String> {
    match t {
        Some(t) => Ok(t.clone()),
        None => std::env::var("TMUX_PANE")
            .ok()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| Error::Usage("no -t PANE given and not inside tmux".into())),
    }
}

/// One look at a pane: the screen, who runs there, and the verdict.
#[derive(Debug, Clone)]
pub struct Observed {
    pub pane: String,
    pub screen: Screen,
    pub identity: Identity,
    pub verdict: Verdict,
    /// The agent's own status file (`[status]`), where it keeps one: found
    /// once, so that later looks only read it.
    pub status: Option<crate::record::StatusFile>,
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
            && !crate::tmux::is_remote()
            && o.screen
                .pid
                .and_then(crate::identify::process_age)
                .is_some_and(|age| age < LAUNCH_GRACE)
    };
    while young(&o) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        at = crate::tmux::now_ms();
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
    known: Option<Option<crate::record::StatusFile>>,
) -> Result<Observed> {
    let procs = match (agent, screen.pid) {
        (None, Some(pid)) if !crate::tmux::is_remote() => process_tree(pid),
        _ => Vec::new(),
    };
    let identity = identify(profiles, agent, &screen, &procs)?;
    let mut screen = screen;
    let mut status = None;
    let verdict = match &identity.agent {
        Some(name) => {
            let p = profiles.get(name)?;
            // the agent's own state, where it publishes one
            status = known.unwrap_or_else(|| crate::record::status_file(p, screen.pid, &procs));
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

pub use crate::error::{refusal, turn_code};

static REPORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Print the one JSON object that reports how a `--json` command ended (a
/// receipt, or an error); once it is out, `main` prints no other.
pub fn out_json(v: &serde_json::Value) -> Result<()> {
    REPORTED.store(true, std::sync::atomic::Ordering::SeqCst);
    out(&v.to_string())
}

/// A `send --json` that ends before any receipt (no pane, a bad body, a usage
/// error): its error object, with `time_ms`, goes to the delivery log as a
/// receipt would (so every attempt is there), then to stdout.
pub fn not_sent_json(mut v: serde_json::Value) -> Result<()> {
    v["time_ms"] = (crate::tmux::now_ms() as u64).into();
    v["receipt"] = "not-sent".into();
    crate::log::append(&v);
    out_json(&v)
}

/// Whether [`out_json`] has reported the outcome already.
pub fn reported() -> bool {
    REPORTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Print a line to stdout; a closed pipe ends the command quietly (exit 0).
pub fn out(line: &str) -> Result<()> {
    let mut o = std::io::stdout().lock();
    o.write_all(line.as_bytes())?;
    o.write_all(b"\n")?;
    o.flush()?;
    Ok(())
}

/// The body: `-f FILE` (`-` = stdin), else the words joined by spaces, else stdin
/// when it is not a terminal.
pub fn read_body(b: &crate::cli::BodyArgs) -> Result<Vec<u8>> {
    let (file, words) = (&b.file, &b.words);
    if let Some(f) = file {
        if f.as_os_str() == "-" {
            return read_stdin();
        }
        return std::fs::read(f)
            .map_err(|e| Error::BadBody(format!("cannot read {}: {e}", f.display())));
    }
    if !words.is_empty() {
        return Ok(words
            .iter()
            .map(|w| w.as_bytes().to_vec())
            .collect::<Vec<_>>()
            .join(&b' '));
    }
    if unsafe { libc::isatty(0) } == 1 {
        return Err(Error::Usage(
            "no body: give it as arguments, with -f FILE, or on stdin".into(),
        ));
    }
    read_stdin()
}

fn read_stdin() -> Result<Vec<u8>> {
    let mut v = Vec::new();
    std::io::stdin()
        .lock()
        .take(crate::plan::MAX_BODY_BYTES as u64 + 1)
        .read_to_end(&mut v)?;
    Ok(v)
}

/// Seconds as a Duration. The parser already bounds every flag; this never
/// panics whatever it is given (NaN is 0, anything past a year is a year).
pub fn secs(s: f64) -> std::time::Duration {
    if s.is_nan() {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::from_secs_f64(s.clamp(0.0, crate::cli::YEAR))
}

/// Wait for the turn running in `pane` to end (`--until-done`, MCP `wait_done`):
/// busy, then ready. `fresh`: a prompt was just submitted (its turn may not show
/// busy yet). `cancel`, when set, stops the wait (`Err`).
pub fn until_done(
    server: &Server,
    profiles: &Profiles,
    agent: &str,
    pane: &str,
    timeout: std::time::Duration,
    fresh: bool,
    cancel: Option<&std::sync::atomic::AtomicBool>,
) -> Result<crate::gate::Turn> {
    let profile = profiles.get(agent)?;
    let mut tmux = crate::tmux::Control::new(server.clone(), pane);
    let mut read = || {
        if cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::SeqCst)) {
            return Err(Error::Other("cancelled".into()));
        }
        tmux.read(pane)
    };
    crate::gate::wait_turn(
        profile,
        &crate::gate::SystemClock::new(),
        timeout,
        fresh,
        &mut read,
    )
}

/// The plain line for a turn's end.
pub fn turn_line(pane: &str, t: &crate::gate::Turn) -> String {
    if t.done {
        format!("{pane}\tdone\tthe turn ended after {} ms", t.turn_ms)
    } else if t.timed_out {
        format!(
            "{pane}\tnot done\tstill {} after {} ms ({}); to wait longer, raise --done-timeout",
            t.state, t.turn_ms, t.reason
        )
    } else {
        format!(
            "{pane}\tnot done\t{} after {} ms ({})",
            t.state, t.turn_ms, t.reason
        )
    }
}
