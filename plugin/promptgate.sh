#!/usr/bin/env bash
# promptgate tmux plugin: what the keys run, through `run-shell -b`.
#
#   promptgate.sh ACTION PANE CLIENT     send | compose | paste | pick | broadcast | install
#   promptgate.sh prompt-done N CLIENT BUFFER   the send prompt was submitted (target %N)
#   promptgate.sh edit FILE              inside the compose popup: run the editor on FILE
#   promptgate.sh watch                  start the watcher unless one runs (promptgate.tmux, hook)
#
# It prints nothing on stdout and always exits 0: a run-shell command that prints
# or fails puts the pane in view mode, which then swallows keys. Results are
# reported with display-message. PROMPTGATE_PLUGIN_DEBUG=FILE keeps stderr there.
#
# The user's text never passes through a shell command line or a tmux format.
# The send prompt's reply goes into a paste buffer of its own (one per prompt,
# so two clients that answer at once each get their own), through the
# template's quoted %1% placeholder (tmux escapes " \ $ ; ~ in the reply); the
# helper saves the buffer to a file and hands it to `promptgate send -f FILE`.
# tmux 3.3 substitutes the template a second time with the reply as %2 (and the
# first %% inside the reply, unquoted), so there the placeholder is %2%, which
# only that second pass fills.

# shellcheck disable=SC2154 # PG_<option> variables are set by pg_load_options (printf -v)
PG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=plugin/lib.sh
. "$PG_DIR/plugin/lib.sh"

# The prompt type of the send prompt (tmux 3.3 to 3.7): its history, which
# would keep the prompts, is cleared after each one. tmux 3.8 knows only the
# command and search types; there the prompt is a search prompt (Tab completes
# no tmux command) and its history is left alone (clearing it would drop the
# user's own searches).
pg_prompt_type() {
	pg_tmux_version
	if [ "$PG_TMUX_VER" -ge 308 ]; then
		PG_PROMPT_TYPE=search PG_PROMPT_CLEAR=0
	else
		PG_PROMPT_TYPE=window-target PG_PROMPT_CLEAR=1
	fi
}

pg_need_bin() { # CLIENT
	pg_find_bin && return 0
	pg_msg "$1" "$PG_PROBLEM"
	return 1
}

pg_no_target() { # CLIENT
	local k
	k=$(pg_key_name pick)
	pg_msg "$1" "promptgate: no target: ${k:+pick one with $k, }mark a pane (prefix m), or make the agent the last pane"
}

pg_tmpdir() {
	mktemp -d "${TMPDIR:-/tmp}/promptgate.XXXXXX" && return 0
	pg_msg "${PG_CLIENT:-}" "promptgate: cannot make a temporary directory in ${TMPDIR:-/tmp}, nothing sent"
	return 1
}

# The editor popup: returns 0 when the editor exited 0 and left a non-blank FILE.
# Sets PG_EDIT_WHY otherwise. The popup starts in the origin pane's directory,
# which tmux expands from #{pane_current_path} itself: -d is a format, and a
# directory named `#(cmd)` must arrive as a name, not run.
pg_edit_popup() { # CLIENT ORIGIN FILE TITLE
	local client=$1 origin=$2 file=$3 title=$4
	local -a opts=(-c "$client" -t "$origin" -E -w "$PG_popup_width" -h "$PG_popup_height" -d '#{pane_current_path}')
	rm -f "$file.ok"
	pg_tmux_version
	# a popup title needs tmux 3.3
	[ "$PG_TMUX_VER" -lt 303 ] || opts+=(-T "$(pg_literal "$title")")
	tmux display-popup "${opts[@]}" "$(pg_sh_quote "$PG_HELPER") edit $(pg_sh_quote "$file")"
	if [ ! -e "$file.ok" ]; then
		PG_EDIT_WHY="the editor did not exit cleanly, nothing sent"
		return 1
	fi
	if ! grep -q '[^[:space:]]' "$file" 2>/dev/null; then
		PG_EDIT_WHY="empty prompt, nothing sent"
		return 1
	fi
	return 0
}

pg_action_send() { # ORIGIN CLIENT
	local origin=$1 client=$2 target desc label tmpl buf ph
	local -a opts=()
	pg_need_bin "$client" || return 0
	target=$(pg_target "$origin") || {
		pg_no_target "$client"
		return 0
	}
	desc=$(pg_describe "$target")
	label="promptgate → $target ${desc%%$'\t'*} (${desc#*$'\t'}): "
	buf="promptgate-prompt-$$-$RANDOM$RANDOM"
	pg_tmux_version
	ph="%1%"
	[ "$PG_TMUX_VER" -ne 303 ] || ph="%2%"
	# The template holds no other % (the helper's path comes from an option,
	# the client's name from the prompt's own client), so nothing else is
	# substituted.
	tmux set-option -gq @promptgate-helper "$(pg_sh_quote "$PG_HELPER")"
	tmpl="set-buffer -b $buf -- \"x$ph\" ; run-shell -b $(pg_tmux_quote "#{@promptgate-helper} prompt-done ${target#%} #{q:client_name} $buf")"
	if [ "$PG_TMUX_VER" -ge 303 ]; then
		# -b: do not hold this shell until the prompt is answered (3.3)
		pg_prompt_type
		opts=(-b -T "$PG_PROMPT_TYPE")
	fi
	tmux command-prompt "${opts[@]}" -t "$client" -p "$(pg_prompt_literal "$label")" "$tmpl"
}

pg_action_prompt_done() { # N CLIENT BUFFER
	local pane="%$1" client=$2 buf=$3 dir
	pg_tmux_version
	pg_prompt_type
	[ "$PG_TMUX_VER" -lt 303 ] || [ "$PG_PROMPT_CLEAR" = 0 ] ||
		tmux clear-prompt-history -T "$PG_PROMPT_TYPE" 2>/dev/null
	case $buf in promptgate-prompt-[0-9]*) ;; *) return 0 ;; esac
	dir=$(pg_tmpdir) || return 0
	tmux save-buffer -b "$buf" - >"$dir/reply" 2>/dev/null
	tmux delete-buffer -b "$buf" 2>/dev/null
	if ! pg_need_bin "$client"; then
		rm -rf "$dir"
		return 0
	fi
	# the reply came as "x" + the text (an empty buffer is refused by set-buffer)
	tail -c +2 "$dir/reply" >"$dir/prompt"
	if grep -q '[^[:space:]]' "$dir/prompt"; then
		pg_deliver "$pane" "$dir/prompt" "$client" send keep
	else
		pg_msg "$client" "promptgate: empty prompt, nothing sent"
	fi
	rm -rf "$dir"
}

pg_action_edit() { # FILE (runs inside the popup, on its terminal)
	local file=$1 editor
	editor=${PG_editor:-${EDITOR:-vi}}
	# like git: $EDITOR may hold arguments
	if sh -c "$editor \"\$1\"" promptgate-editor "$file"; then
		: >"$file.ok"
	fi
}

pg_action_compose() { # ORIGIN CLIENT
	local origin=$1 client=$2 target desc dir
	pg_need_bin "$client" || return 0
	target=$(pg_target "$origin") || {
		pg_no_target "$client"
		return 0
	}
	desc=$(pg_describe "$target")
	dir=$(pg_tmpdir) || return 0
	: >"$dir/prompt.md"
	if pg_edit_popup "$client" "$origin" "$dir/prompt.md" " promptgate → $target ${desc%%$'\t'*} "; then
		pg_deliver "$target" "$dir/prompt.md" "$client" compose keep
	else
		pg_msg "$client" "promptgate: $PG_EDIT_WHY"
	fi
	rm -rf "$dir"
}

# The buffer the paste key sends: the newest of promptgate-unsent and the
# automatic buffers (bufferN), whatever the release: tmux 3.4 and later leave
# named buffers out of the "top" buffer, 3.3 and earlier do not.
pg_paste_buffer() {
	tmux list-buffers -F '#{buffer_name}' 2>/dev/null | grep -m 1 -x -E 'promptgate-unsent|buffer[0-9]+'
}

pg_action_paste() { # ORIGIN CLIENT
	local origin=$1 client=$2 target dir buf
	pg_need_bin "$client" || return 0
	target=$(pg_target "$origin") || {
		pg_no_target "$client"
		return 0
	}
	dir=$(pg_tmpdir) || return 0
	buf=$(pg_paste_buffer)
	if [ -z "$buf" ] || ! tmux save-buffer -b "$buf" - >"$dir/buffer" 2>/dev/null; then
		pg_msg "$client" "promptgate: no paste buffer, nothing sent"
	elif ! grep -q '[^[:space:]]' "$dir/buffer"; then
		pg_msg "$client" "promptgate: the paste buffer is blank, nothing sent"
	else
		# a kept prompt that has now reached the agent is not kept again: a
		# second press (or prefix ]) must not type it twice
		local drop=""
		[ "$buf" != promptgate-unsent ] || drop=$buf
		pg_deliver "$target" "$dir/buffer" "$client" paste "" "$drop"
	fi
	rm -rf "$dir"
}

# "PANE<TAB>WINDOW-NAME" for every pane of the server (names as tmux prints
# them, with tmux 3.4's \$ undone and control characters shown as ?).
pg_window_names() {
	local out line name t=$'\t'
	# shellcheck disable=SC2016 # a literal $a: the probe for tmux 3.4's \$
	out=$(tmux display-message -p '$a' \; list-panes -a -F "#{pane_id}$t#{window_name}" 2>/dev/null) || return 0
	# shellcheck disable=SC2016
	case $out in
	'\$a'*) out=${out//"\\\$"/"\$"} ;;
	esac
	while IFS= read -r line; do
		case $line in %[0-9]*"$t"*) ;; *) continue ;; esac
		name=${line#*"$t"}
		printf '%s\t%s\n' "${line%%"$t"*}" "${name//[[:cntrl:]]/?}"
	done <<<"$out"
}

pg_action_pick() { # ORIGIN CLIENT
	local origin=$1 client=$2 rows names session current pane where agent state glyph
	local mark cmd msg wname i=0 keys="123456789abcdefghijklmnoprstuvwxyz" t=$'\t'
	local -a items
	pg_need_bin "$client" || return 0
	rows=$("$PG_BIN" status --format tsv 2>/dev/null)
	if [ -z "$rows" ]; then
		pg_msg "$client" "promptgate: no agent panes on this server"
		return 0
	fi
	session=$(tmux display-message -p -t "$origin" '#{session_id}')
	current=$(tmux display-message -p -t "$origin" '#{@promptgate-target}')
	names=$(pg_window_names)
	while IFS=$'\t' read -r pane _ where agent state glyph _; do
		[ "$i" -lt ${#keys} ] || break
		mark=" "
		[ "$pane" != "$current" ] || mark="*"
		wname=$(printf '%s\n' "$names" | grep -m 1 -F "$pane$t")
		wname=${wname#*"$t"}
		[ ${#wname} -le 24 ] || wname="${wname:0:23}…"
		msg="promptgate: target is $pane $agent ($where ${wname:-?})"
		# the menu expands the command as a format, then parses it; then
		# display-message expands its text as a format and through strftime
		cmd="set-option -t $(pg_tmux_quote "$session") @promptgate-target $(pg_tmux_quote "$pane") ; display-message -d $(pg_tmux_quote "$PG_display_ms") $(pg_tmux_quote "$(pg_message_literal "$msg")")"
		items+=("$(pg_literal "$(printf '%s%s %-5s %-7s %-13s %-9s %s' "$mark" "$glyph" "$pane" "$agent" "$state" "$where" "$wname")")" "${keys:i:1}" "$(pg_literal "$cmd")")
		i=$((i + 1))
	done <<<"$rows"
	items+=("")
	cmd="set-option -u -t $(pg_tmux_quote "$session") @promptgate-target ; display-message -d $(pg_tmux_quote "$PG_display_ms") 'promptgate: target is the marked or last pane'"
	items+=("  use the marked or last pane" "0" "$(pg_literal "$cmd")")
	tmux display-menu -c "$client" -t "$origin" -T "#[align=centre] promptgate target " -x C -y C "${items[@]}"
}

pg_action_broadcast() { # ORIGIN CLIENT
	local origin=$1 client=$2 session marked rows pane where agent state glyph
	local dir out rc n=0 consumed="" other="" skipped="" line p r why
	local -a targets
	pg_need_bin "$client" || return 0
	session=$(tmux display-message -p -t "$origin" '#{session_id}')
	marked=$(tmux list-panes -a -F '#{?pane_marked,#{pane_id},}' 2>/dev/null | grep . | head -n 1)
	rows=$("$PG_BIN" status --session "$session" --format tsv 2>/dev/null)
	while IFS=$'\t' read -r pane _ where agent state glyph _; do
		[ -n "$pane" ] || continue
		if [ "$pane" = "$origin" ] && [ "$pane" != "$marked" ]; then
			continue
		fi
		if [ "$state" = ready ]; then
			targets+=(-t "$pane")
			n=$((n + 1))
		else
			skipped+=" $pane ($state)"
		fi
	done <<<"$rows"
	if [ "$n" -eq 0 ]; then
		pg_msg "$client" "promptgate: no ready agent pane in this session${skipped:+; not ready:$skipped}"
		return 0
	fi
	dir=$(pg_tmpdir) || return 0
	: >"$dir/prompt.md"
	if ! pg_edit_popup "$client" "$origin" "$dir/prompt.md" " promptgate → $n ready agent pane$([ "$n" -eq 1 ] || printf s) "; then
		pg_msg "$client" "promptgate: $PG_EDIT_WHY"
		rm -rf "$dir"
		return 0
	fi
	# shellcheck disable=SC2086 # @promptgate-send-flags is a list of words
	out=$("$PG_BIN" send "${targets[@]}" ${PG_send_flags:-} -f "$dir/prompt.md" </dev/null 2>"$dir/err")
	rc=$?
	rm -rf "$dir"
	if [ "$n" -eq 1 ]; then
		# one target is a plain send: its line is "pane agent consumed details"
		if [ "$rc" -eq 0 ]; then
			consumed=" ${targets[1]}"
		else
			other=" ${targets[1]} (exit $rc)"
		fi
	else
		while IFS=$'\t' read -r p agent r why; do
			case $p in %*) ;; *) continue ;; esac
			if [ "$r" = consumed ]; then
				consumed+=" $p"
			else
				other+=" $p ($r${why:+: ${why%%:*}})"
			fi
		done <<<"$out"
	fi
	line="promptgate: broadcast to $n:"
	[ -z "$consumed" ] || line+=" consumed$consumed;"
	[ -z "$other" ] || line+=" not consumed$other;"
	[ -z "$skipped" ] || line+=" skipped$skipped;"
	pg_result "$client" "${line%;}"
}

pg_action_install() { # ORIGIN CLIENT
	local origin=$1 client=$2 cmd
	local -a opts=(-c "$client" -E -w 90% -h 80% -d "$(pg_literal "$PG_DIR")")
	cmd="bash $(pg_sh_quote "$PG_DIR/scripts/install.sh") --pause"
	pg_tmux_version
	[ "$PG_TMUX_VER" -lt 303 ] || opts+=(-T " promptgate: build ")
	if ! tmux display-popup "${opts[@]}" "$cmd" 2>/dev/null; then
		tmux split-window -t "$origin" -c "$(pg_literal "$PG_DIR")" "$cmd" 2>/dev/null ||
			pg_msg "$client" "promptgate: could not open a popup or a pane; run: cd $PG_DIR && cargo build --release --locked"
	fi
}

# Start the watcher unless it is off or one already runs (the watcher itself
# takes a per-server lock, so a second one exits at once).
pg_action_watch() {
	pg_find_bin || return 0
	case $PG_watch in
	off) return 0 ;;
	on) ;;
	*)
		[ "$PG_notify" = on ] || pg_status_uses_segment || return 0
		;;
	esac
	local -a detach=()
	command -v setsid >/dev/null 2>&1 && detach=(setsid)
	"${detach[@]}" "$PG_BIN" watch --interval "$PG_watch_interval" --display-ms "$PG_display_ms" \
		</dev/null >/dev/null 2>&1 &
}

# Does the status line show #{@promptgate-status} (or -all)?
pg_status_uses_segment() {
	{
		tmux show-options -gv status-left
		tmux show-options -gv status-right
		tmux show-options -g status-format
	} 2>/dev/null | grep -q '@promptgate-status'
}

main() {
	local action=${1:-} origin=${2:-} client=${3:-}
	PG_CLIENT=$client
	case $action in
	edit)
		pg_load_options ""
		pg_action_edit "$origin"
		return 0
		;;
	watch)
		pg_load_options ""
		pg_action_watch
		return 0
		;;
	esac
	case $action in
	prompt-done) pg_load_options "%$origin" ;;
	*) pg_load_options "$origin" ;;
	esac
	case $action in
	send) pg_action_send "$origin" "$client" ;;
	prompt-done) pg_action_prompt_done "$origin" "$client" "${4:-}" ;;
	compose) pg_action_compose "$origin" "$client" ;;
	paste) pg_action_paste "$origin" "$client" ;;
	pick) pg_action_pick "$origin" "$client" ;;
	broadcast) pg_action_broadcast "$origin" "$client" ;;
	install) pg_action_install "$origin" "$client" ;;
	*) pg_msg "$client" "promptgate: unknown plugin action '$action'" ;;
	esac
}

if [ "${1:-}" = edit ]; then
	# the popup's terminal: leave stdin/stdout/stderr to the editor
	main "$@"
else
	main "$@" </dev/null >/dev/null 2>>"${PROMPTGATE_PLUGIN_DEBUG:-/dev/null}"
fi
exit 0
