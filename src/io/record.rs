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

use crate::core::profile::Profile;
use crate::core::screen::Proc;
use crate::io::proc::process_tree;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use crate::core::profile::record::{
    PartsDef, RecordDef, RecordFormat, SessionDef, StatusDef, StatusFormat,
};

/// One agent's status file, found once per gate and read at every look.
#[derive(Debug, Clone)]
pub struct StatusFile {
    pub path: PathBuf,
    def: StatusDef,
    /// When the agent process started (ms since the epoch): a `jsonl` entry
    /// older than that is a session it resumed, not its own turn.
    started_ms: Option<u64>,
}

/// How much of the end of a `jsonl` status log is read for its last turn event.
const STATUS_TAIL: u64 = 256 * 1024;

/// The status file of the agent under `pane_pid`, where its profile names one
/// and it exists (a local agent, a release that keeps one). `procs`: the
/// processes under the pane when the caller has walked `/proc` already.
pub fn status_file(profile: &Profile, pane_pid: Option<u32>, procs: &[Proc]) -> Option<StatusFile> {
    let def = profile.def.status.as_ref()?;
    if crate::io::tmux::is_remote() {
        return None;
    }
    let agent = agent_process(profile, pane_pid?, procs)?;
    let env = crate::io::files::Files::Local.environ(agent.pid)?;
    let cwd = std::fs::read_link(format!("/proc/{}/cwd", agent.pid)).ok()?;
    let path = expand(
        &def.path.replace("{pid}", &agent.pid.to_string()),
        &env,
        &cwd,
    )
    .ok()?;
    // a pattern: the one file that matches which the agent holds open (another
    // session's log, or none yet, says nothing of this one)
    let path = if path.to_string_lossy().contains('*') {
        match open_files(pane_pid?, &path).as_slice() {
            [one] => one.clone(),
            _ => return None,
        }
    } else {
        path
    };
    // only where an entry's time is compared with it
    let started_ms = def.time.as_ref().and_then(|_| {
        let age = crate::io::proc::process_age(agent.pid)?;
        Some((crate::io::tmux::now_ms() as u64).saturating_sub(age.as_millis() as u64))
    });
    path.is_file().then(|| StatusFile {
        path,
        def: def.clone(),
        started_ms,
    })
}

impl StatusFile {
    /// The status now (`None`: unreadable, or a log with no turn event of this
    /// process).
    pub fn read(&self) -> Option<String> {
        match self.def.format {
            StatusFormat::Json => {
                // a regular file, not through a link, bounded (a FIFO there
                // would hold every look of the gate)
                let raw = read_regular(&crate::io::files::Files::Local, &self.path)?;
                let v: serde_json::Value = serde_json::from_slice(&raw).ok()?;
                field(&v, &self.def.field)?.as_str().map(str::to_string)
            }
            // the log's last complete lines, read as a record is (a regular file)
            StatusFormat::Jsonl => {
                let files = crate::io::files::Files::Local;
                let since = files.len(&self.path)?.saturating_sub(STATUS_TAIL);
                let lines = tail_lines(&files, &self.path, since).ok()?;
                last_status(&self.def, &lines, self.started_ms)
            }
        }
    }
}

/// The state the last turn event of a `jsonl` status log says (see
/// [`StatusDef`]); an entry older than `started_ms` (a resumed session's) says
/// nothing. A first line cut by the tail read does not parse and is passed over.
fn last_status(def: &StatusDef, lines: &[String], started_ms: Option<u64>) -> Option<String> {
    let known = |s: &str| {
        def.busy.iter().any(|b| b == s)
            || def.waiting.iter().any(|w| w == s)
            || def.idle.iter().any(|i| i == s)
    };
    for line in lines.iter().rev() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(st) = field(&v, &def.field).and_then(|f| f.as_str()) else {
            continue;
        };
        if !passes(&def.filter, &v) || !known(st) {
            continue;
        }
        let at = def.time.as_ref().and_then(|t| {
            field(&v, t)?
                .as_str()
                .and_then(crate::core::text::rfc3339_ms)
        });
        if let (Some(at), Some(start)) = (at, started_ms) {
            // a second of slack: the clocks of the entry and of /proc agree only so far
            if at + 1000 < start {
                return None;
            }
        }
        return Some(st.to_string());
    }
    None
}

/// What the agent's own record says about one send (the receipt's `proof`).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Proof {
    /// `transcript` (the agent's record), `history` (its input history, written
    /// sooner: `[record] history`), `hook` (its hook event) or `screen` (no
    /// record could be read).
    pub source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `exact` (byte for byte), `exact-but-whitespace` (equal once the agent's
    /// known way of storing whitespace is allowed for; `whitespace` says what
    /// differed), `mangled` (this send's entry holds other text; `diff`),
    /// `not-yet` (new entries, none of them this send's: it may come late),
    /// `absent` (no entry in time), `unreadable` (`error`); `none` for `screen`.
    #[serde(rename = "match")]
    pub matched: &'static str,
    /// How the record file is known to be this agent process's: `path` (the
    /// profile names one file), `registry` (the agent's session registry names
    /// it), `open-file` (the agent process holds it open), `unproven` (the
    /// newest files that match: an entry there proves only an exact body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<&'static str>,
    /// SHA-256 of the body as sent.
    pub sha256: String,
    /// Why there is no record (`source: screen`), or more about the match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// `unreadable`: the error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `exact-but-whitespace`: what differed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whitespace: Option<String>,
    /// `mangled`: the first byte where the record and the body part, and both lengths.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_len: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_len: Option<usize>,
    /// `mangled`: the text around the first difference, as sent and as recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<Diff>,
    /// `not-yet` (and an `unproven` `absent`): how many new entries were not this send's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_entries: Option<usize>,
    /// How long after the submit the entry was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<u64>,
    /// `history`: the agent's record file (its transcript) this session
    /// writes, where its turn and its reply are read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
}

/// Where a mangled entry parts from the body: up to 40 bytes either side of
/// the first difference (on character boundaries), as sent and as recorded.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Diff {
    pub sent: String,
    pub recorded: String,
}

/// Does a `match` value say the agent recorded the body (byte for byte, or
/// but for whitespace it is known to store its own way)?
pub fn is_exact(matched: &str) -> bool {
    matched == "exact" || matched == "exact-but-whitespace"
}

impl Proof {
    fn new(source: &'static str, body: &str) -> Proof {
        Proof {
            source,
            path: None,
            matched: "absent",
            owner: None,
            sha256: sha256_hex(body.as_bytes()),
            why: None,
            error: None,
            whitespace: None,
            first_difference: None,
            body_len: None,
            record_len: None,
            diff: None,
            other_entries: None,
            waited_ms: None,
            record: None,
        }
    }

    pub fn screen(body: &str, why: &str) -> Proof {
        Proof {
            matched: "none",
            why: Some(why.to_string()),
            ..Proof::new("screen", body)
        }
    }

    /// Is the record this proof read known to be this agent process's own?
    pub fn owner_proven(&self) -> bool {
        matches!(self.source, "transcript" | "history")
            && self.owner.is_some_and(|o| o != "unproven")
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
        let path = crate::io::hooks::event_file(server_key, pane);
        let since = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        HookMark { path, since }
    }

    /// The end-of-turn event (`Stop`, `AfterAgent`) since the mark, as `hook EVENT`.
    pub fn turn_end(&self) -> Option<String> {
        crate::io::hooks::events_since(&self.path, self.since)
            .iter()
            .find(|e| crate::io::hooks::is_turn_end_event(e))
            .map(|e| format!("hook {}", e["event"].as_str().unwrap_or("")))
    }

    /// How many end-of-turn events came since the mark; the mark moves past
    /// them (the plugin's watcher counts each turn's end once, however short
    /// the turn, even between two of its looks).
    pub fn take_turn_ends(&mut self) -> usize {
        let (events, end) = crate::io::hooks::events_from(&self.path, self.since);
        self.since = end;
        events
            .iter()
            .filter(|e| crate::io::hooks::is_turn_end_event(e))
            .count()
    }

    /// A prompt event since the mark whose prompt is the body: proof.
    pub fn prove(&self, def: Option<&RecordDef>, body: &str) -> Option<Proof> {
        let events = crate::io::hooks::events_since(&self.path, self.since);
        let prompts: Vec<String> = events
            .iter()
            .filter(|e| crate::io::hooks::is_prompt_event(e))
            .filter_map(|e| e["prompt"].as_str().map(str::to_string))
            .collect();
        let plain = RecordDef::plain();
        let p = judge(def.unwrap_or(&plain), body, &prompts, true);
        is_exact(p.matched).then(|| Proof {
            source: "hook",
            path: Some(self.path.display().to_string()),
            owner: None,
            waited_ms: Some(0),
            ..p
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
    /// `before` lists every file that matched at the mark: a file not in it is
    /// new, all of it written after the mark (false over ssh when a directory
    /// held more than the 8 newest listed: a file not in it is then not read).
    complete: bool,
    /// This machine, or tmux's through its ssh.
    files: crate::io::files::Files,
    /// How long to wait for the entry after the submit.
    wait: Duration,
    /// Who writes the record: the pane's and the agent's process ids, the
    /// agent's environment and directory (for its session registry).
    who: Option<Who>,
    /// The agent's input history (`[record] history`), marked beside the
    /// record: it may hold the body sooner.
    sooner: Option<Box<Mark>>,
}

#[derive(Debug, Clone)]
struct Who {
    pane_pid: u32,
    agent_pid: u32,
    env: BTreeMap<String, String>,
    cwd: PathBuf,
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
    let files = crate::io::files::Files::of_tmux();
    let pane_pid = pane_pid.ok_or("tmux named no pane process")?;
    let walked = files.process_tree(pane_pid);
    let Place {
        agent,
        env,
        cwd,
        pattern,
    } = place(&files, profile, pane_pid, &walked, &def.path)?;
    // An agent that keeps no record here is not waited for after every send:
    // some directory of the record's, below HOME, must exist already (the
    // agent's own, such as ~/.claude, made at its start).
    let home = env.get("HOME").map(PathBuf::from).unwrap_or_default();
    let dirs: Vec<&Path> = pattern
        .ancestors()
        .skip(1)
        .take_while(|d| *d != home && d.parent().is_some())
        .collect();
    let kept = files.any_dir(&dirs);
    if !kept {
        return Err(format!("no record at {}", pattern.display()));
    }
    // a young agent may record a prompt only once its start-up is over
    let young = !files.is_remote()
        && crate::io::proc::process_age(agent.pid).is_some_and(|a| a < Duration::from_secs(60));
    let wait = Duration::from_millis(match def.startup_wait_ms {
        Some(ms) if young => ms.max(def.wait_ms),
        _ => def.wait_ms,
    });
    let who = Who {
        pane_pid,
        agent_pid: agent.pid,
        env,
        cwd,
    };
    let history = def
        .history
        .as_deref()
        .and_then(|h| history_def(h, &def, &files, &who));
    let mut m = Mark::new(def, pattern, files.clone(), wait, Some(who));
    m.sooner = history.map(|(h, path)| Box::new(Mark::new(h, path, files, wait, None)));
    Ok(m)
}

/// The record's input history (`[record] history`) for this agent process: its
/// definition with `{session}` filled in from the record's session registry,
/// and its one file. `None` when the session is not known or the path names
/// no single file.
fn history_def(
    h: &RecordDef,
    record: &RecordDef,
    files: &crate::io::files::Files,
    who: &Who,
) -> Option<(RecordDef, PathBuf)> {
    let path = expand(&h.path, &who.env, &who.cwd).ok()?;
    if path.to_string_lossy().contains('*') {
        return None;
    }
    let mut h = h.clone();
    h.history = None;
    if h.filter_names_session() {
        let id = session_id(files, record.session.as_ref()?, who)?;
        for v in h.filter.values_mut() {
            *v = v.replace("{session}", &id);
        }
    }
    Some((h, path))
}

/// The session id the agent's session registry names (`[record] session`), if
/// it is one a file name can hold.
fn session_id(files: &crate::io::files::Files, s: &SessionDef, who: &Who) -> Option<String> {
    let reg = expand(
        &s.registry.replace("{pid}", &who.agent_pid.to_string()),
        &who.env,
        &who.cwd,
    )
    .ok()?;
    let raw = read_regular(files, &reg)?;
    let v: serde_json::Value = serde_json::from_slice(&raw).ok()?;
    let id = field(&v, &s.field)?.as_str()?;
    let safe = !id.is_empty()
        && id.len() <= 200
        && !id.contains(['/', '\\', '\0', '*', '{', '}'])
        && id != "."
        && id != "..";
    safe.then(|| id.to_string())
}

/// What a [`Mark`] saw, kept on disk by the queue beside an item while it is
/// typed: after a crash, the recovery reads the record as of then
/// ([`Mark::as_of`]) before it presses anything.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SavedMark {
    /// Each file's size (jsonl) or entry count (json-array) at the mark.
    pub sizes: BTreeMap<PathBuf, u64>,
    /// Whether `sizes` lists every file that matched.
    pub complete: bool,
}

impl Mark {
    /// What this mark saw, to be kept ([`SavedMark`]).
    pub fn saved(&self) -> SavedMark {
        SavedMark {
            sizes: self.before.clone(),
            complete: self.complete,
        }
    }

    /// The same record read as of an earlier mark (`saved`), waiting at most
    /// `wait` for the body: the queue's recovery of an item a crashed watcher
    /// was typing asks the record whether the agent took it.
    pub fn as_of(mut self, saved: &SavedMark, wait: Duration) -> Mark {
        self.before = saved.sizes.clone();
        self.complete = saved.complete;
        self.wait = wait;
        self
    }

    /// Mark `pattern` now: the size of every file that matches (locally; over
    /// ssh of the newest 8 at each level), and of the files this agent is
    /// known to own.
    fn new(
        def: RecordDef,
        pattern: PathBuf,
        files: crate::io::files::Files,
        wait: Duration,
        who: Option<Who>,
    ) -> Mark {
        let each = if files.is_remote() { 8 } else { usize::MAX };
        let mut m = Mark {
            def,
            pattern,
            before: BTreeMap::new(),
            complete: true,
            files,
            wait,
            who,
            sooner: None,
        };
        let (listed, cut) = matching_all(&m.files, &m.pattern, each);
        m.complete = !cut;
        let (owned, _) = m.owned();
        let mut all: Vec<PathBuf> = listed.into_iter().chain(owned).collect();
        all.dedup();
        match m.def.format {
            // sizes: over ssh one round trip for all of them
            RecordFormat::Jsonl | RecordFormat::PrefixedLines => {
                let lens = m.files.lens(&all);
                for (p, n) in all.into_iter().zip(lens) {
                    m.before.insert(p, n.unwrap_or(0));
                }
            }
            RecordFormat::JsonArray => {
                for p in all {
                    let n = count(&m.files, &m.def, &p);
                    m.before.insert(p, n);
                }
            }
        }
        m
    }

    /// Wait (at most the profile's `wait_ms`) for what the agent appended after
    /// the mark, and judge it against `body` (the text as sent).
    pub fn prove(&self, body: &str) -> Proof {
        self.prove_unless(body, &std::sync::atomic::AtomicBool::new(false))
    }

    /// [`prove`](Self::prove), giving up at the next look once `stop` is set
    /// (the receipt turned out to need no proof).
    pub fn prove_unless(&self, body: &str, stop: &std::sync::atomic::AtomicBool) -> Proof {
        let start = Instant::now();
        let deadline = start + self.wait;
        // A record known to be this agent's that has no entry for this send by
        // the deadline makes the receipt `unproven`: before saying so, give a
        // slow agent (a loaded machine; Claude Code writes its transcript
        // behind the screen) at least 3 s in all.
        let grace = start + self.wait.max(Duration::from_secs(3));
        // whether this body repeats the record's newest entry: asked once (it
        // reads the whole record), at the first look that finds nothing new
        let mut repeat: Option<bool> = None;
        loop {
            let now = Instant::now();
            // the input history, written sooner, proves the body when it holds
            // it; a history rewritten shorter since the mark proves nothing (its
            // older entries would be read again as new): asked only of a find
            if let Some((h, mut p)) = self.sooner.as_ref().map(|h| (h, h.look(body))) {
                if is_exact(p.matched) && h.only_appended() {
                    p.source = "history";
                    // its entries are this session's when its filter names it
                    let by_session = self
                        .def
                        .history
                        .as_ref()
                        .is_some_and(|d| d.filter_names_session());
                    p.owner = Some(if by_session { "registry" } else { "path" });
                    p.record = self
                        .who
                        .as_ref()
                        .and_then(|w| self.registry_file(w))
                        .map(|f| f.display().to_string());
                    p.waited_ms = Some(start.elapsed().as_millis() as u64);
                    return p;
                }
            }
            let mut p = self.look(body);
            // an agent that skips a prompt equal to its newest entry: that entry
            // is this send's body, so nothing will come (the screen decides)
            if p.matched == "absent"
                && p.other_entries.is_none()
                && *repeat.get_or_insert_with(|| self.repeats(body))
            {
                p.matched = "repeat";
                p.why = Some(
                    "the agent records a prompt sent again right after itself only once: \
                     its newest entry is this body, the record cannot tell this send"
                        .into(),
                );
                p.waited_ms = Some(start.elapsed().as_millis() as u64);
                return p;
            }
            let late = matches!(p.matched, "absent" | "not-yet") && p.owner_proven();
            let done = now >= deadline && (!late || now >= grace);
            // an entry that is not (yet) the body may be half written (a plain
            // text record has no end mark): look again until the deadline
            let stopped = stop.load(std::sync::atomic::Ordering::SeqCst);
            if is_exact(p.matched) || done || stopped {
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

    /// No file marked has shrunk since the mark (a jsonl record is appended
    /// to; one that shrank was rewritten).
    fn only_appended(&self) -> bool {
        match self.def.format {
            RecordFormat::JsonArray => true,
            _ => self
                .before
                .iter()
                .all(|(p, n)| self.files.len(p).is_none_or(|now| now >= *n)),
        }
    }

    /// `[record] skips_repeat`: is the newest entry of the agent's own record,
    /// with nothing appended since the mark, this body?
    fn repeats(&self, body: &str) -> bool {
        if !self.def.skips_repeat {
            return false;
        }
        let (owned, owner) = self.owned();
        if owner == "unproven" {
            return false;
        }
        owned.iter().any(|p| {
            // unchanged since the mark (a size, or an array's length)
            let now = match self.def.format {
                RecordFormat::JsonArray => Some(count(&self.files, &self.def, p)),
                _ => self.files.len(p),
            };
            let newest = || self.appended(p, 0).ok().and_then(|all| all.last().cloned());
            self.before.get(p).is_some_and(|n| now == Some(*n))
                && newest()
                    .is_some_and(|last| is_exact(judge(&self.def, body, &[last], true).matched))
        })
    }

    /// One look at the record: the files this agent owns when that is known
    /// (only they can prove a `mangled`), else the newest that match.
    fn look(&self, body: &str) -> Proof {
        let (owned, owner) = self.owned();
        let proven = owner != "unproven";
        let candidates = if proven {
            owned
        } else {
            matching(&self.files, &self.pattern, 8)
        };
        let mut first_error: Option<(PathBuf, String)> = None;
        let mut all: Vec<String> = Vec::new();
        let mut grew: Option<PathBuf> = None;
        for p in &candidates {
            let since = match self.before.get(p) {
                Some(n) => *n,
                // not there at the mark: new, unless the mark could not list all
                None if self.complete => 0,
                None => continue,
            };
            match self.appended(p, since) {
                Ok(texts) if texts.is_empty() => {}
                Ok(texts) => {
                    let mut j = judge(&self.def, body, &texts, proven);
                    if is_exact(j.matched) {
                        j.path = Some(p.display().to_string());
                        j.owner = Some(owner);
                        if !proven {
                            // the agent may have made the file (its first prompt's
                            // record) after `owned` looked: ask again
                            let (now, by) = self.owned();
                            if now.contains(p) {
                                j.owner = Some(by);
                            }
                        }
                        return j;
                    }
                    grew.get_or_insert_with(|| p.clone());
                    all.extend(texts);
                }
                Err(e) => {
                    first_error.get_or_insert((p.clone(), e));
                }
            }
        }
        let mut j = judge(&self.def, body, &all, proven);
        j.owner = Some(owner);
        if j.matched == "absent" && all.is_empty() {
            if let Some((p, e)) = first_error.filter(|_| proven) {
                j.matched = "unreadable";
                j.error = Some(e);
                grew = Some(p);
            }
        }
        if !proven && !all.is_empty() {
            j.why = Some(format!(
                "{} new entries, none the body, in files not known to be this agent's",
                all.len()
            ));
        }
        let path = grew
            .or_else(|| candidates.first().cloned().filter(|_| proven))
            .unwrap_or_else(|| self.pattern.clone());
        j.path = Some(path.display().to_string());
        j
    }

    /// The record files this agent process writes, and how that is known:
    /// `path` (the profile names one file), `registry` (its session registry
    /// names its session), `open-file` (a process in the pane holds it open),
    /// else `unproven` (none known).
    fn owned(&self) -> (Vec<PathBuf>, &'static str) {
        if !self.pattern.to_string_lossy().contains('*') {
            return (vec![self.pattern.clone()], "path");
        }
        let Some(who) = &self.who else {
            return (Vec::new(), "unproven");
        };
        if let Some(p) = self.registry_file(who) {
            return (vec![p], "registry");
        }
        if !self.files.is_remote() {
            let open = open_files(who.pane_pid, &self.pattern);
            if !open.is_empty() {
                return (open, "open-file");
            }
        }
        (Vec::new(), "unproven")
    }

    /// The file the agent's session registry names (`[record] session`).
    fn registry_file(&self, who: &Who) -> Option<PathBuf> {
        let s = self.def.session.as_ref()?;
        let id = session_id(&self.files, s, who)?;
        expand(&s.file.replace("{session}", &id), &who.env, &who.cwd).ok()
    }

    /// The texts appended to `path` since `since` (bytes or entries), in order;
    /// `Err`: it could not be read (the error), or is not a regular file.
    fn appended(&self, p: &Path, since: u64) -> std::result::Result<Vec<String>, String> {
        Ok(match self.def.format {
            RecordFormat::Jsonl => tail_lines(&self.files, p, since)?
                .into_iter()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
                .filter_map(|v| self.text_of(p, &v))
                .collect(),
            RecordFormat::JsonArray => read_array(&self.files, p)?
                .into_iter()
                .skip(since as usize)
                .filter_map(|v| self.text_of(p, &v))
                .collect(),
            RecordFormat::PrefixedLines => {
                prefixed_entries(&tail_lines(&self.files, p, since)?, &self.def)
            }
        })
    }
}

impl Mark {
    /// The prompt an entry of the record file `p` holds, its pasted text and
    /// file references put back.
    fn text_of(&self, p: &Path, v: &serde_json::Value) -> Option<String> {
        let t = entry_text(&self.def, v)?;
        let t = match &self.def.pasted {
            Some(pd) => put_back_pasted(&self.files, pd, p, v, t),
            None => t,
        };
        Some(put_back_files(&self.files, &self.def, p, t))
    }
}

/// Each placeholder of a paste kept by id (`[record] pasted`) replaced by the
/// part's text, inline or from its file under the record's directory; a
/// placeholder whose part is missing or unreadable is left as it is.
fn put_back_pasted(
    files: &crate::io::files::Files,
    pd: &crate::core::profile::record::PastedDef,
    record: &Path,
    v: &serde_json::Value,
    text: String,
) -> String {
    let Ok(re) = regex_of(&pd.pattern) else {
        return text;
    };
    let parts: Vec<&serde_json::Value> = match field(v, &pd.field) {
        Some(serde_json::Value::Object(m)) => m.values().collect(),
        Some(serde_json::Value::Array(a)) => a.iter().collect(),
        _ => return text,
    };
    if parts.is_empty() {
        return text;
    }
    let id_of = |p: &serde_json::Value| match field(p, &pd.id)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let from_file = |p: &serde_json::Value| -> Option<String> {
        let name = fill_fields(pd.file.as_deref()?, p)?;
        let dir = record.parent()?;
        let path = dir.join(&name);
        let inside = !Path::new(&name).is_absolute()
            && !Path::new(&name)
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)));
        let raw = inside.then(|| read_regular(files, &path)).flatten()?;
        String::from_utf8(raw).ok()
    };
    re.replace_all(&text, |c: &regex::Captures| {
        let whole = c[0].to_string();
        let Some(id) = c.name("id").map(|m| m.as_str()) else {
            return whole;
        };
        let Some(part) = parts.iter().find(|p| id_of(p).as_deref() == Some(id)) else {
            return whole;
        };
        match field(part, &pd.text).and_then(|t| t.as_str()) {
            Some(t) => t.to_string(),
            None => from_file(part).unwrap_or(whole),
        }
    })
    .into_owned()
}

/// `template` with each `{NAME}` replaced by the part's field NAME, a string of
/// letters, digits, `-` and `_` only.
fn fill_fields(template: &str, part: &serde_json::Value) -> Option<String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let j = rest[i..].find('}')?;
        let v = field(part, &rest[i + 1..i + j])?.as_str()?;
        let ok = !v.is_empty()
            && v.len() <= 200
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            return None;
        }
        out.push_str(v);
        rest = &rest[i + j + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// The files that processes under `pane_pid` hold open and that `pattern`
/// matches (Codex keeps its session rollout open while it runs).
fn open_files(pane_pid: u32, pattern: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for proc in process_tree(pane_pid) {
        let Ok(rd) = std::fs::read_dir(format!("/proc/{}/fd", proc.pid)) else {
            continue;
        };
        for fd in rd.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                if pattern_matches(pattern, &target) && !out.contains(&target) {
                    out.push(target);
                }
            }
        }
    }
    out
}

/// Does `path` match `pattern` (a `*` in a component matches any name)?
fn pattern_matches(pattern: &Path, path: &Path) -> bool {
    let (a, b): (Vec<_>, Vec<_>) = (pattern.components().collect(), path.components().collect());
    a.len() == b.len()
        && a.iter().zip(&b).all(|(p, c)| {
            let (p, c) = (
                p.as_os_str().to_string_lossy(),
                c.as_os_str().to_string_lossy(),
            );
            match p.split_once('*') {
                None => p == c,
                Some((pre, post)) => {
                    c.len() >= pre.len() + post.len() && c.starts_with(pre) && c.ends_with(post)
                }
            }
        })
}

/// Judge the appended entries against the body: `exact` when one of them is
/// the body byte for byte, `exact-but-whitespace` when one is once the agent's
/// way with whitespace (tabs, trailing blanks, per profile) is allowed for;
/// else `mangled` against the last entry that is this send's (one that shares
/// most of its start or end with the body: a late entry of an earlier prompt
/// is not), when the record is this agent's own (`proven`); else `not-yet`
/// when there were other entries, or `absent`.
pub fn judge(def: &RecordDef, body: &str, entries: &[String], proven: bool) -> Proof {
    let mut p = Proof::new("transcript", body);
    if entries.iter().any(|e| e == body) {
        p.matched = "exact";
        return p;
    }
    let want = normalise(def, body);
    if let Some(e) = entries.iter().find(|e| normalise(def, e) == want) {
        p.matched = "exact-but-whitespace";
        p.whitespace = Some(whitespace_difference(body, e));
        return p;
    }
    let ours = entries
        .iter()
        .rev()
        .find(|e| this_sends(&want, &normalise(def, e)));
    match ours {
        Some(last) if proven => {
            let got = normalise(def, last);
            p.matched = "mangled";
            let at = want
                .bytes()
                .zip(got.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(want.len().min(got.len()));
            p.first_difference = Some(at);
            p.body_len = Some(body.len());
            p.record_len = Some(last.len());
            p.diff = Some(Diff {
                sent: around(&want, at),
                recorded: around(&got, at),
            });
            p.other_entries = Some(entries.len() - 1).filter(|n| *n > 0);
        }
        _ if proven && !entries.is_empty() => {
            p.matched = "not-yet";
            p.other_entries = Some(entries.len());
            p.why = Some(format!(
                "{} new entr{} in the record, none this send's (an earlier prompt recorded late?)",
                entries.len(),
                if entries.len() == 1 { "y" } else { "ies" }
            ));
        }
        _ => {
            p.other_entries = Some(entries.len()).filter(|n| *n > 0);
        }
    }
    p
}

/// Is `entry` (normalised) this send's `body` (normalised), mangled? It keeps
/// at least half of the body's bytes as its start and end together (a byte
/// lost or changed leaves the rest in place), or at least half of a sample of
/// its 16-byte pieces (up to 64, evenly spread) are found in the body (whole
/// reads lost on the way in leave the pieces between them); another prompt
/// shares little of either.
fn this_sends(body: &str, entry: &str) -> bool {
    let (a, b) = (body.as_bytes(), entry.as_bytes());
    let n = a.len().min(b.len());
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(n - pre)
        .take_while(|(x, y)| x == y)
        .count();
    if 2 * (pre + suf) >= a.len().max(1) {
        return true;
    }
    const PIECE: usize = 16;
    let pieces = b.len() / PIECE;
    if pieces < 2 {
        return false;
    }
    let sample = pieces.min(64);
    let found = (0..sample)
        .map(|i| i * pieces / sample * PIECE)
        .filter(|&at| {
            let piece = &b[at..at + PIECE];
            a.windows(PIECE).any(|w| w == piece)
        })
        .count();
    2 * found >= sample
}

/// Up to 40 bytes either side of byte `at` of `s`, on character boundaries.
fn around(s: &str, at: usize) -> String {
    let mut from = at.saturating_sub(40).min(s.len());
    while !s.is_char_boundary(from) {
        from -= 1;
    }
    let mut to = (at + 40).min(s.len());
    while !s.is_char_boundary(to) {
        to += 1;
    }
    s[from..to].to_string()
}

/// What differs in whitespace between the body and an entry equal to it once
/// normalised: tabs stored as spaces, blanks added or taken at the end.
fn whitespace_difference(body: &str, entry: &str) -> String {
    let mut out = Vec::new();
    let (bt, et) = (body.matches('\t').count(), entry.matches('\t').count());
    if bt > et {
        out.push(format!("{} tab(s) stored as spaces", bt - et));
    }
    let end = |s: &str| s[s.trim_end().len()..].to_string();
    let (be, ee) = (end(body), end(entry));
    if be != ee {
        out.push(format!(
            "the record ends with {ee:?} where the body ends with {be:?}"
        ));
    }
    if out.is_empty() {
        out.push("whitespace differs".into());
    }
    out.join("; ")
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

/// Does entry `v` have each of `filter`'s fields with its value?
fn passes(filter: &BTreeMap<String, String>, v: &serde_json::Value) -> bool {
    filter
        .iter()
        .all(|(k, want)| field(v, k).and_then(|f| f.as_str()) == Some(want.as_str()))
}

/// The text of one record entry, if it passes the filter.
fn entry_text(def: &RecordDef, v: &serde_json::Value) -> Option<String> {
    if !passes(&def.filter, v) {
        return None;
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
    Some(match def.unwrap.as_deref().map(regex_of) {
        Some(Ok(re)) => re.replace_all(&text, "$text").into_owned(),
        _ => text,
    })
}

/// Each file reference in `text` (the profile's `file_ref`) replaced by the
/// file's text, when the file lies under the directory of `record`.
fn put_back_files(
    files: &crate::io::files::Files,
    def: &RecordDef,
    record: &Path,
    text: String,
) -> String {
    let Some(Ok(re)) = def.file_ref.as_deref().map(regex_of) else {
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
            .then(|| read_regular(files, path))
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
        .map(|t| match def.unwrap.as_deref().map(regex_of) {
            Some(Ok(re)) => re.replace_all(&t, "$text").into_owned(),
            _ => t,
        })
        .collect()
}

/// A profile's regex, compiled once per process (a record may hold thousands of entries).
fn regex_of(src: &str) -> std::result::Result<regex::Regex, regex::Error> {
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<BTreeMap<String, regex::Regex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(re) = cache.lock().ok().and_then(|c| c.get(src).cloned()) {
        return Ok(re);
    }
    let re = regex::Regex::new(src)?;
    if let Ok(mut c) = cache.lock() {
        c.insert(src.to_string(), re.clone());
    }
    Ok(re)
}

fn field<'a>(v: &'a serde_json::Value, dotted: &str) -> Option<&'a serde_json::Value> {
    dotted.split('.').try_fold(v, |v, k| v.get(k))
}

/// The most of a record read at one look: more than this appended during one
/// send is read from its last 64 MiB (a record is never read whole into memory
/// without bound).
const READ_MAX: u64 = 64 << 20;

/// The bytes of `path` from `since` on (from 0 when it shrank: it was
/// rewritten). Locally only a regular file is read, never through a symbolic
/// link (a link in a record directory may point at another session's record),
/// never a FIFO or a device (a read could block).
/// A whole file the agent wrote beside its record (a session registry, a paste
/// it keeps in a file), read as a record is: a regular file, not through a
/// link, bounded; `None` when it is missing, empty or not such a file.
fn read_regular(files: &crate::io::files::Files, path: &Path) -> Option<Vec<u8>> {
    read_tail(files, path, 0).ok().filter(|b| !b.is_empty())
}

fn read_tail(
    files: &crate::io::files::Files,
    path: &Path,
    since: u64,
) -> std::result::Result<Vec<u8>, String> {
    if files.is_remote() {
        return match files.read_from(path, since) {
            Some(b) => Ok(b),
            None if files.len(path).is_none() => Ok(Vec::new()),
            None => Err(format!("{}: could not read it over ssh", path.display())),
        };
    }
    use crate::io::store::Refusal;
    use std::io::{Read, Seek, SeekFrom};
    let mut f = match crate::io::store::open_regular(path) {
        Ok(f) => f,
        Err(Refusal::Missing) => return Ok(Vec::new()),
        Err(Refusal::NotRegular(w)) if w == crate::io::store::A_SYMLINK => {
            return Err(format!(
                "{}: a symbolic link; a record is read only from a regular file",
                path.display()
            ))
        }
        Err(Refusal::NotRegular(w)) => {
            return Err(format!("{}: {w}, not a regular file", path.display()))
        }
        Err(Refusal::Io(e)) => return Err(format!("{}: {e}", path.display())),
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let from = if len < since { 0 } else { since };
    let from = from.max(len.saturating_sub(READ_MAX));
    f.seek(SeekFrom::Start(from))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut buf = Vec::new();
    f.take(READ_MAX)
        .read_to_end(&mut buf)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(buf)
}

/// The lines appended to `path` after byte `since` (complete lines only; the
/// whole file when it shrank: it was rewritten).
fn tail_lines(
    files: &crate::io::files::Files,
    path: &Path,
    since: u64,
) -> std::result::Result<Vec<String>, String> {
    let buf = read_tail(files, path, since)?;
    Ok(complete_lines(&buf))
}

/// The complete lines of `buf` (a last line without its newline may be half written).
fn complete_lines(buf: &[u8]) -> Vec<String> {
    let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
        return Vec::new();
    };
    String::from_utf8_lossy(&buf[..end])
        .lines()
        .map(str::to_string)
        .collect()
}

/// A json-array record's entries (`Err`: unreadable, or not an array).
fn read_array(
    files: &crate::io::files::Files,
    path: &Path,
) -> std::result::Result<Vec<serde_json::Value>, String> {
    let b = read_tail(files, path, 0)?;
    if b.is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_slice::<Vec<serde_json::Value>>(&b)
        .map_err(|e| format!("{}: not a JSON array: {e}", path.display()))
}

/// Size (jsonl) or entry count (json-array) of `path` now.
fn count(files: &crate::io::files::Files, def: &RecordDef, path: &Path) -> u64 {
    match def.format {
        RecordFormat::Jsonl | RecordFormat::PrefixedLines => files.len(path).unwrap_or(0),
        RecordFormat::JsonArray => read_array(files, path).map_or(0, |a| a.len() as u64),
    }
}

/// The files a pattern names: itself, or, with a `*` in some of its components
/// (`sessions/*/*/*/rollout-*.jsonl`), every file that matches, newest first
/// (the newest directory first at each level), at most `each` at each level.
fn matching(files: &crate::io::files::Files, pattern: &Path, each: usize) -> Vec<PathBuf> {
    matching_all(files, pattern, each).0
}

/// [`matching`], and whether some level had more than `each` (some left out).
fn matching_all(
    files: &crate::io::files::Files,
    pattern: &Path,
    each: usize,
) -> (Vec<PathBuf>, bool) {
    let mut cut = false;
    let comps: Vec<String> = pattern
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let Some(first_glob) = comps.iter().position(|c| c.contains('*')) else {
        return (vec![pattern.to_path_buf()], false);
    };
    let mut found = vec![comps[..first_glob].iter().collect::<PathBuf>()];
    for c in &comps[first_glob..] {
        found = match c.split_once('*') {
            None => found.into_iter().map(|d| d.join(c)).collect(),
            Some((pre, post)) => found
                .iter()
                .flat_map(|d| {
                    let all = files.list(d, pre, post);
                    cut |= all.len() > each;
                    all.into_iter().take(each)
                })
                .collect(),
        };
    }
    (found, cut)
}

/// A directory's name as a project slug (Gemini CLI's `ProjectRegistry`):
/// lower case, each run of anything but `a-z0-9` one `-`, none at either end,
/// `project` when nothing is left.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let t = out.trim_matches('-');
    if t.is_empty() {
        "project".into()
    } else {
        t.to_string()
    }
}

/// The file in a project's slug directory that names the project that owns it.
const PROJECT_MARKER: &str = ".project_root";

/// The slug directory under `parent` that belongs to the project `cwd`: the
/// plain slug of its name, unless that directory's marker names another project
/// (two projects called `app`), then the first `SLUG-N` whose marker names this
/// one, as the agent numbers them. `Err`: every candidate belongs to another.
fn project_slug(
    files: &crate::io::files::Files,
    parent: &Path,
    cwd: &Path,
) -> std::result::Result<String, String> {
    let name = cwd
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = slug(&name);
    let owner = |d: &str| {
        files
            .read(&parent.join(d).join(PROJECT_MARKER))
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
    };
    let ours = |o: &str| Path::new(o) == cwd;
    match owner(&base) {
        None => return Ok(base),
        Some(o) if ours(&o) => return Ok(base),
        Some(_) => {}
    }
    for n in 1..=32 {
        let c = format!("{base}-{n}");
        if owner(&c).is_some_and(|o| ours(&o)) {
            return Ok(c);
        }
    }
    Err(format!(
        "{} belongs to another project, and no {base}-N under {} names {}",
        parent.join(&base).display(),
        parent.display(),
        cwd.display()
    ))
}

/// `path` with `~`, `{cwd}`, `{cwd_dashed}`, `{cwd_name}`, `{cwd_slug}` and
/// `{env:NAME|fallback}` filled in from the agent's environment and directory.
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
            "cwd_slug" => slug(&name),
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

/// Where the agent under a pane lives: its process, environment and directory,
/// and a record's or reply's `path` expanded in them.
pub struct Place {
    pub agent: Proc,
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
    pub pattern: PathBuf,
}

/// The [`Place`] of the agent of `profile` under `pane_pid` (`walked`: the
/// processes under the pane, read through `files`), with `path` expanded.
pub fn place(
    files: &crate::io::files::Files,
    profile: &Profile,
    pane_pid: u32,
    walked: &[Proc],
    path: &str,
) -> std::result::Result<Place, String> {
    if walked.is_empty() && files.is_remote() {
        // never a walk of this machine's processes for an agent elsewhere
        return Err("cannot list the processes on tmux's machine".into());
    }
    let agent = agent_process(profile, pane_pid, walked).ok_or_else(|| {
        format!(
            "no {} process under pane process {pane_pid}",
            profile.name()
        )
    })?;
    let (env, cwd) = files
        .environ_cwd(agent.pid)
        .map_err(|what| format!("cannot read the {what} of pid {}", agent.pid))?;
    // `{cwd_slug}`: the slug directory the project's marker names as its own
    let pattern = match path.find("{cwd_slug}") {
        Some(i) => {
            let parent = expand(&path[..i], &env, &cwd)?;
            let s = project_slug(files, &parent, &cwd)?;
            expand(&path.replace("{cwd_slug}", &s), &env, &cwd)?
        }
        None => expand(path, &env, &cwd)?,
    };
    Ok(Place {
        agent,
        env,
        cwd,
        pattern,
    })
}

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
                .any(|n| crate::core::identify::proc_matches(p, n))
        })
        .cloned()
}

pub use crate::core::text::sha256_hex;

#[cfg(test)]
mod tests {
    use super::*;

    /// Codex's rollout: the last turn event decides, other entries and a line
    /// cut by the tail read are passed over, an event older than the process
    /// (a resumed session's) says nothing.
    #[test]
    fn a_jsonl_status_is_its_last_turn_event() {
        let profiles = crate::core::profile::Profiles::builtin();
        let def = profiles.get("codex").unwrap().def.status.clone().unwrap();
        let ev = |t: &str, at: &str| {
            format!(r#"{{"timestamp":"{at}","type":"event_msg","payload":{{"type":"{t}"}}}}"#)
        };
        let item = r#"{"timestamp":"2026-12-05T10:51:00.000Z","type":"response_item","payload":{"type":"message"}}"#;
        let log = [
            r#"ype":"task_complete"}}"#.to_string(),
            ev("task_complete", "2026-12-05T10:50:40.000Z"),
            ev("task_started", "2026-12-05T10:50:55.976Z"),
            ev("item_completed", "2026-12-05T10:50:56.000Z"),
            item.to_string(),
        ]
        .to_vec();
        let start = crate::core::text::rfc3339_ms("2026-12-05T10:50:50.000Z");
        assert_eq!(
            last_status(&def, &log, start).as_deref(),
            Some("task_started")
        );
        let done = [
            log.clone(),
            vec![ev("turn_aborted", "2026-12-05T10:51:02.000Z")],
        ]
        .concat();
        assert_eq!(
            last_status(&def, &done, start).as_deref(),
            Some("turn_aborted")
        );
        // a process started after that turn began: it resumed the session
        let later = crate::core::text::rfc3339_ms("2026-12-05T10:52:00.000Z");
        assert_eq!(last_status(&def, &log, later), None);
        assert_eq!(last_status(&def, &[item.to_string()], start), None);
    }

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
            skips_repeat: false,
            wait_ms: 10,
            startup_wait_ms: None,
            session: None,
            pasted: None,
            history: None,
        }
    }

    /// A mark of `pattern` now, as `mark` makes one, for no process.
    fn mark_now(d: RecordDef, pattern: &Path) -> Mark {
        Mark::new(
            d,
            pattern.to_path_buf(),
            crate::io::files::Files::Local,
            Duration::from_millis(10),
            None,
        )
    }

    /// The claude profile's `unwrap`.
    const CLAUDE_UNWRAP: &str = r#"(?:\n\n)?<pasted_content id="[^"]*">\n(?P<text>(?s:.*?))\n</pasted_content id="[^"]*">\n?"#;

    #[test]
    fn the_claude_profile_unwraps_as_tested() {
        let p = crate::core::profile::Profiles::builtin();
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
        assert_eq!(
            e("~/.gemini/tmp/{cwd_slug}/logs.json"),
            "/home/u/.gemini/tmp/my-proj/logs.json"
        );
        assert!(expand("{bogus}", &env, cwd).is_err());
    }

    /// Gemini CLI's project directories: the slug of the directory's name (as its
    /// `ProjectRegistry.slugify`), and `SLUG-N` when the slug's `.project_root`
    /// names another project; never another project's directory.
    #[test]
    fn a_project_slug_is_gemini_s_and_never_another_projects() {
        for (name, want) in [
            ("MyApp", "myapp"),
            ("my.proj", "my-proj"),
            ("--A  b__C--", "a-b-c"),
            ("日本", "project"),
            ("", "project"),
        ] {
            assert_eq!(slug(name), want, "{name:?}");
        }
        let d = tempfile::tempdir().unwrap();
        let tmp = d.path().join("tmp");
        let files = crate::io::files::Files::Local;
        let (a, b) = (Path::new("/home/u/a/App"), Path::new("/home/u/b/App"));
        // nothing there yet: the plain slug
        assert_eq!(project_slug(&files, &tmp, a).unwrap(), "app");
        let mark = |slug: &str, owner: &Path| {
            std::fs::create_dir_all(tmp.join(slug)).unwrap();
            std::fs::write(
                tmp.join(slug).join(PROJECT_MARKER),
                owner.display().to_string(),
            )
            .unwrap();
        };
        mark("app", a);
        assert_eq!(project_slug(&files, &tmp, a).unwrap(), "app");
        // b's is `app-1`, where its marker names it; before it exists, none
        assert!(project_slug(&files, &tmp, b).is_err());
        mark("app-1", Path::new("/elsewhere/App"));
        mark("app-2", b);
        assert_eq!(project_slug(&files, &tmp, b).unwrap(), "app-2");
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
    fn judged_exact_mangled_not_yet_or_absent() {
        let d = def("text");
        assert_eq!(judge(&d, "a\tb", &["a\tb".into()], true).matched, "exact");
        let p = judge(&d, "a\tb", &["a    b".into()], true);
        assert_eq!(p.matched, "exact-but-whitespace");
        assert_eq!(p.whitespace.as_deref(), Some("1 tab(s) stored as spaces"));
        let p = judge(&d, "a b  ", &["a b".into()], true);
        assert_eq!(p.matched, "exact-but-whitespace");
        assert_eq!(
            p.whitespace.as_deref(),
            Some(r#"the record ends with "" where the body ends with "  ""#)
        );
        let p = judge(&d, "hello world", &["hello wor".into()], true);
        assert_eq!(p.matched, "mangled");
        assert_eq!(p.first_difference, Some(9));
        assert_eq!((p.body_len, p.record_len), (Some(11), Some(9)));
        let diff = p.diff.unwrap();
        assert_eq!(
            (diff.sent.as_str(), diff.recorded.as_str()),
            ("hello world", "hello wor")
        );
        let p = judge(&d, "abcdef", &["abXdef".into()], true);
        assert_eq!(p.first_difference, Some(2));
        assert_eq!(judge(&d, "x", &[], true).matched, "absent");
        // another prompt's entry (an earlier one, recorded late) is not this send's
        let p = judge(&d, "fix the failing test", &["run the linter".into()], true);
        assert_eq!((p.matched, p.other_entries), ("not-yet", Some(1)));
        // in a file not known to be this agent's, nothing but the body proves anything
        let p = judge(&d, "hello world", &["hello wor".into()], false);
        assert_eq!((p.matched, p.other_entries), ("absent", Some(1)));
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    /// Claude's session registry (its status, its session id) is read as a
    /// record is: a FIFO or a link there is not read (a FIFO held every look).
    #[test]
    fn a_registry_that_is_no_regular_file_is_not_read() {
        let p = crate::core::profile::Profiles::builtin();
        let def = p.get("claude").unwrap().def.status.clone().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("1.json");
        std::fs::write(&real, r#"{"status":"busy","sessionId":"s"}"#).unwrap();
        let file = |path: PathBuf| StatusFile {
            path,
            def: def.clone(),
            started_ms: None,
        };
        assert_eq!(file(real.clone()).read().as_deref(), Some("busy"));
        let link = dir.path().join("2.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(file(link).read(), None);
        let fifo = dir.path().join("3.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        assert_eq!(file(fifo.clone()).read(), None);
        let files = crate::io::files::Files::Local;
        assert_eq!(read_regular(&files, &fifo), None);
    }

    /// Claude Code's input history as its profile reads it: this session's
    /// entries only, each paste put back from `pastedContents` (inline, or the
    /// paste cache file its hash names), nothing read outside the history's
    /// directory, a placeholder with no part kept as typed.
    #[test]
    fn claudes_input_history_puts_back_its_pastes_for_this_session_only() {
        let p = crate::core::profile::Profiles::builtin();
        let mut h = *p
            .get("claude")
            .unwrap()
            .def
            .record
            .clone()
            .unwrap()
            .history
            .unwrap();
        h.filter.insert("sessionId".into(), "s-1".into());
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("history.jsonl");
        std::fs::create_dir_all(dir.path().join("paste-cache")).unwrap();
        std::fs::write(dir.path().join("paste-cache/0123abcd.txt"), "big\npaste").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "not a paste").unwrap();
        std::fs::write(&f, "").unwrap();
        let m = mark_now(h, &f);
        let entry = |display: &str, pasted: serde_json::Value, session: &str| {
            serde_json::json!({"display": display, "pastedContents": pasted,
                "timestamp": 1, "project": "/p", "sessionId": session})
            .to_string()
                + "\n"
        };
        // the parts of an entry: (id, the field that holds the text, its value)
        let parts = |ps: &[(u32, &str, &str)]| {
            let m: serde_json::Map<String, serde_json::Value> = ps
                .iter()
                .map(|(id, k, v)| {
                    let part = serde_json::json!({"id": id, "type": "text", *k: v});
                    (id.to_string(), part)
                })
                .collect();
            serde_json::Value::Object(m)
        };
        let lines = [
            entry("mine", parts(&[]), "s-1"),
            entry("theirs", parts(&[]), "s-2"),
            entry(
                "see [Pasted text #1 +2 lines] and [Pasted text #2 +1 lines]!",
                parts(&[(1, "content", "a\n\tb\nc"), (2, "contentHash", "0123abcd")]),
                "s-1",
            ),
            entry(
                "[Pasted text #3 +1 lines] [Pasted text #4] [Pasted text #9 +1 lines]",
                parts(&[
                    (3, "contentHash", "../secret"),
                    (4, "contentHash", "nosuch"),
                ]),
                "s-1",
            ),
            // a link and a FIFO in the paste cache are never read (a FIFO
            // would hold the send)
            entry(
                "[Pasted text #5] [Pasted text #6]",
                parts(&[(5, "contentHash", "link"), (6, "contentHash", "fifo")]),
                "s-1",
            ),
        ];
        std::os::unix::fs::symlink(
            dir.path().join("secret.txt"),
            dir.path().join("paste-cache/link.txt"),
        )
        .unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.path().join("paste-cache/fifo.txt"))
            .status()
            .unwrap();
        assert!(made.success());
        std::fs::write(&f, lines.concat()).unwrap();
        assert_eq!(
            m.appended(&f, 0).unwrap(),
            vec![
                "mine".to_string(),
                "see a\n\tb\nc and big\npaste!".to_string(),
                "[Pasted text #3 +1 lines] [Pasted text #4] [Pasted text #9 +1 lines]".to_string(),
                "[Pasted text #5] [Pasted text #6]".to_string(),
            ]
        );
        // the body byte for byte; another session's entry proves nothing
        assert_eq!(m.prove("see a\n\tb\nc and big\npaste!").matched, "exact");
        assert_eq!(m.prove("theirs").matched, "not-yet");
    }

    /// A history rewritten shorter after the mark proves nothing through the
    /// record's wait (its old entries would read as new), where one appended
    /// to does.
    #[test]
    fn a_history_rewritten_shorter_proves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let rec = dir.path().join("t.jsonl");
        let hist = dir.path().join("history.jsonl");
        let line = |t: &str| format!("{{\"type\":\"user\",\"text\":{t:?}}}\n");
        let old: String = (0..20).map(|i| line(&format!("old {i}"))).collect();
        std::fs::write(&hist, format!("{}{old}", line("yes"))).unwrap();
        std::fs::write(&rec, "").unwrap();
        let h = def("text");
        let mut m = mark_now(def("text"), &rec);
        m.sooner = Some(Box::new(mark_now(h, &hist)));
        // rewritten: shorter, the old "yes" still in it
        std::fs::write(&hist, line("yes")).unwrap();
        let p = m.prove("yes");
        assert_ne!(p.source, "history", "{p:?}");
        assert_eq!(p.matched, "absent", "{p:?}");
        // appended to: it proves
        let mut m = mark_now(def("text"), &rec);
        m.sooner = Some(Box::new(mark_now(def("text"), &hist)));
        std::fs::write(&hist, format!("{}{}", line("yes"), line("again"))).unwrap();
        let p = m.prove("again");
        assert_eq!((p.source, p.matched), ("history", "exact"), "{p:?}");
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
        let m = mark_now(d, &f);
        let since = m.before[&f];
        use std::io::Write;
        let mut w = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
        write!(
            w,
            "\n# 2026-12-02 13:50:15.648462\n+three lines\n+\tsecond\n++third\n"
        )
        .unwrap();
        assert_eq!(
            m.appended(&f, since).unwrap(),
            vec!["three lines\n\tsecond\n+third".to_string()]
        );
        assert_eq!(m.prove("three lines\n\tsecond\n+third").matched, "exact");
        write!(w, "\n# 2026-12-02 13:50:16\n+next\n").unwrap();
        assert_eq!(m.appended(&f, since).unwrap().len(), 2);
    }

    #[test]
    fn a_prompt_repeated_where_the_agent_skips_repeats_is_not_unproven() {
        // Aider (prompt_toolkit) records `again` once when it is sent twice in a row
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join(".aider.input.history");
        std::fs::write(
            &f,
            "\n# 2026-12-04 15:48:15\n+first\n\n# 2026-12-04 15:48:20\n+again\n",
        )
        .unwrap();
        let d = |skips: bool| RecordDef {
            path: f.display().to_string(),
            format: RecordFormat::PrefixedLines,
            line_prefix: Some("+".into()),
            filter: BTreeMap::new(),
            tab_width: None,
            trims_trailing: true,
            skips_repeat: skips,
            ..def("")
        };
        let p = mark_now(d(true), &f).prove("again");
        assert_eq!(p.matched, "repeat", "{p:?}");
        assert!(p.why.as_deref().unwrap().contains("only once"), "{p:?}");
        // not the newest entry: absent, as before
        assert_eq!(mark_now(d(true), &f).prove("first").matched, "absent");
        // a profile without the setting: absent
        assert_eq!(mark_now(d(false), &f).prove("again").matched, "absent");
        // something was appended since the mark (another prompt): not a repeat
        let m = mark_now(d(true), &f);
        use std::io::Write;
        let mut w = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
        write!(w, "\n# 2026-12-04 15:48:30\n+other\n").unwrap();
        assert_eq!(m.prove("again").matched, "not-yet");
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
        let m = mark_now(d, &f);
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
        // OpenCode keeps a trailing space after a paste: not byte for byte
        let p = judge(
            &d,
            "hello thereline one\nline two\n\nline four",
            &[got],
            true,
        );
        assert_eq!(p.matched, "exact-but-whitespace");
        assert_eq!(
            p.whitespace.as_deref(),
            Some(r#"the record ends with " " where the body ends with """#)
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
            &crate::io::files::Files::Local,
            &dir.path().join("state/*/events.jsonl"),
            8,
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
        let local = crate::io::files::Files::Local;
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
    fn append(f: &Path, line: &str) {
        use std::io::Write;
        let mut w = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(f)
            .unwrap();
        writeln!(w, "{line}").unwrap();
    }

    fn user(text: &str) -> String {
        serde_json::json!({"type": "user", "text": text}).to_string()
    }

    /// Two sessions in one project: the files `a.jsonl` and `b.jsonl` side by
    /// side, `b` written last; a mark for the agent whose registry names `a`.
    fn two_sessions(dir: &Path, registry: bool) -> (Mark, PathBuf, PathBuf) {
        let proj = dir.join("projects/-p");
        std::fs::create_dir_all(&proj).unwrap();
        std::fs::create_dir_all(dir.join("sessions")).unwrap();
        let (a, b) = (proj.join("a.jsonl"), proj.join("b.jsonl"));
        append(&a, &user("old a"));
        append(&b, &user("old b"));
        if registry {
            std::fs::write(dir.join("sessions/4242.json"), r#"{"sessionId":"a"}"#).unwrap();
        }
        let d = RecordDef {
            path: proj.join("*.jsonl").display().to_string(),
            session: Some(SessionDef {
                registry: dir.join("sessions/{pid}.json").display().to_string(),
                field: "sessionId".into(),
                file: proj.join("{session}.jsonl").display().to_string(),
            }),
            ..def("text")
        };
        let who = Who {
            pane_pid: u32::MAX - 1,
            agent_pid: 4242,
            env: BTreeMap::from([("HOME".into(), dir.display().to_string())]),
            cwd: PathBuf::from("/p"),
        };
        let m = Mark::new(
            d.clone(),
            proj.join("*.jsonl"),
            crate::io::files::Files::Local,
            Duration::from_millis(10),
            Some(who),
        );
        (m, a, b)
    }

    /// A new mark (the next send's) of what `m` marked.
    fn remark(m: &Mark) -> Mark {
        Mark::new(
            m.def.clone(),
            m.pattern.clone(),
            crate::io::files::Files::Local,
            m.wait,
            m.who.clone(),
        )
    }

    #[test]
    fn the_record_is_the_one_this_agents_registry_names() {
        let dir = tempfile::tempdir().unwrap();
        let (m, a, b) = two_sessions(dir.path(), true);
        // each agent records its own prompt; the other session's is written last
        append(&a, &user("fix the failing test in src/lib.rs"));
        append(&b, &user("write the changelog for the release"));
        let p = m.prove("fix the failing test in src/lib.rs");
        assert_eq!((p.matched, p.owner), ("exact", Some("registry")), "{p:?}");
        assert_eq!(p.path.as_deref(), Some(a.to_str().unwrap()));
        // the other session's entry, close to this body, is never this one's
        let m = remark(&m);
        append(&b, &user("fix the failing test in src/lib.r"));
        let p = m.prove("fix the failing test in src/main.rs");
        assert_eq!(p.matched, "absent", "{p:?}");
        assert_eq!(p.path.as_deref(), Some(a.to_str().unwrap()));
        // a mangled entry in its own file is mangled
        append(&a, &user("fix the failing test in src/mai"));
        let p = m.prove("fix the failing test in src/main.rs");
        assert_eq!(p.matched, "mangled", "{p:?}");
        assert_eq!(p.path.as_deref(), Some(a.to_str().unwrap()));
    }

    #[test]
    fn a_file_not_known_to_be_this_agents_proves_only_the_body() {
        let dir = tempfile::tempdir().unwrap();
        let (m, a, b) = two_sessions(dir.path(), false);
        append(&b, &user("fix the failing test in src/lib.r"));
        let p = m.prove("fix the failing test in src/lib.rs");
        assert_eq!((p.matched, p.owner), ("absent", Some("unproven")), "{p:?}");
        assert!(!p.owner_proven());
        append(&a, &user("fix the failing test in src/lib.rs"));
        let p = m.prove("fix the failing test in src/lib.rs");
        assert_eq!((p.matched, p.owner), ("exact", Some("unproven")), "{p:?}");
        assert_eq!(p.path.as_deref(), Some(a.to_str().unwrap()));
    }

    #[test]
    fn a_file_the_agent_holds_open_is_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let (m, a, b) = two_sessions(dir.path(), false);
        // a process that holds `a` open, as codex holds its rollout
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("exec 3>>'{}'; exec sleep 60", a.display()))
            .spawn()
            .unwrap();
        let m = Mark {
            who: Some(Who {
                pane_pid: child.id(),
                ..m.who.clone().unwrap()
            }),
            ..m
        };
        // wait (without a clock) until it holds it open
        while m.owned().1 != "open-file" {
            std::thread::yield_now();
        }
        append(&a, &user("fix the failing test in src/mai"));
        append(&b, &user("fix the failing test in src/main.rs"));
        let p = m.prove("fix the failing test in src/main.rs");
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            (p.matched, p.owner),
            ("mangled", Some("open-file")),
            "{p:?}"
        );
        assert_eq!(p.path.as_deref(), Some(a.to_str().unwrap()));
    }

    #[test]
    fn a_symbolic_link_in_the_record_directory_is_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let (m, _, _) = two_sessions(dir.path(), false);
        let elsewhere = dir.path().join("other-session.jsonl");
        append(&elsewhere, &user("old"));
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("projects/-p/link.jsonl")).unwrap();
        append(&elsewhere, &user("fix the failing test"));
        let p = m.prove("fix the failing test");
        assert_eq!(p.matched, "absent", "{p:?}");
        // the file the registry names, a link: unreadable, and why
        let (m, a, _) = two_sessions(&dir.path().join("2"), true);
        std::fs::remove_file(&a).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &a).unwrap();
        append(&elsewhere, &user("fix the failing test"));
        let p = m.prove("fix the failing test");
        assert_eq!(p.matched, "unreadable", "{p:?}");
        assert!(p.error.unwrap().contains("a symbolic link"));
    }

    #[test]
    fn an_old_file_appended_during_the_send_is_read_from_its_mark() {
        let dir = tempfile::tempdir().unwrap();
        let proj = dir.path().join("p");
        std::fs::create_dir_all(&proj).unwrap();
        // 20 days old, with the same prompt sent then; 9 newer sessions
        let old = proj.join("old.jsonl");
        append(&old, &user("fix the failing test"));
        let then = std::time::SystemTime::now() - Duration::from_secs(20 * 86400);
        std::fs::File::options()
            .append(true)
            .open(&old)
            .unwrap()
            .set_modified(then)
            .unwrap();
        for i in 0..9 {
            append(&proj.join(format!("s{i}.jsonl")), &user("x"));
        }
        let m = mark_now(def("text"), &proj.join("*.jsonl"));
        // something else is appended to it during the send
        append(&old, r#"{"type":"assistant","text":"late reply"}"#);
        let p = m.prove("fix the failing test");
        assert_eq!(p.matched, "absent", "{p:?}");
    }

    #[test]
    fn an_earlier_prompts_late_entry_is_not_this_sends() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("history.jsonl");
        append(&f, &user("first prompt"));
        let m = mark_now(def("text"), &f);
        append(&f, &user("the previous prompt, recorded late"));
        let p = m.prove("the next prompt, not recorded yet");
        assert_eq!((p.matched, p.owner), ("not-yet", Some("path")), "{p:?}");
        assert!(p.owner_proven());
        append(&f, &user("the next prompt, not recorded yet"));
        assert_eq!(
            m.prove("the next prompt, not recorded yet").matched,
            "exact"
        );
    }

    #[test]
    fn an_unreadable_record_says_why_and_never_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("history.jsonl");
        // a FIFO where the record should be: a read would block
        let ok = std::process::Command::new("mkfifo")
            .arg(&f)
            .status()
            .unwrap();
        assert!(ok.success());
        let m = mark_now(def("text"), &f);
        let p = m.prove("hello");
        assert_eq!(p.matched, "unreadable", "{p:?}");
        assert!(p.error.unwrap().contains("not a regular file"));
        // a directory: the same
        let d = dir.path().join("dir.jsonl");
        std::fs::create_dir(&d).unwrap();
        let p = mark_now(def("text"), &d).prove("hello");
        assert_eq!(p.matched, "unreadable", "{p:?}");
    }

    #[test]
    fn an_entry_that_lost_whole_reads_is_still_this_sends() {
        let body: String = (0..200)
            .map(|i| format!("{i:04} a line of a body. "))
            .collect();
        // every other 1022 bytes lost on the way in
        let kept: String = body
            .as_bytes()
            .chunks(1022)
            .step_by(2)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        assert!(this_sends(&body, &kept));
        assert!(!this_sends(
            &body,
            "the previous prompt, something else entirely"
        ));
        assert!(this_sends("abcdef", "abXdef"));
        assert!(!this_sends("fix the failing test", "run the linter"));
    }

    #[test]
    fn patterns_match_by_component() {
        let m = |p: &str, f: &str| pattern_matches(Path::new(p), Path::new(f));
        assert!(m(
            "/h/s/*/*/*/rollout-*.jsonl",
            "/h/s/2026/12/02/rollout-x.jsonl"
        ));
        assert!(!m(
            "/h/s/*/*/*/rollout-*.jsonl",
            "/h/s/2026/12/rollout-x.jsonl"
        ));
        assert!(!m("/h/p/*.jsonl", "/h/p/x.json"));
        assert!(m("/h/p/*.jsonl", "/h/p/.jsonl"));
        assert!(!m("/h/p/a*a", "/h/p/a"));
    }
    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        /// Every built-in profile's record definition.
        fn defs() -> Vec<RecordDef> {
            // (compiled once: profile regexes are slow in debug builds)
            static DEFS: std::sync::OnceLock<Vec<RecordDef>> = std::sync::OnceLock::new();
            DEFS.get_or_init(|| {
                let p = crate::core::profile::Profiles::builtin();
                p.names()
                    .iter()
                    .filter_map(|n| p.get(n).ok()?.def.record.clone())
                    .collect()
            })
            .clone()
        }

        /// Read `data`, appended after the mark, with each profile's reader,
        /// and judge it against `body`: no panic, whatever the bytes.
        fn read_all_ways(data: &[u8], body: &str) {
            let dir = tempfile::tempdir().unwrap();
            for (i, d) in defs().into_iter().enumerate() {
                let f = dir.path().join(format!("r{i}"));
                std::fs::write(&f, b"").unwrap();
                let m = mark_now(d.clone(), &f);
                std::fs::write(&f, data).unwrap();
                let p = m.look(body);
                assert!(
                    [
                        "exact",
                        "exact-but-whitespace",
                        "mangled",
                        "not-yet",
                        "absent",
                        "unreadable"
                    ]
                    .contains(&p.matched),
                    "{p:?}"
                );
                if let Ok(texts) = m.appended(&f, 0) {
                    let _ = judge(&d, body, &texts, true);
                }
            }
        }

        /// A line the way an agent writes one, cut anywhere, with bytes flipped.
        fn jsonish() -> impl Strategy<Value = Vec<u8>> {
            (
                ".{0,200}",
                0usize..400,
                prop::collection::vec((0usize..400, any::<u8>()), 0..4),
            )
                .prop_map(|(text, cut, flips)| {
                    let v = serde_json::json!({"type": "user", "message": {"content": [{"type": "text", "text": text}]},
                        "input": text, "parts": [{"text": text, "source": {"text": {"value": "[Pasted ~2 lines]"}}}],
                        "payload": {"type": "item_completed", "item": {"type": "UserMessage", "content": text}},
                        "data": {"content": format!("<pasted_content file=\"/etc/passwd\" />{text}")}});
                    let mut b = v.to_string().into_bytes();
                    b.truncate(cut.min(b.len()));
                    for (at, byte) in flips {
                        if !b.is_empty() {
                            let n = b.len();
                            b[at % n] = byte;
                        }
                    }
                    b.push(b'\n');
                    b
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

            #[test]
            fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..4096), body in ".{0,64}") {
                read_all_ways(&data, &body);
            }

            #[test]
            fn truncated_and_flipped_json_lines_never_panic(lines in prop::collection::vec(jsonish(), 0..20), body in ".{0,64}") {
                read_all_ways(&lines.concat(), &body);
            }

            #[test]
            fn judging_any_text_never_panics(body in "(?s).{0,300}", entries in prop::collection::vec("(?s).{0,300}", 0..5)) {
                for d in defs() {
                    let p = judge(&d, &body, &entries, true);
                    if entries.contains(&body) {
                        prop_assert_eq!(p.matched, "exact");
                    }
                    if p.matched == "exact" {
                        prop_assert!(entries.contains(&body));
                    }
                }
            }
        }

        /// Lines of megabytes, invalid UTF-8 and a last line without its end.
        #[test]
        fn huge_lines_and_invalid_utf8_are_read_in_bounds() {
            let mut data = Vec::new();
            data.extend(
                format!(
                    "{{\"type\":\"user\",\"text\":\"{}\"}}\n",
                    "x".repeat(4 << 20)
                )
                .into_bytes(),
            );
            data.extend(b"\xff\xfe{\"type\":\"user\"\n");
            data.extend(vec![b'['; 100_000]);
            data.push(b'\n');
            data.extend(b"{\"type\":\"user\",\"text\":\"half");
            read_all_ways(&data, "x");
            // 4 MiB of one line with no newline at all
            read_all_ways(&vec![b'a'; 4 << 20], "a");
        }
    }
}
