#!/bin/sh
# A whole profiling run under valgrind's memcheck: pyperf-pprof profiles
# tests/workloads/native.py under /usr/bin/python3.11 for 2 s (BPF load,
# perf events, ring buffer, native unwinding and symbolization, pprof
# write) and must end with no memcheck error and no definitely lost block.
#
# tests/valgrind.supp holds the only suppressions: false positives of
# valgrind's bpf(2) model inside libbpf (see the file). Valgrind also
# prints "WARNING: unhandled eBPF command 28" (BPF_LINK_CREATE, which
# attaches the program to each CPU's perf event) and "35"
# (BPF_PROG_BIND_MAP, libbpf binding .rodata in a feature probe): those
# commands take no user buffer valgrind would have to mark, so the
# warnings cost nothing but the checking of their arguments; they are
# not errors and are shown, not failed on.
#
# Exit 0 pass, 1 fail, 77 skip (not root, no valgrind, no python3.11, or
# a sanitizer build, which valgrind cannot run).
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
py=/usr/bin/python3.11
skip() { echo "SKIP valgrind: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root for BPF and perf events"
command -v valgrind >/dev/null 2>&1 || skip "valgrind not installed (Debian: valgrind)"
[ -x $py ] || skip "$py not present"
[ -x "$PYPERF" ] || skip "$PYPERF not built"
if grep -q __asan_init "$PYPERF" 2>/dev/null; then
	skip "$PYPERF is built with --enable-sanitizers; valgrind cannot run AddressSanitizer binaries"
fi

work=$(mktemp -d /tmp/pyperf-valgrind.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT INT TERM

# With the C extension of the e2e test when Python.h is there, for the
# Python -> C -> Python merge path.
include=$($py -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
if [ -f "$include/Python.h" ] && command -v gcc >/dev/null &&
	gcc -shared -fPIC -O2 -fno-omit-frame-pointer -I"$include" \
		-o "$work/cbext$($py -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')" \
		"$TOP_SRCDIR/tests/ext/cbext.c"; then
	PYTHONPATH=$work; export PYTHONPATH
fi

# Valgrind's start-up and the BPF load take tens of seconds on a busy
# machine: the workload runs long and is killed at the end.
$py "$TOP_SRCDIR/tests/workloads/native.py" 900 > "$work/ready" &
pid=$!
i=0
until grep -q ready "$work/ready" 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 300 ] && { echo "FAIL valgrind: workload did not start"; exit 1; }
	sleep 0.1
done

valgrind --leak-check=full --errors-for-leak-kinds=definite \
	--show-leak-kinds=definite --error-exitcode=99 --num-callers=40 \
	--suppressions="$TOP_SRCDIR/tests/valgrind.supp" --log-file="$work/vg.log" \
	"$PYPERF" --pid $pid -d 2000 -o "$work/p.pb.gz" -v > "$work/out" 2>&1
rc=$?
kill $pid 2>/dev/null; wait $pid 2>/dev/null; pid=

sed 's/^/  /' "$work/out"
grep -- '^--[0-9]*-- WARNING' "$work/vg.log" | sed 's/^--[0-9]*-- /  valgrind (not an error): /' | sort | uniq -c
samples=$(sed -n 's/^pyperf-pprof: \([0-9]*\) samples.*/\1/p' "$work/out" | tail -1)
summary=$(grep 'ERROR SUMMARY' "$work/vg.log" | sed 's/^==[0-9]*== //')
lost=$(grep 'definitely lost:' "$work/vg.log" | sed 's/^==[0-9]*== *//')
echo "valgrind: exit $rc; $summary; ${lost:-definitely lost: 0 bytes}; ${samples:-0} samples"

failed=0
if [ $rc = 99 ]; then
	echo "FAIL valgrind: memcheck errors or definite leaks:"
	sed -n '/^==[0-9]*== [A-Z0-9]/,/^==[0-9]*== $/p' "$work/vg.log" | grep -v 'HEAP SUMMARY\|LEAK SUMMARY' | head -150
	failed=1
elif [ $rc != 0 ]; then
	echo "FAIL valgrind: pyperf-pprof exited with $rc under valgrind"
	tail -30 "$work/vg.log"
	failed=1
fi
if [ "${samples:-0}" -lt 1 ] || [ ! -s "$work/p.pb.gz" ]; then
	echo "FAIL valgrind: no samples written: the run did not exercise the sample path"
	failed=1
fi
[ $failed = 0 ] && echo "PASS valgrind"
exit $failed
