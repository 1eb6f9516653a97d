//! Every frame the fake agent can draw, classified by the built-in profiles
//! without tmux (the tmux tests in `tests/suite/fake_agent_screens.rs` do it live).

use super::composer::InputBox;
use super::render::{self, Entry, Frame, Stage, View};
use super::{DialogKind, Like};
use crate::core::detect::{detect, Verdict};
use crate::core::profile::Profiles;
use crate::core::screen::Screen;
use std::sync::OnceLock;

fn profiles() -> &'static Profiles {
    static P: OnceLock<Profiles> = OnceLock::new();
    P.get_or_init(Profiles::builtin)
}

const LIKES: [Like; 3] = [Like::Claude, Like::Codex, Like::Gemini];
const SIZES: [(usize, usize); 3] = [(120, 40), (80, 24), (60, 16)];

struct Case {
    like: Like,
    w: usize,
    h: usize,
    stage: Stage,
    dialog: Option<DialogKind>,
    history: Vec<Entry>,
    composer: InputBox,
    queue: Vec<String>,
    busy_ms: Option<u64>,
    after_error: bool,
    banner: bool,
}

impl Case {
    fn new(like: Like, (w, h): (usize, usize)) -> Case {
        Case {
            like,
            w,
            h,
            stage: Stage::Main,
            dialog: None,
            history: Vec::new(),
            composer: InputBox::default(),
            queue: Vec::new(),
            busy_ms: None,
            after_error: false,
            banner: true,
        }
    }

    fn frame(&self) -> Frame {
        render::frame(&View {
            like: self.like,
            w: self.w,
            h: self.h,
            cwd: "/home/u/work/fake-proj",
            stage: self.stage,
            dialog: self.dialog,
            history: &self.history,
            composer: &self.composer,
            queue: &self.queue,
            busy_ms: self.busy_ms,
            tick: 3,
            esc_hint: false,
            title: None,
            after_error: self.after_error,
            banner: self.banner,
        })
    }

    fn screen(&self) -> Screen {
        let f = self.frame();
        assert_eq!(f.rows.len(), self.h);
        for r in &f.rows {
            assert!(crate::core::text::width(r) <= self.w, "row too wide: {r:?}");
        }
        // the screen as a read of the fake's pane would give it (no .meta text)
        Screen {
            rows: f.rows.clone(),
            cursor: Some(f.cursor),
            cursor_visible: Some(f.cursor_visible),
            width: self.w,
            height: self.h,
            alternate_on: matches!(self.like, Like::Codex | Like::Opencode),
            command: Some("promptgate".into()),
            title: Some(f.title.clone().unwrap_or_else(|| "host".into())),
            ..Screen::default()
        }
    }

    fn verdict(&self) -> Verdict {
        detect(profiles().get(self.like.name()).unwrap(), &self.screen())
    }

    fn expect(&self, want: &str, what: &str) -> Verdict {
        let v = self.verdict();
        assert_eq!(
            v.state.to_string(),
            want,
            "{:?} {}x{} {what}: {}\n{}",
            self.like,
            self.w,
            self.h,
            v.reason(),
            self.frame().rows.join("\n")
        );
        v
    }
}

/// `--start-jump-ms`: gemini's first ready screen, before its banner lands, looks
/// ready (as the real one does) with the prompt higher up than after the jump.
#[test]
fn gemini_before_its_banner_looks_ready_higher_up() {
    for size in SIZES {
        let mut c = Case::new(Like::Gemini, size);
        let after = c.expect("ready", "after the jump").composer.unwrap().row;
        c.banner = false;
        let before = c.expect("ready", "before the jump").composer.unwrap().row;
        assert!(before < after, "{size:?}: {before} vs {after}");
    }
}

#[test]
fn idle_typed_busy_and_queued() {
    for like in LIKES {
        for size in SIZES {
            let mut c = Case::new(like, size);
            c.expect("ready", "empty composer");
            c.composer.push_str("hello world");
            let v = c.expect("draft", "typed");
            assert_eq!(v.composer.unwrap().text, "hello world");
            c.composer.clear();
            c.composer.push_str("a\n\n\tb  \n");
            c.expect(
                "draft",
                "multi-line with blank lines and a trailing newline",
            );
            c.composer.clear();
            c.history.push(Entry::Echo("hello world".into()));
            c.busy_ms = Some(2500);
            c.expect("busy", "busy, empty");
            c.composer.push_str("typed while busy");
            c.expect("busy", "busy with text");
            c.composer.clear();
            c.queue.push("queued one".into());
            c.expect("busy", "busy with a queued message");
            let p = profiles();
            let prof = p.get(like.name()).unwrap();
            let rows = c.frame().rows;
            assert!(
                prof.queued
                    .iter()
                    .any(|m| rows.iter().any(|r| m.re.is_match(r))),
                "{like:?}: no queued marker in\n{}",
                rows.join("\n")
            );
            c.busy_ms = None;
            c.queue.clear();
            c.history.push(Entry::Reply("ok".into()));
            c.history.push(Entry::Interrupted);
            c.expect("ready", "idle after a turn");
        }
    }
}

#[test]
fn after_a_failed_turn_the_box_is_ready_and_a_typed_draft_is_a_draft() {
    for like in LIKES {
        for size in SIZES {
            let mut c = Case::new(like, size);
            c.history.push(Entry::Echo("hello".into()));
            c.history.push(Entry::Failed);
            c.after_error = true;
            c.expect("ready", "after a failed turn");
            let f = c.frame();
            if like == Like::Claude {
                let y = f
                    .rows
                    .iter()
                    .position(|r| r.ends_with(render::CLAUDE_AFTER_ERROR))
                    .expect("claude's after-error placeholder");
                let on: Vec<&render::SgrSpan> = f.styles.iter().filter(|s| s.row == y).collect();
                assert_eq!(
                    render::styled(&f.rows[y], &on),
                    "❯\u{a0}\x1b[7mR\x1b[0m\x1b[2mesend your message to try again\x1b[0m"
                );
            }
            c.composer.push_str("typed after the error");
            c.expect("draft", "typed after a failed turn");
            assert!(
                c.frame().styles.is_empty(),
                "{like:?}: typed text is not dim"
            );
        }
    }
}

#[test]
fn echo_rows_match_the_profile_echo() {
    for like in LIKES {
        let mut c = Case::new(like, (120, 40));
        c.history.push(Entry::Echo("hello world".into()));
        let p = profiles();
        let prof = p.get(like.name()).unwrap();
        let rows = c.frame().rows;
        let hit = rows.iter().find_map(|r| {
            prof.echo
                .iter()
                .find_map(|re| re.captures(r))
                .map(|m| m["text"].to_string())
        });
        assert_eq!(hit.as_deref(), Some("hello world"), "{like:?}");
    }
}

#[test]
fn long_drafts_pastes_and_full_transcripts() {
    for like in LIKES {
        for size in SIZES {
            let mut c = Case::new(like, size);
            for i in 0..30 {
                c.history
                    .push(Entry::Echo(format!("message {i}\nline two")));
                c.history.push(Entry::Reply("ok".into()));
            }
            c.expect("ready", "scrolled transcript");
            c.composer.push_str(&"x".repeat(5000));
            c.expect("draft", "5000 typed chars");
            c.composer.clear();
            let body: String = (0..100)
                .map(|i| format!("line {i} of a long paste\n"))
                .collect();
            c.composer.paste(like, &body);
            let v = c.expect("draft", "pasted 100 lines");
            assert!(
                v.composer.unwrap().paste_placeholder,
                "{like:?} placeholder"
            );
            c.composer.clear();
            c.composer.push_str(&"y".repeat(c.w - 3));
            c.expect("draft", "a row filled to the edge");
        }
    }
}

#[test]
fn dialogs_are_classified_by_kind() {
    for like in LIKES {
        for size in SIZES {
            for d in [
                DialogKind::Trust,
                DialogKind::ApiKey,
                DialogKind::Permission,
                DialogKind::Onboarding,
            ] {
                let mut c = Case::new(like, size);
                c.dialog = Some(d);
                c.expect(&format!("dialog:{}", d.name()), "dialog");
                c.history.push(Entry::Echo("earlier".into()));
                c.composer.push_str("draft kept behind the dialog");
                c.expect(&format!("dialog:{}", d.name()), "dialog over a draft");
            }
        }
    }
}

#[test]
fn start_up_pictures_are_starting() {
    for like in LIKES {
        for size in SIZES {
            let mut c = Case::new(like, size);
            c.stage = Stage::Flash;
            c.expect("starting", "composer flash");
            let rows = render::flicker_rows(&View {
                like,
                w: size.0,
                h: size.1,
                cwd: "/x",
                stage: Stage::Main,
                dialog: None,
                history: &[],
                composer: &InputBox::default(),
                queue: &[],
                busy_ms: None,
                tick: 0,
                esc_hint: false,
                title: None,
                after_error: false,
                banner: true,
            });
            let s = Screen {
                rows: rows.clone(),
                width: size.0,
                height: size.1,
                ..Screen::default()
            };
            let p = profiles();
            let v = detect(p.get(like.name()).unwrap(), &s);
            assert_eq!(v.state.to_string(), "starting", "{like:?} flicker");
        }
    }
}

#[test]
fn wrap_keeps_rows_within_width() {
    assert_eq!(render::wrap("abcdef", 4), vec!["abcd", "ef"]);
    assert_eq!(render::wrap("a\n\nb", 4), vec!["a", "", "b"]);
    assert_eq!(render::wrap("\tx", 3), vec!["   ", " x"]);
    assert_eq!(render::wrap("", 3), vec![""]);
    assert_eq!(render::wrap("abc", 3), vec!["abc"]);
}

/// OpenCode's look: the home screen's box, typed and pasted drafts,
/// busy with its progress-bar footer, the session view's empty box, a long
/// transcript, the permission prompt, and the start-up flash, at every size.
#[test]
fn the_opencode_look_is_classified_as_opencode() {
    for size in SIZES.into_iter().chain([(200, 50)]) {
        let mut c = Case::new(Like::Opencode, size);
        let v = c.expect("ready", "home screen, placeholder");
        assert!(v.composer.unwrap().empty);
        c.composer.push_str("hello world");
        let v = c.expect("draft", "typed");
        assert_eq!(v.composer.unwrap().text, "hello world");
        c.composer.clear();
        c.composer.paste(Like::Opencode, "a\nb\nc");
        let v = c.expect("draft", "a folded paste");
        assert!(v.composer.unwrap().paste_placeholder);
        c.composer.clear();
        c.composer.push_str("first\n\nthird");
        let v = c.expect("draft", "multi-line with a blank line");
        assert_eq!(v.composer.unwrap().text, "first\n\nthird");
        c.composer.clear();
        c.history.push(Entry::Echo("hello world".into()));
        c.busy_ms = Some(1200);
        c.expect("busy", "busy, empty");
        c.composer.push_str("typed while busy");
        c.expect("busy", "busy with text");
        c.composer.clear();
        c.busy_ms = None;
        c.history.push(Entry::Interrupted);
        c.expect("ready", "session view, empty box");
        for i in 0..30 {
            c.history.push(Entry::Echo(format!("message {i}")));
            c.history.push(Entry::Reply("ok".into()));
        }
        c.expect("ready", "a long transcript above the box");
        c.history.push(Entry::Failed);
        c.expect("ready", "after a failed turn");
        c.dialog = Some(DialogKind::Permission);
        c.expect("dialog:permission", "permission prompt");
        let mut f = Case::new(Like::Opencode, size);
        f.stage = Stage::Flash;
        assert_ne!(f.verdict().state.to_string(), "ready", "the flash");
    }
}
