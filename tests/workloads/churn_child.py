"""A short-lived Python process for the soak test (tests/soak.sh).

    churn_child.py SECONDS DEPTH THREADS

Burns CPU for SECONDS in THREADS threads, DEPTH calls deep, through
functions compiled at start-up with names unique to this process, so the
profiler keeps meeting new code objects, strings and threads, as it does
beside a service that forks workers and reloads code.
"""
import os
import sys
import threading
import time

seconds, depth, nthreads = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
tag = "p%d" % os.getpid()
src = []
for k in range(depth):
    nxt = "leaf(end)" if k == depth - 1 else "f_%s_%d(end)" % (tag, k + 1)
    src.append("def f_%s_%d(end):\n    return %s\n" % (tag, k, nxt))
src.append("def leaf(end):\n    x = 0\n    while time.time() < end:\n"
           "        for i in range(500):\n            x += i * i\n    return x\n")
ns = {"time": time}
exec(compile("".join(src), "churn_%s.py" % tag, "exec"), ns)
entry = ns["f_%s_0" % tag]
end = time.time() + seconds
threads = [threading.Thread(target=entry, args=(end,), name="churn-%d" % i)
           for i in range(nthreads - 1)]
for t in threads:
    t.start()
entry(end)
for t in threads:
    t.join()
