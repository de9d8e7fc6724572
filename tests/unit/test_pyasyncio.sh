#!/bin/sh
# asyncio task reading (src/python/pyasyncio.c):
#  - the label format (tests/unit/test_pyasyncio format);
#  - the offset table against the DWARF of every pyenv CPython 3.7-3.13
#    present (gdb ptype/o of TaskObj in the _asyncio extension, of
#    PyCoroObject, _PyInterpreterFrame and PyTypeObject in libpython) and
#    against the running interpreter's __basicsize__ of _asyncio.Task and
#    of coroutines;
#  - live: tests/workloads/asyncio_tasks.py --side-thread, whose two
#    threads each run a loop whose first task burns CPU for the whole
#    test, C Task and pure-Python Task, on every interpreter present
#    (pyenv 3.7-3.13, Debian's 3.11); a 3.12 target read with the 3.13
#    table (_asyncio.Task of 176 bytes, the table says 144) is refused.
# Exit status follows automake: 0 pass, 1 fail, 77 skip (with the reason).

top=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)} || exit 1
driver=${TEST_PYASYNCIO:-tests/unit/test_pyasyncio}
[ -x "$driver" ] || driver="$(dirname "$0")/test_pyasyncio"
if [ ! -x "$driver" ]; then
	echo "SKIP: tests/unit/test_pyasyncio is not built (make check builds it)"
	exit 77
fi
root=${PYENV_ROOT:-/root/.pyenv}
work=$(mktemp -d /tmp/pyperf-pyasyncio.XXXXXX) || exit 1
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT INT TERM
failed=0

"$driver" format || failed=1

# off FILE: the offset of field $2 in gdb's ptype/o output FILE, or the
# outermost struct's size for "size".
off() {
	if [ "$2" = size ]; then
		sed -n 's|.*/\* total size (bytes): *\([0-9]*\) \*/.*|\1|p' "$1" | tail -1
	else
		sed -n "s|^/\\* *\\([0-9]*\\) .*[ *]$2\\(\\[1\\]\\)\\{0,1\\};\$|\\1|p" "$1" | head -1
	fi
}

# dwarf VERSION: the table row of 3.x as derived from the pyenv build.
# dwarf PREFIX 3.X[t]: the row as the DWARF of that installation says.
dwarf() {
	m=$2
	so=$(ls "$1/lib/python$m/lib-dynload/"_asyncio*.so 2>/dev/null | head -1)
	lib=$(ls "$1/lib/"libpython$m*.so.1.0 2>/dev/null | head -1)
	[ -n "$so" ] && [ -n "$lib" ] || return 1
	gdb -batch -ex 'ptype/o TaskObj' "$so" > "$work/task" 2>/dev/null
	gdb -batch -ex 'ptype/o PyCoroObject' "$lib" > "$work/coro" 2>/dev/null
	gdb -batch -ex 'ptype/o struct _typeobject' "$lib" > "$work/type" 2>/dev/null
	gdb -batch -ex 'ptype/o struct _PyInterpreterFrame' "$lib" > "$work/frame" 2>/dev/null
	no=65535
	iframe=$(off "$work/coro" cr_iframe)
	if [ -n "$iframe" ]; then
		coro_size=$(( iframe + $(off "$work/frame" localsplus) ))
	else
		coro_size=$(off "$work/coro" size)
	fi
	echo "task_size $(off "$work/task" size)"
	echo "task_coro $(off "$work/task" task_coro)"
	echo "task_name $(off "$work/task" task_name | grep . || echo $no)"
	echo "coro_size $coro_size"
	echo "cr_code $(off "$work/coro" cr_code | grep . || echo $no)"
	echo "cr_qualname $(off "$work/coro" cr_qualname)"
	echo "cr_iframe ${iframe:-$no}"
	echo "type_base $(off "$work/type" tp_base)"
}

# live PYTHON MAIN-LABEL SIDE-LABEL [--py-task]
live() {
	py=$1 want=$2 side=$3
	shift 3
	rm -f "$work/out"
	"$py" "$top/tests/workloads/asyncio_tasks.py" 60 100000 --side-thread "$@" > "$work/out" &
	pid=$!
	i=0
	until grep -q ready "$work/out" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 300 ] || ! kill -0 $pid 2>/dev/null; then break; fi
		sleep 0.1
	done
	sleep 0.5	# the first task's turn starts once main() awaits
	kind=c
	case " $* " in *" --py-task "*) kind=py ;; esac
	if "$driver" live $pid "$want" "$side" $kind > "$work/log" 2>&1; then r=ok; else r=FAIL; failed=1; fi
	sed "s|^|  [$py $*] |" "$work/log"
	echo "$r $py live $*"
	# A table whose Task size differs from the target's must be refused.
	if [ -n "$refuse_as" ] && [ $# = 0 ]; then
		if "$driver" refuse $pid "$refuse_as" > "$work/log" 2>&1; then r=ok; else r=FAIL; failed=1; fi
		sed "s|^|  [$py refuse] |" "$work/log"
		echo "$r $py read with the 3.$refuse_as table: refused"
	fi
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	pid=
}

ran=0
for v in 3.7.16 3.8.18 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0; do
	py=$root/versions/$v/bin/python3
	[ -x "$py" ] || { echo "# $py: not present"; continue; }
	ran=$((ran + 1))
	m=${v%.*}
	"$driver" layout "${m#3.}" > "$work/table"
	if ! command -v gdb >/dev/null 2>&1; then
		echo "# no gdb: the $v table row is not compared with DWARF"
	elif ! dwarf "$root/versions/$v" "$m" > "$work/dwarf"; then
		echo "FAIL $v: no _asyncio extension or libpython to read DWARF from"; failed=1
	elif diff "$work/table" "$work/dwarf" > "$work/diff"; then
		echo "ok $v table row = DWARF"
	else
		echo "FAIL $v table row differs from DWARF (< table, > DWARF):"; cat "$work/diff"; failed=1
	fi
	sizes=$("$py" -c 'import _asyncio, types; print(_asyncio.Task.__basicsize__, types.CoroutineType.__basicsize__)')
	want="$(sed -n 's/^task_size //p' "$work/table") $(sed -n 's/^coro_size //p' "$work/table")"
	if [ "$sizes" = "$want" ]; then
		echo "ok $v Task and coroutine basicsize $sizes"
	else
		echo "FAIL $v Task and coroutine basicsize: interpreter $sizes, table $want"; failed=1
	fi
	# (3.13 with the 3.12 table would fail earlier: the thread-state
	# layout comes from its _Py_DebugOffsets.)
	refuse_as=
	[ "$m" = 3.12 ] && refuse_as=13
	if [ "$m" = 3.7 ]; then
		live "$py" 'Task-* (alpha_loop)' 'Task-* (side_loop)'
		live "$py" 'Task-* (alpha_loop)' 'Task-* (side_loop)' --py-task
	else
		live "$py" alpha side
		live "$py" alpha side --py-task
	fi
done
if [ -x /usr/bin/python3.11 ]; then
	ran=$((ran + 1))
	refuse_as=
	"$driver" layout 11 > "$work/table"
	sizes=$(/usr/bin/python3.11 -c 'import _asyncio, types; print(_asyncio.Task.__basicsize__, types.CoroutineType.__basicsize__)')
	want="$(sed -n 's/^task_size //p' "$work/table") $(sed -n 's/^coro_size //p' "$work/table")"
	if [ "$sizes" = "$want" ]; then
		echo "ok Debian 3.11 Task and coroutine basicsize $sizes"
	else
		echo "FAIL Debian 3.11 Task and coroutine basicsize: interpreter $sizes, table $want"; failed=1
	fi
	live /usr/bin/python3.11 alpha side
	live /usr/bin/python3.11 alpha side --py-task
fi
# The free-threaded 3.13t row, from a build of v3.13.15 with debug info
# ($PYPERF_FT_ROOT, see src/python/pyoffsets_table.c); CI has none.
ft=${PYPERF_FT_ROOT:-/opt/cpython-ft}/3.13t
if [ -x "$ft/bin/python3.13t" ]; then
	ran=$((ran + 1))
	refuse_as=
	"$driver" layout 13t > "$work/table"
	if ! command -v gdb >/dev/null 2>&1; then
		echo "# no gdb: the 3.13t table row is not compared with DWARF"
	elif ! dwarf "$ft" 3.13t > "$work/dwarf"; then
		echo "FAIL 3.13t: no _asyncio extension or libpython to read DWARF from"; failed=1
	elif diff "$work/table" "$work/dwarf" > "$work/diff"; then
		echo "ok 3.13t table row = DWARF"
	else
		echo "FAIL 3.13t table row differs from DWARF (< table, > DWARF):"; cat "$work/diff"; failed=1
	fi
	sizes=$("$ft/bin/python3.13t" -c 'import _asyncio, types; print(_asyncio.Task.__basicsize__, types.CoroutineType.__basicsize__)')
	want="$(sed -n 's/^task_size //p' "$work/table") $(sed -n 's/^coro_size //p' "$work/table")"
	if [ "$sizes" = "$want" ]; then
		echo "ok 3.13t Task and coroutine basicsize $sizes"
	else
		echo "FAIL 3.13t Task and coroutine basicsize: interpreter $sizes, table $want"; failed=1
	fi
	live "$ft/bin/python3.13t" alpha side
	live "$ft/bin/python3.13t" alpha side --py-task
else
	echo "# $ft/bin/python3.13t: not present (free-threaded 3.13t row not checked)"
fi
if [ $ran = 0 ]; then
	echo "SKIP: no CPython 3.7 to 3.13 present"
	exit 77
fi
exit $failed
