#!/bin/sh
# Launch mode (pyperf-pprof -- COMMAND) ends with the command: on Ctrl-C
# (SIGINT from the terminal to the whole foreground process group) or a
# SIGTERM sent to the profiler alone, the command gets the signal exactly
# once, the profiler samples it while it ends, writes the profile and exits
# with the command's status (128 + signal when one killed it); a command
# still running when -d ends goes on, and the profiler says so and exits 0.
set -u
test_tag=launch
. "$(cd "$(dirname "$0")" && pwd)/py311-common.sh"
bg=
trap '[ -n "$bg" ] && kill $bg 2>/dev/null; rm -rf "$work"' EXIT
failed=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failed=1; }

# The command: counts SIGINT/SIGTERM, busy until the first, then busy 0.6 s
# more (a second copy of the signal would be counted), writes the count and
# exits 7.
cat > "$work/counter.py" <<'PY'
import signal, sys, time
got = []
def handler(sig, frame):
    got.append(sig)
signal.signal(signal.SIGINT, handler)
signal.signal(signal.SIGTERM, handler)
def busy_until_signal():
    while not got:
        pass
def busy_after_signal():
    t = time.monotonic()
    while time.monotonic() - t < 0.6:
        pass
open(sys.argv[1] + ".ready", "w").write("ready")
busy_until_signal()
busy_after_signal()
open(sys.argv[1], "w").write(str(len(got)))
sys.exit(7)
PY
# Runs "$PYPERF ARGS" as the foreground process group of a new terminal,
# waits for FILE.ready, types Ctrl-C, prints the output and returns the
# profiler's exit status.
cat > "$work/ctrl_c_driver.py" <<'PY'
import os, pty, sys, time
ready, argv = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
out = b""
deadline = time.monotonic() + 60
sent = False
while True:
    if not sent and os.path.exists(ready):
        time.sleep(0.3)
        os.write(fd, b"\x03")
        sent = True
    if time.monotonic() > deadline:
        os.kill(pid, 9)
    try:
        import select
        if select.select([fd], [], [], 0.1)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            out += chunk
    except OSError:
        break
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st))
PY
profiled() {	# PROFILE FUNC: FUNC has samples in PROFILE
	"$GO" tool pprof -top "$1" 2>/dev/null | grep -q " $2\$"
}

# 1. Ctrl-C on a terminal: the command got SIGINT from the terminal; it
# must not get a second one, and its status 7 is the profiler's.
"$PYTHON3" "$work/ctrl_c_driver.py" "$work/n1.ready" "$PYPERF" -d 0 -o "$work/p1.pb.gz" -- \
	$py "$work/counter.py" "$work/n1" > "$work/out1" 2>&1
rc=$?
sed 's/^/  /' "$work/out1" | tr -d '\r' | grep -v '^  $' | tail -5
n=$(cat "$work/n1" 2>/dev/null || echo none)
if [ $rc = 7 ] && [ "$n" = 1 ] && profiled "$work/p1.pb.gz" busy_after_signal; then
	pass "ctrl-c: exit $rc, command got $n SIGINT, profile covers its end"
else
	fail "ctrl-c: exit $rc (want 7), command got $n SIGINT (want 1), or busy_after_signal not profiled"
fi

# 2. SIGTERM to the profiler alone (kill, a service manager): passed on once.
"$PYPERF" -d 0 -o "$work/p2.pb.gz" -- $py "$work/counter.py" "$work/n2" > "$work/out2" 2>&1 &
bg=$!
i=0
until [ -e "$work/n2.ready" ] || [ $i -gt 300 ]; do i=$((i + 1)); sleep 0.1; done
sleep 0.3
kill -TERM $bg
wait $bg
rc=$?
bg=
sed 's/^/  /' "$work/out2" | tail -3
n=$(cat "$work/n2" 2>/dev/null || echo none)
if [ $rc = 7 ] && [ "$n" = 1 ] && profiled "$work/p2.pb.gz" busy_after_signal; then
	pass "sigterm to the profiler: exit $rc, command got $n signal"
else
	fail "sigterm to the profiler: exit $rc (want 7), command got $n signal (want 1)"
fi

# 3. The issue's case: Ctrl-C on `while True: pass`; Python dies of its
# KeyboardInterrupt by SIGINT (3.8+), so the status is 128 + 2.
cat > "$work/spin.py" <<'PY'
import sys
open(sys.argv[1], "w").write("ready")
while True:
    pass
PY
"$PYTHON3" "$work/ctrl_c_driver.py" "$work/n3.ready" "$PYPERF" -d 0 -o "$work/p3.pb.gz" -- \
	$py "$work/spin.py" "$work/n3.ready" > "$work/out3" 2>&1
rc=$?
if [ $rc = 130 ] && [ -s "$work/p3.pb.gz" ] && ! grep -q "still running" "$work/out3"; then
	pass "ctrl-c on while True: exit $rc"
else
	tr -d '\r' < "$work/out3" | sed 's/^/  /' | tail -4
	fail "ctrl-c on while True: exit $rc (want 130)"
fi

# 4. -d ends first: the command goes on, the profiler says so and exits 0.
# It runs a little first: a command that only sleeps may give no sample
# at all under load (its start-up before the events), an empty run (exit 3).
"$PYPERF" -d 500 -o "$work/p4.pb.gz" -- $py -c 'import time; sum(range(3000000)); time.sleep(30)' \
	> "$work/out4" 2>&1
rc=$?
child=$(sed -n 's/.*it goes on (pid \([0-9]*\)).*/\1/p' "$work/out4")
sed 's/^/  /' "$work/out4" | tail -2
if [ $rc = 0 ] && [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
	pass "-d before the command ends: exit 0, pid $child goes on"
else
	fail "-d before the command ends: exit $rc (want 0), no 'goes on' line or the command is gone"
fi
[ -n "$child" ] && kill "$child" 2>/dev/null
exit $failed
