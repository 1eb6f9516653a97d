//! `ask`: the delivery `send` makes (the same `deliver_to`, the same fan-out),
//! then the wait `--until-done` makes (`observe::until_done`), then the answer
//! from the agent's own record (`answer.rs`). The CLI and the MCP server both
//! call it.

use crate::core::detect::State;
use crate::core::error::{code, Error};
use crate::core::plan::Body;
use crate::core::profile::Profiles;
use crate::engine::deliver::{deliver_to, Outcome, SendOpts, Shared};
use crate::engine::gate::Turn;
use crate::engine::receipt::{Receipt, TurnReport};
use crate::io::answer::Answer;
use crate::io::tmux::{Server, Tmux};
use serde_json::{json, Value};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How to wait for the turn and where an answer may come from.
#[derive(Debug, Clone, Copy)]
pub struct AskOpts {
    /// The longest the turn may take (`--done-timeout`).
    pub done_timeout: Duration,
    /// Where the record holds no reply, read it from the screen.
    pub from_screen: bool,
    /// A signal (Ctrl-C) during the wait stops the wait, never the agent, and
    /// the answer says the prompt was delivered (the CLI; not the MCP server).
    pub stop_on_signal: bool,
}

/// One pane's question and answer.
pub struct Asked {
    pub pane: String,
    /// The send's receipt (with the turn in `turn`), when the gate ran.
    pub rec: Option<Receipt>,
    pub answer: Option<Answer>,
    pub turn: Option<Turn>,
    /// The exit code: the send's when it did not take the prompt, else the
    /// turn's and the answer's (`code::ASK_*`).
    pub code: i32,
    pub err: Option<Error>,
    /// The wait was stopped (a signal, an MCP cancellation): the prompt stays
    /// delivered, the agent keeps working.
    pub stopped: bool,
}

fn now_ms() -> u64 {
    crate::io::tmux::now_ms() as u64
}

/// Deliver `body` to `target` as `send` does (telling `sink` as it goes), then
/// wait for its turn and read the answer.
#[allow(clippy::too_many_arguments)]
pub fn ask_one(
    server: &Server,
    profiles: &Profiles,
    opts: &SendOpts,
    target: &str,
    body: &Body,
    shared: &Shared,
    a: AskOpts,
    cancel: Option<&AtomicBool>,
    sink: &mut dyn crate::engine::sink::Sink,
) -> Asked {
    let started = now_ms();
    let marks = mark(server, profiles, opts.agent.as_deref(), target);
    let o = deliver_to(server, profiles, opts, target, body, shared, sink);
    answer_after(server, profiles, o, body, started, &marks, a, cancel)
}

/// The same question to every target at once (`fanout::deliver_all`, one
/// submit at a time), then each turn waited for and each answer read in
/// parallel.
#[allow(clippy::too_many_arguments)]
pub fn ask_all(
    server: &Server,
    profiles: &Profiles,
    opts: &SendOpts,
    body: &Body,
    targets: &[String],
    shared: Shared,
    a: AskOpts,
    cancel: Option<&AtomicBool>,
) -> Vec<Asked> {
    let started = now_ms();
    let marks: Vec<_> = targets
        .iter()
        .map(|t| mark(server, profiles, opts.agent.as_deref(), t))
        .collect();
    let outcomes =
        crate::engine::fanout::deliver_all(server, profiles, opts, body, targets, shared);
    std::thread::scope(|s| {
        let handles: Vec<_> = outcomes
            .into_iter()
            .zip(marks.iter())
            .map(|(o, m)| {
                s.spawn(move || answer_after(server, profiles, o, body, started, m, a, cancel))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("ask thread"))
            .collect()
    })
}

/// Before anything is typed: what the pane's agent's reply files hold, so
/// that only what is recorded after can be this prompt's (never an older
/// reply to the same words). Empty where no agent or no reply file is known.
pub fn mark(
    server: &Server,
    profiles: &Profiles,
    agent: Option<&str>,
    target: &str,
) -> crate::io::answer::Marks {
    let mut tmux = crate::io::tmux::Control::new(server.clone(), target);
    let Ok(o) = crate::engine::observe::observe(&mut tmux, profiles, agent, target) else {
        return Default::default();
    };
    let Some(profile) = o
        .identity
        .agent
        .as_deref()
        .and_then(|n| profiles.get(n).ok())
    else {
        return Default::default();
    };
    match crate::io::answer::reply_files(profile, o.screen.pid, None) {
        Ok(replies) => crate::io::answer::mark(profile, &replies),
        Err(_) => Default::default(),
    }
}

/// What the wait for a delivered prompt's turn needs to know of the delivery
/// (kept with a queued `--ask` item, so that a later watcher can wait again).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Taken {
    pub agent: String,
    pub pane: String,
    /// The file the proof read the prompt from (the replies are in it or beside it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proved: Option<String>,
    /// What the agent's reply files held before anything was typed.
    #[serde(default)]
    pub marks: crate::io::answer::Marks,
    /// When the ask began (Unix ms).
    pub started_at_ms: u64,
}

impl Taken {
    /// What `rec` (a prompt the agent took) tells the wait.
    pub fn of(rec: &Receipt, marks: &crate::io::answer::Marks, started_at_ms: u64) -> Taken {
        Taken {
            agent: rec.agent.clone(),
            pane: rec.pane.clone(),
            proved: rec.proof.as_ref().and_then(proved_file),
            marks: marks.clone(),
            started_at_ms,
        }
    }
}

/// The file `proof` read the prompt from, where the replies are: the
/// transcript, or (proven from the input history) the transcript its
/// registry names.
pub fn proved_file(proof: &crate::io::record::Proof) -> Option<String> {
    match proof.source {
        "transcript" => proof.path.clone(),
        "history" => proof.record.clone(),
        _ => None,
    }
}

/// How the wait for a turn, and the answer read after it, came out.
pub struct Followed {
    pub code: i32,
    pub answer: Option<Answer>,
    pub turn: Option<Turn>,
    /// The receipt's `turn`.
    pub report: TurnReport,
    pub err: Option<Error>,
    pub stopped: bool,
}

impl Followed {
    /// The receipt's JSON (`rec`) with the turn, the answer and the exit code
    /// (`ask --json`'s object).
    pub fn fill(&self, mut v: Value) -> Value {
        v["turn"] = serde_json::to_value(&self.report).unwrap_or_default();
        with_answer(v, self.answer.as_ref(), self.code, self.err.as_ref())
    }
}

/// `v` (a receipt's JSON) with `answer`, the exit code and, where there is no
/// answer, why (`error`).
fn with_answer(mut v: Value, answer: Option<&Answer>, code: i32, err: Option<&Error>) -> Value {
    if let Some(a) = answer {
        v["answer"] = serde_json::to_value(a).unwrap_or_default();
    }
    v["exit_code"] = code.into();
    if let Some(e) = err {
        v["error"] = e.to_string().into();
    } else if let Some(w) = ask_words(code, answer) {
        v["error"] = w.into();
    }
    v
}

/// After a delivery: wait for the turn the prompt started, then read its answer.
#[allow(clippy::too_many_arguments)]
pub fn answer_after(
    server: &Server,
    profiles: &Profiles,
    o: Outcome,
    body: &Body,
    started_at_ms: u64,
    marks: &crate::io::answer::Marks,
    a: AskOpts,
    cancel: Option<&AtomicBool>,
) -> Asked {
    let Outcome {
        pane,
        rec,
        code,
        err,
    } = o;
    let mut asked = Asked {
        pane,
        rec,
        answer: None,
        turn: None,
        code,
        err,
        stopped: false,
    };
    let Some(rec) = asked.rec.as_mut().filter(|_| code == 0) else {
        return asked;
    };
    // typing is over: without `stop_on_signal` (the MCP server) a signal held
    // meanwhile takes effect now, not after the turn
    if !a.stop_on_signal {
        crate::io::interrupt::finished();
    }
    let f = follow(
        server,
        profiles,
        &Taken::of(rec, marks, started_at_ms),
        &body.text,
        a,
        cancel,
    );
    rec.turn = Some(f.report);
    rec.exit_code = f.code;
    asked.code = f.code;
    asked.answer = f.answer;
    asked.turn = f.turn;
    asked.stopped = f.stopped;
    if f.err.is_some() {
        asked.err = f.err;
    }
    asked
}

/// Wait for the turn the prompt `body` started (`t`) to end, then read its
/// answer from the agent's record.
pub fn follow(
    server: &Server,
    profiles: &Profiles,
    t: &Taken,
    body: &str,
    a: AskOpts,
    cancel: Option<&AtomicBool>,
) -> Followed {
    let (_waiting, cancel) = match a.stop_on_signal {
        true => (
            Some(crate::io::interrupt::Waiting::begin()),
            Some(&crate::io::interrupt::STOP_WAIT),
        ),
        false => (None, cancel),
    };
    let turn = crate::engine::observe::until_done(
        server,
        profiles,
        &t.agent,
        &t.pane,
        a.done_timeout,
        true,
        cancel,
    );
    let mut turn = match turn {
        Ok(t) => t,
        Err(e) => {
            let stopped = cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::SeqCst));
            let code = match stopped {
                true => code::STOPPED_AFTER_DELIVERY,
                false => e.exit_code(),
            };
            let why = match stopped {
                true => "stopped waiting: the prompt was delivered and the agent keeps working"
                    .to_string(),
                false => e.to_string(),
            };
            return Followed {
                code,
                answer: None,
                turn: None,
                report: TurnReport::failed(why.clone()),
                err: Some(Error::Other(why)),
                stopped,
            };
        }
    };
    let Ok(profile) = profiles.get(&t.agent) else {
        return Followed {
            code: code::ASK_NO_ANSWER,
            answer: Some(Answer::none(format!("no profile {}", t.agent))),
            report: TurnReport::Ended(turn.clone()),
            turn: None,
            err: None,
            stopped: false,
        };
    };
    let mut tmux = crate::io::tmux::Control::new(server.clone(), &t.pane);
    let screen = tmux.read(&t.pane).ok();
    let paths = crate::io::answer::reply_files(
        profile,
        screen.as_ref().and_then(|s| s.pid),
        t.proved.as_deref(),
    );
    let dialog = matches!(turn.state, State::Dialog(_));
    let marks = &t.marks;
    let mut answer = match &paths {
        Err(why) => Answer::none(why.clone()),
        Ok(paths) => {
            // the record may hold the reply a moment after the screen says the
            // turn is over: look again until it has one that holds still
            // (a turn that did not end in time is read once: --done-timeout bounds it)
            let wait = match turn.done {
                true => Duration::from_millis(profile.def.reply.as_ref().map_or(0, |r| r.wait_ms)),
                false => Duration::ZERO,
            };
            let deadline = Instant::now() + wait;
            let mut last = crate::io::answer::read_answer(profile, body, paths, marks);
            loop {
                let settled =
                    !turn.done || dialog || last.error.is_some() || last.stop_reason.is_some();
                if (last.has_reply() && settled) || Instant::now() >= deadline {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
                let next = crate::io::answer::read_answer(profile, body, paths, marks);
                let still = next == last && next.has_reply();
                last = next;
                if still {
                    break;
                }
            }
            last
        }
    };
    // the screen still showed the turn at the timeout, but the agent's own
    // record has its whole reply with the stop reason of a finished turn: it
    // ended (an answer beside "did not end in time" would invite asking again)
    if !turn.done
        && turn.timed_out
        && !dialog
        && answer.has_reply()
        && answer.error.is_none()
        && answer
            .stop_reason
            .as_deref()
            .is_some_and(|r| profile.def.reply.as_ref().is_some_and(|d| d.ends_turn(r)))
    {
        turn.done = true;
        turn.timed_out = false;
        turn.ended_by = Some(format!(
            "record (stop reason {})",
            answer.stop_reason.as_deref().unwrap_or_default()
        ));
    }
    if !answer.has_reply() && a.from_screen {
        if let Some(s) = &screen {
            answer = from_screen(s, body);
        }
    }
    answer.started_at_ms = t.started_at_ms;
    answer.ended_at_ms = now_ms();
    answer.ended_by = turn
        .ended_by
        .clone()
        .or_else(|| Some(turn.state.to_string()));
    if dialog {
        answer.dialog = screen.as_ref().map(|s| after_prompt(s, body).join("\n"));
    }
    let code = if dialog {
        code::ASK_APPROVAL
    } else if !turn.done {
        crate::core::verify::turn_code(&turn)
    } else if answer.error.is_some() {
        code::ASK_API_ERROR
    } else if !answer.has_reply() {
        code::ASK_NO_ANSWER
    } else {
        0
    };
    Followed {
        code,
        answer: Some(answer),
        report: TurnReport::Ended(turn.clone()),
        turn: Some(turn),
        err: None,
        stopped: false,
    }
}

/// The screen's rows after the last row that shows the prompt's last line
/// (the reply, or a dialog), without blank rows at either end.
fn after_prompt(s: &crate::core::screen::Screen, body: &str) -> Vec<String> {
    let last = body.trim().lines().last().unwrap_or("").trim();
    let start = s
        .rows
        .iter()
        .rposition(|r| !last.is_empty() && r.contains(last))
        .map_or(0, |i| i + 1);
    let rows: Vec<String> = s.rows[start..]
        .iter()
        .map(|r| r.trim_end().to_string())
        .collect();
    let first = rows
        .iter()
        .position(|r| !r.trim().is_empty())
        .unwrap_or(rows.len());
    let end = rows
        .iter()
        .rposition(|r| !r.trim().is_empty())
        .map_or(first, |i| i + 1);
    rows[first..end].to_vec()
}

/// `--from-screen`: the rows between the prompt's echo and the composer's
/// first rule (a row that starts with a box-drawing line).
fn from_screen(s: &crate::core::screen::Screen, body: &str) -> Answer {
    let rows = after_prompt(s, body);
    let rule = |r: &str| {
        r.trim_start()
            .starts_with(['─', '━', '╭', '┌', '▔', '▀', '┃'])
    };
    // the echo's own frame rows first (a bar block), then the reply up to the next frame
    let start = rows.iter().position(|r| !rule(r)).unwrap_or(rows.len());
    let end = rows[start..]
        .iter()
        .position(|r| rule(r))
        .map_or(rows.len(), |i| start + i);
    let text = rows[start..end].join("\n").trim().to_string();
    Answer {
        text,
        source: "screen".into(),
        ..Answer::default()
    }
}

impl Asked {
    /// `ask --json`: the send receipt (with its turn) plus `answer`; the pane's
    /// error where there is no receipt.
    pub fn to_json(&self) -> Value {
        let v = match &self.rec {
            Some(r) => r.to_json(),
            None => json!({"pane": self.pane}),
        };
        with_answer(v, self.answer.as_ref(), self.code, self.err.as_ref())
    }

    /// The agent's name, where the gate named one.
    pub fn agent(&self) -> &str {
        self.rec.as_ref().map_or("-", |r| r.agent.as_str())
    }

    /// The one line for stderr: the receipt and how the answer ended.
    pub fn receipt_line(&self) -> String {
        let Some(rec) = &self.rec else {
            return format!(
                "{}\t-\tnot sent\t{}",
                self.pane,
                self.err.as_ref().map_or(String::new(), |e| e.to_string())
            );
        };
        let how = match (&self.err, ask_words(self.code, self.answer.as_ref())) {
            (Some(e), _) => e.to_string(),
            (None, Some(w)) => w,
            (None, None) => {
                let a = self.answer.as_ref();
                format!(
                    "answered in {} ms from the {}",
                    a.map_or(0, |a| a.ended_at_ms.saturating_sub(a.started_at_ms)),
                    a.map_or("record", |a| if a.source == "screen" {
                        "screen"
                    } else {
                        "record"
                    })
                )
            }
        };
        format!("{}\t{}\t{}\t{how}", self.pane, rec.agent, rec.receipt)
    }
}

/// What an `ask` exit code means, in words (`None`: answered).
fn ask_words(c: i32, a: Option<&Answer>) -> Option<String> {
    Some(match c {
        0 => return None,
        code::ASK_APPROVAL => format!(
            "the turn stopped on an approval dialog (nothing typed into it): {}",
            a.and_then(|a| a.dialog.as_deref())
                .unwrap_or("")
                .replace('\n', " / ")
        ),
        code::ASK_API_ERROR => format!(
            "the turn ended in an API error: {}",
            a.and_then(|a| a.error.as_deref()).unwrap_or("")
        ),
        code::ASK_NO_ANSWER => match a.and_then(|a| a.other_prompts.first()) {
            // Codex 0.171.0 takes a prompt typed during a turn into that turn
            // and answers only it
            Some(other) => format!(
                "no answer in the agent's record: another prompt entered before any reply to this one: {}",
                other.replace('\n', " / ")
            ),
            None => format!(
                "no answer in the agent's record: {}",
                a.and_then(|a| a.why.as_deref())
                    .unwrap_or("its reply holds no text")
            ),
        },
        code::TIMEOUT => {
            "the turn did not end in time; to wait longer, raise --done-timeout".into()
        }
        _ => return None,
    })
}
