//! The delivery log: one JSON line per send under `$XDG_STATE_HOME/promptgate/`
//! (`~/.local/state/promptgate/deliveries.jsonl`). `PROMPTGATE_LOG=off` turns it off;
//! `PROMPTGATE_LOG=/path/file.jsonl` writes elsewhere.

use std::io::Write;
use std::path::PathBuf;

pub fn log_path() -> Option<PathBuf> {
    match std::env::var("PROMPTGATE_LOG") {
        Ok(v) if v == "off" || v == "0" => return None,
        Ok(v) if !v.is_empty() => return Some(PathBuf::from(v)),
        _ => {}
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(base.join("promptgate").join("deliveries.jsonl"))
}

/// Append one record. A log that cannot be written never fails a delivery.
pub fn append(record: &impl serde::Serialize) {
    let Some(path) = log_path() else { return };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let mut line = serde_json::to_string(record).unwrap_or_default();
        line.push('\n');
        let _ = f.write_all(line.as_bytes());
    }
}
