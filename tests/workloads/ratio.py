# Known call structure for the end-to-end tests: heavy() does three times
# the iterations of light(), both through the shared leaf(). The amount of
# work per round is random so the round time never locks in phase with the
# sampling timer (a fixed period aliases and biases periodic sampling).
# Runs for argv[1] seconds (default 60). Valid on Python 2.7 and every 3.x.
#
# Three times the iterations is not three times the CPU time, and by how
# much is the interpreter's business: light's loop spends a larger share
# of its iterations on cached small ints (3.15 caches up to 1024, 3.14 up
# to 256) and with its running total under 2**30, where specialized
# compact-int adds run (measured: about 3.6:1 on Debian's 3.15, 3.3:1 on
# its 3.14; 3.3 and 3.05 with the total masked to 30 bits). So the
# workload measures its own split with the thread's CPU clock and prints,
# every 50 ms, "split WALL HEAVY LIGHT EMPTY": wall time and the
# cumulative CPU seconds inside heavy(), inside light(), and in an empty
# timed interval, the clock's own cost that each of the other two also
# holds once per round (tests/check_profile.py takes it off).
import random
import sys
import time


def leaf(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def heavy(n):
    return leaf(3 * n)


def light(n):
    return leaf(n)


def thread_clock():
    """The calling thread's CPU time in seconds, or None (Python 2.7)."""
    if hasattr(time, "thread_time"):
        return time.thread_time
    if hasattr(time, "clock_gettime") and hasattr(time, "CLOCK_THREAD_CPUTIME_ID"):
        return lambda: time.clock_gettime(time.CLOCK_THREAD_CPUTIME_ID)
    return None


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    end = time.time() + seconds
    rng = random.Random(42)
    clock = thread_clock()
    spent = [0.0, 0.0, 0.0]    # heavy, light, empty interval
    report = 0.0
    sys.stdout.write("ready\n")
    if not clock:
        sys.stdout.write("split none (no thread CPU clock)\n")
    sys.stdout.flush()
    while True:
        now = time.time()
        if clock and now >= report:
            sys.stdout.write("split %.6f %.9f %.9f %.9f\n" % (now, spent[0], spent[1], spent[2]))
            sys.stdout.flush()
            report = now + 0.05
        if now >= end:
            break
        n = rng.randint(200, 1800)
        if not clock:
            heavy(n)
            light(n)
            continue
        t0 = clock()
        heavy(n)
        t1 = clock()
        light(n)
        t2 = clock()
        t3 = clock()
        spent[0] += t1 - t0
        spent[1] += t2 - t1
        spent[2] += t3 - t2


if __name__ == "__main__":
    main()
