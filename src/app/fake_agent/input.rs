//! What a terminal sends an app in raw mode, parsed into keys.
//!
//! A byte-level state machine, so escape sequences, bracketed-paste frames and
//! UTF-8 characters may be split across `read()` boundaries anywhere.

use std::time::{Duration, Instant};

/// How long a lone ESC waits for the rest of a sequence before it counts as the Escape key.
pub const ESC_TIMEOUT: Duration = Duration::from_millis(30);

const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Char(char),
    /// CR (0x0D): the Enter key.
    Enter,
    /// LF (0x0A): `send-keys -l` with a newline, or Ctrl-J.
    Newline,
    Tab,
    Backspace,
    CtrlU,
    CtrlC,
    Esc,
    /// One bracketed paste, markers removed, bytes as received.
    Paste(String),
    /// An escape sequence the fake agent ignores (arrows, focus events, ...).
    Seq(Vec<u8>),
    /// Another C0 control byte.
    Ctrl(u8),
}

impl Key {
    /// The bytes that make up this key (for the dialog-input record).
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Key::Char(c) => c.to_string().into_bytes(),
            Key::Enter => vec![b'\r'],
            Key::Newline => vec![b'\n'],
            Key::Tab => vec![b'\t'],
            Key::Backspace => vec![0x7f],
            Key::CtrlU => vec![0x15],
            Key::CtrlC => vec![0x03],
            Key::Esc => vec![0x1b],
            Key::Paste(s) => [PASTE_START, s.as_bytes(), PASTE_END].concat(),
            Key::Seq(b) => b.clone(),
            Key::Ctrl(b) => vec![*b],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum St {
    Ground,
    Esc,
    Csi(Vec<u8>),
    Ss3,
    Paste(Vec<u8>),
}

#[derive(Debug, Clone)]
pub struct Parser {
    st: St,
    utf8: Vec<u8>,
    esc_at: Option<Instant>,
}

impl Default for Parser {
    fn default() -> Self {
        Parser {
            st: St::Ground,
            utf8: Vec::new(),
            esc_at: None,
        }
    }
}

fn utf8_len(lead: u8) -> usize {
    match lead {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

impl Parser {
    pub fn new() -> Parser {
        Parser::default()
    }

    /// Inside a bracketed-paste frame (after `ESC[200~`, before `ESC[201~`).
    pub fn in_paste(&self) -> bool {
        matches!(self.st, St::Paste(_))
    }

    /// In the middle of an escape sequence (a read ended inside it).
    pub fn mid_sequence(&self) -> bool {
        !matches!(self.st, St::Ground)
    }

    pub fn feed(&mut self, bytes: &[u8], now: Instant) -> Vec<Key> {
        let mut out = Vec::new();
        for &b in bytes {
            self.byte(b, &mut out);
        }
        self.esc_at = matches!(self.st, St::Esc).then_some(now);
        out
    }

    /// When a pending lone ESC turns into the Escape key.
    pub fn esc_deadline(&self) -> Option<Instant> {
        self.esc_at.map(|t| t + ESC_TIMEOUT)
    }

    /// A lone ESC with nothing after it for `ESC_TIMEOUT` is the Escape key.
    pub fn timeout(&mut self, now: Instant) -> Option<Key> {
        let due = self.esc_deadline().is_some_and(|d| now >= d);
        if due && self.st == St::Esc {
            self.st = St::Ground;
            self.esc_at = None;
            return Some(Key::Esc);
        }
        None
    }

    fn byte(&mut self, b: u8, out: &mut Vec<Key>) {
        let st = std::mem::replace(&mut self.st, St::Ground);
        self.st = match st {
            St::Ground => {
                self.ground(b, out);
                return;
            }
            St::Paste(mut buf) => {
                buf.push(b);
                if buf.ends_with(PASTE_END) {
                    buf.truncate(buf.len() - PASTE_END.len());
                    out.push(Key::Paste(String::from_utf8_lossy(&buf).into_owned()));
                    St::Ground
                } else {
                    St::Paste(buf)
                }
            }
            St::Esc => match b {
                b'[' => St::Csi(Vec::new()),
                b'O' => St::Ss3,
                0x1b => {
                    out.push(Key::Esc);
                    St::Esc
                }
                _ => {
                    out.push(Key::Esc);
                    self.ground(b, out);
                    return;
                }
            },
            St::Csi(mut seq) => match b {
                0x20..=0x3f if seq.len() < 64 => {
                    seq.push(b);
                    St::Csi(seq)
                }
                0x40..=0x7e => {
                    if b == b'~' && seq == b"200" {
                        St::Paste(Vec::new())
                    } else {
                        let mut all = b"\x1b[".to_vec();
                        all.extend_from_slice(&seq);
                        all.push(b);
                        out.push(Key::Seq(all));
                        St::Ground
                    }
                }
                _ => {
                    // not a CSI after all: drop what we had and take the byte afresh
                    let mut all = b"\x1b[".to_vec();
                    all.extend_from_slice(&seq);
                    out.push(Key::Seq(all));
                    self.ground(b, out);
                    return;
                }
            },
            St::Ss3 => {
                out.push(Key::Seq(vec![0x1b, b'O', b]));
                St::Ground
            }
        };
    }

    fn ground(&mut self, b: u8, out: &mut Vec<Key>) {
        if !self.utf8.is_empty() {
            if b & 0xc0 == 0x80 {
                self.utf8.push(b);
                if self.utf8.len() == utf8_len(self.utf8[0]) {
                    let s = String::from_utf8_lossy(&self.utf8).into_owned();
                    out.extend(s.chars().map(Key::Char));
                    self.utf8.clear();
                }
                return;
            }
            out.push(Key::Char('\u{fffd}'));
            self.utf8.clear();
        }
        match b {
            0x1b => self.st = St::Esc,
            b'\r' => out.push(Key::Enter),
            b'\n' => out.push(Key::Newline),
            b'\t' => out.push(Key::Tab),
            0x7f | 0x08 => out.push(Key::Backspace),
            0x15 => out.push(Key::CtrlU),
            0x03 => out.push(Key::CtrlC),
            0x00..=0x1f => out.push(Key::Ctrl(b)),
            0x20..=0x7e => out.push(Key::Char(b as char)),
            0xc0..=0xf7 => self.utf8.push(b),
            _ => out.push(Key::Char('\u{fffd}')),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<Key> {
        let mut p = Parser::new();
        let t = Instant::now();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(p.feed(c, t));
        }
        out
    }

    #[test]
    fn text_enter_and_controls() {
        assert_eq!(
            all(&[b"hi\r\n\t\x7f\x15\x03"]),
            vec![
                Key::Char('h'),
                Key::Char('i'),
                Key::Enter,
                Key::Newline,
                Key::Tab,
                Key::Backspace,
                Key::CtrlU,
                Key::CtrlC
            ]
        );
    }

    #[test]
    fn paste_split_anywhere() {
        let whole = b"a\x1b[200~x\ry\n\tz\x1b[201~b".to_vec();
        for cut in 0..whole.len() {
            for cut2 in cut..whole.len() {
                let k = all(&[&whole[..cut], &whole[cut..cut2], &whole[cut2..]]);
                assert_eq!(
                    k,
                    vec![
                        Key::Char('a'),
                        Key::Paste("x\ry\n\tz".into()),
                        Key::Char('b')
                    ],
                    "cuts {cut} {cut2}"
                );
            }
        }
    }

    #[test]
    fn utf8_split() {
        let s = "❯é".as_bytes();
        for cut in 0..s.len() {
            assert_eq!(
                all(&[&s[..cut], &s[cut..]]),
                vec![Key::Char('❯'), Key::Char('é')]
            );
        }
    }

    #[test]
    fn arrows_are_sequences_and_lone_esc_times_out() {
        assert_eq!(
            all(&[b"\x1b[", b"A\x1bOBq"]),
            vec![
                Key::Seq(b"\x1b[A".to_vec()),
                Key::Seq(b"\x1bOB".to_vec()),
                Key::Char('q')
            ]
        );
        let mut p = Parser::new();
        let t = Instant::now();
        assert_eq!(p.feed(b"\x1b\x1b", t), vec![Key::Esc]);
        assert_eq!(p.timeout(t), None);
        assert_eq!(p.timeout(t + ESC_TIMEOUT), Some(Key::Esc));
        assert!(!p.mid_sequence());
    }
}
