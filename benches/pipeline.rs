//! `cargo bench`: what detect costs on a 120x40 screen, what the planner costs,
//! and what one read of a pane costs through each tmux backend. Prints a table;
//! the README's figures come from here.

use promptgate::core::detect::detect;
use promptgate::core::plan::plan;
use promptgate::core::profile::Profiles;
use promptgate::io::tmux::{Control, Process, Server, Tmux};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

/// Run `f` for about `budget`, after a warm-up; returns (median per call, calls).
fn measure(budget: Duration, mut f: impl FnMut()) -> (Duration, usize) {
    for _ in 0..3 {
        f();
    }
    let mut samples = Vec::new();
    let start = Instant::now();
    while start.elapsed() < budget || samples.len() < 5 {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    samples.sort();
    (samples[samples.len() / 2], samples.len())
}

fn show(what: &str, (d, n): (Duration, usize)) {
    let us = d.as_secs_f64() * 1e6;
    println!("{what:<58} {us:>10.1} µs  (median of {n})");
}

fn main() {
    // `cargo test --benches` runs this with --test-ish args; keep it cheap then.
    let quick = std::env::args().any(|a| a == "--test")
        || std::env::var_os("PROMPTGATE_BENCH_QUICK").is_some();
    let budget = if quick {
        Duration::from_millis(50)
    } else {
        Duration::from_secs(2)
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let profiles = Profiles::builtin();
    println!(
        "promptgate bench ({} build)",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    for (agent, file) in [
        ("claude", "claude/09-idle-after-apikey"),
        ("claude", "claude/11-submit-0.2s"),
        ("codex", "codex/06-idle-composer"),
        ("codex", "codex/14-enter-10s"),
        ("gemini", "gemini/06-ready-idle"),
        ("gemini", "gemini/16-sendkeys5k-3s"),
    ] {
        let s = promptgate::io::capture::load(&root.join(format!("{file}.txt")), None).unwrap();
        let p = profiles.get(agent).unwrap();
        let state = detect(p, &s).state;
        show(
            &format!("detect {file} ({}x{}, {state})", s.width, s.height),
            measure(budget, || {
                black_box(detect(p, black_box(&s)));
            }),
        );
    }
    let cap = profiles.get("claude").unwrap().capability().clone();
    let body = "the quick brown fox jumps over the lazy dog\n".repeat(2400); // ~100 KB
    show(
        "plan a 100 KB body (claude capability)",
        measure(budget, || {
            black_box(plan(black_box(body.as_bytes()), &cap).unwrap());
        }),
    );

    // One read through the adapter, on a private server.
    let socket = format!("promptgate-bench-{}", std::process::id());
    let server = Server::Name(socket.clone());
    let one = Process::new(server.clone());
    let fixture = root.join("claude/09-idle-after-apikey.txt");
    let cmd = vec![
        "sh".to_string(),
        "-c".into(),
        format!("cat '{}'; exec sleep 600", fixture.display()),
    ];
    match one.new_session("bench", 120, 40, &cmd) {
        Err(e) => println!("(skipping tmux reads: {e})"),
        Ok(pane) => {
            std::thread::sleep(Duration::from_millis(300));
            let mut p = one.clone();
            show(
                "read one pane, one-shot tmux client (display+capture)",
                measure(budget, || {
                    black_box(p.read(&pane).unwrap());
                }),
            );
            let mut c = Control::attached(server, &pane);
            let label = if c.connected() {
                "read one pane, control-mode connection"
            } else {
                "read one pane, control mode FELL BACK to one-shot"
            };
            show(
                label,
                measure(budget, || {
                    black_box(c.read(&pane).unwrap());
                }),
            );
            let s = p.read(&pane).unwrap();
            let pr = profiles.get("claude").unwrap();
            show(
                "read + detect, control-mode connection",
                measure(budget, || {
                    black_box(detect(pr, &c.read(&pane).unwrap()));
                }),
            );
            let _ = s;
            drop(c);
            let _ = one.kill_server();
        }
    }
}
