#!/bin/sh
# Targets pyperf-pprof must refuse with one clear line and a non-zero exit
# before sampling: Python 2.7, a process that is not Python, a missing PID,
# an output directory that does not exist, a bad option, missing
# capabilities, and a kernel without BTF.
set -u
: "${PYPERF:=./pyperf-pprof}"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
failed=0
pids=

# expect NAME REGEX -- ARGS: run pyperf-pprof ARGS, expect failure and a
# message matching REGEX.
expect() {
	name=$1 re=$2
	shift 3
	# shellcheck disable=SC2086
	out=$($PYPERF "$@" 2>&1)
	rc=$?
	echo "$name: exit $rc: $out"
	if [ $rc = 0 ] || ! printf '%s\n' "$out" | grep -Eq "$re"; then
		echo "FAIL $name"; failed=1
	else
		echo "PASS $name"
	fi
}

py27=${PYENV_ROOT:-/root/.pyenv}/versions/2.7.18/bin/python2.7
if [ -x "$py27" ]; then
	"$py27" -c 'import time; time.sleep(30)' & pids="$pids $!"
	# Refused for its version only once its libpython is mapped (before,
	# it is no CPython process yet): wait for the loader, at most 5 s.
	for _ in $(seq 50); do
		grep -q libpython2.7 /proc/$!/maps 2>/dev/null && break
		sleep 0.1
	done
	sleep 0.3
	expect python2.7 'runs Python 2\.7\.18 .*does not support' -- --pid $! -d 500 -o /tmp/x.pb.gz
else
	echo "SKIP python2.7: $py27 not present"
fi
sleep 30 & pids="$pids $!"
expect not-python 'is not a CPython process' -- --pid $! -d 500 -o /tmp/x.pb.gz
expect no-such-pid 'no such process' -- --pid 4000000 -d 500 -o /tmp/x.pb.gz
/usr/bin/python3 -c 'import time; time.sleep(30)' & pids="$pids $!"
sleep 0.3
expect unwritable-out 'cannot .*/nonexistent-dir' -- --pid $! -d 500 -o /nonexistent-dir/p.pb.gz
expect bad-option 'expects a process id' -- --pid abc
# -F above kernel.perf_event_max_sample_rate: the kernel says EINVAL; the
# message must name the limit, not privileges.
maxrate=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo 0)
if [ "$maxrate" -gt 0 ] 2>/dev/null; then
	expect freq-over-limit "above the kernel's limit of $maxrate samples per second .*perf_event_max_sample_rate" -- --pid $! -F $((maxrate + 1)) -d 500 -o /tmp/x.pb.gz
else
	echo "SKIP freq-over-limit: /proc/sys/kernel/perf_event_max_sample_rate unreadable"
fi
# A thread id (from ps -L) names the same /proc entry as its process but
# would never be sampled (samples are matched by process id): refused,
# naming the process id to use.
/usr/bin/python3 -c 'import threading, time
threading.Thread(target=time.sleep, args=(30,)).start()
time.sleep(30)' & pids="$pids $!"
i=0
until [ "$(ls /proc/$!/task 2>/dev/null | wc -l)" -ge 2 ] || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.1; done
tid=$(ls /proc/$!/task | grep -vx "$!" | head -1)
expect thread-id "pid $tid is a thread of process $!.*use --pid $!" -- --pid "$tid" -d 500 -o /tmp/x.pb.gz
PYPERF_REAL=$PYPERF
PYPERF="setpriv --bounding-set=-sys_ptrace $PYPERF_REAL"
expect no-ptrace-cap 'missing CAP_SYS_PTRACE' -- --pid $! -d 500 -o /tmp/x.pb.gz
PYPERF="setpriv --reuid=65534 --regid=65534 --clear-groups $PYPERF_REAL"
expect unprivileged 'missing CAP_BPF, CAP_PERFMON' -- --pid $! -d 500 -o /tmp/x.pb.gz
# No kernel BTF: /sys/kernel/btf hidden under an empty tmpfs in a mount
# namespace of the profiler's own (the host's stays as it is).
nobtf=$(mktemp /tmp/pyperf-nobtf.XXXXXX)
printf '%s\n' 'mount -t tmpfs -o size=4k tmpfs /sys/kernel/btf || exit 99' 'exec "$@"' > "$nobtf"
if unshare --mount --propagation private sh "$nobtf" test ! -e /sys/kernel/btf/vmlinux 2>/dev/null; then
	PYPERF="unshare --mount --propagation private sh $nobtf $PYPERF_REAL"
	expect no-btf 'the kernel has no BTF' -- --pid $! -d 500 -o /tmp/x.pb.gz
else
	echo "SKIP no-btf: cannot hide /sys/kernel/btf in a private mount namespace (unshare -m)"
fi
rm -f "$nobtf"
PYPERF=$PYPERF_REAL
kill $pids 2>/dev/null
exit $failed
