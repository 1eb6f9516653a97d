//! A reply store that is a SQLite database (OpenCode's and Kilo's session
//! store), read as the entries of a `json` record: the profile's query gives
//! one JSON object a row, in order.
//!
//! The agent's own files are never opened: the database and its write-ahead
//! log are copied into a private directory first and the copy is read, so no
//! lock is taken on the agent's store and no `-shm` file is made beside it
//! (the same read works over ssh, through [`Files`]). The log is copied before
//! the database: a checkpoint in between then only replays pages the database
//! already holds, never loses one. A local store whose files have not changed
//! since the last look is not copied again (the entries read then are kept
//! with the files' lengths and times).

use crate::io::files::Files;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

fn beside(db: &Path, suffix: &str) -> PathBuf {
    let mut name: OsString = db.file_name().unwrap_or_default().to_owned();
    name.push(suffix);
    db.with_file_name(name)
}

/// What a local store's two files were when they were read: length and
/// modification time of the database and of its log (`None`: no such file).
type Stamp = [Option<(u64, SystemTime)>; 2];

fn stamp(db: &Path) -> Stamp {
    let of = |p: &Path| {
        let m = std::fs::metadata(p).ok()?;
        Some((m.len(), m.modified().ok()?))
    };
    [of(db), of(&beside(db, "-wal"))]
}

/// A stamp old enough to stand for the files' content: a write in the same
/// tick of the file system's clock as the read could leave length and time as
/// they were, so a file changed less than this before the read is read again.
const SETTLED: Duration = Duration::from_millis(100);

/// The last entries read of each local store (the `ask` settle loop looks
/// several times a second; an OpenCode store can be many megabytes, copied on
/// each look before): kept with the query, directory and the files' stamp,
/// and used only while the stamp is unchanged.
type Seen = BTreeMap<(PathBuf, String, Option<PathBuf>), (Stamp, Vec<Value>)>;
static SEEN: Mutex<Seen> = Mutex::new(BTreeMap::new());

/// The entries `query` makes of the database at `db`; `None` when there is
/// no such database or it cannot be read. `:cwd` in the query is `cwd`.
/// A local store whose files have not changed since the last read (and had
/// settled before it) is not copied again.
pub fn entries(files: &Files, db: &Path, query: &str, cwd: Option<&Path>) -> Option<Vec<Value>> {
    if files.is_remote() {
        return read(files, db, query, cwd);
    }
    let key = (
        db.to_path_buf(),
        query.to_string(),
        cwd.map(Path::to_path_buf),
    );
    let before = stamp(db);
    let hit = SEEN.lock().ok().and_then(|seen| {
        let (s, e) = seen.get(&key)?;
        (*s == before).then(|| e.clone())
    });
    if hit.is_some() {
        return hit;
    }
    let at = SystemTime::now();
    let got = read(files, db, query, cwd)?;
    let settled = before
        .iter()
        .flatten()
        .all(|(_, t)| at.duration_since(*t).is_ok_and(|d| d >= SETTLED));
    if let Ok(mut seen) = SEEN.lock() {
        match settled && before[0].is_some() {
            true => seen.insert(key, (before, got.clone())),
            false => seen.remove(&key),
        };
    }
    Some(got)
}

#[cfg(test)]
thread_local! {
    /// The copies this thread made (the tests count them).
    static COPIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn read(files: &Files, db: &Path, query: &str, cwd: Option<&Path>) -> Option<Vec<Value>> {
    #[cfg(test)]
    COPIES.with(|c| c.set(c.get() + 1));
    let wal = files.read(&beside(db, "-wal"));
    let main = files.read(db)?;
    let dir = tempfile::Builder::new()
        .prefix("promptgate-store-")
        .tempdir()
        .ok()?;
    let copy = dir.path().join("store.db");
    std::fs::write(&copy, main).ok()?;
    if let Some(w) = wal {
        std::fs::write(beside(&copy, "-wal"), w).ok()?;
    }
    let conn = Connection::open_with_flags(
        &copy,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ok()?;
    rows(&conn, query, cwd)
}

fn rows(conn: &Connection, query: &str, cwd: Option<&Path>) -> Option<Vec<Value>> {
    let mut st = conn.prepare(query).ok()?;
    let cwd = cwd.map(|c| c.display().to_string()).unwrap_or_default();
    let uses_cwd = st.parameter_index(":cwd").ok().flatten().is_some();
    let params: &[(&str, &dyn rusqlite::ToSql)] = match uses_cwd {
        true => &[(":cwd", &cwd)],
        false => &[],
    };
    let found = st
        .query_map(params, |r| r.get::<_, Option<String>>(0))
        .ok()?;
    Some(
        found
            .filter_map(|r| r.ok().flatten())
            .filter_map(|s| serde_json::from_str(&s).ok())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: &str = "SELECT json_object('role', role, 'text', text) FROM m \
                     WHERE dir = :cwd ORDER BY at";

    fn store(dir: &Path, wal: bool) -> PathBuf {
        let (db, c) = store_kept(dir, wal);
        // kept open: the rows stay in the log, as while the agent runs
        std::mem::forget(c);
        db
    }

    fn store_kept(dir: &Path, wal: bool) -> (PathBuf, Connection) {
        let db = dir.join("agent.db");
        let c = Connection::open(&db).unwrap();
        if wal {
            c.pragma_update(None, "journal_mode", "WAL").unwrap();
            c.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        }
        c.execute_batch(
            "CREATE TABLE m (at INTEGER, dir TEXT, role TEXT, text TEXT);
             INSERT INTO m VALUES (2, '/p', 'assistant', 'the reply');
             INSERT INTO m VALUES (1, '/p', 'user', 'the prompt');
             INSERT INTO m VALUES (3, '/elsewhere', 'user', 'not this directory');",
        )
        .unwrap();
        (db, c)
    }

    fn age(db: &Path, by: Duration) {
        for p in [db.to_path_buf(), beside(db, "-wal")] {
            if let Ok(f) = std::fs::File::options().write(true).open(&p) {
                f.set_modified(SystemTime::now() - by).unwrap();
            }
        }
    }

    fn copies() -> usize {
        COPIES.with(|c| c.get())
    }

    fn texts(e: &[Value]) -> Vec<&str> {
        e.iter().map(|v| v["text"].as_str().unwrap()).collect()
    }

    #[test]
    fn a_settled_store_is_copied_once_until_the_agent_writes_again() {
        let d = tempfile::tempdir().unwrap();
        let (db, c) = store_kept(d.path(), true);
        age(&db, Duration::from_secs(10));
        let p = Some(Path::new("/p"));
        let n = copies();
        let first = entries(&Files::Local, &db, Q, p).unwrap();
        let again = entries(&Files::Local, &db, Q, p).unwrap();
        assert_eq!(texts(&again), ["the prompt", "the reply"]);
        assert_eq!(first, again);
        assert_eq!(copies() - n, 1, "the unchanged store was copied again");
        // another directory's query is its own
        assert_eq!(
            entries(&Files::Local, &db, Q, Some(Path::new("/elsewhere")))
                .unwrap()
                .len(),
            1
        );
        // the agent writes: read again, its new row seen
        c.execute("INSERT INTO m VALUES (4, '/p', 'assistant', 'more')", [])
            .unwrap();
        let n = copies();
        let after = entries(&Files::Local, &db, Q, p).unwrap();
        assert_eq!(texts(&after), ["the prompt", "the reply", "more"]);
        assert_eq!(copies() - n, 1);
    }

    #[test]
    fn a_store_written_just_before_the_look_is_copied_on_every_look() {
        // its length and time could stay as they are through a write in the
        // same tick of the file system's clock
        let d = tempfile::tempdir().unwrap();
        let (db, _c) = store_kept(d.path(), true);
        let n = copies();
        for _ in 0..3 {
            assert_eq!(
                entries(&Files::Local, &db, Q, Some(Path::new("/p")))
                    .unwrap()
                    .len(),
                2
            );
        }
        assert_eq!(copies() - n, 3);
    }

    #[test]
    fn rows_in_the_write_ahead_log_are_read_from_a_copy_in_order_for_this_directory() {
        let d = tempfile::tempdir().unwrap();
        let db = store(d.path(), true);
        assert!(beside(&db, "-wal").exists());
        let before: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        let e = entries(&Files::Local, &db, Q, Some(Path::new("/p"))).unwrap();
        let texts: Vec<&str> = e.iter().map(|v| v["text"].as_str().unwrap()).collect();
        assert_eq!(texts, ["the prompt", "the reply"]);
        let after: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(before.len(), after.len(), "nothing made beside the store");
    }

    #[test]
    fn no_store_or_a_bad_query_reads_nothing() {
        let d = tempfile::tempdir().unwrap();
        assert!(entries(&Files::Local, &d.path().join("none.db"), Q, None).is_none());
        let db = store(d.path(), false);
        assert!(entries(&Files::Local, &db, "SELECT nonsense FROM nowhere", None).is_none());
        assert_eq!(entries(&Files::Local, &db, Q, None).unwrap().len(), 0);
    }
}
