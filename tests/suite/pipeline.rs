//! The gate and verify, driven with real captures and a scripted clock.

use promptgate::core::detect::State;
use promptgate::core::profile::Profiles;
use promptgate::core::screen::Screen;
use promptgate::core::verify::{judge, ReceiptKind};
use promptgate::engine::gate::{wait, GateOpts, ManualClock};
use std::path::Path;
use std::time::Duration;

fn fixture(name: &str) -> Screen {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    promptgate::io::capture::load(&root.join(format!("{name}.txt")), None).unwrap()
}

fn run_gate(agent: &str, frames: &[&str], opts: GateOpts) -> promptgate::engine::gate::GateResult {
    run_gate_screens(agent, fixtures(frames), opts)
}

/// The fixtures `frames`, loaded.
fn fixtures(frames: &[&str]) -> Vec<Screen> {
    frames.iter().map(|f| fixture(f)).collect()
}

/// A reader that returns `screens`, one per look (the last one repeats).
fn replay(screens: &[Screen]) -> impl FnMut() -> promptgate::core::error::Result<Screen> + '_ {
    let mut i = 0;
    move || {
        let s = screens[i.min(screens.len() - 1)].clone();
        i += 1;
        Ok(s)
    }
}

/// The gate over `screens`, one per poll (the last one repeats).
fn run_gate_screens(
    agent: &str,
    screens: Vec<Screen>,
    opts: GateOpts,
) -> promptgate::engine::gate::GateResult {
    let profiles = Profiles::builtin();
    let clock = ManualClock::default();
    wait(
        profiles.get(agent).unwrap(),
        &opts,
        &clock,
        &mut replay(&screens),
    )
    .unwrap()
}

#[test]
fn gate_waits_through_start_up_and_needs_a_still_screen() {
    let opts = GateOpts {
        interval: Duration::from_millis(25),
        stable: Duration::from_millis(100),
        ..GateOpts::default()
    };
    let r = run_gate(
        "codex",
        &[
            "codex/19-ready-first-composer-loading",
            "codex/07b-fresh-nodaemon-composer-flash-before-trust",
            "codex/06-idle-composer",
        ],
        opts,
    );
    assert!(r.ready, "{}", r.reason);
    assert_eq!(r.state, State::Ready);
    // two start-up frames, then the ready frame must be seen still for 100 ms (4 more polls)
    assert!(r.polls >= 7, "polls {}", r.polls);
    assert!(r.waited_ms >= 100);
}

/// A ready screen tmux has seen no output for: ready on the first poll.
fn quiet(name: &str, ms: Option<u64>) -> Screen {
    let mut s = fixture(name);
    s.quiet_ms = ms;
    s
}

#[test]
fn a_long_quiet_ready_screen_passes_on_the_first_poll() {
    let r = run_gate_screens(
        "codex",
        vec![quiet("codex/06-idle-composer", Some(3000))],
        GateOpts::default(),
    );
    assert!(r.ready, "{}", r.reason);
    assert_eq!((r.polls, r.waited_ms), (1, 0));
    assert!(r.reason.contains("still for 3000 ms"), "{}", r.reason);
    // no quiet time known: the stability window is watched
    let r = run_gate_screens(
        "codex",
        vec![quiet("codex/06-idle-composer", None)],
        GateOpts::default(),
    );
    assert!(r.ready && r.polls >= 5 && r.waited_ms >= 100, "{r:?}");
}

#[test]
fn quiet_time_is_not_trusted_once_the_picture_moved() {
    // a start-up frame, then the ready one: it is watched for the settle window
    let r = run_gate_screens(
        "gemini",
        vec![
            quiet("gemini/60-starting-80x24", Some(5000)),
            quiet("gemini/61-ready-80x24", Some(5000)),
        ],
        GateOpts::default(),
    );
    assert!(r.ready, "{}", r.reason);
    assert!(r.waited_ms >= 800, "settle skipped: {}", r.reason);
    // codex has no settle beyond the stability window, which is watched
    let r = run_gate_screens(
        "codex",
        vec![
            quiet("codex/19-ready-first-composer-loading", Some(5000)),
            quiet("codex/06-idle-composer", Some(5000)),
        ],
        GateOpts::default(),
    );
    assert!(r.ready, "{}", r.reason);
    assert!(r.waited_ms >= 100, "window skipped: {}", r.reason);
    // quiet does not make a busy or dialog screen ready
    let r = run_gate_screens(
        "claude",
        vec![quiet("claude/04-trust-dialog", Some(9000))],
        GateOpts::default(),
    );
    assert_eq!((r.ready, r.state), (false, State::Dialog("trust".into())));
}

/// A pane process under 20 s old counts as starting up even when its prompt
/// already shows: gemini's ready-looking prompt can still jump when its banner
/// lands, so the settle window applies. An older one needs only the window.
#[test]
fn a_young_pane_process_gets_the_start_up_settle() {
    let young = GateOpts {
        process_age: Some(Duration::from_secs(3)),
        ..GateOpts::default()
    };
    let r = run_gate("gemini", &["gemini/61-ready-80x24"], young.clone());
    assert!(r.ready, "{}", r.reason);
    assert!(r.waited_ms >= 1000, "no settle: {}", r.reason);
    assert!(
        r.reason
            .contains("after start-up (its foreground job is 3.0 s old; 1000 ms needed)"),
        "{}",
        r.reason
    );
    let old = GateOpts {
        process_age: Some(Duration::from_secs(60)),
        ..GateOpts::default()
    };
    let r = run_gate("gemini", &["gemini/61-ready-80x24"], old);
    assert!(r.ready && r.waited_ms < 200, "{r:?}");
    // claude's profile has no settle: a young pane waits only the window
    let r = run_gate("claude", &["claude/09-idle-after-apikey"], young);
    assert!(r.ready && r.waited_ms < 200, "{r:?}");
}

/// Gemini's start-up paints its prompt high and moves it down once when the
/// banner lands (real captures of 0.58.0 and 0.61.0): a gate that saw that one
/// move knows the layout is final and needs only the stability window after it;
/// before the move (or without seeing it) the start-up settle applies.
#[test]
fn gemini_start_up_is_over_once_its_prompt_made_its_one_move() {
    let young = GateOpts {
        process_age: Some(Duration::from_secs(3)),
        ..GateOpts::default()
    };
    for (before, after) in [
        (
            "gemini/v0.61.0-78-start-before-banner-80x24",
            "gemini/v0.61.0-78-start-after-banner-80x24",
        ),
        (
            "gemini/v0.58.0-78-start-before-banner-120x40",
            "gemini/v0.58.0-78-start-after-banner-120x40",
        ),
    ] {
        // the pre-jump prompt held still for 650 ms (26 looks), then the jump
        let mut screens = vec![fixture("gemini/60-starting-80x24")];
        screens.extend(std::iter::repeat_n(fixture(before), 26));
        screens.push(fixture(after));
        let r = run_gate_screens("gemini", screens.clone(), GateOpts::default());
        assert!(r.ready, "{}", r.reason);
        assert_eq!(
            r.verdict.composer.as_ref().map(|c| c.row),
            fixture(after).cursor.map(|c| c.1)
        );
        assert!(
            (750..1000).contains(&r.waited_ms),
            "{after}: {} ms: {}",
            r.waited_ms,
            r.reason
        );
        assert!(
            r.reason
                .contains("its prompt moved 1 time, as the profile's start-up does"),
            "{}",
            r.reason
        );
        // the same for a young process the gate never saw blank
        let r = run_gate_screens("gemini", screens[1..].to_vec(), young.clone());
        assert!(
            r.ready && (700..1000).contains(&r.waited_ms),
            "{}",
            r.reason
        );
        // the pre-jump prompt alone is never final before the settle
        let r = run_gate(
            "gemini",
            &["gemini/60-starting-80x24", before],
            GateOpts::default(),
        );
        assert!(r.ready && r.waited_ms >= 1000, "{}", r.reason);
        // nor the post-jump prompt when the jump was not seen
        let r = run_gate("gemini", &[after], young.clone());
        assert!(r.ready && r.waited_ms >= 1000, "{}", r.reason);
        // a settle asked for (`--settle`) is kept
        let asked = GateOpts {
            settle_after_start: Some(Duration::from_millis(1500)),
            ..GateOpts::default()
        };
        let r = run_gate_screens("gemini", screens.clone(), asked);
        assert!(r.ready && r.waited_ms >= 1500, "{}", r.reason);
    }
    // a prompt that moved up (a screen that scrolled) did not make that move,
    // nor one with a dialog between its two ready looks
    let before = "gemini/v0.61.0-78-start-before-banner-80x24";
    let after = "gemini/v0.61.0-78-start-after-banner-80x24";
    for frames in [
        vec!["gemini/60-starting-80x24", after, before],
        vec![
            "gemini/60-starting-80x24",
            before,
            "gemini/02-after-trust",
            after,
        ],
    ] {
        let opts = GateOpts {
            wait_dialog: true,
            ..GateOpts::default()
        };
        let r = run_gate("gemini", &frames, opts);
        assert!(r.ready && r.waited_ms >= 1000, "{frames:?}: {}", r.reason);
    }
}

/// A dialog ends the wait as soon as the picture has held still for the window
/// (at once when tmux says the pane has been quiet that long), never waiting for
/// the timeout.
#[test]
fn trust_dialog_ends_the_wait_once_it_holds_still() {
    let r = run_gate("claude", &["claude/04-trust-dialog"], GateOpts::default());
    assert!(!r.ready);
    assert_eq!(r.state, State::Dialog("trust".into()));
    assert!(r.polls <= 6 && r.waited_ms <= 150, "{r:?}");
    let r = run_gate_screens(
        "claude",
        vec![
            quiet("claude/04-trust-dialog", Some(2000)),
            fixture("claude/09-idle-after-apikey"),
        ],
        GateOpts::default(),
    );
    assert_eq!((r.ready, r.polls), (false, 1), "{r:?}");
}

/// A draft or a dialog on a picture that is still moving (an agent redrawing
/// after its turn, caught between two writes) is not believed: the gate looks
/// again, and a ready screen that follows and holds still is ready.
#[test]
fn a_draft_or_dialog_on_a_moving_picture_is_looked_at_again() {
    for first in ["claude/10-typed-hello", "claude/04-trust-dialog"] {
        let r = run_gate(
            "claude",
            &[first, "claude/09-idle-after-apikey"],
            GateOpts::default(),
        );
        assert!(r.ready, "{first}: {}", r.reason);
    }
}

#[test]
fn busy_fails_fast_unless_waiting_through_it() {
    let r = run_gate(
        "gemini",
        &["gemini/11-hello-enter-1s", "gemini/06-ready-idle"],
        GateOpts::default(),
    );
    assert_eq!((r.ready, r.state.clone()), (false, State::Busy));
    let opts = GateOpts {
        wait_busy: true,
        ..GateOpts::default()
    };
    let r = run_gate(
        "gemini",
        &[
            "gemini/11-hello-enter-1s",
            "gemini/11-hello-enter-3s",
            "gemini/06-ready-idle",
        ],
        opts,
    );
    assert!(r.ready, "{}", r.reason);
}

#[test]
fn a_draft_is_never_typed_over() {
    let r = run_gate("claude", &["claude/10-typed-hello"], GateOpts::default());
    assert_eq!((r.ready, r.state.clone()), (false, State::Draft));
}

#[test]
fn gate_times_out_on_a_blank_pane() {
    let opts = GateOpts {
        timeout: Duration::from_millis(500),
        ..GateOpts::default()
    };
    let blank = Screen {
        rows: vec![String::new(); 40],
        width: 120,
        height: 40,
        ..Screen::default()
    };
    let profiles = Profiles::builtin();
    let clock = ManualClock::default();
    let mut read = || Ok(blank.clone());
    let r = wait(profiles.get("claude").unwrap(), &opts, &clock, &mut read).unwrap();
    assert!(!r.ready);
    assert_eq!(r.state, State::Starting);
    assert!(r.reason.contains("timed out"), "{}", r.reason);
}

fn receipt(agent: &str, body: &str, before: &str, after: &str) -> ReceiptKind {
    let profiles = Profiles::builtin();
    judge(
        profiles.get(agent).unwrap(),
        body,
        &fixture(before),
        &fixture(after),
    )
    .receipt
}

#[test]
fn receipts_from_real_captures() {
    // busy right after the submit: consumed
    assert_eq!(
        receipt(
            "claude",
            "hello world",
            "claude/10-typed-hello",
            "claude/11-submit-0.2s"
        ),
        ReceiptKind::Consumed
    );
    assert_eq!(
        receipt(
            "codex",
            "hello world",
            "codex/10-typed-hello",
            "codex/14-enter-10s"
        ),
        ReceiptKind::Consumed
    );
    assert_eq!(
        receipt(
            "gemini",
            "hello world",
            "gemini/10-typed-hello",
            "gemini/11-hello-enter-1s"
        ),
        ReceiptKind::Consumed
    );
    // the Enter became a newline: the body still sits in the composer
    assert_eq!(
        receipt(
            "codex",
            "hello gap 0",
            "codex/10-typed-hello",
            "codex/64-sendkeys-hello-gap-0"
        ),
        ReceiptKind::Stranded
    );
    // a paste placeholder still in the composer
    assert_eq!(
        receipt(
            "claude",
            &"x".repeat(5000),
            "claude/20-paste5k-bracketed-0.3s",
            "claude/21-paste5k-bracketed-2s"
        ),
        ReceiptKind::Stranded
    );
    // a dialog after the submit
    assert_eq!(
        receipt(
            "claude",
            "hello",
            "claude/10-typed-hello",
            "claude/04-trust-dialog"
        ),
        ReceiptKind::Refused
    );
    // finished quickly (offline error), the echo is the proof
    assert_eq!(
        receipt(
            "gemini",
            "hello world",
            "gemini/10-typed-hello",
            "gemini/12-hello-error-final"
        ),
        ReceiptKind::Consumed
    );
}

#[test]
fn a_long_body_whose_echo_scrolled_off_is_consumed_by_its_tail() {
    // 100 lines, 5 KB: at 80x24 claude's transcript keeps only the last 15 lines
    // of the message (the `❯ 00000 …` echo row scrolled off) and its offline busy
    // phase lasts ~0.1-0.3 s; the tail above the emptied box is the proof.
    let body = (0..100)
        .map(|i| format!("{i:05} the quick brown fox jumps over the lazy dog"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        receipt(
            "claude",
            &body,
            "claude/66-draft-paste5k-80x24",
            "claude/67-ready-after-paste5k-turn-80x24"
        ),
        ReceiptKind::Consumed
    );
    // a body whose lines end alike but whose last line is another one: the older
    // message's tail on screen is not its proof
    let longer = (0..400)
        .map(|i| format!("{i:05} the quick brown fox jumps over the lazy dog"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        receipt(
            "claude",
            &longer,
            "claude/66-draft-paste5k-80x24",
            "claude/67-ready-after-paste5k-turn-80x24"
        ),
        ReceiptKind::Unknown
    );
    // an idle screen that already showed the tail, with nothing in the box before
    // the submit key, proves nothing
    assert_eq!(
        receipt(
            "claude",
            &body,
            "claude/67-ready-after-paste5k-turn-80x24",
            "claude/67-ready-after-paste5k-turn-80x24"
        ),
        ReceiptKind::Unknown
    );
    // gemini's submit gap (input cleared, no echo yet) stays undecided: wait, never re-send
    assert_eq!(
        receipt(
            "gemini",
            "please refactor the parser module so that every error carries its line and column, then run the tests",
            "gemini/62-draft-typed-80x24",
            "gemini/64a-submit-gap-80x24"
        ),
        ReceiptKind::Unknown
    );
}

#[test]
fn an_enter_that_became_a_newline_is_seen_as_such() {
    let profiles = Profiles::builtin();
    let codex = profiles.get("codex").unwrap();
    let c = |f: &str| {
        promptgate::core::detect::detect(codex, &fixture(f))
            .composer
            .unwrap()
    };
    assert!(c("codex/64-sendkeys-hello-gap-0").trailing_newline);
    assert!(c("codex/61-sendkeys-LF-body-then-Enter-immediate").trailing_newline);
    assert!(!c("codex/10-typed-hello").trailing_newline);
    assert!(!c("codex/30-paste3-bracketed-0.3s").trailing_newline);
}

/// `gate::wait_turn` over `screens`, one per look (the last one repeats), on a
/// manual clock, with a minute's timeout; `hook` is the agent's end-of-turn event.
fn turn_over(
    p: &promptgate::core::profile::Profile,
    screens: &[Screen],
    start: impl Into<promptgate::engine::gate::TurnStart>,
    hook: &mut dyn FnMut() -> Option<String>,
) -> promptgate::engine::gate::Turn {
    let clock = ManualClock::default();
    promptgate::engine::gate::wait_turn(
        p,
        &clock,
        Duration::from_secs(60),
        start,
        &mut replay(screens),
        hook,
    )
    .unwrap()
}

/// `--until-done`: the turn a prompt started ends when the agent, seen busy,
/// is ready again; a dialog ends the wait as not done; a ready agent with no
/// turn running is done at once unless a prompt was just submitted.
#[test]
fn the_turn_ends_busy_then_ready() {
    let profiles = Profiles::builtin();
    let p = profiles.get("claude").unwrap();
    let turn = |frames: &[&str], fresh: bool| turn_over(p, &fixtures(frames), fresh, &mut || None);
    let idle = "claude/09-idle-after-apikey";
    let busy = "claude/13-submit-3s";
    // just submitted: the first ready looks are before the turn began
    let t = turn(&[idle, idle, busy, busy, busy, idle], true);
    assert!(t.done && t.saw_busy, "{t:?}");
    assert_eq!(t.turn_ms, 500);
    // nothing running: done at once
    let t = turn(&[idle], false);
    assert!(t.done && !t.saw_busy && t.turn_ms == 0, "{t:?}");
    // a turn that never shows busy is over after the grace
    let t = turn(&[idle], true);
    assert!(t.done && t.turn_ms >= 3000, "{t:?}");
    // the agent's record holds the prompt (its turn began): a ready screen that
    // holds still ends it without the grace, a short turn never seen busy too
    let taken = |frames: &[&str]| {
        turn_over(
            p,
            &fixtures(frames),
            promptgate::engine::gate::TurnStart::Taken,
            &mut || None,
        )
    };
    let t = taken(&[idle]);
    assert!(t.done && !t.saw_busy, "{t:?}");
    assert!(
        t.turn_ms >= promptgate::engine::gate::TAKEN_STILL.as_millis() as u64 && t.turn_ms < 1000,
        "{t:?}"
    );
    // a ready look between the echo and the busy row does not end it: the picture moved
    let t = taken(&[idle, busy, busy, idle]);
    assert!(t.done && t.saw_busy, "{t:?}");
    let t = taken(&[idle, busy]);
    assert!(!t.done && t.timed_out, "{t:?}");
    // a dialog ends the wait, not done
    let t = turn(&[busy, "claude/04-trust-dialog"], true);
    assert!(!t.done && t.state.to_string() == "dialog:trust", "{t:?}");
    // busy for ever: timed out
    let t = turn(&[busy], true);
    assert!(!t.done && t.timed_out, "{t:?}");
    assert_eq!(t.ended_by, None);
    assert_eq!(
        turn(&[busy, idle], true).ended_by.as_deref(),
        Some("screen")
    );

    // the agent's Stop hook ends the turn while the screen still shows it busy,
    // but never over a dialog on screen
    let hooked = |frames: &[&str], stop_at: usize| {
        let mut looks = 0;
        let mut hook = || {
            looks += 1;
            (looks > stop_at).then(|| "hook Stop".to_string())
        };
        turn_over(p, &fixtures(frames), true, &mut hook)
    };
    let t = hooked(&[busy], 3);
    assert!(t.done && t.saw_busy, "{t:?}");
    assert_eq!(t.ended_by.as_deref(), Some("hook Stop"));
    assert_eq!(t.turn_ms, 300);
    assert!(t.reason.contains("hook Stop"), "{t:?}");
    let t = hooked(&["claude/04-trust-dialog"], 0);
    assert!(!t.done && t.state.to_string() == "dialog:trust", "{t:?}");
}

/// An agent that still reveals its answer after its busy marker went away
/// (Copilot CLI, under load: `● PG-QUICK` with the footer already ready, then
/// `PG-QUICK-ANSWER`): the turn is done once the ready screen held still for the
/// profile's `done_still_ms`, not at the first ready look. On every size of the
/// real captures; an agent without the setting ends at the first ready look.
#[test]
fn a_reply_still_drawn_after_busy_cleared_holds_the_turn_open() {
    let profiles = Profiles::builtin();
    let copilot = profiles.get("copilot").unwrap();
    let still = copilot.capability().done_still_ms;
    assert!(still >= 200, "copilot done_still_ms {still}");
    for size in ["80x24", "120x40", "200x50"] {
        let busy = fixture(&format!("copilot/v1.0.102-41-model-streaming-{size}"));
        let done = fixture(&format!("copilot/v1.0.102-42-model-finished-turn-{size}"));
        // the same ready screen with only part of the answer drawn, twice more
        // (the answer's last row: the last one ending in `-END` above the composer)
        let last = done
            .rows
            .iter()
            .rposition(|r| r.contains("-END"))
            .expect("the answer on screen");
        let part = |keep: usize| {
            let mut s = done.clone();
            let r = &mut s.rows[last];
            let end = r.find("-END").unwrap();
            r.truncate(end.saturating_sub(keep));
            s
        };
        let frames = [busy.clone(), part(9), part(4), done.clone()];
        let turn = |p| turn_over(p, &frames, true, &mut || None);
        let t = turn(copilot);
        assert!(t.done && t.saw_busy, "{size}: {t:?}");
        // polls 100 ms apart: the last change at 300 ms, then held for done_still_ms
        assert!(
            t.turn_ms >= 300 + still && t.turn_ms <= 300 + still + 100,
            "{size}: ended at {} ms, before the answer held still {still} ms",
            t.turn_ms
        );
        // the same frames with the setting off end at the first ready look
        let mut quick = copilot.clone();
        quick.def.delivery.done_still_ms = 0;
        let t = turn(&quick);
        assert!(t.done && t.turn_ms == 100, "{size}: {t:?}");
    }
}

/// Aider draws a streaming reply with its cursor hidden and no prompt row under
/// it: busy on every size of the real captures; the same rows with the cursor
/// shown (or its visibility unknown) are not taken for a stream by that rule.
#[test]
fn aider_streaming_reads_busy_only_with_the_cursor_hidden() {
    let profiles = Profiles::builtin();
    let aider = profiles.get("aider").unwrap();
    for size in ["80x24", "120x40", "200x50"] {
        let s = fixture(&format!("aider/v0.86.2-41-model-streaming-{size}"));
        assert_eq!(s.cursor_visible, Some(false), "{size}");
        let v = promptgate::core::detect::detect(aider, &s);
        assert_eq!(v.state, State::Busy, "{size}: {}", v.reason());
        assert_eq!(v.evidence.rule, "aider.streaming", "{size}");
        for shown in [Some(true), None] {
            let mut t = s.clone();
            t.cursor_visible = shown;
            let v = promptgate::core::detect::detect(aider, &t);
            assert_ne!(v.evidence.rule, "aider.streaming", "{size} {shown:?}");
        }
    }
}
