//! Where an agent records its replies: a profile's `[reply]` table, as data
//! (read by the reply readers).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where an agent records its replies (a profile's `[reply]`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReplyDef {
    /// The file, as a record's `path`; default: the file that proved the prompt
    /// (the record's own, `[record] path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `json` (one object a line, or one document whose `messages` field is the
    /// list), `markdown-chat` (Aider's chat history) or `sqlite` (a SQLite
    /// database; `query` turns it into entries).
    #[serde(default)]
    pub format: ReplyFormat,
    /// `sqlite`: the query whose rows are the entries, in order: each row's
    /// first column one JSON object (read as a `json` entry). `:cwd` is the
    /// agent's directory, so that a store shared by every session of the
    /// agent yields only the sessions of this one's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// `json`: in a one-document file, the field that holds the list of entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<String>,
    /// The entries that are a prompt (default: the record's `filter` and `text`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<PromptDef>,
    /// How this prompt's entry is recognised: `exact` (its text is the body, as
    /// the record stores text) or `contains` (the agent wraps the prompt in
    /// context of its own: Gemini's chats).
    #[serde(default)]
    pub prompt_match: PromptMatch,
    /// What each kind of entry after the prompt gives the answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub take: Vec<Take>,
    /// `json`: the field that names an entry: an entry written again later
    /// with the same value (the agent appends an updated copy, as Gemini
    /// 0.61 does once a tool call is settled) replaces the earlier copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_id: Option<String>,
    /// `json`, one object a line: read the lines in the order of this field
    /// (a timestamp that sorts as text; a line without it keeps the place of
    /// the line before), not as written: Claude 2.1.259 wrote a session's
    /// first reply before its prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_by: Option<String>,
    /// `markdown-chat`: the prefix of each line of a prompt (`#### `).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_prefix: Option<String>,
    /// `markdown-chat`: the prefix of the agent's own notes (`> `): not reply text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note_prefix: Option<String>,
    /// `markdown-chat`: a regex on a note with groups `input`, `output` (and
    /// `cache`), token counts (`1.2k` is read as 1200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_regex: Option<String>,
    /// `markdown-chat`: a regex on a note with group `cost`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_regex: Option<String>,
    /// `markdown-chat`: a regex on a note that is an API error (group `text`, or the note).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_regex: Option<String>,
    /// After the screen says the turn is over, how long to wait for the record
    /// to hold the reply, at most.
    #[serde(default = "wait_ms")]
    pub wait_ms: u64,
    /// The stop reasons (a `stop` take's) of a finished turn: with one of
    /// them recorded after the reply, the turn is over whatever the screen
    /// still shows (`tool_use`, `tool-calls`: the agent goes on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_over: Vec<String>,
}

impl ReplyDef {
    /// `reason` ends the turn (one of [`ReplyDef::turn_over`]).
    pub fn ends_turn(&self, reason: &str) -> bool {
        self.turn_over.iter().any(|r| r == reason)
    }
}

fn wait_ms() -> u64 {
    3000
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ReplyFormat {
    #[default]
    Json,
    MarkdownChat,
    Sqlite,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PromptMatch {
    #[default]
    Exact,
    Contains,
}

/// The entries that are a prompt: `filter` and the field with its `text`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PromptDef {
    #[serde(default)]
    pub filter: BTreeMap<String, String>,
    pub text: String,
}

/// What to take from the entries that pass `filter` (`[[reply.take]]`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Take {
    /// `text`, `tool` (a tool call), `tool-result`, `tokens`, `stop`, `error`.
    pub kind: TakeKind,
    /// Only entries whose fields have these values (`true`, numbers as written).
    #[serde(default)]
    pub filter: BTreeMap<String, String>,
    /// `text`, `error`, `stop`: the field, dotted. A list of parts is joined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// `text`: the part types that are text (default `text`; a part without a
    /// type counts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
    /// `text`: a part whose field of this name is `true` is no reply text (a thought).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_part: Option<String>,
    /// `text`: read only when no other `text` rule found any (the agent
    /// records the same reply twice, in two shapes, not in every release).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fallback: bool,
    /// `stop`: a literal stop reason, where the entry itself is the stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `tool`, `tool-result`: the list field that holds the items (default: the
    /// entry is the item), and the filter an item must pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<String>,
    #[serde(default)]
    pub item: BTreeMap<String, String>,
    /// `tool`: the item's name, input and id fields; `tool-result`: `id` is the
    /// call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `tool`, `tool-result`: a field whose value says how the call went, and
    /// the values that mean approved (run) or denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approved: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied: Vec<String>,
    /// `tool-result`: a regex on the result's text (`field`) that means the
    /// person denied the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied_text: Option<String>,
    /// `tokens`: the fields, dotted; `cache` fields are summed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache_tokens: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<String>,
    /// `tokens`: entries with the same value here count once (the last): the
    /// agent repeats one request's usage on each of its entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TakeKind {
    #[default]
    Text,
    Tool,
    ToolResult,
    Tokens,
    Stop,
    Error,
}
