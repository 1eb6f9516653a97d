#!/usr/bin/env bash
# tmux-matrix.sh: run the test suites that touch tmux against each tmux release.
#
#   scripts/tmux-matrix.sh                      every release: 3.2a 3.3a(system) 3.4 3.5a 3.6a 3.7c next-3.8
#   scripts/tmux-matrix.sh 3.4 3.7c             only these
#   scripts/tmux-matrix.sh --suites live,plugin 3.5a
#   scripts/tmux-matrix.sh --list               the releases it can build
#   scripts/tmux-matrix.sh --build 3.4 3.7c     only build these (into the cache), run nothing
#   PROMPTGATE_REAL_AGENTS=1 scripts/tmux-matrix.sh --suites real_agents:claude_120x40 3.4 3.7c
#                                               a suite's tests whose names contain a filter
#   scripts/tmux-matrix.sh --suites queue:~killed_watcher_never next-3.8
#                                               a suite without the tests whose names contain it
#
# Each release is built once from tmux's own sources (../shared/tmux/tmux-VER.tar.gz,
# or $PROMPTGATE_TMUX_SOURCES) into $PROMPTGATE_TMUX_CACHE (default
# ~/.cache/promptgate/tmux/VER) and reused after that. `system` is the distro's
# tmux (/usr/bin/tmux). For each release the suites run with that release's bin/
# first in PATH, so the tests, the promptgate binary and the plugin's shell (which
# the tmux server runs with the PATH it was started with) all reach the same
# tmux: a client of one release cannot talk to a server of another.
#
# The suites (default: cli, tmux_release, live, fanout, queue, plugin, fake_agent_screens,
# tmux_stress) are cargo test targets, run with their opt-in (#[ignore]) tests included.
# The summary table goes to stdout and to target/tmux-matrix.txt; the exit status is non-zero when any suite failed.
# Needs: cargo, and to build: gcc make pkg-config autoconf automake bison
# libevent-dev libncurses-dev (apt-get install them; CI's .ci/run does).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SOURCES=${PROMPTGATE_TMUX_SOURCES:-$ROOT/../shared/tmux}
CACHE=${PROMPTGATE_TMUX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/promptgate/tmux}
SUITES=cli,tmux_release,live,fanout,queue,plugin,fake_agent_screens,tmux_stress
DEFAULT_RELEASES="3.2a system 3.4 3.5a 3.6a 3.7c next-3.8"

die() { echo "tmux-matrix: $*" >&2; exit 2; }

releases=()
build_only=0
while [ $# -gt 0 ]; do
	case $1 in
	--build) build_only=1; shift ;;
	--suites) SUITES=${2:?--suites needs a list}; shift 2 ;;
	--suites=*) SUITES=${1#--suites=}; shift ;;
	--list) ls "$SOURCES" 2>/dev/null | sed -n 's/^tmux-\(.*\)\.tar\.gz$/\1/p'; echo system; exit 0 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) releases+=("$1"); shift ;;
	esac
done
[ ${#releases[@]} -gt 0 ] || read -r -a releases <<<"$DEFAULT_RELEASES"

# The directory whose bin/tmux is release $1 (building it when needed).
tmux_prefix() {
	local v=$1
	if [ "$v" = system ]; then
		[ -x /usr/bin/tmux ] || { echo "no /usr/bin/tmux (apt-get install tmux)" >&2; return 1; }
		mkdir -p "$CACHE/system/bin" && ln -sf /usr/bin/tmux "$CACHE/system/bin/tmux"
		echo "$CACHE/system"
		return 0
	fi
	if [ -x "$CACHE/$v/bin/tmux" ] && [ "$("$CACHE/$v/bin/tmux" -V)" = "tmux $v" ]; then
		echo "$CACHE/$v"
		return 0
	fi
	[ -f "$SOURCES/tmux-$v.tar.gz" ] || { echo "no sources for tmux $v in $SOURCES" >&2; return 1; }
	mkdir -p "$CACHE"
	echo "building tmux $v into $CACHE/$v ..." >&2
	bash "$SOURCES/build.sh" "$v" "$CACHE/$v" >"$CACHE/build-$v.log" 2>&1 ||
		{ echo "tmux $v failed to build: see $CACHE/build-$v.log" >&2; return 1; }
	echo "$CACHE/$v"
}

cd "$ROOT" || exit 2
if [ $build_only -eq 1 ]; then
	rc=0
	for v in "${releases[@]}"; do
		[ "$v" = system ] || tmux_prefix "$v" >/dev/null || rc=1
	done
	exit $rc
fi
IFS=, read -r -a suites <<<"$SUITES"
# A suite is a test binary of its own (tests/NAME.rs: real_agents, tmux_stress) or a
# module of the one binary that holds the rest (tests/suite/NAME.rs: run as
# `--test suite NAME::`).
target_of() { [ -f "tests/$1.rs" ] && echo "$1" || echo suite; }
test_args=()
for s in "${suites[@]}"; do
	t=$(target_of "${s%%:*}")
	[ ! -f "tests/$t.rs" ] && [ ! -f "tests/$t/main.rs" ] && die "no test suite ${s%%:*} (tests/${s%%:*}.rs or tests/suite/${s%%:*}.rs)"
	[ "$t" != suite ] || [ -f "tests/suite/${s%%:*}.rs" ] || die "no test suite ${s%%:*} (tests/${s%%:*}.rs or tests/suite/${s%%:*}.rs)"
	test_args+=(--test "$t")
done
echo "== building the test binaries once"
cargo test --locked --no-run "${test_args[@]}" >/dev/null 2>&1 || cargo test --locked --no-run "${test_args[@]}" || exit 1

mkdir -p target
summary=target/tmux-matrix.txt
logdir=target/tmux-matrix
mkdir -p "$logdir"
{
	echo "| tmux | $(printf '%s | ' "${suites[@]}")seconds |"
	echo "| --- | $(printf -- '--- | %.0s' "${suites[@]}")--- |"
} >"$summary"
failed=0
for v in "${releases[@]}"; do
	prefix=$(tmux_prefix "$v") || { echo "| $v | $(printf 'not built | %.0s' "${suites[@]}")- |" >>"$summary"; failed=1; continue; }
	got=$(PATH="$prefix/bin:$PATH" tmux -V)
	echo "== $got ($prefix/bin/tmux)"
	row="| ${got#tmux } |"
	t0=$(date +%s)
	declare -A cells=()
	# The modules of tests/suite asked for whole (or without the tests a `~`
	# names) run in one cargo test, sharing its test threads (one after the
	# other, each module's slowest test left the other thread idle); a module
	# with a name filter, and a binary of its own, run by themselves.
	merged=()
	skips=()
	for s in "${suites[@]}"; do
		name=${s%%:*}
		rest=${s#*:}
		if [ "$(target_of "$name")" = suite ] && { [ "$rest" = "$s" ] || [ "${rest:0:1}" = "~" ]; }; then
			merged+=("$name")
			[ "$rest" = "$s" ] || skips+=(--skip "${rest#\~}")
		fi
	done
	if [ ${#merged[@]} -gt 0 ]; then
		log="$logdir/$v-suite.log"
		# the opt-in tests (#[ignore]: slow, stress) run here too
		PATH="$prefix/bin:$PATH" cargo test --locked --test suite -- --include-ignored "${merged[@]/%/::}" "${skips[@]}" >"$log" 2>&1
		rc=$?
		for name in "${merged[@]}"; do
			passed=$(grep -cE "^test $name::[^ ]* \.\.\. ok$" "$log")
			nfail=$(grep -cE "^test $name::[^ ]* \.\.\. FAILED$" "$log")
			if [ "$nfail" -eq 0 ] && { [ $rc -eq 0 ] || grep -qE '^test result: FAILED' "$log"; }; then
				cells[$name]="$passed passed"
			else
				cells[$name]="**$nfail failed** of $((passed + nfail))"
			fi
		done
		if [ $rc -ne 0 ]; then
			failed=1
			echo "   ${merged[*]} FAILED (log: $log):"
			grep -E '^test .* FAILED$|panicked at|^error' "$log" | head -20 | sed 's/^/     /'
		fi
	fi
	for s in "${suites[@]}"; do
		name=${s%%:*}
		if [ -n "${cells[$name]:-}" ] && [[ " ${merged[*]} " == *" $name "* ]]; then
			echo "   $s: ${cells[$name]}"
			row="$row ${cells[$name]} |"
			continue
		fi
		log="$logdir/$v-${s//[:\/]/_}.log"
		t=$(target_of "$name")
		# a module of tests/suite: its tests only (`NAME::`)
		module=()
		[ "$t" = "$name" ] || module=("$name::")
		filter=(-- --include-ignored "${module[@]}")
		case ${s#*:} in
		"$s") ;;
		"~"*) rest=${s#*:}; filter=(-- --include-ignored "${module[@]}" --skip "${rest#\~}") ;;
		# (a name filter inside a module: the module's path and the filter, in one)
		*) [ "$t" = "$name" ] && f=${s#*:} || f="$name::${s#*:}"
			filter=(-- --include-ignored --nocapture --test-threads=1 "$f") ;;
		esac
		[ "$s" != tmux_stress ] || filter+=(--test-threads=1)
		PATH="$prefix/bin:$PATH" cargo test --locked --test "$t" "${filter[@]}" >"$log" 2>&1
		rc=$?
		line=$(grep -E '^test result:' "$log" | tail -1)
		passed=$(sed -n 's/.* \([0-9]*\) passed.*/\1/p' <<<"$line")
		nfail=$(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$line")
		if [ $rc -eq 0 ]; then
			cell="${passed:-0} passed"
		else
			cell="**${nfail:-?} failed** of $((${passed:-0} + ${nfail:-0}))"
			failed=1
			echo "   $s FAILED (log: $log):"
			grep -E '^test .* FAILED$|panicked at' "$log" | head -20 | sed 's/^/     /'
		fi
		echo "   $s: $cell"
		row="$row $cell |"
	done
	unset cells
	echo "$row $(($(date +%s) - t0)) |" >>"$summary"
done
echo
cat "$summary"
[ $failed -eq 0 ] && echo "tmux-matrix: every suite passed on every release" || echo "tmux-matrix: some suites failed"
exit $failed
