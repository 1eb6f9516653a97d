#!/usr/bin/env bash
# capture-dialogs.sh: capture a real agent's approval dialogs that scripts/capture-turns.sh does not take
# (issue 26 item 2), with the scripted local model (scripts/model.sh), at each size: an MCP tool call, a file
# write in the agent's asking mode, a web fetch. Each screen is checked with `promptgate state` before it is
# kept: one read otherwise than dialog:permission is kept all the same (the fixture test then fails on it: a
# profile to fix) and named on stderr as MISREAD; a dialog that never came is named NO-DIALOG and not kept.
#
# Usage: scripts/capture-dialogs.sh AGENT [SIZE...]      (SIZE = WxH; default 120x40 80x24 200x50)
#
#   AGENT    claude codex gemini qwen copilot opencode kilo
#   Release: PROMPTGATE_REAL_RELEASE=newest|previous and the *_VERSION overrides, as scripts/real-agents.sh.
#   KINDS    which dialogs, in this order in one agent run (default: every kind the agent is listed for):
#              50  MCP tool call: `promptgate mcp` (PROMPTGATE, with -L on a socket that does not exist,
#                  so a call that did run reaches no tmux server) as the local MCP server `promptgate`, the
#                  model calling its `list_agents`: fixtures/<agent>/v<release>-50-model-mcp-permission-<size>
#              47  file write of pg-written.txt: -47-model-write-permission-<size>
#              48  web fetch of https://example.com/pg-fetch: -48-model-fetch-permission-<size>
#            (a rejected call's prompt can stay in the next request: each later prompt's fixture sits
#            earlier in tests/model/turns.json, so it wins there)
#   The MCP server and the asking modes are given without touching scripts/real-agents.sh, through its
#   AGENT_ARGS / AGENT_ENV: claude --mcp-config FILE; codex -c mcp_servers.promptgate.*; gemini and qwen a
#   system settings file (GEMINI_CLI_SYSTEM_SETTINGS_PATH, QWEN_CODE_SYSTEM_SETTINGS_PATH) with mcpServers,
#   qwen also --approval-mode default (it writes files unasked in its default auto mode); opencode and kilo
#   an extra config file (OPENCODE_CONFIG, KILO_CONFIG) with permission bash/edit/webfetch/"promptgate_*" "ask"
#   and the server under "mcp"; copilot --additional-mcp-config @FILE.
#   opencode, kilo, copilot: the agent is started anew for each kind (their request after a rejected call
#   carries that call's result beside the next prompt, so the next prompt's first-call fixture would not match).
#   PROBE=1: no capture: after the warm-up turn, print the tool names of the agent's last model request
#   (from aimock's journal) and stop: how each agent names the MCP tool.
#   An existing fixture is left as it is (FORCE=1 replaces it).
#
# Prints one line per screen: `<name> <state read> [MISREAD (expected dialog:permission)|NO-DIALOG|kept|exists]`.
# Exit status: 0 when every screen was read as expected, 3 when one was misread or never came, 1 on an error.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
CAPTURE_NAME=capture-dialogs
# shellcheck source=scripts/capture-lib.sh
. "$ROOT/scripts/capture-lib.sh"
PG=${PROMPTGATE:-$ROOT/target/debug/promptgate}
agent=${1:?usage: capture-dialogs.sh AGENT [SIZE...]}
shift
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(120x40 80x24 200x50)
[[ -x $PG ]] || {
	echo "capture-dialogs: error: no promptgate at $PG" >&2
	exit 1
}
PG=$(cd "$(dirname "$PG")" && pwd -P)/$(basename "$PG")

# per agent: the kinds it is listed for, and the prompt of each (the fixture's name begins it)
case $agent in
claude) kinds=50 mcp_prompt="pg-mcp-prefixed: list the agents" ;;
codex) kinds=50 mcp_prompt="pg-mcp-prefixed: list the agents" ;;
gemini) kinds=50 mcp_prompt="pg-mcp-gemini: list the agents" ;;
qwen) kinds=50,47,48 mcp_prompt="pg-mcp-prefixed: list the agents" ;;
copilot) kinds=50 mcp_prompt="pg-mcp-copilot: list the agents" ;; # 1.0.102 offers no web-fetch tool (offline, own model)
opencode | kilo) kinds=50,47,48 mcp_prompt="pg-mcp-opencode: list the agents" ;;
*)
	echo "capture-dialogs: error: unknown agent '$agent'" >&2
	exit 2
	;;
esac
kinds=${KINDS:-$kinds}
# the write and fetch prompts: qwen offers tools aimock's tool-name match reads (write_file, web_fetch);
# opencode's, kilo's and copilot's requests carry tools it cannot read: fixtures matched on the prompt alone
case $agent in
qwen) write_prompt="pg-qwen-write: write the file" fetch_prompt="pg-qwen-fetch: fetch the page" ;;
opencode | kilo) write_prompt="pg-oc-write: write the file" fetch_prompt="pg-oc-fetch: fetch the page" ;;
copilot) write_prompt="pg-create-file: write the file" fetch_prompt="" ;;
*) write_prompt="pg-tool-write: write the file" fetch_prompt="pg-tool-fetch: fetch the page" ;;
esac

model_pid=
model_port=
proxy_pid=
sock=
tmp=
cleanup() {
	[[ -z $model_port ]] || "$ROOT/scripts/model.sh" journal "$model_port" >"$ROOT/.cache/dialogs/journal-$agent.json" 2>/dev/null || true
	[[ -z $sock ]] || "$ROOT/scripts/real-agents.sh" stop "$sock" >/dev/null 2>&1 || true
	[[ -z $proxy_pid ]] || kill "$proxy_pid" 2>/dev/null || true
	[[ -z $model_pid ]] || "$ROOT/scripts/model.sh" stop "$model_pid" >/dev/null 2>&1 || true
	[[ -z $tmp ]] || rm -rf "$tmp"
}
trap cleanup EXIT

eval "$("$ROOT/scripts/model.sh" start | sed -n 's/^\(port\|pid\|url\)=/model_\1=/p')"
export MODEL_URL=$model_url

# codex (0.171.0 and 0.153.4) offers MCP tools only inside a Responses API `namespace` tool (`mcp__promptgate`
# holding `list_agents`), and runs a call only when its function_call item names that namespace; aimock 1.43.0
# can neither read such tools nor write a `namespace` field (a flat `mcp__promptgate__list_agents` is an
# "unsupported call"). For codex a loopback relay in front of the model splits the fixture's qualified name
# into the two fields on the way back; everything else passes through unchanged.
proxy_pid=
if [[ $agent == codex ]]; then
	mkdir -p "$ROOT/.cache/dialogs"
	node -e '
		const http = require("http");
		const target = +process.argv[1];
		const split = (s) => s.replace(/"name":"mcp__([A-Za-z0-9-]+)__([A-Za-z0-9_-]+)"/g, "\"name\":\"$2\",\"namespace\":\"mcp__$1\"");
		const srv = http.createServer((req, res) => {
			const body = [];
			req.on("data", (c) => body.push(c));
			req.on("end", () => {
				const up = http.request({host: "127.0.0.1", port: target, path: req.url, method: req.method, headers: req.headers}, (r) => {
					const h = Object.assign({}, r.headers);
					delete h["content-length"];
					res.writeHead(r.statusCode, h);
					let rest = "";
					r.setEncoding("utf8");
					r.on("data", (c) => {
						const s = rest + c, i = s.lastIndexOf("\n");
						rest = s.slice(i + 1);
						if (i >= 0) res.write(split(s.slice(0, i + 1)));
					});
					r.on("end", () => res.end(split(rest)));
				});
				up.on("error", () => { res.writeHead(502); res.end(); });
				up.end(Buffer.concat(body));
			});
		});
		srv.listen(0, "127.0.0.1", () => console.log(srv.address().port));
	' "$model_port" >"$ROOT/.cache/dialogs/relay-$$.port" &
	proxy_pid=$!
	wait_port=$((SECONDS + 10))
	until [[ -s $ROOT/.cache/dialogs/relay-$$.port ]]; do
		((SECONDS < wait_port)) || { echo "capture-dialogs: error: the relay did not start" >&2; exit 1; }
		sleep 0.1
	done
	export MODEL_URL=http://127.0.0.1:$(cat "$ROOT/.cache/dialogs/relay-$$.port")
	rm -f "$ROOT/.cache/dialogs/relay-$$.port"
fi

# the agent's extra configuration (a dir of its own; no spaces in its path: AGENT_ARGS/AGENT_ENV split on them)
mkdir -p "$ROOT/.cache/dialogs"
tmp=$(mktemp -d "$ROOT/.cache/dialogs/$agent-XXXXXX")
mcp_args='["mcp","-L","pg-dialogs-no-server"]'
server=$(node -e 'console.log(JSON.stringify({command: process.argv[1], args: JSON.parse(process.argv[2])}))' "$PG" "$mcp_args")
agent_env=${AGENT_ENV:-}
agent_args=${AGENT_ARGS:-}
case $agent in
claude)
	echo "{\"mcpServers\":{\"promptgate\":$server}}" >"$tmp/mcp.json"
	agent_args+=" --mcp-config $tmp/mcp.json"
	;;
codex)
	agent_args+=" -c mcp_servers.promptgate.command=\"$PG\" -c mcp_servers.promptgate.args=$mcp_args"
	;;
gemini)
	echo "{\"mcpServers\":{\"promptgate\":$server}}" >"$tmp/settings.json"
	agent_env+=" GEMINI_CLI_SYSTEM_SETTINGS_PATH=$tmp/settings.json"
	;;
qwen)
	echo "{\"mcpServers\":{\"promptgate\":$server}}" >"$tmp/settings.json"
	agent_env+=" QWEN_CODE_SYSTEM_SETTINGS_PATH=$tmp/settings.json"
	# its write_file takes an absolute path only: the fixture pg-qwen-write writes into this fixed dir, made
	# part of the workspace
	mkdir -p /tmp/pg-dialogs-qwen
	agent_args+=" --approval-mode default --include-directories /tmp/pg-dialogs-qwen"
	;;
opencode | kilo)
	# "promptgate_*": the MCP server's tools (named <server>_<tool>), which otherwise fall under the default
	# "*": "allow" and run unasked
	node -e 'console.log(JSON.stringify({permission: {bash: "ask", edit: "ask", webfetch: "ask", "promptgate_*": "ask"},
		mcp: {promptgate: {type: "local", command: [process.argv[1], ...JSON.parse(process.argv[2])]}}}))' \
		"$PG" "$mcp_args" >"$tmp/config.json"
	up=$(tr '[:lower:]' '[:upper:]' <<<"$agent")
	agent_env+=" ${up}_CONFIG=$tmp/config.json"
	;;
copilot)
	echo "{\"mcpServers\":{\"promptgate\":$(node -e 'const s=JSON.parse(process.argv[1]);s.type="local";s.tools=["*"];console.log(JSON.stringify(s))' "$server")}}" >"$tmp/mcp.json"
	agent_args+=" --additional-mcp-config @$tmp/mcp.json"
	;;
esac
export AGENT_ENV=$agent_env AGENT_ARGS=$agent_args

# close the dialog: Escape (kilo: Escape does not close its prompt; Right Right Enter picks Reject, then
# Escape leaves the `Reject permission` input), then wait for the composer
close_dialog() {
	if [[ $agent == kilo ]]; then
		tmux -L "$sock" send-keys -t "$pane" Right
		sleep 0.3
		tmux -L "$sock" send-keys -t "$pane" Right
		sleep 0.3
		tmux -L "$sock" send-keys -t "$pane" Enter
		sleep 1
	fi
	tmux -L "$sock" send-keys -t "$pane" Escape
	wait_for 20 is_state ready || {
		sleep 1
		tmux -L "$sock" send-keys -t "$pane" Escape
		wait_for 20 is_state ready || echo "capture-dialogs: warning: not ready after the dialog ($(state))" >&2
	}
	sleep 1
}

misread=0
# take KIND NAME PROMPT NOTE
take() {
	local name=$2 prompt=$3 note=$4 got
	if [[ -e $ROOT/fixtures/$agent/$name.txt && -z ${FORCE:-} ]]; then
		echo "$name - exists"
		return
	fi
	send "$prompt"
	wait_for 60 is_state dialog:permission || true
	sleep 1.5
	got=$(state)
	# no dialog came when the model's answer after the tool call (or the catch-all's) is on screen below the
	# prompt: the agent ran the tool unasked, or never had it
	if [[ $got != dialog:permission ]] && tmux -L "$sock" capture-pane -p -t "$pane" |
		awk -v p="${prompt%%:*}" 'index($0, p) { seen = 1; hit = 0 } seen && /PG-OK|PG-TOOL-DONE/ { hit = 1 } END { exit !hit }'; then
		say "$name $got NO-DIALOG"
		tmux -L "$sock" capture-pane -p -t "$pane" | tail -n 25 >&2
		misread=1
		return
	fi
	SOCKET=$sock PANE=$pane FORCE=${FORCE:-} "$ROOT/scripts/real-agents.sh" capture "$agent" dialog:permission \
		"$W" "$H" "$name" "$note" >/dev/null
	if [[ $got == dialog:permission ]]; then
		echo "$name $got kept"
	else
		say "$name $got MISREAD (expected dialog:permission)"
		misread=1
	fi
	close_dialog
}

start_agent() {
	info=$("$ROOT/scripts/real-agents.sh" start "$agent" ready "$W" "$H")
	sock=$(sed -n 's/^socket=//p' <<<"$info")
	pane=$(sed -n 's/^pane=//p' <<<"$info")
	project=$(sed -n 's/^project=//p' <<<"$info")
	ver=$(sed -n 's/^version=//p' <<<"$info")
	wait_for 90 is_state ready || {
		echo "capture-dialogs: error: $agent $size never ready ($(state))" >&2
		tmux -L "$sock" capture-pane -p -t "$pane" >&2
		exit 1
	}
	"$PG" -L "$sock" send -t "$pane" --wait-busy --until-done --timeout 90 -- "pg-quick: warm up" >/dev/null ||
		echo "capture-dialogs: warning: the warm-up send exited $?" >&2
}
stop_agent() {
	"$ROOT/scripts/real-agents.sh" stop "$sock" >/dev/null
	sock=
}
restart_each=
[[ $agent != opencode && $agent != kilo && $agent != copilot ]] || restart_each=1

for size in "${sizes[@]}"; do
	W=${size%x*} H=${size#*x}
	start_agent
	if [[ -n ${PROBE:-} ]]; then
		"$ROOT/scripts/model.sh" journal "$model_port" | tee "$ROOT/.cache/dialogs/journal-$agent.json" | node -e '
			const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
			for (const e of j.slice(-3)) {
				const b = e.body || (e.request && e.request.body) || {};
				const t = (b.tools || []).map((x) => x.name || (x.function && x.function.name) ||
					(x.functionDeclarations || []).map((f) => f.name).join(",") || x.type);
				console.log(e.path, JSON.stringify(t));
			}'
		stop_agent
		continue
	fi
	IFS=, read -r -a ks <<<"$kinds"
	first=1
	for k in "${ks[@]}"; do
		if [[ -n $restart_each && -z $first ]]; then
			stop_agent
			start_agent
		fi
		first=
		case $k in
		50) take 50 "v$ver-50-model-mcp-permission-$size" "$mcp_prompt" \
			"scripted model: a call of the MCP tool list_agents of the local stdio server \`promptgate\` (promptgate mcp): the agent's approval dialog" ;;
		48) take 48 "v$ver-48-model-fetch-permission-$size" "$fetch_prompt" \
			"scripted model: a web fetch of https://example.com/pg-fetch: the agent's approval dialog" ;;
		47) take 47 "v$ver-47-model-write-permission-$size" "$write_prompt" \
			"scripted model: a file write of pg-written.txt in the agent's asking mode: its approval dialog"
			[[ ! -e $project/pg-written.txt ]] || echo "capture-dialogs: warning: pg-written.txt was written" >&2 ;;
		*) echo "capture-dialogs: warning: unknown kind $k" >&2 ;;
		esac
	done
	stop_agent
done
exit $((misread * 3))
