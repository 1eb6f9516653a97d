# capture-lib.sh: what scripts/capture-turns.sh and scripts/capture-dialogs.sh share (sourced, not run).
# Needs PG (the promptgate binary), sock and pane (the agent's private tmux server and pane) and
# CAPTURE_NAME (the script's name, for its warnings).

# the state promptgate reads in the pane (third field of `promptgate state`)
state() { "$PG" -L "$sock" state -t "$pane" 2>/dev/null | cut -f3; }
screen() { tmux -L "$sock" capture-pane -p -t "$pane"; }
# wait_for SECONDS TEST...: poll until the command succeeds
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}
is_state() { [[ $(state) == "$1" ]]; }
shows() { screen | grep -q -- "$1"; }
send() {
	"$PG" -L "$sock" send -t "$pane" --wait-busy --timeout 90 -- "$1" >/dev/null ||
		echo "$CAPTURE_NAME: warning: the send of '$1' exited $?" >&2
}
# say LINE: a line on stdout and on stderr (a misread; `tee /dev/stderr` would truncate a stderr
# redirected to a file)
say() {
	echo "$1"
	echo "$1" >&2
}
