//! Drift reported in releases newer than (or beside) the captured ones (issue 17):
//! each case is a real capture from fixtures/ with the drifted glyph, text or
//! title put in, classified with the built-in profiles. Captures of the real
//! screens, once reachable, belong in fixtures/ (manifest.tsv).

use promptgate::core::detect::detect;
use promptgate::core::profile::Profiles;
use promptgate::core::screen::Screen;
use std::path::Path;

fn load(name: &str) -> (String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let txt = std::fs::read_to_string(root.join(format!("{name}.txt"))).unwrap();
    let meta = std::fs::read_to_string(root.join(format!("{name}.meta"))).unwrap();
    (txt, meta)
}

fn state(agent: &str, txt: &str, meta: &str) -> String {
    let p = Profiles::builtin();
    let v = detect(p.get(agent).unwrap(), &Screen::from_capture(txt, meta));
    format!("{} ({})", v.state, v.reason())
}

fn title(meta: &str, t: &str) -> String {
    meta.lines()
        .map(|l| {
            if l.starts_with("pane_title=") {
                format!("pane_title={t}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn starts(got: &str, want: &str) {
    assert!(got.starts_with(want), "want {want}, got {got}");
}

#[test]
fn codex_ultra_effort_glyph_is_a_composer() {
    let (txt, meta) = load("codex/82-ready-80x24");
    let ready = txt.replace("› Ask Codex to do anything", "» Ask Codex to do anything");
    starts(&state("codex", &ready, &meta), "ready ");
    let draft = txt.replace("› Ask Codex to do anything", "» hello");
    starts(&state("codex", &draft, &meta), "draft ");
}

#[test]
fn codex_follow_up_placeholder_is_empty() {
    let (txt, meta) = load("codex/82-ready-80x24");
    let t = txt.replace("Ask Codex to do anything", "Ask a follow-up question");
    starts(&state("codex", &t, &meta), "ready ");
}

#[test]
fn codex_busy_row_cut_or_wrapped_is_busy() {
    let (txt, meta) = load("codex/85-busy-80x24");
    let idle = title(&meta, "codex-proj");
    let wrapped = txt.replace(
        "• Working (0s • esc to interrupt)",
        "• Working (12s • esc to",
    );
    starts(&state("codex", &wrapped, &idle), "busy ");
    let cut = txt.replace(
        "• Working (0s • esc to interrupt)",
        "• Working (12s • esc …",
    );
    starts(&state("codex", &cut, &idle), "busy ");
    // the title spinner alone
    let none = txt.replace("• Working (0s • esc to interrupt)", "");
    starts(
        &state("codex", &none, &title(&meta, "⠦ codex-proj")),
        "busy ",
    );
}

#[test]
fn codex_action_required_title_is_a_dialog() {
    let (txt, meta) = load("codex/82-ready-80x24");
    let t = title(&meta, "[ ! ] Action Required | codex-proj");
    starts(&state("codex", &txt, &t), "dialog:permission ");
}

#[test]
fn codex_update_prompt_is_a_dialog_never_ready() {
    // drawn as codex draws its start-up menus: a question, the first choice selected
    let (txt, meta) = load("codex/05-trust-folder");
    let t = txt
        .replace("Folder access", "Update available! 0.171.0 -> 0.172.0")
        .replace(
            "› 1. Trust and continue",
            "› 1. Update now (runs npm install -g @openai/codex)",
        )
        .replace("  2. Back to Agent Command Center", "  2. Skip");
    let t: String = t
        .lines()
        .filter(|l| !l.contains("rust") && !l.contains("can run code") && !l.contains("decision"))
        .map(|l| format!("{l}\n"))
        .collect();
    starts(&state("codex", &t, &meta), "dialog:other ");
    // the same words typed into the composer are a draft, never a dialog
    let (txt, meta) = load("codex/82-ready-80x24");
    let t = txt.replace(
        "› Ask Codex to do anything",
        "› 1. Update now (runs npm install -g @openai/codex)",
    );
    starts(&state("codex", &t, &meta), "draft ");
}

#[test]
fn codex_hooks_review_is_a_dialog() {
    // drawn like the trust dialog, whose question it takes the place of
    let (txt, meta) = load("codex/v0.153.4-fresh-trust-120x40");
    let t = txt.replace(
        "Do you trust the contents of this directory?",
        "Hooks need review.",
    );
    assert!(!t.contains("trust the contents"));
    starts(&state("codex", &t, &meta), "dialog:trust ");
}

#[test]
fn gemini_titles_of_newer_releases() {
    let (txt, meta) = load("gemini/61-ready-80x24");
    starts(
        &state("gemini", &txt, &title(&meta, "⏲  Working… (gemini-proj)")),
        "busy ",
    );
    starts(
        &state(
            "gemini",
            &txt,
            &title(&meta, "✋  Action Required (gemini-proj)"),
        ),
        "dialog:permission ",
    );
    starts(
        &state("gemini", &txt, &title(&meta, "◇  Ready (gemini-proj)")),
        "ready ",
    );
}

#[test]
fn claude_title_spinner_of_2_1_228_and_later() {
    let (txt, meta) = load("claude/v2.1.332-ready-120x40");
    starts(
        &state("claude", &txt, &title(&meta, "◐ Claude Code")),
        "busy ",
    );
    starts(
        &state("claude", &txt, &title(&meta, "⠂ Claude Code")),
        "busy ",
    );
    starts(
        &state("claude", &txt, &title(&meta, "✳ Claude Code")),
        "ready ",
    );
}

#[test]
fn claude_generic_menu_row_never_overrides_the_question() {
    let (txt, meta) = load("claude/v2.1.332-fresh-trust-120x40");
    let t = txt
        .replace(" ❯ No, exit", " ❯ 1. Yes")
        .replace("   Yes, I trust this folder", "   2. No");
    starts(&state("claude", &t, &meta), "dialog:trust ");
}

#[test]
fn claude_after_error_placeholder_is_ready_and_typed_text_is_a_draft() {
    let (txt, meta) = load("claude/v2.1.332-ready-after-error-80x24");
    starts(&state("claude", &txt, &meta), "ready ");
    let t = txt.replace(
        "Resend your message to try again",
        "Resend your message to try again now",
    );
    starts(&state("claude", &t, &meta), "draft ");
}

/// Issue 19: Copilot CLI 1.0.102 after a cancelled turn at times left its cursor
/// hidden on the empty `❯` row (seen in the real-agent suite, cursor_flag 0);
/// that screen is still `ready`, and a draft under a hidden cursor a `draft`.
#[test]
fn copilot_hidden_cursor_after_a_cancelled_turn_is_still_ready() {
    let (txt, meta) = load("copilot/v1.0.102-ready-after-interrupt-120x40");
    let hidden = meta.replace("cursor_flag=1", "cursor_flag=0");
    assert_ne!(hidden, meta);
    starts(&state("copilot", &txt, &hidden), "ready ");
    let (txt, meta) = load("copilot/v1.0.102-draft-after-interrupt-120x40");
    let hidden = meta.replace("cursor_flag=1", "cursor_flag=0");
    starts(&state("copilot", &txt, &hidden), "draft ");
}

/// Issue 19: OpenCode at 200 columns draws a sidebar right of its box on the
/// same rows; the box's text is only what lies left of its bottom edge's end.
#[test]
fn opencode_sidebar_text_is_not_input() {
    let (txt, meta) = load("opencode/v1.18.33-ready-after-interrupt-200x50");
    assert!(txt
        .lines()
        .any(|l| l.starts_with("  ┃") && l.trim_end().ends_with("proj:master")));
    starts(&state("opencode", &txt, &meta), "ready ");
    let (txt, meta) = load("opencode/v1.18.33-draft-after-interrupt-200x50");
    let p = Profiles::builtin();
    let v = detect(
        p.get("opencode").unwrap(),
        &Screen::from_capture(&txt, &meta),
    );
    assert_eq!(
        v.composer.map(|c| c.text).as_deref(),
        Some("second prompt typed after the failed turn")
    );
}

/// Issue 19: Copilot CLI folds a 40-line paste into `[Paste #1 - 40 lines]`.
#[test]
fn copilot_folded_paste_is_a_paste_placeholder() {
    let (txt, meta) = load("copilot/v1.0.102-draft-paste-folded-80x24");
    let p = Profiles::builtin();
    let v = detect(
        p.get("copilot").unwrap(),
        &Screen::from_capture(&txt, &meta),
    );
    assert_eq!(v.state.to_string(), "draft", "{}", v.reason());
    assert!(v.composer.unwrap().paste_placeholder);
}
