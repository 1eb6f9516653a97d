//! The one-shot backend: one tmux client process per call, time-boxed.

use super::lang::{resolved, tmux_quote, RESOLVE_FORMAT};
use super::{
    classify_failure, escape_trailing_semicolon, exact_target, now_ms, parse_read, Guard, PaneInfo,
    Server, Tmux, READ_FORMAT,
};
use crate::core::error::{Error, Result};
use crate::core::screen::Screen;
use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Process {
    pub server: Server,
    pub timeout: Duration,
    launcher: super::Launcher,
    /// `#{socket_path}`, learnt by `resolve` or the first `server_key` (one tmux call fewer for each later one).
    socket: Option<String>,
    /// The server's release, learnt from the first read (every read names it).
    release: Option<super::Release>,
}

static BUFFER_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Process {
    pub(crate) fn learn_socket(&mut self, socket: String) {
        self.socket = Some(socket);
    }

    /// [`learn_socket`](Self::learn_socket), unless it is known already.
    pub(crate) fn learn_socket_once(&mut self, socket: String) {
        self.socket.get_or_insert(socket);
    }

    /// Note the server's release that a read named.
    pub(crate) fn learn_release(&mut self, s: &Screen) {
        if let Some(v) = &s.tmux_version {
            if self.release.as_ref().is_none_or(|r| &r.name != v) {
                let r = super::Release::parse(v);
                super::release::warn_once(&r);
                self.release = Some(r);
            }
        }
    }

    /// The server's release: from the last read, else asked (`#{version}`).
    pub fn release(&mut self) -> Result<super::Release> {
        if let Some(r) = &self.release {
            return Ok(r.clone());
        }
        let out = self.run(&["display-message", "-p", "#{version}"], None, None)?;
        let r = super::Release::parse(&out);
        self.release = Some(r.clone());
        Ok(r)
    }

    pub fn new(server: Server) -> Process {
        let launcher = super::Launcher::current().clone();
        // Over ssh each call also logs in, and the far login shell's start-up files
        // run first (a `pyenv rehash` there waited seconds on its lock): give it more.
        let timeout = Duration::from_secs(if launcher.remote { 20 } else { 5 });
        Process {
            socket: None,
            release: None,
            server,
            timeout,
            launcher,
        }
    }

    /// The same, waiting up to `d` for each call (a popup returns when its
    /// command exits).
    pub fn with_timeout(mut self, d: Duration) -> Process {
        self.timeout = d;
        self
    }

    /// Run tmux with `args`, feeding `stdin`; returns stdout. `target` names the pane in errors.
    pub fn run(&self, args: &[&str], stdin: Option<&[u8]>, target: Option<&str>) -> Result<String> {
        let what = args.first().copied().unwrap_or("tmux").to_string();
        let mut all = self.server.args();
        all.extend(args.iter().map(|s| s.to_string()));
        let mut cmd = self.launcher.command(&all);
        // A body goes in as a complete, unlinked file, never a pipe: tmux's
        // `load-buffer -` takes whatever came before EOF, so a pipe whose writer
        // (this process) is killed part way would paste half a prompt. A file
        // the client holds has all of it, whatever happens here.
        cmd.stdin(match stdin {
            Some(data) => Stdio::from(body_file(data)?),
            None => Stdio::null(),
        });
        // Its own process group: a Ctrl-C at the terminal stops promptgate (see
        // `interrupt`), never a tmux client half way through a write.
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::TmuxMissing,
            _ => Error::Io(e),
        })?;
        let drain = |p: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                if let Some(mut p) = p {
                    let _ = p.read_to_end(&mut buf);
                }
                buf
            })
        };
        let out_t = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let err_t = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let deadline = Instant::now() + self.timeout;
        let status = loop {
            if let Some(st) = child.try_wait()? {
                break st;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::TmuxTimeout(what));
            }
            std::thread::sleep(Duration::from_micros(300));
        };
        let out = out_t.join().unwrap_or_default();
        let err = err_t.join().unwrap_or_default();
        if !status.success() {
            return Err(classify_failure(
                &what,
                target,
                &String::from_utf8_lossy(&err),
            ));
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Start a detached session running `argv` (for the demo and the tests); returns its pane id.
    pub fn new_session(
        &self,
        name: &str,
        width: u16,
        height: u16,
        argv: &[String],
    ) -> Result<String> {
        let (w, h) = (width.to_string(), height.to_string());
        let mut args: Vec<&str> = vec![
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-s",
            name,
            "-x",
            &w,
            "-y",
            &h,
        ];
        args.extend(argv.iter().map(String::as_str));
        Ok(self.run(&args, None, None)?.trim().to_string())
    }

    /// Set a server option (`set -g NAME VALUE`).
    pub fn set_option(&self, name: &str, value: &str) -> Result<()> {
        self.run(&["set-option", "-g", name, value], None, None)
            .map(drop)
    }

    /// Stop this server (only ever used on servers promptgate started itself).
    pub fn kill_server(&self) -> Result<()> {
        self.run(&["kill-server"], None, None).map(drop)
    }

    /// Delete our buffer `buf` if it is still there.
    /// Before tmux 3.7, the lock that keeps our notifications (a paste buffer
    /// made or deleted) from reaching a control client of ours that is still
    /// identifying (see `control::attach_lock`); `None` on 3.7 and later.
    pub fn notification_lock(&mut self) -> Option<crate::io::lock::PaneLock> {
        if !self.release().ok()?.notifies_identifying_control_clients() {
            return None;
        }
        let key = self.server_key().ok()?;
        super::control::attach_lock(&key)
    }

    pub(crate) fn drop_buffer(&self, buf: &str) {
        let left = self
            .run(&["list-buffers", "-F", "#{buffer_name}"], None, None)
            .unwrap_or_default();
        if left.lines().any(|l| l == buf) {
            let _ = self.run(&["delete-buffer", "-b", buf], None, None);
        }
    }

    /// Now, by this machine's clock, when the tmux server shares it (not over
    /// ssh): a read's `issued_ms`.
    pub(crate) fn issued(&self) -> Option<u128> {
        (!self.launcher.remote).then(now_ms)
    }

    pub(crate) fn unique_buffer() -> String {
        let n = BUFFER_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("promptgate-{}-{}-{n}", std::process::id(), now_ms())
    }
}

/// `data` in a file that is already unlinked (no name on disk to leave
/// behind), read from its start.
fn body_file(data: &[u8]) -> Result<std::fs::File> {
    use std::io::{Seek, SeekFrom};
    let mut f = tempfile::tempfile()?;
    f.write_all(data)?;
    f.seek(SeekFrom::Start(0))?;
    Ok(f)
}

impl Tmux for Process {
    fn read(&mut self, pane: &str) -> Result<Screen> {
        let issued = self.issued();
        let out = self.run(
            &[
                "display-message",
                "-p",
                "-t",
                pane,
                READ_FORMAT,
                ";",
                "capture-pane",
                "-p",
                "-e",
                "-t",
                pane,
            ],
            None,
            Some(pane),
        )?;
        let s = parse_read(pane, &out, issued, now_ms())?;
        self.learn_release(&s);
        Ok(s)
    }

    /// One tmux client: the resolve reply, then the read's, for the same target.
    /// Any failure goes the two-call way, which names the error precisely.
    fn resolve_read(&mut self, target: &str) -> Result<(String, Screen)> {
        let t = exact_target(target);
        let issued = self.issued();
        let out = self.run(
            &[
                "display-message",
                "-p",
                "-t",
                &t,
                RESOLVE_FORMAT,
                ";",
                "display-message",
                "-p",
                "-t",
                &t,
                READ_FORMAT,
                ";",
                "capture-pane",
                "-p",
                "-e",
                "-t",
                &t,
            ],
            None,
            Some(target),
        );
        let one = out.ok().and_then(|out| {
            let (first, rest) = out.split_once('\n')?;
            let (pane, socket) = resolved(target, first).ok()?;
            let screen = parse_read(&pane, rest, issued, now_ms()).ok()?;
            Some((pane, socket, screen))
        });
        match one {
            Some((pane, socket, screen)) => {
                self.socket = Some(socket);
                self.learn_release(&screen);
                Ok((pane, screen))
            }
            None => super::resolve_then_read(self, target),
        }
    }

    fn resolve(&mut self, target: &str) -> Result<String> {
        // display-message falls back to some other pane when its target is not
        // found, so check that what tmux picked is what the user named.
        let t = exact_target(target);
        let out = self.run(
            &["display-message", "-p", "-t", &t, RESOLVE_FORMAT],
            None,
            Some(target),
        )?;
        let (pane, socket) = resolved(target, &out)?;
        self.socket = Some(socket);
        Ok(pane)
    }

    fn list_panes(&mut self) -> Result<Vec<PaneInfo>> {
        let out = self.run(
            &["list-panes", "-a", "-F", "#{version}\t#{pane_id}\t#{session_name}:#{window_index}.#{pane_index}\t#{pane_pid}\t#{pane_dead}\t#{pane_current_command}"],
            None,
            None,
        )?;
        Ok(out
            .lines()
            .filter_map(|l| {
                let (_, f) = super::split_fields(l, 5)?;
                Some(PaneInfo {
                    id: f[0].clone(),
                    target: f[1].clone(),
                    pid: f[2].parse().ok(),
                    dead: f[3] == "1",
                    command: f[4].clone(),
                })
            })
            .collect())
    }

    fn send_literal(&mut self, pane: &str, text: &str) -> Result<()> {
        let t = escape_trailing_semicolon(text);
        self.run(&["send-keys", "-t", pane, "-l", "--", &t], None, Some(pane))
            .map(drop)
    }

    fn send_key(&mut self, pane: &str, key: &str) -> Result<()> {
        self.run(&["send-keys", "-t", pane, key], None, Some(pane))
            .map(drop)
    }

    fn send_key_guarded(&mut self, pane: &str, key: &str, guard: &Guard) -> Result<bool> {
        let g = Guarded::key(pane, key, guard);
        let out = self.run(
            &["if-shell", "-F", "-t", pane, &g.cond, &g.yes, &g.no],
            None,
            Some(pane),
        )?;
        g.outcome(pane, &out, "send-keys")
    }

    fn paste_guarded(&mut self, pane: &str, text: &str, guard: Option<&Guard>) -> Result<bool> {
        let _quiet = self.notification_lock();
        let buf = Self::unique_buffer();
        let raw = self.release()?.paste_needs_raw_flag();
        // One tmux client: load the body from stdin into a private buffer, then the
        // guarded paste (see `Guarded::paste`), whose branch reports which it did.
        let g = Guarded::paste(pane, &buf, guard, raw);
        let r = self.run(
            &[
                "load-buffer",
                "-b",
                &buf,
                "-",
                ";",
                "if-shell",
                "-F",
                "-t",
                pane,
                &g.cond,
                &g.yes,
                &g.no,
            ],
            Some(text.as_bytes()),
            Some(pane),
        );
        let r = r
            .and_then(|out| g.outcome(pane, &out, "paste-buffer"))
            .and_then(|written| not_pasted(pane, guard, written));
        if r.is_err() {
            // The chain stopped part way: never leave our buffer behind.
            self.drop_buffer(&buf);
        }
        r
    }

    fn cancel_mode(&mut self, pane: &str) -> Result<()> {
        self.run(&["send-keys", "-t", pane, "-X", "cancel"], None, Some(pane))
            .map(drop)
    }

    fn server_key(&mut self) -> Result<String> {
        let here = if self.launcher.remote {
            // a fleet's ssh master socket (`-S PATH`) differs on every run; the
            // key (of the pane locks) names the host, not the connection
            let mut words = Vec::new();
            let mut it = self.launcher.argv.iter();
            while let Some(w) = it.next() {
                match w.as_str() {
                    "-S" => {
                        it.next();
                    }
                    "-o" if it
                        .as_slice()
                        .first()
                        .is_some_and(|o| o.starts_with("ControlMaster=")) =>
                    {
                        it.next();
                    }
                    _ => words.push(w.as_str()),
                }
            }
            format!("{}:", words.join(" "))
        } else {
            String::new()
        };
        let socket = match &self.socket {
            Some(s) => s.clone(),
            None => {
                // asked once: every paste on tmux before 3.7 needs the key (its lock)
                let s = self.run(&["display-message", "-p", "#{socket_path}"], None, None)?;
                self.learn_socket(s.trim().to_string());
                s
            }
        };
        Ok(here + socket.trim())
    }

    fn capture_ansi(&mut self, pane: &str) -> Result<String> {
        self.run(&["capture-pane", "-p", "-e", "-t", pane], None, Some(pane))
    }

    /// One tmux call per batch of panes: `display -p MARK…READ_FORMAT ; capture-pane -p`
    /// for each. A batch that fails (a pane went away) is read pane by pane.
    fn read_many(&mut self, panes: &[String]) -> Vec<Result<Screen>> {
        let head = format!("{}{READ_FORMAT}", super::READ_MARK);
        let mut all = Vec::with_capacity(panes.len());
        // a tmux client's command line is limited to about 16 KiB
        for batch in panes.chunks(24) {
            let mut args: Vec<&str> = Vec::new();
            for p in batch {
                if !args.is_empty() {
                    args.push(";");
                }
                args.extend(["display-message", "-p", "-t", p, &head]);
                args.extend([";", "capture-pane", "-p", "-e", "-t", p]);
            }
            let issued = self.issued();
            let parsed = self
                .run(&args, None, None)
                .ok()
                .and_then(|out| super::parse_read_many(batch, &out, issued, now_ms()));
            match parsed {
                Some(v) => all.extend(v),
                None => all.extend(batch.iter().map(|p| self.read(p))),
            }
        }
        all
    }

    fn display_message(&mut self, client: Option<&str>, ms: Option<u64>, msg: &str) -> Result<()> {
        let ms = ms.map(|m| m.to_string());
        let text = super::message_literal(msg);
        let mut args = vec!["display-message"];
        if let Some(c) = client {
            args.extend(["-c", c]);
        }
        if let Some(m) = &ms {
            args.extend(["-d", m]);
        }
        args.extend(["--", &text]);
        self.run(&args, None, None).map(drop)
    }
}

impl Process {
    /// Every pane of the server and where it sits, in one call.
    pub fn locate_panes(&self) -> Result<Vec<super::PaneLoc>> {
        let out = self.run(&["list-panes", "-a", "-F", super::LOC_FORMAT], None, None)?;
        Ok(super::parse_locs(&out))
    }

    /// Every client of the server (control-mode ones included; see `ClientInfo::control`).
    pub fn list_clients(&self) -> Result<Vec<super::ClientInfo>> {
        let out = self.run(&["list-clients", "-F", super::CLIENT_FORMAT], None, None)?;
        Ok(super::parse_clients(&out))
    }

    /// Which life of the server and of `pane` this is, in one call
    /// ([`super::PaneLife`]); `NoPane` when the pane is gone.
    pub fn pane_life(&self, pane: &str) -> Result<super::PaneLife> {
        let out = self.run(
            &["display-message", "-p", "-t", pane, super::LIFE_FORMAT],
            None,
            Some(pane),
        )?;
        super::parse_life(&out).ok_or_else(|| Error::NoPane(pane.to_string()))
    }

    /// Expand a format once (`display-message -p`), without a trailing newline.
    pub fn format(&self, fmt: &str) -> Result<String> {
        let out = self.run(&["display-message", "-p", fmt], None, None)?;
        Ok(out.strip_suffix('\n').unwrap_or(&out).to_string())
    }

    /// Set (`Some`) or unset (`None`) a user option on a session (`$1`) or, with no
    /// target, globally.
    pub fn set_user_option(
        &self,
        session: Option<&str>,
        name: &str,
        value: Option<&str>,
    ) -> Result<()> {
        let mut args = vec!["set-option", "-q"];
        match session {
            Some(s) => args.extend(["-t", s]),
            None => args.push("-g"),
        }
        match value {
            Some(v) => args.extend([name, v]),
            None => args.extend(["-u", name]),
        }
        self.run(&args, None, session).map(drop)
    }
}

/// A guarded write: one `if-shell -F` whose condition is the guard (or only "the
/// pane is alive"), and whose branches each end by printing a marked report. The
/// report says which branch ran. (A report made by a later command could see the
/// pane a moment later: over a control-mode connection tmux reads the agent's
/// output between two command lines.) The reports name no pane, so that they
/// print even when the pane is gone.
pub(crate) struct Guarded {
    pub mark: String,
    pub cond: String,
    pub yes: String,
    pub no: String,
}

impl Guarded {
    /// Paste buffer `buf` into `pane` (framed, LF kept) and drop it; or, the pane
    /// dead (where a paste crashes tmux 3.3a), gone or not as the guard saw it,
    /// only drop it. The check and the paste run inside one if-shell, so the pane
    /// cannot die (or the agent redraw) between them. `raw`: tmux 3.7 and later
    /// pass a paste through vis(3) unless `-S` (a `$HOME` would arrive as `\$HOME`).
    pub(crate) fn paste(pane: &str, buf: &str, guard: Option<&Guard>, raw: bool) -> Guarded {
        let s = if raw { "S" } else { "" };
        Guarded::new(
            pane,
            guard,
            &format!("paste-buffer -d -p -r{s} -b {buf} -t {pane}"),
            Some(&format!("delete-buffer -b {buf}")),
        )
    }

    /// Send `key` to `pane` only while it is as `guard` saw it.
    pub(crate) fn key(pane: &str, key: &str, guard: &Guard) -> Guarded {
        let send = format!("send-keys -t {pane} {}", tmux_quote(key));
        Guarded::new(pane, Some(guard), &send, None)
    }

    /// `write` if `pane` is alive and as `guard` saw it, else `otherwise`.
    fn new(pane: &str, guard: Option<&Guard>, write: &str, otherwise: Option<&str>) -> Guarded {
        let mark = format!("{}-saw=", Process::unique_buffer());
        let (mut format, mut expect) = match guard {
            Some(g) => (g.format().to_string(), g.expected().to_string()),
            None => ("#{pane_dead}".to_string(), "0".to_string()),
        };
        // tmux 3.3a's if-shell -F -t falls back to the client's pane when the
        // target is gone: the condition names the pane it must be about.
        if super::is_pane_id(pane) {
            format = format!("#{{pane_id}}/{format}");
            expect = format!("{pane}/{expect}");
        }
        let cond = format!("#{{==:{format},{expect}}}");
        let report = |what: &str| format!("display-message -p \"{mark}{what}\"");
        Guarded {
            cond,
            yes: format!("{write} ; {}", report("written")),
            no: match otherwise {
                Some(o) => format!("{o} ; {}", report("held")),
                None => report("held"),
            },
            mark,
        }
    }

    /// What the report in `out` says: written (`true`) or held back (`false`:
    /// the pane dead, gone, or not as the guard saw it).
    pub(crate) fn outcome(&self, pane: &str, out: &str, what: &str) -> Result<bool> {
        match out.lines().find_map(|l| l.strip_prefix(self.mark.as_str())) {
            Some("written") => Ok(true),
            Some("held") => Ok(false),
            _ => Err(Error::Tmux {
                cmd: what.into(),
                msg: format!("{pane}: tmux gave no report"),
            }),
        }
    }
}

/// A paste with no guard that was held back: the pane is dead (a paste there
/// would crash tmux 3.3a) or gone.
pub(crate) fn not_pasted(pane: &str, guard: Option<&Guard>, written: bool) -> Result<bool> {
    if guard.is_none() && !written {
        return Err(paste_failed(format!(
            "pane {pane} is dead or gone; nothing was pasted"
        )));
    }
    Ok(written)
}

pub(crate) fn paste_failed(msg: String) -> Error {
    Error::Tmux {
        cmd: "paste-buffer".into(),
        msg,
    }
}
