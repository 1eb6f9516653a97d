//! Which agent runs in a pane: `--agent` -> `pane_current_command` -> the
//! process tree under `pane_pid` -> the screen signature. A pane running a
//! plain shell or an unknown program identifies as nobody (`not-agent`).
//!
//! What the pane's processes say comes first: a foreground program known never
//! to be an agent (an editor, a pager, a file viewer) is nobody, whatever it
//! displays and whatever `--agent` says, and a screen signature identifies an
//! agent only when neither a shell nor such a program is in the foreground.

use crate::core::error::Result;
use crate::core::profile::{Profile, Profiles};
use crate::core::screen::Screen;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Identity {
    /// The profile name, or `None` for not-agent.
    pub agent: Option<String>,
    pub how: IdentifiedBy,
    pub detail: String,
}

/// How the agent of a pane was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdentifiedBy {
    /// Named with `--agent`.
    Flag,
    /// `pane_current_command`.
    Command,
    /// The pane's process tree.
    ProcessTree,
    /// What the screen shows.
    ScreenSignature,
    /// An earlier look (the watcher's cache).
    Remembered,
    /// No agent.
    None,
}

impl IdentifiedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            IdentifiedBy::Flag => "flag",
            IdentifiedBy::Command => "command",
            IdentifiedBy::ProcessTree => "process-tree",
            IdentifiedBy::ScreenSignature => "screen-signature",
            IdentifiedBy::Remembered => "remembered",
            IdentifiedBy::None => "none",
        }
    }
}

impl std::fmt::Display for IdentifiedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub use crate::core::screen::Proc;

/// Programs that are never an agent, whatever they display: editors, pagers and
/// file viewers (`vim` or `less` showing a saved capture of an agent's screen).
const NEVER_AGENTS: &[&str] = &[
    "vi",
    "vim",
    "nvim",
    "vim.tiny",
    "vim.basic",
    "vim.nox",
    "vim.gtk3",
    "gvim",
    "view",
    "vimdiff",
    "ex",
    "nano",
    "pico",
    "emacs",
    "emacsclient",
    "micro",
    "hx",
    "helix",
    "kak",
    "joe",
    "jed",
    "mcedit",
    "ne",
    "ed",
    "mg",
    "less",
    "more",
    "most",
    "pg",
    "bat",
    "batcat",
    "man",
    "cat",
    "tac",
    "head",
    "tail",
    "w3m",
    "lynx",
    "links",
    "elinks",
    "mc",
    "ranger",
    "lf",
    "nnn",
    "git",
    "tig",
    "watch",
    "top",
    "htop",
];

/// Programs that run a terminal program somewhere else (another machine, a
/// container): the agent behind them shows in no process of this machine, only
/// on the screen and in the pane title it sets.
const REMOTE_RUNNERS: &[&str] = &[
    "ssh",
    "autossh",
    "sshpass",
    "mosh",
    "mosh-client",
    "et",
    "docker",
    "podman",
    "nerdctl",
    "kubectl",
    "oc",
    "lxc",
    "incus",
    "distrobox",
    "distrobox-enter",
    "toolbox",
    "vagrant",
    "multipass",
    "limactl",
    "tsh",
];

/// The foreground program runs its terminal program elsewhere (`ssh`, `mosh`,
/// `docker exec`, `kubectl exec`): where [`identify`] lets a pane title alone
/// name the agent.
pub fn is_remote_runner(cmd: &str) -> bool {
    REMOTE_RUNNERS.contains(&cmd)
}

/// `pane_current_command` (normalised) or a process of the foreground job names
/// a program known never to be an agent.
pub fn is_never_agent(cmd: &str) -> bool {
    NEVER_AGENTS.contains(&cmd)
}

/// A process's program name: argv[0]'s basename (as `pane_current_command`
/// names a process group leader), else its `comm`.
pub(crate) fn proc_name(pr: &Proc) -> String {
    match pr.argv.first() {
        Some(a) if !a.is_empty() => crate::core::screen::normalise_command(a),
        _ => pr.comm.clone(),
    }
}

/// The program in the foreground: `pane_current_command`, or, when that is a
/// shell that stays (`sh -c "claude; exec sh"`, a wrapper script without
/// `exec`), the first process of the pane's foreground job that is not a shell
/// (the shell's when the job is only shells, or when the job was not read).
pub fn foreground_program(screen: &Screen) -> Option<String> {
    let cmd = screen.command.as_deref()?;
    if !crate::core::screen::is_shell(cmd) {
        return Some(cmd.to_string());
    }
    let job = screen.foreground.as_deref().unwrap_or_default();
    Some(
        job.iter()
            .map(proc_name)
            .find(|n| !crate::core::screen::is_shell(n))
            .unwrap_or_else(|| cmd.to_string()),
    )
}

/// The process of `job` (a pane's foreground job) that is `profile`'s agent.
pub fn agent_in<'a>(profile: &Profile, job: &'a [Proc]) -> Option<&'a Proc> {
    let d = &profile.def.identify;
    job.iter().find(|pr| {
        d.processes.iter().any(|n| proc_matches(pr, n))
            || d.commands
                .iter()
                .any(|c| *c == pr.comm || *c == proc_name(pr))
    })
}

/// Identify the agent. `procs` is the process tree under `pane_pid` (empty for a saved capture).
pub fn identify(
    profiles: &Profiles,
    forced: Option<&str>,
    screen: &Screen,
    procs: &[Proc],
) -> Result<Identity> {
    // What the processes say beats `--agent` and the screen: keys typed into an
    // editor or pager that shows an agent's screen would run as its commands.
    let fg = foreground_program(screen);
    if let Some(f) = fg.as_deref().filter(|f| is_never_agent(f)) {
        if let Some(name) = forced {
            profiles.get(name)?;
        }
        return Ok(Identity {
            agent: None,
            how: IdentifiedBy::None,
            detail: format!(
                "the foreground program {f} is not an agent, whatever its screen shows{}",
                if forced.is_some() {
                    " (--agent does not override it)"
                } else {
                    ""
                }
            ),
        });
    }
    if let Some(name) = forced {
        let p = profiles.get(name)?;
        return Ok(id(p, IdentifiedBy::Flag, "--agent"));
    }
    if let Some(cmd) = screen.command.as_deref() {
        if let Some((d, _)) = profiles
            .defs()
            .find(|(d, _)| d.identify.commands.iter().any(|c| c == cmd))
        {
            let p = profiles.get(&d.name)?;
            return Ok(id(
                p,
                IdentifiedBy::Command,
                &format!("pane_current_command={cmd}"),
            ));
        }
    }
    for pr in procs {
        for (d, _) in profiles.defs() {
            if let Some(n) = d.identify.processes.iter().find(|n| proc_matches(pr, n)) {
                let p = profiles.get(&d.name)?;
                return Ok(id(
                    p,
                    IdentifiedBy::ProcessTree,
                    &format!("pid {} ({}) matches {n:?}", pr.pid, pr.argv.join(" ")),
                ));
            }
        }
    }
    // Only when something other than a shell is in the foreground: a shell that
    // prints an agent's banner (say, `cat` of a capture) is still a shell, and so
    // is one whose job runs something else (its rc file's `pyenv rehash`; a
    // wrapped agent is found in the process tree above). An editor or a pager
    // never gets here. A program we know nothing of (`ssh` to where the agent
    // runs, `docker exec`) may still be one. The pane title alone names an
    // agent only behind a remote runner: tmux keeps a title after the program
    // that set it exits (`python3` where claude ran is still `✳ Claude Code`).
    let shell = screen
        .command
        .as_deref()
        .is_some_and(crate::core::screen::is_shell);
    if !shell {
        let remote = fg.as_deref().is_some_and(is_remote_runner);
        if let Some((p, detail)) = by_signature(profiles, screen, remote) {
            return Ok(id(p, IdentifiedBy::ScreenSignature, &detail));
        }
    }
    Ok(Identity {
        agent: None,
        how: IdentifiedBy::None,
        detail: format!(
            "pane_current_command={}",
            screen.command.as_deref().unwrap_or("?")
        ),
    })
}

/// The engine's one answer to "may bytes be typed into this pane now"
/// (`deliver::may_type` asks it right before anything is typed). What
/// the pane's processes say decides, never `--agent` or `--force`:
///
/// - a program known never to be an agent (an editor, a pager) in the
///   foreground: no;
/// - the foreground program, or a process of the foreground job (`job`, read
///   from `/proc` on this machine), is a known agent's command or process: yes;
/// - a shell in the foreground with no agent in its job (or the job unread, as
///   over `--host`): no;
/// - another program (`ssh`, `mosh`, `docker exec`, the agent's own launcher):
///   yes only while the screen's rows show a known agent's signature (the agent
///   runs where no process of this machine shows it). The pane title alone
///   counts only behind a remote runner ([`is_remote_runner`]): tmux keeps it
///   after the program that set it exits, so a `python3` started where claude
///   ran still has claude's title.
///
/// `Ok` says why yes, `Err` why no.
pub fn typable(
    profiles: &Profiles,
    screen: &Screen,
    job: Option<&[Proc]>,
) -> std::result::Result<String, String> {
    let with_job = Screen {
        foreground: job.map(<[Proc]>::to_vec),
        ..Screen::default()
    };
    let fg = match screen.command.as_deref() {
        Some(cmd) => foreground_program(&Screen {
            command: Some(cmd.to_string()),
            ..with_job
        })
        .unwrap_or_else(|| cmd.to_string()),
        None => String::new(),
    };
    if is_never_agent(&fg) {
        return Err(format!(
            "the foreground program {fg} is not an agent, whatever its screen shows"
        ));
    }
    for (d, _) in profiles.defs() {
        if d.identify.commands.contains(&fg) {
            return Ok(format!("the foreground program {fg} is {}", d.name));
        }
    }
    for pr in job.unwrap_or_default() {
        for (d, _) in profiles.defs() {
            if let Some(n) = d.identify.processes.iter().find(|n| proc_matches(pr, n)) {
                return Ok(format!(
                    "pid {} ({}) of the foreground job matches {n:?} ({})",
                    pr.pid,
                    pr.argv.join(" "),
                    d.name
                ));
            }
        }
    }
    let shell = crate::core::screen::is_shell(&fg)
        || screen
            .command
            .as_deref()
            .is_some_and(crate::core::screen::is_shell);
    if shell {
        return Err(format!(
            "a shell ({}) is in the foreground and no agent runs in its foreground job",
            if fg.is_empty() { "?" } else { &fg }
        ));
    }
    // The screen's rows must show the agent: a pane title outlives the program
    // that set it (`✳ Claude Code` stays after claude exits and `python3`
    // starts in the same pane), so a title alone makes a pane typable only
    // behind a remote runner (claude over ssh, its banner long scrolled away).
    match by_signature(profiles, screen, is_remote_runner(&fg)) {
        Some((p, detail)) => Ok(format!(
            "the foreground program {} shows {}'s screen ({detail})",
            if fg.is_empty() { "?" } else { &fg },
            p.name()
        )),
        None => Err(format!(
            "the foreground program {} is no known agent and its screen shows none{}",
            if fg.is_empty() { "?" } else { &fg },
            if by_signature(profiles, screen, true).is_some() {
                " (a pane title alone does not count: it outlives the program that set it)"
            } else {
                ""
            }
        )),
    }
}

/// The profile whose signatures the screen and the title match most (distinct
/// regexes, each counted once): a fork that shares its parent's placeholder
/// (Qwen Code's is Gemini CLI's) is told apart by its banner or its title. A tie
/// goes to the first profile, as before. The detail names every match counted.
/// `title_alone`: whether a profile whose title matches but none of whose
/// screen signatures does is a match at all (never for the choke point: a
/// title outlives the program that set it).
fn by_signature<'a>(
    profiles: &'a Profiles,
    screen: &Screen,
    title_alone: bool,
) -> Option<(&'a Profile, String)> {
    let mut best: Option<(&Profile, Vec<String>)> = None;
    for p in profiles.iter() {
        let mut found: Vec<String> =
            p.signature
                .iter()
                .filter_map(|re| {
                    screen.rows.iter().enumerate().find_map(|(y, row)| {
                        re.find(row).map(|m| format!("row {y}: {:?}", m.as_str()))
                    })
                })
                .collect();
        if let Some(title) = screen
            .title
            .as_deref()
            .filter(|_| title_alone || !found.is_empty())
        {
            found.extend(
                p.title_signature
                    .iter()
                    .filter_map(|re| re.find(title))
                    .map(|m| format!("title: {:?}", m.as_str())),
            );
        }
        if !found.is_empty() && best.as_ref().is_none_or(|(_, b)| found.len() > b.len()) {
            best = Some((p, found));
        }
    }
    best.map(|(p, found)| (p, found.join("; ")))
}

fn id(p: &Profile, how: IdentifiedBy, detail: &str) -> Identity {
    Identity {
        agent: Some(p.name().to_string()),
        how,
        detail: detail.into(),
    }
}

/// `comm` equals the name, or argv[0]/argv[1] (an interpreter's script) has it as
/// basename (extension dropped), or a name with `/` occurs inside argv[0..2].
pub(crate) fn proc_matches(pr: &Proc, name: &str) -> bool {
    if pr.comm == name {
        return true;
    }
    pr.argv.iter().take(2).any(|a| {
        if name.contains('/') {
            return a.contains(name);
        }
        let base = a.rsplit('/').next().unwrap_or(a);
        base == name || base.rsplit_once('.').is_some_and(|(stem, _)| stem == name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(cmd: &str, rows: &[&str]) -> Screen {
        Screen {
            command: Some(cmd.into()),
            rows: rows.iter().map(|s| s.to_string()).collect(),
            ..Screen::default()
        }
    }

    #[test]
    fn order_is_flag_command_tree_signature() {
        let p = Profiles::builtin();
        let s = screen("claude", &[]);
        assert_eq!(
            identify(&p, Some("gemini"), &s, &[])
                .unwrap()
                .agent
                .as_deref(),
            Some("gemini")
        );
        assert_eq!(
            identify(&p, None, &s, &[]).unwrap().how,
            IdentifiedBy::Command
        );
        let node = Proc {
            pid: 9,
            comm: "node".into(),
            argv: vec!["node".into(), "/x/node_modules/.bin/codex".into()],
        };
        let i = identify(&p, None, &screen("node", &[]), &[node]).unwrap();
        assert_eq!(
            (i.agent.as_deref(), i.how.as_str()),
            (Some("codex"), "process-tree")
        );
        let i = identify(
            &p,
            None,
            &screen("promptgate", &[" Gemini CLI v0.61.0"]),
            &[],
        )
        .unwrap();
        assert_eq!(
            (i.agent.as_deref(), i.how.as_str()),
            (Some("gemini"), "screen-signature")
        );
    }

    #[test]
    fn a_shell_is_nobody_even_with_a_banner_on_screen() {
        let p = Profiles::builtin();
        let i = identify(&p, None, &screen("bash", &["Claude Code v2.1.197"]), &[]).unwrap();
        assert_eq!(i.agent, None);
    }

    fn proc(pid: u32, argv: &[&str]) -> Proc {
        Proc {
            pid,
            comm: argv[0].rsplit('/').next().unwrap().to_string(),
            argv: argv.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// A saved capture of claude's ready box, as an editor, a pager or a shell shows it.
    fn claude_box(cmd: &str, job: Option<Vec<Proc>>) -> Screen {
        let mut s = screen(
            cmd,
            &[
                "╭─── Claude Code v2.1.197 ───╮",
                "╰───────────────────────────╯",
                &"─".repeat(40),
                "❯\u{a0}",
                &"─".repeat(40),
                "  ? for shortcuts",
            ],
        );
        s.height = 6;
        s.cursor = Some((2, 3));
        s.foreground = job;
        s
    }

    #[test]
    fn an_editor_or_pager_showing_an_agents_screen_is_nobody() {
        let p = Profiles::builtin();
        for cmd in [
            "vim", "vim.tiny", "nvim", "less", "nano", "emacs", "cat", "man",
        ] {
            let s = claude_box(cmd, None);
            let i = identify(&p, None, &s, &[]).unwrap();
            assert_eq!(i.agent, None, "{cmd}: {i:?}");
            // and --agent does not override what the process says
            let i = identify(&p, Some("claude"), &s, &[]).unwrap();
            assert_eq!(i.agent, None, "--agent claude over {cmd}: {i:?}");
            assert!(i.detail.contains(cmd), "{}", i.detail);
        }
        // an unknown --agent is still an error there
        assert!(identify(&p, Some("nope"), &claude_box("vim", None), &[]).is_err());
        // a program we know nothing of (ssh to where claude runs) may still be claude
        let i = identify(&p, None, &claude_box("ssh", None), &[]).unwrap();
        assert_eq!(i.agent.as_deref(), Some("claude"));
    }

    #[test]
    fn a_shell_running_something_else_is_still_no_screen_signature() {
        // bash's rc file runs `pyenv rehash` (a script) which runs `sleep`, under
        // what is left of claude's screen
        let p = Profiles::builtin();
        let job = vec![
            proc(10, &["bash"]),
            proc(11, &["bash", "/root/.pyenv/libexec/pyenv-rehash"]),
            proc(12, &["sleep", "0.1"]),
        ];
        let s = claude_box("bash", Some(job.clone()));
        let i = identify(&p, None, &s, &job).unwrap();
        assert_eq!(i.agent, None, "{i:?}");
    }

    #[test]
    fn a_shell_job_that_runs_an_editor_is_nobody() {
        // `sh -c "vim capture.txt; exec sh"`: the shell leads the job, vim is in it
        let p = Profiles::builtin();
        let job = vec![
            proc(10, &["sh", "-c", "vim capture.txt; exec sh"]),
            proc(11, &["vim", "capture.txt"]),
        ];
        let s = claude_box("sh", Some(job.clone()));
        for forced in [None, Some("claude")] {
            let i = identify(&p, forced, &s, &job).unwrap();
            assert_eq!(i.agent, None, "{forced:?}: {i:?}");
        }
    }

    #[test]
    fn a_shell_that_stays_runs_the_agent_it_started() {
        // `sh -c "claude; exec sh"` and a wrapper script two shells deep
        let p = Profiles::builtin();
        for job in [
            vec![
                proc(10, &["sh", "-c", "claude; exec sh"]),
                proc(11, &["/usr/local/bin/claude"]),
            ],
            vec![
                proc(10, &["/bin/bash", "./wrapper.sh"]),
                proc(11, &["sh", "-c", "claude --resume"]),
                proc(12, &["node", "/x/node_modules/.bin/claude"]),
            ],
        ] {
            let s = claude_box("sh", Some(job.clone()));
            let i = identify(&p, None, &s, &job).unwrap();
            assert_eq!(i.agent.as_deref(), Some("claude"), "{i:?}");
            let v = crate::core::detect::detect(p.get("claude").unwrap(), &s);
            assert_eq!(v.state, crate::core::detect::State::Ready, "{}", v.reason());
            assert!(v
                .checks
                .iter()
                .any(|c| c.rule == "pane.shell-runs-agent" && c.fired));
        }
        // the same shell once claude has gone (or put in the background): exited
        for job in [None, Some(vec![proc(10, &["sh"])])] {
            let s = claude_box("sh", job);
            let v = crate::core::detect::detect(p.get("claude").unwrap(), &s);
            assert_eq!(
                v.state,
                crate::core::detect::State::Exited,
                "{}",
                v.reason()
            );
        }
        // another agent in the job is not this profile's agent
        let s = claude_box("sh", Some(vec![proc(10, &["sh"]), proc(11, &["codex"])]));
        let v = crate::core::detect::detect(p.get("claude").unwrap(), &s);
        assert_eq!(v.state, crate::core::detect::State::Exited);
    }

    /// The choke point: what the processes say decides; a shell, an editor or
    /// an unknown program without an agent's screen is never typed into.
    #[test]
    fn typable_only_where_an_agent_runs() {
        let p = Profiles::builtin();
        let yes = |s: &Screen, job: Option<Vec<Proc>>| typable(&p, s, job.as_deref()).is_ok();
        // a plain shell, with or without its job read, whatever it shows
        for cmd in ["bash", "zsh", "sh", "dash", "fish"] {
            assert!(!yes(&screen(cmd, &[]), None), "{cmd}");
            assert!(
                !yes(&claude_box(cmd, None), None),
                "{cmd} showing a capture"
            );
            assert!(
                !yes(&claude_box(cmd, None), Some(vec![proc(3, &[cmd])])),
                "{cmd} job"
            );
            // a shell that runs something else with an agent's capture on screen
            let job = vec![proc(3, &[cmd]), proc(4, &["sleep", "9"])];
            assert!(!yes(&claude_box(cmd, None), Some(job)), "{cmd} + sleep");
            // a shell that stays, with the agent in its job
            let job = vec![proc(3, &[cmd]), proc(4, &["claude"])];
            assert!(yes(&screen(cmd, &[]), Some(job)), "{cmd} + claude");
        }
        // an agent in the background of a shell is not in its foreground job
        assert!(!yes(&screen("bash", &[]), Some(vec![proc(3, &["bash"])])));
        // editors and pagers, whatever they show
        for cmd in ["vim", "less", "nano", "cat"] {
            assert!(!yes(&claude_box(cmd, None), None), "{cmd}");
        }
        // agents by their command or their process
        assert!(yes(&screen("claude", &[]), None));
        assert!(yes(&screen("codex", &[]), None));
        let node = vec![proc(5, &["node", "/x/bin/gemini"])];
        assert!(yes(&screen("node", &[]), Some(node)));
        assert!(!yes(
            &screen("node", &[]),
            Some(vec![proc(5, &["node", "srv.js"])])
        ));
        // ssh (or docker, mosh) to where the agent runs: by its screen only
        assert!(yes(&claude_box("ssh", None), None));
        assert!(!yes(&screen("ssh", &["$ "]), None));
        assert!(!yes(&screen("python3", &[">>> "]), None));
        // a title left behind by an agent that exited: never typable by itself
        for (title, cmd) in [
            ("✳ Claude Code", "python3"),
            ("✳ Claude Code", "bash"),
            ("OpenCode", "node"),
            ("◇  Ready (proj)", "python3"),
        ] {
            let mut s = screen(cmd, &[">>> "]);
            s.title = Some(title.into());
            let why = typable(&p, &s, None).unwrap_err();
            assert!(!why.is_empty(), "{cmd} titled {title}");
        }
        // and names no agent, but behind a remote runner
        let mut s = screen("python3", &[">>> "]);
        s.title = Some("✳ Claude Code".into());
        assert_eq!(identify(&p, None, &s, &[]).unwrap().agent, None);
        s.command = Some("ssh".into());
        assert_eq!(
            identify(&p, None, &s, &[]).unwrap().agent.as_deref(),
            Some("claude")
        );
        // behind ssh the agent's title counts (its banner scrolled away)
        let mut s = screen("ssh", &["> "]);
        s.title = Some("✳ Claude Code".into());
        assert!(yes(&s, None));
        // the title still tells a fork from its parent where the screen shows one
        let mut s = claude_box("ssh", None);
        s.title = Some("✳ Claude Code".into());
        assert!(yes(&s, None));
    }

    #[test]
    fn flags_after_the_script_do_not_identify() {
        let pr = Proc {
            pid: 1,
            comm: "promptgate".into(),
            argv: vec![
                "promptgate".into(),
                "fake-agent".into(),
                "--like".into(),
                "claude".into(),
            ],
        };
        assert!(!proc_matches(&pr, "claude"));
    }

    #[test]
    fn opencode_kilo_and_copilot_by_their_process_trees() {
        // as seen under real panes : kilo and copilot run as `node`
        let p = Profiles::builtin();
        for (cmd, procs, want) in [
            (
                "opencode",
                vec![proc(5, &["/x/opencode-1.18.33/node_modules/.bin/opencode"])],
                "opencode",
            ),
            (
                "node",
                vec![
                    proc(6, &["node", "/x/kilo-7.7.7/node_modules/.bin/kilo"]),
                    proc(7, &["/x/node_modules/@kilocode/cli/bin/.kilo"]),
                ],
                "kilo",
            ),
            (
                "node",
                vec![
                    proc(8, &["node", "/x/node_modules/.bin/copilot"]),
                    Proc {
                        pid: 9,
                        comm: "MainThread".into(),
                        argv: vec!["/x/node_modules/@github/copilot-linux-x64/copilot".into()],
                    },
                ],
                "copilot",
            ),
        ] {
            let i = identify(&p, None, &screen(cmd, &[]), &procs).unwrap();
            assert_eq!(i.agent.as_deref(), Some(want), "{}", i.detail);
        }
        // by screen alone, the two look-alikes apart
        for (row, want) in [
            (
                "  ┃  Ask anything… \"Fix a TODO in the codebase\"",
                "opencode",
            ),
            (
                "  ┃  Ask anything... \"Fix a TODO in the codebase\"",
                "kilo",
            ),
            ("  ┃  Build · Claude Sonnet 4.6 Anthropic", "opencode"),
            ("  ┃  Code  · Claude Sonnet 4.6 Anthropic", "kilo"),
        ] {
            let i = identify(&p, None, &screen("promptgate", &[row]), &[]).unwrap();
            assert_eq!(i.agent.as_deref(), Some(want), "{row}: {}", i.detail);
        }
    }
}
