//! `promptgate queue add|list|drop|run`: the durable queue (see `crate::queue`).

use super::{observe, out, read_body, target};
use crate::cli::{QueueAddArgs, QueueArgs, QueueCmd, QueueRunArgs, SendArgs};
use crate::detect::State;
use crate::error::{code, Error, Refusal, Result};
use crate::gate::SystemClock;
use crate::lock::PaneLock;
use crate::plan::{plan, sanitise};
use crate::profile::Profiles;
use crate::queue::{self, Item};
use crate::tmux::{Control, Process, Server, Tmux};
use crate::verify::Receipt;
use clap::Parser;
use std::path::Path;
use std::time::{Duration, Instant};

pub fn run(server: &Server, profiles: &Profiles, a: QueueArgs) -> Result<i32> {
    let dir = queue::dir();
    match a.cmd {
        QueueCmd::Add(a) => add(server, profiles, &dir, a),
        QueueCmd::List { json } => list(&dir, json),
        QueueCmd::Drop { id } => {
            if queue::remove(&dir, &id)? {
                out(&format!("dropped {id}"))?;
                Ok(0)
            } else {
                Err(Error::Usage(format!("no queued prompt {id}")))
            }
        }
        QueueCmd::Run(r) => watch(server, profiles, &dir, r),
    }
}

fn add(server: &Server, profiles: &Profiles, dir: &Path, a: QueueAddArgs) -> Result<i32> {
    let raw = read_body(&a.body)?;
    let (body, _) = sanitise(&raw)?;
    if let Some(n) = &a.agent {
        profiles.get(n)?;
    }
    let pane = Process::new(server.clone()).resolve(&target(&a.target)?)?;
    let item = Item {
        id: queue::new_id(),
        server: server.spec(),
        pane,
        agent: a.agent,
        body,
        created_ms: crate::tmux::now_ms() as u64,
        phase: "pending".into(),
        attempts: 0,
        last_receipt: None,
        last_reason: None,
    };
    queue::save(dir, &item)?;
    out(&item.id)?;
    Ok(0)
}

fn list(dir: &Path, json: bool) -> Result<i32> {
    for i in queue::load_all(dir)? {
        if json {
            out(&serde_json::to_string(&i).unwrap_or_default())?;
        } else {
            let preview: String = i
                .body
                .chars()
                .take(40)
                .map(|c| if c == '\n' { '⏎' } else { c })
                .collect();
            out(&format!(
                "{}\t{}\t{}\t{}\t{}\t{:?}",
                i.id,
                i.server,
                i.pane,
                i.phase,
                i.last_receipt.as_deref().unwrap_or("-"),
                preview
            ))?;
        }
    }
    Ok(0)
}

/// `send` options for one queued item, built as a command line.
#[derive(Parser)]
struct SendOnly {
    #[command(flatten)]
    a: SendArgs,
}

fn send_args(item: &Item, r: &QueueRunArgs) -> SendArgs {
    let timeout = r.gate_timeout.to_string();
    let mut argv = vec![
        "send",
        "-t",
        &item.pane,
        "--wait-busy",
        "--timeout",
        &timeout,
        "--lock-timeout",
        "5",
    ];
    if let Some(a) = &item.agent {
        argv.extend(["--agent", a]);
    }
    SendOnly::parse_from(argv).a
}

/// The watcher: deliver each pane's queue in order whenever that pane is ready.
fn watch(server: &Server, profiles: &Profiles, dir: &Path, r: QueueRunArgs) -> Result<i32> {
    std::fs::create_dir_all(dir)?;
    // One watcher per server and queue directory.
    let _me = PaneLock::acquire(
        &format!("queue:{}", dir.display()),
        &server.spec(),
        Duration::from_millis(50),
    )
    .map_err(|_| {
        Error::Refused(Refusal {
            code: code::LOCKED,
            message: format!("a queue watcher already runs for {}", server.spec()),
        })
    })?;
    let spec = server.spec();
    let start = Instant::now();
    loop {
        let items: Vec<Item> = queue::load_all(dir)?
            .into_iter()
            .filter(|i| i.server == spec)
            .collect();
        let mut heads: Vec<Item> = Vec::new();
        for i in items {
            if !heads.iter().any(|h| h.pane == i.pane) {
                heads.push(i);
            }
        }
        let live: Vec<&Item> = heads.iter().filter(|i| i.phase != "held").collect();
        if live.is_empty() && r.once {
            return Ok(0);
        }
        let progress: usize = std::thread::scope(|s| {
            let hs: Vec<_> = live
                .iter()
                .map(|i| s.spawn(|| step(server, profiles, dir, i, &r)))
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or(false) as usize)
                .sum()
        });
        if r.once
            && progress == 0
            && r.max_secs
                .is_none_or(|m| start.elapsed() >= Duration::from_secs_f64(m))
        {
            return Ok(if live.is_empty() { 0 } else { code::TIMEOUT });
        }
        if r.max_secs
            .is_some_and(|m| start.elapsed() >= Duration::from_secs_f64(m))
        {
            return Ok(0);
        }
        if progress == 0 {
            std::thread::sleep(Duration::from_millis(r.interval));
        }
    }
}

/// One step for the head item of one pane; true when it made progress.
fn step(server: &Server, profiles: &Profiles, dir: &Path, item: &Item, r: &QueueRunArgs) -> bool {
    match item.phase.as_str() {
        "typing" | "submitting" => recover(server, profiles, dir, item, r).unwrap_or_else(|e| {
            eprintln!("promptgate: queue {}: {e}", item.id);
            false
        }),
        _ => deliver(server, profiles, dir, item, r),
    }
}

fn save_phase(dir: &Path, item: &Item, phase: &str, receipt: Option<&str>, reason: Option<String>) {
    let mut i = item.clone();
    i.phase = phase.into();
    if receipt.is_some() {
        i.last_receipt = receipt.map(str::to_string);
        i.last_reason = reason;
    }
    if let Err(e) = queue::save(dir, &i) {
        eprintln!("promptgate: queue {}: cannot save: {e}", i.id);
    }
}

fn deliver(
    server: &Server,
    profiles: &Profiles,
    dir: &Path,
    item: &Item,
    r: &QueueRunArgs,
) -> bool {
    let a = send_args(item, r);
    let mut attempt = item.clone();
    attempt.attempts += 1;
    let hook = |phase: &str| save_phase(dir, &attempt, phase, None, None);
    let shared = super::send::Shared::new(Duration::from_millis(40));
    let o = super::send::deliver_to(
        server,
        profiles,
        &a,
        &item.pane,
        item.body.as_bytes(),
        &shared,
        Some(&hook),
    );
    if let Some(rec) = &o.rec {
        crate::log::append(rec);
    }
    let receipt = o
        .rec
        .as_ref()
        .and_then(|r| r["receipt"].as_str().map(str::to_string))
        .unwrap_or_else(|| "not-sent".into());
    let reason = o.err.as_ref().map(|e| e.to_string()).or_else(|| {
        o.rec
            .as_ref()
            .and_then(|r| r["evidence"]["rule"].as_str().map(str::to_string))
    });
    if o.code == 0 {
        return queue::remove(dir, &item.id).is_ok();
    }
    // Where did it stop? The phase on disk says whether anything was typed.
    let on_disk = queue::load_all(dir)
        .ok()
        .and_then(|v| v.into_iter().find(|i| i.id == item.id));
    let phase = on_disk.map(|i| i.phase).unwrap_or_else(|| "pending".into());
    match (phase.as_str(), receipt.as_str()) {
        ("pending", _) => save_phase(dir, &attempt, "pending", Some(&receipt), reason),
        // typed but the write failed: recovery looks at the composer next round
        (p, "failed") => save_phase(dir, &attempt, p, Some(&receipt), reason),
        // after the submit key: stranded, refused, unknown, queued -> held for a person
        _ => save_phase(dir, &attempt, "held", Some(&receipt), reason),
    }
    false
}

/// Resume an item the last watcher left mid-way, by what the pane shows.
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
            "held",
            Some("not-sent"),
            Some(o.verdict.reason()),
        );
        return Ok(false);
    };
    let profile = profiles.get(&agent)?;
    let ours = o
        .verdict
        .composer
        .as_ref()
        .filter(|c| !c.empty)
        .map(|c| crate::verify::holds_body(c, &item.body));
    match (item.phase.as_str(), &o.verdict.state, ours) {
        // Nothing typed, or the text already left the composer.
        ("typing", State::Ready, _) => {
            save_phase(dir, item, "pending", None, None);
            Ok(true)
        }
        ("submitting", State::Ready | State::Busy, None | Some(false))
            if o.verdict.composer.as_ref().is_none_or(|c| c.empty) =>
        {
            queue::remove(dir, &item.id)?;
            crate::log::append(
                &serde_json::json!({"time_ms": crate::tmux::now_ms() as u64, "pane": item.pane, "agent": agent, "queue_id": item.id, "receipt": "consumed", "evidence": {"rule": "queue.recovered-composer-empty"}}),
            );
            Ok(true)
        }
        // Our body sits in the composer, never submitted: clear it and type again.
        ("typing", State::Draft, Some(true)) => {
            crate::deliver::clear_draft(&mut tmux, &item.pane, profile)?;
            save_phase(dir, item, "pending", None, None);
            Ok(true)
        }
        // Typed, maybe not submitted: the submit key, then verify.
        ("submitting", State::Draft, Some(true)) => {
            let pl = plan(item.body.as_bytes(), profile.capability())?;
            let before = o.screen.clone();
            tmux.send_key(&item.pane, &pl.submit().text)?;
            let clock = SystemClock::new();
            let (j, _, _) = super::send::verify_loop(
                &mut tmux,
                profile,
                &item.pane,
                &pl,
                &before,
                Duration::from_secs_f64(r.verify_timeout),
                &clock,
            )?;
            if j.receipt == Receipt::Consumed {
                queue::remove(dir, &item.id)?;
            } else {
                save_phase(
                    dir,
                    item,
                    "held",
                    Some(&j.receipt.to_string()),
                    Some(j.evidence.rule.clone()),
                );
            }
            Ok(true)
        }
        (_, State::Draft, _) => {
            save_phase(
                dir,
                item,
                "held",
                Some("not-sent"),
                Some("the composer holds other text".into()),
            );
            Ok(false)
        }
        // busy, starting, a dialog...: look again later
        _ => Ok(false),
    }
}
