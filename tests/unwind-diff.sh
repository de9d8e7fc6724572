#!/bin/sh
# Differential test of the BPF unwinder (--unwind kernel) against
# libunwind over a copied stack (--unwind user): one live session with
# --unwind both unwinds every sample both ways and compares them frame for
# frame. Per interpreter, on tests/workloads/native.py (qsort callback
# through ctypes, zlib, the C-extension chain of tests/ext/cbext.c):
# at least UNWIND_DIFF_MIN (default 99) % of the stacks must agree; the
# disagreements are printed by object. Then:
#  - a library loaded after attach (tests/workloads/late_native.py): its
#    first samples are marked "mapping not loaded yet" in the BPF walk
#    (never unwound wrong), its tables are loaded on that miss, later
#    samples agree; in the default mode (--unwind kernel) those first
#    samples carry a stack copy and are unwound by libunwind instead:
#    none marked but where the copy itself failed, liblzma's frames in
#    the profile;
#  - compact records (--no-native, --unwind kernel) replay as recorded;
#  - the native end-to-end scenario (tests/e2e.sh) passes unchanged with
#    --unwind user (make check runs it in the default, kernel) on Debian's
#    stripped python3.11.
# Exit 0 pass, 1 fail, 77 skip.
set -u
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${PYPERF:=./pyperf-pprof}"
min=${UNWIND_DIFF_MIN:-99}
interps=${UNWIND_DIFF_INTERPRETERS:-"/usr/bin/python3.11 /root/.pyenv/versions/3.8.18/bin/python3 /root/.pyenv/versions/3.12.1/bin/python3 /root/.pyenv/versions/3.13.0/bin/python3"}

skip() { echo "SKIP unwind-diff: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root for BPF and perf events"
command -v gcc >/dev/null 2>&1 || skip "gcc not installed (builds the test C extension)"

work=$(mktemp -d /tmp/pyperf-udiff.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT INT TERM
failed=0
ran=0

. "$TOP_SRCDIR/tests/native-common.sh"

# agreement LOG: "AGREE STACKS NOT_LOADED" from the session's diff line.
agreement() {
	sed -n 's/.*unwind diff: \([0-9]*\) of \([0-9]*\) stacks agree.*; \([0-9]*\) hit a mapping.*/\1 \2 \3/p' "$1" | tail -1
}

# check NAME LOG MIN_STACKS: the diff line says enough stacks agree.
check() {
	set -- "$1" "$2" "$3" $(agreement "$2")
	if [ $# -lt 6 ]; then
		echo "FAIL unwind-diff/$1: no diff line in the session's output"
		sed 's/^/  /' "$2"
		failed=1
		return
	fi
	grep -E 'unwind diff:|bpf unwind:|unwind tables:|native:' "$2" | sed 's/^/  /'
	# Marked samples (a mapping not loaded yet) are refusals, not wrong
	# stacks: they are listed, and left out of the ratio.
	compared=$(($5 - $6))
	if [ "$compared" -lt "$3" ]; then
		echo "FAIL unwind-diff/$1: only $compared stacks compared (at least $3 wanted; machine too loaded?)"
		failed=1
	elif [ $(($4 * 100)) -lt $((compared * min)) ]; then
		echo "FAIL unwind-diff/$1: $4 of $compared stacks agree, under $min %"
		failed=1
	else
		echo "PASS unwind-diff/$1: $4 of $compared stacks agree frame for frame ($6 marked: mapping not loaded yet)"
	fi
}

for py in $interps; do
	[ -x "$py" ] || { echo "note: $py not present"; continue; }
	name=$(basename "$(dirname "$(dirname "$py")")")
	[ "$py" = /usr/bin/python3.11 ] && name=python3.11-debian
	args=$(build_ext "$py" "$work/$name")
	if ! PYTHONPATH=$work/$name start "$py" "$TOP_SRCDIR/tests/workloads/native.py" 60 $args; then
		echo "FAIL unwind-diff/$name: workload did not start"; failed=1; stop; continue
	fi
	"$PYPERF" --pid $pid -d 5000 -c 250000 --unwind both -v -o "$work/$name.pb.gz" \
		> "$work/$name.log" 2>&1
	rc=$?
	stop
	ran=$((ran + 1))
	if [ $rc != 0 ]; then
		echo "FAIL unwind-diff/$name: pyperf-pprof exited with $rc"
		sed 's/^/  /' "$work/$name.log"
		failed=1
		continue
	fi
	check "$name" "$work/$name.log" 20
done
[ $ran = 0 ] && skip "none of the interpreters is installed: $interps"

# late NAME ARGS...: the late-loading workload under pyperf-pprof ARGS;
# the library is imported once the profiler samples (the trigger file).
late() {
	name=$1
	shift
	rm -f "$work/go"
	start /usr/bin/python3.11 "$TOP_SRCDIR/tests/workloads/late_native.py" 60 "$work/go" ||
		return 1
	"$PYPERF" --pid $pid -d 6000 -c 250000 -v "$@" > "$work/$name.log" 2>&1 &
	prof=$!
	i=0
	until grep -q "sampling " "$work/$name.log" 2>/dev/null || [ $i -gt 600 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	touch "$work/go"
	wait $prof
	stop
}

# A library mapped after attach: load on first miss.
if late late --unwind both -o "$work/late.pb.gz"; then
	check late-load "$work/late.log" 10
	loads=$(sed -n 's/.*unwind tables:.* loads=\([0-9]*\).*/\1/p' "$work/late.log")
	if [ "${loads:-0}" -lt 2 ]; then
		echo "FAIL unwind-diff/late-load: the tables were not reloaded after liblzma was mapped (loads=${loads:-?})"
		failed=1
	fi
	# The default mode: the samples that meet liblzma before its tables
	# are loaded are unwound from a stack copy, not marked.
	late late-kernel --format collapsed -o "$work/late-kernel.txt"
	# A sample is still marked where its copy failed too (a stack page
	# that could not be read): a refusal, never a cut stack passed off.
	copied=$(sed -n 's/.* \([0-9]*\) unwound from a stack copy.*/\1/p' "$work/late-kernel.log")
	marked=$(sed -n 's/.* \([0-9]*\) marked (mapping not loaded yet).*/\1/p' "$work/late-kernel.log")
	cfail=$(sed -n 's/.* \([0-9]*\) stack copies failed.*/\1/p' "$work/late-kernel.log")
	lzma=$(grep -c 'lzma_' "$work/late-kernel.txt")
	if [ "${copied:-0}" -ge 1 ] && [ "${marked:-1}" -le "${cfail:-0}" ] && [ "$lzma" -ge 1 ]; then
		echo "PASS unwind-diff/late-load-kernel: $copied samples unwound from a stack copy while liblzma's tables loaded, $marked marked (no more than the $cfail copies that failed), $lzma stacks through liblzma"
	else
		echo "FAIL unwind-diff/late-load-kernel: copied=${copied:-?} marked=${marked:-?} (copies failed ${cfail:-?}) liblzma stacks=$lzma"
		grep -E 'native:|bpf unwind:|unwind tables:' "$work/late-kernel.log" | sed 's/^/  /'
		failed=1
	fi
else
	stop
	echo "note: /usr/bin/python3.11 not present: late-load case skipped"
fi

# Compact records (no registers, 16-byte frames: --unwind kernel and
# --no-native on 3.11+): recorded live, replayed to the same bytes; the
# kernel-mode ones are read without a malformed record.
if start /usr/bin/python3.11 "$TOP_SRCDIR/tests/workloads/native.py" 60; then
	"$PYPERF" --pid $pid -d 1500 --no-native -q --record "$work/nn.rec" --format collapsed \
		-o "$work/nn.live" 2> "$work/nn.log"
	"$PYPERF" --pid $pid -d 1500 --unwind kernel -v --record "$work/k.rec" \
		-o "$work/k.pb.gz" > "$work/k.log" 2>&1
	stop
	"$PYPERF" --replay "$work/nn.rec" -q --format collapsed -o "$work/nn.replay" 2>> "$work/nn.log"
	per=$(sed -n 's/.*records: [0-9]* bytes, \([0-9]*\) bytes per record.*/\1/p' "$work/k.log")
	if ! [ -s "$work/nn.live" ] || ! cmp -s "$work/nn.live" "$work/nn.replay"; then
		echo "FAIL unwind-diff/compact: the --no-native recording does not replay to the live output"
		sed 's/^/  /' "$work/nn.log"
		failed=1
	elif ! grep -q ' 0 malformed records' "$work/k.log" || [ -z "$per" ]; then
		echo "FAIL unwind-diff/compact: kernel-mode records malformed or not counted"
		sed 's/^/  /' "$work/k.log"
		failed=1
	else
		echo "PASS unwind-diff/compact: --no-native replay identical; --unwind kernel $per bytes per record"
	fi
else
	stop
fi

# The native end-to-end checks, unchanged, on libunwind (--unwind user).
if [ -x /usr/bin/python3.11 ]; then
	echo /usr/bin/python3.11 > "$work/python3.11-debian.e2e"
	if PYPERF_ARGS="--unwind user" SCENARIOS=native sh "$TOP_SRCDIR/tests/e2e.sh" \
		"$work/python3.11-debian.e2e" > "$work/e2e.log" 2>&1; then
		echo "PASS unwind-diff/e2e-native: tests/e2e.sh native scenario with --unwind user"
	else
		rc=$?
		sed 's/^/  /' "$work/e2e.log"
		if [ $rc = 77 ]; then
			echo "note: e2e native scenario skipped: $(tail -1 "$work/e2e.log")"
		else
			echo "FAIL unwind-diff/e2e-native: tests/e2e.sh native scenario with --unwind user"
			failed=1
		fi
	fi
fi
exit $failed
