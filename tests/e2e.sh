#!/bin/sh
# End-to-end test of one interpreter: run tests/workloads/ratio.py under it,
# profile it with the built pyperf-pprof, check the profile with
# go tool pprof. The test file ($1) holds the interpreter's path.
# Exit codes follow automake: 0 pass, 1 fail, 77 skip (with a reason).
set -u
case_file=$1
name=$(basename "$case_file" .e2e)
interp=$(eval echo "$(cat "$case_file")")
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${PYPERF:=./pyperf-pprof}"
: "${GO:=go}"
: "${PYTHON3:=/usr/bin/python3}"

skip() { echo "SKIP $name: $*"; exit 77; }
fail() { echo "FAIL $name: $*"; exit 1; }

[ -x "$interp" ] || skip "interpreter $interp not present"
[ "$(id -u)" = 0 ] || skip "needs root for BPF and perf events"
command -v "$GO" >/dev/null 2>&1 || skip "go (Debian golang-go) not installed"
[ -x "$PYTHON3" ] || skip "python3 not installed"

work=$(mktemp -d /tmp/pyperf-e2e.XXXXXX)
trap 'kill $pid 2>/dev/null; rm -rf "$work"' EXIT INT TERM
"$interp" "$TOP_SRCDIR/tests/workloads/ratio.py" 30 > "$work/ready" &
pid=$!
i=0
until grep -q ready "$work/ready" 2>/dev/null; do
	i=$((i + 1)); [ $i -gt 100 ] && fail "workload did not start"; sleep 0.1
done
"$PYPERF" --pid $pid -d 3000 -o "$work/profile.pb.gz" -v > "$work/log" 2>&1
rc=$?
cat "$work/log"
[ $rc = 0 ] || fail "pyperf-pprof exited with $rc"
HOME=${HOME:-/root} "$PYTHON3" "$TOP_SRCDIR/tests/check_profile.py" --go "$GO" \
	--workload "$TOP_SRCDIR/tests/workloads/ratio.py" "$work/profile.pb.gz" ||
	fail "profile check failed"
echo "PASS $name"
