#!/bin/sh
# Replays each committed recording of tests/recordings (made by
# tests/recordings/make-recordings.sh from live runs on 3.8, Debian's 3.11,
# 3.13, asyncio tasks on 3.12 (asyncio_task labels) and a native-frames
# workload) through the whole pipeline -
# unwinding, symbolization, merge, profile, pprof and collapsed writers -
# and compares the result with the committed expected output:
#   NAME.collapsed  `--replay NAME.rec --format collapsed`, exactly;
#   NAME.raw        `go tool pprof -raw` of the replayed profile, exactly
#                   (when go is installed);
#   NAME.all-native.collapsed  the same with --all-native (every native
#                   frame, the interpreter's own ones too), where present;
#   NAME.live       continuous mode (--interval): sha256sum of the files the
#                   live run wrote; the replay into an empty directory must
#                   write exactly those names with exactly those bytes;
# and that two replays write the same bytes, and that each native object
# is opened once (-v). Then checks that replay needs
# no privileges (as nobody, when run as root) and that damaged recordings
# are refused or read in part, never crash the program.
# Needs no root, no BPF and no Python: it never skips for lack of them.
# Exit 0 pass, 1 fail.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${GO:=go}"
rdir=$TOP_SRCDIR/tests/recordings
work=$(mktemp -d /tmp/pyperf-replay-test.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
failed=0
n=0

fail() { echo "FAIL $*"; failed=1; }
have_go=0
command -v "$GO" >/dev/null 2>&1 && have_go=1

# A continuous-mode recording: the series of files the live run wrote.
replay_series() {	# NAME REC
	mkdir "$work/$1.d"
	if ! "$PYPERF" --replay "$2" -q -o "$work/$1.d/" 2>"$work/err"; then
		cat "$work/err"
		fail "$1: --replay into a directory failed"
		return
	fi
	(cd "$work/$1.d" && sha256sum -- *) > "$work/$1.sums"
	if ! diff -u "$rdir/$1.live" "$work/$1.sums"; then
		mkdir -p tests/artifacts && cp -r "$work/$1.d" "tests/artifacts/replay-$1"
		fail "$1: the replayed files are not the live run's (names or bytes; kept in tests/artifacts/replay-$1)"
		return
	fi
	echo "PASS $1: $(wc -l < "$work/$1.sums") files with the live run's names and bytes"
}

for rec in "$rdir"/*.rec; do
	[ -f "$rec" ] || continue
	name=$(basename "$rec" .rec)
	n=$((n + 1))
	if [ -f "$rdir/$name.live" ]; then
		replay_series "$name" "$rec"
		continue
	fi
	if ! "$PYPERF" --replay "$rec" -q --format collapsed -o "$work/$name.collapsed" 2>"$work/err"; then
		cat "$work/err"
		fail "$name: --replay --format collapsed failed"
		continue
	fi
	if ! diff -u "$rdir/$name.collapsed" "$work/$name.collapsed" > "$work/$name.diff"; then
		head -40 "$work/$name.diff"
		mkdir -p tests/artifacts && cp "$work/$name.collapsed" "tests/artifacts/replay-$name.collapsed"
		fail "$name: collapsed output differs from $name.collapsed (kept in tests/artifacts/replay-$name.collapsed)"
		continue
	fi
	if ! "$PYPERF" --replay "$rec" -q -o "$work/$name.1.pb.gz" ||
	   ! "$PYPERF" --replay "$rec" -q -o "$work/$name.2.pb.gz"; then
		fail "$name: --replay to pprof failed"
		continue
	fi
	if ! cmp -s "$work/$name.1.pb.gz" "$work/$name.2.pb.gz"; then
		fail "$name: two replays wrote different profiles"
		continue
	fi
	what="collapsed output"
	if [ $have_go = 1 ] && [ -f "$rdir/$name.raw" ]; then
		HOME=${HOME:-/root} "$GO" tool pprof -raw "$work/$name.1.pb.gz" > "$work/$name.raw" 2>&1
		if ! diff -u "$rdir/$name.raw" "$work/$name.raw" > "$work/$name.rawdiff"; then
			head -40 "$work/$name.rawdiff"
			mkdir -p tests/artifacts && cp "$work/$name.1.pb.gz" "tests/artifacts/replay-$name.pb.gz"
			fail "$name: go tool pprof -raw differs from $name.raw (profile kept in tests/artifacts/replay-$name.pb.gz)"
			continue
		fi
		what="collapsed output and go tool pprof -raw"
	fi
	# Recordings with native frames: the default hides the interpreter's
	# own frames (native_filter.c); --all-native must show every frame.
	if [ -f "$rdir/$name.all-native.collapsed" ]; then
		if ! "$PYPERF" --replay "$rec" -q --all-native --format collapsed -o "$work/$name.all.collapsed" ||
		   ! diff -u "$rdir/$name.all-native.collapsed" "$work/$name.all.collapsed" > "$work/$name.alldiff"; then
			head -20 "$work/$name.alldiff"
			fail "$name: --all-native output differs from $name.all-native.collapsed"
			continue
		fi
		# The issue's noise, by name: gone by default, there with --all-native.
		noise='(^|;)(PyObject_Vectorcall|_PyFunction_Vectorcall|_PyObject_MakeTpCall|PyEval_EvalCode|_PyRun_[A-Za-z]*|Py_RunMain|Py_BytesMain|__libc_start_[a-z_]*|_start|\[python3\.11\])(;| [0-9]+$)'
		if grep -Eq "$noise" "$work/$name.collapsed" || ! grep -Eq "$noise" "$work/$name.all.collapsed"; then
			fail "$name: interpreter frames shown by default, or missing with --all-native"
			continue
		fi
		what="$what, --all-native output"
	fi
	# Recorded with --unwind both: every sample unwound by the BPF tables
	# and by libunwind over its stack copy; the replay compares them again
	# (issue 14's differential test on a committed recording).
	case $name in *-both)
		"$PYPERF" --replay "$rec" -o "$work/$name.3.pb.gz" 2> "$work/$name.udiff"
		set -- $(sed -n 's/.*unwind diff: \([0-9]*\) of \([0-9]*\) stacks agree.*; \([0-9]*\) hit a mapping.*/\1 \2 \3/p' "$work/$name.udiff")
		if [ $# -lt 3 ] || [ $(($2 - $3)) -lt 20 ] || [ $(($1 * 100)) -lt $((($2 - $3) * 99)) ]; then
			sed 's/^/  /' "$work/$name.udiff"
			fail "$name: the replayed unwind diff is missing or under 99 % agreement"
			continue
		fi
		grep 'unwind diff:' "$work/$name.udiff" | sed 's/^/  /'
		what="$what, unwind diff $1 of $(($2 - $3)) agree"
	esac
	echo "PASS $name: $what as expected ($(awk '{s += $NF} END {print s}' "$work/$name.collapsed") samples), replay deterministic"
done
[ $n -gt 0 ] || { echo "FAIL: no recordings in $rdir"; exit 1; }
[ $have_go = 1 ] || echo "note: go not installed: go tool pprof -raw not compared"

# The native layer opens each ELF object and debug file once per run,
# however many of the unwinder and the symbolizer use it: -v counts the
# opens and the distinct objects among them.
nrec=$rdir/native-py311-debian.rec
if [ -f "$nrec" ]; then
	line=$("$PYPERF" --replay "$nrec" -v -o "$work/native.pb.gz" 2>&1 | grep 'native objects:')
	opened=$(echo "$line" | sed -n 's/.*native objects: \([0-9]*\) opened.*/\1/p')
	distinct=$(echo "$line" | sed -n 's/.*(\([0-9]*\) distinct.*/\1/p')
	if [ -n "$opened" ] && [ "$opened" -gt 0 ] && [ "$opened" = "$distinct" ]; then
		echo "PASS native objects: $opened opened, $distinct distinct: each opened once"
	else
		fail "native objects: each should be opened once: ${line:-no -v line}"
	fi
fi

first=$(ls "$rdir"/*.rec | head -1)
name=$(basename "$first" .rec)

# No privileges needed: replayed as nobody, the same output.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	# Copies: the build tree may not be reachable for nobody (/root).
	mkdir -p "$work/nobody" && chmod 777 "$work" "$work/nobody"
	cp "$first" "$work/nobody/in.rec" && chmod 644 "$work/nobody/in.rec"
	cp "$PYPERF" "$work/nobody/pyperf-pprof" && chmod 755 "$work/nobody/pyperf-pprof"
	if setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$work/nobody/pyperf-pprof" --replay "$work/nobody/in.rec" -q --format collapsed \
		-o "$work/nobody/out.txt" &&
	   cmp -s "$work/nobody/out.txt" "$rdir/$name.collapsed"; then
		echo "PASS unprivileged: replay as uid 65534 gives the same output"
	else
		fail "unprivileged: replay as uid 65534 failed or differs"
	fi
fi

# Options a replay cannot honour (the recording was sampled with its own
# settings) are refused with one line naming the option, exit 2, and no
# profile written (issue 24, finding 7); the output options are taken.
refused=0
for opt in --gil "-F 99" --kernel "-c 5000" "--mode wall" "-d 500" "-e task-clock" \
	--native --no-native "--unwind user" "--stack-bytes 4096" "--ringbuf-size 4096"; do
	rm -f "$work/opt.pb.gz"
	# shellcheck disable=SC2086
	"$PYPERF" --replay "$first" -q -o "$work/opt.pb.gz" $opt 2>"$work/err"
	rc=$?
	long=$(echo "$opt" | sed 's/ .*//; s/^-F$/--frequency/; s/^-c$/--sample-period/; s/^-d$/--duration/; s/^-e$/--event/')
	if [ $rc = 2 ] && [ "$(wc -l < "$work/err")" = 1 ] && grep -q -- "takes no $long " "$work/err" &&
	   [ ! -e "$work/opt.pb.gz" ]; then
		refused=$((refused + 1))
	else
		fail "--replay $opt: exit $rc, expected 2 and one line naming $long, no profile: $(cat "$work/err")"
	fi
done
if "$PYPERF" --replay "$first" -q --keep 3 --all-native --format collapsed -o "$work/opt.folded"; then
	echo "PASS --replay refuses $refused options it cannot honour, e.g.: $(cat "$work/err")"
else
	fail "--replay with output options only (--keep, --all-native, --format) failed"
fi

# Damaged recordings: refused with one line, or replayed in part; never a
# crash (exit status >= 128: killed by a signal).
expect_refusal() {	# FILE WORDS
	"$PYPERF" --replay "$1" -q -o "$work/damaged.pb.gz" 2>"$work/err"
	rc=$?
	if [ $rc = 1 ] && grep -q "$2" "$work/err"; then
		echo "PASS refused $(basename "$1"): $(cat "$work/err")"
	else
		fail "$(basename "$1"): exit $rc, expected 1 and '$2': $(cat "$work/err")"
	fi
}
no_crash() {		# FILE WHAT
	"$PYPERF" --replay "$1" -q -o "$work/damaged.pb.gz" 2>"$work/err"
	rc=$?
	if [ $rc -ge 2 ]; then
		head -3 "$work/err"
		mkdir -p tests/artifacts && cp "$1" "tests/artifacts/replay-damaged-$(basename "$1")"
		fail "$2: exit $rc (kept in tests/artifacts/replay-damaged-$(basename "$1"))"
		return
	fi
	damaged_ok=$((damaged_ok + 1))
}
printf 'NOTAREC!\001\000\000\000\000\000\000\000' > "$work/magic.rec"
expect_refusal "$work/magic.rec" "not a pyperf-pprof recording"
{ printf 'PYPFREC1\002\000\000\000'; tail -c +13 "$first"; } > "$work/version.rec"
expect_refusal "$work/version.rec" "version 2 is not supported"
: > "$work/empty.rec"
expect_refusal "$work/empty.rec" "not a pyperf-pprof recording"
expect_refusal "$work/missing.rec" "cannot open the recording"

damaged_ok=0
size=$(wc -c < "$first")
for cut in 16 17 40 200 1000 $((size / 3)) $((size / 2)) $((size - 100)) $((size - 1)); do
	[ $cut -lt "$size" ] || continue
	head -c $cut "$first" > "$work/cut-$cut.rec"
	no_crash "$work/cut-$cut.rec" "truncated at $cut bytes"
done
for off in 16 20 64 300 $((size / 4)) $((size / 2)) $((size * 3 / 4)) $((size - 20)); do
	[ $off -lt "$size" ] || continue
	cp "$first" "$work/flip-$off.rec"
	printf '\377' | dd of="$work/flip-$off.rec" bs=1 seek=$off conv=notrunc 2>/dev/null
	no_crash "$work/flip-$off.rec" "byte $off overwritten"
done
echo "damaged recordings: $damaged_ok read without a crash"

[ $failed = 0 ] && echo PASS
exit $failed
