//! Cell attributes: what `capture-pane -e` says about how each cell is drawn.
//!
//! An agent tells its placeholder from typed text by how it draws it (dim or
//! grey against the normal foreground), and draws its own cursor as a
//! reverse-video cell. [`parse_row`] turns one row of `capture-pane -e -p`
//! output into its plain text (what `capture-pane -p` prints) and the runs of
//! cells whose attributes are not the default, in display columns.

use crate::core::text;
use serde::Serialize;

/// A colour as the app set it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub enum Color {
    #[default]
    Default,
    /// A palette index: 0-15 the ANSI colours, 16-255 the 256-colour cube and greys.
    Idx(u8),
    Rgb(u8, u8, u8),
}

impl Color {
    /// A grey that is neither black nor white: palette 8 ("bright black"), the
    /// grey ramp 239-252, or an RGB colour with equal parts of middle brightness.
    /// Agents draw placeholders in such a grey (Gemini CLI: 248).
    pub fn is_grey(self) -> bool {
        match self {
            Color::Default => false,
            // 232-238 (#080808-#444444) are near black: a light theme's typed
            // text under 256 colours (GitHub Light's #24292e is 235), not a grey
            Color::Idx(i) => i == 8 || (239..=252).contains(&i),
            Color::Rgb(r, g, b) => {
                let (lo, hi) = (r.min(g).min(b), r.max(g).max(b));
                hi - lo <= 12 && (72..=212).contains(&hi)
            }
        }
    }
}

/// How one cell is drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Style {
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub reverse: bool,
    pub fg: Color,
    pub bg: Color,
}

impl Style {
    /// Whether the cell has the named attribute: `dim`, `grey` (a grey
    /// foreground), `italic`, `bold`, `reverse`, `underline`, `fg:N`
    /// (palette index N) or `bg:N`. Unknown names are refused when a profile
    /// loads ([`is_known`]).
    pub fn has(&self, name: &str) -> bool {
        match name {
            "dim" => self.dim,
            "grey" | "gray" => self.fg.is_grey(),
            "italic" => self.italic,
            "bold" => self.bold,
            "reverse" => self.reverse,
            "underline" => self.underline,
            _ => {
                let idx = |p: &str| name.strip_prefix(p).and_then(|n| n.parse::<u8>().ok());
                if let Some(i) = idx("fg:") {
                    self.fg == Color::Idx(i)
                } else if let Some(i) = idx("bg:") {
                    self.bg == Color::Idx(i)
                } else {
                    false
                }
            }
        }
    }

    /// Short words for `explain`: `dim reverse fg=248`; `plain` for the default.
    pub fn describe(&self) -> String {
        let mut w: Vec<String> = Vec::new();
        for (on, n) in [
            (self.bold, "bold"),
            (self.dim, "dim"),
            (self.italic, "italic"),
            (self.underline, "underline"),
            (self.reverse, "reverse"),
        ] {
            if on {
                w.push(n.into());
            }
        }
        for (c, n) in [(self.fg, "fg"), (self.bg, "bg")] {
            match c {
                Color::Default => {}
                Color::Idx(i) => w.push(format!("{n}={i}")),
                Color::Rgb(r, g, b) => w.push(format!("{n}=#{r:02x}{g:02x}{b:02x}")),
            }
        }
        if w.is_empty() {
            "plain".into()
        } else {
            w.join(" ")
        }
    }
}

/// An attribute name a profile may use in `placeholder_style`.
pub fn is_known(name: &str) -> bool {
    matches!(
        name,
        "dim" | "grey" | "gray" | "italic" | "bold" | "reverse" | "underline"
    ) || ["fg:", "bg:"].iter().any(|p| {
        name.strip_prefix(p)
            .is_some_and(|n| n.parse::<u8>().is_ok())
    })
}

/// Cells `col .. col + len` (display columns) are drawn with `style`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Span {
    pub col: usize,
    pub len: usize,
    pub style: Style,
}

/// One row of `capture-pane -e -p`: its plain text (trailing blanks trimmed, as
/// `capture-pane -p`) and the runs of non-default cells. SGR sequences set the
/// style; every other escape (other CSI, OSC such as hyperlinks) is skipped.
pub fn parse_row(row: &str) -> (String, Vec<Span>) {
    let mut plain = String::with_capacity(row.len());
    let mut spans: Vec<Span> = Vec::new();
    let mut style = Style::default();
    let mut col = 0usize;
    let mut chars = row.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c == '\x1b' {
            match chars.peek().map(|&(_, c)| c) {
                Some('[') => {
                    chars.next();
                    let mut params = String::new();
                    let mut fin = None;
                    for (_, c) in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            fin = Some(c);
                            break;
                        }
                        params.push(c);
                    }
                    if fin == Some('m') {
                        apply_sgr(&mut style, &params);
                    }
                }
                Some(']') | Some('P') | Some('_') | Some('^') => {
                    // a string up to BEL or ST (ESC \)
                    chars.next();
                    while let Some((_, c)) = chars.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' && chars.peek().map(|&(_, c)| c) == Some('\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                Some(_) => {
                    chars.next();
                }
                None => {}
            }
            continue;
        }
        if c == '\r' {
            continue;
        }
        let w = text::width(c.encode_utf8(&mut [0; 4]));
        if style != Style::default() && w > 0 {
            match spans.last_mut() {
                Some(last) if last.style == style && last.col + last.len == col => last.len += w,
                _ => spans.push(Span { col, len: w, style }),
            }
        }
        plain.push(c);
        col += w;
    }
    let trimmed = plain.trim_end_matches(' ').len();
    plain.truncate(trimmed);
    (plain, spans)
}

fn apply_sgr(st: &mut Style, params: &str) {
    // `38:5:248` (colon sub-parameters) and `38;5;248` both name a colour
    let mut groups: Vec<Vec<u16>> = Vec::new();
    for g in params.split(';') {
        groups.push(
            g.split(':')
                .map(|n| n.parse::<u16>().unwrap_or(0))
                .collect(),
        );
    }
    if params.is_empty() {
        groups = vec![vec![0]];
    }
    let mut i = 0;
    while i < groups.len() {
        let g = &groups[i];
        let n = g[0];
        let color = |i: &mut usize| -> Color {
            // sub-parameters first, then the `;` form
            let sub: Vec<u16> = if g.len() > 1 {
                g[1..].to_vec()
            } else {
                let rest: Vec<u16> = groups[*i + 1..].iter().map(|g| g[0]).collect();
                let take = match rest.first() {
                    Some(5) => 2,
                    Some(2) => 4,
                    _ => 1,
                }
                .min(rest.len());
                *i += take;
                rest[..take].to_vec()
            };
            match sub.as_slice() {
                [5, n, ..] => Color::Idx(*n as u8),
                // `38:2::r:g:b` carries a colour-space id before the parts
                [2, _, r, g, b, ..] => Color::Rgb(*r as u8, *g as u8, *b as u8),
                [2, r, g, b] => Color::Rgb(*r as u8, *g as u8, *b as u8),
                _ => Color::Default,
            }
        };
        match n {
            0 => *st = Style::default(),
            1 => st.bold = true,
            2 => st.dim = true,
            3 => st.italic = true,
            4 => st.underline = g.get(1).is_none_or(|&s| s != 0),
            7 => st.reverse = true,
            21 | 24 => st.underline = false,
            22 => {
                st.bold = false;
                st.dim = false;
            }
            23 => st.italic = false,
            27 => st.reverse = false,
            30..=37 => st.fg = Color::Idx((n - 30) as u8),
            38 => st.fg = color(&mut i),
            39 => st.fg = Color::Default,
            40..=47 => st.bg = Color::Idx((n - 40) as u8),
            48 => st.bg = color(&mut i),
            49 => st.bg = Color::Default,
            90..=97 => st.fg = Color::Idx((n - 90 + 8) as u8),
            100..=107 => st.bg = Color::Idx((n - 100 + 8) as u8),
            _ => {}
        }
        i += 1;
    }
}

/// Whole `capture-pane -e -p` output: rows of plain text and their spans.
pub fn parse_grid(grid: &str) -> (Vec<String>, Vec<Vec<Span>>) {
    grid.lines().map(parse_row).unzip()
}

/// The style of cell `x` in a row's spans (the default where none covers it).
pub fn style_at(spans: &[Span], x: usize) -> Style {
    spans
        .iter()
        .find(|s| s.col <= x && x < s.col + s.len)
        .map(|s| s.style)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_after_error_placeholder() {
        let (t, s) = parse_row(
            "\x1b[39m❯\u{a0}\x1b[7mR\x1b[0;2m\x1b[39m\x1b[49mesend your message to try again",
        );
        assert_eq!(t, "❯\u{a0}Resend your message to try again");
        assert!(style_at(&s, 2).reverse);
        assert!(style_at(&s, 3).dim && !style_at(&s, 3).reverse);
        assert_eq!(style_at(&s, 0), Style::default());
    }

    #[test]
    fn gemini_grey_placeholder_and_white_text() {
        let (t, s) = parse_row(
            " \x1b[38;5;183m> \x1b[7m\x1b[39m \x1b[0m\x1b[38;5;248m\x1b[48;5;240m Type your message\x1b[39m",
        );
        assert_eq!(t, " >   Type your message");
        assert!(style_at(&s, 3).reverse);
        assert!(style_at(&s, 6).fg.is_grey());
        let (_, s) = parse_row(" \x1b[38;5;183m> \x1b[38;5;231mhello\x1b[7m\x1b[39m \x1b[0m");
        assert!(!style_at(&s, 3).fg.is_grey());
        assert_eq!(style_at(&s, 3).fg, Color::Idx(231));
    }

    #[test]
    fn colours_in_every_form_and_other_escapes_skipped() {
        let (t, s) = parse_row(
            "\x1b]8;;http://x\x1b\\a\x1b]8;;\x07\x1b[38:5:8mb\x1b[38;2;128;128;130mc\x1b[38:2::9:9:9md\x1b[1;2;22me\x1b[92mf\x1b[K",
        );
        assert_eq!(t, "abcdef");
        assert_eq!(style_at(&s, 0), Style::default());
        assert_eq!(style_at(&s, 1).fg, Color::Idx(8));
        assert_eq!(style_at(&s, 2).fg, Color::Rgb(128, 128, 130));
        assert!(style_at(&s, 2).fg.is_grey());
        assert_eq!(style_at(&s, 3).fg, Color::Rgb(9, 9, 9));
        assert!(!style_at(&s, 4).dim && !style_at(&s, 4).bold);
        assert_eq!(style_at(&s, 5).fg, Color::Idx(10));
    }

    #[test]
    fn wide_cells_count_two_columns() {
        let (t, s) = parse_row("界\x1b[2mx");
        assert_eq!(t, "界x");
        assert_eq!(s[0].col, 2);
    }

    #[test]
    fn hostile_escapes_never_panic() {
        for r in [
            "\x1b",
            "\x1b[",
            "\x1b[38;5",
            "\x1b[38;2;1",
            "\x1b[48:2",
            "\x1b]unterminated",
            "\x1b[999999999999m",
        ] {
            let _ = parse_row(r);
        }
    }
}
