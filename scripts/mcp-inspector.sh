#!/usr/bin/env bash
# mcp-inspector.sh: `promptgate mcp` through a real MCP client, the official
# inspector's CLI mode (npm @modelcontextprotocol/inspector, `--cli`).
#
#   scripts/mcp-inspector.sh          install the inspector if missing, then check
#
# On a private tmux server (-L promptgate-test-mcp-<pid>, -f /dev/null) with a
# fake Claude Code: tools/list names every tool, list_agents finds the agent,
# send_prompt delivers a body that lands byte-exact once in the agent's
# transcript, and a send into a shell pane is a tool error. Prints one line per
# check and "N passed, N failed"; exits non-zero when a check failed.
# Needs: node/npm (the inspector), tmux, cargo.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
INSPECTOR_VERSION=${INSPECTOR_VERSION:-2.12.0}
dir=$ROOT/.cache/mcp-inspector
insp=$dir/node_modules/.bin/mcp-inspector
if ! [ -x "$insp" ] || ! grep -q "\"version\": \"$INSPECTOR_VERSION\"" "$dir/node_modules/@modelcontextprotocol/inspector/package.json" 2>/dev/null; then
	mkdir -p "$dir"
	echo "installing @modelcontextprotocol/inspector@$INSPECTOR_VERSION into $dir"
	(cd "$dir" && npm install --no-audit --no-fund --loglevel=error "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >/dev/null) ||
		{ echo "mcp-inspector: npm install failed" >&2; exit 2; }
fi
cargo build --locked -q || exit 2
pg=$ROOT/target/debug/promptgate
sock=promptgate-test-mcp-$$
tmp=$(mktemp -d)
cleanup() { tmux -L "$sock" kill-server 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
tmux -L "$sock" -f /dev/null new-session -d -s main -x 120 -y 40 \
	env HOME="$tmp/home" "$pg" fake-agent --like claude --records --busy-ms 300 --transcript "$tmp/t.jsonl"
shell=$(tmux -L "$sock" new-window -d -P -F '#{pane_id}' -t '=main:' sh)
agent=$(tmux -L "$sock" display -p -t '=main:0.0' '#{pane_id}')
for _ in $(seq 100); do
	"$pg" -L "$sock" state -t "$agent" 2>/dev/null | grep -q $'\tready\t' && break
	sleep 0.1
done

passed=0 failed=0
check() { # NAME COMMAND...: the command's output must satisfy the last word's test (a jq-less grep)
	local name=$1 want=$2
	shift 2
	local out
	out=$(env -u TMUX -u TMUX_PANE timeout 60 "$insp" --cli "$pg" -L "$sock" mcp "$@" 2>&1)
	if grep -q -- "$want" <<<"$out"; then
		echo "ok   $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name: wanted $want in:"
		sed 's/^/     /' <<<"$out" | head -20
		failed=$((failed + 1))
	fi
}

check "tools/list names send_prompt" '"name": "send_prompt"' --method tools/list
check "tools/list names list_agents" '"name": "list_agents"' --method tools/list
check "list_agents finds the fake claude" "1 agent pane(s): $agent claude ready" \
	--method tools/call --tool-name list_agents
body='from the inspector: $HOME #{pane_id} %s;'
# (proven from Claude's input history, or from its transcript: both the agent's own record)
check "send_prompt is consumed with exact proof" 'consumed: 40 bytes, proof exact (\(transcript\|history\))' \
	--method tools/call --tool-name send_prompt --tool-arg "target=$agent" --tool-arg "body=$body"
check "send_prompt into a shell is a tool error" '"isError": true' \
	--method tools/call --tool-name send_prompt --tool-arg "target=$shell" --tool-arg "body=touch pwned"
got=$(grep -c '"kind":"prompt"' "$tmp/t.jsonl" 2>/dev/null)
if [ "$got" = 1 ] && grep -qF "\"text\":\"from the inspector: \$HOME #{pane_id} %s;\"" "$tmp/t.jsonl"; then
	echo "ok   the body landed byte-exact, once"
	passed=$((passed + 1))
else
	echo "FAIL the transcript holds $got prompt(s):"
	cat "$tmp/t.jsonl" 2>/dev/null | sed 's/^/     /'
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
