# A native library loaded after the profiler attached: waits, then imports
# lzma (liblzma is mapped only then) and compresses in a loop, so the
# unwind tables of that object must be loaded on the first miss.
import sys
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
delay = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
sys.stdout.write("ready\n")
sys.stdout.flush()
time.sleep(delay)
import lzma  # noqa: E402  (late on purpose)

data = bytes(range(256)) * 2000
end = time.time() + seconds
while time.time() < end:
    lzma.compress(data, preset=1)
