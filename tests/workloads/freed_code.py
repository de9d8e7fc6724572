"""Module bodies that run for a few ms and are freed when their import ends
(issue 23, item 3): writes COUNT modules into DIR, imports them one by one,
and after each import churns the heap so that the freed code object's
memory is reused before the profiler reads it. Each body burns CPU in its
own loop (its frame is the leaf) for 3, 6 or 9 ms of CPU (module k: 1 +
k % 3 units), and differs in size from the others (k % 40 padding
statements).

usage: freed_code.py DIR [COUNT]
"""
import os
import sys

BODY = """import time
{pad}
_end = time.process_time() + {secs}
_x = 0
while time.process_time() < _end:
    _x += 1
"""


def main():
    where = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 150
    for k in range(count):
        pad = "\n".join("v%d = %d" % (i, i * k) for i in range(k % 40))
        with open(os.path.join(where, "freedmod_%03d.py" % k), "w") as f:
            f.write(BODY.format(pad=pad, secs=0.003 * (1 + k % 3)))
    sys.path.insert(0, where)
    sys.dont_write_bytecode = True
    junk = None
    for k in range(count):
        __import__("freedmod_%03d" % k)
        # Objects of every size: the body's code object, its line table
        # and constants are reused at once.
        junk = [bytes(64 + (i * 37) % 4000) for i in range(3000)]
    del junk


if __name__ == "__main__":
    main()
