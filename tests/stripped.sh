#!/bin/sh
# Issue 22, item 4: symbols are a bonus, never a requirement. Every
# interpreter of the suite runs once as a stripped copy:
#  - pyenv 3.6.15 ... 3.13.0: libpython and the python binary copied with
#    `strip --strip-all` under a scratch prefix (the stdlib linked in), run
#    with LD_LIBRARY_PATH, which the binary's RUNPATH does not override;
#    /proc/PID/maps must show the copy mapped and the original not;
#  - Debian's /usr/bin/python3.11 (already stripped) copied so that its
#    debug file from python3.11-dbg is not found: .gnu_debuglink removed
#    and the build-id note's bytes inverted (the object layer looks the
#    debug file up by build id, then by debuglink, and rejects a candidate
#    whose build id differs); tests/unit/test_pyeval --pid asks the
#    profiler's own object layer and must see no debug file.
# On each, a deep real program (docutils rendering a generated document in
# a loop; tests/workloads/deep.py on 3.6, which today's docutils does not
# support; 40 deep: at ~3 native frames a call, 100 would pass the BPF
# walk's 256 native frames), profiled by pid:
#  1. --all-native, 2 s: at most 2 stopped-early + copy-failed +
#     merge-mismatch per 100 stacks (the summary's "native:" line) and at
#     most 2 % of samples with a Python frame root-ward of a start-up frame
#     (_start, __libc_start_call_main, __libc_start_main, start_thread,
#     clone3) in the collapsed output;
#  2. default (internals hidden), 1.5 s, on the copy and on the original:
#     every native function the copy's profile shows in at least 2 % of its
#     samples is one the original's profile shows too (an internal of the
#     stripped interpreter would show as a frame the original hides; at
#     2 %, ~12 samples expected, sampling alone does not miss one).
# Prints one line per interpreter and a table; exit 0 pass, 1 fail, 77 skip.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${PYTHON3:=/usr/bin/python3}"
: "${TEST_PYEVAL:=$(dirname "$PYPERF")/tests/unit/test_pyeval}"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
for tool in strip objcopy readelf; do
	command -v $tool >/dev/null 2>&1 || { echo "FAIL: $tool (binutils) not installed"; exit 1; }
done
[ -x "$TEST_PYEVAL" ] || { echo "FAIL: $TEST_PYEVAL is not built (make check builds it)"; exit 1; }
[ -d /usr/lib/python3/dist-packages/docutils ] ||
	{ echo "FAIL: python3-docutils is not installed (contrib/bootstrap.sh installs it)"; exit 1; }
work=$(mktemp -d /tmp/pyperf-stripped.XXXXXX)
chmod 755 "$work"
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
root=${PYENV_ROOT:-/root/.pyenv}/versions
failed=0
"$PYTHON3" "$TOP_SRCDIR/tests/workloads/gen_rst.py" 30 > "$work/doc.rst"
cat > "$work/loop.py" <<'EOF'
import sys, time
from docutils.core import publish_string
src = open(sys.argv[2]).read()
end = time.time() + float(sys.argv[1])
publish_string(src, writer_name="html")	# its lazy imports (dlopen) before sampling
print("ready", flush=True)
while time.time() < end:
    publish_string(src, writer_name="html")
EOF

# start SECONDS PYTHON [VAR=VALUE...]: the workload ($workload: docutils
# or deep) for that long in the background once it is ready (imports
# done); sets $pid.
start() {
	secs=$1 py=$2
	shift 2
	rm -f "$work/ready"
	case $workload in
	deep) env PYTHONPATH=/usr/lib/python3/dist-packages "$@" "$py" \
		"$TOP_SRCDIR/tests/workloads/deep.py" "$secs" 40 > "$work/ready" & ;;
	*) env PYTHONPATH=/usr/lib/python3/dist-packages "$@" "$py" \
		"$work/loop.py" "$secs" "$work/doc.rst" > "$work/ready" & ;;
	esac
	pid=$!
	i=0
	until grep -q ready "$work/ready" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 300 ] && return 1
		sleep 0.1
	done
}

stop() {
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	pid=
}

# strip_pyenv VERSION: $work/VERSION/{bin,lib} with stripped copies; prints
# the copy's python and its libpython.
strip_pyenv() {
	v=$1 minor=$(echo "$1" | cut -d. -f1,2)
	d=$work/$v
	mkdir -p "$d/bin" "$d/lib"
	lib=$(cd "$root/$v/lib" && ls libpython$minor*.so.1.0)
	strip --strip-all -o "$d/lib/$lib" "$root/$v/lib/$lib" &&
		strip --strip-all -o "$d/bin/python$minor" "$root/$v/bin/python$minor" &&
		ln -s "$root/$v/lib/python$minor" "$d/lib/python$minor" &&
		echo "$d/bin/python$minor $d/lib/$lib"
}

# strip_debian: Debian's python3.11 whose debug file cannot be found.
strip_debian() {
	d=$work/debian/bin
	mkdir -p "$d"
	objcopy --remove-section .gnu_debuglink /usr/bin/python3.11 "$d/python3.11" &&
		"$PYTHON3" - "$d/python3.11" <<'EOF' && echo "$d/python3.11 $d/python3.11"
import subprocess, sys
path = sys.argv[1]
out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
for line in out.splitlines():
    if ".note.gnu.build-id" in line:
        f = line.split("]", 1)[1].split()
        off, size = int(f[3], 16), int(f[4], 16)
        break
else:
    sys.exit("no build-id note")
with open(path, "r+b") as fh:
    fh.seek(off + 16)		# namesz, descsz, type, "GNU\0": then the id
    desc = fh.read(size - 16)
    fh.seek(off + 16)
    fh.write(bytes(b ^ 0xff for b in desc))
EOF
}

# check_maps MODULE_COPY ORIGINAL: the copy is mapped in $pid, not the original.
check_maps() {
	grep -q " $1\$" "/proc/$pid/maps" && ! grep -q " $2\$" "/proc/$pid/maps"
}

# case NAME ORIGINAL_PYTHON ORIGINAL_MODULE COPY_PYTHON COPY_MODULE [VAR=VALUE...]
run_case() {
	name=$1 opy=$2 omod=$3 spy=$4 smod=$5
	shift 5
	if ! start 120 "$spy" "$@"; then
		stop; echo "FAIL $name: the stripped copy did not start"; failed=1; return
	fi
	if ! check_maps "$smod" "$omod"; then
		stop; echo "FAIL $name: /proc/$pid/maps does not map the copy $smod alone"; failed=1; return
	fi
	"$TEST_PYEVAL" --pid $pid > "$work/pyeval.txt" 2>&1
	"$PYPERF" --pid $pid -d 2000 --all-native --format collapsed -v -o "$work/all.txt" 2> "$work/all.err"
	"$PYPERF" --pid $pid -d 1500 --format collapsed -o "$work/def.txt" 2> "$work/def.err"
	stop
	if start 120 "$opy"; then
		"$PYPERF" --pid $pid -d 1500 --format collapsed -o "$work/ref.txt" 2> "$work/ref.err"
	fi
	stop
	grep -h "eval loop" "$work/pyeval.txt" | sed 's/^# /  /'
	grep -h "native:\|symbols:" "$work/all.err" | sed 's/^pyperf-pprof: /  /'
	if "$PYTHON3" - "$name" "$work" >> "$work/table" <<'PYEOF'
import re, sys
name, work = sys.argv[1], sys.argv[2]
STARTUP = {"_start", "__libc_start_call_main", "__libc_start_main", "start_thread", "clone3"}

errors, notes = [], []

# Garbage in a frame name (a control character, a newline that cuts the
# line) is noted, not failed on: seen on the originals as well (3.7-3.10,
# the class part of "Class.method" read from a racing self), not a matter
# of symbols.
def stacks(path):
    try:
        lines = open(path, "rb").read().decode("utf-8", "replace").split("\n")
    except OSError:
        return
    for line in filter(None, lines):
        m = re.match(r"^(.+) (\d+)$", line)
        if not m:
            notes.append("line cut in %s: %r" % (path.rsplit("/", 1)[-1], line[-120:]))
            continue
        if any(ord(c) < 0x20 for c in m.group(1)):
            notes.append("control character in a frame name in %s: %r"
                         % (path.rsplit("/", 1)[-1], m.group(1)[-120:]))
        yield m.group(1).split(";"), int(m.group(2))

def is_py(f):
    return " (" in f and f.endswith(")")

pyeval = open(work + "/pyeval.txt").read()
if "0 debug files" not in pyeval or "no static symbol" not in pyeval:
    errors.append("the interpreter copy was not read without symbols: " + pyeval.strip())
total = out = 0
for frames, count in stacks(work + "/all.txt"):
    total += count
    last_start = max((i for i, f in enumerate(frames) if f in STARTUP), default=-1)
    if any(is_py(f) for f in frames[:last_start]):
        out += count
err = open(work + "/all.err").read()
m = re.search(r"native: (\d+) stacks unwound, (\d+) stopped early, (\d+) stack copies failed, "
              r"(\d+) merge mismatches", err)
if not m:
    errors.append("no native counters in the --all-native summary")
    n = early = copyf = mism = 0
else:
    n, early, copyf, mism = map(int, m.groups())
bad = early + copyf + mism
if total < 100:
    errors.append("too few --all-native samples (%d)" % total)
if bad > 0.02 * max(n, 1):
    errors.append("%d stopped early + %d copies failed + %d mismatches of %d stacks (> 2 per 100)"
                  % (early, copyf, mism, n))
if out > 0.02 * max(total, 1):
    errors.append("%d of %d samples with Python frames root-ward of start-up frames (> 2%%)"
                  % (out, total))

# Names, not where the time went: [kernel] (a sample taken in a system
# call) passes 2 % in one run and not the other as the machine's load
# has it (seen at load average 11 on 3.6).
def native_names(path):
    tot, seen = 0, {}
    for frames, count in stacks(path):
        tot += count
        for f in set(f for f in frames if not is_py(f) and f != "[kernel]"):
            seen[f] = seen.get(f, 0) + count
    return tot, seen

dtot, dnames = native_names(work + "/def.txt")
rtot, rnames = native_names(work + "/ref.txt")
extra = sorted(f for f, c in dnames.items() if c >= 0.02 * dtot and f not in rnames)
if dtot < 50 or rtot < 50:
    errors.append("too few default-mode samples (copy %d, original %d)" % (dtot, rtot))
if extra:
    errors.append("shown by default on the stripped copy, not on the original: " + ", ".join(extra))
only_ref = sorted(f for f, c in rnames.items() if c >= 0.02 * rtot and f not in dnames)
print("%-22s %6d %7.2f %7.2f %9d %14s %s" % (
    name, n, 100.0 * bad / max(n, 1), 100.0 * out / max(total, 1), len(dnames),
    "%d (%d)" % (len(extra), len(only_ref)), "ok" if not errors else "FAIL"))
for e in errors:
    sys.stderr.write("  error: %s\n" % e)
for e in notes:
    sys.stderr.write("  note: %s\n" % e)
if only_ref:
    sys.stderr.write("  note: shown on the original only (names a stripped file lacks): %s\n"
                     % ", ".join(only_ref))
sys.exit(1 if errors else 0)
PYEOF
	then
		echo "PASS $name"
	else
		echo "FAIL $name"; failed=1
	fi
}

printf "%-22s %6s %7s %7s %9s %14s\n" interpreter stacks "bad %" "out %" "shown" "extra (orig)" > "$work/table"
for v in 3.6.15 3.7.16 3.8.18 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0; do
	minor=$(echo "$v" | cut -d. -f1,2)
	if [ ! -x "$root/$v/bin/python$minor" ]; then
		echo "FAIL $v: $root/$v/bin/python$minor is not installed (the suite's interpreters)"
		failed=1
		continue
	fi
	set -- $(strip_pyenv "$v")
	if [ $# -ne 2 ]; then
		echo "FAIL $v: could not make its stripped copy"; failed=1; continue
	fi
	olib=$(cd "$root/$v/lib" && ls libpython$minor*.so.1.0)
	workload=docutils
	[ "$minor" = 3.6 ] && workload=deep
	run_case "pyenv $v stripped" "$root/$v/bin/python$minor" "$root/$v/lib/$olib" "$1" "$2" \
		LD_LIBRARY_PATH="$(dirname "$2")"
done
if [ -x /usr/bin/python3.11 ]; then
	set -- $(strip_debian)
	workload=docutils
	if [ $# -eq 2 ]; then
		run_case "Debian 3.11 no dbg" /usr/bin/python3.11 /usr/bin/python3.11 "$1" "$2"
	else
		echo "FAIL Debian 3.11: could not make its copy"; failed=1
	fi
else
	echo "FAIL: /usr/bin/python3.11 (Debian's) is not installed"; failed=1
fi
echo "# stacks: --all-native stacks unwound; bad: stopped early + copies failed + merge"
echo "# mismatches per 100 (<= 2); out: samples with Python frames root-ward of start-up"
echo "# frames, % (<= 2); shown: native names in the default profile; extra: of those"
echo "# (>= 2 % of samples) not shown for the original (must be 0), (orig): the reverse"
cat "$work/table"
exit $failed
