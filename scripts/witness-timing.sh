#!/usr/bin/env bash
# witness-timing.sh: how fast each of real Claude Code's state signals flips
# after an Enter and after a turn ends: its session registry
# (~/.claude/sessions/<pid>.json "status"), the screen's busy marker
# (`esc to interrupt`) and the title.
#
#   scripts/witness-timing.sh [ROUNDS]      default 5; the README's figures come from this
#
# Starts claude offline (scripts/real-agents.sh start claude ready 120 40, with two
# API retries so that a turn lasts ~2 s), types a prompt, presses Enter, and polls
# the three signals every ~5 ms. Prints one line per round and the medians.
# Needs: python3 (the polling loop), npm (to install claude if missing).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-5}
out=$(AGENT_ENV=CLAUDE_CODE_MAX_RETRIES=2 "$ROOT/scripts/real-agents.sh" start claude ready 120 40)
sock=$(sed -n 's/^socket=//p' <<<"$out")
pane=$(sed -n 's/^pane=//p' <<<"$out")
home=$(sed -n 's/^home=//p' <<<"$out")
version=$(sed -n 's/^version=//p' <<<"$out")
trap '"$ROOT/scripts/real-agents.sh" stop "$sock" >/dev/null 2>&1 || true' EXIT
python3 - "$sock" "$pane" "$home" "$rounds" "$version" <<'EOF'
import glob, json, statistics, subprocess, sys, time
sock, pane, home, rounds, version = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
def tmux(*a):
    return subprocess.run(["tmux", "-L", sock, *a], capture_output=True, text=True).stdout
def status():
    for f in glob.glob(home + "/.claude/sessions/*.json"):
        try:
            return json.load(open(f)).get("status")
        except Exception:
            pass
    return None
def look():
    out = tmux("display", "-p", "-t", pane, "#{pane_title}", ";", "capture-pane", "-p", "-t", pane)
    title, _, screen = out.partition("\n")
    return status(), "esc to interrupt" in screen, title
deadline = time.time() + 90
while time.time() < deadline and not (status() and "❯\u00a0" in tmux("capture-pane", "-p", "-t", pane)):
    time.sleep(0.2)
time.sleep(2)
rows = []
for r in range(rounds):
    tmux("send-keys", "-t", pane, "-l", f"timing round {r}")
    time.sleep(0.5)
    tmux("send-keys", "-t", pane, "Enter")
    t0 = time.time()
    first = {}
    t_end = time.time() + 60
    title0 = None
    while time.time() < t_end:
        st, busy, title = look()
        t = (time.time() - t0) * 1000
        title0 = title0 or title
        if st == "busy": first.setdefault("status busy", t)
        if busy: first.setdefault("screen busy", t)
        if title != title0: first.setdefault("title changed", t)
        if "status busy" in first and st != "busy": first.setdefault("status idle", t)
        if "screen busy" in first and not busy: first.setdefault("screen not busy", t)
        if "status idle" in first and "screen not busy" in first and t > first["status idle"] + 300:
            break
        time.sleep(0.005)
    rows.append(first)
    print(f"round {r}: " + ", ".join(f"{k} {v:.0f} ms" for k, v in first.items()))
    time.sleep(2)
print(f"claude {version}, medians over {rounds} rounds (ms after the Enter):")
for k in ["status busy", "screen busy", "title changed", "status idle", "screen not busy"]:
    v = [r[k] for r in rows if k in r]
    print(f"  {k}: {statistics.median(v):.0f}" if v else f"  {k}: never")
EOF
