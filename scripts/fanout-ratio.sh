#!/usr/bin/env bash
# Fan-out cost: one prompt to N fake-agent panes against one pane, on a private
# tmux server, with the per-phase figures (gate, type, settle, verify, lock
# wait, submit spread) from the receipts. Compare RATIOS, not absolute times:
# the machine may be shared. Nothing is timed-asserted; it prints and exits 0.
#
#   scripts/fanout-ratio.sh [PANES=16] [ROUNDS=3] [extra send flags...]
#   LIKES="claude" scripts/fanout-ratio.sh     (the agents, round robin; default
#                                               claude codex gemini opencode)
#   PROMPTGATE_BIN=target/release/promptgate scripts/fanout-ratio.sh 16 5
set -euo pipefail
N=${1:-16}
ROUNDS=${2:-3}
shift $(( $# > 2 ? 2 : $# )) || true
EXTRA=("$@")
cd "$(dirname "$0")/.."
BIN=${PROMPTGATE_BIN:-target/debug/promptgate}
[ -x "$BIN" ] || cargo build -q
BIN=$(readlink -f "$BIN")
command -v jq >/dev/null || { echo "fanout-ratio: needs jq" >&2; exit 2; }
SOCK=promptgate-fanratio-$$
DIR=$(mktemp -d)
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
# (the fake agents may still be writing their files a moment after the server goes)
cleanup() { T kill-server 2>/dev/null || true; rm -rf "$DIR" 2>/dev/null || { sleep 1; rm -rf "$DIR"; }; }
trap cleanup EXIT
export XDG_RUNTIME_DIR=$DIR/run PROMPTGATE_LOG=off
mkdir -p "$DIR/run"
T new-session -d -s bench -x 120 -y 40
read -r -a likes <<<"${LIKES:-claude codex gemini opencode}"
PANES=()
for i in $(seq 0 $((N - 1))); do
  p=$(T new-window -d -P -F '#{pane_id}' -t =bench: env HOME="$DIR/h$i" "$BIN" fake-agent \
      --records --transcript "$DIR/t$i.jsonl" --like "${likes[$((i % ${#likes[@]}))]}" --busy-ms 200 \
      --fault-paste-burst-ms 120 --fault-read-1022)
  PANES+=("$p")
done
for p in "${PANES[@]}"; do
  for _ in $(seq 100); do
    "$BIN" -L "$SOCK" state -t "$p" 2>/dev/null | grep -q $'\tready\t' && break
    sleep 0.1
  done
done
ms() { date +%s%3N; }
send() { # targets... -- body
  local args=() t
  while [ "$1" != -- ]; do args+=(-t "$1"); shift; done
  shift
  "$BIN" -L "$SOCK" send "${args[@]}" --wait-busy --json "${EXTRA[@]}" "$1"
}
phase() { # a send's JSON (one receipt or a fan-out's targets) -> phase medians
  jq -c '[if .targets then .targets[] else . end]
    | def med(f): (map(f // 0) | sort | .[length/2|floor]);
      {gate: med(.gate.waited_ms), lock: med(.lock_waited_ms), type: med(.timings.type_ms),
       settle: med(.timings.settle_ms), verify: med(.timings.verify_ms), total: med(.timings.total_ms),
       submit_spread: ((map(.timings.submit_at_ms // 0) | max) - (map(.timings.submit_at_ms // 0) | min)),
       consumed: (map(select(.receipt == "consumed")) | length)}'
}
single=() slowest=() fan=()
nl=${#likes[@]}; [ "$nl" -le "$N" ] || nl=$N
for r in $(seq "$ROUNDS"); do
  # one pane of each agent alone: the first pane's time is the classic ratio's
  # base; the slowest agent's is the fan-out's floor (OpenCode's profile waits
  # 150 ms between its paste and Enter, Claude's 30 ms)
  worst=0
  for k in $(seq 0 $((nl - 1))); do
    sleep 2.5
    t0=$(ms); out=$(send "${PANES[$k]}" -- "single ${likes[$k]}, round $r"); t1=$(ms)
    [ "$k" -ne 0 ] || single+=($((t1 - t0)))
    [ $((t1 - t0)) -le "$worst" ] || worst=$((t1 - t0))
    echo "single  round $r ${likes[$k]}: $((t1 - t0)) ms $(phase <<<"$out")"
  done
  slowest+=("$worst")
  sleep 2.5
  t0=$(ms); out=$(send "${PANES[@]}" -- "fan-out, round $r"); t1=$(ms)
  fan+=($((t1 - t0))); echo "fan-out round $r: $((t1 - t0)) ms $(phase <<<"$out")"
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
s=$(med "${single[@]}"); w=$(med "${slowest[@]}"); f=$(med "${fan[@]}")
ratio() { awk -v f="$1" -v s="$2" 'BEGIN {printf "%.2f", f/s}'; }
echo "one pane (${likes[0]}) p50 $s ms, $N panes (${likes[*]}) p50 $f ms: ratio $(ratio "$f" "$s")x; against the slowest agent alone (p50 $w ms): $(ratio "$f" "$w")x (load: $(cut -d' ' -f1-3 /proc/loadavg))"
