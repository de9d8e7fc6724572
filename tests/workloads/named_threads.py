# Three CPU-bound threads named worker-alpha, worker-beta and worker-gamma
# and a main thread ("MainThread") that sleeps. Prints "ready", then one
# JSON line per thread, main thread first:
#   {"name": "worker-alpha", "ident": 139872..., "native_id": 4242}
# ident is threading.get_ident() (the thread state's thread_id); native_id
# is the kernel tid, or null where it cannot be had. Runs for argv[1]
# seconds (default 60). Valid on Python 3.6 and later.
#
# worker-beta's attributes are moved out of the compact per-class storage
# (split table <= 3.10, managed values 3.11-3.12, inline values 3.13) into
# an ordinary dict, by reading its __dict__ and adding more attributes
# than a shared-keys table holds: a name reader must handle both.
import json
import sys
import threading
import time

NAMES = ("worker-alpha", "worker-beta", "worker-gamma")


def native_id():
    get = getattr(threading, "get_native_id", None)     # 3.8+
    if get is not None:
        return get()
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).syscall(186)   # gettid, x86_64
    except Exception:
        return None


def spin(end, seen, lock, ready):
    with lock:
        seen[threading.current_thread().name] = (threading.get_ident(), native_id())
        if len(seen) == len(NAMES) + 1:
            ready.set()
    total = 0
    while time.time() < end:
        for i in range(1000):
            total += i * i
    return total


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    end = time.time() + seconds
    seen, lock, ready = {}, threading.Lock(), threading.Event()
    with lock:
        seen[threading.current_thread().name] = (threading.get_ident(), native_id())
    threads = [threading.Thread(target=spin, name=n, args=(end, seen, lock, ready))
               for n in NAMES]
    for t in threads:
        t.daemon = True
        t.start()
    beta = threads[1]
    vars(beta)
    for i in range(40):
        setattr(beta, "extra_%d" % i, i)
    ready.wait(30)
    lines = ["ready"]
    for name in ("MainThread",) + NAMES:
        ident, nid = seen[name]
        lines.append(json.dumps({"name": name, "ident": ident, "native_id": nid}))
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    while time.time() < end:
        time.sleep(0.05)


if __name__ == "__main__":
    main()
