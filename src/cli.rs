//! The command line: clap derive, one variant per command, and the mapping
//! from errors to exit codes.

use crate::error::{code, Error};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "promptgate", version, about = "Get a prompt into an AI coding agent in a tmux pane exactly once", long_about = None)]
pub struct Cli {
    /// tmux server socket name (like `tmux -L`)
    #[arg(
        short = 'L',
        global = true,
        value_name = "NAME",
        conflicts_with = "socket_path"
    )]
    pub socket_name: Option<String>,
    /// tmux server socket path (like `tmux -S`)
    #[arg(short = 'S', global = true, value_name = "PATH")]
    pub socket_path: Option<String>,
    /// Run tmux on HOST over ssh (same as PROMPTGATE_TMUX="ssh HOST tmux")
    #[arg(long, global = true, value_name = "HOST")]
    pub host: Option<String>,
    /// Agent profiles file (default: $XDG_CONFIG_HOME/promptgate/agents.toml)
    #[arg(long, global = true, value_name = "FILE", env = "PROMPTGATE_PROFILES")]
    pub profiles: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print each pane's agent and state: pane, agent, state, reason
    State(StateArgs),
    /// Show every rule tried on a pane and whether it fired
    Explain(ExplainArgs),
    /// Classify a saved capture offline (`NAME.txt` + `NAME.meta`)
    Detect(DetectArgs),
    /// Save a pane as NAME.txt, NAME.ansi and NAME.meta (a fixture)
    Capture(CaptureArgs),
    /// Wait until a pane is ready for input (the gate alone)
    Wait(WaitArgs),
    /// Deliver a prompt: gate, plan, type, submit, verify
    Send(SendArgs),
    /// Print the delivery plan for a body, without touching tmux
    Plan(PlanArgs),
    /// List the agent profiles, or print one as TOML
    Profiles(ProfilesArgs),
    /// A durable queue of prompts per pane, delivered in order when each pane is ready
    Queue(QueueArgs),
    /// Open a private tmux server with a simulated agent and deliver to it
    Demo(DemoArgs),
    /// Every agent pane's state as a compact glyph, for the status line
    Status(crate::cmd::status::StatusArgs),
    /// The tmux plugin's watcher: status segment and busy -> ready notices (one per server)
    Watch(crate::cmd::watch::WatchArgs),
    /// Check tmux and each agent pane: releases against the tested ones, state with evidence
    Doctor(crate::cmd::doctor::DoctorArgs),
    /// A simulated agent for tests and the demo
    #[command(hide = true)]
    FakeAgent(crate::fake_agent::FakeAgentArgs),
}

#[derive(Args, Debug, Clone)]
pub struct Target {
    /// Target pane (`%3`, `session`, `session:1.2`); default: the current pane
    #[arg(short = 't', long = "target", value_name = "PANE")]
    pub target: Option<String>,
    /// Use this agent profile instead of identifying the agent
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
}

#[derive(Args, Debug)]
pub struct StateArgs {
    #[command(flatten)]
    pub t: Target,
    /// Every pane of the server
    #[arg(long, conflicts_with = "target")]
    pub all: bool,
    /// One JSON object per pane
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub t: Target,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct DetectArgs {
    /// Agent profile to apply
    #[arg(long, value_name = "NAME")]
    pub agent: String,
    /// Saved screen (`capture-pane -p` text)
    #[arg(long, value_name = "FILE")]
    pub screen: PathBuf,
    /// Its `.meta` (default: the screen file with extension .meta, if present)
    #[arg(long, value_name = "FILE")]
    pub meta: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
    /// Also print every rule tried
    #[arg(long)]
    pub explain: bool,
}

#[derive(Args, Debug)]
pub struct CaptureArgs {
    #[command(flatten)]
    pub t: Target,
    /// Output path without extension: writes OUT.txt, OUT.ansi, OUT.meta
    #[arg(short = 'o', long = "output", value_name = "DIR/NAME")]
    pub output: PathBuf,
    /// Recorded as `agent_version=` in the .meta
    #[arg(long, value_name = "VERSION")]
    pub agent_version: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct GateFlags {
    /// Give up after this many seconds
    #[arg(long, default_value_t = 15.0, value_name = "SECS")]
    pub timeout: f64,
    /// Poll interval
    #[arg(long, default_value_t = 25, value_name = "MS")]
    pub interval: u64,
    /// The screen must hold still this long
    #[arg(long, default_value_t = 100, value_name = "MS")]
    pub stable: u64,
    /// Wait through `busy` instead of failing on it
    #[arg(long)]
    pub wait_busy: bool,
    /// Wait through dialogs (never typing into them) until someone closes them
    #[arg(long)]
    pub wait_dialog: bool,
    /// After a cold start, the ready screen must hold still this long [default: the profile's startup_settle_ms]
    #[arg(long, value_name = "MS")]
    pub settle: Option<u64>,
}

#[derive(Args, Debug)]
pub struct WaitArgs {
    #[command(flatten)]
    pub t: Target,
    #[command(flatten)]
    pub gate: GateFlags,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct SendArgs {
    /// Target pane (`%3`, `session`, `session:1.2`); repeat for several. Default: the current pane
    #[arg(short = 't', long = "target", value_name = "PANE")]
    pub targets: Vec<String>,
    /// Use this agent profile; with no -t, send to every pane of this agent
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Send to every agent pane of the server (or of --session)
    #[arg(long, conflicts_with = "targets")]
    pub all_agents: bool,
    /// Limit --all-agents / --agent to this session
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
    /// Wait through busy, up to a long timeout (at least 10 minutes): the one-shot queue
    #[arg(long)]
    pub when_ready: bool,
    /// Fan-out: at least this long between two targets' submit keys (they never overlap)
    #[arg(long, default_value_t = 2, value_name = "MS")]
    pub stagger: u64,
    #[command(flatten)]
    pub gate: GateFlags,
    /// Skip the gate (still plans, sanitises and verifies); also PROMPTGATE_GATE=off
    #[arg(long)]
    pub force: bool,
    /// Leave copy/view mode first instead of refusing
    #[arg(long)]
    pub cancel_mode: bool,
    /// Clear a draft in the composer first instead of refusing
    #[arg(long)]
    pub replace_draft: bool,
    /// Seconds to watch for the receipt after the submit key
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub verify_timeout: f64,
    /// Do not watch for a receipt (exit 0 once the submit key is sent)
    #[arg(long)]
    pub no_verify: bool,
    /// Seconds to wait for another sender to this pane to finish
    #[arg(long, default_value_t = 120.0, value_name = "SECS")]
    pub lock_timeout: f64,
    /// Print the receipt as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub body: BodyArgs,
}

/// Where a prompt comes from: `-f FILE` (`-` = stdin), the words, or stdin.
#[derive(Args, Debug, Clone)]
pub struct BodyArgs {
    /// Read the body from FILE (`-` for stdin)
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILE",
        conflicts_with = "words"
    )]
    pub file: Option<PathBuf>,
    /// The prompt (words are joined by spaces); or use -f, or pipe it on stdin
    #[arg(
        value_name = "BODY",
        allow_hyphen_values = true,
        trailing_var_arg = true
    )]
    pub words: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Agent profile whose delivery capability to use
    #[arg(long, value_name = "NAME")]
    pub agent: String,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub body: BodyArgs,
}

#[derive(Args, Debug)]
pub struct ProfilesArgs {
    /// Print this profile as TOML (a starting point for agents.toml)
    #[arg(long, value_name = "NAME")]
    pub show: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct QueueArgs {
    #[command(subcommand)]
    pub cmd: QueueCmd,
}

#[derive(Subcommand, Debug)]
pub enum QueueCmd {
    /// Queue a prompt for a pane (prints its id)
    Add(QueueAddArgs),
    /// List queued prompts: id, server, pane, phase, last receipt, preview
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a queued prompt
    Drop { id: String },
    /// Deliver the queues: each pane's prompts in order, whenever it is ready
    Run(QueueRunArgs),
}

#[derive(Args, Debug)]
pub struct QueueAddArgs {
    /// Target pane; default: the current pane
    #[arg(short = 't', long = "target", value_name = "PANE")]
    pub target: Option<String>,
    /// Agent profile to use for this pane
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    #[command(flatten)]
    pub body: BodyArgs,
}

#[derive(Args, Debug)]
pub struct QueueRunArgs {
    /// Stop when nothing more can be delivered now (or the queue is empty)
    #[arg(long)]
    pub once: bool,
    /// Stop after this many seconds
    #[arg(long, value_name = "SECS")]
    pub max_secs: Option<f64>,
    /// Pause between rounds when nothing moved
    #[arg(long, default_value_t = 200, value_name = "MS")]
    pub interval: u64,
    /// How long one delivery waits for its pane (busy is waited through)
    #[arg(long, default_value_t = 2.0, value_name = "SECS")]
    pub gate_timeout: f64,
    /// Seconds to watch for each receipt
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub verify_timeout: f64,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Which agent the simulated one looks like
    #[arg(long, default_value = "claude", value_parser = ["claude", "codex", "gemini"])]
    pub like: String,
    /// The prompt to deliver
    #[arg(
        long,
        default_value = "fix the failing test in src/lib.rs;\nthen run the suite"
    )]
    pub body: String,
    /// Leave the demo server running and print how to attach
    #[arg(long)]
    pub keep: bool,
}

/// Parse, run, map errors to exit codes. `main` is only this.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => {
            println!(
                "promptgate {}\n{}",
                env!("CARGO_PKG_VERSION"),
                crate::tmux::release::describe_local()
            );
            return 0;
        }
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => 0,
                _ => code::USAGE,
            };
        }
    };
    match crate::cmd::run(cli) {
        Ok(code) => code,
        Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("promptgate: {e}");
            e.exit_code()
        }
    }
}
