//! A reply store that is a SQLite database (OpenCode's and Kilo's session
//! store), read as the entries of a `json` record: the profile's query gives
//! one JSON object a row, in order.
//!
//! The agent's own files are never opened: the database and its write-ahead
//! log are copied into a private directory first and the copy is read, so no
//! lock is taken on the agent's store and no `-shm` file is made beside it
//! (the same read works over ssh, through [`Files`]). The log is copied before
//! the database: a checkpoint in between then only replays pages the database
//! already holds, never loses one.

use crate::io::files::Files;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

fn beside(db: &Path, suffix: &str) -> PathBuf {
    let mut name: OsString = db.file_name().unwrap_or_default().to_owned();
    name.push(suffix);
    db.with_file_name(name)
}

/// The entries `query` makes of the database at `db`; `None` when there is
/// no such database or it cannot be read. `:cwd` in the query is `cwd`.
pub fn entries(files: &Files, db: &Path, query: &str, cwd: Option<&Path>) -> Option<Vec<Value>> {
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
        // kept open: the rows stay in the log, as while the agent runs
        std::mem::forget(c);
        db
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
