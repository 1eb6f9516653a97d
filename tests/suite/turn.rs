//! `--until-done`: `send` waits for the turn its prompt started to end and
//! reports how long it took; `wait --until-done` waits for the turn running now.
use crate::common;
use common::*;
use std::time::{Duration, Instant};

#[test]
fn send_until_done_returns_when_the_turn_ends_and_reports_it() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, transcript) = srv.fake("claude", &["--busy-ms", "2000"]);
    srv.wait_state(&pane, "ready", 10.0);
    let t = Instant::now();
    let o = srv.pg(&[
        "send",
        "-t",
        &pane,
        "--until-done",
        "--json",
        "a turn of 2 s",
    ]);
    let took = t.elapsed();
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(code(&o), 0, "{} {r}", stderr(&o));
    assert_eq!(r["receipt"], "consumed");
    assert_eq!(r["turn"]["done"], true, "{r}");
    assert_eq!(r["turn"]["saw_busy"], true, "{r}");
    let ms = r["turn"]["turn_ms"].as_u64().unwrap();
    assert!((1500..6000).contains(&ms), "{r}");
    assert!(took >= Duration::from_millis(1500), "{took:?}");
    assert_eq!(srv.state(&pane), "ready");
    assert_eq!(prompts(&transcript), vec!["a turn of 2 s"]);
    // the plain form prints the receipt line, then the turn's
    let o = srv.pg(&["send", "-t", &pane, "--until-done", "again"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("\tconsumed\t"), "{out}");
    assert!(out.contains("\tdone\tthe turn ended after "), "{out}");
}

#[test]
fn wait_until_done_waits_for_the_running_turn_or_its_timeout() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (pane, _) = srv.fake("codex", &["--busy-ms", "1500"]);
    srv.wait_state(&pane, "ready", 10.0);
    // no turn running: done at once
    let o = srv.pg(&["wait", "-t", &pane, "--until-done", "--json"]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(code(&o), 0, "{r}");
    assert_eq!(r["saw_busy"], false, "{r}");
    srv.submit_by_hand(&pane, "work", 5.0);
    let o = srv.pg(&["wait", "-t", &pane, "--until-done", "--json"]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(code(&o), 0, "{r}");
    assert_eq!(
        (r["done"].as_bool(), r["saw_busy"].as_bool()),
        (Some(true), Some(true)),
        "{r}"
    );
    // a turn longer than --done-timeout: exit 20, with the hint
    srv.submit_by_hand(&pane, "more", 5.0);
    let o = srv.pg(&["wait", "-t", &pane, "--until-done", "--done-timeout", "0.3"]);
    assert_eq!(code(&o), 20, "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("raise --done-timeout"));
}

/// A fan-out (several `-t`, `--all-agents`) with `--until-done`: every pane's
/// turn is followed, each receipt gets its `turn`, and the exit code combines
/// the turns' ends as the fan-out's (0 all done, 35 some, 36 none).
#[test]
fn a_fan_out_until_done_waits_for_every_panes_turn() {
    let srv = TmuxServer::new(120, 40, &[]);
    let (a, ta) = srv.fake("claude", &["--busy-ms", "800"]);
    let (b, tb) = srv.fake("codex", &["--busy-ms", "3000"]);
    srv.wait_state(&a, "ready", 10.0);
    srv.wait_state(&b, "ready", 10.0);
    let t = Instant::now();
    let o = srv.pg(&["send", "-t", &a, "-t", &b, "--until-done", "--json", "two"]);
    let took = t.elapsed();
    let v = json_out(&o);
    assert_eq!(code(&o), 0, "{} {v}", stderr(&o));
    for row in v["targets"].as_array().unwrap() {
        assert_eq!(row["turn"]["done"], true, "{row}");
        assert_eq!(row["turn"]["saw_busy"], true, "{row}");
    }
    assert_eq!(v["summary"]["done"], 2, "{v}");
    assert!(took >= Duration::from_millis(2500), "{took:?}");
    assert_eq!(srv.state(&a), "ready");
    assert_eq!(srv.state(&b), "ready");
    // --all-agents, plain: one turn line a pane
    let o = srv.pg(&["send", "--all-agents", "--until-done", "three"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = text(&o.stdout);
    assert_eq!(
        out.matches("\tdone\tthe turn ended after ").count(),
        2,
        "{out}"
    );
    assert!(out.contains("2 turns done"), "{out}");
    // one turn longer than --done-timeout: some done (35)
    srv.wait_state(&a, "ready", 10.0);
    srv.wait_state(&b, "ready", 10.0);
    let o = srv.pg(&[
        "send",
        "-t",
        &a,
        "-t",
        &b,
        "--until-done",
        "--done-timeout",
        "2",
        "--json",
        "four",
    ]);
    let v = json_out(&o);
    assert_eq!(code(&o), 35, "{} {v}", stderr(&o));
    assert_eq!(v["summary"]["consumed"], 2, "{v}");
    assert_eq!(v["summary"]["done"], 1, "{v}");
    assert_eq!(prompts(&ta), vec!["two", "three", "four"]);
    assert_eq!(prompts(&tb), vec!["two", "three", "four"]);
}
