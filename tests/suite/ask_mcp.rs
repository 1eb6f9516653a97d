//! The MCP server's `ask_agent` tool (rmcp's client, a private tmux server):
//! the same answer as `promptgate ask`; a cancellation stops the wait, never
//! the agent.
use crate::common;
use common::*;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientRequest, Request};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

type Client = RunningService<RoleClient, ()>;

async fn connect(srv: &TmuxServer) -> Client {
    let log = srv.dir.path().join("deliveries.jsonl");
    let socket = srv.socket.clone();
    let cmd = tokio::process::Command::new(bin()).configure(move |c| {
        c.args(["-L", &socket, "mcp"]);
        c.env_remove("TMUX").env_remove("TMUX_PANE");
        c.env("PROMPTGATE_LOG", &log);
    });
    ().serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .expect("mcp server starts")
}

fn params(args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new("ask_agent".to_string())
        .with_arguments(args.as_object().cloned().unwrap_or_default())
}

fn structured(r: &CallToolResult) -> Value {
    r.structured_content.clone().unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_agent_returns_the_answer_from_the_record() {
    let srv = TmuxServer::new(120, 40, &[]);
    let home = srv.dir.path().join("home-mcp");
    let (pane, _) = srv.fake_in(
        &home,
        "codex",
        &[
            "--records",
            "--busy-ms",
            "300",
            "--reply",
            "from codex\\n\tsecond line",
            "--fail-turns",
            "0",
        ],
    );
    srv.wait_state(&pane, "ready", 10.0);
    let c = connect(&srv).await;
    let r = c
        .call_tool(params(json!({"target": pane, "body": "what say you?"})))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let v = structured(&r);
    assert_eq!(v["receipt"], "consumed", "{v}");
    assert_eq!(v["via"], "mcp", "{v}");
    assert_eq!(v["answer"]["text"], "from codex\n\tsecond line", "{v}");
    assert_eq!(
        v["answer"]["tokens"]["output"],
        "from codex\n\tsecond line".len(),
        "{v}"
    );
    let _ = c.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_turn_is_a_tool_error_with_its_code() {
    let srv = TmuxServer::new(120, 40, &[]);
    let home = srv.dir.path().join("home-mcp-err");
    let (pane, _) = srv.fake_in(
        &home,
        "claude",
        &["--records", "--busy-ms", "300", "--fail-turns", "1"],
    );
    srv.wait_state(&pane, "ready", 10.0);
    let c = connect(&srv).await;
    let r = c
        .call_tool(params(json!({"target": pane, "body": "hello?"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let v = structured(&r);
    assert_eq!(v["exit_code"], 42, "{v}");
    assert!(
        v["answer"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("API Error"),
        "{v}"
    );
    let _ = c.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_stops_the_wait_never_the_agent() {
    let srv = TmuxServer::new(120, 40, &[]);
    let home = srv.dir.path().join("home-mcp-cancel");
    let (pane, transcript) = srv.fake_in(&home, "claude", &["--records", "--busy-ms", "600000"]);
    srv.wait_state(&pane, "ready", 10.0);
    let c = connect(&srv).await;
    let handle = c
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(params(
                json!({"target": pane, "body": "a long turn"}),
            ))),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    srv.wait_state(&pane, "busy", 10.0);
    handle.cancel(Some("enough".into())).await.unwrap();
    let log = srv.dir.path().join("deliveries.jsonl");
    let t = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("stopped waiting: the prompt was delivered") {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "no stopped ask in the log: {text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(prompts(&transcript), vec!["a long turn"]);
    assert_eq!(srv.state(&pane), "busy", "the agent was not stopped");
    let _ = c.cancel().await;
}
