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

use crate::core::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub use crate::engine::sink::Phase;
pub use crate::io::tmux::PaneLife;

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
    /// `queue add --ask`: once delivered, wait for the turn and keep the
    /// agent's answer beside the queue ([`Kept`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ask: bool,
    /// What the agent's record held when this item's typing began (journalled
    /// with the `typing` phase): a crashed watcher's item is checked against
    /// the record before anything is typed or pressed again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_mark: Option<crate::io::record::SavedMark>,
    /// Which life of the server and of the pane it was queued for (`queue
    /// add`): a watcher types it only into that pane, and holds it when the
    /// server restarted or the pane was replaced since (its id now names
    /// another pane). `None` in an item written before it was kept: the pane
    /// id alone, as then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_for: Option<PaneLife>,
    /// An asked item: what the agent's reply files held before its typing
    /// began, and when (journalled with the phases), so that a watcher that
    /// stopped between the submit and keeping the answer leaves the next one
    /// able to wait for that turn and read its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask_from: Option<AskFrom>,
}

/// See [`Item::ask_from`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AskFrom {
    pub marks: crate::io::answer::Marks,
    pub started_ms: u64,
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
            created_ms: crate::io::tmux::now_ms() as u64,
            phase: Phase::Pending,
            attempts: 0,
            last_receipt: None,
            last_reason: None,
            ask: false,
            record_mark: None,
            queued_for: None,
            ask_from: None,
        }
    }
}

/// Where the queue lives, and in words where that came from (for errors).
pub fn dir_and_source() -> (PathBuf, &'static str) {
    if let Some(d) = std::env::var_os("PROMPTGATE_QUEUE_DIR").filter(|d| !d.is_empty()) {
        return (
            PathBuf::from(d),
            "the queue directory (PROMPTGATE_QUEUE_DIR)",
        );
    }
    if let Some(b) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        return (
            PathBuf::from(b).join("promptgate").join("queue"),
            "the queue directory (under XDG_STATE_HOME)",
        );
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty() && Path::new(v).is_absolute()) {
        Some(h) => (
            PathBuf::from(h).join(".local/state/promptgate/queue"),
            "the queue directory (~/.local/state/promptgate/queue)",
        ),
        // no HOME (`env -i`, a service): this user's private directory under
        // the temporary one, never a name another user could have made first
        None => (
            std::env::temp_dir()
                .join(format!("promptgate-{}", unsafe { libc::geteuid() }))
                .join("queue"),
            TMP_QUEUE,
        ),
    }
}

const TMP_QUEUE: &str = "the queue directory (without HOME: $TMPDIR/promptgate-UID/queue)";

/// The queue directory, canonical (two spellings of one directory are one
/// queue), whether or not it exists yet.
pub fn dir() -> PathBuf {
    crate::io::store::canonical_lenient(&dir_and_source().0)
}

/// The queue directory, made if needed, canonical; an error names it and where
/// it came from.
pub fn open_dir() -> Result<PathBuf> {
    let (d, what) = dir_and_source();
    if what == TMP_QUEUE {
        if let Some(parent) = d.parent() {
            crate::io::store::private_dir(parent, what)?;
        }
    }
    crate::io::store::own_dir(&d, what)
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

/// An id is a plain name of letters, digits, `-`, `_`, `.` (it names files).
fn valid_id(id: &str) -> bool {
    crate::io::store::is_plain_name(id)
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn path_of(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.json"))
}

/// One line on stderr, once per process for each path and reason (a watcher
/// scans many times).
fn warn_once(path: &Path, why: &str) {
    static SEEN: std::sync::Mutex<Vec<(PathBuf, String)>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let k = (path.to_path_buf(), why.to_string());
    if !seen.contains(&k) {
        eprintln!("promptgate: queue: skipping {}: {why}", path.display());
        seen.push(k);
    }
}

/// An item and every name it has in the queue directory (a renamed, linked or
/// copied file is the same item: items are identified by the id inside).
#[derive(Debug, Clone)]
pub struct Found {
    pub item: Item,
    pub paths: Vec<PathBuf>,
}

/// Every item once, oldest first. Files that are not regular, links out of the
/// directory and unreadable files are skipped with a one-line warning. When an
/// id has several files, `ID.json` (the one promptgate writes) wins.
pub fn scan(dir: &Path) -> Result<Vec<Found>> {
    let dir = crate::io::store::canonical_lenient(dir);
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(crate::io::store::err(
                "cannot read the queue directory",
                &dir,
                e,
            ))
        }
    };
    let mut found: Vec<Found> = Vec::new();
    let mut names: Vec<_> = rd.flatten().map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        let n = name.to_string_lossy();
        if n.starts_with('.') || !n.ends_with(".json") {
            continue;
        }
        let p = dir.join(&name);
        let bytes = match crate::io::store::read_regular(&p, Some(&dir), 16 << 20) {
            Ok(b) => b,
            Err(crate::io::store::Refusal::Missing) => continue,
            Err(crate::io::store::Refusal::NotRegular(w)) => {
                warn_once(&p, &format!("it is {w}, not a regular file"));
                continue;
            }
            Err(crate::io::store::Refusal::Io(e)) => {
                warn_once(&p, &format!("cannot read it: {e}"));
                continue;
            }
        };
        let item = match serde_json::from_slice::<Item>(&bytes) {
            Ok(i) if valid_id(&i.id) => i,
            Ok(i) => {
                warn_once(&p, &format!("its id {:?} is not a plain name", i.id));
                continue;
            }
            Err(e) => {
                warn_once(&p, &format!("not a queue item ({e})"));
                continue;
            }
        };
        let canonical = *n == format!("{}.json", item.id);
        match found.iter_mut().find(|f| f.item.id == item.id) {
            Some(f) => {
                f.paths.push(p);
                if canonical {
                    f.item = item;
                }
            }
            None => found.push(Found {
                item,
                paths: vec![p],
            }),
        }
    }
    found.sort_by(|a, b| a.item.id.cmp(&b.item.id));
    Ok(found)
}

/// Every item once, oldest first (see [`scan`]).
pub fn load_all(dir: &Path) -> Result<Vec<Item>> {
    Ok(scan(dir)?.into_iter().map(|f| f.item).collect())
}

/// The item with this id as it is on disk now, if it is still queued.
pub fn find(dir: &Path, id: &str) -> Result<Option<Item>> {
    Ok(scan(dir)?
        .into_iter()
        .find(|f| f.item.id == id)
        .map(|f| f.item))
}

/// Write an item atomically and durably as `ID.json` (a temp file, fsync,
/// rename over, fsync the directory); any other name the item had (renamed,
/// linked) goes, so that it is one file again. An error means nothing changed
/// on disk for this item's `ID.json`: the caller must not go on as if journalled.
pub fn save(dir: &Path, item: &Item) -> Result<()> {
    if !valid_id(&item.id) {
        return Err(Error::Other(format!(
            "queue id {:?} is not a plain name",
            item.id
        )));
    }
    let (_, what) = dir_and_source();
    let dir = crate::io::store::dir(dir, what)?;
    let text = serde_json::to_string_pretty(item).map_err(|e| Error::Other(e.to_string()))?;
    let own = path_of(&dir, &item.id);
    crate::io::store::replace_atomic(&own, text.as_bytes(), "the queue item")?;
    // journalled: from here on an error would say otherwise (a `queue add`
    // told "cannot queue" queues it again). The item's other names are
    // removed as far as they can be; the one read is `ID.json` all the same.
    let others = scan(&dir).unwrap_or_default();
    for f in others.into_iter().filter(|f| f.item.id == item.id) {
        for p in f.paths.iter().filter(|p| **p != own) {
            if let Err(e) = crate::io::store::remove(p, "a second name of the queue item") {
                eprintln!("promptgate: queue {}: {e}", item.id);
            }
        }
    }
    Ok(())
}

/// Remove an item for good, under every name it has (after `consumed`, or
/// `queue drop`).
pub fn remove(dir: &Path, id: &str) -> Result<bool> {
    let dir = crate::io::store::canonical_lenient(dir);
    let mut any = false;
    for f in scan(&dir)?.into_iter().filter(|f| f.item.id == id) {
        for p in &f.paths {
            any |= crate::io::store::remove(p, "the queue item")?;
        }
    }
    if valid_id(id) {
        any |= crate::io::store::remove(&path_of(&dir, id), "the queue item")?;
    }
    Ok(any)
}

/// Claim an item for delivery: an exclusive lock named by its id, under
/// `DIR/.claims/`, held until dropped and removed then (the kernel releases it
/// if the holder dies). `Ok(None)`: another process holds it. The caller reads
/// the item again ([`find`]) after the claim, before acting on it.
pub fn claim(dir: &Path, id: &str) -> Result<Option<crate::io::store::FileLock>> {
    if !valid_id(id) {
        return Ok(None);
    }
    let claims = crate::io::store::own_dir(&dir.join(".claims"), "the queue's claims directory")?;
    crate::io::store::FileLock::try_take(&claims.join(format!("{id}.lock")), true)
}

/// The one watcher of `server`'s items in this queue: an exclusive lock in
/// the queue directory itself (`DIR/.claims/watcher-*.lock`), so that every
/// `queue run` of that directory meets it, whatever its environment says
/// (`XDG_RUNTIME_DIR`, `TMPDIR`). `Ok(None)`: another watcher holds it.
pub fn watcher_lock(dir: &Path, server: &str) -> Result<Option<crate::io::store::FileLock>> {
    let claims = crate::io::store::own_dir(&dir.join(".claims"), "the queue's claims directory")?;
    let name = format!("watcher-{}.lock", crate::io::lock::key(server, "run"));
    crate::io::store::FileLock::try_take(&claims.join(name), true)
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

/// The answer to an asked item (`queue add --ask`), kept in
/// `DIR/answers/ID.json` once the item was delivered (the item itself is gone
/// from the queue then): `waiting` while the watcher waits for the turn, then
/// `answered`, or `failed` with why (an approval dialog, an API error, no
/// answer in the record, the turn not ending in time), or `stopped` when the
/// watcher that waited is gone.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Kept {
    pub id: String,
    pub server: String,
    pub pane: String,
    pub body: String,
    pub state: String,
    pub delivered_ms: u64,
    /// The watcher that waits for the turn (while `waiting`).
    pub watcher_pid: u32,
    /// The answer's text (`answered`).
    #[serde(default)]
    pub text: Option<String>,
    /// What `ask` would exit with.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Why there is no answer, in words.
    #[serde(default)]
    pub error: Option<String>,
    /// `ask --json`'s object: the receipt with its turn, and `answer` (while
    /// `waiting`: the receipt).
    #[serde(default)]
    pub result: Option<serde_json::Value>,
    /// While `waiting`: what the wait needs of the delivery, so that a watcher
    /// started after this one stopped waits for the turn again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken: Option<crate::engine::ask::Taken>,
}

impl Kept {
    /// `item`'s answer, delivered now and `waiting` for its turn (`taken`),
    /// by the watcher `watcher_pid` (0: none yet), with the receipt so far.
    pub fn waiting(
        item: &Item,
        watcher_pid: u32,
        receipt: serde_json::Value,
        taken: crate::engine::ask::Taken,
    ) -> Kept {
        Kept {
            id: item.id.clone(),
            server: item.server.clone(),
            pane: item.pane.clone(),
            body: item.body.clone(),
            state: "waiting".into(),
            delivered_ms: crate::io::tmux::now_ms() as u64,
            watcher_pid,
            text: None,
            exit_code: None,
            error: None,
            result: Some(receipt),
            taken: Some(taken),
        }
    }
}

/// Where asked items' answers are kept.
pub fn answers_dir(dir: &Path) -> PathBuf {
    dir.join("answers")
}

/// Write an answer (atomically, a regular file of its own).
pub fn save_answer(dir: &Path, k: &Kept) -> Result<()> {
    if !valid_id(&k.id) {
        return Err(Error::Other(format!(
            "queue id {:?} is not a plain name",
            k.id
        )));
    }
    let d = crate::io::store::own_dir(&answers_dir(dir), "the queue's answers directory")?;
    let text = serde_json::to_string_pretty(k).map_err(|e| Error::Other(e.to_string()))?;
    crate::io::store::replace_atomic(
        &d.join(format!("{}.json", k.id)),
        text.as_bytes(),
        "a queue answer",
    )
}

/// The kept answer of item `id`, if there is one.
pub fn find_answer(dir: &Path, id: &str) -> Option<Kept> {
    load_answers(dir).into_iter().find(|k| k.id == id)
}

/// Every kept answer, oldest first; files that are not regular or not answers
/// are left out.
pub fn load_answers(dir: &Path) -> Vec<Kept> {
    let d = crate::io::store::canonical_lenient(&answers_dir(dir));
    let Ok(rd) = std::fs::read_dir(&d) else {
        return Vec::new();
    };
    let mut names: Vec<_> = rd.flatten().map(|e| e.file_name()).collect();
    names.sort();
    names
        .into_iter()
        .filter(|n| {
            let n = n.to_string_lossy();
            !n.starts_with('.') && n.ends_with(".json")
        })
        .filter_map(|n| {
            let b = crate::io::store::read_regular(&d.join(&n), Some(&d), 64 << 20).ok()?;
            let k = serde_json::from_slice::<Kept>(&b).ok()?;
            // the file promptgate wrote, `ID.json`, is the answer: a copy or a
            // link under another name is not a second one (it would be waited
            // for twice, and `queue answer ID` would name two)
            (valid_id(&k.id) && n.to_string_lossy() == format!("{}.json", k.id)).then_some(k)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_copied_or_linked_under_another_name_is_one_answer() {
        let d = tempfile::tempdir().unwrap();
        let k = Kept {
            id: new_id(),
            server: "default".into(),
            pane: "%1".into(),
            body: "asked".into(),
            state: "waiting".into(),
            delivered_ms: 0,
            watcher_pid: 1,
            text: None,
            exit_code: None,
            error: None,
            result: None,
            taken: None,
        };
        save_answer(d.path(), &k).unwrap();
        let a = answers_dir(d.path());
        let own = a.join(format!("{}.json", k.id));
        std::fs::copy(&own, a.join("copy.json")).unwrap();
        std::os::unix::fs::symlink(&own, a.join("link.json")).unwrap();
        let all = load_answers(d.path());
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!(all[0].id, k.id);
    }

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
            ask: false,
            record_mark: None,
            queued_for: None,
            ask_from: None,
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
