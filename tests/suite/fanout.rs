//! Fan-out: one prompt to many panes, one aggregated receipt.

use crate::common;
use common::*;
use std::time::Duration;

#[test]
fn fan_out_to_sixteen_panes_names_each_outcome() {
    let srv = TmuxServer::new(100, 30, &["sh"]);
    let likes = ["claude", "codex", "gemini"];
    let mut panes = Vec::new();
    for i in 0..16 {
        let like = likes[i % 3];
        let extra: Vec<&str> = match i {
            3 => vec!["--dialog", "trust"],
            5 | 11 => vec!["--busy-ms", "60000"],
            _ => vec!["--busy-ms", "500"],
        };
        panes.push((i, srv.fake(like, &extra)));
    }
    for (i, (pane, _)) in &panes {
        let want = if *i == 3 { "dialog:trust" } else { "ready" };
        srv.wait_state(pane, want, 20.0);
    }
    // make two panes busy with a prompt of their own
    for (i, (pane, _)) in &panes {
        if *i == 5 || *i == 11 {
            srv.tmux(&["send-keys", "-t", pane, "-l", "earlier work"]);
            std::thread::sleep(Duration::from_millis(200));
            srv.tmux(&["send-keys", "-t", pane, "Enter"]);
            srv.wait_state(pane, "busy", 5.0);
        }
    }
    let body = "fan-out body: run the tests\nand report";
    // a wide stagger, so that the agents' own clocks can show it
    let o = srv.pg(&[
        "send",
        "--all-agents",
        "--json",
        "--timeout",
        "5",
        "--stagger",
        "40",
        body,
    ]);
    assert_eq!(code(&o), 35, "some but not all consumed: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["summary"]["total"], 16);
    assert_eq!(v["summary"]["consumed"], 13, "{v}");
    let rows = v["targets"].as_array().unwrap();
    for (i, (pane, transcript)) in &panes {
        let row = rows
            .iter()
            .find(|r| r["pane"] == pane.as_str())
            .unwrap_or_else(|| panic!("no row for {pane}"));
        let got = prompts(transcript);
        match i {
            3 => {
                assert_eq!(row["exit_code"], 21, "{row}");
                assert!(got.is_empty());
                assert!(records(transcript, "dialog-input").is_empty());
            }
            5 | 11 => {
                assert_eq!(row["exit_code"], 22, "{row}");
                assert_eq!(got, vec!["earlier work"]);
            }
            _ => {
                assert_eq!(row["receipt"], "consumed", "{row}");
                assert_eq!(got, vec![body], "pane {pane}");
            }
        }
    }
    // submits were staggered: no two at the same moment
    let mut at: Vec<i64> = panes
        .iter()
        .filter(|(i, _)| ![3, 5, 11].contains(i))
        .map(|(_, (_, t))| records(t, "prompt")[0]["at_ms"].as_i64().unwrap())
        .collect();
    at.sort();
    assert!(
        at.windows(2).all(|w| w[1] - w[0] >= 20),
        "submit moments {at:?}"
    );
}

#[test]
fn several_targets_and_a_bad_one() {
    let srv = TmuxServer::new(100, 30, &[]);
    let (a, ta) = srv.fake("claude", &[]);
    let (b, tb) = srv.fake("gemini", &[]);
    srv.wait_state(&a, "ready", 10.0);
    srv.wait_state(&b, "ready", 10.0);
    let o = srv.pg(&["send", "-t", &a, "-t", &b, "-t", "%999", "hello both"]);
    assert_eq!(code(&o), 35, "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("%999\t-\tnot-sent\tno such pane"), "{out}");
    assert!(
        out.trim_end().ends_with("promptgate: 2 of 3 consumed"),
        "{out}"
    );
    assert_eq!(prompts(&ta), vec!["hello both"]);
    assert_eq!(prompts(&tb), vec!["hello both"]);
    // --agent with no -t: every pane of that agent
    let o = srv.pg(&["send", "--agent", "gemini", "--wait-busy", "only gemini"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(prompts(&tb), vec!["hello both", "only gemini"]);
    assert_eq!(prompts(&ta), vec!["hello both"]);
}

/// A window linked into two sessions (a grouped session) lists each of its
/// panes twice: `--all-agents` and `--every` deliver to each pane once.
#[test]
fn a_pane_in_two_sessions_gets_a_fan_out_once() {
    let srv = TmuxServer::new(100, 30, &[]);
    let (a, ta) = srv.fake("claude", &["--busy-ms", "50"]);
    srv.wait_state(&a, "ready", 10.0);
    let session = srv.tmux_out(&["display", "-p", "-t", &a, "#{session_name}"]);
    srv.tmux(&["new-session", "-d", "-t", session.trim(), "-s", "grouped"]);
    let listed = srv.tmux_out(&["list-panes", "-a", "-F", "#{pane_id}"]);
    assert!(
        listed.lines().filter(|l| l.trim() == a).count() >= 2,
        "the pane is listed once per session: {listed}"
    );
    for (args, body) in [
        (&["--all-agents", "--wait-busy"][..], "to all agents"),
        (&["--every", "claude", "--wait-busy"][..], "to every claude"),
    ] {
        let mut v = vec!["send"];
        v.extend_from_slice(args);
        v.push(body);
        let o = srv.pg(&v);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    }
    assert_eq!(prompts(&ta), vec!["to all agents", "to every claude"]);
    // --no-verify: submitted, never said to be consumed
    let o = srv.pg(&[
        "send",
        "--all-agents",
        "--wait-busy",
        "--no-verify",
        "--json",
        "unverified",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["summary"]["consumed"], 0, "{v}");
    assert_eq!(v["summary"]["submitted"], 1, "{v}");
    assert!(
        v["summary"]["text"]
            .as_str()
            .unwrap()
            .contains("submitted (not verified)"),
        "{v}"
    );
}

/// An agent that sends to every agent pane from its own pane (its tool call
/// runs promptgate there) is left out: it would wait for itself, or, forced,
/// paste into its own composer mid-turn.
#[test]
fn a_fan_out_leaves_out_the_pane_it_runs_in() {
    let srv = TmuxServer::new(100, 30, &[]);
    let (a, ta) = srv.fake("claude", &[]);
    let (b, tb) = srv.fake("claude", &[]);
    srv.wait_state(&a, "ready", 10.0);
    srv.wait_state(&b, "ready", 10.0);
    let socket = srv.tmux_out(&["display", "-p", "#{socket_path}"]);
    let o = srv
        .pg_cmd(&["send", "--all-agents", "from pane a"])
        .env("TMUX", format!("{},1,0", socket.trim()))
        .env("TMUX_PANE", &a)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("left out"), "{}", stderr(&o));
    assert!(prompts(&ta).is_empty(), "{:?}", prompts(&ta));
    assert_eq!(prompts(&tb), vec!["from pane a"]);
}
