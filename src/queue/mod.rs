//! The durable queue: one JSON file per prompt under
//! `$XDG_STATE_HOME/promptgate/queue/` (or `$PROMPTGATE_QUEUE_DIR`), written
//! atomically (write, fsync, rename, fsync the directory).
//!
//! An item moves `pending` -> `typing` (before the first byte) -> `submitting`
//! (before the submit key) -> removed (after the receipt `consumed`). A watcher
//! killed at any point finds the phase on disk and the pane on screen, and
//! resumes without losing or repeating the prompt. An item whose delivery went
//! wrong after the submit key (`stranded`, `refused`, `unknown`) is `held`: it
//! stays, with its last receipt, and is never typed again by itself.

pub mod run;

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where an item's delivery stands (journalled before each step).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Not tried yet, or nothing typed.
    Pending,
    /// Typing has begun (before the first byte).
    Typing,
    /// The body is typed; the submit key goes next.
    Submitting,
    /// Kept for a person (something went wrong after the submit key).
    Held,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "pending",
            Phase::Typing => "typing",
            Phase::Submitting => "submitting",
            Phase::Held => "held",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Item {
    pub id: String,
    /// The server the pane lives on: `-L NAME`, `-S PATH` or `default`.
    pub server: String,
    /// The pane id (`%3`), resolved when the prompt was queued.
    pub pane: String,
    /// `--agent` given at `queue add`, if any.
    #[serde(default)]
    pub agent: Option<String>,
    /// The sanitised body: exactly what will be typed.
    pub body: String,
    pub created_ms: u64,
    pub phase: Phase,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub last_receipt: Option<String>,
    #[serde(default)]
    pub last_reason: Option<String>,
}

impl Item {
    /// A new prompt, queued now, not yet tried.
    pub fn pending(server: String, pane: String, agent: Option<String>, body: String) -> Item {
        Item {
            id: new_id(),
            server,
            pane,
            agent,
            body,
            created_ms: crate::tmux::now_ms() as u64,
            phase: Phase::Pending,
            attempts: 0,
            last_receipt: None,
            last_reason: None,
        }
    }
}

pub fn dir() -> PathBuf {
    if let Some(d) = std::env::var_os("PROMPTGATE_QUEUE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("promptgate").join("queue")
}

/// A new id that sorts in creation order.
pub fn new_id() -> String {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{ns:020}-{:05}-{seq:03}", std::process::id() % 100_000)
}

fn path_of(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.json"))
}

fn fsync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Write an item atomically: a temp file, fsync, rename over, fsync the directory.
pub fn save(dir: &Path, item: &Item) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.tmp-{}", item.id, std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(
            serde_json::to_string_pretty(item)
                .map_err(|e| Error::Other(e.to_string()))?
                .as_bytes(),
        )?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path_of(dir, &item.id))?;
    fsync_dir(dir);
    Ok(())
}

/// Remove an item for good (after `consumed`, or `queue drop`).
pub fn remove(dir: &Path, id: &str) -> Result<bool> {
    match std::fs::remove_file(path_of(dir, id)) {
        Ok(()) => {
            fsync_dir(dir);
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The id of the one queued prompt whose id starts with `prefix` (an exact id
/// always wins). None, or several: a usage error that says which.
pub fn resolve_id(dir: &Path, prefix: &str) -> Result<String> {
    if prefix.is_empty() {
        return Err(Error::Usage("an empty queue id matches nothing".into()));
    }
    let ids: Vec<String> = load_all(dir)?
        .into_iter()
        .map(|i| i.id)
        .filter(|id| id.starts_with(prefix))
        .collect();
    if ids.iter().any(|id| id == prefix) {
        return Ok(prefix.to_string());
    }
    match ids.as_slice() {
        [] => Err(Error::Usage(format!(
            "no queued prompt {prefix} (queue list shows the ids)"
        ))),
        [one] => Ok(one.clone()),
        many => {
            let shown: Vec<&str> = many.iter().take(3).map(String::as_str).collect();
            Err(Error::Usage(format!(
                "queue id {prefix} is ambiguous: {} ids start with it ({}{}); give more of it",
                many.len(),
                shown.join(", "),
                if many.len() > 3 { ", …" } else { "" }
            )))
        }
    }
}

/// Every item, oldest first. Unreadable files are skipped (and named on stderr).
pub fn load_all(dir: &Path) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(items),
        Err(e) => return Err(e.into()),
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        match std::fs::read(&p)
            .ok()
            .and_then(|b| serde_json::from_slice::<Item>(&b).ok())
        {
            Some(i) => items.push(i),
            None => eprintln!("promptgate: skipping unreadable queue file {}", p.display()),
        }
    }
    items.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(items)
}

/// How many prompts wait in the queue for each pane of `server` (a `Server::spec`).
pub fn counts(dir: &Path, server: &str) -> std::collections::HashMap<String, usize> {
    let mut m = std::collections::HashMap::new();
    for i in load_all(dir).unwrap_or_default() {
        if i.server == server {
            *m.entry(i.pane).or_insert(0) += 1;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_load_remove_in_order() {
        let d = tempfile::tempdir().unwrap();
        let mk = |body: &str| Item {
            id: new_id(),
            server: "default".into(),
            pane: "%1".into(),
            agent: None,
            body: body.into(),
            created_ms: 0,
            phase: Phase::Pending,
            attempts: 0,
            last_receipt: None,
            last_reason: None,
        };
        let (a, b) = (mk("first"), mk("second"));
        save(d.path(), &b).unwrap();
        save(d.path(), &a).unwrap();
        let all = load_all(d.path()).unwrap();
        assert_eq!(
            all.iter().map(|i| i.body.as_str()).collect::<Vec<_>>(),
            vec!["first", "second"]
        );
        // an id is found by any unique prefix; an ambiguous one says so
        assert_eq!(resolve_id(d.path(), &b.id).unwrap(), b.id);
        let common =
            a.id.chars()
                .zip(b.id.chars())
                .take_while(|(x, y)| x == y)
                .count();
        let prefix = &b.id[..common + 1];
        assert_eq!(resolve_id(d.path(), prefix).unwrap(), b.id);
        let e = resolve_id(d.path(), &b.id[..common]).unwrap_err();
        assert!(e.to_string().contains("ambiguous"), "{e}");
        assert!(resolve_id(d.path(), "x").is_err());
        assert!(resolve_id(d.path(), "").is_err());
        assert!(remove(d.path(), &a.id).unwrap());
        assert!(!remove(d.path(), &a.id).unwrap());
        assert_eq!(load_all(d.path()).unwrap().len(), 1);
    }
}
