#!/bin/sh
# No silent empty profile: a run that ends without a sample says why and
# what to do in one line, and exits 3 (a launched command's own non-zero
# status comes first). A shell script launching Python without
# --subprocesses: add --subprocesses; a target blocked for the whole run in
# cpu mode: --mode wall. Controls: the same with --subprocesses, and a busy
# target, exit 0 without the line.
set -u
: "${PYPERF:=./pyperf-pprof}"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
py=/usr/bin/python3.11
[ -x $py ] || { echo "SKIP: $py not installed"; exit 77; }
work=$(mktemp -d /tmp/pyperf-empty.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
failed=0

# run NAME WANT_RC LINE_RE|"" -- ARGS: LINE_RE "" means no "no sample" line.
run() {
	name=$1 want=$2 re=$3
	shift 4
	"$PYPERF" -q "$@" > "$work/out" 2>&1
	rc=$?
	sed 's/^/  /' "$work/out"
	if [ -n "$re" ]; then
		grep -Eq "$re" "$work/out"; seen=$?
	else
		! grep -q "no sample" "$work/out"; seen=$?
	fi
	if [ $rc = "$want" ] && [ $seen = 0 ]; then
		echo "PASS $name: exit $rc"
	else
		echo "FAIL $name: exit $rc (want $want), line ${re:-none} $( [ $seen = 0 ] && echo seen || echo missing)"
		failed=1
	fi
}

busy="$py -c 'import time
t = time.process_time()
while time.process_time() - t < 0.5: pass'"
run shell-launching-python 3 'no sample: the command \(bash\) never ran Python itself.*add --subprocesses' -- \
	-d 0 -o "$work/a.pb.gz" -- bash -c "$busy; true"
run shell-launching-python-subprocesses 0 "" -- \
	-d 0 --subprocesses -o "$work/b.pb.gz" -- bash -c "$busy; true"
run shell-exit-status-first 5 'add --subprocesses' -- \
	-d 0 -o "$work/c.pb.gz" -- bash -c "$busy; exit 5"

$py -c 'import time; print("ready", flush=True); time.sleep(60)' > "$work/ready" &
pid=$!
i=0
until grep -q ready "$work/ready" 2>/dev/null || [ $i -gt 300 ]; do i=$((i + 1)); sleep 0.1; done
run blocked-target 3 'no sample: the target never ran on a CPU.*use --mode wall' -- \
	--pid $pid -d 500 -o "$work/d.pb.gz"
kill $pid; wait $pid 2>/dev/null
$py -c 'print("ready", flush=True)
while True: pass' > "$work/ready2" &
pid=$!
i=0
until grep -q ready "$work/ready2" 2>/dev/null || [ $i -gt 300 ]; do i=$((i + 1)); sleep 0.1; done
run busy-target 0 "" -- --pid $pid -d 500 -o "$work/e.pb.gz"
exit $failed
