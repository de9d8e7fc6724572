# Single-threaded CPU-bound workload for `make bench`: a fixed amount of
# pure-Python work (arithmetic loops, dict and string operations) done
# DEPTH calls deep, so every sample has a realistic Python stack.
#
#   python cpu.py [--wait] UNITS
#
# --wait: print "ready PID" and wait for a line on stdin before starting
# (the bench attaches a profiler in between). Prints "elapsed SECONDS" of
# the work alone and "cpu SECONDS", the process CPU time it took (all
# threads). Valid on Python 3.6+.
import os
import sys
import time

DEPTH = 12
LEAF_N = 2000


def leaf(n):
    t = 0
    for i in range(n):
        t += i * i % 7
    return t


def strwork(n):
    d = {}
    for i in range(n):
        k = "k%d" % (i % 64)
        d[k] = d.get(k, 0) + len(k)
    return len(d)


def descend(depth, n):
    if depth == 0:
        return leaf(n) + strwork(n // 4)
    return descend(depth - 1, n)


def work(units):
    total = 0
    for _ in range(units):
        total += descend(DEPTH, LEAF_N)
    return total


def wait_for_go(argv):
    if argv and argv[0] == "--wait":
        sys.stdout.write("ready %d\n" % os.getpid())
        sys.stdout.flush()
        sys.stdin.readline()
        return argv[1:]
    return argv


def main():
    argv = sys.argv[1:]
    wait = bool(argv) and argv[0] == "--wait"
    units = int(argv[1 if wait else 0]) if len(argv) > (1 if wait else 0) else 500
    if wait:
        wait_for_go(argv)
    t0, c0 = time.perf_counter(), time.process_time()
    work(units)
    sys.stdout.write("elapsed %.6f cpu %.6f\n" % (time.perf_counter() - t0,
                                                  time.process_time() - c0))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
