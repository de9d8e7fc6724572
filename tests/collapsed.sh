#!/bin/sh
# --format collapsed writes folded stacks: root first, ';'-separated, a
# count at the end; the counts add up to the samples taken. Without -o the
# file is profile.folded, not profile.pb.gz (issue 24, finding 4), and in a
# directory the series' names end in .folded.
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

# The default name follows the format.
case $PYPERF in /*) ;; *) PYPERF=$PWD/$PYPERF;; esac
mkdir "$work/cwd" "$work/dir"
(cd "$work/cwd" && "$PYPERF" --pid $pid -d 300 --no-native --format collapsed -q) ||
	{ echo "FAIL: pyperf-pprof --format collapsed without -o failed"; exit 1; }
"$PYPERF" --pid $pid -d 300 --no-native --format collapsed -q -o "$work/dir/" ||
	{ echo "FAIL: pyperf-pprof --format collapsed -o DIR/ failed"; exit 1; }
have=$(cd "$work/cwd" && ls); series=$(cd "$work/dir" && ls)
echo "without -o: '$have'; into a directory: '$series'"
if [ "$have" != profile.folded ] || ! grep -q '^<module> (.*ratio\.py' "$work/cwd/profile.folded"; then
	echo "FAIL: --format collapsed without -o must write folded stacks to profile.folded"; exit 1
fi
case $series in profile-*.folded) ;; *)
	echo "FAIL: --format collapsed into a directory must write profile-*.folded"; exit 1;;
esac
echo PASS
