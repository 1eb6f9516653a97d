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
