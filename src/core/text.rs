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

/// `2026-12-05T10:50:55.976Z` (RFC 3339 in UTC, `Z` or `+00:00`, fraction
/// optional) as milliseconds since the epoch; `None` for anything else.
pub fn rfc3339_ms(s: &str) -> Option<u64> {
    let s = s.strip_suffix('Z').or_else(|| s.strip_suffix("+00:00"))?;
    let (date, time) = s.split_once('T')?;
    let num = |t: &str| -> Option<i64> {
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
    };
    let mut d = date.splitn(3, '-');
    let (y, m, day) = (num(d.next()?)?, num(d.next()?)?, num(d.next()?)?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':');
    let (h, mi, sec) = (num(t.next()?)?, num(t.next()?)?, num(t.next()?)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let ms = match frac {
        "" => 0,
        f => num(&format!("{f:0<3}")[..3])?,
    };
    // days from the civil date (Howard Hinnant's algorithm)
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec;
    u64::try_from(secs * 1000 + ms).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_times_read_as_epoch_milliseconds() {
        use super::rfc3339_ms as t;
        assert_eq!(t("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(t("2026-12-05T10:50:55.976Z"), Some(1_796_467_855_976));
        assert_eq!(t("2000-02-29T12:00:00.5+00:00"), Some(951_825_600_500));
        for bad in [
            "",
            "2026-12-05",
            "2026-13-01T00:00:00Z",
            "2026-12-05T10:50:55+01:00",
            "x-y-zT1:2:3Z",
        ] {
            assert_eq!(t(bad), None, "{bad}");
        }
    }

    #[test]
    fn one_line_escapes_control_characters_but_tabs() {
        assert_eq!(super::one_line("no such pane: =a"), "no such pane: =a");
        assert_eq!(
            super::one_line("x\ny\r\u{1b}[2Jz\tw é"),
            "x\\ny\\r\\u{1b}[2Jz\tw é"
        );
    }
}
