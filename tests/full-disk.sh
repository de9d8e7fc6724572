#!/bin/sh
# Issue 25 item 4: continuous mode with its output file system full. The
# old session retried the write in a loop (about 200 times a second, one
# "cannot write" line each, 587 lines in 3 s) and burnt a sequence
# number per try. Now: one line when writing fails, none while it keeps
# failing (retried at each interval boundary, not in a loop), one line
# when it works again; no sequence number skipped; the first file written
# then holds the samples of the intervals that failed (its duration
# spans them), and the profiler stays up. A 1 MiB tmpfs is filled after
# the first file and emptied 3.5 s later.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${GO:=go}"
: "${PYTHON3:=/usr/bin/python3}"
py=/usr/bin/python3.11
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF and mount"; exit 77; }
[ -x $py ] || { echo "SKIP: $py not present"; exit 77; }
work=$(mktemp -d /tmp/pyperf-fulldisk.XXXXXX)
mnt=$work/mnt
mkdir "$mnt"
trap 'pkill -f "$work" 2>/dev/null; umount "$mnt" 2>/dev/null; rm -rf "$work"' EXIT
mount -t tmpfs -o size=1m tmpfs "$mnt" ||
	{ echo "SKIP: cannot mount a tmpfs here"; exit 77; }
failed=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; failed=1; }

cp "$TOP_SRCDIR/tests/workloads/ratio.py" "$work/ratio.py"
$py "$work/ratio.py" 60 > /dev/null &
t=$!
sleep 0.5
"$PYPERF" --pid $t -d 0 --interval 1 --no-native -o "$mnt" 2> "$work/err" &
prof=$!
# The first file, then the disk full.
for i in $(seq 100); do
	ls "$mnt" | grep -q '\.pb\.gz$' && break
	sleep 0.1
done
dd if=/dev/zero of="$mnt/fill" bs=4k 2> /dev/null
before=$(ls "$mnt" | grep -c '\.pb\.gz$')
sleep 3.5
rm "$mnt/fill"
sleep 2.5
kill -0 $prof 2> /dev/null && up=yes || up=no
kill -TERM $prof
wait $prof
rc=$?
kill $t
echo "profiler exit $rc, up after recovery: $up; $before file(s) before the disk filled; files: $(ls "$mnt" | tr '\n' ' ')"

nfail=$(grep -c 'cannot write' "$work/err")
nback=$(grep -c 'writing works again' "$work/err")
echo "stderr: $nfail 'cannot write' line(s), $nback 'works again' line(s), $(wc -l < "$work/err") lines in all"
grep -E 'cannot write|works again' "$work/err" | head -3
[ $rc = 0 ] && [ $up = yes ] && pass "stays up (exit $rc)" || fail "stays up" "exit $rc, up $up"
[ "$nfail" = 1 ] && [ "$nback" = 1 ] && pass "one failure line, one recovery line" ||
	fail lines "$nfail failure lines, $nback recovery lines: $(head -c 600 "$work/err")"

# Sequence numbers: 000, 001, ... with none skipped.
seqs=$(ls "$mnt" | sed -n 's/^profile-.*-\([0-9][0-9][0-9]\)\.pb\.gz$/\1/p' | sort | tr '\n' ' ')
want=$(i=0; for s in $seqs; do printf '%03d ' $i; i=$((i + 1)); done)
[ -n "$seqs" ] && [ "$seqs" = "$want" ] && pass "sequence numbers not burnt ($seqs)" ||
	fail "sequence numbers" "'$seqs', want '$want'"

# The first file after the disk was full: it holds the failed intervals.
first=$(ls "$mnt" | grep '\.pb\.gz$' | sort | sed -n "$((before + 1))p")
raw() { "$GO" tool pprof -raw "$mnt/$1" 2> /dev/null; }
# Seconds of a profile's duration_nanos (go tool pprof -raw prints four
# characters of it: "947." is 947 ms).
dur_of() {
	"$PYTHON3" -c 'import sys; sys.path.insert(0, sys.argv[1]); import check_backend_rules as c
print("%.3f" % (sum(v for f, w, v in c.parse_fields(c.load(sys.argv[2])) if f == 10) / 1e9))' \
		"$TOP_SRCDIR/tests" "$mnt/$1"
}
dur=$(dur_of "$first")
samples=$(raw "$first" | sed -n 's/.*counters: samples=\([0-9]*\).*/\1/p')
echo "first after recovery: $first, duration ${dur:-?} s, $samples samples"
# 3.5 s of full disk: at least 2 interval boundaries failed, whatever the
# load; the 1 s interval went on over them.
awk "BEGIN { exit !(${dur:-0} >= 2.5) }" &&
	pass "first file after recovery holds the failed intervals" ||
	fail "held intervals" "duration ${dur:-?} s"
# Its samples cover that time: per second, at least half the rate of the
# run's other files (a 1 s file of a busy thread at 1 kHz has ~1000;
# the held one lost none of its seconds).
other=0 otherdur=0
for f in $(ls "$mnt" | grep '\.pb\.gz$'); do
	[ "$f" = "$first" ] && continue
	n=$(raw "$f" | sed -n 's/.*counters: samples=\([0-9]*\).*/\1/p')
	d=$(dur_of "$f")
	echo "  $f: ${n:-?} samples in ${d:-?} s"
	other=$((other + ${n:-0}))
	otherdur=$(awk "BEGIN { print $otherdur + ${d:-0} }")
done
awk "BEGIN { r = $otherdur > 0 ? $other / $otherdur : 0; h = ${samples:-0} / (${dur:-1} > 0 ? ${dur:-1} : 1);
	printf \"samples per second: %.0f in the held file, %.0f in the others\\n\", h, r; exit !(r > 0 && h >= r / 2) }" &&
	pass "held samples kept" || fail "held samples" "too few samples in $first"
exit $failed
