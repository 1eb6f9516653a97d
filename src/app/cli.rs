//! The command line: clap derive, one variant per command, and the mapping
//! from errors to exit codes.

use crate::core::error::Error;
use crate::engine::deliver::SendOpts;
use crate::engine::gate::GateOpts;
use clap::{Args, Parser, Subcommand};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(name = "promptgate", version, about = "Get a prompt into an AI coding agent in a tmux pane exactly once", long_about = None)]
pub struct Cli {
    /// The server flags given before the command
    #[command(flatten)]
    pub top: ServerArgs,
    /// Agent profiles file (default: $XDG_CONFIG_HOME/promptgate/agents.toml)
    #[arg(long, global = true, value_name = "FILE", env = "PROMPTGATE_PROFILES")]
    pub profiles: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

/// The exit codes, for the man page (docs/exit-codes.md says more).
pub const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "success; for send, the receipt is consumed"),
    ("1", "internal error"),
    (
        "2",
        "usage error (bad flags or values, no -t outside tmux or on another server)",
    ),
    ("3", "tmux is not installed"),
    ("4", "no tmux server"),
    ("5", "no such pane"),
    ("6", "a tmux call failed or timed out"),
    ("7", "unknown agent"),
    ("8", "bad profiles file"),
    ("9", "screen file unreadable or empty"),
    ("10", "bad body; nothing was typed"),
    ("20", "not ready before the timeout"),
    (
        "21-26",
        "refused, nothing typed: a dialog, busy, copy mode, not an agent, exited, a draft",
    ),
    ("27", "the pane changed under the send"),
    ("28", "locked by another sender"),
    ("30", "a write failed mid-delivery"),
    ("31-34", "receipt queued, stranded, refused, unknown"),
    ("35", "fan-out: some targets consumed, not all"),
    ("36", "fan-out: no target consumed"),
];

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
    /// Wait until a pane is ready for input (the gate alone; waits through busy, stops at a dialog unless --wait-dialog)
    Wait(WaitArgs),
    /// Deliver a prompt: gate, plan, type, submit, verify
    Send(SendArgs),
    /// Deliver a prompt as `send` does, wait for its turn, print the agent's answer from its own record
    Ask(AskArgs),
    /// Print the delivery plan for a body, without touching tmux
    Plan(PlanArgs),
    /// List the agent profiles, or print one as TOML
    Profiles(ProfilesArgs),
    /// Print a shell completion script (`mkdir -p ~/.local/share/bash-completion/completions && promptgate completions bash > ~/.local/share/bash-completion/completions/promptgate`)
    Completions(CompletionsArgs),
    /// Print the man page as roff (`promptgate man | man -l -`), of one command, or write them all (--dir)
    Man(ManArgs),
    /// A durable queue of prompts per pane, delivered in order when each pane is ready
    Queue(QueueArgs),
    /// Open a private tmux server with a simulated agent and deliver to it
    Demo(DemoArgs),
    /// Every agent pane's state as a compact glyph, for the status line
    Status(StatusArgs),
    /// The tmux plugin's watcher: status segment and busy -> ready notices (one per server)
    Watch(WatchArgs),
    /// A Model Context Protocol server (stdio) with the gate inside, for agents that drive agents
    Mcp(McpArgs),
    /// Install, remove or show promptgate's agent hooks (proof of receipt, turn ends)
    Hooks(HooksArgs),
    /// Check tmux and each agent pane: releases against the tested ones, state with evidence
    Doctor(DoctorArgs),
    /// What an installed hook runs: record one agent event for its pane
    #[command(hide = true)]
    HookEvent(HookEventArgs),
    /// What the tmux plugin's keys run (plugin/promptgate.sh): prints nothing, exits 0
    #[command(hide = true)]
    Plugin(PluginArgs),
    /// A simulated agent to try promptgate on: run it in a tmux pane (see docs/usage.md, "Try it by hand")
    FakeAgent(crate::app::fake_agent::FakeAgentArgs),
}

/// Which tmux server: the same flags as before the command (`promptgate -L x
/// send` = `promptgate send -L x`), on the commands that talk to tmux only.
#[derive(Args, Debug, Clone, Default)]
pub struct ServerArgs {
    /// tmux server socket name (like `tmux -L`)
    #[arg(
        short = 'L',
        value_name = "NAME",
        value_parser = non_empty,
        conflicts_with = "socket_path"
    )]
    pub socket_name: Option<String>,
    /// tmux server socket path (like `tmux -S`)
    #[arg(short = 'S', value_name = "PATH", value_parser = non_empty)]
    pub socket_path: Option<String>,
    /// Run tmux on HOST over ssh (same as PROMPTGATE_TMUX="ssh HOST tmux");
    /// repeat it with `send` for one fleet across machines (docs/fleet.md)
    #[arg(long, value_name = "HOST", value_parser = non_empty, action = clap::ArgAction::Append)]
    pub host: Vec<String>,
}

impl Cli {
    /// The server flags given before the command, overridden by those given after it.
    pub fn server(&self) -> ServerArgs {
        let top = self.top.clone();
        let Some(sub) = self.command.server_args() else {
            return top;
        };
        let socket = sub.socket_name.is_some() || sub.socket_path.is_some();
        ServerArgs {
            socket_name: if socket {
                sub.socket_name.clone()
            } else {
                top.socket_name
            },
            socket_path: if socket {
                sub.socket_path.clone()
            } else {
                top.socket_path
            },
            host: match sub.host.is_empty() {
                true => top.host,
                false => sub.host.clone(),
            },
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct Target {
    /// Target pane (`%3`, `session`, `session:1.2`); default: the current pane
    #[arg(short = 't', long = "target", value_name = "PANE", value_hint = clap::ValueHint::Other, value_parser = pane_target)]
    pub target: Option<String>,
    /// Use this agent profile instead of identifying the agent
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
}

#[derive(Args, Debug)]
pub struct StateArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub t: Target,
    /// Every pane of the server
    #[arg(long, conflicts_with = "target")]
    pub all: bool,
    /// One JSON object per pane (an error: one object with exit_code and error)
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub t: Target,
    /// Print the rules and the verdict as one JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct DetectArgs {
    /// Agent profile to apply (default: the agent its `.meta` names, as `capture` writes it)
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Saved screen (`capture-pane -p` text)
    #[arg(long, value_name = "FILE")]
    pub screen: PathBuf,
    /// Its `.meta` (default: the screen file with extension .meta, if present)
    #[arg(long, value_name = "FILE")]
    pub meta: Option<PathBuf>,
    /// Print the verdict as one JSON object
    #[arg(long)]
    pub json: bool,
    /// Also print every rule tried
    #[arg(long)]
    pub explain: bool,
}

#[derive(Args, Debug)]
pub struct CaptureArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub t: Target,
    /// Output path without extension: writes OUT.txt, OUT.ansi, OUT.meta
    #[arg(short = 'o', long = "output", value_name = "DIR/NAME", value_parser = non_empty_path)]
    pub output: PathBuf,
    /// Recorded as `agent_version=` in the .meta
    #[arg(long, value_name = "VERSION")]
    pub agent_version: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct GateFlags {
    /// Give up after this many seconds (0 to 86400)
    #[arg(long, default_value_t = 15.0, value_name = "SECS", value_parser = secs(DAY), allow_negative_numbers = true)]
    pub timeout: f64,
    /// Poll interval (1 to 60000)
    #[arg(long, default_value_t = 25, value_name = "MS", value_parser = ms(1, MINUTE_MS), allow_negative_numbers = true)]
    pub interval: u64,
    /// The screen must hold still this long (0 to 60000)
    #[arg(long, default_value_t = 100, value_name = "MS", value_parser = ms(0, MINUTE_MS), allow_negative_numbers = true)]
    pub stable: u64,
    /// send: wait through `busy` instead of refusing (exit 22). `wait` always waits through busy: there it changes nothing
    #[arg(long)]
    pub wait_busy: bool,
    /// Wait through dialogs (never typing into them) until someone closes them
    #[arg(long)]
    pub wait_dialog: bool,
    /// After a cold start, the ready screen must hold still this long (0 to 60000) [default: the profile's startup_settle_ms]
    #[arg(long, value_name = "MS", value_parser = ms(0, MINUTE_MS), allow_negative_numbers = true)]
    pub settle: Option<u64>,
}

#[derive(Args, Debug)]
pub struct WaitArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub t: Target,
    #[command(flatten)]
    pub gate: GateFlags,
    /// After the prompt is taken, wait until the turn it started ends (busy, then
    /// ready) and report how long it took (`wait`: the turn running now)
    #[arg(long)]
    pub until_done: bool,
    /// With --until-done: the longest the turn may take, in seconds (0 to 86400)
    #[arg(long, default_value_t = 1800.0, value_name = "SECS", value_parser = secs(DAY), allow_negative_numbers = true)]
    pub done_timeout: f64,
    /// Print the gate's result as one JSON object (with exit_code and error)
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct SendArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Target pane (`%3`, `session`, `session:1.2`); repeat for several. Default: the current pane
    #[arg(short = 't', long = "target", value_name = "PANE", value_hint = clap::ValueHint::Other, value_parser = pane_target)]
    pub targets: Vec<String>,
    /// Use this agent profile instead of identifying the agent
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Fan-out: send to every pane of the server that runs this agent (or of --session)
    #[arg(long, value_name = "AGENT", conflicts_with_all = ["targets", "agent", "all_agents"])]
    pub every: Option<String>,
    /// Fan-out: send to every agent pane of the server (or of --session)
    #[arg(long, conflicts_with_all = ["targets", "agent"])]
    pub all_agents: bool,
    /// Limit --all-agents / --every to this session
    #[arg(long, value_name = "NAME", value_parser = non_empty)]
    pub session: Option<String>,
    /// Wait through busy, up to a long timeout (at least 10 minutes): the one-shot queue
    #[arg(long)]
    pub when_ready: bool,
    /// Fleet: the hosts to send on, one a line (`#` comments), as with `--host` repeated
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
    /// Fleet: seconds to wait for a host's ssh connection (0 to 3600)
    #[arg(long, default_value_t = 10.0, value_name = "SECS", value_parser = secs(HOUR), allow_negative_numbers = true)]
    pub connect_timeout: f64,
    /// Fleet: seconds a host's whole send may take before it is stopped and fails alone (0 to 86400)
    #[arg(long, default_value_t = 600.0, value_name = "SECS", value_parser = secs(DAY), allow_negative_numbers = true)]
    pub host_timeout: f64,
    /// Fan-out: at least this long between two targets' submit keys (they never overlap; 0 to 60000)
    #[arg(long, default_value_t = 2, value_name = "MS", value_parser = ms(0, MINUTE_MS), allow_negative_numbers = true)]
    pub stagger: u64,
    #[command(flatten)]
    pub gate: GateFlags,
    /// Skip the gate's wait (busy, starting: still plans, sanitises and verifies); also
    /// PROMPTGATE_GATE=off. Never types into a dialog (21), copy/view mode (23), after a draft (26)
    /// or into a pane whose foreground is not an agent (24)
    #[arg(long)]
    pub force: bool,
    /// Type even into a pane whose foreground program is not a recognised agent
    /// (a shell runs what it gets as commands). Needs --agent; no other flag or
    /// variable implies it. See docs/safety.md
    #[arg(long)]
    pub to_any_process: bool,
    /// Leave copy/view mode first instead of refusing
    #[arg(long)]
    pub cancel_mode: bool,
    /// Clear a draft in the composer first instead of refusing
    #[arg(long)]
    pub replace_draft: bool,
    /// Seconds to watch for the receipt after the submit key (0 to 3600)
    #[arg(long, default_value_t = 10.0, value_name = "SECS", value_parser = secs(HOUR), allow_negative_numbers = true)]
    pub verify_timeout: f64,
    /// Do not watch for a receipt nor read the agent's record: exit 0 once the submit key is sent, with the receipt `submitted` (never `consumed`: nothing was proven)
    #[arg(long)]
    pub no_verify: bool,
    /// Seconds to wait for another sender to this pane to finish (0 to 86400)
    #[arg(long, default_value_t = 120.0, value_name = "SECS", value_parser = secs(DAY), allow_negative_numbers = true)]
    pub lock_timeout: f64,
    /// After the prompt is taken, wait until the turn it started ends (busy, then
    /// ready) and report how long it took (`wait`: the turn running now)
    #[arg(long)]
    pub until_done: bool,
    /// With --until-done: the longest the turn may take, in seconds (0 to 86400)
    #[arg(long, default_value_t = 1800.0, value_name = "SECS", value_parser = secs(DAY), allow_negative_numbers = true)]
    pub done_timeout: f64,
    /// Print the receipt as one JSON object; any error too (with exit_code and error)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub body: BodyArgs,
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Only the panes of this session (a name, or an id such as `$1`)
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    /// tmux: styled glyphs for status-right; plain: the same unstyled; tsv: one pane a
    /// line (pane, session id, target, agent, state, glyph, reason); json: one object a line
    #[arg(long, value_enum, default_value = "tmux")]
    pub format: StatusFormat,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusFormat {
    Tmux,
    Plain,
    Tsv,
    Json,
}

#[derive(clap::Args, Debug)]
pub struct PluginArgs {
    #[arg(value_enum)]
    pub action: PluginAction,
    /// The pane the key was pressed in (prompt-done: the target pane's number)
    pub origin: String,
    /// The client it was pressed on
    #[arg(default_value = "")]
    pub client: String,
    /// prompt-done: the paste buffer holding the reply
    pub buffer: Option<String>,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginAction {
    Send,
    PromptDone,
    Compose,
    Paste,
    Pick,
    Broadcast,
}

#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Show a message when an agent pane goes from busy to ready (also `@promptgate-notify on`)
    #[arg(long)]
    pub notify: bool,
    /// Also ring each client's terminal bell (also `@promptgate-bell on`)
    #[arg(long)]
    pub bell: bool,
    /// Poll interval (1 to 60000)
    #[arg(long, default_value_t = 1000, value_name = "MS", value_parser = ms(1, MINUTE_MS), allow_negative_numbers = true)]
    pub interval: u64,
    /// How long a notice stays on the status line (0 to 600000)
    #[arg(long, default_value_t = 5000, value_name = "MS", value_parser = ms(0, 10 * MINUTE_MS), allow_negative_numbers = true)]
    pub display_ms: u64,
    /// Start only when it has work: `@promptgate-watch on`, `@promptgate-notify on`, or the
    /// status line shows `#{@promptgate-status}` (the plugin's `@promptgate-watch auto`)
    #[arg(long)]
    pub auto: bool,
}

#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Only this pane (default: every pane of the server)
    #[arg(short = 't', long = "target", value_name = "PANE", value_hint = clap::ValueHint::Other)]
    pub target: Option<String>,
    /// One JSON object per line: `tmux`, then one per pane
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug, Clone)]
pub struct HooksArgs {
    /// install, uninstall or status
    #[arg(value_parser = ["install", "uninstall", "status"])]
    pub action: String,
    /// claude, codex or gemini (status: all three when left out)
    #[arg(value_parser = crate::io::hooks::AGENTS)]
    pub agent: Option<String>,
    /// The settings file to change (default: the agent's own, under its HOME)
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct HookEventArgs {
    pub agent: String,
    pub event: String,
}

#[derive(Args, Debug, Clone)]
pub struct McpArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Reach only panes matching this glob (pane id, session, session:window,
    /// session:window-name or session:window.pane); repeat for several
    #[arg(long, value_name = "PATTERN")]
    pub allow: Vec<String>,
    /// Drop the tools that type (send_prompt, queue_prompt)
    #[arg(long)]
    pub read_only: bool,
    /// Print how to register this server with an agent, and exit
    #[arg(long, value_name = "AGENT", value_parser = ["claude", "codex", "gemini"])]
    pub print_config: Option<String>,
}

impl GateFlags {
    /// The gate's options for these flags.
    pub fn opts(&self) -> GateOpts {
        GateOpts {
            timeout: duration(self.timeout),
            interval: Duration::from_millis(self.interval.max(1)),
            stable: Duration::from_millis(self.stable),
            wait_busy: self.wait_busy,
            wait_dialog: self.wait_dialog,
            settle_after_start: self.settle.map(Duration::from_millis),
            process_age: None,
            cancel: None,
        }
    }
}

impl SendArgs {
    /// How to deliver, for [`crate::engine::deliver`]. `gate_off`: `PROMPTGATE_GATE=off`
    /// (or `0`) was set, which skips the gate as `--force` does.
    pub fn opts(&self, gate_off: bool) -> SendOpts {
        SendOpts {
            agent: self.agent.clone(),
            gate: self.gate.opts(),
            when_ready: self.when_ready,
            force: self.force || gate_off,
            cancel_mode: self.cancel_mode,
            replace_draft: self.replace_draft,
            verify_timeout: duration(self.verify_timeout),
            no_verify: self.no_verify,
            lock_timeout: duration(self.lock_timeout),
            to_any_process: self.to_any_process,
            pane_pid: None,
        }
    }
}

/// `ask`: every `send` flag (`--until-done` is implied), plus where the answer may come from.
#[derive(Args, Debug)]
#[command(
    mut_arg("until_done", |a| a.hide(true)),
    mut_arg("to_any_process", |a| a.hide(true)),
    mut_arg("done_timeout", |a| a.help("The longest the turn may take, in seconds (0 to 86400)")),
    mut_arg("json", |a| a.help("Print the receipt and the answer as one JSON object; any error too (with exit_code and error)"))
)]
pub struct AskArgs {
    #[command(flatten)]
    pub send: SendArgs,
    /// Where the agent's record holds no reply, read the answer from the screen
    /// (best effort: the rows between the prompt's echo and the composer)
    #[arg(long)]
    pub from_screen: bool,
}

/// `PROMPTGATE_GATE=off` (or `0`): every send skips the gate, as with `--force`.
pub fn gate_off_from_env() -> bool {
    std::env::var("PROMPTGATE_GATE").is_ok_and(|v| v == "off" || v == "0")
}

/// Seconds as a Duration. The parser already bounds every flag; this never
/// panics whatever it is given (NaN is 0, anything past a year is a year).
pub fn duration(s: f64) -> Duration {
    if s.is_nan() {
        return Duration::ZERO;
    }
    Duration::from_secs_f64(s.clamp(0.0, YEAR))
}

/// Where a prompt comes from: `-f FILE` (`-` = stdin), the words, or stdin.
///
/// Flags are flags wherever they stand, before or after the body: `send -t %0
/// "fix it" --json` is the body `fix it` and the flag `--json`, and an unknown
/// or mistyped flag is a usage error that types nothing. Several words are
/// joined by single spaces. Everything after `--` is body, so a body that
/// begins with `-` (or is a flag's name) goes after `--`.
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
    /// The prompt; several words are joined by spaces. Flags are read as flags
    /// wherever they stand: a body that begins with `-` goes after `--`
    /// (`-- "-v prints nothing"`). Or use -f, or pipe it on stdin
    #[arg(value_name = "BODY")]
    pub words: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Agent profile whose delivery capability to use
    #[arg(long, value_name = "NAME")]
    pub agent: String,
    /// Print the agent, its capability and the plan as one JSON object
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
    /// One JSON object per profile (with --show: the profile as JSON)
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
        /// One JSON object per queued prompt
        #[arg(long)]
        json: bool,
    },
    /// Remove a queued prompt
    Drop {
        id: String,
        /// How long to wait for a watcher that is delivering it, then refuse (28) (0 to 3600)
        #[arg(long, default_value_t = 3.0, value_name = "SECS", value_parser = secs(HOUR), allow_negative_numbers = true)]
        wait: f64,
    },
    /// The answers of prompts queued with --ask: a list, or one answer's text (by id or a unique prefix)
    Answer {
        /// One answer's text on stdout (exit 0 when answered, 20 while waiting, the ask exit code when it failed)
        id: Option<String>,
        /// One JSON object per answer (the answer of `ask --json` inside)
        #[arg(long)]
        json: bool,
    },
    /// Deliver the queues: each pane's prompts in order, whenever it is ready
    Run(QueueRunArgs),
}

#[derive(Args, Debug)]
pub struct QueueAddArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Target pane; default: the current pane
    #[arg(short = 't', long = "target", value_name = "PANE", value_hint = clap::ValueHint::Other, value_parser = pane_target)]
    pub target: Option<String>,
    /// Agent profile to use for this pane
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Once delivered, wait for the turn and keep the agent's answer (`queue answer ID`)
    #[arg(long)]
    pub ask: bool,
    #[command(flatten)]
    pub body: BodyArgs,
}

#[derive(Args, Debug)]
pub struct QueueRunArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Stop when nothing more can be delivered now (or the queue is empty)
    #[arg(long)]
    pub once: bool,
    /// Stop after this many seconds (0 to 31536000, a year)
    #[arg(long, value_name = "SECS", value_parser = secs(YEAR), allow_negative_numbers = true)]
    pub max_secs: Option<f64>,
    /// Pause between rounds when nothing moved (1 to 60000)
    #[arg(long, default_value_t = 200, value_name = "MS", value_parser = ms(1, MINUTE_MS), allow_negative_numbers = true)]
    pub interval: u64,
    /// How long one delivery waits for its pane, busy waited through (0 to 86400)
    #[arg(long, default_value_t = 2.0, value_name = "SECS", value_parser = secs(DAY), allow_negative_numbers = true)]
    pub gate_timeout: f64,
    /// Seconds to watch for each receipt (0 to 3600)
    #[arg(long, default_value_t = 10.0, value_name = "SECS", value_parser = secs(HOUR), allow_negative_numbers = true)]
    pub verify_timeout: f64,
    /// For prompts queued with --ask: the longest a turn may take, in seconds (0 to 86400)
    #[arg(long, default_value_t = 1800.0, value_name = "SECS", value_parser = secs(DAY), allow_negative_numbers = true)]
    pub done_timeout: f64,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// The page of this command (`send` is promptgate-send(1)); default: promptgate(1)
    #[arg(value_name = "COMMAND", conflicts_with = "dir")]
    pub command: Option<String>,
    /// Write every page (promptgate.1, promptgate-send.1, ...) into DIR
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Which agent the simulated one looks like
    #[arg(long, default_value = "claude", value_parser = ["claude", "codex", "gemini", "opencode"])]
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

/// The largest values of the numeric flags: every number is checked when the
/// command line is parsed, so none can overflow a clock later.
pub const MINUTE_MS: u64 = 60_000;
pub const HOUR: f64 = 3_600.0;
pub const DAY: f64 = 86_400.0;
pub const YEAR: f64 = 31_536_000.0;

/// A number of seconds: finite, from 0 to `max` (decimals allowed).
pub fn secs(max: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let range = || format!("a number of seconds from 0 to {max}");
        let v: f64 = s.trim().parse().map_err(|_| format!("not {}", range()))?;
        if !v.is_finite() {
            return Err(format!("not finite: give {}", range()));
        }
        if !(0.0..=max).contains(&v) {
            return Err(format!("out of range: give {}", range()));
        }
        Ok(v)
    }
}

/// A whole number of milliseconds from `min` to `max`.
pub fn ms(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let range = || format!("a whole number of milliseconds from {min} to {max}");
        let v: u64 = match s.trim().parse::<i128>() {
            Ok(v) if (min as i128..=max as i128).contains(&v) => v as u64,
            Ok(_) => return Err(format!("out of range: give {}", range())),
            Err(_) => return Err(format!("not {}", range())),
        };
        Ok(v)
    }
}

/// A `-t` value: never empty or blank, which tmux would read as "the current
/// pane" (a script's `-t "$PANE"` with `PANE` unset must not send anywhere).
fn pane_target(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("an empty target names no pane (give a pane such as %3 or work:1.0)".into());
    }
    Ok(s.to_string())
}

/// A path that must not be empty or blank (`capture -o ''` would write `.txt`,
/// `.ansi` and `.meta` into the current directory).
fn non_empty_path(s: &str) -> Result<PathBuf, String> {
    non_empty(s).map(PathBuf::from)
}

/// A name or path that must not be empty or blank.
fn non_empty(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("must not be empty".into());
    }
    Ok(s.to_string())
}

impl Command {
    /// The server flags given after the command, on the commands that talk to tmux.
    pub fn server_args(&self) -> Option<&ServerArgs> {
        Some(match self {
            Command::State(a) => &a.server,
            Command::Explain(a) => &a.server,
            Command::Capture(a) => &a.server,
            Command::Wait(a) => &a.server,
            Command::Send(a) => &a.server,
            Command::Ask(a) => &a.send.server,
            Command::Queue(QueueArgs {
                cmd: QueueCmd::Add(a),
            }) => &a.server,
            Command::Queue(QueueArgs {
                cmd: QueueCmd::Run(a),
            }) => &a.server,
            Command::Demo(a) => &a.server,
            Command::Status(a) => &a.server,
            Command::Watch(a) => &a.server,
            Command::Mcp(a) => &a.server,
            Command::Doctor(a) => &a.server,
            _ => return None,
        })
    }

    /// Whether the command was asked for JSON (`--json`).
    pub fn json(&self) -> bool {
        match self {
            Command::State(a) => a.json,
            Command::Explain(a) => a.json,
            Command::Detect(a) => a.json,
            Command::Wait(a) => a.json,
            Command::Send(a) => a.json,
            Command::Ask(a) => a.send.json,
            Command::Plan(a) => a.json,
            Command::Profiles(a) => a.json,
            Command::Queue(QueueArgs {
                cmd: QueueCmd::List { json },
            }) => *json,
            _ => false,
        }
    }
}

/// A clap error as one line: the error, its tips, and where to read more
/// (`unexpected argument '--wait-bussy' found (tip: a similar argument exists:
/// '--wait-busy'); try 'promptgate send --help'`). `args` (without argv[0])
/// name the subcommand whose help to point at.
pub fn usage_line(e: &clap::Error, args: &[String]) -> String {
    let text = e.render().to_string();
    let paras = text.split("\n\n").map(str::trim).filter(|p| !p.is_empty());
    let join = |p: &str| p.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    let mut line = String::new();
    for p in paras {
        if let Some(tip) = p.strip_prefix("tip:") {
            line += &format!(" (tip: {})", join(tip.trim()));
        } else if line.is_empty() {
            line = join(p.strip_prefix("error:").unwrap_or(p).trim());
        }
    }
    if line.is_empty() {
        line = "invalid arguments".into();
    }
    format!("{line}; try '{} --help'", command_path(args))
}

/// `promptgate send`, `promptgate queue add`: the subcommands named in `args`
/// (up to `--`).
pub fn command_path(args: &[String]) -> String {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut path = vec!["promptgate".to_string()];
    for a in args.iter().take_while(|a| *a != "--") {
        let Some(sub) = cmd.find_subcommand(a).cloned() else {
            continue;
        };
        path.push(sub.get_name().to_string());
        cmd = sub;
    }
    path.join(" ")
}

/// `-t` or, inside tmux, the current pane (`$TMUX_PANE`): only on the server
/// `$TMUX` names. A pane id names a pane of one server only: with `-L`, `-S`
/// or `--host` choosing another, `%0` there is someone else's pane (exit 2).
pub fn target(
    server: &crate::io::tmux::Server,
    t: &Option<String>,
) -> crate::core::error::Result<String> {
    if let Some(t) = t {
        return Ok(t.clone());
    }
    let Some(pane) = current_pane() else {
        return Err(Error::Usage(
            "not inside tmux: give -t PANE (%3, session or session:window.pane; \
             `promptgate state --all` lists the panes)"
                .into(),
        ));
    };
    match other_server(server) {
        None => Ok(pane),
        Some(which) => Err(Error::Usage(format!(
            "give -t PANE: the current pane ({pane}) is on the server $TMUX names, not on {which}"
        ))),
    }
}

/// `$TMUX_PANE`, when set (inside tmux).
pub fn current_pane() -> Option<String> {
    std::env::var("TMUX_PANE").ok().filter(|p| !p.is_empty())
}

/// Whether the server chosen is not the one `$TMUX` names (its first comma
/// field is the socket's path): what names it (`--host`, `-L NAME`, `-S PATH`),
/// or `None` when it is that server (or no server option was given).
pub fn other_server(server: &crate::io::tmux::Server) -> Option<String> {
    use crate::io::tmux::Server;
    if crate::io::tmux::is_remote() {
        return Some("another machine (--host or PROMPTGATE_TMUX)".into());
    }
    let path = match server {
        Server::Default => return None,
        Server::Name(n) => {
            let dir = std::env::var_os("TMUX_TMPDIR")
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| "/tmp".into());
            PathBuf::from(dir)
                .join(format!("tmux-{}", unsafe { libc::getuid() }))
                .join(n)
        }
        Server::Path(p) => PathBuf::from(p),
    };
    let tmux = std::env::var("TMUX").unwrap_or_default();
    let ours = tmux.split(',').next().unwrap_or_default();
    let same = !ours.is_empty()
        && (std::path::Path::new(ours) == path
            || matches!(
                (std::fs::canonicalize(ours), std::fs::canonicalize(&path)),
                (Ok(a), Ok(b)) if a == b
            ));
    (!same).then(|| server.spec())
}

/// The body: `-f FILE` (`-` = stdin), else the words joined by spaces, else stdin
/// when it is not a terminal.
pub fn read_body(b: &BodyArgs) -> crate::core::error::Result<Vec<u8>> {
    let (file, words) = (&b.file, &b.words);
    if let Some(f) = file {
        if f.as_os_str() == "-" {
            return read_stdin();
        }
        let max = crate::core::plan::MAX_BODY_BYTES as u64;
        return crate::io::read_capped(f, max)
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

fn read_stdin() -> crate::core::error::Result<Vec<u8>> {
    let max = crate::core::plan::MAX_BODY_BYTES as u64;
    // read no further than the limit: the size past it is not known
    crate::io::read_upto(std::io::stdin().lock(), max)?.ok_or_else(|| {
        Error::BadBody(format!(
            "the body on stdin is more than {max} bytes (the limit)"
        ))
    })
}
