#!/bin/sh
# Check the committed CPython offset table (src/python/pyoffsets_table.c) against
# the debug info of every interpreter installed under the pyenv root, and of
# Debian sid's python3.14 and python3.15 in the suite's chroot
# ($PYPERF_SID_ROOT) when their debug files are at $PYPERF_SID_DEBUG
# (usr/lib/debug of python3.14-dbg and python3.15-dbg of the chroot's
# versions, unpacked with dpkg-deb -x; never installed in the chroot, whose
# interpreters stay as users have them). Without them the sid entries are
# not re-derived here and a note says so; at run time the chooser still
# takes them only when the interpreter's own _Py_DebugOffsets agrees.
#
# Each interpreter is compared field by field with the table entry for its
# minor version, so a patch release other than the one the table came from
# is checked too (and a layout change inside a minor version is caught).
# Exit status follows automake: 0 pass, 1 fail, 77 skip.

# TOP_SRCDIR comes from "make check"; by hand, this script's own path.
top=${TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)} || exit 1
gen="$top/src/python/gen-offsets.py"

# The generator is standard-library Python 3; any python3 will do
# (PYTHON3 is configure's choice), but never a pyenv shim: a shim's
# choice depends on the current directory and pyenv's settings.
python=
for p in "${PYTHON3:-}" /usr/bin/python3 "$(command -v python3 2>/dev/null)"
do
	case "$p" in
	/*) ;;
	?*) p=$(command -v "$p" 2>/dev/null) ;;
	esac
	case "$p" in
	*/shims/*|"") continue ;;
	esac
	if [ -x "$p" ]; then python=$p; break; fi
done
if [ -z "$python" ]; then
	echo "SKIP: no python3 (outside pyenv shims) to run $gen"
	exit 77
fi

# $(pyenv root) when pyenv is installed (the pyenv command itself, not a
# shim), else where this project's machines keep it.
root=${PYENV_ROOT:-}
if [ -z "$root" ] && command -v pyenv >/dev/null 2>&1; then
	root=$(pyenv root 2>/dev/null)
fi
root=${root:-/root/.pyenv}
if [ ! -d "$root/versions" ]; then
	echo "SKIP: no pyenv interpreters ($root/versions does not exist)"
	exit 77
fi

sid=${PYPERF_SID_ROOT:-/var/cache/pyperf-pprof/sid}
# contrib/sid-chroot.sh unpacks them here.
: "${PYPERF_SID_DEBUG:=/var/cache/pyperf-pprof/sid-dbg/usr/lib/debug}"
set --
if [ -n "${PYPERF_SID_DEBUG:-}" ]; then
	if [ ! -d "$PYPERF_SID_DEBUG/.build-id" ]; then
		echo "FAIL: PYPERF_SID_DEBUG=$PYPERF_SID_DEBUG has no .build-id directory"
		exit 1
	fi
	set -- --debug-dir "$PYPERF_SID_DEBUG"
	echo "sid debug files: $PYPERF_SID_DEBUG"
else
	echo "note: PYPERF_SID_DEBUG is not set: the 3.14 and 3.15 entries (Debian sid's, from python3.X-dbg) are not re-derived"
fi
# The free-threaded entries come from builds of CPython's release tags
# ($PYPERF_FT_ROOT, see the table's header); a machine without them (CI)
# checks the rest, and says so.
ft=${PYPERF_FT_ROOT:-/opt/cpython-ft}
if ! ls "$ft"/3.*t/lib/libpython3.*t.so >/dev/null 2>&1; then
	echo "note: no free-threaded builds under $ft (PYPERF_FT_ROOT): the 3.13t, 3.14t and 3.15t entries are not re-derived"
fi
echo "checking $top/src/python/pyoffsets_table.c against $root/versions/*, $sid/usr/bin/python3.1[45] and $ft/3.*t"
exec "$python" "$gen" --check --pyenv-root "$root" --sid-root "$sid" \
	--ft-root "$ft" "$@" \
	--table "$top/src/python/pyoffsets_table.c"
