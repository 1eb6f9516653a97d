#!/usr/bin/env bash
# no-verify-latency.sh: wall time of `send` with and without --no-verify, warm, on a fake agent
# (a private tmux server; nothing else is touched). Usage: scripts/no-verify-latency.sh [N] [LIKE]
# Prints the median and p95 wall time (process start to exit) of N sends of each kind.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
like=${2:-claude}
pg=${PROMPTGATE:-target/release/promptgate}
[[ -x $pg ]] || cargo build --release -q
sock="promptgate-nv-$$"
dir=$(mktemp -d)
cleanup() { tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
mkdir -p "$dir/home"
tmux -L "$sock" -f /dev/null new-session -d -x 120 -y 40 \
	"HOME=$dir/home $(realpath "$pg") fake-agent --like $like --records --busy-ms 150"
pane=$(tmux -L "$sock" list-panes -F '#{pane_id}')
"$pg" -L "$sock" wait -t "$pane" --timeout 20 >/dev/null
ms() { date +%s%3N; }
run() { # $1: label, rest: extra flags
	local label=$1 t0 t1
	shift
	local -a times=()
	for i in $(seq "$n"); do
		"$pg" -L "$sock" wait -t "$pane" --timeout 20 >/dev/null
		sleep 0.3
		t0=$(ms)
		"$pg" -L "$sock" send -t "$pane" "$@" --json "warm send $label $i" >"$dir/r.json" 2>&1
		t1=$(ms)
		times+=($((t1 - t0)))
		grep -o '"timings":{[^}]*}' "$dir/r.json" >>"$dir/timings-$label"
	done
	printf '%s\n' "${times[@]}" | sort -n | awk -v l="$label" -v n="$n" \
		'{a[NR]=$1} END {printf "%-12s n=%d p50 %d ms  p95 %d ms\n", l, n, a[int((NR+1)/2)], a[int(NR*0.95+0.999)]}'
}
run verified
run no-verify --no-verify
[[ -z ${VERBOSE:-} ]] || cat "$dir"/timings-*
