//! The tmux language, pure: quoting a word for a command line, and the format
//! `resolve` asks for with the parser of its reply. No process runs here.

use super::split_fields;
use crate::core::error::{Error, Result};

/// `text` as one double-quoted word of tmux's command language, on one line:
/// `\`, `"`, `$` and `~` escaped (`~` would expand to a home directory), LF and
/// TAB as `\n` and `\t`.
pub fn tmux_quote(text: &str) -> String {
    let mut q = String::with_capacity(text.len() + 2);
    q.push('"');
    for c in text.chars() {
        match c {
            '\\' | '"' | '$' | '~' => {
                q.push('\\');
                q.push(c);
            }
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// Does the pane tmux resolved (`[pane_id, window_id, session, window_index,
/// window_name, pane_index]`) match what the user wrote?
/// What `resolve` asks tmux: the pane, what names it, and the server's socket.
pub(crate) const RESOLVE_FORMAT: &str = "#{version}\t#{pane_id}\t#{window_id}\t#{session_name}\t#{window_index}\t#{window_name}\t#{pane_index}\t#{socket_path}";

/// The pane id and socket path from a `RESOLVE_FORMAT` reply, if it is the pane
/// the user named (display-message falls back to another pane otherwise).
pub(crate) fn resolved(target: &str, out: &str) -> Result<(String, String)> {
    let line = out.trim_end_matches('\n');
    let Some((_, f)) = split_fields(line, 7) else {
        return Err(Error::NoPane(target.to_string()));
    };
    let names: Vec<&str> = f.iter().map(String::as_str).collect();
    if f[0].is_empty() || !target_matches(target, &names[..6]) {
        return Err(Error::NoPane(target.to_string()));
    }
    Ok((f[0].clone(), f[6].clone()))
}

fn target_matches(target: &str, f: &[&str]) -> bool {
    let t = target.trim_start_matches('=');
    if t.starts_with('%') {
        return t == f[0];
    }
    if t.starts_with('@') {
        return t == f[1];
    }
    if t.starts_with(['$', '{', '!', '~', '+', '-', ':', '.']) || t.is_empty() {
        return true;
    }
    let (session, rest) = match t.split_once(':') {
        Some((s, r)) => (s, Some(r)),
        None => (t, None),
    };
    if session != f[2] {
        return false;
    }
    let Some(rest) = rest.filter(|r| !r.is_empty()) else {
        return true;
    };
    let (win, pane) = match rest.rsplit_once('.') {
        Some((w, p)) if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => (w, Some(p)),
        _ => (rest, None),
    };
    (win.is_empty() || win == f[3] || win == f[4]) && pane.is_none_or(|p| p == f[5])
}

#[cfg(test)]
mod tests {
    use super::target_matches;

    #[test]
    fn resolved_pane_must_match_the_target() {
        let f = ["%3", "@1", "main", "2", "editor", "1"];
        for ok in [
            "%3",
            "main",
            "=main:",
            "main:2",
            "main:editor",
            "main:2.1",
            "@1",
        ] {
            assert!(target_matches(ok, &f), "{ok}");
        }
        for bad in ["%9", "mai", "main:9", "main:2.0", "other:2.1", "@2"] {
            assert!(!target_matches(bad, &f), "{bad}");
        }
    }
}
