#!/usr/bin/env bash
# promptgate tmux plugin: what the keys run, through `run-shell -b`:
#   promptgate.sh ACTION PANE CLIENT [BUFFER]   send | prompt-done | compose | paste | pick | broadcast | install
#   promptgate.sh edit FILE    inside a popup: the editor on FILE
#   promptgate.sh watch        start the watcher (promptgate.tmux, the client-attached hook)
# The keys' work is done by `promptgate plugin ACTION` (src/app/cmd/plugin.rs); here: the
# options, finding the binary, the editor, the build popup, the watcher's start. It prints
# nothing on stdout and exits 0 (a run-shell command that prints or fails puts the pane in
# view mode, which swallows keys). PROMPTGATE_PLUGIN_DEBUG=FILE keeps stderr there.

# shellcheck disable=SC2154 # PG_<option> variables are set by pg_load_options (printf -v)
PG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=plugin/lib.sh
. "$PG_DIR/plugin/lib.sh"

pg_action_edit() { # FILE (runs inside the popup, on its terminal)
	local file=$1 editor
	editor=${PG_editor:-${EDITOR:-vi}}
	# like git: $EDITOR may hold arguments
	if sh -c "$editor \"\$1\"" promptgate-editor "$file"; then
		: >"$file.ok"
	fi
}

# The build key: scripts/install.sh in a popup (titled from tmux 3.3 on), else a pane.
pg_action_install() { # ORIGIN CLIENT
	local origin=$1 client=$2 cmd
	local -a opts=(-c "$client" -E -w 90% -h 80% -d "$(pg_literal "$PG_DIR")")
	cmd="bash $(pg_sh_quote "$PG_DIR/scripts/install.sh") --pause"
	# `display-popup -E` exits with the build's status, so a failed build is no
	# sign of a tmux without popups: the popup's title (-T) came with 3.3, and
	# a pane is the way only where tmux refuses the popup itself (no client)
	local -a title=(-T " promptgate: build ")
	case $(tmux display-message -p '#{version}' 2>/dev/null) in 3.2*) title=() ;; esac
	local err
	err=$(tmux display-popup "${opts[@]}" "${title[@]}" "$cmd" 2>&1 >/dev/null) || true
	if [ -n "$err" ]; then
		tmux split-window -t "$origin" -c "$(pg_literal "$PG_DIR")" "$cmd" 2>/dev/null ||
			pg_msg "$client" "promptgate: could not open a popup or a pane; run: cd $PG_DIR && cargo build --release --locked"
	fi
}

# Start the watcher unless it is off; with `auto` it exits at once unless it has
# work (notices on, or the status line shows the segment); a second one exits at
# once too (a per-server lock).
pg_action_watch() {
	pg_find_bin && [ "$PG_watch" != off ] || return 0
	local -a detach=() auto=(--auto)
	command -v setsid >/dev/null 2>&1 && detach=(setsid)
	[ "$PG_watch" != on ] || auto=()
	"${detach[@]}" "$PG_BIN" watch "${auto[@]}" --interval "$PG_watch_interval" \
		--display-ms "$PG_display_ms" </dev/null >/dev/null 2>&1 &
}

main() {
	local action=${1:-} origin=${2:-} client=${3:-}
	case $action in
	edit | watch) pg_load_options "" ;;
	prompt-done) pg_load_options "%$origin" ;;
	*) pg_load_options "$origin" ;;
	esac
	case $action in
	edit) pg_action_edit "$origin" ;;
	watch) pg_action_watch ;;
	install) pg_action_install "$origin" "$client" ;;
	send | prompt-done | compose | paste | pick | broadcast)
		if ! pg_find_bin; then
			pg_msg "$client" "$PG_PROBLEM"
			return 0
		fi
		# the options the binary uses, as read here (defaults applied)
		PG_pick_key_name=$(pg_key_name pick) PG_paste_key_name=$(pg_key_name paste)
		export PG_HELPER PG_send_flags PG_display_ms PG_popup_width PG_popup_height \
			PG_pick_key_name PG_paste_key_name
		"$PG_BIN" plugin "$action" "$origin" "$client" ${4:+"$4"}
		;;
	*) pg_msg "$client" "promptgate: unknown plugin action '$action'" ;;
	esac
	return 0
}

if [ "${1:-}" = edit ]; then
	# the popup's terminal: leave stdin/stdout/stderr to the editor
	main "$@"
else
	main "$@" </dev/null >/dev/null 2>>"${PROMPTGATE_PLUGIN_DEBUG:-/dev/null}"
fi
exit 0
