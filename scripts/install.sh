#!/usr/bin/env bash
# install.sh: build the promptgate binary for the tmux plugin.
#
#   scripts/install.sh [--pause] [--link]
#
# 1. tmux: if it is missing, installs it with apt-get (Debian/Ubuntu, as root or
#    with sudo); elsewhere it says what to install and stops.
# 2. Builds target/release/promptgate with `cargo build --release --locked` (cargo
#    fetches the crates pinned in Cargo.lock from crates.io if they are not
#    cached; nothing else is downloaded, and no prebuilt binary is).
# 3. With --link: a symlink ~/.local/bin/promptgate to the built binary, so
#    that a bare `promptgate` runs it.
# 4. Inside tmux, where tmux loaded the plugin from this copy: reloads it
#    (promptgate.tmux) so that the keys work.
#
# Every step is printed before it runs. --pause waits for Enter at the end (the
# plugin's install key runs it in a popup).

set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PAUSE=0 LINK=0
for a in "$@"; do
	case $a in
	--pause) PAUSE=1 ;;
	--link) LINK=1 ;;
	*)
		printf 'install.sh: unknown flag %s (--pause, --link)\n' "$a" >&2
		exit 2
		;;
	esac
done

say() { printf 'install.sh: %s\n' "$*"; }

run() {
	printf '+ %s\n' "$*"
	"$@"
}

finish() {
	local rc=$1
	if [ "$rc" -eq 0 ]; then
		say "done"
	else
		say "FAILED (exit $rc)"
	fi
	if [ "$PAUSE" -eq 1 ]; then
		printf 'Press Enter to close. '
		read -r _ || true
	fi
	exit "$rc"
}

if ! command -v tmux >/dev/null 2>&1; then
	if command -v apt-get >/dev/null 2>&1; then
		sudo=()
		[ "$(id -u)" -eq 0 ] || sudo=(sudo)
		say "tmux is missing: installing it with apt-get"
		run "${sudo[@]}" apt-get update || finish 1
		run "${sudo[@]}" apt-get install -y tmux || finish 1
	else
		say "tmux is missing: install tmux 3.2 or later with your package manager, then run this again"
		finish 1
	fi
fi
say "$(tmux -V)"

# rustup puts cargo in ~/.cargo/bin, which a tmux started before the login
# shell's PATH was set (or from a desktop launcher) does not have.
if ! command -v cargo >/dev/null 2>&1; then
	if [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
		say "cargo is not on this PATH but is in ${CARGO_HOME:-$HOME/.cargo}/bin: using it. To fix the PATH tmux passes on, add that directory to PATH in your shell profile and restart tmux, or run: tmux set-environment -g PATH \"${CARGO_HOME:-$HOME/.cargo}/bin:\$PATH\""
		PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
	else
		say "cargo is missing (not on PATH, not in ${CARGO_HOME:-$HOME/.cargo}/bin): install a Rust toolchain (https://rustup.rs or your package manager), then run this again"
		finish 1
	fi
fi

cd "$ROOT" || finish 1
# into this clone's target/ whatever CARGO_TARGET_DIR or build.target-dir say:
# the plugin and the README run target/release/promptgate
run cargo build --release --locked --target-dir "$ROOT/target" || finish 1
run "$ROOT/target/release/promptgate" --version || finish 1
# a first-load build that failed is retried by this run, and it went well
rm -f "$ROOT/target/promptgate-build-failed"

# --link: put the binary on PATH for every later `promptgate` (a symlink in
# ~/.local/bin, which most login shells have on PATH).
if [ "$LINK" -eq 1 ]; then
	run mkdir -p "$HOME/.local/bin" || finish 1
	run ln -sf "$ROOT/target/release/promptgate" "$HOME/.local/bin/promptgate" || finish 1
	case ":$PATH:" in
	*":$HOME/.local/bin:"*) ;;
	*) say "$HOME/.local/bin is not on your PATH: add it in your shell profile" ;;
	esac
fi

# Inside tmux, the plugin is reloaded only when it is this copy that tmux loaded
# (its keys run this copy's plugin/promptgate.sh): a try-out clone never takes
# the keys over from the copy tmux.conf loads (TPM's ~/.tmux/plugins/...), nor
# binds keys where no plugin was loaded.
if [ -n "${TMUX:-}" ]; then
	if tmux show-options -s command-alias 2>/dev/null | grep -qF "$ROOT/plugin/promptgate.sh"; then
		say "reloading the tmux plugin"
		run tmux run-shell "$ROOT/promptgate.tmux" || finish 1
		version=$("$ROOT/target/release/promptgate" --version | head -n 1)
		tmux display-message -d 8000 "promptgate: built $version; the keys work now" 2>/dev/null
	else
		say "the tmux plugin is not loaded from this copy ($ROOT): left as it is. To use this copy's keys, add to tmux.conf: run-shell $ROOT/promptgate.tmux"
	fi
fi
finish 0
