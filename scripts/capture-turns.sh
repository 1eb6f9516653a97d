#!/usr/bin/env bash
# capture-turns.sh: capture a real agent's model-driven screens (issue 26 item 2) at each size, with the
# scripted local model (scripts/model.sh): a reply streaming, the finished turn, a failed turn (HTTP 400,
# which no agent retries), and the shell-command approval dialog. Each screen is checked with
# `promptgate state` before it is kept: a screen the profile reads otherwise than expected is kept all the
# same (the fixture test then fails on it: a profile to fix) and named on stderr as MISREAD.
#
# Usage: scripts/capture-turns.sh AGENT [SIZE...]        (SIZE = WxH; default 120x40 80x24 200x50)
#
#   AGENT    claude codex gemini qwen copilot opencode kilo aider (not auggie: it cannot use a local model)
#   Release: PROMPTGATE_REAL_RELEASE=newest|previous and the *_VERSION overrides, as scripts/real-agents.sh.
#   Names:   fixtures/<agent>/v<release>-41-model-streaming-<size>, -42-model-finished-turn-, -43-model-failed-400-,
#            -40-model-<tool>-permission- (tool: bash, exec, shell); an existing fixture is left as it is
#            (FORCE=1 replaces it). ONLY=41,42,43,40 (the default) takes some of them.
#   Not in the default, asked for by ONLY (e.g. ONLY=44,45):
#     44  -44-model-retry-<429|500>-: a turn the model fails with HTTP 429 (claude) or 500 (the others;
#         RETRY_STATUS= overrides) and the agent retries: its retry screen, `busy` (the first screen naming
#         a retry or reconnect, else the screen ~15 s in: an agent that retries under its unchanged spinner).
#         The agent is started to retry: claude CLAUDE_CODE_MAX_RETRIES=4 (else 0), gemini GEMINI_FAST_FAIL=0,
#         codex `-c model_providers.mock.{request,stream}_max_retries=4,5` (real-agents.sh seeds 1: no retry screen).
#         Taken last at each size (the retrying agent is then stopped).
#     45  -45-model-queued-prompt-: a second prompt typed during a streamed reply and queued the way a
#         person queues it in that agent (claude, gemini, qwen 0.15.x, copilot, opencode, kilo: Enter;
#         codex: Tab, Enter steers; qwen 0.24.x: Ctrl+Q, Enter steers; QUEUE_KEY= overrides, QUEUE_KEY=none
#         skips): `busy`. An agent without a queue is skipped with a note on stderr.
#   Each size starts the agent at that size (a screen drawn at its size, not resized), and stops it after.
#   PROMPTGATE (default target/debug/promptgate) does the reading and the sends.
#
# Prints one line per screen: `<name> <state read> [MISREAD (expected <state>)|kept|exists]`.
# Exit status: 0 when every screen was read as expected, 3 when one was misread, 1 on an error.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
CAPTURE_NAME=capture-turns
# shellcheck source=scripts/capture-lib.sh
. "$ROOT/scripts/capture-lib.sh"
PG=${PROMPTGATE:-$ROOT/target/debug/promptgate}
agent=${1:?usage: capture-turns.sh AGENT [SIZE...]}
shift
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(120x40 80x24 200x50)
only=${ONLY:-41,42,43,40}
[[ -x $PG ]] || {
	echo "capture-turns: error: no promptgate at $PG (cargo build)" >&2
	exit 1
}
case $agent in
claude | copilot | opencode | kilo) tool=bash ;;
codex) tool=exec ;;
gemini | qwen) tool=shell ;;
aider) tool= ;; # no shell tool: its approvals are yes/no questions
*)
	echo "capture-turns: error: unknown agent '$agent'" >&2
	exit 2
	;;
esac
# copilot's, opencode's and kilo's requests carry tools aimock's tool-name match cannot read
tool_prompt="pg-tool-rm: remove the marker folder"
[[ $agent == copilot || $agent == opencode || $agent == kilo ]] && tool_prompt="pg-bash-rm: remove the marker folder"

model_pid=
sock=
cleanup() {
	[[ -z $sock ]] || "$ROOT/scripts/real-agents.sh" stop "$sock" >/dev/null 2>&1 || true
	[[ -z $model_pid ]] || "$ROOT/scripts/model.sh" stop "$model_pid" >/dev/null 2>&1 || true
}
trap cleanup EXIT

eval "$("$ROOT/scripts/model.sh" start | sed -n 's/^\(port\|pid\|url\)=/model_\1=/p')"
export MODEL_URL=$model_url

ready_and_shows() { is_state ready && shows "$1"; }
not_dialog() { [[ $(state) != dialog:* ]]; }

misread=0
# keep NAME EXPECTED NOTE
keep() {
	local name=$1 want=$2 note=$3 got
	got=$(state)
	if [[ -e $ROOT/fixtures/$agent/$name.txt && -z ${FORCE:-} ]]; then
		echo "$name $got exists"
		return
	fi
	SOCKET=$sock PANE=$pane FORCE=${FORCE:-} "$ROOT/scripts/real-agents.sh" capture "$agent" "$want" \
		"$W" "$H" "$name" "$note" >/dev/null
	if [[ $got == "$want" ]]; then
		echo "$name $got kept"
	else
		say "$name $got MISREAD (expected $want)"
		misread=1
	fi
}

# 44: the HTTP status the agent retries on, and what makes it retry at all
retry_status=${RETRY_STATUS:-500}
[[ $agent != claude ]] || retry_status=${RETRY_STATUS:-429}
start_env=()
if [[ $only == *44* ]]; then
	case $agent in
	claude) start_env=(AGENT_ENV="${AGENT_ENV:+$AGENT_ENV }CLAUDE_CODE_MAX_RETRIES=4") ;; # real-agents.sh sets 0
	gemini) start_env=(GEMINI_FAST_FAIL=0) ;;                                               # else maxAttempts 1
	# real-agents.sh seeds one retry (a 500 fails in ~1 s, no retry screen): codex's defaults again
	codex) start_env=(AGENT_ARGS="${AGENT_ARGS:+$AGENT_ARGS }-c model_providers.mock.request_max_retries=4 -c model_providers.mock.stream_max_retries=5") ;;
	esac
fi
# 45: the key that queues a prompt typed while the agent works (empty: the agent has no queue)
queue_key() {
	if [[ -n ${QUEUE_KEY:-} ]]; then
		[[ $QUEUE_KEY == none ]] || echo "$QUEUE_KEY"
		return
	fi
	case $agent in
	codex) echo Tab ;; # Enter steers the running turn
	qwen) if [[ $1 == 0.1[0-9].* ]]; then echo Enter; else echo C-q; fi ;; # 0.24: `Enter to steer · Ctrl+Q to queue`
	aider) ;; # not run here (aider skipped): left out until its queueing is looked at
	*) echo Enter ;;
	esac
}
# a screen naming a retry (the prompts sent here name none)
shows_retry() { screen | grep -qiE 'retry|retrying|reconnect|attempt [0-9]'; }

for size in "${sizes[@]}"; do
	W=${size%x*} H=${size#*x}
	info=$(env "${start_env[@]}" "$ROOT/scripts/real-agents.sh" start "$agent" ready "$W" "$H")
	sock=$(sed -n 's/^socket=//p' <<<"$info")
	pane=$(sed -n 's/^pane=//p' <<<"$info")
	project=$(sed -n 's/^project=//p' <<<"$info")
	ver=$(sed -n 's/^version=//p' <<<"$info")
	wait_for 90 is_state ready || {
		echo "capture-turns: error: $agent $size never ready ($(state))" >&2
		exit 1
	}
	# the first turn also carries the agent's start-up work (codex takes Enter ~10 s after launch)
	"$PG" -L "$sock" send -t "$pane" --wait-busy --until-done --timeout 90 -- "pg-quick: warm up" >/dev/null ||
		echo "capture-turns: warning: the warm-up send exited $?" >&2
	if [[ $only == *41* || $only == *42* ]]; then
		send "pg-stream-long: tell me a long story"
		# ~3 s into the reply (an agent that draws none of it until the end: ~4 s after the submit)
		wait_for 4 shows PG-STREAM-BEGIN || true
		sleep 2
		[[ $only != *41* ]] || keep "v$ver-41-model-streaming-$size" busy \
			"scripted model reply streaming (chunks 100 ms apart), ~3 s in"
		wait_for 60 ready_and_shows PG-STREAM-END || true
		sleep 2
		[[ $only != *42* ]] || keep "v$ver-42-model-finished-turn-$size" ready \
			"a finished scripted turn: the answer \`… PG-STREAM-END\`, the composer empty"
	fi
	if [[ $only == *43* ]]; then
		send "pg-fail-400: a request the model refuses"
		wait_for 60 is_state ready || true
		sleep 2
		keep "v$ver-43-model-failed-400-$size" ready \
			"a turn the model answered with HTTP 400 (scripted bad request): the error shown, the composer back"
	fi
	if [[ $only == *40* && -n $tool ]]; then
		mkdir -p "$project/pg-marker"
		send "$tool_prompt"
		wait_for 60 is_state dialog:permission || true
		sleep 1
		keep "v$ver-40-model-$tool-permission-$size" dialog:permission \
			"scripted model: a shell tool call \`rm -r pg-marker\`: the agent's approval dialog"
		tmux -L "$sock" send-keys -t "$pane" Escape
		# the next screen needs the dialog gone: some releases take a while to close it
		# (Gemini 0.55-0.60, Copilot 1.0.89, OpenCode 1.18.25, Claude 2.1.200), or a second Escape
		if ! wait_for 10 not_dialog; then
			tmux -L "$sock" send-keys -t "$pane" Escape
			wait_for 10 not_dialog || echo "capture-turns: warning: the approval dialog stayed open" >&2
		fi
		[[ -d $project/pg-marker ]] || echo "capture-turns: warning: the marker is gone: the command ran" >&2
	fi
	if [[ $only == *45* ]]; then
		qkey=$(queue_key "$ver")
		if [[ -z $qkey ]]; then
			echo "capture-turns: $agent $ver has no prompt queue: 45 skipped" >&2
		else
			send "pg-stream-long: tell me a long story"
			wait_for 6 shows PG-STREAM-BEGIN || true
			sleep 1
			# typed as a person would, then the agent's queue key
			tmux -L "$sock" send-keys -t "$pane" -l "pg-quick queued second prompt"
			sleep 0.5
			tmux -L "$sock" send-keys -t "$pane" "$qkey"
			sleep 1.5
			keep "v$ver-45-model-queued-prompt-$size" busy \
				"scripted reply streaming; a second prompt typed + $qkey: queued while the agent works"
			# the stream, then the queued prompt's turn
			wait_for 60 ready_and_shows PG-STREAM-END || true
			sleep 3
			wait_for 30 is_state ready || true
		fi
	fi
	if [[ $only == *44* ]]; then
		send "pg-fail-$retry_status: a request the model fails"
		wait_for 15 shows_retry || true
		sleep 1
		keep "v$ver-44-model-retry-$retry_status-$size" busy \
			"the scripted model answers HTTP $retry_status: the agent retries the request"
	fi
	"$ROOT/scripts/real-agents.sh" stop "$sock" >/dev/null
	sock=
done
exit $((misread * 3))
