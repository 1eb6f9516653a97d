//! The tty: raw mode (restored on exit, signal and panic), size, poll, read, write.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;

static SAVED: Mutex<Option<libc::termios>> = Mutex::new(None);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static WINCH: AtomicBool = AtomicBool::new(false);
/// What to print on the way out (mode resets), kept for the panic hook.
static RESET: Mutex<String> = Mutex::new(String::new());

/// Raw mode on stdin while alive; restores the saved settings on drop.
pub struct RawMode;

impl RawMode {
    /// `None` when stdin is not a terminal (then input is read as it comes).
    pub fn enter() -> Option<RawMode> {
        // SAFETY: plain termios calls on fd 0 with a zeroed, then filled, struct.
        unsafe {
            if libc::isatty(0) == 0 {
                return None;
            }
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return None;
            }
            *SAVED.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
            let mut raw = t;
            libc::cfmakeraw(&mut raw);
            raw.c_cc[libc::VMIN] = 1;
            raw.c_cc[libc::VTIME] = 0;
            libc::tcsetattr(0, libc::TCSANOW, &raw);
        }
        Some(RawMode)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        restore();
    }
}

/// Put back the saved tty settings (idempotent; used by Drop, signals and panics).
pub fn restore() {
    let saved = match SAVED.try_lock() {
        Ok(g) => *g,
        Err(std::sync::TryLockError::Poisoned(p)) => *p.into_inner(),
        Err(_) => None,
    };
    if let Some(t) = saved {
        // SAFETY: restoring a termios struct obtained from tcgetattr.
        unsafe {
            libc::tcsetattr(0, libc::TCSANOW, &t);
        }
    }
}

pub fn set_reset_sequence(s: &str) {
    *RESET.lock().unwrap_or_else(|e| e.into_inner()) = s.to_string();
}

pub fn reset_sequence() -> String {
    RESET.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

extern "C" fn on_signal(sig: libc::c_int) {
    if sig == libc::SIGWINCH {
        WINCH.store(true, Ordering::SeqCst);
    } else {
        SIGNAL.store(sig, Ordering::SeqCst);
    }
}

/// SIGTERM, SIGHUP, SIGINT and SIGQUIT end the main loop cleanly; SIGWINCH asks for a redraw.
pub fn install_handlers() {
    for sig in [
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGWINCH,
    ] {
        // SAFETY: the handler only stores into atomics.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        let mut out = std::io::stdout();
        let _ = out.write_all(reset_sequence().as_bytes());
        let _ = out.flush();
        prev(info);
    }));
}

/// The terminating signal received, if any.
pub fn signal() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

pub fn take_winch() -> bool {
    WINCH.swap(false, Ordering::SeqCst)
}

/// (columns, rows) of the terminal; 80x24 when unknown.
pub fn size() -> (usize, usize) {
    for fd in [1, 0] {
        // SAFETY: TIOCGWINSZ fills a winsize struct.
        unsafe {
            let mut ws: libc::winsize = std::mem::zeroed();
            if libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0 {
                return (ws.ws_col as usize, ws.ws_row as usize);
            }
        }
    }
    (80, 24)
}

pub enum Ready {
    Input,
    Hangup,
    Nothing,
}

/// Wait up to `ms` for stdin.
pub fn poll_stdin(ms: i32) -> Ready {
    let mut p = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r <= 0 {
        return Ready::Nothing;
    }
    if p.revents & libc::POLLIN != 0 {
        Ready::Input
    } else if p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        Ready::Hangup
    } else {
        Ready::Nothing
    }
}

/// One read() of at most `buf.len()` bytes: Some(n) (0 = end of input), None = try again.
pub fn read_stdin(buf: &mut [u8]) -> Option<usize> {
    // SAFETY: reading into a valid buffer of the given length.
    let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Some(n as usize);
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EINTR) | Some(libc::EAGAIN) => None,
        _ => Some(0),
    }
}

/// Write to the terminal; false when it is gone.
pub fn write_out(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    let mut out = std::io::stdout().lock();
    out.write_all(s.as_bytes()).is_ok() && out.flush().is_ok()
}
