//! A simulated agent CLI for tests and `promptgate demo` on machines with no
//! real agent: `promptgate fake-agent --like claude|codex|gemini|opencode [...]`.
//!
//! It runs in a tmux pane like the real CLIs: raw tty, input read with poll()
//! so it can animate, the whole screen redrawn with plain ANSI escapes. Its
//! screens copy the real captures in `fixtures/` closely enough for the
//! built-in profiles to classify them, and it writes what it received to a
//! JSON-lines transcript so tests can check delivery byte for byte.
//!
//! Transcript records (one JSON object a line, `kind` first, `at_ms` = Unix
//! epoch milliseconds last):
//! `start` {like, pid, width, height}, `ready` (the composer shows for the
//! first time), `dialog-shown` {dialog}, `dialog-input` {dialog, bytes},
//! `dialog-dismissed` {dialog}, `prompt` {n, text, queued}, `queued` {text},
//! `interrupt`, `turn-failed` {n}, `fault-dropped` {len}, `early-input` {text},
//! `exit` {reason}.

mod composer;
mod input;
mod log;
pub mod records;
mod render;
mod term;

use composer::InputBox;
use input::{Key, Parser};
use render::{Entry, Frame, Painter, Stage, View};
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Which real agent CLI to look like.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Like {
    Claude,
    Codex,
    Gemini,
    /// OpenCode 1.18: alternate screen, a `┃` bar-block composer with a grey
    /// placeholder, a progress-bar busy footer. It has no start-up dialogs: every
    /// `--dialog` kind draws its permission prompt (`dialog:permission`).
    Opencode,
}

impl Like {
    pub fn name(self) -> &'static str {
        match self {
            Like::Claude => "claude",
            Like::Codex => "codex",
            Like::Gemini => "gemini",
            Like::Opencode => "opencode",
        }
    }

    /// The agent draws on the alternate screen.
    fn alternate(self) -> bool {
        matches!(self, Like::Codex | Like::Opencode)
    }
}

/// A dialog shown instead of the composer.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialogKind {
    None,
    Trust,
    ApiKey,
    Permission,
    Onboarding,
}

impl DialogKind {
    /// The name used in the transcript and in detect's `dialog:<kind>`.
    pub fn name(self) -> &'static str {
        match self {
            DialogKind::None => "none",
            DialogKind::Trust => "trust",
            DialogKind::ApiKey => "api-key",
            DialogKind::Permission => "permission",
            DialogKind::Onboarding => "onboarding",
        }
    }
}

/// `promptgate fake-agent`: a simulated agent CLI (see the module docs).
#[derive(clap::Args, Debug, Clone)]
pub struct FakeAgentArgs {
    /// Which agent CLI to look like.
    #[arg(long, value_enum, default_value = "claude")]
    pub like: Like,
    /// Append JSON lines (start, prompt, dialog-*, exit, ...) to this file.
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
    /// Write nothing at all for this long before the first paint.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub blank_ms: u64,
    /// During start-up, this many times draw half a screen of banner and clear it.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub flicker: u32,
    /// Start with this message already in the transcript (its echo and a reply),
    /// as after an earlier turn; repeatable. `\n` in TEXT is a newline.
    #[arg(long, value_name = "TEXT")]
    pub seed_echo: Vec<String>,
    /// Show this dialog instead of the composer at start; Enter dismisses it.
    #[arg(long, value_enum, value_name = "KIND", default_value = "none")]
    pub dialog: DialogKind,
    /// Before the first real screen, show a composer-looking frame (that is not ready) this long.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub composer_flash_ms: u64,
    /// How long a submitted prompt keeps the agent busy.
    #[arg(long, value_name = "MS", default_value_t = 1500)]
    pub busy_ms: u64,
    /// Do not enable bracketed paste (mode 2004).
    #[arg(long)]
    pub no_bracketed_paste: bool,
    /// Set this pane title (OSC 0) always, instead of the agent's own titles.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// The directory shown in banners and footers (default: the current directory).
    #[arg(long, value_name = "TEXT")]
    pub cwd_label: Option<String>,
    /// The first N turns fail, as offline: each ends in the agent's API error line
    /// instead of a reply, and claude's empty box then shows its after-error
    /// placeholder `Resend your message to try again`, drawn dim (SGR 2) after a
    /// reverse-video first letter, until the next submit (Claude Code 2.1.332).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fail_turns: u32,
    /// Exit once N prompts have been submitted and answered.
    #[arg(long, value_name = "N")]
    pub exit_after: Option<u32>,
    /// Also write each submitted prompt where the real agent records it (under
    /// $HOME, in its format), for the proof of receipt.
    #[arg(long)]
    pub records: bool,
    /// Fault: read at most 1022 bytes per read() and drop every unframed read of exactly 1022.
    #[arg(long)]
    pub fault_read_1022: bool,
    /// Fault: an Enter within MS of a fast run of typed characters inserts a newline instead.
    #[arg(long, value_name = "MS")]
    pub fault_paste_burst_ms: Option<u64>,
    /// Fault: input that arrives before the first paint keeps its text but loses its Enter.
    #[arg(long)]
    pub fault_early_enter_lost: bool,
    /// As Gemini CLI starts (`--like gemini`): the first ready screen has no banner
    /// (the prompt sits higher up); MS later the banner lands and the prompt moves
    /// down. An Enter that arrives before that is lost (its text stays), as the real
    /// one loses it (fixtures gemini/v0.*-78-start-*).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub start_jump_ms: u64,
    /// Fault: about 200 ms after the composer is ready (before any prompt) this dialog appears.
    #[arg(long, value_enum, value_name = "KIND")]
    pub fault_late_dialog: Option<DialogKind>,
    /// With --fault-late-dialog: as codex does before its first-run dialogs, draw the
    /// not-ready start-up composer (the --composer-flash-ms look) for MS instead of a
    /// ready composer, then open the dialog. Keys typed meanwhile go to the dialog.
    #[arg(long, value_name = "MS", requires = "fault_late_dialog")]
    pub late_dialog_flash_ms: Option<u64>,
    /// With --fault-late-dialog: open the dialog MS after the first input reached
    /// the composer (a body typed, its Enter not yet pressed), not ~200 ms after
    /// ready: a dialog over the typed body at any machine speed.
    #[arg(
        long,
        value_name = "MS",
        requires = "fault_late_dialog",
        conflicts_with = "late_dialog_flash_ms"
    )]
    pub late_dialog_after_input_ms: Option<u64>,
    /// Reply with this text (on screen, and with --records in the agent's
    /// record of replies) instead of `Fake reply to prompt N …`. `\n` is a newline.
    #[arg(long, value_name = "TEXT")]
    pub reply: Option<String>,
    /// Each reply makes a call to this tool first (recorded, approved, run).
    #[arg(long, value_name = "NAME")]
    pub reply_tool: Option<String>,
    /// The first N turns stop on a tool-approval dialog (the permission dialog,
    /// the call recorded as pending) instead of replying.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub approval_turns: u32,
}

/// The API error a `--fail-turns` turn records (its screen line says the same).
pub const FAKE_API_ERROR: &str =
    "API Error: Can't reach the API server (promptgate fake-agent --fail-turns)";
const TICK: Duration = Duration::from_millis(80);
const DOUBLE_ESC: Duration = Duration::from_millis(700);
const LATE_DIALOG_AFTER: Duration = Duration::from_millis(200);
/// Characters this close together are a "fast run" (a paste or `send-keys`), not typing.
const FAST_GAP: Duration = Duration::from_millis(8);

/// Tracks runs of fast input for `--fault-paste-burst-ms`.
#[derive(Default)]
struct Burst {
    last: Option<Instant>,
    run: u32,
}

impl Burst {
    fn char(&mut self, now: Instant) {
        let fast = self.last.is_some_and(|l| now.duration_since(l) <= FAST_GAP);
        self.run = if fast { self.run + 1 } else { 1 };
        self.last = Some(now);
    }
    fn other(&mut self, now: Instant) {
        self.run = 0;
        self.last = Some(now);
    }
    /// Whether this Enter becomes a newline (the burst goes on if so).
    fn enter_is_newline(&mut self, now: Instant, window_ms: Option<u64>) -> bool {
        let hit = window_ms.is_some_and(|ms| {
            self.run >= 2
                && self
                    .last
                    .is_some_and(|l| now.duration_since(l) < Duration::from_millis(ms))
        });
        if hit {
            self.last = Some(now);
        } else {
            self.other(now);
        }
        hit
    }
}

struct App {
    args: FakeAgentArgs,
    like: Like,
    log: log::Log,
    cwd: String,
    w: usize,
    h: usize,
    start: Instant,
    stage: Stage,
    painted: bool,
    painter: Painter,
    parser: Parser,
    composer: InputBox,
    history: Vec<Entry>,
    queue: Vec<String>,
    busy: Option<(Instant, Instant)>,
    dialog: Option<DialogKind>,
    ready_logged: bool,
    late_dialog_at: Option<Instant>,
    late_dialog_done: bool,
    /// Keys that came during the flash before the late dialog: the dialog gets them.
    flash_keys: Vec<Key>,
    prompts: u32,
    /// Turns that still fail (`--fail-turns`).
    fails_left: u32,
    approvals_left: u32,
    /// The prompt the running turn answers.
    last_prompt: String,
    /// The last turn failed and nothing was submitted since.
    after_error: bool,
    /// `--start-jump-ms`: the banner has not landed yet until then.
    jump_at: Option<Instant>,
    last_esc: Option<Instant>,
    burst: Burst,
    quit: Option<String>,
}

/// Run the fake agent on this process's terminal until Ctrl-C on an empty
/// composer, `--exit-after`, end of input or a terminating signal.
pub fn run(args: &FakeAgentArgs) -> anyhow::Result<()> {
    let mut log = log::Log::open(args.transcript.as_deref())?;
    if args.records {
        records::init(args.like)?;
        records::status(args.like, "idle")?;
    }
    term::install_handlers();
    let raw = term::RawMode::enter();
    let (w, h) = term::size();
    log.rec(
        "start",
        &[
            ("like", args.like.name().into()),
            ("pid", std::process::id().into()),
            ("width", w.into()),
            ("height", h.into()),
        ],
    );
    let cwd = args.cwd_label.clone().unwrap_or_else(|| {
        std::env::current_dir()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "/".into())
    });
    let mut app = App {
        like: args.like,
        args: args.clone(),
        log,
        cwd,
        w,
        h,
        start: Instant::now(),
        stage: Stage::Main,
        painted: false,
        painter: Painter::default(),
        parser: Parser::new(),
        composer: InputBox::default(),
        history: args
            .seed_echo
            .iter()
            .flat_map(|t| {
                [
                    Entry::Echo(t.replace("\\n", "\n")),
                    Entry::Reply("Fake reply to an earlier prompt (promptgate fake-agent).".into()),
                ]
            })
            .collect(),
        queue: Vec::new(),
        busy: None,
        dialog: None,
        ready_logged: false,
        late_dialog_at: None,
        late_dialog_done: false,
        flash_keys: Vec::new(),
        prompts: 0,
        fails_left: args.fail_turns,
        approvals_left: args.approval_turns,
        last_prompt: String::new(),
        after_error: false,
        jump_at: None,
        last_esc: None,
        burst: Burst::default(),
        quit: None,
    };
    let reason = app.main();
    term::write_out(&term::reset_sequence());
    drop(raw);
    app.log.rec("exit", &[("reason", reason.into())]);
    Ok(())
}

impl App {
    fn main(&mut self) -> String {
        if let Some(r) = self.sleep(self.args.blank_ms) {
            return r;
        }
        for _ in 0..self.args.flicker {
            let rows = render::flicker_rows(&self.view());
            let mut s = String::from("\x1b[H\x1b[2J");
            for (y, r) in rows.iter().enumerate() {
                s.push_str(&format!("\x1b[{};1H{r}", y + 1));
            }
            term::write_out(&s);
            if let Some(r) = self.sleep(60) {
                return r;
            }
            term::write_out("\x1b[H\x1b[2J");
            if let Some(r) = self.sleep(60) {
                return r;
            }
        }
        if self.args.composer_flash_ms > 0 {
            self.stage = Stage::Flash;
            self.first_paint();
            self.render();
            if let Some(r) = self.sleep(self.args.composer_flash_ms) {
                return r;
            }
        }
        self.stage = Stage::Main;
        self.first_paint();
        let now = Instant::now();
        if self.args.start_jump_ms > 0 {
            self.jump_at = Some(now + Duration::from_millis(self.args.start_jump_ms));
        }
        match self.args.dialog {
            DialogKind::None => self.composer_ready(now),
            d => self.show_dialog(d),
        }
        if self.args.fault_early_enter_lost {
            self.early_input(now);
        }
        self.render();
        self.event_loop()
    }

    fn event_loop(&mut self) -> String {
        let cap = if self.args.fault_read_1022 {
            1022
        } else {
            65536
        };
        let mut buf = vec![0u8; cap];
        loop {
            if let Some(s) = term::signal() {
                return format!("signal {s}");
            }
            if let Some(r) = self.quit.take() {
                return r;
            }
            let now = Instant::now();
            let mut due = now + TICK;
            for d in [
                self.parser.esc_deadline(),
                self.busy.map(|b| b.1),
                self.late_dialog_at,
                self.jump_at,
            ]
            .into_iter()
            .flatten()
            {
                due = due.min(d);
            }
            let ms = due.saturating_duration_since(now).as_millis() as i32 + 1;
            match term::poll_stdin(ms) {
                term::Ready::Hangup => return "end of input".into(),
                term::Ready::Input => match term::read_stdin(&mut buf) {
                    Some(0) => return "end of input".into(),
                    Some(n) => {
                        let chunk = buf[..n].to_vec();
                        self.on_bytes(&chunk, Instant::now());
                    }
                    None => {}
                },
                term::Ready::Nothing => {}
            }
            let now = Instant::now();
            if let Some(k) = self.parser.timeout(now) {
                self.on_keys(vec![k], now);
            }
            self.timers(now);
            let size = term::size();
            if term::take_winch() || size != (self.w, self.h) {
                (self.w, self.h) = size;
                self.painter.invalidate();
            }
            self.render();
        }
    }

    /// Sleep in small steps; Some(reason) if a signal asks us to stop.
    fn sleep(&mut self, ms: u64) -> Option<String> {
        let end = Instant::now() + Duration::from_millis(ms);
        loop {
            if let Some(s) = term::signal() {
                return Some(format!("signal {s}"));
            }
            let now = Instant::now();
            if now >= end {
                return None;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(10)));
        }
    }

    /// The modes the real agents set with their first paint.
    fn first_paint(&mut self) {
        if self.painted {
            return;
        }
        self.painted = true;
        let mut on = String::new();
        let mut off = String::new();
        if self.like.alternate() {
            on.push_str("\x1b[?1049h");
        }
        if !self.args.no_bracketed_paste {
            on.push_str("\x1b[?2004h");
            off.push_str("\x1b[?2004l");
        }
        if self.like.alternate() {
            off.push_str("\x1b[?1049l");
        }
        off.push_str("\x1b[?25h");
        if !self.like.alternate() {
            // leave the main screen's last picture, with the shell prompt under it
            off.push_str(&format!("\x1b[{};1H\r\n", self.h));
        }
        term::set_reset_sequence(&off);
        term::write_out(&on);
        self.painter.invalidate();
    }

    fn view(&self) -> View<'_> {
        let now = Instant::now();
        View {
            like: self.like,
            w: self.w,
            h: self.h,
            cwd: &self.cwd,
            stage: self.stage,
            dialog: self.dialog,
            history: &self.history,
            composer: &self.composer,
            queue: &self.queue,
            busy_ms: self
                .busy
                .map(|(s, _)| now.duration_since(s).as_millis() as u64),
            tick: (now.duration_since(self.start).as_millis() / TICK.as_millis()) as u64,
            esc_hint: self
                .last_esc
                .is_some_and(|t| now.duration_since(t) <= DOUBLE_ESC)
                && !self.composer.is_empty(),
            title: self.args.title.as_deref(),
            after_error: self.after_error,
            banner: self.jump_at.is_none(),
        }
    }

    fn render(&mut self) {
        let f: Frame = render::frame(&self.view());
        let out = self.painter.paint(&f, self.w);
        if !term::write_out(&out) {
            self.quit.get_or_insert_with(|| "terminal gone".into());
        }
    }

    fn composer_ready(&mut self, now: Instant) {
        // (--late-dialog-after-input-ms times it from the first input instead: on_keys)
        if self.args.fault_late_dialog.is_some()
            && !self.late_dialog_done
            && self.args.late_dialog_after_input_ms.is_none()
        {
            self.late_dialog_done = true;
            if let Some(ms) = self.args.late_dialog_flash_ms {
                // not ready yet: the start-up composer, then the dialog
                self.stage = Stage::Flash;
                self.late_dialog_at = Some(now + Duration::from_millis(ms));
                return;
            }
            self.late_dialog_at = Some(now + LATE_DIALOG_AFTER);
        }
        if !self.ready_logged {
            self.ready_logged = true;
            self.log.rec("ready", &[]);
        }
    }

    fn show_dialog(&mut self, d: DialogKind) {
        if d == DialogKind::None {
            return;
        }
        self.dialog = Some(d);
        self.log.rec("dialog-shown", &[("dialog", d.name().into())]);
    }

    fn timers(&mut self, now: Instant) {
        if self.jump_at.is_some_and(|t| now >= t) {
            // the banner lands above: everything below it moves down
            self.jump_at = None;
            self.painter.invalidate();
            self.log.rec("start-jump", &[]);
        }
        if let Some((_, end)) = self.busy {
            if now >= end {
                self.end_busy(now);
            }
        }
        if let Some(t) = self.late_dialog_at {
            if now >= t {
                self.late_dialog_at = None;
                let flashed = self.stage == Stage::Flash;
                self.stage = Stage::Main;
                if self.prompts == 0 && self.dialog.is_none() {
                    if let Some(d) = self.args.fault_late_dialog {
                        self.show_dialog(d);
                    }
                }
                if flashed {
                    let keys = std::mem::take(&mut self.flash_keys);
                    self.on_keys(keys, now);
                }
            }
        }
    }

    /// Input that was waiting before the first paint (`--fault-early-enter-lost`):
    /// CRs become newlines and the whole is trimmed, so its Enter is lost.
    fn early_input(&mut self, now: Instant) {
        let mut bytes = Vec::new();
        let mut buf = vec![0u8; 65536];
        while matches!(term::poll_stdin(0), term::Ready::Input) {
            match term::read_stdin(&mut buf) {
                Some(0) | None => break,
                Some(n) => bytes.extend_from_slice(&buf[..n]),
            }
        }
        let text = String::from_utf8_lossy(&bytes)
            .replace("\r\n", "\n")
            .replace('\r', "\n");
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        self.log.rec("early-input", &[("text", text.into())]);
        let keys = self.parser.feed(text.as_bytes(), now);
        self.on_keys(keys, now);
    }

    fn on_bytes(&mut self, bytes: &[u8], now: Instant) {
        if self.args.fault_read_1022 && bytes.len() == 1022 && !self.parser.in_paste() {
            // unframed = feeding it neither starts nor contains a bracketed paste
            let mut probe = self.parser.clone();
            let keys = probe.feed(bytes, now);
            let framed = keys.iter().any(|k| matches!(k, Key::Paste(_))) || probe.mid_sequence();
            if !framed {
                self.log.rec("fault-dropped", &[("len", 1022.into())]);
                return;
            }
        }
        let keys = self.parser.feed(bytes, now);
        self.on_keys(keys, now);
    }

    fn on_keys(&mut self, keys: Vec<Key>, now: Instant) {
        if self.stage == Stage::Flash {
            self.flash_keys.extend(keys);
            return;
        }
        if let Some(ms) = self.args.late_dialog_after_input_ms {
            if !keys.is_empty() && self.dialog.is_none() && !self.late_dialog_done {
                self.late_dialog_done = true;
                self.late_dialog_at = Some(now + Duration::from_millis(ms));
            }
        }
        let mut dialog_bytes: Vec<u8> = Vec::new();
        for k in keys {
            if let Some(d) = self.dialog {
                if k == Key::Enter {
                    self.flush_dialog_input(d, &mut dialog_bytes);
                    self.log
                        .rec("dialog-dismissed", &[("dialog", d.name().into())]);
                    self.dialog = None;
                    self.composer_ready(now);
                } else {
                    dialog_bytes.extend(k.bytes());
                }
                continue;
            }
            self.on_key(k, now);
        }
        if let Some(d) = self.dialog {
            self.flush_dialog_input(d, &mut dialog_bytes);
        }
    }

    fn flush_dialog_input(&mut self, d: DialogKind, bytes: &mut Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        let s = String::from_utf8_lossy(bytes).into_owned();
        self.log.rec(
            "dialog-input",
            &[("dialog", d.name().into()), ("bytes", s.into())],
        );
        bytes.clear();
    }

    fn on_key(&mut self, k: Key, now: Instant) {
        match k {
            Key::Char(c) => {
                self.composer.push_char(c);
                self.burst.char(now);
            }
            Key::Tab => {
                self.composer.push_char('\t');
                self.burst.char(now);
            }
            Key::Newline => {
                self.composer.push_char('\n');
                self.burst.char(now);
            }
            Key::Enter if self.jump_at.is_some() => {
                self.log
                    .rec("enter-lost", &[("why", "before the banner landed".into())]);
            }
            Key::Enter => {
                if self
                    .burst
                    .enter_is_newline(now, self.args.fault_paste_burst_ms)
                {
                    self.composer.push_char('\n');
                } else if matches!(self.like, Like::Claude | Like::Gemini)
                    && self.composer.text().ends_with('\\')
                {
                    // as the real ones: `\` + Enter is a new line, the `\` dropped
                    self.composer.backspace();
                    self.composer.push_char('\n');
                } else {
                    self.submit(now);
                }
            }
            Key::Backspace => {
                self.composer.backspace();
                self.burst.other(now);
            }
            Key::CtrlU => {
                self.composer.clear();
                self.burst.other(now);
            }
            Key::CtrlC => {
                self.burst.other(now);
                if !self.composer.is_empty() {
                    self.composer.clear();
                } else if self.busy.is_some() {
                    self.interrupt();
                } else {
                    self.quit = Some("ctrl-c".into());
                }
            }
            Key::Esc => {
                self.burst.other(now);
                let double = self
                    .last_esc
                    .is_some_and(|t| now.duration_since(t) <= DOUBLE_ESC);
                if self.busy.is_some() {
                    self.interrupt();
                }
                if double {
                    self.composer.clear();
                    self.last_esc = None;
                } else {
                    self.last_esc = Some(now);
                }
            }
            Key::Paste(s) => {
                self.composer.paste(self.like, &s);
                self.burst.other(now);
            }
            Key::Seq(_) | Key::Ctrl(_) => {}
        }
    }

    fn submit(&mut self, now: Instant) {
        let text = self.composer.text();
        if text.trim().is_empty() {
            return;
        }
        self.composer.clear();
        self.last_esc = None;
        self.after_error = false;
        if self.busy.is_some() {
            self.log.rec("queued", &[("text", text.clone().into())]);
            self.queue.push(text);
            return;
        }
        let exit = text.trim() == "/exit";
        self.record_prompt(text, false);
        if exit {
            // as the real agents do: `/exit` ends the program
            self.quit = Some("/exit".into());
            return;
        }
        self.go_busy(now);
    }

    fn record_prompt(&mut self, text: String, queued: bool) {
        self.prompts += 1;
        self.log.rec(
            "prompt",
            &[
                ("n", self.prompts.into()),
                ("text", Value::from(text.as_str())),
                ("queued", queued.into()),
            ],
        );
        if self.args.records {
            records::fire_hooks(
                self.like,
                "UserPromptSubmit",
                serde_json::json!({"session_id": format!("fake-{}", std::process::id()), "prompt": text}),
            );
            if let Err(e) = records::append(self.like, &text) {
                self.log
                    .rec("record-failed", &[("error", e.to_string().into())]);
            }
        }
        self.last_prompt = text.clone();
        self.history.push(Entry::Echo(text));
    }

    /// `--records`: the turn's reply (or its error, or its pending tool call)
    /// in the agent's record of replies, before the turn is seen to end.
    fn record_reply(&mut self, r: &records::FakeReply) {
        if self.args.records {
            if let Err(e) = records::append_reply(self.like, &self.last_prompt, r) {
                self.log
                    .rec("record-failed", &[("error", e.to_string().into())]);
            }
        }
    }

    fn go_busy(&mut self, now: Instant) {
        self.busy = Some((now, now + Duration::from_millis(self.args.busy_ms)));
        self.publish("busy");
    }

    /// `--records`: the agent's own published state, where the real one keeps it.
    fn publish(&mut self, state: &str) {
        if self.args.records {
            if let Err(e) = records::status(self.like, state) {
                self.log
                    .rec("status-failed", &[("error", e.to_string().into())]);
            }
        }
    }

    fn end_busy(&mut self, now: Instant) {
        self.busy = None;
        let text = match &self.args.reply {
            Some(t) => t.replace("\\n", "\n"),
            None => format!(
                "Fake reply to prompt {} (promptgate fake-agent).",
                self.prompts
            ),
        };
        let mut reply = records::FakeReply::to(&self.last_prompt, &text);
        reply.tool = self
            .args
            .reply_tool
            .clone()
            .map(|n| (n, "echo 'promptgate fake-agent'".to_string()));
        if self.approvals_left > 0 {
            // the turn stops on the approval dialog: the call is recorded, pending
            self.approvals_left -= 1;
            reply.tool = Some((
                self.args
                    .reply_tool
                    .clone()
                    .unwrap_or_else(|| "Bash".into()),
                "echo 'promptgate fake-agent'".into(),
            ));
            reply.tool_status = "pending".into();
            self.record_reply(&reply);
            self.publish("waiting");
            self.log.rec("turn-approval", &[("n", self.prompts.into())]);
            self.show_dialog(DialogKind::Permission);
            return;
        }
        if self.fails_left > 0 {
            reply.error = Some(FAKE_API_ERROR.to_string());
        }
        self.record_reply(&reply);
        self.publish("idle");
        if self.args.records {
            records::fire_hooks(self.like, "Stop", serde_json::json!({}));
        }
        if self.fails_left > 0 {
            self.fails_left -= 1;
            self.after_error = true;
            self.history.push(Entry::Failed);
            self.log.rec("turn-failed", &[("n", self.prompts.into())]);
        } else {
            for line in text.split('\n') {
                self.history.push(Entry::Reply(line.to_string()));
            }
        }
        if !self.queue.is_empty() {
            for t in std::mem::take(&mut self.queue) {
                self.record_prompt(t, true);
            }
            self.go_busy(now);
            return;
        }
        if self.args.exit_after.is_some_and(|n| self.prompts >= n) {
            self.quit = Some("exit-after".into());
        }
    }

    /// Esc or Ctrl-C while busy: the turn ends; queued messages go back into the composer.
    fn interrupt(&mut self) {
        self.busy = None;
        self.publish("idle");
        self.history.push(Entry::Interrupted);
        self.log.rec("interrupt", &[]);
        if !self.queue.is_empty() {
            let back = std::mem::take(&mut self.queue).join("\n");
            let rest = self.composer.text();
            self.composer.clear();
            self.composer.push_str(&back);
            if !rest.is_empty() {
                self.composer.push_char('\n');
                self.composer.push_str(&rest);
            }
        }
    }
}

#[cfg(test)]
mod tests;
