#!/usr/bin/env bash
# promptgate: get a prompt into an AI coding agent in a tmux pane, exactly once.
#
# TPM runs this file on every load of tmux.conf (and discards its output). It is
# idempotent: keys, command aliases and the hook are set at fixed places, so a
# second load replaces them. Options and defaults: plugin/options.sh.

# shellcheck disable=SC2154 # PG_<option> variables are set by pg_load_options (printf -v)
PG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=plugin/lib.sh
. "$PG_DIR/plugin/lib.sh"

pg_load_options ""
pg_find_bin
broken="promptgate: $PG_PROBLEM. Build it: cargo build --release --locked (in $PG_DIR)"
[ "$PG_install_key" = none ] || broken+=", or press $(pg_key_name install)"

# Drop the keys the last load bound (a key option may have changed since).
read -r -a old <<<"$(tmux show-options -gqv @promptgate-bound)"
for ((i = 0; i + 1 < ${#old[@]}; i += 2)); do
	if tmux list-keys -T "${old[i]}" -- "${old[i + 1]}" 2>/dev/null | grep -q promptgate; then
		tmux unbind-key -T "${old[i]}" -- "${old[i + 1]}"
	fi
done

bound=""
for i in "${!PG_ACTIONS[@]}"; do
	name=${PG_ACTIONS[i]%%|*}
	note=${PG_ACTIONS[i]#*|}
	if [ -z "$PG_PROBLEM" ] || [ "$name" = install ]; then
		cmd=(run-shell -b "$(pg_helper_line "$name")")
	else
		cmd=(display-message -d 15000 "$(pg_message_literal "$broken")")
	fi
	tmux set-option -s "command-alias[$((PG_ALIAS_INDEX + i))]" \
		"promptgate-$name=${cmd[0]} ${cmd[1]} $(pg_tmux_quote "${cmd[2]}")"
	key_var="PG_${name}_key"
	key=${!key_var}
	[ "$key" != none ] || continue
	tmux bind-key -N "$note" -T "$PG_key_table" -- "$key" "${cmd[@]}"
	bound+="$PG_key_table $key "
done
tmux set-option -gq @promptgate-bound "$bound"

# The watcher (status segment, done notices): start it now, and again when a
# client attaches should it have died. Control-mode clients (promptgate's own)
# do not count.
if [ -z "$PG_PROBLEM" ] && [ "$PG_watch" != off ]; then
	tmux set-hook -g "client-attached[$PG_HOOK_INDEX]" \
		"if-shell -F '#{?client_control_mode,,1}' $(pg_tmux_quote "run-shell -b $(pg_tmux_quote "$(pg_helper_line watch)")")"
	"$PG_HELPER" watch
else
	tmux set-hook -gu "client-attached[$PG_HOOK_INDEX]"
fi
exit 0
