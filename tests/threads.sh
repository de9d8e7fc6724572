#!/bin/sh
# Issue 6 on 3.8, Debian's 3.11 and 3.12, and Debian sid's 3.14 and 3.15
# in their chroot (tests/sid-common.sh; missing, those cases fail): Python
# thread names, the GIL label and --gil, and wall-clock mode (sleeping and
# I/O-bound threads).
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${GO:=go}"
: "${PYTHON3:=/usr/bin/python3}"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
work=$(mktemp -d /tmp/pyperf-threads.XXXXXX)
export HOME=$work
pid=
. "$TOP_SRCDIR/tests/sid-common.sh"
sid_work=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work" $sid_work' EXIT
root=${PYENV_ROOT:-/root/.pyenv}/versions
failed=0 ran=0

# run PY WORKLOAD NAME SCENARIOS PYPERF-OPTIONS...
run() {
	py=$1 workload=$2 name=$3 scenarios=$4
	shift 4
	rm -f "$work/ready"
	sid_launch "$py" "$workload" 30 > "$work/ready" &
	pid=$!
	i=0
	until grep -q ready "$work/ready" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1
	done
	"$PYPERF" --pid $pid -d 2000 -o "$work/p.pb.gz" -q "$@"
	kill $pid; wait $pid 2>/dev/null; pid=
	for sc in $scenarios; do
		if "$PYTHON3" "$TOP_SRCDIR/tests/check_threads.py" --go "$GO" --scenario "$sc" \
			--duration-ms 2000 "$work/p.pb.gz"; then
			echo "PASS $py $name/$sc"
		else
			echo "FAIL $py $name/$sc"; failed=1
		fi
	done
}

if reason=$(sid_missing); then
	sid=
	for py in $SID_INTERPRETERS; do echo "FAIL sid:$py: $reason"; done
	failed=1
else
	sid_work=$(sid_workdir threads)
	sid_workloads=$(sid_path "$sid_work")/workloads
	sid=$(for py in $SID_INTERPRETERS; do printf 'sid:%s ' "$py"; done)
fi
for py in $root/3.8.18/bin/python3.8 /usr/bin/python3.11 $root/3.12.1/bin/python3.12 $sid; do
	case $py in sid:*) ;; *) [ -x "$py" ] || { echo "SKIP $py: not present"; continue; } ;; esac
	ran=$((ran + 1))
	run "$py" named_threads.py cpu "names gil"
	run "$py" named_threads.py gil "gilonly" --gil
	run "$py" named_threads.py wall "wall" --mode wall
	run "$py" pipe_reader.py io "io" --mode wall
done
[ $ran = 0 ] && [ $failed = 0 ] && { echo "SKIP: no interpreter present"; exit 77; }
exit $failed
