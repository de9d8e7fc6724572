#!/bin/sh
# Thread names and GIL holder, live, on every interpreter present: start
# tests/workloads/named_threads.py (three busy threads worker-alpha,
# worker-beta, worker-gamma and a sleeping MainThread) and run
# tests/unit/test_pythread on it: "names" resolves each thread state to its
# threading.Thread name (src/python/pythread.c) and compares with what the
# workload printed; "gil" reads the GIL holder a few thousand times.
# Prints one line per interpreter and check, then a table.
# Exit status follows automake: 0 pass, 1 fail, 77 skip (with the reason).

top=${TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)} || exit 1
workload="$top/tests/workloads/named_threads.py"
# make check runs in the build directory; by hand, next to this script.
driver=${TEST_PYTHREAD:-tests/unit/test_pythread}
[ -x "$driver" ] || driver="$(dirname "$0")/test_pythread"
if [ ! -x "$driver" ]; then
	echo "SKIP: tests/unit/test_pythread is not built (make check builds it)"
	exit 77
fi
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: reading another process's memory needs root (or CAP_SYS_PTRACE)"
	exit 77
fi

# $(pyenv root) when pyenv is installed (the pyenv command itself, not a
# shim), else where this project's machines keep it. The interpreters
# themselves, never shims: a shim's choice depends on the directory.
root=${PYENV_ROOT:-}
if [ -z "$root" ] && command -v pyenv >/dev/null 2>&1; then
	root=$(pyenv root 2>/dev/null)
fi
root=${root:-/root/.pyenv}
interps="
$root/versions/3.6.15/bin/python3.6
$root/versions/3.7.16/bin/python3.7
$root/versions/3.8.18/bin/python3.8
$root/versions/3.9.18/bin/python3.9
$root/versions/3.10.13/bin/python3.10
$root/versions/3.11.7/bin/python3.11
$root/versions/3.12.1/bin/python3.12
$root/versions/3.13.0/bin/python3.13
/usr/bin/python3.11
"

work=$(mktemp -d /tmp/pyperf-pythread.XXXXXX) || exit 1
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT INT TERM

failed=0
ran=0
table=
for py in $interps; do
	if [ ! -x "$py" ]; then
		echo "# $py: not present"
		continue
	fi
	ran=$((ran + 1))
	out="$work/out"
	rm -f "$out"
	"$py" "$workload" 60 > "$out" &
	pid=$!
	i=0
	until grep -q '"worker-gamma"' "$out" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 300 ] || ! kill -0 $pid 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	res=
	for mode in names gil; do
		if "$driver" $mode $pid "$out" > "$work/log" 2>&1; then
			r=ok
		else
			r=FAIL
			failed=1
		fi
		sed "s|^|  [$py $mode] |" "$work/log"
		echo "$r $py $mode"
		res="$res $mode=$r"
	done
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	pid=
	table="$table
$(printf '%-44s%s' "$py" "$res")"
done

if [ $ran = 0 ]; then
	echo "SKIP: none of the interpreters is present"
	exit 77
fi
echo "# results:$table"
exit $failed
