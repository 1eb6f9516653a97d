#!/usr/bin/env bash
# real-cold-sends.sh: cold sends to a REAL agent, each issued right after the launch (offline, on a
# private tmux server per trial; scripts/real-agents.sh starts and stops each run by PID).
#
#   scripts/real-cold-sends.sh AGENT [N] [WIDTH HEIGHT]     (default 5 trials at 120x40)
#
# Per trial: the receipt, the gate's wait from the launch, how long the ready screen had held still when
# the body was typed (the gate's reason: "still for N ms"), whether the start-up's known moves ended the
# settle (`startup_moves`, e.g. Gemini's banner jump), how often verify pressed Enter again (an Enter the
# agent lost; should be 0) and how often the body is in the agent's record (must be 1). Then the median
# and the largest "still for". PROMPTGATE_REAL_RELEASE=previous picks the older release column, as for
# the real-agent suite.
set -euo pipefail
cd "$(dirname "$0")/.."
agent=${1:?usage: scripts/real-cold-sends.sh AGENT [N] [WIDTH HEIGHT]}
n=${2:-5}
w=${3:-120}
h=${4:-40}
pg=${PROMPTGATE:-target/release/promptgate}
[[ -x $pg ]] || cargo build --release -q
socket=""
cleanup() { [[ -z $socket ]] || scripts/real-agents.sh stop "$socket" >/dev/null 2>&1 || true; }
trap cleanup EXIT
held=()
for i in $(seq "$n"); do
	info=$(scripts/real-agents.sh start "$agent" ready "$w" "$h" 2>/dev/null)
	socket=$(sed -n 's/^socket=//p' <<<"$info")
	pane=$(sed -n 's/^pane=//p' <<<"$info")
	version=$(sed -n 's/^version=//p' <<<"$info")
	record=$(sed -n 's/^record=//p' <<<"$info")
	body="cold send $i to $agent $version at ${w}x$h"
	r=$("$pg" -L "$socket" send -t "$pane" --json --timeout 90 "$body" 2>/dev/null || true)
	sleep 1
	times=$(scripts/real-agents.sh record "$agent" "$record" | grep -cF "\"$body\"" || true)
	line=$(python3 -c '
import json, re, sys
v = json.loads(sys.argv[1])
g = v.get("gate", {})
m = re.search(r"still for (\d+) ms", g.get("reason", ""))
moved = "moved" if "its prompt moved" in g.get("reason", "") else "settle"
print(v.get("receipt"), g.get("waited_ms"), m.group(1) if m else "?", moved, v.get("resubmits", 0))
' "$r")
	read -r receipt waited still how resubmits <<<"$line"
	printf '%s %s %dx%d trial %d: %s, gate %s ms after the launch, typed after %s ms still (%s), %s resubmit(s), in the record %s time(s)\n' \
		"$agent" "$version" "$w" "$h" "$i" "$receipt" "$waited" "$still" "$how" "$resubmits" "$times"
	held+=("$still")
	scripts/real-agents.sh stop "$socket" >/dev/null 2>&1 || true
	socket=""
done
printf '%s\n' "${held[@]}" | grep -v '?' | sort -n | awk -v a="$agent" \
	'{x[NR]=$1} END {if (NR) printf "%s: typed after the screen held still: median %d ms, max %d ms (n=%d)\n", a, x[int((NR+1)/2)], x[NR], NR}'
