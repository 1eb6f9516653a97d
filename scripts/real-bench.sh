#!/usr/bin/env bash
# real-bench.sh: the benchmark's REAL-agent trials (issues 26 item 4 and 28 item 1; `scripts/bench.sh
# --real AGENTS` runs it). Real agents talk to the scripted local model (scripts/model.sh); each trial
# is a real turn's state, then a send by one of the same three senders as the fake-agent trials:
#   promptgate      `promptgate send -t P --wait-dialog --wait-busy --timeout 60 --json -f BODY`
#   fixed-sleep     benches/baselines/fixed-sleep.sh  (send-keys "$msg"; sleep 0.5; send-keys Enter)
#   telepty-gate    benches/baselines/telepty-gate.sh (prompt symbol still for 200 ms, then as above)
# Conditions (each trial runs every sender, in a rotating order):
#   warm    the agent's last real turn ended 1 s before the send
#   busy    a real reply is streaming (pg-stream-short, ~3 s) when the send is issued (0.5 s in)
#   dialog  the real turn stopped on the agent's own tool-approval dialog (a shell command that would
#           remove the folder pg-marker); a helper rejects it with Escape 2 s after it shows
# Bodies alternate between one line and three lines, each with its own token. Judged from the agent's own
# record (`scripts/real-agents.sh record`): landed = exactly one entry with the token and it equals the
# body byte for byte; split = more than one (an early submit); mangled = one that differs; lost = none
# (left in the composer or eaten by a dialog). A dialog trial also says whether the shell command ran
# (pg-marker gone: somebody approved it). Latency: issue -> the model's request carrying the token (aimock's
# request journal), and promptgate's own phases from its receipt (start = process start, identify, lock
# and first read; gate; type; paste drawn; screen verify; proof from the record).
#
# Usage: scripts/real-bench.sh [--agents claude,codex,gemini] [--trials N] [--conditions warm,busy,dialog]
#                              [--out FILE.json]
# Defaults: claude,codex,gemini; 4 trials per condition and sender; all conditions; target/bench/real.json
# (the table also to FILE.md). The model and each agent run on private servers and are stopped by PID/socket.
set -euo pipefail
cd "$(dirname "$0")/.."
case " $* " in
*" -h "* | *" --help "*)
	sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac
command -v tmux >/dev/null 2>&1 || { echo "real-bench.sh: tmux is required" >&2; exit 2; }
pg=${PROMPTGATE:-target/release/promptgate}
[[ -x $pg ]] || cargo build --release -q
PROMPTGATE=$(cd "$(dirname "$pg")" && pwd -P)/$(basename "$pg") exec python3 - "$@" <<'PY'
import argparse, json, os, statistics, subprocess, sys, tempfile, threading, time

ROOT = os.getcwd()
PG = os.environ["PROMPTGATE"]
ap = argparse.ArgumentParser(prog="real-bench.sh")
ap.add_argument("--agents", default="claude,codex,gemini")
ap.add_argument("--trials", type=int, default=4)
ap.add_argument("--conditions", default="warm,busy,dialog")
ap.add_argument("--out", default="target/bench/real.json")
opt = ap.parse_args()
SENDERS = ["promptgate", "fixed-sleep", "telepty-gate"]
SYMBOL = {"claude": "❯", "codex": "›", "opencode": "┃", "kilo": "┃"}
TOOL_PROMPT = {"copilot": "pg-bash-rm"}
tmp = tempfile.mkdtemp(prefix="pg-real-bench-")


def run(args, env=None, timeout=120, check=True):
    e = dict(os.environ, **(env or {}))
    for k in ("TMUX", "TMUX_PANE"):
        e.pop(k, None)
    o = subprocess.run(args, env=e, capture_output=True, text=True, timeout=timeout)
    if check and o.returncode != 0:
        sys.exit(f"real-bench.sh: {' '.join(args[:3])}: {o.stderr.strip()}")
    return o


def kv(text):
    return dict(l.split("=", 1) for l in text.splitlines() if "=" in l)


def now_ms():
    return time.time() * 1000.0


class Agent:
    def __init__(self, name, model_url):
        o = run([f"{ROOT}/scripts/real-agents.sh", "start", name, "ready", "120", "40"], {"MODEL_URL": model_url})
        i = kv(o.stdout)
        self.name, self.version, self.sock, self.pane = name, i["version"], i["socket"], i["pane"]
        self.project, self.record = i["project"], i.get("record_sessions") or i["record"]
        self.env = {"XDG_RUNTIME_DIR": tmp, "PROMPTGATE_LOG": "off"}

    def pg(self, *args, timeout=120):
        return run([PG, "-L", self.sock, *args], self.env, timeout=timeout, check=False)

    def tmux(self, *args):
        return run(["tmux", "-L", self.sock, *args], check=False)

    def state(self):
        try:
            return json.loads(self.pg("state", "-t", self.pane, "--json").stdout)["state"]
        except Exception:
            return "error"

    def wait_state(self, pred, secs):
        end = time.time() + secs
        while time.time() < end:
            st = self.state()
            if pred(st):
                return st
            time.sleep(0.1)
        return self.state()

    def records(self):
        o = run([f"{ROOT}/scripts/real-agents.sh", "record", self.name, self.record], check=False)
        return [json.loads(l) for l in o.stdout.splitlines() if l.strip()]

    def stop(self):
        run([f"{ROOT}/scripts/real-agents.sh", "stop", self.sock], check=False)


def journal(port):
    o = run([f"{ROOT}/scripts/model.sh", "journal", port], check=False)
    try:
        return json.loads(o.stdout)
    except Exception:
        return []


def body_of(token, i):
    if i % 2 == 0:
        return f"pg-quick {token}: fix the failing test in src/lib.rs"
    return f"pg-quick {token}: line one, check the parser\nline two, then the tests\nline three, report back"


def send(a, sender, body_file):
    if sender == "promptgate":
        args = [PG, "-L", a.sock, "send", "-t", a.pane, "--wait-dialog", "--wait-busy", "--timeout", "60", "--json", "-f", body_file]
        return run(args, a.env, timeout=90, check=False)
    script = f"{ROOT}/benches/baselines/{sender}.sh"
    args = ["bash", script, a.sock, a.pane, body_file]
    if sender == "telepty-gate":
        args.append(SYMBOL.get(a.name, ">"))
    return run(args, timeout=90, check=False)


def trial(a, port, cond, sender, i):
    token = f"pgb{i:02d}{cond[0]}{sender[0]}{os.getpid() % 1000:03d}"
    body = body_of(token, i)
    body_file = os.path.join(tmp, token)
    open(body_file, "w").write(body)
    a.wait_state(lambda s: s == "ready", 60)
    marker = os.path.join(a.project, "pg-marker")
    helper = None
    if cond == "warm":
        time.sleep(1.0)
    elif cond == "busy":
        a.pg("send", "-t", a.pane, "--timeout", "60", f"pg-stream-short busy turn {i} {cond} {sender}")
        time.sleep(0.5)
    else:
        os.makedirs(marker, exist_ok=True)
        a.pg("send", "-t", a.pane, "--timeout", "60", f"{TOOL_PROMPT.get(a.name, 'pg-tool-rm')}: remove the marker folder ({i} {sender})")
        st = a.wait_state(lambda s: s.startswith("dialog"), 30)
        if not st.startswith("dialog"):
            return {"agent": a.name, "version": a.version, "condition": cond, "sender": sender, "trial": i,
                    "outcome": "not run", "why": f"no dialog (state {st})"}
        shown = time.time()

        def reject():
            time.sleep(max(0.0, shown + 2.0 - time.time()))
            if a.state().startswith("dialog"):
                a.tmux("send-keys", "-t", a.pane, "Escape")

        helper = threading.Thread(target=reject)
        helper.start()
    t0 = now_ms()
    o = send(a, sender, body_file)
    t1 = now_ms()
    if helper:
        helper.join()
    # let the turn(s) the send started run out, then judge from the agent's own record
    end = time.time() + 30
    while time.time() < end and not any(token in r for r in a.records()):
        time.sleep(0.3)
    a.wait_state(lambda s: s in ("ready", "draft") or s.startswith("dialog"), 60)
    time.sleep(1.0)
    st = a.wait_state(lambda s: s in ("ready", "draft") or s.startswith("dialog"), 30)
    got = [r for r in a.records() if token in r]
    if len(got) == 0:
        outcome = "lost"
    elif len(got) > 1:
        outcome = "split"
    elif got[0] == body:
        outcome = "landed"
    else:
        outcome = "mangled"
    row = {"agent": a.name, "version": a.version, "condition": cond, "sender": sender, "trial": i,
           "lines": body.count("\n") + 1, "outcome": outcome, "entries": got, "exit": o.returncode,
           "wall_ms": round(t1 - t0), "state_after": st}
    if cond == "dialog":
        row["tool_ran"] = not os.path.isdir(marker)
    at = [e.get("timestamp", 0) for e in journal(port) if token in json.dumps(e.get("body", ""))]
    at = [t for t in at if t >= t0 - 50]
    if at and cond == "warm":
        row["to_model_ms"] = round(min(at) - t0)
    if sender == "promptgate":
        try:
            r = json.loads(o.stdout)
            t = r.get("timings") or {}
            row.update(receipt=r.get("receipt"), proof=(r.get("proof") or {}).get("match"),
                       phases={"start": max(0, row["wall_ms"] - t.get("total_ms", 0)), "gate": t.get("gate_ms"),
                               "type": t.get("type_ms"), "paste drawn": t.get("settle_ms"),
                               "verify": t.get("verify_ms"), "proof": (r.get("proof") or {}).get("waited_ms"),
                               "total": t.get("total_ms")})
        except Exception:
            row["receipt"] = "no receipt: " + o.stderr.strip()[:200]
    # whatever a sender left behind goes before the next trial
    for _ in range(3):
        s = a.state()
        if s.startswith("dialog"):
            a.tmux("send-keys", "-t", a.pane, "Escape")
        elif s == "draft":
            a.tmux("send-keys", "-t", a.pane, "C-c")
        else:
            break
        time.sleep(1.0)
    return row


def warm_up(a):
    """Ready, one real turn, and the agent's process past promptgate's start-up age (20 s: a younger
    foreground job gets the profile's start-up settle, e.g. Gemini's 1000 ms)."""
    t0 = time.time()
    if a.pg("wait", "-t", a.pane, "--timeout", "90").returncode != 0:
        sys.exit(f"real-bench.sh: {a.name} never came up ready")
    a.pg("send", "-t", a.pane, "--until-done", "--done-timeout", "60", "pg-quick warm-up")
    time.sleep(max(0.0, t0 + 21 - time.time()))


def med(xs):
    return f"{statistics.median(xs):.0f}" if xs else ""


def p95(xs):
    if not xs:
        return ""
    xs = sorted(xs)
    return f"{xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]:.0f}"


def label(r):
    return f"{r['agent']} {r.get('version', '')}".strip()


def report(rows, meta):
    out = [f"Real-agent trials ({meta}):", "",
           "| agent | condition | sender | trials | landed | split (early submit) | mangled | lost | shell command ran | to the model p50 / p95 (ms) | not run |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    keys = []
    for r in rows:
        k = (label(r), r["condition"], r["sender"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        rs = [r for r in rows if (label(r), r["condition"], r["sender"]) == k]
        n = lambda o: sum(1 for r in rs if r["outcome"] == o)
        lat = [r["to_model_ms"] for r in rs if "to_model_ms" in r and r["outcome"] == "landed"]
        ran = sum(1 for r in rs if r.get("tool_ran")) if k[1] == "dialog" else ""
        cell = f"{med(lat)} / {p95(lat)}" if lat else ""
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {len(rs)} | {n('landed')} | {n('split')} | {n('mangled')} | "
                   f"{n('lost')} | {ran} | {cell} | {n('not run')} |")
    names = ["start", "gate", "type", "paste drawn", "verify", "proof", "total"]
    out += ["", "promptgate's phases, warm sends, median ms (start = process start, identify, lock, first read; "
            "verify and proof run side by side):", "",
            "| agent | " + " | ".join(names) + " | wall |", "|---|" + "---:|" * (len(names) + 1)]
    for agent in dict.fromkeys(label(r) for r in rows):
        rs = [r for r in rows if label(r) == agent
              and r["sender"] == "promptgate" and r["condition"] == "warm" and "phases" in r]
        if rs:
            cells = [med([r["phases"][p] for r in rs if r["phases"].get(p) is not None]) for p in names]
            out.append(f"| {agent} | " + " | ".join(cells) + f" | {med([r['wall_ms'] for r in rs])} |")
    return "\n".join(out) + "\n"


def main():
    m = kv(run([f"{ROOT}/scripts/model.sh", "start"]).stdout)
    rows, t_start = [], time.time()
    conds = [c for c in opt.conditions.split(",") if c]
    try:
        for name in [x for x in opt.agents.split(",") if x]:
            a = Agent(name, m["url"])
            try:
                print(f"real-bench: {name} {a.version} on {a.sock}", file=sys.stderr)
                warm_up(a)
                for i in range(opt.trials):
                    for cond in conds:
                        k = (i + conds.index(cond)) % len(SENDERS)
                        for s in SENDERS[k:] + SENDERS[:k]:
                            r = trial(a, m["port"], cond, s, i)
                            rows.append(r)
                            if r.get("tool_ran"):
                                # an agent may remember an approval (codex: `p`, "don't ask again for
                                # this command", typed by a baseline): a new agent for the next trial
                                a.stop()
                                a = Agent(name, m["url"])
                                warm_up(a)
                            print(f"  {cond:6} {s:12} #{i}: {r['outcome']}"
                                  + (" (the shell command ran)" if r.get("tool_ran") else "")
                                  + (f", to the model {r['to_model_ms']} ms" if "to_model_ms" in r else ""), file=sys.stderr)
            finally:
                a.stop()
    finally:
        run([f"{ROOT}/scripts/model.sh", "stop", m["pid"]], check=False)
    meta = (f"{opt.trials} per condition and sender, {time.strftime('%Y-%m-%d')}, "
            f"{os.cpu_count()} cores, {run(['tmux', '-V']).stdout.strip()}, {round(time.time() - t_start)} s")
    table = report(rows, meta)
    os.makedirs(os.path.dirname(opt.out) or ".", exist_ok=True)
    json.dump({"meta": meta, "rows": rows}, open(opt.out, "w"), indent=1)
    open(os.path.splitext(opt.out)[0] + ".md", "w").write(table)
    print(table)


main()
PY
