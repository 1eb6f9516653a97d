//! Output that survives a closed pipe, and the one JSON object that reports
//! how a `--json` command ended.

use crate::core::detect::Verdict;
use crate::core::error::Result;
use crate::core::identify::Identity;
use crate::core::screen::Screen;
use std::io::Write;

static REPORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Print the one JSON object that reports how a `--json` command ended (a
/// receipt, or an error); once it is out, `main` prints no other.
pub fn out_json(v: &serde_json::Value) -> Result<()> {
    REPORTED.store(true, std::sync::atomic::Ordering::SeqCst);
    out(&v.to_string())
}

/// A `send --json` that ends before any receipt (no pane, a bad body, a usage
/// error): its error object, with `time_ms`, goes to the delivery log as a
/// receipt would (so every attempt is there), then to stdout.
pub fn not_sent_json(v: serde_json::Value) -> Result<()> {
    use crate::engine::sink::{Finished, Quiet, Sink};
    let v = crate::engine::sink::not_sent(v);
    Quiet.finish(&Finished::Json(&v));
    out_json(&v)
}

/// Whether [`out_json`] has reported the outcome already.
pub fn reported() -> bool {
    REPORTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Print a line to stdout; a closed pipe ends the command quietly (exit 0).
pub fn out(line: &str) -> Result<()> {
    let mut o = std::io::stdout().lock();
    o.write_all(line.as_bytes())?;
    o.write_all(b"\n")?;
    o.flush()?;
    Ok(())
}

/// The plain line for a turn's end.
pub fn turn_line(pane: &str, t: &crate::engine::gate::Turn) -> String {
    if t.done {
        format!("{pane}\tdone\tthe turn ended after {} ms", t.turn_ms)
    } else if t.timed_out {
        format!(
            "{pane}\tnot done\tstill {} after {} ms ({}); to wait longer, raise --done-timeout",
            t.state, t.turn_ms, t.reason
        )
    } else {
        format!(
            "{pane}\tnot done\t{} after {} ms ({})",
            t.state, t.turn_ms, t.reason
        )
    }
}

/// The human explanation: the pane facts, who runs there, every rule, the verdict.
pub fn explanation(what: &str, s: &Screen, id: Option<&Identity>, v: &Verdict) -> Result<()> {
    out(&format!(
        "{what}: {}x{}, cursor {}, cursor_flag {}, in_mode {}, dead {}, alternate_on {}, command {}, title {:?}{}{}",
        s.width,
        s.height,
        s.cursor.map(|(x, y)| format!("{x},{y}")).unwrap_or("?".into()),
        s.cursor_visible.map(|v| (v as u8).to_string()).unwrap_or("?".into()),
        s.in_mode as u8,
        s.dead as u8,
        s.alternate_on as u8,
        s.command.as_deref().unwrap_or("?"),
        s.title.as_deref().unwrap_or(""),
        s.quiet_ms
            .map(|q| format!(", no output for {} s+", q / 1000))
            .unwrap_or_default(),
        s.bracketed_paste
            .map(|b| format!(", bracketed paste {}", if b { "on" } else { "off" }))
            .unwrap_or_default()
    ))?;
    if let Some(id) = id {
        out(&format!(
            "agent: {} (identified by {}: {})",
            id.agent.as_deref().unwrap_or("none"),
            id.how,
            id.detail
        ))?;
    }
    for c in &v.checks {
        out(&format!(
            "  {} {:<40} {}",
            if c.fired { "FIRED" } else { "  -  " },
            c.rule,
            c.detail
        ))?;
    }
    out(&format!("state: {}  ({})", v.state, v.reason()))
}
