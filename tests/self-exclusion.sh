#!/bin/sh
# Issue 25 item 1: a profiler never profiles itself nor another
# pyperf-pprof beside it. Both map the interpreters' files they read (a
# shared libpython among them), so each looked like a Python process to
# the other and to itself: a target line "pid N (pyperf-pprof): Python
# 3.10.13 in .../libpython3.10.so.1.0", its own samples in the profile.
# Two whole-host profilers run side by side over two Python processes
# (one with a shared libpython, one static); neither profiler may appear
# as a target, in a pid label or in a stack, and --pid of one is refused;
# a profiler started by a command run with --subprocesses is not followed.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${GO:=go}"
: "${PYTHON3:=/usr/bin/python3}"
shared=/root/.pyenv/versions/3.10.13/bin/python3.10
static=/usr/bin/python3.11
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
for py in $shared $static; do
	[ -x $py ] || { echo "SKIP: $py not present"; exit 77; }
done
work=$(mktemp -d /tmp/pyperf-self.XXXXXX)
# Profilers write their file when stopped: wait for them before the rm.
cleanup() {
	pkill -f "$work" 2> /dev/null
	for i in $(seq 50); do pgrep -f "$work" > /dev/null || break; sleep 0.1; done
	rm -rf "$work"
}
trap cleanup EXIT
failed=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; failed=1; }

cp "$TOP_SRCDIR/tests/workloads/ratio.py" "$work/ratio.py"
$shared "$work/ratio.py" 60 > /dev/null &
t1=$!
$static "$work/ratio.py" 60 > /dev/null &
t2=$!
sleep 0.5
# B starts while A runs (B finds A's mappings at its first scan) and
# lasts past A's next scans (A finds B's): 500 ms apart.
"$PYPERF" -d 5000 -o "$work/a.pb.gz" 2> "$work/a.err" &
a=$!
sleep 1
"$PYPERF" -d 3500 -o "$work/b.pb.gz" 2> "$work/b.err" &
b=$!
sleep 1
"$PYPERF" --pid $a -d 500 -o "$work/c.pb.gz" 2> "$work/c.err"
crc=$?
wait $a
arc=$?
wait $b
brc=$?
echo "profilers: A pid $a (exit $arc), B pid $b (exit $brc); targets $t1 ($shared), $t2 ($static)"

for x in a b; do
	f=$work/$x.pb.gz
	# Not one target line of a profiler: ours by pid, any by name (other
	# tests' profilers run beside this one in make -j2 check).
	lines=$(grep -E "^pyperf-pprof: pid ($a|$b) |^pyperf-pprof: pid [0-9]+ \(pyperf-pprof\)" "$work/$x.err")
	[ -z "$lines" ] && pass "$x: no profiler among the targets" ||
		fail "$x: targets" "$lines"
	out=$("$PYTHON3" "$TOP_SRCDIR/tests/check_selfless.py" "$f" "$GO" $a $b 2>&1)
	r=$?
	echo "$x: $(echo "$out" | tail -1)"
	[ $r = 0 ] && pass "$x: no profiler in labels or stacks" ||
		fail "$x: profile" "$(echo "$out" | head -5)"
	# The test is worth something only if the targets were profiled.
	pids=" $(echo "$out" | tail -1 | sed 's/^pids: //') "
	case "$pids" in
	*" $t1 "*) case "$pids" in *" $t2 "*) pids=ok ;; esac ;;
	esac
	[ "$pids" = ok ] && pass "$x: both targets profiled" ||
		fail "$x: targets" "profiled$pids, want $t1 and $t2"
done
# Launch mode with --subprocesses: a profiler among the command's
# descendants is not followed; the command's Python is.
# The inner profiler runs 3 s, over six scans of the outer one.
"$PYPERF" --subprocesses -d 8000 -o "$work/d.pb.gz" 2> "$work/d.err" -- sh -c \
	"\"$PYPERF\" --pid $t1 -d 3000 -o \"$work/inner.pb.gz\" -q & exec $static \"$work/ratio.py\" 4" > /dev/null
drc=$?
out=$("$PYTHON3" "$TOP_SRCDIR/tests/check_selfless.py" "$work/d.pb.gz" "$GO" 2>&1)
r=$?
lines=$(grep -E "^pyperf-pprof: pid [0-9]+ \(pyperf-pprof\)" "$work/d.err")
echo "launch: exit $drc, $(echo "$out" | tail -1)"
if [ $drc = 0 ] && [ $r = 0 ] && [ -z "$lines" ] && grep -q "^pyperf-pprof: pid [0-9]* (python3.11)" "$work/d.err"; then
	pass "launch --subprocesses: the command profiled, not the profiler it started"
else
	fail "launch --subprocesses" "exit $drc; $lines $(echo "$out" | head -3)"
fi
if [ $crc != 0 ] && grep -q "pid $a not profiled: it is a pyperf-pprof" "$work/c.err"; then
	pass "--pid of a profiler refused (exit $crc)"
else
	fail "--pid of a profiler" "exit $crc: $(cat "$work/c.err")"
fi
kill $t1 $t2
exit $failed
