//! The tmux adapter: the only code that runs tmux.
//!
//! `Tmux` is the small trait the rest of the pipeline talks to. `Process` runs
//! one tmux client per call (`std::process::Command`, time-boxed); `Control`
//! keeps one control-mode (`tmux -C`) connection open for cheap polling and
//! falls back to `Process` for anything else. `FakeTmux` (`fake.rs`) is a
//! scripted one for tests, with no server.

mod control;
pub mod fake;
pub mod lang;
mod process;
pub mod release;

pub use control::{Control, SharedConn};
pub use process::Process;
use release::split_fields;
pub use release::Release;

/// Between the fields of every format promptgate asks tmux to expand: a TAB,
/// which no release escapes in `display -p` or `-F` replies (3.4 and 3.5 print
/// other control bytes, such as 0x1f, as `\037`), and which tmux keeps out of
/// session and window names. Every such format starts with `#{version}`.
pub(crate) const SEP: char = '\t';

use crate::core::error::{Error, Result};
use crate::core::screen::{normalise_command, Screen};

/// Which tmux server: `$TMUX` (or the default) unless `-L NAME` / `-S PATH`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Server {
    #[default]
    Default,
    Name(String),
    Path(String),
}

impl Server {
    /// A printable, parseable name: `default`, `-L NAME`, `-S PATH`.
    pub fn spec(&self) -> String {
        match self {
            Server::Default => "default".into(),
            Server::Name(n) => format!("-L {n}"),
            Server::Path(p) => format!("-S {p}"),
        }
    }

    /// The global flags for a tmux client.
    pub fn args(&self) -> Vec<String> {
        match self {
            Server::Default => vec![],
            Server::Name(n) => vec!["-L".into(), n.clone()],
            Server::Path(p) => vec!["-S".into(), p.clone()],
        }
    }
}

/// How tmux is run: `tmux` here, or any command that ends in tmux, such as
/// `ssh HOST tmux` (from `PROMPTGATE_TMUX` or `--host`). Through ssh every
/// argument is quoted for the far shell, and the local `/proc` is not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    pub argv: Vec<String>,
    pub remote: bool,
}

/// The launcher of this process, chosen once ([`Launcher::init`]).
static LAUNCHER: std::sync::OnceLock<Launcher> = std::sync::OnceLock::new();

impl Launcher {
    /// How every tmux client of this process runs: set once by `main`, before
    /// the first one (`--host`); when it is not, from `PROMPTGATE_TMUX`, read once.
    /// `false` when a launcher was chosen already.
    pub fn init(l: Launcher) -> bool {
        LAUNCHER.set(l).is_ok()
    }

    /// `ssh HOST tmux`, never asking for a password (`ssh` is `PROMPTGATE_SSH`
    /// when set, e.g. `ssh -F FILE`).
    pub fn ssh(host: &str) -> Launcher {
        let mut argv = ssh_base();
        argv.extend(["-o", "BatchMode=yes", host, "tmux"].map(String::from));
        Launcher { argv, remote: true }
    }

    /// The launcher of this process ([`init`](Self::init), else `PROMPTGATE_TMUX`).
    pub fn current() -> &'static Launcher {
        LAUNCHER.get_or_init(Launcher::from_env)
    }

    pub fn from_env() -> Launcher {
        let spec = std::env::var("PROMPTGATE_TMUX")
            .ok()
            .filter(|s| !s.trim().is_empty());
        // a fleet's child gets the words as a JSON list (a socket path with a
        // space stays one word); `PROMPTGATE_TMUX` is split at spaces
        let listed: Option<Vec<String>> = std::env::var("PROMPTGATE_TMUX_ARGV")
            .ok()
            .and_then(|j| serde_json::from_str(&j).ok())
            .filter(|v: &Vec<String>| !v.is_empty());
        let argv: Vec<String> = listed.unwrap_or_else(|| {
            spec.as_deref()
                .unwrap_or("tmux")
                .split_whitespace()
                .map(str::to_string)
                .collect()
        });
        // `ssh …` is remote by its name; any other command that reaches tmux
        // elsewhere (an ssh wrapper, `PROMPTGATE_SSH`'s own) says so
        let remote = argv
            .first()
            .is_some_and(|a| a.rsplit('/').next() == Some("ssh"))
            || std::env::var_os("PROMPTGATE_TMUX_REMOTE").is_some_and(|v| v == "1");
        Launcher { argv, remote }
    }

    /// A command for tmux `args` (server flags included by the caller).
    pub fn command(&self, args: &[String]) -> std::process::Command {
        let mut c = std::process::Command::new(&self.argv[0]);
        c.args(&self.argv[1..]);
        // UTF-8 replies whatever this process's locale: tmux replaces every
        // non-ASCII character with `_` for a client it thinks cannot show it.
        c.arg("-u");
        if self.remote {
            c.args(args.iter().map(|a| sh_quote(a)));
        } else {
            c.args(args);
        }
        c
    }
}

/// Quote one word for a POSIX shell.
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"%@=:,./_-+".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// True when tmux runs on another machine: its pids mean nothing here.
pub fn is_remote() -> bool {
    Launcher::current().remote
}

/// One pane of `list-panes -a`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PaneInfo {
    pub id: String,
    pub target: String,
    pub pid: Option<u32>,
    pub command: String,
    pub dead: bool,
}

/// A pane id (`%3`), as opposed to a target that names a pane.
pub(crate) fn is_pane_id(pane: &str) -> bool {
    pane.strip_prefix('%')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `resolve`, then `read`: two round trips (the default `resolve_read`, and a
/// backend's fallback when its one round trip does not fit).
pub(crate) fn resolve_then_read<T: Tmux + ?Sized>(
    tmux: &mut T,
    target: &str,
) -> Result<(String, Screen)> {
    let pane = tmux.resolve(target)?;
    let screen = tmux.read(&pane)?;
    Ok((pane, screen))
}

pub trait Tmux {
    /// One read of a pane: `display -p` facts and `capture-pane -p`, in one call.
    fn read(&mut self, pane: &str) -> Result<Screen>;
    /// A user's target (`name`, `name:1.2`, `%3`) as a pane id (`%3`).
    fn resolve(&mut self, target: &str) -> Result<String>;
    /// `resolve`, then `read` the pane: in one round trip where the backend can.
    fn resolve_read(&mut self, target: &str) -> Result<(String, Screen)> {
        resolve_then_read(self, target)
    }
    fn list_panes(&mut self) -> Result<Vec<PaneInfo>>;
    /// `send-keys -l`: literal text (a trailing `;` is escaped here).
    fn send_literal(&mut self, pane: &str, text: &str) -> Result<()>;
    /// `send-keys KEY`: one key by name, as its own tmux call.
    fn send_key(&mut self, pane: &str, key: &str) -> Result<()>;
    /// `send_key`, but only while the pane is as `guard` saw it: tmux checks the
    /// guard and writes the key in one step (`if-shell -F`), so nothing the agent
    /// draws in between can come between the two. `Ok(false)`: not sent.
    fn send_key_guarded(&mut self, pane: &str, key: &str, guard: &Guard) -> Result<bool>;
    /// `load-buffer -b <unique> -` from stdin, then `paste-buffer -d -p -r -b <unique>`,
    /// never into a dead pane; with a `guard`, only while the pane is as it saw it
    /// (checked by tmux in the same step as the paste). `Ok(false)`: not pasted.
    fn paste_guarded(&mut self, pane: &str, text: &str, guard: Option<&Guard>) -> Result<bool>;
    /// `paste_guarded` with no guard.
    fn paste(&mut self, pane: &str, text: &str) -> Result<()> {
        self.paste_guarded(pane, text, None).map(drop)
    }
    /// Leave copy or view mode (`send-keys -X cancel`).
    fn cancel_mode(&mut self, pane: &str) -> Result<()>;
    /// Whether reads go through a control-mode connection (for the receipt).
    fn connected(&self) -> bool {
        false
    }
    /// A stable name of the server (its socket path), for locks and logs.
    fn server_key(&mut self) -> Result<String>;
    /// The ANSI (`capture-pane -p -e`) text of a pane, for `capture`.
    fn capture_ansi(&mut self, pane: &str) -> Result<String>;
    /// Several reads in as few tmux calls as the backend can (by default one each);
    /// a pane that went away is an `Err` in its own slot.
    fn read_many(&mut self, panes: &[String]) -> Vec<Result<Screen>> {
        panes.iter().map(|p| self.read(p)).collect()
    }
    /// `display-message` on `client` (or tmux's choice) for `ms`; `msg` is shown as
    /// written (not expanded as a format).
    fn display_message(&mut self, client: Option<&str>, ms: Option<u64>, msg: &str) -> Result<()> {
        let _ = (client, ms, msg);
        Err(Error::Other(
            "display-message is not supported by this tmux backend".into(),
        ))
    }
}

/// What the last look saw of a pane, for tmux itself to check in the moment it
/// writes (`if-shell -F` on a format): the pane alive, in no mode, the same size,
/// screen, process, and the cursor where it was, shown or hidden as it was. A
/// dialog that opens after the look moves or hides the cursor (for all three
/// built-in agents; see fixtures/README.md), so a guarded write misses it
/// rather than typing into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    format: String,
    expect: String,
}

impl Guard {
    /// The guard for a screen; `None` when the read had no cursor.
    pub fn of(s: &Screen) -> Option<Guard> {
        let (x, y) = s.cursor?;
        // keys reach this pane alone: its input on, its window not synchronized
        let mut format = String::from(
            "#{pane_dead}/#{pane_in_mode}#{pane_input_off}#{synchronize-panes}/#{pane_width}x#{pane_height}/#{alternate_on}/#{cursor_x}.#{cursor_y}",
        );
        let mut expect = format!(
            "0/000/{}x{}/{}/{x}.{y}",
            s.width, s.height, s.alternate_on as u8
        );
        if let Some(v) = s.cursor_visible {
            format.push_str("/#{cursor_flag}");
            expect.push_str(&format!("/{}", v as u8));
        }
        if let Some(pid) = s.pid {
            format.push_str("/#{pane_pid}");
            expect.push_str(&format!("/{pid}"));
        }
        Some(Guard { format, expect })
    }

    /// The format that tmux expands, in the moment of a guarded write, to
    /// compare with [`Guard::expected`].
    pub fn format(&self) -> &str {
        &self.format
    }

    /// The value `format` had in the look.
    pub fn expected(&self) -> &str {
        &self.expect
    }
}

/// One pane and where it sits (`list-panes -a`), for `status` and `watch`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PaneLoc {
    pub id: String,
    pub session_id: String,
    pub session: String,
    pub window: u32,
    pub pane: u32,
    pub pid: Option<u32>,
    pub command: String,
    pub dead: bool,
    pub window_name: String,
    /// `pane_current_path`: the foreground process's directory.
    pub path: String,
}

impl PaneLoc {
    /// `session:window.pane`
    pub fn target(&self) -> String {
        format!("{}:{}.{}", self.session, self.window, self.pane)
    }
}

/// One client of `list-clients`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ClientInfo {
    pub name: String,
    pub tty: String,
    /// A control-mode client (another program, such as promptgate itself).
    pub control: bool,
    /// The client's current pane.
    pub pane: String,
}

pub(crate) const LOC_FORMAT: &str = "#{version}\t#{pane_id}\t#{session_id}\t#{session_name}\t#{window_index}\t#{pane_index}\t#{pane_pid}\t#{pane_dead}\t#{window_name}\t#{pane_current_command}\t#{pane_current_path}";

pub(crate) fn parse_locs(out: &str) -> Vec<PaneLoc> {
    out.lines()
        .filter_map(|l| {
            let (_, f) = split_fields(l, 10)?;
            f[0].starts_with('%').then(|| PaneLoc {
                id: f[0].clone(),
                session_id: f[1].clone(),
                session: f[2].clone(),
                window: f[3].parse().unwrap_or(0),
                pane: f[4].parse().unwrap_or(0),
                pid: f[5].parse().ok(),
                dead: f[6] == "1",
                window_name: f[7].clone(),
                command: f[8].clone(),
                path: f[9].clone(),
            })
        })
        .collect()
}

/// Which life of the server and of a pane a pane id names: a pane id (`%0`)
/// is unique only while its server runs (a restarted server numbers its panes
/// from `%0` again), and a pane's first process (`pane_pid`: the shell, or the
/// program the pane was started with) stays while an agent restarts inside
/// that shell. The queue keeps it with each prompt (`queue add`), and types a
/// prompt only into the pane it was queued for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PaneLife {
    /// The server's `#{pid}`.
    pub server_pid: u32,
    /// The server's `#{start_time}` (Unix seconds; 0 where tmux has none).
    #[serde(default)]
    pub server_start: u64,
    /// The pane's `#{pane_pid}`.
    pub pane_pid: u32,
    /// `#{session_name}` then, to say where it was (not compared).
    #[serde(default)]
    pub session: String,
}

impl PaneLife {
    /// Why `now` is not the pane this was (`None`: it is the same pane).
    pub fn changed(&self, now: &PaneLife) -> Option<String> {
        if self.server_pid != now.server_pid || self.server_start != now.server_start {
            return Some(format!(
                "the tmux server restarted since it was queued (server pid {} started {}, now {} started {}): the pane that has its id now is another pane",
                self.server_pid, self.server_start, now.server_pid, now.server_start
            ));
        }
        if self.pane_pid != now.pane_pid {
            return Some(format!(
                "the pane was replaced since it was queued (its first process was {}, now {}): not the agent it was queued for",
                self.pane_pid, now.pane_pid
            ));
        }
        None
    }
}

pub(crate) const LIFE_FORMAT: &str =
    "#{version}\t#{pid}\t#{start_time}\t#{pane_pid}\t#{session_name}";

/// A reply of `display -p -t PANE LIFE_FORMAT`; `None` when it names no pane.
pub(crate) fn parse_life(out: &str) -> Option<PaneLife> {
    let (_, f) = split_fields(out.lines().next()?, 4)?;
    Some(PaneLife {
        server_pid: f[0].trim().parse().ok()?,
        server_start: f[1].trim().parse().unwrap_or(0),
        pane_pid: f[2].trim().parse().ok()?,
        session: f[3].trim_end().to_string(),
    })
}

pub(crate) const CLIENT_FORMAT: &str =
    "#{version}\t#{client_control_mode}\t#{pane_id}\t#{client_tty}\t#{client_name}";

pub(crate) fn parse_clients(out: &str) -> Vec<ClientInfo> {
    out.lines()
        .filter_map(|l| {
            let (_, f) = split_fields(l, 4)?;
            (!f[3].is_empty()).then(|| ClientInfo {
                name: f[3].clone(),
                tty: f[2].clone(),
                control: f[0] == "1",
                pane: f[1].clone(),
            })
        })
        .collect()
}

/// Starts each pane's block in a batched one-shot read (`Process::read_many`).
pub(crate) const READ_MARK: &str = "\u{1e}promptgate-read\u{1e}";

/// Split a batched read into one Screen per pane; `None` when the blocks do not add up.
pub(crate) fn parse_read_many(
    panes: &[String],
    out: &str,
    issued_ms: Option<u128>,
    now_ms: u128,
) -> Option<Vec<Result<Screen>>> {
    let blocks: Vec<&str> = out.split(READ_MARK).skip(1).collect();
    if blocks.len() != panes.len() {
        return None;
    }
    Some(
        panes
            .iter()
            .zip(blocks)
            .map(|(p, b)| parse_read(p, b, issued_ms, now_ms))
            .collect(),
    )
}

/// Text for `display-message`, which tmux expands as a format and then with
/// strftime: `#` -> `##`, `%` -> `%%`.
pub fn message_literal(s: &str) -> String {
    s.replace('#', "##").replace('%', "%%")
}

/// The `display -p` format of one read; fields separated by U+001F.
///
/// `#{window_activity}` is when the pane's window last had output and `%s` is the
/// server's clock (display-message expands strftime in the template, before the
/// `#{}` values, so a `%` in a title is left alone); both in whole seconds. Their
/// difference tells the gate that an idle agent's screen has held still for
/// seconds already, without watching it for the stability window.
/// `#{pane_last_output_time}` (tmux 3.8; empty before, and before the pane's first
/// output) is the same for this pane alone: a busy neighbour in a tiled window
/// does not hide that this agent has been still.
///
/// `window_activity` only under `#{?window_id,…}`: display-message runs its
/// format with no pane when its target is gone (a pane closed between two calls,
/// a session that does not exist), and tmux 3.2a's server dies expanding
/// `#{window_activity}` without a window (a segfault: every session lost).
pub(crate) const READ_FORMAT: &str = "#{version}\t#{pane_id}\t#{cursor_x}\t#{cursor_y}\t#{cursor_flag}\t#{pane_width}\t#{pane_height}\t#{pane_in_mode}\t#{pane_dead}\t#{alternate_on}\t#{pane_pid}\t#{?window_id,#{window_activity},}\t%s\t#{pane_last_output_time}\t#{bracket_paste_flag}\t#{?window_id,#{synchronize-panes}#{pane_input_off},}\t#{pane_current_command}\t#{pane_title}";

/// `#{synchronize-panes}#{pane_input_off}` (`00` when keys go to the pane alone).
fn keys_astray(f: &str) -> Option<String> {
    let b = f.as_bytes();
    if b.first() == Some(&b'1') {
        Some("its window has synchronize-panes on: every key would also reach the window's other panes (a shell there would run its line)".into())
    } else if b.get(1) == Some(&b'1') {
        Some("its input is off (select-pane -d): tmux would drop every key".into())
    } else {
        None
    }
}

/// Build a Screen from the output of `display -p READ_FORMAT` + `capture-pane -p`.
/// `issued_ms`: when the read was asked for, by this machine's clock, if the
/// tmux server shares that clock (not over ssh); `now_ms`: when the reply came.
pub(crate) fn parse_read(
    pane: &str,
    out: &str,
    issued_ms: Option<u128>,
    now_ms: u128,
) -> Result<Screen> {
    let (head, grid) = out.split_once('\n').unwrap_or((out, ""));
    let Some((release, f)) = split_fields(head, 17).filter(|(_, f)| !f[0].is_empty()) else {
        return Err(Error::NoPane(pane.to_string()));
    };
    let n = |s: &str| s.parse::<usize>().ok();
    let mut s = Screen {
        cursor: n(&f[1]).zip(n(&f[2])),
        cursor_visible: Some(f[3] == "1"),
        width: n(&f[4]).unwrap_or(0),
        height: n(&f[5]).unwrap_or(0),
        in_mode: f[6] == "1",
        dead: f[7] == "1",
        alternate_on: f[8] == "1",
        pid: f[9].parse().ok(),
        // the pane's own last output where tmux knows it (3.8), else its window's
        quiet_ms: quiet_ms(
            Some(f[12].trim())
                .filter(|p| !p.is_empty() && *p != "0")
                .unwrap_or(&f[10]),
            &f[11],
            issued_ms,
        ),
        // empty before tmux 3.7, which has no such format
        bracketed_paste: match f[13].as_str() {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        },
        keys_astray: keys_astray(&f[14]),
        command: Some(normalise_command(&f[15])).filter(|c| !c.is_empty()),
        title: Some(f[16].trim_end().to_string()),
        tmux_version: Some(release.name),
        taken_at_ms: now_ms,
        ..Screen::default()
    };
    s.set_grid(grid);
    // the read asked for attributes (`capture-pane -e`): a grid without escapes
    // is all drawn plain
    s.styles
        .get_or_insert_with(|| vec![Vec::new(); s.rows.len()]);
    s.rows.truncate(s.height.max(1));
    if let Some(st) = s.styles.as_mut() {
        st.truncate(s.height.max(1));
    }
    while s.rows.len() < s.height {
        s.rows.push(String::new());
    }
    if issued_ms.is_some() {
        // a local pane with a shell in the foreground: does it run the agent?
        crate::io::proc::note_foreground(&mut s);
    }
    Ok(s)
}

/// How long the window has surely had no output, from `#{window_activity}` (whole
/// seconds: the last output came before the end of that second) and a clock:
/// the server's `%s` (whole seconds too, so one more second is taken off), or,
/// when the server shares this machine's clock, `issued_ms`, the moment the read
/// was asked for (output after it would have moved `window_activity` on).
/// `None` when nothing proves any quiet time.
fn quiet_ms(activity: &str, now: &str, issued_ms: Option<u128>) -> Option<u64> {
    let (a, n) = (
        activity.trim().parse::<u64>().ok()?,
        now.trim().parse::<u64>().ok()?,
    );
    let coarse = n.checked_sub(a)?.saturating_sub(1) * 1000;
    // Only a clock that agrees with the server's to the second is trusted.
    let fine = issued_ms
        .map(|t| t as u64)
        .filter(|t| (t / 1000).abs_diff(n) <= 1)
        .and_then(|t| t.checked_sub((a + 1) * 1000))
        .unwrap_or(0);
    let q = coarse.max(fine);
    (q > 0).then_some(q)
}

/// A user's target in a form that tmux does not match by prefix:
/// `name` and `=name` -> `=name:`, `name:1.2` -> `=name:1.2`; ids and other
/// `=`-targets unchanged.
pub fn exact_target(t: &str) -> String {
    // `=name` alone, tmux's own exact form, is the session `name` as a bare name
    // is: tmux finds no pane for it outside a client ("can't find pane: =name")
    if let Some(name) = t.strip_prefix('=') {
        if !name.is_empty() && !name.contains([':', '.']) {
            return format!("{t}:");
        }
    }
    if t.is_empty() || t.starts_with(['%', '@', '$', '=', '{', '!', '~', '+', '-']) {
        return t.to_string();
    }
    if t.contains(':') {
        format!("={t}")
    } else if t.contains('.') {
        // `name.1` is ambiguous in tmux; treat as window.pane of the current session
        t.to_string()
    } else {
        format!("={t}:")
    }
}

/// tmux eats a trailing `;` in a send-keys argument, even after `--`: escape it.
pub fn escape_trailing_semicolon(text: &str) -> String {
    match text.strip_suffix(';') {
        Some(rest) => format!("{rest}\\;"),
        None => text.to_string(),
    }
}

/// Map a failed tmux client's stderr to a typed error.
pub(crate) fn classify_failure(what: &str, target: Option<&str>, stderr: &str) -> Error {
    let msg = stderr.trim().lines().last().unwrap_or("").to_string();
    if msg.contains("no server running")
        || msg.contains("error connecting to")
        || msg.contains("server exited")
    {
        Error::NoServer(format!(" ({msg})"))
    } else if msg.contains("can't find pane")
        || msg.contains("can't find session")
        || msg.contains("can't find window")
        || msg.contains("no such")
    {
        Error::NoPane(target.unwrap_or("?").to_string())
    } else {
        Error::Tmux {
            cmd: what.to_string(),
            msg: if msg.is_empty() { "failed".into() } else { msg },
        }
    }
}

pub fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// The ssh command's words: `PROMPTGATE_SSH` (e.g. `ssh -F ~/.ssh/fleet.conf`),
/// else `ssh`.
pub fn ssh_base() -> Vec<String> {
    let spec = std::env::var("PROMPTGATE_SSH")
        .ok()
        .filter(|s| !s.trim().is_empty());
    spec.as_deref()
        .unwrap_or("ssh")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_made_exact() {
        assert_eq!(exact_target("work"), "=work:");
        assert_eq!(exact_target("work:1.2"), "=work:1.2");
        assert_eq!(exact_target("%3"), "%3");
        assert_eq!(exact_target("=work:"), "=work:");
        assert_eq!(exact_target("=work"), "=work:");
        assert_eq!(exact_target("=work.1"), "=work.1");
    }

    #[test]
    fn words_are_quoted_for_the_far_shell() {
        assert_eq!(sh_quote("%3"), "%3");
        assert_eq!(sh_quote("#{pane_id}"), "'#{pane_id}'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote(""), "''");
    }

    #[test]
    fn batched_reads_split_per_pane() {
        let head = |p: &str| {
            format!("{READ_MARK}3.3a\t{p}\t0\t0\t1\t10\t2\t0\t0\t0\t9\t100\t105\t\t\t00\tbash\tt\n")
        };
        let out = format!("{}a\nb\n{}c\n", head("%1"), head("%2"));
        let panes = vec!["%1".to_string(), "%2".to_string()];
        let v = parse_read_many(&panes, &out, None, 0).unwrap();
        assert_eq!(v[0].as_ref().unwrap().rows, vec!["a", "b"]);
        assert_eq!(v[1].as_ref().unwrap().rows, vec!["c", ""]);
        assert_eq!(v[0].as_ref().unwrap().quiet_ms, Some(4000));
        assert_eq!(quiet_ms("100", "101", None), None);
        assert_eq!(quiet_ms("100", "102", None), Some(1000));
        assert_eq!(quiet_ms("100", "99", None), None);
        assert_eq!(quiet_ms("", "99", None), None);
        // this machine's clock, to the ms: quiet since the end of second 100
        assert_eq!(quiet_ms("100", "101", Some(101_250)), Some(250));
        assert_eq!(quiet_ms("100", "101", Some(100_900)), None);
        assert_eq!(quiet_ms("100", "102", Some(102_400)), Some(1400));
        // a clock that disagrees with the server's is not used
        assert_eq!(quiet_ms("100", "101", Some(109_000)), None);
        assert!(parse_read_many(&panes[..1], &out, None, 0).is_none());
        // keys that would reach other panes (synchronize-panes), or none (input off)
        let astray = |f: &str| {
            let out = format!("3.3a\t%1\t0\t0\t1\t10\t2\t0\t0\t0\t9\t\t\t\t\t{f}\tbash\tt\n");
            parse_read("%1", &out, None, 0).unwrap().keys_astray
        };
        assert_eq!(astray("00"), None);
        assert!(astray("10").unwrap().contains("synchronize-panes"));
        assert!(astray("01").unwrap().contains("input is off"));
        assert!(astray("11").unwrap().contains("synchronize-panes"));
        let locs = parse_locs("3.3a\t%3\t$1\tmain\t2\t0\t42\t0\tagents\tclaude\t/w\tx\nbad\n");
        assert_eq!(locs.len(), 1);
        assert_eq!(locs[0].target(), "main:2.0");
        assert_eq!(locs[0].window_name, "agents");
        assert_eq!(locs[0].path, "/w\tx");
        assert_eq!(message_literal("%3 a#{b}"), "%%3 a##{b}");
    }

    #[test]
    fn a_guard_is_what_the_look_saw() {
        let out = "3.3a\t%1\t2\t3\t1\t80\t24\t0\t0\t1\t42\t\t\t\t\t00\tnode\tt\nrow\n";
        let s = parse_read("%1", out, None, 0).unwrap();
        let g = Guard::of(&s).unwrap();
        assert_eq!(
            g.format(),
            "#{pane_dead}/#{pane_in_mode}#{pane_input_off}#{synchronize-panes}/#{pane_width}x#{pane_height}/#{alternate_on}/#{cursor_x}.#{cursor_y}/#{cursor_flag}/#{pane_pid}"
        );
        assert_eq!(g.expected(), "0/000/80x24/1/2.3/1/42");
        // no cursor, no guard
        let none = Screen {
            cursor: None,
            ..s.clone()
        };
        assert!(Guard::of(&none).is_none());
        // a moved cursor is another guard
        let moved = Screen {
            cursor: Some((2, 4)),
            ..s
        };
        assert_ne!(Guard::of(&moved), Some(g));
    }

    #[test]
    fn a_pane_life_is_its_servers_and_its_first_process() {
        let was = parse_life("3.3a\t100\t1700000000\t42\tprojA\n").unwrap();
        assert_eq!(was.server_pid, 100);
        assert_eq!(was.pane_pid, 42);
        assert_eq!(was.session, "projA");
        // moved to another session: the same pane
        let moved = PaneLife {
            session: "other".into(),
            ..was.clone()
        };
        assert_eq!(was.changed(&moved), None);
        let restarted = parse_life("3.3a\t100\t1700000500\t42\tprojB\n").unwrap();
        assert!(was
            .changed(&restarted)
            .unwrap()
            .contains("server restarted"));
        let replaced = PaneLife {
            pane_pid: 43,
            ..was.clone()
        };
        assert!(was.changed(&replaced).unwrap().contains("replaced"));
        // no pane: no life
        assert_eq!(parse_life("3.3a\t100\t1700000000\t\t\n"), None);
        assert_eq!(parse_life(""), None);
    }

    #[test]
    fn trailing_semicolon_is_escaped() {
        assert_eq!(escape_trailing_semicolon("a;"), "a\\;");
        assert_eq!(escape_trailing_semicolon("a;b"), "a;b");
    }

    #[test]
    fn parses_a_read() {
        let out = "3.3a\t%1\t2\t3\t1\t80\t4\t0\t0\t1\t42\t1000\t1000\t\t\t00\t/usr/bin/node\tt %s \tx  \nrow0\nrow1  \n";
        let s = parse_read("%1", out, None, 7).unwrap();
        assert_eq!(s.cursor, Some((2, 3)));
        assert_eq!(s.rows, vec!["row0", "row1", "", ""]);
        assert_eq!(s.command.as_deref(), Some("node"));
        assert_eq!(s.pid, Some(42));
        assert_eq!(s.title.as_deref(), Some("t %s \tx"));
        assert_eq!(s.bracketed_paste, None);
        assert_eq!(s.tmux_version.as_deref(), Some("3.3a"));
        assert_eq!(s.quiet_ms, None);
        // tmux 3.8: the pane's own last output, not its window's (a busy
        // neighbour in the window moved window_activity to 1000)
        let out =
            "next-3.8\t%1\t2\t3\t1\t80\t4\t0\t0\t1\t42\t1000\t1000\t996\t\t00\tnode\tt\nrow0\n";
        assert_eq!(parse_read("%1", out, None, 7).unwrap().quiet_ms, Some(3000));
        // no output yet from this pane (empty, or 0): the window's
        let out = out.replace("\t996\t", "\t0\t");
        assert_eq!(parse_read("%1", &out, None, 7).unwrap().quiet_ms, None);
        assert!(parse_read("%1", "\n", None, 0).is_err());
        // a NO-BREAK SPACE is content (Claude's input box), not trailing blank
        let out = "3.3a\t%1\t2\t0\t0\t10\t1\t0\t0\t0\t1\t\t\t\t\t00\tclaude\t\n\u{276f}\u{a0}  \n";
        assert_eq!(
            parse_read("%1", out, None, 0).unwrap().rows,
            vec!["\u{276f}\u{a0}"]
        );
    }
}
