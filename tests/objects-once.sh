#!/bin/sh
# Each ELF object is opened once per profiler run, however many subsystems
# use it: the interpreter probe at attach (src/python/pyversion.c), the 3.6
# GIL symbols (src/python/pythread.c), the BPF unwind tables
# (src/live/ktables.c), the unwinder and the symbolizer all
# go through the native object layer (src/native/objcache.c), whose -v line
# counts the files opened and the distinct ones among them.
# Two live targets of the same interpreter, with native frames (libunwind;
# --unwind both: BPF tables and libunwind) and without:
#  - the -v line says N opened, N distinct, N >= 1 (the probe is counted);
#  - with strace installed, the files the profiler really opened (mapped
#    files and debug files, resolved to their targets) are each opened once
#    and are exactly N: the counter tells the truth.
# Interpreters: Debian's python3.11 and pyenv's 3.6.15 (its GIL comes from
# ELF symbols). Needs root (BPF). Exit 0 pass, 1 fail, 77 skip.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
work=$(mktemp -d /tmp/pyperf-objonce.XXXXXX)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT INT TERM
failed=0 ran=0
have_strace=0
command -v strace >/dev/null 2>&1 && have_strace=1
[ $have_strace = 1 ] || echo "note: strace not installed: the real opens are not counted"

fail() { echo "FAIL $*"; failed=1; }

# Files opened through /proc/PID/map_files, /proc/PID/root or as debug
# files, resolved while the targets still run: "COUNT PATH" lines.
real_opens() {
	grep -v -e ENOENT -e ENOTDIR "$1" | grep 'openat(' | sed -n 's/^[^"]*"\([^"]*\)".*/\1/p' |
		grep -e '/map_files/' -e '/root/' -e '\.debug$' |
		while read -r f; do readlink -f "$f"; done | sort | uniq -c
}

# -d 300: samples for the unwinder and the symbolizer to use the objects
# (-d 2 got some only while the events ran past the duration; sampling now
# ends in BPF when it does).
check_run() {
	name=$1; shift
	if [ $have_strace = 1 ]; then
		# LeakSanitizer cannot run under ptrace (the sanitizer build): leaks
		# are checked by every other run of the suite.
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -e trace=openat -o "$work/trace" "$PYPERF" -v "$@" -d 300 \
			-o "$work/p.pb.gz" > "$work/out" 2>&1
	else
		"$PYPERF" -v "$@" -d 300 -o "$work/p.pb.gz" > "$work/out" 2>&1
	fi || { cat "$work/out"; fail "$name: the profiler failed"; return; }
	line=$(grep 'native objects:' "$work/out")
	opened=$(echo "$line" | sed -n 's/.*native objects: \([0-9]*\) opened.*/\1/p')
	distinct=$(echo "$line" | sed -n 's/.*(\([0-9]*\) distinct.*/\1/p')
	if [ -z "$opened" ] || [ "$opened" -lt 1 ] || [ "$opened" != "$distinct" ]; then
		fail "$name: each object should be opened once and counted: ${line:-no -v line}"
		return
	fi
	case "$*" in
	*--no-native*) ;;
	*)	# Native frames: the unwinder and the symbolizer must have used
		# the objects too, or nothing was shared.
		stacks=$(sed -n 's/.*native: \([0-9]*\) stacks unwound.*/\1/p' "$work/out")
		[ "${stacks:-0}" -gt 0 ] || { fail "$name: no native stack unwound"; return; } ;;
	esac
	[ $have_strace = 1 ] || { echo "PASS $name: -v: $opened opened, $distinct distinct"; return; }
	real_opens "$work/trace" > "$work/real"
	total=$(awk '{s += $1} END {print s + 0}' "$work/real")
	twice=$(awk '$1 > 1' "$work/real")
	if [ -n "$twice" ]; then
		fail "$name: files opened more than once: $twice"
	elif [ "$total" != "$opened" ]; then
		cat "$work/real"
		fail "$name: -v says $opened opened, strace saw $total files opened"
	else
		echo "PASS $name: $opened files opened, each once, as -v counts ($(awk '{print $2}' "$work/real" | tr '\n' ' '))"
	fi
}

run_case() {
	py=$1 label=$2; shift 2
	[ -x "$py" ] || { echo "note: $py not present"; return; }
	pids=""
	for i in 1 2; do
		"$py" "$@" > "$work/ready$i" 2>&1 &
		pids="$pids $!"
	done
	# Each prints "ready" once its loop runs (at most 30 s on a loaded host).
	for i in $(seq 60); do
		grep -q ready "$work/ready1" && grep -q ready "$work/ready2" && break
		sleep 0.5
	done
	grep -q ready "$work/ready1" && grep -q ready "$work/ready2" || {
		fail "$label: the workloads did not start"; return; }
	set -- $pids
	ran=$((ran + 1))
	check_run "$label, two targets, native frames" -p "$1" -p "$2"
	check_run "$label, two targets, --no-native" --no-native -p "$1" -p "$2"
	# The BPF unwind tables (src/live/ktables.c) open objects too.
	check_run "$label, two targets, --unwind both" --unwind both -p "$1" -p "$2"
	for p in $pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	pids=""
}

run_case /usr/bin/python3.11 "Debian python3.11" "$TOP_SRCDIR/tests/workloads/native.py" 30
run_case /root/.pyenv/versions/3.6.15/bin/python3 "pyenv 3.6.15" -c '
import sys, time
print("ready")
sys.stdout.flush()
t = time.time()
while time.time() - t < 30:
    sum(range(1000))'
[ $ran -gt 0 ] || { echo "SKIP: neither /usr/bin/python3.11 nor pyenv 3.6.15 present"; exit 77; }
exit $failed
