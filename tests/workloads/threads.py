# 1100 threads: 8 busy ones, each in its own function busy_N, and 1092 that
# wait on an event. Every busy thread's stack must be found.
import sys
import threading
import time

NTHREADS = 1100
NBUSY = 8


def make_busy(i):
    src = ("def busy_%d(end):\n"
           "    total = 0\n"
           "    while time.time() < end:\n"
           "        for j in range(1000):\n"
           "            total += j\n"
           "    return total\n" % i)
    scope = {"time": time}
    exec(src, scope)
    return scope["busy_%d" % i]


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    threading.stack_size(256 * 1024)
    stop = threading.Event()
    end = time.time() + seconds
    threads = []
    for i in range(NTHREADS - NBUSY):
        threads.append(threading.Thread(target=stop.wait))
    for i in range(NBUSY):
        threads.append(threading.Thread(target=make_busy(i), args=(end,)))
    for t in threads:
        t.daemon = True
        t.start()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while time.time() < end:
        time.sleep(0.05)
    stop.set()


if __name__ == "__main__":
    main()
