//! Every capture in fixtures/ is classified as its manifest says.

use promptgate::core::detect::detect;
use promptgate::core::profile::Profiles;
use std::path::Path;

/// The rows of `manifest` (under fixtures/) that `detect` classifies other
/// than it says, as lines; and how many rows it has. `cols`: the columns of
/// the file, the agent and the state.
fn misclassified(
    manifest: &str,
    (file_c, agent_c, state_c): (usize, usize, usize),
) -> (Vec<String>, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let manifest = std::fs::read_to_string(root.join(manifest)).unwrap();
    let profiles = Profiles::builtin();
    let mut failures = Vec::new();
    let mut n = 0;
    for line in manifest.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (file, agent, want) = (cols[file_c], cols[agent_c], cols[state_c]);
        let screen =
            promptgate::io::capture::load(&root.join(format!("{file}.txt")), None).unwrap();
        let v = detect(profiles.get(agent).unwrap(), &screen);
        n += 1;
        if v.state.to_string() != want {
            failures.push(format!(
                "{file}: want {want}, got {} ({})",
                v.state,
                v.reason()
            ));
        }
    }
    (failures, n)
}

#[test]
fn every_fixture_is_classified_as_its_manifest_says() {
    let (failures, n) = misclassified("manifest.tsv", (0, 1, 5));
    assert!(n >= 100, "only {n} fixtures");
    assert!(
        failures.is_empty(),
        "{} of {n} misclassified:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// By screen and title alone (no process to go by, as behind `ssh`), a capture
/// never names another agent: a fork that shares its parent's placeholder (Qwen
/// Code and Gemini CLI) is told apart by its banner or its title. A capture that
/// shows neither stays unnamed; none is named wrongly.
#[test]
fn no_fixture_is_taken_for_another_agent_by_its_screen() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let manifest = std::fs::read_to_string(root.join("manifest.tsv")).unwrap();
    let profiles = Profiles::builtin();
    let (mut wrong, mut named, mut n) = (Vec::new(), 0, 0);
    for line in manifest.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (file, agent) = (cols[0], cols[1]);
        let mut screen =
            promptgate::io::capture::load(&root.join(format!("{file}.txt")), None).unwrap();
        // what a pane running the agent through `ssh` reports
        screen.command = Some("ssh".into());
        let id = promptgate::core::identify::identify(&profiles, None, &screen, &[]).unwrap();
        n += 1;
        match id.agent.as_deref() {
            Some(a) if a == agent => named += 1,
            Some(a) => wrong.push(format!("{file} ({agent}): named {a} by {}", id.detail)),
            None => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {n} named wrongly:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(named * 2 > n, "only {named} of {n} named by screen");
    let qwen = manifest.lines().filter(|l| l.contains("\tqwen\t")).count();
    assert!(qwen >= 20, "{qwen} qwen captures");
}

/// A prompt the agent parked while it works (`-45-model-queued-prompt-`, typed
/// and submitted during a streamed reply) is judged `queued` after the submit
/// key, against the agent's own streaming screen of the same release and size
/// (no queue yet) as the look before it: the receipt never says `consumed` for
/// a prompt that has not reached the model.
#[test]
fn every_queued_prompt_capture_gets_the_queued_receipt() {
    use promptgate::core::verify::{judge, ReceiptKind};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let manifest = std::fs::read_to_string(root.join("manifest.tsv")).unwrap();
    let profiles = Profiles::builtin();
    let load = |f: &str| promptgate::io::capture::load(&root.join(format!("{f}.txt")), None);
    let (mut failures, mut n) = (Vec::new(), 0);
    for line in manifest.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (file, agent) = (cols[0], cols.get(1).copied().unwrap_or(""));
        if !file.contains("-45-model-queued-prompt-") {
            continue;
        }
        n += 1;
        let before = file.replace("-45-model-queued-prompt-", "-41-model-streaming-");
        let (Ok(after), Ok(before)) = (load(file), load(&before)) else {
            failures.push(format!(
                "{file}: no streaming capture of that release and size"
            ));
            continue;
        };
        let j = judge(
            profiles.get(agent).unwrap(),
            "pg-quick queued second prompt",
            &before,
            &after,
        );
        if j.receipt != ReceiptKind::Queued {
            failures.push(format!("{file}: {} ({})", j.receipt, j.evidence.rule));
        }
    }
    // Qwen Code 0.15.6 after `send --force` during the stream: its prompt under the
    // spinner with no marker (a real look of tests/real_turns.rs)
    let (before, after) = (
        load("qwen/v0.15.6-41-model-streaming-120x40").unwrap(),
        load("qwen/v0.15.6-45-model-queued-forced-120x40").unwrap(),
    );
    let j = judge(
        profiles.get("qwen").unwrap(),
        "parked in the stream: pg-quick",
        &before,
        &after,
    );
    assert_eq!(
        (j.receipt, j.evidence.rule.as_str()),
        (ReceiptKind::Queued, "verify.parked-under-busy")
    );
    // not when the agent was idle before the submit: then that row is no queue
    let ready = load("qwen/v0.15.6-01-ready-120x40").unwrap();
    let j = judge(
        profiles.get("qwen").unwrap(),
        "parked in the stream: pg-quick",
        &ready,
        &after,
    );
    assert_ne!(j.receipt, ReceiptKind::Queued);
    assert!(n >= 10, "only {n} queued-prompt captures");
    assert!(
        failures.is_empty(),
        "{} of {n} not queued:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Busy is read from the screen, not from the pane title alone: the title is the
/// agent's to set and the user's to take away (Codex's `[tui] terminal_title`,
/// tmux's `allow-set-title off`). Every busy capture still reads busy with its
/// title blank, but Codex 0.171.0's streaming reply: it draws nothing on screen
/// while the reply's text streams (its status row hides, its footer shows the
/// thread name), so there the title's spinner is all there is.
#[test]
fn every_busy_capture_reads_busy_without_its_title() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let manifest = std::fs::read_to_string(root.join("manifest.tsv")).unwrap();
    let profiles = Profiles::builtin();
    let (mut failures, mut n) = (Vec::new(), 0);
    for line in manifest.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (file, agent, want) = (cols[0], cols[1], cols[5]);
        if want != "busy" || file.starts_with("codex/v0.171.0-41-model-streaming-") {
            continue;
        }
        let mut screen =
            promptgate::io::capture::load(&root.join(format!("{file}.txt")), None).unwrap();
        screen.title = Some(String::new());
        let v = detect(profiles.get(agent).unwrap(), &screen);
        n += 1;
        if v.state.to_string() != "busy" {
            failures.push(format!("{file}: {} ({})", v.state, v.reason()));
        }
    }
    assert!(n >= 100, "only {n} busy captures");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Real captures edited the way other releases, sizes, themes and users draw
/// them (fixtures/derived/README.md): a todo list between Claude's spinner and
/// its box, a question wrapped at another width, a light theme's typed text,
/// a draft in a placeholder's words, a prompt quoting a busy line.
#[test]
fn every_derived_screen_is_classified_as_its_manifest_says() {
    let (failures, n) = misclassified("derived/manifest.tsv", (0, 1, 2));
    assert!(n >= 80, "only {n} derived screens");
    assert!(
        failures.is_empty(),
        "{} of {n} misclassified:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
