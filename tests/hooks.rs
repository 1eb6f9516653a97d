//! `promptgate hooks`: install tagged entries into an agent's settings, let the
//! agent's hooks record its prompt events per pane, prove a receipt from them,
//! and uninstall back to the very bytes of before.
mod common;
use common::*;
use std::process::Command;

fn hooks(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(bin())
        .arg("hooks")
        .args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .output()
        .unwrap()
}

#[test]
fn installed_hooks_prove_a_receipt_and_uninstall_restores_the_file() {
    let srv = TmuxServer::new(120, 40, &[]);
    let home = srv.dir.path().join("home");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    let settings = home.join(".claude/settings.json");
    let before = b"{\n    \"model\": \"opus\",\n    \"permissions\": {\"allow\": []}\n}\n";
    std::fs::write(&settings, before).unwrap();
    let hookdir = srv.dir.path().join("hook-events");

    let o = hooks(&home, &["install", "claude"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("installed promptgate's claude hooks"));
    let o = hooks(&home, &["status"]);
    let st = String::from_utf8_lossy(&o.stdout);
    assert!(
        st.contains("claude\tinstalled") && st.contains("codex\tnot installed"),
        "{st}"
    );

    // a profile whose transcript record cannot be found: only the hook can prove
    let profiles = custom_profile(
        srv.dir.path(),
        "claude",
        "hookclaude",
        &[(
            "path = \"{env:CLAUDE_CONFIG_DIR|~/.claude}/projects/{cwd_dashed}/*.jsonl\"",
            "path = \"/nonexistent/promptgate-test/x.jsonl\"",
        )],
    );
    let h = format!("HOME={}", home.display());
    let hd = format!("PROMPTGATE_HOOKS_DIR={}", hookdir.display());
    let b = bin();
    let t = srv.dir.path().join("t.jsonl");
    let ts = t.display().to_string();
    let pane = srv.window(&[
        "env",
        &h,
        &hd,
        b.to_str().unwrap(),
        "fake-agent",
        "--like",
        "claude",
        "--records",
        "--busy-ms",
        "300",
        "--transcript",
        &ts,
    ]);
    srv.wait_state(&pane, "ready", 10.0);
    // `send --json` to the pane with the hook profile; its exit code and receipt
    let send = |extra: &[&str], body: &str| {
        let mut args = vec![
            "send",
            "--profiles",
            profiles.to_str().unwrap(),
            "--agent",
            "hookclaude",
            "-t",
            &pane,
            "--json",
        ];
        args.extend_from_slice(extra);
        args.push(body);
        let o = srv
            .pg_cmd(&args)
            .env("PROMPTGATE_HOOKS_DIR", &hookdir)
            .output()
            .unwrap();
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        (code(&o), stderr(&o), r)
    };
    let body = "proved by the agent's own hook: $HOME;";
    let (c, err, r) = send(&[], body);
    assert_eq!(c, 0, "{err} {r}");
    assert_eq!(r["proof"]["source"], "hook", "{r}");
    assert_eq!(r["proof"]["match"], "exact", "{r}");
    assert_eq!(prompts(&t), vec![body]);
    // the pane's event file has the prompt and, after the turn, the Stop
    srv.wait_state(&pane, "ready", 10.0);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let events: Vec<serde_json::Value> = std::fs::read_dir(&hookdir)
        .unwrap()
        .flatten()
        .flat_map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect::<Vec<serde_json::Value>>()
        })
        .collect();
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(names, vec!["UserPromptSubmit", "Stop"], "{events:?}");
    assert_eq!(events[0]["pane"], pane.as_str());
    assert_eq!(events[0]["prompt"], body);

    // --until-done: the agent's Stop hook ends the wait
    let (c, err, r) = send(&["--until-done"], "until the Stop hook");
    assert_eq!(c, 0, "{err} {r}");
    assert_eq!(r["turn"]["done"], true, "{r}");
    assert_eq!(r["turn"]["ended_by"], "hook Stop", "{r}");

    let o = hooks(&home, &["uninstall", "claude"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read(&settings).unwrap(), before);
    let o = hooks(&home, &["status", "claude"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("not installed"));
}

#[test]
fn a_malformed_settings_file_is_an_error_and_stays_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".gemini")).unwrap();
    let f = dir.path().join(".gemini/settings.json");
    std::fs::write(&f, "{\"ui\": ").unwrap();
    let o = hooks(dir.path(), &["install", "gemini"]);
    assert_ne!(code(&o), 0);
    let e = stderr(&o);
    assert!(e.lines().count() == 1 && e.contains("malformed"), "{e}");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "{\"ui\": ");
    let o = hooks(dir.path(), &["install"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn without_home_hooks_install_refuses_and_writes_nothing() {
    let cwd = tempfile::tempdir().unwrap();
    for home in [None, Some("relative/home")] {
        let mut c = Command::new(bin());
        c.args(["hooks", "install", "claude"])
            .current_dir(cwd.path())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME");
        match home {
            Some(h) => c.env("HOME", h),
            None => c.env_remove("HOME"),
        };
        let o = c.output().unwrap();
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        let e = stderr(&o);
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(e.contains("HOME") && e.contains("--settings"), "{e}");
        assert_eq!(
            std::fs::read_dir(cwd.path()).unwrap().count(),
            0,
            "nothing written into the current directory"
        );
    }
}
