"""Threads that release the GIL in C: sha256 (hashlib) and zlib.compress
on big buffers in a ThreadPoolExecutor; prints "ready"."""
import hashlib
import os
import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

DATA = os.urandom(1 << 20) + bytes(1 << 20)


def hash_chunk(until):
    n = 0
    while time.time() < until:
        hashlib.sha256(DATA).digest()
        n += 1
    return n


def compress_chunk(until):
    n = 0
    while time.time() < until:
        zlib.compress(DATA, 6)
        n += 1
    return n


def main():
    until = time.time() + float(sys.argv[1] if len(sys.argv) > 1 else 10)
    with ThreadPoolExecutor(max_workers=2) as pool:
        jobs = [pool.submit(hash_chunk, until), pool.submit(compress_chunk, until)]
        print("ready", flush=True)
        for j in jobs:
            j.result()


main()
