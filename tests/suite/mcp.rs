//! `promptgate mcp` through the official Rust SDK's client (rmcp), on a private
//! tmux server: the tools, a send that lands byte-exact once, and the safety
//! rules (dialogs, the caller's own pane, shells, --allow, --read-only, big
//! bodies, cancellation).
use crate::common;
use common::*;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientRequest, Request};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

type Client = RunningService<RoleClient, ()>;

async fn connect(srv: &TmuxServer, caller: Option<&str>, extra: &[&str]) -> Client {
    connect_env(srv, caller, extra, &[]).await
}

/// [`connect`], the server started with `env` set too.
async fn connect_env(
    srv: &TmuxServer,
    caller: Option<&str>,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Client {
    let log = srv.dir.path().join("deliveries.jsonl");
    let socket = srv.socket.clone();
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let caller = caller.map(str::to_string);
    let cmd = tokio::process::Command::new(bin()).configure(move |c| {
        c.args(["-L", &socket, "mcp"]).args(&extra);
        c.env_remove("TMUX").env_remove("TMUX_PANE");
        c.env("PROMPTGATE_LOG", &log);
        c.envs(env.iter().map(|(k, v)| (k, v)));
        if let Some(p) = &caller {
            c.env("TMUX_PANE", p);
        }
    });
    ().serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .expect("mcp server starts")
}

async fn call(c: &Client, tool: &str, args: Value) -> CallToolResult {
    let p = CallToolRequestParams::new(tool.to_string())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    c.call_tool(p).await.expect("tool call")
}

/// A tool call the client can cancel while it runs.
async fn cancellable(
    c: &Client,
    tool: &str,
    args: Value,
) -> rmcp::service::RequestHandle<RoleClient> {
    let p = CallToolRequestParams::new(tool.to_string())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    c.send_cancellable_request(
        ClientRequest::CallToolRequest(Request::new(p)),
        PeerRequestOptions::no_options(),
    )
    .await
    .unwrap()
}

fn structured(r: &CallToolResult) -> Value {
    r.structured_content.clone().unwrap_or(Value::Null)
}

fn is_error(r: &CallToolResult) -> bool {
    r.is_error == Some(true)
}

fn first_text(r: &CallToolResult) -> String {
    serde_json::to_value(&r.content).unwrap_or_default()[0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_tools_and_agents_and_delivers_byte_exact_once() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, transcript) = srv.fake("claude", &["--busy-ms", "200"]);
    let shell = srv.window(&["sh"]);
    srv.wait_state(&pane, "ready", 10.0);
    let c = connect(&srv, None, &[]).await;
    let tools: Vec<String> = c
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for t in [
        "list_agents",
        "agent_state",
        "read_screen",
        "send_prompt",
        "wait_ready",
        "wait_done",
        "queue_prompt",
    ] {
        assert!(tools.contains(&t.to_string()), "{t} missing from {tools:?}");
    }
    let r = call(&c, "list_agents", json!({})).await;
    let agents = structured(&r)["agents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(agents.len(), 1, "{r:?}");
    assert_eq!(agents[0]["pane"], pane.as_str());
    assert_eq!(agents[0]["agent"], "claude");
    assert_eq!(agents[0]["state"], "ready");
    assert!(agents.iter().all(|a| a["pane"] != shell.as_str()));
    assert!(
        first_text(&r).starts_with("1 agent pane"),
        "{}",
        first_text(&r)
    );

    let body = "line one; $HOME #{pane_id} %s\n\tline two\nend;";
    let r = call(&c, "send_prompt", json!({"target": pane, "body": body})).await;
    assert!(!is_error(&r), "{r:?}");
    let rec = structured(&r);
    assert_eq!(rec["receipt"], "consumed", "{rec}");
    assert_eq!(rec["via"], "mcp");
    assert_eq!(prompts(&transcript), vec![body]);
    let log = std::fs::read_to_string(srv.dir.path().join("deliveries.jsonl")).unwrap();
    assert!(log.lines().any(|l| l.contains("\"via\":\"mcp\"")), "{log}");

    let r = call(&c, "agent_state", json!({"target": pane})).await;
    assert!(!is_error(&r), "{r:?}");
    assert!(structured(&r)["checks"].is_array());
    let r = call(&c, "read_screen", json!({"target": pane, "lines": 200})).await;
    assert!(
        structured(&r)["text"]
            .as_str()
            .unwrap_or("")
            .contains("line one"),
        "{r:?}"
    );
    let _ = c.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_dialogs_shells_the_caller_and_panes_outside_allow() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (dialog, dialog_t) = srv.fake("claude", &["--dialog", "trust"]);
    let (agent, agent_t) = srv.fake("codex", &["--busy-ms", "200"]);
    let shell = srv.window(&["sh"]);
    srv.wait_state(&dialog, "dialog:trust", 10.0);
    srv.wait_state(&agent, "ready", 10.0);
    let before = srv.capture(&dialog);
    // the caller runs in `agent`
    let c = connect(&srv, Some(&agent), &[]).await;
    let r = call(&c, "send_prompt", json!({"target": dialog, "body": "1"})).await;
    assert!(is_error(&r), "{r:?}");
    assert!(first_text(&r).contains("dialog"), "{}", first_text(&r));
    assert!(records(&dialog_t, "dialog-input").is_empty());
    assert_eq!(srv.capture(&dialog), before);
    let r = call(
        &c,
        "send_prompt",
        json!({"target": agent, "body": "to myself"}),
    )
    .await;
    assert!(is_error(&r) && first_text(&r).contains("caller"), "{r:?}");
    let r = call(
        &c,
        "send_prompt",
        json!({"target": shell, "body": "touch pwned"}),
    )
    .await;
    assert!(
        is_error(&r) && first_text(&r).contains("runs no agent"),
        "{r:?}"
    );
    let r = call(&c, "send_prompt", json!({"target": "", "body": "x"})).await;
    assert!(is_error(&r), "{r:?}");
    let big = "x".repeat(10 * 1024 * 1024);
    let r = call(&c, "send_prompt", json!({"target": dialog, "body": big})).await;
    assert!(
        is_error(&r) && first_text(&r).contains("nothing was typed"),
        "{}",
        first_text(&r)
    );
    let r = call(&c, "list_agents", json!({})).await;
    let agents = structured(&r)["agents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        agents.iter().all(|a| a["pane"] != agent.as_str()),
        "{agents:?}"
    );
    let _ = c.cancel().await;
    assert!(prompts(&agent_t).is_empty());

    // --allow narrows the reach; --read-only drops the tools that type
    let c = connect(&srv, None, &["--allow", "nomatch*", "--read-only"]).await;
    let tools: Vec<String> = c
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(!tools.contains(&"send_prompt".to_string()), "{tools:?}");
    assert!(!tools.contains(&"queue_prompt".to_string()), "{tools:?}");
    let r = call(&c, "agent_state", json!({"target": agent})).await;
    assert!(
        is_error(&r) && first_text(&r).contains("outside --allow"),
        "{r:?}"
    );
    let r = call(&c, "list_agents", json!({})).await;
    assert_eq!(structured(&r)["agents"], json!([]));
    let _ = c.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_wait_stops_and_the_server_keeps_answering() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, transcript) = srv.fake("gemini", &["--busy-ms", "60000"]);
    srv.wait_state(&pane, "ready", 10.0);
    srv.submit_by_hand(&pane, "work", 10.0);
    let c = connect(&srv, None, &[]).await;
    let handle = cancellable(
        &c,
        "wait_ready",
        json!({"target": pane, "timeout_secs": 600}),
    )
    .await;
    // meanwhile other calls are answered at once
    let t = Instant::now();
    let r = call(&c, "agent_state", json!({"target": pane})).await;
    assert_eq!(structured(&r)["state"], "busy", "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    tokio::time::sleep(Duration::from_millis(300)).await;
    handle.cancel(Some("enough".into())).await.unwrap();
    // the server is still there and answers
    let r = call(&c, "list_agents", json!({})).await;
    assert!(!is_error(&r), "{r:?}");

    // a send that waits through busy stops when cancelled, with nothing typed
    let args =
        json!({"target": pane, "body": "never typed", "wait_busy": true, "timeout_secs": 600});
    let handle = cancellable(&c, "send_prompt", args).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    handle.cancel(Some("enough".into())).await.unwrap();
    let log = srv.dir.path().join("deliveries.jsonl");
    let t = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(line) = text
            .lines()
            .find(|l| l.contains("cancelled while waiting; nothing typed"))
        {
            // logged as a Ctrl-C before typing would be: 130, nothing typed
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["exit_code"], 130, "{line}");
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "no cancelled send in the log: {text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(prompts(&transcript), vec!["work"]);
    assert!(!srv.capture(&pane).contains("never typed"));
    let _ = c.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_done_reports_the_turn() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, transcript) = srv.fake("codex", &["--busy-ms", "1500"]);
    srv.wait_state(&pane, "ready", 10.0);
    let c = connect(&srv, None, &[]).await;
    let r = call(
        &c,
        "send_prompt",
        json!({"target": pane, "body": "a turn", "until_done": true}),
    )
    .await;
    assert!(!is_error(&r), "{r:?}");
    let turn = &structured(&r)["turn"];
    assert_eq!(turn["done"], true, "{turn}");
    assert!(turn["turn_ms"].as_u64().unwrap_or(0) >= 500, "{turn}");
    assert_eq!(prompts(&transcript), vec!["a turn"]);
    let r = call(&c, "wait_done", json!({"target": pane, "timeout_secs": 10})).await;
    assert!(!is_error(&r), "{r:?}");
    let _ = c.cancel().await;
}

/// `--print-config` for each client: the printed command line, run by a shell
/// with a stub client on PATH (it records its argv and starts the server it
/// was given), starts a server with the same tools and the same allowlist as
/// the flags given; the config-file forms carry the same arguments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_printed_config_starts_a_server_with_the_same_limits() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (inside, _) = srv.fake("claude", &[]);
    let (outside, _) = srv.fake("codex", &[]);
    srv.wait_state(&inside, "ready", 10.0);
    srv.wait_state(&outside, "ready", 10.0);
    let win = srv
        .tmux_out(&["display-message", "-p", "-t", &inside, "#{window_index}"])
        .trim()
        .to_string();
    // a glob the shell would expand, and a quote
    let allow = format!("main:{win}*");
    let stubs = srv.dir.path().join("stubs");
    std::fs::create_dir_all(&stubs).unwrap();
    let log = srv.dir.path().join("deliveries.jsonl");
    for client in ["claude", "codex", "gemini"] {
        let stub = stubs.join(client);
        let argv_file = srv.dir.path().join(format!("{client}.argv"));
        std::fs::write(
            &stub,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nshift 3\n[ \"$1\" != -- ] || shift\nexec \"$@\"\n",
                argv_file.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&stub, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let o = std::process::Command::new(bin())
            .args([
                "mcp",
                "--read-only",
                "--allow",
                &allow,
                "--allow",
                "no'such",
            ])
            .args(["-L", &srv.socket, "--print-config", client])
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        let line = text.lines().next().unwrap().to_string();
        let want = [
            "mcp",
            "-L",
            srv.socket.as_str(),
            "--read-only",
            "--allow",
            allow.as_str(),
            "--allow",
            "no'such",
        ];
        // the config-file form
        let listed: Vec<String> = match client {
            "codex" => {
                let t = text.split("[mcp_servers.promptgate]").nth(1).unwrap();
                let args = t.lines().find(|l| l.starts_with("args = ")).unwrap();
                serde_json::from_str(args.trim_start_matches("args = ")).unwrap()
            }
            "gemini" => {
                let j: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
                serde_json::from_value(j["mcpServers"]["promptgate"]["args"].clone()).unwrap()
            }
            _ => want.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(listed, want, "{client}: {text}");

        let path = format!(
            "{}:{}",
            stubs.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let (l, p, lg) = (line.clone(), path, log.clone());
        let cmd = tokio::process::Command::new("sh").configure(move |c| {
            c.args(["-c", &l]);
            c.env("PATH", &p).env("PROMPTGATE_LOG", &lg);
            c.env_remove("TMUX").env_remove("TMUX_PANE");
        });
        let c =
            ().serve(TokioChildProcess::new(cmd).unwrap())
                .await
                .unwrap_or_else(|e| panic!("{client}: {line}: {e}"));
        let recorded = std::fs::read_to_string(&argv_file).unwrap();
        assert!(
            recorded.lines().any(|a| a == allow) && recorded.lines().any(|a| a == "--read-only"),
            "{client} got {recorded}"
        );
        let tools: Vec<String> = c
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        assert!(tools.contains(&"list_agents".to_string()), "{tools:?}");
        assert!(
            !tools.contains(&"send_prompt".to_string()),
            "{client}: {tools:?}"
        );
        assert!(
            !tools.contains(&"queue_prompt".to_string()),
            "{client}: {tools:?}"
        );
        let r = call(&c, "list_agents", json!({})).await;
        let panes: Vec<String> = structured(&r)["agents"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|a| a["pane"].as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(panes, vec![inside.as_str()], "{client}: {line}");
        let r = call(&c, "agent_state", json!({"target": outside})).await;
        assert!(
            is_error(&r) && first_text(&r).contains("outside --allow"),
            "{client}: {r:?}"
        );
        let _ = c.cancel().await;
    }
}

/// A client that goes away (it closes the server's stdin, as MCP's shutdown
/// does, or dies) while its `send_prompt` waits for a busy agent: the request
/// stops there, as a cancellation would, and nothing is typed for it when the
/// agent is ready again. (A retry by the client's next server would otherwise
/// deliver the prompt twice.)
#[test]
fn a_client_that_goes_away_cancels_its_waiting_send() {
    use std::io::Write;
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, t) = srv.fake("claude", &["--busy-ms", "2500"]);
    srv.wait_state(&pane, "ready", 15.0);
    assert_eq!(code(&srv.pg(&["send", "-t", &pane, "long-turn"])), 0);
    let started = std::time::Instant::now();
    let mut child = srv
        .pg_cmd(&["mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "send_prompt",
                   "arguments": {"target": pane, "body": "deploy to prod", "wait_busy": true}}});
    for line in [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        call.to_string(),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    drop(stdin);
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(t0.elapsed().as_secs() < 15, "the server did not end");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // the agent is ready again well before now
    while started.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    srv.wait_state(&pane, "ready", 10.0);
    assert_eq!(
        prompts(&t),
        vec!["long-turn"],
        "typed for a client that went away"
    );
}

/// `PROMPTGATE_GATE=off` skips the gate's wait, not a cancellation: a send
/// that waited for another sender's lock and was cancelled meanwhile types
/// nothing once the lock is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_forced_send_waiting_for_the_lock_types_nothing() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, transcript) = srv.fake("claude", &[]);
    srv.wait_state(&pane, "ready", 10.0);
    // the pane's lock, held as another sender would hold it
    let socket = srv.tmux_out(&["display", "-p", "#{socket_path}"]);
    let socket = std::fs::canonicalize(socket.trim()).unwrap();
    let lock = promptgate::io::lock::pane_lock_path(socket.to_str().unwrap(), &pane);
    promptgate::io::store::private_dir(lock.parent().unwrap(), "the test's lock directory")
        .unwrap();
    let held = promptgate::io::store::FileLock::try_take(&lock, false)
        .unwrap()
        .expect("the pane's lock is free");
    let c = connect_env(&srv, None, &[], &[("PROMPTGATE_GATE", "off")]).await;
    let args = json!({"target": pane, "body": "never typed"});
    let handle = cancellable(&c, "send_prompt", args).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    handle.cancel(Some("enough".into())).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(held);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        prompts(&transcript).is_empty(),
        "{:?}",
        prompts(&transcript)
    );
    assert!(!srv.capture(&pane).contains("never typed"));
    let _ = c.cancel().await;
}
