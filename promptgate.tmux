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

# First load of a fresh clone (TPM installs the plugin without building it):
# with cargo at hand, build in the background and say so; install.sh reloads
# this file when it is done, and the keys work from then on. Once per clone
# at a time (a directory as the lock); the build's output goes to a log.
pg_cargo() {
	command -v cargo >/dev/null 2>&1 || [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]
}
if [ -z "$PG_BIN" ] && [ -z "${PG_bin:-}" ] && [ "$PG_build_on_load" = on ] &&
	[ -f "$PG_DIR/scripts/install.sh" ] && [ ! -e "$PG_DIR/target/release/promptgate" ] &&
	pg_cargo && mkdir -p "$PG_DIR/target" 2>/dev/null &&
	mkdir "$PG_DIR/target/promptgate-building" 2>/dev/null; then
	log="$PG_DIR/target/promptgate-install.log"
	PG_PROBLEM="promptgate: building the binary (first load, a few minutes); log: $log"
	tmux run-shell -b "$(pg_literal "bash $(pg_sh_quote "$PG_DIR/scripts/install.sh") >$(pg_sh_quote "$log") 2>&1; rmdir $(pg_sh_quote "$PG_DIR/target/promptgate-building")")"
	tmux display-message -d 15000 "$(pg_message_literal "$PG_PROBLEM")" 2>/dev/null
fi

# Our bindings in `list-keys` output, as "TABLE KEY" (KEY quoted as tmux
# prints it): a key whose command is one this file binds. The whole list is
# read: tmux 3.7 shows `list-keys -T prefix A` (one key asked for by name) as a
# message instead of printing it.
pg_our_bindings() {
	awk '
		/promptgate\.sh'"'"' (send|compose|paste|pick|broadcast|install) #\{pane_id\} #\{q:client_name\}"$/ ||
		/ display-message -d 15000 "promptgate: / {
			for (i = 2; i < NF; i++) if ($i == "-T") { print $(i + 1) " " $(i + 2); break }
		}'
}

# Drop the keys the last load bound (a key option may have changed since): each
# key in @promptgate-bound that still runs one of our commands. A key bound to
# an alias by the user (`bind -n M-a promptgate-send`, which tmux stores
# expanded) is not in that list and stays. The keys are unbound as list-keys
# prints them (quoted for tmux's parser), through source-file.
read -r -a old <<<"$(pg_display "" '#{@promptgate-bound}')"
if [ ${#old[@]} -gt 1 ] && unbind=$(mktemp "${TMPDIR:-/tmp}/promptgate-unbind.XXXXXX"); then
	tmux list-keys 2>/dev/null | pg_our_bindings | while read -r table key; do
		for ((i = 0; i + 1 < ${#old[@]}; i += 2)); do
			if [ "${old[i]}" = "$table" ] && [ "${old[i + 1]}" = "$key" ]; then
				printf 'unbind-key -T %s %s\n' "$table" "$key"
			fi
		done
	done >"$unbind"
	[ ! -s "$unbind" ] || tmux source-file "$unbind"
	rm -f "$unbind"
fi
before=$(tmux list-keys 2>/dev/null | pg_our_bindings | sort)

# A key in the root table is pressed without the prefix: a bare one (`B`, `T`,
# `Enter`, `F5`) would be eaten from everything typed in every pane. There a
# key must carry C- or M- (or ^), and not be C-m, C-i or C-[ (Enter, Tab and
# Escape); any other is not bound and said (pg_has_modifier, plugin/lib.sh).
refused=""
for i in "${!PG_ACTIONS[@]}"; do
	name=${PG_ACTIONS[i]%%|*}
	note=${PG_ACTIONS[i]#*|}
	if [ -z "$PG_PROBLEM" ] || [ "$name" = install ]; then
		cmd=(run-shell -b "$(pg_helper_line "$name")")
	else
		cmd=(display-message -d 15000 "$(pg_message_literal "$PG_PROBLEM")")
	fi
	# the alias is a command line: every word of the command, quoted for tmux
	line=${cmd[0]}
	for word in "${cmd[@]:1}"; do
		line+=" $(pg_tmux_quote "$word")"
	done
	tmux set-option -s "command-alias[$((PG_ALIAS_INDEX + i))]" "promptgate-$name=$line"
	key_var="PG_${name}_key"
	key=${!key_var}
	[ "$key" != none ] || continue
	if [ "$PG_key_table" = root ] && ! pg_has_modifier "$key"; then
		refused+="${refused:+, }@promptgate-$name-key $key$(pg_key_alias "$key")"
		continue
	fi
	tmux bind-key -N "$note" -T "$PG_key_table" -- "$key" "${cmd[@]}"
done
if [ -n "$refused" ]; then
	tmux display-message -d 15000 "$(pg_message_literal "promptgate: not bound in the root table, where a key needs C- or M- (it would eat typing): $refused. Set each to a key like M-a, or to none")" 2>/dev/null
fi
# Note what this load bound, as list-keys prints it: the bindings of ours that
# were not there before.
bound=$(comm -13 <(printf '%s\n' "$before") <(tmux list-keys 2>/dev/null | pg_our_bindings | sort) | tr '\n' ' ')
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
