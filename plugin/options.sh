# shellcheck shell=bash disable=SC2034 # the variables are read by the files that source this one
# promptgate tmux plugin: every option and its default, in one place.
#
# Entry NAME=DEFAULT is the tmux option @promptgate-NAME, read into the shell
# variable PG_NAME (dashes become underscores). An option that is unset or
# empty takes its default. A key set to `none` is not bound.

PG_OPTIONS=(
	"bin="                # path to the promptgate binary; empty: $PATH, then <plugin>/target/release
	"key-table=prefix"    # the key table of the bindings (`root` binds them without the prefix)
	"send-key=A"          # a one-line prompt (command-prompt)
	"compose-key=V"       # $EDITOR in a popup
	"paste-key=B"         # the top paste buffer
	"pick-key=T"          # choose the target from a menu of agent panes
	"broadcast-key=Q"     # one composed prompt to every ready agent pane of the session
	"install-key=M-i"     # build the binary (scripts/install.sh) in a popup
	"build-on-load=on"    # no binary on load (a fresh TPM clone): build it in the background
	"editor="             # empty: $EDITOR, then vi
	"popup-width=80%"
	"popup-height=60%"
	"send-flags="         # extra flags for `promptgate send`, e.g. --wait-busy
	"display-ms=4000"     # how long result messages stay
	"watch=auto"          # the watcher: auto (when notify is on or the status line uses it), on, off
	"watch-interval=1000" # ms between the watcher's polls
	"notify=off"          # a message when an agent pane goes from busy to ready
	"bell=off"            # ... and ring the terminal bell
)

# The actions, in binding order: NAME|NOTE (shown by `prefix ?`). Each is also the
# command alias promptgate-NAME.
PG_ACTIONS=(
	"send|promptgate: type a one-line prompt for the agent"
	"compose|promptgate: write a prompt in your editor and send it"
	"paste|promptgate: send the top paste buffer to the agent"
	"pick|promptgate: choose the target agent pane"
	"broadcast|promptgate: send one prompt to every ready agent of the session"
	"install|promptgate: build the promptgate binary"
)

# Fixed array indices, so that a reload replaces instead of appending:
# command-alias[7750..7755] (server option) and client-attached[7750] (global hook).
PG_ALIAS_INDEX=7750
PG_HOOK_INDEX=7750

# State the plugin keeps in tmux (not settings):
#   @promptgate-target      (session) the picked target pane id
#   @promptgate-bound       (global) "TABLE KEY ..." bound by the last load (keys as list-keys prints them;
#                           a load unbinds the keys that carry a note of PG_ACTIONS, not this list)
#   @promptgate-helper      (global) plugin/promptgate.sh, quoted for sh (the send prompt's template runs it)
#   @promptgate-status      (session) the status segment, kept by the watcher
#   @promptgate-status-all  (global) the same for every session
#   @promptgate-result-until (global) epoch ms until which a key's result holds the status line (the watcher holds done notices until then)
