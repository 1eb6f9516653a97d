# shellcheck shell=bash disable=SC2034,SC2154 # PG_* are set by pg_load_options with printf -v
# promptgate tmux plugin: functions shared by promptgate.tmux and plugin/promptgate.sh.
# Needs PG_DIR (the plugin's root). Works with bash 3.2 (macOS): no associative arrays.

# shellcheck source=plugin/options.sh
. "$PG_DIR/plugin/options.sh"

PG_HELPER="$PG_DIR/plugin/promptgate.sh"

# Expand a format with `display-message -p` ($1: target or "", $2: format) and
# print it with the one escape some releases add undone: tmux 3.4 prints `$`
# before a letter, `_` or `{` as `\$`. Fields are best split on TAB, which no
# release escapes (control bytes come out as octal escapes on 3.4 and later).
pg_display() {
	local out t=$'\t'
	if [ -n "$1" ]; then
		out=$(tmux display-message -p -t "$1" "\$a$t$2" 2>/dev/null) || return 1
	else
		out=$(tmux display-message -p "\$a$t$2" 2>/dev/null) || return 1
	fi
	case $out in
	"\\\$a$t"*)
		out=${out#*"$t"}
		out=${out//"\\\$"/"\$"}
		;;
	*) out=${out#*"$t"} ;;
	esac
	printf '%s\n' "$out"
}

# Read every @promptgate-* option in one tmux call ($1: a pane whose session
# options apply; global options otherwise). Sets PG_<name> for each entry.
pg_load_options() {
	local spec fmt="" out name value t=$'\t'
	for spec in "${PG_OPTIONS[@]}"; do
		fmt+="#{@promptgate-${spec%%=*}}$t"
	done
	out=$(pg_display "${1:-}" "$fmt") || out=""
	# split on TAB by hand: `read` would merge empty fields
	for spec in "${PG_OPTIONS[@]}"; do
		name=${spec%%=*}
		value=${out%%"$t"*}
		case $out in *"$t"*) out=${out#*"$t"} ;; *) out="" ;; esac
		[ -n "$value" ] || value=${spec#*=}
		printf -v "PG_${name//-/_}" '%s' "$value"
	done
}

# Quote one word for sh.
pg_sh_quote() {
	local s=$1 q="'\\''"
	printf "'%s'" "${s//\'/$q}"
}

# Quote one argument for tmux's command parser (double quotes: \ " $ escaped).
pg_tmux_quote() {
	local s=$1
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//\$/\\\$}
	printf '"%s"' "$s"
}

# Text for something tmux expands as a format (menu labels, titles): # -> ##.
pg_literal() {
	printf '%s' "${1//#/##}"
}

# Text for display-message, which also goes through strftime: # -> ##, % -> %%.
pg_message_literal() {
	local s=${1//#/##}
	printf '%s' "${s//%/%%}"
}

# The run-shell command line of an action: the helper, the action, and the
# pane and client the key was pressed in (expanded by run-shell).
pg_helper_line() {
	printf '%s %s #{pane_id} #{q:client_name}' "$(pg_literal "$(pg_sh_quote "$PG_HELPER")")" "$1"
}

# The version in the plugin's Cargo.toml.
pg_plugin_version() {
	[ -r "$PG_DIR/Cargo.toml" ] || return 0
	sed -n 's/^version *= *"\([^"]*\)".*/\1/p' "$PG_DIR/Cargo.toml" | head -n 1
}

# Find the binary: @promptgate-bin, then $PATH, then <plugin>/target/release,
# then ~/.cargo/bin and ~/.local/bin (where the installs put it; tmux's PATH
# may lack them).
# Sets PG_BIN, or PG_PROBLEM (a message: what is wrong, then what to do, the
# fix first so that an 80-column status line shows it) and returns 1.
pg_find_bin() {
	local want have where build rebuild k
	PG_BIN="" PG_PROBLEM=""
	k=$(pg_key_name install)
	build="cargo build --release --locked in $PG_DIR"
	rebuild=$build
	if [ -n "$k" ]; then
		build="$k builds it (cargo build --release --locked)"
		rebuild="$k builds it"
	fi
	if [ -n "${PG_bin:-}" ]; then
		PG_BIN=${PG_bin/#\~/$HOME}
		if [ ! -f "$PG_BIN" ] || [ ! -x "$PG_BIN" ]; then
			PG_PROBLEM="promptgate: fix or unset @promptgate-bin: no program at $PG_BIN"
			PG_BIN=""
			return 1
		fi
		where="@promptgate-bin"
	elif command -v promptgate >/dev/null 2>&1; then
		PG_BIN=$(command -v promptgate)
		where="\$PATH"
	elif [ -x "$PG_DIR/target/release/promptgate" ]; then
		PG_BIN="$PG_DIR/target/release/promptgate"
		where=""
	elif [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/promptgate" ]; then
		# `cargo install --path .` put it there; tmux's PATH may lack the directory
		PG_BIN="${CARGO_HOME:-$HOME/.cargo}/bin/promptgate"
		where="\$PATH"
	elif [ -x "$HOME/.local/bin/promptgate" ]; then
		# scripts/install.sh --link put it there
		PG_BIN="$HOME/.local/bin/promptgate"
		where="\$PATH"
	else
		PG_PROBLEM="promptgate: not built. $build"
		return 1
	fi
	want=$(pg_plugin_version)
	have=$("$PG_BIN" --version 2>/dev/null | sed -n 's/^promptgate \([^ ]*\).*/\1/p' | head -n 1)
	if [ -n "$want" ] && [ "$have" != "$want" ]; then
		case $where in
		@*) PG_PROBLEM="promptgate: update or unset @promptgate-bin: version ${have:-unknown}, plugin $want: $PG_BIN" ;;
		\$*) PG_PROBLEM="promptgate: update the promptgate on \$PATH: version ${have:-unknown}, plugin $want: $PG_BIN" ;;
		*) PG_PROBLEM="promptgate: rebuild: binary version ${have:-unknown}, plugin $want. $rebuild" ;;
		esac
		PG_BIN=""
		return 1
	fi
	return 0
}

# Does key $1 carry C- or M- (or ^, tmux's C-)? In the root table only such
# a key is bound: a bare one would be eaten from what is typed in every pane.
# C-m, C-i and C-[ do not count: they are the bytes Enter, Tab and Escape send.
# tmux 3.2a to 3.4 store them as those keys, which the binding then eats in
# every pane; later releases keep them apart, but a terminal without extended
# keys sends the same byte for both.
pg_has_modifier() {
	case $1 in
	[Cc]-[MmIi[] | ^[MmIi[]) return 1 ;;
	[CcMm]-?* | [Ss]-[CcMm]-?* | ^?*) return 0 ;;
	*) return 1 ;;
	esac
}

# What tmux makes of key $1 where it is not the name it stores: C-m is Enter.
pg_key_alias() {
	case $1 in
	[Cc]-[Mm] | ^[Mm]) printf ' (tmux reads it as Enter)' ;;
	[Cc]-[Ii] | ^[Ii]) printf ' (tmux reads it as Tab)' ;;
	[Cc]-[[] | ^[[]) printf ' (tmux reads it as Escape)' ;;
	esac
}

# How a user presses an action's key ("prefix T"), or "" when it is not bound.
pg_key_name() {
	local var="PG_${1}_key" key
	key=${!var:-none}
	[ "$key" != none ] || return 0
	if [ "${PG_key_table:-prefix}" = root ] && ! pg_has_modifier "$key"; then
		return 0
	fi
	if [ "${PG_key_table:-prefix}" = prefix ]; then
		printf 'prefix %s' "$key"
	elif [ "${PG_key_table}" = root ]; then
		printf '%s' "$key"
	else
		printf '%s (table %s)' "$key" "$PG_key_table"
	fi
}

# Show a message on a client (on tmux's choice of client when that one is gone).
pg_msg() {
	local client=$1 text
	text=$(pg_message_literal "$2")
	if [ -z "$client" ] || ! tmux display-message -c "$client" -d "${PG_display_ms:-4000}" -- "$text" 2>/dev/null; then
		tmux display-message -d "${PG_display_ms:-4000}" -- "$text" 2>/dev/null
	fi
	return 0
}
