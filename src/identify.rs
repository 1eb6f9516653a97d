//! Which agent runs in a pane: `--agent` -> `pane_current_command` -> the
//! process tree under `pane_pid` -> the screen signature. A pane running a
//! plain shell or an unknown program identifies as nobody (`not-agent`).

use crate::error::Result;
use crate::profile::{Profile, Profiles};
use crate::screen::Screen;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Identity {
    /// The profile name, or `None` for not-agent.
    pub agent: Option<String>,
    /// `flag`, `command`, `process-tree`, `screen-signature` or `none`.
    pub how: String,
    pub detail: String,
}

/// One process under the pane: its `comm` and argv.
#[derive(Debug, Clone, Default)]
pub struct Proc {
    pub pid: u32,
    pub comm: String,
    pub argv: Vec<String>,
}

/// Identify the agent. `procs` is the process tree under `pane_pid` (empty for a saved capture).
pub fn identify(
    profiles: &Profiles,
    forced: Option<&str>,
    screen: &Screen,
    procs: &[Proc],
) -> Result<Identity> {
    if let Some(name) = forced {
        let p = profiles.get(name)?;
        return Ok(id(p, "flag", "--agent"));
    }
    if let Some(cmd) = screen.command.as_deref() {
        if let Some((d, _)) = profiles
            .defs()
            .find(|(d, _)| d.identify.commands.iter().any(|c| c == cmd))
        {
            let p = profiles.get(&d.name)?;
            return Ok(id(p, "command", &format!("pane_current_command={cmd}")));
        }
    }
    for pr in procs {
        for (d, _) in profiles.defs() {
            if let Some(n) = d.identify.processes.iter().find(|n| proc_matches(pr, n)) {
                let p = profiles.get(&d.name)?;
                return Ok(id(
                    p,
                    "process-tree",
                    &format!("pid {} ({}) matches {n:?}", pr.pid, pr.argv.join(" ")),
                ));
            }
        }
    }
    // Only when something other than a shell is in the foreground: a shell that
    // prints an agent's banner (say, `cat` of a capture) is still a shell.
    let shell = screen
        .command
        .as_deref()
        .is_some_and(crate::detect::is_shell);
    if !shell {
        for p in profiles.iter() {
            for (y, row) in screen.rows.iter().enumerate() {
                if let Some(m) = p.signature.iter().find_map(|re| re.find(row)) {
                    return Ok(id(
                        p,
                        "screen-signature",
                        &format!("row {y}: {:?}", m.as_str()),
                    ));
                }
            }
        }
    }
    Ok(Identity {
        agent: None,
        how: "none".into(),
        detail: format!(
            "pane_current_command={}",
            screen.command.as_deref().unwrap_or("?")
        ),
    })
}

fn id(p: &Profile, how: &str, detail: &str) -> Identity {
    Identity {
        agent: Some(p.name().to_string()),
        how: how.into(),
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

/// Field `n` (1-based, as proc(5) numbers them: 4 ppid, 22 starttime) of a
/// `/proc/PID/stat` line. The comm (field 2) is in parentheses and may hold
/// spaces: the fields from 3 on follow its last `)`.
fn stat_field(stat: &str, n: usize) -> Option<&str> {
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(n.checked_sub(3)?)
}

/// How long ago process `pid` started, from this machine's `/proc` (its start
/// time survives `exec`, so for a pane's process this is the pane's age).
pub fn process_age(pid: u32) -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let start_ticks: f64 = stat_field(&stat, 22)?.parse().ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0)
        .then(|| std::time::Duration::from_secs_f64((uptime - start_ticks / hz as f64).max(0.0)))
}

/// The pane's foreground job: the leader of the process group that owns the
/// terminal of `pane_pid` (`tpgid`, field 8), or `pane_pid` itself when there is
/// none or that leader is gone.
pub fn foreground_pid(pane_pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pane_pid}/stat")).ok()?;
    let tpgid: i64 = stat_field(&stat, 8)?.parse().ok()?;
    let alive = |p: i64| std::path::Path::new(&format!("/proc/{p}")).exists();
    Some(if tpgid > 0 && alive(tpgid) {
        tpgid as u32
    } else {
        pane_pid
    })
}

/// How long ago the pane's foreground job started: an agent launched from a
/// long-lived shell is young even though the shell (`pane_pid`) is not.
pub fn foreground_age(pane_pid: u32) -> Option<std::time::Duration> {
    process_age(foreground_pid(pane_pid)?)
}

/// The processes under `root` (itself included), read from `/proc`. Empty where
/// there is no `/proc`.
pub fn process_tree(root: u32) -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut all: Vec<(u32, u32)> = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid = stat_field(&stat, 4)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        all.push((pid, ppid));
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(all.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    tree.into_iter()
        .map(|pid| Proc {
            pid,
            comm: std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .unwrap_or_default()
                .trim()
                .to_string(),
            argv: std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|b| {
                    b.split(|c| *c == 0)
                        .filter(|s| !s.is_empty())
                        .map(|s| String::from_utf8_lossy(s).into_owned())
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
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
        assert_eq!(identify(&p, None, &s, &[]).unwrap().how, "command");
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
    fn stat_fields_count_past_a_comm_with_spaces() {
        let stat = "42 (a b) c) S 7 42 42 0 -1 4 0 0 0 0 1 2 0 0 20 0 1 0 987654 1 2";
        assert_eq!(stat_field(stat, 3), Some("S"));
        assert_eq!(stat_field(stat, 4), Some("7"));
        assert_eq!(stat_field(stat, 22), Some("987654"));
        assert_eq!(stat_field(stat, 2), None);
    }

    #[test]
    fn this_process_is_young() {
        let age = process_age(std::process::id()).unwrap();
        assert!(age < std::time::Duration::from_secs(600), "{age:?}");
        assert!(process_age(u32::MAX).is_none());
    }

    #[test]
    fn a_shell_is_nobody_even_with_a_banner_on_screen() {
        let p = Profiles::builtin();
        let i = identify(&p, None, &screen("bash", &["Claude Code v2.1.197"]), &[]).unwrap();
        assert_eq!(i.agent, None);
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
}
