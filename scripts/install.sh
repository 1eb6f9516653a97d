#!/usr/bin/env bash
# install.sh: build the promptgate binary for the tmux plugin.
#
#   scripts/install.sh [--pause]
#
# 1. tmux: if it is missing, installs it with apt-get (Debian/Ubuntu, as root or
#    with sudo); elsewhere it says what to install and stops.
# 2. Builds target/release/promptgate with `cargo build --release --locked` (cargo
#    fetches the crates pinned in Cargo.lock from crates.io if they are not
#    cached; nothing else is downloaded, and no prebuilt binary is).
# 3. Inside tmux: reloads the plugin (promptgate.tmux) so that the keys work.
#
# Every step is printed before it runs. --pause waits for Enter at the end (the
# plugin's install key runs it in a popup).

set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PAUSE=0
[ "${1:-}" = --pause ] && PAUSE=1

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

if ! command -v cargo >/dev/null 2>&1; then
	say "cargo is missing: install a Rust toolchain (https://rustup.rs or your package manager), then run this again"
	finish 1
fi

cd "$ROOT" || finish 1
run cargo build --release --locked || finish 1
run "$ROOT/target/release/promptgate" --version || finish 1

if [ -n "${TMUX:-}" ]; then
	say "reloading the tmux plugin"
	run tmux run-shell "$ROOT/promptgate.tmux" || finish 1
fi
finish 0
