#!/bin/bash
# tests/soak.sh: long run of continuous mode over churning Python processes
# (not part of make check; `make soak`, SOAK_MINUTES=30 by default).
#
# pyperf-pprof profiles the whole host at 999 Hz with native stacks, one
# profile per minute (--interval 60 --keep 5), while a churn loop starts
# short-lived Python processes of every installed interpreter without
# pause: 0.2-3 s lives, 1-3 threads, 3-40 calls deep, through functions
# compiled per process (new code objects, names and threads all the time).
# Every minute (half-way through each interval) the profiler's RSS (whole, and without the BPF ring
# buffer's mapping, whose pages are touched as data flows up to its fixed
# size) and its open file descriptors are read, with the counters of the
# newest profile through `go tool pprof`. Flat means: after the first 5
# minutes (caches filling), the median RSS of the last third of the
# readings is at most 10 % + 4 MiB above that of the first third, and the
# fd count moves by at most 2.
#
# Environment: SOAK_MINUTES (30), SOAK_HZ (999), SOAK_OUT (also write the
# table there, markdown), PYPERF (./pyperf-pprof), GO (go), SOAK_STEP
# (seconds between readings, 60).
# Exit 0 if flat and the profiler exited 0 when stopped, 1 otherwise.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${GO:=go}"
: "${SOAK_MINUTES:=30}"
: "${SOAK_HZ:=999}"
: "${SOAK_STEP:=60}"
: "${SOAK_OUT:=}"
top=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "soak: needs root (BPF)" >&2; exit 2; }
[ -x "$PYPERF" ] || { echo "soak: $PYPERF not built (run make)" >&2; exit 2; }

pys=()
for p in /usr/bin/python3.11 $(pyenv root 2>/dev/null || echo /root/.pyenv)/versions/3.*/bin/python3.*; do
	[[ $p =~ /python3\.[0-9]+$ ]] && [ -x "$p" ] && pys+=("$p")
done
[ ${#pys[@]} -gt 0 ] || { echo "soak: no Python 3 interpreter found" >&2; exit 2; }

work=$(mktemp -d /tmp/pyperf-soak.XXXXXX)
cleanup() {
	[ -n "${churn:-}" ] && kill "$churn" 2>/dev/null
	[ -n "${prof:-}" ] && kill "$prof" 2>/dev/null
	pkill -f "$work/churn_child.py" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cp "$top/tests/workloads/churn_child.py" "$work/"
mkdir "$work/out"

# The churn: at most 6 children at a time, a new one as soon as one ends.
(
	n=0
	while [ ! -e "$work/stop" ]; do
		while [ "$(jobs -rp | wc -l)" -ge 6 ]; do wait -n; done
		py=${pys[$((RANDOM % ${#pys[@]}))]}
		secs=$(printf '0.%d' $((RANDOM % 9 + 2)))
		[ $((RANDOM % 4)) = 0 ] && secs=$((RANDOM % 3 + 1))
		"$py" "$work/churn_child.py" "$secs" $((RANDOM % 38 + 3)) $((RANDOM % 3 + 1)) &
		n=$((n + 1))
		echo $n > "$work/spawned"
		sleep 0.05
	done
	wait
) &
churn=$!

"$PYPERF" -F "$SOAK_HZ" -d 0 --interval 60 --keep 5 -o "$work/out" -q 2> "$work/err" &
prof=$!

rss_all() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
rss_own() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { ring = ($0 ~ /anon_inode:bpf-map/) }
	     /^Rss:/ && !ring { kb += $2 } END { print kb }' "/proc/$1/smaps"
}
newest_counters() {
	local f
	f=$(ls -t "$work/out"/*.pb.gz 2>/dev/null | head -1)
	[ -n "$f" ] || { echo "-"; return; }
	"$GO" tool pprof -top "$f" 2>/dev/null |
		sed -n 's/^counters: samples=\([0-9]*\) lost=\([0-9]*\).*/\1 samples, \2 lost/p'
}

table="| minute | RSS KiB | RSS without ring buffer KiB | open fds | processes started | profile files | newest profile |
|--:|--:|--:|--:|--:|--:|---|"
echo "soak: ${SOAK_MINUTES} min, -F $SOAK_HZ, native stacks, interpreters: ${pys[*]}"
echo "$table"
own=() fds=()
# Readings half-way through each interval: always the same phase of the
# profile's life (it is freed and memory trimmed at each rotation).
sleep $((SOAK_STEP / 2))
for ((m = 1; m <= SOAK_MINUTES; m++)); do
	[ "$m" -gt 1 ] && sleep "$SOAK_STEP"
	if ! kill -0 "$prof" 2>/dev/null; then
		echo "soak: pyperf-pprof exited after $m minutes:"; cat "$work/err"; exit 1
	fi
	o=$(rss_own "$prof") a=$(rss_all "$prof")
	fd=$(ls "/proc/$prof/fd" | wc -l)
	own+=("$o") fds+=("$fd")
	line="| $m | $a | $o | $fd | $(cat "$work/spawned" 2>/dev/null || echo 0) | $(ls "$work/out" | grep -c 'pb.gz$') | $(newest_counters) |"
	echo "$line"
	table="$table
$line"
done
touch "$work/stop"
kill -TERM "$prof"
wait "$prof"
rc=$?
prof=

verdict=$(printf '%s\n' "${own[@]}" | paste -sd' ' | python3 -c '
import statistics, sys
own = [int(x) for x in sys.stdin.read().split()]
fds = [int(x) for x in sys.argv[1].split()]
# Readings after 5 minutes (caches filled); each is the RSS half-way
# through an interval, which varies with what that interval collected:
# compare the medians of the first and last third, not single readings.
skip = 5 if len(own) >= 11 else max(0, len(own) - 3)
r, f = own[skip:], fds[skip:]
k = max(1, len(r) // 3)
early, late = statistics.median(r[:k]), statistics.median(r[-k:])
flat = late <= early * 1.10 + 4096 and max(f) - min(f) <= 2
print("%s: RSS without ring buffer (median of %d readings) %d KiB after minute %d, "
      "%d KiB at the end (%+d KiB), range %d..%d KiB; open fds %d..%d" % (
          "flat" if flat else "NOT FLAT", k, early, skip, late, late - early,
          min(r), max(r), min(f), max(f)))
' "${fds[*]}")
echo "soak: $verdict; profiler exit status $rc after SIGTERM"
if [ -n "$SOAK_OUT" ]; then
	{
		echo "Soak: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), ${SOAK_MINUTES} min, -F $SOAK_HZ, native stacks, --interval 60 --keep 5, system-wide"
		echo
		echo "$table"
		echo
		echo "$verdict; exit status $rc after SIGTERM"
	} > "$SOAK_OUT"
fi
case $verdict in flat*) [ "$rc" = 0 ] && exit 0 ;; esac
exit 1
