//! verify: pure judgement of a screen after the submit key -> ReceiptKind.
//!
//! `consumed`: the composer is empty again, with a busy marker or a new
//! transcript echo of the body. `queued`: the agent parked it. `stranded`: the
//! body (or its paste placeholder) still sits in the composer. `refused`: a
//! dialog appeared. `unknown`: nothing decisive yet.

use crate::core::detect::{detect, Evidence, State, Verdict};
use crate::core::error::{code, Refused};
use crate::core::profile::{Marker, Profile};
use crate::core::screen::Screen;
use crate::core::text::squash;
use serde::{Deserialize, Serialize};

/// What became of a send, in a word: the receipt's kind. The judgement of the
/// screens gives the first seven; a send that never reached the judgement is
/// `not-sent` (nothing typed) or `failed` (a write failed while typing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReceiptKind {
    Consumed,
    /// `--no-verify`: the submit key was pressed, and nothing was looked for
    /// after it (exit 0, like `consumed`, but never called proven).
    Submitted,
    Queued,
    Stranded,
    Refused,
    Unknown,
    /// The agent's own record holds something other than the body (`proof`).
    Mangled,
    /// The screen showed the prompt taken, but the agent's own record (known to
    /// be this agent's) got no entry for it within its wait (`proof`).
    Unproven,
    /// Nothing typed (the gate refused, or the pane kept changing before the paste).
    NotSent,
    /// A write failed while typing (what was typed is not typed again).
    Failed,
}

impl ReceiptKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptKind::Consumed => "consumed",
            ReceiptKind::Submitted => "submitted",
            ReceiptKind::Queued => "queued",
            ReceiptKind::Stranded => "stranded",
            ReceiptKind::Refused => "refused",
            ReceiptKind::Unknown => "unknown",
            ReceiptKind::Mangled => "mangled",
            ReceiptKind::Unproven => "unproven",
            ReceiptKind::NotSent => "not-sent",
            ReceiptKind::Failed => "failed",
        }
    }
}

impl std::fmt::Display for ReceiptKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Judgement {
    pub receipt: ReceiptKind,
    pub evidence: Evidence,
    #[serde(skip)]
    pub verdict: Verdict,
}

/// Rows that echo `body` (its first line, or a paste placeholder) in the transcript.
pub fn echo_rows(p: &Profile, body: &str, s: &Screen) -> Vec<usize> {
    let first = squash(body.lines().find(|l| !l.trim().is_empty()).unwrap_or(""));
    let probe: String = first.chars().take(24).collect();
    let mut rows = Vec::new();
    for (y, row) in s.rows.iter().enumerate() {
        let Some(text) = p
            .echo
            .iter()
            .find_map(|re| re.captures(row))
            .and_then(|c| c.name("text"))
            .map(|m| squash(m.as_str()))
        else {
            continue;
        };
        let is_paste = p.paste_placeholders.iter().any(|re| re.is_match(&text));
        let same = !probe.is_empty()
            && (text.starts_with(&probe) || (text.len() >= 8 && probe.starts_with(&text)));
        if is_paste || same {
            rows.push(y);
        }
    }
    rows
}

/// Rows above row `above` where a transcript copy of the body's end finishes:
/// the last 64 non-blank characters of the body (long enough to reach into the
/// line before when lines end alike), matched with all whitespace removed from
/// body and rows (so the agent's own wrapping, indents and tab expansion do not
/// matter). Empty for bodies with fewer than 8 such characters.
pub fn tail_rows(body: &str, s: &Screen, above: usize) -> Vec<usize> {
    let dense: Vec<char> = body
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '\u{a0}')
        .collect();
    if dense.len() < 8 {
        return Vec::new();
    }
    let probe: String = dense[dense.len().saturating_sub(64)..].iter().collect();
    let mut joined = String::new();
    let mut rows = Vec::new();
    for y in 0..above.min(s.rows.len()) {
        joined.extend(
            s.row(y)
                .chars()
                .filter(|c| !c.is_whitespace() && *c != '\u{a0}'),
        );
        if !s.row(y).trim().is_empty() && joined.ends_with(&probe) {
            rows.push(y);
        }
    }
    rows
}

fn marker_hit(markers: &[Marker], s: &Screen) -> Option<Evidence> {
    for m in markers {
        for (y, row) in s.rows.iter().enumerate() {
            if let Some(hit) = m.re.find(row) {
                return Some(Evidence {
                    rule: m.def.id.clone(),
                    row: Some(y),
                    col: Some(crate::core::text::width(&row[..hit.start()])),
                    text: hit.as_str().into(),
                });
            }
        }
    }
    None
}

/// The body's first line drawn between the busy row and the composer of a busy
/// agent: a prompt it parked. Qwen Code 0.15.6 draws a prompt sent while it works
/// under its spinner, indented, with no marker beside it, until the turn ends
/// (fixture qwen/v0.15.6-45-model-queued-forced-120x40); a running prompt's echo is
/// drawn above the busy row. For a prompt submitted while the agent was busy.
fn parked_under_busy(v: &Verdict, body: &str, after: &Screen) -> Option<Evidence> {
    if v.state != State::Busy {
        return None;
    }
    let top = v.evidence.row?;
    let bottom = v.composer.as_ref()?.row;
    let first = squash(body.lines().find(|l| !l.trim().is_empty())?);
    let least = first.chars().count().min(8);
    (top + 1..bottom).find_map(|y| {
        let row = squash(after.row(y));
        (row.chars().count() >= least && first.starts_with(&row)).then(|| Evidence {
            rule: "verify.parked-under-busy".into(),
            row: Some(y),
            col: Some(0),
            text: after.row(y).chars().take(60).collect(),
        })
    })
}

/// Does a composer hold (the start of) `body`, or a paste placeholder for it?
pub fn holds_body(c: &crate::core::detect::Composer, body: &str) -> bool {
    c.paste_placeholder || {
        let typed = squash(&c.text);
        let want = squash(body);
        !typed.is_empty()
            && (want.starts_with(&typed) || typed.starts_with(&want) || want.contains(&typed))
    }
}

/// A body that asks the agent to quit (`/exit`, `/quit`): the agent exiting
/// after it is the prompt taken, not an unknown outcome.
pub fn is_exit_command(body: &str) -> bool {
    matches!(body.trim(), "/exit" | "/quit")
}

/// Judge `after` (a screen after the submit key) against `before` (the screen
/// just before it, with the body typed into the composer).
pub fn judge(p: &Profile, body: &str, before: &Screen, after: &Screen) -> Judgement {
    let v = detect(p, after);
    let bv = detect(p, before);
    let out = |receipt, evidence| Judgement {
        receipt,
        evidence,
        verdict: v.clone(),
    };
    if let State::Dialog(_) = v.state {
        return out(ReceiptKind::Refused, v.evidence.clone());
    }
    if v.state == State::Exited && is_exit_command(body) {
        // the body asked the agent to quit, and it did: that is the prompt taken
        let mut ev = v.evidence.clone();
        ev.rule = format!("verify.exit-command ({})", ev.rule);
        return out(ReceiptKind::Consumed, ev);
    }
    if matches!(v.state, State::Exited | State::InMode) {
        return out(ReceiptKind::Unknown, v.evidence.clone());
    }
    if let Some(ev) = marker_hit(&p.queued, after) {
        if marker_hit(&p.queued, before).is_none() || v.composer.as_ref().is_some_and(|c| c.empty) {
            return out(ReceiptKind::Queued, ev);
        }
    }
    if bv.state == State::Busy {
        if let Some(ev) = parked_under_busy(&v, body, after) {
            return out(ReceiptKind::Queued, ev);
        }
    }
    if let Some(c) = v.composer.as_ref().filter(|c| !c.empty) {
        let ours = holds_body(c, body);
        let before_text = bv
            .composer
            .as_ref()
            .map(|c| c.text.as_str())
            .unwrap_or_default();
        if ours || (!before_text.is_empty() && squash(before_text) == squash(&c.text)) {
            let ev = Evidence {
                rule: "verify.body-in-composer".into(),
                row: Some(c.row),
                col: Some(0),
                text: c.text.chars().take(60).collect(),
            };
            return out(ReceiptKind::Stranded, ev);
        }
        return out(
            ReceiptKind::Unknown,
            Evidence {
                rule: "verify.composer-holds-other-text".into(),
                row: Some(c.row),
                col: Some(0),
                text: c.text.chars().take(60).collect(),
            },
        );
    }
    if v.state == State::Busy {
        return out(ReceiptKind::Consumed, v.evidence.clone());
    }
    if v.composer.as_ref().is_some_and(|c| c.empty) {
        let (b, a) = (echo_rows(p, body, before), echo_rows(p, body, after));
        if a.len() > b.len() || (a.last().is_some() && a.last() != b.last() && !a.is_empty()) {
            let y = *a.last().unwrap();
            let ev = Evidence {
                rule: "verify.transcript-echo".into(),
                row: Some(y),
                col: Some(0),
                text: after.row(y).chars().take(60).collect(),
            };
            return out(ReceiptKind::Consumed, ev);
        }
        // A long body's first line (the echo row) scrolls off at once, and an offline
        // claude is busy for only ~0.1-0.3 s, so both signs can be missed. The body's
        // end in the transcript is then the proof: the composer that held it is empty
        // and the transcript above it ends a copy of the body (new, unless the
        // composer held text before the submit key, as a repeated body shows the
        // same tail at the same rows).
        let c = v.composer.as_ref().map_or(after.rows.len(), |c| c.row);
        let held = bv.composer.as_ref().is_some_and(|c| !c.empty);
        let bc = bv.composer.as_ref().map_or(before.rows.len(), |c| c.row);
        let (b, a) = (tail_rows(body, before, bc), tail_rows(body, after, c));
        if let Some(&y) = a.last() {
            if held || a.len() > b.len() || a.last() != b.last() {
                let ev = Evidence {
                    rule: "verify.transcript-tail".into(),
                    row: Some(y),
                    col: Some(0),
                    text: after.row(y).chars().take(60).collect(),
                };
                return out(ReceiptKind::Consumed, ev);
            }
        }
        return out(
            ReceiptKind::Unknown,
            Evidence {
                rule: "verify.empty-composer-no-echo".into(),
                row: None,
                col: None,
                text: String::new(),
            },
        );
    }
    out(ReceiptKind::Unknown, v.evidence.clone())
}

/// How the turn running in a pane ended (`--until-done`, MCP `wait_done`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Turn {
    /// The agent is ready again after its turn (or no turn was running).
    pub done: bool,
    #[serde(serialize_with = "as_string")]
    pub state: State,
    pub reason: String,
    /// From the first look to the end of the turn.
    pub turn_ms: u64,
    /// A busy marker was seen: a turn did run.
    pub saw_busy: bool,
    pub timed_out: bool,
    /// What ended it: `screen` (busy, then ready) or the agent's own hook
    /// (`hook Stop`, `hook AfterAgent`); absent when it did not end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
}

fn as_string<S: serde::Serializer>(s: &State, ser: S) -> std::result::Result<S::Ok, S::Error> {
    ser.serialize_str(&s.to_string())
}

/// The exit code of a receipt: 0 for `consumed` (and `submitted`, `--no-verify`).
pub fn receipt_code(r: &ReceiptKind) -> i32 {
    match r {
        ReceiptKind::Consumed | ReceiptKind::Submitted => 0,
        ReceiptKind::Queued => code::RECEIPT_QUEUED,
        ReceiptKind::Stranded => code::RECEIPT_STRANDED,
        ReceiptKind::Refused => code::RECEIPT_REFUSED,
        ReceiptKind::Unknown => code::RECEIPT_UNKNOWN,
        ReceiptKind::Mangled => code::RECEIPT_MANGLED,
        ReceiptKind::Unproven => code::RECEIPT_UNPROVEN,
        // these carry their error's code; this is the one each has without it
        ReceiptKind::NotSent => code::PANE_CHANGED,
        ReceiptKind::Failed => code::DELIVERY_FAILED,
    }
}

/// The exit code of a turn's end: 0 done; else as a refusal of its last state.
pub fn turn_code(t: &crate::core::verify::Turn) -> i32 {
    if t.done {
        0
    } else {
        Refused::of(&t.state, t.timed_out).code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::profile::Profiles;

    #[test]
    fn an_agent_that_exits_after_an_exit_command_took_it() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut before =
            crate::io::capture::load(&root.join("claude/61-ready-200x50.txt"), None).unwrap();
        before.pid = None;
        let mut after = before.clone();
        after.dead = true;
        let profiles = Profiles::builtin();
        let p = profiles.get("claude").unwrap();
        let j = judge(p, "/exit", &before, &after);
        assert_eq!(j.receipt, ReceiptKind::Consumed);
        assert!(
            j.evidence.rule.starts_with("verify.exit-command"),
            "{}",
            j.evidence.rule
        );
        // any other body: the agent going away is not proof it took the prompt
        assert_eq!(
            judge(p, "fix the test", &before, &after).receipt,
            ReceiptKind::Unknown
        );
        assert!(is_exit_command(" /quit\n"));
        assert!(!is_exit_command("/exit now"));
    }
}
