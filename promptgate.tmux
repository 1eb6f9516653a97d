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
# at a time (a directory as the lock); the build's output goes to a log. The
# build starts at the end of this load, so that its reload never runs while
# this one binds the keys.
pg_cargo() {
	command -v cargo >/dev/null 2>&1 || [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]
}
# A build that failed is not started again on each load (a marker says so, and
# the keys say where its log is); the install key runs it again, and a build
# that goes well removes the marker.
log="$PG_DIR/target/promptgate-install.log"
failed="$PG_DIR/target/promptgate-build-failed"
if [ -z "$PG_BIN" ] && [ -e "$failed" ]; then
	PG_PROBLEM="promptgate: the first-load build failed; log: $log. $(pg_key_name install) builds it again"
fi
if [ -z "$PG_BIN" ] && [ -z "${PG_bin:-}" ] && [ "$PG_build_on_load" = on ] &&
	[ -f "$PG_DIR/scripts/install.sh" ] && [ ! -e "$PG_DIR/target/release/promptgate" ] &&
	[ ! -e "$failed" ] && pg_cargo && mkdir -p "$PG_DIR/target" 2>/dev/null &&
	mkdir "$PG_DIR/target/promptgate-building" 2>/dev/null; then
	PG_PROBLEM="promptgate: building the binary (first load, a few minutes); log: $log"
	# on success install.sh reloads this file; on failure the marker, and a
	# reload, so the keys say that it failed
	build="bash $(pg_sh_quote "$PG_DIR/scripts/install.sh") >$(pg_sh_quote "$log") 2>&1 || : >$(pg_sh_quote "$failed"); rmdir $(pg_sh_quote "$PG_DIR/target/promptgate-building"); [ ! -e $(pg_sh_quote "$failed") ] || tmux run-shell $(pg_sh_quote "$PG_DIR/promptgate.tmux")"
else
	build=""
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

# A key as one argument of a tmux command line given as arguments, where a
# word that ends in ; ends the command (`M-;` is passed as `M-\;`).
pg_tmux_arg() {
	case $1 in
	*\;) printf '%s\\;' "${1%;}" ;;
	*) printf '%s' "$1" ;;
	esac
}

# Is $1 the note of one of the plugin's keys (shown by `prefix ?`)? It tells
# the plugin's bindings from the user's: a key the user binds, even to one of
# the aliases (which tmux stores expanded, as the same command), has no note
# of ours, because a key that is bound again loses its note.
pg_is_our_note() {
	local a
	for a in "${PG_ACTIONS[@]}"; do
		[ "$1" != "${a#*|}" ] || return 0
	done
	return 1
}

PG_PROBE=promptgate-probe

# `list-keys ARGS -T TABLE`, with two keys no one presses (User998 and
# User999, which the list leaves out) bound in TABLE meanwhile: tmux 3.7
# shows a list of one binding as a message instead of printing it.
pg_list_table() { # TABLE ARGS...
	local t=$1
	shift
	tmux bind-key -N "$PG_PROBE" -T "$t" User998 display-message \; \
		bind-key -N "$PG_PROBE" -T "$t" User999 display-message \; \
		list-keys "$@" -T "$t" \; \
		unbind-key -T "$t" User998 \; unbind-key -T "$t" User999 2>/dev/null |
		grep -v -e User998 -e User999
}

# tmux's own names of key $1, as "RAW<TAB>QUOTED": RAW as tmux stores it (C-m
# is Enter on 3.2a to 3.4, ^A is C-a), QUOTED as `list-keys` prints it. Bound
# for a moment in a table of its own, which goes when it is empty. Fails for
# a key tmux does not know.
pg_key_names() {
	local out raw quoted n="$PG_PROBE-key"
	out=$(tmux bind-key -N "$PG_PROBE" -T "$PG_PROBE" User998 display-message \; \
		bind-key -N "$PG_PROBE" -T "$PG_PROBE" User999 display-message \; \
		bind-key -N "$n" -T "$PG_PROBE" -- "$(pg_tmux_arg "$1")" display-message "$n" \; \
		list-keys -N -P '' -T "$PG_PROBE" \; list-keys -T "$PG_PROBE" 2>/dev/null)
	tmux unbind-key -a -T "$PG_PROBE" 2>/dev/null
	raw=$(printf '%s\n' "$out" | awk -v n="$n" 'NF == 2 && $2 == n { print $1 }')
	quoted=$(printf '%s\n' "$out" | awk -v n="$n" '$1 == "bind-key" && $NF == n {
		for (i = 2; i < NF; i++) if ($i == "-T") { print $(i + 2); break } }')
	[ -n "$raw" ] && [ -n "$quoted" ] || return 1
	printf '%s\t%s\n' "$raw" "$quoted"
}

# "TABLE KEY" of each line of `list-keys` output (KEY as list-keys prints it).
pg_table_keys() {
	awk '{ for (i = 2; i < NF; i++) if ($i == "-T") { print $(i + 1) " " $(i + 2); break } }'
}

# tmux's own default bindings, as list-keys prints them, each on one line with
# single spaces: from a server of our own, started with no configuration and
# killed once it has listed them. A key bound as tmux binds it is not the
# user's: the plugin binds over it, and gives it back when it lets it go
# (next-3.8 binds T, the pick key).
defaults=$(tmux -L "promptgate-defaults-$$" -f /dev/null start-server \; list-keys \; kill-server 2>/dev/null |
	awk '{ $1 = $1; print }')

# Drop the plugin's keys of the last load (a key option may have changed
# since): in each table where a key runs one of our commands, the keys that
# still carry our note. A key the user bound, to an alias or to anything
# else, has none and stays. A key that tmux binds by default gets its default
# binding back.
keys_before=$(tmux list-keys 2>/dev/null | pg_table_keys | sort)
for table in $(tmux list-keys 2>/dev/null | pg_our_bindings | awk '{ print $1 }' | sort -u); do
	pg_list_table "$table" -N -P '' | while read -r key note; do
		if pg_is_our_note "$note"; then
			tmux unbind-key -T "$table" -- "$(pg_tmux_arg "$key")"
		fi
	done
done
restore=$(comm -23 <(printf '%s\n' "$keys_before") <(tmux list-keys 2>/dev/null | pg_table_keys | sort) |
	while read -r table key; do
		printf '%s\n' "$defaults" | awk -v t="$table" -v k="$key" '
			{ for (i = 2; i < NF; i++) if ($i == "-T") { if ($(i + 1) == t && $(i + 2) == k) print; break } }'
	done)
[ -z "$restore" ] || printf '%s\n' "$restore" | tmux source-file -
# The keys now bound in the table, as list-keys prints them, but for those
# bound as tmux binds them by default: the user's. The plugin binds none of
# them over (it would be lost for good): it says so.
taken=$(tmux list-keys 2>/dev/null | awk '{ $1 = $1; print }' | grep -Fvx -e "$defaults" |
	awk -v t="$PG_key_table" '{
	for (i = 2; i < NF; i++) if ($i == "-T") { if ($(i + 1) == t) print $(i + 2); break } }')

# A key in the root table is pressed without the prefix: a bare one (`B`, `T`,
# `Enter`, `F5`) would be eaten from everything typed in every pane. There a
# key must carry C- or M- (or ^), and not be C-m, C-i or C-[ (Enter, Tab and
# Escape); any other is not bound and said (pg_has_modifier, plugin/lib.sh).
refused="" busy="" invalid="" bound=""
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
	if ! names=$(pg_key_names "$key"); then
		invalid+="${invalid:+, }@promptgate-$name-key $key"
		continue
	fi
	raw=${names%%"	"*}
	quoted=${names#*"	"}
	if [ "$PG_key_table" = root ] && { ! pg_has_modifier "$key" || ! pg_has_modifier "$raw"; }; then
		refused+="${refused:+, }@promptgate-$name-key $key$(pg_key_alias "$key")"
		continue
	fi
	if printf '%s\n' "$taken" | grep -Fxq -e "$quoted"; then
		busy+="${busy:+, }@promptgate-$name-key $key"
		continue
	fi
	tmux bind-key -N "$note" -T "$PG_key_table" -- "$(pg_tmux_arg "$key")" "${cmd[@]}"
	taken+=$'\n'"$quoted"
	bound+="$PG_key_table $quoted "
done
said=""
if [ -n "$refused" ]; then
	said+="${said:+; }not bound in the root table, where a key needs C- or M- (it would eat typing): $refused. Set each to a key like M-a, or to none"
fi
if [ -n "$busy" ]; then
	said+="${said:+; }not bound over a key that runs something else in table $PG_key_table: $busy. Unbind it first, or set the option to another key or none"
fi
if [ -n "$invalid" ]; then
	said+="${said:+; }not a key tmux knows: $invalid"
fi
# Said to the clients attached now; with none (tmux is starting: the load runs
# before the first client attaches, and a message then is lost), once the first
# one attaches (a hook that unsets itself).
pg_say() {
	local msg
	msg=$(pg_message_literal "$1")
	if [ -n "$(tmux list-clients -F '#{client_name}' 2>/dev/null)" ]; then
		tmux display-message -d 15000 "$msg" 2>/dev/null
	else
		tmux set-hook -g "client-attached[$((PG_HOOK_INDEX + 1))]" \
			"display-message -d 15000 $(pg_tmux_quote "$msg") ; set-hook -gu client-attached[$((PG_HOOK_INDEX + 1))]"
	fi
}
tmux set-hook -gu "client-attached[$((PG_HOOK_INDEX + 1))]" 2>/dev/null
if [ -n "$said" ]; then
	pg_say "promptgate: $said"
fi
# Note what this load bound, as list-keys prints it (for the user; the next
# load goes by the notes).
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
if [ -n "$build" ]; then
	tmux run-shell -b "$(pg_literal "$build")"
fi
if [ -n "$build" ] || [ -e "$failed" ] && [ -z "$PG_BIN" ]; then
	[ -n "$said" ] || pg_say "$PG_PROBLEM"
fi
exit 0
