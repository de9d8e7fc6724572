# A multiprocessing pool: the parent waits while two workers burn CPU in
# pool_work(). With --subprocesses the workers are profiled too.
import multiprocessing
import sys
import time


def pool_work(seconds):
    end = time.time() + seconds
    total = 0
    while time.time() < end:
        for i in range(1000):
            total += i
    return total


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    pool = multiprocessing.Pool(2)
    try:
        pool.map(pool_work, [seconds] * 2)
    finally:
        pool.terminate()


if __name__ == "__main__":
    main()
