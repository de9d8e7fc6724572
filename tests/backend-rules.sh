#!/bin/sh
# Back-end rules (issue 9): decodes our gzip protobuf with the independent
# decoder in tests/check_backend_rules.py (no protobuf library, none of our
# C code) and checks the rules pprof clients rely on. First the checker's
# self-test (it must reject broken profiles), then a profile of
# tests/workloads/ratio.py, then one of two processes of it at once (-F 499).
# Exit codes follow automake: 0 pass, 1 fail, 77 skip (with a reason).
set -u
name=backend-rules
. "${TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/client-common.sh"
checker=$TOP_SRCDIR/tests/check_backend_rules.py

[ -x "$PYTHON3" ] || skip "python3 ($PYTHON3) not installed"
"$PYTHON3" "$checker" --self-test || fail "checker self-test failed"
need_profiling
make_workdir

profile_ratio "$work/ratio.pb.gz"
"$PYTHON3" "$checker" --expect-pid "$wpid" "$work/ratio.pb.gz" ||
	fail "profile of one process breaks back-end rules"
"$PYTHON3" "$checker" --self-test "$work/ratio.pb.gz" ||
	fail "checker self-test on the real profile failed"

start_workload "$RATIO_INTERP" "$TOP_SRCDIR/tests/workloads/ratio.py" 30
pid1=$wpid
start_workload "$RATIO_INTERP" "$TOP_SRCDIR/tests/workloads/ratio.py" 30
pid2=$wpid
"$PYPERF" --pid "$pid1" --pid "$pid2" -F 499 -d 2000 -o "$work/two.pb.gz" -v ||
	fail "pyperf-pprof on two processes failed"
"$PYTHON3" "$checker" --expect-pid "$pid1" --expect-pid "$pid2" "$work/two.pb.gz" ||
	fail "profile of two processes breaks back-end rules"
echo "PASS $name"
