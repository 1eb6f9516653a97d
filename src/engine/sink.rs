//! sink: what a delivery tells the one who runs it, as it goes, the way
//! ripgrep's searcher drives a `Sink`.
//!
//! [`crate::engine::deliver::Delivery::run`] calls [`Sink::wait_begins`],
//! [`Sink::waiting`] and [`Sink::wait_ends`] around each wait (the pane's lock,
//! the gate, the verification), and [`Sink::phase`] before the first byte and
//! before the submit key. The command that reports a delivery calls
//! [`Sink::finish`] once, after whatever it waited for (a turn, an answer):
//! that is the one place the delivery log is written. A not-sent record is
//! built in one place too: [`not_sent`].
//!
//! The sinks: [`Quiet`] (nothing shown), `io::live::Live` (the status line on
//! a terminal), the queue's journal and the MCP server's progress.

use crate::core::error::Result;
use crate::engine::receipt::Receipt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// Where an item's delivery stands (journalled before each step).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Not tried yet, or nothing typed.
    Pending,
    /// Typing has begun (before the first byte).
    Typing,
    /// The body is typed; the submit key goes next.
    Submitting,
    /// Kept for a person (something went wrong after the submit key).
    Held,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "pending",
            Phase::Typing => "typing",
            Phase::Submitting => "submitting",
            Phase::Held => "held",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub trait Sink {
    /// A wait begins on `pane` (the lock, the gate, the verification), for at most `timeout`.
    fn wait_begins(&mut self, _pane: &str, _agent: &str, _timeout: Duration) {}

    /// The wait goes on. `what` says what the pane shows and what the wait is
    /// for; it reads the screen, so it is called only when the sink will use it.
    fn waiting(&mut self, _what: &mut dyn FnMut() -> (String, String)) {}

    /// The wait is over.
    fn wait_ends(&mut self) {}

    /// The agent's record was marked before typing (the queue keeps what the
    /// mark saw with the item, for its recovery after a crash).
    fn marked(&mut self, _mark: &crate::io::record::SavedMark) {}

    /// Called with `Typing` before the first byte and `Submitting` before the
    /// submit key. An error stops the delivery there: nothing typed, or typed
    /// and not submitted.
    fn phase(&mut self, _phase: Phase) -> Result<()> {
        Ok(())
    }

    /// The delivery as the command reports it, once: written to the delivery
    /// log (`io::log`), here and nowhere else.
    fn finish(&mut self, f: &Finished) {
        match f {
            Finished::Receipt(r) => crate::io::log::append(r),
            Finished::Json(v) => crate::io::log::append(v),
        }
    }
}

/// How a delivery ended, as its command reports it.
pub enum Finished<'a> {
    /// A receipt (with the turn, when the command waited for it).
    Receipt(&'a Receipt),
    /// A record as JSON: a receipt with what the caller adds (MCP: `via`, its
    /// exit code and error), or [`not_sent`].
    Json(&'a Value),
}

/// Shows nothing; [`Sink::finish`] logs.
pub struct Quiet;

impl Sink for Quiet {}

/// The record of a delivery that ended before any receipt (nothing typed):
/// `fields` (the pane, the error, the exit code, ...) with the time and
/// `"receipt": "not-sent"`.
pub fn not_sent(fields: Value) -> Value {
    let mut v = match fields {
        Value::Object(_) => fields,
        _ => Value::Object(Default::default()),
    };
    v["time_ms"] = (crate::io::tmux::now_ms() as u64).into();
    v["receipt"] = crate::core::verify::ReceiptKind::NotSent.as_str().into();
    v
}

/// The live status line on a terminal is a sink.
impl Sink for crate::io::live::Live {
    fn wait_begins(&mut self, pane: &str, agent: &str, timeout: Duration) {
        self.begin(pane, agent, timeout);
    }

    fn waiting(&mut self, what: &mut dyn FnMut() -> (String, String)) {
        self.tick_with(what);
    }

    fn wait_ends(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_not_sent_record_is_the_fields_with_its_time_and_receipt() {
        let v = not_sent(serde_json::json!({"pane": "%3", "exit_code": 21}));
        assert_eq!(v["receipt"], "not-sent");
        assert_eq!(v["pane"], "%3");
        assert_eq!(v["exit_code"], 21);
        assert!(v["time_ms"].as_u64().unwrap() > 0);
        assert_eq!(not_sent(Value::Null)["receipt"], "not-sent");
    }
}
