//! The input box's contents: typed text and paste placeholders.
//!
//! The insertion point is always at the end (arrow keys are ignored), so a
//! list of pieces is enough: what is shown uses each paste's label, what is
//! submitted uses each paste's content.

use super::Like;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Paste { label: String, content: String },
}

#[derive(Debug, Clone, Default)]
pub struct InputBox {
    pieces: Vec<Piece>,
    /// Pastes shown as a placeholder so far (claude numbers them `#N`).
    pastes: usize,
}

impl InputBox {
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    pub fn clear(&mut self) {
        self.pieces.clear();
    }

    pub fn push_str(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        match self.pieces.last_mut() {
            Some(Piece::Text(t)) => t.push_str(s),
            _ => self.pieces.push(Piece::Text(s.to_string())),
        }
    }

    pub fn push_char(&mut self, c: char) {
        let mut b = [0u8; 4];
        self.push_str(c.encode_utf8(&mut b));
    }

    /// Delete the last character, or the whole last paste placeholder.
    pub fn backspace(&mut self) {
        match self.pieces.last_mut() {
            Some(Piece::Text(t)) => {
                t.pop();
                if t.is_empty() {
                    self.pieces.pop();
                }
            }
            Some(Piece::Paste { .. }) => {
                self.pieces.pop();
            }
            None => {}
        }
    }

    /// A bracketed paste: CR, LF and CRLF become newlines; long ones become a placeholder.
    pub fn paste(&mut self, like: Like, raw: &str) {
        let content = raw.replace("\r\n", "\n").replace('\r', "\n");
        let chars = content.chars().count();
        let newlines = content.matches('\n').count();
        let label = match like {
            Like::Claude if chars > 800 || newlines > 2 => {
                self.pastes += 1;
                Some(if newlines > 0 {
                    format!("[Pasted text #{} +{newlines} lines]", self.pastes)
                } else {
                    format!("[Pasted text #{}]", self.pastes)
                })
            }
            Like::Codex if chars > 1000 => Some(format!("[Pasted Content {chars} chars]")),
            Like::Gemini if newlines + 1 > 5 => {
                Some(format!("[Pasted Text: {} lines]", newlines + 1))
            }
            Like::Gemini if chars > 500 => Some(format!("[Pasted Text: {chars} chars]")),
            // OpenCode 1.18.33 folds a paste of 3+ lines or over 150 chars
            Like::Opencode if newlines >= 2 || chars > 150 => {
                Some(format!("[Pasted ~{} lines]", newlines + 1))
            }
            _ => None,
        };
        match label {
            Some(label) => self.pieces.push(Piece::Paste { label, content }),
            None => self.push_str(&content),
        }
    }

    /// What is submitted: the exact text, pastes expanded.
    pub fn text(&self) -> String {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.as_str(),
                Piece::Paste { content, .. } => content.as_str(),
            })
            .collect()
    }

    /// What the box shows: pastes as their placeholder.
    pub fn display(&self) -> String {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.as_str(),
                Piece::Paste { label, .. } => label.as_str(),
            })
            .collect()
    }

    pub fn has_placeholder(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Paste { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_per_agent() {
        let big = "x".repeat(1200);
        let mut c = InputBox::default();
        c.paste(Like::Claude, "a\rb\r\nc");
        assert_eq!(c.display(), "a\nb\nc");
        c.paste(Like::Claude, "1\n2\n3\n4");
        assert_eq!(c.display(), "a\nb\nc[Pasted text #1 +3 lines]");
        assert_eq!(c.text(), "a\nb\nc1\n2\n3\n4");
        c.backspace();
        assert_eq!(c.text(), "a\nb\nc");
        let mut c = InputBox::default();
        c.paste(Like::Codex, &big);
        assert_eq!(c.display(), "[Pasted Content 1200 chars]");
        let mut c = InputBox::default();
        c.paste(Like::Gemini, "1\n2\n3\n4\n5\n6");
        assert_eq!(c.display(), "[Pasted Text: 6 lines]");
        let mut c = InputBox::default();
        c.paste(Like::Gemini, &big);
        assert_eq!(c.display(), "[Pasted Text: 1200 chars]");
        assert!(c.has_placeholder());
    }

    #[test]
    fn exact_text_kept() {
        let mut c = InputBox::default();
        c.push_str("a\tb  ");
        c.push_char('\n');
        assert_eq!(c.text(), "a\tb  \n");
        c.backspace();
        c.backspace();
        assert_eq!(c.text(), "a\tb ");
    }
}
