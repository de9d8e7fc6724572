"""A thread busy 100 % that logs, every 2 ms, the wall clock and its own
CPU time (time.thread_time_ns); on SIGTERM the log goes to argv[1], one
"WALL_NS CPU_NS" a line. tests/cpu_window.py compares it with a profile:
the CPU time the thread really had in the profile's window."""
import os
import signal
import sys
import time

log = []


def stop(sig, frame):
    log.append((time.time_ns(), time.thread_time_ns()))  # the log ends now
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("".join("%d %d\n" % x for x in log))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    sys.exit(0)


def spin():
    due = 0
    while True:
        now = time.time_ns()
        if now >= due:
            log.append((now, time.thread_time_ns()))
            due = now + 2000000


signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
spin()
