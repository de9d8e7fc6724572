"""Checks the --async stacks of a profile of async_chain.py (collapsed
format: root first, frames "name (file:line)", the count last).

  chain      at least --min (0.90) of all samples read, root first,
             [task <root>];main;[task supervisor];supervisor;
             ([task gatherer];gatherer;) [task handler-N];handler;crunch
             (--nested: supervisor;run_all;wait_all;[task handler-N])
             and anything leafward of crunch (its native callees)
  --shared   each handler is awaited by two tasks (waiter-a, waiter-b):
             the chain must read [awaited by ?];[task handler-N];handler;
             crunch, and no sample may show a handler under a waiter
  machinery  no sample with a [task ...] frame holds a frame of the event
             loop (run_forever, _run_once, Handle._run, run_until_complete,
             or any frame of asyncio's base_events.py, events.py,
             runners.py)
Prints the figures: samples, the chain's share, the share of all samples
showing loop machinery (those without a task: the loop between steps,
start-up, shutdown).
"""
import argparse
import re
import sys

LOOP_FUNCS = {"run_forever", "_run_once", "run_until_complete", "_run"}
LOOP_FILES = re.compile(r"asyncio/(base_events|events|runners)\.py:")


def frames_of(line):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    return stack.split(";"), int(count)


def name(frame):
    return re.sub(r" \([^()]*:[0-9]+\)$", "", frame)


def is_loop(frame):
    return name(frame).split(".")[-1] in LOOP_FUNCS or LOOP_FILES.search(frame)


def task(label):
    # 3.7 names no task: the marker then says the coroutine.
    return r"\[task (%s|Task-\* \(%s\))\]" % (label, label.split("-")[0])


def fn(name):
    """A frame of the workload's function name (its file and line)."""
    return re.escape(name) + r" \([^;]*async_chain\.py:[0-9]+\)"


# Where an awaiting task waits inside asyncio's own coroutines (wait,
# _wait, wait_for, TaskGroup.__aexit__ ...): frames of asyncio's files.
LIB = r"(;[^;\[]* \([^;]*asyncio/[a-z_]+\.py:[0-9]+\))*"


def shared_re():
    """A handler awaited by two tasks: its chain ends at [awaited by ?]."""
    return re.compile("^" + ";".join([r"\[awaited by \?\]", task("handler-[0-9]+"),
                                       fn("handler"), fn("crunch")]) + "(;|$)")


def chain_re(hops, nested):
    parts = [r"\[task Task-\* \(main\)\]", fn("main"), task("supervisor"), fn("supervisor")]
    if nested:
        parts += [fn("run_all"), fn("wait_all")]
    if hops:
        parts[-1] += LIB
        parts += [task("gatherer"), fn("gatherer")]
    parts[-1] += LIB
    parts += [task("handler-[0-9]+"), fn("handler"), fn("crunch")]
    return re.compile("^" + ";".join(parts) + "(;|$)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min", type=float, default=0.90)
    ap.add_argument("--hops", type=int, default=0, help="1: wait_for's gatherer task")
    ap.add_argument("--nested", action="store_true", help="the supervisor waits in run_all, wait_all")
    ap.add_argument("--shared", action="store_true", help="handlers awaited by two tasks")
    ap.add_argument("folded")
    args = ap.parse_args()
    want = shared_re() if args.shared else chain_re(args.hops, args.nested)
    total = chained = loop_any = bad = 0
    worst = None
    with open(args.folded) as f:
        for line in f:
            if not line.strip():
                continue
            frames, n = frames_of(line)
            total += n
            names = ";".join(name(fr) for fr in frames)
            loop = any(is_loop(fr) for fr in frames)
            loop_any += n if loop else 0
            if want.search(";".join(frames)):
                chained += n
            if loop and any(fr.startswith("[task ") for fr in frames):
                bad += n
                worst = worst or names
            # A guessed awaiter: a handler shown under one of its two.
            if args.shared and re.search(r"\[task waiter-[ab]\][^\[]*;\[task handler", names):
                bad += n
                worst = worst or names
    if not total:
        print("FAIL: no samples")
        return 1
    share = chained / total
    print("samples=%d chain=%.3f loop-machinery=%.3f bad-task-stacks=%d"
          % (total, share, loop_any / total, bad))
    ok = True
    if share < args.min:
        print("FAIL: %.3f of the samples show the chain, at least %.2f expected" % (share, args.min))
        ok = False
    if bad:
        print("FAIL: %d samples with a task marker show loop machinery (or, --shared, a guessed awaiter), e.g. %s" % (bad, worst[:400]))
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
