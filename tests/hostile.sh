#!/bin/sh
# A target that keeps overwriting its own code objects (and, before 3.11,
# its frame chain) with garbage: the profiler exits 0 with a valid
# profile and counts the errors (unreadable frames, or stale cache
# entries where a capture names the overwritten code object); the target
# is not harmed (exit 0).
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${GO:=go}"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
work=$(mktemp -d /tmp/pyperf-hostile.XXXXXX)
export HOME=$work
trap 'rm -rf "$work"' EXIT
root=${PYENV_ROOT:-/root/.pyenv}/versions
failed=0 ran=0
for py in /usr/bin/python3.11 $root/3.8.18/bin/python3.8 $root/3.13.0/bin/python3.13; do
	if [ ! -x "$py" ]; then echo "SKIP $py: not present"; continue; fi
	ran=$((ran + 1))
	"$py" "$TOP_SRCDIR/tests/workloads/hostile.py" 4 > "$work/out" &
	target=$!
	sleep 0.5
	"$PYPERF" --pid $target -d 2500 -o "$work/h.pb.gz" -v > "$work/log" 2>&1
	rc=$?
	wait $target
	trc=$?
	bad=$(sed -n 's/.* \([0-9]*\) unreadable frames.*/\1/p' "$work/log")
	stale=$(sed -n 's/.* stale=\([0-9]*\).*/\1/p' "$work/log")
	"$GO" tool pprof -raw "$work/h.pb.gz" > /dev/null 2>&1
	parsed=$?
	echo "$py: profiler exit $rc, target exit $trc, $bad unreadable frames, $stale stale cache entries, pprof parse $parsed"
	# The garbage must be noticed: frames counted unreadable, or cache
	# entries found stale (code objects captured at their first sample,
	# issue 23, are named from their capture once overwritten).
	if [ $rc = 0 ] && [ $trc = 0 ] && [ $parsed = 0 ] &&
	   { [ "${bad:-0}" -gt 0 ] || [ "${stale:-0}" -gt 0 ]; }; then
		echo "PASS $py"
	else
		cat "$work/log"; echo "FAIL $py"; failed=1
	fi
done
[ $ran = 0 ] && { echo "SKIP: no interpreter present"; exit 77; }
exit $failed
