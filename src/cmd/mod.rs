//! One small file per command. Shared here: opening a pane, observing it
//! (read -> identify -> detect), refusals, and output that survives a closed pipe.

mod capture;
mod demo;
mod detect;
mod docs;
pub mod doctor;
mod explain;
mod hooks;
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
use crate::error::{Error, Result};
use crate::profile::Profiles;
use crate::tmux::Server;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;

pub fn run(cli: Cli) -> Result<i32> {
    let srv = cli.server();
    if let Some(h) = &srv.host {
        // Before the first tmux call: every one of this process goes over ssh.
        crate::tmux::Launcher::init(crate::tmux::Launcher::ssh(h));
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

pub use crate::error::{refusal, turn_code};
pub use crate::observe::{
    gate_live, not_agent, observe, observe_at_launch, observe_screen, observe_with, until_done,
    Observed, LAUNCH_GRACE,
};

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

pub use crate::cli::duration as secs;

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
