#!/bin/sh
# Issue 25 item 4: continuous mode with its output file system full. The
# old session retried the write in a loop, one "cannot write" line each
# time (587 lines in 3 s in the issue's whole-host run, 25 in this
# test's 3.5 s), and burnt a sequence number per try. Now: one line when writing fails, none while it keeps
# failing (retried at each interval boundary, not in a loop), one line
# when it works again; no sequence number skipped; the first file written
# then holds the samples of the intervals that failed (its duration
# spans them, its samples match the target's CPU time over it), and the
# profiler stays up. A 1 MiB tmpfs is filled after
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
# The target's CPU time (utime + stime, clock ticks), every 100 ms.
while kill -0 $t 2> /dev/null; do
	echo "$(date +%s%N) $(cut -d' ' -f14,15 /proc/$t/stat 2> /dev/null)"
	sleep 0.1
done > "$work/cpu" &
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
# Its samples are those of that time: cpu-clock samples the target once
# per millisecond of its CPU time (-c 1000000, the default), read every
# 100 ms from /proc while the profiler ran; a file that kept only its last
# interval would have a third of them or less. The records enter the
# interval they are read in (the ring buffer is read every 100 ms at
# most): 70 % less 100 samples allows that (measured: 99-105 %, 115 % in
# an ASan build on a loaded machine, the target getting 0.46 s of CPU).
"$PYTHON3" - "$TOP_SRCDIR/tests" "$mnt/$first" "$work/cpu" "$(getconf CLK_TCK)" "${samples:-0}" <<'EOS'
import sys
sys.path.insert(0, sys.argv[1])
import check_backend_rules as c
f = {n: v for n, w, v in c.parse_fields(c.load(sys.argv[2])) if n in (9, 10)}
t0, t1 = f.get(9, 0), f.get(9, 0) + f.get(10, 0)
pts = []
for line in open(sys.argv[3]):
    x = line.split()
    if len(x) == 3:
        pts.append((int(x[0]), (int(x[1]) + int(x[2])) / float(sys.argv[4])))
def cpu_at(t):
    """The target's CPU seconds at time t, between the two reads around it."""
    for (a, ca), (b, cb) in zip(pts, pts[1:]):
        if a <= t <= b:
            return ca + (cb - ca) * (t - a) / max(b - a, 1)
    return None
c0, c1 = cpu_at(t0), cpu_at(t1)
if c0 is None or c1 is None:
    print("held samples: the CPU log does not cover the file's time")
    sys.exit(1)
want = (c1 - c0) * 1000
got = int(sys.argv[5])
print("held file: %d samples for %.2f s of the target's CPU time (%.0f %%)"
      % (got, c1 - c0, 100.0 * got / max(want, 1)))
sys.exit(0 if got >= 0.7 * want - 100 else 1)
EOS
[ $? = 0 ] && pass "held samples kept" || fail "held samples" "too few samples in $first"
exit $failed
