#!/bin/sh
# Issue 25 item 2: on a whole-host run, processes are found by the events
# they cause, not by scanning /proc (which every 500 ms cost an idle host
# about 4 ms of CPU a second): an exec of Python, children a target forks
# without exec (multiprocessing's fork start method), a program that
# loads libpython at run time (dlopen, as embedders do), and their exits.
# With -v the profiler says how its later targets were found; every one
# must be by an event, with no scan of /proc after the first. (Before,
# the embedder was never found: the scan before its dlopen() marked it
# "not Python" for good.)
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${GO:=go}"
: "${PYTHON3:=/usr/bin/python3}"
: "${CC:=gcc}"
static=/usr/bin/python3.11
shared=/root/.pyenv/versions/3.10.13/bin/python3.10
lib=/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
for f in $static $shared $lib; do
	[ -e $f ] || { echo "SKIP: $f not present"; exit 77; }
done
work=$(mktemp -d /tmp/pyperf-discovery.XXXXXX)
export HOME=$work
trap 'pkill -f "$work" 2>/dev/null; rm -rf "$work"' EXIT
W=$TOP_SRCDIR/tests/workloads
failed=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; failed=1; }
funcs_of() { "$PYTHON3" "$TOP_SRCDIR/tests/check_targets.py" "$1" functions "$2"; }

# Where it can (a mount namespace of its own), the profiler runs without
# tracefs, as on a machine that never mounted it: it mounts it to attach
# the mmap tracepoint (before, it fell back to scanning /proc every
# 500 ms, which the checks below refuse).
run_profiler() {
	if unshare --mount true 2>/dev/null; then
		unshare --mount sh -c 'for d in /sys/kernel/debug/tracing /sys/kernel/tracing; do
			umount "$d" 2>/dev/null; done; exec "$@"' sh "$@"
	else
		echo "note: no mount namespace (unshare --mount): tracefs left as it is"
		"$@"
	fi
}

$CC -O1 -o "$work/embed" "$W/embed.c" -ldl || { echo "FAIL: cannot build $W/embed.c"; exit 1; }
cp "$W/fork_children.py" "$W/ratio.py" "$work/"
run_profiler "$PYPERF" -d 9000 -F 99 -v -o "$work/host.pb.gz" 2> "$work/host.err" &
prof=$!
# Started once the profiler has made its first scan of /proc (its
# sampling line), each busy ~2.5 s, all done well before it ends.
for i in $(seq 100); do grep -q "^pyperf-pprof: sampling" "$work/host.err" && break; sleep 0.1; done
# Children forked before their parent is attached (the profiler stopped
# meanwhile, as a loaded host may delay it): reported by the fork events
# of an exec'd interpreter, not read from /proc/PID/task/TID/children.
ppid=$(pgrep -f -- "-o $work/host.pb.gz" | head -1)
kill -STOP $ppid
$shared "$work/fork_children.py" 0 2.5 > "$work/early" &
sleep 1
kill -CONT $ppid
$shared "$work/fork_children.py" 0.5 2.5 > "$work/kids" &
"$work/embed" "$lib" "import time
def embedded_busy(end):
    while time.time() < end: pass
embedded_busy(time.time() + 2.5)" &
emb=$!
(exec $static "$work/ratio.py" 2 > /dev/null) &
late=$!
wait $prof
prc=$?
kids=$(cat "$work/kids")
early=$(cat "$work/early")
echo "profiler exit $prc; exec'd $late, forked $kids, embedder $emb"
grep "^pyperf-pprof: discovery:" "$work/host.err"

for k in $kids; do
	funcs_of "$work/host.pb.gz" $k | grep -qw forked_child_busy && pass "forked child $k profiled" ||
		fail "forked child $k" "no forked_child_busy samples: $(grep "pid $k " "$work/host.err")"
done
[ -n "$kids" ] || fail "forked children" "fork_children.py printed no pids"
for k in $early; do
	funcs_of "$work/host.pb.gz" $k | grep -qw forked_child_busy &&
		pass "child $k forked before its parent was attached profiled" ||
		fail "early forked child $k" "no forked_child_busy samples: $(grep "pid $k " "$work/host.err")"
done
[ -n "$early" ] || fail "early forked children" "fork_children.py printed no pids"
funcs_of "$work/host.pb.gz" $emb | grep -qw embedded_busy && pass "dlopen embedder $emb profiled" ||
	fail "dlopen embedder $emb" "no embedded_busy samples: $(grep "pid $emb " "$work/host.err")"
funcs_of "$work/host.pb.gz" $late | grep -qw heavy && pass "exec'd Python $late profiled" ||
	fail "exec'd Python $late" "no samples: $(grep "pid $late " "$work/host.err")"
# Exits seen as they happen: no scan reaped them.
for p in $kids $emb $late; do
	grep -q "^pyperf-pprof: pid $p (.*) exited" "$work/host.err" ||
		fail "exit of $p" "not seen"
done
# A child that never execs is a copy of its parent's target and BPF
# mapping list, not probed again.
copies=$(sed -n 's/.*(copied at a fork \([0-9]*\)).*/\1/p' "$work/host.err")
[ "${copies:-0}" -ge 1 ] && pass "forked children copied from their parent: $copies" ||
	fail "fork copies" "want at least 1 mapping list copied at a fork, got '${copies:-none}'"
# All of them by events: no rescan of /proc (the safety net is 20 s away),
# nothing found by one, no event lost.
line=$(grep "^pyperf-pprof: discovery:" "$work/host.err")
n=$(echo "$line" | sed -n 's/.*, \([0-9]*\) targets found by process events.*/\1/p')
case "$line" in
""|*", 0 process events lost") ;;
*)	# Only a flood of execs elsewhere fills the event buffer; the scan
	# that follows is then right.
	echo "note: events were lost (another test's flood?): $line"
	line="0 scans of /proc after the first, $n targets found by process events, 0 by scans, 0 process events lost" ;;
esac
case "$line" in
*" 0 scans of /proc after the first"*", 0 by scans, 0 process events lost")
	[ "${n:-0}" -ge 5 ] && pass "found by events: $n, no rescan of /proc" ||
		fail "discovery" "$n found by events, want at least 5: $line" ;;
*) fail "discovery" "want no rescan and nothing found by one, got: '$line'" ;;
esac
exit $failed
