//! Small text helpers shared by detect, plan and verify.

use unicode_width::UnicodeWidthStr;

/// Display width in terminal cells (`width()`, not `width_cjk()`).
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Byte offset in `s` of terminal column `col` (clamped to the string's end).
pub fn byte_at_col(s: &str, col: usize) -> usize {
    let mut w = 0;
    for (i, c) in s.char_indices() {
        if w >= col {
            return i;
        }
        w += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
    }
    s.len()
}

/// Collapse runs of whitespace (including NBSP) to one space and trim.
/// A message for one stderr line: control characters other than tab (a newline
/// or an escape sequence from a pane title, a target or an id the user gave) are
/// written as escapes, so an error is always one line and never drives the
/// terminal.
pub fn one_line(s: &str) -> String {
    if !s.chars().any(|c| c.is_control() && c != '\t') {
        return s.to_string();
    }
    s.chars()
        .map(|c| match c {
            '\t' => c.to_string(),
            c if c.is_control() => c.escape_default().to_string(),
            c => c.to_string(),
        })
        .collect()
}

pub fn squash(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c == '\u{a0}')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// SHA-256 of `data`, lower-case hex.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_line_escapes_control_characters_but_tabs() {
        assert_eq!(super::one_line("no such pane: =a"), "no such pane: =a");
        assert_eq!(
            super::one_line("x\ny\r\u{1b}[2Jz\tw é"),
            "x\\ny\\r\\u{1b}[2Jz\tw é"
        );
    }
}
