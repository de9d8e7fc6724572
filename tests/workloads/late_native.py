# A native library loaded after the profiler attached: waits until the
# file named by argv[2] exists (the test creates it once the profiler
# samples), then imports lzma (liblzma is mapped only then) and compresses
# in a loop, so the unwind tables of that object must be loaded on the
# first miss.
import os
import sys
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
trigger = sys.argv[2] if len(sys.argv) > 2 else ""
sys.stdout.write("ready\n")
sys.stdout.flush()
end = time.time() + seconds
while trigger and not os.path.exists(trigger) and time.time() < end:
    time.sleep(0.01)
import lzma  # noqa: E402  (late on purpose)

data = bytes(range(256)) * 2000
while time.time() < end:
    lzma.compress(data, preset=1)
