//! `promptgate plugin ACTION ORIGIN CLIENT [BUFFER]`: what the tmux plugin's
//! keys do, run by `plugin/promptgate.sh` through `run-shell -b`.
//!
//! The shell keeps the key bindings, the options and finding this binary; it
//! hands over the options this side needs in the environment (`PG_HELPER`,
//! `PG_send_flags`, `PG_display_ms`, `PG_popup_width`, `PG_popup_height`,
//! `PG_pick_key_name`, `PG_paste_key_name`). Here the target is resolved, the
//! prompt delivered through `promptgate send --json` (which writes the delivery
//! log; a send that ended before any receipt is logged here, through the same
//! log), and the result shown on the client. It prints nothing and exits 0:
//! a `run-shell` command that prints or fails puts the pane in view mode,
//! which then swallows keys.
//!
//! The user's text never passes through a shell command line or a tmux format:
//! every label, title and menu item is made literal (`#` -> `##`, and `%` where
//! strftime runs), every command tmux parses is quoted for its parser.

use crate::app::cli::{PluginAction, PluginArgs};
use crate::app::cmd::status::{add_queue_counts, glyph, observe_all, Identities, Row};
use crate::core::error::Result;
use crate::core::profile::Profiles;
use crate::io::tmux::{message_literal, sh_quote, Process, Server};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub fn run(server: &Server, profiles: &Profiles, a: PluginArgs) -> Result<i32> {
    let mut p = Plugin {
        tmux: Process::new(server.clone()),
        server: server.clone(),
        profiles: profiles.clone(),
        origin: a.origin.clone(),
        client: a.client.clone(),
        opt: Options::from_env(),
    };
    match a.action {
        PluginAction::Send => p.send(),
        PluginAction::PromptDone => p.prompt_done(a.buffer.as_deref().unwrap_or("")),
        PluginAction::Compose => p.compose(),
        PluginAction::Paste => p.paste(),
        PluginAction::Pick => p.pick(),
        PluginAction::Broadcast => p.broadcast(),
    }
    Ok(0)
}

/// An error before a key's work could start (a broken agents.toml): shown on
/// the client, as every result of a key is, in one line (`promptgate.sh`
/// keeps no stderr).
pub fn report(server: &Server, a: &PluginArgs, why: &str) {
    let p = Plugin {
        tmux: Process::new(server.clone()),
        server: server.clone(),
        profiles: Profiles::builtin(),
        origin: a.origin.clone(),
        client: a.client.clone(),
        opt: Options::from_env(),
    };
    let why = crate::core::text::one_line(why);
    p.result(&format!("promptgate: {why}, nothing done"));
}

/// The plugin options this side uses, as the shell read them (defaults applied).
#[derive(Clone)]
struct Options {
    helper: String,
    send_flags: Vec<String>,
    display_ms: u64,
    popup_width: String,
    popup_height: String,
    pick_key: String,
    paste_key: String,
}

impl Options {
    fn from_env() -> Options {
        let var = |k: &str, d: &str| {
            std::env::var(k)
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| d.to_string())
        };
        Options {
            helper: var("PG_HELPER", "promptgate.sh"),
            send_flags: var("PG_send_flags", "")
                .split_whitespace()
                .map(String::from)
                .collect(),
            display_ms: var("PG_display_ms", "4000").parse().unwrap_or(4000),
            popup_width: var("PG_popup_width", "80%"),
            popup_height: var("PG_popup_height", "60%"),
            pick_key: var("PG_pick_key_name", ""),
            paste_key: var("PG_paste_key_name", ""),
        }
    }
}

/// Text for something tmux expands as a format (menu labels, titles).
fn literal(s: &str) -> String {
    s.replace('#', "##")
}

/// A command-prompt label: a format, then strftime, and split into several
/// prompts at each comma.
fn prompt_literal(s: &str) -> String {
    message_literal(s).replace(',', " ")
}

/// One argument for tmux's command parser (double quotes; `\ " $` escaped).
fn tmux_quote(s: &str) -> String {
    let s = s
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('$', "\\$");
    format!("\"{s}\"")
}

fn blank(text: &str) -> bool {
    text.trim().is_empty()
}

fn now_ms() -> u128 {
    crate::io::tmux::now_ms()
}

/// A private temporary directory, removed when dropped.
struct Scratch(tempfile::TempDir);

impl Scratch {
    fn file(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

#[derive(Clone)]
struct Plugin {
    tmux: Process,
    server: Server,
    profiles: Profiles,
    origin: String,
    client: String,
    opt: Options,
}

impl Plugin {
    fn tmux(&self, args: &[&str]) -> Option<String> {
        self.tmux.run(args, None, None).ok()
    }

    /// A command that makes or deletes a paste buffer: before tmux 3.7 that
    /// notifies control clients, and so waits for none of ours to be
    /// identifying (see `Process::notification_lock`).
    fn buffers(&self, args: &[&str]) -> Option<String> {
        let _quiet = self.tmux.clone().notification_lock();
        self.tmux(args)
    }

    fn release(&mut self) -> (u32, u32) {
        self.tmux
            .release()
            .ok()
            .and_then(|r| r.number)
            .unwrap_or((99, 0))
    }

    /// Show a message on the client (on tmux's choice of client when that one is gone).
    fn msg_for(&self, text: &str, ms: u64) {
        let ms = ms.to_string();
        let text = message_literal(text);
        if self.client.is_empty()
            || self
                .tmux(&[
                    "display-message",
                    "-c",
                    &self.client,
                    "-d",
                    &ms,
                    "--",
                    &text,
                ])
                .is_none()
        {
            self.tmux(&["display-message", "-d", &ms, "--", &text]);
        }
    }

    fn msg(&self, text: &str) {
        self.msg_for(text, self.opt.display_ms)
    }

    /// Show the result of a key and hold the watcher's done notices back until
    /// it has had its display time (`@promptgate-result-until`, epoch ms).
    fn result(&self, text: &str) {
        let until = (now_ms() + u128::from(self.opt.display_ms)).to_string();
        self.tmux(&["set-option", "-gq", "@promptgate-result-until", &until]);
        self.msg(text);
    }

    fn scratch(&self) -> Option<Scratch> {
        match tempfile::Builder::new().prefix("promptgate.").tempdir() {
            Ok(d) => Some(Scratch(d)),
            Err(e) => {
                self.msg(&format!(
                    "promptgate: cannot make a temporary directory ({e}), nothing sent"
                ));
                None
            }
        }
    }

    /// The target of a key pressed in the origin pane: the picked target
    /// (`@promptgate-target`), else the marked pane, else the last pane of the
    /// window. Never the pane itself unless it is marked.
    fn target(&self) -> Option<String> {
        let out = self.tmux(&[
            "display-message",
            "-p",
            "-t",
            &self.origin,
            "P#{@promptgate-target}",
            ";",
            "list-panes",
            "-a",
            "-F",
            "A#{pane_id}#{?pane_marked,M,}",
            ";",
            "list-panes",
            "-t",
            &self.origin,
            "-F",
            "#{?pane_last,L#{pane_id},}",
        ]);
        let (mut picked, mut marked, mut last) = (None, None, None);
        let mut panes = Vec::new();
        for line in out?.lines() {
            if let Some(p) = line.strip_prefix('P') {
                picked = Some(p.to_string());
            } else if let Some(p) = line.strip_prefix('A') {
                let id = p.strip_suffix('M');
                if let Some(id) = id {
                    marked = Some(id.to_string());
                }
                panes.push(id.unwrap_or(p).to_string());
            } else if let Some(p) = line.strip_prefix('L') {
                last = Some(p.to_string());
            }
        }
        [picked, marked.clone(), last]
            .into_iter()
            .flatten()
            .filter(|c| !c.is_empty() && panes.contains(c))
            .find(|c| *c != self.origin || Some(c) == marked.as_ref())
    }

    fn no_target(&self) {
        let k = &self.opt.pick_key;
        let pick = if k.is_empty() {
            String::new()
        } else {
            format!("pick one with {k}, ")
        };
        self.msg(&format!(
            "promptgate: no target: {pick}mark a pane (prefix m), or make the agent the last pane"
        ));
    }

    /// The agent and state of a pane, as `promptgate state` says them.
    fn describe(&self, pane: &str) -> (String, String) {
        let mut tmux = self.tmux.clone();
        match crate::engine::observe::observe(&mut tmux, &self.profiles, None, pane) {
            Ok(o) => (
                o.identity.agent.unwrap_or_else(|| "-".into()),
                o.verdict.state.to_string(),
            ),
            Err(_) => ("-".into(), "?".into()),
        }
    }

    /// The agent panes, with their states (of one session, if given).
    fn rows(&self, session: Option<&str>) -> Vec<Row> {
        let mut tmux = self.tmux.clone();
        let Ok(locs) = tmux.locate_panes() else {
            return Vec::new();
        };
        let locs = locs
            .into_iter()
            .filter(|l| session.is_none_or(|s| s == l.session_id))
            .collect();
        let mut rows = observe_all(&self.profiles, &mut tmux, locs, &mut Identities::default());
        add_queue_counts(&mut rows, &self.server);
        rows
    }

    /// The send key: a one-line prompt (command-prompt) for the target. The
    /// reply goes into a paste buffer of its own (one per prompt, so two
    /// clients that answer at once each get their own), through the
    /// template's quoted placeholder (tmux escapes `" \ $ ; ~` in the reply);
    /// `prompt-done` delivers it. tmux 3.3 substitutes the template a second
    /// time with the reply as %2 (and the first %% inside the reply), so there
    /// the placeholder is %2%, which only that second pass fills.
    fn send(&mut self) {
        let Some(target) = self.target() else {
            return self.no_target();
        };
        let (agent, state) = self.describe(&target);
        let label = format!("promptgate → {target} {agent} ({state}): ");
        let buf = format!(
            "promptgate-prompt-{}-{}",
            std::process::id(),
            now_ms() % 1_000_000_000
        );
        let release = self.release();
        let ph = if release == (3, 3) { "%2%" } else { "%1%" };
        // The template holds no other %: the helper's path comes from an
        // option, the client's name from the prompt's own client.
        self.tmux(&[
            "set-option",
            "-gq",
            "@promptgate-helper",
            &sh_quote(&self.opt.helper),
        ]);
        let done = format!(
            "#{{@promptgate-helper}} prompt-done {} #{{q:client_name}} {buf}",
            target.trim_start_matches('%')
        );
        let tmpl = format!(
            "set-buffer -b {buf} -- \"x{ph}\" ; run-shell -b {}",
            tmux_quote(&done)
        );
        let mut args = vec!["command-prompt"];
        if release >= (3, 3) {
            // -b: return at once (3.3); the prompt's own type keeps its history
            // out of the command history (3.8 knows only command and search)
            args.extend(["-b", "-T", prompt_type(release).0]);
        }
        let label = prompt_literal(&label);
        args.extend(["-t", &self.client, "-p", &label, &tmpl]);
        self.tmux(&args);
    }

    /// The send prompt was answered: its reply is in `buf`, for pane %N (the origin).
    fn prompt_done(&mut self, buf: &str) {
        let pane = format!("%{}", self.origin);
        let release = self.release();
        let (kind, clear) = prompt_type(release);
        if release >= (3, 3) && clear {
            self.tmux(&["clear-prompt-history", "-T", kind]);
        }
        let ours = buf
            .strip_prefix("promptgate-prompt-")
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        if !ours {
            return;
        }
        let reply = self.tmux(&["save-buffer", "-b", buf, "-"]);
        self.buffers(&["delete-buffer", "-b", buf]);
        // the reply came as "x" + the text (an empty buffer is refused by set-buffer)
        let text = reply
            .as_deref()
            .and_then(|r| r.strip_prefix('x'))
            .unwrap_or("");
        if blank(text) {
            return self.msg("promptgate: empty prompt, nothing sent");
        }
        let Some(dir) = self.scratch() else { return };
        let file = dir.file("prompt");
        if std::fs::write(&file, text).is_ok() {
            self.deliver(&pane, &file, "send", true, None);
        }
    }

    /// The editor in a popup on `file`; `Err(why)` unless it exited 0 and left
    /// a non-blank file. The popup starts in the origin pane's directory, which
    /// tmux expands from `#{pane_current_path}` itself: -d is a format, and a
    /// directory named `#(cmd)` must arrive as a name, not run.
    fn edit(&mut self, file: &Path, title: &str) -> std::result::Result<(), &'static str> {
        let ok = PathBuf::from(format!("{}.ok", file.display()));
        let _ = std::fs::remove_file(&ok);
        let _ = std::fs::write(file, "");
        let cmd = format!(
            "{} edit {}",
            sh_quote(&self.opt.helper),
            sh_quote(&file.to_string_lossy())
        );
        let title = literal(title);
        // a popup title needs tmux 3.3
        let titled = self.release() >= (3, 3);
        let mut args = vec![
            "display-popup",
            "-c",
            &self.client,
            "-t",
            &self.origin,
            "-E",
            "-w",
            &self.opt.popup_width,
            "-h",
            &self.opt.popup_height,
            "-d",
            "#{pane_current_path}",
        ];
        if titled {
            args.extend(["-T", &title]);
        }
        args.push(&cmd);
        // the popup returns when the editor exits: no time limit
        let _ = self
            .tmux
            .clone()
            .with_timeout(Duration::from_secs(7 * 24 * 3600))
            .run(&args, None, None);
        if !ok.exists() {
            return Err("the editor did not exit cleanly, nothing sent");
        }
        match std::fs::read_to_string(file) {
            Ok(t) if !blank(&t) => Ok(()),
            _ => Err("empty prompt, nothing sent"),
        }
    }

    fn compose(&mut self) {
        let Some(target) = self.target() else {
            return self.no_target();
        };
        let (agent, _) = self.describe(&target);
        let Some(dir) = self.scratch() else { return };
        let file = dir.file("prompt.md");
        match self.edit(&file, &format!(" promptgate → {target} {agent} ")) {
            Ok(()) => self.deliver(&target, &file, "compose", true, None),
            Err(why) => self.msg(&format!("promptgate: {why}")),
        }
    }

    /// The paste key: the newest of promptgate-unsent and the automatic buffers
    /// (bufferN), whatever the release (tmux 3.4 and later leave named buffers
    /// out of the "top" buffer, 3.3 and earlier do not).
    fn paste(&mut self) {
        let Some(target) = self.target() else {
            return self.no_target();
        };
        let names = self
            .tmux(&["list-buffers", "-F", "#{buffer_name}"])
            .unwrap_or_default();
        let buf = names.lines().find(|n| {
            *n == UNSENT
                || n.strip_prefix("buffer")
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        });
        let Some(mut buf) = buf.map(String::from) else {
            return self.msg("promptgate: no paste buffer, nothing sent");
        };
        // A kept prompt is claimed before it is read: renamed to a name of this
        // process, which only one press can do. A second press while this one
        // waits (a busy agent with --wait-busy) finds it gone and sends nothing.
        let kept = buf == UNSENT;
        if kept {
            let Some(claimed) = self.claim_unsent() else {
                return self.msg(
                    "promptgate: buffer promptgate-unsent was taken by another press, nothing sent",
                );
            };
            buf = claimed;
        }
        let text = match self.tmux(&["save-buffer", "-b", &buf, "-"]) {
            Some(t) if !blank(&t) => t,
            t => {
                if kept {
                    self.unclaim(&buf);
                }
                return self.msg(if t.is_none() {
                    "promptgate: no paste buffer, nothing sent"
                } else {
                    "promptgate: the paste buffer is blank, nothing sent"
                });
            }
        };
        let Some(dir) = self.scratch() else {
            if kept {
                self.unclaim(&buf);
            }
            return;
        };
        let file = dir.file("buffer");
        if std::fs::write(&file, &text).is_ok() {
            // a kept prompt that has now reached the agent is not kept again: a
            // second press (or prefix ]) must not type it twice; one that was
            // not typed is kept again
            let claimed = kept.then_some(buf.as_str());
            self.deliver(&target, &file, "paste", false, claimed);
        } else if kept {
            self.unclaim(&buf);
        }
    }

    /// Rename promptgate-unsent to promptgate-sending-PID, atomically: Some(the
    /// new name) when this process got it, None when it was gone (another
    /// press has it, or sent it). tmux 3.4 and later refuse to rename a buffer
    /// that is not there. 3.2a and 3.3a rename the newest buffer instead, so
    /// there a buffer of ours is made the newest first, in the same command
    /// list (which no other client's command interrupts): with
    /// promptgate-unsent gone, it is that one that gets renamed, then deleted
    /// (as the newest), and the new name is not there.
    fn claim_unsent(&mut self) -> Option<String> {
        let pid = std::process::id();
        let claimed = format!("promptgate-sending-{pid}");
        if self.release() >= (3, 4) {
            self.buffers(&["set-buffer", "-b", UNSENT, "-n", &claimed])?;
            return Some(claimed);
        }
        let sentinel = format!("promptgate-claim-{pid}");
        // (Debian's 3.3a refuses as 3.4 does: the list stops there, and the
        // buffer of ours is deleted below, by its name)
        self.buffers(&[
            "set-buffer",
            "-b",
            &sentinel,
            "--",
            "x",
            ";",
            "set-buffer",
            "-b",
            UNSENT,
            "-n",
            &claimed,
            ";",
            "delete-buffer",
            "-b",
            &sentinel,
        ]);
        let names = self.tmux(&["list-buffers", "-F", "#{buffer_name}"])?;
        if names.lines().any(|n| n == sentinel) {
            self.buffers(&["delete-buffer", "-b", &sentinel]);
        }
        names.lines().any(|n| n == claimed).then_some(claimed)
    }

    /// Give a claimed kept prompt back: promptgate-unsent again, unless a newer
    /// one is there (then it stays under its claimed name). Returns the name it has.
    fn unclaim(&self, claimed: &str) -> String {
        match self.buffers(&["set-buffer", "-b", claimed, "-n", UNSENT]) {
            Some(_) => UNSENT.to_string(),
            None => claimed.to_string(),
        }
    }

    /// The pick key: a menu of the agent panes with their states and window
    /// names; the choice sets the session's `@promptgate-target`.
    fn pick(&mut self) {
        let rows = self.rows(None);
        if rows.is_empty() {
            return self.msg("promptgate: no agent panes on this server");
        }
        let session = self.session();
        let current = self
            .tmux(&[
                "display-message",
                "-p",
                "-t",
                &self.origin,
                "#{@promptgate-target}",
            ])
            .unwrap_or_default();
        let ms = self.opt.display_ms.to_string();
        let keys = "123456789abcdefghijklmnoprstuvwxyz";
        let mut items: Vec<String> = Vec::new();
        for (r, key) in rows.iter().zip(keys.chars()) {
            let mark = if r.loc.id == current.trim_end() {
                "*"
            } else {
                " "
            };
            let mut wname: String = r
                .loc
                .window_name
                .chars()
                .map(|c| if c.is_control() { '?' } else { c })
                .collect();
            if wname.chars().count() > 24 {
                wname = wname.chars().take(23).collect::<String>() + "…";
            }
            let wname = if wname.is_empty() { "?".into() } else { wname };
            let place = r.loc.target();
            let msg = format!(
                "promptgate: target is {} {} ({place} {wname})",
                r.loc.id, r.agent
            );
            // the menu expands the command as a format, then parses it; then
            // display-message expands its text as a format and through strftime
            let cmd = format!(
                "set-option -t {} @promptgate-target {} ; display-message -d {} {}",
                tmux_quote(&session),
                tmux_quote(&r.loc.id),
                tmux_quote(&ms),
                tmux_quote(&message_literal(&msg))
            );
            let label = format!(
                "{mark}{} {:<5} {:<7} {:<13} {place:<9} {wname}",
                glyph(&r.state).0,
                r.loc.id,
                r.agent,
                r.state.to_string()
            );
            items.extend([literal(&label), key.to_string(), literal(&cmd)]);
        }
        let cmd = format!(
            "set-option -u -t {} @promptgate-target ; display-message -d {} 'promptgate: target is the marked or last pane'",
            tmux_quote(&session),
            tmux_quote(&ms)
        );
        items.extend([
            String::new(),
            "  use the marked or last pane".into(),
            "0".into(),
            literal(&cmd),
        ]);
        let mut args = vec![
            "display-menu",
            "-c",
            &self.client,
            "-t",
            &self.origin,
            "-T",
            "#[align=centre] promptgate target ",
            "-x",
            "C",
            "-y",
            "C",
        ];
        args.extend(items.iter().map(String::as_str));
        self.tmux(&args);
    }

    fn session(&self) -> String {
        self.tmux(&["display-message", "-p", "-t", &self.origin, "#{session_id}"])
            .unwrap_or_default()
            .trim_end()
            .to_string()
    }

    /// The broadcast key: one composed prompt to every ready agent pane of the
    /// session (not the origin pane unless it is marked).
    fn broadcast(&mut self) {
        let session = self.session();
        let marked = self
            .tmux(&["list-panes", "-a", "-F", "#{?pane_marked,#{pane_id},}"])
            .unwrap_or_default()
            .lines()
            .find(|l| !l.is_empty())
            .map(String::from);
        let mut targets = Vec::new();
        let mut skipped = String::new();
        for r in self.rows(Some(&session)) {
            if r.loc.id == self.origin && Some(&r.loc.id) != marked.as_ref() {
                continue;
            }
            if r.state == crate::core::detect::State::Ready {
                targets.push(r.loc.id);
            } else {
                skipped += &format!(" {} ({})", r.loc.id, r.state);
            }
        }
        let n = targets.len();
        if n == 0 {
            let not_ready = if skipped.is_empty() {
                String::new()
            } else {
                format!("; not ready:{skipped}")
            };
            return self.msg(&format!(
                "promptgate: no ready agent pane in this session{not_ready}"
            ));
        }
        let Some(dir) = self.scratch() else { return };
        let file = dir.file("prompt.md");
        let s = if n == 1 { "" } else { "s" };
        if let Err(why) = self.edit(&file, &format!(" promptgate → {n} ready agent pane{s} ")) {
            return self.msg(&format!("promptgate: {why}"));
        }
        let mut args: Vec<String> = vec!["send".into()];
        for t in &targets {
            args.extend(["-t".into(), t.clone()]);
        }
        let sent = self.send_file(&args, &file, false);
        drop(dir);
        let (mut consumed, mut other) = (String::new(), String::new());
        if n == 1 {
            // one target is a plain send
            if sent.rc == 0 {
                consumed = format!(" {}", targets[0]);
            } else {
                other = format!(" {} (exit {})", targets[0], sent.rc);
            }
        } else {
            // a fan-out prints a line a pane: pane, agent, receipt, details
            for line in sent.out.lines() {
                let f: Vec<&str> = line.splitn(4, '\t').collect();
                if !f[0].starts_with('%') || f.len() < 3 {
                    continue;
                }
                if f[2] == "consumed" {
                    consumed += &format!(" {}", f[0]);
                } else {
                    let why = f.get(3).map(|w| w.split(':').next().unwrap_or(""));
                    match why.filter(|w| !w.is_empty()) {
                        Some(w) => other += &format!(" {} ({}: {w})", f[0], f[2]),
                        None => other += &format!(" {} ({})", f[0], f[2]),
                    }
                }
            }
        }
        let mut line = format!("promptgate: broadcast to {n}:");
        for (what, list) in [
            ("consumed", consumed),
            ("not consumed", other),
            ("skipped", skipped),
        ] {
            if !list.is_empty() {
                line += &format!(" {what}{list};");
            }
        }
        self.result(line.trim_end_matches(';'));
    }

    /// Run `promptgate ARGS [send flags] -f FILE` (optionally `--json`) and
    /// collect what it said; while it runs (a busy agent, a dialog with
    /// --wait-dialog, another sender), say once a second, from the second
    /// second on, what it waits for.
    fn send_file(&self, args: &[String], file: &Path, json: bool) -> Sent {
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = (!self.client.is_empty() && args.len() == 3).then(|| {
            let stop = stop.clone();
            let pane = args[2].clone();
            let me = self.clone();
            std::thread::spawn(move || {
                let mut n = 1;
                loop {
                    for _ in 0..20 {
                        std::thread::sleep(Duration::from_millis(50));
                        if stop.load(Ordering::SeqCst) {
                            return;
                        }
                    }
                    let (agent, state) = me.describe(&pane);
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    me.msg_for(
                        &format!("promptgate - waiting {n} s to send to {pane}: {agent} {state}"),
                        1500,
                    );
                    n += 1;
                }
            })
        });
        let mut cmd = match std::env::current_exe() {
            Ok(exe) => Command::new(exe),
            Err(e) => {
                return Sent {
                    rc: 127,
                    out: String::new(),
                    err: format!("cannot find promptgate itself: {e}"),
                }
            }
        };
        cmd.args(args);
        if json {
            cmd.arg("--json");
        }
        cmd.args(&self.opt.send_flags).arg("-f").arg(file);
        let out = cmd.stdin(Stdio::null()).output();
        stop.store(true, Ordering::SeqCst);
        if let Some(t) = ticker {
            let _ = t.join();
        }
        match out {
            Ok(o) => {
                use std::os::unix::process::ExitStatusExt;
                let rc = o
                    .status
                    .code()
                    .unwrap_or_else(|| 128 + o.status.signal().unwrap_or(0));
                let err = String::from_utf8_lossy(&o.stderr);
                let err = err.lines().last().unwrap_or("");
                Sent {
                    rc,
                    out: String::from_utf8_lossy(&o.stdout).into_owned(),
                    err: err.strip_prefix("promptgate: ").unwrap_or(err).to_string(),
                }
            }
            Err(e) => Sent {
                rc: 127,
                out: String::new(),
                err: e.to_string(),
            },
        }
    }

    /// Deliver `file` to `pane` and show the result. With `keep`, a prompt that
    /// was not typed at all is kept in the paste buffer promptgate-unsent (the
    /// newest buffer, so the paste key resends it). `claimed` is the buffer a
    /// kept prompt was claimed into (`claim_unsent`): deleted once any of the
    /// prompt was typed, before the message shows, else promptgate-unsent again.
    fn deliver(&self, pane: &str, file: &Path, action: &str, keep: bool, claimed: Option<&str>) {
        let args = ["send".to_string(), "-t".into(), pane.to_string()];
        let sent = self.send_file(&args, file, true);
        let json: Option<serde_json::Value> = sent
            .out
            .lines()
            .find_map(|l| serde_json::from_str(l.trim()).ok());
        // send logs every attempt that got as far as a receipt; the others here
        if json.is_none() && sent.rc != 0 {
            use crate::engine::sink::{not_sent, Finished, Quiet, Sink};
            Quiet.finish(&Finished::Json(&not_sent(serde_json::json!({
                "source": "plugin",
                "action": action,
                "pane": pane,
                "exit_code": sent.rc,
                "error": sent.err,
            }))));
        }
        let field = |k: &str| {
            json.as_ref()
                .and_then(|j| j.get(k))
                .and_then(|v| v.as_str())
                .map(String::from)
        };
        let mut msg = match field("notice") {
            Some(n) => format!("promptgate: {n}"),
            None if sent.err.is_empty() => {
                format!("promptgate: send to {pane} failed: exit {}", sent.rc)
            }
            // a usage error (2) comes from the flags the user set, not typed:
            // name the option that holds them
            None if sent.rc == 2 && !self.opt.send_flags.is_empty() => format!(
                "promptgate: fix @promptgate-send-flags ({}): {}",
                self.opt.send_flags.join(" "),
                sent.err
            ),
            None => format!("promptgate: send to {pane} failed: {}", sent.err),
        };
        // did any of the prompt reach the pane, or surely none
        let receipt = field("receipt");
        let typed = sent.rc == 0 || receipt.as_deref().is_some_and(|r| r != "not-sent");
        let k = &self.opt.paste_key;
        let how = if k.is_empty() {
            String::new()
        } else {
            format!("; {k} resends it")
        };
        if !typed && keep {
            let path = literal(&file.to_string_lossy());
            if self
                .buffers(&["load-buffer", "-b", UNSENT, &path])
                .is_some()
            {
                msg += &format!(" (kept in buffer {UNSENT}{how})");
            }
        }
        match claimed {
            Some(b) if typed => {
                self.buffers(&["delete-buffer", "-b", b]);
            }
            Some(b) => match self.unclaim(b) {
                n if n == UNSENT => msg += &format!(" (kept in buffer {UNSENT}{how})"),
                n => msg += &format!(" (kept in buffer {n})"),
            },
            None => {}
        }
        self.result(&msg);
    }
}

/// The paste buffer that keeps a prompt the send or compose key could not deliver.
const UNSENT: &str = "promptgate-unsent";

struct Sent {
    rc: i32,
    out: String,
    err: String,
}

/// The prompt type of the send prompt and whether its history is cleared after
/// each prompt: tmux 3.3 to 3.7 have a window-target type of their own; 3.8
/// knows only command and search, and there a search prompt's history (the
/// user's own searches) is left alone.
fn prompt_type(release: (u32, u32)) -> (&'static str, bool) {
    if release >= (3, 8) {
        ("search", false)
    } else {
        ("window-target", true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_text_is_made_literal_for_each_parser() {
        assert_eq!(literal("#(x) #{y}"), "##(x) ##{y}");
        assert_eq!(prompt_literal("a,b %H #"), "a b %%H ##");
        assert_eq!(tmux_quote(r#"a "b" \ $c ;"#), r#""a \"b\" \\ \$c ;""#);
    }

    #[test]
    fn the_send_prompt_keeps_its_history_out_of_every_release() {
        assert_eq!(prompt_type((3, 3)), ("window-target", true));
        assert_eq!(prompt_type((3, 7)), ("window-target", true));
        assert_eq!(prompt_type((3, 8)), ("search", false));
        assert_eq!(prompt_type((99, 0)), ("search", false));
    }
}
