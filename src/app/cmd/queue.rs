//! `promptgate queue add|list|drop|run`: the durable queue (see `crate::engine::queue`).

use crate::app::cli::{read_body, target};
use crate::app::cli::{QueueAddArgs, QueueArgs, QueueCmd, QueueRunArgs};
use crate::app::out::out;
use crate::core::detect::refusal;
use crate::core::detect::State;
use crate::core::error::{code, Error, Refused, Result};
use crate::core::plan::{plan, sanitise, Body};
use crate::core::profile::Profiles;
use crate::core::verify::ReceiptKind;
use crate::engine::deliver::{deliver_to, submit_and_prove, SendOpts, Shared};
use crate::engine::gate::SystemClock;
use crate::engine::observe::{observe, observe_at_launch};
use crate::engine::queue::{self, Item, Phase};
use crate::engine::sink::{Finished, Quiet, Sink};
use crate::io::lock::PaneLock;
use crate::io::tmux::{Control, Process, Server, Tmux};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

pub fn run(server: &Server, profiles: &Profiles, a: QueueArgs) -> Result<i32> {
    // canonical once: two spellings of one directory are one queue
    let dir = queue::dir();
    match a.cmd {
        QueueCmd::Add(a) => add(server, profiles, &queue::open_dir()?, a),
        QueueCmd::List { json } => list(&dir, json),
        QueueCmd::Drop { id, wait } => {
            // any unique prefix of the id will do
            let id = queue::resolve_id(&dir, &id)?;
            drop_item(&dir, &id, crate::app::cli::duration(wait))
        }
        QueueCmd::Answer { id, json } => answer(&dir, id.as_deref(), json),
        QueueCmd::Run(r) => watch(server, profiles, &queue::open_dir()?, r),
    }
}

/// `queue drop`: remove the item under its claim, so that no watcher holds a
/// copy it goes on to type. A watcher delivering it now holds the claim: wait
/// for it up to `wait` (`--wait`, 3 s: a watcher's default `--gate-timeout` of
/// 2 s and a little more), then refuse (28) with the item left as it is,
/// rather than say "dropped" and see it typed.
fn drop_item(dir: &Path, id: &str, wait: Duration) -> Result<i32> {
    let start = Instant::now();
    let _claim = loop {
        if let Some(c) = queue::claim(dir, id)? {
            break c;
        }
        if start.elapsed() >= wait {
            return Err(Error::refused(
                crate::core::error::Refused::Locked,
                format!("queue item {id} is being delivered now (a watcher holds it); not dropped"),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // read again under the claim: the watcher may have delivered it meanwhile
    match queue::find(dir, id)? {
        None => Err(Error::Usage(format!(
            "no queued prompt {id} (it was delivered or dropped meanwhile)"
        ))),
        Some(item) => {
            queue::remove(dir, id)?;
            let note = match item.phase {
                // a watcher stopped half-way through it; none holds it now
                Phase::Typing | Phase::Submitting => format!(
                    " (its watcher stopped while {}: the pane may show it)",
                    item.phase
                ),
                _ => String::new(),
            };
            out(&format!("dropped {id}{note}"))?;
            Ok(0)
        }
    }
}

fn add(server: &Server, profiles: &Profiles, dir: &Path, a: QueueAddArgs) -> Result<i32> {
    let raw = read_body(&a.body)?;
    let (body, _) = sanitise(&raw)?;
    if let Some(n) = &a.agent {
        profiles.get(n)?;
    }
    let mut tmux = Process::new(server.clone());
    let pane = tmux.resolve(&target(server, &a.target)?)?;
    // A prompt queued for a shell would be typed into it: no agent, nothing queued.
    if a.agent.is_none() {
        let read_at = crate::io::tmux::now_ms();
        let screen = tmux.read(&pane)?;
        let (o, _) = observe_at_launch(&mut tmux, profiles, None, &pane, screen, read_at)?;
        if o.identity.agent.is_none() {
            let state = if o.screen.dead {
                State::Exited
            } else {
                State::NotAgent
            };
            let reason = format!(
                "{} ({}); nothing queued",
                o.verdict.state,
                o.verdict.reason()
            );
            return Err(refusal(&state, &reason, false));
        }
    }
    // which life of the server and of the pane: typed only into this one
    let life = tmux.pane_life(&pane)?;
    let mut item = Item::pending(server.spec(), pane, a.agent, body);
    item.ask = a.ask;
    item.queued_for = Some(life);
    queue::save(dir, &item)?;
    out(&item.id)?;
    Ok(0)
}

fn list(dir: &Path, json: bool) -> Result<i32> {
    for i in queue::load_all(dir)? {
        if json {
            out(&serde_json::to_string(&i).unwrap_or_default())?;
        } else {
            // a held item says why it is held, after the preview
            let why = match (i.phase, &i.last_reason) {
                (Phase::Held, Some(r)) => format!("\t{}", r.replace(['\t', '\n'], " ")),
                _ => String::new(),
            };
            out(&format!(
                "{}\t{}\t{}\t{}\t{}\t{}{why}",
                i.id,
                i.server,
                i.pane,
                i.phase,
                i.last_receipt.as_deref().unwrap_or("-"),
                preview(&i.body)
            ))?;
        }
    }
    Ok(0)
}

/// `queue answer [ID]`: the kept answers of asked prompts. A `waiting` answer
/// whose watcher is gone shows as `stopped`.
fn answer(dir: &Path, id: Option<&str>, json: bool) -> Result<i32> {
    let all: Vec<queue::Kept> = queue::load_answers(dir)
        .into_iter()
        .map(|mut k| {
            if k.state == "waiting" && !crate::io::proc::alive(k.watcher_pid) {
                k.state = "stopped".into();
                k.error =
                    Some("the watcher that waited for the turn stopped before it ended".into());
            }
            k
        })
        .collect();
    let Some(prefix) = id else {
        for k in &all {
            if json {
                out(&serde_json::to_string(k).unwrap_or_default())?;
            } else {
                out(&format!(
                    "{}\t{}\t{}\t{}\t{}",
                    k.id,
                    k.pane,
                    k.state,
                    preview(&k.body),
                    k.text
                        .as_deref()
                        .map(preview)
                        .unwrap_or_else(|| k.error.clone().unwrap_or_default())
                ))?;
            }
        }
        return Ok(0);
    };
    let hits: Vec<&queue::Kept> = all.iter().filter(|k| k.id.starts_with(prefix)).collect();
    let k = match hits.as_slice() {
        [k] => *k,
        [] => {
            let queued = queue::resolve_id(dir, prefix).is_ok();
            return Err(Error::Usage(match queued {
                true => {
                    format!("{prefix} is still queued: its answer is kept once it is delivered")
                }
                false => format!("no answer kept for {prefix} (queue answer lists them)"),
            }));
        }
        _ => {
            return Err(Error::Usage(format!(
                "{prefix} names {} answers: give more of the id",
                hits.len()
            )))
        }
    };
    if json {
        out(&serde_json::to_string(k).unwrap_or_default())?;
    }
    match k.state.as_str() {
        "answered" => {
            if !json {
                out(k.text.as_deref().unwrap_or(""))?;
            }
            Ok(0)
        }
        "waiting" => {
            eprintln!(
                "promptgate: {} {}: delivered, waiting for the turn to end",
                k.id, k.pane
            );
            Ok(code::TIMEOUT)
        }
        _ => {
            eprintln!(
                "promptgate: {} {}: {}: {}",
                k.id,
                k.pane,
                k.state,
                k.error.as_deref().unwrap_or("")
            );
            Ok(k.exit_code.filter(|c| *c != 0).unwrap_or(code::TIMEOUT))
        }
    }
}

/// The turns a watcher waits for, of items queued with `--ask`: the panes
/// (whose next prompt waits until the answer is kept) and the lines to print
/// when each answer is in.
#[derive(Clone)]
struct Asks {
    panes: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    done: std::sync::mpsc::Sender<Event>,
}

impl Asks {
    fn waiting(&self, pane: &str) -> bool {
        self.panes.lock().map(|p| p.contains(pane)).unwrap_or(false)
    }

    fn any(&self) -> bool {
        self.panes.lock().map(|p| !p.is_empty()).unwrap_or(false)
    }
}

/// `send` options for one queued item: it waits through busy for the
/// watcher's `--gate-timeout`, and for another sender at most 5 s
/// (`PROMPTGATE_GATE=off` skips the gate, as for `send`).
fn send_opts(item: &Item, r: &QueueRunArgs) -> SendOpts {
    let mut o = SendOpts {
        agent: item.agent.clone(),
        force: crate::app::cli::gate_off_from_env(),
        lock_timeout: Duration::from_secs(5),
        ..SendOpts::default()
    };
    o.gate.wait_busy = true;
    o.gate.timeout = crate::app::cli::duration(r.gate_timeout);
    // only into the pane it was queued for: every look before a write is of it
    o.pane_pid = item.queued_for.as_ref().map(|l| l.pane_pid);
    o
}

/// What one step did to one item, as a progress line for `queue run`.
struct Event {
    pane: String,
    id: String,
    /// Lines with the same key for the same item are printed once (a pane that
    /// stays busy is reported when it turns busy, not every round).
    key: String,
    what: &'static str,
    detail: String,
    /// In a word or two, why the item is still queued (for the summary of --once).
    short: String,
    /// Not worth a line (a pane that is ready but not yet still): only the summary.
    quiet: bool,
}

impl Event {
    fn new(item: &Item, what: &'static str, key: String, detail: String) -> Event {
        Event::on(&item.pane, &item.id, what, key, detail)
    }

    /// [`Event::new`] for item `id` in `pane` (one no longer queued).
    fn on(pane: &str, id: &str, what: &'static str, key: String, detail: String) -> Event {
        Event {
            pane: pane.to_string(),
            id: id.to_string(),
            short: what.to_string(),
            quiet: false,
            key,
            what,
            detail,
        }
    }

    fn short(mut self, s: impl Into<String>) -> Event {
        self.short = s.into();
        self
    }

    fn line(&self) -> String {
        format!("{}\t{}\t{}\t{}", self.pane, self.what, self.id, self.detail)
    }
}

/// The first 40 characters of a body, on one line, quoted.
fn preview(body: &str) -> String {
    let p: String = body
        .chars()
        .take(40)
        .map(|c| if c == '\n' { '⏎' } else { c })
        .collect();
    format!("{p:?}")
}

/// The watcher: deliver each pane's queue in order whenever that pane is ready,
/// printing a line for each delivery, each change of why a prompt waits, and each
/// prompt held for a person.
fn watch(server: &Server, profiles: &Profiles, dir: &Path, r: QueueRunArgs) -> Result<i32> {
    // One watcher per server and queue directory (`dir` is canonical): its
    // lock lives in that directory, so watchers started with different
    // environments meet it too.
    let Some(_me) = queue::watcher_lock(dir, &server.spec())? else {
        return Err(Error::refused(
            Refused::Locked,
            format!(
                "a queue watcher already runs for {} on {}",
                server.spec(),
                dir.display()
            ),
        ));
    };
    let spec = server.spec();
    let start = Instant::now();
    let mine = || -> Result<Vec<Item>> {
        Ok(queue::load_all(dir)?
            .into_iter()
            .filter(|i| i.server == spec)
            .collect())
    };
    let mut told: HashMap<String, String> = HashMap::new();
    let mut why: HashMap<String, String> = HashMap::new();
    let mut delivered = 0usize;
    let mut first = true;
    let (tx, answered) = std::sync::mpsc::channel();
    let asks = Asks {
        panes: Default::default(),
        done: tx,
    };
    // the lines of the answers kept since the last look
    let drain = || -> Result<()> {
        for ev in answered.try_iter() {
            out(&ev.line())?;
        }
        Ok(())
    };
    loop {
        // the turns an earlier watcher stopped waiting for (and, after the
        // first round, those of asked items a recovery found taken) are
        // waited for again
        let resumed = resume_answers(server, profiles, dir, &r, &asks);
        if first && resumed > 0 {
            out(&format!(
                "queue: waiting again for the answer(s) to {resumed} asked prompt(s) an earlier watcher delivered"
            ))?;
        }
        let items = mine()?;
        if first {
            first = false;
            let mut panes: Vec<&str> = items.iter().map(|i| i.pane.as_str()).collect();
            panes.sort();
            panes.dedup();
            let then = if r.once {
                ""
            } else {
                "; watching (Ctrl-C stops)"
            };
            if items.is_empty() {
                out(&format!(
                    "queue: nothing queued for server {spec}{}{then}",
                    elsewhere(dir, &spec)
                ))?;
                if r.once && !asks.any() {
                    return Ok(0);
                }
            } else {
                out(&format!(
                    "queue: {} prompt(s) for {} pane(s) on server {spec}{then}",
                    items.len(),
                    panes.len()
                ))?;
            }
        }
        let mut heads: Vec<Item> = Vec::new();
        for i in items {
            if !heads.iter().any(|h| h.pane == i.pane) {
                heads.push(i);
            }
        }
        // a pane whose asked prompt's turn is still waited for gets its next
        // prompt once the answer is kept
        let live: Vec<&Item> = heads
            .iter()
            .filter(|i| i.phase != Phase::Held && !asks.waiting(&i.pane))
            .collect();
        // each answer kept before a pane was seen free is said before that
        // pane's next prompt is delivered (the line is sent before the pane is
        // freed)
        drain()?;
        if live.is_empty() && r.once && !asks.any() {
            // (an answer kept since the drain above is said too)
            drain()?;
            return once_done(&mine()?, &why, delivered, &spec);
        }
        let steps: Vec<(bool, Option<Event>)> = std::thread::scope(|s| {
            let hs: Vec<_> = live
                .iter()
                .map(|i| s.spawn(|| step(server, profiles, dir, i, &r, &asks)))
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or((false, None)))
                .collect()
        });
        let mut progress = 0usize;
        for (moved, ev) in steps {
            progress += moved as usize;
            let Some(ev) = ev else { continue };
            if ev.what == "delivered" {
                delivered += 1;
            }
            why.insert(ev.id.clone(), ev.short.clone());
            if !ev.quiet && told.get(&ev.id) != Some(&ev.key) {
                out(&ev.line())?;
                told.insert(ev.id.clone(), ev.key);
            }
        }
        if r.once
            && progress == 0
            && !asks.any()
            && r.max_secs
                .is_none_or(|m| start.elapsed() >= Duration::from_secs_f64(m))
        {
            drain()?;
            return once_done(&mine()?, &why, delivered, &spec);
        }
        if r.max_secs
            .is_some_and(|m| start.elapsed() >= Duration::from_secs_f64(m))
        {
            drain()?;
            return Ok(0);
        }
        if progress == 0 {
            std::thread::sleep(Duration::from_millis(r.interval));
        }
    }
}

/// `; 3 prompt(s) wait for other servers: -L work (2), default (1)` when
/// prompts wait for servers other than this one, else nothing.
fn elsewhere(dir: &Path, spec: &str) -> String {
    let mut by: Vec<(String, usize)> = Vec::new();
    for i in queue::load_all(dir).unwrap_or_default() {
        if i.server == spec {
            continue;
        }
        match by.iter_mut().find(|(s, _)| *s == i.server) {
            Some((_, n)) => *n += 1,
            None => by.push((i.server, 1)),
        }
    }
    if by.is_empty() {
        return String::new();
    }
    let total: usize = by.iter().map(|(_, n)| n).sum();
    let each: Vec<String> = by.iter().map(|(s, n)| format!("{s} ({n})")).collect();
    format!(
        "; {total} prompt(s) wait for other servers: {} (run queue run with that -L or -S)",
        each.join(", ")
    )
}

/// The end of `queue run --once`: exit 0 when nothing is left queued for the
/// server, 20 (with the prompts that are left, and why) when some are: waiting
/// for a pane that is not ready, or held for a person.
fn once_done(
    left: &[Item],
    why: &HashMap<String, String>,
    delivered: usize,
    spec: &str,
) -> Result<i32> {
    if left.is_empty() {
        out(&format!(
            "queue: done, {delivered} delivered, nothing left for server {spec}"
        ))?;
        return Ok(0);
    }
    let each: Vec<String> = left
        .iter()
        .enumerate()
        .map(|(n, i)| {
            let behind = left[..n].iter().any(|e| e.pane == i.pane);
            let last = why
                .get(&i.id)
                .cloned()
                .or_else(|| i.last_receipt.clone())
                .filter(|_| !behind)
                .unwrap_or_else(|| "behind an earlier prompt for this pane".into());
            format!("{} {} ({last})", i.pane, i.phase)
        })
        .collect();
    eprintln!(
        "promptgate: queue: {delivered} delivered, {} left that cannot be delivered now: {}; run again later (queue list shows them, queue drop ID removes one)",
        left.len(),
        each.join(", ")
    );
    Ok(code::TIMEOUT)
}

/// One step for the head item of one pane: whether it made progress, and what to report.
/// The item is claimed by its id first and read again under the claim: whatever
/// its files are called, one item is delivered by one process at a time, from
/// what is on disk now.
fn step(
    server: &Server,
    profiles: &Profiles,
    dir: &Path,
    item: &Item,
    r: &QueueRunArgs,
    asks: &Asks,
) -> (bool, Option<Event>) {
    let fail = |e: Error| {
        (
            false,
            Some(Event::new(
                item,
                "error",
                format!("error-{}", e.exit_code()),
                e.to_string(),
            )),
        )
    };
    let _claim = match queue::claim(dir, &item.id) {
        Ok(Some(c)) => c,
        Ok(None) => return (false, None),
        Err(e) => return fail(e),
    };
    let item = &match queue::find(dir, &item.id) {
        Ok(Some(i)) if i.phase != Phase::Held => i,
        Ok(_) => return (false, None),
        Err(e) => return fail(e),
    };
    // the pane it was queued for, or none: a restarted server or a replaced
    // pane has the id now, and gets nothing
    if let Some(why) = replaced(server, item) {
        // an earlier watcher stopped mid-way into the old pane: whether it got
        // the prompt is not known
        let (receipt, why) = match item.phase {
            Phase::Typing | Phase::Submitting => (
                "unknown",
                format!(
                    "{why} (an earlier watcher stopped while {} into it: whether it got the prompt is unknown)",
                    item.phase
                ),
            ),
            _ => ("not-sent", why),
        };
        return match save_phase(dir, item, Phase::Held, Some(receipt), Some(why)) {
            Ok(()) => (false, held_event(dir, item)),
            Err(e) => fail(e),
        };
    }
    match item.phase {
        Phase::Typing | Phase::Submitting => match recover(server, profiles, dir, item, r) {
            Ok(true) => (
                true,
                Some(Event::new(
                    item,
                    "resumed",
                    format!("resumed-{}", item.phase),
                    format!(
                        "an earlier watcher stopped while {}; picked up from what the pane shows",
                        item.phase
                    ),
                )),
            ),
            // held by the recovery: said once, with why
            Ok(false) => (false, held_event(dir, item)),
            Err(e) => (
                false,
                Some(Event::new(
                    item,
                    "error",
                    format!("error-{}", e.exit_code()),
                    e.to_string(),
                )),
            ),
        },
        _ => deliver(server, profiles, dir, item, r, asks),
    }
}

/// Why the pane that has the item's pane id now is not the pane it was queued
/// for (one `display-message`): the server restarted, or the pane was
/// replaced. `None` when it is that pane, when the item predates
/// [`Item::queued_for`], or when the pane cannot be read (gone: the delivery
/// says so, as before).
fn replaced(server: &Server, item: &Item) -> Option<String> {
    let was = item.queued_for.as_ref()?;
    let now = Process::new(server.clone()).pane_life(&item.pane).ok()?;
    let why = was.changed(&now)?;
    let at = match was.session.is_empty() {
        true => String::new(),
        false => format!(" (session {})", was.session),
    };
    Some(format!(
        "the pane it was queued for{at} is gone: {why}; nothing typed"
    ))
}

/// The line for an item the recovery has just held (none when it was not).
fn held_event(dir: &Path, item: &Item) -> Option<Event> {
    let now = queue::find(dir, &item.id).ok().flatten()?;
    if now.phase != Phase::Held {
        return None;
    }
    let receipt = now.last_receipt.unwrap_or_else(|| "-".into());
    let why = now.last_reason.unwrap_or_default();
    Some(
        Event::new(
            item,
            "held",
            "held".into(),
            format!("{receipt} ({why}); kept for a person: queue list, queue drop ID"),
        )
        .short(format!("receipt {receipt}")),
    )
}

fn save_phase(
    dir: &Path,
    item: &Item,
    phase: Phase,
    receipt: Option<&str>,
    reason: Option<String>,
) -> Result<()> {
    let mut i = item.clone();
    i.phase = phase;
    if receipt.is_some() {
        i.last_receipt = receipt.map(str::to_string);
        i.last_reason = reason;
    }
    queue::save(dir, &i).map_err(|e| {
        eprintln!("promptgate: queue {}: cannot journal {phase}: {e}", i.id);
        e
    })
}

fn deliver(
    server: &Server,
    profiles: &Profiles,
    dir: &Path,
    item: &Item,
    r: &QueueRunArgs,
    asks: &Asks,
) -> (bool, Option<Event>) {
    // a Ctrl-C while this item is typed takes effect once it is journalled
    let _done = crate::io::interrupt::Finished;
    let opts = send_opts(item, r);
    // the queued body was sanitised when it was queued: sanitising it again
    // changes nothing
    let body = match Body::sanitise(item.body.as_bytes()) {
        Ok(b) => b,
        Err(e) => {
            return (
                false,
                Some(Event::new(
                    item,
                    "error",
                    format!("error-{}", e.exit_code()),
                    e.to_string(),
                )),
            )
        }
    };
    // an asked item: what the agent's reply files hold before anything is
    // typed, journalled with the phases (a watcher stopped after the submit
    // leaves the next one what it needs to read this prompt's answer)
    let started = crate::io::tmux::now_ms() as u64;
    let marks = item
        .ask
        .then(|| crate::engine::ask::mark(server, profiles, item.agent.as_deref(), &item.pane));
    let mut attempt = item.clone();
    attempt.attempts += 1;
    attempt.ask_from = marks.clone().map(|marks| queue::AskFrom {
        marks,
        started_ms: started,
    });
    // a journal that cannot be written stops the delivery before the step it names
    let mut journal = Journal {
        dir,
        item: &attempt,
        mark: None,
        last: None,
    };
    let shared = Shared::new(Duration::from_millis(40));
    let o = deliver_to(
        server,
        profiles,
        &opts,
        &item.pane,
        &body,
        &shared,
        &mut journal,
    );
    if let Some(rec) = &o.rec {
        journal.finish(&Finished::Receipt(rec));
    }
    let receipt = o
        .rec
        .as_ref()
        .map_or(ReceiptKind::NotSent, |r| r.receipt)
        .to_string();
    let reason = o.err.as_ref().map(|e| e.to_string()).or_else(|| {
        o.rec
            .as_ref()
            .and_then(|r| r.evidence_rule().map(str::to_string))
    });
    let agent = o
        .rec
        .as_ref()
        .map_or_else(|| "-".to_string(), |r| r.agent.clone());
    if o.code == 0 {
        let mut ev = Event::new(
            item,
            "delivered",
            "delivered".into(),
            format!("{agent} consumed {}", preview(&item.body)),
        );
        // the answer is kept (`waiting`) before the item goes: a watcher
        // stopped in between leaves one or the other, never neither
        if let Some(marks) = marks {
            ev.detail += "; waiting for its answer";
            keep_answer(server, profiles, dir, item, r, asks, o, started, marks);
        }
        let done = queue::remove(dir, &item.id).is_ok();
        return (done, Some(ev));
    }
    let state = o.rec.as_ref().map(|r| r.gate.state.clone());
    // Where did it stop? The last phase this delivery journalled says whether
    // anything was typed (none: nothing was), and what every later save of the
    // item keeps: with it the record's mark from before typing, which the
    // recovery reads before it ever presses a submit key again.
    let phase = journal.last.unwrap_or(Phase::Pending);
    attempt.record_mark = journal.mark.take().or(attempt.record_mark);
    let why = reason.clone().unwrap_or_default();
    let ev = match (phase, receipt.as_str()) {
        // nothing typed: the gate did not open, or (after `typing` was
        // journalled) tmux held the paste back and the gate then did not open
        // again: pending, never held for a person
        (Phase::Pending, _) | (Phase::Typing, "not-sent") => {
            let timed_out = o.code == code::TIMEOUT;
            let detail = match &state {
                // the gate waited its --gate-timeout: only "not yet"
                Some(st) if timed_out => format!("{agent} {st}: not ready yet; trying again"),
                _ => format!("{why}; trying again"),
            };
            let key = format!("waiting-{}-{}", o.code, state.as_deref().unwrap_or(""));
            let _ = save_phase(dir, &attempt, Phase::Pending, Some(&receipt), reason);
            // ready, but not yet still for the gate's window: a moment, not news
            let quiet = timed_out && state.as_deref() == Some("ready");
            let short = state.unwrap_or_else(|| format!("exit {}", o.code));
            let mut ev = Event::new(item, "waiting", key, detail).short(short);
            ev.quiet = quiet;
            ev
        }
        // typed but the write failed: recovery looks at the composer next round
        (_, "failed") => {
            let _ = save_phase(dir, &attempt, phase, Some(&receipt), reason);
            Event::new(
                item,
                "retrying",
                "retrying".into(),
                format!("{why}; looking at the composer next round"),
            )
        }
        // after the submit key: stranded, refused, unknown, queued -> held for a person
        _ => {
            let _ = save_phase(dir, &attempt, Phase::Held, Some(&receipt), reason);
            Event::new(
                item,
                "held",
                "held".into(),
                format!("{agent} {receipt} ({why}); kept for a person: queue list, queue drop ID"),
            )
            .short(format!("receipt {receipt}"))
        }
    };
    (false, Some(ev))
}

/// The queue's sink: each phase journalled before the step it names (a
/// journal that cannot be written stops the delivery there).
struct Journal<'a> {
    dir: &'a Path,
    item: &'a Item,
    /// What the agent's record held before typing, journalled with the phases.
    mark: Option<crate::io::record::SavedMark>,
    /// The last phase written (none: nothing was journalled, nothing typed).
    last: Option<Phase>,
}

impl crate::engine::sink::Sink for Journal<'_> {
    fn marked(&mut self, mark: &crate::io::record::SavedMark) {
        self.mark = Some(mark.clone());
    }

    fn phase(&mut self, phase: Phase) -> Result<()> {
        let item = Item {
            record_mark: self.mark.clone(),
            ..self.item.clone()
        };
        save_phase(self.dir, &item, phase, None, None)?;
        self.last = Some(phase);
        Ok(())
    }
}

/// An asked item was delivered: keep `waiting` for it now (with what a later
/// watcher needs to wait again), then wait for its turn in a thread of its own
/// (the other panes' prompts go on meanwhile) and keep the answer, as `ask`
/// reads it.
#[allow(clippy::too_many_arguments)]
fn keep_answer(
    server: &Server,
    profiles: &Profiles,
    dir: &Path,
    item: &Item,
    r: &QueueRunArgs,
    asks: &Asks,
    o: crate::engine::deliver::Outcome,
    started: u64,
    marks: crate::io::answer::Marks,
) {
    let Some(rec) = o.rec.as_ref() else { return };
    let taken = crate::engine::ask::Taken::of(rec, &marks, started);
    let kept = queue::Kept::waiting(item, std::process::id(), rec.to_json(), taken);
    if let Err(e) = queue::save_answer(dir, &kept) {
        eprintln!("promptgate: queue {}: cannot keep its answer: {e}", item.id);
        return;
    }
    wait_for_answer(server, profiles, dir, r, asks, kept);
}

/// The answers an earlier watcher of this server and queue stopped waiting
/// for (it was stopped or killed during the turn): this watcher waits for
/// each turn again, from what was kept (the record's marks from before the
/// prompt was typed), so the answer is the one to that prompt still. Kept
/// answers of an older release, without that, stay as they are.
fn resume_answers(
    server: &Server,
    profiles: &Profiles,
    dir: &Path,
    r: &QueueRunArgs,
    asks: &Asks,
) -> usize {
    let spec = server.spec();
    let me = std::process::id();
    let mut n = 0;
    for mut k in queue::load_answers(dir) {
        if k.server != spec || k.state != "waiting" || k.taken.is_none() || k.watcher_pid == me {
            continue;
        }
        // this watcher holds the one watcher lock of this server and queue:
        // whoever waited before has stopped
        k.watcher_pid = me;
        if let Err(e) = queue::save_answer(dir, &k) {
            eprintln!("promptgate: queue {}: cannot keep its answer: {e}", k.id);
            continue;
        }
        wait_for_answer(server, profiles, dir, r, asks, k);
        n += 1;
    }
    n
}

/// Wait for the turn of `kept` (a delivered asked item) in a thread of its
/// own, then keep its answer and say so.
fn wait_for_answer(
    server: &Server,
    profiles: &Profiles,
    dir: &Path,
    r: &QueueRunArgs,
    asks: &Asks,
    mut kept: queue::Kept,
) {
    let Some(taken) = kept.taken.clone() else {
        return;
    };
    if let Ok(mut p) = asks.panes.lock() {
        p.insert(kept.pane.clone());
    }
    let (server, profiles, dir) = (server.clone(), profiles.clone(), dir.to_path_buf());
    let asks = asks.clone();
    let opts = crate::engine::ask::AskOpts {
        done_timeout: crate::app::cli::duration(r.done_timeout),
        from_screen: false,
        stop_on_signal: false,
    };
    std::thread::spawn(move || {
        // (the queued body was sanitised when it was queued: as typed)
        let f = crate::engine::ask::follow(&server, &profiles, &taken, &kept.body, opts, None);
        let receipt = kept.result.take().unwrap_or_else(|| serde_json::json!({}));
        let v = f.fill(receipt);
        kept.exit_code = Some(f.code);
        kept.state = if f.code == 0 { "answered" } else { "failed" }.into();
        kept.text = f
            .answer
            .as_ref()
            .filter(|_| f.code == 0)
            .map(|a| a.text.clone());
        kept.error = v.get("error").and_then(|e| e.as_str()).map(String::from);
        kept.result = Some(v);
        kept.taken = None;
        let detail = match (&kept.text, &kept.error) {
            (Some(t), _) => format!(
                "answered {}; queue answer {} prints it",
                preview(t),
                kept.id
            ),
            (None, e) => format!("no answer: {}", e.as_deref().unwrap_or("")),
        };
        let what = if f.code == 0 { "answered" } else { "no-answer" };
        if let Err(e) = queue::save_answer(&dir, &kept) {
            eprintln!("promptgate: queue {}: cannot keep its answer: {e}", kept.id);
        }
        // the line first, then the pane freed: a watcher that sees the pane
        // free finds the answer's line already waiting to be printed
        let ev = Event::on(&kept.pane, &kept.id, what, what.into(), detail);
        let _ = asks.done.send(ev);
        if let Ok(mut p) = asks.panes.lock() {
            p.remove(&kept.pane);
        }
    });
}

/// How long the recovery waits for the agent's record to show a body typed
/// before the crash (it was written then, or it will not be); a record known
/// to be this agent's still gets the proof's own grace (3 s) before "absent".
const RECOVERY_RECORD_WAIT: Duration = Duration::from_millis(500);

/// A recovered item the agent took: off the queue, and into the delivery log
/// as `consumed` with its evidence (and the record's proof, where one was read).
fn recovered_consumed(
    dir: &Path,
    item: &Item,
    agent: &str,
    proof: Option<&crate::io::record::Proof>,
    evidence: serde_json::Value,
) -> Result<()> {
    let mut rec = serde_json::json!({
        "time_ms": crate::io::tmux::now_ms() as u64, "pane": item.pane, "agent": agent,
        "queue_id": item.id, "receipt": "consumed"});
    // an asked item whose watcher stopped before it kept the answer: kept
    // now, `waiting`, for this watcher to wait for that turn (see
    // `resume_answers`), before the item goes
    if item.ask && queue::find_answer(dir, &item.id).is_none() {
        let from = item.ask_from.clone().unwrap_or_default();
        let taken = crate::engine::ask::Taken {
            agent: agent.to_string(),
            pane: item.pane.clone(),
            proved: proof.and_then(crate::engine::ask::proved_file),
            marks: from.marks,
            started_at_ms: from.started_ms,
        };
        // (no watcher waits for it yet)
        let kept = queue::Kept::waiting(item, 0, rec.clone(), taken);
        queue::save_answer(dir, &kept)?;
    }
    queue::remove(dir, &item.id)?;
    if let Some(p) = proof {
        rec["proof"] = serde_json::json!(p);
    }
    rec["evidence"] = evidence;
    Quiet.finish(&Finished::Json(&rec));
    Ok(())
}

/// A recovered item whose `submitting` left an empty composer, but whose
/// agent's own record has no entry for it: `held` as `unproven`, and into the
/// delivery log as such with the record's proof.
fn recovered_unproven(
    dir: &Path,
    item: &Item,
    agent: &str,
    proof: &crate::io::record::Proof,
) -> Result<()> {
    let rule = "queue.recovered-record-lacks-body";
    let why = format!(
        "{rule}: an earlier watcher stopped at the submit and the composer is empty, but the agent's own record has no entry for it ({}); it may never have been submitted: look at the pane, then queue drop ID or queue add it again",
        proof.matched
    );
    save_phase(dir, item, Phase::Held, Some("unproven"), Some(why))?;
    let rec = serde_json::json!({
        "time_ms": crate::io::tmux::now_ms() as u64, "pane": item.pane, "agent": agent,
        "queue_id": item.id, "receipt": "unproven", "proof": proof,
        "evidence": {"rule": rule}});
    Quiet.finish(&Finished::Json(&rec));
    Ok(())
}

/// Resume an item the last watcher left mid-way, by the agent's record and
/// what the pane shows.
fn recover(
    server: &Server,
    profiles: &Profiles,
    dir: &Path,
    item: &Item,
    r: &QueueRunArgs,
) -> Result<bool> {
    let mut tmux = Control::new(server.clone(), &item.pane);
    let key = tmux.server_key()?;
    let _lock = PaneLock::acquire(&key, &item.pane, Duration::from_secs(5))?;
    let o = observe(&mut tmux, profiles, item.agent.as_deref(), &item.pane)?;
    let Some(agent) = o.identity.agent.clone() else {
        save_phase(
            dir,
            item,
            Phase::Held,
            Some("not-sent"),
            Some(o.verdict.reason()),
        )?;
        return Ok(false);
    };
    let profile = profiles.get(&agent)?;
    // The agent's own record first, pressing nothing: a body it holds since
    // the typing began was taken (the watcher died before it could say so), and
    // is never typed or submitted again, whatever the screen shows (an agent
    // such as Aider leaves the accepted line where its composer was).
    // A record known to be this agent's that has no entry for the body (after
    // the proof's wait) says the agent did not take it: kept, to tell a
    // composer emptied without a submit from a prompt taken.
    let mut lacks: Option<crate::io::record::Proof> = None;
    if let Some(saved) = &item.record_mark {
        let body = plan(item.body.as_bytes(), profile.capability())?.typed_text();
        let proof = crate::io::record::mark(profile, o.screen.pid)
            .map(|m| m.as_of(saved, RECOVERY_RECORD_WAIT).prove(&body));
        match proof {
            Ok(p) if crate::io::record::is_exact(p.matched) => {
                let evidence = serde_json::json!({"rule": "queue.recovered-record-holds-body"});
                recovered_consumed(dir, item, &agent, Some(&p), evidence)?;
                return Ok(true);
            }
            Ok(p) if p.owner_proven() && matches!(p.matched, "absent" | "not-yet") => {
                lacks = Some(p)
            }
            _ => {}
        }
    }
    // the choke point, before a clear key or a submit key goes into the pane
    if let Err(e) =
        crate::engine::deliver::may_type(profiles, &item.pane, &o.screen, &SendOpts::default())
    {
        save_phase(
            dir,
            item,
            Phase::Held,
            Some("not-sent"),
            Some(e.to_string()),
        )?;
        return Ok(false);
    }
    let ours = o
        .verdict
        .composer
        .as_ref()
        .filter(|c| !c.empty)
        .map(|c| crate::core::verify::holds_body(c, &item.body));
    match (item.phase, &o.verdict.state, ours) {
        // Nothing typed, or the text already left the composer.
        (Phase::Typing, State::Ready, _) => {
            save_phase(dir, item, Phase::Pending, None, None)?;
            Ok(true)
        }
        (Phase::Submitting, State::Ready | State::Busy, None | Some(false))
            if o.verdict.composer.as_ref().is_none_or(|c| c.empty) =>
        {
            // An empty composer, but the agent's own record has no entry for
            // the body: the submit may never have been pressed (the draft
            // cleared, the agent restarted). Not consumed, and never typed
            // again by itself (it may have been taken all the same): held for
            // a person. Only with no usable record does the screen decide.
            if let Some(p) = &lacks {
                recovered_unproven(dir, item, &agent, p)?;
                return Ok(false);
            }
            let evidence = serde_json::json!({"rule": "queue.recovered-composer-empty"});
            recovered_consumed(dir, item, &agent, None, evidence)?;
            Ok(true)
        }
        // Our body sits in the composer, never submitted: clear it and type again.
        (Phase::Typing, State::Draft, Some(true)) => {
            crate::engine::deliver::clear_draft(&mut tmux, &item.pane, profile)?;
            save_phase(dir, item, Phase::Pending, None, None)?;
            Ok(true)
        }
        // Typed, maybe not submitted: the submit key, then verify.
        (Phase::Submitting, State::Draft, Some(true)) => {
            let pl = plan(item.body.as_bytes(), profile.capability())?;
            let clock = SystemClock::new();
            // the record is watched beside the screen: once it holds the body,
            // no submit key is pressed again
            let (j, proof) = submit_and_prove(
                &mut tmux,
                profile,
                &item.pane,
                &pl,
                &o.screen,
                &key,
                Duration::from_secs_f64(r.verify_timeout),
                &clock,
            )?;
            if j.receipt == ReceiptKind::Consumed {
                let evidence =
                    serde_json::json!({"rule": "queue.recovered-submitted", "verify": j.evidence});
                recovered_consumed(dir, item, &agent, Some(&proof), evidence)?;
            } else {
                save_phase(
                    dir,
                    item,
                    Phase::Held,
                    Some(&j.receipt.to_string()),
                    Some(j.evidence.rule.clone()),
                )?;
            }
            Ok(true)
        }
        (_, State::Draft, _) => {
            save_phase(
                dir,
                item,
                Phase::Held,
                Some("not-sent"),
                Some("the composer holds other text".into()),
            )?;
            Ok(false)
        }
        // busy, starting, a dialog...: look again later
        _ => Ok(false),
    }
}
