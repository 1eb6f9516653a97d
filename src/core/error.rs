//! One error type for the library, with a stable exit code per variant.
//!
//! The codes are part of the interface (scripts branch on them) and are
//! documented in docs/exit-codes.md. Never renumber.

use thiserror::Error;

/// Exit codes. `0` is success (for `send`: receipt `consumed`).
pub mod code {
    pub const INTERNAL: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const TMUX_MISSING: i32 = 3;
    pub const NO_SERVER: i32 = 4;
    pub const NO_PANE: i32 = 5;
    pub const TMUX_FAILED: i32 = 6;
    pub const UNKNOWN_AGENT: i32 = 7;
    pub const PROFILE: i32 = 8;
    pub const SCREEN_FILE: i32 = 9;
    pub const BAD_BODY: i32 = 10;
    pub const TIMEOUT: i32 = 20;
    pub const REFUSED_DIALOG: i32 = 21;
    pub const REFUSED_BUSY: i32 = 22;
    pub const REFUSED_MODE: i32 = 23;
    pub const REFUSED_NOT_AGENT: i32 = 24;
    pub const REFUSED_EXITED: i32 = 25;
    pub const REFUSED_DRAFT: i32 = 26;
    pub const PANE_CHANGED: i32 = 27;
    pub const LOCKED: i32 = 28;
    pub const REFUSED_KEYS_ASTRAY: i32 = 29;
    pub const DELIVERY_FAILED: i32 = 30;
    pub const RECEIPT_QUEUED: i32 = 31;
    pub const RECEIPT_STRANDED: i32 = 32;
    pub const RECEIPT_REFUSED: i32 = 33;
    pub const RECEIPT_UNKNOWN: i32 = 34;
    pub const FANOUT_PARTIAL: i32 = 35;
    pub const FANOUT_NONE: i32 = 36;
    pub const RECEIPT_MANGLED: i32 = 37;
    /// The screen showed the prompt taken, but the agent's own record (known to
    /// be this agent process's) got no entry for it within its wait.
    pub const RECEIPT_UNPROVEN: i32 = 38;
    /// A fleet send (`--host` repeated, `--hosts FILE`): at least one host could
    /// not be reached or did not answer in time (its own row says why).
    pub const FLEET_HOST_FAILED: i32 = 39;
    /// `ask`: the turn stopped on an approval dialog (its text is in the answer;
    /// nothing was typed into it).
    pub const ASK_APPROVAL: i32 = 41;
    /// `ask`: the turn ended in an API error (its text is in the answer).
    pub const ASK_API_ERROR: i32 = 42;
    /// `ask`: the turn ended but the agent's record holds no answer to the
    /// prompt (an agent whose record keeps no replies; see `--from-screen`).
    pub const ASK_NO_ANSWER: i32 = 43;
    /// Stopped by a signal (Ctrl-C, `kill`) while waiting for the turn, after the
    /// prompt was delivered (`send --until-done`, `ask`, a fleet): never 128+N,
    /// which says nothing was typed (a wrapper may send again on that).
    pub const STOPPED_AFTER_DELIVERY: i32 = 44;
    /// 128 + the signal: stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129)
    /// before anything was typed.
    pub const INTERRUPTED_BASE: i32 = 128;
}

#[derive(Debug, Error)]
pub enum Error {
    #[error("tmux is not installed or not on PATH")]
    TmuxMissing,
    #[error("no tmux server is running{0}")]
    NoServer(String),
    #[error("no such pane: {0}")]
    NoPane(String),
    #[error("tmux {cmd} failed: {msg}")]
    Tmux { cmd: String, msg: String },
    #[error("tmux {0} timed out")]
    TmuxTimeout(String),
    #[error("unknown agent '{0}' (known: {1})")]
    UnknownAgent(String, String),
    #[error("profile error: {0}")]
    Profile(String),
    #[error("screen file {path}: {msg}")]
    ScreenFile { path: String, msg: String },
    #[error("bad body: {0}")]
    BadBody(String),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Refused(Refusal),
    #[error("pane {0} changed under us: {1}")]
    PaneChanged(String, String),
    #[error("pane {0} is locked by another sender (waited {1} ms)")]
    Locked(String, u64),
    #[error("delivery failed after {sent} of {total} chunks: {msg}")]
    DeliveryFailed {
        sent: usize,
        total: usize,
        msg: String,
    },
    #[error("stopped by {} before anything was typed; nothing typed", signal_name(*.0))]
    Interrupted(i32),
    /// The caller stopped the wait before anything was typed (an MCP client's
    /// cancellation, or the client gone): as a Ctrl-C would (130).
    #[error("cancelled while waiting; nothing typed")]
    Cancelled,
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Other(String),
}

/// What a refusal is about; each has its one exit code ([`Refused::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The gate waited its whole timeout (or the state has no refusal of its own).
    Timeout,
    Dialog,
    Busy,
    InMode,
    NotAgent,
    Exited,
    Draft,
    /// Keys would not reach this pane alone: its input is off, or its window
    /// has `synchronize-panes` on.
    KeysAstray,
    /// The pane went away after the submit key (the delivery failed).
    Gone,
    /// Another watcher holds the queue.
    Locked,
}

impl Refused {
    pub fn code(self) -> i32 {
        match self {
            Refused::Timeout => code::TIMEOUT,
            Refused::Dialog => code::REFUSED_DIALOG,
            Refused::Busy => code::REFUSED_BUSY,
            Refused::InMode => code::REFUSED_MODE,
            Refused::NotAgent => code::REFUSED_NOT_AGENT,
            Refused::Exited => code::REFUSED_EXITED,
            Refused::Draft => code::REFUSED_DRAFT,
            Refused::KeysAstray => code::REFUSED_KEYS_ASTRAY,
            Refused::Gone => code::DELIVERY_FAILED,
            Refused::Locked => code::LOCKED,
        }
    }
}

/// Why the gate (or a guard) refused to type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub why: Refused,
    pub message: String,
}

impl Error {
    /// A refusal of `why`, in `message`'s words.
    pub fn refused(why: Refused, message: impl Into<String>) -> Error {
        Error::Refused(Refusal {
            why,
            message: message.into(),
        })
    }
}

/// The name of a signal, for messages.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// The exit code of a fan-out where `consumed` of `total` targets took the prompt.
pub fn fanout_code(consumed: usize, total: usize) -> i32 {
    if consumed == total {
        0
    } else if consumed > 0 {
        code::FANOUT_PARTIAL
    } else {
        code::FANOUT_NONE
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::TmuxMissing => code::TMUX_MISSING,
            Error::NoServer(_) => code::NO_SERVER,
            Error::NoPane(_) => code::NO_PANE,
            Error::Tmux { .. } | Error::TmuxTimeout(_) => code::TMUX_FAILED,
            Error::UnknownAgent(..) => code::UNKNOWN_AGENT,
            Error::Profile(_) => code::PROFILE,
            Error::ScreenFile { .. } => code::SCREEN_FILE,
            Error::BadBody(_) => code::BAD_BODY,
            Error::Usage(_) => code::USAGE,
            Error::Refused(r) => r.why.code(),
            Error::PaneChanged(..) => code::PANE_CHANGED,
            Error::Locked(..) => code::LOCKED,
            Error::DeliveryFailed { .. } => code::DELIVERY_FAILED,
            Error::Interrupted(sig) => code::INTERRUPTED_BASE + sig,
            Error::Cancelled => code::INTERRUPTED_BASE + libc::SIGINT,
            Error::Io(_) | Error::Other(_) => code::INTERNAL,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// What a send's outcome means, in the one line the tmux plugin shows (the
/// `notice` of `send --json`): `pane` (`agent`, when known) and the gate's last
/// `state`. `None` for the codes that have no words of their own here (the
/// error says it).
pub fn notice(
    pane: &str,
    agent: Option<&str>,
    state: Option<&str>,
    exit: i32,
    total_ms: Option<u64>,
) -> Option<String> {
    let agent = agent.filter(|a| !a.is_empty());
    let who = match agent {
        Some(a) => format!("{pane} {a}"),
        None => pane.to_string(),
    };
    let named = agent.unwrap_or("?");
    let state = state.unwrap_or("");
    Some(match exit {
        0 => format!(
            "sent to {pane} ({named}) consumed in {} ms",
            total_ms.map_or("?".into(), |m| m.to_string())
        ),
        code::TIMEOUT => format!(
            "{who} not ready in time ({}), nothing sent",
            if state.is_empty() { "?" } else { state }
        ),
        code::REFUSED_DIALOG => format!(
            "{who} shows a {} dialog, nothing sent",
            state.strip_prefix("dialog:").unwrap_or(state)
        ),
        code::REFUSED_BUSY => format!("{who} is busy, nothing sent"),
        code::REFUSED_MODE => format!("{who} is in copy mode, nothing sent"),
        code::REFUSED_NOT_AGENT => format!("{pane} runs no agent, nothing sent"),
        code::REFUSED_EXITED => format!("{who} has exited, nothing sent"),
        code::REFUSED_DRAFT => format!("{who} has a draft in its composer, nothing sent"),
        code::LOCKED => format!("{who} is being sent to by someone else, nothing sent"),
        code::REFUSED_KEYS_ASTRAY => {
            format!("{who}: keys would not reach it alone (synchronize-panes or input off), nothing sent")
        }
        code::RECEIPT_QUEUED => {
            format!("sent to {pane} ({named}), queued behind the current turn")
        }
        code::RECEIPT_STRANDED => {
            format!("typed into {pane} ({named}) but the submit did not take")
        }
        code::RECEIPT_REFUSED => format!("{who} refused the prompt"),
        code::RECEIPT_UNKNOWN => format!("sent to {pane} ({named}), no receipt seen"),
        code::RECEIPT_MANGLED => {
            format!("sent to {pane} ({named}), but its own record differs from the prompt")
        }
        code::RECEIPT_UNPROVEN => {
            format!("sent to {pane} ({named}), but its own record shows no entry for it")
        }
        code::ASK_APPROVAL => format!("{who} stopped on an approval dialog"),
        code::STOPPED_AFTER_DELIVERY => format!(
            "sent to {pane} ({named}); stopped waiting for its turn (the agent keeps working)"
        ),
        code::ASK_API_ERROR => format!("{who} answered with an API error"),
        code::ASK_NO_ANSWER => format!("{who} left no answer in its record"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words the tmux plugin shows for each outcome (it kept them in a table
    /// of its own before).
    #[test]
    fn notices() {
        let n = |c, agent, state, ms| notice("%3", agent, state, c, ms);
        assert_eq!(
            n(0, Some("codex"), Some("ready"), Some(120)).unwrap(),
            "sent to %3 (codex) consumed in 120 ms"
        );
        assert_eq!(
            n(code::TIMEOUT, Some("claude"), Some("busy"), None).unwrap(),
            "%3 claude not ready in time (busy), nothing sent"
        );
        assert_eq!(
            n(
                code::REFUSED_DIALOG,
                Some("gemini"),
                Some("dialog:trust"),
                None
            )
            .unwrap(),
            "%3 gemini shows a trust dialog, nothing sent"
        );
        assert_eq!(
            n(code::REFUSED_NOT_AGENT, None, None, None).unwrap(),
            "%3 runs no agent, nothing sent"
        );
        assert_eq!(
            n(code::LOCKED, None, None, None).unwrap(),
            "%3 is being sent to by someone else, nothing sent"
        );
        assert_eq!(
            n(code::RECEIPT_STRANDED, Some("claude"), Some("ready"), None).unwrap(),
            "typed into %3 (claude) but the submit did not take"
        );
        // no words of its own: the error says it
        assert_eq!(n(code::PANE_CHANGED, None, None, None), None);
        assert_eq!(n(code::BAD_BODY, None, None, None), None);
    }

    #[test]
    fn every_refusal_has_its_code() {
        assert_eq!(
            Error::refused(Refused::Gone, "x").exit_code(),
            code::DELIVERY_FAILED
        );
        assert_eq!(fanout_code(2, 2), 0);
        assert_eq!(fanout_code(1, 2), code::FANOUT_PARTIAL);
        assert_eq!(fanout_code(0, 2), code::FANOUT_NONE);
    }
}
