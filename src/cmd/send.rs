//! `promptgate send`: the main job. Sanitise first (a bad body types nothing),
//! then identify, lock the pane, gate, type, settle, submit, and verify.

use super::{observe, out, read_body, refusal, secs, target};
use crate::cli::SendArgs;
use crate::deliver::{check_same_pane, settle, submit, type_body, Typed};
use crate::detect::{detect, State};
use crate::error::{code, Error, Refusal, Result};
use crate::gate::{Clock, GateResult, SystemClock};
use crate::lock::PaneLock;
use crate::plan::{plan, sanitise, Plan};
use crate::profile::{Profile, Profiles};
use crate::screen::Screen;
use crate::tmux::{Control, Process, Server, Tmux};
use crate::verify::{judge, Judgement, Receipt};
use serde_json::json;
use std::time::Duration;

pub fn run(server: &Server, profiles: &Profiles, a: SendArgs) -> Result<i32> {
    let clock = SystemClock::new();
    let raw = read_body(&a.file, &a.body)?;
    // Refuse a bad body before anything touches the pane.
    sanitise(&raw)?;
    if let Some(name) = &a.t.agent {
        profiles.get(name)?;
    }
    let pane = Process::new(server.clone()).resolve(&target(&a.t.target)?)?;
    let mut tmux = Control::new(server.clone(), &pane);
    let server_key = tmux.server_key()?;
    let first = observe(&mut tmux, profiles, a.t.agent.as_deref(), &pane)?;
    let Some(agent) = first.identity.agent.clone() else {
        return Err(refusal(
            &first.verdict.state,
            &first.verdict.reason(),
            false,
        ));
    };
    let profile = profiles.get(&agent)?;
    let pl = plan(&raw, profile.capability())?;

    let lock = PaneLock::acquire(&server_key, &pane, secs(a.lock_timeout))?;
    let force = forced(&a);
    let t_gate = clock.now();
    let gate = if force {
        forced_gate(&mut tmux, profile, &pane)?
    } else {
        run_gate(&mut tmux, profiles, profile, &a, &pane)?
    };
    let gate_ms = (clock.now() - t_gate).as_millis() as u64;

    let mut rec = json!({
        "time_ms": crate::tmux::now_ms() as u64,
        "pane": pane,
        "server": server_key,
        "agent": agent,
        "bytes_in": pl.bytes_in,
        "bytes_out": pl.bytes_out,
        "framing": pl.framing,
        "chunks": pl.chunks.len(),
        "changes": pl.changes,
        "forced": force,
        "control_mode": tmux.connected(),
        "lock_waited_ms": lock.waited_ms,
        "gate": {"ready": gate.ready, "state": gate.state.to_string(), "waited_ms": gate.waited_ms, "polls": gate.polls, "reason": gate.reason},
    });
    if !gate.ready && !force {
        let e = refusal(&gate.state, &gate.reason, gate.timed_out);
        rec["receipt"] = "not-sent".into();
        rec["error"] = e.to_string().into();
        rec["exit_code"] = e.exit_code().into();
        finish(&rec, a.json)?;
        return Err(e);
    }

    let result = deliver_and_verify(&mut tmux, profile, &pane, &pl, gate.screen.pid, &a, &clock);
    let (exit, err) = match result {
        Ok((typed, j, resubmits, verify_ms)) => {
            rec["receipt"] = j.receipt.to_string().into();
            rec["evidence"] = serde_json::to_value(&j.evidence).unwrap_or_default();
            rec["resubmits"] = resubmits.into();
            rec["timings"] = json!({"gate_ms": gate_ms, "type_ms": typed.type_ms, "settle_ms": typed.settle_ms, "settled": typed.settled, "verify_ms": verify_ms, "total_ms": clock.now().as_millis() as u64});
            let c = receipt_code(&j.receipt);
            (c, None)
        }
        Err(e) => {
            rec["receipt"] = "failed".into();
            rec["error"] = e.to_string().into();
            (e.exit_code(), Some(e))
        }
    };
    rec["exit_code"] = exit.into();
    drop(lock);
    finish(&rec, a.json)?;
    if let Some(e) = err {
        return Err(e);
    }
    if exit != 0 && !a.json {
        let r = rec["receipt"].as_str().unwrap_or("?");
        let ev = rec["evidence"]["rule"].as_str().unwrap_or("");
        eprintln!("promptgate: receipt {r} ({ev}) for {pane}");
    }
    Ok(exit)
}

/// `--force`, or `PROMPTGATE_GATE=off`: skip the gate (still plan, sanitise, verify).
fn forced(a: &SendArgs) -> bool {
    a.force || std::env::var("PROMPTGATE_GATE").is_ok_and(|v| v == "off" || v == "0")
}

fn receipt_code(r: &Receipt) -> i32 {
    match r {
        Receipt::Consumed => 0,
        Receipt::Queued => code::RECEIPT_QUEUED,
        Receipt::Stranded => code::RECEIPT_STRANDED,
        Receipt::Refused => code::RECEIPT_REFUSED,
        Receipt::Unknown => code::RECEIPT_UNKNOWN,
    }
}

fn finish(rec: &serde_json::Value, json: bool) -> Result<()> {
    crate::log::append(rec);
    if json {
        out(&rec.to_string())?;
    } else if rec["receipt"] == "consumed" {
        out(&format!(
            "{}\t{}\tconsumed\t{} bytes, {}, gate {} ms",
            rec["pane"].as_str().unwrap_or(""),
            rec["agent"].as_str().unwrap_or(""),
            rec["bytes_out"],
            rec["framing"].as_str().unwrap_or(""),
            rec["gate"]["waited_ms"]
        ))?;
    }
    Ok(())
}

/// `--force`: no waiting, but never into a dead pane.
fn forced_gate(tmux: &mut dyn Tmux, profile: &Profile, pane: &str) -> Result<GateResult> {
    let s = tmux.read(pane)?;
    let v = detect(profile, &s);
    if s.dead {
        return Err(refusal(&State::Exited, "pane_dead=1", false));
    }
    Ok(GateResult {
        ready: true,
        timed_out: false,
        state: v.state.clone(),
        waited_ms: 0,
        polls: 1,
        reason: "gate skipped (--force)".into(),
        evidence: v.evidence.clone(),
        verdict: v,
        screen: s,
    })
}

/// The gate, with the two guards that can fix the pane first: --cancel-mode, --replace-draft.
fn run_gate(
    tmux: &mut Control,
    profiles: &Profiles,
    profile: &Profile,
    a: &SendArgs,
    pane: &str,
) -> Result<GateResult> {
    let opts = super::wait::opts(&a.gate);
    let mut cancelled = false;
    let mut cleared = false;
    loop {
        let (_, g) = super::wait::gate(tmux, profiles, Some(profile.name()), pane, &opts)?;
        if g.state == State::InMode && a.cancel_mode && !cancelled {
            tmux.cancel_mode(pane)?;
            cancelled = true;
            continue;
        }
        if g.state == State::Draft
            && a.replace_draft
            && !cleared
            && !profile.capability().clear_keys.is_empty()
        {
            for k in &profile.capability().clear_keys {
                tmux.send_key(pane, k)?;
                std::thread::sleep(Duration::from_millis(60));
            }
            cleared = true;
            continue;
        }
        return Ok(g);
    }
}

type Delivered = (Typed, Judgement, u32, u64);

fn deliver_and_verify(
    tmux: &mut Control,
    profile: &Profile,
    pane: &str,
    pl: &Plan,
    pid: Option<u32>,
    a: &SendArgs,
    clock: &dyn Clock,
) -> Result<Delivered> {
    let force = forced(a);
    let s0 = check_same_pane(tmux, pane, pid)?;
    let v0 = detect(profile, &s0);
    if !force && v0.state != State::Ready {
        let why = format!("changed after the gate, before typing: {}", v0.reason());
        return Err(refusal(&v0.state, &why, false));
    }
    let mut typed = type_body(tmux, pane, pl, clock)?;
    let typed_at = clock.now();
    let kib = (pl.bytes_out as u64).div_ceil(1024);
    settle(
        tmux,
        pane,
        profile,
        clock,
        Duration::from_millis(60),
        Duration::from_millis(1500 + 20 * kib).min(Duration::from_secs(20)),
        &mut typed,
    )?;
    let delay = Duration::from_millis(pl.submit().delay_before_ms);
    let since = clock.now() - typed_at;
    if since < delay {
        clock.sleep(delay - since);
    }
    // The last look before the submit key: never press it into a dialog.
    let before = check_same_pane(tmux, pane, pid)?;
    let vb = detect(profile, &before);
    if let State::Dialog(_) = vb.state {
        let evidence = crate::detect::Evidence {
            rule: "verify.dialog-before-submit".into(),
            ..vb.evidence.clone()
        };
        let j = Judgement {
            receipt: Receipt::Refused,
            evidence,
            verdict: vb,
        };
        return Ok((typed, j, 0, 0));
    }
    submit(tmux, pane, pl)?;
    if a.no_verify {
        let j = Judgement {
            receipt: Receipt::Consumed,
            evidence: crate::detect::Evidence {
                rule: "verify.skipped".into(),
                ..Default::default()
            },
            verdict: detect(profile, &before),
        };
        return Ok((typed, j, 0, 0));
    }
    let (j, resubmits, ms) = verify_loop(
        tmux,
        profile,
        pane,
        pl,
        &before,
        secs(a.verify_timeout),
        clock,
    )?;
    Ok((typed, j, resubmits, ms))
}

/// Watch until consumed or refused; press submit again (bounded) while stranded.
fn verify_loop(
    tmux: &mut Control,
    profile: &Profile,
    pane: &str,
    pl: &Plan,
    before: &Screen,
    timeout: Duration,
    clock: &dyn Clock,
) -> Result<(Judgement, u32, u64)> {
    let start = clock.now();
    let mut resubmits = 0u32;
    let mut stranded_since: Option<Duration> = None;
    let mut last_press = start;
    let grace = Duration::from_millis(400 + pl.submit().delay_before_ms);
    loop {
        clock.sleep(Duration::from_millis(25));
        let s = match tmux.read(pane) {
            Ok(s) => s,
            Err(e) => {
                return Err(Error::Refused(Refusal {
                    code: code::DELIVERY_FAILED,
                    message: format!("pane went away after the submit: {e}"),
                }))
            }
        };
        let j = judge(profile, &pl.body, before, &s);
        let now = clock.now();
        match j.receipt {
            Receipt::Consumed | Receipt::Refused => {
                return Ok((j, resubmits, (now - start).as_millis() as u64))
            }
            Receipt::Stranded => {
                let since = *stranded_since.get_or_insert(now);
                if now - since >= grace
                    && now - last_press >= grace
                    && resubmits < profile.capability().resubmit_max
                {
                    tmux.send_key(pane, &pl.submit().text)?;
                    resubmits += 1;
                    last_press = now;
                    stranded_since = None;
                }
            }
            _ => stranded_since = None,
        }
        if now - start >= timeout {
            return Ok((j, resubmits, (now - start).as_millis() as u64));
        }
    }
}
