"""asyncio tasks that take turns on one thread, each burning CPU for a
known number of milliseconds per turn before `await asyncio.sleep(0)`:

  alpha    named "alpha", runs alpha_loop, 2 units per turn
  beta     named "beta", runs beta_loop, 1 unit per turn
  (none)   default name "Task-<n>", runs unnamed_loop, 1 unit per turn

Each task measures its own thread CPU time (time.thread_time, around its
busy part only) and the truth is printed at exit, one line per task:

  TASK <expected asyncio_task label>\t<cpu seconds>\t<coroutine function>

With --same-fn the three tasks run ONE coroutine function instead, as
the tasks of a server run its one handler (issue 23): "alpha" 3 units
per turn, "beta" 2, and a default-named one 1, all in handler().

--churn does the same with tasks that live two turns each, three new ones
(same names, same weights) as soon as the last three end: their Task,
name and coroutine objects are freed and their addresses reused all the
time, so a label read after the sample would name another task.

Usage: asyncio_tasks.py SECONDS [UNIT_MS] [--cpu=SECONDS] [--py-task]
                        [--side-thread] [--no-c-asyncio] [--same-fn] [--churn]
The tasks stop after SECONDS of wall time, or earlier once they have used
--cpu seconds of CPU time together (enough samples on a loaded machine).
--py-task makes the loop create asyncio.tasks._PyTask (the pure-Python
Task) instead of the C Task of _asyncio. --side-thread also runs a second
thread with its own loop and one task, "side" (side_loop), 1 unit per turn.
--no-c-asyncio blocks the _asyncio accelerator: asyncio runs pure Python
(its own _current_tasks dict, _PyTask), as where _asyncio is not built.
"""
import sys

if "--no-c-asyncio" in sys.argv:
    sys.modules["_asyncio"] = None  # import _asyncio raises ImportError

import asyncio
import threading
import time

try:
    thread_time = time.thread_time
except AttributeError:  # 3.6
    thread_time = time.clock

cpu = {}
cpu_budget = float("inf")


def burn(ms):
    end = thread_time() + ms / 1000.0
    x = 0
    while thread_time() < end:
        for i in range(200):
            x += i * i
    return x


async def run(key, units, unit_ms, stop):
    cpu[key] = 0.0
    while time.monotonic() < stop and sum(cpu.values()) < cpu_budget:
        t0 = thread_time()
        burn(units * unit_ms)
        cpu[key] += thread_time() - t0
        await asyncio.sleep(0)


async def alpha_loop(unit_ms, stop):
    await run("alpha", 2, unit_ms, stop)


async def beta_loop(unit_ms, stop):
    await run("beta", 1, unit_ms, stop)


async def unnamed_loop(unit_ms, stop):
    await run("unnamed", 1, unit_ms, stop)


async def handler(key, units, unit_ms, stop):
    await run(key, units, unit_ms, stop)


async def handler_twice(key, units, unit_ms):
    for _ in range(2):
        t0 = thread_time()
        burn(units * unit_ms)
        cpu[key] = cpu.get(key, 0.0) + thread_time() - t0
        await asyncio.sleep(0)


async def churn(loop, unit_ms, stop, named):
    """Rounds of three short-lived tasks of handler_twice: the last round's
    (task, key, qualname), for the TASK lines."""
    weights = [("alpha", 3), ("beta", 2), (None, 1)]
    for key in ("alpha", "beta", "unnamed"):
        cpu[key] = 0.0
    while True:
        tasks = []
        for name, units in weights:
            coro = handler_twice(name or "unnamed", units, unit_ms)
            t = loop.create_task(coro, name=name) if name and named else loop.create_task(coro)
            tasks.append((t, name or "unnamed", handler_twice.__qualname__))
        await asyncio.gather(*(t for t, _, _ in tasks))
        if time.monotonic() >= stop or sum(cpu.values()) >= cpu_budget:
            return tasks


async def side_loop(unit_ms, stop):
    await run("side", 1, unit_ms, stop)


def side_thread(unit_ms, stop, out):
    loop = asyncio.new_event_loop()
    if sys.version_info >= (3, 8):
        task = loop.create_task(side_loop(unit_ms, stop), name="side")
    else:
        task = loop.create_task(side_loop(unit_ms, stop))
    loop.run_until_complete(task)
    out.append((task, "side", side_loop.__qualname__))
    loop.close()


def py_task_factory(loop, coro, **kw):
    return asyncio.tasks._PyTask(coro, loop=loop, **kw)


def label(task, key, coro_name):
    """What pyperf-pprof labels a task with (doc/pyperf-pprof.1)."""
    name = task.get_name() if hasattr(task, "get_name") else None
    if name and not (name.startswith("Task-") and name[5:].isdigit()):
        return name
    return "Task-* (%s)" % coro_name


async def main(seconds, unit_ms, py_task):
    loop = asyncio.get_event_loop()
    if py_task:
        loop.set_task_factory(py_task_factory)
    # Idle for a moment after start-up: a profiler that finds the running
    # tasks when it samples them (pyperf-pprof looks for asyncio at most
    # every 0.1 s) then sees the tasks from their first turn, so the
    # shares are not skewed by whichever task ran during the import.
    await asyncio.sleep(0.5)
    stop = time.monotonic() + seconds
    side, side_out = None, []
    if "--side-thread" in sys.argv:
        side = threading.Thread(target=side_thread, args=(unit_ms, stop, side_out), daemon=True)
        side.start()
    named = sys.version_info >= (3, 8)
    if "--churn" in sys.argv:
        print("ready", flush=True)
        tasks = await churn(loop, unit_ms, stop, named)
        for t, key, qual in tasks:
            print("TASK %s\t%.6f\t%s" % (label(t, key, qual), cpu[key], qual))
        return
    specs = [("alpha", alpha_loop), ("beta", beta_loop), (None, unnamed_loop)]
    tasks = []
    for name, fn in specs:
        if "--same-fn" in sys.argv:
            key, units = {"alpha": ("alpha", 3), "beta": ("beta", 2)}.get(name, ("unnamed", 1))
            coro, fn = handler(key, units, unit_ms, stop), handler
        else:
            coro = fn(unit_ms, stop)
        if name and named:
            t = loop.create_task(coro, name=name)
        else:
            t = loop.create_task(coro)
        tasks.append((t, name or "unnamed", fn.__qualname__))
    print("ready", flush=True)
    await asyncio.gather(*(t for t, _, _ in tasks))
    if side:
        side.join()
    for t, key, qual in tasks + side_out:
        print("TASK %s\t%.6f\t%s" % (label(t, key, qual), cpu[key], qual))
    print("task type %s" % type(tasks[0][0]).__module__, flush=True)
    if "--no-c-asyncio" in sys.argv and type(tasks[0][0]).__module__ == "_asyncio":
        sys.exit("--no-c-asyncio: _asyncio was used anyway")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    for a in sys.argv[1:]:
        if a.startswith("--cpu="):
            cpu_budget = float(a[6:])
    seconds = float(args[0]) if args else 3.0
    unit_ms = float(args[1]) if len(args) > 1 else 10.0
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(main(seconds, unit_ms, "--py-task" in sys.argv))
    loop.close()
