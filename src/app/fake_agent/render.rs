//! Screens: what each agent look-alike draws, as whole frames of rows, and a
//! painter that sends only the rows that changed.
//!
//! Geometry and glyphs follow the real captures in `fixtures/` (see
//! `fixtures/README.md`), so the built-in profiles classify these frames the
//! way they classify the real agents.

use super::composer::InputBox;
use super::{DialogKind, Like};
use crate::core::text::width;
use unicode_width::UnicodeWidthChar;

/// One thing in the transcript area.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A submitted message (the full text).
    Echo(String),
    Reply(String),
    Interrupted,
    /// A turn that failed (`--fail-turns`): the agent's API error line.
    Failed,
}

/// Which start-up picture, or the real screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// A composer-looking frame that must not pass the profile's geometry rules.
    Flash,
    Main,
}

/// Everything a frame depends on.
pub struct View<'a> {
    pub like: Like,
    pub w: usize,
    pub h: usize,
    pub cwd: &'a str,
    pub stage: Stage,
    pub dialog: Option<DialogKind>,
    pub history: &'a [Entry],
    pub composer: &'a InputBox,
    pub queue: &'a [String],
    /// Milliseconds since the busy period began; `None` when idle.
    pub busy_ms: Option<u64>,
    /// Animation counter (one step per ~80 ms).
    pub tick: u64,
    /// Show the "press Esc again to clear" hint.
    pub esc_hint: bool,
    pub title: Option<&'a str>,
    /// The last turn failed and nothing was submitted since (`--fail-turns`):
    /// claude shows its after-error placeholder in an empty box.
    pub after_error: bool,
    /// The start-up banner has landed (`--start-jump-ms`; gemini draws none before).
    pub banner: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Exactly `h` rows, each at most `w` cells.
    pub rows: Vec<String>,
    /// (x, y), 0-based.
    pub cursor: (usize, usize),
    pub cursor_visible: bool,
    /// `None`: leave the pane title alone.
    pub title: Option<String>,
    /// SGR attributes drawn over parts of rows (plain `rows` keep the text).
    pub styles: Vec<SgrSpan>,
}

/// An SGR attribute (`sgr`, e.g. `2` dim, `7` reverse) over the cells `from..to`
/// of row `row` (`to` = `usize::MAX`: to the end of the row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SgrSpan {
    pub row: usize,
    pub from: usize,
    pub to: usize,
    pub sgr: &'static str,
}

/// Claude 2.1.332's placeholder in an empty box after a failed turn, drawn dim
/// after a reverse-video first letter (its cursor).
pub const CLAUDE_AFTER_ERROR: &str = "Resend your message to try again";
/// Claude's placeholder in an empty box while messages wait in its queue.
pub const CLAUDE_QUEUED: &str = "Press up to edit queued messages";

/// `row` with the styles of that row applied (cells outside every style plain).
pub fn styled(row: &str, styles: &[&SgrSpan]) -> String {
    if styles.is_empty() {
        return row.to_string();
    }
    let mut out = String::new();
    let mut col = 0;
    let mut cur: Option<&str> = None;
    for c in row.chars() {
        let want = styles
            .iter()
            .find(|s| col >= s.from && col < s.to)
            .map(|s| s.sgr);
        if want != cur {
            if cur.is_some() {
                out.push_str("\x1b[0m");
            }
            if let Some(g) = want {
                out.push_str(&format!("\x1b[{g}m"));
            }
            cur = want;
        }
        out.push(c);
        col += c.width().unwrap_or(0);
    }
    if cur.is_some() {
        out.push_str("\x1b[0m");
    }
    out
}

pub const CLAUDE_SPIN: [char; 5] = ['✻', '✽', '✶', '✳', '✢'];
pub const GEMINI_SPIN: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const CLAUDE_TITLE_SPIN: [char; 2] = ['⠐', '⠂'];
pub const GEMINI_PLACEHOLDER: &str = "Type your message or @path/to/file";
pub const CODEX_PLACEHOLDER: &str = "Ask Codex to do anything";
pub const OPENCODE_PLACEHOLDER: &str = "Ask anything… \"Fix a TODO in the codebase\"";

// ---------------------------------------------------------------- text helpers

/// Cut `s` to at most `w` cells.
pub fn cut(s: &str, w: usize) -> String {
    if width(s) <= w {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if used + cw > w {
            break;
        }
        used += cw;
        out.push(c);
    }
    out
}

/// Pad (or cut) `s` to exactly `w` cells.
fn pad(s: &str, w: usize) -> String {
    let s = cut(s, w);
    let n = w - width(&s);
    format!("{s}{}", " ".repeat(n))
}

fn rule(w: usize) -> String {
    "─".repeat(w)
}

/// `left`, then `right` flush with the right edge (one cell margin).
fn right(left: &str, right: &str, w: usize) -> String {
    if right.is_empty() {
        return left.to_string();
    }
    let gap = w.saturating_sub(width(left) + width(right) + 1).max(1);
    format!("{left}{}{right}", " ".repeat(gap))
}

/// Split on newlines and hard-wrap each line to `avail` cells (tabs as 4 spaces).
pub fn wrap(text: &str, avail: usize) -> Vec<String> {
    let avail = avail.max(1);
    let mut out = Vec::new();
    for line in text.split('\n') {
        let mut cur = String::new();
        let mut used = 0;
        let mut pushed = false;
        let shown = line.chars().flat_map(|c| match c {
            '\t' => vec![' '; 4],
            c if (c as u32) < 0x20 || c == '\u{7f}' => vec!['?'],
            c => vec![c],
        });
        for c in shown {
            let cw = c.width().unwrap_or(0);
            if used + cw > avail && used > 0 {
                out.push(std::mem::take(&mut cur));
                used = 0;
                pushed = true;
            }
            cur.push(c);
            used += cw;
        }
        if !cur.is_empty() || !pushed {
            out.push(cur);
        }
    }
    out
}

/// `first` + the first row, `cont` + each further row.
fn prefixed(out: &mut Vec<String>, first: &str, cont: &str, text: &str, w: usize) {
    let avail = w.saturating_sub(width(first));
    for (i, l) in wrap(text, avail).into_iter().enumerate() {
        out.push(format!("{}{l}", if i == 0 { first } else { cont }));
    }
}

/// Word-wrap a paragraph, each row starting with `indent`.
fn para(indent: &str, text: &str, w: usize) -> Vec<String> {
    let lead = text.len() - text.trim_start_matches(' ').len();
    let indent = &format!("{indent}{}", &text[..lead]);
    let text = &text[lead..];
    let avail = w.saturating_sub(width(indent)).max(10);
    let mut out = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        if !cur.is_empty() && width(&cur) + 1 + width(word) > avail {
            out.push(format!("{indent}{cur}"));
            cur.clear();
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    out.push(format!("{indent}{cur}"));
    out
}

fn secs(ms: u64) -> String {
    let s = ms / 1000;
    if s >= 60 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// The input block: rows, and the cursor (x, row index within the block).
struct Block {
    rows: Vec<String>,
    cx: usize,
    crow: usize,
}

fn block(
    display: &str,
    placeholder: &str,
    first: &str,
    cont: &str,
    w: usize,
    max_rows: usize,
) -> Block {
    let pw = width(first);
    if display.is_empty() {
        return Block {
            rows: vec![format!("{first}{placeholder}")],
            cx: pw,
            crow: 0,
        };
    }
    let mut lines = wrap(display, w.saturating_sub(pw));
    if pw + lines.last().map(|l| width(l)).unwrap_or(0) >= w {
        lines.push(String::new());
    }
    let cx = pw + width(lines.last().map(String::as_str).unwrap_or(""));
    let max_rows = max_rows.max(1);
    if lines.len() > max_rows {
        lines.drain(..lines.len() - max_rows);
    }
    let rows: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{}{l}", if i == 0 { first } else { cont }))
        .collect();
    let crow = rows.len() - 1;
    Block { rows, cx, crow }
}

/// Keep the last `h` rows (moving the cursor with them), pad to `h`, cut to `w`.
fn fit(
    mut rows: Vec<String>,
    mut cursor: (usize, usize),
    w: usize,
    h: usize,
) -> (Vec<String>, (usize, usize)) {
    if rows.len() > h {
        let off = rows.len() - h;
        rows.drain(..off);
        cursor.1 = cursor.1.saturating_sub(off);
    }
    rows.resize(h, String::new());
    let rows = rows.iter().map(|r| cut(r, w)).collect();
    cursor.0 = cursor.0.min(w.saturating_sub(1));
    cursor.1 = cursor.1.min(h.saturating_sub(1));
    (rows, cursor)
}

// ---------------------------------------------------------------- frames

pub fn frame(v: &View) -> Frame {
    let (rows, cursor, visible) = match (v.like, v.stage) {
        (Like::Claude, Stage::Flash) => claude_flash(v),
        (Like::Codex, Stage::Flash) => codex_flash(v),
        (Like::Gemini, Stage::Flash) => gemini_flash(v),
        (Like::Claude, Stage::Main) => claude(v),
        (Like::Codex, Stage::Main) => codex(v),
        (Like::Gemini, Stage::Main) => gemini(v),
        (Like::Opencode, Stage::Flash) => opencode_flash(v),
        (Like::Opencode, Stage::Main) => opencode(v),
    };
    let (rows, cursor) = fit(rows, cursor, v.w, v.h);
    // Placeholders are drawn as the real agents draw them (`capture-pane -e`):
    // claude dim after its reverse-video cursor cell, codex dim, gemini grey
    // (248 on 240) after its reverse-video cursor cell.
    let mut styles = Vec::new();
    for (y, row) in rows.iter().enumerate() {
        let pad = width(row) - width(row.trim_start());
        let drawn: Vec<(usize, usize, &'static str)> = match v.like {
            Like::Claude
                if [CLAUDE_AFTER_ERROR, CLAUDE_QUEUED]
                    .iter()
                    .any(|ph| *row == format!("❯\u{a0}{ph}")) =>
            {
                vec![(2, 3, "7"), (3, usize::MAX, "2")]
            }
            Like::Codex if *row == format!("› {CODEX_PLACEHOLDER}") => vec![(2, usize::MAX, "2")],
            Like::Gemini if *row == format!(" >   {GEMINI_PLACEHOLDER}") => {
                vec![(3, 4, "7"), (4, usize::MAX, "38;5;248;48;5;240")]
            }
            // opencode: grey (palette 8) after the bar
            Like::Opencode if row.trim_start() == format!("┃  {OPENCODE_PLACEHOLDER}") => {
                vec![(pad + 3, usize::MAX, "38;5;8")]
            }
            _ => Vec::new(),
        };
        for (from, to, sgr) in drawn {
            styles.push(SgrSpan {
                row: y,
                from,
                to,
                sgr,
            });
        }
    }
    Frame {
        rows,
        cursor,
        cursor_visible: visible,
        title: title(v),
        styles,
    }
}

fn title(v: &View) -> Option<String> {
    if let Some(t) = v.title {
        return Some(t.to_string());
    }
    if v.stage == Stage::Flash {
        return None;
    }
    let busy = v.busy_ms.is_some();
    match v.like {
        Like::Claude => {
            let full_screen = v.dialog.is_some_and(|d| d != DialogKind::Permission);
            if full_screen {
                None
            } else if busy {
                let g = CLAUDE_TITLE_SPIN[(v.tick / 2) as usize % CLAUDE_TITLE_SPIN.len()];
                Some(format!("{g} Claude Code"))
            } else {
                Some("✳ Claude Code".into())
            }
        }
        Like::Gemini => Some(if busy {
            "✦  Working… (fake)".into()
        } else {
            "◇  Ready (fake)".into()
        }),
        Like::Codex => None,
        Like::Opencode => Some("OpenCode".into()),
    }
}

/// Rows drawn during `--flicker`: the banner, then filler down to half the screen.
pub fn flicker_rows(v: &View) -> Vec<String> {
    let mut rows = match v.like {
        Like::Claude => claude_banner(v.w, v.cwd),
        Like::Codex => codex_header(v.cwd),
        Like::Gemini => gemini_header(),
        Like::Opencode => opencode_logo(v.w),
    };
    while rows.len() < v.h / 2 {
        rows.push(".".repeat(v.w / 2));
    }
    rows.truncate((v.h / 2).max(1));
    rows.iter().map(|r| cut(r, v.w)).collect()
}

type Out = (Vec<String>, (usize, usize), bool);

// ---------------------------------------------------------------- claude

fn claude_banner(w: usize, cwd: &str) -> Vec<String> {
    let inner = w.saturating_sub(2);
    let t = " Claude Code v2.1.197 (promptgate fake-agent) ";
    let top = format!("╭───{t}{}╮", "─".repeat(inner.saturating_sub(3 + width(t))));
    let line = |s: &str| format!("│{}│", pad(s, inner));
    let welcome = "Welcome back!";
    let lpad = inner.saturating_sub(width(welcome)) / 2;
    vec![
        top,
        line(""),
        line(&format!("{}{welcome}", " ".repeat(lpad))),
        line(""),
        line("   fake-model · API Usage Billing"),
        line(&format!("   {cwd}")),
        line(""),
        format!("╰{}╯", "─".repeat(inner)),
    ]
}

fn claude_history(v: &View, rows: &mut Vec<String>) {
    for e in v.history {
        match e {
            Entry::Echo(t) => prefixed(rows, "❯ ", "  ", t, v.w),
            Entry::Reply(t) => rows.push(format!("● {t}")),
            Entry::Interrupted => {
                rows.push("  ⎿  Interrupted · What should Claude do instead?".into())
            }
            Entry::Failed => rows.push(
                "● API Error: Can't reach the API server (promptgate fake-agent --fail-turns)"
                    .into(),
            ),
        }
        rows.push(String::new());
    }
}

fn claude(v: &View) -> Out {
    let w = v.w;
    match v.dialog {
        Some(d) if d != DialogKind::Permission => {
            let (rows, cursor) = claude_full_dialog(d, w, v.cwd);
            return (rows, cursor, false);
        }
        _ => {}
    }
    let mut rows = claude_banner(w, v.cwd);
    rows.push(String::new());
    rows.push(String::new());
    claude_history(v, &mut rows);
    if v.dialog == Some(DialogKind::Permission) {
        let top = rows.len();
        let (d, crow) = claude_permission(w);
        rows.extend(d);
        return (rows, (1, top + crow), false);
    }
    if let Some(ms) = v.busy_ms {
        let g = CLAUDE_SPIN[v.tick as usize % CLAUDE_SPIN.len()];
        rows.push(format!("{g} Pondering… ({})", secs(ms)));
        rows.push(String::new());
    }
    // queued messages sit directly above the box, under the spinner
    for q in v.queue {
        prefixed(&mut rows, "  ❯ ", "    ", q, w);
    }
    rows.push(rule(w));
    let placeholder = if v.composer.is_empty() && !v.queue.is_empty() {
        CLAUDE_QUEUED
    } else if v.composer.is_empty() && v.after_error && v.busy_ms.is_none() {
        CLAUDE_AFTER_ERROR
    } else {
        ""
    };
    let b = block(
        &v.composer.display(),
        placeholder,
        "❯\u{a0}",
        "  ",
        w,
        v.h.saturating_sub(6),
    );
    let cursor = (b.cx, rows.len() + b.crow);
    rows.extend(b.rows);
    rows.push(rule(w));
    rows.push(
        if v.busy_ms.is_some() {
            "  esc to interrupt"
        } else if v.esc_hint {
            "  Esc again to clear"
        } else if v.composer.is_empty() {
            "  ? for shortcuts"
        } else {
            ""
        }
        .into(),
    );
    rows.push(String::new());
    (rows, cursor, false)
}

fn claude_flash(v: &View) -> Out {
    let mut rows = claude_banner(v.w, v.cwd);
    rows.push(String::new());
    rows.push(String::new());
    rows.push(rule(v.w));
    // an ASCII space, not U+00A0: this is not the real input box
    let cursor = (2, rows.len());
    rows.push("❯ ".into());
    rows.push(rule(v.w));
    rows.push("  ? for shortcuts".into());
    (rows, cursor, false)
}

/// Full-screen claude dialogs: rows and the (hidden) cursor on the `❯`.
fn claude_full_dialog(d: DialogKind, w: usize, cwd: &str) -> (Vec<String>, (usize, usize)) {
    let mut rows = vec![String::new(), rule(w)];
    let mut cursor = (1, 0);
    match d {
        DialogKind::Trust | DialogKind::None | DialogKind::Permission => {
            rows.push(" Accessing workspace:".into());
            rows.push(String::new());
            rows.push(format!(" {cwd}"));
            rows.push(String::new());
            rows.extend(para(
                " ",
                "Quick safety check: Is this a project you created or one you trust? (Like your own code, a well-known open source project, or work from your team). If not, take a moment to review what's in this folder first.",
                w,
            ));
            rows.push(String::new());
            rows.push(" Claude Code'll be able to read, edit, and execute files here.".into());
            rows.push(String::new());
            rows.push(" Security guide".into());
            rows.push(String::new());
            cursor.1 = rows.len();
            rows.push(" ❯ 1. Yes, I trust this folder".into());
            rows.push("   2. No, exit".into());
            rows.push(String::new());
            rows.push(" Enter to confirm · Esc to cancel".into());
        }
        DialogKind::ApiKey => {
            rows.push("  Detected a custom API key in your environment".into());
            rows.push(String::new());
            rows.push("  ANTHROPIC_API_KEY: sk-ant-...promptgate-fake-agent".into());
            rows.push(String::new());
            rows.push("  Do you want to use this API key?".into());
            rows.push(String::new());
            rows.push("    1. Yes".into());
            cursor = (2, rows.len());
            rows.push("  ❯ 2. No (recommended)".into());
            rows.push(String::new());
            rows.push("  Enter to confirm · Esc to cancel".into());
        }
        DialogKind::Onboarding => {
            rows = vec![
                "Welcome to Claude Code v2.1.197 (promptgate fake-agent)".into(),
                ".".repeat(w.min(58)),
                String::new(),
                " Let's get started.".into(),
                String::new(),
                " Choose the text style that looks best with your terminal".into(),
                " To change this later, run /theme".into(),
                String::new(),
                "   1. Auto (match terminal)".into(),
            ];
            cursor.1 = rows.len();
            rows.push(" ❯ 2. Dark mode".into());
            rows.push("   3. Light mode".into());
            rows.push("   4. Dark mode (colorblind-friendly)".into());
            rows.push("   5. Light mode (colorblind-friendly)".into());
        }
    }
    (rows, cursor)
}

/// The permission prompt that replaces claude's input box; rows and the `❯` row.
fn claude_permission(w: usize) -> (Vec<String>, usize) {
    let rows: Vec<String> = vec![
        rule(w),
        " Bash command".into(),
        String::new(),
        "   echo 'promptgate fake-agent'".into(),
        "   Print a line (fake tool call)".into(),
        String::new(),
        " Do you want to proceed?".into(),
        " ❯ 1. Yes".into(),
        "   2. Yes, and don't ask again for echo commands in this project".into(),
        "   3. No, and tell Claude what to do differently (esc)".into(),
        String::new(),
    ];
    (rows, 7)
}

// ---------------------------------------------------------------- codex

fn codex_header(cwd: &str) -> Vec<String> {
    vec![
        String::new(),
        "  >_ OpenAI Codex (v0.171.0) (promptgate fake-agent)".into(),
        format!("     {cwd}"),
        String::new(),
        String::new(),
    ]
}

fn codex(v: &View) -> Out {
    let (w, h) = (v.w, v.h);
    if let Some(d) = v.dialog.filter(|d| *d != DialogKind::Permission) {
        return (
            codex_full_dialog(d, w, v.cwd),
            (1, h.saturating_sub(3)),
            false,
        );
    }
    let mut top = codex_header(v.cwd);
    for e in v.history {
        match e {
            Entry::Echo(t) => prefixed(&mut top, "› ", "  ", t, w),
            Entry::Reply(t) => top.push(format!("• {t}")),
            Entry::Interrupted => top
                .push("■ Conversation interrupted - tell the model what to do differently.".into()),
            Entry::Failed => top.push(
                "■ stream error: error sending request (promptgate fake-agent --fail-turns)".into(),
            ),
        }
        top.push(String::new());
    }
    let mut bottom: Vec<String> = Vec::new();
    let (cursor_in_bottom, visible);
    if v.dialog == Some(DialogKind::Permission) {
        bottom.extend(codex_permission(w));
        cursor_in_bottom = (1, bottom.len() - 1);
        visible = false;
    } else {
        if let Some(ms) = v.busy_ms {
            let g = if (v.tick / 6).is_multiple_of(2) {
                '•'
            } else {
                '◦'
            };
            bottom.push(format!("{g} Working ({} • esc to interrupt)", secs(ms)));
            if !v.queue.is_empty() {
                bottom.push("• Queued follow-up inputs".into());
                for q in v.queue {
                    prefixed(&mut bottom, "  ↳ ", "    ", q, w);
                }
            }
            bottom.push(String::new());
            bottom.push(String::new());
        }
        let max = h.saturating_sub(5 + bottom.len());
        let b = block(&v.composer.display(), CODEX_PLACEHOLDER, "› ", "  ", w, max);
        cursor_in_bottom = (b.cx, bottom.len() + b.crow);
        bottom.extend(b.rows);
        bottom.push(String::new());
        bottom.push(format!("  fake-model default · {}", v.cwd));
        bottom.push(if v.composer.is_empty() {
            "  ← for agents · ? for shortcuts".into()
        } else {
            String::new()
        });
        visible = true;
    }
    let avail = h.saturating_sub(bottom.len());
    if top.len() > avail {
        top.drain(..top.len() - avail);
    }
    top.resize(avail, String::new());
    let cursor = (cursor_in_bottom.0, top.len() + cursor_in_bottom.1);
    top.extend(bottom);
    (top, cursor, visible)
}

fn codex_flash(v: &View) -> Out {
    let h = v.h.max(4);
    let mut rows = vec![String::new(); h];
    // the loading layout: composer on row h-3, short footer; not ready
    rows[h - 3] = format!("› {CODEX_PLACEHOLDER}");
    rows[h - 1] = "  ? for shortcuts".into();
    (rows, (2, h - 3), true)
}

fn codex_full_dialog(d: DialogKind, w: usize, cwd: &str) -> Vec<String> {
    let mut rows = vec![String::new()];
    match d {
        DialogKind::Trust | DialogKind::None | DialogKind::Permission => {
            rows.push("  Folder access".into());
            rows.push(format!("  {cwd}"));
            rows.push(String::new());
            rows.extend(para(
                "  ",
                "Trust this folder? Codex can read, edit, and run files here, subject to your permission settings. Folder settings can run code automatically, even without a model request. Continue only if you trust these files. Your trust decision will be saved.",
                w,
            ));
            rows.push(String::new());
            rows.push("› 1. Trust and continue".into());
            rows.push("  2. Back to Agent Command Center".into());
            rows.push(String::new());
            rows.push("  enter continue · esc back".into());
        }
        DialogKind::ApiKey => {
            rows = vec![
                "  Welcome to Codex, OpenAI's command-line coding agent".into(),
                String::new(),
                "> Use your own OpenAI API key for usage-based billing".into(),
                String::new(),
                "  Paste or type your API key below.".into(),
                String::new(),
                format!("╭API key{}╮", "─".repeat(w.saturating_sub(9))),
                format!("│{}│", pad("sk-promptgate-fake-agent", w.saturating_sub(2))),
                format!("╰{}╯", "─".repeat(w.saturating_sub(2))),
                "  Press enter to save".into(),
                "  Press esc to go back".into(),
            ];
        }
        DialogKind::Onboarding => {
            rows = vec![
                "  Welcome to Codex, OpenAI's command-line coding agent".into(),
                String::new(),
                "  Choose how you want to use Codex.".into(),
                String::new(),
                "> 1. Sign in with ChatGPT".into(),
                "     Usage included with Plus, Pro, Business, and Enterprise plans".into(),
                String::new(),
                "  2. Sign in with Device Code".into(),
                String::new(),
                "  3. Sign in another way".into(),
                String::new(),
                "  Press enter to continue".into(),
            ];
        }
    }
    rows
}

fn codex_permission(w: usize) -> Vec<String> {
    let mut rows = vec![String::new()];
    rows.extend(para(
        "  ",
        "Would you like to run the following command?",
        w,
    ));
    rows.extend([
        String::new(),
        "  $ echo 'promptgate fake-agent'".into(),
        String::new(),
        "› 1. Yes, proceed (y)".into(),
        "  2. Yes, and don't ask again for this command (p)".into(),
        "  3. No, and tell Codex what to do differently (esc)".into(),
        String::new(),
        "  Press enter to confirm or esc to cancel".into(),
        String::new(),
    ]);
    rows
}

// ---------------------------------------------------------------- gemini

fn gemini_header() -> Vec<String> {
    [
        "",
        "",
        " ▝▜▄     Gemini CLI v0.61.0 (promptgate fake-agent)",
        "   ▝▜▄",
        "  ▗▟▀    Authenticated with a fake key /auth",
        " ▝▀",
        "",
        "",
        "Tips for getting started:",
        "1. Create GEMINI.md files to customize your interactions",
        "2. /help for more information",
        "3. Ask coding questions, edit code or run commands",
        "4. Be specific for the best results",
        "",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn gemini_footer(w: usize, cwd: &str) -> Vec<String> {
    let col2 = (w * 55 / 100).max(30);
    let row = |a: &str, b: &str, c: &str| {
        let left = format!("{}{b}", pad(a, col2));
        right(&left, c, w)
    };
    vec![
        row(" workspace (/directory)", "sandbox", "/model"),
        row(&format!(" {cwd}"), "no sandbox", "Auto"),
    ]
}

/// A rounded box at column 1, as gemini draws its dialogs.
fn gemini_box(w: usize, lines: &[&str]) -> Vec<String> {
    let inner = w.saturating_sub(4).max(6);
    let mut rows = vec![format!(" ╭{}╮", "─".repeat(inner))];
    for l in lines {
        for r in para("", l, inner - 2) {
            rows.push(format!(" │ {} │", pad(&r, inner - 2)));
        }
    }
    rows.push(format!(" ╰{}╯", "─".repeat(inner)));
    rows
}

fn gemini_dialog(d: DialogKind, w: usize, cwd: &str) -> Vec<String> {
    let base = cwd.rsplit('/').find(|s| !s.is_empty()).unwrap_or("/");
    let trust_opt = format!("● 1. Trust folder ({base})");
    let lines: Vec<&str> = match d {
        DialogKind::Trust | DialogKind::None => vec![
            "",
            "Do you trust the files in this folder?",
            "",
            "Trusting a folder allows Gemini CLI to load its local configurations, including custom commands, hooks, MCP servers, agent skills, and settings.",
            "",
            &trust_opt,
            "  2. Trust parent folder",
            "  3. Don't trust",
            "",
        ],
        DialogKind::Onboarding => vec![
            "",
            "? Get started",
            "",
            "  How would you like to authenticate for this project?",
            "",
            "    1. Sign in with Google",
            "  ● 2. Use Gemini API Key",
            "    3. Vertex AI",
            "",
            "  (Use Enter to select)",
            "",
        ],
        DialogKind::ApiKey => vec![
            "",
            "Enter Gemini API Key",
            "",
            "Please enter your Gemini API key. It will be securely stored in your system keychain.",
            "",
            "fake-promptgate-key",
            "",
            "(Press Enter to submit, Esc to cancel, Ctrl+C to clear stored key)",
            "",
        ],
        DialogKind::Permission => vec![
            "",
            "?  Shell echo 'promptgate fake-agent'",
            "",
            "echo 'promptgate fake-agent'",
            "",
            "Allow execution of: 'echo'?",
            "",
            "● 1. Allow once",
            "  2. Allow for this session",
            "  3. No, suggest changes (esc)",
            "",
        ],
    };
    gemini_box(w, &lines)
}

fn gemini(v: &View) -> Out {
    let w = v.w;
    let mut rows = if v.banner {
        gemini_header()
    } else {
        vec![String::new(); 2]
    };
    for e in v.history {
        match e {
            Entry::Echo(t) => prefixed(&mut rows, " > ", "   ", t, w),
            Entry::Reply(t) => rows.push(format!("✦ {t}")),
            Entry::Interrupted => rows.push("ℹ Request cancelled.".into()),
            Entry::Failed => {
                rows.push("✕ [API Error: fetch failed (promptgate fake-agent --fail-turns)]".into())
            }
        }
        rows.push(String::new());
    }
    if let Some(d) = v.dialog {
        rows.push(String::new());
        rows.extend(gemini_dialog(d, w, v.cwd));
        rows.push(String::new());
        let y = rows.len();
        rows.push(String::new());
        return (rows, (0, y), false);
    }
    rows.push(String::new());
    if !v.queue.is_empty() {
        rows.push("  Queued (press ↑ to edit):".into());
        for q in v.queue {
            prefixed(&mut rows, "    ", "    ", q, w);
        }
    }
    rows.push(String::new());
    let shortcuts = if v.composer.is_empty() {
        "? for shortcuts"
    } else {
        ""
    };
    rows.push(if let Some(ms) = v.busy_ms {
        let g = GEMINI_SPIN[v.tick as usize % GEMINI_SPIN.len()];
        right(
            &format!(" {g} Thinking... (esc to cancel, {})", secs(ms)),
            shortcuts,
            w,
        )
    } else if v.composer.has_placeholder() {
        " Press Ctrl+O to expand pasted text".into()
    } else if v.esc_hint {
        " Press Esc again to clear.".into()
    } else {
        right("", shortcuts, w)
    });
    rows.push(rule(w));
    rows.push(" Shift+Tab to accept edits".into());
    rows.push(String::new());
    let b = block(
        &v.composer.display(),
        &format!("  {GEMINI_PLACEHOLDER}"),
        " > ",
        "   ",
        w,
        // at most 10 input rows, fewer on a short pane so the rule stays on screen
        v.h.saturating_sub(8).min(10),
    );
    let cursor = (b.cx, rows.len() + b.crow);
    rows.extend(b.rows);
    rows.push(String::new());
    rows.extend(gemini_footer(w, v.cwd));
    rows.push(String::new());
    (rows, cursor, false)
}

fn gemini_flash(_v: &View) -> Out {
    // the prompt row before the rule is drawn: not ready yet
    let mut rows = gemini_header();
    let y = rows.len();
    rows.push(format!(" >   {GEMINI_PLACEHOLDER}"));
    rows.push(String::new());
    (rows, (3, y), false)
}

// ---------------------------------------------------------------- painter

/// Sends frames to the terminal, rewriting only rows that changed.
#[derive(Default)]
pub struct Painter {
    prev: Vec<String>,
    width: usize,
    cursor: Option<(usize, usize)>,
    visible: Option<bool>,
    title: Option<String>,
}

impl Painter {
    /// Forget what is on screen: the next paint clears and redraws everything.
    pub fn invalidate(&mut self) {
        self.prev.clear();
        self.cursor = None;
        self.visible = None;
    }

    pub fn paint(&mut self, f: &Frame, w: usize) -> String {
        let mut s = String::new();
        let full = self.prev.len() != f.rows.len() || self.width != w;
        if full {
            s.push_str("\x1b[H\x1b[2J");
            self.prev = vec![String::new(); f.rows.len()];
            self.width = w;
        }
        for (y, row) in f.rows.iter().enumerate() {
            let on_row: Vec<&SgrSpan> = f.styles.iter().filter(|st| st.row == y).collect();
            let out = styled(row, &on_row);
            if self.prev[y] == out {
                continue;
            }
            s.push_str(&format!("\x1b[{};1H{out}", y + 1));
            if width(row) < w {
                s.push_str("\x1b[K");
            }
            self.prev[y] = out;
        }
        if let Some(t) = &f.title {
            if self.title.as_ref() != Some(t) {
                s.push_str(&format!("\x1b]0;{t}\x07"));
                self.title = Some(t.clone());
            }
        }
        if !s.is_empty() || self.cursor != Some(f.cursor) {
            s.push_str(&format!("\x1b[{};{}H", f.cursor.1 + 1, f.cursor.0 + 1));
            self.cursor = Some(f.cursor);
        }
        if self.visible != Some(f.cursor_visible) {
            s.push_str(if f.cursor_visible {
                "\x1b[?25h"
            } else {
                "\x1b[?25l"
            });
            self.visible = Some(f.cursor_visible);
        }
        s
    }
}

// ---------------------------------------------------------------- opencode

/// The `opencode` block-letter logo, centred.
fn opencode_logo(w: usize) -> Vec<String> {
    let art = [
        "                                 ▄",
        "█▀▀█ █▀▀█ █▀▀█ █▀▀▄ █▀▀▀ █▀▀█ █▀▀█ █▀▀█",
        "█  █ █  █ █▀▀▀ █  █ █    █  █ █  █ █▀▀▀",
        "▀▀▀▀ █▀▀▀ ▀▀▀▀ ▀▀▀▀ ▀▀▀▀ ▀▀▀▀ ▀▀▀▀ ▀▀▀▀",
    ];
    let lead = " ".repeat(w.saturating_sub(39) / 2);
    art.iter().map(|r| format!("{lead}{r}")).collect()
}

/// OpenCode's input box at `indent`, `bw` cells wide: a top `┃` row, the input
/// rows (`┃  text`, or the grey placeholder), a `┃` row, the agent/model row, the
/// `╹▀▀▀` bottom edge. Returns the rows and the cursor (x, row within them).
fn opencode_box(v: &View, indent: usize, bw: usize) -> (Vec<String>, (usize, usize)) {
    let pad = " ".repeat(indent);
    let bar = format!("{pad}┃");
    let first = format!("{pad}┃  ");
    let max = v.h.saturating_sub(10).clamp(1, 10);
    let b = block(
        &v.composer.display(),
        OPENCODE_PLACEHOLDER,
        &first,
        &first,
        indent + bw.saturating_sub(1),
        max,
    );
    let mut rows = vec![bar.clone()];
    let cursor = (b.cx, 1 + b.crow);
    rows.extend(b.rows);
    rows.push(bar);
    rows.push(format!("{pad}┃  Build · fake-model Fake"));
    rows.push(format!("{pad}╹{}", "▀".repeat(bw.saturating_sub(1))));
    (rows, cursor)
}

/// The row under the box: the progress bar while busy, else the cwd; the key
/// hints at the right.
fn opencode_footer(v: &View, indent: usize, bw: usize) -> String {
    let left = match v.busy_ms {
        Some(_) => {
            let k = (v.tick as usize) % 8;
            let bar: String = (0..8).map(|i| if i <= k { '■' } else { '⬝' }).collect();
            let hint = if v.esc_hint {
                "esc again to interrupt"
            } else {
                "esc interrupt"
            };
            format!("{}{bar}  {hint}", " ".repeat(indent + 1))
        }
        None => format!("{}{}", " ".repeat(indent + 1), v.cwd),
    };
    right(&left, "tab agents  ctrl+p commands", indent + bw + 1)
}

fn opencode_permission(w: usize) -> Vec<String> {
    // (not reachable offline in the real one: drawn plainly, as the profile's
    // `opencode.permission` marker reads it)
    vec![
        "  △ Permission required".into(),
        "    → Bash: cargo test (promptgate fake-agent)".into(),
        String::new(),
        format!(
            "  {}",
            cut("Allow once   Allow always   Reject", w.saturating_sub(3))
        ),
        String::new(),
    ]
}

fn opencode(v: &View) -> Out {
    let (w, h) = (v.w, v.h);
    if v.history.is_empty() && v.dialog.is_none() {
        // home: the logo, then the box (at most 75 cells wide) in the middle,
        // the cwd on the last row
        let bw = w.saturating_sub(4).min(75);
        let indent = w.saturating_sub(bw) / 2;
        let mut body = opencode_logo(w);
        body.push(String::new());
        let (b, c) = opencode_box(v, indent, bw);
        let box_top = body.len();
        body.extend(b);
        body.push(right("", "tab agents  ctrl+p commands", indent + bw + 1));
        let lead = h.saturating_sub(body.len() + 1) / 2;
        let mut rows = vec![String::new(); lead];
        rows.extend(body);
        let n = h.saturating_sub(1).max(rows.len());
        rows.resize(n, String::new());
        rows.push(format!("  {}", v.cwd));
        return (rows, (c.0, lead + box_top + c.1), true);
    }
    // a session: the transcript, then the box at the bottom (indent 2)
    let indent = 2;
    let bw = w.saturating_sub(4);
    let mut top: Vec<String> = vec![String::new()];
    for e in v.history {
        match e {
            Entry::Echo(t) => {
                top.push("  ┃".into());
                prefixed(&mut top, "  ┃  ", "  ┃  ", t, w.saturating_sub(2));
                top.push("  ┃".into());
                top.push(String::new());
                top.push("     ▣  Build · fake-model".into());
            }
            Entry::Reply(t) => top.push(format!("     {t}")),
            Entry::Interrupted => top.push("     ▣  Build · fake-model · interrupted".into()),
            Entry::Failed => top.push(
                "     Cannot connect to API: Unable to connect (promptgate fake-agent --fail-turns)"
                    .into(),
            ),
        }
        top.push(String::new());
    }
    let mut bottom: Vec<String> = Vec::new();
    let (cursor_in_bottom, visible);
    if v.dialog.is_some() {
        // its only dialog: every `--dialog` kind draws it (the bench's dialogs stay visible)
        bottom.extend(opencode_permission(w));
        cursor_in_bottom = (0, bottom.len() - 1);
        visible = false;
    } else {
        let (b, c) = opencode_box(v, indent, bw);
        cursor_in_bottom = c;
        bottom.extend(b);
        visible = true;
    }
    bottom.push(opencode_footer(v, indent, bw));
    bottom.push(String::new());
    let avail = h.saturating_sub(bottom.len());
    if top.len() > avail {
        top.drain(..top.len() - avail);
    }
    top.resize(avail, String::new());
    let cursor = (cursor_in_bottom.0, top.len() + cursor_in_bottom.1);
    top.extend(bottom);
    (top, cursor, visible)
}

fn opencode_flash(v: &View) -> Out {
    // the box drawn before its bottom edge and model row: not ready yet
    let bw = v.w.saturating_sub(4).min(75);
    let indent = v.w.saturating_sub(bw) / 2;
    let pad = " ".repeat(indent);
    let mut rows = opencode_logo(v.w);
    rows.push(String::new());
    rows.push(format!("{pad}┃"));
    let y = rows.len();
    rows.push(format!("{pad}┃  {OPENCODE_PLACEHOLDER}"));
    (rows, (indent + 3, y), true)
}
