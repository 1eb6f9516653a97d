//! `--records`: each submitted prompt is also written where the real agent
//! records it, in its format, under the fake's `$HOME` (so the proof of receipt
//! reads a fake exactly as it reads the real agent):
//! claude `~/.claude/projects/<cwd, non-alphanumerics as ->/<session>.jsonl`,
//! codex `$CODEX_HOME/history.jsonl` (default `~/.codex`) and its session
//! rollout `$CODEX_HOME/sessions/Y/M/D/rollout-*.jsonl` (held open, as codex
//! holds it), gemini
//! `~/.gemini/tmp/<cwd name>/logs.json`, opencode
//! `~/.local/state/opencode/prompt-history.jsonl`.

use super::Like;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;

use crate::hooks::{env_dir, home};

fn append_line(path: &PathBuf, v: &Value) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(format!("{v}\n").as_bytes())
}

/// At start, make the agent's own directory, as the real agents do (the proof
/// waits for a record only where the agent keeps one).
pub fn init(like: Like) -> std::io::Result<()> {
    std::fs::create_dir_all(match like {
        Like::Claude => env_dir("CLAUDE_CONFIG_DIR", home().join(".claude")),
        Like::Codex => env_dir("CODEX_HOME", home().join(".codex")),
        Like::Gemini => home().join(".gemini"),
        Like::Opencode => opencode_state(),
    })
}

fn opencode_state() -> PathBuf {
    env_dir("XDG_STATE_HOME", home().join(".local/state")).join("opencode")
}

/// Claude Code's session registry, `~/.claude/sessions/<pid>.json`: its state
/// (`idle`, `busy`) as the real one keeps it (other agents keep none).
pub fn status(like: Like, state: &str) -> std::io::Result<()> {
    if like != Like::Claude {
        return Ok(());
    }
    let dir = env_dir("CLAUDE_CONFIG_DIR", home().join(".claude")).join("sessions");
    std::fs::create_dir_all(&dir)?;
    let pid = std::process::id();
    let v = json!({
        "pid": pid,
        "sessionId": format!("fake-{pid}"),
        "cwd": std::env::current_dir().unwrap_or_default(),
        "status": state,
        "statusUpdatedAt": super::log::now_ms(),
    });
    let tmp = dir.join(format!(".{pid}.json.tmp"));
    std::fs::write(&tmp, v.to_string())?;
    std::fs::rename(tmp, dir.join(format!("{pid}.json")))
}

/// Run the hooks the agent's settings name for `event` (as the real agent does:
/// each command through `sh -c`, the event's JSON on stdin), if any.
pub fn fire_hooks(like: Like, event: &str, payload: serde_json::Value) {
    let file = match like {
        Like::Claude => env_dir("CLAUDE_CONFIG_DIR", home().join(".claude")).join("settings.json"),
        Like::Codex => env_dir("CODEX_HOME", home().join(".codex")).join("hooks.json"),
        Like::Gemini => home().join(".gemini").join("settings.json"),
        // OpenCode runs no command hooks from a settings file
        Like::Opencode => return,
    };
    let event = match (like, event) {
        (Like::Gemini, "UserPromptSubmit") => "BeforeAgent",
        (Like::Gemini, "Stop") => "AfterAgent",
        (_, e) => e,
    };
    let Ok(raw) = std::fs::read(&file) else {
        return;
    };
    let Ok(v) = serde_json::from_slice::<Value>(&raw) else {
        return;
    };
    let mut input = payload;
    input["hook_event_name"] = event.into();
    for entry in v["hooks"][event].as_array().into_iter().flatten() {
        for h in entry["hooks"].as_array().into_iter().flatten() {
            let Some(cmd) = h["command"].as_str() else {
                continue;
            };
            let child = std::process::Command::new("sh")
                .args(["-c", cmd])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
            if let Ok(mut c) = child {
                if let Some(mut i) = c.stdin.take() {
                    let _ = i.write_all(input.to_string().as_bytes());
                }
                let _ = c.wait();
            }
        }
    }
}

/// Record `text` as the real agent `like` would.
pub fn append(like: Like, text: &str) -> std::io::Result<()> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let session = format!("fake-{}", std::process::id());
    let now = super::log::now_ms();
    match like {
        Like::Claude => {
            let dashed: String = cwd
                .display()
                .to_string()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            let dir = env_dir("CLAUDE_CONFIG_DIR", home().join(".claude"));
            let path = dir
                .join("projects")
                .join(dashed)
                .join(format!("{session}.jsonl"));
            append_line(
                &path,
                &json!({"type": "user", "message": {"role": "user", "content": text}, "sessionId": session}),
            )
        }
        Like::Codex => {
            let dir = env_dir("CODEX_HOME", home().join(".codex"));
            append_line(
                &dir.join("history.jsonl"),
                &json!({"session_id": session, "ts": now / 1000, "text": text}),
            )?;
            // and the session rollout, `sessions/YYYY/MM/DD/rollout-…-<session>.jsonl`
            // (one date directory is as good as another to the reader)
            let rollout = dir
                .join("sessions/2026/12/02")
                .join(format!("rollout-2026-12-02T00-00-00-{session}.jsonl"));
            let line = json!({"timestamp": now, "type": "event_msg", "payload": {
                "type": "item_completed", "thread_id": session,
                "item": {"type": "UserMessage", "content": [{"type": "text", "text": text, "text_elements": []}]}
            }});
            // held open from the first prompt on, as codex holds its rollout
            static ROLLOUT: std::sync::Mutex<Option<std::fs::File>> = std::sync::Mutex::new(None);
            let mut held = ROLLOUT.lock().unwrap_or_else(|e| e.into_inner());
            if held.is_none() {
                if let Some(d) = rollout.parent() {
                    std::fs::create_dir_all(d)?;
                }
                *held = Some(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&rollout)?,
                );
            }
            let f = held.as_mut().expect("opened above");
            f.write_all(format!("{line}\n").as_bytes())
        }
        Like::Gemini => {
            let name = cwd
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let dir = home().join(".gemini").join("tmp").join(name);
            std::fs::create_dir_all(&dir)?;
            let path = dir.join("logs.json");
            let mut all: Vec<Value> = std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default();
            let n = all.len();
            all.push(json!({"sessionId": session, "messageId": n, "type": "user", "message": text, "timestamp": now}));
            let tmp = dir.join(format!(".logs.json.{}", std::process::id()));
            std::fs::write(&tmp, serde_json::to_vec_pretty(&all)?)?;
            std::fs::rename(tmp, path)
        }
        Like::Opencode => append_line(
            &opencode_state().join("prompt-history.jsonl"),
            &json!({"input": text, "parts": [], "mode": "normal"}),
        ),
    }
}
