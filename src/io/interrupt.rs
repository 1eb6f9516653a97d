//! SIGINT and SIGTERM: before anything is typed they stop promptgate at once
//! (nothing typed, nothing to undo); once typing has begun they are held until
//! the send has finished and reported, so that a prompt is never left half
//! typed or typed without its Enter by a Ctrl-C or a `kill`.
//!
//! (SIGKILL cannot be held: the tmux client that carries a paste runs in its
//! own process group and reads the body from a complete, unlinked file, so it
//! pastes all of it or, killed itself first, nothing. See `tmux::Process::run`.)

use crate::core::error::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

/// How many deliveries have begun typing and not yet finished (the MCP
/// server and the queue deliver to several panes at once).
static TYPING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's delivery counts in [`TYPING`].
    static MINE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
/// A live status line is on stderr (`cmd::live`): erase it before dying.
pub static LINE_DRAWN: AtomicBool = AtomicBool::new(false);

/// Erase the status line, if one shows, and die of `sig` (async-signal-safe).
fn die_of(sig: libc::c_int) {
    if LINE_DRAWN.load(Ordering::SeqCst) {
        let s = b"\r\x1b[K";
        unsafe { libc::write(2, s.as_ptr().cast(), s.len()) };
    }
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}
static PENDING: AtomicI32 = AtomicI32::new(0);
/// `ask` waits for a turn after its prompt was delivered: a signal stops the
/// wait (it sets [`STOP_WAIT`]) and `ask` says the prompt was delivered.
static WAITING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
pub static STOP_WAIT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    if TYPING.load(Ordering::SeqCst) > 0 {
        PENDING.store(sig, Ordering::SeqCst);
    } else if WAITING.load(Ordering::SeqCst) > 0 {
        STOP_WAIT.store(true, Ordering::SeqCst);
    } else {
        // nothing typed yet: die as if there were no handler
        die_of(sig);
    }
}

/// Install the handlers (once, at start-up of a command that types).
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, &sa, &mut old);
            // a signal the caller ignores (nohup, a parent's SIG_IGN) stays ignored
            if old.sa_sigaction == libc::SIG_IGN {
                libc::sigaction(sig, &old, std::ptr::null_mut());
            }
        }
    }
}

/// Called right before the first byte is written to a pane: from now on a
/// signal waits for the send to finish. A signal that already came (another
/// target of a fan-out had begun typing) stops this one untyped.
pub fn begin_typing() -> Result<()> {
    if !MINE.with(|m| m.replace(true)) {
        TYPING.fetch_add(1, Ordering::SeqCst);
    }
    match PENDING.load(Ordering::SeqCst) {
        0 => Ok(()),
        sig => Err(Error::Interrupted(sig)),
    }
}

/// This thread's send has finished and reported: once no other send is
/// typing, a signal held back since typing began takes effect (the process
/// ends by it, as it would have). A thread that typed nothing changes nothing.
pub fn finished() {
    if !MINE.with(|m| m.replace(false)) {
        return;
    }
    let before = TYPING
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            Some(n.saturating_sub(1))
        })
        .unwrap_or(0);
    if before > 1 {
        return;
    }
    if let Some(sig) = take_held("came while a prompt was being typed: the send was finished first")
    {
        die_of(sig);
    }
}

/// The end of a one-shot command (`send`, `ask`): a signal held back while its
/// prompt was typed is only said; the exit code stays the receipt's, so that a
/// delivered prompt never exits 128+N ("nothing typed").
pub fn held_at_exit() {
    take_held(
        "came after typing began: the send was finished first, and its exit code is its receipt's",
    );
}

/// Typing is over: the signal held back meanwhile, if any, said on stderr
/// (`promptgate: SIGNAL <said>`).
fn take_held(said: &str) -> Option<i32> {
    let sig = PENDING.swap(0, Ordering::SeqCst);
    (sig != 0).then(|| {
        eprintln!("promptgate: {} {said}", name(sig));
        sig
    })
}

/// From now until dropped, a signal stops `ask`'s wait for a turn (never the
/// agent) instead of ending the process: the caller reports and exits.
pub struct Waiting;

impl Waiting {
    /// Call once the prompt is delivered (typing is over): a signal that came
    /// while it was typed stops the wait at once.
    pub fn begin() -> Waiting {
        WAITING.fetch_add(1, Ordering::SeqCst);
        // (a one-shot command: every delivery of it is over)
        TYPING.store(0, Ordering::SeqCst);
        MINE.with(|m| m.set(false));
        if PENDING.swap(0, Ordering::SeqCst) != 0 {
            STOP_WAIT.store(true, Ordering::SeqCst);
        }
        Waiting
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        WAITING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Calls [`finished`] when dropped: one delivery of a long-running command.
pub struct Finished;

impl Drop for Finished {
    fn drop(&mut self) {
        finished();
    }
}

/// The signal held back while typing, if any.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

pub use crate::core::error::signal_name as name;
