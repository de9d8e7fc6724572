#!/bin/sh
# --record then --replay of live sessions with native stacks, each native
# mode (--unwind user, kernel, both), on Debian's stripped python3.11,
# pyenv's 3.12 (shared libpython) and Debian sid's python3.14 and 3.15 in
# their chroot (tests/sid-common.sh; missing, those cases fail), attached
# with --pid to
# tests/workloads/native.py (ctypes qsort callback, zlib, the C-extension
# chain of tests/ext/cbext.c): the replayed profile must be byte-identical
# to the live one. The committed recordings only show that old recordings
# still replay; this shows that what is recorded today is complete (the
# object cache opens each ELF file once, often while a target is probed,
# outside any sample: those opens must be in the recording too).
# --unwind both recordings also carry both unwinds of every sample: their
# replay repeats the differential test (kernel tables against libunwind)
# offline, and at least UNWIND_DIFF_MIN (default 99) % of the compared
# stacks must agree.
# Exit 0 pass, 1 fail, 77 skip.
set -u
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${PYPERF:=./pyperf-pprof}"
min=${UNWIND_DIFF_MIN:-99}
# sid:PATH is PATH inside the sid chroot.
interps=${RECORD_NATIVE_INTERPRETERS:-"/usr/bin/python3.11 /root/.pyenv/versions/3.12.1/bin/python3 sid:/usr/bin/python3.14 sid:/usr/bin/python3.15"}

skip() { echo "SKIP record-native: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root for BPF and perf events"
command -v gcc >/dev/null 2>&1 || skip "gcc not installed (builds the test C extension)"

work=$(mktemp -d /tmp/pyperf-recnative.XXXXXX)
pid=
sid_work=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work" $sid_work' EXIT INT TERM
failed=0
ran=0

. "$TOP_SRCDIR/tests/native-common.sh"
. "$TOP_SRCDIR/tests/sid-common.sh"

# diff_check NAME LOG: the replay's unwind diff line says enough agree.
diff_check() {
	set -- "$1" "$2" $(sed -n 's/.*unwind diff: \([0-9]*\) of \([0-9]*\) stacks agree.*; \([0-9]*\) hit a mapping.*/\1 \2 \3/p' "$2" | tail -1)
	if [ $# -lt 5 ]; then
		echo "FAIL record-native/$1: the replay printed no unwind diff line"
		failed=1
		return
	fi
	compared=$(($4 - $5))
	grep 'unwind diff:' "$2" | sed 's/^/  /'
	if [ "$compared" -lt 20 ]; then
		echo "FAIL record-native/$1: only $compared stacks compared in the replay"
		failed=1
	elif [ $(($3 * 100)) -lt $((compared * min)) ]; then
		echo "FAIL record-native/$1: replayed, $3 of $compared stacks agree, under $min %"
		failed=1
	else
		echo "PASS record-native/$1: replayed, $3 of $compared stacks agree frame for frame ($5 marked: mapping not loaded yet)"
	fi
}

# one NAME MODE (shell variables are global: cname, not name): records a session of the running workload and replays it.
one() {
	cname=$1 mode=$2
	if ! "$PYPERF" --pid $pid -d 1500 --unwind "$mode" -q --record "$work/$cname.rec" \
		-o "$work/$cname.live.pb.gz" 2> "$work/$cname.live.err"; then
		echo "FAIL record-native/$cname: the recorded session failed"
		sed 's/^/  /' "$work/$cname.live.err"
		failed=1
		return
	fi
	if ! "$PYPERF" --replay "$work/$cname.rec" -o "$work/$cname.replay.pb.gz" \
		> "$work/$cname.replay.log" 2>&1; then
		echo "FAIL record-native/$cname: the replay failed"
		sed 's/^/  /' "$work/$cname.replay.log"
		failed=1
		return
	fi
	size=$(wc -c < "$work/$cname.rec")
	if cmp -s "$work/$cname.live.pb.gz" "$work/$cname.replay.pb.gz"; then
		echo "PASS record-native/$cname: replay byte-identical to the live profile (recording $size bytes)"
	else
		echo "FAIL record-native/$cname: the replayed profile differs from the live one"
		if command -v go >/dev/null 2>&1; then
			go tool pprof -raw "$work/$cname.live.pb.gz" > "$work/a.raw" 2>&1
			go tool pprof -raw "$work/$cname.replay.pb.gz" > "$work/b.raw" 2>&1
			diff "$work/a.raw" "$work/b.raw" | head -12 | sed 's/^/  /'
		fi
		failed=1
	fi
	[ "$mode" = both ] && diff_check "$cname" "$work/$cname.replay.log"
}

# Each mode is recorded again if its replay differs once (tests/twice.sh):
# one run in many (seen once, in the sanitizer build, --unwind user on
# 3.12: one sample's libunwind end reason, same stacks) replays a counter
# apart; the cause is not found yet (see the session 5 note of issue 14).
. "$TOP_SRCDIR/tests/twice.sh"

for py in $interps; do
	case $py in
	sid:*)
		name=$(basename "${py#sid:}")-sid
		if reason=$(sid_missing); then
			echo "FAIL record-native/$name: $reason"; failed=1; continue
		fi
		[ -n "$sid_work" ] || sid_work=$(sid_workdir recnative)
		args=$(sid_build_ext "${py#sid:}" "$sid_work/$name")
		inside=$(sid_path "$sid_work")
		if ! PYTHONPATH=$inside/$name start chroot "$SID_ROOT" "${py#sid:}" \
			"$inside/workloads/native.py" 60 $args; then
			echo "FAIL record-native/$name: workload did not start"; failed=1; stop; continue
		fi
		;;
	*)
		[ -x "$py" ] || { echo "note: $py not present"; continue; }
		name=$(basename "$(dirname "$(dirname "$py")")")
		[ "$py" = /usr/bin/python3.11 ] && name=python3.11-debian
		args=$(build_ext "$py" "$work/$name")
		if ! PYTHONPATH=$work/$name start "$py" "$TOP_SRCDIR/tests/workloads/native.py" 60 $args; then
			echo "FAIL record-native/$name: workload did not start"; failed=1; stop; continue
		fi
		;;
	esac
	for mode in user kernel both; do
		twice one "$name-$mode" "$mode"
	done
	stop
	ran=$((ran + 1))
done
[ $ran = 0 ] && [ $failed = 0 ] && skip "none of the interpreters is installed: $interps"
exit $failed
