# A 150-deep recursion that spins at the bottom: every frame must be in
# the profile.
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
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    recurse(DEPTH, time.time() + seconds)


if __name__ == "__main__":
    main()
