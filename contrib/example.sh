#!/bin/sh
# Profiles the bundled example program for 5 seconds under each CPython the
# machine has among Debian's /usr/bin/python3.11 and pyenv's 3.11.7 (or
# $PYTHON alone), and prints each result with go tool pprof -top and
# -traces. Usage: contrib/example.sh [path/to/pyperf-pprof]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
pyperf=${1:-$here/../pyperf-pprof}
pyenv_root=${PYENV_ROOT:-/root/.pyenv}
pythons=${PYTHON:-"/usr/bin/python3.11 $pyenv_root/versions/3.11.7/bin/python3.11"}
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null || true' EXIT
n=0
for python in $pythons; do
	[ -x "$python" ] || { echo "(skipping $python: not installed)"; continue; }
	n=$((n + 1))
	out=${OUT:-example-$n.pb.gz}
	echo "==== $python"
	"$python" "$here/example.py" 8 > /dev/null &
	pid=$!
	sleep 0.5
	"$pyperf" --pid $pid -d 5000 -o "$out"
	kill $pid 2>/dev/null || true
	pid=
	echo
	echo "== go tool pprof -top $out"
	HOME=${HOME:-/root} go tool pprof -top "$out" 2>/dev/null | head -25
	echo
	echo "== go tool pprof -traces $out (first stacks)"
	HOME=${HOME:-/root} go tool pprof -traces "$out" 2>/dev/null | head -40
done
[ $n -gt 0 ] || { echo "example: no Python interpreter found" >&2; exit 1; }
