#!/bin/sh
# Honest weights at high rates. Past 20,000 samples per second the kernel
# throttles cpu-clock or fires it late, skipping periods, and a busy thread
# was given 86 % (-F 50000) and 25 % (-F 100000) of its CPU time; -c was
# not bounded at all (-c 1 weighed 1 s of CPU as 36 us). So: -F and -c
# beyond that rate (or kernel.perf_event_max_sample_rate) are refused
# with one line naming the rate to use, and at the highest rate accepted a
# busy thread is given its CPU time in the profile's window within 10 %
# (measured: 0.99-1.00 on a loaded 2-CPU VM, the thread getting 10 % of a
# CPU).
set -u
test_tag=rates
. "$(cd "$(dirname "$0")" && pwd)/py311-common.sh"
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
failed=0

# cpulog: the busy thread, its CPU time logged (tests/workloads/cpulog.py).
start_cpulog() {
	rm -f "$work/cpulog" "$work/ready"
	$py "$TOP_SRCDIR/tests/workloads/cpulog.py" "$work/cpulog" > "$work/ready" &
	pid=$!
	i=0
	until grep -q ready "$work/ready" 2>/dev/null || [ $i -gt 300 ]; do i=$((i + 1)); sleep 0.1; done
}

# At the highest rate accepted, by -F and by -c: the thread's log is
# written when it is stopped, after both runs. What is measured is the
# kernel's sampling, not the reader's speed: a ring buffer holding the
# whole run (16,000 records of ~0.3 KiB without native frames), so that a
# slow reader (the sanitizer pass) loses none. The profile's own
# 'unsampled:' comment is printed: what the kernel skipped, if anything.
accuracy() {
	start_cpulog
	fast="-q --pid $pid -d 800 --no-native --ringbuf-size 16777216"
	"$PYPERF" $fast -F 20000 -o "$work/f20000.pb.gz" || failed=1
	"$PYPERF" $fast -c 50000 -o "$work/c50000.pb.gz" || failed=1
	kill -TERM $pid; wait $pid 2>/dev/null; pid=
	for name in f20000 c50000; do
		"$GO" tool pprof -comments "$work/$name.pb.gz" 2>/dev/null | grep '^unsampled' | sed "s/^/$name: /"
		if PYTHONPATH=$TOP_SRCDIR/tests "$PYTHON3" "$TOP_SRCDIR/tests/cpu_window.py" --go "$GO" \
			--min 0.9 --max 1.1 "$work/$name.pb.gz" "$work/cpulog"; then
			echo "PASS $name: the busy thread's CPU time"
		else
			echo "FAIL $name: the profile misses the busy thread's CPU time"; failed=1
		fi
	done
}

start_cpulog

# refused NAME REGEX ARGS: one line matching REGEX, a non-zero exit, no file.
refused() {
	name=$1 re=$2
	shift 2
	rm -f "$work/r.pb.gz"
	out=$("$PYPERF" -q --pid $pid -d 500 -o "$work/r.pb.gz" "$@" 2>&1)
	rc=$?
	echo "$name: exit $rc: $out"
	if [ $rc != 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] &&
	   printf '%s\n' "$out" | grep -Eq -- "$re" && [ ! -e "$work/r.pb.gz" ]; then
		echo "PASS $name refused"
	else
		echo "FAIL $name: not refused with one line matching /$re/"; failed=1
	fi
}
refused "-F 50000" '^pyperf-pprof: -F 50000 .*use -F 20000 or less$' -F 50000
refused "-F 100000" '^pyperf-pprof: -F 100000 .*use -F 20000 or less$' -F 100000
refused "-c 1000" '^pyperf-pprof: -c 1000 is 1000000 samples per second .*use -c 50000 or more$' -c 1000
refused "-c 1" '^pyperf-pprof: -c 1 is 1000000000 samples per second .*use -c 50000 or more$' -c 1

kill -TERM $pid; wait $pid 2>/dev/null; pid=

# A rare miss: the CI sanitizer pass once saw 0.878 at -c 50000 (and 0.995
# at -F 20000 just before), under the load of the other tests; ratios on a
# loaded 2-CPU VM are 0.98-1.00. Run again once before failing.
. "$TOP_SRCDIR/tests/twice.sh"
twice accuracy "the accuracy runs"
exit $failed
