# A stack that stands still, for the captures of tests/bpfwalk: Python
# recursion with native frames between (libc's qsort through ctypes calling
# back into Python; the C extension cbext's call_back when it is on
# PYTHONPATH) and a generator of a frozen module (os.walk, whose onerror
# callback goes on), down to an os.read of a pipe nobody writes to, where
# the main thread blocks until it is killed; with the argument "signal",
# all that inside a C signal handler. It prints "ready FD" (FD: that
# pipe) and waits for a line on stdin first, so that a profiler started
# meanwhile sees it block there (a switch-out in wall mode).
import ctypes
import ctypes.util
import os
import signal
import sys

try:
    import cbext
except ImportError:
    cbext = None

libc = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
r, w = os.pipe()


def block():
    os.read(r, 1)


def via_c():
    if cbext:
        cbext.call_back(block)
    else:
        block()


def recurse(n, then):
    if n == 0:
        return then()
    return recurse(n - 1, then)


def via_walk():
    for _ in os.walk("/nonexistent/blocked_deep", onerror=lambda err: via_c()):
        pass


class Sorter:
    def compare(self, a, b):
        recurse(3, via_walk)
        return 0


def sort_then_block():
    s = Sorter()
    arr = (ctypes.c_int * 2)(2, 1)
    cb = CMP(lambda a, b: s.compare(a, b))
    libc.qsort(arr, 2, ctypes.sizeof(ctypes.c_int), cb)


def in_signal_handler(then):
    # A C signal handler (a ctypes callback) that runs Python: the stack
    # then holds the kernel's signal frame (glibc's __restore_rt).
    handler = ctypes.CFUNCTYPE(None, ctypes.c_int)(lambda signum: then())
    libc.signal(signal.SIGUSR1, handler)
    getattr(libc, "raise")(signal.SIGUSR1)


def main():
    print("ready %d" % r, flush=True)
    sys.stdin.readline()
    if sys.argv[1:] == ["signal"]:
        recurse(2, lambda: in_signal_handler(lambda: recurse(2, sort_then_block)))
    else:
        recurse(5, sort_then_block)


main()
