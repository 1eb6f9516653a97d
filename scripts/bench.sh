#!/usr/bin/env bash
# Reliability and latency benchmark: promptgate send against two baseline
# senders (a fixed-sleep sender and a telepty-style gate), on fake agents in a
# private tmux server, plus a 16-pane fan-out and the cost of one poll.
#
#   scripts/bench.sh [--quick] [--out FILE.json] [--trials N] [--parallel N]
#                    [--seed N] [--fanout-rounds N] [--no-settle0] [--keep DIR]
#
# Prints the table (markdown) and writes the same as JSON to FILE.json
# (default target/bench/senders.json) and the table to FILE.md.
# --quick: 40 trials per sender (about 1-2 minutes after the build); the full
# run is 1,000 trials per sender (about 15-25 minutes on 2 cores).
# The code is in benches/senders.rs, the two baseline senders in benches/baselines/.
#
# Real agents (issues 26 and 28): --real AGENTS (e.g. claude,codex,gemini) also runs
# scripts/real-bench.sh with those agents on the scripted local model, the same three
# senders side by side after a real turn (warm, busy, on an approval dialog), with
# --real-trials N (default 4) per condition and sender; --real-only skips the fake ones.
# Its table goes to target/bench/real.md (JSON: real.json).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v tmux >/dev/null 2>&1 || { echo "bench.sh: tmux is required" >&2; exit 2; }
case " $* " in
*" -h "* | *" --help "*)
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac
real="" real_trials=4 real_only=0 rest=()
while [[ $# -gt 0 ]]; do
	case $1 in
	--real) real=${2:?--real needs AGENTS}; shift 2 ;;
	--real-trials) real_trials=${2:?--real-trials needs N}; shift 2 ;;
	--real-only) real_only=1; shift ;;
	*) rest+=("$1"); shift ;;
	esac
done
if [[ $real_only == 0 ]]; then
	echo "bench.sh: building (cargo bench profile) ..." >&2
	cargo bench --bench senders --no-run --quiet
	cargo bench --bench senders --quiet -- "${rest[@]}"
fi
if [[ -n $real ]]; then
	cargo build --release --quiet
	scripts/real-bench.sh --agents "$real" --trials "$real_trials"
fi
