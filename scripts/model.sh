#!/usr/bin/env bash
# model.sh: the scripted local model the real agents talk to (issue 26): a PINNED @copilotkit/aimock on a
# free 127.0.0.1 port, answering from the project's own fixtures in tests/model/. Nothing but loopback is
# ever contacted: aimock runs without --record/--proxy-only, so a request no fixture matches gets the
# catch-all fixture's answer (tests/model/turns.json ends with one), never an upstream.
#
# Usage: scripts/model.sh SUBCOMMAND [ARGS]
#
#   install
#       npm-installs @copilotkit/aimock at the release pinned in scripts/real-agents.versions (row
#       `aimock newest`; AIMOCK_VERSION overrides) into $ROOT/.cache/aimock-<release>/ (reused when there).
#       Prints `aimock <release> <path of dist/cli.js>`.
#
#   start [FIXTURES]
#       Installs if missing, picks a free loopback port, starts aimock there with FIXTURES (default
#       tests/model/), waits until it answers, and prints key=value lines on stdout:
#           port= pid= url=http://127.0.0.1:PORT run= log=
#       (also kept in <run>/info; run = $ROOT/.cache/model/run/<unique>/). The process is aimock itself
#       (node), in a process group of its own. MODEL_LOG_LEVEL=debug logs every fixture match to <run>/log.
#
#   stop PID | stop --all
#       SIGTERM to that aimock (only if the PID is an aimock this script started: its run dir names it),
#       SIGKILL after 3 s. --all stops every one still running from $ROOT/.cache/model/run/.
#       Prints `stopped pid=<pid>`.
#
#   journal PORT
#       Prints aimock's request journal (GET /__aimock/journal): one JSON array, each request with its
#       time (ms since the epoch, when the request arrived and its answer began), path and matched fixture.
#
# Fixtures (tests/model/turns.json), matched on the last user message (a substring):
#   (system prompt `Task Routing AI`: gemini's model router) the JSON it expects
#   pg-tool-rm       a shell tool call `rm -r pg-marker` by the tool the request offers (claude `Bash`, codex
#                    `exec_command` asking for escalation or `shell`, gemini and qwen `run_shell_command`):
#                    the agent's approval dialog; after the tool ran: `PG-TOOL-DONE`
#   pg-bash-rm       the same as a `bash` tool call, matched on the prompt alone (copilot: aimock's tool-name
#                    match throws on its tools)
#   pg-stream-long   a reply streamed over about 12 s (120 chunks, 100 ms apart), `PG-STREAM-BEGIN … PG-STREAM-END`
#   pg-stream-short  a reply streamed over about 3 s, `PG-SHORT-BEGIN … PG-SHORT-END`
#   pg-ask-usage     a two-paragraph reply (a tab, a backtick span) at once, with usage 1234 in / 56 out
#   pg-quick         `PG-QUICK-ANSWER` at once
#   pg-fail-400      HTTP 400 (not retried: gemini and qwen retry a 500 for minutes)
#   pg-fail-500      HTTP 500;   pg-fail-429: HTTP 429 with Retry-After: 2
#   pg-tool-write    a file write: claude `Write` and gemini `write_file` of pg-written.txt; codex `apply_patch`
#                    (through `exec_command` or `shell`, escalated) adding ../pg-written-outside.txt (codex asks
#                    only outside its workspace); pg-create-file: copilot's freeform `apply_patch` adding
#                    pg-written.txt; pg-tool-write-lookalike: a `Write`/`write_file` whose content draws a composer
#   pg-tool-fetch    gemini `web_fetch` of https://example.com/pg-fetch; pg-claude-fetch: claude `WebFetch` (a
#                    deferred tool, not in the request's tool list: matched on the prompt alone)
#                    (these come after the fixtures above: a rejected call's prompt stays in the next request)
#   pg-mcp-prefixed  a call of the MCP tool `mcp__promptgate__list_agents` (claude, qwen; codex through the relay of
#                    scripts/capture-dialogs.sh), matched on the prompt alone (a deferred tool); pg-mcp-gemini:
#                    `mcp_promptgate_list_agents`; pg-mcp-opencode: `promptgate_list_agents` (opencode, kilo);
#                    pg-mcp-copilot: `promptgate-list_agents`; after the tool ran (or was refused): `PG-TOOL-DONE`
#   pg-qwen-write    qwen `write_file` of /tmp/pg-dialogs-qwen/pg-written.txt (it takes absolute paths only);
#                    pg-qwen-fetch: qwen `web_fetch` (deferred on 0.24.4); pg-oc-write, pg-oc-fetch: opencode's and
#                    kilo's `write` of pg-written.txt and `webfetch` of https://example.com/pg-fetch
#   anything else    `PG-OK` at once
#
# Errors go to stderr as `model: error: ...` and exit with status 1 (2 for usage errors).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
VERSIONS_FILE=${VERSIONS_FILE:-$ROOT/scripts/real-agents.versions}
RUNS=$ROOT/.cache/model/run

die() {
	echo "model: error: $*" >&2
	exit 1
}
usage_die() {
	echo "model: error: $*" >&2
	exit 2
}

aimock_version() {
	if [[ -n ${AIMOCK_VERSION:-} ]]; then
		echo "$AIMOCK_VERSION"
		return
	fi
	local v
	v=$(awk '$1 == "aimock" && $2 == "newest" { print $3; exit }' "$VERSIONS_FILE")
	[[ -n $v ]] || die "$VERSIONS_FILE has no 'aimock newest' row"
	echo "$v"
}

cli_path() { echo "$ROOT/.cache/aimock-$1/node_modules/@copilotkit/aimock/dist/cli.js"; }

installed_version() {
	local pj=$ROOT/.cache/aimock-$1/node_modules/@copilotkit/aimock/package.json
	[[ -f $pj ]] && node -e 'process.stdout.write(require(process.argv[1]).version)' "$pj"
}

cmd_install() {
	local ver dir
	ver=$(aimock_version)
	dir=$ROOT/.cache/aimock-$ver
	if [[ $(installed_version "$ver" || true) != "$ver" ]]; then
		command -v npm >/dev/null 2>&1 || die "npm is not installed"
		echo "model: installing @copilotkit/aimock@$ver into $dir" >&2
		mkdir -p "$dir"
		[[ -f $dir/package.json ]] || echo '{"private":true}' >"$dir/package.json"
		(cd "$dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
			"@copilotkit/aimock@$ver" >&2) || die "npm install @copilotkit/aimock@$ver failed"
	fi
	[[ -f $(cli_path "$ver") ]] || die "no $(cli_path "$ver") after the install"
	echo "aimock $ver $(cli_path "$ver")"
}

free_port() {
	node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{process.stdout.write(String(s.address().port));s.close()})'
}

# answers PORT: aimock's journal answers on that port
answers() {
	node -e 'require("http").get({host:"127.0.0.1",port:+process.argv[1],path:"/__aimock/journal",timeout:1000},
		r=>process.exit(r.statusCode===200?0:1)).on("error",()=>process.exit(1))' "$1"
}

cmd_start() {
	[[ $# -le 1 ]] || usage_die "usage: start [FIXTURES]"
	local fixtures=${1:-$ROOT/tests/model} ver cli port run pid i
	[[ -e $fixtures ]] || usage_die "no fixtures at $fixtures"
	command -v node >/dev/null 2>&1 || die "node is not installed"
	read -r _ ver cli < <(cmd_install)
	mkdir -p "$RUNS"
	run=$(mktemp -d "$RUNS/XXXXXXXX")
	for i in 1 2 3 4 5; do
		port=$(free_port)
		# setsid: its own process group, so a Ctrl-C at the caller's terminal does not take it down
		setsid node "$cli" -p "$port" -h 127.0.0.1 -f "$fixtures" --log-level "${MODEL_LOG_LEVEL:-info}" \
			</dev/null >"$run/log" 2>&1 &
		pid=$!
		echo "$pid" >"$run/pid"
		local t
		for t in $(seq 1 100); do
			if answers "$port"; then
				{
					echo "port=$port"
					echo "pid=$pid"
					echo "url=http://127.0.0.1:$port"
					echo "version=$ver"
					echo "run=$run"
					echo "log=$run/log"
				} | tee "$run/info"
				return 0
			fi
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		# the port was taken between the probe and the start: try another
		[[ $i -lt 5 ]] && echo "model: aimock did not come up on port $port, trying another" >&2
	done
	cat "$run/log" >&2
	die "aimock did not start (log above)"
}

stop_pid() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 1 30); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
	echo "stopped pid=$pid"
}

cmd_stop() {
	[[ $# -eq 1 ]] || usage_die "usage: stop PID | stop --all"
	local f pid found=0
	if [[ $1 == --all ]]; then
		for f in "$RUNS"/*/pid; do
			[[ -f $f ]] || continue
			pid=$(<"$f")
			if kill -0 "$pid" 2>/dev/null && grep -q aimock "/proc/$pid/cmdline" 2>/dev/null; then
				stop_pid "$pid"
			fi
			rm -f "$f"
		done
		return 0
	fi
	[[ $1 =~ ^[0-9]+$ ]] || usage_die "not a PID: $1"
	for f in "$RUNS"/*/pid; do
		[[ -f $f && $(<"$f") == "$1" ]] || continue
		found=1
		rm -f "$f"
	done
	[[ $found == 1 ]] || die "pid $1 is not an aimock started by scripts/model.sh"
	stop_pid "$1"
}

cmd_journal() {
	[[ $# -eq 1 && $1 =~ ^[0-9]+$ ]] || usage_die "usage: journal PORT"
	node -e 'require("http").get({host:"127.0.0.1",port:+process.argv[1],path:"/__aimock/journal"},r=>{
		if(r.statusCode!==200){console.error("model: error: journal answered "+r.statusCode);process.exit(1)}
		r.pipe(process.stdout)}).on("error",e=>{console.error("model: error: "+e.message);process.exit(1)})' "$1"
}

main() {
	local sub=${1:-help}
	[[ $# -eq 0 ]] || shift
	case $sub in
	install) cmd_install "$@" ;;
	start) cmd_start "$@" ;;
	stop) cmd_stop "$@" ;;
	journal) cmd_journal "$@" ;;
	help | -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' ;;
	*) usage_die "unknown subcommand '$sub' (install, start, stop, journal, help)" ;;
	esac
}

main "$@"
