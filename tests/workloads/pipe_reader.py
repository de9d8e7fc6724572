# I/O-bound: read_input() blocks in os.read on a pipe that a feeder thread
# fills one byte every 20 ms. In wall mode the read sits under read_input.
import os
import sys
import threading
import time


def feeder(fd, end):
    while time.time() < end:
        time.sleep(0.02)
        os.write(fd, b"x")
    os.close(fd)


def read_input(fd):
    total = 0
    while True:
        data = os.read(fd, 1)
        if not data:
            return total
        total += len(data)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    r, w = os.pipe()
    t = threading.Thread(target=feeder, args=(w, time.time() + seconds), name="feeder")
    t.daemon = True
    t.start()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    read_input(r)


if __name__ == "__main__":
    main()
