//! Proof from the agent itself: its own record of the prompts it received.
//!
//! Each agent appends every prompt it takes to a file (Claude Code its session
//! transcript, Codex its session rollout, Gemini `logs.json`). Where that is, and
//! which field holds the text, is profile data (`[record]`), never code. Before
//! the first byte is typed the record is marked (the size of each file); after
//! the submit only what was appended since is read (the file is tailed, never
//! re-read), and its text is compared with the body that was sent.
//!
//! The agent process is found under the pane; its `HOME`, `CODEX_HOME` and the
//! like come from `/proc/PID/environ`, its directory from `/proc/PID/cwd`. When
//! tmux runs on another machine all of that is read there, through the same ssh
//! (`files.rs`). Where none of it can be read (another user's process, a far
//! side without `/proc`, a profile without `[record]`) the proof says `screen`:
//! the screen's judgement stands.

use crate::identify::{process_tree, Proc};
use crate::profile::Profile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where an agent records the prompts it receives (a profile's `[record]`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RecordDef {
    /// The file: `~` is the agent's HOME; `{cwd}` its directory, `{cwd_dashed}`
    /// that with every character but ASCII letters and digits as `-`,
    /// `{cwd_name}` its last component; `{env:NAME|fallback}` a variable of the
    /// agent's environment. A `*` in a component matches any name (the newest
    /// files and directories first).
    pub path: String,
    /// `jsonl` (one JSON object a line, appended), `json-array` (one array) or
    /// `prefixed-lines` (plain text: each line of an entry starts with
    /// `line_prefix`, any other line ends the entry; Aider's FileHistory).
    #[serde(default)]
    pub format: RecordFormat,
    /// The field that holds the prompt, dotted (`message.content`). A list of
    /// parts (`[{"type":"text","text":…}]`) is joined. (JSON formats only.)
    #[serde(default)]
    pub text: String,
    /// `prefixed-lines`: the prefix of each line of an entry (`+`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_prefix: Option<String>,
    /// Only entries whose fields have these values (`type = "user"`).
    #[serde(default)]
    pub filter: BTreeMap<String, String>,
    /// The agent stores a tab as this many spaces (Claude Code: 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab_width: Option<usize>,
    /// The agent trims whitespace from the end of a prompt it stores.
    #[serde(default)]
    pub trims_trailing: bool,
    /// A regex for a wrapper the agent puts around (part of) a prompt it stores;
    /// each match is replaced by its group `text` (Claude 2.1.332 stores a paste
    /// as `<pasted_content id="X">` … `</pasted_content id="X">`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwrap: Option<String>,
    /// Pasted text the agent keeps out of `text`, each paste leaving a
    /// placeholder there (OpenCode: `[Pasted ~4 lines]` in `input`, the lines in
    /// a part of `parts`): each placeholder is put back as its part's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<PartsDef>,
    /// A regex for a reference the agent stores instead of a long paste, to a
    /// file it wrote the paste to; group `path` is that file. Each match is
    /// replaced by the file's text (Copilot CLI: `<pasted_content file="…"
    /// size="20.1 KB" lines="302" />`). Only files under the record's own
    /// directory are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_ref: Option<String>,
    /// The record is the composer's input history, written as the prompt is
    /// submitted, before the agent shows its turn begun (OpenCode, Kilo): an
    /// entry proves the prompt was taken, not that its turn started, so
    /// `--until-done` still waits for busy or the start grace.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub input_history: bool,
    /// How long after the submit to wait for the entry, at most.
    #[serde(default = "wait_ms")]
    pub wait_ms: u64,
    /// How long to wait instead when the agent process is under a minute old:
    /// an agent may hold a prompt it took during its start-up until that is
    /// over, and record it only then (Codex). Default: `wait_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_wait_ms: Option<u64>,
}

/// A record's pasted parts (`[record] parts = { field = "parts", … }`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PartsDef {
    /// The entry's list of parts, dotted.
    pub field: String,
    /// In a part: the placeholder it left in the text, dotted.
    pub placeholder: String,
    /// In a part: the text it stands for, dotted.
    pub text: String,
}

fn wait_ms() -> u64 {
    500
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RecordFormat {
    #[default]
    Jsonl,
    JsonArray,
    PrefixedLines,
}

/// Where an agent publishes its own state (a profile's `[status]`): Claude
/// Code's session registry, `~/.claude/sessions/<pid>.json`, `"status"`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StatusDef {
    /// The file, as a record's `path`, plus `{pid}`: the agent's process id.
    pub path: String,
    /// The field that holds the state, dotted.
    pub field: String,
    /// Values that mean the agent is working (they veto `ready`).
    #[serde(default)]
    pub busy: Vec<String>,
    /// Values that mean it waits for a person (they veto `ready` too).
    #[serde(default)]
    pub waiting: Vec<String>,
}

/// One agent's status file, found once per gate and read at every look.
#[derive(Debug, Clone)]
pub struct StatusFile {
    pub path: PathBuf,
    field: String,
}

/// The status file of the agent under `pane_pid`, where its profile names one
/// and it exists (a local agent, a release that keeps one). `procs`: the
/// processes under the pane when the caller has walked `/proc` already.
pub fn status_file(profile: &Profile, pane_pid: Option<u32>, procs: &[Proc]) -> Option<StatusFile> {
    let def = profile.def.status.as_ref()?;
    if crate::tmux::is_remote() {
        return None;
    }
    let agent = agent_process(profile, pane_pid?, procs)?;
    let env = crate::files::Files::Local.environ(agent.pid)?;
    let cwd = std::fs::read_link(format!("/proc/{}/cwd", agent.pid)).ok()?;
    let path = expand(
        &def.path.replace("{pid}", &agent.pid.to_string()),
        &env,
        &cwd,
    )
    .ok()?;
    path.is_file().then(|| StatusFile {
        path,
        field: def.field.clone(),
    })
}

impl StatusFile {
    /// The status now (`None`: unreadable).
    pub fn read(&self) -> Option<String> {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&self.path).ok()?).ok()?;
        field(&v, &self.field)?.as_str().map(str::to_string)
    }
}

/// What the agent's own record says about one send (the receipt's `proof`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Proof {
    /// `transcript` (the agent's record) or `screen` (no record could be read).
    pub source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `exact`, `differs` or `absent` (no new entry in time); `none` for `screen`.
    #[serde(rename = "match")]
    pub matched: &'static str,
    /// SHA-256 of the body as sent.
    pub sha256: String,
    /// Why there is no record (`source: screen`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// `differs`: the first byte where the record and the body part, and both lengths.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_len: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_len: Option<usize>,
    /// How long after the submit the entry was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<u64>,
}

impl Proof {
    pub fn screen(body: &str, why: &str) -> Proof {
        Proof {
            source: "screen",
            path: None,
            matched: "none",
            sha256: sha256_hex(body.as_bytes()),
            why: Some(why.to_string()),
            first_difference: None,
            body_len: None,
            record_len: None,
            waited_ms: None,
        }
    }
}

/// The pane's hook events (`promptgate hooks install`), marked before typing.
#[derive(Debug, Clone)]
pub struct HookMark {
    path: PathBuf,
    since: u64,
}

impl HookMark {
    pub fn new(server_key: &str, pane: &str) -> HookMark {
        let path = crate::hooks::event_file(server_key, pane);
        let since = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        HookMark { path, since }
    }

    /// The end-of-turn event (`Stop`, `AfterAgent`) since the mark, as `hook EVENT`.
    pub fn turn_end(&self) -> Option<String> {
        crate::hooks::events_since(&self.path, self.since)
            .iter()
            .find(|e| crate::hooks::is_turn_end_event(e))
            .map(|e| format!("hook {}", e["event"].as_str().unwrap_or("")))
    }

    /// A prompt event since the mark whose prompt is the body: proof.
    pub fn prove(&self, def: Option<&RecordDef>, body: &str) -> Option<Proof> {
        let events = crate::hooks::events_since(&self.path, self.since);
        let same = |p: &str| match def {
            Some(d) => normalise(d, p) == normalise(d, body),
            None => p == body,
        };
        events
            .iter()
            .filter(|e| crate::hooks::is_prompt_event(e))
            .filter_map(|e| e["prompt"].as_str())
            .any(same)
            .then(|| Proof {
                source: "hook",
                path: Some(self.path.display().to_string()),
                matched: "exact",
                sha256: sha256_hex(body.as_bytes()),
                why: None,
                first_difference: None,
                body_len: None,
                record_len: None,
                waited_ms: Some(0),
            })
    }
}

/// The agent's record, marked before typing.
#[derive(Debug, Clone)]
pub struct Mark {
    def: RecordDef,
    /// The resolved path pattern (a `*` may remain in the last component).
    pattern: PathBuf,
    /// Each matching file's size (jsonl) or entry count (json-array) at the mark.
    before: BTreeMap<PathBuf, u64>,
    /// This machine, or tmux's through its ssh.
    files: crate::files::Files,
    /// How long to wait for the entry after the submit.
    wait: Duration,
}

/// Mark the record of the agent under `pane_pid` before anything is typed;
/// `Err` says why there is none to read (the proof will be `screen`).
pub fn mark(profile: &Profile, pane_pid: Option<u32>) -> std::result::Result<Mark, String> {
    let def = profile
        .def
        .record
        .clone()
        .ok_or_else(|| format!("the {} profile names no record", profile.name()))?;
    // over ssh, the record is read on tmux's machine, through the same ssh
    let files = crate::files::Files::of_tmux();
    let pane_pid = pane_pid.ok_or("tmux named no pane process")?;
    let walked = files.process_tree(pane_pid);
    let agent = agent_process(profile, pane_pid, &walked).ok_or_else(|| {
        format!(
            "no {} process under pane process {pane_pid}",
            profile.name()
        )
    })?;
    let env = files
        .environ(agent.pid)
        .ok_or_else(|| format!("cannot read the environment of pid {}", agent.pid))?;
    let cwd = files
        .read_link(Path::new(&format!("/proc/{}/cwd", agent.pid)))
        .ok_or_else(|| format!("cannot read the directory of pid {}", agent.pid))?;
    let pattern = expand(&def.path, &env, &cwd)?;
    // An agent that keeps no record here is not waited for after every send:
    // some directory of the record's, below HOME, must exist already (the
    // agent's own, such as ~/.claude, made at its start).
    let home = env.get("HOME").map(PathBuf::from).unwrap_or_default();
    let kept = pattern
        .ancestors()
        .skip(1)
        .take_while(|d| *d != home && d.parent().is_some())
        .any(|d| files.is_dir(d));
    if !kept {
        return Err(format!("no record at {}", pattern.display()));
    }
    // a young agent may record a prompt only once its start-up is over
    let young = !files.is_remote()
        && crate::identify::process_age(agent.pid).is_some_and(|a| a < Duration::from_secs(60));
    let wait = Duration::from_millis(match def.startup_wait_ms {
        Some(ms) if young => ms.max(def.wait_ms),
        _ => def.wait_ms,
    });
    let before = matching(&files, &pattern)
        .into_iter()
        .map(|p| {
            let n = count(&files, &def, &p);
            (p, n)
        })
        .collect();
    Ok(Mark {
        def,
        pattern,
        before,
        files,
        wait,
    })
}

impl Mark {
    /// Wait (at most the profile's `wait_ms`) for what the agent appended after
    /// the mark, and judge it against `body` (the text as sent).
    pub fn prove(&self, body: &str) -> Proof {
        let start = Instant::now();
        let deadline = start + self.wait;
        loop {
            let (path, entries) = self.appended();
            let done = Instant::now() >= deadline;
            // an entry that is not (yet) the body may be half written (a plain
            // text record has no end mark): look again until the deadline
            let judged = (!entries.is_empty() || done).then(|| judge(&self.def, body, &entries));
            if let Some(mut p) = judged.filter(|p| p.matched == "exact" || done) {
                p.path = Some(
                    path.unwrap_or_else(|| self.pattern.clone())
                        .display()
                        .to_string(),
                );
                p.waited_ms = Some(start.elapsed().as_millis() as u64);
                return p;
            }
            // each look over ssh is a round trip: look less often
            std::thread::sleep(Duration::from_millis(if self.files.is_remote() {
                100
            } else {
                15
            }));
        }
    }

    /// The texts appended since the mark (in the file that grew), in order.
    fn appended(&self) -> (Option<PathBuf>, Vec<String>) {
        for p in matching(&self.files, &self.pattern) {
            let since = self.before.get(&p).copied().unwrap_or(0);
            let texts = match self.def.format {
                RecordFormat::Jsonl => tail_lines(&self.files, &p, since)
                    .into_iter()
                    .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
                    .filter_map(|v| entry_text(&self.def, &v))
                    .map(|t| put_back_files(&self.files, &self.def, &p, t))
                    .collect::<Vec<_>>(),
                RecordFormat::JsonArray => read_array(&self.files, &p)
                    .into_iter()
                    .skip(since as usize)
                    .filter_map(|v| entry_text(&self.def, &v))
                    .map(|t| put_back_files(&self.files, &self.def, &p, t))
                    .collect(),
                RecordFormat::PrefixedLines => {
                    prefixed_entries(&tail_lines(&self.files, &p, since), &self.def)
                }
            };
            if !texts.is_empty() {
                return (Some(p), texts);
            }
        }
        (None, Vec::new())
    }
}

/// Judge the appended entries against the body: `exact` when one of them is
/// the body (as the agent stores text: tabs and trailing blanks per profile),
/// else `differs` against the last, or `absent`.
pub fn judge(def: &RecordDef, body: &str, entries: &[String]) -> Proof {
    let want = normalise(def, body);
    let mut p = Proof {
        source: "transcript",
        path: None,
        matched: "absent",
        sha256: sha256_hex(body.as_bytes()),
        why: None,
        first_difference: None,
        body_len: None,
        record_len: None,
        waited_ms: None,
    };
    if entries.iter().any(|e| normalise(def, e) == want) {
        p.matched = "exact";
    } else if let Some(last) = entries.last() {
        let got = normalise(def, last);
        p.matched = "differs";
        p.first_difference = Some(
            want.bytes()
                .zip(got.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(want.len().min(got.len())),
        );
        p.body_len = Some(body.len());
        p.record_len = Some(last.len());
    }
    p
}

fn normalise(def: &RecordDef, s: &str) -> String {
    let mut s = match def.tab_width {
        Some(n) => s.replace('\t', &" ".repeat(n)),
        None => s.to_string(),
    };
    if def.trims_trailing {
        s.truncate(s.trim_end().len());
    }
    s
}

/// The text of one record entry, if it passes the filter.
fn entry_text(def: &RecordDef, v: &serde_json::Value) -> Option<String> {
    for (k, want) in &def.filter {
        if field(v, k)?.as_str()? != want {
            return None;
        }
    }
    let text = match field(v, &def.text)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| {
                    p.get("type")
                        .and_then(|t| t.as_str())
                        .is_none_or(|t| t == "text")
                })
                .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
                .collect();
            (!texts.is_empty()).then(|| texts.concat())
        }
        _ => None,
    }?;
    let text = match &def.parts {
        Some(pd) => put_back_parts(pd, v, text),
        None => text,
    };
    Some(match def.unwrap.as_deref().map(regex::Regex::new) {
        Some(Ok(re)) => re.replace_all(&text, "$text").into_owned(),
        _ => text,
    })
}

/// Each file reference in `text` (the profile's `file_ref`) replaced by the
/// file's text, when the file lies under the directory of `record`.
fn put_back_files(
    files: &crate::files::Files,
    def: &RecordDef,
    record: &Path,
    text: String,
) -> String {
    let Some(Ok(re)) = def.file_ref.as_deref().map(regex::Regex::new) else {
        return text;
    };
    let Some(dir) = record.parent() else {
        return text;
    };
    re.replace_all(&text, |c: &regex::Captures| {
        let whole = c[0].to_string();
        let Some(path) = c.name("path").map(|m| Path::new(m.as_str())) else {
            return whole;
        };
        let inside = path.is_absolute()
            && path.starts_with(dir)
            && !path
                .components()
                .any(|x| x == std::path::Component::ParentDir);
        match inside
            .then(|| files.read(path))
            .flatten()
            .and_then(|b| String::from_utf8(b).ok())
        {
            Some(t) => t,
            None => whole,
        }
    })
    .into_owned()
}

/// Each pasted part's placeholder in `text` replaced by the part's text (the
/// first occurrence, in the parts' order).
fn put_back_parts(pd: &PartsDef, v: &serde_json::Value, mut text: String) -> String {
    let Some(parts) = field(v, &pd.field).and_then(|p| p.as_array()) else {
        return text;
    };
    for p in parts {
        let (Some(ph), Some(t)) = (
            field(p, &pd.placeholder).and_then(|x| x.as_str()),
            field(p, &pd.text).and_then(|x| x.as_str()),
        ) else {
            continue;
        };
        if let Some(i) = text.find(ph).filter(|_| !ph.is_empty()) {
            text.replace_range(i..i + ph.len(), t);
        }
    }
    text
}

/// The entries of a `prefixed-lines` record: runs of lines that start with the
/// prefix, the prefix taken off, joined with `\n`.
fn prefixed_entries(lines: &[String], def: &RecordDef) -> Vec<String> {
    let prefix = def.line_prefix.as_deref().unwrap_or("");
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for l in lines {
        match (l.strip_prefix(prefix), cur.as_mut()) {
            (Some(t), Some(c)) => {
                c.push('\n');
                c.push_str(t);
            }
            (Some(t), None) => cur = Some(t.to_string()),
            (None, _) => out.extend(cur.take()),
        }
    }
    out.extend(cur);
    out.into_iter()
        .map(|t| match def.unwrap.as_deref().map(regex::Regex::new) {
            Some(Ok(re)) => re.replace_all(&t, "$text").into_owned(),
            _ => t,
        })
        .collect()
}

fn field<'a>(v: &'a serde_json::Value, dotted: &str) -> Option<&'a serde_json::Value> {
    dotted.split('.').try_fold(v, |v, k| v.get(k))
}

/// The lines appended to `path` after byte `since` (complete lines only; the
/// whole file when it shrank: it was rewritten).
fn tail_lines(files: &crate::files::Files, path: &Path, since: u64) -> Vec<String> {
    let Some(buf) = files.read_from(path, since) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&buf);
    let complete = text.rfind('\n').map_or("", |i| &text[..i]);
    complete.lines().map(str::to_string).collect()
}

fn read_array(files: &crate::files::Files, path: &Path) -> Vec<serde_json::Value> {
    files
        .read(path)
        .and_then(|b| serde_json::from_slice::<Vec<serde_json::Value>>(&b).ok())
        .unwrap_or_default()
}

/// Size (jsonl) or entry count (json-array) of `path` now.
fn count(files: &crate::files::Files, def: &RecordDef, path: &Path) -> u64 {
    match def.format {
        RecordFormat::Jsonl | RecordFormat::PrefixedLines => files.len(path).unwrap_or(0),
        RecordFormat::JsonArray => read_array(files, path).len() as u64,
    }
}

/// The files a pattern names: itself, or, with a `*` in some of its components
/// (`sessions/*/*/*/rollout-*.jsonl`), every file that matches, newest first
/// (the newest directory first at each level).
fn matching(files: &crate::files::Files, pattern: &Path) -> Vec<PathBuf> {
    let comps: Vec<String> = pattern
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let Some(first_glob) = comps.iter().position(|c| c.contains('*')) else {
        return vec![pattern.to_path_buf()];
    };
    let mut found = vec![comps[..first_glob].iter().collect::<PathBuf>()];
    for c in &comps[first_glob..] {
        found = match c.split_once('*') {
            None => found.into_iter().map(|d| d.join(c)).collect(),
            Some((pre, post)) => found
                .iter()
                // a handful of the newest at each level is plenty
                .flat_map(|d| files.list(d, pre, post).into_iter().take(8))
                .collect(),
        };
    }
    found
}

/// `path` with `~`, `{cwd}`, `{cwd_dashed}`, `{cwd_name}` and `{env:NAME|fallback}`
/// filled in from the agent's environment and directory.
pub fn expand(
    path: &str,
    env: &BTreeMap<String, String>,
    cwd: &Path,
) -> std::result::Result<PathBuf, String> {
    let home = env.get("HOME").cloned().unwrap_or_default();
    let cwd_s = cwd.display().to_string();
    let dashed: String = cwd_s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let name = cwd
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = String::new();
    let mut rest = path;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let j = rest[i..]
            .find('}')
            .ok_or_else(|| format!("record path {path:?}: an unclosed {{"))?;
        let key = &rest[i + 1..i + j];
        let value = match key {
            "cwd" => cwd_s.clone(),
            "cwd_dashed" => dashed.clone(),
            "cwd_name" => name.clone(),
            k if k.starts_with("env:") => {
                let (var, fallback) = k[4..].split_once('|').unwrap_or((&k[4..], ""));
                env.get(var)
                    .filter(|v| !v.is_empty())
                    .cloned()
                    .unwrap_or_else(|| fallback.to_string())
            }
            k => return Err(format!("record path {path:?}: unknown {{{k}}}")),
        };
        out.push_str(&value);
        rest = &rest[i + j + 1..];
    }
    out.push_str(rest);
    let out = if out == "~" {
        home.clone()
    } else if let Some(r) = out.strip_prefix("~/") {
        if home.is_empty() {
            return Err("the agent has no HOME".into());
        }
        format!("{home}/{r}")
    } else {
        out
    };
    Ok(PathBuf::from(out))
}

/// The agent's own process under the pane: the first whose name its profile lists.
/// The agent's own process under the pane: the first whose name its profile
/// lists, in `procs` or (when that is empty) in a fresh walk of `/proc`.
fn agent_process(profile: &Profile, pane_pid: u32, procs: &[Proc]) -> Option<Proc> {
    let id = &profile.def.identify;
    let walked;
    let procs = if procs.is_empty() {
        walked = process_tree(pane_pid);
        &walked
    } else {
        procs
    };
    procs
        .iter()
        .find(|p| {
            id.processes
                .iter()
                .chain(id.commands.iter())
                .any(|n| crate::identify::proc_matches(p, n))
        })
        .cloned()
}

/// SHA-256 of `data`, lower-case hex.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(text: &str) -> RecordDef {
        RecordDef {
            path: "~/x.jsonl".into(),
            format: RecordFormat::Jsonl,
            text: text.into(),
            filter: BTreeMap::from([("type".into(), "user".into())]),
            tab_width: Some(4),
            trims_trailing: true,
            unwrap: None,
            parts: None,
            file_ref: None,
            line_prefix: None,
            input_history: false,
            wait_ms: 10,
            startup_wait_ms: None,
        }
    }

    /// The claude profile's `unwrap`.
    const CLAUDE_UNWRAP: &str = r#"(?:\n\n)?<pasted_content id="[^"]*">\n(?P<text>(?s:.*?))\n</pasted_content id="[^"]*">\n?"#;

    #[test]
    fn the_claude_profile_unwraps_as_tested() {
        let p = crate::profile::Profiles::builtin();
        let d = p.get("claude").unwrap().def.record.clone().unwrap();
        assert_eq!(d.unwrap.as_deref(), Some(CLAUDE_UNWRAP));
    }

    #[test]
    fn paths_expand_from_the_agents_environment() {
        let env = BTreeMap::from([
            ("HOME".to_string(), "/home/u".to_string()),
            ("CODEX_HOME".to_string(), "/c".to_string()),
        ]);
        let cwd = Path::new("/home/u/my.proj");
        let e = |p: &str| expand(p, &env, cwd).unwrap().display().to_string();
        assert_eq!(
            e("~/.claude/projects/{cwd_dashed}/*.jsonl"),
            "/home/u/.claude/projects/-home-u-my-proj/*.jsonl"
        );
        assert_eq!(
            e("{env:CODEX_HOME|~/.codex}/history.jsonl"),
            "/c/history.jsonl"
        );
        assert_eq!(
            e("{env:NOPE|~/.codex}/history.jsonl"),
            "/home/u/.codex/history.jsonl"
        );
        assert_eq!(
            e("~/.gemini/tmp/{cwd_name}/logs.json"),
            "/home/u/.gemini/tmp/my.proj/logs.json"
        );
        assert!(expand("{bogus}", &env, cwd).is_err());
    }

    #[test]
    fn entries_are_read_from_their_field_and_filtered() {
        let d = def("message.content");
        let v: serde_json::Value = serde_json::from_str(
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]}}"#,
        )
        .unwrap();
        assert_eq!(entry_text(&d, &v).as_deref(), Some("ab"));
        let v: serde_json::Value =
            serde_json::from_str(r#"{"type":"assistant","message":{"content":"x"}}"#).unwrap();
        assert_eq!(entry_text(&d, &v), None);
        // Claude 2.1.332 wraps a paste (after any typed text)
        let d = RecordDef {
            unwrap: Some(CLAUDE_UNWRAP.into()),
            ..def("message.content")
        };
        let v = serde_json::json!({"type": "user", "message": {"content":
            "typed first\n\n<pasted_content id=\"490f\">\nline one\nline two\n</pasted_content id=\"490f\">\n"}});
        assert_eq!(
            entry_text(&d, &v).as_deref(),
            Some("typed firstline one\nline two")
        );
    }

    #[test]
    fn judged_exact_differs_or_absent() {
        let d = def("text");
        assert_eq!(judge(&d, "a\tb", &["a    b".into()]).matched, "exact");
        assert_eq!(judge(&d, "a b  ", &["a b".into()]).matched, "exact");
        let p = judge(&d, "hello world", &["hello wor".into()]);
        assert_eq!(p.matched, "differs");
        assert_eq!(p.first_difference, Some(9));
        assert_eq!((p.body_len, p.record_len), (Some(11), Some(9)));
        let p = judge(&d, "abcdef", &["abXdef".into()]);
        assert_eq!(p.first_difference, Some(2));
        assert_eq!(judge(&d, "x", &[]).matched, "absent");
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_prefixed_lines_record_is_read_by_entry() {
        // Aider 0.86.2's .aider.input.history (prompt_toolkit FileHistory)
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join(".aider.input.history");
        std::fs::write(&f, "\n# 2026-12-02 13:50:10.426558\n+n\n").unwrap();
        let d = RecordDef {
            path: f.display().to_string(),
            format: RecordFormat::PrefixedLines,
            line_prefix: Some("+".into()),
            filter: BTreeMap::new(),
            tab_width: None,
            ..def("")
        };
        let m = Mark {
            before: BTreeMap::from([(f.clone(), std::fs::metadata(&f).unwrap().len())]),
            files: crate::files::Files::Local,
            wait: Duration::from_millis(10),
            pattern: f.clone(),
            def: d.clone(),
        };
        use std::io::Write;
        let mut w = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
        write!(
            w,
            "\n# 2026-12-02 13:50:15.648462\n+three lines\n+\tsecond\n++third\n"
        )
        .unwrap();
        assert_eq!(
            m.appended().1,
            vec!["three lines\n\tsecond\n+third".to_string()]
        );
        assert_eq!(m.prove("three lines\n\tsecond\n+third").matched, "exact");
        write!(w, "\n# 2026-12-02 13:50:16\n+next\n").unwrap();
        assert_eq!(m.appended().1.len(), 2);
    }

    #[test]
    fn a_jsonl_record_is_tailed_from_the_mark() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.jsonl");
        std::fs::write(&f, "{\"type\":\"user\",\"text\":\"old\"}\n").unwrap();
        let d = RecordDef {
            path: f.display().to_string(),
            ..def("text")
        };
        let m = Mark {
            before: BTreeMap::from([(f.clone(), std::fs::metadata(&f).unwrap().len())]),
            files: crate::files::Files::Local,
            wait: Duration::from_millis(10),
            pattern: f.clone(),
            def: d,
        };
        use std::io::Write;
        let mut w = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
        writeln!(w, "{{\"type\":\"user\",\"text\":\"new one\"}}").unwrap();
        write!(w, "{{\"type\":\"user\",\"text\":\"half a li").unwrap();
        assert_eq!(m.prove("new one").matched, "exact");
    }

    #[test]
    fn pasted_parts_are_put_back_where_their_placeholders_stand() {
        // OpenCode 1.18.33's prompt-history.jsonl after typed text and a 4-line paste
        let line = r#"{"input":"hello there[Pasted ~4 lines] ","parts":[{"type":"text","text":"line one\nline two\n\nline four","source":{"text":{"start":11,"end":28,"value":"[Pasted ~4 lines]"}}}],"mode":"normal"}"#;
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let d = RecordDef {
            filter: BTreeMap::new(),
            parts: Some(PartsDef {
                field: "parts".into(),
                placeholder: "source.text.value".into(),
                text: "text".into(),
            }),
            ..def("input")
        };
        let got = entry_text(&d, &v).unwrap();
        assert_eq!(got, "hello thereline one\nline two\n\nline four ");
        assert_eq!(
            judge(&d, "hello thereline one\nline two\n\nline four", &[got]).matched,
            "exact"
        );
        // no parts: the input as it is
        let v: serde_json::Value =
            serde_json::from_str(r#"{"input":"one line","parts":[],"mode":"normal"}"#).unwrap();
        assert_eq!(entry_text(&d, &v).unwrap(), "one line");
    }

    #[test]
    fn a_star_in_a_directory_matches_every_directory() {
        let dir = tempfile::tempdir().unwrap();
        for (s, body) in [("a", "x"), ("b", "y")] {
            std::fs::create_dir_all(dir.path().join("state").join(s)).unwrap();
            std::fs::write(dir.path().join("state").join(s).join("events.jsonl"), body).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("state/c")).unwrap();
        let got: Vec<PathBuf> = matching(
            &crate::files::Files::Local,
            &dir.path().join("state/*/events.jsonl"),
        )
        .into_iter()
        .filter(|p| p.exists())
        .collect();
        let mut names: Vec<String> = got
            .iter()
            .map(|p| {
                p.parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        assert_eq!(names, vec!["a", "b"]);
    }

    #[test]
    fn a_file_reference_is_read_from_under_the_records_directory() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("session-state/abc");
        std::fs::create_dir_all(session.join("files")).unwrap();
        let paste = session.join("files/paste-1.txt");
        std::fs::write(&paste, "line one\nline two").unwrap();
        let record = session.join("events.jsonl");
        let d = RecordDef {
            file_ref: Some(r#"<pasted_content file="(?P<path>[^"]+)"[^>]*/>"#.into()),
            ..def("text")
        };
        let t = format!(
            "see <pasted_content file=\"{}\" size=\"20.1 KB\" lines=\"2\" />",
            paste.display()
        );
        let local = crate::files::Files::Local;
        assert_eq!(
            put_back_files(&local, &d, &record, t),
            "see line one\nline two"
        );
        // outside the record's directory: left as it is
        let other = dir.path().join("secret.txt");
        std::fs::write(&other, "no").unwrap();
        let t = format!("<pasted_content file=\"{}\" />", other.display());
        assert_eq!(put_back_files(&local, &d, &record, t.clone()), t);
    }
}
