//! Agent profiles: everything promptgate knows about one agent, as data.
//!
//! Built-ins are embedded TOML (`claude.toml`, `codex.toml`, `gemini.toml`,
//! `opencode.toml`, `kilo.toml`, `copilot.toml`, …).
//! A user file (`$XDG_CONFIG_HOME/promptgate/agents.toml` or `--profiles FILE`)
//! adds agents or overrides built-ins by name, without a rebuild. No other
//! module knows an agent's glyphs, markers or timings.

pub mod record;
pub mod reply;

use crate::core::error::{Error, Result};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

const BUILTIN: &[(&str, &str)] = &[
    ("claude", include_str!("claude.toml")),
    ("codex", include_str!("codex.toml")),
    ("gemini", include_str!("gemini.toml")),
    // the agents added after the first three
    ("opencode", include_str!("opencode.toml")),
    ("kilo", include_str!("kilo.toml")),
    ("copilot", include_str!("copilot.toml")),
    ("qwen", include_str!("qwen.toml")),
    ("auggie", include_str!("auggie.toml")),
    ("aider", include_str!("aider.toml")),
];

/// One agent, as written in TOML.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileDef {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The agent releases whose real screens this profile was checked against
    /// (captures in fixtures/, the real-agent suite), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checked: Vec<String>,
    #[serde(default)]
    pub identify: IdentifyDef,
    pub composer: ComposerDef,
    /// Busy markers (screen regexes, or `on = "title"` for pane-title spinners).
    #[serde(default)]
    pub busy: Vec<MarkerDef>,
    /// Dialog markers; each has a `kind`.
    #[serde(default)]
    pub dialog: Vec<MarkerDef>,
    /// Markers that the agent parked a submitted message (verify: `queued`).
    #[serde(default)]
    pub queued: Vec<MarkerDef>,
    /// Markers of a draft that overflowed the screen (the composer row scrolled away).
    #[serde(default)]
    pub draft: Vec<MarkerDef>,
    /// Markers of a start-up layout that only looks like a composer.
    #[serde(default)]
    pub starting: Vec<MarkerDef>,
    /// A transcript echo row of a submitted message; group `text` is the message.
    #[serde(default)]
    pub echo: Vec<String>,
    pub delivery: Capability,
    /// Where the agent records each prompt it receives (proof of receipt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<record::RecordDef>,
    /// Where the agent publishes its own state (a second witness to the screen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<record::StatusDef>,
    /// Where the agent records its replies (`ask`); absent: its record holds none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<reply::ReplyDef>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IdentifyDef {
    /// `pane_current_command` values (normalised) that mean this agent.
    #[serde(default)]
    pub commands: Vec<String>,
    /// Names in the process tree under `pane_pid` (`comm`, or any argv word's basename).
    #[serde(default)]
    pub processes: Vec<String>,
    /// Screen signature: regexes, any of which on any row identifies the agent.
    #[serde(default)]
    pub screen: Vec<String>,
    /// Pane-title signature: regexes on `pane_title` (forks that share a
    /// screen, such as Qwen Code and Gemini CLI, differ in their titles).
    #[serde(default)]
    pub title: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ComposerDef {
    /// The symbol and its glyph variants, for people (`explain`) and docs.
    #[serde(default)]
    pub symbols: Vec<String>,
    /// Regexes for the composer's first row; named group `text` is the input.
    pub prompt: Vec<String>,
    /// Regex for a continuation row of a multi-line input; group `text`.
    #[serde(default)]
    pub continuation: Option<String>,
    /// Regex of a rule row (the box's border).
    #[serde(default)]
    pub rule: Option<String>,
    /// A rule row must lie within this many rows above the composer row.
    #[serde(default)]
    pub rule_above_within: Option<usize>,
    /// The composer block must be followed directly by a rule row.
    #[serde(default)]
    pub rule_below: bool,
    /// The composer block's last row must be `pane_height - bottom_offset`.
    #[serde(default)]
    pub bottom_offset: Option<usize>,
    /// At least this many rows must follow the composer block (a status row and a
    /// footer under it), which tells a full layout from a start-up one.
    #[serde(default)]
    pub min_rows_below: Option<usize>,
    /// The cursor must be inside the composer block (when the cursor is known).
    #[serde(default = "yes")]
    pub cursor_in_block: bool,
    /// Required `cursor_flag` (`true`: the app shows its cursor), when known.
    #[serde(default)]
    pub cursor_visible: Option<bool>,
    /// Text that counts as an empty composer (regexes on the trimmed text).
    #[serde(default)]
    pub placeholders: Vec<String>,
    /// Regexes of a paste placeholder in the composer (`[Pasted text #1 +91 lines]`).
    #[serde(default)]
    pub paste_placeholders: Vec<String>,
    /// How the agent draws its placeholder (`capture-pane -e`): composer text
    /// whose every cell has one of these attributes is a placeholder, text in
    /// any other style is typed. Reverse-video cells (the agent's own cursor)
    /// do not count. Names: `dim`, `grey`, `italic`, `bold`, `underline`,
    /// `fg:N`, `bg:N`. Where a read carries no attributes, `placeholders`
    /// decides alone.
    #[serde(default)]
    pub placeholder_style: Vec<String>,
    /// At most this many rows belong to one composer block.
    #[serde(default = "ten")]
    pub max_rows: usize,
    /// The block's last rows that the agent draws inside its input box under the
    /// input (OpenCode's `┃  Build · <model>` row above the box's bottom edge):
    /// part of the block, never part of its text.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub status_rows: usize,
    /// The block's rows are read only as far right as the rule under it reaches
    /// (its first run of non-blank characters): OpenCode at 200 columns draws a
    /// sidebar right of its input box, on the same rows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clip_to_rule_below: bool,
    /// Regex of the row that must lie directly under the block: the box's
    /// bottom edge (OpenCode's `╹▀▀▀…`), where `rule` matches more than that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottom_edge: Option<String>,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

fn yes() -> bool {
    true
}
fn ten() -> usize {
    10
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MarkerDef {
    pub id: String,
    pub regex: String,
    /// For dialogs: trust, api-key, onboarding, permission, login, other.
    #[serde(default)]
    pub kind: Option<String>,
    /// `screen` (default) or `title`.
    #[serde(default)]
    pub on: Option<String>,
    /// Only rows within this many rows above the composer block count.
    #[serde(default)]
    pub above: Option<usize>,
    /// Only rows within this many rows below the composer block count.
    #[serde(default)]
    pub below: Option<usize>,
    /// With `above`: rows this regex matches do not count toward the `above`
    /// rows (what an agent draws between its spinner and its box, as many rows as
    /// it likes: Claude's todo list and queued messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above_skip: Option<String>,
    /// The marker must be on the cursor row (or, when the cursor sits on a blank
    /// row, on the row of text right above it: a draft that ends in a new line).
    #[serde(default)]
    pub cursor_row: bool,
    /// The marker counts only while the app hides its cursor (`cursor_flag` 0; a
    /// screen whose cursor visibility is unknown never matches): Aider hides it
    /// while a reply streams, with no prompt row drawn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cursor_hidden: bool,
    /// The marker counts only while the app shows its cursor (`cursor_flag` 1):
    /// a draft's row, never a dialog's (whose apps hide the cursor).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cursor_visible: bool,
    /// Only rows counted from the bottom (`-1` is the last row).
    #[serde(default)]
    pub row: Option<i64>,
    /// For dialogs: a menu row that any dialog can show (`❯ 1. Yes`). It names its
    /// kind only when no dialog's own question (a marker without `generic`) is on
    /// screen.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generic: bool,
}

/// How an agent takes input: what the planner and the deliverer need.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Capability {
    /// The agent enables bracketed paste (mode 2004), so a paste arrives framed.
    pub bracketed_paste: bool,
    /// Bodies of at least this many bytes go as a paste (multi-line bodies always do,
    /// when the agent accepts bracketed paste).
    #[serde(default = "paste_min")]
    pub paste_min_bytes: usize,
    /// The tmux key that submits (`Enter`).
    #[serde(default = "enter")]
    pub submit_key: String,
    /// Wait at least this long after the body showed on screen before the submit
    /// key, when the body was typed as keys (an agent's paste-burst window).
    pub submit_delay_ms: u64,
    /// The same after a bracketed paste, which no paste-burst heuristic sees;
    /// unset: `submit_delay_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paste_submit_delay_ms: Option<u64>,
    /// Extra submit delay per KiB of body.
    #[serde(default)]
    pub submit_delay_per_kib_ms: u64,
    /// Largest raw (unframed) chunk, in bytes.
    pub raw_chunk_max: usize,
    /// Pause between raw chunks.
    #[serde(default)]
    pub pacing_ms: u64,
    /// Whether an LF typed raw inserts a newline (rather than submitting).
    #[serde(default = "yes")]
    pub raw_newline_ok: bool,
    /// Keys that clear a draft from the composer (`--replace-draft`).
    #[serde(default)]
    pub clear_keys: Vec<String>,
    /// The agent reads a `\` right before the Enter as "a new line here" and
    /// drops the `\` (Claude Code, Gemini CLI and its fork Qwen Code): a body
    /// that ends in `\` gets a space after it, so its Enter submits it whole.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backslash_enter_newline: bool,
    /// After a start-up (the gate saw the agent blank, loading or in a first-run
    /// dialog), the ready screen must hold still this long before anything is typed.
    #[serde(default = "startup_settle")]
    pub startup_settle_ms: u64,
    /// An agent whose start-up paints its prompt and then moves it a known number
    /// of times (Gemini CLI: drawn high, then moved down once when its banner
    /// lands): once the gate has seen its ready composer move down this often during
    /// the wait, the start-up layout is final and only the stability window is
    /// needed, not `startup_settle_ms`. 0: not used (the settle always applies).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub startup_moves: u32,
    /// How many extra submit presses verify may make on `stranded`.
    #[serde(default = "two")]
    pub resubmit_max: u32,
    /// At the end of a turn, the ready screen must hold still this long before the
    /// turn counts as done (`--until-done`, `ask`): an agent that still draws its
    /// reply after its busy marker went away (Copilot CLI reveals the answer's
    /// characters over a few hundred ms, at times after `Working` cleared).
    #[serde(default)]
    pub done_still_ms: u64,
    /// How long a body must look stranded after the submit key (beyond the submit
    /// delay) before verify presses it again: an agent that takes the Enter late
    /// (Aider, a Python app, under load) would get the second one as an empty
    /// prompt of its own.
    #[serde(default = "resubmit_after")]
    pub resubmit_after_ms: u64,
}

fn resubmit_after() -> u64 {
    400
}

fn startup_settle() -> u64 {
    300
}
fn paste_min() -> usize {
    64
}
fn enter() -> String {
    "Enter".into()
}
fn two() -> u32 {
    2
}

/// A profile with its regexes compiled.
#[derive(Debug, Clone)]
pub struct Profile {
    pub def: ProfileDef,
    pub prompt: Vec<Regex>,
    pub continuation: Option<Regex>,
    pub rule: Option<Regex>,
    pub bottom_edge: Option<Regex>,
    pub placeholders: Vec<Regex>,
    pub paste_placeholders: Vec<Regex>,
    pub busy: Vec<Marker>,
    pub dialog: Vec<Marker>,
    pub queued: Vec<Marker>,
    pub draft: Vec<Marker>,
    pub starting: Vec<Marker>,
    pub echo: Vec<Regex>,
    pub signature: Vec<Regex>,
    pub title_signature: Vec<Regex>,
    /// Where it came from: `builtin` or a file path.
    pub source: String,
}

#[derive(Debug, Clone)]
pub struct Marker {
    pub def: MarkerDef,
    pub re: Regex,
    /// `above_skip`, compiled.
    pub skip: Option<Regex>,
}

impl Profile {
    pub fn name(&self) -> &str {
        &self.def.name
    }
    pub fn capability(&self) -> &Capability {
        &self.def.delivery
    }

    pub fn compile(def: ProfileDef, source: &str) -> Result<Profile> {
        Self::compile_at(def, source).map_err(|b| {
            let name = b.name.clone();
            Error::Profile(format!("{name}: {}", b.what()))
        })
    }

    /// [`Profile::compile`], with where in the profile a bad value is, so that
    /// a user file's error can name its line.
    fn compile_at(def: ProfileDef, source: &str) -> std::result::Result<Profile, Bad> {
        let name = def.name.clone();
        let bad = |path: Vec<Seg>, msg: String| Bad {
            name: name.clone(),
            path,
            msg,
        };
        let re = |path: Vec<Seg>, s: &str| {
            Regex::new(s).map_err(|e| bad(path, format!("bad regex {s:?}: {}", regex_error(&e))))
        };
        let res = |path: &[Seg], v: &[String]| {
            v.iter()
                .enumerate()
                .map(|(i, s)| re(with(path, [Seg::Index(i)]), s))
                .collect::<std::result::Result<Vec<_>, _>>()
        };
        let markers = |what: &'static str, v: &[MarkerDef]| {
            v.iter()
                .enumerate()
                .map(|(i, m)| {
                    let at = |key: &'static str| vec![Seg::Key(what), Seg::Index(i), Seg::Key(key)];
                    if what == "dialog" {
                        let k = m.kind.as_deref().unwrap_or("other");
                        if !DIALOG_KINDS.contains(&k) {
                            return Err(bad(
                                at("kind"),
                                format!(
                                    "dialog {}: unknown kind '{k}' (one of {})",
                                    m.id,
                                    DIALOG_KINDS.join(", ")
                                ),
                            ));
                        }
                    }
                    match m.on.as_deref() {
                        None | Some("screen") | Some("title") => {}
                        Some(o) => {
                            return Err(bad(
                                at("on"),
                                format!("{what} {}: on = '{o}' (screen or title)", m.id),
                            ))
                        }
                    }
                    let named = |b: Bad| Bad {
                        msg: format!("{what} {}: {}", m.id, b.msg),
                        ..b
                    };
                    Ok(Marker {
                        def: m.clone(),
                        re: re(at("regex"), &m.regex).map_err(named)?,
                        skip: match &m.above_skip {
                            Some(r) => Some(re(at("above_skip"), r).map_err(named)?),
                            None => None,
                        },
                    })
                })
                .collect::<std::result::Result<Vec<_>, _>>()
        };
        let composer = |k: &'static str| vec![Seg::Key("composer"), Seg::Key(k)];
        if def.composer.prompt.is_empty() {
            return Err(bad(composer("prompt"), "composer.prompt is empty".into()));
        }
        let cap = &def.delivery;
        if cap.raw_chunk_max == 0 {
            return Err(bad(
                vec![Seg::Key("delivery"), Seg::Key("raw_chunk_max")],
                "delivery.raw_chunk_max must be > 0".into(),
            ));
        }
        // every wait is bounded, so that no clock overflows on a typo
        for (key, v, max) in [
            ("submit_delay_ms", Some(cap.submit_delay_ms), MAX_DELAY_MS),
            (
                "paste_submit_delay_ms",
                cap.paste_submit_delay_ms,
                MAX_DELAY_MS,
            ),
            (
                "submit_delay_per_kib_ms",
                Some(cap.submit_delay_per_kib_ms),
                1_000,
            ),
            ("pacing_ms", Some(cap.pacing_ms), MAX_DELAY_MS),
            (
                "startup_settle_ms",
                Some(cap.startup_settle_ms),
                MAX_DELAY_MS,
            ),
            ("resubmit_max", Some(cap.resubmit_max as u64), 10),
            ("startup_moves", Some(cap.startup_moves as u64), 10),
            ("done_still_ms", Some(cap.done_still_ms), MAX_DELAY_MS),
            (
                "resubmit_after_ms",
                Some(cap.resubmit_after_ms),
                MAX_DELAY_MS,
            ),
        ] {
            if v.is_some_and(|v| v > max) {
                return Err(bad(
                    vec![Seg::Key("delivery"), Seg::Key(key)],
                    format!("delivery.{key} = {} is over {max}", v.unwrap_or(0)),
                ));
            }
        }
        for (i, a) in def.composer.placeholder_style.iter().enumerate() {
            if !crate::core::cells::is_known(a) {
                return Err(bad(
                    with(&composer("placeholder_style"), [Seg::Index(i)]),
                    format!(
                        "unknown attribute '{a}' (dim, grey, italic, bold, underline, reverse, fg:N, bg:N)"
                    ),
                ));
            }
        }
        Ok(Profile {
            prompt: res(&composer("prompt"), &def.composer.prompt)?,
            continuation: def
                .composer
                .continuation
                .as_deref()
                .map(|s| re(composer("continuation"), s))
                .transpose()?,
            rule: def
                .composer
                .rule
                .as_deref()
                .map(|s| re(composer("rule"), s))
                .transpose()?,
            bottom_edge: def
                .composer
                .bottom_edge
                .as_deref()
                .map(|s| re(composer("bottom_edge"), s))
                .transpose()?,
            placeholders: res(&composer("placeholders"), &def.composer.placeholders)?,
            paste_placeholders: res(
                &composer("paste_placeholders"),
                &def.composer.paste_placeholders,
            )?,
            busy: markers("busy", &def.busy)?,
            dialog: markers("dialog", &def.dialog)?,
            queued: markers("queued", &def.queued)?,
            draft: markers("draft", &def.draft)?,
            starting: markers("starting", &def.starting)?,
            echo: res(&[Seg::Key("echo")], &def.echo)?,
            signature: res(
                &[Seg::Key("identify"), Seg::Key("screen")],
                &def.identify.screen,
            )?,
            title_signature: res(
                &[Seg::Key("identify"), Seg::Key("title")],
                &def.identify.title,
            )?,
            source: source.to_string(),
            def,
        })
    }
}

/// A step of the path to a value inside one `[[agent]]` table.
#[derive(Debug, Clone, Copy)]
enum Seg {
    Key(&'static str),
    Index(usize),
}

fn with<const N: usize>(path: &[Seg], more: [Seg; N]) -> Vec<Seg> {
    path.iter().copied().chain(more).collect()
}

/// A bad value in a profile, and where it is.
struct Bad {
    name: String,
    path: Vec<Seg>,
    msg: String,
}

impl Bad {
    /// `composer.prompt[0]: bad regex "(": unclosed group`
    fn what(&self) -> String {
        let mut p = String::new();
        for s in &self.path {
            match s {
                Seg::Key(k) if p.is_empty() => p += k,
                Seg::Key(k) => p += &format!(".{k}"),
                Seg::Index(i) => p += &format!("[{i}]"),
            }
        }
        format!("{p}: {}", self.msg)
    }
}

/// A regex error on one line: the regex crate's own message spans several
/// (the pattern, a caret, then `error: ...`).
fn regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("error:").map(str::trim))
        .map(str::to_string)
        .unwrap_or_else(|| text.lines().map(str::trim).collect::<Vec<_>>().join(" "))
}

/// The 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The line of the value at `path` in the `agent`-th `[[agent]]` table of a
/// user file (or of the nearest part of it that has a place).
fn line_in_file(text: &str, agent: usize, path: &[Seg]) -> Option<usize> {
    use toml_edit::{Item, Value};
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    #[derive(Clone, Copy)]
    enum Node<'a> {
        Item(&'a Item),
        Table(&'a toml_edit::Table),
        Value(&'a Value),
    }
    let mut cur = Node::Item(doc.get("agent")?);
    let mut best = None;
    for seg in std::iter::once(Seg::Index(agent)).chain(path.iter().copied()) {
        let (value, table) = match cur {
            Node::Item(Item::Value(v)) | Node::Value(v) => (Some(v), None),
            Node::Item(Item::Table(t)) | Node::Table(t) => (None, Some(t)),
            _ => (None, None),
        };
        let next = match (cur, seg, value) {
            (Node::Item(Item::ArrayOfTables(a)), Seg::Index(i), _) => a.get(i).map(Node::Table),
            (_, Seg::Key(k), None) => table.and_then(|t| t.get(k)).map(Node::Item),
            (_, Seg::Index(i), Some(Value::Array(a))) => a.get(i).map(Node::Value),
            (_, Seg::Key(k), Some(Value::InlineTable(t))) => t.get(k).map(Node::Value),
            _ => None,
        };
        let Some(next) = next else { break };
        let span = match next {
            Node::Item(i) => i.span(),
            Node::Table(t) => t.span(),
            Node::Value(v) => v.span(),
        };
        best = span.or(best);
        cur = next;
    }
    best.map(|r| line_of(text, r.start))
}

/// The longest delay a profile may set, in ms.
pub const MAX_DELAY_MS: u64 = 60_000;

pub const DIALOG_KINDS: &[&str] = &[
    "trust",
    "api-key",
    "onboarding",
    "permission",
    "login",
    "other",
];

impl ProfileDef {
    /// The newest release in `checked` (by numeric release order), if any.
    pub fn newest_checked(&self) -> Option<&str> {
        self.checked
            .iter()
            .max_by(|a, b| compare_releases(a, b))
            .map(String::as_str)
    }
}

/// Compare two release strings such as `2.1.197` and `2.1.332` part by part,
/// numerically where both parts are numbers (`0.9.1 < 0.10.0`), as text otherwise.
pub fn compare_releases(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |s: &str| -> Vec<String> {
        s.trim_start_matches('v')
            .split(['.', '-', '+'])
            .map(str::to_string)
            .collect()
    };
    let (pa, pb) = (parts(a), parts(b));
    for (x, y) in pa.iter().zip(pb.iter()) {
        let o = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(m), Ok(n)) => m.cmp(&n),
            _ => x.cmp(y),
        };
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    pa.len().cmp(&pb.len())
}

/// A user file holds `[[agent]]` tables, each a full profile.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserFile {
    #[serde(default)]
    agent: Vec<ProfileDef>,
}

/// All known profiles: built-ins, then the user's (which replace built-ins of the same name).
///
/// A built-in's regexes are compiled the first time it is used (about 0.1 ms a
/// regex, and one send needs one agent); a user file's are compiled when it is
/// loaded, so that a bad regex there is an error at once.
#[derive(Debug, Clone)]
pub struct Profiles {
    list: Vec<Entry>,
}

#[derive(Debug, Clone)]
struct Entry {
    def: ProfileDef,
    source: String,
    compiled: OnceLock<Profile>,
}

impl Entry {
    fn profile(&self) -> &Profile {
        self.compiled.get_or_init(|| {
            Profile::compile(self.def.clone(), &self.source)
                .unwrap_or_else(|e| panic!("built-in profile {}: {e}", self.def.name))
        })
    }
}

impl Profiles {
    pub fn builtin() -> Profiles {
        let list = BUILTIN
            .iter()
            .map(|(n, text)| Entry {
                def: toml::from_str(text).unwrap_or_else(|e| panic!("built-in profile {n}: {e}")),
                source: "builtin".into(),
                compiled: OnceLock::new(),
            })
            .collect();
        Profiles { list }
    }

    /// Add a user file's agents. Every error is one line naming `source` and
    /// the line: a TOML or type error, an unknown key, a bad regex or value, or
    /// an agent defined twice in the file.
    pub fn merge_str(&mut self, text: &str, source: &str) -> Result<()> {
        let at = |line: Option<usize>| line.map(|l| format!(" line {l}")).unwrap_or_default();
        let uf: UserFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            Error::Profile(format!(
                "{source}{}: {}",
                at(line),
                e.message().trim().replace('\n', "; ")
            ))
        })?;
        let mut seen: Vec<&str> = Vec::new();
        for (i, def) in uf.agent.iter().enumerate() {
            if seen.contains(&def.name.as_str()) {
                let first = uf
                    .agent
                    .iter()
                    .position(|d| d.name == def.name)
                    .unwrap_or(0);
                let name = [Seg::Key("name")];
                return Err(Error::Profile(format!(
                    "{source}{}: agent '{}' is defined twice in this file (first{})",
                    at(line_in_file(text, i, &name)),
                    def.name,
                    at(line_in_file(text, first, &name)),
                )));
            }
            seen.push(&def.name);
        }
        for (i, def) in uf.agent.into_iter().enumerate() {
            let p = Profile::compile_at(def, source).map_err(|b| {
                Error::Profile(format!(
                    "{source}{}: agent {}: {}",
                    at(line_in_file(text, i, &b.path)),
                    b.name,
                    b.what()
                ))
            })?;
            let e = Entry {
                def: p.def.clone(),
                source: source.to_string(),
                compiled: OnceLock::from(p),
            };
            match self.list.iter_mut().find(|q| q.def.name == e.def.name) {
                Some(slot) => *slot = e,
                None => self.list.push(e),
            }
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Result<&Profile> {
        self.list
            .iter()
            .find(|e| e.def.name == name)
            .map(Entry::profile)
            .ok_or_else(|| Error::UnknownAgent(name.to_string(), self.names().join(", ")))
    }

    /// Every profile as written, with where it came from (nothing compiled).
    pub fn defs(&self) -> impl Iterator<Item = (&ProfileDef, &str)> {
        self.list.iter().map(|e| (&e.def, e.source.as_str()))
    }

    /// Every profile, compiled (the built-ins on first use).
    pub fn iter(&self) -> impl Iterator<Item = &Profile> {
        self.list.iter().map(Entry::profile)
    }

    pub fn names(&self) -> Vec<&str> {
        self.list.iter().map(|e| e.def.name.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_compile() {
        let p = Profiles::builtin();
        assert_eq!(
            p.names(),
            vec![
                "claude", "codex", "gemini", "opencode", "kilo", "copilot", "qwen", "auggie",
                "aider"
            ]
        );
        assert_eq!(p.iter().count(), BUILTIN.len());
    }

    /// A built-in profile rewritten as one `[[agent]]` entry of a user file.
    pub(crate) fn as_user_entry(builtin: &str) -> String {
        let body: Vec<String> = builtin
            .lines()
            .map(|l| {
                if let Some(r) = l.strip_prefix("[[") {
                    format!("[[agent.{r}")
                } else if let Some(r) = l.strip_prefix('[') {
                    format!("[agent.{r}")
                } else {
                    l.to_string()
                }
            })
            .collect();
        format!("[[agent]]\n{}\n", body.join("\n"))
    }

    #[test]
    fn user_file_overrides_and_adds() {
        let mut p = Profiles::builtin();
        let claude =
            as_user_entry(BUILTIN[0].1).replace("submit_delay_ms = 130", "submit_delay_ms = 999");
        let mine = as_user_entry(BUILTIN[0].1).replacen("name = \"claude\"", "name = \"mine\"", 1);
        p.merge_str(&format!("{claude}\n{mine}"), "test").unwrap();
        assert_eq!(p.get("claude").unwrap().capability().submit_delay_ms, 999);
        assert_eq!(p.get("claude").unwrap().source, "test");
        assert!(p.get("mine").is_ok());
        assert_eq!(p.names().last(), Some(&"mine"));
        assert_eq!(p.names().len(), BUILTIN.len() + 1);
    }

    #[test]
    fn a_typo_in_a_user_file_is_a_profile_error() {
        let mut p = Profiles::builtin();
        let bad = as_user_entry(BUILTIN[0].1).replace("submit_delay_ms", "submit_dealy_ms");
        assert!(matches!(p.merge_str(&bad, "t"), Err(Error::Profile(_))));
    }

    #[test]
    fn builtins_state_the_releases_they_were_checked_against() {
        let p = Profiles::builtin();
        for (d, _) in p.defs() {
            assert!(!d.checked.is_empty(), "{}: no `checked` releases", d.name);
        }
        let claude = p.get("claude").unwrap();
        assert!(claude.def.checked.iter().any(|v| v == "2.1.332"));
        assert_eq!(claude.def.newest_checked(), Some("2.1.332"));
    }

    #[test]
    fn releases_compare_numerically() {
        use std::cmp::Ordering::*;
        assert_eq!(compare_releases("2.1.197", "2.1.332"), Less);
        assert_eq!(compare_releases("0.9.1", "0.10.0"), Less);
        assert_eq!(compare_releases("0.61.0", "0.61.0"), Equal);
        assert_eq!(compare_releases("2.1.332", "2.1.33"), Greater);
    }

    #[test]
    fn unknown_agent_is_an_error() {
        let p = Profiles::builtin();
        assert!(matches!(p.get("nope"), Err(Error::UnknownAgent(..))));
    }

    #[test]
    fn bad_dialog_kind_is_refused() {
        let t = BUILTIN[0]
            .1
            .replacen("kind = \"trust\"", "kind = \"bogus\"", 1);
        let def: ProfileDef = toml::from_str(&t).unwrap();
        assert!(Profile::compile(def, "t").is_err());
    }
}
