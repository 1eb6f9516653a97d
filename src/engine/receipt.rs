//! The receipt of one send: what `send --json` prints, the delivery log keeps,
//! the queue and the MCP server read, and the plugin shows. One type, written
//! and read by its fields (serialized to the same JSON as always).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::detect::Evidence;
pub use crate::core::verify::ReceiptKind;
use crate::core::verify::Turn;
use crate::io::record::Proof;

/// What the gate did before the send typed (the last gate, if it gated again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateSummary {
    pub ready: bool,
    pub state: String,
    pub waited_ms: u64,
    pub polls: u32,
    pub reason: String,
    /// Why it gated again, each time the pane changed before anything was typed.
    pub regated: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    pub gate_ms: u64,
    pub type_ms: u64,
    pub settle_ms: u64,
    pub settled: bool,
    pub verify_ms: u64,
    pub total_ms: u64,
    /// When the (first) submit key was issued: Unix epoch ms (taken before the
    /// tmux call, which can return well after the agent took the prompt).
    pub submit_at_ms: u64,
}

/// How the turn a send started ended (`--until-done`, `ask`), or why the wait
/// for it failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum TurnReport {
    Ended(Turn),
    /// The wait for the turn failed: `done` is false, `error` says why.
    Failed {
        done: bool,
        error: String,
    },
}

impl TurnReport {
    pub fn failed(error: impl Into<String>) -> TurnReport {
        TurnReport::Failed {
            done: false,
            error: error.into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Receipt {
    /// When the gate opened (Unix ms), right before typing.
    pub time_ms: u64,
    pub pane: String,
    pub server: String,
    pub agent: String,
    pub bytes_in: usize,
    pub bytes_out: usize,
    pub framing: crate::core::plan::Framing,
    pub chunks: usize,
    pub changes: Vec<crate::core::plan::Change>,
    pub forced: bool,
    pub control_mode: bool,
    pub lock_waited_ms: u64,
    pub gate: GateSummary,
    /// The agent's own record about this send.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
    pub receipt: ReceiptKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The rule that decided the receipt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resubmits: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<Timings>,
    pub exit_code: i32,
    /// `--until-done`: how the turn the prompt started ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnReport>,
    /// Who asked, when not the command line (`mcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

impl Receipt {
    /// The rule of the evidence, if there is evidence.
    pub fn evidence_rule(&self) -> Option<&str> {
        self.evidence.as_ref().map(|e| e.rule.as_str())
    }

    /// The rule of the evidence (empty when there is none).
    pub fn rule(&self) -> &str {
        self.evidence_rule().unwrap_or("")
    }

    /// The proof's `match` (`exact`, `mangled`, …), if there is a proof.
    pub fn proof_match(&self) -> Option<&str> {
        self.proof.as_ref().map(|p| p.matched)
    }

    /// The proof's `source` (`transcript`, `history`, `hook`, `screen`), if there is a proof.
    pub fn proof_source(&self) -> Option<&str> {
        self.proof.as_ref().map(|p| p.source)
    }

    /// What is known about the turn this send started (`--until-done`): the
    /// agent's own record holds the body (exactly or not), so its turn began;
    /// otherwise only a busy screen or the start grace can say so.
    pub fn turn_start(&self) -> crate::engine::gate::TurnStart {
        // (an input history that is no sign of a turn begun is an `[record]`
        // of its own, `input_history`; `[record] history` is written as the
        // turn begins: Claude Code's, on the submit of an idle agent)
        let taken = matches!(self.proof_source(), Some("transcript" | "history"))
            && matches!(
                self.proof_match(),
                Some("exact" | "exact-but-whitespace" | "mangled")
            );
        if taken {
            crate::engine::gate::TurnStart::Taken
        } else {
            crate::engine::gate::TurnStart::Submitted
        }
    }

    /// What sanitising changed, for a plain line: `; 2 changes: removed
    /// paste-frame marker ESC[201~ x1, removed control byte x1` (empty if none).
    pub fn changes_text(&self) -> String {
        if self.changes.is_empty() {
            return String::new();
        }
        let n: usize = self.changes.iter().map(|c| c.count).sum();
        let each: Vec<String> = self
            .changes
            .iter()
            .map(|c| format!("{} x{}", c.what, c.count))
            .collect();
        format!(
            "; {n} change{}: {}",
            if n == 1 { "" } else { "s" },
            each.join(", ")
        )
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::plan::{Change, Framing};

    fn consumed() -> Receipt {
        Receipt {
            time_ms: 1796161192112,
            pane: "%0".into(),
            server: "/tmp/tmux-0/default".into(),
            agent: "claude".into(),
            bytes_in: 54,
            bytes_out: 54,
            framing: Framing::BracketedPaste,
            chunks: 2,
            changes: vec![Change {
                what: "CRLF/CR -> LF".into(),
                count: 1,
            }],
            forced: false,
            control_mode: true,
            lock_waited_ms: 0,
            gate: GateSummary {
                ready: true,
                state: "ready".into(),
                waited_ms: 105,
                polls: 5,
                reason: "ready and still".into(),
                regated: vec![],
            },
            proof: Some(Proof {
                source: "transcript",
                matched: "exact",
                ..Proof::default()
            }),
            receipt: ReceiptKind::Consumed,
            error: None,
            evidence: Some(Evidence {
                rule: "claude.footer.esc-to-interrupt".into(),
                ..Evidence::default()
            }),
            resubmits: Some(0),
            timings: Some(Timings {
                gate_ms: 109,
                type_ms: 21,
                settle_ms: 68,
                settled: true,
                verify_ms: 26,
                total_ms: 363,
                submit_at_ms: 1796161192400,
            }),
            exit_code: 0,
            turn: None,
            via: None,
        }
    }

    /// The JSON keys, in the order `send --json` has always printed them.
    #[test]
    fn serializes_to_the_receipt_json_and_back() {
        let r = consumed();
        let v = r.to_json();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "time_ms",
                "pane",
                "server",
                "agent",
                "bytes_in",
                "bytes_out",
                "framing",
                "chunks",
                "changes",
                "forced",
                "control_mode",
                "lock_waited_ms",
                "gate",
                "proof",
                "receipt",
                "evidence",
                "resubmits",
                "timings",
                "exit_code"
            ]
        );
        assert_eq!(v["framing"], "bracketed-paste");
        assert_eq!(v["receipt"], "consumed");
        assert_eq!(v["gate"]["regated"], serde_json::json!([]));
        assert_eq!(r.rule(), "claude.footer.esc-to-interrupt");
        assert_eq!(r.proof_match(), Some("exact"));
        assert_eq!(v["proof"]["source"], "transcript");
        assert_eq!(v["evidence"]["rule"], "claude.footer.esc-to-interrupt");
        assert_eq!(r.changes_text(), "; 1 change: CRLF/CR -> LF x1");
    }

    #[test]
    fn kinds_are_the_receipt_words() {
        for (k, w) in [
            (ReceiptKind::Consumed, "consumed"),
            (ReceiptKind::NotSent, "not-sent"),
            (ReceiptKind::Failed, "failed"),
            (ReceiptKind::Mangled, "mangled"),
            (ReceiptKind::Unproven, "unproven"),
        ] {
            assert_eq!(serde_json::to_value(k).unwrap(), w);
            assert_eq!(k.to_string(), w);
        }
    }
}
