//! The delivery log: one JSON line per send under `$XDG_STATE_HOME/promptgate/`
//! (`~/.local/state/promptgate/deliveries.jsonl`). `PROMPTGATE_LOG=off` turns it off;
//! `PROMPTGATE_LOG=/path/file.jsonl` writes elsewhere.

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
        .or_else(|| {
            // (an empty or relative HOME would put the log in the current directory)
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty() && std::path::Path::new(h).is_absolute())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })?;
    Some(base.join("promptgate").join("deliveries.jsonl"))
}

/// Append one record, as one `write` to a regular file (`crate::io::store`): lines
/// from several processes never interleave, and a FIFO there never blocks. A log
/// that cannot be written never fails a delivery.
pub fn append(record: &impl serde::Serialize) {
    let Some(path) = log_path() else { return };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if crate::io::store::dir(dir, "the delivery log's directory").is_err() {
            return;
        }
    }
    let mut line = serde_json::to_string(record).unwrap_or_default();
    line.push('\n');
    let _ = crate::io::store::append_line(&path, line.as_bytes(), "the delivery log");
}
