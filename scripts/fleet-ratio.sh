#!/usr/bin/env bash
# Fleet cost (issue 28): one prompt to one pane on one host over ssh against the
# same prompt to 4 hosts x 4 fake agents (--host repeated, --all-agents), each
# host a real sshd on loopback with its own tmux server, as tests/fleet.rs sets
# them up. Prints per round and the medians; asserts nothing timed.
#   scripts/fleet-ratio.sh [ROUNDS=5]       (needs openssh-server: sshd)
set -euo pipefail
cd "$(dirname "$0")/.."
FLEET_ROUNDS=${1:-5} cargo test -q --release --test fleet -- --ignored --nocapture \
	figures_one_pane_against_four_hosts_of_four 2>&1 | grep -E '^(round|fleet figures)|FAILED|panicked'
