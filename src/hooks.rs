//! Agent hooks, only when the user asks (`promptgate hooks install AGENT`).
//!
//! The installed hooks run `promptgate hook-event AGENT EVENT`, which appends
//! one JSON line per event to a file of the pane the agent runs in (hook
//! commands inherit `$TMUX` and `$TMUX_PANE`): `UserPromptSubmit` /
//! `BeforeAgent` carry the prompt (proof of receipt), `Stop` / `AfterAgent`
//! end the turn. Entries are tagged by their command (`promptgate hook-event`),
//! the settings file is backed up before a change, a malformed one is left
//! untouched, and an uninstall of an unchanged file restores it byte for byte.

use crate::error::{Error, Result};
use serde_json::{json, Map, Value};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// What marks an entry as promptgate's.
pub const TAG: &str = "promptgate hook-event";

/// One agent's hook settings.
pub struct Spec {
    pub agent: &'static str,
    /// The settings file.
    pub file: PathBuf,
    pub events: &'static [&'static str],
    /// The matcher each entry gets (`""` or `"*"`), if the agent uses one.
    pub matcher: Option<&'static str>,
    /// What the user must know (Codex asks to trust new hooks).
    pub note: &'static str,
}

/// `$HOME` (empty when unset).
pub(crate) fn home() -> PathBuf {
    PathBuf::from(std::env::var("HOME").unwrap_or_default())
}

/// `$VAR` as a directory, or `default` when it is unset or empty.
pub(crate) fn env_dir(var: &str, default: PathBuf) -> PathBuf {
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or(default)
}

pub fn spec(agent: &str, file: Option<&Path>) -> Result<Spec> {
    let (agent, default, events, matcher, note): (&'static str, PathBuf, &'static [&'static str], _, _) =
        match agent {
            "claude" => (
                "claude",
                env_dir("CLAUDE_CONFIG_DIR", home().join(".claude")).join("settings.json"),
                &["UserPromptSubmit", "Stop", "Notification"],
                Some(""),
                "",
            ),
            "codex" => (
                "codex",
                env_dir("CODEX_HOME", home().join(".codex")).join("hooks.json"),
                &["UserPromptSubmit", "Stop"],
                None,
                "Codex skips new or changed hooks silently until you trust them: at its next start answer its \"Hooks need review\" dialog",
            ),
            "gemini" => (
                "gemini",
                home().join(".gemini").join("settings.json"),
                &["BeforeAgent", "AfterAgent"],
                Some("*"),
                "",
            ),
            other => {
                return Err(Error::Usage(format!(
                    "hooks: unknown agent '{other}' (claude, codex or gemini)"
                )))
            }
        };
    Ok(Spec {
        agent,
        file: file.map(Path::to_path_buf).unwrap_or(default),
        events,
        matcher,
        note,
    })
}

fn backup_path(file: &Path) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(".promptgate-backup");
    PathBuf::from(s)
}

/// The sha256 of the file as `install` left it (to know it is unchanged since).
fn stamp_path(file: &Path) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(".promptgate-installed");
    PathBuf::from(s)
}

/// A settings file's bytes (`None`: no file) and its top-level object.
type Settings = (Option<Vec<u8>>, Map<String, Value>);

fn read_settings(file: &Path) -> Result<Settings> {
    let raw = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, Map::new())),
        Err(e) => return Err(Error::Other(format!("{}: {e}", file.display()))),
    };
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok((Some(raw), Map::new()));
    }
    match serde_json::from_slice::<Value>(&raw) {
        Ok(Value::Object(m)) => Ok((Some(raw), m)),
        Ok(_) => Err(Error::Other(format!(
            "{}: not a JSON object; left untouched",
            file.display()
        ))),
        Err(e) => Err(Error::Other(format!(
            "{}: malformed JSON ({e}); left untouched",
            file.display()
        ))),
    }
}

fn ours(entry: &Value) -> bool {
    entry["hooks"].as_array().is_some_and(|hs| {
        hs.iter()
            .any(|h| h["command"].as_str().is_some_and(|c| c.contains(TAG)))
    })
}

/// The events whose promptgate entry is in `settings`.
fn installed(settings: &Map<String, Value>) -> Vec<String> {
    settings
        .get("hooks")
        .and_then(Value::as_object)
        .map(|h| {
            h.iter()
                .filter(|(_, v)| v.as_array().is_some_and(|a| a.iter().any(ours)))
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default()
}

fn write(file: &Path, v: &Value) -> Result<Vec<u8>> {
    let mut text = serde_json::to_vec_pretty(v).map_err(|e| Error::Other(e.to_string()))?;
    text.push(b'\n');
    if let Some(d) = file.parent() {
        std::fs::create_dir_all(d)?;
    }
    let tmp = file.with_extension("promptgate-tmp");
    std::fs::write(&tmp, &text)?;
    std::fs::rename(&tmp, file)?;
    Ok(text)
}

/// Add the tagged entries; returns what to tell the user.
pub fn install(s: &Spec, exe: &str) -> Result<String> {
    let (raw, mut settings) = read_settings(&s.file)?;
    if !installed(&settings).is_empty() {
        return Ok(format!(
            "{}: promptgate's {} hooks are already installed",
            s.file.display(),
            s.agent
        ));
    }
    // the file as it was, for a byte-exact uninstall (an absent file is noted as such)
    match &raw {
        Some(b) => std::fs::write(backup_path(&s.file), b)?,
        None => {
            let _ = std::fs::remove_file(backup_path(&s.file));
        }
    }
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(Error::Other(format!(
            "{}: \"hooks\" is not an object; left untouched",
            s.file.display()
        )));
    };
    for ev in s.events {
        let mut entry = json!({"hooks": [{"type": "command", "command": format!("{exe} hook-event {} {ev}", s.agent)}]});
        if s.agent == "gemini" {
            entry["hooks"][0]["name"] = "promptgate".into();
        }
        if let Some(m) = s.matcher {
            entry["matcher"] = m.into();
        }
        let list = hooks.entry(ev.to_string()).or_insert_with(|| json!([]));
        match list.as_array_mut() {
            Some(a) => a.push(entry),
            None => {
                return Err(Error::Other(format!(
                    "{}: hooks.{ev} is not a list; left untouched",
                    s.file.display()
                )))
            }
        }
    }
    let written = write(&s.file, &Value::Object(settings))?;
    std::fs::write(stamp_path(&s.file), crate::record::sha256_hex(&written))?;
    let mut msg = format!(
        "{}: installed promptgate's {} hooks ({}); backup in {}",
        s.file.display(),
        s.agent,
        s.events.join(", "),
        backup_path(&s.file).display()
    );
    if !s.note.is_empty() {
        msg.push_str(&format!("\nnote: {}", s.note));
    }
    Ok(msg)
}

/// Remove exactly the tagged entries. A file unchanged since `install` gets its
/// bytes from before back (or is removed, if there was none).
pub fn uninstall(s: &Spec) -> Result<String> {
    let (raw, mut settings) = read_settings(&s.file)?;
    if installed(&settings).is_empty() {
        return Ok(format!(
            "{}: no promptgate hooks installed",
            s.file.display()
        ));
    }
    let unchanged = raw.as_ref().is_some_and(|b| {
        std::fs::read_to_string(stamp_path(&s.file))
            .is_ok_and(|h| h.trim() == crate::record::sha256_hex(b))
    });
    let backup = backup_path(&s.file);
    if unchanged {
        match std::fs::read(&backup) {
            Ok(b) => std::fs::write(&s.file, b)?,
            Err(_) => std::fs::remove_file(&s.file)?,
        }
    } else {
        if let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) {
            for v in hooks.values_mut() {
                if let Some(a) = v.as_array_mut() {
                    a.retain(|e| !ours(e));
                }
            }
            hooks.retain(|_, v| v.as_array().is_none_or(|a| !a.is_empty()));
            if hooks.is_empty() {
                settings.remove("hooks");
            }
        }
        write(&s.file, &Value::Object(settings))?;
    }
    let _ = std::fs::remove_file(&backup);
    let _ = std::fs::remove_file(stamp_path(&s.file));
    Ok(format!(
        "{}: removed promptgate's {} hooks{}",
        s.file.display(),
        s.agent,
        if unchanged {
            " (the file is as it was before)"
        } else {
            ""
        }
    ))
}

/// One line: installed or not, and for which events.
pub fn status(s: &Spec) -> Result<String> {
    let (_, settings) = read_settings(&s.file)?;
    let ev = installed(&settings);
    Ok(if ev.is_empty() {
        format!("{}\tnot installed\t{}", s.agent, s.file.display())
    } else {
        format!(
            "{}\tinstalled\t{}\t{}",
            s.agent,
            s.file.display(),
            ev.join(",")
        )
    })
}

/// Where the events of one pane go: `$PROMPTGATE_HOOKS_DIR`, else
/// `${TMUX_TMPDIR:-/tmp}/promptgate-<uid>/hooks`, one file per server and pane
/// (the agent's hooks and the sender agree on it whatever their HOME).
pub fn event_file(socket: &str, pane: &str) -> PathBuf {
    let dir = std::env::var_os("PROMPTGATE_HOOKS_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let tmp = std::env::var_os("TMUX_TMPDIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/tmp"));
            tmp.join(format!("promptgate-{}", unsafe { libc::getuid() }))
                .join("hooks")
        });
    let key = crate::record::sha256_hex(format!("{socket}\n{pane}").as_bytes());
    dir.join(format!("{}.jsonl", &key[..16]))
}

/// `promptgate hook-event AGENT EVENT`: what a hook runs. Reads the event's
/// JSON on stdin and appends one line to its pane's file. Never fails the
/// agent and prints nothing (Claude adds a hook's output to the prompt).
pub fn record_event(agent: &str, event: &str) {
    let (Ok(tmux), Ok(pane)) = (std::env::var("TMUX"), std::env::var("TMUX_PANE")) else {
        return;
    };
    let socket = tmux.split(',').next().unwrap_or("").to_string();
    let mut input = Vec::new();
    let _ = std::io::stdin().take(16 << 20).read_to_end(&mut input);
    let v: Value = serde_json::from_slice(&input).unwrap_or(Value::Null);
    let line = json!({
        "agent": agent,
        "event": event,
        "pane": pane,
        "at_ms": crate::tmux::now_ms() as u64,
        "prompt": v.get("prompt").cloned().unwrap_or(Value::Null),
        "session_id": v.get("session_id").cloned().unwrap_or(Value::Null),
    });
    let path = event_file(&socket, &pane);
    if let Some(d) = path.parent() {
        let _ = std::fs::create_dir_all(d);
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700));
    }
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        use std::io::Write;
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

/// The hook events of a pane from byte `since` on (complete lines).
pub fn events_since(path: &Path, since: u64) -> Vec<Value> {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    if f.seek(SeekFrom::Start(since)).is_err() {
        return Vec::new();
    }
    let mut buf = String::new();
    let _ = f.read_to_string(&mut buf);
    let complete = buf.rfind('\n').map_or("", |i| &buf[..i]);
    complete
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Events that carry the prompt a turn starts with.
pub fn is_prompt_event(e: &Value) -> bool {
    matches!(
        e["event"].as_str(),
        Some("UserPromptSubmit" | "BeforeAgent")
    )
}

/// Events that end a turn.
pub fn is_turn_end_event(e: &Value) -> bool {
    matches!(e["event"].as_str(), Some("Stop" | "AfterAgent"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_then_uninstall_leaves_the_file_byte_identical() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("settings.json");
        let before = b"{\n  \"theme\": \"dark\",\n  \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]},\n  \"zeta\": 1\n}\n";
        std::fs::write(&f, before).unwrap();
        let s = spec("claude", Some(&f)).unwrap();
        install(&s, "/bin/promptgate").unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        assert_eq!(v["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert!(v["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("hook-event claude UserPromptSubmit"));
        // the user's keys keep their order
        let text = String::from_utf8(std::fs::read(&f).unwrap()).unwrap();
        assert!(text.find("theme").unwrap() < text.find("zeta").unwrap());
        assert!(status(&s).unwrap().contains("installed"));
        assert!(install(&s, "/bin/promptgate").unwrap().contains("already"));
        uninstall(&s).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), before);
        assert!(status(&s).unwrap().contains("not installed"));
    }

    #[test]
    fn a_file_changed_since_keeps_the_change_and_loses_only_our_entries() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("settings.json");
        let s = spec("gemini", Some(&f)).unwrap();
        install(&s, "/opt/promptgate").unwrap(); // from no file at all
        let mut v: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        v["ui"] = json!({"theme": "x"});
        std::fs::write(&f, v.to_string()).unwrap();
        uninstall(&s).unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        assert_eq!(v, json!({"ui": {"theme": "x"}}));
        // never installed, no file: uninstall says so and creates nothing
        let g = dir.path().join("none.json");
        let s = spec("claude", Some(&g)).unwrap();
        assert!(uninstall(&s).unwrap().contains("no promptgate hooks"));
        assert!(!g.exists());
    }

    #[test]
    fn a_malformed_file_is_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("settings.json");
        std::fs::write(&f, "{ not json").unwrap();
        let s = spec("claude", Some(&f)).unwrap();
        let e = install(&s, "pg").unwrap_err().to_string();
        assert!(e.contains("malformed") && e.contains("untouched"), "{e}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "{ not json");
        assert!(!backup_path(&f).exists());
    }
}
