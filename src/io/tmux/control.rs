//! The control-mode backend: one `tmux -C` connection for cheap polling.
//!
//! Measured: about 0.1 ms per query over control mode against about 4 ms per
//! forked client. Reads go through the connection; writes (keys, pastes) and
//! anything the connection cannot do go through the one-shot backend, and if
//! the connection cannot attach or dies, reads fall back to one-shot too.

use super::lang::{resolved, tmux_quote, RESOLVE_FORMAT};
use super::process::{not_pasted, paste_failed, Guarded};
use super::{
    exact_target, is_pane_id, now_ms, parse_read, Guard, PaneInfo, Process, Server, Tmux,
    READ_FORMAT,
};
use crate::core::error::{Error, Result};
use crate::core::screen::Screen;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Control {
    pub one_shot: Process,
    conn: Option<SharedConn>,
    /// Why the connection is not in use (for `explain` and the log).
    pub fallback_reason: Option<String>,
    /// Not attached yet: attach when reads have gone on this long (see `new`).
    pending: Option<(String, Instant, Duration)>,
}

/// A connection that several readers (the threads of one fan-out) take turns on:
/// one attach for all of them, and a poll costs ~0.25 ms instead of a fork each.
#[derive(Clone)]
pub struct SharedConn(Arc<Mutex<Conn>>);

impl SharedConn {
    fn exec(&self, line: &str, until: Until, timeout: Duration) -> Result<Replies> {
        let mut c = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if c.broken {
            return Err(Error::NoServer(
                " (control connection failed earlier)".into(),
            ));
        }
        // After a failure the stream may hold a half-read reply: nobody uses it again.
        let r = c.exec(line, until, timeout);
        c.broken = r.is_err();
        r
    }
}

type Replies = Vec<std::result::Result<String, String>>;

/// When `exec` has read all the replies to a command line.
#[derive(Clone, Copy)]
enum Until<'a> {
    /// After this many blocks.
    Blocks(usize),
    /// After the first block whose output starts with this (a command can add
    /// blocks: `if-shell` adds one for the command it runs).
    Marker(&'a str),
}

struct Conn {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    broken: bool,
    /// The server's key ([`Tmux::server_key`]): whose attach lock the detach takes.
    server_key: String,
}

/// tmux 3.2a to 3.6a crash (`control_write` on a control client whose
/// `control_state` is not set yet: tmux 3.7 checks it) when any notification
/// for control clients fires while a control client is between its identify
/// messages: our own attach (`client-session-changed`) and detach
/// (`client-detached`) are such notifications, and so is every paste buffer
/// made or deleted (`paste-buffer-changed`, `-deleted`), which each paste
/// does. So every promptgate process attaches and detaches its control
/// clients one at a time per server, and pastes only between them: this lock
/// (a `flock`, across processes and threads) is held from spawning the client
/// until it has answered, from its detach until it has exited, and around
/// each paste on those releases. No notification of ours then fires while one
/// of ours identifies.
pub(crate) fn attach_lock(server_key: &str) -> Option<crate::io::lock::PaneLock> {
    crate::io::lock::PaneLock::acquire(server_key, "control-attach", Duration::from_secs(10)).ok()
}

/// The connections this process holds, one per server and session: every reader
/// of the process (the MCP server's concurrent tools, a fan-out's threads) polls
/// through the one, instead of attaching (and later detaching) one each.
type Registry = Mutex<Vec<(String, std::sync::Weak<Mutex<Conn>>)>>;

fn registry() -> &'static Registry {
    static R: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    R.get_or_init(|| Mutex::new(Vec::new()))
}

impl Drop for Conn {
    fn drop(&mut self) {
        // (a connection that never answered is dropped while its opener holds the lock)
        let _lock = (!self.server_key.is_empty())
            .then(|| attach_lock(&self.server_key))
            .flatten();
        let _ = self.stdin.write_all(b"detach-client\n");
        let _ = self.stdin.flush();
        let deadline = Instant::now() + Duration::from_millis(200);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Conn {
    fn open(server: &Server, session: &str) -> Result<Conn> {
        let mut args = server.args();
        args.extend(
            [
                "-C",
                "attach-session",
                "-f",
                "no-output,ignore-size",
                "-t",
                session,
            ]
            .map(String::from),
        );
        let mut cmd = super::Launcher::current().command(&args);
        // If promptgate dies (even by SIGKILL), its control client must go too:
        // an orphaned `tmux -C` whose reader is gone keeps a killed server alive.
        // Its own process group: a Ctrl-C at the terminal while a prompt is typed
        // is held by promptgate (see `interrupt`) and must not cut the connection.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = crate::io::proc::spawn_tied(cmd).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::TmuxMissing,
            _ => Error::Io(e),
        })?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).split(b'\n') {
                let Ok(line) = line else { break };
                if tx
                    .send(String::from_utf8_lossy(&line).into_owned())
                    .is_err()
                {
                    break;
                }
            }
        });
        Ok(Conn {
            child,
            stdin,
            lines: rx,
            broken: false,
            server_key: String::new(),
        })
    }

    /// Send one command line; collect the output of the blocks of ours that follow,
    /// `until` says how many.
    fn exec(&mut self, line: &str, until: Until, timeout: Duration) -> Result<Replies> {
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.write_all(b"\n")?;
        self.stdin.flush()?;
        let deadline = Instant::now() + timeout;
        let mut out: Replies = Vec::new();
        let mut cur: Option<(String, bool, String)> = None; // (end tag, ours, text)
        let done = |out: &Replies| match until {
            Until::Blocks(n) => out.len() >= n,
            Until::Marker(m) => out
                .last()
                .is_some_and(|r| r.as_ref().is_ok_and(|t| t.starts_with(m))),
        };
        while !done(&out) {
            let left = deadline.saturating_duration_since(Instant::now());
            let l = match self.lines.recv_timeout(left) {
                Ok(l) => l,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(Error::TmuxTimeout("control-mode query".into()))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::NoServer(" (control connection closed)".into()))
                }
            };
            match &mut cur {
                None => {
                    if let Some(rest) = l.strip_prefix("%begin ") {
                        let f: Vec<&str> = rest.split(' ').collect();
                        let ours = f.get(2) == Some(&"1");
                        cur = Some((
                            format!("{} {}", f.first().unwrap_or(&""), f.get(1).unwrap_or(&"")),
                            ours,
                            String::new(),
                        ));
                    } else if l.starts_with("%exit") {
                        return Err(Error::NoServer(" (control connection exited)".into()));
                    }
                }
                Some((tag, ours, text)) => {
                    let end = l
                        .strip_prefix("%end ")
                        .or_else(|| l.strip_prefix("%error "));
                    if let Some(rest) = end.filter(|r| r.starts_with(tag.as_str())) {
                        let ok = l.starts_with("%end ");
                        let _ = rest;
                        if *ours {
                            let t = std::mem::take(text);
                            out.push(if ok { Ok(t) } else { Err(t) });
                        }
                        cur = None;
                    } else {
                        text.push_str(&l);
                        text.push('\n');
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A read from the replies to `display-message -p READ_FORMAT` and `capture-pane -p`.
fn screen_of(pane: &str, head: &str, grid: &str, issued: Option<u128>) -> Result<Screen> {
    let s = parse_read(
        pane,
        &format!("{}\n{grid}", head.trim_end_matches('\n')),
        issued,
        now_ms(),
    )?;
    if s.height == 0 {
        return Err(Error::NoPane(pane.to_string()));
    }
    Ok(s)
}

/// `PROMPTGATE_CONTROL`: `off`/`0`, `on`/`1`, or unset/`auto` (lazy).
#[derive(PartialEq)]
enum Setting {
    Off,
    On,
    Lazy,
}

fn setting() -> Setting {
    match std::env::var("PROMPTGATE_CONTROL").as_deref() {
        Ok("off") | Ok("0") => Setting::Off,
        Ok("on") | Ok("1") => Setting::On,
        _ => Setting::Lazy,
    }
}

impl Control {
    /// A reader for the server of `pane` (a pane id or target). Never fails:
    /// without a connection, reads use one-shot calls.
    ///
    /// tmux (3.3a and, per upstream reports, later releases too) can crash the
    /// whole server when a control client is still identifying while a window
    /// opens or closes (tmux PR 4980/5004). So by default (`PROMPTGATE_CONTROL`
    /// unset or `auto`) the connection is opened only once reads have gone on for
    /// 500 ms: a send to a ready agent never attaches one, and a long wait (a cold
    /// start, a busy agent) polls through one connection. `on` attaches at once,
    /// `off` never.
    pub fn new(server: Server, pane: &str) -> Control {
        let one_shot = Process::new(server);
        let mut c = Control {
            one_shot,
            conn: None,
            fallback_reason: None,
            pending: None,
        };
        match setting() {
            Setting::Off => c.fallback_reason = Some("PROMPTGATE_CONTROL=off".into()),
            Setting::On => c.attach(pane),
            Setting::Lazy => {
                c.fallback_reason =
                    Some("not attached yet (attaches after 500 ms of polling)".into());
                c.pending = Some((pane.to_string(), Instant::now(), Duration::from_millis(500)));
            }
        }
        c
    }

    /// A reader attached at once, whatever `PROMPTGATE_CONTROL` says (benchmarks).
    pub fn attached(server: Server, pane: &str) -> Control {
        let mut c = Control {
            one_shot: Process::new(server),
            conn: None,
            fallback_reason: None,
            pending: None,
        };
        c.attach(pane);
        c
    }

    /// Attach now if the lazy deadline has passed.
    fn maybe_attach(&mut self) {
        if let Some((pane, since, after)) = &self.pending {
            if since.elapsed() >= *after {
                let pane = pane.clone();
                self.pending = None;
                self.attach(&pane);
            }
        }
    }

    fn attach(&mut self, pane: &str) {
        let server = self.one_shot.server.clone();
        // the pane's session and the server's socket in one call (over ssh,
        // each call is a session of its own)
        let asked = self.one_shot.run(
            &[
                "display-message",
                "-p",
                "-t",
                &exact_target(pane),
                "#{session_id}\t#{socket_path}",
            ],
            None,
            Some(pane),
        );
        let session = asked.map(|s| {
            let (id, socket) = s
                .trim_end_matches('\n')
                .split_once('\t')
                .unwrap_or((&s, ""));
            if !socket.is_empty() {
                self.one_shot.learn_socket_once(socket.to_string());
            }
            id.trim().to_string()
        });
        let server_key = match self.one_shot.server_key() {
            Ok(k) => k,
            Err(e) => {
                self.fallback_reason = Some(format!("control mode: {e}"));
                return;
            }
        };
        // one attach at a time in this process: a reader that finds one for its
        // server and session polls through it
        let mut reg = registry().lock().unwrap_or_else(|p| p.into_inner());
        reg.retain(|(_, w)| w.strong_count() > 0);
        let reg_key = format!("{server_key}\0{}", session.as_deref().unwrap_or_default());
        if let Some(c) = reg
            .iter()
            .find(|(k, _)| *k == reg_key)
            .and_then(|(_, w)| w.upgrade())
        {
            if !c.lock().unwrap_or_else(|p| p.into_inner()).broken {
                self.adopt(SharedConn(c));
                return;
            }
        }
        // held until the new client has answered (see `attach_lock`)
        let lock = attach_lock(&server_key);
        if lock.is_none() {
            self.fallback_reason = Some("control mode: the attach lock was not free".into());
            return;
        }
        self.fallback_reason = match session {
            Ok(s) if !s.is_empty() => match Conn::open(&server, &s) {
                // The first round trip proves the connection works.
                Ok(mut conn) => match conn.exec(
                    "display-message -p ok",
                    Until::Blocks(1),
                    Duration::from_secs(2),
                ) {
                    Ok(v)
                        if v.first()
                            .is_some_and(|r| r.as_deref().map(str::trim) == Ok("ok")) =>
                    {
                        conn.server_key = server_key.clone();
                        let c = Arc::new(Mutex::new(conn));
                        reg.push((reg_key, Arc::downgrade(&c)));
                        self.conn = Some(SharedConn(c));
                        None
                    }
                    Ok(_) => Some("control mode: unexpected reply".into()),
                    Err(e) => Some(format!("control mode: {e}")),
                },
                Err(e) => Some(format!("control mode: {e}")),
            },
            Ok(_) => Some(format!("control mode: no session for {pane}")),
            Err(e) => Some(format!("control mode: {e}")),
        };
    }

    pub fn connected(&self) -> bool {
        self.conn.is_some()
    }

    /// The connection, for other readers to [`adopt`](Control::adopt).
    pub fn share(&self) -> Option<SharedConn> {
        self.conn.clone()
    }

    /// Poll through `conn` (another reader's connection) instead of attaching one.
    pub fn adopt(&mut self, conn: SharedConn) {
        self.conn = Some(conn);
        self.pending = None;
        self.fallback_reason = None;
    }

    /// One connection for a fan-out's readers, attached at once through `pane`'s
    /// session (unless `PROMPTGATE_CONTROL=off`): one attach in all, where each
    /// target polling on its own would fork a tmux client per poll or attach a
    /// connection each.
    pub fn for_fanout(server: Server, pane: &str) -> Option<SharedConn> {
        if setting() == Setting::Off {
            return None;
        }
        Control::attached(server, pane).share()
    }

    /// Run `line` over the connection, if there is one; a failed connection is
    /// dropped (reads fall back to one-shot) and its error returned.
    fn exec(&mut self, line: &str, until: Until) -> Option<Result<Replies>> {
        let r = self.conn.as_ref()?.exec(line, until, self.one_shot.timeout);
        if let Err(e) = &r {
            self.fallback_reason = Some(format!("control mode lost: {e}"));
            self.conn = None;
        }
        Some(r)
    }
}

/// The text of the last reply, if it was not an error.
fn last_ok(replies: &Replies) -> String {
    replies
        .last()
        .and_then(|r| r.as_ref().ok())
        .cloned()
        .unwrap_or_default()
}

/// The largest body pasted over the control connection; larger ones go through
/// `load-buffer` from a tmux client's stdin.
pub const CONTROL_PASTE_MAX: usize = 16 * 1024;

impl Tmux for Control {
    fn read(&mut self, pane: &str) -> Result<Screen> {
        self.maybe_attach();
        let line =
            format!("display-message -p -t {pane} '{READ_FORMAT}' ; capture-pane -p -e -t {pane}");
        let issued = self.one_shot.issued();
        if let Some(Ok(v)) = self.exec(&line, Until::Blocks(2)) {
            let s = match (&v[0], &v[1]) {
                (Ok(head), Ok(grid)) => screen_of(pane, head, grid, issued)?,
                _ => return Err(Error::NoPane(pane.to_string())),
            };
            self.one_shot.learn_release(&s);
            return Ok(s);
        }
        self.one_shot.read(pane)
    }
    fn resolve(&mut self, target: &str) -> Result<String> {
        // over the connection when there is one and the target needs no quoting
        let plain = !target.is_empty()
            && target
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"%@$=:._-".contains(&b));
        if plain && self.conn.is_some() {
            let t = exact_target(target);
            if let Some(out) =
                self.query(&format!("display-message -p -t {t} '{}'", RESOLVE_FORMAT))
            {
                let (pane, socket) = resolved(target, &out)?;
                self.one_shot.learn_socket(socket);
                return Ok(pane);
            }
        }
        self.one_shot.resolve(target)
    }
    fn resolve_read(&mut self, target: &str) -> Result<(String, Screen)> {
        if self.conn.is_some() {
            return super::resolve_then_read(self, target);
        }
        self.one_shot.resolve_read(target)
    }
    fn list_panes(&mut self) -> Result<Vec<PaneInfo>> {
        self.one_shot.list_panes()
    }
    fn send_literal(&mut self, pane: &str, text: &str) -> Result<()> {
        self.one_shot.send_literal(pane, text)
    }
    /// A named key (`Enter`, `C-c`, `Escape`) to a pane id goes over the connection
    /// when there is one: a fan-out's submits are serialised, and a fork each
    /// would space them ~4 ms apart for nothing. Anything else is one-shot.
    fn send_key(&mut self, pane: &str, key: &str) -> Result<()> {
        let pane_id = is_pane_id(pane);
        let named = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if pane_id && named {
            // an error is not known to have reached tmux, or not: the caller decides
            if let Some(r) = self.exec(&format!("send-keys -t {pane} {key}"), Until::Blocks(1)) {
                return match r?.into_iter().next() {
                    Some(Ok(_)) => Ok(()),
                    _ => Err(Error::NoPane(pane.to_string())),
                };
            }
        }
        self.one_shot.send_key(pane, key)
    }
    /// Over the connection when there is one and the target is a pane id: the
    /// same guarded if-shell as the one-shot way.
    fn send_key_guarded(&mut self, pane: &str, key: &str, guard: &Guard) -> Result<bool> {
        let g = Guarded::key(pane, key, guard);
        if !(is_pane_id(pane) && self.conn.is_some()) || g.yes.contains('\'') {
            return self.one_shot.send_key_guarded(pane, key, guard);
        }
        let line = format!("if-shell -F -t {pane} '{}' '{}' '{}'", g.cond, g.yes, g.no);
        match self.exec(&line, Until::Marker(&g.mark)) {
            None => self.one_shot.send_key_guarded(pane, key, guard),
            Some(r) => g.outcome(pane, &last_ok(&r?), "send-keys"),
        }
    }
    /// Over the connection when there is one, the body fits a command line
    /// (at most [`CONTROL_PASTE_MAX`] bytes, no control bytes but TAB and LF) and
    /// the target is a pane id: `set-buffer` with the body quoted, then the same
    /// guarded paste as the one-shot way. A fan-out's 16 pastes then fork no tmux
    /// client. Never retried: a lost connection is an error.
    fn paste_guarded(&mut self, pane: &str, text: &str, guard: Option<&Guard>) -> Result<bool> {
        let fits = text.len() <= CONTROL_PASTE_MAX
            && text
                .chars()
                .all(|c| c == '\t' || c == '\n' || !c.is_control());
        if !(fits && is_pane_id(pane) && self.conn.is_some()) {
            return self.one_shot.paste_guarded(pane, text, guard);
        }
        let buf = Process::unique_buffer();
        let raw = self.one_shot.release()?.paste_needs_raw_flag();
        let g = Guarded::paste(pane, &buf, guard, raw);
        // The read ends at the report, however many blocks came before it.
        let lines = format!(
            "set-buffer -b {buf} -- {}\n\
             if-shell -F -t {pane} '{}' '{}' '{}'",
            tmux_quote(text),
            g.cond,
            g.yes,
            g.no
        );
        let quiet = self.one_shot.notification_lock();
        let Some(r) = self.exec(&lines, Until::Marker(&g.mark)) else {
            drop(quiet);
            return self.one_shot.paste_guarded(pane, text, guard);
        };
        // set-buffer, if-shell, the commands it ran: all fine, and the report.
        let r = r.and_then(
            |replies| match replies.iter().find_map(|r| r.as_ref().err()) {
                Some(e) => Err(paste_failed(format!("{pane}: {e}"))),
                None => g
                    .outcome(pane, &last_ok(&replies), "paste-buffer")
                    .and_then(|written| not_pasted(pane, guard, written)),
            },
        );
        if r.is_err() {
            self.one_shot.drop_buffer(&buf);
        }
        r
    }
    fn cancel_mode(&mut self, pane: &str) -> Result<()> {
        self.one_shot.cancel_mode(pane)
    }
    fn connected(&self) -> bool {
        self.conn.is_some()
    }
    fn server_key(&mut self) -> Result<String> {
        self.one_shot.server_key()
    }
    fn capture_ansi(&mut self, pane: &str) -> Result<String> {
        self.one_shot.capture_ansi(pane)
    }

    /// All panes in one round trip: each command on its own line, so that a pane
    /// that went away fails alone.
    fn read_many(&mut self, panes: &[String]) -> Vec<Result<Screen>> {
        if panes.is_empty() {
            return Vec::new();
        }
        self.maybe_attach();
        if self.conn.is_some() {
            let line = panes
                .iter()
                .map(|p| {
                    format!("display-message -p -t {p} '{READ_FORMAT}'\ncapture-pane -p -e -t {p}")
                })
                .collect::<Vec<_>>()
                .join("\n");
            let issued = self.one_shot.issued();
            if let Some(Ok(v)) = self.exec(&line, Until::Blocks(2 * panes.len())) {
                return panes
                    .iter()
                    .zip(v.chunks(2))
                    .map(|(p, r)| match (&r[0], &r[1]) {
                        (Ok(head), Ok(grid)) => screen_of(p, head, grid, issued),
                        _ => Err(Error::NoPane(p.to_string())),
                    })
                    .collect();
            }
        }
        self.one_shot.read_many(panes)
    }

    fn display_message(&mut self, client: Option<&str>, ms: Option<u64>, msg: &str) -> Result<()> {
        self.one_shot.display_message(client, ms, msg)
    }
}

impl Control {
    /// One query over the connection (one-shot when there is none).
    fn query(&mut self, line: &str) -> Option<String> {
        self.exec(line, Until::Blocks(1))?
            .ok()?
            .pop()
            .and_then(|r| r.ok())
    }

    /// Every pane of the server and where it sits.
    pub fn locate_panes(&mut self) -> Result<Vec<super::PaneLoc>> {
        match self.query(&format!("list-panes -a -F '{}'", super::LOC_FORMAT)) {
            Some(out) => Ok(super::parse_locs(&out)),
            None => self.one_shot.locate_panes(),
        }
    }

    /// Expand a format once (`display-message -p`); `fmt` holds no `'`.
    pub fn format(&mut self, fmt: &str) -> Result<String> {
        match self.query(&format!("display-message -p '{fmt}'")) {
            Some(out) => Ok(out.strip_suffix('\n').unwrap_or(&out).to_string()),
            None => self.one_shot.format(fmt),
        }
    }
}
