//! The tmux plugin (`promptgate.tmux`, `plugin/*.sh`) on private tmux servers.
//!
//! Keys need an attached client (a command prompt, a popup and a menu belong to
//! a client), so each test that presses keys attaches one headless: a second
//! private server runs `tmux -L <inner> attach` in its pane, and the test types
//! into that outer pane with `send-keys`. The bytes reach the inner client as
//! from a terminal: `C-b A` is the prefix and the send key, text typed next
//! goes into the prompt or the popup. Results are read from the inner server's
//! message log (`show-messages`) and the fake agents' transcripts.

mod common;

use common::{bin, prompts, TmuxServer};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn plugin_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("promptgate.tmux")
}

/// The release of the `tmux` on PATH, as (3, 7) for 3.7c; a build that names
/// no release (master) counts as the newest.
fn release() -> (u32, u32) {
    let o = std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .unwrap();
    let v = String::from_utf8_lossy(&o.stdout).to_string();
    let v = v
        .trim()
        .trim_start_matches("tmux ")
        .trim_start_matches("next-");
    let num = |x: &str| {
        x.chars()
            .take_while(|c| c.is_ascii_digit())
            .collect::<String>()
            .parse::<u32>()
            .ok()
    };
    match v.split_once('.') {
        Some((a, b)) => match (num(a), num(b)) {
            (Some(a), Some(b)) => (a, b),
            _ => (99, 0),
        },
        None => (99, 0),
    }
}

/// A private server set up as a user's would be, before the plugin loads.
fn server() -> TmuxServer {
    let s = TmuxServer::new(120, 40, &[]);
    let d = s.dir.path().to_path_buf();
    let b = bin();
    for (k, v) in [
        ("PROMPTGATE_LOG", d.join("deliveries.jsonl")),
        ("XDG_RUNTIME_DIR", d.clone()),
        ("PROMPTGATE_PLUGIN_DEBUG", d.join("plugin-debug.log")),
    ] {
        s.tmux(&["set-environment", "-g", k, v.to_str().unwrap()]);
    }
    s.tmux(&["set-option", "-g", "@promptgate-bin", b.to_str().unwrap()]);
    // tmux picks vi keys from $EDITOR; the typing below assumes emacs keys
    s.tmux(&["set-option", "-g", "status-keys", "emacs"]);
    // the tests find their messages in the log: keep all of it
    s.tmux(&["set-option", "-g", "message-limit", "100000"]);
    s
}

/// Load the plugin as TPM does: run the file inside the server.
fn load(s: &TmuxServer) {
    let o = s.tmux(&["run-shell", plugin_file().to_str().unwrap()]);
    assert!(
        o.status.success() && o.stdout.is_empty(),
        "load: {:?} {}",
        o.status,
        String::from_utf8_lossy(&o.stdout)
    );
}

/// What a load leaves in tmux: keys, command aliases, hooks.
fn snapshot(s: &TmuxServer) -> (String, String, String) {
    (
        s.tmux_out(&["list-keys"]),
        s.tmux_out(&["show-options", "-s", "command-alias"]),
        s.tmux_out(&["show-hooks", "-g"]),
    )
}

fn prefix_keys(s: &TmuxServer) -> Vec<String> {
    s.tmux_out(&["list-keys", "-T", "prefix"])
        .lines()
        .filter(|l| l.contains("promptgate"))
        .map(|l| l.split_whitespace().nth(3).unwrap_or("").to_string())
        .collect()
}

/// The binding of KEY in TABLE as `list-keys` prints it, or None. The whole
/// table is listed: tmux 3.7 shows `list-keys -T TABLE KEY` as a message
/// instead of printing it.
fn binding(s: &TmuxServer, table: &str, key: &str) -> Option<String> {
    s.tmux_out(&["list-keys", "-T", table])
        .lines()
        .find(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.iter().position(|x| *x == "-T").and_then(|i| w.get(i + 2)) == Some(&key)
        })
        .map(str::to_string)
}

/// A headless client: a second private server whose pane runs `tmux attach`.
struct Client {
    outer: TmuxServer,
}

fn attach(inner: &TmuxServer) -> Client {
    attach_to(inner, "=main:0")
}

/// A headless client attached to TARGET (a session or window).
fn attach_to(inner: &TmuxServer, target: &str) -> Client {
    let before = clients(inner);
    let outer = TmuxServer::new(
        120,
        40,
        &[
            "env",
            "-u",
            "TMUX",
            "tmux",
            "-L",
            &inner.socket,
            "attach",
            "-t",
            target,
        ],
    );
    let start = Instant::now();
    while clients(inner) <= before {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no client attached"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Client { outer }
}

/// How many clients (not control-mode ones) are attached.
fn clients(inner: &TmuxServer) -> usize {
    inner
        .tmux_out(&[
            "list-clients",
            "-F",
            "#{client_control_mode} #{client_name}",
        ])
        .lines()
        .filter(|l| l.starts_with("0 "))
        .count()
}

impl Client {
    fn press(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "=main:"];
        a.extend_from_slice(keys);
        assert!(self.outer.tmux(&a).status.success());
    }

    /// Type text as a terminal would (tmux eats a trailing `;` in an argument).
    fn type_text(&self, text: &str) {
        let t = match text.strip_suffix(';') {
            Some(r) => format!("{r}\\;"),
            None => text.to_string(),
        };
        assert!(self
            .outer
            .tmux(&["send-keys", "-t", "=main:", "-l", "--", &t])
            .status
            .success());
    }

    fn screen(&self) -> String {
        self.outer.tmux_out(&["capture-pane", "-p", "-t", "=main:"])
    }

    fn wait_screen(&self, what: &str, want: &str) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if self.screen().contains(want) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("{what}: no {want:?} on the client:\n{}", self.screen());
    }
}

/// Wait for a `display-message` line holding `want` (after `seen` earlier ones).
fn wait_message(s: &TmuxServer, want: &str, seen: usize) -> String {
    let start = Instant::now();
    let mut last = Vec::new();
    while start.elapsed() < Duration::from_secs(15) {
        last = messages(s);
        if let Some(m) = last.iter().skip(seen).find(|m| m.contains(want)) {
            return m.clone();
        }
        std::thread::sleep(Duration::from_millis(30));
    }
    panic!(
        "no message with {want:?}; messages: {:#?}\ndebug log: {}",
        &last[seen.min(last.len())..],
        std::fs::read_to_string(s.dir.path().join("plugin-debug.log")).unwrap_or_default()
    );
}

/// The `display-message` texts in the server's message log, oldest first.
fn messages(s: &TmuxServer) -> Vec<String> {
    s.tmux_out(&["show-messages"])
        .lines()
        .filter_map(|l| l.split_once(" message: ").map(|(_, m)| m.to_string()))
        .filter(|m| m.starts_with("promptgate:"))
        .rev() // tmux lists the newest first
        .collect()
}

fn wait_prompts(transcript: &Path, n: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let p = prompts(transcript);
        if p.len() >= n || start.elapsed() > Duration::from_secs(10) {
            return p;
        }
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// A fake agent that is quickly ready again after each prompt.
fn agent(s: &TmuxServer, like: &str, extra: &[&str]) -> (String, PathBuf) {
    let mut args = vec!["--busy-ms", "150"];
    args.extend_from_slice(extra);
    let (pane, t) = s.fake(like, &args);
    assert!(pane.starts_with('%'), "fake agent: {pane:?}");
    (pane, t)
}

#[test]
fn loading_twice_leaves_one_of_each_binding_alias_and_hook() {
    let s = server();
    let before = snapshot(&s);
    load(&s);
    let once = snapshot(&s);
    load(&s);
    let twice = snapshot(&s);
    assert_eq!(
        once, twice,
        "a second load changed the keys, aliases or hooks"
    );
    assert_ne!(before.0, once.0);

    let mut keys = prefix_keys(&s);
    keys.sort();
    assert_eq!(keys, ["A", "B", "M-i", "Q", "T", "V"]);
    let notes = s.tmux_out(&["list-keys", "-N"]);
    for k in ["C-b A ", "C-b V ", "C-b B ", "C-b T ", "C-b Q ", "C-b M-i "] {
        assert!(
            notes
                .lines()
                .any(|l| l.starts_with(k) && l.contains("promptgate:")),
            "no note for {k}:\n{notes}"
        );
    }
    for name in ["send", "compose", "paste", "pick", "broadcast", "install"] {
        let n = once
            .1
            .lines()
            .filter(|l| l.contains(&format!("\"promptgate-{name}=")))
            .count();
        assert_eq!(n, 1, "alias promptgate-{name}:\n{}", once.1);
    }
    assert_eq!(
        once.2.lines().filter(|l| l.contains("promptgate")).count(),
        1,
        "{}",
        once.2
    );

    // A changed key moves, `none` unbinds, and the old key is not left behind.
    s.tmux(&["set-option", "-g", "@promptgate-send-key", "S"]);
    s.tmux(&["set-option", "-g", "@promptgate-paste-key", "none"]);
    load(&s);
    let mut keys = prefix_keys(&s);
    keys.sort();
    assert_eq!(keys, ["M-i", "Q", "S", "T", "V"]);
    assert_eq!(binding(&s, "prefix", "A"), None, "A is still bound");
    assert_eq!(binding(&s, "prefix", "B"), None, "B is still bound");
    // the alias stays for users who bind it themselves
    assert!(s
        .tmux_out(&["show-options", "-s", "command-alias"])
        .contains("promptgate-paste="));
}

#[test]
fn a_reload_moves_keys_between_tables_and_leaves_the_users_own_bindings() {
    let s = server();
    load(&s);
    // the user binds an alias and takes over one of the plugin's keys
    assert!(s
        .tmux(&["bind-key", "-n", "M-a", "promptgate-send"])
        .status
        .success());
    s.tmux(&["bind-key", "T", "display-message", "mine"]);
    s.tmux(&["set-option", "-g", "@promptgate-key-table", "root"]);
    s.tmux(&["set-option", "-g", "@promptgate-send-key", "M-s"]);
    load(&s);
    let prefix = prefix_keys(&s);
    assert!(prefix.is_empty(), "left in prefix: {prefix:?}");
    let t = binding(&s, "prefix", "T").unwrap_or_default();
    assert!(t.contains("display-message mine"), "{t}");
    // (tmux stores the alias expanded: it runs the same command as the key)
    let a = binding(&s, "root", "M-a").unwrap_or_default();
    assert!(a.contains(" send #{pane_id}"), "{a}");
    let m = binding(&s, "root", "M-s").unwrap_or_default();
    assert!(m.contains(" send #{pane_id}"), "{m}");
    assert!(binding(&s, "root", "M-i").is_some(), "M-i is not in root");
    // a bare key in root would eat typing: not bound
    for k in ["V", "B", "Q"] {
        assert!(binding(&s, "root", k).is_none(), "{k} is bound in root");
    }
    // and back, twice: the same keys as the first load, but T stays the user's
    s.tmux(&["set-option", "-gu", "@promptgate-key-table"]);
    s.tmux(&["set-option", "-gu", "@promptgate-send-key"]);
    load(&s);
    load(&s);
    let mut keys = prefix_keys(&s);
    keys.sort();
    assert_eq!(keys, ["A", "B", "M-i", "Q", "V"]);
    let t = binding(&s, "prefix", "T").unwrap_or_default();
    assert!(t.contains("display-message mine"), "{t}");
    assert!(binding(&s, "root", "M-s").is_none());
    assert!(binding(&s, "root", "M-a").is_some());
}

/// A key the user binds to an alias, where the plugin's key was, is the
/// user's: a reload with that key option set to `none` leaves it bound.
#[test]
fn a_reload_leaves_a_key_the_user_bound_to_an_alias_where_the_plugins_was() {
    let s = server();
    load(&s);
    assert!(binding(&s, "prefix", "A").is_some());
    // a tmux.conf reload: the key option, then the user's own binding
    s.tmux(&["set-option", "-g", "@promptgate-send-key", "none"]);
    assert!(s
        .tmux(&["bind-key", "A", "promptgate-send"])
        .status
        .success());
    load(&s);
    load(&s);
    let a = binding(&s, "prefix", "A").unwrap_or_default();
    assert!(a.contains(" send #{pane_id}"), "prefix A: {a:?}");
    // and back to the plugin's key: A is the user's, not bound over
    s.tmux(&["set-option", "-gu", "@promptgate-send-key"]);
    load(&s);
    let notes = s.tmux_out(&["list-keys", "-N", "-T", "prefix"]);
    assert!(
        !notes.lines().any(|l| l.starts_with("A ")),
        "A got the plugin's note:\n{notes}"
    );
}

/// A key the user bound before the plugin loads is not bound over (it could
/// not be given back): the load says so, names the option, and a later load
/// with the option set to `none` leaves it as it was.
#[test]
fn a_key_the_user_bound_before_the_load_is_kept_and_named() {
    let s = server();
    let _c = attach(&s);
    s.tmux(&["bind-key", "T", "display-message", "user's own T"]);
    // with a missing binary too (then every key runs a message)
    s.tmux(&[
        "set-option",
        "-g",
        "@promptgate-bin",
        "/nonexistent/promptgate",
    ]);
    let seen = messages(&s).len();
    load(&s);
    let m = wait_message(&s, "not bound over a key", seen);
    assert!(
        m.contains("in table prefix: @promptgate-pick-key T.") && !m.contains("send-key"),
        "{m}"
    );
    let t = binding(&s, "prefix", "T").unwrap_or_default();
    assert!(t.contains("user's own T"), "{t}");
    assert!(binding(&s, "prefix", "A")
        .unwrap_or_default()
        .contains("fix or unset @promptgate-bin"));
    s.tmux(&["set-option", "-g", "@promptgate-pick-key", "none"]);
    s.tmux(&[
        "set-option",
        "-g",
        "@promptgate-bin",
        bin().to_str().unwrap(),
    ]);
    load(&s);
    let t = binding(&s, "prefix", "T").unwrap_or_default();
    assert!(t.contains("user's own T"), "{t}");
    let a = binding(&s, "prefix", "A").unwrap_or_default();
    assert!(a.contains("run-shell"), "{a}");
    // a key given twice is bound once, and the second is named
    s.tmux(&["set-option", "-g", "@promptgate-paste-key", "V"]);
    let seen = messages(&s).len();
    load(&s);
    let m = wait_message(&s, "not bound over a key", seen);
    assert!(m.contains("@promptgate-paste-key V"), "{m}");
    let v = binding(&s, "prefix", "V").unwrap_or_default();
    assert!(v.contains(" compose #{pane_id}"), "{v}");
}

/// Every printable ASCII character, space to tilde.
fn printable_ascii() -> String {
    (0x20u8..=0x7e).map(char::from).collect()
}

#[test]
fn typing_every_printable_character_reaches_the_pane_in_every_key_table() {
    // The plugin's keys in each table it can bind: the default prefix table,
    // root with the bare defaults and M-a for send, root as the README's
    // example sets it, and a table of the user's own.
    for case in ["prefix", "root", "readme", "pgkeys"] {
        let table = if case == "readme" { "root" } else { case };
        let s = server();
        let out = s.dir.path().join("typed.txt");
        let pane = s
            .tmux_out(&[
                "new-window",
                "-P",
                "-F",
                "#{pane_id}",
                "-t",
                "=main:",
                "sh",
                "-c",
                &format!("stty -echo; cat > '{}'", out.display()),
            ])
            .trim()
            .to_string();
        assert!(pane.starts_with('%'), "{pane:?}");
        // the new window is the current one: the client types into it
        let c = attach_to(&s, "=main");
        if table != "prefix" {
            s.tmux(&["set-option", "-g", "@promptgate-key-table", table]);
        }
        if case == "root" {
            s.tmux(&["set-option", "-g", "@promptgate-send-key", "M-a"]);
        }
        if case == "readme" {
            let readme =
                std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
                    .unwrap();
            let lines: Vec<&str> = readme
                .lines()
                .filter(|l| l.starts_with("set -g @promptgate-") && l.contains("-key"))
                .collect();
            assert!(lines.len() >= 5, "the README's root example: {lines:?}");
            for l in lines {
                let w: Vec<&str> = l.split_whitespace().collect();
                s.tmux(&["set-option", "-g", w[2], w[3].trim_matches('\'')]);
            }
        }
        let seen = messages(&s).len();
        load(&s);
        if case == "readme" {
            assert_eq!(messages(&s).len(), seen, "{:?}", messages(&s));
        }
        if case == "root" {
            // the bare defaults are refused, by name, and not bound
            let m = wait_message(&s, "not bound in the root table", seen);
            for k in [
                "@promptgate-compose-key V",
                "@promptgate-paste-key B",
                "@promptgate-pick-key T",
                "@promptgate-broadcast-key Q",
            ] {
                assert!(m.contains(k), "{k} not named: {m}");
            }
            assert!(!m.contains("send-key"), "{m}");
            let root = s.tmux_out(&["list-keys", "-T", "root"]);
            for l in root.lines().filter(|l| l.contains("promptgate")) {
                let key = l.split_whitespace().nth(3).unwrap_or("");
                assert!(
                    key.starts_with("M-") || key.starts_with("C-"),
                    "bare key in root: {l}"
                );
            }
        } else if case != "readme" {
            assert!(binding(&s, table, "T").is_some(), "{table}: T not bound");
        } else {
            assert!(binding(&s, "root", "M-t").is_some(), "M-t not bound");
        }
        let text = printable_ascii();
        c.type_text(&text);
        c.press(&["Enter", "C-d"]);
        let start = Instant::now();
        let mut got = String::new();
        while start.elapsed() < Duration::from_secs(10) {
            got = std::fs::read_to_string(&out).unwrap_or_default();
            if got.ends_with('\n')
                && s.tmux_out(&["list-panes", "-a", "-F", "#{pane_id}"])
                    .lines()
                    .all(|p| p != pane)
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(30));
        }
        assert_eq!(got, format!("{text}\n"), "{case}: typing was eaten");
        // no popup, menu or prompt opened
        assert!(
            !messages(&s)[seen..]
                .iter()
                .any(|m| !m.contains("not bound in the root table")),
            "{case}: {:?}",
            &messages(&s)[seen..]
        );
    }
}

/// Give the plugin's shell a PATH with the tmux under test and no promptgate.
fn no_promptgate_on_path(s: &TmuxServer) {
    let tmux = std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("tmux"))
                .find(|t| t.is_file())
        })
        .expect("tmux on PATH");
    let dir = tmux.parent().unwrap();
    let path = format!("{}:/usr/bin:/bin", dir.display());
    for d in std::env::split_paths(&path) {
        assert!(!d.join("promptgate").exists(), "{}", d.display());
    }
    s.tmux(&["set-environment", "-g", "PATH", &path]);
}

/// A copy of the plugin without a binary (no `target/`), to load as a new
/// user's clone would be before the build.
fn unbuilt_plugin(dir: &Path) -> PathBuf {
    copy_plugin(&dir.join("clone"))
}

/// The plugin's files copied to ROOT; returns its promptgate.tmux.
fn copy_plugin(root: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(root.join("plugin")).unwrap();
    for f in ["promptgate.tmux", "Cargo.toml"] {
        std::fs::copy(src.join(f), root.join(f)).unwrap();
    }
    for f in ["lib.sh", "options.sh", "promptgate.sh"] {
        std::fs::copy(src.join("plugin").join(f), root.join("plugin").join(f)).unwrap();
    }
    root.join("promptgate.tmux")
}

#[test]
fn a_fresh_clone_builds_its_binary_on_first_load_and_says_so() {
    let s = server();
    no_promptgate_on_path(&s);
    s.tmux(&["set-option", "-gu", "@promptgate-bin"]);
    let root = s.dir.path().join("tpm-clone");
    let file = copy_plugin(&root);
    // a cargo that tmux's PATH lacks, where rustup puts it
    let cargo_home = s.dir.path().join("cargo-home");
    std::fs::create_dir_all(cargo_home.join("bin")).unwrap();
    let cargo = cargo_home.join("bin/cargo");
    std::fs::write(&cargo, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    s.tmux(&[
        "set-environment",
        "-g",
        "CARGO_HOME",
        cargo_home.to_str().unwrap(),
    ]);
    // scripts/install.sh stands in for the build: it links the test's binary
    // and reloads the plugin, as the real one does
    std::fs::create_dir_all(root.join("scripts")).unwrap();
    std::fs::write(
        root.join("scripts/install.sh"),
        format!(
            "#!/bin/sh\necho built >> '{m}'\nmkdir -p '{r}/target/release'\nln -sf '{b}' '{r}/target/release/promptgate'\ntmux run-shell '{f}'\n",
            m = s.dir.path().join("builds").display(),
            r = root.display(),
            b = bin().display(),
            f = file.display()
        ),
    )
    .unwrap();
    let c = attach(&s);
    let seen = messages(&s).len();
    let o = s.tmux(&["run-shell", file.to_str().unwrap()]);
    assert!(o.status.success() && o.stdout.is_empty(), "{o:?}");
    let m = wait_message(&s, "building the binary", seen);
    assert!(m.contains("promptgate-install.log"), "{m}");
    // once built and reloaded, the keys run the plugin instead of the message
    let start = Instant::now();
    loop {
        let a = binding(&s, "prefix", "A").unwrap_or_default();
        if a.contains("run-shell") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "not rebound: {a}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // a later load finds the binary and builds nothing more
    let o = s.tmux(&["run-shell", file.to_str().unwrap()]);
    assert!(o.status.success(), "{o:?}");
    let builds = std::fs::read_to_string(s.dir.path().join("builds")).unwrap();
    assert_eq!(builds, "built\n");
    drop(c);
}

#[test]
fn a_missing_binary_binds_a_build_message_that_fits_80_columns() {
    let s = server();
    // nothing named promptgate on the PATH the plugin sees
    no_promptgate_on_path(&s);
    s.tmux(&["set-option", "-gu", "@promptgate-bin"]);
    let file = unbuilt_plugin(s.dir.path());
    let o = s.tmux(&["run-shell", file.to_str().unwrap()]);
    assert!(o.status.success() && o.stdout.is_empty(), "{o:?}");
    let want = "promptgate: not built. prefix M-i builds it (cargo build --release --locked)";
    assert!(want.chars().count() <= 80);
    for k in ["A", "V", "B", "T", "Q"] {
        let line = binding(&s, "prefix", k).unwrap_or_else(|| panic!("{k} not bound"));
        assert!(
            line.contains("display-message") && line.contains(want),
            "{line}"
        );
    }
    let install = binding(&s, "prefix", "M-i").unwrap();
    assert!(
        install.contains("run-shell -b") && install.contains(" install "),
        "{install}"
    );
    assert!(s
        .tmux_out(&["show-options", "-s", "command-alias"])
        .contains("promptgate-send=display-message"));

    // pressed, the key shows all of it on an 80-column client
    s.tmux(&["resize-window", "-t", "=main:", "-x", "80"]);
    let c = attach(&s);
    c.outer.tmux(&["resize-window", "-t", "=main:", "-x", "80"]);
    c.press(&["C-b", "A"]);
    c.wait_screen("error binding", want);

    // without an install key it names the command and where to run it
    s.tmux(&["set-option", "-g", "@promptgate-install-key", "none"]);
    let o = s.tmux(&["run-shell", file.to_str().unwrap()]);
    assert!(o.status.success(), "{o:?}");
    let line = binding(&s, "prefix", "A").unwrap();
    let dir = file.parent().unwrap().display().to_string();
    assert!(
        line.contains(&format!(
            "promptgate: not built. cargo build --release --locked in {dir}"
        )),
        "{line}"
    );
}

#[test]
fn a_wrong_or_stale_binary_path_says_to_fix_the_option_not_to_build() {
    let s = server();
    no_promptgate_on_path(&s);
    s.tmux(&[
        "set-option",
        "-g",
        "@promptgate-bin",
        "/nonexistent/promptgate",
    ]);
    load(&s);
    for k in ["A", "V", "B", "T", "Q"] {
        let line = binding(&s, "prefix", k).unwrap_or_else(|| panic!("{k} not bound"));
        assert!(
            line.contains(
                "promptgate: fix or unset @promptgate-bin: no program at /nonexistent/promptgate"
            ) && !line.contains("cargo build"),
            "{line}"
        );
    }
    // the aliases carry the whole message too: a key the user binds to one says it
    assert!(s
        .tmux(&["bind-key", "-n", "M-a", "promptgate-send"])
        .status
        .success());
    let line = binding(&s, "root", "M-a").unwrap_or_default();
    assert!(
        line.contains("display-message")
            && line.contains("-d 15000")
            && line.contains(
                "promptgate: fix or unset @promptgate-bin: no program at /nonexistent/promptgate"
            ),
        "{line}"
    );
    let c = attach(&s);
    c.press(&["C-b", "A"]);
    c.wait_screen("error binding", "fix or unset @promptgate-bin");

    // a binary of another version is refused the same way
    let fake = s.dir.path().join("old-promptgate");
    std::fs::write(&fake, "#!/bin/sh\necho promptgate 0.0.1\n").unwrap();
    std::fs::set_permissions(&fake, PermissionsExt::from_mode(0o755)).unwrap();
    s.tmux(&[
        "set-option",
        "-g",
        "@promptgate-bin",
        fake.to_str().unwrap(),
    ]);
    load(&s);
    let line = binding(&s, "prefix", "A").unwrap();
    assert!(
        line.contains(&format!(
            "promptgate: update or unset @promptgate-bin: version 0.0.1, plugin {}: {}",
            env!("CARGO_PKG_VERSION"),
            fake.display()
        )),
        "{line}"
    );
}

/// The strings that must arrive byte-exact and execute nothing; `{dir}` is the
/// test's temp dir, where a file would appear if anything ran.
fn injections(dir: &Path) -> Vec<String> {
    let d = dir.display();
    vec![
        "'; touch /tmp/x; '".to_string(),
        format!("'; touch {d}/pwned-quote; '"),
        "$(id)".to_string(),
        format!("$(touch {d}/pwned-dollar)"),
        format!("`touch {d}/pwned-backtick`"),
        "#{pane_id} #(touch /tmp/x)".to_string(),
        "%% %1 %2 100%".to_string(),
        "\\ back\\slash \\\\ \\n".to_string(),
        format!("all: \"; run-shell 'touch {d}/pwned-tmux' ; \" $HOME ~ ;end;"),
    ]
}

fn assert_nothing_ran(dir: &Path, tmp_x_before: bool) {
    for f in [
        "pwned-quote",
        "pwned-dollar",
        "pwned-backtick",
        "pwned-tmux",
    ] {
        assert!(
            !dir.join(f).exists(),
            "{f} was created: a prompt was executed"
        );
    }
    if !tmp_x_before {
        assert!(!Path::new("/tmp/x").exists(), "/tmp/x was created");
    }
}

#[test]
#[ignore = "slow live suite: a plain cargo test leaves it out; run with --ignored or --include-ignored (.ci/run and the tmux matrix do)"]
fn every_key_delivers_to_a_fake_agent_byte_exact() {
    let tmp_x_before = Path::new("/tmp/x").exists();
    let s = server();
    let dir = s.dir.path().to_path_buf();
    // the compose editor: whatever is typed until C-d; C-c makes it fail. It
    // notes each start, so that a C-c is not typed before it runs (a C-c that
    // comes while the popup is still starting can reach no process, and then
    // the editor waits for its C-d for ever).
    let editor = dir.join("editor.sh");
    let started = dir.join("editor-started.log");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh\necho \"$1\" >>'{}'\nexec cat >\"$1\"\n",
            started.display()
        ),
    )
    .unwrap();
    let editor_starts = || {
        std::fs::read_to_string(&started)
            .unwrap_or_default()
            .lines()
            .count()
    };
    std::fs::set_permissions(&editor, PermissionsExt::from_mode(0o755)).unwrap();
    s.tmux(&["set-environment", "-g", "EDITOR", editor.to_str().unwrap()]);
    let (claude, t_claude) = agent(&s, "claude", &[]);
    let (codex, t_codex) = agent(&s, "codex", &[]);
    let (gemini, t_gemini) = agent(&s, "gemini", &["--dialog", "trust"]);
    load(&s);
    let c = attach(&s);
    // A popup has its title from tmux 3.3 on; the editor in it has started
    // once it notes so.
    let titles = release() >= (3, 3);
    let wait_editor = |what: &str, title: &str, runs: usize| {
        if titles {
            c.wait_screen(what, title);
        }
        let t = Instant::now();
        while editor_starts() <= runs {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{what}: the editor never started:\n{}",
                c.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    s.wait_state(&claude, "ready", 15.0);
    s.wait_state(&codex, "ready", 15.0);
    s.wait_state(&gemini, "dialog:trust", 15.0);

    // Send with no target: the key is pressed in a shell pane alone in its window
    let n = messages(&s).len();
    c.press(&["C-b", "A"]);
    wait_message(&s, "no target", n);

    // Pick: the menu lists the agents with their states and window names;
    // choose codex (the 2nd). Its window's name is hostile: it shows as it is
    // and runs nothing. (rename-window expands its argument: ## is one #.)
    // (tmux 3.7 refuses #( in names; $PGW names a file that appears if the
    // #() ever runs)
    let pwned = dir.join("pwned-window");
    s.tmux(&["set-environment", "-g", "PGW", pwned.to_str().unwrap()]);
    let hostile = if release() < (3, 7) {
        format!(
            "#(touch $PGW) %H '\" ; run-shell 'touch {}'",
            pwned.display()
        )
    } else {
        format!(
            "cx #{{pane_id}} %H '\" ; run-shell 'touch {}'",
            pwned.display()
        )
    };
    for (pane, name) in [
        (&claude, "claude-win".to_string()),
        (&codex, hostile.replace('#', "##")),
        (&gemini, "gem".to_string()),
    ] {
        let o = s.tmux(&["rename-window", "-t", pane, "--", &name]);
        assert!(o.status.success(), "{o:?}");
    }
    // (tmux 3.6 and earlier store a $ before a letter as \$ in a name, and
    // 3.4 prints that as \\$)
    assert_eq!(
        s.tmux_out(&["display-message", "-p", "-t", &codex, "#{window_name}"])
            .trim_end()
            .replace("\\\\$", "$")
            .replace("\\$", "$"),
        hostile
    );
    let head: String = hostile.chars().take(8).collect();
    let n = messages(&s).len();
    c.press(&["C-b", "T"]);
    c.wait_screen("pick menu", "promptgate target");
    let menu = c.screen();
    let item = |words: &[&str]| {
        menu.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.windows(words.len()).any(|x| x == words)
        })
    };
    assert!(
        item(&[&claude, "claude", "ready", "main:1.0", "claude-win", "(1)"]),
        "{menu}"
    );
    // (the name is cut to 24 columns)
    assert!(item(&[&codex, "codex", "ready", "main:2.0"]), "{menu}");
    assert!(menu.contains(&format!("main:2.0  {head}")), "{menu}");
    assert!(
        item(&[&gemini, "gemini", "dialog:trust", "main:3.0", "gem", "(3)"]),
        "{menu}"
    );
    c.press(&["2"]);
    // the choice is confirmed, naming the pane, its agent and its window
    let m = wait_message(&s, "target is", n);
    assert!(
        m.starts_with(&format!(
            "promptgate: target is {codex} codex (main:2.0 {head}"
        )) && m.ends_with("…)"),
        "{m}"
    );

    let start = Instant::now();
    while s
        .tmux_out(&["show-options", "-t", "=main:", "-v", "@promptgate-target"])
        .trim()
        != codex
    {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "pick did not set the target: {:?}\n{}\n{}",
            s.tmux_out(&["show-options", "-t", "=main:", "@promptgate-target"]),
            c.screen(),
            s.tmux_out(&["show-messages"])
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // Send: one command-prompt per string, each arrives byte-exact in codex
    let texts = injections(&dir);
    for (i, text) in texts.iter().enumerate() {
        let n = messages(&s).len();
        c.press(&["C-b", "A"]);
        c.wait_screen("send prompt", &format!("promptgate → {codex} codex"));
        c.type_text(text);
        c.press(&["Enter"]);
        let m = wait_message(&s, "promptgate: ", n);
        assert!(
            m.contains(&format!("sent to {codex} (codex) consumed in")),
            "prompt {i}: {m}"
        );
        assert_eq!(
            wait_prompts(&t_codex, i + 1).get(i),
            Some(text),
            "prompt {i}"
        );
        s.wait_state(&codex, "ready", 10.0);
    }
    // Enter on an empty prompt sends nothing (and not the previous prompt again)
    let n = messages(&s).len();
    c.press(&["C-b", "A"]);
    c.wait_screen("send prompt", "promptgate → ");
    c.press(&["Enter"]);
    wait_message(&s, "empty prompt, nothing sent", n);
    assert_eq!(prompts(&t_codex).len(), texts.len());

    // Compose: the editor in a popup; the file it leaves is sent (to the marked
    // pane now: the picked target is cleared from the menu)
    c.press(&["C-b", "T"]);
    c.wait_screen("pick menu", "promptgate target");
    c.press(&["0"]);
    s.tmux(&["select-pane", "-m", "-t", &claude]);
    let body = format!("first line {}\nsecond line {}", texts[1], texts[8]);
    let n = messages(&s).len();
    let runs = editor_starts();
    c.press(&["C-b", "V"]);
    wait_editor(
        "compose popup",
        &format!("promptgate → {claude} claude"),
        runs,
    );
    for (i, line) in body.lines().enumerate() {
        if i > 0 {
            c.press(&["Enter"]);
        }
        c.type_text(line);
    }
    c.press(&["Enter", "C-d"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert!(m.contains(&format!("sent to {claude} (claude)")), "{m}");
    assert_eq!(wait_prompts(&t_claude, 1), vec![body.clone()]);
    s.wait_state(&claude, "ready", 10.0);
    // an editor that fails, or leaves the file empty, sends nothing
    for (keys, why) in [
        (vec!["C-c"], "did not exit cleanly"),
        (vec!["C-d"], "empty prompt"),
    ] {
        let n = messages(&s).len();
        let runs = editor_starts();
        c.press(&["C-b", "V"]);
        wait_editor("compose popup", "promptgate → ", runs);
        c.type_text("never sent");
        if keys[0] == "C-d" {
            // erase the line first: the file stays empty
            c.press(&["C-u"]);
        }
        c.press(&keys);
        wait_message(&s, why, n);
    }
    assert_eq!(prompts(&t_claude).len(), 1);

    // Paste: the top buffer, loaded from a file, goes as it is
    let buf = dir.join("buffer.txt");
    let pasted = format!("from the buffer: {} {}", texts[3], texts[6]);
    std::fs::write(&buf, &pasted).unwrap();
    s.tmux(&["load-buffer", buf.to_str().unwrap()]);
    let n = messages(&s).len();
    c.press(&["C-b", "B"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert!(m.contains(&format!("sent to {claude} (claude)")), "{m}");
    assert_eq!(wait_prompts(&t_claude, 2).get(1), Some(&pasted));
    s.wait_state(&claude, "ready", 10.0);

    // Broadcast: every ready agent of the session; gemini shows a dialog and is skipped
    s.tmux(&["select-pane", "-M"]);
    let n = messages(&s).len();
    let runs = editor_starts();
    c.press(&["C-b", "Q"]);
    wait_editor("broadcast popup", "promptgate → 2 ready agent panes", runs);
    c.type_text("to everyone `id`");
    c.press(&["Enter", "C-d"]);
    let m = wait_message(&s, "broadcast", n);
    assert!(m.contains(&claude) && m.contains(&codex), "{m}");
    assert!(
        m.contains(&format!("skipped {gemini} (dialog:trust)")),
        "{m}"
    );
    assert_eq!(
        wait_prompts(&t_claude, 3).get(2).map(String::as_str),
        Some("to everyone `id`")
    );
    assert_eq!(
        wait_prompts(&t_codex, texts.len() + 1)
            .last()
            .map(String::as_str),
        Some("to everyone `id`")
    );
    assert!(prompts(&t_gemini).is_empty());

    // A refusal names the pane and the reason, and logs
    s.tmux(&["select-pane", "-m", "-t", &gemini]);
    let n = messages(&s).len();
    c.press(&["C-b", "B"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert_eq!(
        m,
        format!("promptgate: {gemini} gemini shows a trust dialog, nothing sent")
    );
    let log = std::fs::read_to_string(dir.join("deliveries.jsonl")).unwrap_or_default();
    assert!(
        log.lines()
            .any(|l| l.contains(&format!("\"pane\":\"{gemini}\"")) && l.contains("not-sent")),
        "{log}"
    );
    // a typed prompt that was refused is kept, and the paste key resends it
    let n = messages(&s).len();
    c.press(&["C-b", "A"]);
    c.wait_screen("send prompt", &format!("promptgate → {gemini} gemini"));
    c.type_text(&texts[8]);
    c.press(&["Enter"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert!(
        m.ends_with("nothing sent (kept in buffer promptgate-unsent; prefix B resends it)"),
        "{m}"
    );
    assert_eq!(
        s.tmux_out(&["show-buffer", "-b", "promptgate-unsent"])
            .trim_end_matches('\n'),
        texts[8]
    );

    // In an agent pane, the key never sends to the pane itself unless it is marked
    s.tmux(&["select-pane", "-M"]);
    s.tmux(&["select-window", "-t", &claude]);
    let n = messages(&s).len();
    c.press(&["C-b", "B"]);
    wait_message(&s, "no target", n);
    s.tmux(&["select-pane", "-m", "-t", &claude]);
    let n = messages(&s).len();
    c.press(&["C-b", "B"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert!(m.contains(&format!("sent to {claude}")), "{m}");
    assert_eq!(wait_prompts(&t_claude, 4).get(3), Some(&texts[8]));
    // once delivered, the kept prompt is no longer kept: a second press sends
    // the buffer before it, and prefix ] cannot paste it into a shell
    assert!(
        !s.tmux_out(&["list-buffers", "-F", "#{buffer_name}"])
            .lines()
            .any(|l| l == "promptgate-unsent"),
        "{}",
        s.tmux_out(&["list-buffers"])
    );
    s.wait_state(&claude, "ready", 10.0);
    let n = messages(&s).len();
    c.press(&["C-b", "B"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert!(m.contains(&format!("sent to {claude}")), "{m}");
    assert_eq!(wait_prompts(&t_claude, 5).get(4), Some(&pasted));

    // every key ran in the background and left the client's pane as it was
    assert_eq!(
        s.tmux_out(&["display-message", "-p", "-t", &claude, "#{pane_in_mode}"])
            .trim(),
        "0"
    );
    assert_nothing_ran(&dir, tmp_x_before);
    assert!(!pwned.exists(), "a window name was run as a command");
}

#[test]
fn the_watcher_keeps_the_status_segment_and_tells_when_an_agent_is_done() {
    let s = server();
    let (claude, t) = s.fake("claude", &["--busy-ms", "1200"]);
    s.tmux(&["set-option", "-g", "@promptgate-notify", "on"]);
    s.tmux(&["set-option", "-g", "@promptgate-watch-interval", "100"]);
    s.tmux(&["set-option", "-g", "status-right", "#{@promptgate-status}"]);
    load(&s);
    load(&s);
    let c = attach(&s);
    s.wait_state(&claude, "ready", 15.0);

    // the status line shows the agent's glyph (C = claude, 1 = its window)
    c.wait_screen("status segment", "C1●");
    // one watcher: its control-mode client is the only one
    let start = Instant::now();
    let watchers = || {
        s.tmux_out(&["list-clients", "-F", "#{client_control_mode}"])
            .lines()
            .filter(|l| *l == "1")
            .count()
    };
    while watchers() != 1 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "watchers: {}",
            watchers()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // a second client attaching runs the hook; still one watcher
    let _c2 = attach(&s);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(watchers(), 1, "a second watcher started");

    let n = messages(&s).len();
    let o = s.pg(&["send", "-t", &claude, "take a while"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(prompts(&t), vec!["take a while"]);
    let m = wait_message(&s, "is done", n);
    assert!(
        m.starts_with(&format!("promptgate: {claude} claude (main:1.0) is done")),
        "{m}"
    );

    // `promptgate status` is the same segment, from two tmux calls
    let o = s.pg(&["status", "--format", "plain"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "C1●");

    // @promptgate-watch off stops it and clears the segment
    s.tmux(&["set-option", "-g", "@promptgate-watch", "off"]);
    let start = Instant::now();
    while watchers() != 0 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the watcher did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(s
        .tmux_out(&["show-options", "-t", "=main:", "-v", "@promptgate-status"])
        .trim()
        .is_empty());
}

#[test]
fn a_done_notice_waits_while_a_keys_result_is_on_the_status_line() {
    let s = server();
    let (claude, t) = s.fake("claude", &["--busy-ms", "1500"]);
    s.tmux(&["set-option", "-g", "@promptgate-notify", "on"]);
    s.tmux(&["set-option", "-g", "@promptgate-watch-interval", "100"]);
    // a result that stays for 10 minutes: the notice must wait for it
    s.tmux(&["set-option", "-g", "@promptgate-display-ms", "600000"]);
    load(&s);
    let c = attach(&s);
    s.wait_state(&claude, "ready", 15.0);
    let segment = || {
        s.tmux_out(&["show-options", "-t", "=main:", "-v", "@promptgate-status"])
            .trim()
            .to_string()
    };
    let wait_segment = |want: &str| {
        let start = Instant::now();
        while !segment().contains(want) {
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "segment {:?}, want {want}",
                segment()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_segment("●");
    // the paste key, from the shell in window 0, to the marked agent pane
    s.tmux(&["select-pane", "-m", "-t", &claude]);
    s.tmux(&["set-buffer", "hello"]);
    let n = messages(&s).len();
    c.press(&["C-b", "B"]);
    let m = wait_message(&s, "consumed", n);
    assert!(m.contains(&claude), "{m}");
    assert_eq!(wait_prompts(&t, 1), vec!["hello"]);
    // the watcher saw the turn run and end (busy, then ready again) ...
    wait_segment("◐");
    wait_segment("●");
    // ... and held its notice back: the result is still the last message
    // (20 more rounds of the watcher, which confirms a state in 2)
    std::thread::sleep(Duration::from_millis(2000));
    let after: Vec<String> = messages(&s)[n..].to_vec();
    assert!(
        !after.iter().any(|m| m.contains("is done")),
        "a notice replaced the result: {after:?}"
    );
    // once the result has had its time, the notice shows
    s.tmux(&["set-option", "-g", "@promptgate-result-until", "0"]);
    let m = wait_message(&s, "is done", n);
    assert!(
        m.starts_with(&format!("promptgate: {claude} claude")),
        "{m}"
    );
}

/// A fake agent (quickly ready again) in a new window of SESSION.
fn agent_in(s: &TmuxServer, session: &str, like: &str) -> (String, PathBuf) {
    let t = s
        .dir
        .path()
        .join(format!("transcript-{session}-{like}.jsonl"));
    let b = bin();
    let pane = s
        .tmux_out(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            &format!("={session}:"),
            b.to_str().unwrap(),
            "fake-agent",
            "--like",
            like,
            "--transcript",
            t.to_str().unwrap(),
            "--busy-ms",
            "150",
        ])
        .trim()
        .to_string();
    assert!(pane.starts_with('%'), "fake agent: {pane:?}");
    (pane, t)
}

#[test]
fn two_clients_answering_the_send_prompt_at_once_each_reach_their_own_target() {
    let s = server();
    assert!(s
        .tmux(&["new-session", "-d", "-s", "two", "-x", "120", "-y", "40"])
        .status
        .success());
    let (claude, t_claude) = agent_in(&s, "main", "claude");
    let (codex, t_codex) = agent_in(&s, "two", "codex");
    s.tmux(&["set-option", "-t", "=main:", "@promptgate-target", &claude]);
    s.tmux(&["set-option", "-t", "=two:", "@promptgate-target", &codex]);
    load(&s);
    let c1 = attach_to(&s, "=main:0");
    let c2 = attach_to(&s, "=two:0");
    s.wait_state(&claude, "ready", 15.0);
    s.wait_state(&codex, "ready", 15.0);

    let mut want1 = Vec::new();
    let mut want2 = Vec::new();
    for round in 0..3 {
        let t1 = format!("round {round} for claude %% %1 %2 %H \"q\" 'q' $HOME");
        let t2 = format!("round {round} for codex 100% #{{pane_id}} #(id) \\ end");
        let n = messages(&s).len();
        c1.press(&["C-b", "A"]);
        c2.press(&["C-b", "A"]);
        // the label names the pane as it is: no strftime on its %
        c1.wait_screen(
            "send prompt",
            &format!("promptgate → {claude} claude (ready):"),
        );
        c2.wait_screen(
            "send prompt",
            &format!("promptgate → {codex} codex (ready):"),
        );
        c1.type_text(&t1);
        c2.type_text(&t2);
        // both Enters at once
        std::thread::scope(|sc| {
            sc.spawn(|| c1.press(&["Enter"]));
            sc.spawn(|| c2.press(&["Enter"]));
        });
        want1.push(t1);
        want2.push(t2);
        let start = Instant::now();
        while messages(&s)
            .iter()
            .skip(n)
            .filter(|m| m.contains("sent to"))
            .count()
            < 2
        {
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "round {round}: {:#?}",
                &messages(&s)[n..]
            );
            std::thread::sleep(Duration::from_millis(30));
        }
        assert_eq!(wait_prompts(&t_claude, want1.len()), want1, "round {round}");
        assert_eq!(wait_prompts(&t_codex, want2.len()), want2, "round {round}");
        s.wait_state(&claude, "ready", 10.0);
        s.wait_state(&codex, "ready", 10.0);
    }
    // no reply buffer is left behind
    let bufs = s.tmux_out(&["list-buffers", "-F", "#{buffer_name}"]);
    assert!(!bufs.contains("promptgate-prompt-"), "{bufs}");
}

#[test]
fn a_pane_directory_holding_format_or_shell_syntax_is_passed_to_the_popup_literally() {
    let s = server();
    let dir = s.dir.path().to_path_buf();
    // the editor notes where it runs (NUL-separated: a name may hold a newline)
    // and leaves a prompt
    let editor = dir.join("editor.sh");
    let wheres = dir.join("editor-pwd.log");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh\nprintf '%s\\0' \"$PWD\" >>'{}'\nprintf 'from %s' \"$PWD\" >\"$1\"\n",
            wheres.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&editor, PermissionsExt::from_mode(0o755)).unwrap();
    s.tmux(&["set-environment", "-g", "EDITOR", editor.to_str().unwrap()]);
    let (claude, t_claude) = agent(&s, "claude", &[]);
    load(&s);
    let c = attach(&s);
    s.wait_state(&claude, "ready", 15.0);
    s.tmux(&["select-pane", "-m", "-t", &claude]);

    let names = [
        format!("#(touch {}/pwned-dir)", dir.display()),
        "#{pane_id} #{session_name}".to_string(),
        "100% %H %% %1".to_string(),
        "it's \"quoted\" $HOME ; x".to_string(),
        "new\nline".to_string(),
    ];
    let mut sent = 0;
    for (i, name) in names.iter().enumerate() {
        let hostile = dir.join(format!("d{i}")).join(name);
        std::fs::create_dir_all(&hostile).unwrap();
        // a shell in that directory, in a window of its own (cd'd into by the
        // shell itself: new-window -c would expand the path as a format too)
        let origin = s.window(&[
            "sh",
            "-c",
            "cd \"$1\" && exec sh",
            "sh",
            hostile.to_str().unwrap(),
        ]);
        s.tmux(&["select-window", "-t", &origin]);
        let start = Instant::now();
        while s
            .tmux_out(&[
                "display-message",
                "-p",
                "-t",
                &origin,
                "#{pane_current_path}",
            ])
            .trim_end_matches('\n')
            // (tmux 3.4 prints $HOME as \$HOME)
            .replace("\\$", "$")
            != hostile.to_str().unwrap()
        {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "no cd into {hostile:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // compose, and (for the first name) broadcast: both open the popup there
        let keys: &[&str] = if i == 0 { &["V", "Q"] } else { &["V"] };
        for key in keys {
            let n = messages(&s).len();
            c.press(&["C-b", key]);
            let m = wait_message(&s, "promptgate: ", n);
            assert!(m.contains(&claude), "{name:?} {key}: {m}");
            sent += 1;
            let p = wait_prompts(&t_claude, sent);
            assert_eq!(
                p.get(sent - 1),
                Some(&format!("from {}", hostile.display())),
                "{name:?} {key}"
            );
            s.wait_state(&claude, "ready", 10.0);
        }
        s.tmux(&["kill-pane", "-t", &origin]);
    }
    let log = std::fs::read(&wheres).unwrap();
    let seen: Vec<String> = log
        .split(|b| *b == 0)
        .filter(|x| !x.is_empty())
        .map(|x| String::from_utf8_lossy(x).into_owned())
        .collect();
    assert_eq!(seen.len(), sent, "{seen:?}");
    assert!(
        !dir.join("pwned-dir").exists(),
        "a directory name was run as a command"
    );
}

#[test]
fn a_plugin_path_and_temp_dir_with_hostile_names_work_and_run_nothing() {
    let s = server();
    let dir = s.dir.path().to_path_buf();
    let bad = |tag: &str| {
        format!(
            "{tag} #(touch {}/pwned-{tag}) #{{pane_id}} %1 %% %H 'q' \"dq\" $HOME ; x",
            dir.display()
        )
    };
    // the plugin where a clone with that name would put it, and TMPDIR too
    let file = copy_plugin(&dir.join(bad("plugin")));
    let tmp = dir.join(bad("tmp"));
    std::fs::create_dir_all(&tmp).unwrap();
    s.tmux(&["set-environment", "-g", "TMPDIR", tmp.to_str().unwrap()]);
    let editor = dir.join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nprintf 'composed' >\"$1\"\n").unwrap();
    std::fs::set_permissions(&editor, PermissionsExt::from_mode(0o755)).unwrap();
    s.tmux(&["set-environment", "-g", "EDITOR", editor.to_str().unwrap()]);
    let (claude, t_claude) = agent(&s, "claude", &[]);
    // run-shell: a shell command line, expanded as a format first
    let line = format!("'{}'", file.to_str().unwrap().replace('\'', "'\\''"));
    let o = s.tmux(&["run-shell", &line.replace('#', "##")]);
    assert!(o.status.success() && o.stdout.is_empty(), "{o:?}");
    let a = binding(&s, "prefix", "A").unwrap_or_default();
    assert!(a.contains(" send #{pane_id}"), "{a}");
    // a reload from that path finds its keys (a moved key leaves its old place)
    let once = snapshot(&s);
    let o = s.tmux(&["run-shell", &line.replace('#', "##")]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(once, snapshot(&s));
    s.tmux(&["set-option", "-g", "@promptgate-send-key", "S"]);
    let o = s.tmux(&["run-shell", &line.replace('#', "##")]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(binding(&s, "prefix", "A"), None);
    s.tmux(&["set-option", "-gu", "@promptgate-send-key"]);
    let o = s.tmux(&["run-shell", &line.replace('#', "##")]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(once, snapshot(&s));
    let c = attach(&s);
    s.wait_state(&claude, "ready", 15.0);
    s.tmux(&["select-pane", "-m", "-t", &claude]);

    // the send prompt (its template runs the helper from this path)
    let n = messages(&s).len();
    c.press(&["C-b", "A"]);
    c.wait_screen("send prompt", &format!("promptgate → {claude} claude"));
    c.type_text("typed %1 #{pane_id}");
    c.press(&["Enter"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert!(m.contains(&format!("sent to {claude}")), "{m}");
    assert_eq!(
        wait_prompts(&t_claude, 1).first().map(String::as_str),
        Some("typed %1 #{pane_id}")
    );
    s.wait_state(&claude, "ready", 10.0);
    // compose (a temp file under TMPDIR, the popup runs the helper)
    let n = messages(&s).len();
    c.press(&["C-b", "V"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert!(m.contains(&format!("sent to {claude}")), "{m}");
    assert_eq!(
        wait_prompts(&t_claude, 2).get(1).map(String::as_str),
        Some("composed")
    );
    // a refused prompt is kept (load-buffer from a file under TMPDIR)
    let shell = s.window(&["sh"]);
    s.tmux(&["select-pane", "-m", "-t", &shell]);
    let n = messages(&s).len();
    c.press(&["C-b", "A"]);
    c.wait_screen("send prompt", &format!("promptgate → {shell}"));
    c.type_text("kept");
    c.press(&["Enter"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert!(m.contains("kept in buffer promptgate-unsent"), "{m}");
    assert_eq!(
        s.tmux_out(&["show-buffer", "-b", "promptgate-unsent"]),
        "kept"
    );
    for tag in ["plugin", "tmp"] {
        assert!(
            !dir.join(format!("pwned-{tag}")).exists(),
            "the {tag} path was run as a command"
        );
    }
}

#[test]
fn a_kept_prompt_is_dropped_once_the_paste_key_has_delivered_it() {
    let s = server();
    let (claude, t) = agent(&s, "claude", &[]);
    load(&s);
    let c = attach(&s);
    s.wait_state(&claude, "ready", 15.0);
    // a draft in the composer: the typed prompt is refused, nothing typed, kept
    let o = s.tmux(&["send-keys", "-t", &claude, "-l", "draft"]);
    assert!(o.status.success());
    let start = Instant::now();
    while s.state(&claude) != "draft" {
        assert!(start.elapsed() < Duration::from_secs(10), "no draft");
        std::thread::sleep(Duration::from_millis(30));
    }
    s.tmux(&["select-pane", "-m", "-t", &claude]);
    let n = messages(&s).len();
    c.press(&["C-b", "A"]);
    c.wait_screen("send prompt", &format!("promptgate → {claude} claude"));
    c.type_text("only once");
    c.press(&["Enter"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert!(m.contains("kept in buffer promptgate-unsent"), "{m}");
    // the draft goes; the paste key resends the kept prompt
    s.tmux(&["send-keys", "-t", &claude, "C-u"]);
    s.wait_state(&claude, "ready", 10.0);
    let n = messages(&s).len();
    c.press(&["C-b", "B"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert!(m.contains(&format!("sent to {claude}")), "{m}");
    assert_eq!(wait_prompts(&t, 1), ["only once"]);
    s.wait_state(&claude, "ready", 10.0);
    // ... and does not keep it: a second press has nothing to send
    let bufs = s.tmux_out(&["list-buffers", "-F", "#{buffer_name}"]);
    assert!(!bufs.contains("promptgate-unsent"), "{bufs}");
    let n = messages(&s).len();
    c.press(&["C-b", "B"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert_eq!(m, "promptgate: no paste buffer, nothing sent");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(prompts(&t), ["only once"]);
}

/// A send that waits (here through a busy agent, with `--wait-busy` in
/// @promptgate-send-flags) says so on the client once a second, then reports.
#[test]
fn a_send_that_waits_says_so_while_it_waits() {
    let s = server();
    let (claude, t) = s.fake("claude", &["--busy-ms", "3500"]);
    s.tmux(&[
        "set-option",
        "-g",
        "@promptgate-send-flags",
        "--wait-busy --timeout 30",
    ]);
    s.tmux(&["set-option", "-g", "@promptgate-target", &claude]);
    load(&s);
    let c = attach(&s);
    s.wait_state(&claude, "ready", 15.0);
    s.tmux(&["send-keys", "-t", &claude, "-l", "a long turn"]);
    s.tmux(&["send-keys", "-t", &claude, "Enter"]);
    s.wait_state(&claude, "busy", 10.0);
    let n = messages(&s).len();
    c.press(&["C-b", "A"]);
    c.wait_screen("send prompt", &format!("promptgate → {claude} claude"));
    c.type_text("after the turn");
    c.press(&["Enter"]);
    let m = wait_message(&s, "promptgate: ", n);
    assert!(m.contains("consumed"), "{m}");
    // the waiting lines (not `promptgate:` ones, which the helpers collect)
    let log = s.tmux_out(&["show-messages"]);
    assert!(
        log.lines().any(|l| l.contains(&format!(
            "promptgate - waiting 1 s to send to {claude}: claude busy"
        ))),
        "{log}"
    );
    assert_eq!(
        wait_prompts(&t, 2),
        vec!["a long turn".to_string(), "after the turn".to_string()]
    );
}

/// A broken agents.toml stops every key before it starts: the key says so on
/// the client (in one line) instead of doing nothing.
#[test]
fn a_broken_agents_toml_is_said_when_a_key_is_pressed() {
    let s = server();
    let conf = s.dir.path().join("config");
    std::fs::create_dir_all(conf.join("promptgate")).unwrap();
    std::fs::write(
        conf.join("promptgate/agents.toml"),
        "[[agent]\nname = \"typo\"\n",
    )
    .unwrap();
    s.tmux(&[
        "set-environment",
        "-g",
        "XDG_CONFIG_HOME",
        conf.to_str().unwrap(),
    ]);
    load(&s);
    let c = attach(&s);
    s.tmux(&["set-buffer", "-b", "promptgate-unsent", "a prompt"]);
    for key in ["B", "T"] {
        let n = messages(&s).len();
        c.press(&["C-b", key]);
        let m = wait_message(&s, "promptgate: ", n);
        assert!(
            m.contains("profile error") && m.ends_with("nothing done"),
            "{key}: {m}"
        );
    }
    let bufs = s.tmux_out(&["list-buffers", "-F", "#{buffer_name}"]);
    assert!(bufs.contains("promptgate-unsent"), "{bufs}");
}

/// C-m, C-i and C-[ carry C-, but they are the bytes Enter, Tab and Escape
/// send (tmux 3.2a to 3.4 store them as those keys): in the root table they
/// would eat those keys in every pane, so they are refused like a bare key.
#[test]
fn root_keys_that_are_enter_tab_or_escape_are_refused_by_name() {
    let s = server();
    let _c = attach(&s);
    for (o, v) in [
        ("@promptgate-key-table", "root"),
        ("@promptgate-send-key", "C-m"),
        ("@promptgate-compose-key", "C-["),
        ("@promptgate-paste-key", "C-i"),
        ("@promptgate-pick-key", "^M"),
        ("@promptgate-broadcast-key", "M-b"),
    ] {
        s.tmux(&["set-option", "-g", o, v]);
    }
    let seen = messages(&s).len();
    load(&s);
    let m = wait_message(&s, "not bound in the root table", seen);
    for k in [
        "@promptgate-send-key C-m (tmux reads it as Enter)",
        "@promptgate-compose-key C-[ (tmux reads it as Escape)",
        "@promptgate-paste-key C-i (tmux reads it as Tab)",
        "@promptgate-pick-key ^M (tmux reads it as Enter)",
    ] {
        assert!(m.contains(k), "{k} not named: {m}");
    }
    assert!(!m.contains("broadcast"), "{m}");
    for key in ["Enter", "Tab", "Escape", "C-m", "C-M", "C-i", "C-["] {
        assert_eq!(binding(&s, "root", key), None, "{key} is bound in root");
    }
    assert!(binding(&s, "root", "M-b").is_some(), "M-b is not bound");
}

/// The paste key pressed twice while the first press waits (a busy agent,
/// `--wait-busy` in @promptgate-send-flags): the first press claims the kept
/// prompt before it reads it, the second finds it gone, and the agent gets it
/// once. A kept prompt that is still refused goes back to promptgate-unsent.
#[test]
fn two_presses_of_the_paste_key_deliver_a_kept_prompt_once() {
    let s = server();
    let (claude, t) = s.fake("claude", &["--busy-ms", "2500"]);
    s.tmux(&[
        "set-option",
        "-g",
        "@promptgate-send-flags",
        "--wait-busy --timeout 60",
    ]);
    s.tmux(&["set-option", "-g", "@promptgate-target", &claude]);
    load(&s);
    let _c = attach(&s);
    s.wait_state(&claude, "ready", 15.0);
    s.tmux(&["send-keys", "-t", &claude, "-l", "a long turn"]);
    s.tmux(&["send-keys", "-t", &claude, "Enter"]);
    s.wait_state(&claude, "busy", 10.0);
    s.tmux(&[
        "set-buffer",
        "-b",
        "promptgate-unsent",
        "kept prompt twice?",
    ]);
    let origin = s.tmux_out(&["display-message", "-p", "-t", "=main:0", "#{pane_id}"]);
    let helper = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin/promptgate.sh");
    let press = format!("'{}' paste {} ''", helper.display(), origin.trim());
    let n = messages(&s).len();
    assert!(s.tmux(&["run-shell", "-b", &press]).status.success());
    std::thread::sleep(Duration::from_millis(300));
    assert!(s.tmux(&["run-shell", "-b", &press]).status.success());
    let m = wait_message(&s, "nothing sent", n);
    assert!(
        m == "promptgate: buffer promptgate-unsent was taken by another press, nothing sent"
            || m == "promptgate: no paste buffer, nothing sent",
        "{m}"
    );
    let m = wait_message(&s, "sent to", n);
    assert!(m.contains("consumed"), "{m}");
    assert_eq!(
        wait_prompts(&t, 2),
        ["a long turn".to_string(), "kept prompt twice?".to_string()]
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(prompts(&t).len(), 2, "{:?}", prompts(&t));
    let bufs = s.tmux_out(&["list-buffers", "-F", "#{buffer_name}"]);
    assert!(!bufs.contains("promptgate-"), "{bufs}");

    // refused (a draft), it is kept again for the next press
    s.wait_state(&claude, "ready", 10.0);
    s.tmux(&["set-option", "-g", "@promptgate-send-flags", ""]);
    s.tmux(&["send-keys", "-t", &claude, "-l", "draft"]);
    let start = Instant::now();
    while s.state(&claude) != "draft" {
        assert!(start.elapsed() < Duration::from_secs(10), "no draft");
        std::thread::sleep(Duration::from_millis(30));
    }
    s.tmux(&["set-buffer", "-b", "promptgate-unsent", "kept again"]);
    let n = messages(&s).len();
    assert!(s.tmux(&["run-shell", "-b", &press]).status.success());
    let m = wait_message(&s, "promptgate: ", n);
    assert!(m.contains("(kept in buffer promptgate-unsent"), "{m}");
    let bufs = s.tmux_out(&["list-buffers", "-F", "#{buffer_name}"]);
    assert_eq!(bufs.trim(), "promptgate-unsent");
    assert_eq!(
        s.tmux_out(&["save-buffer", "-b", "promptgate-unsent", "-"]),
        "kept again"
    );
}

/// A key that tmux binds by default (here `s`, choose-tree) is not the
/// user's: the plugin binds over it, and gives tmux's binding back when the
/// key option lets it go.
#[test]
fn a_key_tmux_binds_by_default_is_bound_over_and_given_back() {
    let s = server();
    let before = binding(&s, "prefix", "s").unwrap_or_default();
    assert!(before.contains("choose-tree"), "{before}");
    s.tmux(&["set-option", "-g", "@promptgate-pick-key", "s"]);
    load(&s);
    let ours = binding(&s, "prefix", "s").unwrap_or_default();
    assert!(ours.contains(" pick #{pane_id}"), "{ours}");
    load(&s);
    let ours = binding(&s, "prefix", "s").unwrap_or_default();
    assert!(ours.contains(" pick #{pane_id}"), "{ours}");
    s.tmux(&["set-option", "-g", "@promptgate-pick-key", "none"]);
    load(&s);
    assert_eq!(binding(&s, "prefix", "s").unwrap_or_default(), before);
}

/// With the agent's hooks installed, each of three turns shorter than two of
/// the watcher's looks (700 ms against 1000 ms) gets its one done notice: the
/// agent's Stop event ends the turn whatever the screen showed between looks.
#[test]
fn the_watcher_tells_each_short_turn_once_from_the_agents_hooks() {
    let s = server();
    let home = s.dir.path().join("home-hooks");
    std::fs::create_dir_all(&home).unwrap();
    let hookdir = s.dir.path().join("hook-events");
    let o = std::process::Command::new(bin())
        .args(["hooks", "install", "claude"])
        .env("HOME", &home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let t = s.dir.path().join("t-hooks.jsonl");
    let (h, hd) = (
        format!("HOME={}", home.display()),
        format!("PROMPTGATE_HOOKS_DIR={}", hookdir.display()),
    );
    let b = bin();
    let pane = s.window(&[
        "env",
        &h,
        &hd,
        b.to_str().unwrap(),
        "fake-agent",
        "--like",
        "claude",
        "--records",
        "--busy-ms",
        "700",
        "--transcript",
        t.to_str().unwrap(),
    ]);
    s.wait_state(&pane, "ready", 15.0);
    let _c = attach(&s);
    let mut w = s
        .pg_cmd(&["watch", "--notify", "--interval", "1000"])
        .env("PROMPTGATE_HOOKS_DIR", &hookdir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let n = messages(&s).len();
    for i in 0..3 {
        let o = s.pg(&[
            "send",
            "-t",
            &pane,
            "--wait-busy",
            &format!("short turn {i}"),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
        std::thread::sleep(Duration::from_millis(1200));
    }
    let done = |m: &Vec<String>| m.iter().skip(n).filter(|m| m.contains("is done")).count();
    let start = Instant::now();
    while done(&messages(&s)) < 3 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1100));
    let m = messages(&s);
    let _ = w.kill();
    let _ = w.wait();
    let events: Vec<String> = std::fs::read_dir(&hookdir)
        .map(|d| {
            d.flatten()
                .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        done(&m),
        3,
        "one notice per turn: {:#?}\nhook events: {events:?}",
        &m[n.min(m.len())..]
    );
    assert_eq!(prompts(&t).len(), 3);
}
