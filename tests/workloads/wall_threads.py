# Wall mode's threads (issue 24): each waits or runs for the whole
# profile, started before the profiler, and each should weigh the whole
# window. Threads, and the function each spends its time under:
#   MainThread  main     time.sleep for the whole run
#   sleeper     sleeper  time.sleep for the whole run
#   locker      locker   acquires a lock it holds: blocked for good
#   reader      reader   recv on a socket nobody writes to
#   ticker      ticker   time.sleep(1) in a loop: a wait is in progress
#                        when the profile starts and when it ends
#   busy        spin     on the CPU
# Prints "ready" once every thread runs; runs for argv[1] seconds
# (default 60).
import socket
import sys
import threading
import time


def sleeper(seconds):
    time.sleep(seconds)


def locker(seconds):
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()


def reader(seconds):
    a, b = socket.socketpair()
    a.recv(16)


def ticker(seconds):
    while True:
        time.sleep(1.0)


def spin(seconds):
    end = time.time() + seconds
    total = 0
    while time.time() < end:
        for i in range(1000):
            total += i * i
    return total


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    for fn in (sleeper, locker, reader, ticker, spin):
        name = "busy" if fn is spin else fn.__name__
        t = threading.Thread(target=fn, name=name, args=(seconds,))
        t.daemon = True
        t.start()
    time.sleep(0.5)     # every thread in its wait (or loop) by now
    print("ready", flush=True)
    time.sleep(seconds)


main()
