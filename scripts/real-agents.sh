#!/usr/bin/env bash
# real-agents.sh: install, start, drive, record and stop the REAL agent CLIs (Claude Code, Codex CLI,
# Gemini CLI) offline on private tmux servers, and save fixtures from them.
#
# Usage: scripts/real-agents.sh SUBCOMMAND [ARGS]
#
#   install [AGENT...]
#       npm-installs the pinned versions into $ROOT/.cache/real-agents/<agent>-<version>/ (reused when the
#       installed package.json has the wanted version). Prints one line per agent on stdout:
#           <agent> <version> <absolute path of the binary>
#       Versions: from the table scripts/real-agents.versions (VERSIONS_FILE), the column
#       PROMPTGATE_REAL_RELEASE=newest (default) or previous (about three months older); CLAUDE_VERSION,
#       CODEX_VERSION, GEMINI_VERSION override one agent (OPENCODE_VERSION, KILO_VERSION, COPILOT_VERSION
#       likewise; an agent without a `previous` row runs its `newest` release in that column).
#
#   versions
#       The releases this shell would use: `<agent> <release>` per agent (after the overrides above),
#       then the whole table as `table <agent> <role> <release>`.
#
#   start AGENT MODE WIDTH HEIGHT
#       AGENT: claude | codex | gemini | opencode | kilo | copilot.   MODE: ready | fresh   (claude also: fresh-apikey)
#         ready         seeded HOME: the agent comes up straight at its empty prompt, no dialog.
#         fresh         first-run dialogs: claude theme -> security notes -> trust; codex welcome/sign-in ->
#                       "Sign in another way" -> API key -> trust; gemini trust -> (restart) -> auth method
#                       -> API key. The caller answers them (keys are listed under "Dialogs" below).
#         fresh-apikey  (claude) onboarding done, key not approved: trust dialog, then the API-key dialog.
#       Makes a throwaway run dir $ROOT/.cache/real-agents/run/<agent>-<unique>/ holding home/ (HOME),
#       <agent>-proj/ (the project: a git repo with one commit, also the pane's cwd) and launch.sh, then
#       starts the agent in a new detached session on the PRIVATE tmux server `-L pg-real-<agent>-<unique>`
#       (never the default server) with `-f /dev/null`, default-terminal tmux-256color, escape-time 500
#       (the values the shared fixtures were taken with), window-size manual, remain-on-exit on.
#       Installs the agent first if it is missing. Prints key=value lines on stdout:
#           agent= version= mode= socket= session= pane= (%N) pid= (pane_pid) width= height= run= home=
#           project= record= (see `record`) [codex: record_sessions=] bin=
#       The same lines are kept in <run>/info.
#
#   stop SOCKET | stop --all
#       SOCKET is the -L name (pg-real-...) or the socket path. Sends SIGTERM to every process of the
#       run (the process trees under each pane_pid, plus every process whose HOME is the run's HOME: that
#       catches codex daemons and gemini's SIGHUP-immune node children), SIGKILL after 3 s to what is
#       left, then kills the tmux server. --all does this for every /tmp/tmux-<uid>/pg-real-* socket and
#       also kills leftover processes of run dirs whose server is already gone. The run dirs are kept
#       (records stay readable); `clean` removes them. Prints `stopped socket=<name> killed=<n>`.
#
#   record AGENT RECORD_PATH
#       Prints the user messages from the agent's own record, in order, exactly as stored, as JSON lines:
#       one JSON string per message (decode with e.g. `jq -r .` or JSON.parse; newlines inside a message
#       stay escaped as \n, so one line is one message). Prints nothing if the record does not exist yet.
#         claude  RECORD_PATH = ~/.claude/projects/<project path, every non-alphanumeric -> '-'>/ (a dir, a
#                 *.jsonl glob or one file). Lines {"type":"user","message":{"role":"user","content":...}}
#                 with content a string, or an array whose "text" parts are concatenated; tool results and
#                 isMeta entries are skipped. Files are read oldest first. A pasted text that 2.1.332 stores
#                 wrapped in `<pasted_content id="X">` ... `</pasted_content id="X">` is printed as pasted.
#         codex   $CODEX_HOME/history.jsonl: lines {"session_id","ts","text"}; prints "text". CAUTION: codex also
#                 appends composer text cleared with Ctrl-C there (so Up can recall it), so it is not only what
#                 was submitted. RECORD_PATH = $CODEX_HOME/sessions (start prints it as record_sessions=) or one
#                 rollout-*.jsonl reads the session rollouts instead: only submitted messages (event_msg
#                 item_completed of a UserMessage; its text parts concatenated), files in name (= time) order.
#         gemini  ~/.gemini/tmp/<project dir name>/logs.json: a JSON array; prints "message" of the entries
#                 with "type":"user".
#         opencode, kilo  ~/.local/state/<agent>/prompt-history.jsonl: lines {"input","parts","mode"}; prints
#                 "input" with each pasted part put back where its placeholder (`[Pasted ~N lines]`, the
#                 part's source.text.value) stands (the one space opencode stores after a placeholder that
#                 ends the input is left out).
#         copilot ~/.copilot/session-state (a dir: every <session>/events.jsonl, oldest first, or one file):
#                 lines {"type":"user.message","data":{"content"}}; prints "content", with each reference to a
#                 long paste (`<pasted_content file="<session>/files/paste-N.txt" … />`) replaced by that file's text.
#
#   capture AGENT STATE WIDTH HEIGHT NAME [NOTE]
#       Saves fixtures/<agent>/<NAME>.txt (capture-pane -p), .ansi (capture-pane -p -e) and .meta
#       (cursor_x cursor_y cursor_flag pane_width pane_height alternate_on pane_current_command
#       pane_in_mode pane_title, then agent= agent_version=) from one consistent snapshot, and appends
#       `<agent>/<NAME> agent version width height state note` (tab separated) to fixtures/manifest.tsv.
#       The pane: SOCKET and PANE env vars, or else the only running pg-real-<agent>-* server's first pane.
#       WIDTH/HEIGHT must equal the pane's size (checked). STATE: ready draft busy starting exited
#       dialog:<trust|api-key|onboarding|permission|login|other>. NOTE (or env NOTE): what on screen
#       decides the state. Refuses to overwrite an existing fixture unless FORCE=1.
#       If a promptgate binary (env PROMPTGATE, else target/debug/promptgate) answers
#       `promptgate -L SOCKET capture --help`, it does the capture (`promptgate -L SOCKET capture -t PANE -o
#       fixtures/<agent>/<NAME>`, plus `--agent AGENT --agent-version VERSION` when its help lists them) and
#       only missing agent=/agent_version= lines are appended to its .meta (whatever else it writes, such
#       as its own state=, is kept). CAPTURE_WITH=tmux forces the plain tmux path. FIXTURES=DIR writes
#       elsewhere (DIR/<agent>/ and DIR/manifest.tsv).
#
#   list      running pg-real-* servers: `socket=... agent=... pane=... pid=... dead=0|1 run=...`
#   clean     stop --all, then delete $ROOT/.cache/real-agents/run/
#   help      this text
#
# Qwen Code, Auggie, Aider (issue 19): AGENT qwen | auggie | aider in every subcommand above.
#   install   qwen, auggie: npm as above; aider: `pip install aider-chat==<release>` into a venv made in
#             place at $ROOT/.cache/real-agents/aider-<release>/ (PYTHON= picks the interpreter, 3.10-3.12);
#             QWEN_VERSION, AUGGIE_VERSION, AIDER_VERSION override one agent.
#   start     qwen   ready: OPENAI_API_KEY, OPENAI_BASE_URL (port 9: nothing listens) and OPENAI_MODEL, no
#                    dialog; fresh: without them: the "Connect a Provider" menu.
#             auggie ready: a fake AUGMENT_SESSION_AUTH plus ~/.augment/.auggie.json (onboarding done) and
#                    settings.json (indexing denied for the project); fresh: the fake auth only: a welcome
#                    screen, three tip screens (Enter each), then the workspace-indexing menu (2: never).
#             aider  `--no-git --model gpt-4o`, a fake OPENAI_API_KEY, OPENAI_API_BASE on the closed port 9, LITELLM_LOCAL_MODEL_COST_MAP=True,
#                    ~/.aider.conf.yml with analytics-disable; ready adds check-update: false and
#                    show-release-notes: false; fresh: the inline `Would you like to see what's new in
#                    this version? (Y)es/(N)o [Yes]:` question (n, Enter).
#   record    qwen   RECORD_PATH = ~/.qwen/projects/<cwd, non-alphanumerics as '-'>/chats (a dir or one
#                    <session>.jsonl): entries "type":"user" (0.24.4: "provenance":"real_user"); message.parts[].text.
#             auggie ~/.augment/prompt-history.jsonl: {"message"} per prompt.
#             aider  <project>/.aider.input.history: "# <time>" then each line of an entry as "+<line>"
#                    (it also holds the answers typed to aider's yes/no questions).
#   Offline turns: qwen fails in ~4 s (`✕ [API Error: Connection error…]`); auggie retries with backoff
#   for minutes (Esc interrupts); aider retries for about a minute (Ctrl-C interrupts).
#
# Dialogs (fresh modes), as observed with these versions:
#   claude fresh: theme menu (Enter), security notes (Enter), trust (Enter; 2.1.259 and 2.1.332 select
#     "No, exit" first: Down, then Enter). fresh-apikey: trust (the same), API key whose default is "No":
#     Up, then Enter.
#   codex fresh: welcome menu: Down, Down, Enter; "Sign in another way": Enter; API key box (pre-filled):
#     Enter; trust: Enter. Leave >= 1.2 s between these Enters (a quicker one is ignored).
#     0.153.4: the welcome menu's third choice is "Provide your own API key" (Down, Down, Enter opens
#     the key box at once: no "Sign in another way"), and trust asks "Do you trust the contents of this
#     directory?" with "1. Yes, continue" selected (Enter).
#   gemini fresh: trust (Enter), the CLI restarts (~2 s), auth method "Use Gemini API Key" (Enter),
#     key box (pre-filled, Enter).
#
#   opencode, kilo: no first-run dialog (fresh = no config file: the same prompt).
#   copilot fresh: "Confirm folder trust" with "❯ 1. Yes" selected (Enter).
#
# Environment of the agent: `env -i` plus HOME, PATH, LANG=C.UTF-8 and the pane's TERM, TMUX, TMUX_PANE,
# TERM_PROGRAM, TERM_PROGRAM_VERSION, and
#   claude  DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
#           ANTHROPIC_API_KEY=sk-ant-fake-key-for-offline-test CLAUDE_CODE_MAX_RETRIES=0
#   codex   CODEX_HOME=<home>/.codex OPENAI_API_KEY=sk-fake-offline-test, run with --no-daemon (when its
#           --help lists it: older releases have no daemon and refuse the flag)
#   gemini  GEMINI_API_KEY=fake-offline-test-key GEMINI_TELEMETRY_ENABLED=false METADATA_SERVER_DETECTION=none
#           and settings.json general.maxAttempts=1 + general.retryFetchErrors=false so an offline submit
#           fails fast (GEMINI_FAST_FAIL=0 leaves them out: then it retries for minutes)
#   opencode ANTHROPIC_API_KEY=<fake> OPENCODE_DISABLE_{AUTOUPDATE,MODELS_FETCH,LSP_DOWNLOAD,DEFAULT_PLUGINS,SHARE}=1,
#           and ~/.config/opencode/opencode.json (ready): autoupdate off, the anthropic base URL a closed local port
#   kilo    the same with KILO_ for OPENCODE_ (plus KILO_DISABLE_CODEBASE_INDEXING, _SESSION_INGEST), ~/.config/kilo/kilo.json
#   copilot COPILOT_OFFLINE=true COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:9/v1 COPILOT_MODEL=gpt-4o (its
#           bring-your-own-model mode: no GitHub login); without a model it exits at once.
#           COPILOT_SIGNED_OUT=1 leaves all three out: signed out, `Please use /login` above the composer
#   opencode, kilo and copilot retry an offline turn for minutes: Escape ends it (kilo: Escape twice).
# MODEL_URL=http://127.0.0.1:PORT (from scripts/model.sh start) points the agent at the scripted model instead
# of a closed port (issue 26, docs/real-turns.md): claude ANTHROPIC_BASE_URL + manual permission mode;
# codex a [model_providers.mock] (wire_api responses) + approval_policy on-request; gemini
# GOOGLE_GEMINI_BASE_URL; qwen OPENAI_BASE_URL; copilot COPILOT_PROVIDER_BASE_URL; opencode, kilo the
# anthropic provider's baseURL ($MODEL_URL/v1) and permission.bash "ask" in their config (mode ready only);
# aider OPENAI_API_BASE. auggie: usage error (it talks to its own backend).
# AGENT_ENV="K=V K2=V2" adds variables or overrides the ones above (no spaces inside values), e.g.
# AGENT_ENV=CLAUDE_CODE_MAX_RETRIES=10 keeps claude busy (retrying) for minutes; AGENT_ARGS="..." adds arguments.
#
# Timing seen on this 2-core machine (see fixtures/SIZES.md): launch to prompt claude 3-10 s, codex 4-7 s
# (but codex only queues an Enter until about 10 s after launch), gemini 4-12.5 s; an offline submit is
# back to idle after < 1 s (claude), 0.4-2.4 s (gemini); codex never ends a turn offline (Esc ends it).
# Hazards: tmux 3.3a crashes on `paste-buffer` into a dead pane (remain-on-exit is on: check #{pane_dead}),
# and on `set -g window-size` before any session exists.
#
# Errors go to stderr as `real-agents: error: ...` and exit with status 1 (2 for usage errors).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
CACHE=$ROOT/.cache/real-agents
RUNS=$CACHE/run
FIXTURES=${FIXTURES:-$ROOT/fixtures}
SOCKET_PREFIX='pg-real-'
TMUX_SOCKDIR=${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)

VERSIONS_FILE=${VERSIONS_FILE:-$ROOT/scripts/real-agents.versions}
RELEASE=${PROMPTGATE_REAL_RELEASE:-newest}

# table_version AGENT ROLE: the release of that row of the versions table
table_version() {
	[[ -f $VERSIONS_FILE ]] || {
		echo "real-agents: error: no versions table $VERSIONS_FILE" >&2
		exit 1
	}
	local v
	v=$(awk -v a="$1" -v r="$2" '$1 !~ /^#/ && $1 == a && $2 == r { print $3; exit }' "$VERSIONS_FILE")
	[[ -n $v ]] || {
		echo "real-agents: error: $VERSIONS_FILE has no '$1 $2' row (PROMPTGATE_REAL_RELEASE=$2)" >&2
		exit 2
	}
	echo "$v"
}

# table_version_or_newest AGENT ROLE: as table_version, but an agent without a row for ROLE (a
# newly supported one, no older release checked yet) runs its `newest` release
table_version_or_newest() {
	local v
	v=$(awk -v a="$1" -v r="$2" '$1 !~ /^#/ && $1 == a && $2 == r { print $3; exit }' "$VERSIONS_FILE")
	[[ -n $v ]] || v=$(table_version "$1" newest)
	echo "$v"
}

CLAUDE_VERSION=${CLAUDE_VERSION:-$(table_version claude "$RELEASE")}
CODEX_VERSION=${CODEX_VERSION:-$(table_version codex "$RELEASE")}
GEMINI_VERSION=${GEMINI_VERSION:-$(table_version gemini "$RELEASE")}
# --- opencode / kilo / copilot (issue 19) ---
OPENCODE_VERSION=${OPENCODE_VERSION:-$(table_version_or_newest opencode "$RELEASE")}
KILO_VERSION=${KILO_VERSION:-$(table_version_or_newest kilo "$RELEASE")}
COPILOT_VERSION=${COPILOT_VERSION:-$(table_version_or_newest copilot "$RELEASE")}
# --- end opencode / kilo / copilot ---
# qwen, auggie, aider (issue 19)
QWEN_VERSION=${QWEN_VERSION:-$(table_version qwen "$RELEASE")}
AUGGIE_VERSION=${AUGGIE_VERSION:-$(table_version auggie "$RELEASE")}
AIDER_VERSION=${AIDER_VERSION:-$(table_version aider "$RELEASE")}

CLAUDE_KEY=sk-ant-fake-key-for-offline-test
CODEX_KEY=sk-fake-offline-test
GEMINI_KEY=fake-offline-test-key
# opencode / kilo: a fake Anthropic key (the provider's base URL is a closed local port, see seed_opencode)
OPENCODE_KEY=sk-ant-fake-key-for-offline-test
# copilot: its bring-your-own-model mode, pointed at a closed local port
COPILOT_BASE_URL=http://127.0.0.1:9/v1
# qwen, auggie, aider: port 9 (discard) never listens, and Node's fetch refuses it outright
QWEN_KEY=sk-fake-offline-test
QWEN_BASE_URL=http://127.0.0.1:9/v1
AUGGIE_AUTH='{"accessToken":"fake-offline-token","tenantURL":"http://127.0.0.1:9/","scopes":["email"]}'
AIDER_KEY=sk-fake-offline-test
AIDER_BASE_URL=http://127.0.0.1:9/v1

STATES_RE='^(ready|draft|busy|starting|exited|dialog:(trust|api-key|onboarding|permission|login|other))$'
META_FORMAT='cursor_x=#{cursor_x}
cursor_y=#{cursor_y}
cursor_flag=#{cursor_flag}
pane_width=#{pane_width}
pane_height=#{pane_height}
alternate_on=#{alternate_on}
pane_current_command=#{pane_current_command}
pane_in_mode=#{pane_in_mode}
pane_title=#{pane_title}'

die() {
	echo "real-agents: error: $*" >&2
	exit 1
}

usage_die() {
	echo "real-agents: error: $*" >&2
	echo "run '$0 help' for usage" >&2
	exit 2
}

log() {
	echo "real-agents: $*" >&2
}

usage() {
	sed -n '2,/^set -euo pipefail/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

# ---------------------------------------------------------------------------------------------- agents

check_agent() {
	case ${1:-} in
	claude | codex | gemini) ;;
	opencode | kilo | copilot) ;;
	qwen | auggie | aider) ;;
	*) usage_die "unknown agent '${1:-}' (want claude, codex, gemini, opencode, kilo, copilot, qwen, auggie or aider)" ;;
	esac
}

agent_pkg() {
	case $1 in
	claude) echo @anthropic-ai/claude-code ;;
	codex) echo @openai/codex ;;
	gemini) echo @google/gemini-cli ;;
	opencode) echo opencode-ai ;;
	kilo) echo @kilocode/cli ;;
	copilot) echo @github/copilot ;;
	qwen) echo @qwen-code/qwen-code ;;
	auggie) echo @augmentcode/auggie ;;
	aider) echo aider-chat ;; # PyPI, into a venv
	esac
}

agent_version() {
	case $1 in
	claude) echo "$CLAUDE_VERSION" ;;
	codex) echo "$CODEX_VERSION" ;;
	gemini) echo "$GEMINI_VERSION" ;;
	opencode) echo "$OPENCODE_VERSION" ;;
	kilo) echo "$KILO_VERSION" ;;
	copilot) echo "$COPILOT_VERSION" ;;
	qwen) echo "$QWEN_VERSION" ;;
	auggie) echo "$AUGGIE_VERSION" ;;
	aider) echo "$AIDER_VERSION" ;;
	esac
}

agent_dir() {
	echo "$CACHE/$1-$(agent_version "$1")"
}

# agent_bin AGENT [DIR]: the binary inside an install dir (the file may not exist yet)
agent_bin() {
	local dir=${2:-$(agent_dir "$1")}
	case $1 in
	claude) echo "$dir/node_modules/.bin/claude" ;; # a symlink to bin/claude.exe: comm = "claude"
	codex) echo "$dir/node_modules/.bin/codex" ;;
	gemini) echo "$dir/node_modules/.bin/gemini" ;;
	opencode) echo "$dir/node_modules/.bin/opencode" ;; # -> opencode-ai/bin/opencode.exe (a native binary)
	kilo) echo "$dir/node_modules/.bin/kilo" ;;         # a node script that runs @kilocode/cli/bin/.kilo
	copilot) echo "$dir/node_modules/.bin/copilot" ;;   # npm-loader.js (node) -> @github/copilot-linux-x64/copilot
	qwen) echo "$dir/node_modules/.bin/qwen" ;;
	auggie) echo "$dir/node_modules/.bin/auggie" ;;
	aider) echo "$dir/bin/aider" ;; # the venv's console script: python3 .../bin/aider
	esac
}

# installed_version AGENT DIR: the version in node_modules/<pkg>/package.json, or nothing
installed_version() {
	local pj
	if [[ $1 == aider ]]; then
		[[ -x $2/bin/python ]] || return 0
		"$2/bin/python" -c 'import importlib.metadata as m; print(m.version("aider-chat"), end="")' 2>/dev/null || true
		return 0
	fi
	pj="$2/node_modules/$(agent_pkg "$1")/package.json"
	[[ -f $pj ]] || return 0
	node -e 'try { process.stdout.write(String(require(process.argv[1]).version || "")) } catch (e) {}' "$pj"
}

is_installed() {
	local agent=$1 dir bin
	dir=$(agent_dir "$agent")
	bin=$(agent_bin "$agent" "$dir")
	[[ -x $bin ]] && [[ $(installed_version "$agent" "$dir") == "$(agent_version "$agent")" ]]
}

need_npm() {
	if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
		return 0
	fi
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
		log "npm not found: installing nodejs and npm with apt-get"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2 || die "apt-get install nodejs npm failed"
	fi
	command -v npm >/dev/null 2>&1 || die "npm is not installed (need Node >= 20 and npm)"
	command -v node >/dev/null 2>&1 || die "node is not installed"
}

install_agent() {
	local agent=$1 ver pkg dir bin tmp got
	ver=$(agent_version "$agent")
	pkg=$(agent_pkg "$agent")
	dir=$(agent_dir "$agent")
	if [[ $agent == aider ]]; then
		install_aider "$ver" "$dir"
		return 0
	fi
	need_npm
	if ! is_installed "$agent"; then
		tmp=$dir.partial.$$
		rm -rf "$tmp"
		mkdir -p "$tmp"
		log "installing $pkg@$ver into $dir"
		if ! npm install --prefix "$tmp" --no-audit --no-fund "$pkg@$ver" >"$tmp.log" 2>&1; then
			cat "$tmp.log" >&2
			rm -rf "$tmp" "$tmp.log"
			die "npm install $pkg@$ver failed (log above)"
		fi
		got=$(installed_version "$agent" "$tmp")
		[[ $got == "$ver" ]] || {
			rm -rf "$tmp"
			die "npm installed $pkg version '$got', wanted '$ver'"
		}
		[[ -x $(agent_bin "$agent" "$tmp") ]] || {
			cat "$tmp.log" >&2
			rm -rf "$tmp" "$tmp.log"
			die "$pkg@$ver installed but $(agent_bin "$agent" "$tmp") is missing (did its install script run?)"
		}
		# the binary must really run (claude's bin/claude.exe is put in place by its postinstall script)
		mkdir -p "$tmp.home"
		got=$(HOME=$tmp.home "$(agent_bin "$agent" "$tmp")" --version 2>&1 | head -n 3) || true
		rm -rf "$tmp.home"
		[[ $got == *"$ver"* ]] || {
			cat "$tmp.log" >&2
			rm -rf "$tmp" "$tmp.log"
			die "$(agent_bin "$agent" "$tmp") --version printed '$got', expected it to name $ver"
		}
		rm -rf "$dir"
		mv "$tmp" "$dir"
		mv "$tmp.log" "$dir/npm-install.log"
	fi
	bin=$(agent_bin "$agent" "$dir")
	echo "$agent $ver $bin"
}

# install_aider VERSION DIR: aider-chat from PyPI into a venv at DIR (a venv cannot be moved, so it is
# made in place; a half-made one fails the version check and is made again)
install_aider() {
	local ver=$1 dir=$2 py got
	if ! is_installed aider; then
		py=${PYTHON:-}
		if [[ -z $py ]]; then
			local c
			for c in python3.12 python3.11 python3.10 python3; do
				command -v "$c" >/dev/null 2>&1 || continue
				# aider-chat 0.86 requires Python >=3.10,<3.13, and the venv module with ensurepip
				if "$c" -c 'import sys, venv, ensurepip; sys.exit(not ((3, 10) <= sys.version_info[:2] <= (3, 12)))' \
					2>/dev/null; then
					py=$(command -v "$c")
					break
				fi
			done
		fi
		[[ -n $py ]] || die "no Python 3.10-3.12 with the venv module (aider needs one; PYTHON= names it)"
		rm -rf "$dir"
		mkdir -p "$(dirname "$dir")"
		log "installing aider-chat==$ver into the venv $dir"
		"$py" -m venv "$dir" >&2 || die "python3 -m venv $dir failed"
		if ! "$dir/bin/pip" install --disable-pip-version-check "aider-chat==$ver" >"$dir/pip-install.log" 2>&1; then
			tail -n 30 "$dir/pip-install.log" >&2
			rm -rf "$dir"
			die "pip install aider-chat==$ver failed (log above)"
		fi
		got=$(installed_version aider "$dir")
		[[ $got == "$ver" ]] || {
			rm -rf "$dir"
			die "pip installed aider-chat version '$got', wanted '$ver'"
		}
	fi
	echo "aider $ver $(agent_bin aider "$dir")"
}

cmd_install() {
	local agents=("$@") a
	[[ ${#agents[@]} -gt 0 ]] || agents=(claude codex gemini opencode kilo copilot qwen auggie aider)
	for a in "${agents[@]}"; do check_agent "$a"; done
	for a in "${agents[@]}"; do install_agent "$a"; done
}

# ---------------------------------------------------------------------------------------------- helpers

# json VALUE-EXPRESSION ARGS...: prints JSON.stringify of a JS expression over process.argv (a[0] is the
# first ARG), so paths never need shell-side escaping
json() {
	local expr=$1
	shift
	node -e 'const a = process.argv.slice(1); process.stdout.write(JSON.stringify(('"$expr"'), null, 2) + "\n")' -- "$@"
}

toml_string() {
	local s=$1
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	printf '"%s"' "$s"
}

socket_name() {
	local s=$1
	s=${s##*/}
	[[ $s == "$SOCKET_PREFIX"* ]] || usage_die "'$1' is not a pg-real-* socket"
	echo "$s"
}

tm() {
	local sock=$1
	shift
	tmux -L "$sock" "$@"
}

server_alive() {
	tmux -L "$1" list-sessions >/dev/null 2>&1
}

# run_dir_of SOCKET: from the server's @pg-real-run option, else from the run dirs' info files
run_dir_of() {
	local sock=$1 r info
	if r=$(tm "$sock" show-options -gv @pg-real-run 2>/dev/null) && [[ -n $r ]]; then
		echo "$r"
		return 0
	fi
	for info in "$RUNS"/*/info; do
		[[ -f $info ]] || continue
		if grep -qxF "socket=$sock" "$info"; then
			dirname "$info"
			return 0
		fi
	done
	return 1
}

info_get() {
	local file=$1 key=$2
	sed -n "s/^$key=//p" "$file" | head -n 1
}

# descendants PID...: the pids and all their descendants (from ps)
descendants() {
	local table
	table=$(ps -e -o pid=,ppid=)
	awk -v roots="$*" '
		{ parent[$1] = $2; pids[NR] = $1 }
		END {
			n = split(roots, r, " ")
			for (i = 1; i <= n; i++) keep[r[i]] = 1
			changed = 1
			while (changed) {
				changed = 0
				for (j = 1; j <= NR; j++) {
					p = pids[j]
					if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; changed = 1 }
				}
			}
			for (p in keep) print p
		}' <<<"$table"
}

# pids_with_home HOME: processes whose environment holds exactly HOME=<home> (one grep over /proc)
pids_with_home() {
	local home=$1
	[[ -n $home ]] || return 0
	{ grep -l -s -z -x -F "HOME=$home" /proc/[0-9]*/environ || true; } |
		sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p' | grep -v -x -e "$$" -e "$BASHPID" || true
}

alive() {
	kill -0 "$1" 2>/dev/null
}

# kill_set PID...: SIGTERM, wait up to 3 s, SIGKILL what is left; prints how many were signalled
kill_set() {
	local pids=() p i left
	local -A seen=()
	for p in "$@"; do
		if ! [[ $p =~ ^[0-9]+$ ]] || [[ $p == 1 || $p == "$$" || -n ${seen[$p]:-} ]]; then continue; fi
		seen[$p]=1
		alive "$p" && pids+=("$p")
	done
	if [[ ${#pids[@]} -eq 0 ]]; then
		echo 0
		return 0
	fi
	kill -TERM "${pids[@]}" 2>/dev/null || true
	for ((i = 0; i < 30; i++)); do
		left=0
		for p in "${pids[@]}"; do
			if alive "$p" && [[ $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) != Z ]]; then
				left=1
				break
			fi
		done
		[[ $left == 0 ]] && break
		sleep 0.1
	done
	for p in "${pids[@]}"; do
		if alive "$p"; then kill -KILL "$p" 2>/dev/null || true; fi
	done
	echo "${#pids[@]}"
}

# ---------------------------------------------------------------------------------------------- start

make_project() {
	local project=$1
	mkdir -p "$project"
	printf '# scratch project for real-agent tests\n' >"$project/README.md"
	(
		cd "$project"
		export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
		git init -q .
		git add README.md
		git -c user.name=promptgate -c user.email=promptgate@example.invalid -c commit.gpgsign=false \
			commit -q -m "initial commit"
	) >&2 || die "could not make the git project in $project"
}

seed_claude() {
	local mode=$1 home=$2 project=$3 ver=$4 last20
	last20=${CLAUDE_KEY: -20}
	mkdir -p "$home/.claude"
	case $mode in
	ready)
		# hasSeenAutoDefaultNudge (with the scripted model, manual mode below): 2.1.332 asks once "Make auto
		# mode your default permission mode?" and stores the answer there
		json 'Object.assign({hasCompletedOnboarding: true, lastOnboardingVersion: a[0], lastReleaseNotesSeen: a[0],
			customApiKeyResponses: {approved: [a[1]], rejected: []},
			projects: {[a[2]]: {hasTrustDialogAccepted: true, projectOnboardingSeenCount: 1}}},
			a[3] ? {hasSeenAutoDefaultNudge: true} : {})' \
			"$ver" "$last20" "$project" "${MODEL_URL:-}" >"$home/.claude.json"
		if [[ -n ${MODEL_URL:-} ]]; then
			# manual permission mode: a tool call asks first (2.1.332 defaults to auto mode, which lets its
			# classifier run a scripted `rm` without asking)
			echo '{"theme":"dark","permissions":{"defaultMode":"default"}}' >"$home/.claude/settings.json"
		else
			echo '{"theme":"dark"}' >"$home/.claude/settings.json"
		fi
		;;
	fresh)
		json '({customApiKeyResponses: {approved: [a[0]], rejected: []}})' "$last20" >"$home/.claude.json"
		;;
	fresh-apikey)
		json 'Object.assign({hasCompletedOnboarding: true, lastOnboardingVersion: a[0]})' "$ver" >"$home/.claude.json"
		;;
	esac
}

seed_codex() {
	local mode=$1 home=$2 project=$3 bin=$4 run=$5 ch=$2/.codex
	mkdir -p "$ch"
	[[ $mode == ready ]] || return 0
	if ! printf %s "$CODEX_KEY" | env -i HOME="$home" CODEX_HOME="$ch" PATH="$AGENT_PATH" LANG=C.UTF-8 \
		"$bin" login --with-api-key >"$run/codex-login.log" 2>&1; then
		cat "$run/codex-login.log" >&2
		die "codex login --with-api-key failed"
	fi
	[[ -f $ch/auth.json ]] || die "codex login did not write $ch/auth.json"
	{
		if [[ -n ${MODEL_URL:-} ]]; then
			# the scripted model (OPENAI_BASE_URL alone is ignored): top-level keys before any table
			# a read-only sandbox: a command that writes (`rm`) asks first (the default workspace-write sandbox
			# let 0.171.0 run the scripted `rm -r pg-marker` in the trusted project without asking)
			printf 'model_provider = "mock"\nmodel = "gpt-4o"\napproval_policy = "on-request"\n\n'
			printf '[model_providers.mock]\nname = "scripted model"\n'
			printf 'base_url = %s\n' "$(toml_string "$MODEL_URL/v1")"
			printf 'env_key = "OPENAI_API_KEY"\nwire_api = "responses"\n'
			# one retry of a failed request (the default 4, with backoff, keep a scripted
			# HTTP 500 retrying for ~25 s): the retry screen still shows, once
			printf 'request_max_retries = 1\nstream_max_retries = 1\n\n'
		fi
		printf '[projects.%s]\n' "$(toml_string "$project")"
		printf 'trust_level = "trusted"\n'
	} >>"$ch/config.toml"
}

seed_gemini() {
	local mode=$1 home=$2 project=$3
	mkdir -p "$home/.gemini"
	case $mode in
	ready)
		json '({security: {auth: {selectedType: "gemini-api-key"}}, ui: {theme: "Default"},
			general: Object.assign({enableAutoUpdate: false, enableAutoUpdateNotification: false},
				a[0] === "1" ? {maxAttempts: 1, retryFetchErrors: false} : {}),
			privacy: {usageStatisticsEnabled: false}})' "${GEMINI_FAST_FAIL:-1}" >"$home/.gemini/settings.json"
		json '({[a[0]]: "TRUST_FOLDER"})' "$project" >"$home/.gemini/trustedFolders.json"
		;;
	fresh)
		json '({general: Object.assign({enableAutoUpdate: false, enableAutoUpdateNotification: false},
				a[0] === "1" ? {maxAttempts: 1, retryFetchErrors: false} : {}),
			privacy: {usageStatisticsEnabled: false}})' "${GEMINI_FAST_FAIL:-1}" >"$home/.gemini/settings.json"
		;;
	esac
}

# --- opencode / kilo / copilot (issue 19) ---

# seed_opencode MODE HOME NAME: opencode and its fork kilo read ~/.config/<name>/<name>.json. Both come
# up at their empty prompt with any Anthropic key and no dialog (fresh = no config file at all); the
# seeded config turns self-updates and sharing off and points the anthropic provider at a closed local
# port, so that a submit fails (and retries) without ever reaching the network.
seed_opencode() {
	local mode=$1 home=$2 name=$3
	mkdir -p "$home/.config/$name"
	[[ $mode == ready ]] || return 0
	# a HOME that ran the agent before: its state dir exists (promptgate reads the prompt record only
	# where the agent keeps one, and a first start makes the dir only after its first paint)
	mkdir -p "$home/.local/state/$name"
	if [[ -n ${MODEL_URL:-} ]]; then
		# the scripted model; and a shell command asks first (by default opencode runs it unasked)
		json '({autoupdate: false, share: "disabled", permission: {bash: "ask"},
			provider: {anthropic: {options: {baseURL: a[0] + "/v1"}}}})' "$MODEL_URL" \
			>"$home/.config/$name/$name.json"
		return 0
	fi
	json '({autoupdate: false, share: "disabled",
		provider: {anthropic: {options: {baseURL: "http://127.0.0.1:9/v1"}}}})' >"$home/.config/$name/$name.json"
}

# seed_copilot MODE HOME PROJECT: ready = the project among ~/.copilot/config.json's trustedFolders
# (no trust dialog); fresh = no config: the "Confirm folder trust" dialog comes first.
seed_copilot() {
	local mode=$1 home=$2 project=$3
	mkdir -p "$home/.copilot"
	[[ $mode == ready ]] || return 0
	json '({firstLaunchAt: "2026-12-02T00:00:00.000Z", appTipShown: true, trustedFolders: [a[0]]})' \
		"$project" >"$home/.copilot/config.json"
}

# --- end opencode / kilo / copilot ---
# qwen: no dialog offline with the OPENAI_* variables (fresh leaves them out: "Connect a Provider")
seed_qwen() {
	local mode=$1 home=$2
	mkdir -p "$home/.qwen"
	[[ $mode == ready ]] || return 0
	# what qwen writes itself at its first start
	json '({ui: {autoModeAcknowledged: true}})' >"$home/.qwen/settings.json"
}

# auggie: ready skips the onboarding (welcome, three tip screens) and the workspace-indexing menu
seed_auggie() {
	local mode=$1 home=$2 project=$3
	mkdir -p "$home/.augment"
	[[ $mode == ready ]] || return 0
	json '({lastUsed: "2026-12-02T00:00:00.000Z", sessionCount: 1, onboardingVersion: "1.0.0"})' \
		>"$home/.augment/.auggie.json"
	json '({indexingDenyDirs: [a[0]]})' "$project" >"$home/.augment/settings.json"
}

# aider: ~/.aider.conf.yml. ready: no release-notes question, no update check (offline it prints
# an SSL/DNS error); both: no analytics question (asked at random on a first start)
seed_aider() {
	local mode=$1 home=$2
	{
		echo "analytics-disable: true"
		if [[ $mode == ready ]]; then
			echo "check-update: false"
			echo "show-release-notes: false"
		fi
	} >"$home/.aider.conf.yml"
}

record_path() {
	local agent=$1 home=$2 project=$3
	case $agent in
	qwen) echo "$home/.qwen/projects/${project//[^a-zA-Z0-9]/-}/chats" ;;
	auggie) echo "$home/.augment/prompt-history.jsonl" ;;
	aider) echo "$project/.aider.input.history" ;;
	claude) echo "$home/.claude/projects/${project//[^a-zA-Z0-9]/-}" ;;
	codex) echo "$home/.codex/history.jsonl" ;;
	gemini) echo "$home/.gemini/tmp/${project##*/}/logs.json" ;;
	opencode) echo "$home/.local/state/opencode/prompt-history.jsonl" ;;
	kilo) echo "$home/.local/state/kilo/prompt-history.jsonl" ;;
	copilot) echo "$home/.copilot/session-state" ;;
	esac
}

cmd_start() {
	[[ $# -eq 4 ]] || usage_die "usage: start AGENT MODE WIDTH HEIGHT"
	local agent=$1 mode=$2 width=$3 height=$4
	check_agent "$agent"
	case $mode in
	ready | fresh) ;;
	fresh-apikey) [[ $agent == claude ]] || usage_die "mode fresh-apikey is for claude only" ;;
	*) usage_die "unknown mode '$mode' (want ready or fresh)" ;;
	esac
	[[ $width =~ ^[0-9]+$ && $height =~ ^[0-9]+$ && $width -ge 20 && $height -ge 5 ]] ||
		usage_die "bad size ${width}x${height}"
	command -v tmux >/dev/null 2>&1 || die "tmux is not installed"
	command -v git >/dev/null 2>&1 || die "git is not installed"
	if [[ -n ${MODEL_URL:-} ]]; then
		[[ $MODEL_URL =~ ^http://127\.0\.0\.1:[0-9]+$ ]] ||
			usage_die "MODEL_URL must be http://127.0.0.1:PORT (scripts/model.sh start prints it), not '$MODEL_URL'"
		case $agent in
		claude | codex) ;;
		gemini) ;;
		qwen) QWEN_BASE_URL=$MODEL_URL/v1 ;;
		copilot) COPILOT_BASE_URL=$MODEL_URL/v1 ;;
		opencode | kilo) [[ $mode == ready ]] || usage_die "MODEL_URL: $agent needs mode ready (its config names the model)" ;;
		aider) ;;
		*) usage_die "MODEL_URL: pointing $agent at the scripted model is not wired yet (all but auggie, which talks to its own backend)" ;;
		esac
	fi

	local ver bin unique run home project sock session launcher out pane pid record nodedir
	ver=$(agent_version "$agent")
	if ! is_installed "$agent"; then
		install_agent "$agent" >&2
	fi
	bin=$(agent_bin "$agent")
	nodedir=$(dirname "$(command -v node)")
	AGENT_PATH="$(agent_dir "$agent")/node_modules/.bin:$nodedir:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	[[ $agent != aider ]] || AGENT_PATH="$(agent_dir aider)/bin:$AGENT_PATH"

	unique="$(date +%s)-$$"
	run=$RUNS/$agent-$unique
	[[ ! -e $run ]] || die "run dir $run exists already"
	sock=$SOCKET_PREFIX$agent-$unique
	session=$agent
	home=$run/home
	mkdir -p "$home"
	run=$(cd "$run" && pwd -P)
	home=$run/home
	project=$run/$agent-proj
	make_project "$project"

	case $agent in
	claude) seed_claude "$mode" "$home" "$project" "$ver" ;;
	codex) seed_codex "$mode" "$home" "$project" "$bin" "$run" ;;
	gemini) seed_gemini "$mode" "$home" "$project" ;;
	opencode | kilo) seed_opencode "$mode" "$home" "$agent" ;;
	copilot) seed_copilot "$mode" "$home" "$project" ;;
	qwen) seed_qwen "$mode" "$home" ;;
	auggie) seed_auggie "$mode" "$home" "$project" ;;
	aider) seed_aider "$mode" "$home" ;;
	esac

	local -a envs=(HOME="$home" PATH="$AGENT_PATH" LANG=C.UTF-8)
	local -a args=()
	case $agent in
	claude)
		envs+=(DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
			ANTHROPIC_API_KEY="$CLAUDE_KEY" CLAUDE_CODE_MAX_RETRIES=0)
		[[ -z ${MODEL_URL:-} ]] || envs+=(ANTHROPIC_BASE_URL="$MODEL_URL")
		;;
	codex)
		envs+=(CODEX_HOME="$home/.codex" OPENAI_API_KEY="$CODEX_KEY")
		# --no-daemon exists only in newer releases (0.153 refuses it: "unexpected argument")
		if env -i HOME="$home" CODEX_HOME="$home/.codex" PATH="$AGENT_PATH" "$bin" --help 2>/dev/null |
			grep -q -- '--no-daemon'; then
			args+=(--no-daemon)
		fi
		;;
	gemini)
		envs+=(GEMINI_API_KEY="$GEMINI_KEY" GEMINI_TELEMETRY_ENABLED=false METADATA_SERVER_DETECTION=none)
		[[ -z ${MODEL_URL:-} ]] || envs+=(GOOGLE_GEMINI_BASE_URL="$MODEL_URL")
		;;
	opencode)
		envs+=(ANTHROPIC_API_KEY="$OPENCODE_KEY" OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1
			OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_DISABLE_SHARE=1)
		;;
	kilo)
		envs+=(ANTHROPIC_API_KEY="$OPENCODE_KEY" KILO_DISABLE_AUTOUPDATE=1 KILO_DISABLE_MODELS_FETCH=1
			KILO_DISABLE_LSP_DOWNLOAD=1 KILO_DISABLE_DEFAULT_PLUGINS=1 KILO_DISABLE_SHARE=1
			KILO_DISABLE_CODEBASE_INDEXING=1 KILO_DISABLE_SESSION_INGEST=1)
		;;
	copilot)
		# COPILOT_SIGNED_OUT=1: no bring-your-own model, as a user who has not signed in (`Please
		# use /login`; /login opens its menus)
		[[ ${COPILOT_SIGNED_OUT:-} == 1 ]] ||
			envs+=(COPILOT_OFFLINE=true COPILOT_PROVIDER_BASE_URL="$COPILOT_BASE_URL" COPILOT_MODEL=gpt-4o)
		;;
	qwen)
		# fresh: no provider in the environment -> the "Connect a Provider" menu
		[[ $mode != ready ]] ||
			envs+=(OPENAI_API_KEY="$QWEN_KEY" OPENAI_BASE_URL="$QWEN_BASE_URL" OPENAI_MODEL=gpt-4o)
		;;
	auggie)
		envs+=(AUGMENT_SESSION_AUTH="$AUGGIE_AUTH")
		;;
	aider)
		# LITELLM_LOCAL_MODEL_COST_MAP: litellm's bundled price table, not a download at each start
		envs+=(OPENAI_API_KEY="$AIDER_KEY" LITELLM_LOCAL_MODEL_COST_MAP=True)
		args+=(--no-git --model gpt-4o)
		# the closed port, as for qwen and copilot: api.openai.com fails fast on one network and
		# hangs in a DNS or connect wait on another (CI: `Waiting for gpt-4o` with no retry line,
		# and the Ctrl-C that ends the turn met a blocked call)
		if [[ -n ${MODEL_URL:-} ]]; then
			envs+=(OPENAI_API_BASE="$MODEL_URL/v1")
		else
			envs+=(OPENAI_API_BASE="$AIDER_BASE_URL")
		fi
		;;
	esac
	local extra
	if [[ -n ${AGENT_ENV:-} ]]; then
		read -r -a extra <<<"$AGENT_ENV"
		envs+=("${extra[@]}")
	fi
	if [[ -n ${AGENT_ARGS:-} ]]; then
		read -r -a extra <<<"$AGENT_ARGS"
		args+=("${extra[@]}")
	fi

	launcher=$run/launch.sh
	{
		echo '#!/bin/sh'
		echo "# started by scripts/real-agents.sh: $agent $ver, mode $mode"
		printf 'cd %q || exit 1\n' "$project"
		printf 'exec env -i'
		printf ' %q' "${envs[@]}"
		# the pane's own tmux variables, passed through (expanded by the launcher, not here)
		# shellcheck disable=SC2016
		printf ' TERM="${TERM:-tmux-256color}" TMUX="$TMUX" TMUX_PANE="$TMUX_PANE"'
		# shellcheck disable=SC2016
		printf ' TERM_PROGRAM="$TERM_PROGRAM" TERM_PROGRAM_VERSION="$TERM_PROGRAM_VERSION"'
		printf ' %q' "$bin" "${args[@]}"
		echo
	} >"$launcher"
	chmod +x "$launcher"

	# One tmux invocation: the options are set before the pane exists, so its TERM is tmux-256color.
	# window-size comes after new-session: setting it on a server with no session crashes tmux 3.3a.
	if ! out=$(tmux -L "$sock" -f /dev/null \
		set-option -g default-terminal tmux-256color \; \
		set-option -sg escape-time 500 \; \
		set-option -g remain-on-exit on \; \
		set-option -g @pg-real-run "$run" \; \
		set-option -g @pg-real-agent "$agent" \; \
		new-session -d -s "$session" -x "$width" -y "$height" -c "$project" \
		-P -F '#{pane_id} #{pane_pid} #{pane_width} #{pane_height}' /bin/sh "$launcher" \; \
		set-option -g window-size manual 2>&1); then
		die "tmux new-session failed: $out"
	fi
	local pw ph
	read -r pane pid pw ph <<<"$out"
	[[ $pane == %* && $pid =~ ^[0-9]+$ ]] || die "unexpected tmux output: $out"
	[[ $pw == "$width" && $ph == "$height" ]] || log "warning: pane is ${pw}x${ph}, asked for ${width}x${height}"
	record=$(record_path "$agent" "$home" "$project")

	{
		echo "agent=$agent"
		echo "version=$ver"
		echo "mode=$mode"
		echo "socket=$sock"
		echo "session=$session"
		echo "pane=$pane"
		echo "pid=$pid"
		echo "width=$pw"
		echo "height=$ph"
		echo "run=$run"
		echo "home=$home"
		echo "project=$project"
		echo "record=$record"
		[[ $agent != codex ]] || echo "record_sessions=$home/.codex/sessions"
		echo "bin=$bin"
	} | tee "$run/info"
}

# ---------------------------------------------------------------------------------------------- stop

stop_one() {
	local sock=$1 run="" home="" panes=() tree=() byhome=() n
	run=$(run_dir_of "$sock") || run=""
	if [[ -n $run && -f $run/info ]]; then
		home=$(info_get "$run/info" home)
	fi
	if server_alive "$sock"; then
		mapfile -t panes < <(tm "$sock" list-panes -a -F '#{pane_pid}' 2>/dev/null || true)
	fi
	if [[ ${#panes[@]} -gt 0 ]]; then
		mapfile -t tree < <(descendants "${panes[@]}")
	fi
	mapfile -t byhome < <(pids_with_home "$home")
	n=$(kill_set "${tree[@]}" "${byhome[@]}")
	if server_alive "$sock"; then
		tm "$sock" kill-server 2>/dev/null || true
	fi
	# a server that crashed leaves its socket file behind
	if [[ -S $TMUX_SOCKDIR/$sock ]] && ! server_alive "$sock"; then
		rm -f "$TMUX_SOCKDIR/$sock"
	fi
	echo "stopped socket=$sock killed=$n"
}

cmd_stop() {
	[[ $# -eq 1 ]] || usage_die "usage: stop SOCKET | stop --all"
	if [[ $1 != --all ]]; then
		local sock
		sock=$(socket_name "$1")
		if ! server_alive "$sock" && ! run_dir_of "$sock" >/dev/null; then
			die "no server or run found for socket $sock"
		fi
		stop_one "$sock"
		return 0
	fi
	local s info home sock pids n live
	for s in "$TMUX_SOCKDIR/$SOCKET_PREFIX"*; do
		[[ -e $s ]] || continue
		stop_one "${s##*/}"
	done
	# runs whose server is gone but whose processes are not (e.g. after a tmux crash): one pass over
	# /proc for the HOME values that lie under the run dirs, then only the runs that have live processes
	live=$({ grep -H -s -z -o "^HOME=$RUNS/.*" /proc/[0-9]*/environ || true; } | tr '\0' '\n' |
		sed -n 's|^/proc/[0-9]*/environ:HOME=||p' | sort -u)
	[[ -n $live ]] || return 0
	for info in "$RUNS"/*/info; do
		[[ -f $info ]] || continue
		home=$(info_get "$info" home)
		grep -qxF "$home" <<<"$live" || continue
		sock=$(info_get "$info" socket)
		mapfile -t pids < <(pids_with_home "$home")
		if [[ ${#pids[@]} -gt 0 ]]; then
			n=$(kill_set "${pids[@]}")
			echo "stopped socket=$sock killed=$n"
		fi
	done
}

cmd_list() {
	local s sock run
	for s in "$TMUX_SOCKDIR/$SOCKET_PREFIX"*; do
		[[ -e $s ]] || continue
		sock=${s##*/}
		server_alive "$sock" || continue
		run=$(run_dir_of "$sock" || true)
		tm "$sock" list-panes -a -F "socket=$sock agent=#{@pg-real-agent} pane=#{pane_id} pid=#{pane_pid} dead=#{pane_dead} run=$run"
	done
}

cmd_clean() {
	cmd_stop --all
	rm -rf "$RUNS"
	echo "removed $RUNS"
}

# ---------------------------------------------------------------------------------------------- record

cmd_record() {
	[[ $# -eq 2 ]] || usage_die "usage: record AGENT RECORD_PATH"
	local agent=$1 path=$2
	check_agent "$agent"
	command -v node >/dev/null 2>&1 || die "node is needed to read records"
	node - "$agent" "$path" <<'EOF'
const fs = require("fs");
const path = require("path");
const [agent, rec] = process.argv.slice(2);
const out = (s) => process.stdout.write(JSON.stringify(s) + "\n");
function fail(msg) { process.stderr.write("real-agents: error: " + msg + "\n"); process.exit(1); }
function lines(file) {
  return fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "").map((l, i) => {
    try { return JSON.parse(l); } catch (e) { fail(`${file}:${i + 1}: not JSON: ${e.message}`); }
  });
}
function claudeFiles(p) {
  let files;
  if (fs.existsSync(p) && fs.statSync(p).isDirectory()) {
    files = fs.readdirSync(p).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(p, f));
  } else if (p.includes("*")) {
    const dir = path.dirname(p);
    const re = new RegExp("^" + path.basename(p).replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*") + "$");
    files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => re.test(f)).map((f) => path.join(dir, f)) : [];
  } else {
    files = fs.existsSync(p) ? [p] : [];
  }
  return files.map((f) => [fs.statSync(f).mtimeMs, f]).sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1)).map((x) => x[1]);
}
if (agent === "claude") {
  // 2.1.332 stores a pasted text wrapped: "\n\n<pasted_content id=\"X\">\n" + text + "\n</pasted_content id=\"X\">\n"
  // (after any typed text before it); print the text as pasted
  const unwrap = (s) => s.replace(/(?:\n\n)?<pasted_content id="([^"]*)">\n([\s\S]*?)\n<\/pasted_content id="\1">\n?/g, (m, id, body) => body);
  const claudeOut = (s) => out(unwrap(s));
  for (const f of claudeFiles(rec)) {
    for (const e of lines(f)) {
      if (e.type !== "user" || e.isMeta || !e.message || e.message.role !== "user") continue;
      const c = e.message.content;
      if (typeof c === "string") { claudeOut(c); continue; }
      if (!Array.isArray(c)) continue;
      const texts = c.filter((p) => p && p.type === "text" && typeof p.text === "string");
      if (texts.length === 0) continue; // tool results and the like
      claudeOut(texts.map((p) => p.text).join(""));
    }
  }
} else if (agent === "codex") {
  if (!fs.existsSync(rec)) process.exit(0);
  const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((x) =>
    x.isDirectory() ? walk(path.join(d, x.name)) : /^rollout-.*\.jsonl$/.test(x.name) ? [path.join(d, x.name)] : []);
  const rollouts = fs.statSync(rec).isDirectory() ? walk(rec).sort((a, b) => (path.basename(a) < path.basename(b) ? -1 : 1))
    : /^rollout-.*\.jsonl$/.test(path.basename(rec)) ? [rec] : null;
  if (rollouts === null) {
    // history.jsonl: {"session_id","ts","text"}; NB codex also writes drafts cleared with Ctrl-C here
    for (const e of lines(rec)) if (typeof e.text === "string") out(e.text);
  } else {
    // session rollouts: only messages really submitted (event_msg item_completed UserMessage, or the older
    // event_msg user_message form)
    for (const f of rollouts) {
      const es = lines(f).filter((e) => e.type === "event_msg" && e.payload);
      const done = es.filter((e) => e.payload.type === "item_completed" && e.payload.item && e.payload.item.type === "UserMessage");
      if (done.length > 0) {
        for (const e of done) out((e.payload.item.content || []).filter((c) => c.type === "text").map((c) => c.text).join(""));
      } else {
        for (const e of es) if (e.payload.type === "user_message" && typeof e.payload.message === "string") out(e.payload.message);
      }
    }
  }
} else if (agent === "opencode" || agent === "kilo") {
  // ~/.local/state/<agent>/prompt-history.jsonl: {"input","parts","mode"}. OpenCode shows a long or
  // multi-line paste as `[Pasted ~N lines]` in "input" and keeps the pasted text in a part whose
  // source.text.value is that placeholder: put each such part back where its placeholder stands.
  if (!fs.existsSync(rec)) process.exit(0);
  for (const e of lines(rec)) {
    if (typeof e.input !== "string") continue;
    let s = e.input;
    for (const p of e.parts || []) {
      const v = p && p.type === "text" && p.source && p.source.text && p.source.text.value;
      if (typeof v !== "string" || typeof p.text !== "string" || !s.includes(v)) continue;
      // a paste that ends the input is stored with one space after its placeholder: not part of it
      s = s.endsWith(v + " ") && s.indexOf(v) === s.length - v.length - 1 ? s.slice(0, -v.length - 1) + p.text : s.replace(v, () => p.text);
    }
    out(s);
  }
} else if (agent === "copilot") {
  // ~/.copilot/session-state/<session id>/events.jsonl: {"type":"user.message","data":{"content"}}
  if (!fs.existsSync(rec)) process.exit(0);
  const files = fs.statSync(rec).isDirectory()
    ? fs.readdirSync(rec).map((d) => path.join(rec, d, "events.jsonl")).filter((f) => fs.existsSync(f))
    : [rec];
  files.sort((a, b) => fs.statSync(a).mtimeMs - fs.statSync(b).mtimeMs);
  // a long paste is stored as <pasted_content file="<session>/files/paste-N.txt" size=… lines=… />: print the file's text
  const files_in = (s, dir) => s.replace(/<pasted_content file="([^"]+)"[^>]*\/>/g, (m, f) =>
    f.startsWith(dir + path.sep) && fs.existsSync(f) ? fs.readFileSync(f, "utf8") : m);
  for (const f of files) for (const e of lines(f)) if (e.type === "user.message" && e.data && typeof e.data.content === "string") out(files_in(e.data.content, path.resolve(path.dirname(f))));
} else if (agent === "gemini") {
  if (!fs.existsSync(rec)) process.exit(0);
  let a;
  try { a = JSON.parse(fs.readFileSync(rec, "utf8")); } catch (e) { fail(`${rec}: not JSON: ${e.message}`); }
  if (!Array.isArray(a)) fail(`${rec}: not a JSON array`);
  for (const e of a) if (e && e.type === "user" && typeof e.message === "string") out(e.message);
} else if (agent === "qwen") {
  // ~/.qwen/projects/<cwd, non-alphanumerics as '-'>/chats/<session>.jsonl: {"type":"user",
  // "provenance":"real_user","message":{"role":"user","parts":[{"text":...}]}}
  const files = fs.existsSync(rec) && fs.statSync(rec).isDirectory()
    ? fs.readdirSync(rec).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(rec, f))
    : fs.existsSync(rec) ? [rec] : [];
  files.sort((a, b) => fs.statSync(a).mtimeMs - fs.statSync(b).mtimeMs);
  for (const f of files) for (const e of lines(f)) {
    // 0.24.4 marks the prompts typed by the user "provenance":"real_user"; 0.15.6 has no such field
    if (e.type !== "user" || (e.provenance !== undefined && e.provenance !== "real_user") || !e.message) continue;
    const parts = (e.message.parts || []).filter((p) => typeof p.text === "string");
    if (parts.length > 0) out(parts.map((p) => p.text).join(""));
  }
} else if (agent === "auggie") {
  // ~/.augment/prompt-history.jsonl: {"message": ...} per prompt
  if (!fs.existsSync(rec)) process.exit(0);
  for (const e of lines(rec)) if (typeof e.message === "string") out(e.message);
} else if (agent === "aider") {
  // <project>/.aider.input.history (prompt_toolkit's FileHistory): "\n# <time>\n" then each line of
  // the entry as "+<line>\n". Also holds the answers to aider's (Y)es/(N)o questions.
  if (!fs.existsSync(rec)) process.exit(0);
  let cur = null;
  for (const l of fs.readFileSync(rec, "utf8").split("\n")) {
    if (l.startsWith("+")) { cur = cur === null ? l.slice(1) : cur + "\n" + l.slice(1); continue; }
    if (cur !== null) out(cur);
    cur = null;
  }
  if (cur !== null) out(cur);
}
EOF
}

# ---------------------------------------------------------------------------------------------- capture

# find_target AGENT: sets SOCK and PANE (env SOCKET/PANE, or the only running server of that agent)
find_target() {
	local agent=$1 s found=()
	if [[ -n ${SOCKET:-} ]]; then
		SOCK=$(socket_name "$SOCKET")
	else
		for s in "$TMUX_SOCKDIR/$SOCKET_PREFIX$agent-"*; do
			[[ -e $s ]] || continue
			server_alive "${s##*/}" && found+=("${s##*/}")
		done
		[[ ${#found[@]} -eq 1 ]] ||
			die "found ${#found[@]} running pg-real-$agent-* servers; set SOCKET= (and PANE=)"
		SOCK=${found[0]}
	fi
	server_alive "$SOCK" || die "tmux server $SOCK is not running"
	if [[ -n ${PANE:-} ]]; then
		PANE_ID=$PANE
	else
		PANE_ID=$(tm "$SOCK" list-panes -a -F '#{pane_id}' | head -n 1)
	fi
	tm "$SOCK" display-message -p -t "$PANE_ID" '#{pane_id}' >/dev/null 2>&1 || die "no pane $PANE_ID on $SOCK"
}

promptgate_bin() {
	[[ ${CAPTURE_WITH:-} == tmux ]] && return 1
	local pg=${PROMPTGATE:-}
	if [[ -z $pg && -x $ROOT/target/debug/promptgate ]]; then
		pg=$ROOT/target/debug/promptgate
	fi
	[[ -n $pg ]] || return 1
	"$pg" -L "$SOCK" capture --help >/dev/null 2>&1 || return 1
	echo "$pg"
}

capture_with_tmux() {
	local base=$1 meta tag
	tag="pg-real-cap-$$"
	# one tmux command list = one consistent snapshot (the server runs the list without reading panes)
	meta=$(tm "$SOCK" capture-pane -t "$PANE_ID" -b "$tag-t" \; \
		capture-pane -e -t "$PANE_ID" -b "$tag-a" \; \
		display-message -p -t "$PANE_ID" "$META_FORMAT") || die "tmux capture failed"
	tm "$SOCK" save-buffer -b "$tag-t" "$base.txt" \; save-buffer -b "$tag-a" "$base.ansi" \; \
		delete-buffer -b "$tag-t" \; delete-buffer -b "$tag-a" || die "tmux save-buffer failed"
	printf '%s\n' "$meta" >"$base.meta"
}

cmd_versions() {
	local a
	for a in claude codex gemini opencode kilo copilot qwen auggie aider; do echo "$a $(agent_version "$a")"; done
	awk '$1 !~ /^#/ && NF >= 3 { print "table", $1, $2, $3 }' "$VERSIONS_FILE"
}

cmd_capture() {
	[[ $# -eq 5 || $# -eq 6 ]] || usage_die "usage: capture AGENT STATE WIDTH HEIGHT NAME [NOTE]"
	local agent=$1 state=$2 width=$3 height=$4 name=$5 note=${6:-${NOTE:-}}
	check_agent "$agent"
	[[ $state =~ $STATES_RE ]] || usage_die "bad state '$state'"
	[[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || usage_die "bad fixture name '$name'"
	[[ $note != *$'\t'* && $note != *$'\n'* ]] || usage_die "the note must be one line without tabs"
	local ver dir base pg pw ph row
	find_target "$agent"
	# the release that runs in the pane (its run's info), not the default of this shell's environment
	local run
	ver=""
	if run=$(run_dir_of "$SOCK") && [[ -f $run/info ]]; then
		ver=$(info_get "$run/info" version)
	fi
	[[ -n $ver ]] || ver=$(agent_version "$agent")
	read -r pw ph < <(tm "$SOCK" display-message -p -t "$PANE_ID" '#{pane_width} #{pane_height}')
	[[ $pw == "$width" && $ph == "$height" ]] || die "pane $PANE_ID is ${pw}x${ph}, not ${width}x${height}"
	dir=$FIXTURES/$agent
	base=$dir/$name
	mkdir -p "$dir"
	if [[ -e $base.txt || -e $base.meta ]] && [[ ${FORCE:-0} != 1 ]]; then
		die "$base.* exists (FORCE=1 overwrites)"
	fi
	if pg=$(promptgate_bin); then
		local -a pgargs=(-L "$SOCK" capture -t "$PANE_ID" -o "$base")
		# newer promptgate builds take the agent and its version; use them when the help lists them
		local pghelp
		pghelp=$("$pg" -L "$SOCK" capture --help 2>&1 || true)
		[[ $pghelp != *--agent-version* ]] || pgargs+=(--agent-version "$ver")
		[[ $pghelp != *"--agent "* ]] || pgargs+=(--agent "$agent")
		"$pg" "${pgargs[@]}" >&2 || die "$pg capture failed"
		[[ -f $base.txt && -f $base.meta ]] || die "$pg capture did not write $base.txt/.meta"
		grep -q '^agent=' "$base.meta" || echo "agent=$agent" >>"$base.meta"
		grep -q '^agent_version=' "$base.meta" || echo "agent_version=$ver" >>"$base.meta"
	else
		capture_with_tmux "$base"
		printf 'agent=%s\nagent_version=%s\n' "$agent" "$ver" >>"$base.meta"
	fi
	local manifest=$FIXTURES/manifest.tsv
	if [[ ! -f $manifest ]]; then
		printf 'file\tagent\tversion\twidth\theight\tstate\tnote\n' >"$manifest"
	fi
	# drop an older row of the same file (FORCE=1), then append
	if grep -q "^$agent/$name"$'\t' "$manifest"; then
		grep -v "^$agent/$name"$'\t' "$manifest" >"$manifest.tmp" || true
		mv "$manifest.tmp" "$manifest"
	fi
	row=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s' "$agent/$name" "$agent" "$ver" "$width" "$height" "$state" "$note")
	printf '%s\n' "$row" >>"$manifest"
	echo "captured $base.{txt,ansi,meta} state=$state"
}

# ---------------------------------------------------------------------------------------------- main

main() {
	local cmd=${1:-help}
	[[ $# -gt 0 ]] && shift
	case $cmd in
	install) cmd_install "$@" ;;
	start) cmd_start "$@" ;;
	stop) cmd_stop "$@" ;;
	record) cmd_record "$@" ;;
	capture) cmd_capture "$@" ;;
	versions) cmd_versions "$@" ;;
	list) cmd_list "$@" ;;
	clean) cmd_clean "$@" ;;
	help | -h | --help) usage ;;
	*) usage_die "unknown subcommand '$cmd'" ;;
	esac
}

main "$@"
