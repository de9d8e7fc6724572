# A 150-deep (or argv[2]-deep) recursion that spins at the bottom: every
# frame must be in the profile, or the cut marked with [truncated].
import sys
import time

DEPTH = 150


def bottom(end):
    total = 0
    while time.time() < end:
        for i in range(1000):
            total += i
    return total


def recurse(n, end):
    if n == 0:
        return bottom(end)
    return recurse(n - 1, end)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else DEPTH
    sys.setrecursionlimit(depth + 100)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    recurse(depth, time.time() + seconds)


if __name__ == "__main__":
    main()
