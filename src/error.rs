//! One error type for the library, with a stable exit code per variant.
//!
//! The codes are part of the interface (scripts branch on them) and are
//! documented in the README's "Exit codes" table. Never renumber.

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
    pub const DELIVERY_FAILED: i32 = 30;
    pub const RECEIPT_QUEUED: i32 = 31;
    pub const RECEIPT_STRANDED: i32 = 32;
    pub const RECEIPT_REFUSED: i32 = 33;
    pub const RECEIPT_UNKNOWN: i32 = 34;
    pub const FANOUT_PARTIAL: i32 = 35;
    pub const FANOUT_NONE: i32 = 36;
    pub const RECEIPT_MANGLED: i32 = 37;
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
    #[error("stopped by {} before anything was typed; nothing typed", crate::interrupt::name(*.0))]
    Interrupted(i32),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Other(String),
}

/// Why the gate (or a guard) refused to type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: i32,
    pub message: String,
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
            Error::Refused(r) => r.code,
            Error::PaneChanged(..) => code::PANE_CHANGED,
            Error::Locked(..) => code::LOCKED,
            Error::DeliveryFailed { .. } => code::DELIVERY_FAILED,
            Error::Interrupted(sig) => code::INTERRUPTED_BASE + sig,
            Error::Io(_) | Error::Other(_) => code::INTERNAL,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
