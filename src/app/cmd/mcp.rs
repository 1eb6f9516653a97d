//! `promptgate mcp`: a Model Context Protocol server over stdio (the official
//! Rust SDK, `rmcp`), so that an agent can drive other agents with the gate,
//! the receipts and the evidence inside.
//!
//! Safety first: a tool reaches only panes that identify as agents, never a
//! shell and never the pane its caller runs in (`$TMUX_PANE` of this process
//! or of its nearest ancestor that has one); `--allow` narrows the reach and
//! `--read-only` drops the tools that type. Every send goes through the same
//! gate, delivery and verify as `promptgate send`, is logged with
//! `"via": "mcp"`, and a bad body is refused, never truncated.

use crate::app::cli::McpArgs;
use crate::core::error::Error;
use crate::core::plan::sanitise;
use crate::core::plan::Body;
use crate::core::profile::Profiles;
use crate::core::verify::ReceiptKind;
use crate::engine::deliver::{deliver_to, SendOpts, Shared};
use crate::engine::gate::{GateOpts, SystemClock};
use crate::engine::observe::{observe, Observed};
use crate::engine::sink::{Finished, Quiet, Sink};
use crate::io::tmux::{Control, PaneLoc, Process, Server, Tmux};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ProgressNotificationParam, RequestMetaObject, ServerCapabilities,
    ServerConfig,
};
use rmcp::{tool, tool_handler, tool_router, Peer, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

pub fn run(server: &Server, profiles: Profiles, a: McpArgs) -> crate::core::error::Result<i32> {
    let gk = Gatekeeper::new(server.clone(), profiles, a.allow.clone(), a.read_only);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        // rmcp reads what the line filter passes on; every other line is
        // answered by the filter (see `jsonrpc`)
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (from_rmcp, to_rmcp) = tokio::io::split(ours);
        let (answers_tx, answers_rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let mut to_rmcp = to_rmcp;
            filter_stdin(&mut to_rmcp, answers_tx).await;
            // the client went away (it closed our stdin, as MCP's shutdown does,
            // or died): every request of its still waiting to type stops there,
            // as a `notifications/cancelled` would stop it; one typing finishes
            client_gone().cancel();
            // the end of stdin is the end of rmcp's input
            let _ = to_rmcp.shutdown().await;
        });
        let writer = tokio::spawn(write_stdout(from_rmcp, answers_rx));
        let served = match gk.serve(theirs).await {
            Ok(service) => service.waiting().await.map(drop).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        // the answers still on their way out, not waiting on a client that keeps stdin open
        let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
        served.map_err(|e| Error::Other(format!("mcp: {e}")))
    })?;
    Ok(0)
}

/// Read the client's lines from stdin: pass the good ones on to rmcp, send an
/// answer for each other one to the writer ([`crate::io::jsonrpc::check`]). At the
/// end of stdin rmcp's input ends too.
async fn filter_stdin(
    to_rmcp: &mut tokio::io::WriteHalf<tokio::io::DuplexStream>,
    answers: tokio::sync::mpsc::UnboundedSender<Value>,
) {
    use crate::io::jsonrpc::{check, Line, MAX_LINE};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut input = tokio::io::BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        // a line past the limit is read only up to it; the rest is skipped
        let mut over = 0usize;
        loop {
            let buf = match input.fill_buf().await {
                Ok(b) => b,
                Err(_) => return,
            };
            if buf.is_empty() {
                break;
            }
            let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (&buf[..i + 1], true),
                None => (buf, false),
            };
            let n = chunk.len();
            let room = (MAX_LINE + 1).saturating_sub(line.len());
            line.extend_from_slice(&chunk[..n.min(room)]);
            over += n.saturating_sub(room);
            input.consume(n);
            if done {
                break;
            }
        }
        if line.is_empty() {
            return;
        }
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        let verdict = if over > 0 {
            crate::io::jsonrpc::check_oversized(body, body.len() + over)
        } else {
            check(body)
        };
        match verdict {
            Line::Skip => {}
            Line::Answer(v) => {
                if answers.send(v).is_err() {
                    return;
                }
            }
            Line::Pass => {
                let ok = to_rmcp.write_all(body).await.is_ok()
                    && to_rmcp.write_all(b"\n").await.is_ok()
                    && to_rmcp.flush().await.is_ok();
                if !ok {
                    return;
                }
            }
        }
    }
}

/// Write rmcp's lines and the filter's answers to stdout, whole lines each.
async fn write_stdout(
    from_rmcp: tokio::io::ReadHalf<tokio::io::DuplexStream>,
    mut answers: tokio::sync::mpsc::UnboundedReceiver<Value>,
) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut out = tokio::io::stdout();
    let mut lines = tokio::io::BufReader::new(from_rmcp);
    // rmcp's line so far: a read cut short by an answer keeps its bytes here
    let mut pending = Vec::new();
    let (mut rmcp_open, mut answers_open) = (true, true);
    while rmcp_open || answers_open {
        let line = tokio::select! {
            r = lines.read_until(b'\n', &mut pending), if rmcp_open => {
                if !matches!(r, Ok(n) if n > 0) {
                    rmcp_open = false;
                }
                if pending.ends_with(b"\n") || (!rmcp_open && !pending.is_empty()) {
                    std::mem::take(&mut pending)
                } else {
                    Vec::new()
                }
            },
            a = answers.recv(), if answers_open => match a {
                Some(v) => format!("{v}\n").into_bytes(),
                None => {
                    answers_open = false;
                    Vec::new()
                }
            },
        };
        if !line.is_empty() && (out.write_all(&line).await.is_err() || out.flush().await.is_err()) {
            return;
        }
    }
}

/// `send`'s defaults with a tool's timeout and waits (`PROMPTGATE_GATE=off`
/// skips the gate here too, as for `send`).
fn tool_opts(timeout: Duration, wait_busy: bool, wait_dialog: bool) -> SendOpts {
    let mut opts = SendOpts {
        force: crate::app::cli::gate_off_from_env(),
        ..SendOpts::default()
    };
    opts.gate.timeout = timeout;
    opts.gate.wait_busy = wait_busy;
    opts.gate.wait_dialog = wait_dialog;
    opts
}

/// The arguments that start this server with the limits it was given: the
/// tmux server (`-L`, `-S`, `--host`), `--profiles`, `--read-only` and each
/// `--allow`. Paths are made absolute: the agent starts the server elsewhere.
pub fn server_argv(
    srv: &crate::app::cli::ServerArgs,
    profiles: Option<&std::path::Path>,
    a: &McpArgs,
) -> Vec<String> {
    let abs = |p: &std::path::Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    let mut v = vec!["mcp".to_string()];
    if let Some(n) = &srv.socket_name {
        v.extend(["-L".into(), n.clone()]);
    }
    if let Some(p) = &srv.socket_path {
        v.extend(["-S".into(), abs(std::path::Path::new(p))]);
    }
    for h in &srv.host {
        v.extend(["--host".into(), h.clone()]);
    }
    if let Some(p) = profiles {
        v.extend(["--profiles".into(), abs(p)]);
    }
    if a.read_only {
        v.push("--read-only".into());
    }
    for g in &a.allow {
        v.extend(["--allow".into(), g.clone()]);
    }
    v
}

/// How to register this server with an agent: `argv` (from [`server_argv`])
/// is carried whole, quoted for the shell in a command line and as a list in
/// a config file.
pub fn print_config(agent: &str, argv: &[String]) -> crate::core::error::Result<String> {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "promptgate".into());
    let line = std::iter::once(exe.as_str())
        .chain(argv.iter().map(String::as_str))
        .map(sh_quote)
        .collect::<Vec<_>>()
        .join(" ");
    let toml_args = argv
        .iter()
        .map(|a| toml_string(a))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(match agent {
        "claude" => format!("claude mcp add promptgate -- {line}"),
        "codex" => format!(
            "codex mcp add promptgate -- {line}\n# or in ~/.codex/config.toml:\n[mcp_servers.promptgate]\ncommand = {}\nargs = [{toml_args}]",
            toml_string(&exe)
        ),
        "gemini" => format!(
            "gemini mcp add promptgate {line}\n# or in ~/.gemini/settings.json:\n{}",
            serde_json::to_string_pretty(
                &json!({"mcpServers": {"promptgate": {"command": exe, "args": argv}}})
            )
            .unwrap_or_default()
        ),
        other => {
            return Err(Error::Usage(format!(
                "--print-config {other}: one of claude, codex, gemini"
            )))
        }
    })
}

use crate::io::tmux::sh_quote;

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[derive(Clone)]
pub struct Gatekeeper {
    server: Server,
    profiles: Arc<Profiles>,
    allow: Vec<String>,
    /// The panes this server must never reach: its caller's.
    caller_panes: Vec<String>,
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoParams {}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TargetParams {
    /// The pane: `%3`, `session`, `session:window.pane` (names are exact, never prefixes).
    pub target: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadScreenParams {
    /// The pane: `%3`, `session`, `session:window.pane`.
    pub target: String,
    /// The last N lines, scrollback included; default: the visible screen.
    pub lines: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SendParams {
    /// The pane: `%3`, `session`, `session:window.pane`.
    pub target: String,
    /// The prompt, exactly as it should arrive (sanitised as `promptgate send` does).
    pub body: String,
    /// Wait while the agent is busy instead of refusing (up to `timeout_secs`).
    #[serde(default)]
    pub wait_busy: bool,
    /// Wait (typing nothing) until a person closes a dialog, instead of refusing.
    #[serde(default)]
    pub wait_dialog: bool,
    /// After the receipt, wait for the turn the prompt started to end.
    #[serde(default)]
    pub until_done: bool,
    /// How long the gate may wait, in seconds (default 15, at most 3600).
    pub timeout_secs: Option<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AskParams {
    /// The pane: `%3`, `session`, `session:window.pane`.
    pub target: String,
    /// The prompt, exactly as it should arrive (sanitised as `promptgate send` does).
    pub body: String,
    /// Wait while the agent is busy instead of refusing (up to `timeout_secs`).
    #[serde(default)]
    pub wait_busy: bool,
    /// Wait (typing nothing) until a person closes a dialog, instead of refusing.
    #[serde(default)]
    pub wait_dialog: bool,
    /// How long the gate may wait, in seconds (default 15, at most 3600).
    pub timeout_secs: Option<f64>,
    /// How long the turn may take, in seconds (default 1800, at most 3600).
    pub done_timeout_secs: Option<f64>,
    /// Where the agent's record holds no reply, read the answer from the screen.
    #[serde(default)]
    pub from_screen: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WaitParams {
    /// The pane: `%3`, `session`, `session:window.pane`.
    pub target: String,
    /// How long to wait, in seconds (default 60, at most 3600).
    pub timeout_secs: Option<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct QueueParams {
    /// The pane: `%3`, `session`, `session:window.pane`.
    pub target: String,
    /// The prompt, exactly as it should arrive.
    pub body: String,
}

/// A tool's answer: structured content, and a one-line summary first.
fn answer(summary: &str, v: Value) -> CallToolResult {
    let mut r = CallToolResult::structured(v);
    r.content.insert(0, ContentBlock::text(summary.to_string()));
    r
}

/// A refusal or failure: a tool error whose message says why and what to do.
fn refuse(msg: &str, v: Value) -> CallToolResult {
    let mut v = v;
    if v.get("error").is_none() {
        v["error"] = msg.into();
    }
    let mut r = CallToolResult::structured_error(v);
    r.content.insert(0, ContentBlock::text(msg.to_string()));
    r
}

/// The body of a tool call, sanitised once; a body that cannot be sent is a
/// not-sent refusal with its exit code.
fn sanitised(body: &str) -> std::result::Result<Body, Box<CallToolResult>> {
    Body::sanitise(body.as_bytes()).map_err(|e| {
        let mut v = not_sent();
        v["exit_code"] = e.exit_code().into();
        Box::new(refuse(&format!("{e}; nothing was typed"), v))
    })
}

/// The MCP sink: each phase of a delivery becomes the progress message.
struct PhaseStatus {
    status: std::sync::Arc<std::sync::Mutex<String>>,
    pane: String,
}

impl crate::engine::sink::Sink for PhaseStatus {
    fn phase(&mut self, phase: crate::engine::sink::Phase) -> crate::core::error::Result<()> {
        if let Ok(mut s) = self.status.lock() {
            *s = format!("{}: {phase}", self.pane);
        }
        Ok(())
    }
}

/// A send that ended before anything was typed and before a receipt of its own.
fn not_sent() -> Value {
    crate::engine::sink::not_sent(json!({}))
}

fn secs(v: Option<f64>, default: f64) -> std::result::Result<Duration, String> {
    let s = v.unwrap_or(default);
    if !s.is_finite() || !(0.0..=3600.0).contains(&s) {
        return Err(format!(
            "timeout_secs must be a number from 0 to 3600, not {s}"
        ));
    }
    Ok(Duration::from_secs_f64(s))
}

/// Glob with `*` and `?`.
fn glob(p: &str, s: &str) -> bool {
    fn go(p: &[char], s: &[char]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some('*'), _) => go(&p[1..], s) || (!s.is_empty() && go(p, &s[1..])),
            (Some('?'), Some(_)) => go(&p[1..], &s[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &s[1..]),
            _ => false,
        }
    }
    let (p, s): (Vec<char>, Vec<char>) = (p.chars().collect(), s.chars().collect());
    go(&p, &s)
}

impl Gatekeeper {
    pub fn new(server: Server, profiles: Profiles, allow: Vec<String>, read_only: bool) -> Self {
        let mut tool_router = Self::tool_router();
        if read_only {
            tool_router.remove_route("send_prompt");
            tool_router.remove_route("queue_prompt");
            tool_router.remove_route("ask_agent");
        }
        Gatekeeper {
            server,
            profiles: Arc::new(profiles),
            allow,
            caller_panes: crate::io::proc::caller_panes(),
            tool_router,
        }
    }

    fn allowed(&self, loc: &PaneLoc) -> bool {
        if self.allow.is_empty() {
            return true;
        }
        let names = [
            loc.id.clone(),
            loc.session.clone(),
            format!("{}:{}", loc.session, loc.window),
            format!("{}:{}", loc.session, loc.window_name),
            loc.target(),
        ];
        self.allow.iter().any(|p| names.iter().any(|n| glob(p, n)))
    }

    /// The pane a tool may reach, and a look at it; or why not.
    fn reach(&self, target: &str) -> std::result::Result<(PaneLoc, Observed), String> {
        if target.trim().is_empty() {
            return Err(
                "no target: name a pane (`%3`, `session:window.pane`); list_agents lists them"
                    .into(),
            );
        }
        let mut one = Process::new(self.server.clone());
        let pane = one.resolve(target).map_err(|e| e.to_string())?;
        if self.caller_panes.contains(&pane) {
            return Err(format!(
                "{pane} is the pane this MCP server's caller runs in: promptgate never types into its own caller"
            ));
        }
        let loc = one
            .locate_panes()
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|l| l.id == pane)
            .ok_or_else(|| format!("no such pane: {target}"))?;
        if !self.allowed(&loc) {
            return Err(format!(
                "{pane} ({}) is outside --allow {}",
                loc.target(),
                self.allow.join(",")
            ));
        }
        let o = observe(&mut one, &self.profiles, None, &pane).map_err(|e| e.to_string())?;
        if o.identity.agent.is_none() {
            return Err(format!(
                "{pane} runs no agent ({}): promptgate never types into a shell or another program",
                o.verdict.reason()
            ));
        }
        Ok((loc, o))
    }

    fn describe(loc: &PaneLoc, o: &Observed) -> Value {
        json!({
            "pane": loc.id,
            "target": loc.target(),
            "window_name": loc.window_name,
            "agent": o.identity.agent,
            "identified_by": o.identity.how,
            "state": o.verdict.state.to_string(),
            "reason": o.verdict.reason(),
            "evidence": o.verdict.evidence,
            "cwd": loc.path,
        })
    }
}

/// Sends progress notifications while a blocking job runs, when the client
/// asked for them (a progress token); stops when dropped.
struct Progress {
    stop: CancellationToken,
}

impl Progress {
    fn start(
        peer: Peer<RoleServer>,
        meta: &RequestMetaObject,
        total: Duration,
        status: Arc<Mutex<String>>,
    ) -> Progress {
        let stop = CancellationToken::new();
        if let Some(token) = meta.get_progress_token() {
            let stop2 = stop.clone();
            tokio::spawn(async move {
                let start = Instant::now();
                loop {
                    tokio::select! {
                        _ = stop2.cancelled() => break,
                        _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                    }
                    let msg = status.lock().map(|s| s.clone()).unwrap_or_default();
                    let p = ProgressNotificationParam::new(
                        token.clone(),
                        start.elapsed().as_secs_f64(),
                    )
                    .with_total(total.as_secs_f64())
                    .with_message(msg);
                    if peer.notify_progress(p).await.is_err() {
                        break;
                    }
                }
            });
        }
        Progress { stop }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Run `f` off the async threads, so that a long wait never blocks the
/// server's other calls.
/// A job that typed counts as finished when it returns, whatever way it
/// returns: a SIGTERM held while it typed then ends the server, once no other
/// job is typing (the job's threads are pooled: none stays counted as typing).
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(move || {
        let _done = crate::io::interrupt::Finished;
        f()
    })
    .await
    .expect("a blocking tool job panicked")
}

/// Cancelled once the client's input ends: nobody is left to take an answer.
fn client_gone() -> &'static CancellationToken {
    static GONE: std::sync::OnceLock<CancellationToken> = std::sync::OnceLock::new();
    GONE.get_or_init(CancellationToken::new)
}

/// A flag set when the request is cancelled, or its client went away.
fn cancel_flag(ct: &CancellationToken) -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let (f, ct) = (flag.clone(), ct.clone());
    tokio::spawn(async move {
        tokio::select! {
            _ = ct.cancelled() => {}
            _ = client_gone().cancelled() => {}
        }
        f.store(true, Ordering::SeqCst);
    });
    flag
}

/// Wait until the turn running in `pane` ends (`super::until_done`), as JSON.
fn wait_turn(
    gk: &Gatekeeper,
    agent: &str,
    pane: &str,
    timeout: Duration,
    start: crate::engine::gate::TurnStart,
    cancel: &AtomicBool,
) -> std::result::Result<Value, String> {
    let t = crate::engine::observe::until_done(
        &gk.server,
        &gk.profiles,
        agent,
        pane,
        timeout,
        start,
        Some(cancel),
    )
    .map_err(|e| e.to_string())?;
    let mut v = serde_json::to_value(&t).unwrap_or_default();
    v["pane"] = pane.into();
    Ok(v)
}

/// What a long wait's job gets: the server, the pane and a first look at it,
/// the timeout, the cancellation flag and the progress line to keep current.
struct Waiting {
    gk: Gatekeeper,
    loc: PaneLoc,
    first: Observed,
    timeout: Duration,
    cancel: Arc<AtomicBool>,
    status: Arc<Mutex<String>>,
}

impl Gatekeeper {
    /// A long wait on one pane: its timeout checked, progress reported while it
    /// runs, cancellation watched, and `job` run off the async threads once the
    /// pane is reachable.
    async fn long_wait(
        &self,
        target: String,
        timeout_secs: Option<f64>,
        default_secs: f64,
        what: &str,
        (meta, peer, ct): (RequestMetaObject, Peer<RoleServer>, CancellationToken),
        job: impl FnOnce(Waiting) -> CallToolResult + Send + 'static,
    ) -> CallToolResult {
        let timeout = match secs(timeout_secs, default_secs) {
            Ok(t) => t,
            Err(e) => return refuse(&e, json!({})),
        };
        let status = Arc::new(Mutex::new(format!("{target}: {what}")));
        let _progress = Progress::start(peer, &meta, timeout, status.clone());
        let cancel = cancel_flag(&ct);
        let gk = self.clone();
        blocking(move || match gk.reach(&target) {
            Ok((loc, first)) => job(Waiting {
                gk,
                loc,
                first,
                timeout,
                cancel,
                status,
            }),
            Err(e) => refuse(&e, json!({})),
        })
        .await
    }
}

#[tool_router]
impl Gatekeeper {
    #[tool(
        description = "Every agent pane this server may reach (never shells, never the caller's own pane): pane id, session:window.pane, window name, agent, state with its evidence, and cwd."
    )]
    async fn list_agents(&self, _p: Parameters<NoParams>) -> CallToolResult {
        let gk = self.clone();
        let r = blocking(move || -> crate::core::error::Result<Vec<Value>> {
            let one = Process::new(gk.server.clone());
            let locs = one.locate_panes()?;
            let Some(first) = locs.first() else {
                return Ok(Vec::new());
            };
            let mut tmux = Control::new(gk.server.clone(), &first.id);
            let mut out = Vec::new();
            for loc in &locs {
                if gk.caller_panes.contains(&loc.id) || !gk.allowed(loc) || loc.dead {
                    continue;
                }
                match observe(&mut tmux, &gk.profiles, None, &loc.id) {
                    Ok(o) if o.identity.agent.is_some() => out.push(Gatekeeper::describe(loc, &o)),
                    _ => {}
                }
            }
            Ok(out)
        })
        .await;
        match r {
            Ok(v) => {
                let summary = format!(
                    "{} agent pane(s): {}",
                    v.len(),
                    v.iter()
                        .map(|a| format!(
                            "{} {} {}",
                            a["pane"].as_str().unwrap_or(""),
                            a["agent"].as_str().unwrap_or(""),
                            a["state"].as_str().unwrap_or("")
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                answer(&summary, json!({"agents": v}))
            }
            Err(e) => refuse(&format!("promptgate: {e}"), json!({})),
        }
    }

    #[tool(
        description = "One agent pane's state (ready, busy, draft, dialog:KIND, starting, exited, in-mode) with every rule tried and the evidence that decided."
    )]
    async fn agent_state(&self, p: Parameters<TargetParams>) -> CallToolResult {
        let gk = self.clone();
        match blocking(move || gk.reach(&p.0.target)).await {
            Ok((loc, o)) => {
                let mut v = Gatekeeper::describe(&loc, &o);
                v["checks"] = serde_json::to_value(&o.verdict.checks).unwrap_or_default();
                let summary = format!(
                    "{} {} {}: {}",
                    loc.id,
                    o.identity.agent.as_deref().unwrap_or("-"),
                    o.verdict.state,
                    o.verdict.reason()
                );
                answer(&summary, v)
            }
            Err(e) => refuse(&e, json!({})),
        }
    }

    #[tool(
        description = "The text of an agent pane: the visible screen, or its last N lines with scrollback, so the caller can read an answer."
    )]
    async fn read_screen(&self, p: Parameters<ReadScreenParams>) -> CallToolResult {
        let gk = self.clone();
        let r = blocking(move || -> std::result::Result<(String, String), String> {
            let (loc, _) = gk.reach(&p.0.target)?;
            let one = Process::new(gk.server.clone());
            let start = p.0.lines.map(|n| format!("-{}", n.min(100_000)));
            let mut args = vec!["capture-pane", "-p", "-J", "-t", loc.id.as_str()];
            if let Some(s) = &start {
                args.extend(["-S", s.as_str()]);
            }
            let text = one
                .run(&args, None, Some(&loc.id))
                .map_err(|e| e.to_string())?;
            let mut lines: Vec<&str> = text.lines().collect();
            while lines.last().is_some_and(|l| l.trim().is_empty()) {
                lines.pop();
            }
            if let Some(n) = p.0.lines {
                let n = n as usize;
                if lines.len() > n {
                    lines.drain(..lines.len() - n);
                }
            }
            Ok((loc.id, lines.join("\n")))
        })
        .await;
        match r {
            Ok((pane, text)) => {
                let n = text.lines().count();
                let mut r = answer(
                    &format!("{pane}: {n} lines"),
                    json!({"pane": pane, "lines": n, "text": text}),
                );
                r.content.insert(1, ContentBlock::text(text));
                r
            }
            Err(e) => refuse(&e, json!({})),
        }
    }

    #[tool(
        description = "Deliver a prompt into an agent pane exactly once: wait until it is really ready, paste the body, press Enter as its own keystroke, and prove the agent took it. Returns the receipt (consumed, queued, stranded, refused, unknown, mangled, unproven) with its evidence and the proof from the agent's own record. A refusal (dialog, busy, draft, not an agent) is a tool error that says why and what to do; nothing is typed then."
    )]
    async fn send_prompt(
        &self,
        p: Parameters<SendParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        ct: CancellationToken,
    ) -> CallToolResult {
        let p = p.0;
        let body = match sanitised(&p.body) {
            Ok(b) => b,
            Err(r) => return *r,
        };
        let timeout = match secs(p.timeout_secs, 15.0) {
            Ok(t) => t,
            Err(e) => return refuse(&e, json!({})),
        };
        let status = Arc::new(Mutex::new(format!("{}: gating", p.target)));
        let _progress = Progress::start(peer, &meta, timeout, status.clone());
        let cancel = cancel_flag(&ct);
        let gk = self.clone();
        blocking(move || {
            let (loc, _) = match gk.reach(&p.target) {
                Ok(v) => v,
                Err(e) => return refuse(&e, not_sent()),
            };
            let opts = tool_opts(timeout, p.wait_busy, p.wait_dialog);
            let mut sink = PhaseStatus {
                status: status.clone(),
                pane: loc.id.clone(),
            };
            // a cancelled request stops the gate before anything is typed
            let shared = Shared::new(Duration::from_millis(2)).with_cancel(cancel.clone());
            let o = deliver_to(
                &gk.server,
                &gk.profiles,
                &opts,
                &loc.id,
                &body,
                &shared,
                &mut sink,
            );
            let typed = o.rec.clone().map(|r| crate::engine::receipt::Receipt {
                via: Some("mcp".into()),
                ..r
            });
            let mut rec = match &typed {
                Some(r) => r.to_json(),
                None => json!({"pane": loc.id, "via": "mcp"}),
            };
            rec["exit_code"] = o.code.into();
            if let Some(e) = &o.err {
                rec["error"] = e.to_string().into();
            }
            sink.finish(&Finished::Json(&rec));
            // logged: a signal held while it was typed takes effect now, not
            // after an `until_done` wait
            crate::io::interrupt::finished();
            let receipt = typed
                .as_ref()
                .map_or(ReceiptKind::NotSent.as_str(), |r| r.receipt.as_str());
            if o.code != 0 {
                let why = o
                    .err
                    .as_ref()
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| format!("receipt {receipt}"));
                let hint = match o.code {
                    21 => " (a dialog is open: a person must answer it, or pass wait_dialog)",
                    22 => " (the agent is busy: pass wait_busy, or call wait_ready first)",
                    26 => " (the composer holds someone's draft: nothing was typed)",
                    20 => " (not ready in time: raise timeout_secs)",
                    _ => "",
                };
                return refuse(&format!("{}: {why}{hint}", loc.id), rec);
            }
            if p.until_done {
                if let Ok(mut s) = status.lock() {
                    *s = format!("{}: waiting for the turn to end", loc.id);
                }
                let agent = typed.as_ref().map_or("", |r| r.agent.as_str());
                let start = typed
                    .as_ref()
                    .map_or(crate::engine::gate::TurnStart::Submitted, |r| {
                        r.turn_start()
                    });
                match wait_turn(
                    &gk,
                    agent,
                    &loc.id,
                    Duration::from_secs(3600),
                    start,
                    &cancel,
                ) {
                    Ok(t) => rec["turn"] = t,
                    Err(e) => rec["turn"] = json!({"done": false, "error": e}),
                }
            }
            let summary = match &typed {
                Some(r) => format!(
                    "{} {} {receipt}: {} bytes, proof {} ({})",
                    loc.id,
                    r.agent,
                    r.bytes_out,
                    r.proof_match().unwrap_or("none"),
                    r.proof_source().unwrap_or("screen"),
                ),
                None => format!("{} {receipt}", loc.id),
            };
            answer(&summary, rec)
        })
        .await
    }

    #[tool(
        description = "Ask an agent pane a question and get its answer: deliver the prompt exactly as send_prompt does, wait for the turn it started to end, and return the agent's reply to this prompt read from the agent's own record (answer: text, tool_calls, stop_reason, tokens, cost, times), beside the receipt. A turn that stops on an approval dialog (exit_code 41, answer.dialog says what it asks to run; nothing is typed into it), ends in an API error (42) or leaves no answer in the record (43) is a tool error. Cancellation stops the wait, never the agent: the prompt stays delivered."
    )]
    async fn ask_agent(
        &self,
        p: Parameters<AskParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        ct: CancellationToken,
    ) -> CallToolResult {
        let p = p.0;
        let body = match sanitised(&p.body) {
            Ok(b) => b,
            Err(r) => return *r,
        };
        let (timeout, done_timeout) = match (
            secs(p.timeout_secs, 15.0),
            secs(p.done_timeout_secs, 1800.0),
        ) {
            (Ok(t), Ok(d)) => (t, d),
            (Err(e), _) | (_, Err(e)) => return refuse(&e, json!({})),
        };
        let status = Arc::new(Mutex::new(format!("{}: gating", p.target)));
        let _progress = Progress::start(peer, &meta, done_timeout, status.clone());
        let cancel = cancel_flag(&ct);
        let gk = self.clone();
        blocking(move || {
            let (loc, _) = match gk.reach(&p.target) {
                Ok(v) => v,
                Err(e) => return refuse(&e, not_sent()),
            };
            let opts = tool_opts(timeout, p.wait_busy, p.wait_dialog);
            // a cancelled request stops the gate before anything is typed, and
            // after the submit only the wait
            let shared = Shared::new(Duration::from_millis(2)).with_cancel(cancel.clone());
            if let Ok(mut s) = status.lock() {
                *s = format!("{}: delivering, then waiting for the turn to end", loc.id);
            }
            let mut asked = crate::engine::ask::ask_one(
                &gk.server,
                &gk.profiles,
                &opts,
                &loc.id,
                &body,
                &shared,
                crate::engine::ask::AskOpts {
                    done_timeout,
                    from_screen: p.from_screen,
                    stop_on_signal: false,
                },
                Some(&cancel),
                &mut crate::engine::sink::Quiet,
            );
            if let Some(r) = asked.rec.as_mut() {
                r.via = Some("mcp".into());
                Quiet.finish(&Finished::Receipt(r));
            }
            let v = asked.to_json();
            let line = asked.receipt_line().replace('\t', " ");
            match asked.code {
                0 => answer(&line, v),
                _ => refuse(&line, v),
            }
        })
        .await
    }

    #[tool(
        description = "Wait until an agent pane is ready for a prompt (through busy), or say why not: the gate alone; nothing is typed. Honours cancellation."
    )]
    async fn wait_ready(
        &self,
        p: Parameters<WaitParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        ct: CancellationToken,
    ) -> CallToolResult {
        let p = p.0;
        self.long_wait(p.target, p.timeout_secs, 60.0, "waiting", (meta, peer, ct), |w| {
            let (gk, loc, first, timeout, cancel, status) =
                (w.gk, w.loc, w.first, w.timeout, w.cancel, w.status);
            let profile = match gk.profiles.get(first.identity.agent.as_deref().unwrap_or("")) {
                Ok(p) => p,
                Err(e) => return refuse(&e.to_string(), json!({})),
            };
            let opts = GateOpts {
                timeout,
                wait_busy: true,
                ..GateOpts::default()
            };
            let mut tmux = Control::new(gk.server.clone(), &loc.id);
            let mut pending = Some(first.screen);
            let mut read = || {
                if cancel.load(Ordering::SeqCst) {
                    return Err(Error::Other("cancelled".into()));
                }
                let s = match pending.take() {
                    Some(s) => s,
                    None => tmux.read(&loc.id)?,
                };
                if let Ok(mut st) = status.lock() {
                    *st = format!("{}: {}", loc.id, crate::core::detect::detect(profile, &s).state);
                }
                Ok(s)
            };
            match crate::engine::gate::wait(profile, &opts, &SystemClock::new(), &mut read) {
                Ok(g) => {
                    let v = json!({"pane": loc.id, "ready": g.ready, "state": g.state.to_string(), "reason": g.reason, "waited_ms": g.waited_ms, "evidence": g.evidence});
                    let line = format!("{} {}: {}", loc.id, g.state, g.reason);
                    if g.ready {
                        answer(&line, v)
                    } else {
                        refuse(&line, v)
                    }
                }
                Err(e) => refuse(&format!("{}: {e}", loc.id), json!({"pane": loc.id})),
            }
        })
        .await
    }

    #[tool(
        description = "Wait until the turn running in an agent pane ends (busy, then ready; a dialog or an exit also ends the wait) and report how long it took. Honours cancellation."
    )]
    async fn wait_done(
        &self,
        p: Parameters<WaitParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        ct: CancellationToken,
    ) -> CallToolResult {
        let p = p.0;
        self.long_wait(
            p.target,
            p.timeout_secs,
            600.0,
            "waiting for the turn",
            (meta, peer, ct),
            |w| {
                let (gk, loc, o, timeout, cancel) = (w.gk, w.loc, w.first, w.timeout, w.cancel);
                let agent = o.identity.agent.clone().unwrap_or_default();
                match wait_turn(
                    &gk,
                    &agent,
                    &loc.id,
                    timeout,
                    crate::engine::gate::TurnStart::Running,
                    &cancel,
                ) {
                    Ok(v) if v["done"] == true => answer(
                        &format!("{} turn done after {} ms", loc.id, v["turn_ms"]),
                        v,
                    ),
                    Ok(v) => refuse(
                        &format!(
                            "{} turn not done: {} ({})",
                            loc.id,
                            v["state"].as_str().unwrap_or(""),
                            v["reason"].as_str().unwrap_or("")
                        ),
                        v,
                    ),
                    Err(e) => refuse(&format!("{}: {e}", loc.id), json!({"pane": loc.id})),
                }
            },
        )
        .await
    }

    #[tool(
        description = "Add a prompt to promptgate's durable queue for an agent pane; a `promptgate queue run` watcher delivers it when the agent is ready."
    )]
    async fn queue_prompt(&self, p: Parameters<QueueParams>) -> CallToolResult {
        let p = p.0;
        let body = match sanitise(p.body.as_bytes()) {
            Ok((b, _)) => b,
            Err(e) => return refuse(&format!("{e}; nothing was queued"), json!({})),
        };
        let gk = self.clone();
        blocking(move || {
            let (loc, o) = match gk.reach(&p.target) {
                Ok(v) => v,
                Err(e) => return refuse(&e, json!({})),
            };
            // which life of the server and of the pane: typed only into this one
            let life = match Process::new(gk.server.clone()).pane_life(&loc.id) {
                Ok(l) => l,
                Err(e) => return refuse(&format!("{e}; nothing was queued"), json!({})),
            };
            let mut item = crate::engine::queue::Item::pending(
                gk.server.spec(),
                loc.id.clone(),
                o.identity.agent.clone(),
                body,
            );
            item.queued_for = Some(life);
            match crate::engine::queue::save(&crate::engine::queue::dir(), &item) {
                Ok(()) => answer(
                    &format!("queued {} for {}", item.id, loc.id),
                    json!({"id": item.id, "pane": loc.id, "via": "mcp"}),
                ),
                Err(e) => refuse(&format!("cannot queue: {e}"), json!({})),
            }
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Gatekeeper {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(rmcp::model::Implementation::new(
                "promptgate",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "promptgate delivers prompts into AI coding agents in tmux panes exactly once. \
                 list_agents first; send_prompt refuses (tool error, nothing typed) when the agent \
                 is not ready and says what to do; ask_agent returns the agent's answer from its own \
                 record; read_screen reads a screen.",
            )
    }
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_match_names() {
        assert!(glob("work*", "work:1.0"));
        assert!(glob("%?", "%3"));
        assert!(!glob("%?", "%13"));
        assert!(glob("*:agents", "main:agents"));
        assert!(!glob("work", "workshop"));
    }
}
