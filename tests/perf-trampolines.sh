#!/bin/sh
# Issue 15, item 1: CPython's perf trampolines (-X perf on 3.12,
# PYTHONPERFSUPPORT=1 on 3.13). Native stacks must unwind through them and
# merge with the Python frames in >= 98% of samples, the trampolines must be
# hidden, and the Python frames must be exactly the program's. Each case
# runs twice: libunwind over a stack copy (--unwind user), and the BPF
# unwinder (--unwind kernel), whose tables for the trampolines' anonymous
# memory are synthesised from its code (src/live/ktables.c).
# Issue 22, item 2: the rules come from the target's own template
# (_Py_trampoline_func_start..end), whatever its shape: also -X perf_jit
# (3.13+, same arena, chunks padded for its jitdump's unwind data) and
# Debian sid's 3.14/3.15 (endbr64; push %rbp; mov %rsp,%rbp; call *%rcx;
# pop %rbp; ret), run in the sid chroot $SID_ROOT, which must exist.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${PYTHON3:=/usr/bin/python3}"
: "${SID_ROOT:=${PYPERF_SID_ROOT:-/var/cache/pyperf-pprof/sid}}"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
work=$(mktemp -d /tmp/pyperf-tramp.XXXXXX)
pid=
sidwork=$SID_ROOT/tmp/$(basename "$work")
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work" "$sidwork"' EXIT
root=${PYENV_ROOT:-/root/.pyenv}/versions
depth=30
failed=0 ran=0

# run NAME [VAR=VALUE...] PYTHON [OPTIONS...]: $script under that command,
# profiled with --unwind $unwind; $troot: the target's root (its perf map
# is there)
script=$TOP_SRCDIR/tests/workloads/deep.py troot=
run() {
	name="$1 --unwind $unwind"
	shift
	rm -f "$work/ready"
	env "$@" "$script" 30 $depth > "$work/ready" &
	pid=$!
	i=0
	until grep -q ready "$work/ready" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1
	done
	"$PYPERF" --pid $pid -d 3000 --unwind $unwind --format collapsed -o "$work/p.txt" \
		2> "$work/err"
	kill $pid; wait $pid 2>/dev/null
	rm -f "$troot/tmp/perf-$pid.map" "$troot/tmp/jit-$pid.dump"; pid=
	cat "$work/err"
	if "$PYTHON3" - "$work/p.txt" "$work/err" $depth <<'PYEOF'
import re, sys
stacks, err, depth = sys.argv[1], open(sys.argv[2]).read(), int(sys.argv[3])
m = re.search(r"native: (\d+) stacks unwound, (\d+) stopped early, \d+ stack copies failed, "
              r"(\d+) merge mismatches, .*?(\d+) perf trampoline frames hidden", err)
if not m:
    sys.exit("no native counters in the summary")
n, early, mism, hidden = map(int, m.groups())
want = ["<module>", "main"] + ["recurse"] * (depth + 1) + ["bottom"]
total = good = bad = 0
for line in open(stacks):
    frames, count = line.rsplit(" ", 1)
    frames, count = frames.split(";"), int(count)
    total += count
    py = [f.split(" (")[0] for f in frames if " (" in f]
    if "bottom" in py and py == want:
        good += count
    # [unknown]: code in anonymous memory, where the trampolines live
    if any(f in ("[unknown]", "[unreadable Python frame]", "[truncated]") for f in frames):
        bad += count
print("%d samples: %d stopped early, %d merge mismatches, %d trampolines hidden; "
      "%d with the exact Python stack, %d with a placeholder or an anonymous frame"
      % (total, early, mism, hidden, good, bad))
errors = []
if n < 200 or total < 200:
    errors.append("too few samples (%d)" % total)
if early > 0.02 * n or mism > 0.02 * n:
    errors.append("native stacks unwound and merged in under 98% of samples")
if hidden < n * depth:
    errors.append("trampolines were not crossed in every sample (%d hidden)" % hidden)
if good < 0.9 * total:
    errors.append("only %d of %d samples have the exact Python stack" % (good, total))
if bad > 0.01 * total:
    errors.append("%d samples show placeholder or anonymous frames" % bad)
for e in errors:
    print("error: " + e)
sys.exit(1 if errors else 0)
PYEOF
	then
		echo "PASS $name"
	else
		echo "FAIL $name"; failed=1
	fi
}

for unwind in user kernel; do
	if [ -x "$root/3.12.1/bin/python3.12" ]; then
		ran=$((ran + 1))
		run "3.12 -X perf" "$root/3.12.1/bin/python3.12" -X perf
	else
		echo "SKIP 3.12: $root/3.12.1/bin/python3.12 not present"
	fi
	if [ -x "$root/3.13.0/bin/python3.13" ]; then
		ran=$((ran + 2))
		run "3.13 PYTHONPERFSUPPORT=1" PYTHONPERFSUPPORT=1 "$root/3.13.0/bin/python3.13"
		run "3.13 -X perf_jit" "$root/3.13.0/bin/python3.13" -X perf_jit
	else
		echo "SKIP 3.13: $root/3.13.0/bin/python3.13 not present"
	fi
	# Debian's own builds (GCC 16, PGO + LTO, stripped, CET), the template
	# in .rodata.
	if [ ! -x "$SID_ROOT/usr/bin/python3.14" ] || [ ! -x "$SID_ROOT/usr/bin/python3.15" ]; then
		echo "FAIL sid: no python3.14 and python3.15 in the Debian sid chroot $SID_ROOT"
		failed=1
		continue
	fi
	mkdir -p "$sidwork"
	cp "$TOP_SRCDIR/tests/workloads/deep.py" "$sidwork/"
	script=/tmp/$(basename "$work")/deep.py troot=$SID_ROOT
	for py in 3.14 3.15; do
		ran=$((ran + 2))
		run "sid $py -X perf" chroot "$SID_ROOT" python$py -X perf
		run "sid $py -X perf_jit" chroot "$SID_ROOT" python$py -X perf_jit
	done
	script=$TOP_SRCDIR/tests/workloads/deep.py troot=
done
[ $ran = 0 ] && { echo "SKIP: no CPython 3.12 or 3.13 present"; exit 77; }
exit $failed
