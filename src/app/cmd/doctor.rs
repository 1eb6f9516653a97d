//! `promptgate doctor`: one command to run when something looks wrong.
//!
//! It reports the tmux release (and whether it is in the tested range), then for
//! each agent pane the agent and its release, read without starting anything
//! (Claude's session registry `~/.claude/sessions/<pid>.json`, else the npm
//! `package.json` above the running binary or script), whether the agent's
//! profile was checked against that release, and the pane's state with the
//! evidence `explain` gives. A release newer than the newest checked one is a
//! problem: the exit status is then 40, with a line that says how to contribute
//! captures (`promptgate capture`).

use crate::app::cli::target;
use crate::app::cli::DoctorArgs;
use crate::app::out::out;
use crate::core::error::{Error, Result};
use crate::core::profile::{compare_releases, Profiles};
use crate::core::screen::Proc;
use crate::engine::observe::{observe, Observed};
use crate::io::proc::process_tree;
use crate::io::tmux::release::{self, Release, Standing};
use crate::io::tmux::{Control, Process, Server, Tmux};
use std::cmp::Ordering;
use std::path::{Path, PathBuf};

/// Where an agent's release was read from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AgentRelease {
    pub version: String,
    pub source: String,
}

/// How a release stands against a profile's `checked` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Checked {
    /// In the list.
    Checked,
    /// Between the oldest and the newest checked, not itself checked.
    WithinRange,
    /// Older than the oldest checked.
    Older,
    /// Newer than the newest checked: screens may have changed.
    Newer,
    /// The profile lists no releases, or the release is not known.
    Unknown,
}

pub fn standing(checked: &[String], version: Option<&str>) -> Checked {
    let Some(v) = version else {
        return Checked::Unknown;
    };
    if checked.is_empty() {
        return Checked::Unknown;
    }
    if checked
        .iter()
        .any(|c| compare_releases(c, v) == Ordering::Equal)
    {
        return Checked::Checked;
    }
    let newest = checked
        .iter()
        .max_by(|a, b| compare_releases(a, b))
        .unwrap();
    let oldest = checked
        .iter()
        .min_by(|a, b| compare_releases(a, b))
        .unwrap();
    if compare_releases(v, newest) == Ordering::Greater {
        Checked::Newer
    } else if compare_releases(v, oldest) == Ordering::Less {
        Checked::Older
    } else {
        Checked::WithinRange
    }
}

pub fn run(server: &Server, profiles: &Profiles, a: DoctorArgs) -> Result<i32> {
    let mut problems: Vec<String> = Vec::new();
    let mut lister = Process::new(server.clone());
    let panes: Vec<String> = match &a.target {
        Some(t) => vec![lister.resolve(&target(server, &Some(t.clone()))?)?],
        None => match lister.list_panes() {
            Ok(p) => p.into_iter().map(|p| p.id).collect(),
            Err(Error::NoServer(why)) => return without_server(profiles, a.json, why),
            Err(e) => return Err(e),
        },
    };
    let Some(first) = panes.first() else {
        tmux_line(None, a.json, &mut problems)?;
        out("no panes")?;
        return finish(problems);
    };
    let mut tmux = Control::new(server.clone(), first);
    let mut observed: Vec<Observed> = Vec::new();
    for pane in &panes {
        match observe(&mut tmux, profiles, None, pane) {
            Ok(o) => observed.push(o),
            Err(Error::NoPane(_)) if a.target.is_none() => continue,
            Err(e) => return Err(e),
        }
    }
    let server_release = observed
        .iter()
        .find_map(|o| o.screen.tmux_version.clone())
        .map(|v| Release::parse(&v));
    tmux_line(server_release.as_ref(), a.json, &mut problems)?;
    // tmux 3.5's `allow-set-title` per pane (empty before 3.5: titles always set)
    let set_title = lister
        .run(
            &["list-panes", "-a", "-F", "#{pane_id}\t#{allow-set-title}"],
            None,
            None,
        )
        .unwrap_or_default();
    let title_off = |pane: &str| {
        set_title
            .lines()
            .any(|l| l.split_once('\t') == Some((pane, "0")))
    };
    let mut agents = 0;
    for o in &observed {
        let Some(agent) = o.identity.agent.as_deref() else {
            continue;
        };
        agents += 1;
        let profile = profiles.get(agent)?;
        // over ssh (`--host`) the pane's processes are not on this machine
        let procs = match o.screen.pid {
            Some(pid) if !crate::io::tmux::is_remote() => process_tree(pid),
            _ => Vec::new(),
        };
        let rel = agent_release(agent, &procs, &profile.def.identify.processes);
        let st = standing(
            &profile.def.checked,
            rel.as_ref().map(|r| r.version.as_str()),
        );
        let checked = profile.def.checked.join(", ");
        let v = &o.verdict;
        if a.json {
            out(&serde_json::json!({
                "pane": o.pane,
                "agent": agent,
                "release": rel,
                "checked": profile.def.checked,
                "standing": st,
                "state": v.state.to_string(),
                "evidence": v.evidence,
                "reason": v.reason(),
            })
            .to_string())?;
        } else {
            let release_words = match &rel {
                Some(r) => format!("{} (from {})", r.version, r.source),
                None => "release unknown (no session registry or package.json found)".into(),
            };
            let standing_words = match st {
                Checked::Checked => format!("checked (profile checked against {checked})"),
                Checked::WithinRange => {
                    format!("within the checked range, not itself checked ({checked})")
                }
                Checked::Older => format!("OLDER than every checked release ({checked})"),
                Checked::Newer => format!("NEWER than every checked release ({checked})"),
                Checked::Unknown if checked.is_empty() => {
                    "the profile states no checked releases".into()
                }
                Checked::Unknown => format!("profile checked against {checked}"),
            };
            out(&format!(
                "{}\t{agent} {release_words}: {standing_words}",
                o.pane
            ))?;
            out(&format!("\tstate: {}  ({})", v.state, v.reason()))?;
            for c in v.checks.iter().filter(|c| c.fired) {
                out(&format!("\t  FIRED {:<40} {}", c.rule, c.detail))?;
            }
        }
        let title_busy: Vec<&str> = profile
            .def
            .busy
            .iter()
            .filter(|m| m.on.as_deref() == Some("title"))
            .map(|m| m.id.as_str())
            .collect();
        if !title_busy.is_empty() && title_off(&o.pane) {
            problems.push(format!(
                "{} has tmux's allow-set-title off: {agent} cannot set the pane title, where it shows that it works ({}); at times the title is all it shows (Codex 0.171 while a reply streams), and then a busy agent reads ready. Turn it on: `tmux set -g allow-set-title on` (or remove the pane's `set -p allow-set-title off`)",
                o.pane,
                title_busy.join(", "),
            ));
        }
        if let (Checked::Newer, Some(r)) = (st, &rel) {
            problems.push(format!(
                "{} runs {agent} {}, newer than the newest release its profile was checked against ({}): its screens may have changed and a state may be misread. Check `promptgate explain -t {}`; to contribute, save each state you can reach (ready, typed, busy, dialogs, after an error) with `promptgate capture -t {} -o {agent}-{}-STATE` and send the files (fixtures/README.md)",
                o.pane,
                r.version,
                profile.def.newest_checked().unwrap_or("?"),
                o.pane,
                o.pane,
                r.version,
            ));
        }
    }
    if !a.json && agents == 0 {
        out("no agent panes")?;
    }
    finish(problems)
}

/// No tmux server runs (a fresh install): check what can be checked without
/// one (tmux itself, promptgate on PATH, the plugin, each built-in agent
/// installed on PATH and its release) and print it; the exit is as with a
/// server (0, or 40 for a problem): no server is no problem of the install.
fn without_server(profiles: &Profiles, json: bool, why: String) -> Result<i32> {
    let mut problems = Vec::new();
    if !json {
        out(&format!(
            "tmux: no server running; client: {} (tested: {})",
            release::describe_local(),
            release::tested_range()
        ))?;
    }
    let me = release::find_in_path("promptgate");
    let plugin = [
        "~/.tmux/plugins/promptgate",
        "~/.config/tmux/plugins/promptgate",
    ]
    .iter()
    .filter_map(|p| {
        let home = std::env::var("HOME").ok()?;
        let d = PathBuf::from(p.replacen('~', &home, 1));
        d.join("promptgate.tmux").is_file().then_some(d)
    })
    .next();
    let mut agents = Vec::new();
    for p in profiles.iter() {
        let names = &p.def.identify.processes;
        let Some(path) = names
            .iter()
            .filter(|n| !n.contains('/'))
            .find_map(|n| release::find_in_path(n))
        else {
            continue;
        };
        let real = std::fs::canonicalize(&path).unwrap_or_else(|_| PathBuf::from(&path));
        let rel = package_above(&real, &p.def.name, names)
            .or_else(|| python_dist_beside(&real, &p.def.name, names));
        let st = standing(&p.def.checked, rel.as_ref().map(|r| r.version.as_str()));
        agents.push((p.def.name.clone(), path, rel, st, p.def.checked.join(", ")));
    }
    for (n, path, rel, st, checked) in &agents {
        if matches!(st, Checked::Newer) {
            let r = rel.as_ref().map_or("?", |r| r.version.as_str());
            problems.push(format!(
                "{n} {r} at {path} is newer than every release its profile was checked against ({checked})"
            ));
        }
    }
    if json {
        out(&serde_json::json!({
            "server": null,
            "why": why,
            "client": release::describe_local(),
            "tested": release::tested_range(),
            "promptgate_on_path": me,
            "plugin": plugin.as_ref().map(|d| d.display().to_string()),
            "agents": agents.iter().map(|(n, path, rel, st, _)| serde_json::json!({
                "agent": n, "path": path, "release": rel, "standing": st,
            })).collect::<Vec<_>>(),
        })
        .to_string())?;
    } else {
        out("server: none running: panes not checked")?;
        out(&match &me {
            Some(p) => format!("promptgate on PATH: {p}"),
            None => "promptgate on PATH: no (cargo install --path . or scripts/install.sh)".into(),
        })?;
        out(&match &plugin {
            Some(d) => format!("plugin: {}", d.display()),
            None => {
                "plugin: not under ~/.tmux/plugins (a plugin elsewhere is not looked for)".into()
            }
        })?;
        if agents.is_empty() {
            out("agents on PATH: none of the built-in ones")?;
        }
        for (n, path, rel, st, checked) in &agents {
            let r = rel
                .as_ref()
                .map(|r| r.version.clone())
                .unwrap_or_else(|| "release unknown".into());
            let words = match st {
                Checked::Checked => "checked".to_string(),
                Checked::WithinRange => format!("within the checked range ({checked})"),
                Checked::Older => format!("OLDER than every checked release ({checked})"),
                Checked::Newer => format!("NEWER than every checked release ({checked})"),
                Checked::Unknown => format!("profile checked against {checked}"),
            };
            out(&format!("agent: {n} {r} at {path}: {words}"))?;
        }
    }
    finish(problems)
}

/// `doctor` found a problem: an agent release newer than its profile's newest
/// checked one, or a tmux older than the tested range (each named on stderr).
pub const DOCTOR_PROBLEM: i32 = 40;

fn finish(problems: Vec<String>) -> Result<i32> {
    for p in &problems {
        eprintln!("promptgate doctor: {p}");
    }
    Ok(if problems.is_empty() {
        0
    } else {
        DOCTOR_PROBLEM
    })
}

fn tmux_line(server: Option<&Release>, json: bool, problems: &mut Vec<String>) -> Result<()> {
    let client = release::describe_local();
    let (name, standing) = match server {
        Some(r) => (r.name.clone(), r.standing()),
        None => ("?".into(), Standing::Unknown),
    };
    let words = match standing {
        Standing::Tested => "tested".to_string(),
        Standing::Older => {
            problems.push(format!(
                "tmux {name} is older than the oldest tested release ({}): upgrade tmux",
                release::tested_range()
            ));
            "OLDER than the tested range".into()
        }
        Standing::Newer => "newer than the tested range (not tested)".into(),
        Standing::Unknown => "not known to be tested".into(),
    };
    if json {
        out(&serde_json::json!({"tmux": name, "standing": words, "tested": release::tested_range(), "client": client}).to_string())
    } else {
        out(&format!(
            "tmux: server {name}: {words} (tested: {}); client: {client}",
            release::tested_range()
        ))
    }
}

/// The agent's release, read without starting it: Claude's session registry for
/// one of its processes, else the `package.json` above a process's binary or
/// script whose package is the agent's.
pub fn agent_release(agent: &str, procs: &[Proc], names: &[String]) -> Option<AgentRelease> {
    if agent == "claude" {
        for p in procs {
            if let Some(r) = claude_session(p.pid) {
                return Some(r);
            }
        }
    }
    for p in procs {
        let mut paths: Vec<PathBuf> = Vec::new();
        if let Ok(exe) = std::fs::read_link(format!("/proc/{}/exe", p.pid)) {
            paths.push(exe);
        }
        for w in &p.argv {
            if w.starts_with('/') || w.starts_with('.') {
                let path = Path::new(w);
                let path = if path.is_absolute() {
                    path.to_path_buf()
                } else {
                    match std::fs::read_link(format!("/proc/{}/cwd", p.pid)) {
                        Ok(cwd) => cwd.join(path),
                        Err(_) => continue,
                    }
                };
                paths.push(std::fs::canonicalize(&path).unwrap_or(path));
            }
        }
        for path in paths {
            if let Some(r) = package_above(&path, agent, names)
                .or_else(|| python_dist_beside(&path, agent, names))
            {
                return Some(r);
            }
        }
    }
    None
}

/// `<config>/sessions/<pid>.json` (`CLAUDE_CONFIG_DIR`, else `$HOME/.claude`, of
/// that process) and its `version`.
fn claude_session(pid: u32) -> Option<AgentRelease> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let var = |k: &str| {
        env.split(|b| *b == 0).find_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            kv.strip_prefix(&format!("{k}="))
                .map(|v| v.to_string())
                .filter(|v| !v.is_empty())
        })
    };
    let dir = var("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".claude")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))?;
    let file = dir.join("sessions").join(format!("{pid}.json"));
    let text = std::fs::read_to_string(&file).ok()?;
    let j: serde_json::Value = serde_json::from_str(&text).ok()?;
    let v = j["version"].as_str()?.to_string();
    Some(AgentRelease {
        version: v,
        source: file.display().to_string(),
    })
}

/// The nearest `package.json` above `path` that belongs to the agent (its name is
/// one of the profile's process names, or its last part starts with the agent's
/// name, as `@openai/codex-linux-x64` does); its version up to any `-platform`.
fn package_above(path: &Path, agent: &str, names: &[String]) -> Option<AgentRelease> {
    let mut dir = path.parent();
    while let Some(d) = dir {
        let pj = d.join("package.json");
        if let Ok(text) = std::fs::read_to_string(&pj) {
            if let Ok(j) = serde_json::from_str::<serde_json::Value>(&text) {
                let name = j["name"].as_str().unwrap_or("");
                let last = name.rsplit('/').next().unwrap_or(name);
                let ours = names.iter().any(|n| n == name) || last.starts_with(agent);
                if let (true, Some(v)) = (ours, j["version"].as_str()) {
                    let v = v.split('-').next().unwrap_or(v).to_string();
                    return Some(AgentRelease {
                        version: v,
                        source: pj.display().to_string(),
                    });
                }
            }
        }
        if d.file_name().is_some_and(|n| n == "node_modules") {
            break;
        }
        dir = d.parent();
    }
    None
}

/// A Python package's release (Aider, from PyPI): for a console script
/// `ROOT/bin/NAME` (a venv, `/usr/local`, `~/.local`), the `Version:` of the
/// agent's `ROOT/lib/python*/site-packages/*.dist-info/METADATA`.
fn python_dist_beside(path: &Path, agent: &str, names: &[String]) -> Option<AgentRelease> {
    let root = path.parent().filter(|b| b.ends_with("bin"))?.parent()?;
    for lib in std::fs::read_dir(root.join("lib")).ok()?.flatten() {
        if !lib.file_name().to_string_lossy().starts_with("python") {
            continue;
        }
        let Ok(site) = std::fs::read_dir(lib.path().join("site-packages")) else {
            continue;
        };
        for d in site.flatten() {
            let n = d.file_name().to_string_lossy().into_owned();
            let Some(stem) = n.strip_suffix(".dist-info") else {
                continue;
            };
            let pkg = stem
                .split('-')
                .next()
                .unwrap_or(stem)
                .replace('_', "-")
                .to_lowercase();
            if !(pkg.starts_with(agent) || names.contains(&pkg)) {
                continue;
            }
            let meta = d.path().join("METADATA");
            let Ok(text) = std::fs::read_to_string(&meta) else {
                continue;
            };
            let Some(version) = text
                .lines()
                .take_while(|l| !l.is_empty())
                .find_map(|l| l.strip_prefix("Version: "))
            else {
                continue;
            };
            return Some(AgentRelease {
                version: version.trim().to_string(),
                source: meta.display().to_string(),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_python_agents_release_comes_from_its_dist_info() {
        let root = tempfile::tempdir().unwrap();
        let site = root.path().join("lib/python3.11/site-packages");
        let info = site.join("aider_chat-0.86.2.dist-info");
        std::fs::create_dir_all(&info).unwrap();
        std::fs::create_dir_all(site.join("litellm-1.0.0.dist-info")).unwrap();
        std::fs::write(
            info.join("METADATA"),
            "Metadata-Version: 2.1\nName: aider-chat\nVersion: 0.86.2\n\nbody\n",
        )
        .unwrap();
        let script = root.path().join("bin/aider");
        let r = python_dist_beside(&script, "aider", &[]).unwrap();
        assert_eq!(r.version, "0.86.2");
        assert!(python_dist_beside(&script, "codex", &[]).is_none());
        assert!(python_dist_beside(&root.path().join("aider"), "aider", &[]).is_none());
    }

    #[test]
    fn a_release_stands_against_the_checked_list() {
        let c = list(&["2.1.197", "2.1.259", "2.1.332"]);
        assert_eq!(standing(&c, Some("2.1.332")), Checked::Checked);
        assert_eq!(standing(&c, Some("2.1.300")), Checked::WithinRange);
        assert_eq!(standing(&c, Some("2.1.333")), Checked::Newer);
        assert_eq!(standing(&c, Some("2.1.100")), Checked::Older);
        assert_eq!(standing(&c, None), Checked::Unknown);
        assert_eq!(standing(&[], Some("1.0.0")), Checked::Unknown);
    }

    #[test]
    fn the_release_comes_from_the_package_above_the_script() {
        let d = tempfile::tempdir().unwrap();
        let pkg = d.path().join("node_modules/@openai/codex-linux-x64");
        std::fs::create_dir_all(pkg.join("vendor/bin")).unwrap();
        std::fs::write(
            pkg.join("package.json"),
            r#"{"name":"@openai/codex-linux-x64","version":"0.171.0-linux-x64"}"#,
        )
        .unwrap();
        let r = package_above(&pkg.join("vendor/bin/codex"), "codex", &[]).unwrap();
        assert_eq!(r.version, "0.171.0");
        // another package is not the agent's
        assert!(package_above(&pkg.join("vendor/bin/codex"), "gemini", &[]).is_none());
    }
}
