//! Every reader against the records the fake agents write, in each agent's
//! format (`fake_agent::records`), read with the built-in profiles' `[reply]`.

use super::*;
use crate::app::fake_agent::records::{aider_reply, prompt_entry, reply_entries, FakeReply};
use crate::core::profile::Profiles;

const AGENTS: [&str; 5] = ["claude", "codex", "gemini", "qwen", "copilot"];

fn profile(name: &str) -> crate::core::profile::Profile {
    Profiles::builtin().get(name).unwrap().clone()
}

/// A record with an older turn, this prompt and its reply, as `agent` writes it.
fn record(agent: &str, prompt: &str, r: &FakeReply, after: Option<&str>) -> String {
    let mut v = vec![prompt_entry(agent, "an older prompt")];
    v.extend(reply_entries(agent, &FakeReply::to("x", "an older reply")));
    v.push(prompt_entry(agent, prompt));
    v.extend(reply_entries(agent, r));
    if let Some(a) = after {
        v.push(prompt_entry(agent, a));
        v.extend(reply_entries(
            agent,
            &FakeReply::to(a, "the reply to the other prompt"),
        ));
    }
    v.iter().map(|v| format!("{v}\n")).collect()
}

fn read(agent: &str, prompt: &str, raw: &str) -> Answer {
    let p = profile(agent);
    let def = p.def.reply.as_ref().expect("a [reply]");
    match def.format {
        ReplyFormat::Json => {
            read_entries(def, p.def.record.as_ref(), prompt, &entries(def, raw), None)
        }
        ReplyFormat::MarkdownChat => read_markdown(def, prompt, raw, None),
        ReplyFormat::Sqlite => panic!("{agent}: a store, not a file"),
    }
    .expect("the prompt's entry")
}

#[test]
fn the_answer_is_the_reply_byte_for_byte_with_its_tokens() {
    let prompt = "what is\n\tthe answer?";
    let text = "The answer is 42.\n\n```sh\necho  42 \n```";
    for agent in AGENTS {
        let r = FakeReply::to(prompt, text);
        let a = read(agent, prompt, &record(agent, prompt, &r, None));
        assert_eq!(a.text, text, "{agent}");
        assert_eq!(a.source, "transcript");
        let t = a.tokens.expect(agent);
        assert_eq!(
            (t.input, t.output, t.cache),
            (r.input_tokens, r.output_tokens, r.cache_tokens),
            "{agent}"
        );
        assert!(a.other_prompts.is_empty(), "{agent}");
        assert!(a.error.is_none(), "{agent}");
    }
    let r = FakeReply::to(prompt, text);
    let a = read(
        "aider",
        prompt,
        &format!(
            "# aider chat started\n\n{}{}",
            aider_reply("an older prompt", &FakeReply::to("x", "old")),
            aider_reply(prompt, &r)
        ),
    );
    assert_eq!(a.text, text);
    let t = a.tokens.unwrap();
    assert_eq!((t.input, t.output), (r.input_tokens, r.output_tokens));
    assert_eq!(a.cost, Some(0.01));
}

#[test]
fn stop_reason_where_the_record_keeps_one() {
    for (agent, want) in [
        ("claude", "end_turn"),
        ("codex", "end_turn"),
        ("copilot", "end_turn"),
    ] {
        let a = read(
            agent,
            "p",
            &record(agent, "p", &FakeReply::to("p", "r"), None),
        );
        assert_eq!(a.stop_reason.as_deref(), Some(want), "{agent}");
    }
}

#[test]
fn a_tool_call_is_reported_with_its_name_and_how_it_went() {
    for agent in AGENTS {
        for status in ["approved", "denied", "pending"] {
            let mut r = FakeReply::to("p", "done");
            r.tool = Some(("Bash".into(), "ls -la".into()));
            r.tool_status = status.into();
            let a = read(agent, "p", &record(agent, "p", &r, None));
            assert_eq!(a.tool_calls.len(), 1, "{agent} {status}");
            let c = &a.tool_calls[0];
            assert_eq!(c.name, "Bash", "{agent}");
            assert!(
                c.input_summary.contains("ls -la"),
                "{agent}: {}",
                c.input_summary
            );
            // copilot's record says a call ran or failed, never that a person denied it
            let want = if agent == "copilot" && status == "denied" {
                "approved"
            } else {
                status
            };
            assert_eq!(c.status, want, "{agent} {status}");
        }
    }
}

#[test]
fn an_api_error_turn_gives_its_error_text() {
    for agent in ["claude", "codex", "gemini", "copilot"] {
        let mut r = FakeReply::to("p", "");
        r.error = Some("API Error: overloaded".into());
        let a = read(agent, "p", &record(agent, "p", &r, None));
        assert_eq!(a.error.as_deref(), Some("API Error: overloaded"), "{agent}");
    }
    let mut r = FakeReply::to("p", "");
    r.error = Some("Connection refused".into());
    let a = read("aider", "p", &aider_reply("p", &r));
    assert_eq!(
        a.error.as_deref(),
        Some("litellm.APIConnectionError: Connection refused")
    );
}

#[test]
fn another_prompt_after_this_one_is_reported_not_mixed_in() {
    for agent in AGENTS {
        let r = FakeReply::to("mine", "my reply");
        let a = read(
            agent,
            "mine",
            &record(agent, "mine", &r, Some("typed by hand")),
        );
        assert_eq!(a.text, "my reply", "{agent}");
        assert_eq!(a.other_prompts.len(), 1, "{agent}");
        assert!(a.other_prompts[0].contains("typed by hand"), "{agent}");
        let t = a.tokens.unwrap();
        assert_eq!(
            t.output, r.output_tokens,
            "{agent}: the other reply's usage is not added"
        );
    }
    let raw = format!(
        "{}{}",
        aider_reply("mine", &FakeReply::to("mine", "my reply")),
        aider_reply("typed by hand", &FakeReply::to("x", "other"))
    );
    let a = read("aider", "mine", &raw);
    assert_eq!(a.text, "my reply");
    assert_eq!(a.other_prompts, vec!["typed by hand".to_string()]);
}

#[test]
fn never_an_older_reply() {
    // the same prompt sent twice: the answer is the reply after the last one
    for agent in AGENTS {
        let mut v = vec![prompt_entry(agent, "again")];
        v.extend(reply_entries(agent, &FakeReply::to("again", "first reply")));
        v.push(prompt_entry(agent, "again"));
        let raw: String = v.iter().map(|v| format!("{v}\n")).collect();
        let a = read(agent, "again", &raw);
        assert_eq!(a.text, "", "{agent}: the second has no reply yet");
        assert!(!a.has_reply(), "{agent}");
    }
    // a prompt that is not in the record has no answer at all
    let p = profile("claude");
    let def = p.def.reply.as_ref().unwrap();
    let raw = record("claude", "other", &FakeReply::to("other", "x"), None);
    assert!(read_entries(
        def,
        p.def.record.as_ref(),
        "mine",
        &entries(def, &raw),
        None
    )
    .is_none());
}

#[test]
fn a_json_document_with_a_messages_list_is_read_too() {
    // older gemini: one document, `messages`
    let r = FakeReply::to("p", "from the document");
    let mut msgs = vec![prompt_entry("gemini", "p")];
    msgs.extend(reply_entries("gemini", &r));
    let doc = serde_json::json!({"sessionId": "s", "messages": msgs}).to_string();
    assert_eq!(read("gemini", "p", &doc).text, "from the document");
}

#[test]
fn agents_whose_record_holds_no_replies_say_so() {
    let profiles = Profiles::builtin();
    let p = profiles.get("auggie").unwrap();
    assert!(p.def.reply.is_none());
    let a = read_answer(p, "x", &ReplyFiles::default(), &Marks::new());
    assert_eq!(a.source, "none");
    assert!(a.why.unwrap().contains("no record of replies"));
}

#[test]
fn counts_with_a_suffix() {
    assert_eq!(count_with_suffix("1.2k"), 1200);
    assert_eq!(count_with_suffix("37"), 37);
    assert_eq!(count_with_suffix("2.5M"), 2_500_000);
}

#[test]
fn a_prompt_recorded_before_the_mark_is_never_this_one() {
    // the same prompt asked before, and this one not (yet) in the record: no
    // answer, never the older reply
    for agent in AGENTS {
        let p = profile(agent);
        let def = p.def.reply.as_ref().unwrap();
        let raw = record(
            agent,
            "again",
            &FakeReply::to("again", "the older reply"),
            None,
        );
        let n = count(def, &raw);
        assert!(
            read_entries(
                def,
                p.def.record.as_ref(),
                "again",
                &entries(def, &raw),
                Some(n)
            )
            .is_none(),
            "{agent}"
        );
        // once it is recorded after the mark, its reply is the answer
        let mut more = vec![prompt_entry(agent, "again")];
        more.extend(reply_entries(
            agent,
            &FakeReply::to("again", "the new reply"),
        ));
        let raw2 = raw.clone() + &more.iter().map(|v| format!("{v}\n")).collect::<String>();
        let a = read_entries(
            def,
            p.def.record.as_ref(),
            "again",
            &entries(def, &raw2),
            Some(n),
        )
        .unwrap();
        assert_eq!(a.text, "the new reply", "{agent}");
    }
    let p = profile("aider");
    let def = p.def.reply.as_ref().unwrap();
    let raw = aider_reply("again", &FakeReply::to("again", "old"));
    let n = count(def, &raw);
    assert_eq!(n, 1);
    assert!(read_markdown(def, "again", &raw, Some(n)).is_none());
    let raw2 = raw + &aider_reply("again", &FakeReply::to("again", "new"));
    assert_eq!(
        read_markdown(def, "again", &raw2, Some(n)).unwrap().text,
        "new"
    );
}

#[test]
fn codex_without_response_items_answers_from_its_agent_message_events() {
    let p = profile("codex");
    let def = p.def.reply.as_ref().unwrap();
    let mut v = vec![prompt_entry("codex", "p")];
    v.extend(
        reply_entries("codex", &FakeReply::to("p", "only in the event"))
            .into_iter()
            .filter(|e| e["type"] != "response_item"),
    );
    let raw: String = v.iter().map(|v| format!("{v}\n")).collect();
    let a = read_entries(def, p.def.record.as_ref(), "p", &entries(def, &raw), None).unwrap();
    assert_eq!(a.text, "only in the event");
}

/// The real records (`fixtures/<agent>/records/`): each agent on the scripted
/// model (`tests/model/turns.json`, `tests/real_ask.rs`) answered
/// `pg-ask-usage: tell me`, stopped on the approval dialog of
/// `pg-tool-rm` (`pg-bash-rm` for Copilot) and was sent Escape, failed
/// `pg-fail-400`, and answered `pg-ask-usage: tell me again`. Paths
/// anonymised; entries the readers never look at left out.
const REAL: [(&str, &str, &str); 5] = [
    (
        "claude",
        include_str!("../../../fixtures/claude/records/v2.1.332-ask.jsonl"),
        "Bash",
    ),
    (
        "codex",
        include_str!("../../../fixtures/codex/records/v0.171.0-ask.jsonl"),
        "exec_command",
    ),
    (
        "gemini",
        include_str!("../../../fixtures/gemini/records/v0.61.0-ask.jsonl"),
        "run_shell_command",
    ),
    (
        "qwen",
        include_str!("../../../fixtures/qwen/records/v0.24.4-ask.jsonl"),
        "run_shell_command",
    ),
    (
        "copilot",
        include_str!("../../../fixtures/copilot/records/v1.0.102-ask.jsonl"),
        "bash",
    ),
];

/// The fixture's reply to `pg-ask-usage`, and the usage aimock sent with it.
const REAL_ANSWER: &str =
    "PG-ASK-ANSWER: the first line.\n\nThe second paragraph, with `code` and a tab\there.";

/// The record as it stood when `line` (a JSON string, escaped) first appeared
/// at or after `from`: the lines before it.
fn real_upto(raw: &str, from: usize, text: &str) -> (String, usize) {
    let lines: Vec<&str> = raw.lines().collect();
    let i = lines[from..]
        .iter()
        .position(|l| l.contains(text))
        .map_or(lines.len(), |i| from + i);
    (lines[..i].iter().map(|l| format!("{l}\n")).collect(), i)
}

#[test]
fn the_real_records_give_the_fixtures_answer_tokens_tool_calls_and_errors() {
    for (agent, raw, tool) in REAL {
        let tool_prompt = match agent {
            "copilot" => "pg-bash-rm: remove the marker folder",
            _ => "pg-tool-rm: remove the marker folder",
        };
        // each prompt read from the record as it stood before the next one
        let (first, _) = real_upto(raw, 0, tool_prompt);
        let a = read(agent, "pg-ask-usage: tell me", &first);
        assert_eq!(a.text, REAL_ANSWER, "{agent}");
        let t = a.tokens.clone().expect(agent);
        assert_eq!((t.input, t.output, t.cache), (1234, 56, 0), "{agent}");
        assert!(
            a.error.is_none() && a.tool_calls.is_empty(),
            "{agent}: {a:?}"
        );

        // while the dialog was up: the call, pending (Gemini 0.61 writes its
        // tool calls only once they are settled: nothing to read yet)
        let (_, p) = real_upto(raw, 0, tool_prompt);
        let (upto_call, at) = real_upto(raw, p, &format!("\"{tool}\""));
        let with_call = format!("{upto_call}{}\n", raw.lines().nth(at).unwrap_or(""));
        let a = match agent {
            // its settled copy is the first line that names the tool
            "gemini" => read(agent, tool_prompt, &upto_call),
            _ => read(agent, tool_prompt, &with_call),
        };
        match agent {
            "gemini" => assert!(a.tool_calls.is_empty(), "{agent}: {a:?}"),
            _ => {
                assert_eq!(a.tool_calls.len(), 1, "{agent}: {a:?}");
                assert_eq!(a.tool_calls[0].name, tool, "{agent}");
                assert_eq!(a.tool_calls[0].status, "pending", "{agent}");
                assert!(a.tool_calls[0].input_summary.contains("rm -r pg-marker"));
            }
        }

        // after Escape: the call was refused
        let (upto_fail, _) = real_upto(raw, 0, "pg-fail-400");
        let a = read(agent, tool_prompt, &upto_fail);
        assert_eq!(a.tool_calls.len(), 1, "{agent}: {a:?}");
        assert_eq!(
            (
                a.tool_calls[0].name.as_str(),
                a.tool_calls[0].status.as_str()
            ),
            (tool, "denied"),
            "{agent}"
        );

        // the error turn
        let (upto_again, _) = real_upto(raw, 0, "pg-ask-usage: tell me again");
        let a = read(agent, "pg-fail-400: this fails", &upto_again);
        assert!(
            a.error
                .as_deref()
                .is_some_and(|e| e.contains("scripted bad request")),
            "{agent}: {a:?}"
        );
        assert_eq!(a.text, "", "{agent}: an error is no reply text");

        // a later turn: only its own reply and usage
        let a = read(agent, "pg-ask-usage: tell me again", raw);
        assert_eq!(a.text, REAL_ANSWER, "{agent}");
        let t = a.tokens.expect(agent);
        assert_eq!((t.input, t.output), (1234, 56), "{agent}");
        assert!(a.error.is_none() && a.other_prompts.is_empty(), "{agent}");
    }
}

#[test]
fn a_reply_written_before_its_prompt_is_read_in_the_order_of_its_timestamps() {
    // Claude 2.1.259, the first turn of a session: the assistant entry came
    // before the user entry in the file (fixtures' timestamps, shortened)
    let raw = concat!(
        r#"{"type":"mode","mode":"normal"}"#,
        "\n",
        r#"{"type":"assistant","timestamp":"2026-12-03T11:34:20.227Z","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"PG-ASK-ANSWER"}],"stop_reason":"end_turn","usage":{"input_tokens":1234,"output_tokens":56}}}"#,
        "\n",
        r#"{"type":"user","timestamp":"2026-12-03T11:34:20.085Z","message":{"role":"user","content":"pg-ask-usage: what do you say"}}"#,
        "\n",
        r#"{"type":"last-prompt","lastPrompt":"pg-ask-usage: what do you say"}"#,
        "\n",
    );
    let a = read("claude", "pg-ask-usage: what do you say", raw);
    assert_eq!(a.text, "PG-ASK-ANSWER");
    assert_eq!(a.tokens.map(|t| (t.input, t.output)), Some((1234, 56)));
}

/// An OpenCode/Kilo session store as 1.18.33 and 7.7.7 write it (the rows are
/// the real ones' shapes): sessions by directory, messages, and their parts.
fn session_store(path: &Path) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(path).unwrap();
    c.pragma_update(None, "journal_mode", "WAL").unwrap();
    c.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    c.execute_batch(
        "CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT NOT NULL);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
             time_created INTEGER NOT NULL, data TEXT NOT NULL);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL,
             session_id TEXT NOT NULL, data TEXT NOT NULL);
         INSERT INTO session VALUES ('ses_a', '/proj'), ('ses_b', '/elsewhere');",
    )
    .unwrap();
    c
}

struct Store<'a> {
    c: &'a rusqlite::Connection,
    n: u32,
}

impl Store<'_> {
    fn message(&mut self, session: &str, info: serde_json::Value, parts: &[serde_json::Value]) {
        self.n += 1;
        let id = format!("msg_{:04}", self.n);
        self.c
            .execute(
                "INSERT INTO message VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![id, session, 1000 + self.n, info.to_string()],
            )
            .unwrap();
        for (i, p) in parts.iter().enumerate() {
            self.c
                .execute(
                    "INSERT INTO part VALUES (?1, ?2, ?3, ?4)",
                    rusqlite::params![format!("prt_{:04}_{i}", self.n), id, session, p.to_string()],
                )
                .unwrap();
        }
    }

    fn prompt(&mut self, session: &str, text: &str) {
        self.message(
            session,
            serde_json::json!({"role": "user"}),
            &[serde_json::json!({"type": "text", "text": text})],
        );
    }

    /// A plain reply: one text part, finished with `stop`.
    fn said(&mut self, session: &str, text: &str) {
        self.reply(
            session,
            &[serde_json::json!({"type": "text", "text": text})],
            "stop",
            serde_json::json!({}),
        );
    }

    fn reply(
        &mut self,
        session: &str,
        parts: &[serde_json::Value],
        finish: &str,
        extra: serde_json::Value,
    ) {
        let mut info = serde_json::json!({"role": "assistant", "cost": 0.004542, "finish": finish,
            "tokens": {"total": 1290, "input": 1234, "output": 56, "reasoning": 0,
                       "cache": {"write": 3, "read": 4}}});
        if let (Some(i), Some(e)) = (info.as_object_mut(), extra.as_object()) {
            i.extend(e.clone());
        }
        let mut all = vec![serde_json::json!({"type": "step-start"})];
        all.extend(parts.iter().cloned());
        all.push(serde_json::json!({"type": "step-finish", "reason": finish}));
        self.message(session, info, &all);
    }
}

#[test]
fn opencode_and_kilo_answer_from_their_session_store() {
    let d = tempfile::tempdir().unwrap();
    for agent in ["opencode", "kilo"] {
        let p = profile(agent);
        let def = p.def.reply.as_ref().unwrap();
        assert_eq!(def.format, ReplyFormat::Sqlite, "{agent}");
        let db = d.path().join(format!("{agent}.db"));
        let c = session_store(&db);
        let mut s = Store { c: &c, n: 0 };
        let text = |t: &str| serde_json::json!({"type": "text", "text": t});
        s.prompt("ses_a", "the question");
        s.said("ses_a", "an older reply");
        let replies = ReplyFiles {
            paths: vec![db.clone()],
            cwd: Some(PathBuf::from("/proj")),
            proved_first: false,
        };
        let marks = mark(&p, &replies);
        assert_eq!(
            marks.get(&db),
            Some(&2),
            "{agent}: the entries before the prompt"
        );
        // the same words asked again: only the reply after the mark is this one's
        s.prompt("ses_a", "the question");
        // another directory's session writes meanwhile: never read
        s.prompt("ses_b", "the question");
        s.said("ses_b", "the other directory's reply");
        s.reply(
            "ses_a",
            &[
                serde_json::json!({"type": "reasoning", "text": "a thought"}),
                text("PG-ASK-ANSWER: the first line.\n\nThe second, with a tab\there."),
            ],
            "stop",
            serde_json::json!({}),
        );
        let a = read_answer(&p, "the question", &replies, &marks);
        assert_eq!(a.source, "transcript", "{agent}: {a:?}");
        assert_eq!(
            a.text, "PG-ASK-ANSWER: the first line.\n\nThe second, with a tab\there.",
            "{agent}"
        );
        assert_eq!(a.stop_reason.as_deref(), Some("stop"), "{agent}");
        assert_eq!(
            a.tokens,
            Some(Tokens {
                input: 1234,
                output: 56,
                cache: 7
            }),
            "{agent}"
        );
        assert_eq!(a.cost, Some(0.004542), "{agent}");
        assert_eq!(a.path.as_deref(), Some(db.to_str().unwrap()), "{agent}");

        // a tool call: pending while the prompt waits, denied once rejected
        let call = |status: &str, error: Option<&str>| {
            let mut state = serde_json::json!({"status": status,
                "input": {"command": "rm -r pg-marker", "description": "Remove the pg-marker folder"}});
            if let Some(e) = error {
                state["error"] = e.into();
            }
            serde_json::json!({"type": "tool", "tool": "bash", "callID": "toolu_1", "state": state})
        };
        let marks = mark(&p, &replies);
        s.prompt("ses_a", "pg-bash-rm: remove the marker folder");
        s.reply(
            "ses_a",
            &[call("running", None)],
            "tool-calls",
            serde_json::json!({}),
        );
        let a = read_answer(&p, "pg-bash-rm: remove the marker folder", &replies, &marks);
        assert_eq!(a.tool_calls.len(), 1, "{agent}: {a:?}");
        assert_eq!(
            (
                a.tool_calls[0].name.as_str(),
                a.tool_calls[0].status.as_str()
            ),
            ("bash", "pending")
        );
        assert!(a.tool_calls[0].input_summary.contains("rm -r pg-marker"));
        c.execute(
            "UPDATE part SET data = ?1 WHERE data LIKE '%toolu_1%'",
            [call(
                "error",
                Some("The user rejected permission to use this specific tool call."),
            )
            .to_string()],
        )
        .unwrap();
        let a = read_answer(&p, "pg-bash-rm: remove the marker folder", &replies, &marks);
        assert_eq!(a.tool_calls[0].status, "denied", "{agent}: {a:?}");
        c.execute(
            "UPDATE part SET data = ?1 WHERE data LIKE '%toolu_1%'",
            [call("completed", None).to_string()],
        )
        .unwrap();
        let a = read_answer(&p, "pg-bash-rm: remove the marker folder", &replies, &marks);
        assert_eq!(a.tool_calls[0].status, "approved", "{agent}: {a:?}");

        // an API error ends the turn in its own words
        let marks = mark(&p, &replies);
        s.prompt("ses_a", "pg-fail-400: this one fails");
        s.reply(
            "ses_a",
            &[],
            "error",
            serde_json::json!({"error": {"name": "APIError",
                "data": {"message": "scripted bad request", "statusCode": 400}}}),
        );
        let a = read_answer(&p, "pg-fail-400: this one fails", &replies, &marks);
        assert_eq!(
            a.error.as_deref(),
            Some("scripted bad request"),
            "{agent}: {a:?}"
        );
        assert_eq!(a.text, "", "{agent}");

        // a prompt typed by hand after this one: reported, its reply not mixed in
        let marks = mark(&p, &replies);
        s.prompt("ses_a", "asked");
        s.prompt("ses_a", "typed by hand");
        s.said("ses_a", "the reply to the typed one");
        let a = read_answer(&p, "asked", &replies, &marks);
        assert_eq!(a.other_prompts, ["typed by hand"], "{agent}: {a:?}");
        assert!(!a.text.contains("typed one"), "{agent}");
        drop(c);
    }
}

/// Two sessions of one agent in one directory both received the prompt since
/// their marks (a fan-out of one question to two panes): nothing ties either to
/// this pane, so no answer is given rather than another pane's; the proof's own
/// file wins where it holds the prompt; one session alone is the answer.
#[test]
fn an_answer_is_never_another_sessions_reply() {
    let d = tempfile::tempdir().unwrap();
    let p = profile("gemini");
    let write = |name: &str, reply: &str| {
        let path = d.path().join(name);
        let mut v = vec![prompt_entry("gemini", "compare notes")];
        v.extend(reply_entries(
            "gemini",
            &FakeReply::to("compare notes", reply),
        ));
        let text: String = v.iter().map(|v| format!("{v}\n")).collect();
        std::fs::write(&path, text).unwrap();
        path
    };
    let a = write("session-a.jsonl", "reply from A");
    let b = write("session-b.jsonl", "reply from B");
    let files = |paths: Vec<PathBuf>, proved_first: bool| ReplyFiles {
        paths,
        cwd: None,
        proved_first,
    };
    let none = Marks::new();
    let got = read_answer(
        &p,
        "compare notes",
        &files(vec![b.clone(), a.clone()], false),
        &none,
    );
    assert_eq!(got.source, "none", "{got:?}");
    assert!(got.text.is_empty());
    assert!(
        got.why
            .as_deref()
            .unwrap_or_default()
            .contains("2 sessions"),
        "{got:?}"
    );
    let got = read_answer(
        &p,
        "compare notes",
        &files(vec![a.clone(), b.clone()], true),
        &none,
    );
    assert_eq!(got.text, "reply from A");
    // B's prompt was there before the mark: only A's is this prompt's
    let marks = mark(&p, &files(vec![b.clone()], false));
    assert!(marks.get(&b).is_some_and(|n| *n >= 2), "{marks:?}");
    let got = read_answer(&p, "compare notes", &files(vec![b, a], false), &marks);
    assert_eq!(got.text, "reply from A");
}

/// A FIFO or a symlink where a record file is listed is skipped, never opened
/// (a FIFO would block the read for good).
#[test]
fn a_fifo_or_a_link_in_the_record_directory_is_never_read() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("session-z.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let real = d.path().join("elsewhere.txt");
    std::fs::write(&real, "{}\n").unwrap();
    std::os::unix::fs::symlink(&real, d.path().join("session-l.jsonl")).unwrap();
    std::fs::write(d.path().join("session-r.jsonl"), "{}\n").unwrap();
    let files = crate::io::files::Files::Local;
    let listed = files.list(d.path(), "session-", ".jsonl");
    assert_eq!(listed, vec![d.path().join("session-r.jsonl")]);
    assert!(files.read(&fifo).is_none());
    assert!(files.read(&d.path().join("session-l.jsonl")).is_none());
    assert!(files.read_from(&fifo, 0).is_none());
}

/// A person typed the very words of this prompt (or, for Gemini, words that
/// contain them) during its turn: after the mark, this prompt's entry is the
/// first that matches, and the other is reported, never read as the answer.
#[test]
fn the_same_words_typed_by_hand_during_the_turn_are_another_prompt() {
    for agent in AGENTS {
        let p = profile(agent);
        let def = p.def.reply.as_ref().unwrap();
        for theirs in ["same words", "same words and more"] {
            let mut v = vec![prompt_entry(agent, "an older prompt")];
            v.extend(reply_entries(agent, &FakeReply::to("x", "an older reply")));
            let n = v.len();
            v.push(prompt_entry(agent, "same words"));
            v.extend(reply_entries(
                agent,
                &FakeReply::to("same words", "reply one"),
            ));
            v.push(prompt_entry(agent, theirs));
            v.extend(reply_entries(agent, &FakeReply::to(theirs, "reply two")));
            let raw: String = v.iter().map(|v| format!("{v}\n")).collect();
            let e = entries(def, &raw);
            let n = e.len().min(n);
            let a = read_entries(def, p.def.record.as_ref(), "same words", &e, Some(n));
            let Some(a) = a else {
                // an exact-match agent does not see the longer words as this prompt
                panic!("{agent}: no entry for the prompt");
            };
            if theirs == "same words" || def.prompt_match == PromptMatch::Contains {
                assert_eq!(a.text, "reply one", "{agent} {theirs:?}");
                assert_eq!(a.other_prompts.len(), 1, "{agent} {theirs:?}");
            }
        }
    }
    // aider's chat log, the same words twice after the mark
    let def_p = profile("aider");
    let def = def_p.def.reply.as_ref().unwrap();
    let raw = format!(
        "{}{}",
        aider_reply("same words", &FakeReply::to("x", "reply one")),
        aider_reply("same words", &FakeReply::to("x", "reply two"))
    );
    assert_eq!(
        read_markdown(def, "same words", &raw, Some(0))
            .unwrap()
            .text,
        "reply one"
    );
    // no mark: the last
    assert_eq!(
        read_markdown(def, "same words", &raw, None).unwrap().text,
        "reply two"
    );
}
