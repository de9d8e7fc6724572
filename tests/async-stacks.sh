#!/bin/sh
# --async stacks (issue 23 item 2): a supervisor task runs handler tasks
# that await a CPU-bound coroutine (tests/workloads/async_chain.py), under
# the root task that awaits the supervisor (a plain `await task`). The
# profiler attaches to the running workload for 2 s (its start-up and
# shutdown, when no task runs, are not in the profile), and
# tests/check_async.py (on the pprof file, labels included) requires 98 %
# of the samples --async rewrote, and MIN_ALL of all samples, to read, root
# first, [task Task-* (main)];main;[task supervisor];supervisor;
# [task handler-N];handler(;crunch), the leafmost marker to be the
# asyncio_task label's task, and no sample with a task marker to hold a
# frame of the event loop. Cases: gather on every pyenv CPython
# 3.7-3.13 present, TaskGroup from 3.11, asyncio.wait and wait_for (a task
# between: two hops) on 3.8 and 3.13, nested (the supervisor suspended two
# coroutines deep: run_all, wait_all shown) on 3.8, 3.10, 3.12, 3.13,
# shared (each handler awaited by two tasks: its chain must end at
# [awaited by ?], never under one of them; at least half the samples) on
# 3.8 and 3.12, --mode wall on 3.12; Debian's stripped 3.11 (gather,
# nested); Debian sid's 3.14 and 3.15 in their
# chroot (tests/sid-common.sh; missing, those cases fail) with gather,
# TaskGroup, wait, wait_for, nested, shared and wall. One 3.12 profile
# taken without --async must fail the check (the check can fail); one 3.12
# --async recording must replay to the live profile.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${PYTHON3:=/usr/bin/python3}"
: "${GO:=go}"
# The issue's figure is 90 % of all samples. The running task is the one
# the BPF program captured at the sample (issue 23 item 1; read when the
# record was processed, up to 20 % of the samples kept their stacks under
# load, and this was 0.75); every PASS line prints the share.
MIN_ALL=${ASYNC_MIN_ALL:-0.90}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
command -v "$GO" >/dev/null 2>&1 || { echo "SKIP: no go (go tool pprof reads the profiles)"; exit 77; }
work=$(mktemp -d /tmp/pyperf-async.XXXXXX)
export HOME="$work"
. "$TOP_SRCDIR/tests/sid-common.sh"
sid_work=
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work" $sid_work' EXIT
root=${PYENV_ROOT:-/root/.pyenv}/versions
failed=0 ran=0

# profile PYTHON MODE [profiler options]: the workload runs 4 s; the
# profile is of 2 s of it, 1 s in. PYTHON "sid:PATH" runs in the chroot.
profile() {
	py=$1 mode=$2
	shift 2
	case $py in
	sid:*) chroot "$SID_ROOT" "${py#sid:}" "$sid_workloads/async_chain.py" "$mode" 4 & ;;
	*) "$py" "$TOP_SRCDIR/tests/workloads/async_chain.py" "$mode" 4 & ;;
	esac
	pid=$!
	sleep 1
	"$PYPERF" -q -p "$pid" -d 2000 -o "$work/p.pb.gz" "$@"
	r=$?
	wait "$pid"
	r2=$?
	pid=
	[ $r = 0 ] && [ $r2 = 0 ]
}

# run PYTHON MODE [profiler options]: one case, retried once (the machine
# may be loaded by other jobs).
run() {
	py=$1 mode=$2
	shift 2
	ran=$((ran + 1))
	hops=0 extra="--min-all $MIN_ALL"
	[ "$mode" = wait_for ] && hops=1
	[ "$mode" = nested ] && extra="$extra --nested"
	# The point of shared is that no awaiter is guessed, not coverage.
	[ "$mode" = shared ] && extra="--shared --min-all 0.5"
	for attempt in 1 2; do
		# Under load the profiler's start-up (BPF verifier, tables) may
		# outlast the workload: an empty run is retried as well.
		if ! profile "$py" "$mode" --async "$@"; then
			echo "attempt $attempt: pyperf-pprof or the workload failed"
			continue
		fi
		# shellcheck disable=SC2086
		if PYTHONPATH="$TOP_SRCDIR/tests" "$PYTHON3" "$TOP_SRCDIR/tests/check_async.py" \
			--go "$GO" --hops $hops $extra "$work/p.pb.gz" \
			> "$work/out" 2>&1; then
			echo "PASS $py $mode $*: $(cat "$work/out")"
			return
		fi
		cat "$work/out"
		echo "attempt $attempt failed"
	done
	echo "FAIL $py $mode $*"
	failed=1
}

for v in 3.7.16 3.8.18 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0; do
	py=$root/$v/bin/python3
	[ -x "$py" ] || { echo "SKIP $py: not present"; continue; }
	run "$py" gather
	case $v in 3.11.*|3.12.*|3.13.*) run "$py" taskgroup ;; esac
	case $v in 3.8.*|3.13.*) run "$py" wait; run "$py" wait_for ;; esac
	case $v in 3.8.*|3.10.*|3.12.*|3.13.*) run "$py" nested ;; esac
	case $v in 3.8.*|3.12.*) run "$py" shared ;; esac
	case $v in 3.12.*) run "$py" gather --mode wall ;; esac
done
if [ -x /usr/bin/python3.11 ]; then
	run /usr/bin/python3.11 gather
	run /usr/bin/python3.11 nested
else
	echo "SKIP /usr/bin/python3.11: not present"
fi

# The check fails a profile without the feature; a recording of an
# --async run replays to the same stacks (every read went through the
# target's memory source).
py=$root/3.12.1/bin/python3
if [ -x "$py" ]; then
	ran=$((ran + 1))
	if ! profile "$py" gather --async --record "$work/rec" --format collapsed ||
		! mv "$work/p.pb.gz" "$work/live.folded" ||
		! "$PYPERF" -q --replay "$work/rec" --format collapsed -o "$work/replay.folded"; then
		echo "FAIL $py --record/--replay: pyperf-pprof or the workload failed"
		failed=1
	elif ! sort "$work/live.folded" > "$work/a" || ! sort "$work/replay.folded" > "$work/b" ||
		! grep -q '^\[task ' "$work/a" || ! cmp -s "$work/a" "$work/b"; then
		echo "FAIL $py --async --replay differs from the live profile (or it has no chain)"
		failed=1
	else
		echo "PASS $py --async --replay: the live profile's stacks"
	fi
	if ! profile "$py" gather; then
		echo "FAIL $py without --async: pyperf-pprof or the workload failed"
		failed=1
	elif PYTHONPATH="$TOP_SRCDIR/tests" "$PYTHON3" "$TOP_SRCDIR/tests/check_async.py" \
		--go "$GO" "$work/p.pb.gz" > "$work/out" 2>&1; then
		echo "FAIL $py without --async passes the check: $(cat "$work/out")"
		failed=1
	else
		echo "PASS $py without --async fails the check: $(head -1 "$work/out")"
	fi
fi

if reason=$(sid_missing); then
	for py in $SID_INTERPRETERS; do echo "FAIL sid:$py: $reason"; done
	failed=1
else
	sid_work=$(sid_workdir async)
	sid_workloads=$(sid_path "$sid_work")/workloads
	for sp in $SID_INTERPRETERS; do
		for mode in gather taskgroup wait wait_for nested shared; do
			run "sid:$sp" $mode
		done
		run "sid:$sp" gather --mode wall
	done
fi
[ $ran = 0 ] && [ $failed = 0 ] && { echo "SKIP: no CPython 3.7 to 3.13 present"; exit 77; }
exit $failed
