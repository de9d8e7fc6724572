#!/bin/sh
# Live check of the _Py_DebugOffsets parser: start the pyenv CPython 3.13.0,
# read the table at the start of its _PyRuntime with tests/unit/dump_runtime,
# and compare the parsed layout field by field with the generated 3.13
# entry in src/python/pyoffsets_table.c and with what pyversion_detect() gives
# the BPF program. The unit test (tests/unit/test_debugoffsets) covers the
# parser without a live process; this one proves it on the real thing.
# Exit status follows automake: 0 pass, 1 fail, 77 skip (with the reason).

# $(pyenv root) when pyenv is installed (the pyenv command itself, not a
# shim), else where this project's machines keep it.
root=${PYENV_ROOT:-}
if [ -z "$root" ] && command -v pyenv >/dev/null 2>&1; then
	root=$(pyenv root 2>/dev/null)
fi
root=${root:-/root/.pyenv}
# The interpreter itself, never a shim: a shim's choice depends on the
# current directory and pyenv's settings.
python="$root/versions/3.13.0/bin/python3"
if [ ! -x "$python" ]; then
	echo "SKIP: no CPython 3.13.0 at $python"
	exit 77
fi

# make check runs in the build directory; by hand, next to this script.
helper=${DUMP_RUNTIME:-tests/unit/dump_runtime}
[ -x "$helper" ] || helper="$(dirname "$0")/dump_runtime"
if [ ! -x "$helper" ]; then
	echo "SKIP: tests/unit/dump_runtime is not built (make check builds it)"
	exit 77
fi

"$python" -I -c 'import time; time.sleep(60)' &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT INT TERM

# Wait until the exec is done and libpython is mapped (at most 10 s).
n=0
until grep -q 'libpython3\.13' "/proc/$pid/maps" 2>/dev/null; do
	n=$((n + 1))
	if [ $n -gt 100 ] || ! kill -0 $pid 2>/dev/null; then
		echo "FAIL: $python (pid $pid) never mapped libpython3.13"
		exit 1
	fi
	sleep 0.1
done

"$helper" "$pid"
rc=$?
case $rc in
0) exit 0 ;;
77) echo "SKIP: see above"; exit 77 ;;
*) exit 1 ;;
esac
