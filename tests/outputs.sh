#!/bin/sh
# Nothing collected is lost: SIGINT and SIGTERM during an open-ended capture
# (-d 0) still write the profile; a full disk is reported, leaves no
# temporary file and no truncated profile behind, and exits non-zero.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${GO:=go}"
py=/usr/bin/python3.11
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF and mount"; exit 77; }
[ -x $py ] || { echo "SKIP: $py not present"; exit 77; }
work=$(mktemp -d /tmp/pyperf-outputs.XXXXXX)
$py "$TOP_SRCDIR/tests/workloads/ratio.py" 60 > /dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; umount "$work/full" 2>/dev/null; rm -rf "$work"' EXIT
sleep 0.5
failed=0

for sig in INT TERM; do
	"$PYPERF" --pid $pid -d 0 -o "$work/$sig.pb.gz" 2> "$work/log" &
	prof=$!
	sleep 1.5
	kill -$sig $prof
	wait $prof
	rc=$?
	n=$(HOME=$work "$GO" tool pprof -raw "$work/$sig.pb.gz" 2>/dev/null | grep -c ': [0-9 ]*$')
	echo "SIG$sig: exit $rc, $n distinct stacks in the profile"
	if [ $rc != 0 ] || [ "${n:-0}" -lt 1 ]; then
		cat "$work/log"; echo "FAIL SIG$sig"; failed=1
	else
		echo "PASS SIG$sig"
	fi
done

# Privilege hygiene: once attached, CAP_BPF (39) and CAP_PERFMON (38) are
# gone, CAP_SYS_PTRACE (19) stays; the profile is not group/other writable.
"$PYPERF" --pid $pid -d 3000 -o "$work/caps.pb.gz" -q &
prof=$!
# Attaching (verifier, tables) takes 0.3 s on a quiet machine and over a
# second under a loaded make check: poll while it runs.
i=0
while :; do
	sleep 0.2
	eff=$(awk '/^CapEff/ {print $2}' /proc/$prof/status 2>/dev/null)
	i=$((i + 1))
	[ -z "$eff" ] || [ $(( 0x$eff >> 38 & 3 )) = 0 ] || [ $i -ge 12 ] && break
done
wait $prof
mode=$(stat -c %a "$work/caps.pb.gz")
if [ -n "$eff" ] && [ $(( 0x$eff >> 38 & 3 )) = 0 ] && [ $(( 0x$eff >> 19 & 1 )) = 1 ] &&
	[ "$mode" = 644 ]; then
	echo "PASS capabilities dropped (CapEff $eff), profile mode $mode"
else
	echo "FAIL capabilities: CapEff '$eff', profile mode $mode"; failed=1
fi

# A full 64 KiB tmpfs: the writability check (an empty temp file) still
# passes, writing the profile cannot.
mkdir "$work/full"
mount -t tmpfs -o size=64k tmpfs "$work/full" || { echo "SKIP full-disk: mount failed"; exit $failed; }
dd if=/dev/zero of="$work/full/filler" bs=4k 2>/dev/null  # until full
"$PYPERF" --pid $pid -d 1500 -F 4999 -o "$work/full/p.pb.gz" 2> "$work/log"
rc=$?
left=$(ls -A "$work/full" | grep -v '^filler$')
grep 'pyperf-pprof: cannot' "$work/log"
if [ $rc = 0 ] || ! grep -q 'No space left on device' "$work/log" || [ -n "$left" ]; then
	echo "full disk: exit $rc, left behind: '$left'"; cat "$work/log"
	echo "FAIL full-disk"; failed=1
else
	echo "PASS full-disk (exit $rc, nothing left behind)"
fi
exit $failed
