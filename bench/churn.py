#!/usr/bin/python3
"""Where a new process's cost goes (issue 25's churn line, for profiling it):
in a PID namespace of its own, the profiler over every Python process of it
at 99 Hz with bench/host.py's ten idle and two busy targets, a 10 s window
without new processes, then SECONDS with a short-lived one every 0.3 s;
prints the profiler's CPU per new process above the busy line, as host.py's
churn line does.

    python3 bench/churn.py ./pyperf-pprof SECONDS [strace|perf]

strace: `strace -c -f` of the profiler during the churn window, written to
churn.strace (divide the calls by the new processes); perf: `perf record
-g` of it to churn.perf (build with CFLAGS="-O2 -g -fno-omit-frame-pointer"
for whole call chains). CHURN_FLAG=-v writes the profiler's statistics to
churn.err. CHURN_PY=INTERPRETER runs every process (idle, busy, new) with
that one interpreter instead of pyenv's five: a distribution build, or a
wrapper script that runs one in a chroot as a container would. Files go
to the current directory. Figures are noisy on a loaded machine: alternate
the builds compared.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host  # noqa: E402

if os.environ.get("CHURN_NS") != "1":
    os.environ["CHURN_NS"] = "1"
    sys.exit(subprocess.call(["unshare", "--pid", "--fork", "--mount-proc", sys.executable,
                              os.path.abspath(__file__)] + sys.argv[1:]))
if len(sys.argv) < 3:
    sys.exit(__doc__)
binp, secs = os.path.abspath(sys.argv[1]), float(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else None
pys = [os.environ["CHURN_PY"]] if os.environ.get("CHURN_PY") else host.pythons()
idle = [subprocess.Popen([pys[i % len(pys)], "-c", host.IDLE]) for i in range(10)]
busy = [subprocess.Popen([pys[i % len(pys)], "-c", host.BUSY]) for i in range(2)]
prof = subprocess.Popen([binp, "-F", "99", "-d", "0", os.environ.get("CHURN_FLAG", "-q"),
                         "-o", "churn.pb.gz"], stderr=open("churn.err", "w"))
time.sleep(7)
host.warm_short(pys)
wall, pc, _ = host.window(prof, 10, busy)
tool = None
if mode == "strace":
    tool = subprocess.Popen(["strace", "-c", "-f", "-o", "churn.strace", "-p", str(prof.pid)])
elif mode == "perf":
    tool = subprocess.Popen(["perf", "record", "-q", "-g", "-e", "cpu-clock", "-F", "10000",
                             "-o", "churn.perf", "-p", str(prof.pid)])
time.sleep(0.5)
n = [0]
spawned = []


def tick():
    spawned.append(subprocess.Popen([pys[n[0] % len(pys)], "-c", host.SHORT]))
    n[0] += 1


wall2, pc2, _ = host.window(prof, secs, busy, tick)
for s in spawned:
    s.wait()
if tool:
    tool.send_signal(2)
    tool.wait()
extra = pc2 / wall2 - pc / wall
print("busy %.3f ms/s; churn %.3f ms/s; %d new; %.2f ms/new above busy (%.2f raw)" % (
    pc / wall / 1e6, pc2 / wall2 / 1e6, n[0], extra * wall2 / n[0] / 1e6, pc2 / n[0] / 1e6))
prof.send_signal(2)
prof.wait()
host.stop(busy + idle)
