#!/usr/bin/env bash
# size-sweep.sh: bring each real agent to its prompt offline at pane sizes the
# fixtures do not hold, and check what promptgate reads there: `ready` on the
# empty prompt, `draft` once a line is typed by hand, `ready` again after it is
# erased. One line per agent and size; a table at the end; exit 1 if any
# reading was wrong.
#
# Usage: scripts/size-sweep.sh [AGENT...]   (default: all nine)
#   SIZES="60x20 100x30 160x48 250x60" (default) picks the sizes.
#   Needs the agents installed (scripts/real-agents.sh install) and
#   target/debug/promptgate (cargo build).
set -uo pipefail
cd "$(dirname "$0")/.."
RA=scripts/real-agents.sh
PG=${PROMPTGATE:-target/debug/promptgate}
SIZES=${SIZES:-60x20 100x30 160x48 250x60}
AGENTS=("$@")
[ ${#AGENTS[@]} -gt 0 ] || AGENTS=(claude codex gemini opencode kilo copilot qwen auggie aider)
fails=0
rows=()

wait_state() { # SOCKET PANE WANT SECS -> prints the last state read
	local deadline=$((SECONDS + $4)) st=""
	while [ $SECONDS -lt $deadline ]; do
		st=$("$PG" -L "$1" state -t "$2" 2>/dev/null | awk '{print $3}')
		[ "$st" = "$3" ] && break
		sleep 0.3
	done
	printf '%s' "$st"
}

for agent in "${AGENTS[@]}"; do
	for size in $SIZES; do
		w=${size%x*} h=${size#*x}
		info=$("$RA" start "$agent" ready "$w" "$h" 2>/dev/null) || {
			rows+=("| $agent | $size | could not start | | |")
			fails=$((fails + 1))
			continue
		}
		socket=$(sed -n 's/^socket=//p' <<<"$info")
		pane=$(sed -n 's/^pane=//p' <<<"$info")
		ready=$(wait_state "$socket" "$pane" ready 60)
		sleep 1
		ready=$(wait_state "$socket" "$pane" ready 5)
		tmux -L "$socket" send-keys -t "$pane" -l "size sweep draft"
		draft=$(wait_state "$socket" "$pane" draft 5)
		# auggie takes a burst of backspaces as one key: it erases with C-u
		if [ "$agent" = auggie ]; then
			tmux -L "$socket" send-keys -t "$pane" C-u
		else
			tmux -L "$socket" send-keys -t "$pane" -N 16 BSpace
		fi
		again=$(wait_state "$socket" "$pane" ready 5)
		verdict=ok
		if [ "$ready" != ready ] || [ "$draft" != draft ] || [ "$again" != ready ]; then
			verdict=WRONG
			fails=$((fails + 1))
			"$PG" -L "$socket" explain -t "$pane" 2>&1 | sed 's/^/    /' | head -40
		fi
		echo "$agent $size: empty=$ready typed=$draft cleared=$again $verdict"
		rows+=("| $agent | $size | $ready | $draft | $again |")
		"$RA" stop "$socket" >/dev/null 2>&1
	done
done
echo
echo "| agent | size | empty prompt | typed | cleared |"
echo "| --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
[ $fails -eq 0 ] || {
	echo "size-sweep: $fails wrong" >&2
	exit 1
}
