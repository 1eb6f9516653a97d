//! Where an agent records the prompts it receives and publishes its state: a
//! profile's `[record]` and `[status]` tables, as data (read by the record
//! readers).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where an agent records the prompts it receives (a profile's `[record]`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RecordDef {
    /// The file: `~` is the agent's HOME; `{cwd}` its directory, `{cwd_dashed}`
    /// that with every character but ASCII letters and digits as `-`,
    /// `{cwd_name}` its last component, `{cwd_slug}` the directory a project
    /// registry like Gemini CLI's gives it (its name lower case, other runs `-`;
    /// `NAME-N` where its `.project_root` marker says so); `{env:NAME|fallback}` a variable of the
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
    /// The agent does not record a prompt that equals its newest entry (Aider:
    /// prompt_toolkit keeps one copy of a prompt sent again right after itself).
    /// Such a send has no entry to prove it: its proof says `repeat`, and the
    /// screen's verify decides the receipt (never `unproven` for that alone).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skips_repeat: bool,
    /// How long after the submit to wait for the entry, at most.
    #[serde(default = "wait_ms")]
    pub wait_ms: u64,
    /// How long to wait instead when the agent process is under a minute old:
    /// an agent may hold a prompt it took during its start-up until that is
    /// over, and record it only then (Codex). Default: `wait_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_wait_ms: Option<u64>,
    /// The agent's session registry, which names the one record file of
    /// `path`'s that this agent process writes (Claude Code:
    /// `~/.claude/sessions/<pid>.json` holds `sessionId`, its transcript is
    /// `<sessionId>.jsonl`). Without one, a `*` in `path` is narrowed to the
    /// files the agent's processes hold open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionDef>,
    /// Pasted text the agent keeps out of `text` by id, each paste leaving a
    /// placeholder that names its id (Claude Code's `history.jsonl`:
    /// `[Pasted text #2 +40 lines]` in `display`, the text in `pastedContents`,
    /// inline or in a file of its paste cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pasted: Option<PastedDef>,
    /// The agent's input history, a second record written as a prompt is
    /// submitted, sooner than this one (Claude Code: `history.jsonl` about 50 ms
    /// after the submit key, its transcript about 120 ms). Read beside the
    /// record and believed only when it holds the body: its entry proves the
    /// send; an other entry or none says nothing (the record decides). A
    /// `filter` value `{session}` is the session id the record's `session`
    /// registry names: without that id, and for a `path` with a `*`, the
    /// history is not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Box<RecordDef>>,
}

/// A record's pasted text kept by id (`[record] pasted = { … }`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PastedDef {
    /// The entry's pasted parts, dotted: an object (its values) or a list.
    pub field: String,
    /// A regex for a placeholder in `text`; its group `id` names the part.
    pub pattern: String,
    /// In a part: its id, dotted (a number or a string).
    pub id: String,
    /// In a part: its text, dotted.
    pub text: String,
    /// A part without `text`: the file that holds it, relative to the record's
    /// directory; `{NAME}` is the part's field NAME (letters, digits, `-`, `_`
    /// only). Only files under the record's directory are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// A record's session registry (`[record] session = { registry, field, file }`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SessionDef {
    /// The registry file, as a record's `path`, plus `{pid}`: the agent's process id.
    pub registry: String,
    /// The field that holds the session id, dotted.
    pub field: String,
    /// The record file, as a record's `path`, plus `{session}`: that id.
    pub file: String,
}

impl RecordDef {
    /// Its filter keeps only one session's entries (a value names `{session}`,
    /// filled in from the record's session registry).
    pub fn filter_names_session(&self) -> bool {
        self.filter.values().any(|v| v.contains("{session}"))
    }

    /// A record that keeps text exactly as it came (no tabs or blanks changed).
    pub(crate) fn plain() -> RecordDef {
        RecordDef {
            path: String::new(),
            format: RecordFormat::Jsonl,
            text: String::new(),
            line_prefix: None,
            filter: BTreeMap::new(),
            tab_width: None,
            trims_trailing: false,
            unwrap: None,
            parts: None,
            file_ref: None,
            wait_ms: wait_ms(),
            startup_wait_ms: None,
            session: None,
            pasted: None,
            history: None,
            input_history: false,
            skips_repeat: false,
        }
    }
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

/// How a `[status]` file holds the agent's state (see [`StatusDef`]).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum StatusFormat {
    #[default]
    Json,
    Jsonl,
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
/// Code's session registry, `~/.claude/sessions/<pid>.json`, `"status"`; or the
/// turn events of an append-only log (Codex's rollout: `task_started`, then
/// `task_complete` or `turn_aborted`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StatusDef {
    /// The file, as a record's `path`, plus `{pid}`: the agent's process id. A
    /// `*` in it: the one matching file the agent process holds open.
    pub path: String,
    /// `json` (default): one JSON object, its `field` the state. `jsonl`: one
    /// object a line, appended; the last entry that passes `filter` and whose
    /// `field` is one of `busy`, `waiting` or `idle` is the state.
    #[serde(default)]
    pub format: StatusFormat,
    /// `jsonl`: only entries whose fields have these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub filter: BTreeMap<String, String>,
    /// `jsonl`: the values that end a turn (the agent idle again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle: Vec<String>,
    /// `jsonl`: the entry's time (RFC 3339, UTC), dotted: an entry older than the
    /// agent process (a session it resumed) says nothing of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// The field that holds the state, dotted.
    pub field: String,
    /// Values that mean the agent is working (they veto `ready`).
    #[serde(default)]
    pub busy: Vec<String>,
    /// Values that mean it waits for a person (they veto `ready` too).
    #[serde(default)]
    pub waiting: Vec<String>,
}
