# Single-threaded CPU-bound workload for `make bench`: a fixed amount of
# pure-Python work (arithmetic loops, dict and string operations) done
# DEPTH calls deep, so every sample has a realistic Python stack.
#
#   python cpu.py UNITS            do UNITS units of work now
#   python cpu.py --wait UNITS     print "ready PID", wait for a line on
#                                  stdin, then do the work
#   python cpu.py --serve          print "ready PID", then for each line
#                                  "run UNITS" on stdin do the work; "quit"
#                                  or end of input ends
#
# After each piece of work it prints "elapsed SECONDS cpu SECONDS": the
# wall-clock time of the work alone and the process CPU time it took (all
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


def timed(fn, units):
    t0, c0 = time.perf_counter(), time.process_time()
    fn(units)
    sys.stdout.write("elapsed %.6f cpu %.6f\n" % (time.perf_counter() - t0,
                                                  time.process_time() - c0))
    sys.stdout.flush()


def drive(fn, argv):
    """The command line above, for any fn(units)."""
    mode = argv[0] if argv and argv[0].startswith("--") else None
    if mode in ("--wait", "--serve"):
        sys.stdout.write("ready %d\n" % os.getpid())
        sys.stdout.flush()
    if mode == "--serve":
        for line in sys.stdin:
            cmd = line.split()
            if not cmd or cmd[0] == "quit":
                break
            timed(fn, int(cmd[1]))
        return
    if mode == "--wait":
        sys.stdin.readline()
        argv = argv[1:]
    elif mode:
        sys.exit("unknown option %s" % mode)
    timed(fn, int(argv[0]) if argv else 500)


if __name__ == "__main__":
    drive(work, sys.argv[1:])
