#!/bin/sh
# Issue 15: a deep pure-Python program nobody here wrote. Debian's docutils
# (python3-docutils) renders a generated 400-section reST document to HTML
# (rst2html) under Debian's stripped /usr/bin/python3.11, pyenv's 3.8 and
# 3.10 (methods named from self's type: never a garbage class name), and
# pyenv's 3.12 and 3.13 with -X perf (perf trampolines on a real program); issue 22:
# under Debian sid's own python3.14 and python3.15 (stripped, no debug
# files, GCC 16 with PGO and LTO), plain and with -X perf, in their chroot
# (tests/sid-common.sh; missing, those cases fail) with the chroot's
# docutils and rst2html. The profile's shape must be docutils': its parser
# (parsers/rst/states.py) and writer (writers/) under rst2html's <module>
# -> publish_cmdline -> Publisher, deep stacks, few placeholders; native
# stacks unwound and merged in >= 98% of samples (at most 2 stopped-early +
# copy-failed + merge-mismatch per 100, issue 15), with -X perf too. Every
# run is --all-native, so that the process's start-up frames (_start,
# __libc_start_main, start_thread, clone3...) are in each stack: at most 2%
# of samples may have a Python frame root-ward of them (issue 22: Python
# frames appended at the root instead of merged into the native stack).
# Issue 23, item 3: at most 0.2 % of the samples with a placeholder frame,
# those inside an import included (a module's body freed at the end of its
# import, before user space read its code object: 2.7-5.4 % of the samples
# before the BPF program captured new code objects), and no frame named
# from garbage (freed memory read as a code object or a class) anywhere.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${PYTHON3:=/usr/bin/python3}"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
[ -x /usr/bin/rst2html ] && [ -d /usr/lib/python3/dist-packages/docutils ] ||
	{ echo "SKIP: python3-docutils is not installed (apt-get install python3-docutils)"; exit 77; }
. "$TOP_SRCDIR/tests/sid-common.sh"
work=$(mktemp -d /tmp/pyperf-docutils.XXXXXX)
sid_work=
trap 'rm -rf "$work" $sid_work' EXIT
"$PYTHON3" "$TOP_SRCDIR/tests/workloads/gen_rst.py" 400 > "$work/doc.rst"
root=${PYENV_ROOT:-/root/.pyenv}/versions
failed=0

# run NAME MAX_BAD WHERE [VAR=VALUE...] PYTHON [OPTIONS...]: WHERE is host,
# or sid for PYTHON inside the sid chroot, on a copy of the document under
# its /tmp (and its own /usr/bin/rst2html and docutils). MAX_BAD: per 100
# samples, both the samples not unwound and merged and those with Python
# frames out of place.
run() {
	name=$1 maxmm=$2 where=$3
	shift 3
	if [ "$where" = sid ]; then
		set -- chroot "$SID_ROOT" env "$@"
		doc=$(sid_path "$sid_work")/doc.rst out=$(sid_path "$sid_work")/out.html tmp=$SID_ROOT/tmp
	else
		set -- env "$@"
		doc=$work/doc.rst out=$work/out.html tmp=/tmp
	fi
	if ! PYTHONPATH=/usr/lib/python3/dist-packages "$PYPERF" -d 0 --all-native \
		--format collapsed -o "$work/p.txt" -- "$@" /usr/bin/rst2html "$doc" "$out" \
		2> "$work/err"; then
		cat "$work/err"; echo "FAIL $name: the profiled run failed"; failed=1; return
	fi
	# -X perf leaves CPython's /tmp/perf-PID.map behind (the chroot's /tmp
	# for a process inside it; the same pid, no pid namespace).
	for pid in $(sed -n 's/^pyperf-pprof: pid \([0-9]*\) .*/\1/p' "$work/err"); do
		rm -f "$tmp/perf-$pid.map"
	done
	grep -E "samples|errors|native:" "$work/err"
	if "$PYTHON3" - "$work/p.txt" "$work/err" "$maxmm" <<'PYEOF'
import re, statistics, sys
stacks, err, maxmm = sys.argv[1], open(sys.argv[2]).read(), float(sys.argv[3])
total = parser = writer = either = nested = placeholders = import_placeholders = 0
garbage = 0
bad_names = set()
misplaced = rooted = 0
depths = []
# The process's own start-up frames: nothing of the program is root-ward
# of them in a merged stack.
STARTUP = {"_start", "__libc_start_main", "__libc_start_call_main", "start_thread",
           "clone3", "clone"}
# docutils 0.21+ (Debian sid): rst2html's <module> calls core.rst2html,
# which calls core.rst2something, then publish_cmdline; 0.19 (Debian 12)
# calls publish_cmdline itself.
WRAPPERS = ("rst2html /usr/lib/python3/dist-packages/docutils/core.py",
            "rst2something /usr/lib/python3/dist-packages/docutils/core.py")
for line in open(stacks):
    frames, count = line.rsplit(" ", 1)
    frames, count = frames.split(";"), int(count)
    total += count
    py = [f for f in frames if " (" in f]
    start = [i for i, f in enumerate(frames) if f in STARTUP]
    if start:
        rooted += count
        if any(" (" in f for f in frames[:start[0]]):
            misplaced += count
    # Deep stacks of the program: samples without Python frames (start-up,
    # and the finalization of docutils 0.23's objects, ~19 % of a sid run)
    # are not counted in the median.
    if py:
        depths += [len(py)] * count
    # A name that is no (dotted) identifier: on <=3.10 a method's class
    # named from a self already freed; a code object freed and its memory
    # reused before user space read it (issue 23, item 3: what was read
    # names a frame only where it is the code object the BPF program
    # captured at that address). Judged on every interpreter.
    seg = r"(<[a-z]+>|[A-Za-z_][A-Za-z0-9_]*)"
    if any(not re.fullmatch(r"(%s\.)*%s" % (seg, seg), f.split(" (")[0])
           for f in py if not f.startswith("[")):
        garbage += count
        bad_names.update(f.split(" (")[0] for f in py
                         if not re.fullmatch(r"(%s\.)*%s" % (seg, seg), f.split(" (")[0]))
    if any(f in ("[unreadable Python frame]", "[truncated]") for f in frames):
        # Inside an import: most likely a module's body freed at the end
        # of its import (issue 23, item 3); shown apart, judged with all.
        if any(f.startswith("_find_and_load (") for f in py):
            import_placeholders += count
        else:
            placeholders += count
    in_parser = any("/docutils/parsers/rst/states.py:" in f for f in py)
    in_writer = any("/docutils/writers/" in f for f in py)
    parser += count * in_parser
    writer += count * in_writer
    either += count * (in_parser or in_writer)
    # rst2html's body calls publish_cmdline, which has its Publisher set up
    # the parser and writer (set_components; __init__ from docutils 0.21)
    # and run them (publish): that order, from the root.
    top = [f.split(" (")[0] + " " + f.split(" (")[1].split(":")[0] for f in py[:5]]
    while len(top) > 1 and top[1] in WRAPPERS:
        del top[1]
    if (in_parser or in_writer) and len(top) >= 3 and top[:2] == [
            "<module> /usr/bin/rst2html",
            "publish_cmdline /usr/lib/python3/dist-packages/docutils/core.py"] and \
            top[2] in ("Publisher.publish /usr/lib/python3/dist-packages/docutils/core.py",
                       "Publisher.set_components /usr/lib/python3/dist-packages/docutils/core.py",
                       "Publisher.__init__ /usr/lib/python3/dist-packages/docutils/core.py"):
        nested += count
work = max(either, 1)
depth = statistics.median(depths) if depths else 0
print("%d samples: parser %.1f%%, writer %.1f%%, %.1f%% of those under <module> -> "
      "publish_cmdline -> Publisher; median Python depth %d; placeholders %.1f%%"
      % (total, 100.0 * parser / max(total, 1), 100.0 * writer / max(total, 1),
         100.0 * nested / work, depth, 100.0 * placeholders / max(total, 1)))
print("placeholders inside an import (freed module bodies, issue 23): %.2f%%; "
      "all placeholders: %.2f%%" % (100.0 * import_placeholders / max(total, 1),
                                    100.0 * (placeholders + import_placeholders) / max(total, 1)))
print("Python frames out of place (root-ward of _start, start_thread...): %.1f%% of %d samples"
      " (%d; %d samples reach a start-up frame)"
      % (100.0 * misplaced / max(total, 1), total, misplaced, rooted))
errors = []
if total < 200:
    errors.append("too few samples (%d)" % total)
if parser < 0.25 * total:
    errors.append("docutils' parser (states.py) has under 25% of the samples")
if writer < 0.04 * total:
    errors.append("docutils' writers have under 4% of the samples")
if nested < 0.97 * work:
    errors.append("parser/writer samples not nested under publish_cmdline: %d of %d"
                  % (work - nested, work))
if depth < 15:
    errors.append("median Python depth %d < 15" % depth)
print("frames named from freed memory (garbage names): %d samples%s"
      % (garbage, " (%s)" % ", ".join(repr(n) for n in sorted(bad_names)[:5]) if garbage else ""))
if garbage:
    errors.append("%d samples with a frame named from garbage (%s)"
                  % (garbage, ", ".join(repr(n) for n in sorted(bad_names)[:5])))
if placeholders + import_placeholders > 0.002 * total:
    errors.append("placeholder frames in %d samples (> 0.2%%), %d of them inside an import"
                  % (placeholders + import_placeholders, import_placeholders))
m = re.search(r"native: (\d+) stacks unwound, (\d+) stopped early, (\d+) stack copies failed, "
              r"(\d+) merge mismatches", err)
if not m:
    errors.append("no native counters in the summary")
else:
    # A sample whose native stack stopped early, whose stack copy failed or
    # whose merge found a mismatch is not one "unwound and merged".
    n, early, failed, mism = map(int, m.groups())
    bad = early + failed + mism
    print("native: %.1f%% stopped early, %.1f%% copies failed, %.1f%% merge mismatches: "
          "%.1f%% of %d samples unwound and merged"
          % (100.0 * early / max(n, 1), 100.0 * failed / max(n, 1), 100.0 * mism / max(n, 1),
             max(0.0, 100.0 - 100.0 * bad / max(n, 1)), n))
    print("native: %.2f stopped-early + copy-failed + merge-mismatch per 100 samples"
          % (100.0 * bad / max(n, 1)))
    if bad > maxmm / 100.0 * n:
        errors.append("native stacks not unwound and merged in %d of %d samples (> %g%%)"
                      % (bad, n, maxmm))
if misplaced > maxmm / 100.0 * total:
    errors.append("Python frames out of place (root-ward of the start-up frames) in "
                  "%d of %d samples (> %g%%)" % (misplaced, total, maxmm))
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

# Each case runs twice if it fails once (tests/twice.sh): the merge figure
# is a share of ~3000 samples that sits 0.5-1.5 points above its line on a
# quiet machine; under a loaded make check one run in several dipped to the
# line.
. "$TOP_SRCDIR/tests/twice.sh"

twice run "docutils on Debian's python3.11" 2 host /usr/bin/python3.11
# <=3.10: methods named from their self's type, eval loops by code range.
for py in "$root/3.8.18/bin/python3.8" "$root/3.10.13/bin/python3.10"; do
	twice run "docutils on $(basename "$py")" 2 host "$py"
done
for py in "$root/3.12.1/bin/python3.12" "$root/3.13.0/bin/python3.13"; do
	if [ -x "$py" ]; then
		twice run "docutils on $(basename "$py") -X perf" 2 host "$py" -X perf
	else
		echo "note: $py not present: its -X perf case is left out"
	fi
done
if reason=$(sid_missing); then
	for py in $SID_INTERPRETERS; do
		echo "FAIL docutils on Debian sid's $(basename "$py"): $reason"
	done
	failed=1
else
	sid_work=$(sid_workdir docutils)
	cp "$work/doc.rst" "$sid_work/"
	for py in $SID_INTERPRETERS; do
		twice run "docutils on Debian sid's $(basename "$py")" 2 sid "$py"
		twice run "docutils on Debian sid's $(basename "$py") -X perf" 2 sid "$py" -X perf
	done
fi
exit $failed
