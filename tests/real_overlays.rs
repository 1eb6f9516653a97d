//! Sends into the real agents' overlays and first-run menus (issue 26 item 2):
//! the screens the fixtures replay (Claude's `/model` picker, OpenCode's and
//! Kilo's command palette, Copilot's `/login` menu) opened on the real agent,
//! then a send into them. Enter there picks a model, runs a command or starts
//! a sign-in; promptgate must refuse (21) with nothing typed, and land the same
//! prompt once after Escape closes the overlay. One test per agent at 120x40,
//! in the release column `PROMPTGATE_REAL_RELEASE` picks (Copilot signed out: with a
//! model provider set it has no `/login`). Ignored unless asked for:
//!
//! ```text
//! scripts/real-agents.sh install claude opencode kilo copilot && scripts/model.sh install
//! PROMPTGATE_REAL_AGENTS=1 cargo test --test real_overlays -- --include-ignored --nocapture --test-threads=1
//! ```
//!
//! The model and each agent are stopped by PID (also from Drop guards).

mod common;
use common::real::{Agent, Model};
use common::{code, json_out, text};
use std::time::{Duration, Instant};

/// Open the overlay with `keys` (each one `send-keys` argument, 300 ms apart),
/// wait for `state`, send into it, close it with Escape, send again.
/// `signed_out`: the agent runs with no model, signed out (Copilot has `/login`
/// only then: `COPILOT_SIGNED_OUT=1`, scripts/real-agents.sh).
fn overlay(name: &'static str, keys: &[&str], state: &str, signed_out: bool) {
    let t0 = Instant::now();
    let model = (!signed_out).then(Model::start);
    let env: &[(&str, &str)] = if signed_out {
        &[("COPILOT_SIGNED_OUT", "1")]
    } else {
        &[]
    };
    let mut a = Agent::start_on(name, model.as_ref(), env);
    a.wait_state("ready", 60);
    let who = format!("{name} {}", a.version);
    let before = a.records();
    for k in keys {
        a.key(k);
        std::thread::sleep(Duration::from_millis(300));
    }
    a.wait_state(state, 15);
    let shown = a.capture();

    let body = "pg-quick: never into the overlay";
    let o = a.pg(&["send", "-t", &a.pane, "--json", "--timeout", "5", body]);
    let r = json_out(&o);
    assert_eq!(
        code(&o),
        21,
        "{who}: a send into {state}: {}\n{r}\n{shown}",
        text(&o.stderr)
    );
    assert_eq!(r["receipt"], "not-sent", "{who}: {r}");
    // nothing typed: the overlay is still up and shows nothing of the body
    a.wait_state(state, 5);
    let after = a.capture();
    assert!(
        !after.contains("never into") && !after.contains("pg-quick"),
        "{who}: the body reached the screen\n{after}"
    );
    assert_eq!(a.records(), before, "{who}: the record changed");
    eprintln!(
        "REPORT real_overlays {who} {state}: refused 21 ({}), nothing typed",
        r["gate"]["reason"]
    );

    // closed, the same prompt lands once (signed out, Copilot answers any prompt
    // with `Please use /login` again and records none: the composer is enough)
    a.key("Escape");
    a.wait_state("ready", 15);
    if signed_out {
        a.stop();
        eprintln!(
            "REPORT real_overlays {who} took {} s",
            t0.elapsed().as_secs()
        );
        return;
    }
    let o = a.pg(&["send", "-t", &a.pane, "--json", "--timeout", "30", body]);
    assert_eq!(code(&o), 0, "{who}: after Escape: {}", text(&o.stderr));
    let t = Instant::now();
    let mut got = a.records();
    while got.len() == before.len() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(200));
        got = a.records();
    }
    let new: Vec<&String> = got[before.len()..].iter().collect();
    assert_eq!(new, vec![body], "{who}: the record after Escape");
    a.stop();
    eprintln!(
        "REPORT real_overlays {who} took {} s",
        t0.elapsed().as_secs()
    );
}

#[test]
#[ignore = "real agents and the scripted model: PROMPTGATE_REAL_AGENTS=1 cargo test --test real_overlays -- --include-ignored"]
fn claude_model_picker_120x40() {
    overlay("claude", &["/model", "Enter"], "dialog:other", false);
}

#[test]
#[ignore = "real agents and the scripted model: PROMPTGATE_REAL_AGENTS=1 cargo test --test real_overlays -- --include-ignored"]
fn opencode_command_palette_120x40() {
    overlay("opencode", &["C-p"], "dialog:other", false);
}

#[test]
#[ignore = "real agents and the scripted model: PROMPTGATE_REAL_AGENTS=1 cargo test --test real_overlays -- --include-ignored"]
fn kilo_command_palette_120x40() {
    overlay("kilo", &["C-p"], "dialog:other", false);
}

#[test]
#[ignore = "real agents and the scripted model: PROMPTGATE_REAL_AGENTS=1 cargo test --test real_overlays -- --include-ignored"]
fn copilot_login_menu_120x40() {
    overlay("copilot", &["/login", "Enter"], "dialog:login", true);
}
