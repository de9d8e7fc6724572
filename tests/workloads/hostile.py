# A hostile target: while it runs, it keeps overwriting its own code
# objects (name, file name and line-table pointers, and the line-table
# bytes) and, before 3.11, the frame chain with garbage, using ctypes. The
# profiler must only count errors. The process ends with os._exit so the
# interpreter never touches the garbage itself.
import ctypes
import os
import random
import sys
import time

PTR = ctypes.sizeof(ctypes.c_void_p)


def pointer_slots(obj, target, span=512):
    """Offsets in obj's memory where the pointer to target is stored."""
    base, want = id(obj), id(target)
    return [off for off in range(0, span, PTR)
            if ctypes.c_size_t.from_address(base + off).value == want]


def spin(seconds):
    end = time.time() + seconds
    x = 0
    while time.time() < end:
        x += 1
    return x


def victim(seconds, rng):
    code = victim.__code__
    table = getattr(code, "co_linetable", None) or code.co_lnotab
    slots = []
    for field in (code.co_name, code.co_filename, table):
        slots += [(id(code) + off, id(field)) for off in pointer_slots(code, field, 256)]
    frame = sys._getframe(1)
    if sys.version_info < (3, 11):
        # f_back of our caller's frame: the BPF walk follows it.
        back = frame.f_back
        slots += [(id(frame) + off, id(back)) for off in pointer_slots(frame, back, 128)]
    table_data = id(table) + sys.getsizeof(b"") - 1   # start of the bytes' data
    sys.stdout.write("ready %d slots\n" % len(slots))
    sys.stdout.flush()
    end = time.time() + seconds
    while time.time() < end:
        garbage = [rng.choice((0, 1, 0x10, rng.getrandbits(64), rng.getrandbits(47)))
                   for _ in slots]
        for (addr, _), g in zip(slots, garbage):
            ctypes.c_size_t.from_address(addr).value = g
        ctypes.memmove(table_data, os.urandom(len(table)), len(table))
        spin(0.003)
        for addr, good in slots:
            ctypes.c_size_t.from_address(addr).value = good
        spin(0.002)


def outer(seconds):
    victim(seconds, random.Random(1))


if __name__ == "__main__":
    outer(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
    sys.stdout.flush()
    os._exit(0)
