#!/bin/sh
# A process's mappings from the BPF task_vma iterator (issue 25: the text
# of /proc/PID/maps was most of a new process's attach): the text written
# from its records must be the kernel's, line for line, for the processes
# users run (a pyenv build, Debian's stripped python3.11 with numpy, sid's
# python3.14 in its chroot as a container's, 3000 mappings read in several
# chunks), and the file must be read where records cannot say the path
# (a deleted library, a memfd). Then the profiler itself: a launched
# program's later children are attached without reading the file.
# As root. Exit 0 pass, 1 fail.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
. "$TOP_SRCDIR/tests/sid-common.sh"
CHECK=$(dirname "$PYPERF")/tests/maps/maps_check
PYENV=${PYENV_ROOT:-/root/.pyenv}/versions
failed=0
pids=""
work=$(mktemp -d /tmp/pyperf-maps.XXXXXX)
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT

start() {	# start NAME CMD...: a process that sleeps; its pid in $NAME
	name=$1; shift
	"$@" &
	pids="$pids $!"
	eval "$name=$!"
}

expect() {	# expect WHAT PID written|file
	got=$("$CHECK" "$2" 2>"$work/err")
	rc=$?
	if [ $rc -ne 0 ] || [ "$got" != "$2 $3" ]; then
		echo "FAIL $1: expected '$2 $3', got '$got' (rc $rc)"
		sed 's/^/  /' "$work/err" | head -5
		failed=1
	else
		echo "ok   $1: $got"
	fi
}

SLEEP="import time; time.sleep(60)"
start p312 "$PYENV/3.12.1/bin/python3.12" -c "$SLEEP"
start pdeb /usr/bin/python3.11 -c "import numpy; $SLEEP"
start pmany /usr/bin/python3.11 -c "
import mmap
m = [mmap.mmap(-1, 4096 * (1 + i % 3), flags=mmap.MAP_PRIVATE,
               prot=mmap.PROT_READ if i % 2 else mmap.PROT_READ | mmap.PROT_WRITE) for i in range(3000)]
$SLEEP"
start pmemfd /usr/bin/python3.11 -c "
import mmap, os
fd = os.memfd_create('x'); os.ftruncate(fd, 4096); m = mmap.mmap(fd, 4096)
$SLEEP"
cp /usr/lib/x86_64-linux-gnu/libz.so.1 "$work/z.so"
start pdel /usr/bin/python3.11 -c "
import ctypes, os
ctypes.CDLL('$work/z.so'); os.unlink('$work/z.so')
$SLEEP"
if why=$(sid_missing); then
	echo "FAIL sid python3.14: $why"
	failed=1
else
	start psid chroot "$SID_ROOT" /usr/bin/python3.14 -c "$SLEEP"
fi
sleep 2

expect "pyenv 3.12" "$p312" written
expect "Debian python3.11 with numpy" "$pdeb" written
expect "3000 mappings, several reads" "$pmany" written
expect "a memfd mapping: read the file" "$pmemfd" file
expect "a deleted library: read the file" "$pdel" file
[ -n "${psid:-}" ] && expect "sid python3.14 in its chroot" "$psid" written

# The profiler: later children of a launched program are attached from
# the iterator's records (the first lists of an interpreter, the program
# stopped at its exec and its first child, teach the paths).
"$PYPERF" -v --subprocesses -d 8000 -o "$work/p.pb.gz" -- "$PYENV/3.12.1/bin/python3.12" -c "
import subprocess, sys
for i in range(6):
    subprocess.run([sys.executable, '-c', 'sum(range(10000000))'])
" 2>"$work/v.err"
line=$(grep "mappings:" "$work/v.err")
written=$(echo "$line" | sed -n 's/.*mappings: \([0-9]*\) lists written.*/\1/p')
if [ -z "$written" ] || [ "$written" -lt 4 ]; then
	echo "FAIL profiler: expected >= 4 mapping lists written from the iterator: $line"
	failed=1
else
	echo "ok   profiler: $line"
fi
exit $failed
