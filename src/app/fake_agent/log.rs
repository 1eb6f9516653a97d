//! The transcript: one JSON object per line, `kind` first, `at_ms` (Unix epoch ms) last,
//! appended and flushed as each event happens.

use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

pub struct Log {
    file: Option<File>,
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// One record as a JSON line (fields in the given order).
pub fn line(kind: &str, fields: &[(&str, Value)]) -> String {
    let mut s = format!("{{\"kind\":{}", Value::from(kind));
    for (k, v) in fields {
        s.push(',');
        s.push_str(&Value::from(*k).to_string());
        s.push(':');
        s.push_str(&v.to_string());
    }
    s.push_str(&format!(",\"at_ms\":{}}}\n", now_ms()));
    s
}

impl Log {
    pub fn open(path: Option<&Path>) -> anyhow::Result<Log> {
        let file = match path {
            Some(p) => Some(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| anyhow::anyhow!("transcript {}: {e}", p.display()))?,
            ),
            None => None,
        };
        Ok(Log { file })
    }

    pub fn rec(&mut self, kind: &str, fields: &[(&str, Value)]) {
        if let Some(f) = &mut self.file {
            let _ = f.write_all(line(kind, fields).as_bytes());
            let _ = f.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn kind_first_fields_in_order() {
        let l = super::line("prompt", &[("n", 1.into()), ("text", "a\t\"b\"\n ".into())]);
        assert!(l.starts_with(r#"{"kind":"prompt","n":1,"text":"a\t\"b\"\n ","at_ms":"#));
        let v: serde_json::Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["text"], "a\t\"b\"\n ");
    }
}
