//! Plan: turn a raw body into exactly what will be typed, and how. Pure: no
//! tmux, no clock, no I/O.
//!
//! Two steps:
//!
//! 1. [`sanitise`] makes the body safe to type. A body larger than
//!    [`MAX_BODY_BYTES`] or not valid UTF-8 is refused. Paste-frame markers
//!    (`ESC[200~`, `ESC[201~`) are removed, so a body can never end the
//!    bracketed paste early and have its rest read as keystrokes. CRLF and lone
//!    CR become LF. ESC, every other C0 control byte except TAB and LF, DEL,
//!    and the C1 controls U+0080..U+009F are removed. **Trailing LFs are
//!    trimmed** (like shell `$(...)`): `echo hi | promptgate send` means
//!    `hi`, and the submit key is sent by itself anyway. Trailing spaces and
//!    tabs, leading newlines, a leading `-` and a trailing `;` are kept as
//!    they are (the tmux adapter escapes what tmux would read as syntax; the
//!    plan carries the real text). An empty or whitespace-only result is
//!    refused. Each kind of change is counted in [`Plan::changes`].
//!
//! 2. [`plan`] picks the framing. With bracketed paste, a multi-line body or
//!    one of at least `paste_min_bytes` goes as ONE [`ChunkKind::Paste`] chunk (the
//!    adapter loads it into a buffer through stdin, so argv does not limit it).
//!    Anything else is typed raw: [`ChunkKind::Keys`] chunks cut on char boundaries,
//!    each at most `min(raw_chunk_max, ARGV_MAX)` bytes, paced by `pacing_ms`.
//!    A multi-line body that would have to go raw to an agent whose raw LF
//!    does not insert a newline is refused. The submit key is always the last
//!    chunk, on its own, after [`submit_delay_ms`].

use crate::core::error::{Error, Result};
use crate::core::profile::Capability;
use serde::Serialize;
use std::fmt;

/// Largest text for one tmux `send-keys -l` argument. The measured cap is
/// 16,342 bytes on tmux 3.3a; the margin leaves room for escaping.
pub const ARGV_MAX: usize = 16_000;

/// Larger bodies are refused before any other work.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

const PASTE_START: &str = "\x1b[200~";
const PASTE_END: &str = "\x1b[201~";

/// How one chunk is typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChunkKind {
    /// One framed bracketed paste of `text`.
    Paste,
    /// `text` typed literally (`send-keys -l`).
    Keys,
    /// The submit key; `text` is its tmux key name.
    Submit,
}

impl ChunkKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            ChunkKind::Paste => "paste",
            ChunkKind::Keys => "keys",
            ChunkKind::Submit => "submit",
        }
    }
}

impl fmt::Display for ChunkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chunk {
    pub how: ChunkKind,
    pub text: String,
    /// Wait this long before sending this chunk.
    pub delay_before_ms: u64,
}

/// One kind of change sanitising made, and how many times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Change {
    pub what: String,
    pub count: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Framing {
    BracketedPaste,
    RawKeys,
}

impl Framing {
    pub fn as_str(&self) -> &'static str {
        match self {
            Framing::BracketedPaste => "bracketed-paste",
            Framing::RawKeys => "raw-keys",
        }
    }
}

impl fmt::Display for Framing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The sanitised body: exactly what will be typed.
    pub body: String,
    /// Raw input length.
    pub bytes_in: usize,
    /// `body.len()`.
    pub bytes_out: usize,
    pub framing: Framing,
    /// Body chunks, then exactly one `Submit` chunk, last.
    pub chunks: Vec<Chunk>,
    /// What sanitising changed (empty when nothing).
    pub changes: Vec<Change>,
}

impl Plan {
    /// The body chunks (all but the submit chunk).
    pub fn body_chunks(&self) -> &[Chunk] {
        &self.chunks[..self.chunks.len() - 1]
    }

    /// The text the body chunks type, joined: what the agent's record should
    /// hold (the proof compares it).
    pub fn typed_text(&self) -> String {
        self.body_chunks().iter().map(|c| c.text.as_str()).collect()
    }

    /// The submit chunk (always last).
    pub fn submit(&self) -> &Chunk {
        self.chunks
            .last()
            .expect("a plan always has a submit chunk")
    }
}

// The names of the changes, in the order they are reported.
const CH_START: &str = "removed paste-frame marker ESC[200~";
const CH_END: &str = "removed paste-frame marker ESC[201~";
const CH_CR: &str = "CRLF/CR -> LF";
const CH_C0: &str = "removed control byte";
const CH_C1: &str = "removed C1 control character";
const CH_TRIM: &str = "trimmed trailing newline";
const CH_BACKSLASH: &str =
    "a space after the last backslash (this agent reads backslash-Enter as a new line)";

/// A character that draws nothing (a BOM, a zero-width space or joiner, a
/// word joiner): a body of only these and whitespace is empty.
pub fn invisible(c: char) -> bool {
    matches!(c, '\u{feff}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}')
}

/// Make `raw` safe to type; see the module docs for the rules.
pub fn sanitise(raw: &[u8]) -> Result<(String, Vec<Change>)> {
    if raw.len() > MAX_BODY_BYTES {
        return Err(Error::BadBody(format!(
            "body is {} bytes; the limit is {MAX_BODY_BYTES}",
            raw.len()
        )));
    }
    let s = std::str::from_utf8(raw).map_err(|e| {
        Error::BadBody(format!(
            "body is not valid UTF-8 (first bad byte at offset {})",
            e.valid_up_to()
        ))
    })?;

    let (mut start, mut end, mut cr, mut c0, mut c1) = (0, 0, 0, 0, 0);
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        let mut step = c.len_utf8();
        match c {
            '\x1b' if rest.starts_with(PASTE_START) => {
                start += 1;
                step = PASTE_START.len();
            }
            '\x1b' if rest.starts_with(PASTE_END) => {
                end += 1;
                step = PASTE_END.len();
            }
            '\r' => {
                cr += 1;
                out.push('\n');
                if rest[1..].starts_with('\n') {
                    step = 2;
                }
            }
            '\t' | '\n' => out.push(c),
            '\0'..='\x1f' | '\x7f' => c0 += 1,
            '\u{80}'..='\u{9f}' => c1 += 1,
            _ => out.push(c),
        }
        rest = &rest[step..];
    }
    let kept = out.trim_end_matches('\n').len();
    let trimmed = out.len() - kept;
    out.truncate(kept);

    // only invisible characters (a BOM, zero-width spaces: an "empty" file
    // saved with a BOM) is empty too: nothing a person wrote would be typed
    if out.chars().all(|c| c.is_whitespace() || invisible(c)) {
        return Err(Error::BadBody("empty body".into()));
    }
    let changes = [
        (CH_START, start),
        (CH_END, end),
        (CH_CR, cr),
        (CH_C0, c0),
        (CH_C1, c1),
        (CH_TRIM, trimmed),
    ]
    .into_iter()
    .filter(|&(_, n)| n > 0)
    .map(|(what, count)| Change {
        what: what.to_string(),
        count,
    })
    .collect();
    Ok((out, changes))
}

/// The wait before the submit key: `submit_delay_ms` (after keys) or
/// `paste_submit_delay_ms` (after a bracketed paste), plus
/// `per_kib * ceil(len / 1024)`.
pub fn submit_delay_ms(body_len: usize, pasted: bool, cap: &Capability) -> u64 {
    let kib = body_len.div_ceil(1024) as u64;
    let base = match cap.paste_submit_delay_ms {
        Some(d) if pasted => d,
        _ => cap.submit_delay_ms,
    };
    base.saturating_add(cap.submit_delay_per_kib_ms.saturating_mul(kib))
}

/// Sanitise `raw` and plan how to type it into an agent with capability `cap`.
/// [`plan`] for a pane whose app has bracketed paste on or off right now, where
/// tmux says so (`#{bracket_paste_flag}`, tmux 3.7 and later): an agent that
/// turned it off gets the unframed path, as if its profile said so.
pub fn plan_for_pane(raw: &[u8], cap: &Capability, bracketed_now: Option<bool>) -> Result<Plan> {
    plan_body_for_pane(&Body::sanitise(raw)?, cap, bracketed_now)
}

/// A body sanitised once ([`sanitise`]), to be planned for one pane or many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    /// The sanitised text: exactly what will be typed.
    pub text: String,
    /// What sanitising changed.
    pub changes: Vec<Change>,
    /// The raw input's length.
    pub bytes_in: usize,
}

impl Body {
    pub fn sanitise(raw: &[u8]) -> Result<Body> {
        let (text, changes) = sanitise(raw)?;
        Ok(Body {
            text,
            changes,
            bytes_in: raw.len(),
        })
    }
}

/// [`plan_for_pane`] for a body sanitised already.
pub fn plan_body_for_pane(b: &Body, cap: &Capability, bracketed_now: Option<bool>) -> Result<Plan> {
    if cap.bracketed_paste && bracketed_now == Some(false) {
        let cap = Capability {
            bracketed_paste: false,
            ..cap.clone()
        };
        return plan_body(b, &cap).map_err(|e| match e {
            Error::BadBody(m) => Error::BadBody(format!(
                "the agent has bracketed paste off right now (tmux's bracket_paste_flag is 0): {m}"
            )),
            e => e,
        });
    }
    plan_body(b, cap)
}

pub fn plan(raw: &[u8], cap: &Capability) -> Result<Plan> {
    plan_body(&Body::sanitise(raw)?, cap)
}

/// [`plan`] for a body sanitised already.
pub fn plan_body(b: &Body, cap: &Capability) -> Result<Plan> {
    let (mut body, mut changes) = (b.text.clone(), b.changes.clone());
    // `\` + Enter is a new line in this agent (the `\` dropped), not a submit:
    // the body would stay in the composer, and the next Enter send it without
    // its last `\`
    if cap.backslash_enter_newline && body.ends_with('\\') {
        body.push(' ');
        changes.push(Change {
            what: CH_BACKSLASH.to_string(),
            count: 1,
        });
    }
    let multi_line = body.contains('\n');
    let paste = cap.bracketed_paste && (multi_line || body.len() >= cap.paste_min_bytes);

    let mut chunks = if paste {
        vec![Chunk {
            how: ChunkKind::Paste,
            text: body.clone(),
            delay_before_ms: 0,
        }]
    } else {
        if multi_line && !cap.raw_newline_ok {
            let lines = body.split('\n').count();
            return Err(Error::BadBody(format!(
                "this agent can't take a multi-line body ({lines} lines) without bracketed paste: \
                 a raw newline would submit it early; join the lines into one"
            )));
        }
        let limit = cap.raw_chunk_max.min(ARGV_MAX);
        cut(&body, limit)
            .into_iter()
            .enumerate()
            .map(|(i, text)| Chunk {
                how: ChunkKind::Keys,
                text: text.to_string(),
                delay_before_ms: if i == 0 { 0 } else { cap.pacing_ms },
            })
            .collect()
    };
    chunks.push(Chunk {
        how: ChunkKind::Submit,
        text: cap.submit_key.clone(),
        delay_before_ms: submit_delay_ms(body.len(), paste, cap),
    });

    Ok(Plan {
        bytes_in: b.bytes_in,
        bytes_out: body.len(),
        framing: if paste {
            Framing::BracketedPaste
        } else {
            Framing::RawKeys
        },
        chunks,
        changes,
        body,
    })
}

/// Cut `s` into pieces of at most `limit` bytes on char boundaries. A char
/// longer than `limit` (only with `limit < 4`) is a piece by itself.
fn cut(s: &str, limit: usize) -> Vec<&str> {
    let mut pieces = Vec::with_capacity(s.len() / limit.max(1) + 1);
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if i > start && i + c.len_utf8() - start > limit {
            pieces.push(&s[start..i]);
            start = i;
        }
    }
    if start < s.len() {
        pieces.push(&s[start..]);
    }
    pieces
}

/// The first `max` chars of `s`, escaped (`\n`, `\t`, `\u{..}`), `…` when cut.
fn preview(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    for c in chars.by_ref().take(max) {
        out.extend(c.escape_debug());
    }
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines = self.body.split('\n').count();
        writeln!(f, "framing: {}", self.framing)?;
        writeln!(
            f,
            "bytes:   {} in, {} out ({} chars, {} line{})",
            self.bytes_in,
            self.bytes_out,
            self.body.chars().count(),
            lines,
            if lines == 1 { "" } else { "s" }
        )?;
        writeln!(f, "chunks:  {}", self.chunks.len())?;
        for (i, c) in self.chunks.iter().enumerate() {
            if c.how == ChunkKind::Submit {
                writeln!(
                    f,
                    "  #{i:<3} {:<6} key {:<16} delay {} ms",
                    c.how, c.text, c.delay_before_ms
                )?;
            } else {
                writeln!(
                    f,
                    "  #{i:<3} {:<6} {:>7} B {:>7} ch  delay {} ms  \"{}\"",
                    c.how,
                    c.text.len(),
                    c.text.chars().count(),
                    c.delay_before_ms,
                    preview(&c.text, 40)
                )?;
            }
        }
        if self.changes.is_empty() {
            writeln!(f, "changes: none")?;
        } else {
            writeln!(f, "changes:")?;
            for c in &self.changes {
                writeln!(f, "  {} x{}", c.what, c.count)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::profile::Profiles;

    fn cap(name: &str) -> Capability {
        // Compiled once: the profiles' regexes are slow to build in debug.
        static BUILTIN: std::sync::OnceLock<Profiles> = std::sync::OnceLock::new();
        BUILTIN
            .get_or_init(Profiles::builtin)
            .get(name)
            .unwrap()
            .capability()
            .clone()
    }

    fn raw_cap() -> Capability {
        Capability {
            bracketed_paste: false,
            ..cap("claude")
        }
    }

    fn body(raw: &[u8]) -> String {
        sanitise(raw).unwrap().0
    }

    /// Where `\` + Enter is a new line (Claude, Gemini, Qwen, Copilot), a body
    /// ending in `\` (after its trailing newlines go) gets a space, and says so;
    /// elsewhere, and a `\` inside the body, nothing changes.
    #[test]
    fn a_last_backslash_gets_a_space_where_backslash_enter_is_a_new_line() {
        for agent in ["claude", "gemini", "qwen", "copilot"] {
            let p = plan(b"C:\\dir\\\n\n", &cap(agent)).unwrap();
            assert_eq!(p.body, "C:\\dir\\ ", "{agent}");
            assert_eq!(count(&p.changes, CH_BACKSLASH), 1, "{agent}");
            let p = plan(b"a \\ in the middle", &cap(agent)).unwrap();
            assert_eq!(p.body, "a \\ in the middle", "{agent}");
            assert!(p.changes.is_empty(), "{agent}");
        }
        for agent in ["codex", "opencode", "kilo", "aider", "auggie"] {
            let p = plan(b"C:\\dir\\", &cap(agent)).unwrap();
            assert_eq!(p.body, "C:\\dir\\", "{agent}");
            assert!(p.changes.is_empty(), "{agent}");
        }
    }

    fn count(changes: &[Change], what: &str) -> usize {
        changes
            .iter()
            .find(|c| c.what == what)
            .map_or(0, |c| c.count)
    }

    fn bad_body(r: Result<impl fmt::Debug>) -> String {
        match r {
            Err(Error::BadBody(m)) => m,
            other => panic!("expected BadBody, got {other:?}"),
        }
    }

    #[test]
    fn a_clean_body_is_unchanged() {
        let (b, ch) = sanitise(b"fix the bug in main.rs\n\twith tabs").unwrap();
        assert_eq!(b, "fix the bug in main.rs\n\twith tabs");
        assert!(ch.is_empty());
    }

    #[test]
    fn paste_frame_markers_are_removed() {
        let (b, ch) = sanitise(b"before\x1b[201~rm -rf /\x1b[200~after").unwrap();
        assert_eq!(b, "beforerm -rf /after");
        assert_eq!(count(&ch, CH_END), 1);
        assert_eq!(count(&ch, CH_START), 1);
        assert_eq!(count(&ch, CH_C0), 0);
        let (b, ch) = sanitise(b"a\x1b[201~\x1b[201~b").unwrap();
        assert_eq!(b, "ab");
        assert_eq!(count(&ch, CH_END), 2);
    }

    #[test]
    fn a_marker_built_from_pieces_leaves_no_esc() {
        let b = body(b"x\x1b[20\x1b[201~0~y");
        assert!(!b.contains('\x1b'));
        assert_eq!(b, "x[200~y");
    }

    #[test]
    fn crlf_and_cr_become_lf() {
        let (b, ch) = sanitise(b"a\r\nb\rc\r\r\nd").unwrap();
        assert_eq!(b, "a\nb\nc\n\nd");
        assert_eq!(count(&ch, CH_CR), 4);
    }

    #[test]
    fn control_bytes_are_removed_but_tab_and_lf_kept() {
        let (b, ch) = sanitise(b"a\x00b\x07c\x1bd\x7fe\tf\ng\x0bh\x0ci").unwrap();
        assert_eq!(b, "abcde\tf\nghi");
        assert_eq!(count(&ch, CH_C0), 6);
    }

    #[test]
    fn c1_controls_are_removed() {
        let (b, ch) = sanitise("a\u{80}b\u{9b}31mc\u{9f}d\u{a0}e".as_bytes()).unwrap();
        assert_eq!(b, "ab31mcd\u{a0}e");
        assert_eq!(count(&ch, CH_C1), 3);
    }

    #[test]
    fn trailing_newlines_are_trimmed_and_counted() {
        let (b, ch) = sanitise(b"hello\r\n\n\n").unwrap();
        assert_eq!(b, "hello");
        assert_eq!(count(&ch, CH_TRIM), 3);
        assert_eq!(count(&ch, CH_CR), 1);
        // Trailing spaces and leading newlines stay.
        assert_eq!(body(b"\nhello  "), "\nhello  ");
    }

    #[test]
    fn leading_dash_and_trailing_semicolon_are_kept() {
        let typed = Capability {
            paste_min_bytes: 64,
            ..cap("claude")
        };
        let p = plan(b"-n; echo hi;", &typed).unwrap();
        assert_eq!(p.body, "-n; echo hi;");
        assert!(p.changes.is_empty());
        assert_eq!(p.framing, Framing::RawKeys);
        assert_eq!(p.body_chunks()[0].text, "-n; echo hi;");
        assert_eq!(body(b";"), ";");
        assert_eq!(body(b"-"), "-");
    }

    #[test]
    fn a_trailing_semicolon_is_not_special_when_chunking() {
        let c = Capability {
            raw_chunk_max: 3,
            ..raw_cap()
        };
        let p = plan(b"ab;cd;", &c).unwrap();
        let texts: Vec<_> = p.body_chunks().iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["ab;", "cd;"]);
    }

    #[test]
    fn empty_and_whitespace_bodies_are_refused() {
        for raw in [
            &b""[..],
            b"\n\n",
            b"   \t\n  ",
            b"\x1b[200~\x1b[201~",
            b"\x00\x01\r\n",
            // a file saved "empty" with a BOM, zero-width spaces
            "\u{feff}".as_bytes(),
            "\u{feff}\n\u{200b} \u{2060}\n".as_bytes(),
        ] {
            assert_eq!(bad_body(sanitise(raw)), "empty body", "{raw:?}");
            assert_eq!(bad_body(plan(raw, &cap("claude"))), "empty body");
        }
    }

    #[test]
    fn invalid_utf8_is_refused_with_offset() {
        let m = bad_body(sanitise(b"abc\xffdef"));
        assert_eq!(m, "body is not valid UTF-8 (first bad byte at offset 3)");
        // A truncated multi-byte char.
        let m = bad_body(plan(b"\xe4\xb8\xad\xe4\xb8", &cap("claude")));
        assert!(m.contains("offset 3"), "{m}");
    }

    #[test]
    fn one_mb_plans_and_ten_mb_is_refused() {
        let line = "the quick brown fox jumps over the lazy dog 0123456789\n";
        let big = line.repeat(1024 * 1024 / line.len() + 1);
        assert!(big.len() > 1024 * 1024);
        let p = plan(big.as_bytes(), &cap("claude")).unwrap();
        assert_eq!(p.framing, Framing::BracketedPaste);
        assert_eq!(p.chunks.len(), 2);
        assert_eq!(p.bytes_out, big.len() - 1); // the trailing LF is trimmed

        // The same 1 MB typed raw: many chunks, all within the limit.
        let one_line = "x".repeat(1024 * 1024);
        let p = plan(one_line.as_bytes(), &raw_cap()).unwrap();
        assert_eq!(p.body_chunks().len(), (1024 * 1024usize).div_ceil(63));

        let huge = vec![b'a'; 10 * 1024 * 1024];
        let m = bad_body(plan(&huge, &cap("claude")));
        assert_eq!(
            m,
            format!(
                "body is {} bytes; the limit is {MAX_BODY_BYTES}",
                huge.len()
            )
        );
        // Refused before the UTF-8 check.
        let mut huge_bad = huge;
        huge_bad[0] = 0xff;
        assert!(bad_body(sanitise(&huge_bad)).contains("the limit is"));
        // Exactly at the limit is fine.
        assert!(sanitise(&vec![b'a'; MAX_BODY_BYTES]).is_ok());
    }

    #[test]
    fn multi_line_or_long_bodies_paste_when_the_agent_brackets() {
        let c = cap("claude");
        let p = plan(b"line one\nline two", &c).unwrap();
        assert_eq!(p.framing, Framing::BracketedPaste);
        assert_eq!(p.chunks[0].how, ChunkKind::Paste);
        assert_eq!(p.chunks[0].text, "line one\nline two");
        assert_eq!(p.chunks[0].delay_before_ms, 0);

        // The built-ins paste every body; a profile with a threshold types short lines.
        let p = plan(b"y", &c).unwrap();
        assert_eq!(p.framing, Framing::BracketedPaste);
        let c = Capability {
            paste_min_bytes: 64,
            ..c
        };
        let long = "y".repeat(c.paste_min_bytes);
        let p = plan(long.as_bytes(), &c).unwrap();
        assert_eq!(p.framing, Framing::BracketedPaste);
        let short = "y".repeat(c.paste_min_bytes - 1);
        let p = plan(short.as_bytes(), &c).unwrap();
        assert_eq!(p.framing, Framing::RawKeys);
    }

    #[test]
    fn a_paste_is_one_chunk_even_past_argv_max() {
        let long = "z".repeat(ARGV_MAX * 3);
        let p = plan(long.as_bytes(), &cap("gemini")).unwrap();
        assert_eq!(p.chunks.len(), 2);
        assert_eq!(p.chunks[0].text.len(), ARGV_MAX * 3);
    }

    #[test]
    fn raw_chunks_respect_the_limit_and_pacing() {
        let c = raw_cap();
        let text = "a".repeat(200);
        let p = plan(text.as_bytes(), &c).unwrap();
        assert_eq!(p.framing, Framing::RawKeys);
        let bc = p.body_chunks();
        assert_eq!(bc.len(), 4); // 63 + 63 + 63 + 11
        assert!(bc
            .iter()
            .all(|c| c.how == ChunkKind::Keys && c.text.len() <= 63));
        assert_eq!(bc[0].delay_before_ms, 0);
        assert!(bc[1..].iter().all(|x| x.delay_before_ms == c.pacing_ms));
        assert_eq!(bc.iter().map(|c| c.text.as_str()).collect::<String>(), text);
    }

    #[test]
    fn raw_chunks_never_exceed_argv_max() {
        let c = Capability {
            raw_chunk_max: 1_000_000,
            ..raw_cap()
        };
        let text = "q".repeat(ARGV_MAX * 2 + 5);
        let p = plan(text.as_bytes(), &c).unwrap();
        let lens: Vec<_> = p.body_chunks().iter().map(|c| c.text.len()).collect();
        assert_eq!(lens, [ARGV_MAX, ARGV_MAX, 5]);
    }

    #[test]
    fn cjk_and_emoji_are_cut_only_on_char_boundaries() {
        let text = "中文字符テスト🙂👍🏽한국어".repeat(20);
        for limit in 1..=20 {
            let c = Capability {
                raw_chunk_max: limit,
                ..raw_cap()
            };
            let p = plan(text.as_bytes(), &c).unwrap();
            let mut joined = String::new();
            for ch in p.body_chunks() {
                assert!(!ch.text.is_empty());
                assert!(
                    ch.text.len() <= limit || ch.text.chars().count() == 1,
                    "limit {limit}: {:?}",
                    ch.text
                );
                assert!(text.is_char_boundary(joined.len()));
                joined.push_str(&ch.text);
            }
            assert_eq!(joined, text);
        }
        // With limit 7, a 3-byte CJK pair fits (6), a third does not.
        assert_eq!(cut("中文字", 7), ["中文", "字"]);
        // A 4-byte emoji over a limit of 2 is a chunk by itself.
        assert_eq!(cut("a🙂b", 2), ["a", "🙂", "b"]);
        assert_eq!(cut("ab", 0), ["a", "b"]);
    }

    #[test]
    fn multi_line_raw_is_refused_when_lf_submits() {
        let c = Capability {
            raw_newline_ok: false,
            ..raw_cap()
        };
        let m = bad_body(plan(b"one\ntwo", &c));
        assert!(m.contains("multi-line"), "{m}");
        assert!(m.contains("bracketed paste"), "{m}");
        // Single-line bodies are fine, and a bracketed agent pastes.
        assert!(plan(b"one two", &c).is_ok());
        let c = Capability {
            bracketed_paste: true,
            ..c
        };
        assert_eq!(
            plan(b"one\ntwo", &c).unwrap().framing,
            Framing::BracketedPaste
        );
        // Raw LF allowed: typed raw, LF inside the chunk.
        let p = plan(b"one\ntwo", &raw_cap()).unwrap();
        assert_eq!(p.framing, Framing::RawKeys);
        assert_eq!(p.body_chunks()[0].text, "one\ntwo");
    }

    #[test]
    fn submit_is_last_separate_and_delayed_by_size() {
        // typed keys (a profile that types short lines) wait the keys delay
        let c = Capability {
            paste_min_bytes: 64,
            ..cap("claude")
        };
        let p = plan(b"hi", &c).unwrap();
        assert_eq!(p.chunks.len(), 2);
        assert_eq!(
            p.submit(),
            &Chunk {
                how: ChunkKind::Submit,
                text: "Enter".into(),
                delay_before_ms: c.submit_delay_ms + c.submit_delay_per_kib_ms,
            }
        );
        // a paste waits the paste delay
        let p = plan(b"one\ntwo", &c).unwrap();
        assert_eq!(
            p.submit().delay_before_ms,
            c.paste_submit_delay_ms.unwrap() + c.submit_delay_per_kib_ms
        );
        assert_eq!(
            p.chunks
                .iter()
                .filter(|c| c.how == ChunkKind::Submit)
                .count(),
            1
        );
    }

    #[test]
    fn submit_delay_grows_per_started_kib() {
        let c = Capability {
            submit_delay_ms: 100,
            submit_delay_per_kib_ms: 5,
            ..cap("claude")
        };
        let c = Capability {
            paste_submit_delay_ms: None,
            ..c
        };
        assert_eq!(submit_delay_ms(0, false, &c), 100);
        assert_eq!(submit_delay_ms(1, false, &c), 105);
        assert_eq!(submit_delay_ms(1024, false, &c), 105);
        assert_eq!(submit_delay_ms(1025, false, &c), 110);
        assert_eq!(submit_delay_ms(20 * 1024, false, &c), 200);
        // no paste delay of its own: the keys' delay
        assert_eq!(submit_delay_ms(20 * 1024, true, &c), 200);
        let c = Capability {
            paste_submit_delay_ms: Some(30),
            ..c
        };
        assert_eq!(submit_delay_ms(1025, true, &c), 40);
        assert_eq!(submit_delay_ms(1025, false, &c), 110);
        let c = Capability {
            submit_delay_ms: u64::MAX,
            ..c
        };
        assert_eq!(submit_delay_ms(5000, false, &c), u64::MAX);
    }

    #[test]
    fn bytes_in_and_out() {
        let p = plan(b"ab\r\n", &cap("claude")).unwrap();
        assert_eq!((p.bytes_in, p.bytes_out), (4, 2));
        assert_eq!(p.body, "ab");
    }

    #[test]
    fn display_shows_framing_chunks_and_changes() {
        let p = plan(b"hello\r\nworld\x07\x1b[201~\n", &cap("claude")).unwrap();
        let s = p.to_string();
        assert!(s.contains("framing: bracketed-paste"), "{s}");
        assert!(s.contains("20 in, 11 out"), "{s}");
        assert!(s.contains("paste"), "{s}");
        assert!(s.contains("\"hello\\nworld\""), "{s}");
        assert!(s.contains("submit"), "{s}");
        assert!(s.contains("Enter"), "{s}");
        assert!(s.contains("removed paste-frame marker ESC[201~ x1"), "{s}");
        assert!(s.contains("CRLF/CR -> LF x1"), "{s}");
        assert!(s.contains("removed control byte x1"), "{s}");
        assert!(s.contains("trimmed trailing newline x1"), "{s}");

        let p = plan("日本語".repeat(30).as_bytes(), &raw_cap()).unwrap();
        let s = p.to_string();
        assert!(s.contains("framing: raw-keys"), "{s}");
        assert!(s.contains("changes: none"), "{s}");
        // The preview is at most 40 chars plus an ellipsis.
        let first = s.lines().find(|l| l.contains("keys")).unwrap();
        assert!(first.contains('…') || p.body_chunks()[0].text.chars().count() <= 40);
    }

    #[test]
    fn preview_escapes_and_cuts() {
        assert_eq!(preview("a\tb\n\"c\"", 40), "a\\tb\\n\\\"c\\\"");
        assert_eq!(preview(&"x".repeat(50), 40), format!("{}…", "x".repeat(40)));
        assert_eq!(preview("中文", 1), "中…");
    }

    #[test]
    fn plan_serialises_in_kebab_case() {
        let p = plan(b"a\nb", &cap("codex")).unwrap();
        let j = serde_json::to_value(&p).unwrap();
        assert_eq!(j["framing"], "bracketed-paste");
        assert_eq!(j["chunks"][0]["how"], "paste");
        assert_eq!(j["chunks"][1]["how"], "submit");
        assert_eq!(j["bytes_out"], 3);
    }
}
