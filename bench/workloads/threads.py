# Four-thread CPU-bound workload for `make bench`: the same work as cpu.py,
# UNITS units split over NTHREADS threads that start together. Pure Python,
# so the threads take turns holding the GIL: about one CPU busy, plus the
# GIL hand-over cost. Same command line and output as cpu.py.
#
# The worker threads are started once, before "ready" is printed (so a
# profiler attached then sees all of them), and wait on a barrier between
# pieces of work.
import sys
import threading

from cpu import drive, work

NTHREADS = 4


class Pool:
    def __init__(self, n):
        self.share = [0] * n
        self.start = threading.Barrier(n + 1)
        self.done = threading.Barrier(n + 1)
        for i in range(n):
            t = threading.Thread(target=self.worker, args=(i,), name="worker-%d" % i)
            t.daemon = True
            t.start()

    def worker(self, i):
        while True:
            self.start.wait()
            work(self.share[i])
            self.done.wait()

    def run(self, units):
        n = len(self.share)
        for i in range(n):
            self.share[i] = units // n + (1 if i < units % n else 0)
        self.start.wait()
        self.done.wait()


if __name__ == "__main__":
    drive(Pool(NTHREADS).run, sys.argv[1:])
