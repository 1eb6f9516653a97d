//! `--records`: each submitted prompt is also written where the real agent
//! records it, in its format, under the fake's `$HOME` (so the proof of receipt
//! reads a fake exactly as it reads the real agent):
//! claude `~/.claude/projects/<cwd, non-alphanumerics as ->/<session>.jsonl`
//! (and its input history, `~/.claude/history.jsonl`),
//! codex `$CODEX_HOME/history.jsonl` (default `~/.codex`) and its session
//! rollout `$CODEX_HOME/sessions/Y/M/D/rollout-*.jsonl` (held open, as codex
//! holds it), gemini
//! `~/.gemini/tmp/<project slug>/logs.json`, opencode
//! `~/.local/state/opencode/prompt-history.jsonl` (and, with a reply, its
//! session store `~/.local/share/opencode/opencode.db`).

use super::Like;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;

use crate::io::hooks::{env_dir, home};

/// The project's directory as Gemini CLI's registry gives it: the slug of the
/// directory's name, or `SLUG-N` when that one's `.project_root` names another
/// project; made, with its marker, if new.
fn gemini_project_dir(cwd: &std::path::Path) -> std::io::Result<PathBuf> {
    let name = cwd
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = crate::io::record::slug(&name);
    let tmp = home().join(".gemini").join("tmp");
    for n in 0..100 {
        let slug = if n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let dir = tmp.join(&slug);
        let marker = dir.join(".project_root");
        match std::fs::read_to_string(&marker) {
            Ok(o) if std::path::Path::new(o.trim()) == cwd => return Ok(dir),
            Ok(_) => continue,
            Err(_) => {
                std::fs::create_dir_all(&dir)?;
                std::fs::write(&marker, cwd.display().to_string())?;
                return Ok(dir);
            }
        }
    }
    Err(std::io::Error::other("no free project slug"))
}

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

/// Claude Code's input history, `~/.claude/history.jsonl`, as 2.1.332 writes it
/// (before its transcript): a paste of more than two newlines or 800 bytes is
/// `[Pasted text #N +M lines]` in `display`, its text in `pastedContents`,
/// inline up to 1 KiB, else in `paste-cache/<hash>.txt` named by `contentHash`.
fn claude_history(
    dir: &std::path::Path,
    cwd: &std::path::Path,
    session: &str,
    text: &str,
    now: u64,
) -> std::io::Result<()> {
    let lines = text.matches('\n').count();
    let (display, pasted) = if lines > 2 || text.len() > 800 {
        let part = if text.len() <= 1024 {
            json!({"id": 1, "type": "text", "content": text})
        } else {
            let hash = &crate::core::text::sha256_hex(text.as_bytes())[..16];
            let cache = dir.join("paste-cache");
            std::fs::create_dir_all(&cache)?;
            std::fs::write(cache.join(format!("{hash}.txt")), text)?;
            json!({"id": 1, "type": "text", "contentHash": hash})
        };
        (
            format!("[Pasted text #1 +{lines} lines]"),
            json!({"1": part}),
        )
    } else {
        (text.to_string(), json!({}))
    };
    append_line(
        &dir.join("history.jsonl"),
        &json!({"display": display, "pastedContents": pasted, "timestamp": now,
                "project": cwd, "sessionId": session}),
    )
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
            claude_history(&dir, &cwd, &session, text, now)?;
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
            let dir = gemini_project_dir(&cwd)?;
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

/// A reply as a fake agent records it (`--records`): its text, an optional
/// tool call and how it went, an optional API error, deterministic usage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FakeReply {
    pub text: String,
    /// A tool call made during the turn: its name and its input (`command`).
    pub tool: Option<(String, String)>,
    /// `approved` (it ran, a result follows), `denied`, or `pending` (the turn
    /// stops on the approval dialog: no result, no text).
    pub tool_status: String,
    /// The turn ended in this API error instead of a reply.
    pub error: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_tokens: u64,
}

impl FakeReply {
    /// The deterministic reply to `prompt`: usage from the lengths.
    pub fn to(prompt: &str, text: &str) -> FakeReply {
        FakeReply {
            text: text.to_string(),
            tool: None,
            tool_status: "approved".into(),
            error: None,
            input_tokens: prompt.len() as u64 + 11,
            output_tokens: text.len() as u64,
            cache_tokens: 7,
        }
    }
}

/// The entry a prompt gets in `agent`'s record of replies (for the formats no
/// fake agent draws: tests of the readers).
pub fn prompt_entry(agent: &str, text: &str) -> Value {
    match agent {
        "claude" => json!({"type": "user", "message": {"role": "user", "content": text}}),
        "codex" => json!({"type": "event_msg", "payload": {
            "type": "item_completed",
            "item": {"type": "UserMessage", "content": [{"type": "text", "text": text}]}}}),
        // gemini's chat file wraps the prompt in context of its own
        "gemini" => json!({"id": "u1", "type": "user",
            "content": format!("<session_context>fake</session_context>\n{text}")}),
        "qwen" => json!({"type": "user", "message": {"role": "user", "parts": [{"text": text}]}}),
        "copilot" => json!({"type": "user.message", "data": {"content": text}}),
        _ => Value::Null,
    }
}

/// The entries `agent` records for reply `r` (one JSON value each; aider's
/// markdown is [`aider_reply`]).
pub fn reply_entries(agent: &str, r: &FakeReply) -> Vec<Value> {
    let call_id = "call_fake_1";
    let pending = r.tool_status == "pending";
    let denied = r.tool_status == "denied";
    let (ti, to, tc) = (r.input_tokens, r.output_tokens, r.cache_tokens);
    let mut v = Vec::new();
    match agent {
        "claude" => {
            let usage = json!({"input_tokens": ti, "output_tokens": to,
                "cache_read_input_tokens": tc, "cache_creation_input_tokens": 0});
            if let Some(e) = &r.error {
                v.push(
                    json!({"type": "assistant", "isApiErrorMessage": true, "message": {
                    "id": "msg_err", "role": "assistant", "stop_reason": "stop_sequence",
                    "content": [{"type": "text", "text": e}], "usage": usage}}),
                );
                return v;
            }
            if let Some((name, input)) = &r.tool {
                v.push(json!({"type": "assistant", "message": {"id": "msg_1", "role": "assistant",
                    "stop_reason": "tool_use", "usage": usage,
                    "content": [{"type": "tool_use", "id": call_id, "name": name, "input": {"command": input}}]}}));
                if pending {
                    return v;
                }
                let out = if denied {
                    "The user doesn't want to proceed with this tool use."
                } else {
                    "ok"
                };
                v.push(json!({"type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": call_id, "content": out, "is_error": denied}]}}));
            }
            v.push(
                json!({"type": "assistant", "message": {"id": "msg_2", "role": "assistant",
                "stop_reason": "end_turn", "usage": usage,
                "content": [{"type": "text", "text": r.text}]}}),
            );
        }
        "codex" => {
            if let Some(e) = &r.error {
                v.push(json!({"type": "event_msg", "payload": {"type": "error", "message": e}}));
                return v;
            }
            if let Some((name, input)) = &r.tool {
                v.push(json!({"type": "response_item", "payload": {"type": "function_call",
                    "name": name, "arguments": json!({"cmd": input}).to_string(), "call_id": call_id}}));
                if pending {
                    return v;
                }
                let out = if denied {
                    "exec command rejected by user"
                } else {
                    "ok"
                };
                v.push(
                    json!({"type": "response_item", "payload": {"type": "function_call_output",
                    "call_id": call_id, "output": out}}),
                );
            }
            v.push(
                json!({"type": "response_item", "payload": {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": r.text}]}}),
            );
            v.push(json!({"type": "event_msg", "payload": {"type": "agent_message", "message": r.text}}));
            let last = json!({"input_tokens": ti, "cached_input_tokens": tc, "output_tokens": to,
                "total_tokens": ti + to});
            // codex repeats a token_count for the same request (a rate-limit update)
            for _ in 0..2 {
                v.push(
                    json!({"type": "event_msg", "payload": {"type": "token_count",
                    "info": {"total_token_usage": last, "last_token_usage": last}}}),
                );
            }
            v.push(json!({"type": "event_msg", "payload": {"type": "task_complete", "last_agent_message": r.text}}));
        }
        "gemini" => {
            if let Some(e) = &r.error {
                v.push(json!({"id": "e1", "type": "error", "content": e}));
                return v;
            }
            let status = match r.tool_status.as_str() {
                "denied" => "cancelled",
                "pending" => "awaiting_approval",
                _ => "success",
            };
            let calls: Vec<Value> = r.tool.iter().map(|(name, input)| {
                json!({"id": call_id, "name": name, "args": {"command": input}, "status": status})
            }).collect();
            v.push(json!({"id": "g1", "type": "gemini", "content": if pending { "" } else { r.text.as_str() },
                "toolCalls": calls,
                "tokens": {"input": ti, "output": to, "cached": tc, "total": ti + to + tc}}));
        }
        "qwen" => {
            if let Some((name, input)) = &r.tool {
                v.push(
                    json!({"type": "assistant", "message": {"role": "model", "parts": [
                    {"functionCall": {"id": call_id, "name": name, "args": {"command": input}}}]}}),
                );
                if pending {
                    return v;
                }
                v.push(
                    json!({"type": "tool_result", "toolCallResult": {"callId": call_id,
                    "status": if denied { "cancelled" } else { "success" }}}),
                );
            }
            v.push(
                json!({"type": "assistant", "message": {"role": "model", "parts": [
                    {"text": "thinking about it", "thought": true}, {"text": r.text}]},
                "usageMetadata": {"promptTokenCount": ti, "candidatesTokenCount": to,
                    "cachedContentTokenCount": tc}}),
            );
        }
        "copilot" => {
            if let Some(e) = &r.error {
                v.push(json!({"type": "session.error", "data": {"message": e}}));
                return v;
            }
            let reqs: Vec<Value> = r.tool.iter().map(|(name, input)| {
                json!({"toolCallId": call_id, "name": name, "arguments": {"command": input}})
            }).collect();
            if !reqs.is_empty() {
                v.push(json!({"type": "assistant.message", "data": {"content": "", "toolRequests": reqs}}));
                if pending {
                    return v;
                }
                v.push(json!({"type": "tool.execution_complete", "data": {"toolCallId": call_id, "success": !denied}}));
            }
            v.push(json!({"type": "assistant.message", "data": {"content": r.text, "toolRequests": []}}));
            v.push(
                json!({"type": "assistant.usage", "data": {"inputTokens": ti, "outputTokens": to,
                "cacheReadTokens": tc, "cacheWriteTokens": 0, "cost": 0.25}}),
            );
            v.push(json!({"type": "assistant.turn_end", "data": {}}));
        }
        _ => {}
    }
    v
}

/// Aider's `.aider.chat.history.md` for one prompt and its reply.
pub fn aider_reply(prompt: &str, r: &FakeReply) -> String {
    let mut s = String::new();
    for l in prompt.split('\n') {
        s.push_str(&format!("#### {l}\n"));
    }
    s.push('\n');
    if let Some(e) = &r.error {
        s.push_str(&format!("> litellm.APIConnectionError: {e}\n\n"));
        return s;
    }
    s.push_str(&r.text);
    s.push_str(&format!(
        "\n\n> Tokens: {} sent, {} received. Cost: $0.01 message, $0.02 session.\n\n",
        r.input_tokens, r.output_tokens
    ));
    s
}

/// The fake agent's reply to its last prompt, in `like`'s record of replies
/// (under the fake's `$HOME`, beside its prompt record).
pub fn append_reply(like: Like, prompt: &str, r: &FakeReply) -> std::io::Result<()> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let session = format!("fake-{}", std::process::id());
    match like {
        Like::Claude => {
            let dashed: String = cwd
                .display()
                .to_string()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            let path = env_dir("CLAUDE_CONFIG_DIR", home().join(".claude"))
                .join("projects")
                .join(dashed)
                .join(format!("{session}.jsonl"));
            for v in reply_entries("claude", r) {
                append_line(&path, &v)?;
            }
            Ok(())
        }
        Like::Codex => {
            let rollout = env_dir("CODEX_HOME", home().join(".codex"))
                .join("sessions/2026/12/02")
                .join(format!("rollout-2026-12-02T00-00-00-{session}.jsonl"));
            for v in reply_entries("codex", r) {
                append_line(&rollout, &v)?;
            }
            Ok(())
        }
        Like::Gemini => {
            // the chat file (0.61: a message a line), the prompt wrapped as gemini does
            let path = gemini_project_dir(&cwd)?
                .join("chats")
                .join(format!("session-{session}.jsonl"));
            append_line(&path, &prompt_entry("gemini", prompt))?;
            for v in reply_entries("gemini", r) {
                append_line(&path, &v)?;
            }
            Ok(())
        }
        Like::Opencode => opencode_store(&cwd, &session, prompt, r)
            .map_err(|e| std::io::Error::other(e.to_string())),
    }
}

/// OpenCode's session store, `$XDG_DATA_HOME/opencode/opencode.db` (default
/// `~/.local/share`): SQLite in write-ahead-log mode, a session per directory,
/// a message per prompt and per reply, each with its parts, in the shapes
/// OpenCode 1.18.33 writes (the columns the reader uses).
fn opencode_store(
    cwd: &std::path::Path,
    session: &str,
    prompt: &str,
    r: &FakeReply,
) -> rusqlite::Result<()> {
    let dir = env_dir("XDG_DATA_HOME", home().join(".local/share")).join("opencode");
    let _ = std::fs::create_dir_all(&dir);
    let c = rusqlite::Connection::open(dir.join("opencode.db"))?;
    c.pragma_update(None, "journal_mode", "WAL")?;
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS session (id TEXT PRIMARY KEY, directory TEXT NOT NULL);
         CREATE TABLE IF NOT EXISTS message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
             time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
         CREATE TABLE IF NOT EXISTS part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL,
             session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
             time_updated INTEGER NOT NULL, data TEXT NOT NULL);",
    )?;
    let ses = format!("ses_{session}");
    c.execute(
        "INSERT OR IGNORE INTO session VALUES (?1, ?2)",
        rusqlite::params![ses, cwd.display().to_string()],
    )?;
    let n: i64 = c.query_row("SELECT count(*) FROM message", [], |row| row.get(0))?;
    let now = super::log::now_ms() as i64;
    let message = |i: i64, info: Value, parts: Vec<Value>| -> rusqlite::Result<()> {
        let id = format!("msg_{:08}", n + i);
        c.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![id, ses, now + i, info.to_string()],
        )?;
        for (k, p) in parts.iter().enumerate() {
            c.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                rusqlite::params![
                    format!("prt_{:08}_{k}", n + i),
                    id,
                    ses,
                    now + i,
                    p.to_string()
                ],
            )?;
        }
        Ok(())
    };
    message(
        0,
        json!({"role": "user", "time": {"created": now}}),
        vec![json!({"type": "text", "text": prompt})],
    )?;
    let mut info = json!({"role": "assistant", "cost": 0.01, "finish": "stop",
        "time": {"created": now + 1, "completed": now + 1},
        "tokens": {"total": r.input_tokens + r.output_tokens, "input": r.input_tokens,
                   "output": r.output_tokens, "reasoning": 0,
                   "cache": {"read": r.cache_tokens, "write": 0}}});
    let mut parts = vec![json!({"type": "step-start"})];
    if let Some(e) = &r.error {
        info["finish"] = "error".into();
        info["error"] = json!({"name": "APIError", "data": {"message": e}});
    }
    if let Some((name, input)) = &r.tool {
        let state = match r.tool_status.as_str() {
            "approved" => json!({"status": "completed", "input": {"command": input}, "output": ""}),
            "denied" => json!({"status": "error", "input": {"command": input},
                "error": "The user rejected permission to use this specific tool call."}),
            _ => json!({"status": "running", "input": {"command": input}}),
        };
        parts.push(json!({"type": "tool", "tool": name, "callID": "call_1", "state": state}));
        if r.tool_status != "approved" {
            info["finish"] = "tool-calls".into();
        }
    }
    if r.error.is_none() && (r.tool.is_none() || r.tool_status == "approved") {
        parts.push(json!({"type": "text", "text": r.text}));
    }
    parts.push(json!({"type": "step-finish", "reason": info["finish"].clone()}));
    message(1, info, parts)
}
