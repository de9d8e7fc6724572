# Known call structure for the end-to-end tests: heavy() does three times
# the work of light(), both through the shared leaf(). The amount of work
# per round is random so the round time never locks in phase with the
# sampling timer (a fixed period aliases and biases periodic sampling).
# Runs for argv[1] seconds (default 60). Valid on Python 2.7 and every 3.x.
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


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    end = time.time() + seconds
    rng = random.Random(42)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while time.time() < end:
        n = rng.randint(200, 1800)
        heavy(n)
        light(n)


if __name__ == "__main__":
    main()
