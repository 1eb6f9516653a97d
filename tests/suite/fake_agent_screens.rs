//! `promptgate fake-agent` in a real tmux server (a private socket per test):
//! the built-in profiles classify each screen it draws as they would the real
//! agent's, and its transcript holds exactly what was delivered.

use crate::common;
use common::QUOTES_EVERY_AGENT as QUOTES;
use promptgate::core::detect::{detect, Verdict};
use promptgate::core::profile::Profiles;
use promptgate::core::screen::Screen;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

static SERVERS: AtomicUsize = AtomicUsize::new(0);

fn profiles() -> &'static Profiles {
    static P: OnceLock<Profiles> = OnceLock::new();
    P.get_or_init(Profiles::builtin)
}

const META: &str = "cursor_x=#{cursor_x}
cursor_y=#{cursor_y}
cursor_flag=#{cursor_flag}
pane_width=#{pane_width}
pane_height=#{pane_height}
alternate_on=#{alternate_on}
pane_current_command=#{pane_current_command}
pane_in_mode=#{pane_in_mode}
pane_dead=#{pane_dead}
pane_title=#{pane_title}
@@end-of-meta@@";

/// A tmux server of our own running one fake agent; killed on drop.
struct Pane {
    sock: String,
    like: &'static str,
    transcript: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.sock, "kill-server"])
            .env_remove("TMUX")
            .stderr(Stdio::null())
            .status();
    }
}

impl Pane {
    fn start(like: &'static str, extra: &[&str]) -> Pane {
        let sock = format!(
            "promptgate-test-{}-{}",
            std::process::id(),
            SERVERS.fetch_add(1, Ordering::SeqCst)
        );
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("transcript.jsonl");
        let pane = Pane {
            sock,
            like,
            transcript: transcript.clone(),
            _dir: dir,
        };
        let mut args: Vec<String> = [
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "fa",
            "-x",
            "120",
            "-y",
            "40",
            env!("CARGO_BIN_EXE_promptgate"),
            "fake-agent",
            "--like",
            like,
            "--cwd-label",
            "/home/u/work/fake-proj",
            "--transcript",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(transcript.display().to_string());
        args.extend(extra.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        pane.tmux(&refs);
        pane
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.sock])
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "{}: tmux {args:?}: {}\ntranscript:\n{}",
            self.like,
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&self.transcript).unwrap_or_default()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, literal: &str) {
        self.tmux(&["send-keys", "-t", "fa", "-l", literal]);
    }

    fn key(&self, key: &str) {
        self.tmux(&["send-keys", "-t", "fa", key]);
    }

    /// `load-buffer` + `paste-buffer -p -r` (bracketed, LFs kept).
    fn paste(&self, body: &str) {
        let mut child = Command::new("tmux")
            .args(["-L", &self.sock, "load-buffer", "-b", "fa-body", "-"])
            .env_remove("TMUX")
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(body.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
        self.tmux(&[
            "paste-buffer",
            "-p",
            "-r",
            "-d",
            "-b",
            "fa-body",
            "-t",
            "fa",
        ]);
    }

    /// One read: the `display -p` facts and the grid, in one tmux call.
    fn screen(&self) -> Screen {
        let out = self.tmux(&[
            "display",
            "-p",
            "-t",
            "fa",
            META,
            ";",
            "capture-pane",
            "-p",
            "-t",
            "fa",
        ]);
        let (meta, text) = out.split_once("@@end-of-meta@@\n").unwrap_or((&out, ""));
        Screen::from_capture(text, meta)
    }

    fn verdict(&self) -> (Verdict, Screen) {
        let s = self.screen();
        (detect(profiles().get(self.like).unwrap(), &s), s)
    }

    /// Poll until detect says `want`; panics with the last screen after `secs`.
    fn wait_state(&self, want: &str, secs: f64) -> Verdict {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        loop {
            let (v, s) = self.verdict();
            if v.state.to_string() == want {
                return v;
            }
            if Instant::now() > end {
                panic!(
                    "{}: waited {secs}s for {want}, still {} ({})\ncursor {:?} visible {:?} title {:?}\n{}\ntranscript:\n{}",
                    self.like,
                    v.state,
                    v.reason(),
                    s.cursor,
                    s.cursor_visible,
                    s.title,
                    s.rows.join("\n"),
                    std::fs::read_to_string(&self.transcript).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Poll every 15 ms until detect says `want`; every frame before it must read
    /// `starting` (`what` names them in the failure) and is handed to `each`.
    fn starting_until(
        &self,
        want: &str,
        what: &str,
        secs: f64,
        mut each: impl FnMut(&Verdict, &Screen),
    ) {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        loop {
            let (v, s) = self.verdict();
            let st = v.state.to_string();
            if st == want {
                return;
            }
            assert_eq!(
                st,
                "starting",
                "{}: {what} classified {st} ({})\n{}",
                self.like,
                v.reason(),
                s.rows.join("\n")
            );
            each(&v, &s);
            assert!(
                Instant::now() < end,
                "{}: no {want} after {what}",
                self.like
            );
            std::thread::sleep(Duration::from_millis(15));
        }
    }

    /// Poll the transcript until it holds a `kind` record; returns them.
    fn wait_kind(&self, kind: &str, secs: f64) -> Vec<Value> {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        loop {
            let r = self.kinds(kind);
            if !r.is_empty() {
                return r;
            }
            assert!(Instant::now() < end, "{}: no {kind} record", self.like);
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Poll until two reads 250 ms apart show the same picture.
    fn wait_still(&self, secs: f64) -> Screen {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        let mut prev = self.screen();
        loop {
            std::thread::sleep(Duration::from_millis(250));
            let s = self.screen();
            if s.same_picture(&prev) || Instant::now() > end {
                return s;
            }
            prev = s;
        }
    }

    fn records(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.transcript)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("transcript line is JSON"))
            .collect()
    }

    fn kinds(&self, kind: &str) -> Vec<Value> {
        self.records()
            .into_iter()
            .filter(|r| r["kind"] == kind)
            .collect()
    }

    fn prompts(&self) -> Vec<String> {
        self.kinds("prompt")
            .iter()
            .map(|r| r["text"].as_str().unwrap().to_string())
            .collect()
    }

    /// Poll the transcript until it holds `n` prompts.
    fn wait_prompts(&self, n: usize, secs: f64) -> Vec<String> {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        loop {
            let p = self.prompts();
            if p.len() >= n {
                return p;
            }
            assert!(
                Instant::now() < end,
                "{}: waited for {n} prompts, transcript:\n{}",
                self.like,
                std::fs::read_to_string(&self.transcript).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Poll the transcript until the agent has recorded its exit; the reason.
    fn wait_exit(&self, secs: f64) -> String {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        loop {
            if let Some(r) = self.kinds("exit").first() {
                return r["reason"].as_str().unwrap_or("").to_string();
            }
            assert!(Instant::now() < end, "{}: no exit record", self.like);
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn composer_text(&self) -> String {
        let (v, _) = self.verdict();
        v.composer.map(|c| c.text).unwrap_or_default()
    }
}

/// blank -> dialog -> ready -> draft -> busy -> ready; a 3-line bracketed paste
/// submits byte-exact; a message sent while busy is queued, then submitted.
fn lifecycle(like: &'static str) {
    let p = Pane::start(
        like,
        &[
            "--blank-ms",
            "600",
            "--dialog",
            "trust",
            "--busy-ms",
            "1000",
        ],
    );
    let (v, s) = p.verdict();
    assert_eq!(v.state.to_string(), "starting", "{like}: blank pane");
    assert!(s.rows.iter().all(|r| r.is_empty()), "{like}: blank pane");

    p.wait_state("dialog:trust", 3.0);
    p.key("Enter");
    p.wait_state("ready", 2.0);

    p.keys("hello");
    let v = p.wait_state("draft", 2.0);
    assert_eq!(v.composer.unwrap().text, "hello");
    p.key("Enter");
    p.wait_state("busy", 2.0);
    p.wait_state("ready", 3.0);
    assert_eq!(p.prompts(), vec!["hello"]);

    let body = "line one\n\tline two  \nline three";
    p.paste(body);
    let v = p.wait_state("draft", 2.0);
    assert!(
        v.composer.as_ref().unwrap().text.ends_with("line three"),
        "{like}: pasted draft shows literally: {:?}",
        v.composer
    );
    p.key("Enter");
    p.wait_state("busy", 2.0);
    assert_eq!(p.wait_prompts(2, 2.0)[1], body, "{like}: paste byte-exact");

    // Enter while busy: queued (with the agent's queued marker), sent after the turn
    p.keys("queued msg");
    p.wait_state("busy", 1.0);
    p.key("Enter");
    let end = Instant::now() + Duration::from_secs(2);
    let queued = profiles().get(like).unwrap().queued.clone();
    loop {
        let s = p.screen();
        if s.rows
            .iter()
            .any(|r| queued.iter().any(|m| m.re.is_match(r)))
        {
            break;
        }
        assert!(
            Instant::now() < end,
            "{like}: no queued marker:\n{}",
            s.rows.join("\n")
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(p.prompts().len(), 2, "{like}: queued, not yet submitted");
    let prompts = p.wait_prompts(3, 3.0);
    assert_eq!(prompts[2], "queued msg");
    p.wait_state("busy", 1.0);
    p.wait_state("ready", 3.0);

    let r = p.records();
    assert_eq!(r[0]["kind"], "start");
    assert_eq!(r[0]["like"], like);
    assert!(
        p.kinds("dialog-input").is_empty(),
        "{like}: nothing typed into the dialog"
    );
    assert_eq!(p.kinds("dialog-dismissed").len(), 1);
    let q: Vec<bool> = p
        .kinds("prompt")
        .iter()
        .map(|r| r["queued"].as_bool().unwrap())
        .collect();
    assert_eq!(q, vec![false, false, true]);

    // Ctrl-C: clears a draft, exits on an empty composer
    p.keys("scratch");
    p.wait_state("draft", 1.0);
    p.key("C-c");
    p.wait_state("ready", 1.0);
    p.key("C-c");
    assert_eq!(p.wait_exit(2.0), "ctrl-c");
    assert_eq!(p.prompts().len(), 3);
}

/// Text that quotes a dialog is never a dialog: in the transcript (seeded as
/// earlier turns) the agent is ready, in the composer it is a draft, and once
/// submitted (echoed above the composer) the agent is ready for the next one.
fn quoted_dialogs(like: &'static str) {
    let mut args = vec!["--busy-ms", "150"];
    for q in QUOTES {
        args.extend(["--seed-echo", q]);
    }
    let p = Pane::start(like, &args);
    let v = p.wait_state("ready", 5.0);
    assert_eq!(v.state.to_string(), "ready");
    let screen = p.screen().rows.join("\n");
    // (how many earlier turns fit depends on the pane's height, which tmux 3.2a
    // sets differently for a detached session: at least two must show)
    let shown = QUOTES
        .iter()
        .filter(|q| screen.contains(q.lines().next().unwrap_or("")))
        .count();
    assert!(shown >= 2, "{like}: the seeded transcript shows:\n{screen}");
    for (i, q) in QUOTES.iter().enumerate() {
        p.paste(q);
        let v = p.wait_state("draft", 3.0);
        assert_eq!(v.composer.unwrap().text, *q, "{like}");
        p.key("Enter");
        assert_eq!(p.wait_prompts(i + 1, 3.0)[i], *q, "{like}");
        p.wait_state("ready", 3.0);
    }
    assert_eq!(p.prompts(), QUOTES, "{like}: each once, in order");
}

/// A real dialog under a transcript that quotes other dialogs is still that
/// dialog, with its own kind; nothing typed into it.
#[test]
fn a_real_dialog_under_a_quoting_transcript_keeps_its_kind() {
    for like in ["claude", "codex", "gemini"] {
        for kind in ["permission", "trust"] {
            let mut args = vec!["--dialog", kind];
            for q in QUOTES {
                args.extend(["--seed-echo", q]);
            }
            let p = Pane::start(like, &args);
            p.wait_state(&format!("dialog:{kind}"), 5.0);
            assert!(p.kinds("dialog-input").is_empty(), "{like}");
        }
    }
}

#[test]
fn quoted_dialogs_claude() {
    quoted_dialogs("claude");
}

#[test]
fn quoted_dialogs_codex() {
    quoted_dialogs("codex");
}

#[test]
fn quoted_dialogs_gemini() {
    quoted_dialogs("gemini");
}

#[test]
fn claude_lifecycle() {
    lifecycle("claude");
}

#[test]
fn codex_lifecycle() {
    lifecycle("codex");
}

#[test]
fn gemini_lifecycle() {
    lifecycle("gemini");
}

/// Flicker and the composer flash never look ready; keys typed into a dialog are
/// recorded as violations; a late dialog replaces a ready composer.
#[test]
fn start_up_frames_and_dialogs() {
    for like in ["claude", "codex", "gemini"] {
        let p = Pane::start(
            like,
            &[
                "--flicker",
                "2",
                "--composer-flash-ms",
                "500",
                "--dialog",
                "permission",
            ],
        );
        let mut seen = Vec::new();
        p.starting_until("dialog:permission", "start-up frame", 4.0, |v, _| {
            if seen.last() != Some(&v.reason()) {
                seen.push(v.reason());
            }
        });
        assert!(
            seen.iter().any(|r| r.contains("signature")),
            "{like}: the flash was never seen: {seen:?}"
        );
        p.keys("y");
        let r = &p.wait_kind("dialog-input", 2.0)[0];
        assert_eq!(r["bytes"], "y");
        assert_eq!(r["dialog"], "permission");
        p.wait_state("dialog:permission", 1.0);
        p.key("Enter");
        p.wait_state("ready", 2.0);
        assert!(p.prompts().is_empty());
    }

    let p = Pane::start("gemini", &["--fault-late-dialog", "trust"]);
    p.wait_state("ready", 3.0);
    p.wait_state("dialog:trust", 2.0);
    p.key("Enter");
    p.wait_state("ready", 2.0);
    std::thread::sleep(Duration::from_millis(400));
    p.wait_state("ready", 0.1);
    assert_eq!(
        p.kinds("dialog-shown").len(),
        1,
        "the late dialog comes once"
    );

    // `--late-dialog-flash-ms`: the composer before the late dialog is the
    // not-ready start-up look (as codex flashes before its first-run dialogs),
    // and what is typed during it reaches the dialog.
    for like in ["claude", "codex", "gemini"] {
        let p = Pane::start(
            like,
            &[
                "--fault-late-dialog",
                "trust",
                "--late-dialog-flash-ms",
                "600",
            ],
        );
        let mut typed = false;
        p.starting_until(
            "dialog:trust",
            "the flash before the late dialog",
            4.0,
            |_, s| {
                if !typed && !s.rows.iter().all(|r| r.trim().is_empty()) {
                    p.keys("x");
                    typed = true;
                }
            },
        );
        // the key typed during the flash reached the dialog
        p.wait_kind("dialog-input", 2.0);
        assert!(
            p.kinds("ready").is_empty(),
            "{like}: ready before the dialog"
        );
        p.key("Enter");
        p.wait_state("ready", 2.0);
        assert_eq!(p.kinds("ready").len(), 1);
        assert!(p.prompts().is_empty());
    }
}

/// `--fault-read-1022`: unframed reads of exactly 1022 bytes are lost; pastes are not.
#[test]
fn fault_read_1022_drops_unframed_bytes() {
    let p = Pane::start("claude", &["--fault-read-1022", "--busy-ms", "200"]);
    p.wait_state("ready", 3.0);
    let body: String = (0..500).map(|i| format!("{:09}|", i)).collect();
    assert_eq!(body.len(), 5000);
    p.keys(&body);
    p.wait_still(3.0);
    p.keys("END");
    let end = Instant::now() + Duration::from_secs(3);
    while !p.composer_text().ends_with("END") {
        assert!(Instant::now() < end, "END never showed");
        std::thread::sleep(Duration::from_millis(25));
    }
    p.key("Enter");
    let got = p.wait_prompts(1, 3.0).remove(0);
    let kept = got.strip_suffix("END").unwrap();
    let lost = body.len() - kept.len();
    let dropped = p.kinds("fault-dropped").len();
    assert!(dropped >= 1, "nothing dropped; kept {}", kept.len());
    assert_eq!(lost, dropped * 1022, "kept {} of 5000", kept.len());

    p.wait_state("ready", 3.0);
    let framed: String = (0..100)
        .map(|i| format!("line {i:04} of a 5k paste\n"))
        .collect();
    p.paste(&framed);
    p.wait_state("draft", 2.0);
    p.key("Enter");
    assert_eq!(
        p.wait_prompts(2, 3.0)[1],
        framed,
        "bracketed paste unaffected"
    );
}

/// `--fault-paste-burst-ms 120`: an Enter right after fast typed text is a newline;
/// an Enter after a quiet gap submits (the text exactly, newline included).
#[test]
fn fault_paste_burst_turns_a_fast_enter_into_a_newline() {
    let p = Pane::start(
        "codex",
        &[
            "--fault-paste-burst-ms",
            "120",
            "--busy-ms",
            "200",
            "--exit-after",
            "1",
        ],
    );
    p.wait_state("ready", 3.0);
    p.keys("hello");
    p.key("Enter");
    std::thread::sleep(Duration::from_millis(250));
    let v = p.wait_state("draft", 1.0);
    assert_eq!(v.composer.unwrap().text, "hello");
    assert!(p.prompts().is_empty(), "the fast Enter must not submit");
    p.key("Enter");
    assert_eq!(p.wait_prompts(1, 2.0), vec!["hello\n"]);
    assert_eq!(p.wait_exit(2.0), "exit-after");
}

/// `--fault-early-enter-lost`: text sent before the first paint stays, its Enter is lost.
#[test]
fn fault_early_enter_lost() {
    let p = Pane::start(
        "gemini",
        &[
            "--blank-ms",
            "700",
            "--fault-early-enter-lost",
            "--busy-ms",
            "200",
        ],
    );
    p.keys("early bird");
    p.key("Enter");
    let v = p.wait_state("draft", 3.0);
    assert_eq!(v.composer.unwrap().text, "early bird");
    std::thread::sleep(Duration::from_millis(200));
    assert!(p.prompts().is_empty());
    p.key("Enter");
    assert_eq!(p.wait_prompts(1, 2.0), vec!["early bird"]);

    // SIGTERM: a clean exit, recorded
    let pid = p.tmux(&["display", "-p", "-t", "fa", "#{pane_pid}"]);
    let st = Command::new("kill")
        .args(["-TERM", pid.trim()])
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(p.wait_exit(2.0), "signal 15");
}

/// `--fail-turns`: after a failed turn claude's empty box shows the dim
/// `Resend your message to try again` (SGR 2 in `capture-pane -e`), which reads
/// `ready`; `promptgate send` then delivers the next prompt, exactly once.
#[test]
fn a_failed_turn_leaves_claude_ready_and_the_next_send_lands() {
    let p = Pane::start("claude", &["--fail-turns", "1", "--busy-ms", "300"]);
    p.wait_state("ready", 3.0);
    p.keys("first prompt");
    p.wait_state("draft", 2.0);
    p.key("Enter");
    p.wait_kind("turn-failed", 3.0);
    let v = p.wait_state("ready", 3.0);
    assert!(v.composer.unwrap().empty);
    let (_, s) = p.verdict();
    let row = s
        .rows
        .iter()
        .position(|r| r.ends_with("Resend your message to try again"))
        .unwrap_or_else(|| panic!("no after-error placeholder:\n{}", s.rows.join("\n")));
    let ansi = p.tmux(&["capture-pane", "-p", "-e", "-t", "fa"]);
    let line = ansi.lines().nth(row).unwrap_or("");
    // tmux re-encodes it as the real Claude's capture reads: `ESC[7mR ESC[0;2m …`
    assert!(
        line.contains("\x1b[7mR")
            && (line.contains("\x1b[2m") || line.contains(";2m"))
            && line.contains("esend your message to try again"),
        "the placeholder is drawn dim after a reverse-video R: {line:?}"
    );
    // typing over it is a draft again, with no dim text
    p.keys("typed");
    let v = p.wait_state("draft", 2.0);
    assert_eq!(v.composer.unwrap().text, "typed");
    p.key("C-u");
    p.wait_state("ready", 2.0);

    let o = Command::new(env!("CARGO_BIN_EXE_promptgate"))
        .args(["-L", &p.sock, "send", "-t", "fa", "second prompt"])
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env("PROMPTGATE_LOG", p._dir.path().join("deliveries.jsonl"))
        .env("XDG_RUNTIME_DIR", p._dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "send after a failed turn: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        p.wait_prompts(2, 3.0),
        vec!["first prompt".to_string(), "second prompt".to_string()]
    );
    // the second turn does not fail: a reply, and the placeholder is gone
    p.wait_state("ready", 3.0);
    let (_, s) = p.verdict();
    assert!(!s.rows.iter().any(|r| r.contains("Resend your message")));
}

/// `--like opencode` (issue 19): an alternate-screen agent with a `┃` bar-block
/// composer. Blank, then the home screen's box with its grey placeholder
/// (`ready`), typed text (`draft`), a folded paste (`[Pasted ~3 lines]`, a
/// draft) submitted byte-exact, the progress-bar footer (`busy`), the session
/// view's empty box (`ready`), and its permission prompt (`dialog:permission`);
/// all of it on the alternate screen.
#[test]
fn opencode_look_alternate_screen_and_bar_composer() {
    let p = Pane::start("opencode", &["--blank-ms", "400", "--busy-ms", "800"]);
    let (v, _) = p.verdict();
    assert_eq!(v.state.to_string(), "starting", "blank pane");
    let v = p.wait_state("ready", 3.0);
    let s = p.screen();
    assert!(s.alternate_on, "opencode draws on the alternate screen");
    let c = v.composer.unwrap();
    assert!(
        s.row(c.row).trim_start().starts_with('┃'),
        "{:?}",
        s.row(c.row)
    );
    assert!(
        s.rows.iter().any(|r| r.contains("Ask anything… \"")),
        "the placeholder:\n{}",
        s.rows.join("\n")
    );

    p.keys("hello");
    let v = p.wait_state("draft", 2.0);
    assert_eq!(v.composer.unwrap().text, "hello");
    p.key("Enter");
    let v = p.wait_state("busy", 2.0);
    assert!(v.evidence.rule.starts_with("opencode."), "{}", v.reason());
    p.wait_state("ready", 3.0);
    assert_eq!(p.prompts(), vec!["hello"]);

    let body = "line one\n\tline two\nline three";
    p.paste(body);
    let v = p.wait_state("draft", 2.0);
    let c = v.composer.unwrap();
    assert!(c.paste_placeholder, "folded paste: {:?}", c.text);
    p.key("Enter");
    p.wait_state("busy", 2.0);
    assert_eq!(p.wait_prompts(2, 2.0)[1], body, "paste byte-exact");
    p.wait_state("ready", 3.0);
    drop(p);

    // the permission prompt under a transcript
    let p = Pane::start(
        "opencode",
        &["--seed-echo", "run the tests", "--dialog", "permission"],
    );
    p.wait_state("dialog:permission", 3.0);
}
