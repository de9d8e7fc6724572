#!/bin/sh
# --keep prunes only the profiler's own files: in continuous mode with
# --keep 2 and decoy files in the output directory (a user's
# profile-0-baseline.pb.gz, profile-important.pb.gz, notes.txt), every decoy
# survives and exactly the newest 2 profiles the run wrote remain; the run
# says each file it writes on a line "wrote PATH", even without -v. Once
# with `-o DIR/` and once with a `%t` pattern of the same prefix. Then two
# runs at once into one directory (issue 24, finding 2): one with --keep 2,
# one keeping all; every file the second wrote stays, the first's newest 2
# stay, and each name carries its run's pid.
# Exit 0 pass, 1 fail, 77 skip.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
py=/usr/bin/python3.11
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
[ -x $py ] || { echo "SKIP: $py not present"; exit 77; }
work=$(mktemp -d /tmp/pyperf-keep.XXXXXX)
$py "$TOP_SRCDIR/tests/workloads/ratio.py" 60 > /dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$work"' EXIT
sleep 0.5
failed=0
keep=2

run() {		# NAME OUT-ARGUMENT [-v]
	dir=$work/$1
	decoys="profile-0-baseline.pb.gz profile-important.pb.gz notes.txt"
	for f in $decoys; do echo "$f" > "$dir/$f"; done
	"$PYPERF" --pid $pid --no-native -F 99 --interval 1 --keep $keep -d 4500 ${3:-} \
		-o "$2" 2> "$work/$1.log"
	rc=$?
	# Every profile the run wrote, in order ("wrote PATH" or "wrote PATH;").
	sed -n 's/^pyperf-pprof: wrote \([^;]*\).*/\1/p' "$work/$1.log" > "$work/$1.written"
	nw=$(wc -l < "$work/$1.written")
	tail -n $keep "$work/$1.written" | xargs -n1 basename | sort > "$work/$1.want"
	(cd "$dir" && ls | sort) > "$work/$1.have"
	for f in $decoys; do echo "$f"; done | cat - "$work/$1.want" | sort > "$work/$1.expect"
	if [ $rc != 0 ] || [ "$nw" -lt 4 ]; then
		cat "$work/$1.log"
		echo "FAIL $1: exit $rc, $nw profiles said written (expected at least 4 lines \"wrote PATH\", one per interval)"; failed=1
	elif ! cmp -s "$work/$1.expect" "$work/$1.have"; then
		echo "written:"; cat "$work/$1.written"
		diff "$work/$1.expect" "$work/$1.have"
		echo "FAIL $1: the directory does not hold exactly the decoys and the newest $keep profiles"
		failed=1
	else
		for f in $decoys; do
			[ "$(cat "$dir/$f")" = "$f" ] || { echo "FAIL $1: $f changed"; failed=1; }
		done
		echo "PASS $1: $nw profiles written, the newest $keep and the 3 decoys remain"
	fi
}

mkdir "$work/dir" "$work/pattern"
# Without -v: continuous mode says each file it writes, one line each
# (issue 24, finding 7), which is what this reads.
run dir "$work/dir/"
run pattern "$work/pattern/profile-%t.pb.gz" -v

# Two runs sharing a directory, started together so that their intervals
# end in the same seconds.
shared() {
	dir=$work/shared
	mkdir "$dir"
	"$PYPERF" --pid $pid --no-native -F 99 --interval 1 --keep $keep -d 4500 -v \
		-o "$dir/" 2> "$work/a.log" &
	a=$!
	"$PYPERF" --pid $pid --no-native -F 99 --interval 1 -d 4500 -v \
		-o "$dir/" 2> "$work/b.log" &
	b=$!
	wait $a; ra=$?
	wait $b; rb=$?
	for r in a b; do
		sed -n 's/^pyperf-pprof: wrote \([^;]*\).*/\1/p' "$work/$r.log" |
			xargs -n1 basename > "$work/$r.written"
	done
	na=$(wc -l < "$work/a.written"); nb=$(wc -l < "$work/b.written")
	{ tail -n $keep "$work/a.written"; cat "$work/b.written"; } | sort > "$work/shared.expect"
	(cd "$dir" && ls | sort) > "$work/shared.have"
	ida=$(grep -vc -- "-$a-[0-9]*\.pb\.gz\$" "$work/a.written")
	idb=$(grep -vc -- "-$b-[0-9]*\.pb\.gz\$" "$work/b.written")
	if [ $ra != 0 ] || [ $rb != 0 ] || [ "$na" -lt 4 ] || [ "$nb" -lt 4 ]; then
		cat "$work/a.log" "$work/b.log"
		echo "FAIL shared: exit $ra/$rb, $na/$nb profiles written (expected at least 4 each)"
		failed=1
	elif [ "$ida" != 0 ] || [ "$idb" != 0 ] || ! cmp -s "$work/shared.expect" "$work/shared.have"; then
		echo "written (pid $a, --keep $keep):"; cat "$work/a.written"
		echo "written (pid $b):"; cat "$work/b.written"
		diff "$work/shared.expect" "$work/shared.have"
		echo "FAIL shared: names without their run's pid ($ida, $idb), or the directory does not hold the first run's newest $keep and all of the second's"
		failed=1
	else
		echo "PASS shared: $na and $nb profiles written at once into one directory; the first's newest $keep and all $nb of the second's remain"
	fi
}
shared
exit $failed
