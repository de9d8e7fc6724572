#!/bin/sh
# The libFuzzer targets of fuzz/, briefly: each runs a fixed number of
# inputs from a fixed seed and its seed corpus (`fuzz/run.sh brief`, about
# five seconds each), so a parser change that crashes on the seeds or on
# those inputs fails `make check`, the same way on every machine.
# FUZZ_BRIEF_SECONDS=N runs each for N seconds of open search instead;
# `make fuzz` runs them longer. Crash inputs are kept in
# tests/artifacts/fuzz/ of the build tree, with the binary to replay them.
# Exit 0 pass, 1 fail, 77 skip (no clang or no libFuzzer runtime).
set -u
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${PYPERF:=./pyperf-pprof}"
builddir=$(cd "$(dirname "$PYPERF")" && pwd)
secs=${FUZZ_BRIEF_SECONDS:-brief}

err=$(mktemp /tmp/pyperf-fuzz-brief.XXXXXX)
trap 'rm -f "$err"' EXIT
# Niced: the end-to-end tests that run beside it measure CPU shares.
CC_FUZZ=${CC_FUZZ:-${CLANG:-clang}} FUZZ_ARTIFACTS=$builddir/tests/artifacts/fuzz \
	BUILDDIR=$builddir nice -n 10 sh "$TOP_SRCDIR/fuzz/run.sh" "$secs" 2>"$err"
rc=$?
cat "$err" >&2
case $rc in
0)
	echo "PASS fuzz-brief: every target ran ($secs) without a finding"
	exit 0 ;;
77)
	echo "SKIP fuzz-brief: clang with the libFuzzer runtime is needed (Debian 12: clang and libclang-rt-14-dev): $(head -1 "$err")"
	exit 77 ;;
*)
	echo "FAIL fuzz-brief: fuzz/run.sh exited with $rc"
	exit 1 ;;
esac
