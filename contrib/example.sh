#!/bin/sh
# Profiles the bundled example program for 5 seconds and prints the
# result with go tool pprof. Usage: contrib/example.sh [path/to/pyperf-pprof]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
pyperf=${1:-$here/../pyperf-pprof}
python=${PYTHON:-/usr/bin/python3}
out=${OUT:-example.pb.gz}

"$python" "$here/example.py" 8 > /dev/null &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
sleep 0.5
"$pyperf" --pid $pid -d 5000 -o "$out"
echo
echo "== go tool pprof -top $out"
HOME=${HOME:-/root} go tool pprof -top "$out" 2>/dev/null | head -25
echo
echo "== go tool pprof -traces $out (first stacks)"
HOME=${HOME:-/root} go tool pprof -traces "$out" 2>/dev/null | head -40
