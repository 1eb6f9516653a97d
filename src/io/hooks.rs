//! Agent hooks, only when the user asks (`promptgate hooks install AGENT`).
//!
//! The installed hooks run `promptgate hook-event AGENT EVENT`, which appends
//! one JSON line per event to a file of the pane the agent runs in (hook
//! commands inherit `$TMUX` and `$TMUX_PANE`): `UserPromptSubmit` /
//! `BeforeAgent` carry the prompt (proof of receipt), `Stop` / `AfterAgent`
//! end the turn. Entries are tagged by their command (`promptgate hook-event`),
//! the settings file is backed up before a change, a malformed one is left
//! untouched, and an uninstall of an unchanged file restores it byte for byte.

use crate::core::error::{Error, Result};
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

/// `$HOME` for a settings file: set, and an absolute path. An unset `HOME`
/// would put `.claude/settings.json` into the current directory.
fn home_for_settings(agent: &str) -> Result<PathBuf> {
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) if Path::new(&h).is_absolute() => Ok(PathBuf::from(h)),
        Some(h) => Err(Error::Usage(format!(
            "hooks: HOME ({}) is not an absolute path, so {agent}'s settings file is unknown; set HOME or give --settings FILE",
            Path::new(&h).display()
        ))),
        None => Err(Error::Usage(format!(
            "hooks: HOME is not set, so {agent}'s settings file is unknown; set HOME or give --settings FILE"
        ))),
    }
}

/// `$VAR` when set and not empty, else `$HOME/rel` (HOME must be set).
fn env_or_home(var: &str, agent: &str, rel: &str) -> Result<PathBuf> {
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(v) => Ok(PathBuf::from(v)),
        None => Ok(home_for_settings(agent)?.join(rel)),
    }
}

/// The agents whose hooks promptgate installs (each has its row in [`spec`]).
pub const AGENTS: [&str; 3] = ["claude", "codex", "gemini"];

pub fn spec(agent: &str, file: Option<&Path>) -> Result<Spec> {
    type Parts = (
        &'static str,
        &'static [&'static str],
        Option<&'static str>,
        &'static str,
    );
    let (agent, events, matcher, note): Parts = match agent {
        "claude" => ("claude", &["UserPromptSubmit", "Stop", "Notification"], Some(""), ""),
        "codex" => (
            "codex",
            &["UserPromptSubmit", "Stop"],
            None,
            "Codex skips new or changed hooks silently until you trust them: at its next start answer its \"Hooks need review\" dialog",
        ),
        "gemini" => ("gemini", &["BeforeAgent", "AfterAgent"], Some("*"), ""),
        other => {
            return Err(Error::Usage(format!(
                "hooks: unknown agent '{other}' (claude, codex or gemini)"
            )))
        }
    };
    let file = match file {
        Some(f) => f.to_path_buf(),
        None => match agent {
            "claude" => env_or_home("CLAUDE_CONFIG_DIR", agent, ".claude")?.join("settings.json"),
            "codex" => env_or_home("CODEX_HOME", agent, ".codex")?.join("hooks.json"),
            _ => home_for_settings(agent)?
                .join(".gemini")
                .join("settings.json"),
        },
    };
    Ok(Spec {
        agent,
        file,
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
    // through a symlink (a dotfiles setup), never a FIFO or a device
    let raw = match crate::io::store::read_regular(file, None, 64 << 20) {
        Ok(b) => b,
        Err(crate::io::store::Refusal::Missing) => return Ok((None, Map::new())),
        Err(crate::io::store::Refusal::NotRegular(w)) => {
            return Err(Error::Other(format!(
                "{}: it is {w}, not a regular file; left untouched",
                file.display()
            )))
        }
        Err(crate::io::store::Refusal::Io(e)) => {
            return Err(crate::io::store::err(
                "cannot read the settings file",
                file,
                e,
            ))
        }
    };
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok((Some(raw), Map::new()));
    }
    match serde_json::from_slice::<Value>(&raw) {
        Ok(Value::Object(m)) if std::str::from_utf8(&raw).is_ok() => Ok((Some(raw), m)),
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

/// The marker: a hook command promptgate added runs `EXE hook-event AGENT EVENT`,
/// whatever the binary is called (a copy named `pg`, a path with spaces, quoted).
fn our_hook(h: &Value) -> bool {
    h["command"].as_str().is_some_and(is_our_command)
}

/// Exactly the command [`hook_command`] writes: one shell word naming the
/// binary (whatever it is called), then `hook-event AGENT EVENT`, nothing else. A
/// person's own command that runs it among others (`… && notify-send done`)
/// is theirs, never removed.
fn is_our_command(c: &str) -> bool {
    let w: Vec<&str> = c.trim().rsplitn(4, ' ').collect();
    let [ev, agent, verb, exe] = w[..] else {
        return false;
    };
    verb == "hook-event"
        && AGENTS.contains(&agent)
        && !ev.is_empty()
        && ev.bytes().all(|b| b.is_ascii_alphanumeric())
        && one_word(exe).is_some()
}

/// The value of `w` when it is one shell word as `sh_quote` writes it: bare
/// (no blank, quote or shell syntax) or single-quoted (`'\''` inside).
fn one_word(w: &str) -> Option<String> {
    if let Some(inner) = w.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        let v = inner.replace("'\\''", "'");
        // no quote left but the escaped ones
        return (!inner.replace("'\\''", "").contains('\'')).then_some(v);
    }
    let plain = !w.is_empty()
        && !w
            .chars()
            .any(|c| c.is_whitespace() || "'\"\\$`;&|<>(){}*?[]!#~".contains(c));
    plain.then(|| w.to_string())
}

/// The hook command for one event: the binary's path quoted for the shell the
/// agent runs it with (a path with a space would otherwise be split).
fn hook_command(exe: &str, agent: &str, ev: &str) -> String {
    format!("{} hook-event {agent} {ev}", crate::io::tmux::sh_quote(exe))
}

/// A file promptgate keeps beside the settings (its backup, its stamp): `None`
/// when absent; anything but a regular file (a FIFO would block the read) is
/// refused, the settings left untouched.
fn read_beside(s: &Spec, path: &Path, what: &str) -> Result<Option<Vec<u8>>> {
    use crate::io::store::Refusal;
    match crate::io::store::read_regular(path, None, 64 << 20) {
        Ok(b) => Ok(Some(b)),
        Err(Refusal::Missing) => Ok(None),
        Err(Refusal::NotRegular(why)) => Err(bad(
            s,
            &format!("{what} {} is {why}, not a regular file", path.display()),
        )),
        Err(Refusal::Io(e)) => Err(bad(
            s,
            &format!("cannot read {what} {} ({e})", path.display()),
        )),
    }
}

/// What the stamp says: the hash of the file as installed, and whether there was
/// no file before install (a line `absent`; stamps written before it carry the
/// hash alone, and then a missing backup says nothing).
fn read_stamp(s: &Spec) -> Result<Option<(String, bool)>> {
    Ok(read_beside(s, &stamp_path(&s.file), "its stamp")?.map(|b| {
        let t = String::from_utf8_lossy(&b);
        let mut lines = t.lines().map(str::trim);
        let hash = lines.next().unwrap_or_default().to_string();
        (hash, lines.any(|l| l == "absent"))
    }))
}

fn ours(entry: &Value) -> bool {
    entry["hooks"]
        .as_array()
        .is_some_and(|hs| hs.iter().any(our_hook))
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

/// Write the settings file: through a symlink to its target, its mode and
/// owner kept, atomically and durably.
fn write(file: &Path, text: &[u8]) -> Result<()> {
    let target = crate::io::store::write_target(file);
    if let Some(d) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::io::store::dir(d, "the settings directory")?;
    }
    crate::io::store::write_atomic(file, text, "the settings file")
}

fn bad(s: &Spec, what: &str) -> Error {
    Error::Other(format!("{}: {what}; left untouched", s.file.display()))
}

fn span_err(s: &Spec, e: String) -> Error {
    bad(s, &format!("cannot edit it in place ({e})"))
}

/// The settings text with promptgate's entries appended, every other byte as it was.
fn with_entries(s: &Spec, text: &str, exe: &str) -> Result<String> {
    let mut text = text.to_string();
    for ev in s.events {
        let mut entry =
            json!({"hooks": [{"type": "command", "command": hook_command(exe, s.agent, ev)}]});
        if s.agent == "gemini" {
            entry["hooks"][0]["name"] = "promptgate".into();
        }
        if let Some(m) = s.matcher {
            entry["matcher"] = m.into();
        }
        let root = crate::io::jsonedit::parse(&text).map_err(|e| span_err(s, e))?;
        let key = |k: &str| Value::from(k).to_string();
        text = match root.get("hooks") {
            None => crate::io::jsonedit::append(
                &text,
                &root,
                &format!("{}: {}", key("hooks"), json!({ *ev: [entry] })),
            ),
            Some(h) => match (&h.kind, h.get(ev)) {
                (crate::io::jsonedit::Kind::Object(_), None) => crate::io::jsonedit::append(
                    &text,
                    h,
                    &format!("{}: {}", key(ev), json!([entry])),
                ),
                (crate::io::jsonedit::Kind::Object(_), Some(l)) => match l.kind {
                    crate::io::jsonedit::Kind::Array(_) => {
                        crate::io::jsonedit::append(&text, l, &entry.to_string())
                    }
                    _ => return Err(bad(s, &format!("hooks.{ev} is not a list"))),
                },
                _ => return Err(bad(s, "\"hooks\" is not an object")),
            },
        };
    }
    Ok(text)
}

/// Add the tagged entries; returns what to tell the user. Only promptgate's
/// entries are added: every other byte of the file stays as it was.
pub fn install(s: &Spec, exe: &str) -> Result<String> {
    let (raw, mut settings) = read_settings(&s.file)?;
    if !installed(&settings).is_empty() {
        return Ok(format!(
            "{}: promptgate's {} hooks are already installed",
            s.file.display(),
            s.agent
        ));
    }
    let text = match raw
        .as_deref()
        .filter(|b| !b.iter().all(u8::is_ascii_whitespace))
    {
        Some(b) => with_entries(s, std::str::from_utf8(b).unwrap_or_default(), exe)?,
        None => {
            // no file (or only spaces): a new one
            let mut v = Value::Object(std::mem::take(&mut settings));
            let t = serde_json::to_string_pretty(&v).map_err(|e| Error::Other(e.to_string()))?;
            let t = with_entries(s, &t, exe)?;
            v = serde_json::from_str(&t).map_err(|e| Error::Other(e.to_string()))?;
            let mut t =
                serde_json::to_string_pretty(&v).map_err(|e| Error::Other(e.to_string()))?;
            t.push('\n');
            t
        }
    };
    serde_json::from_str::<Value>(&text)
        .map_err(|e| bad(s, &format!("the edit would not be JSON ({e})")))?;
    // the file as it was, for a byte-exact uninstall (an absent file is noted as
    // such), as private as the file
    let backup = backup_path(&s.file);
    match &raw {
        Some(b) => crate::io::store::write_atomic_like(&backup, b, "the settings backup", &s.file)?,
        None => {
            crate::io::store::remove(&backup, "the old settings backup")?;
        }
    }
    write(&s.file, text.as_bytes())?;
    let mut stamp = crate::core::text::sha256_hex(text.as_bytes());
    if raw.is_none() {
        // only this line lets uninstall remove the file again
        stamp.push_str("\nabsent");
    }
    stamp.push('\n');
    crate::io::store::write_atomic_like(
        &stamp_path(&s.file),
        stamp.as_bytes(),
        "the settings stamp",
        &s.file,
    )?;
    let mut msg = format!(
        "{}: installed promptgate's {} hooks ({}); backup in {}",
        s.file.display(),
        s.agent,
        s.events.join(", "),
        backup.display()
    );
    if !s.note.is_empty() {
        msg.push_str(&format!("\nnote: {}", s.note));
    }
    Ok(msg)
}

/// The settings text without promptgate's entries: each hook command marked as
/// promptgate's goes, a group goes when promptgate made it (nothing else in
/// it), an event list or `hooks` goes when it is left empty and was not there
/// before `install` (the backup says). Every other byte stays.
fn without_entries(s: &Spec, text: &str, backup: Option<&[u8]>) -> Result<String> {
    use crate::io::jsonedit::{parse, remove, Kind};
    // what the file had before install (None: unknown), from its backup's bytes
    let before: Option<Map<String, Value>> =
        backup.map(|b| serde_json::from_slice::<Map<String, Value>>(b).unwrap_or_default());
    let had = |ev: Option<&str>| -> bool {
        before.as_ref().is_some_and(|m| match ev {
            None => m.contains_key("hooks"),
            Some(e) => m.get("hooks").and_then(|h| h.get(e)).is_some(),
        })
    };
    let mut text = text.to_string();
    let mut touched: Vec<String> = Vec::new();
    'again: loop {
        let root = parse(&text).map_err(|e| span_err(s, e))?;
        let Some(Kind::Object(evs)) = root.get("hooks").map(|h| &h.kind) else {
            break;
        };
        for (ev, _, list) in evs {
            for (gi, group) in list.items().iter().enumerate() {
                let Some(hs) = group.get("hooks") else {
                    continue;
                };
                let vals: Vec<Value> = hs
                    .items()
                    .iter()
                    .map(|h| serde_json::from_str(&text[h.start..h.end]).unwrap_or(Value::Null))
                    .collect();
                let Some(j) = vals.iter().position(our_hook) else {
                    continue;
                };
                let only_ours = vals.iter().all(our_hook)
                    && matches!(&group.kind, Kind::Object(m) if m.iter().all(|(k, _, _)| k == "hooks" || k == "matcher"));
                text = if only_ours {
                    remove(&text, list, gi)
                } else {
                    remove(&text, hs, j)
                };
                if !touched.contains(ev) {
                    touched.push(ev.clone());
                }
                continue 'again;
            }
        }
        break;
    }
    for ev in &touched {
        let root = parse(&text).map_err(|e| span_err(s, e))?;
        let Some(h) = root.get("hooks") else { break };
        let Kind::Object(evs) = &h.kind else { break };
        if let Some(i) = evs.iter().position(|(k, _, l)| {
            k == ev && l.items().is_empty() && matches!(l.kind, Kind::Array(_))
        }) {
            if !had(Some(ev)) {
                text = remove(&text, h, i);
            }
        }
    }
    if !touched.is_empty() && !had(None) {
        let root = parse(&text).map_err(|e| span_err(s, e))?;
        if let (Kind::Object(m), Some(h)) = (&root.kind, root.get("hooks")) {
            if matches!(&h.kind, Kind::Object(e) if e.is_empty()) {
                if let Some(i) = m.iter().position(|(k, _, _)| k == "hooks") {
                    text = remove(&text, &root, i);
                }
            }
        }
    }
    Ok(text)
}

/// Remove exactly the tagged entries. A file unchanged since `install` gets its
/// bytes from before back (or is removed, if there was none); a changed one
/// loses only what promptgate added.
pub fn uninstall(s: &Spec) -> Result<String> {
    let (raw, settings) = read_settings(&s.file)?;
    if installed(&settings).is_empty() {
        return Ok(format!(
            "{}: no promptgate hooks installed",
            s.file.display()
        ));
    }
    let raw = raw.unwrap_or_default();
    let stamp = read_stamp(s)?;
    let backup = backup_path(&s.file);
    let before = read_beside(s, &backup, "its backup")?;
    let same = stamp
        .as_ref()
        .is_some_and(|(h, _)| *h == crate::core::text::sha256_hex(&raw));
    // the file as it was before goes back only when the stamp knows what that was:
    // the backup's bytes, or (its `absent` line) no file at all; a missing backup
    // otherwise leaves the user's file, edited in place
    let absent = stamp.as_ref().is_some_and(|(_, a)| *a);
    let unchanged = same && (before.is_some() || absent);
    if unchanged {
        match before {
            Some(b) => write(&s.file, &b)?,
            None => {
                crate::io::store::remove(
                    &crate::io::store::write_target(&s.file),
                    "the settings file",
                )?;
            }
        }
    } else {
        let text = without_entries(
            s,
            std::str::from_utf8(&raw).unwrap_or_default(),
            before.as_deref(),
        )?;
        write(&s.file, text.as_bytes())?;
    }
    crate::io::store::remove(&backup, "the settings backup")?;
    crate::io::store::remove(&stamp_path(&s.file), "the settings stamp")?;
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
    let key = crate::core::text::sha256_hex(format!("{socket}\n{pane}").as_bytes());
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
        "at_ms": crate::io::tmux::now_ms() as u64,
        "prompt": v.get("prompt").cloned().unwrap_or(Value::Null),
        "session_id": v.get("session_id").cloned().unwrap_or(Value::Null),
    });
    let path = event_file(&socket, &pane);
    if let Some(d) = path.parent() {
        // the default's parent, `promptgate-UID` under a shared /tmp, is ours
        // too: another user who made it first could swap `hooks` for a link
        if std::env::var_os("PROMPTGATE_HOOKS_DIR").is_none_or(|v| v.is_empty()) {
            if let Some(pd) = d.parent() {
                if crate::io::store::private_dir(pd, "the hook events directory").is_err() {
                    return;
                }
            }
        }
        if crate::io::store::private_dir(d, "the hook events directory").is_err() {
            return;
        }
    }
    let _ = crate::io::store::append_line(
        &path,
        format!("{line}\n").as_bytes(),
        "the hook events file",
    );
}

/// The hook events of a pane from byte `since` on (complete lines).
pub fn events_since(path: &Path, since: u64) -> Vec<Value> {
    events_from(path, since).0
}

/// [`events_since`], and the byte offset after the last complete line read (the
/// next call's `since`; `since` itself when nothing complete was there).
pub fn events_from(path: &Path, since: u64) -> (Vec<Value>, u64) {
    // a regular file only: a FIFO there never blocks the proof
    let Ok(mut f) = crate::io::store::open_regular(path) else {
        return (Vec::new(), since);
    };
    if f.seek(SeekFrom::Start(since)).is_err() {
        return (Vec::new(), since);
    }
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
        return (Vec::new(), since);
    };
    let complete = String::from_utf8_lossy(&buf[..end]);
    let events = complete
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (events, since + end as u64 + 1)
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
    fn only_the_command_promptgate_writes_is_ours() {
        for ours in [
            hook_command("/usr/local/bin/promptgate", "claude", "Stop"),
            hook_command("/home/me/my tools/promptgate", "codex", "Stop"),
            hook_command("/home/o'neil/promptgate", "gemini", "AfterAgent"),
            "promptgate hook-event claude UserPromptSubmit".to_string(),
        ] {
            assert!(is_our_command(&ours), "{ours}");
        }
        for theirs in [
            "promptgate hook-event claude Stop && notify-send done",
            "notify-send done; promptgate hook-event claude Stop",
            "echo promptgate hook-event claude Stop",
            "'/x/promptgate' hook-event nobody Stop",
            "$(id)/promptgate hook-event claude Stop",
        ] {
            assert!(!is_our_command(theirs), "{theirs}");
        }
    }

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

    #[test]
    fn uninstall_removes_only_what_promptgate_added_even_from_an_edited_group() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("settings.json");
        let before = "{\n  \"model\":\"opus\",\n  \"hooks\": {\n    \"Stop\": [ {\"hooks\": [{\"type\": \"command\", \"command\": \"say \\u0064one\"}]} ]\n  }\n}\n";
        std::fs::write(&f, before).unwrap();
        let s = spec("claude", Some(&f)).unwrap();
        install(&s, "/bin/promptgate").unwrap();
        let installed = std::fs::read_to_string(&f).unwrap();
        // install added bytes only: the user's text is all still there, in order
        assert!(installed.starts_with("{\n  \"model\":\"opus\",\n  \"hooks\": {\n    \"Stop\": [ {\"hooks\": [{\"type\": \"command\", \"command\": \"say \\u0064one\"}]}, "), "{installed}");
        // the user adds their own command to the group promptgate made for UserPromptSubmit
        let mine = "{\"type\": \"command\", \"command\": \"/usr/local/bin/audit\"}";
        let root = crate::io::jsonedit::parse(&installed).unwrap();
        let group = &root
            .get("hooks")
            .unwrap()
            .get("UserPromptSubmit")
            .unwrap()
            .items()[0];
        let edited = crate::io::jsonedit::append(&installed, group.get("hooks").unwrap(), mine);
        std::fs::write(&f, &edited).unwrap();
        uninstall(&s).unwrap();
        let after = std::fs::read_to_string(&f).unwrap();
        let v: Value = serde_json::from_str(&after).unwrap();
        assert_eq!(
            v["hooks"]["UserPromptSubmit"][0]["hooks"],
            json!([{"type": "command", "command": "/usr/local/bin/audit"}]),
            "{after}"
        );
        assert!(!after.contains(TAG), "{after}");
        // everything else byte-identical: the user's Stop entry, spacing and escape
        assert!(after.starts_with("{\n  \"model\":\"opus\",\n  \"hooks\": {\n    \"Stop\": [ {\"hooks\": [{\"type\": \"command\", \"command\": \"say \\u0064one\"}]} ],"), "{after}");
        assert!(after.contains(mine), "{after}");
        assert!(v["hooks"].get("Notification").is_none(), "{after}");
    }

    #[test]
    fn a_symlinked_private_settings_file_stays_a_symlink_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles-settings.json");
        std::fs::write(&real, "{\"apiKey\": \"secret\"}\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let f = dir.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &f).unwrap();
        let s = spec("claude", Some(&f)).unwrap();
        install(&s, "/bin/promptgate").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert!(std::fs::symlink_metadata(&f)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(std::fs::read_to_string(&real).unwrap().contains(TAG));
        assert_eq!(mode(&real), 0o600);
        assert_eq!(
            mode(&backup_path(&f)),
            0o600,
            "the backup holds the key too"
        );
        uninstall(&s).unwrap();
        assert!(std::fs::symlink_metadata(&f)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_to_string(&real).unwrap(),
            "{\"apiKey\": \"secret\"}\n"
        );
        assert_eq!(mode(&real), 0o600);
    }
}
