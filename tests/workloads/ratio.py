# Known call structure for the end-to-end tests: heavy() does three times
# the work of light(), both through the shared leaf(). Runs for argv[1]
# seconds (default 60). Valid on Python 2.7 and every 3.x.
import sys
import time


def leaf(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def heavy():
    return leaf(3000)


def light():
    return leaf(1000)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    end = time.time() + seconds
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while time.time() < end:
        heavy()
        light()


if __name__ == "__main__":
    main()
