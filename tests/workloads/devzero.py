"""A Python function reading /dev/zero in a loop: nearly all its time is
in the read system call. Prints "ready" once running."""
import sys
import time


def read_dev_zero(f, until):
    # 1 MiB a read: the kernel's share of the time (tests/kernel.sh wants
    # > 50 %) must not depend on the machine; at 64 KiB a fast VM spent
    # 58 % of it in Python.
    n = 0
    while time.time() < until:
        for _ in range(100):
            f.read(1 << 20)
        n += 1
    return n


def main():
    until = time.time() + float(sys.argv[1] if len(sys.argv) > 1 else 10)
    with open("/dev/zero", "rb", buffering=0) as f:
        print("ready", flush=True)
        read_dev_zero(f, until)


main()
