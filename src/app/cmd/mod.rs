//! One small file per command. Shared here: opening a pane, observing it
//! (read -> identify -> detect), refusals, and output that survives a closed pipe.

mod ask;
mod capture;
pub mod demo;
mod detect;
mod docs;
pub mod doctor;
pub mod explain;
mod hooks;
pub mod mcp;
mod plan;
mod plugin;
mod profiles;
pub mod queue;
mod send;
mod state;
pub mod status;
pub mod wait;
pub mod watch;
pub use crate::app::cli::{Cli, Command};
use crate::core::error::{Error, Result};
use crate::io::tmux::Server;

/// The one-shot commands (those that end once their pane has answered), with
/// how long to wait for a `--host` connection: they keep one ssh connection
/// for all their tmux calls, where each call would log in again.
fn one_shot_timeout(c: &Command) -> Option<std::time::Duration> {
    let secs = |s: f64| Some(std::time::Duration::from_secs_f64(s));
    match c {
        Command::Send(a) => secs(a.connect_timeout),
        Command::Ask(a) => secs(a.send.connect_timeout),
        Command::State(_)
        | Command::Explain(_)
        | Command::Capture(_)
        | Command::Wait(_)
        | Command::Status(_)
        | Command::Doctor(_) => secs(10.0),
        _ => None,
    }
}

pub fn run(cli: Cli) -> Result<i32> {
    let srv = cli.server();
    // `--to-any-process` is send's alone (docs/safety.md): `ask` takes send's
    // flags, but never types into a pane that is not an agent
    if let Command::Ask(a) = &cli.command {
        if a.send.to_any_process {
            return Err(Error::Usage(
                "--to-any-process is only on send: ask never types into a pane that is not an agent"
                    .into(),
            ));
        }
    }
    // `--to-any-process` types into one pane named with -t, with the profile
    // --agent names: never a fan-out or a fleet (every pane whose shell holds a
    // stopped agent would run the body as a command)
    if let Command::Send(a) = &cli.command {
        if a.to_any_process {
            if a.agent.is_none() {
                return Err(Error::Usage(
                    "--to-any-process needs --agent NAME (the profile to type with; docs/safety.md)"
                        .into(),
                ));
            }
            let many = a.all_agents
                || a.every.is_some()
                || a.targets.len() > 1
                || srv.host.len() > 1
                || a.hosts.is_some();
            if many || a.targets.is_empty() {
                return Err(Error::Usage(
                    "--to-any-process types into one pane: name it with -t, and no fan-out (--all-agents, --every, several -t) or fleet".into(),
                ));
            }
        }
    }
    // several hosts (or a hosts file): one fleet, each host's send in a process of its own
    match &cli.command {
        Command::Send(a) if srv.host.len() > 1 || a.hosts.is_some() => {
            return crate::app::fleet::send(&srv.host, a);
        }
        Command::Ask(a) if srv.host.len() > 1 || a.send.hosts.is_some() => {
            return crate::app::fleet::ask(&srv.host, a);
        }
        _ if srv.host.len() > 1 => {
            return Err(Error::Usage(
                "--host is repeated only with send and ask (one fleet across machines)".into(),
            ));
        }
        _ => {}
    }
    // a one-shot command keeps one ssh connection for all its tmux calls
    let _master: Option<(crate::app::fleet::Master, tempfile::TempDir)>;
    if let Some(h) = srv.host.first() {
        crate::app::fleet::check_host(h)?;
        // Before the first tmux call: every one of this process goes over ssh.
        let launcher = match one_shot_timeout(&cli.command) {
            Some(timeout) => {
                let (m, dir) = crate::app::fleet::Master::open_private(h, timeout)
                    .map_err(|why| Error::NoServer(format!(" ({why})")))?;
                let l = m.launcher();
                _master = Some((m, dir));
                l
            }
            // a long-lived command (watch, mcp, queue) logs in for each call:
            // it outlives a dropped connection
            None => crate::io::tmux::Launcher::ssh(h),
        };
        crate::io::tmux::Launcher::init(launcher);
    }
    let server = match (&srv.socket_name, &srv.socket_path) {
        (Some(n), _) => Server::Name(n.clone()),
        (_, Some(p)) => Server::Path(p.clone()),
        _ => Server::Default,
    };
    let profiles = || crate::io::profiles::load(cli.profiles.as_deref());
    match cli.command {
        Command::State(a) => state::run(&server, &profiles()?, a),
        Command::Explain(a) => explain::run(&server, &profiles()?, a),
        Command::Detect(a) => detect::run(&profiles()?, a),
        Command::Capture(a) => capture::run(&server, &profiles()?, a),
        Command::Wait(a) => wait::run(&server, &profiles()?, a),
        Command::Send(a) => send::run(&server, &profiles()?, a),
        Command::Ask(a) => ask::run(&server, &profiles()?, a),
        Command::Plan(a) => plan::run(&profiles()?, a),
        Command::Profiles(a) => profiles::run(&profiles()?, cli.profiles.as_deref(), a),
        Command::Queue(a) => crate::app::cmd::queue::run(&server, &profiles()?, a),
        Command::Demo(a) => crate::app::cmd::demo::run(&server, !srv.host.is_empty(), a),
        Command::Status(a) => crate::app::cmd::status::run(&server, &profiles()?, a),
        Command::Watch(a) => crate::app::cmd::watch::run(&server, &profiles()?, a),
        Command::Mcp(a) => {
            if let Some(agent) = &a.print_config {
                let argv = crate::app::cmd::mcp::server_argv(&srv, cli.profiles.as_deref(), &a);
                crate::app::out::out(&crate::app::cmd::mcp::print_config(agent, &argv)?)?;
                return Ok(0);
            }
            crate::app::cmd::mcp::run(&server, profiles()?, a)
        }
        Command::Hooks(a) => hooks::run(a),
        Command::HookEvent(a) => {
            crate::io::hooks::record_event(&a.agent, &a.event);
            Ok(0)
        }
        Command::Completions(a) => docs::completions(a),
        Command::Man(a) => docs::man(a),
        // a key must never do nothing silently: a broken agents.toml is shown on the client
        Command::Plugin(a) => match profiles() {
            Ok(p) => plugin::run(&server, &p, a),
            Err(e) => {
                plugin::report(&server, &a, &e.to_string());
                Err(e)
            }
        },
        Command::Doctor(a) => crate::app::cmd::doctor::run(&server, &profiles()?, a),
        Command::FakeAgent(a) => fake_agent(a),
    }
}

/// The simulated agent runs under its agent's name (argv[0] = `claude`, ...), so
/// that tmux's `pane_current_command` names it as it names the real CLI. Set
/// `PROMPTGATE_FAKE_ARGV0=keep` to run it as `promptgate` instead.
fn fake_agent(a: crate::app::fake_agent::FakeAgentArgs) -> Result<i32> {
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
    crate::app::fake_agent::run(&a)
        .map(|_| 0)
        .map_err(|e| Error::Other(format!("fake-agent: {e:#}")))
}

/// A fan-out's panes: every agent pane (of `session`, of agent `every`) when
/// no `-t` is given, else each pane the targets name, once. Each target dropped
/// gets a note on stderr (`got`: what its pane got instead, "sent to it once");
/// the second value is the `duplicates` of the JSON report.
fn fan_out_panes(
    server: &Server,
    profiles: &crate::core::profile::Profiles,
    targets: &[String],
    (session, every): (Option<&str>, Option<&str>),
    got: &str,
) -> Result<(Vec<String>, serde_json::Value)> {
    use crate::engine::fanout;
    if targets.is_empty() {
        let mut panes = fanout::agent_panes(server, profiles, session, every)?;
        // an agent that asks every agent pane (its own tool call) is not one of
        // them: it would wait for itself to be ready, or, forced, paste into
        // its own composer mid-turn
        if crate::app::cli::other_server(server).is_none() {
            let own = crate::io::proc::caller_panes();
            let before = panes.len();
            panes.retain(|p| !own.contains(p));
            if panes.len() < before {
                eprintln!("promptgate: note: the pane this runs in is left out of the fan-out");
            }
            if panes.is_empty() {
                return Err(crate::core::error::Error::refused(
                    crate::core::error::Refused::NotAgent,
                    "no agent panes to send to but the one this runs in",
                ));
            }
        }
        return Ok((panes, serde_json::json!([])));
    }
    let mut tmux = crate::io::tmux::Process::new(server.clone());
    let (panes, dropped) = fanout::unique_panes(&mut tmux, targets);
    for (t, pane) in &dropped {
        let t = crate::core::text::one_line(t);
        eprintln!("promptgate: note: -t {t} names pane {pane}, as an earlier target did: {got}");
    }
    let duplicates = dropped
        .iter()
        .map(|(t, p)| serde_json::json!({"target": t, "pane": p}))
        .collect();
    Ok((panes, duplicates))
}

pub use crate::core::detect::refusal;
pub use crate::core::verify::turn_code;
pub use crate::engine::observe::{
    gate_live, not_agent, observe, observe_at_launch, observe_screen, observe_with, until_done,
    Observed, LAUNCH_GRACE,
};

pub use crate::app::cli::{duration as secs, read_body, target};
pub use crate::app::out::{not_sent_json, out, out_json, reported, turn_line};
