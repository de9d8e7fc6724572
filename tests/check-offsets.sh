#!/bin/sh
# Check the committed CPython offset table (src/python/pyoffsets_table.c) against
# the debug info of every interpreter installed under the pyenv root.
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

echo "checking $top/src/python/pyoffsets_table.c against $root/versions/*"
exec "$python" "$gen" --check --pyenv-root "$root" \
	--table "$top/src/python/pyoffsets_table.c"
