//! One fleet across machines: the same send on several hosts at once
//! (`--host` repeated, `--hosts FILE`), one ssh connection per host, one
//! aggregated receipt naming host and pane.
//!
//! Each host gets an ssh master connection owned by this process ([`Master`]),
//! and its send runs as a child `promptgate send --json` whose every tmux call,
//! control-mode client and record read go through that one connection
//! (`PROMPTGATE_TMUX="ssh -S SOCKET HOST tmux"`). The hosts run in parallel;
//! a host that cannot be reached fails alone, within `--connect-timeout`, and a
//! host whose send runs past `--host-timeout` is stopped (SIGTERM: a prompt
//! being typed is finished first) and fails alone.
//!
//! [`run_hosts`] is the reusable part: any command that fans out across hosts
//! (`send`, `ask`) gives it the hosts and the argv of its own child per host.

use crate::app::cli::SendArgs;
use crate::core::error::{code, fanout_code, Error, Result};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use crate::io::tmux::ssh_base;
use crate::io::tmux::Launcher;

/// The hosts of a hosts file: one a line, blank lines and `#` comments skipped.
pub fn read_hosts(path: &Path) -> Result<Vec<String>> {
    let text = crate::io::read_capped_string(path, crate::io::FILE_LIMIT)
        .map_err(|e| Error::Usage(format!("cannot read --hosts {}: {e}", path.display())))?;
    Ok(parse_hosts(&text))
}

fn parse_hosts(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// `--host` repeated and the hosts file, in order, each once.
pub fn all_hosts(flags: &[String], file: Option<&Path>) -> Result<Vec<String>> {
    let mut hosts: Vec<String> = flags.to_vec();
    if let Some(f) = file {
        hosts.extend(read_hosts(f)?);
    }
    for h in &hosts {
        check_host(h)?;
    }
    // host names are case-insensitive: `box` and `BOX` are one machine, and
    // one prompt must not reach its agents twice
    let mut seen = std::collections::HashSet::new();
    hosts.retain(|h| seen.insert(host_key(h)));
    if hosts.is_empty() {
        return Err(Error::Usage("no hosts: the hosts file lists none".into()));
    }
    Ok(hosts)
}

/// One host as ssh takes it: `[user@]name[:port]` or an ssh config alias. A
/// leading `-` would be an ssh option (`-oProxyCommand=…`), and a space or a
/// shell character would become words of the command run there: refused (2).
pub fn check_host(h: &str) -> Result<()> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "._-@:[]%+".contains(c);
    if h.is_empty() || h.starts_with('-') || !h.chars().all(ok) {
        return Err(Error::Usage(format!(
            "not a host: {h:?} (a host is [user@]name, letters, digits and . _ - @ : [ ] % + only)"
        )));
    }
    Ok(())
}

/// What makes two host strings one machine: the name after `user@` in lower case.
fn host_key(h: &str) -> String {
    match h.rsplit_once('@') {
        Some((user, name)) => format!("{user}@{}", name.to_ascii_lowercase()),
        None => h.to_ascii_lowercase(),
    }
}

/// An ssh master connection to one host, started and owned by this process:
/// killed (by its pid) and its socket removed when dropped.
pub struct Master {
    child: Child,
    pub host: String,
    pub socket: PathBuf,
}

impl Master {
    /// Connect to `host`; `Err(why)` when ssh gave up or `timeout` passed.
    pub fn open(
        host: &str,
        socket: PathBuf,
        timeout: Duration,
    ) -> std::result::Result<Master, String> {
        let errlog = socket.with_extension("err");
        let err = std::fs::File::create(&errlog).map_err(|e| e.to_string())?;
        let base = ssh_base();
        let secs = timeout.as_secs().max(1).to_string();
        let mut cmd = Command::new(&base[0]);
        cmd.args(&base[1..])
            .args(["-M", "-N", "-S"])
            .arg(&socket)
            .args(["-o", "ControlMaster=yes", "-o", "ControlPersist=no"])
            .args([
                "-o",
                "BatchMode=yes",
                "-o",
                &format!("ConnectTimeout={secs}"),
            ])
            .args(["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=2"])
            .arg("--")
            .arg(host)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err);
        // the connection ends with this process, however it ends (a signal
        // before anything was typed ends it without a drop); its own process
        // group: a Ctrl-C at the terminal must not cut it while the host's
        // promptgate finishes typing through it
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child =
            crate::io::proc::spawn_tied(cmd).map_err(|e| format!("cannot run {}: {e}", base[0]))?;
        let mut m = Master {
            child,
            host: host.to_string(),
            socket,
        };
        let deadline = Instant::now() + timeout + Duration::from_secs(1);
        let why = loop {
            if m.socket.exists() {
                let _ = std::fs::remove_file(&errlog);
                return Ok(m);
            }
            if let Ok(Some(st)) = m.child.try_wait() {
                let msg = std::fs::read_to_string(&errlog).unwrap_or_default();
                let msg = msg.trim().lines().last().unwrap_or("").to_string();
                break format!(
                    "ssh to {host} failed ({st}){}",
                    if msg.is_empty() {
                        String::new()
                    } else {
                        format!(": {msg}")
                    }
                );
            }
            if Instant::now() >= deadline {
                break format!(
                    "ssh to {host}: no connection within {} s",
                    timeout.as_secs_f64()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let _ = std::fs::remove_file(&errlog);
        Err(why)
    }

    /// [`open`](Self::open) with its socket in a private directory of its own
    /// (removed with the directory, after the connection is dropped).
    pub fn open_private(
        host: &str,
        timeout: Duration,
    ) -> std::result::Result<(Master, tempfile::TempDir), String> {
        let dir = tempfile::Builder::new()
            .prefix("pgssh")
            .tempdir()
            .map_err(|e| format!("cannot make a directory for the ssh connection: {e}"))?;
        let m = Master::open(host, dir.path().join("m.sock"), timeout)?;
        Ok((m, dir))
    }

    /// tmux on the host, through this connection.
    pub fn launcher(&self) -> Launcher {
        let mut argv = ssh_base();
        argv.extend(["-S".into(), self.socket.display().to_string()]);
        argv.extend(["-o".into(), "ControlMaster=no".into()]);
        argv.extend(["-o".into(), "BatchMode=yes".into()]);
        argv.extend([self.host.clone(), "tmux".into()]);
        Launcher { argv, remote: true }
    }

    /// `PROMPTGATE_TMUX` for a child: tmux on the host, through this connection
    /// (for a person reading the environment; the child takes its words from
    /// [`tmux_argv`](Self::tmux_argv), which keeps a path with a space one word).
    pub fn tmux_spec(&self) -> String {
        self.launcher().argv.join(" ")
    }

    /// `PROMPTGATE_TMUX_ARGV` for a child: the same command, its words as a JSON list.
    pub fn tmux_argv(&self) -> String {
        serde_json::Value::from(self.launcher().argv).to_string()
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// How long a fleet waits on each host.
#[derive(Debug, Clone, Copy)]
pub struct FleetOpts {
    pub connect_timeout: Duration,
    pub host_timeout: Duration,
}

/// What one host's child answered.
#[derive(Debug, Clone)]
pub struct HostRun {
    pub host: String,
    /// The child's exit code, or [`code::FLEET_HOST_FAILED`] when the host failed.
    pub code: i32,
    /// The child's JSON (`--json`), when it printed one.
    pub json: Option<Value>,
    /// Why the host failed: not reached, no answer in time, no JSON.
    pub failed: Option<String>,
    pub ms: u64,
}

/// Run, on every host at once, this program with `args_for(host)`, its stdin
/// `stdin`, its tmux through one ssh connection per host. Results in host order.
pub fn run_hosts(
    hosts: &[String],
    opts: FleetOpts,
    args_for: &(dyn Fn(&str) -> Vec<OsString> + Sync),
    stdin: Option<&[u8]>,
) -> Vec<HostRun> {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("promptgate"));
    let dir = socket_dir();
    // A Ctrl-C or SIGTERM does not end this process while its hosts run: each
    // host's promptgate gets it (a prompt being typed is finished first; an ask
    // stops waiting), and what they report is still collected and printed.
    let _hold = crate::io::interrupt::Waiting::begin();
    std::thread::scope(|s| {
        let handles: Vec<_> = hosts
            .iter()
            .enumerate()
            .map(|(i, host)| {
                let (exe, dir) = (&exe, &dir);
                s.spawn(move || {
                    let t = Instant::now();
                    let mut r = run_host(exe, dir, i, host, opts, args_for(host), stdin);
                    r.ms = t.elapsed().as_millis() as u64;
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .zip(hosts)
            .map(|(h, host)| {
                h.join().unwrap_or_else(|_| HostRun {
                    host: host.clone(),
                    code: code::FLEET_HOST_FAILED,
                    json: None,
                    failed: Some("internal error (thread)".into()),
                    ms: 0,
                })
            })
            .collect()
    })
}

/// A short directory for the control sockets (their paths have a ~100 byte limit).
fn socket_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("pgfleet-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    d
}

fn run_host(
    exe: &Path,
    dir: &Path,
    i: usize,
    host: &str,
    opts: FleetOpts,
    args: Vec<OsString>,
    stdin: Option<&[u8]>,
) -> HostRun {
    let fail = |why: String| HostRun {
        host: host.to_string(),
        code: code::FLEET_HOST_FAILED,
        json: None,
        failed: Some(why),
        ms: 0,
    };
    let master = match Master::open(host, dir.join(format!("h{i}.sock")), opts.connect_timeout) {
        Ok(m) => m,
        Err(why) => return fail(why),
    };
    let mut c = Command::new(exe);
    c.args(&args)
        .env("PROMPTGATE_TMUX", master.tmux_spec())
        .env("PROMPTGATE_TMUX_ARGV", master.tmux_argv())
        .env("PROMPTGATE_TMUX_REMOTE", "1")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match c.spawn() {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot run {}: {e}", exe.display())),
    };
    if let (Some(body), Some(mut w)) = (stdin, child.stdin.take()) {
        let _ = w.write_all(body);
    }
    // read both pipes while it runs (a full pipe would stall it)
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut o = Vec::new();
        let mut e = Vec::new();
        let eh = std::thread::spawn(move || {
            if let Some(p) = err.as_mut() {
                let _ = p.read_to_end(&mut e);
            }
            e
        });
        if let Some(p) = out.as_mut() {
            let _ = p.read_to_end(&mut o);
        }
        let e = eh.join().unwrap_or_default();
        let _ = tx.send((o, e));
    });
    let deadline = Instant::now() + opts.host_timeout;
    let mut passed_on = false;
    let (status, timed_out) = loop {
        if !passed_on && crate::io::interrupt::STOP_WAIT.load(std::sync::atomic::Ordering::SeqCst) {
            // (a Ctrl-C at the terminal reached it already: a second one changes nothing)
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            passed_on = true;
        }
        match child.try_wait() {
            Ok(Some(st)) => break (Some(st), false),
            Ok(None) if Instant::now() >= deadline => {
                // SIGTERM: a child typing a prompt finishes that first
                unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                let grace = Instant::now() + Duration::from_secs(30);
                let st = loop {
                    match child.try_wait() {
                        Ok(Some(st)) => break Some(st),
                        Ok(None) if Instant::now() < grace => {
                            std::thread::sleep(Duration::from_millis(20))
                        }
                        _ => {
                            let _ = child.kill();
                            break child.wait().ok();
                        }
                    }
                };
                break (st, true);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break (None, false),
        }
    };
    let (o, e) = rx.recv().unwrap_or_default();
    drop(master);
    let json: Option<Value> = serde_json::from_slice(&o).ok();
    let stderr = String::from_utf8_lossy(&e)
        .trim()
        .lines()
        .last()
        .unwrap_or("")
        .to_string();
    let why_stopped = format!(
        "{host}: no answer within --host-timeout {} s; stopped",
        opts.host_timeout.as_secs_f64()
    );
    if timed_out {
        // stopped, but it printed its receipt (a prompt being typed is finished
        // first, a turn's wait stops): what it delivered stays its rows, so that
        // a `consumed` prompt is never reported `not-sent` (and sent again)
        if let Some(mut v) = json {
            v["host_timed_out"] = true.into();
            if v.get("error").is_none_or(Value::is_null) {
                v["error"] = why_stopped.into();
            }
            return HostRun {
                host: host.to_string(),
                code: code::STOPPED_AFTER_DELIVERY,
                json: Some(v),
                failed: None,
                ms: 0,
            };
        }
        return fail(why_stopped);
    }
    let Some(json) = json else {
        return fail(format!(
            "{host}: no receipt ({}){}",
            status.map_or("killed".into(), |s| s.to_string()),
            if stderr.is_empty() {
                String::new()
            } else {
                format!(": {stderr}")
            }
        ));
    };
    HostRun {
        host: host.to_string(),
        code: status
            .and_then(|s| s.code())
            .unwrap_or(code::FLEET_HOST_FAILED),
        json: Some(json),
        failed: None,
        ms: 0,
    }
}

/// One row per pane for every host (a fan-out's `targets`, or the one receipt),
/// each naming its host; a failed host is one row of its own.
pub fn rows(runs: &[HostRun]) -> Vec<Value> {
    let mut rows = Vec::new();
    for r in runs {
        let got: Vec<Value> = match (&r.failed, &r.json) {
            (None, Some(v)) => match v.get("targets").and_then(Value::as_array) {
                Some(t) => t.clone(),
                None => vec![v.clone()],
            },
            _ => Vec::new(),
        };
        if got.is_empty() {
            let why = r.failed.clone().or_else(|| {
                r.json
                    .as_ref()
                    .and_then(|v| v["error"].as_str().map(str::to_string))
            });
            rows.push(crate::engine::sink::not_sent(json!({
                "host": r.host, "pane": null,
                "exit_code": r.code, "error": why, "host_failed": r.failed.is_some(),
            })));
            continue;
        }
        for mut row in got {
            row["host"] = r.host.clone().into();
            if row.get("exit_code").is_none() {
                row["exit_code"] = r.code.into();
            }
            rows.push(row);
        }
    }
    rows
}

/// The exit code of a fleet: 0 when every pane of every host consumed;
/// [`code::FLEET_HOST_FAILED`] when any host failed; else as a fan-out.
pub fn fleet_code(runs: &[HostRun], rows: &[Value]) -> i32 {
    if runs.iter().any(|r| r.failed.is_some()) {
        return code::FLEET_HOST_FAILED;
    }
    // a host stopped at --host-timeout after its prompt was delivered
    let stopped = |r: &HostRun| r.json.as_ref().is_some_and(|v| v["host_timed_out"] == true);
    if runs.iter().any(stopped) && delivered(rows) {
        return code::STOPPED_AFTER_DELIVERY;
    }
    let consumed = consumed(rows);
    fanout_code(consumed, rows.len())
}

/// A row whose prompt reached its agent: `consumed`, or `submitted`
/// (`--no-verify`).
fn sent(r: &Value) -> bool {
    r["receipt"] == "consumed" || r["receipt"] == "submitted"
}

/// Any row's prompt reached its agent, whatever came after (an `ask` stopped
/// while waiting for its turn has exit code 44, not 0).
fn delivered(rows: &[Value]) -> bool {
    rows.iter().any(sent)
}

fn consumed(rows: &[Value]) -> usize {
    rows.iter()
        .filter(|r| r["exit_code"] == 0 && sent(r))
        .count()
}

/// This process's arguments for one host's child: the same `send`, with the
/// fleet's own flags taken out and `--json` put in. An argument that is not
/// UTF-8 (a file name) goes to the child as it is.
pub fn child_args(args: &[OsString]) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut it = args.iter();
    let mut json = false;
    while let Some(a) = it.next() {
        let text = a.to_string_lossy();
        if text == "--" {
            out.push(a.clone());
            out.extend(it.by_ref().cloned());
            break;
        }
        let flag = text.split('=').next().unwrap_or("");
        if ["--host", "--hosts", "--connect-timeout", "--host-timeout"].contains(&flag) {
            if !text.contains('=') {
                it.next();
            }
            continue;
        }
        json |= text == "--json";
        out.push(a.clone());
    }
    if !json {
        // right after the command word, so no body word can come before it
        let at = out
            .iter()
            .position(|a| a == "send" || a == "ask")
            .map_or(0, |i| i + 1);
        out.insert(at, "--json".into());
    }
    out
}

/// How long one host's child may take: `--host-timeout`, but at least as long
/// as the waits it was asked for (the turn's `--done-timeout`, `--when-ready`'s
/// ten minutes of gate), and two minutes for the delivery.
fn host_timeout(a: &SendArgs, asking: bool) -> f64 {
    let turn = match asking || a.until_done {
        true => a.done_timeout,
        false => 0.0,
    };
    let gate = match a.when_ready {
        true => a.gate.timeout.max(600.0),
        false => 0.0,
    };
    match turn + gate {
        0.0 => a.host_timeout,
        w => a.host_timeout.max(w + 120.0),
    }
}

/// `promptgate send` on a fleet: every host at once, one aggregated receipt.
pub fn send(host_flags: &[String], a: &SendArgs) -> Result<i32> {
    fleet(host_flags, a, false)
}

/// `promptgate ask` on a fleet: the same question on every host at once, each
/// answer beside its host, pane and agent.
pub fn ask(host_flags: &[String], a: &crate::app::cli::AskArgs) -> Result<i32> {
    fleet(host_flags, &a.send, true)
}

fn fleet(host_flags: &[String], a: &SendArgs, asking: bool) -> Result<i32> {
    let hosts = all_hosts(host_flags, a.hosts.as_deref())?;
    // Sanitised once, here, before any host is touched: a bad body types nothing.
    let body = crate::app::cli::read_body(&a.body)?;
    crate::core::plan::Body::sanitise(&body)?;
    let from_stdin =
        a.body.words.is_empty() && a.body.file.as_ref().is_none_or(|f| f.as_os_str() == "-");
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let child = child_args(&args);
    let opts = FleetOpts {
        connect_timeout: Duration::from_secs_f64(a.connect_timeout),
        // an ask waits for the turn on every host: at least --done-timeout and
        // two minutes for the delivery
        // (and a send that waits for its turn or for a busy agent, as long as
        // it may wait: a host stopped after delivering is no failure to retry)
        host_timeout: Duration::from_secs_f64(host_timeout(a, asking)),
    };
    let runs = run_hosts(
        &hosts,
        opts,
        &|_| child.clone(),
        from_stdin.then_some(&body[..]),
    );
    let rows = rows(&runs);
    let stopped = crate::io::interrupt::STOP_WAIT.load(std::sync::atomic::Ordering::SeqCst);
    // stopped: if any host's prompt was delivered, the code says so (a 128+N
    // would say nothing was typed anywhere, and invite a second send)
    let exit = match stopped {
        true if delivered(&rows) => code::STOPPED_AFTER_DELIVERY,
        true => code::INTERRUPTED_BASE + libc::SIGINT,
        false => fleet_code(&runs, &rows),
    };
    let failed: Vec<&str> = runs
        .iter()
        .filter(|r| r.failed.is_some())
        .map(|r| r.host.as_str())
        .collect();
    let done = if asking { "answered" } else { "consumed" };
    let mut summary = format!(
        "{} of {} {done} on {} hosts",
        consumed(&rows),
        rows.iter().filter(|r| !r["pane"].is_null()).count(),
        hosts.len()
    );
    if !failed.is_empty() {
        summary += &format!("; {} failed: {}", failed.len(), failed.join(", "));
    }
    if stopped {
        summary += "; stopped by a signal: what each host delivered is above (a prompt being typed was finished, an ask stopped waiting)";
    }
    if a.json {
        let hosts_v: Vec<Value> = runs
            .iter()
            .map(|r| json!({"host": r.host, "exit_code": r.code, "ms": r.ms, "error": r.failed}))
            .collect();
        crate::app::out::out_json(&json!({
            "hosts": hosts_v,
            "targets": rows,
            "summary": {done: consumed(&rows), "total": rows.len(), "hosts": hosts.len(), "hosts_failed": failed, "text": summary},
            "exit_code": exit,
            "error": (exit != 0).then_some(&summary),
        }))?;
    } else if asking {
        // each answer under its host, pane and agent; the receipts on stderr
        for r in &rows {
            let (host, pane) = (
                r["host"].as_str().unwrap_or("?"),
                r["pane"].as_str().unwrap_or("-"),
            );
            let agent = r["agent"].as_str().unwrap_or("-");
            crate::app::out::out(&format!("=== {host} {pane} {agent}"))?;
            if let Some(t) = r["answer"]["text"].as_str().filter(|t| !t.is_empty()) {
                crate::app::out::out(t)?;
            }
            let why = r["error"].as_str().unwrap_or("answered");
            eprintln!(
                "promptgate: {host}\t{pane}\t{agent}\t{}\t{why}",
                r["receipt"].as_str().unwrap_or("?")
            );
        }
        eprintln!("promptgate: {summary}");
    } else {
        for r in &rows {
            let why = crate::engine::fanout::why(r);
            crate::app::out::out(&format!(
                "{}\t{}\t{}\t{}\t{}",
                r["host"].as_str().unwrap_or("?"),
                r["pane"].as_str().unwrap_or("-"),
                r["agent"].as_str().unwrap_or("-"),
                r["receipt"].as_str().unwrap_or("?"),
                why
            ))?;
        }
        crate::app::out::out(&format!("promptgate: {summary}"))?;
    }
    Ok(exit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn child_args_drop_the_fleet_flags_and_ask_for_json() {
        let a = os(&[
            "send",
            "--host",
            "a",
            "--host=b",
            "--hosts",
            "f",
            "--all-agents",
            "--connect-timeout",
            "3",
            "--host-timeout=9",
            "hi",
            "--",
            "--host",
            "x",
        ]);
        assert_eq!(
            child_args(&a),
            os(&["send", "--json", "--all-agents", "hi", "--", "--host", "x"])
        );
        let b = os(&["-L", "x", "--host", "a", "send", "--json", "-t", "%1", "hi"]);
        assert_eq!(
            child_args(&b),
            os(&["-L", "x", "send", "--json", "-t", "%1", "hi"])
        );
        // a file name that is not UTF-8 goes to the child byte for byte
        use std::os::unix::ffi::OsStringExt;
        let name = OsString::from_vec(b"/tmp/\xff.txt".to_vec());
        let mut c = os(&["send", "--host", "a", "-t", "%1", "-f"]);
        c.push(name.clone());
        let mut want = os(&["send", "--json", "-t", "%1", "-f"]);
        want.push(name);
        assert_eq!(child_args(&c), want);
    }

    #[test]
    fn hosts_file_lines_comments_and_duplicates() {
        assert_eq!(
            parse_hosts("a\n  # all of b\nb # the second\n\n c \n"),
            s(&["a", "b", "c"])
        );
        assert_eq!(
            all_hosts(&s(&["a", "b", "a"]), None).unwrap(),
            s(&["a", "b"])
        );
        assert!(all_hosts(&s(&["-oProxyCommand=x"]), None).is_err());
        for bad in [
            "box touch /tmp/x;",
            "a b",
            "h;id",
            "$(id)",
            "`id`",
            "h|x",
            "",
        ] {
            assert!(all_hosts(&s(&[bad]), None).is_err(), "{bad:?}");
        }
        assert_eq!(
            all_hosts(&s(&["box", "BOX", "me@Box", "me@box", "[::1]:22"]), None).unwrap(),
            s(&["box", "me@Box", "[::1]:22"])
        );
    }

    #[test]
    fn a_failed_host_is_its_own_row_and_sets_the_exit_code() {
        let ok = HostRun {
            host: "a".into(),
            code: 0,
            json: Some(json!({"targets": [
                {"pane": "%1", "receipt": "consumed", "exit_code": 0},
                {"pane": "%2", "receipt": "consumed", "exit_code": 0}]})),
            failed: None,
            ms: 1,
        };
        let down = HostRun {
            host: "b".into(),
            code: code::FLEET_HOST_FAILED,
            json: None,
            failed: Some("ssh to b failed".into()),
            ms: 1,
        };
        let runs = vec![ok.clone(), down];
        let r = rows(&runs);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0]["host"], "a");
        assert_eq!(r[2]["host"], "b");
        assert_eq!(r[2]["receipt"], "not-sent");
        assert_eq!(r[2]["host_failed"], true);
        assert_eq!(fleet_code(&runs, &r), code::FLEET_HOST_FAILED);
        let one = vec![ok];
        assert_eq!(fleet_code(&one, &rows(&one)), 0);
    }

    /// A host stopped at --host-timeout after its prompt was taken keeps its
    /// `consumed` row (never `not-sent`, which invites a second send), and
    /// the fleet exits 44: delivered, then stopped.
    #[test]
    fn a_host_stopped_after_delivering_keeps_its_receipt() {
        let stopped = HostRun {
            host: "a".into(),
            code: code::STOPPED_AFTER_DELIVERY,
            json: Some(json!({"pane": "%1", "receipt": "consumed", "exit_code": 44,
                "host_timed_out": true, "error": "a: no answer within --host-timeout 600 s; stopped"})),
            failed: None,
            ms: 1,
        };
        let runs = vec![stopped];
        let r = rows(&runs);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0]["receipt"], "consumed");
        assert_eq!(r[0]["host"], "a");
        assert_eq!(fleet_code(&runs, &r), code::STOPPED_AFTER_DELIVERY);
    }

    #[test]
    fn the_host_timeout_covers_the_waits_asked_for() {
        use clap::Parser;
        let args = |extra: &[&str]| {
            let mut v = vec!["promptgate", "send", "-t", "%1"];
            v.extend_from_slice(extra);
            v.push("x");
            match crate::app::cli::Cli::try_parse_from(v).unwrap().command {
                crate::app::cli::Command::Send(a) => a,
                _ => unreachable!(),
            }
        };
        assert_eq!(host_timeout(&args(&[]), false), 600.0);
        assert_eq!(host_timeout(&args(&["--until-done"]), false), 1920.0);
        assert_eq!(host_timeout(&args(&["--when-ready"]), false), 720.0);
        assert_eq!(host_timeout(&args(&[]), true), 1920.0);
        assert_eq!(
            host_timeout(&args(&["--host-timeout", "5000", "--until-done"]), false),
            5000.0
        );
    }
}
