"""numpy calling BLAS (dgemm) from a Python function; prints "ready"."""
import sys
import time

import numpy as np


def matmul_loop(a, b, until):
    n = 0
    while time.time() < until:
        a @ b
        n += 1
    return n


def main():
    until = time.time() + float(sys.argv[1] if len(sys.argv) > 1 else 10)
    rng = np.random.default_rng(1)
    a = rng.random((300, 300))
    b = rng.random((300, 300))
    print("ready", flush=True)
    matmul_loop(a, b, until)


main()
