"""A supervisor task runs handler tasks that await a CPU-bound coroutine,
for --async stacks (tests/async-stacks.sh).

  async_chain.py MODE SECONDS [HANDLERS]

The root task (asyncio.run's, running main()) awaits the supervisor task
(a plain `await task`); the supervisor runs HANDLERS handler tasks
(default 3), each a loop of `await crunch()` (CPU work) and a yield to
the loop, for SECONDS of wall time, by MODE:

  gather     asyncio.gather(*tasks)
  taskgroup  async with asyncio.TaskGroup() (3.11+)
  wait       asyncio.wait(tasks)
  wait_for   asyncio.wait_for(gather_task, timeout) where gather_task is a
             task running gather (two hops)
  nested     await run_all(tasks), a coroutine that awaits wait_all(), one
             that gathers: the supervisor waits two coroutines deep
  shared     two tasks, waiter-a and waiter-b, each gather the handlers,
             and the supervisor gathers the two: a handler has two
             awaiters, so its chain cannot name one

Every handler's CPU time is in crunch(): a sample of it must read, root
first, [task Task-* (main)], main, [task supervisor], supervisor,
[task handler-N], handler, crunch (wait_for: [task gatherer], gatherer
between supervisor and the handlers; nested: supervisor;run_all;wait_all
before the handler's marker). Task names need 3.8+ (3.7 names
none: the markers are "Task-* (...)").
"""
import asyncio
import sys
import time


async def crunch(ms):
    end = time.perf_counter() + ms / 1000.0
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


async def handler(stop):
    while time.monotonic() < stop:
        await crunch(5)
        await asyncio.sleep(0)


def spawn(coro, name):
    if sys.version_info >= (3, 8):
        return asyncio.ensure_future(coro) if name is None else \
            asyncio.get_event_loop().create_task(coro, name=name)
    return asyncio.ensure_future(coro)


async def gatherer(tasks):
    await asyncio.gather(*tasks)


async def wait_all(tasks):
    await asyncio.gather(*tasks)


async def run_all(tasks):
    await wait_all(tasks)


async def supervisor(mode, stop, n):
    if mode == "taskgroup":
        async with asyncio.TaskGroup() as tg:
            for i in range(n):
                tg.create_task(handler(stop), name="handler-%d" % i)
        return
    tasks = [spawn(handler(stop), "handler-%d" % i) for i in range(n)]
    if mode == "gather":
        await asyncio.gather(*tasks)
    elif mode == "wait":
        await asyncio.wait(tasks)
    elif mode == "shared":
        await asyncio.gather(spawn(gatherer(tasks), "waiter-a"),
                             spawn(gatherer(tasks), "waiter-b"))
    elif mode == "nested":
        await run_all(tasks)
    elif mode == "wait_for":
        await asyncio.wait_for(spawn(gatherer(tasks), "gatherer"), 3600)
    else:
        raise SystemExit("unknown mode " + mode)


async def main(mode, seconds, n):
    stop = time.monotonic() + seconds
    await spawn(supervisor(mode, stop, n), "supervisor")


if __name__ == "__main__":
    mode, seconds = sys.argv[1], float(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    if sys.version_info >= (3, 7):
        asyncio.run(main(mode, seconds, n))
    else:
        asyncio.get_event_loop().run_until_complete(main(mode, seconds, n))
