//! What differs between tmux releases (scripts/tmux-matrix.sh runs this file on
//! each): `--version` names the tmux it finds, an old one is warned about, pane
//! titles and names come back literally, and tmux 3.7's bracket_paste_flag
//! decides the framing.
use crate::common;
use common::*;
use std::process::Command;

fn tmux_version() -> String {
    let o = Command::new("tmux").arg("-V").output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn at_least_3_7() -> bool {
    at_least(3, 7)
}

fn at_least(want_major: u32, want_minor: u32) -> bool {
    let v = tmux_version();
    let n = v.trim_start_matches("tmux ").trim_start_matches("next-");
    let mut it = n.split('.');
    let major: u32 = it.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    let minor: u32 = it
        .next()
        .map(|m| {
            m.chars()
                .take_while(|c| c.is_ascii_digit())
                .collect::<String>()
        })
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    (major, minor) >= (want_major, want_minor) || n.starts_with("master")
}

#[test]
fn version_names_the_tmux_it_finds() {
    let o = Command::new(bin()).arg("--version").output().unwrap();
    assert_eq!(code(&o), 0);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("promptgate "), "{out}");
    assert!(out.contains(&tmux_version()), "{out}");
    assert!(out.contains("tested"), "{out}");
}

#[test]
fn an_older_tmux_than_tested_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("tmux");
    std::fs::write(&fake, "#!/bin/sh\necho 'tmux 3.0a'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new(bin())
        .arg("--version")
        .env("PATH", path)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("tmux 3.0a"), "{out}");
    assert!(
        out.contains("WARNING") && out.contains("older than the oldest tested release"),
        "{out}"
    );
}

#[test]
fn titles_with_control_bytes_and_dollars_read_literally() {
    let srv = TmuxServer::new(100, 30, &[]);
    let (pane, _) = srv.fake("claude", &["--title", "✳ $HOME ${x} \\$y a\u{1f}b"]);
    srv.wait_state(&pane, "ready", 10.0);
    // every field of the read is in its place: the state is right, and the
    // title, which comes last, reads back as the agent set it
    let o = srv.pg(&["explain", "-t", &pane, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let title = j
        .pointer("/screen/title")
        .and_then(|t| t.as_str())
        .unwrap_or("");
    // (tmux 3.7 stores a title vis-encoded, each backslash doubled: that is its value)
    assert!(title.starts_with("✳ $HOME ${x} \\"), "{title:?} in {j}");
    assert!(title.ends_with("$y ab"), "{title:?} in {j}");
    let all = srv.pg(&["state", "--all"]);
    assert!(
        String::from_utf8_lossy(&all.stdout).contains(&format!("{pane}\tclaude\tready")),
        "{}",
        String::from_utf8_lossy(&all.stdout)
    );
}

#[test]
fn bracketed_paste_off_takes_the_unframed_path_where_tmux_says_so() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, transcript) = srv.fake("claude", &["--no-bracketed-paste"]);
    srv.wait_state(&pane, "ready", 10.0);
    let o = srv.pg(&["send", "-t", &pane, "--json", "a single line for a $HOME"]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    assert_eq!(code(&o), 0, "{} {r}", stderr(&o));
    assert_eq!(prompts(&transcript), vec!["a single line for a $HOME"]);
    // a body of several lines lands byte-exact either way (the agent takes a raw LF
    // as a newline); tmux 3.7 says the app has mode 2004 off, so it goes as keys
    srv.wait_state(&pane, "ready", 10.0);
    let o = srv.pg(&["send", "-t", &pane, "--json", "line one\nline two"]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    assert_eq!(code(&o), 0, "{} {r}", stderr(&o));
    assert_eq!(prompts(&transcript)[1], "line one\nline two");
    let want = if at_least_3_7() {
        "raw-keys"
    } else {
        "bracketed-paste"
    };
    assert_eq!(r["framing"], want, "{r}");
    if at_least_3_7() {
        // an agent whose raw LF would submit: refused, untyped, where tmux tells
        let profiles = custom_profile(
            srv.dir.path(),
            "claude",
            "claudelf",
            &[("raw_newline_ok = true", "raw_newline_ok = false")],
        );
        srv.wait_state(&pane, "ready", 10.0);
        let o = srv.pg(&[
            "send",
            "-t",
            &pane,
            "--agent",
            "claudelf",
            "--profiles",
            profiles.to_str().unwrap(),
            "line one\nline two",
        ]);
        assert_eq!(code(&o), 10, "{}", stderr(&o));
        assert!(stderr(&o).contains("bracketed paste off"), "{}", stderr(&o));
        assert_eq!(prompts(&transcript).len(), 2);
    }
}

/// Every read carries the cells' attributes (`capture-pane -e`): the placeholder
/// is told from typed text by how it is drawn, on every release.
#[test]
fn a_read_carries_attributes_and_they_decide_the_placeholder() {
    let srv = TmuxServer::new(100, 30, &[]);
    for like in ["codex", "gemini", "opencode"] {
        let (pane, _) = srv.fake(like, &[]);
        srv.wait_state(&pane, "ready", 10.0);
        let o = srv.pg(&["explain", "-t", &pane]);
        let out = String::from_utf8_lossy(&o.stdout);
        let line = out
            .lines()
            .find(|l| l.contains("composer.placeholder-style"))
            .unwrap_or_else(|| panic!("{like}: no attribute check in\n{out}"));
        assert!(
            line.contains("FIRED") && line.contains("placeholder"),
            "{line}"
        );
        // typed text is drawn plain: a draft
        srv.tmux(&["send-keys", "-t", &pane, "-l", "typed"]);
        srv.wait_state(&pane, "draft", 5.0);
        let o = srv.pg(&["explain", "-t", &pane]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.lines()
                .any(|l| l.contains("composer.placeholder-style") && l.contains("typed text")),
            "{like}:\n{out}"
        );
    }
}

/// How long an idle agent has held still, from tmux's own clock: tmux 3.8 keeps
/// it per pane (`pane_last_output_time`), so a chatty neighbour in the same
/// window does not hide it; before 3.8 only the window's activity is known, and
/// the neighbour's output counts against the agent (the gate then watches).
#[test]
fn a_chatty_neighbour_hides_an_idle_agents_quiet_only_before_3_8() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (alone, _) = srv.fake("claude", &[]);
    let (pane, transcript) = srv.fake("claude", &[]);
    srv.wait_state(&alone, "ready", 10.0);
    srv.wait_state(&pane, "ready", 10.0);
    let o = srv.tmux(&[
        "split-window",
        "-d",
        "-t",
        &pane,
        "sh",
        "-c",
        "while :; do date +%s%N; sleep 0.2; done",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::thread::sleep(std::time::Duration::from_millis(2600));
    let quiet = |p: &str| {
        let o = srv.pg(&["explain", "-t", p, "--json"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let q = j.pointer("/screen/quiet_ms").and_then(|q| q.as_u64());
        (q, j)
    };
    // alone in its window, an idle agent's quiet is known on every release
    let (q, j) = quiet(&alone);
    assert!(q.is_some_and(|q| q >= 1000), "{q:?} in {j}");
    let (q, j) = quiet(&pane);
    let v = tmux_version();
    if v.contains("3.8") || v.contains("master") {
        assert!(q.is_some_and(|q| q >= 1000), "{v}: {q:?} in {j}");
    } else {
        assert!(q.is_none_or(|q| q < 1000), "{v}: {q:?} in {j}");
    }
    // either way the send lands once
    let o = srv.pg(&["send", "-t", &pane, "beside a chatty pane"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&transcript), vec!["beside a chatty pane"]);
}

/// tmux 3.5's `allow-set-title off` keeps an agent from setting the pane title,
/// where some agents show that they work (Codex 0.171 while a reply streams shows
/// it nowhere else): `doctor` names the pane and exits 40. Before 3.5 there is no
/// such option and nothing to say.
#[test]
fn doctor_names_a_pane_whose_agent_cannot_set_its_title() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, _) = srv.fake("codex", &[]);
    srv.wait_state(&pane, "ready", 10.0);
    let o = srv.pg(&["doctor"]);
    assert!(!stderr(&o).contains("allow-set-title"), "{}", stderr(&o));
    let off = srv.tmux(&["set-option", "-p", "-t", &pane, "allow-set-title", "off"]);
    let o = srv.pg(&["doctor"]);
    if at_least(3, 5) {
        assert!(off.status.success(), "{}", text(&off.stderr));
        assert_eq!(code(&o), 40, "{}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains(&pane) && e.contains("allow-set-title off"),
            "{e}"
        );
        assert!(e.contains("codex.title-spinner"), "{e}");
    } else {
        assert!(
            !off.status.success(),
            "{} has allow-set-title",
            tmux_version()
        );
        assert!(!stderr(&o).contains("allow-set-title"), "{}", stderr(&o));
    }
}

/// A target that names no pane (a session that does not exist, a pane that
/// closed) leaves the user's tmux server alive on every release: tmux 3.2a's
/// server died (a segfault, every session lost) expanding `#{window_activity}`
/// for display-message with no pane, which `send -t nosuch` asked for.
#[test]
fn a_target_that_names_no_pane_never_takes_the_server_down() {
    let srv = TmuxServer::new(80, 24, &[]);
    for args in [
        vec!["send", "-t", "nosuch", "hi"],
        vec!["send", "-t", "%99", "hi"],
        vec!["ask", "-t", "nosuch", "hi"],
        vec!["state", "-t", "nosuch"],
        vec!["send", "-t", "a\nb", "hi"],
    ] {
        let o = srv.pg(&args);
        assert_eq!(code(&o), 5, "{args:?}: {}", stderr(&o));
        let ls = srv.tmux(&["list-sessions"]);
        assert!(
            ls.status.success(),
            "{args:?} took the server down ({})",
            tmux_version()
        );
    }
}
