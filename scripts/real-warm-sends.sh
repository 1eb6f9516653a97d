#!/usr/bin/env bash
# real-warm-sends.sh: warm sends to a REAL agent talking to the scripted local model (issue 28's
# per-phase figures on what users run). Starts the model (scripts/model.sh) and the agent
# (scripts/real-agents.sh start AGENT ready 120 40) on private servers, lets a real turn end before
# each send, and prints each send's phases from its receipt, then medians. Stops both, by name/PID.
# Usage: scripts/real-warm-sends.sh [AGENT] [N]     (AGENT: claude | codex | gemini …; N sends, default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
agent=${1:-claude}
n=${2:-10}
pg=${PROMPTGATE:-target/release/promptgate}
[[ -x $pg ]] || cargo build --release -q
model=$(scripts/model.sh start)
mpid=$(sed -n 's/^pid=//p' <<<"$model")
url=$(sed -n 's/^url=//p' <<<"$model")
info=$(MODEL_URL=$url scripts/real-agents.sh start "$agent" ready 120 40)
sock=$(sed -n 's/^socket=//p' <<<"$info")
pane=$(sed -n 's/^pane=//p' <<<"$info")
cleanup() { scripts/real-agents.sh stop "$sock" >/dev/null 2>&1 || true; scripts/model.sh stop "$mpid" >/dev/null 2>&1 || true; }
trap cleanup EXIT
out=$(mktemp)
"$pg" -L "$sock" wait -t "$pane" --timeout 90 >/dev/null
# one real turn first: the agent is warm
"$pg" -L "$sock" send -t "$pane" --until-done --done-timeout 60 "pg-quick warm-up" >/dev/null 2>&1 || true
for i in $(seq "$n"); do
	"$pg" -L "$sock" wait -t "$pane" --timeout 60 >/dev/null || true
	sleep 1
	"$pg" -L "$sock" send -t "$pane" --json --until-done --done-timeout 60 "pg-quick warm send $i" >>"$out" 2>/dev/null || true
	echo >>"$out"
done
python3 - "$out" "$agent" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
keys = ["gate_ms", "type_ms", "settle_ms", "verify_ms", "proof_ms", "total_ms"]
got = {k: [] for k in keys}
print("send  receipt   proof  gate type settle verify proof total (ms)")
for i, r in enumerate(rows, 1):
    t, p = r.get("timings") or {}, r.get("proof") or {}
    t = dict(t, proof_ms=p.get("waited_ms", 0))
    for k in keys:
        got[k].append(t.get(k, 0))
    print(f"{i:4}  {r.get('receipt',''):9} {p.get('match',''):6} " + " ".join(f"{t.get(k, 0):5}" for k in keys))
print(f"{sys.argv[2]} median: " + ", ".join(f"{k[:-3]} {statistics.median(v):.0f}" for k, v in got.items() if v))
PY
