#!/bin/sh
# --format collapsed writes folded stacks: root first, ';'-separated, a
# count at the end; the counts add up to the samples taken.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
py=/usr/bin/python3.11
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
[ -x $py ] || { echo "SKIP: $py not present"; exit 77; }
work=$(mktemp -d /tmp/pyperf-collapsed.XXXXXX)
$py "$TOP_SRCDIR/tests/workloads/ratio.py" 10 > /dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$work"' EXIT
sleep 0.5
"$PYPERF" --pid $pid -d 1000 --no-native --format collapsed -o "$work/out.txt" 2> "$work/log" ||
	{ cat "$work/log"; echo "FAIL: pyperf-pprof failed"; exit 1; }
cat "$work/log"
head -3 "$work/out.txt"
samples=$(sed -n 's/^pyperf-pprof: \([0-9]*\) samples.*/\1/p' "$work/log")
awk -v want="$samples" '
	!/^<module> \(.*ratio\.py:[0-9]+\);main \(/ { bad++ }
	$NF !~ /^[0-9]+$/ { bad++ }
	/;leaf \(.*ratio\.py:[0-9]+\) [0-9]+$/ { leaf += $NF }
	{ total += $NF }
	END {
		printf "total %d (samples %d), leaf %d, bad lines %d\n", total, want, leaf, bad
		exit !(bad == 0 && total == want && leaf > 0.8 * total)
	}' "$work/out.txt" || { echo "FAIL: collapsed output wrong"; exit 1; }
echo PASS
