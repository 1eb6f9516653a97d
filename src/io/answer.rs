//! The agent's answer to one prompt, read from the agent's own record.
//!
//! Where the reply lives and which fields hold its text, tool calls, tokens,
//! stop reason and API errors is profile data (`[reply]`), never code: this
//! file names no agent. The answer is only what follows *this* prompt's own
//! entry in the record, up to the end of the turn; another prompt that entered
//! meanwhile ends it (its text is reported in `other_prompts`, its reply is
//! never mixed in).
//!
//! Record formats read here: one JSON object a line (Claude's session JSONL,
//! Codex's rollout, Qwen's chats, Copilot's `events.jsonl`, Gemini 0.61's
//! `chats/session-*.jsonl`), one JSON document holding a list of messages
//! (older Gemini's `chats/session-*.json`), a markdown chat log (Aider's
//! `.aider.chat.history.md`), and a SQLite store whose query makes the entries
//! (OpenCode's and Kilo's session database).

use crate::core::profile::Profile;
use crate::io::record::RecordDef;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use crate::core::profile::reply::{
    PromptDef, PromptMatch, ReplyDef, ReplyFormat, Take, TakeKind,
};

/// One tool call of the turn.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ToolCall {
    pub name: String,
    pub input_summary: String,
    /// `approved` (it ran), `denied`, or `pending` (no result yet: a dialog waits).
    pub status: String,
    #[serde(skip)]
    id: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache: u64,
}

/// The answer to one prompt (`ask --json`'s `answer`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Answer {
    pub text: String,
    /// `transcript` (the agent's record), `screen` (`--from-screen`) or `none`.
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    pub started_at_ms: u64,
    pub ended_at_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
    /// The API error the turn ended in, in the record's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The approval dialog the turn stopped on, as the screen shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dialog: Option<String>,
    /// Prompts that entered the agent after this one, before its reply ended
    /// (typed by someone else): their replies are not in `text`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_prompts: Vec<String>,
    /// Why there is no answer from the record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl Answer {
    pub fn none(why: impl Into<String>) -> Answer {
        Answer {
            source: "none".into(),
            why: Some(why.into()),
            ..Answer::default()
        }
    }

    /// Something of the reply is there (the turn wrote to the record).
    pub fn has_reply(&self) -> bool {
        !self.text.is_empty()
            || self.error.is_some()
            || self.stop_reason.is_some()
            || !self.tool_calls.is_empty()
    }
}

/// A field by its dotted path. A key that itself holds a dot (Qwen's
/// `event.name`) is found too: the whole rest is tried as one key first.
fn field<'a>(v: &'a Value, dotted: &str) -> Option<&'a Value> {
    if let Some(x) = v.get(dotted) {
        return Some(x);
    }
    dotted
        .match_indices('.')
        .find_map(|(i, _)| field(v.get(&dotted[..i])?, &dotted[i + 1..]))
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn passes(v: &Value, filter: &BTreeMap<String, String>) -> bool {
    filter
        .iter()
        .all(|(k, want)| field(v, k).and_then(scalar).as_deref() == Some(want.as_str()))
}

/// A field's text: a string, or a list of parts whose type is one of `types`
/// (joined), leaving out parts marked `skip` (thoughts).
fn text_of(v: &Value, types: &[String], skip: Option<&str>) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| {
                    p.get("type")
                        .and_then(Value::as_str)
                        .is_none_or(|t| types.iter().any(|w| w == t))
                })
                .filter(|p| skip.is_none_or(|k| p.get(k).and_then(Value::as_bool) != Some(true)))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.concat())
        }
        _ => None,
    }
}

fn number(v: Option<&Value>) -> u64 {
    v.and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f as u64)))
        .unwrap_or(0)
}

/// A tool call's input in one short line.
fn summary(v: Option<&Value>) -> String {
    let s = match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    let s = s.replace('\n', " ");
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// The prompt as the record stores it, for comparison (tabs and trailing
/// blanks as the record's profile says; both ends' blanks never count).
fn norm(record: Option<&RecordDef>, s: &str) -> String {
    let s = match record.and_then(|r| r.tab_width) {
        Some(n) => s.replace('\t', &" ".repeat(n)),
        None => s.to_string(),
    };
    s.trim().to_string()
}

/// The texts of a prompt entry, or `None` when `v` is no prompt.
fn prompt_text(def: &ReplyDef, record: Option<&RecordDef>, v: &Value) -> Option<String> {
    let (filter, text) = match (&def.prompt, record) {
        (Some(p), _) => (&p.filter, p.text.as_str()),
        (None, Some(r)) => (&r.filter, r.text.as_str()),
        (None, None) => return None,
    };
    if !passes(v, filter) {
        return None;
    }
    let t = text_of(field(v, text)?, &["text".to_string()], None)?;
    Some(
        match record
            .and_then(|r| r.unwrap.as_deref())
            .map(regex::Regex::new)
        {
            Some(Ok(re)) => re.replace_all(&t, "$text").into_owned(),
            _ => t,
        },
    )
}

/// The entries of a `json` reply file: one object a line, or one document
/// (its `messages` field, or itself when it is a list).
pub fn entries(def: &ReplyDef, raw: &str) -> Vec<Value> {
    if let Ok(doc) = serde_json::from_str::<Value>(raw) {
        let list = match (&def.messages, &doc) {
            (_, Value::Array(_)) => Some(&doc),
            (Some(m), _) => field(&doc, m),
            (None, _) => None,
        };
        if let Some(Value::Array(a)) = list {
            return a.clone();
        }
        return vec![doc];
    }
    let mut lines: Vec<Value> = raw
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect();
    if let Some(by) = def.order_by.as_deref() {
        let mut last = String::new();
        let mut keyed: Vec<(String, Value)> = lines
            .into_iter()
            .map(|v| {
                if let Some(k) = field(&v, by).and_then(Value::as_str) {
                    last = k.to_string();
                }
                (last.clone(), v)
            })
            .collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        lines = keyed.into_iter().map(|(_, v)| v).collect();
    }
    lines
}

/// The answer to `body` in `entries`: the entries after the last prompt entry
/// whose text is the body, up to the next prompt entry or the end. `since`:
/// the entries the file held before the prompt was typed (its entry comes after).
pub fn read_entries(
    def: &ReplyDef,
    record: Option<&RecordDef>,
    body: &str,
    entries: &[Value],
    since: Option<usize>,
) -> Option<Answer> {
    let want = norm(record, body);
    let is_this = |t: &str| match def.prompt_match {
        PromptMatch::Exact => norm(record, t) == want,
        PromptMatch::Contains => norm(record, t).contains(&want),
    };
    // After a mark, this prompt's entry is the first that matches: a later one
    // (a person typed the same words meanwhile, or more words that contain
    // them) is someone else's turn. Without a usable mark (none; the file was
    // rewritten shorter), the last one.
    let (since, first) = match since {
        Some(n) if n <= entries.len() => (n, true),
        _ => (0, false),
    };
    let this = |v: &Value| prompt_text(def, record, v).is_some_and(|t| is_this(&t));
    let start = since
        + if first {
            entries[since..].iter().position(this)?
        } else {
            entries[since..].iter().rposition(this)?
        };
    let mut a = Answer {
        source: "transcript".into(),
        ..Answer::default()
    };
    let mut texts: Vec<String> = Vec::new();
    let mut spare: Vec<String> = Vec::new();
    let mut usage: Vec<(Option<String>, Tokens, Option<f64>)> = Vec::new();
    // up to the next prompt: someone else's, reported and never read
    let rest = &entries[start + 1..];
    let end = rest
        .iter()
        .position(|v| prompt_text(def, record, v).is_some())
        .unwrap_or(rest.len());
    if let Some(t) = rest.get(end).and_then(|v| prompt_text(def, record, v)) {
        a.other_prompts.push(t);
    }
    for v in latest_copies(def, &rest[..end]) {
        // an entry that is an API error is no reply text (Claude writes its
        // error as an assistant message); a reply after an error (a retry that
        // went through) means the turn did not end in it
        let is_error = def.take.iter().any(|t| {
            t.kind == TakeKind::Error
                && passes(v, &t.filter)
                && t.field.as_deref().is_none_or(|f| field(v, f).is_some())
        });
        let (n_texts, n_tools) = (texts.len(), a.tool_calls.len());
        for tk in def.take.iter().filter(|t| passes(v, &t.filter)) {
            if is_error && tk.kind == TakeKind::Text {
                continue;
            }
            let into = match tk.fallback {
                true => &mut spare,
                false => &mut texts,
            };
            take(tk, v, &mut a, into, &mut usage);
        }
        if !is_error && (texts.len() > n_texts || a.tool_calls.len() > n_tools) {
            a.error = None;
        }
    }
    if texts.is_empty() {
        texts = spare;
    }
    a.text = texts.join("\n\n");
    if !usage.is_empty() {
        let mut t = Tokens::default();
        let mut cost: Option<f64> = None;
        for (_, u, c) in &usage {
            t.input += u.input;
            t.output += u.output;
            t.cache += u.cache;
            if let Some(c) = c {
                cost = Some(cost.unwrap_or(0.0) + c);
            }
        }
        a.tokens = Some(t);
        a.cost = cost;
    }
    Some(a)
}

fn take(
    tk: &Take,
    v: &Value,
    a: &mut Answer,
    texts: &mut Vec<String>,
    usage: &mut Vec<(Option<String>, Tokens, Option<f64>)>,
) {
    let items = || -> Vec<&Value> {
        match &tk.list {
            Some(l) => field(v, l)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter(|i| passes(i, &tk.item)).collect())
                .unwrap_or_default(),
            None => vec![v],
        }
    };
    let status_of = |i: &Value| -> Option<String> {
        let s = scalar(field(i, tk.status.as_deref()?)?)?;
        if tk.denied.contains(&s) {
            Some("denied".into())
        } else if tk.approved.contains(&s) {
            Some("approved".into())
        } else {
            None
        }
    };
    match tk.kind {
        TakeKind::Text => {
            let types = match tk.parts.is_empty() {
                true => vec!["text".to_string()],
                false => tk.parts.clone(),
            };
            let t = tk
                .field
                .as_deref()
                .and_then(|f| field(v, f))
                .and_then(|f| text_of(f, &types, tk.skip_part.as_deref()));
            if let Some(t) = t.filter(|t| !t.trim().is_empty()) {
                texts.push(t);
            }
        }
        TakeKind::Tool => {
            for i in items() {
                let Some(name) = tk
                    .name
                    .as_deref()
                    .and_then(|n| field(i, n))
                    .and_then(scalar)
                else {
                    continue;
                };
                a.tool_calls.push(ToolCall {
                    name,
                    input_summary: summary(tk.input.as_deref().and_then(|f| field(i, f))),
                    status: status_of(i).unwrap_or_else(|| "pending".into()),
                    id: tk.id.as_deref().and_then(|f| field(i, f)).and_then(scalar),
                });
            }
        }
        TakeKind::ToolResult => {
            for i in items() {
                let id = tk.id.as_deref().and_then(|f| field(i, f)).and_then(scalar);
                let denied_text = tk.denied_text.as_deref().and_then(|re| {
                    let text = field(i, tk.field.as_deref()?).map(|f| {
                        text_of(f, &["text".to_string()], None).unwrap_or_else(|| f.to_string())
                    })?;
                    regex::Regex::new(re).ok().map(|re| re.is_match(&text))
                });
                let status = match denied_text {
                    Some(true) => "denied".to_string(),
                    _ => status_of(i).unwrap_or_else(|| "approved".into()),
                };
                // the call it answers, or the last call still pending
                let call = match &id {
                    Some(id) => a.tool_calls.iter_mut().find(|c| c.id.as_ref() == Some(id)),
                    None => a
                        .tool_calls
                        .iter_mut()
                        .rev()
                        .find(|c| c.status == "pending"),
                };
                if let Some(c) = call {
                    c.status = status;
                }
            }
        }
        TakeKind::Tokens => {
            let f = |p: &Option<String>| number(p.as_deref().and_then(|p| field(v, p)));
            let t = Tokens {
                input: f(&tk.input_tokens),
                output: f(&tk.output_tokens),
                cache: tk.cache_tokens.iter().map(|p| number(field(v, p))).sum(),
            };
            let cost = tk
                .cost
                .as_deref()
                .and_then(|p| field(v, p))
                .and_then(Value::as_f64);
            let group = tk
                .group
                .as_deref()
                .and_then(|g| field(v, g))
                .and_then(scalar);
            if field(v, tk.input_tokens.as_deref().unwrap_or("")).is_none()
                && field(v, tk.output_tokens.as_deref().unwrap_or("")).is_none()
            {
                return;
            }
            match usage
                .iter_mut()
                .find(|(g, ..)| group.is_some() && *g == group)
            {
                Some(u) => *u = (group, t, cost),
                None => usage.push((group, t, cost)),
            }
        }
        TakeKind::Stop => {
            let s = match &tk.value {
                Some(s) => Some(s.clone()),
                None => tk
                    .field
                    .as_deref()
                    .and_then(|f| field(v, f))
                    .and_then(scalar),
            };
            if let Some(s) = s {
                a.stop_reason = Some(s);
            }
        }
        TakeKind::Error => {
            // an entry without the field is no error (Codex's `task_complete`
            // holds an `error` only when the turn failed)
            let t = match tk.field.as_deref() {
                Some(f) => match field(v, f) {
                    Some(f) => text_of(f, &["text".to_string()], None)
                        .unwrap_or_else(|| "API error".into()),
                    None => return,
                },
                None => "API error".into(),
            };
            a.error = Some(t);
        }
    }
}

/// The entries, each only in its latest copy (`entry_id`), in the order of
/// their first copies.
fn latest_copies<'a>(def: &ReplyDef, entries: &'a [Value]) -> Vec<&'a Value> {
    let Some(idf) = def.entry_id.as_deref() else {
        return entries.iter().collect();
    };
    let mut out: Vec<&Value> = Vec::new();
    let mut at: BTreeMap<String, usize> = BTreeMap::new();
    for v in entries {
        match field(v, idf).and_then(scalar) {
            Some(id) => match at.get(&id) {
                Some(&i) => out[i] = v,
                None => {
                    at.insert(id, out.len());
                    out.push(v);
                }
            },
            None => out.push(v),
        }
    }
    out
}

/// `1.2k` -> 1200, `3` -> 3, `2.5M` -> 2500000.
fn count_with_suffix(s: &str) -> u64 {
    let s = s.trim().replace(',', "");
    let (num, mult) = match s.chars().last() {
        Some('k') | Some('K') => (&s[..s.len() - 1], 1e3),
        Some('m') | Some('M') => (&s[..s.len() - 1], 1e6),
        _ => (s.as_str(), 1.0),
    };
    num.parse::<f64>()
        .map(|n| (n * mult).round() as u64)
        .unwrap_or(0)
}

/// The answer to `body` in a markdown chat log (Aider's): each prompt line
/// starts with `user_prefix`; the reply is the lines after, up to the next
/// prompt; the agent's notes (`note_prefix`) are not reply text but may hold
/// the tokens, the cost and an API error.
pub fn read_markdown(
    def: &ReplyDef,
    body: &str,
    raw: &str,
    since: Option<usize>,
) -> Option<Answer> {
    let np = def.note_prefix.as_deref().unwrap_or("> ");
    let blocks = markdown_blocks(def, raw);
    let want = body.trim().to_string();
    // `since`: the prompts the file held before this one was typed
    let prompts = blocks.iter().filter(|(p, _)| *p).count();
    // the first match after a mark, the last without one (see `read_entries`)
    let (since, first) = match since {
        Some(n) if n <= prompts => (n, true),
        _ => (0, false),
    };
    let mut matches = blocks
        .iter()
        .enumerate()
        .filter(|(_, (p, _))| *p)
        .skip(since)
        .filter(|(_, (_, ls))| ls.join("\n").trim() == want)
        .map(|(i, _)| i);
    let i = if first {
        matches.next()?
    } else {
        matches.last()?
    };
    let mut a = Answer {
        source: "transcript".into(),
        ..Answer::default()
    };
    let re = |r: &Option<String>| r.as_deref().and_then(|r| regex::Regex::new(r).ok());
    let (tok, cost, err) = (
        re(&def.tokens_regex),
        re(&def.cost_regex),
        re(&def.error_regex),
    );
    let mut text: Vec<&str> = Vec::new();
    if let Some((_, ls)) = blocks.get(i + 1) {
        for l in ls {
            let Some(note) = l.strip_prefix(np).or((*l == np.trim_end()).then_some("")) else {
                text.push(l);
                continue;
            };
            if let Some(c) = tok.as_ref().and_then(|r| r.captures(note)) {
                let g = |n: &str| c.name(n).map_or(0, |m| count_with_suffix(m.as_str()));
                a.tokens = Some(Tokens {
                    input: g("input"),
                    output: g("output"),
                    cache: g("cache"),
                });
            }
            if let Some(c) = cost.as_ref().and_then(|r| r.captures(note)) {
                a.cost = c.name("cost").and_then(|m| m.as_str().parse().ok());
            }
            if let Some(c) = err.as_ref().and_then(|r| r.captures(note)) {
                a.error = Some(c.name("text").map_or(note, |m| m.as_str()).to_string());
            }
        }
    }
    if let Some((_, ls)) = blocks.get(i + 2) {
        a.other_prompts.push(ls.join("\n"));
    }
    a.text = text.join("\n").trim().to_string();
    Some(a)
}

/// How many entries (`json`) or prompts (`markdown-chat`) a reply file holds:
/// marked before typing, so that only what comes after is this prompt's.
pub fn count(def: &ReplyDef, raw: &str) -> usize {
    match def.format {
        ReplyFormat::MarkdownChat => markdown_blocks(def, raw).iter().filter(|(p, _)| *p).count(),
        _ => entries(def, raw).len(),
    }
}

/// A markdown chat log as blocks of lines: (a prompt's, its lines without the prefix).
fn markdown_blocks<'a>(def: &ReplyDef, raw: &'a str) -> Vec<(bool, Vec<&'a str>)> {
    let up = def.user_prefix.as_deref().unwrap_or("#### ");
    let mut blocks: Vec<(bool, Vec<&str>)> = Vec::new();
    for line in raw.split('\n') {
        let (p, l) = match line.strip_prefix(up) {
            Some(l) => (true, l),
            None if line == up.trim_end() => (true, ""),
            None => (false, line),
        };
        match blocks.last_mut() {
            Some((bp, ls)) if *bp == p => ls.push(l),
            _ => blocks.push((p, vec![l])),
        }
    }
    blocks
}

/// What a reply file holds, read once: entries (`json`, `sqlite`) or the text
/// of a chat log (`markdown-chat`).
enum Held {
    Entries(Vec<Value>),
    Chat(String),
}

impl Held {
    fn load(
        def: &ReplyDef,
        files: &crate::io::files::Files,
        path: &Path,
        cwd: Option<&Path>,
    ) -> Option<Held> {
        let text = || Some(String::from_utf8_lossy(&files.read(path)?).into_owned());
        match def.format {
            ReplyFormat::Json => Some(Held::Entries(entries(def, &text()?))),
            ReplyFormat::MarkdownChat => Some(Held::Chat(text()?)),
            ReplyFormat::Sqlite => {
                sqlite::entries(files, path, def.query.as_deref()?, cwd).map(Held::Entries)
            }
        }
    }

    /// [`count`]: the entries, or the prompts of a chat log.
    fn count(&self, def: &ReplyDef) -> usize {
        match self {
            Held::Entries(e) => e.len(),
            Held::Chat(raw) => count(def, raw),
        }
    }
}

/// Read the answer to `body` from one file that held `since` entries (or
/// prompts) before the prompt was typed.
pub fn read_file(
    def: &ReplyDef,
    record: Option<&RecordDef>,
    body: &str,
    files: &crate::io::files::Files,
    path: &Path,
    cwd: Option<&Path>,
    since: Option<usize>,
) -> Option<Answer> {
    let mut a = match Held::load(def, files, path, cwd)? {
        Held::Entries(e) => read_entries(def, record, body, &e, since)?,
        Held::Chat(raw) => read_markdown(def, body, &raw, since)?,
    };
    a.path = Some(path.display().to_string());
    Some(a)
}

/// The files a pattern names, newest first (a `*` in any component).
fn matching(files: &crate::io::files::Files, pattern: &Path) -> Vec<PathBuf> {
    let comps: Vec<String> = pattern
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let Some(first) = comps.iter().position(|c| c.contains('*')) else {
        return vec![pattern.to_path_buf()];
    };
    let mut found = vec![comps[..first].iter().collect::<PathBuf>()];
    for c in &comps[first..] {
        found = match c.split_once('*') {
            None => found.into_iter().map(|d| d.join(c)).collect(),
            Some((pre, post)) => found
                .iter()
                .flat_map(|d| files.list(d, pre, post).into_iter().take(8))
                .collect(),
        };
    }
    found
}

/// Where the agent under `pane_pid` keeps its replies: the files to look in,
/// newest first, and the agent's directory (a store shared by all its
/// sessions is read for this directory's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplyFiles {
    pub paths: Vec<PathBuf>,
    pub cwd: Option<PathBuf>,
    /// The first path is the file the receipt's proof read this pane's prompt
    /// from (tied to this agent process); the others are only the pattern's.
    pub proved_first: bool,
}

/// [`ReplyFiles`] of the agent under `pane_pid`. `proved`: the file the
/// receipt's proof read the prompt from.
pub fn reply_files(
    profile: &Profile,
    pane_pid: Option<u32>,
    proved: Option<&str>,
) -> std::result::Result<ReplyFiles, String> {
    let def = profile
        .def
        .reply
        .as_ref()
        .ok_or_else(|| format!("the {} profile names no record of replies", profile.name()))?;
    let files = crate::io::files::Files::of_tmux();
    let mut out: Vec<PathBuf> = Vec::new();
    let mut proved_first = false;
    if def.path.is_none() {
        if let Some(p) = proved {
            out.push(PathBuf::from(p));
            proved_first = true;
        }
    }
    let pattern = def
        .path
        .clone()
        .or_else(|| profile.def.record.as_ref().map(|r| r.path.clone()))
        .ok_or("no reply path")?;
    let pane_pid = pane_pid.ok_or("tmux named no pane process")?;
    let walked = files.process_tree(pane_pid);
    let place = crate::io::record::place(&files, profile, pane_pid, &walked, &pattern)?;
    for p in matching(&files, &place.pattern) {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(ReplyFiles {
        paths: out,
        cwd: Some(place.cwd),
        proved_first,
    })
}

/// What each reply file held before the prompt was typed ([`count`]); a file
/// made since is read from its start.
pub type Marks = BTreeMap<PathBuf, usize>;

/// Mark the agent's reply files before anything is typed.
pub fn mark(profile: &Profile, replies: &ReplyFiles) -> Marks {
    let Some(def) = profile.def.reply.as_ref() else {
        return Marks::new();
    };
    let files = crate::io::files::Files::of_tmux();
    replies
        .paths
        .iter()
        .filter_map(|p| {
            let held = Held::load(def, &files, p, replies.cwd.as_deref())?;
            Some((p.clone(), held.count(def)))
        })
        .collect()
}

/// The answer to `body` from the reply file that holds its prompt after its
/// mark: the proof's own file when it does; else the one file that does. When
/// several sessions' files received the same prompt since (a fan-out to two
/// panes of one agent in one directory), nothing says which is this pane's:
/// no answer, rather than another pane's.
pub fn read_answer(profile: &Profile, body: &str, replies: &ReplyFiles, marks: &Marks) -> Answer {
    let Some(def) = profile.def.reply.as_ref() else {
        return Answer::none(format!(
            "the {} profile names no record of replies",
            profile.name()
        ));
    };
    let files = crate::io::files::Files::of_tmux();
    let cwd = replies.cwd.as_deref();
    let read = |p: &PathBuf| {
        // a file the mark did not see was made since: all of it is new
        let since = Some(marks.get(p).copied().unwrap_or(0));
        read_file(
            def,
            profile.def.record.as_ref(),
            body,
            &files,
            p,
            cwd,
            since,
        )
    };
    if replies.proved_first {
        if let Some(a) = replies.paths.first().and_then(read) {
            return a;
        }
    }
    let mut found: Vec<Answer> = replies.paths.iter().filter_map(read).collect();
    match found.len() {
        0 => Answer::none("the prompt's entry is not in the agent's record"),
        1 => found.remove(0),
        n => Answer::none(format!(
            "{n} sessions' records received this prompt since it was typed ({}): nothing ties one to this pane's agent, so none is given as its answer",
            found
                .iter()
                .filter_map(|a| a.path.as_deref())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

mod sqlite;

#[cfg(test)]
mod tests;
