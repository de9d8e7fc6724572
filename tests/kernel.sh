#!/bin/sh
# --kernel: a Python function reading /dev/zero in a loop (Debian's
# python3.11) spends most samples in the read system call; with --kernel
# the kernel's read path (ksys_read, vfs_read, read_zero) must sit above
# the Python function in most of them, and without it in none. Also: a
# kallsyms without addresses (kernel.kptr_restrict) is refused with a
# clear line (unit-tested in tests/unit/test_ksym.c).
set -u
test_tag=kernel
. "$(cd "$(dirname "$0")" && pwd)/py311-common.sh"
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
failed=0

$py "$TOP_SRCDIR/tests/workloads/devzero.py" 30 > "$work/ready" &
pid=$!
i=0
until grep -q ready "$work/ready" 2>/dev/null; do
	i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1
done
"$PYPERF" --pid $pid -d 2000 --kernel -q -o "$work/k.pb.gz" || failed=1
"$PYPERF" --pid $pid -d 1000 -q -o "$work/nok.pb.gz" || failed=1
kill $pid; wait $pid 2>/dev/null; pid=
check() {	# PROFILE CHECK_SHAPE ARGS
	PYTHONPATH=$TOP_SRCDIR/tests "$PYTHON3" "$TOP_SRCDIR/tests/check_shape.py" --go "$GO" "$@"
}
read_path='^(ksys_read|vfs_read|read_zero|__x64_sys_read)$'

if check "$work/k.pb.gz" --func read_dev_zero --native "$read_path" --min-share 0.5; then
	echo "PASS --kernel: kernel read path above read_dev_zero"
else
	echo "FAIL --kernel: kernel read path missing above read_dev_zero"; failed=1
fi
if check "$work/nok.pb.gz" --func read_dev_zero --native "$read_path" --max-share 0; then
	echo "PASS without --kernel: no kernel frames"
else
	echo "FAIL without --kernel: kernel frames shown"; failed=1
fi
# Wall mode samples in sched_switch: the sleeping thread's kernel path
# (do_nanosleep, schedule) above time.sleep, and none of the profiler's own
# BPF or tracepoint frames.
$py -c 'import time
def sleep_loop():
    while True:
        time.sleep(0.01)
print("ready", flush=True)
sleep_loop()' > "$work/ready2" &
pid=$!
i=0
until grep -q ready "$work/ready2" 2>/dev/null; do
	i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1
done
"$PYPERF" --pid $pid -d 1500 --mode wall --kernel -q -o "$work/w.pb.gz" || failed=1
kill $pid; wait $pid 2>/dev/null; pid=
if check "$work/w.pb.gz" --func sleep_loop --native '^(do_nanosleep|schedule|__schedule)$' --min-share 0.5 &&
   check "$work/w.pb.gz" --func sleep_loop --native '^(bpf_prog_|bpf_trace_run|__traceiter_|__bpf_trace_)' --max-share 0; then
	echo "PASS --mode wall --kernel: the sleep path, no tracing frames"
else
	echo "FAIL --mode wall --kernel"; failed=1
fi
# --kernel reads /proc/kallsyms (~80 ms) once the events run: the
# duration counts from then, so a busy thread is given the CPU time it had
# in the profile's window, not 80 ms more (-d 500 gave 117 %, 2.4 times
# under load). -F 5000: enough samples for a few % even when the thread
# gets a fraction of a CPU. The statistical miss is rare: twice.
window_case() {	# NAME
	$py "$TOP_SRCDIR/tests/workloads/cpulog.py" "$work/cpulog" > "$work/ready3" &
	pid=$!
	i=0
	until grep -q ready "$work/ready3" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1
	done
	"$PYPERF" --pid $pid -d 300 -F 5000 --kernel -q -o "$work/win.pb.gz" || failed=1
	kill -TERM $pid; wait $pid 2>/dev/null; pid=
	if PYTHONPATH=$TOP_SRCDIR/tests "$PYTHON3" "$TOP_SRCDIR/tests/cpu_window.py" --go "$GO" \
		--min 0.88 --max 1.12 "$work/win.pb.gz" "$work/cpulog"; then
		echo "PASS $1: a busy thread's CPU time in the window"
	else
		echo "FAIL $1: the profile does not match the thread's CPU time in its window"; failed=1
	fi
}
. "$TOP_SRCDIR/tests/twice.sh"
twice window_case "--kernel -d 300"
exit $failed
