#!/bin/sh
# asyncio_task labels (issue 16): three tasks take turns on one thread,
# burning CPU 2:1:1 (tests/workloads/asyncio_tasks.py, which measures each
# task's thread CPU time itself); each label's share of the labelled time,
# selected with go tool pprof -tagfocus, must be within 5 points of the
# measured share, lie in that task's coroutine, and cover the task time
# (tests/check_asyncio.py). Every interpreter present from 3.7 to 3.13
# (pyenv) and Debian's 3.11, with the C Task of _asyncio, with the
# pure-Python Task, and with a second thread running its own loop and task
# (each thread's samples must get its own loop's task); on 3.8, 3.13 and
# Debian's 3.11 also with _asyncio blocked (asyncio entirely in Python).
# Issue 23, 3 points: --same-fn, three tasks (named alpha, beta and a
# default one) running ONE coroutine function 3:2:1, and --churn, the same
# with tasks that live two turns each (their objects' addresses reused):
# only a label taken at the sample names them. Missing interpreters are skipped (a fresh Debian 12
# has only /usr/bin/python3.11). Debian sid's 3.14 and 3.15 run the same
# cases in their chroot (tests/sid-common.sh): missing, those cases fail.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${GO:=go}"
: "${PYTHON3:=/usr/bin/python3}"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
command -v "$GO" >/dev/null 2>&1 || { echo "SKIP: no go (go tool pprof reads the profiles)"; exit 77; }
work=$(mktemp -d /tmp/pyperf-asyncio.XXXXXX)
export HOME=$work
. "$TOP_SRCDIR/tests/sid-common.sh"
sid_work=
trap 'rm -rf "$work" $sid_work' EXIT
root=${PYENV_ROOT:-/root/.pyenv}/versions
failed=0 ran=0

# run PYTHON [workload options]: one profile of the whole run, then the
# check; the tasks stop after 1 s of CPU time (about 1000 samples at the
# default 1 ms period, however loaded the machine), and a failed check is
# retried once (the machine may be loaded by other jobs).
# PYTHON "sid:PATH" is PATH in the sid chroot, on the copy of the workload.
run() {
	py=$1
	shift
	ran=$((ran + 1))
	case $py in
	sid:*) cmd="chroot $SID_ROOT ${py#sid:} $sid_workloads/asyncio_tasks.py" ;;
	*) cmd="$py $TOP_SRCDIR/tests/workloads/asyncio_tasks.py" ;;
	esac
	# One coroutine function for every task (issue 23): only a label
	# taken at the sample names the task; 3 points.
	case " $* " in *" --same-fn "*|*" --churn "*) tol=0.03 ;; *) tol=0.05 ;; esac
	for attempt in 1 2; do
		# shellcheck disable=SC2086
		if ! "$PYPERF" -q -o "$work/p.pb.gz" -- $cmd 15 10 --cpu=1.0 "$@" > "$work/truth"; then
			echo "FAIL $py $*: pyperf-pprof or the workload failed"
			failed=1
			return
		fi
		if PYTHONPATH="$TOP_SRCDIR/tests" "$PYTHON3" "$TOP_SRCDIR/tests/check_asyncio.py" \
			--go "$GO" --tolerance "$tol" "$work/p.pb.gz" "$work/truth" > "$work/out" 2>&1; then
			cat "$work/out"
			echo "PASS $py $*"
			return
		fi
		cat "$work/out"
		echo "attempt $attempt failed"
	done
	echo "FAIL $py $*"
	failed=1
}

for v in 3.7.16 3.8.18 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0; do
	py=$root/$v/bin/python3
	[ -x "$py" ] || { echo "SKIP $py: not present"; continue; }
	run "$py"
	run "$py" --py-task
	run "$py" --side-thread
	run "$py" --same-fn
	run "$py" --churn
	case $v in 3.8.*|3.13.*) run "$py" --no-c-asyncio ;; esac
done
if [ -x /usr/bin/python3.11 ]; then
	run /usr/bin/python3.11
	run /usr/bin/python3.11 --py-task
	run /usr/bin/python3.11 --side-thread
	run /usr/bin/python3.11 --same-fn
	run /usr/bin/python3.11 --churn
	run /usr/bin/python3.11 --no-c-asyncio
else
	echo "SKIP /usr/bin/python3.11: not present"
fi
if reason=$(sid_missing); then
	for py in $SID_INTERPRETERS; do echo "FAIL sid:$py: $reason"; done
	failed=1
else
	sid_work=$(sid_workdir asyncio)
	sid_workloads=$(sid_path "$sid_work")/workloads
	for sp in $SID_INTERPRETERS; do	# run() sets $py
		run "sid:$sp"
		run "sid:$sp" --py-task
		run "sid:$sp" --side-thread
		run "sid:$sp" --same-fn
		run "sid:$sp" --churn
		run "sid:$sp" --no-c-asyncio
	done
fi
[ $ran = 0 ] && [ $failed = 0 ] && { echo "SKIP: no CPython 3.7 to 3.13 present"; exit 77; }
exit $failed
