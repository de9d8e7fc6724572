#!/bin/sh
# End-to-end test of one interpreter: run each workload of tests/workloads
# under it, profile it with the built pyperf-pprof, check the profile with
# go tool pprof (tests/check_profile.py). The test file ($1) holds the
# interpreter's path, or "chroot ROOT PATH": the interpreter at PATH inside
# the chroot ROOT that contrib/sid-chroot.sh made (tests/sid-common.sh),
# run there with copies of the workloads under the chroot's /tmp and
# profiled from the host, as a container's process is; that chroot is a
# prerequisite: missing, the case fails. Exit codes follow automake: 0
# pass, 1 fail, 77 skip.
set -u
case_file=$1
name=$(basename "$case_file" .e2e)
# shellcheck disable=SC2046
set -- $(eval echo "$(cat "$case_file")")
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${PYPERF:=./pyperf-pprof}"
: "${GO:=go}"
: "${PYTHON3:=/usr/bin/python3}"
SCENARIOS=${SCENARIOS:-ratio methods deep threads truncated native}
root=
if [ "$1" = chroot ]; then
	root=$2 interp=$3
	PYPERF_SID_ROOT=$root
	. "$TOP_SRCDIR/tests/sid-common.sh"
else
	interp=$1
fi

skip() { echo "SKIP $name: $*"; exit 77; }

if [ -n "$root" ]; then
	# CI's bootstrap makes the chroot: without it the case fails.
	if reason=$(sid_missing); then
		echo "FAIL $name: $reason"
		exit 1
	fi
else
	[ -x "$interp" ] || skip "interpreter $interp not present"
fi
[ "$(id -u)" = 0 ] || skip "needs root for BPF and perf events"
command -v "$GO" >/dev/null 2>&1 || skip "go (Debian golang-go) not installed"
[ -x "$PYTHON3" ] || skip "python3 not installed"

# launch ARGS...: the interpreter becomes this (sub)shell, in its chroot
# if it has one; so that "launch ... &" leaves the interpreter's pid in $!.
launch() {
	if [ -n "$root" ]; then
		exec chroot "$root" "$interp" "$@"
	fi
	exec "$interp" "$@"
}

if [ -n "$root" ]; then
	work=$(sid_workdir e2e) || { echo "FAIL $name: no scratch directory in $root/tmp"; exit 1; }
	workloads=$(sid_path "$work")/workloads
else
	work=$(mktemp -d /tmp/pyperf-e2e.XXXXXX)
	workloads=$TOP_SRCDIR/tests/workloads
fi
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT INT TERM
failed=0
bpf_checks=0	# code-object checks the BPF program answered, every scenario

# run_scenario NAME WORKLOAD DURATION_MS [WORKLOAD ARGS] [CHECK ARGS] [PROFILER ARGS]
run_scenario() {
	out="$work/$1.pb.gz"
	rm -f "$work/ready"	# or the last workload's "ready" is seen at once
	launch "$workloads/$2" 60 ${4:-} > "$work/ready" &
	pid=$!
	i=0
	until grep -q ready "$work/ready" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 200 ]; then
			echo "FAIL $name/$1: workload did not start"; failed=1; return
		fi
		sleep 0.1
	done
	# PYPERF_ARGS: extra options for every run (tests/unwind-diff.sh runs
	# the native scenario again with --unwind kernel).
	# shellcheck disable=SC2086
	"$PYPERF" --pid $pid -d "$3" -o "$out" -v ${6:-} ${PYPERF_ARGS:-} > "$work/log" 2>&1
	rc=$?
	kill $pid 2>/dev/null; wait $pid 2>/dev/null; pid=
	sed 's/^/  /' "$work/log"
	if [ $rc != 0 ]; then
		echo "FAIL $name/$1: pyperf-pprof exited with $rc"; failed=1; return
	fi
	n=$(sed -n 's/.*checks=[0-9]* (\([0-9]*\) read by the BPF program.*/\1/p' "$work/log")
	bpf_checks=$((bpf_checks + ${n:-0}))
	if HOME=${HOME:-/root} "$PYTHON3" "$TOP_SRCDIR/tests/check_profile.py" \
		--go "$GO" --scenario "$1" ${5:-} --workload "$TOP_SRCDIR/tests/workloads/$2" "$out"; then
		echo "PASS $name/$1"
	else
		# Keep the evidence: the profile of a failed check is an artifact.
		mkdir -p tests/artifacts && cp "$out" "tests/artifacts/$name-$1.pb.gz"
		echo "FAIL $name/$1 (profile kept in tests/artifacts/$name-$1.pb.gz)"; failed=1
	fi
}

# The C extension of the native scenario, built for this interpreter
# (by the host's gcc against the chroot's headers for one in a chroot).
ext_args=
include=$(launch -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
if [ -n "$root" ]; then
	if command -v gcc >/dev/null && [ -n "$(sid_build_ext "$interp" "$work")" ]; then
		PYTHONPATH=$(sid_path "$work"); export PYTHONPATH
		ext_args=--extension
	else
		echo "FAIL $name: tests/ext/cbext.c did not build against $root$include"
		failed=1
	fi
elif [ -f "$include/Python.h" ] && command -v gcc >/dev/null &&
	gcc -shared -fPIC -O2 -fno-omit-frame-pointer -I"$include" \
		-o "$work/cbext$(launch -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX") or ".so")')" \
		"$TOP_SRCDIR/tests/ext/cbext.c"; then
	PYTHONPATH=$work; export PYTHONPATH
	ext_args=--extension
else
	echo "note: $name: no Python.h at '$include' (Debian: python3-dev): C extension check skipped"
fi

for s in $SCENARIOS; do
	case $s in
	# The workload prints its measured heavy:light split: the check
	# compares the profile with that (check_profile.py --truth).
	ratio) run_scenario ratio ratio.py 3000 "" "--truth $work/ready" ;;
	methods) run_scenario methods methods.py 1500 ;;
	deep) run_scenario deep deep.py 1000 ;;
	threads) run_scenario threads threads.py 2000 ;;
	truncated) run_scenario truncated deep.py 1000 1100 ;;
	# Every native frame: the check measures how many stacks unwind to
	# _start, which the default filter hides (native_filter.c).
	native) run_scenario native native.py 2000 "" "$ext_args" --all-native ;;
	esac
done
# The profiles' names were right (check_profile.py) with the code objects
# checked in the target's context, not only by process_vm_readv.
if [ $bpf_checks -gt 0 ]; then
	echo "PASS $name: $bpf_checks code-object checks read by the BPF program"
else
	echo "FAIL $name: no code-object check was read by the BPF program"; failed=1
fi
exit $failed
