#!/bin/sh
# Our profiles in the real clients (issue 9): profiles tests/workloads/ratio.py
# under /usr/bin/python3.11 once, then reads the file with Debian's
# go tool pprof: -top, -traces, -raw, -tagfocus on thread_name/pid/tid,
# and the -http web UI's flame graph and top pages (tests/check_clients.py).
# Exit codes follow automake: 0 pass, 1 fail, 77 skip (with a reason).
set -u
name=clients
. "${TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/client-common.sh"

need_profiling
command -v "$GO" >/dev/null 2>&1 || skip "go (Debian golang-go) not installed"
make_workdir
# Python frames only: these tests check what the clients show of a known
# Python call tree; native merging has its own e2e scenario. ratio.py has
# one thread, the main one: its thread_name is MainThread (it never imports
# threading, so this is not read from the target).
profile_ratio "$work/profile.pb.gz" --no-native
"$PYTHON3" "$TOP_SRCDIR/tests/check_clients.py" --go "$GO" --pid "$wpid" \
	--thread-name MainThread --tmpdir "$work" "$work/profile.pb.gz" ||
	fail "go tool pprof checks failed"
echo "PASS $name"
