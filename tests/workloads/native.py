# Python -> C -> Python and Python -> C library, for the merge of native
# and Python frames: sort_with_callback() calls libc's qsort through ctypes,
# which calls back into py_compare(); compress_data() calls zlib's deflate;
# with the test extension cbext (tests/ext/cbext.c, on PYTHONPATH),
# outer_py() -> cbext.call_back (C) -> inner_py() -> cbext.spin_c (C).
import ctypes
import ctypes.util
import random
import sys
import time
import zlib

libc = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


def py_compare(a, b):
    spin = 0
    for i in range(20):
        spin += i
    return a[0] - b[0]


compare = CMP(py_compare)


def sort_with_callback(rng):
    values = [rng.randint(0, 1 << 30) for _ in range(300)]
    arr = (ctypes.c_int * len(values))(*values)
    libc.qsort(arr, len(values), ctypes.sizeof(ctypes.c_int), compare)


def compress_data(data):
    return zlib.compress(data, 9)


try:
    import cbext
except ImportError:
    cbext = None


def inner_py():
    cbext.spin_c(2000000)


def outer_py():
    cbext.call_back(inner_py)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    rng = random.Random(7)
    data = bytes(bytearray(rng.getrandbits(8) % 16 for _ in range(200000)))
    end = time.time() + seconds
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while time.time() < end:
        sort_with_callback(rng)
        compress_data(data)
        if cbext:
            outer_py()


if __name__ == "__main__":
    main()
