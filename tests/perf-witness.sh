#!/bin/sh
# Issue 15: accuracy against an independent witness. With -X perf, CPython
# 3.12 runs each Python call through a trampoline named py::QUALNAME:FILE in
# /tmp/perf-PID.map, and `perf record --call-graph dwarf` unwinds each sample
# from the interrupted registers up to the innermost one: that names the
# Python function running at that instant, by a path that shares nothing
# with ours. Both profile the same process (Debian's docutils rendering a
# large generated document) during the same seconds; the distributions of
# the innermost Python function must agree within sampling noise: total
# variation distance <= 1.25 x the expected noise for the two sample counts
# + 0.01. Prints both figures.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${PYTHON3:=/usr/bin/python3}"
: "${PERF:=perf}"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF and perf"; exit 77; }
command -v "$PERF" >/dev/null 2>&1 ||
	{ echo "SKIP: perf is not installed (apt-get install linux-perf)"; exit 77; }
[ -x /usr/bin/rst2html ] && [ -d /usr/lib/python3/dist-packages/docutils ] ||
	{ echo "SKIP: python3-docutils is not installed (apt-get install python3-docutils)"; exit 77; }
py=${PYENV_ROOT:-/root/.pyenv}/versions/3.12.1/bin/python3.12
[ -x "$py" ] || { echo "SKIP: $py (CPython 3.12, for -X perf) not present"; exit 77; }
work=$(mktemp -d /tmp/pyperf-witness.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; [ -n "$pid" ] && rm -f "/tmp/perf-$pid.map"; rm -rf "$work"' EXIT
seconds=${WITNESS_SECONDS:-5}

"$PYTHON3" "$TOP_SRCDIR/tests/workloads/gen_rst.py" 3000 > "$work/doc.rst"
PYTHONPATH=/usr/lib/python3/dist-packages "$py" -X perf /usr/bin/rst2html "$work/doc.rst" \
	"$work/out.html" &
pid=$!
sleep 2		# past the imports: docutils parsing by then
"$PERF" record -q -e cpu-clock -F 999 --call-graph dwarf -p $pid -o "$work/perf.data" \
	-- sleep "$seconds" > "$work/perf.out" 2>&1 &
perfpid=$!
"$PYPERF" -q -p $pid -d $((seconds * 1000)) --format collapsed -o "$work/ours.txt"
ours=$?
wait $perfpid
theirs=$?
if ! kill -0 $pid 2>/dev/null; then
	echo "FAIL: docutils ended before the sampling did (machine too slow? raise the section count)"
	exit 1
fi
[ $ours = 0 ] || { echo "FAIL: pyperf-pprof exited with $ours"; exit 1; }
[ $theirs = 0 ] || { cat "$work/perf.out"; echo "FAIL: perf record exited with $theirs"; exit 1; }
# perf names the trampolines from /tmp/perf-PID.map, which must still exist.
"$PERF" script -i "$work/perf.data" -F ip,sym > "$work/perf.txt" 2> "$work/script.err" ||
	{ cat "$work/script.err"; echo "FAIL: perf script failed"; exit 1; }
kill $pid; wait $pid 2>/dev/null
rm -f "/tmp/perf-$pid.map"; pid=
"$PYTHON3" - "$work/ours.txt" "$work/perf.txt" <<'PYEOF'
import math, sys

def ours(path):
    dist, skipped = {}, 0
    for line in open(path):
        frames, count = line.rsplit(" ", 1)
        py = [f for f in frames.split(";") if " (" in f]
        if not py:
            skipped += int(count)
            continue
        name, where = py[-1].split(" (", 1)
        key = (name, where.rsplit(":", 1)[0])
        dist[key] = dist.get(key, 0) + int(count)
    return dist, skipped

def theirs(path):
    dist, skipped, found, started = {}, 0, None, False
    for line in open(path).read().split("\n") + [""]:
        line = line.strip()
        if not line:			# end of a sample
            if found:
                dist[found] = dist.get(found, 0) + 1
            elif started:
                skipped += 1
            found, started = None, False
            continue
        started = True
        sym = line.split(None, 1)[1] if " " in line else ""
        if found is None and sym.startswith("py::"):
            name, _, path_ = sym[4:].partition(":")
            found = (name, path_)
    return dist, skipped

a, askip = ours(sys.argv[1])
b, bskip = theirs(sys.argv[2])
na, nb = sum(a.values()), sum(b.values())
if na < 500 or nb < 500:
    sys.exit("FAIL: too few samples with a Python function (pyperf-pprof %d, perf %d)" % (na, nb))
keys = set(a) | set(b)
tvd = 0.5 * sum(abs(a.get(k, 0) / na - b.get(k, 0) / nb) for k in keys)
# E|p1 - p2| for one category ~ sqrt(2/pi) * sd, sd^2 = p(1-p)(1/na + 1/nb),
# p pooled: the expected TVD of two samples of one distribution.
pool = {k: (a.get(k, 0) + b.get(k, 0)) / (na + nb) for k in keys}
noise = 0.5 * sum(math.sqrt(2 / math.pi * p * (1 - p) * (1 / na + 1 / nb)) for p in pool.values())
limit = 1.25 * noise + 0.01
print("innermost Python function: pyperf-pprof %d samples (%d without one), perf %d "
      "(%d without a py:: frame), %d functions" % (na, askip, nb, bskip, len(keys)))
top = sorted(keys, key=lambda k: -pool[k])[:8]
for k in top:
    print("  %6.2f%% %6.2f%%  %s (%s)" % (100 * a.get(k, 0) / na, 100 * b.get(k, 0) / nb,
                                          k[0], k[1].rsplit("/", 1)[-1]))
print("TVD %.4f, expected noise %.4f, limit 1.25 x noise + 0.01 = %.4f" % (tvd, noise, limit))
if tvd > limit:
    sys.exit("FAIL: the distributions differ beyond sampling noise")
print("PASS")
PYEOF
