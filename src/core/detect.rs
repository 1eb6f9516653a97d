//! detect: a pure function `(profile, screen) -> Verdict`.
//!
//! No tmux, no clock, no I/O. Every verdict carries the evidence that decided
//! it (rule id, row, column, matched text) and the list of every check that
//! was tried, so that `explain` prints what the code already knows.

use crate::core::error::{Error, Refused};
use crate::core::profile::{Marker, Profile};
use crate::core::screen::Screen;
use crate::core::text;
use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    Ready,
    Draft,
    Busy,
    Dialog(String),
    Starting,
    Exited,
    InMode,
    NotAgent,
    Unknown,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            State::Ready => f.write_str("ready"),
            State::Draft => f.write_str("draft"),
            State::Busy => f.write_str("busy"),
            State::Dialog(k) => write!(f, "dialog:{k}"),
            State::Starting => f.write_str("starting"),
            State::Exited => f.write_str("exited"),
            State::InMode => f.write_str("in-mode"),
            State::NotAgent => f.write_str("not-agent"),
            State::Unknown => f.write_str("unknown"),
        }
    }
}

impl State {
    pub fn parse(s: &str) -> Option<State> {
        Some(match s {
            "ready" => State::Ready,
            "draft" => State::Draft,
            "busy" => State::Busy,
            "starting" => State::Starting,
            "exited" => State::Exited,
            "in-mode" => State::InMode,
            "not-agent" => State::NotAgent,
            "unknown" => State::Unknown,
            _ => State::Dialog(s.strip_prefix("dialog:")?.to_string()),
        })
    }
}

/// What fired: a rule id and where on the screen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Evidence {
    pub rule: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub col: Option<usize>,
    pub text: String,
}

impl Evidence {
    fn new(rule: &str, row: Option<usize>, col: Option<usize>, text: &str) -> Evidence {
        Evidence {
            rule: rule.into(),
            row,
            col,
            text: text.into(),
        }
    }
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rule)?;
        if let Some(r) = self.row {
            write!(f, " @row {r}")?;
            if let Some(c) = self.col {
                write!(f, " col {c}")?;
            }
        }
        if !self.text.is_empty() {
            write!(f, ": {:?}", self.text)?;
        }
        Ok(())
    }
}

/// One rule tried, for `explain`.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub rule: String,
    pub fired: bool,
    pub detail: String,
}

/// The composer the detector found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Composer {
    /// First and last row of the composer block.
    pub row: usize,
    pub last_row: usize,
    /// The input text (rows joined by `\n`), trimmed; empty when only a placeholder shows.
    pub text: String,
    pub empty: bool,
    /// The input shows a paste placeholder such as `[Pasted text #1 +91 lines]`.
    pub paste_placeholder: bool,
    /// The block ends in a blank row holding the cursor: an Enter that arrived too
    /// early and became a newline (a sanitised body never ends in one).
    pub trailing_newline: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub agent: String,
    pub state: State,
    pub evidence: Evidence,
    pub composer: Option<Composer>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
}

impl Verdict {
    pub fn reason(&self) -> String {
        self.evidence.to_string()
    }
}

pub use crate::core::screen::is_shell;

struct Ctx<'a> {
    p: &'a Profile,
    s: &'a Screen,
    checks: Vec<Check>,
}

impl Ctx<'_> {
    fn check(&mut self, rule: &str, fired: bool, detail: impl Into<String>) {
        self.checks.push(Check {
            rule: rule.into(),
            fired,
            detail: detail.into(),
        });
    }
}

/// Classify one screen with one profile.
pub fn detect(p: &Profile, s: &Screen) -> Verdict {
    let mut cx = Ctx {
        p,
        s,
        checks: Vec::new(),
    };
    let (mut state, mut evidence, composer) = classify(&mut cx);
    // The agent's own state, where it publishes one, vetoes `ready` (never a
    // dialog or anything else the screen shows).
    if let (Some(st), Some(def)) = (&s.agent_status, &p.def.status) {
        let busy = def.busy.contains(st);
        let waiting = def.waiting.contains(st);
        let veto = state == State::Ready && (busy || waiting);
        let rule = if waiting {
            "status.waiting"
        } else {
            "status.busy"
        };
        cx.check(rule, veto, format!("{}={st}", def.field));
        if veto {
            state = State::Busy;
            evidence = Evidence::new(rule, None, None, &format!("{}={st}", def.field));
        }
    }
    Verdict {
        agent: p.name().to_string(),
        state,
        evidence,
        composer,
        checks: cx.checks,
    }
}

type Out = (State, Evidence, Option<Composer>);

/// The state of the pane, in order of what decides it: the pane itself (dead,
/// in a mode, a shell in the foreground), then a dialog or a start-up notice
/// outside the composer, a busy marker, the composer (empty or holding text),
/// and with no composer what the screen still shows.
fn classify(cx: &mut Ctx) -> Out {
    if let Some(o) = the_pane(cx) {
        return o;
    }
    let composer = find_composer(cx);
    if let Some(o) = dialog_or_notice(cx, &composer) {
        return o;
    }
    if let Some(o) = busy(cx, &composer) {
        return o;
    }
    match composer {
        Some(c) => in_the_composer(cx, c),
        None => without_a_composer(cx),
    }
}

/// Dead, in copy or view mode, or a shell in the foreground (unless the agent
/// runs in that shell's foreground job).
fn the_pane(cx: &mut Ctx) -> Option<Out> {
    let s = cx.s;
    cx.check("pane.dead", s.dead, format!("pane_dead={}", s.dead as u8));
    if s.dead {
        return Some((
            State::Exited,
            Evidence::new("pane.dead", None, None, "pane_dead=1"),
            None,
        ));
    }
    cx.check(
        "pane.in-mode",
        s.in_mode,
        format!("pane_in_mode={}", s.in_mode as u8),
    );
    if s.in_mode {
        return Some((
            State::InMode,
            Evidence::new("pane.in-mode", None, None, "pane_in_mode=1"),
            None,
        ));
    }
    // A shell in the foreground means the agent is gone, unless the agent runs in
    // that shell's foreground job (`sh -c "claude; exec sh"`, a wrapper script
    // without `exec`, `nix develop -c`): then the agent owns the terminal.
    let shell = s.command.as_deref().filter(|c| is_shell(c));
    let runs = shell
        .and(s.foreground.as_deref())
        .and_then(|job| crate::core::identify::agent_in(cx.p, job));
    if let Some(pr) = runs {
        cx.check(
            "pane.shell-runs-agent",
            true,
            format!(
                "pane_current_command={}, but pid {} ({}) of its foreground job is {}",
                shell.unwrap_or("?"),
                pr.pid,
                pr.argv.join(" "),
                cx.p.name()
            ),
        );
    }
    let shell = shell.filter(|_| runs.is_none());
    cx.check(
        "pane.shell-foreground",
        shell.is_some(),
        format!(
            "pane_current_command={}",
            s.command.as_deref().unwrap_or("?")
        ),
    );
    shell.map(|c| {
        (
            State::Exited,
            Evidence::new("pane.shell-foreground", None, None, c),
            None,
        )
    })
}

/// A dialog, or a start-up notice, where the agent draws one.
fn dialog_or_notice(cx: &mut Ctx, composer: &Option<Composer>) -> Option<Out> {
    let s = cx.s;
    // Dialogs (and start-up notices) replace the composer, so they count only where
    // the agent draws one: never inside a real composer (that is text the user
    // typed, say a prompt about a dialog) and never above it (the transcript,
    // which echoes such prompts); only under its block, or anywhere when there is
    // no composer. On a main-screen app an old dialog scrolls up and stays
    // visible, so the lowest hit is the live one. The dialog's own question
    // decides its kind: a specific kind beats a `generic` menu row (`❯ 1. Yes`,
    // which any dialog can show), and that beats `other`.
    //
    // With no composer on screen (a dialog replaced it, or a frame caught it being
    // redrawn), the transcript's echo rows of submitted prompts still count as the
    // user's text: gemini, right after a submit, drew a frame with the echo
    // ` > Do you want to proceed? …` and no prompt row.
    let region = composer.as_ref().map(|c| (c.last_row + 1, s.height));
    let echoes = match composer {
        Some(c) => {
            cx.check(
                "dialog.outside-composer",
                true,
                format!(
                    "composer rows {}..={}: dialog markers count only under row {}",
                    c.row, c.last_row, c.last_row
                ),
            );
            Vec::new()
        }
        None => {
            let e = echo_rows(cx.p, s);
            let n = e.iter().filter(|x| **x).count();
            if n > 0 {
                cx.check(
                    "dialog.outside-echoes",
                    true,
                    format!("{n} transcript echo row(s) (the user's text) hold no dialog"),
                );
            }
            e
        }
    };
    let mut dialog: Option<((u8, usize), State, Evidence)> = None;
    for m in &cx.p.dialog {
        let hit = find_marker_in(m, s, region, true, &echoes);
        cx.check(&m.def.id, hit.is_some(), describe(&hit));
        if let Some(ev) = hit {
            let kind = m.def.kind.clone().unwrap_or_else(|| "other".into());
            let tier = match (kind.as_str(), m.def.generic) {
                ("other", _) => 0,
                (_, true) => 1,
                _ => 2,
            };
            let rank = (tier, ev.row.unwrap_or(0));
            if dialog.as_ref().is_none_or(|d| rank > d.0) {
                dialog = Some((rank, State::Dialog(kind), ev));
            }
        }
    }
    for m in &cx.p.starting {
        let hit = find_marker_in(m, s, region, true, &echoes);
        cx.check(&m.def.id, hit.is_some(), describe(&hit));
        if let Some(ev) = hit {
            if dialog.as_ref().is_none_or(|d| ev.row.unwrap_or(0) > d.0 .1) {
                return Some((State::Starting, ev, None));
            }
        }
    }
    dialog.map(|(_, state, ev)| (state, ev, composer.clone()))
}

/// A busy marker (a spinner, an interrupt hint) where the profile looks for one.
fn busy(cx: &mut Ctx, composer: &Option<Composer>) -> Option<Out> {
    let s = cx.s;
    // a box whose placeholder says prompts are queued: the turn they wait for
    // runs (typed words are the user's, never a marker)
    if let Some(c) = composer.as_ref().filter(|c| c.empty) {
        for m in &cx.p.queued {
            let hit = find_marker_in(m, s, Some((c.row, c.last_row + 1)), false, &[]);
            cx.check(&m.def.id, hit.is_some(), describe(&hit));
            if let Some(ev) = hit {
                return Some((State::Busy, ev, composer.clone()));
            }
        }
    }
    let echoes = match composer {
        Some(_) => echo_rows(cx.p, s),
        None => Vec::new(),
    };
    for m in &cx.p.busy {
        let hit = find_marker(m, s, composer.as_ref(), &echoes);
        cx.check(
            &m.def.id,
            hit.is_some(),
            hit.as_ref()
                .map(|e| e.to_string())
                .unwrap_or_else(|| "no match".into()),
        );
        if let Some(ev) = hit {
            return Some((State::Busy, ev, composer.clone()));
        }
    }
    None
}

/// The composer decides: empty is ready, text in it is a draft.
fn in_the_composer(cx: &mut Ctx, c: Composer) -> Out {
    let s = cx.s;
    let rule = if c.empty {
        "composer.empty"
    } else {
        "composer.text"
    };
    let ev = Evidence::new(rule, Some(c.row), Some(0), s.row(c.row));
    cx.check(rule, true, ev.to_string());
    let state = if c.empty { State::Ready } else { State::Draft };
    (state, ev, Some(c))
}

/// No composer on screen: a draft marker, a blank screen (starting), the
/// agent's signature (starting), or nothing decisive.
fn without_a_composer(cx: &mut Ctx) -> Out {
    let s = cx.s;
    for m in &cx.p.draft {
        if let Some(ev) = find_marker(m, s, None, &[]) {
            cx.check(&m.def.id, true, ev.to_string());
            return (State::Draft, ev, None);
        }
        cx.check(&m.def.id, false, "no match");
    }

    if s.rows.iter().all(|r| r.trim().is_empty()) {
        cx.check("screen.blank", true, "every row is blank");
        return (
            State::Starting,
            Evidence::new("screen.blank", None, None, ""),
            None,
        );
    }
    for (y, row) in s.rows.iter().enumerate() {
        for re in &cx.p.signature {
            if let Some(m) = re.find(row) {
                let ev = Evidence::new(
                    "identify.screen-signature",
                    Some(y),
                    Some(text::width(&row[..m.start()])),
                    m.as_str(),
                );
                cx.check("screen.signature-without-composer", true, ev.to_string());
                return (State::Starting, ev, None);
            }
        }
    }
    cx.check(
        "screen.signature-without-composer",
        false,
        "no composer and no signature",
    );
    (
        State::Unknown,
        Evidence::new("nothing-decisive", None, None, ""),
        None,
    )
}

fn describe(hit: &Option<Evidence>) -> String {
    hit.as_ref()
        .map(|e| e.to_string())
        .unwrap_or_else(|| "no match".into())
}

/// Bottom-up: the last row that matches a prompt regex and passes the geometry rules.
fn find_composer(cx: &mut Ctx) -> Option<Composer> {
    let (p, s) = (cx.p, cx.s);
    for y in (0..s.rows.len()).rev() {
        let row = s.row(y);
        let Some(caps) = p.prompt.iter().find_map(|re| re.captures(row)) else {
            continue;
        };
        let first = caps.name("text").map(|m| m.as_str()).unwrap_or("");
        let id = format!("composer.candidate@{y}");
        match geometry(cx, y) {
            Err(why) => cx.check(&id, false, format!("{row:?}: {why}")),
            Ok(last) => {
                // only as far right as the rule under the block (a sidebar may follow)
                let clip_col =
                    (p.def.composer.clip_to_rule_below && last + 1 < s.rows.len()).then(|| {
                        let edge = s.row(last + 1);
                        let indent = edge.len() - edge.trim_start().len();
                        let run = edge[indent..]
                            .find(char::is_whitespace)
                            .map_or(edge.len(), |i| indent + i);
                        text::width(&edge[..run])
                    });
                let clip = |t: &'_ str| -> String {
                    match clip_col {
                        None => t.to_string(),
                        Some(col) => t[..text::byte_at_col(t, col)].trim_end().to_string(),
                    }
                };
                let row0 = clip(row);
                let first = if p.def.composer.clip_to_rule_below {
                    p.prompt
                        .iter()
                        .find_map(|re| re.captures(&row0))
                        .and_then(|c| c.name("text").map(|m| m.as_str().to_string()))
                        .unwrap_or_default()
                } else {
                    first.to_string()
                };
                let first = first.as_str();
                let mut lines = vec![first.to_string()];
                // the box's own status rows under the input are no text
                let text_last = last.saturating_sub(p.def.composer.status_rows).max(y);
                for r in y + 1..=text_last {
                    let t = clip(s.row(r));
                    let t = t.as_str();
                    let c = p.continuation.as_ref().and_then(|re| re.captures(t));
                    lines.push(
                        c.and_then(|c| c.name("text"))
                            .map(|m| m.as_str().to_string())
                            .unwrap_or_default(),
                    );
                }
                let joined = lines.join("\n");
                let text = joined
                    .trim_matches(|c: char| c.is_whitespace() || c == '\u{a0}')
                    .to_string();
                // the placeholder on the prompt row, or (a box whose first row is a
                // bare border, like OpenCode's) as the block's only text
                let by_text = (lines[1..].iter().all(|l| l.trim().is_empty())
                    && p.placeholders.iter().any(|re| re.is_match(first.trim())))
                    || p.placeholders.iter().any(|re| re.is_match(&text));
                let paste_placeholder = p.paste_placeholders.iter().any(|re| re.is_match(&text));
                // How the text is drawn tells a placeholder whose wording no regex
                // knows (a new release's); the regexes stay a second signal, so a
                // theme that draws the placeholder in another colour still reads it.
                let style = drawn_as(
                    cx,
                    (y, text_last),
                    caps.name("text").map(|m| m.start()),
                    clip_col,
                );
                let by_style = match &style {
                    Some((by_style, detail)) => {
                        let by_style = *by_style;
                        cx.check("composer.placeholder-style", by_style, detail.clone());
                        by_style && !paste_placeholder
                    }
                    None => false,
                };
                // Known wording drawn plain is still the placeholder (a theme may
                // draw it in another colour), unless the cursor stands right after
                // it, where typing leaves it: then someone typed those words
                // (`Summarize recent commits` is also a prompt people type).
                let typed_words = by_text
                    && matches!(style, Some((false, _)))
                    && s.cursor.is_some_and(|(cx_, cy)| {
                        let last_row = clip(s.row(text_last));
                        let end = text::width(
                            last_row.trim_end_matches(|c: char| c.is_whitespace() || c == '\u{a0}'),
                        );
                        cy == text_last && cx_ >= end && end > 0
                    });
                if by_text {
                    cx.check(
                        "composer.placeholder-typed-at-cursor",
                        typed_words,
                        if typed_words {
                            "a placeholder's words, drawn plain, with the cursor right after them: typed"
                        } else {
                            "the placeholder's words, where no cursor follows typing"
                        },
                    );
                }
                let placeholder = (by_text && !typed_words) || by_style;
                let empty = text.is_empty() || placeholder;
                cx.check(
                    &id,
                    true,
                    format!(
                        "{row:?}: rows {y}..={last}, {}",
                        if empty { "empty" } else { "holds text" }
                    ),
                );
                let trailing_newline = last > y
                    && s.row(last).trim().is_empty()
                    && s.cursor.is_some_and(|c| c.1 == last);
                return Some(Composer {
                    row: y,
                    last_row: last,
                    text: if empty { String::new() } else { text },
                    empty,
                    paste_placeholder,
                    trailing_newline,
                });
            }
        }
    }
    None
}

/// What the attributes of the composer's text say (rows `y..=last`, the first
/// row's text starting at byte `start`, none left of column `clip_col`): `Some((true, why))` when every cell of
/// it is drawn in the profile's placeholder style, `Some((false, why))` when a
/// cell is drawn otherwise (typed text); `None` without attributes, without a
/// `placeholder_style`, or without text. Reverse-video cells are the agent's
/// own cursor and do not count.
fn drawn_as(
    cx: &Ctx,
    (y, last): (usize, usize),
    start: Option<usize>,
    clip_col: Option<usize>,
) -> Option<(bool, String)> {
    let (p, s) = (cx.p, cx.s);
    let want = &p.def.composer.placeholder_style;
    if want.is_empty() || s.styles.is_none() {
        return None;
    }
    let mut seen = None;
    for r in y..=last {
        let row = s.row(r);
        let from = if r == y {
            // a prompt row with no text (a bare border, as OpenCode's box starts)
            match start {
                Some(b) => b,
                None => continue,
            }
        } else {
            match p.continuation.as_ref().and_then(|re| re.captures(row)) {
                Some(c) => c.name("text").map(|m| m.start()).unwrap_or(row.len()),
                None => continue,
            }
        };
        let mut col = text::width(&row[..from]);
        for ch in row[from..].chars() {
            if clip_col.is_some_and(|c| col >= c) {
                break;
            }
            let w = text::width(ch.encode_utf8(&mut [0; 4]));
            let st = s.style_at(col, r)?;
            if !ch.is_whitespace() && !st.reverse {
                let ph = want.iter().any(|a| st.has(a));
                let what = format!("row {r} col {col} {ch:?} drawn {}", st.describe());
                if !ph {
                    return Some((false, format!("{what}: typed text")));
                }
                seen.get_or_insert(what);
            }
            col += w;
        }
    }
    seen.map(|w| {
        (
            true,
            format!(
                "{w}, like every cell of it: placeholder ({})",
                want.join(" or ")
            ),
        )
    })
}

/// Check the geometry of a composer candidate on row `y`; Ok(last row of its block).
fn geometry(cx: &Ctx, y: usize) -> Result<usize, String> {
    let (p, s) = (cx.p, cx.s);
    let g = &p.def.composer;
    let is_rule = |r: usize| p.rule.as_ref().is_some_and(|re| re.is_match(s.row(r)));
    if let Some(n) = g.rule_above_within {
        if !(1..=n).any(|d| y >= d && is_rule(y - d)) {
            return Err(format!("no rule within {n} row(s) above"));
        }
    }
    let cy = s.cursor.map(|c| c.1);
    let mut last = y;
    for r in y + 1..s.rows.len().min(y + g.max_rows) {
        let t = s.row(r);
        if is_rule(r) {
            break;
        }
        let cont = p.continuation.as_ref().is_some_and(|re| re.is_match(t));
        let cursor_below = cy.is_some_and(|c| c >= r);
        if (cont && !t.trim().is_empty()) || (cursor_below && (t.trim().is_empty() || cont)) {
            last = r;
        } else {
            break;
        }
    }
    if g.status_rows > 0 && last < y + g.status_rows {
        return Err(format!(
            "block rows {y}..={last} hold only the box's {} status row(s)",
            g.status_rows
        ));
    }
    if let Some(edge) = &p.bottom_edge {
        if last + 1 >= s.rows.len() || !edge.is_match(s.row(last + 1)) {
            return Err(format!(
                "block rows {y}..={last} not followed by the box's bottom edge"
            ));
        }
    }
    if g.rule_below && !is_rule(last + 1) {
        return Err(format!("block rows {y}..={last} not followed by a rule"));
    }
    if let Some(off) = g.bottom_offset {
        if last + off != s.height {
            return Err(format!(
                "block ends on row {last}, expected pane_height-{off} = {}",
                s.height.saturating_sub(off)
            ));
        }
    }
    if let Some(n) = g.min_rows_below {
        let below = s.height.saturating_sub(last + 1);
        if below < n {
            return Err(format!("only {below} row(s) under the block, want {n}"));
        }
    }
    if g.cursor_in_block {
        if let Some(c) = cy {
            if c < y || c > last {
                return Err(format!("cursor row {c} outside block rows {y}..={last}"));
            }
        }
    }
    if let (Some(want), Some(have)) = (g.cursor_visible, s.cursor_visible) {
        if want != have {
            return Err(format!("cursor_flag={} (want {})", have as u8, want as u8));
        }
    }
    Ok(last)
}

/// Search a marker in its region relative to the composer (whole screen without one).
/// Rows `skip` marks (the transcript's echoes of the user's own prompts) are
/// passed over above the composer: a prompt that quotes a busy line is not one.
fn find_marker(
    m: &Marker,
    s: &Screen,
    composer: Option<&Composer>,
    skip: &[bool],
) -> Option<Evidence> {
    let d = &m.def;
    let region = match composer {
        Some(c) if d.above.is_some() || d.below.is_some() => {
            let mut ranges = Vec::new();
            if let Some(a) = d.above {
                ranges.push((above_from(m, s, c.row, a), c.row, skip));
            }
            if let Some(b) = d.below {
                let none: &[bool] = &[];
                ranges.push((c.last_row + 1, (c.last_row + 1 + b).min(s.height), none));
            }
            return ranges
                .into_iter()
                .find_map(|(from, to, skip)| find_marker_in(m, s, Some((from, to)), false, skip));
        }
        _ => None,
    };
    find_marker_in(m, s, region, false, &[])
}

/// The first row of the `above` rows over row `top`: `n` rows, not counting
/// the rows the marker's `above_skip` matches (as many of those as there are).
fn above_from(m: &Marker, s: &Screen, top: usize, n: usize) -> usize {
    let Some(skip) = &m.skip else {
        return top.saturating_sub(n);
    };
    let (mut y, mut counted) = (top, 0);
    while y > 0 && counted < n {
        y -= 1;
        if !skip.is_match(s.row(y)) {
            counted += 1;
        }
    }
    y
}

/// Rows of transcript echoes: a row the profile's `echo` regex matches, and the
/// continuation rows right under it (`true` at each such row index). A row whose
/// echoed text starts with a menu number (`› 1. Trust and continue`) is how codex
/// draws a dialog's selected choice, so it is not taken for an echo.
fn echo_rows(p: &Profile, s: &Screen) -> Vec<bool> {
    let menu = |t: &str| {
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && t[digits..].starts_with(". ")
    };
    let is_echo = |row: &str| {
        p.echo.iter().any(|re| {
            re.captures(row).is_some_and(|c| {
                !c.name("text")
                    .is_some_and(|t| menu(t.as_str().trim_start()))
            })
        })
    };
    let mut out = vec![false; s.rows.len()];
    let mut y = 0;
    while y < s.rows.len() {
        if is_echo(s.row(y)) {
            out[y] = true;
            y += 1;
            while y < s.rows.len()
                && !s.row(y).trim().is_empty()
                && p.continuation
                    .as_ref()
                    .is_some_and(|re| re.is_match(s.row(y)))
            {
                out[y] = true;
                y += 1;
            }
        } else {
            y += 1;
        }
    }
    out
}

/// Search a marker in rows `[from, to)` (or all rows), honouring `on`, `row`,
/// `cursor_row` and `cursor_hidden`, and passing over the rows `skip` marks.
fn find_marker_in(
    m: &Marker,
    s: &Screen,
    region: Option<(usize, usize)>,
    lowest: bool,
    skip: &[bool],
) -> Option<Evidence> {
    let d = &m.def;
    if d.on.as_deref() == Some("title") {
        let t = s.title.as_deref()?;
        let hit = m.re.find(t)?;
        return Some(Evidence::new(
            &d.id,
            None,
            None,
            &format!("title {:?}", hit.as_str()),
        ));
    }
    if d.cursor_hidden && s.cursor_visible != Some(false) {
        return None;
    }
    if d.cursor_visible && s.cursor_visible != Some(true) {
        return None;
    }
    let (from, to) = region.unwrap_or((0, s.rows.len()));
    // The cursor's row; on a blank row (the new line a draft ends in), the last
    // row of text above it.
    let cursor_row = s.cursor.map(|c| c.1).map(|y| {
        if s.row(y).trim().is_empty() && y > 0 && !s.row(y - 1).trim().is_empty() {
            y - 1
        } else {
            y
        }
    });
    let fixed = d.row.map(|r| {
        if r >= 0 {
            r as usize
        } else {
            s.height.saturating_sub((-r) as usize)
        }
    });
    let to = to.min(s.rows.len());
    let rows: Box<dyn Iterator<Item = usize>> = if lowest {
        Box::new((from..to).rev())
    } else {
        Box::new(from..to)
    };
    for y in rows {
        if fixed.is_some_and(|f| f != y)
            || (d.cursor_row && cursor_row != Some(y))
            || skip.get(y).copied().unwrap_or(false)
        {
            continue;
        }
        let row = s.row(y);
        if let Some(hit) = m.re.find(row) {
            return Some(Evidence::new(
                &d.id,
                Some(y),
                Some(text::width(&row[..hit.start()])),
                hit.as_str(),
            ));
        }
        // the cursor's line, hard-wrapped by the terminal: the rows above it that
        // fill the width are the same line (a question with a long path whose
        // `(Y)es/(N)o` was split over two rows)
        if d.cursor_row && y > 0 {
            let mut first = y;
            while first > 0 && y - first < 4 && text::width(s.row(first - 1)) >= s.width {
                first -= 1;
            }
            if first < y {
                let line: String = (first..=y).map(|r| s.row(r)).collect();
                if let Some(hit) = m.re.find(&line) {
                    return Some(Evidence::new(&d.id, Some(first), None, hit.as_str()));
                }
            }
        }
    }
    None
}

impl Refused {
    /// The refusal for a pane left in `state` (`timed_out`: the gate's timeout ran out).
    pub fn of(state: &State, timed_out: bool) -> Refused {
        match state {
            _ if timed_out => Refused::Timeout,
            State::Dialog(_) => Refused::Dialog,
            State::Busy => Refused::Busy,
            State::InMode => Refused::InMode,
            State::NotAgent => Refused::NotAgent,
            State::Exited => Refused::Exited,
            State::Draft => Refused::Draft,
            _ => Refused::Timeout,
        }
    }
}

/// The refusal (with its exit code) for a pane that is not ready to be typed into.
pub fn refusal(state: &State, reason: &str, timed_out: bool) -> Error {
    let why = Refused::of(state, timed_out);
    let what = match why {
        Refused::Dialog => "refused: a dialog is open, nothing typed",
        Refused::Busy => "refused: the agent is busy (use --wait-busy to wait)",
        Refused::InMode => "refused: the pane is in copy/view mode (use --cancel-mode)",
        Refused::NotAgent => "refused: no agent runs in this pane (a shell, an editor or a pager is never typed into; --agent NAME names an agent that runs under another program name)",
        Refused::Exited => "refused: no agent runs there now (it exited, or never ran: a shell is in front)",
        Refused::Draft => "refused: the composer holds a draft (use --replace-draft)",
        _ => "not ready",
    };
    let hint = if why == Refused::Timeout {
        "; to wait longer, raise --timeout SECS"
    } else {
        ""
    };
    Error::refused(why, format!("{what}: {reason}{hint}"))
}

/// Why `wait` ended without `ready`, with the same exit codes as `send`'s
/// refusals ([`refusal`]), in words that fit a command that never types.
pub fn not_ready(state: &State, reason: &str, timed_out: bool) -> Error {
    let why = Refused::of(state, timed_out);
    let what = match why {
        Refused::Timeout if timed_out => {
            format!("not ready: {reason}; to wait longer, raise --timeout SECS")
        }
        Refused::Dialog => format!(
            "not ready: a dialog is open: {reason}; wait stops at a dialog (a person must answer it; --wait-dialog waits until one does)"
        ),
        Refused::InMode => format!("not ready: the pane is in copy/view mode: {reason}"),
        Refused::NotAgent => format!(
            "not ready: no agent runs in this pane (--agent NAME names an agent that runs under another program name): {reason}"
        ),
        Refused::Exited => format!("not ready: no agent runs there now (it exited, or never ran): {reason}"),
        Refused::Draft => format!("not ready: the composer holds a draft: {reason}"),
        Refused::Busy => format!("not ready: the agent is busy: {reason}"),
        _ => format!("not ready: {reason}"),
    };
    Error::refused(why, what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::code;

    #[test]
    fn every_refusal_has_its_code() {
        assert_eq!(
            refusal(&State::Busy, "x", false).exit_code(),
            code::REFUSED_BUSY
        );
        assert_eq!(refusal(&State::Busy, "x", true).exit_code(), code::TIMEOUT);
        assert_eq!(
            not_ready(&State::Draft, "x", false).exit_code(),
            code::REFUSED_DRAFT
        );
        assert_eq!(
            Error::refused(crate::core::error::Refused::KeysAstray, "x").exit_code(),
            code::REFUSED_KEYS_ASTRAY
        );
    }
    use crate::core::profile::Profiles;

    /// The prompts that quote a dialog, one per dialog phrase.
    pub(crate) const QUOTES: &[&str] = &[
        "Do you want to create a test for this?",
        "Press Enter to continue when done",
        "Yes, I trust this folder",
        "Is this a project you created or one you trust?",
        "pick one:\n❯ 1. Yes",
        "Allow once",
        "Do you want to proceed? ❯ 1. Yes",
        "Would you like to run the following command? Allow command? Trust this folder?",
        "Do you trust the files in this folder? Enter Gemini API Key",
    ];

    fn fixture(name: &str) -> Screen {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        crate::io::capture::load(&root.join(format!("{name}.txt")), None).unwrap()
    }

    /// (fixture of a ready composer, prompt prefix, continuation prefix) per agent.
    fn ready(agent: &str) -> (Screen, &'static str, &'static str) {
        match agent {
            "claude" => (fixture("claude/05-idle-after-onboarding"), "❯\u{a0}", "  "),
            "codex" => (fixture("codex/06-idle-composer"), "› ", "  "),
            _ => (fixture("gemini/06-ready-idle"), " > ", "   "),
        }
    }

    /// `text` typed into the ready composer of a real capture: its first line on
    /// the prompt row, further lines as continuation rows (the screen scrolls up).
    fn typed(agent: &str, text: &str) -> Screen {
        let p = Profiles::builtin();
        let (mut s, first, cont) = ready(agent);
        let mut y = detect(p.get(agent).unwrap(), &s).composer.unwrap().row;
        // the text is made up here: the capture's attributes no longer fit it
        s.styles = None;
        let lines: Vec<&str> = text.split('\n').collect();
        s.rows[y] = format!("{first}{}", lines[0]);
        for (i, l) in lines[1..].iter().enumerate() {
            s.rows.remove(0);
            y -= 1;
            s.rows.insert(y + 1 + i, format!("{cont}{l}"));
        }
        y += lines.len() - 1;
        let last = lines.last().unwrap();
        let pre = if lines.len() == 1 { first } else { cont };
        s.cursor = Some((text::width(pre) + text::width(last), y));
        s
    }

    /// `text` echoed in the transcript of a real capture, above its empty composer.
    fn echoed(agent: &str, text: &str) -> Screen {
        let p = Profiles::builtin();
        let prof = p.get(agent).unwrap();
        let (mut s, _, cont) = ready(agent);
        let c = detect(prof, &s).composer.unwrap().row;
        s.styles = None;
        let is_rule =
            |s: &Screen, y: usize| prof.rule.as_ref().is_some_and(|r| r.is_match(s.row(y)));
        let limit = (0..c).rev().find(|&y| is_rule(&s, y)).unwrap_or(c - 1);
        let lines: Vec<&str> = text.split('\n').collect();
        let n = lines.len();
        let end = (n..limit)
            .rev()
            .find(|&e| (e + 1 - n..=e).all(|y| s.row(y).trim().is_empty()))
            .expect("room for the echo");
        let echo_first = match agent {
            "claude" => "❯ ",
            "codex" => "› ",
            _ => " > ",
        };
        for (i, l) in lines.iter().enumerate() {
            let pre = if i == 0 { echo_first } else { cont };
            s.rows[end + 1 - n + i] = format!("{pre}{l}");
        }
        s
    }

    #[test]
    fn a_prompt_that_quotes_a_dialog_is_a_draft_on_every_agent() {
        let p = Profiles::builtin();
        for agent in ["claude", "codex", "gemini"] {
            for q in QUOTES {
                let v = detect(p.get(agent).unwrap(), &typed(agent, q));
                assert_eq!(v.state, State::Draft, "{agent} typed {q:?}: {}", v.reason());
                assert_eq!(v.composer.unwrap().text, *q, "{agent}");
            }
        }
    }

    #[test]
    fn a_transcript_that_quotes_a_dialog_is_not_a_dialog() {
        let p = Profiles::builtin();
        for agent in ["claude", "codex", "gemini"] {
            for q in QUOTES {
                let v = detect(p.get(agent).unwrap(), &echoed(agent, q));
                assert_eq!(v.state, State::Ready, "{agent} echo {q:?}: {}", v.reason());
            }
        }
    }

    #[test]
    fn a_transcript_that_quotes_a_dialog_is_no_dialog_without_a_composer_either() {
        // a frame caught while the agent redraws: the echo is drawn, the prompt row
        // is not (real gemini, right after a submit)
        let p = Profiles::builtin();
        for agent in ["claude", "codex", "gemini"] {
            let prof = p.get(agent).unwrap();
            for q in QUOTES {
                let mut s = echoed(agent, q);
                let c = detect(prof, &s).composer.unwrap();
                s.rows[c.row] = String::new();
                let v = detect(prof, &s);
                assert!(
                    !matches!(v.state, State::Dialog(_)),
                    "{agent} echo {q:?} without a composer: {} ({})",
                    v.state,
                    v.reason()
                );
            }
        }
    }

    #[test]
    fn a_selected_menu_choice_is_no_transcript_echo() {
        // codex draws a dialog's selected choice as `› 1. …`, like an echo row
        let p = Profiles::builtin();
        let s = fixture("codex/05-trust-folder");
        let y = s.rows.iter().position(|r| r.starts_with("› 1.")).unwrap();
        assert!(!echo_rows(p.get("codex").unwrap(), &s)[y]);
        let mut s = s;
        s.rows[y] = "› Trust this folder? 1. Trust and continue".into();
        assert!(echo_rows(p.get("codex").unwrap(), &s)[y]);
    }

    #[test]
    fn real_dialogs_stay_dialogs() {
        let p = Profiles::builtin();
        for (f, agent, want) in [
            ("claude/04-trust-dialog", "claude", "dialog:trust"),
            ("claude/07-apikey-dialog", "claude", "dialog:api-key"),
            (
                "claude/71-fresh-security-80x24",
                "claude",
                "dialog:onboarding",
            ),
            ("codex/05-trust-folder", "codex", "dialog:trust"),
            ("gemini/01-fresh-trust-dialog", "gemini", "dialog:trust"),
        ] {
            let v = detect(p.get(agent).unwrap(), &fixture(f));
            assert_eq!(v.state.to_string(), want, "{f}: {}", v.reason());
        }
    }

    #[test]
    fn a_generic_menu_row_never_overrides_the_dialogs_question() {
        // The API-key dialog with its first choice selected: `❯ 1. Yes` is lower on
        // screen than the question, but the question names the kind.
        let p = Profiles::builtin();
        let mut s = fixture("claude/07-apikey-dialog");
        for r in s.rows.iter_mut() {
            if r.trim() == "1. Yes" {
                *r = "  ❯ 1. Yes".into();
            } else if r.contains("❯ 2. No") {
                *r = r.replace('❯', " ");
            }
        }
        let v = detect(p.get("claude").unwrap(), &s);
        assert_eq!(v.state.to_string(), "dialog:api-key", "{}", v.reason());
        // With no question on screen, the menu row is still a dialog, of no known kind.
        let mut s = fixture("claude/07-apikey-dialog");
        s.rows
            .retain(|r| !r.contains("API key") && !r.contains("Enter to confirm"));
        s.rows.push("  ❯ 1. Yes".into());
        let v = detect(p.get("claude").unwrap(), &s);
        assert_eq!(v.state.to_string(), "dialog:other", "{}", v.reason());
    }

    /// A real capture with its attributes (`.ansi`), one piece of its text swapped.
    fn drawn(name: &str, from: &str, to: &str) -> Screen {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let ansi = std::fs::read_to_string(root.join(format!("{name}.ansi"))).unwrap();
        let meta = std::fs::read_to_string(root.join(format!("{name}.meta"))).unwrap();
        assert!(ansi.contains(from), "{name} shows {from:?}");
        let s = Screen::from_capture(&ansi.replacen(from, to, 1), &meta);
        assert!(s.styles.is_some());
        s
    }

    fn fired(v: &Verdict, rule: &str) -> Option<bool> {
        v.checks.iter().find(|c| c.rule == rule).map(|c| c.fired)
    }

    #[test]
    fn how_the_text_is_drawn_tells_a_placeholder_from_typed_text() {
        let p = Profiles::builtin();
        for (name, agent, placeholder) in [
            (
                "codex/06-idle-composer",
                "codex",
                "Ask Codex to do anything",
            ),
            (
                "claude/v2.1.332-ready-after-error-120x40",
                "claude",
                "esend your message to try again",
            ),
            (
                "gemini/06-ready-idle",
                "gemini",
                "Type your message or @path/to/file",
            ),
        ] {
            let prof = p.get(agent).unwrap();
            // the capture as it is: a placeholder, by its style
            let s = drawn(name, placeholder, placeholder);
            let v = detect(prof, &s);
            assert_eq!(v.state, State::Ready, "{name}: {}", v.reason());
            assert_eq!(
                fired(&v, "composer.placeholder-style"),
                Some(true),
                "{name}"
            );
            // a placeholder wording no regex knows, drawn the same way: still empty
            let s = drawn(name, placeholder, "Plan the next release together");
            let v = detect(prof, &s);
            assert_eq!(v.state, State::Ready, "{name} new wording: {}", v.reason());
            // without attributes the regexes decide: that wording is typed text
            let mut bare = s.clone();
            bare.styles = None;
            assert_eq!(
                detect(prof, &bare).state,
                State::Draft,
                "{name} no attributes"
            );
        }
        // typed text (drawn plain) is typed; a placeholder the regexes know stays
        // one whatever its colour (a theme may draw it in another)
        for (name, agent, typed, wording, known) in [
            (
                "codex/10-typed-hello",
                "codex",
                "hello world",
                "Ask Codex for a new plan",
                "Ask Codex to do anything",
            ),
            (
                "gemini/10-typed-hello",
                "gemini",
                "hello world",
                "Type your own message",
                "Type your message or @path/to/file",
            ),
            (
                "claude/v2.1.332-draft-typed-80x24",
                "claude",
                "\u{a0}hello there",
                "\u{a0}Resend your message to Claude",
                "\u{a0}Resend your message to try again",
            ),
        ] {
            let prof = p.get(agent).unwrap();
            let s = drawn(name, typed, known);
            assert_eq!(
                detect(prof, &s).state,
                State::Ready,
                "{name}: {known:?} drawn plain"
            );
            let v = detect(prof, &drawn(name, typed, wording));
            assert_eq!(v.state, State::Draft, "{name}: {}", v.reason());
            assert_eq!(
                fired(&v, "composer.placeholder-style"),
                Some(false),
                "{name}"
            );
            let c = v
                .checks
                .iter()
                .find(|c| c.rule == "composer.placeholder-style")
                .unwrap();
            assert!(c.detail.contains("typed text"), "{}", c.detail);
        }
    }

    #[test]
    fn a_dim_paste_placeholder_is_still_a_draft() {
        let p = Profiles::builtin();
        let s = drawn(
            "codex/06-idle-composer",
            "Ask Codex to do anything",
            "[Pasted Content 5000 chars]",
        );
        let v = detect(p.get("codex").unwrap(), &s);
        assert_eq!(v.state, State::Draft, "{}", v.reason());
    }
}
