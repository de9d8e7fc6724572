# Four-thread CPU-bound workload for `make bench`: the same fixed amount of
# work as cpu.py (UNITS units), split over NTHREADS threads that start
# together. Pure Python, so the threads take turns holding the GIL: about
# one CPU busy, plus the GIL hand-over cost.
#
#   python threads.py [--wait] UNITS
#
# The threads exist (blocked on an Event) before "ready" is printed, so a
# profiler attached at that point sees all of them. Prints "elapsed SECONDS
# cpu SECONDS" like cpu.py.
import os
import sys
import threading
import time

from cpu import work

NTHREADS = 4


def main():
    argv = sys.argv[1:]
    wait = bool(argv) and argv[0] == "--wait"
    units = int(argv[1 if wait else 0]) if len(argv) > (1 if wait else 0) else 500
    go = threading.Event()
    share = [units // NTHREADS + (1 if i < units % NTHREADS else 0) for i in range(NTHREADS)]

    def run(n):
        go.wait()
        work(n)

    threads = [threading.Thread(target=run, args=(n,), name="worker-%d" % i)
               for i, n in enumerate(share)]
    for t in threads:
        t.start()
    if wait:
        sys.stdout.write("ready %d\n" % os.getpid())
        sys.stdout.flush()
        sys.stdin.readline()
    t0, c0 = time.perf_counter(), time.process_time()
    go.set()
    for t in threads:
        t.join()
    sys.stdout.write("elapsed %.6f cpu %.6f\n" % (time.perf_counter() - t0,
                                                  time.process_time() - c0))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
