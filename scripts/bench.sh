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
# The code, and the two baseline scripts it runs, are in benches/senders.rs.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v tmux >/dev/null 2>&1 || { echo "bench.sh: tmux is required" >&2; exit 2; }
case " $* " in
*" -h "* | *" --help "*)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac
echo "bench.sh: building (cargo bench profile) ..." >&2
cargo bench --bench senders --no-run --quiet
exec cargo bench --bench senders --quiet -- "$@"
