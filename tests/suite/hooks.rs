//! `promptgate hooks`: install tagged entries into an agent's settings, let the
//! agent's hooks record its prompt events per pane, prove a receipt from them,
//! and uninstall back to the very bytes of before.
use crate::common;
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

fn pg(args: &[&str]) -> std::process::Output {
    Command::new(bin())
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .unwrap()
}

/// `hooks uninstall` of a file unchanged since install whose backup is gone
/// (tidied away, never written): the user's file keeps every other key, edited in
/// place; only a file that did not exist before install (the stamp says so) is
/// removed again.
#[test]
fn uninstall_without_its_backup_keeps_the_users_settings() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("settings.json");
    let mine = "{\n  \"model\": \"opus\",\n  \"env\": {\"ANTHROPIC_API_KEY\": \"sk-x\"}\n}\n";
    std::fs::write(&f, mine).unwrap();
    let s = f.to_str().unwrap();
    assert_eq!(
        code(&pg(&["hooks", "install", "claude", "--settings", s])),
        0
    );
    std::fs::remove_file(d.path().join("settings.json.promptgate-backup")).unwrap();
    let o = pg(&["hooks", "uninstall", "claude", "--settings", s]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let after = std::fs::read_to_string(&f).expect("the user's settings file is gone");
    assert!(after.contains("sk-x") && after.contains("opus"), "{after}");
    assert!(!after.contains("hook-event"), "{after}");
    // no file before install: uninstall removes the one install made
    let g = d.path().join("new.json");
    let s = g.to_str().unwrap();
    assert_eq!(
        code(&pg(&["hooks", "install", "claude", "--settings", s])),
        0
    );
    let o = pg(&["hooks", "uninstall", "claude", "--settings", s]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!g.exists(), "the file install made is removed again");
}

/// A FIFO where the stamp or the backup is: `hooks uninstall` refuses at once,
/// in one line, the settings left untouched (it used to block forever).
#[test]
fn uninstall_never_blocks_on_a_fifo_beside_the_settings() {
    for beside in ["promptgate-installed", "promptgate-backup"] {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("settings.json");
        std::fs::write(&f, "{\"model\": \"opus\"}\n").unwrap();
        let s = f.to_str().unwrap();
        assert_eq!(
            code(&pg(&["hooks", "install", "claude", "--settings", s])),
            0
        );
        let installed = std::fs::read(&f).unwrap();
        let fifo = d.path().join(format!("settings.json.{beside}"));
        std::fs::remove_file(&fifo).unwrap();
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut child = Command::new(bin())
            .args(["hooks", "uninstall", "claude", "--settings", s])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if start.elapsed() > std::time::Duration::from_secs(5) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("hooks uninstall blocked on the FIFO {beside}");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(1), "{err}");
        assert!(
            err.contains("not a regular file") && err.trim().lines().count() == 1,
            "{err}"
        );
        assert_eq!(std::fs::read(&f).unwrap(), installed, "left untouched");
    }
}

/// A hook command is promptgate's whatever the binary is called or where it is:
/// a copy named `pg` in a directory with a space installs once, quoted for the
/// agent's shell, says `installed`, and uninstalls back to the bytes of before.
#[test]
fn hooks_of_a_renamed_binary_in_a_path_with_a_space_are_ours() {
    let d = tempfile::tempdir().unwrap();
    let bindir = d.path().join("bin dir");
    std::fs::create_dir(&bindir).unwrap();
    let pgbin = bindir.join("pg");
    std::fs::copy(bin(), &pgbin).unwrap();
    let f = d.path().join("settings.json");
    let before = "{\"model\": \"opus\"}\n";
    std::fs::write(&f, before).unwrap();
    let s = f.to_str().unwrap();
    // (a copy just written can be "busy" for a moment: another test's fork may
    // hold its write descriptor until that child execs)
    let run = |args: &[&str]| {
        for _ in 0..100 {
            match Command::new(&pgbin).args(args).output() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                r => return r.unwrap(),
            }
        }
        panic!("{} stayed busy", pgbin.display())
    };
    let o = run(&["hooks", "install", "claude", "--settings", s]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = std::fs::read_to_string(&f).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cmd = v["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert_eq!(cmd, format!("'{}' hook-event claude Stop", pgbin.display()));
    let o = run(&["hooks", "install", "claude", "--settings", s]);
    assert!(text_of(&o).contains("already installed"), "{}", text_of(&o));
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        text,
        "no second entry"
    );
    let o = run(&["hooks", "status", "claude", "--settings", s]);
    assert!(text_of(&o).contains("claude\tinstalled"), "{}", text_of(&o));
    let o = run(&["hooks", "uninstall", "claude", "--settings", s]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), before);
}

fn text_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The hook events file is never written through a symlink planted in its
/// directory, and a directory another user owns (or a symlink) at the events
/// directory's name is not used at all.
#[test]
fn hook_events_never_go_through_a_planted_link_or_a_foreign_directory() {
    let d = tempfile::tempdir().unwrap();
    let hooks = d.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    let victim = d.path().join("bashrc");
    std::fs::write(&victim, "alias ll='ls -l'\n").unwrap();
    let event = |dir: &std::path::Path, body: &[u8]| {
        let mut c = Command::new(bin());
        c.args(["hook-event", "claude", "UserPromptSubmit"])
            .env("PROMPTGATE_HOOKS_DIR", dir)
            .env("TMUX", "/tmp/tmux-1000/default,1,0")
            .env("TMUX_PANE", "%0");
        output_with_stdin(&mut c, body)
    };
    event(&hooks, b"{\"prompt\":\"x\"}");
    let name = std::fs::read_dir(&hooks)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&hooks).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "the events directory is made private");
    std::fs::remove_file(&name).unwrap();
    std::os::unix::fs::symlink(&victim, &name).unwrap();
    event(&hooks, b"{\"prompt\":\"my private prompt\"}");
    let v = std::fs::read_to_string(&victim).unwrap();
    assert_eq!(v, "alias ll='ls -l'\n", "appended through the link: {v}");
    // a symlink at the directory's own name: not followed
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let linked = d.path().join("linked");
    std::os::unix::fs::symlink(&elsewhere, &linked).unwrap();
    event(&linked, b"{\"prompt\":\"x\"}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}
