# Sourced (not run) by tests/clients.sh, tests/backend-rules.sh and
# tests/speedscope.sh: environment defaults, skip/fail, a scratch directory
# cleaned on exit, and profile_ratio, which profiles tests/workloads/ratio.py
# once with the built pyperf-pprof. The sourcing script sets $name first.
# shellcheck disable=SC2034,SC2154  # $name is set by, $wcomm read by, the caller
# Exit codes follow automake: 0 pass, 1 fail, 77 skip (with a reason).

: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${PYPERF:=./pyperf-pprof}"
: "${GO:=go}"
: "${PYTHON3:=/usr/bin/python3}"
: "${RATIO_INTERP:=/usr/bin/python3.11}"

skip() { echo "SKIP $name: $*"; exit 77; }
fail() { echo "FAIL $name: $*"; exit 1; }

# Processes to kill on exit (workloads, servers), space-separated pids.
bg_pids=
work=

cleanup() {
	for p in $bg_pids; do
		kill "$p" 2>/dev/null
	done
	for p in $bg_pids; do
		wait "$p" 2>/dev/null
	done
	[ -n "$work" ] && rm -rf "$work"
}

make_workdir() {
	work=$(mktemp -d "/tmp/pyperf-$name.XXXXXX") || fail "mktemp failed"
	trap cleanup EXIT
	trap 'exit 1' INT TERM
	# go tool pprof wants a home directory; make check may run without one.
	HOME=$work/home
	mkdir -p "$HOME"
	export HOME
}

# Checks what profiling needs; skips with a reason when it is absent.
need_profiling() {
	[ "$(id -u)" = 0 ] || skip "needs root for BPF and perf events"
	[ -x "$RATIO_INTERP" ] || skip "interpreter $RATIO_INTERP not present"
	[ -x "$PYPERF" ] || fail "pyperf-pprof not built at $PYPERF"
	[ -x "$PYTHON3" ] || skip "python3 ($PYTHON3) not installed"
}

# start_workload INTERP SCRIPT SECONDS: starts it in the background, waits
# (at most 10 s) for its "ready" line; sets $wpid and $wcomm (its comm, the
# kernel's thread name, which the profile's process_name label carries).
start_workload() {
	out=$work/ready.$$.$(date +%s%N)
	"$1" "$2" "$3" > "$out" &
	wpid=$!
	bg_pids="$bg_pids $wpid"
	i=0
	until grep -q ready "$out" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 100 ] && fail "workload $2 did not start"
		kill -0 "$wpid" 2>/dev/null || fail "workload $2 exited early"
		sleep 0.1
	done
	wcomm=$(cat "/proc/$wpid/comm")
}

# profile_ratio OUT [extra pyperf-pprof options]: profiles ratio.py under
# $RATIO_INTERP for 3 s into OUT; sets $wpid and $wcomm, then stops the
# workload so it no longer competes for the CPU.
profile_ratio() {
	prof_out=$1
	shift
	start_workload "$RATIO_INTERP" "$TOP_SRCDIR/tests/workloads/ratio.py" 30
	"$PYPERF" --pid "$wpid" -d 3000 -o "$prof_out" -v "$@" > "$work/pyperf.log" 2>&1
	rc=$?
	cat "$work/pyperf.log"
	[ $rc = 0 ] || fail "pyperf-pprof exited with $rc"
	[ -s "$prof_out" ] || fail "pyperf-pprof wrote no profile"
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	return 0
}
