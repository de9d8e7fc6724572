"""Forks two busy children with multiprocessing's fork start method (a copy
of this interpreter that never execs) after a delay; prints their pids.
Usage: fork_children.py DELAY_S BUSY_S"""
import multiprocessing as mp
import sys
import time


def forked_child_busy(seconds):
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        n += 1


if __name__ == "__main__":
    mp.set_start_method("fork")
    time.sleep(float(sys.argv[1]))
    kids = [mp.Process(target=forked_child_busy, args=(float(sys.argv[2]),)) for _ in range(2)]
    for k in kids:
        k.start()
    print(" ".join(str(k.pid) for k in kids), flush=True)
    for k in kids:
        k.join()
