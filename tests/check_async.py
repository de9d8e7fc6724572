"""Checks the --async stacks of a profile of async_chain.py: a pprof file
(read with `go tool pprof -raw`, labels included) or a collapsed one
(root first, frames "name (file:line)", the count last; no labels).

  chain      at least --min (0.98) of the samples that have a [task ...]
             marker (the ones --async rewrote) read, root first,
             [task <root>];main;[task supervisor];supervisor;
             ([task gatherer];gatherer;) [task handler-N];handler
             and anything leafward of it (crunch, native callees); an
             awaiting task's frames may go on into asyncio's own
             coroutines (wait, _wait, wait_for, TaskGroup.__aexit__)
  all        at least --min-all (0.90) of all samples do (the others: the
             loop between steps, and samples whose running task the
             asyncio_task lookup could not tell)
  label      (pprof) a rewritten sample's leafmost marker names the task
             of its asyncio_task label
  --shared   each handler is awaited by two tasks (waiter-a, waiter-b):
             the chain must read [awaited by ?];[task handler-N];handler,
             and no sample may show a handler under a waiter
  machinery  no sample with a [task ...] frame holds a frame of the event
             loop (run_forever, _run_once, Handle._run, run_until_complete,
             or any frame of asyncio's base_events.py, events.py,
             runners.py)
Prints the figures: samples, rewritten ones, the chain's share of those
and of all, the share of all samples showing loop machinery.
"""
import argparse
import re
import sys

import pprof_raw

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
                                       fn("handler")]) + "(;|$)")


def chain_re(hops, nested):
    parts = [r"\[task Task-\* \(main\)\]", fn("main"), task("supervisor"), fn("supervisor")]
    if nested:
        parts += [fn("run_all"), fn("wait_all")]
    if hops:
        parts[-1] += LIB
        parts += [task("gatherer"), fn("gatherer")]
    parts[-1] += LIB
    parts += [task("handler-[0-9]+"), fn("handler")]
    return re.compile("^" + ";".join(parts) + "(;|$)")


def read_stacks(path, go):
    """(frames root first as "name (file:line)", count, label or None)."""
    if not path.endswith(".pb.gz"):
        with open(path) as f:
            for line in f:
                if line.strip():
                    frames, n = frames_of(line)
                    yield frames, n, None
        return
    for values, frames, labels in pprof_raw.run_raw(path, go).stacks():
        names = ["%s (%s:%d)" % (fn, fl, ln) if fl else fn for fn, fl, ln in frames]
        yield names[::-1], values[0], labels.get("asyncio_task")


def leaf_marker(frames):
    for fr in reversed(frames):
        if fr.startswith("[task "):
            return fr
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go", default="go")
    ap.add_argument("--min", type=float, default=0.98)
    ap.add_argument("--min-all", type=float, default=0.90)
    ap.add_argument("--hops", type=int, default=0, help="1: wait_for's gatherer task")
    ap.add_argument("--nested", action="store_true", help="the supervisor waits in run_all, wait_all")
    ap.add_argument("--shared", action="store_true", help="handlers awaited by two tasks")
    ap.add_argument("profile")
    args = ap.parse_args()
    want = shared_re() if args.shared else chain_re(args.hops, args.nested)
    total = chained = loop_any = bad = marked = marked_ok = 0
    worst = None
    for frames, n, label in read_stacks(args.profile, args.go):
        total += n
        names = ";".join(name(fr) for fr in frames)
        loop = any(is_loop(fr) for fr in frames)
        loop_any += n if loop else 0
        ok = bool(want.search(";".join(frames)))
        chained += n if ok else 0
        leaf = leaf_marker(frames)
        if leaf:
            marked += n
            marked_ok += n if ok else 0
        why = None
        if loop and leaf:
            why = "loop machinery under a task marker"
        elif args.shared and re.search(r"\[task waiter-[ab]\][^\[]*;\[task handler", names):
            why = "a handler under a guessed awaiter"
        elif leaf and label is not None and leaf != "[task %s]" % label:
            why = "the marker is not the label's task (%s)" % label
        if why:
            bad += n
            worst = worst or "%s: %s" % (why, names)
    if not total:
        print("FAIL: no samples")
        return 1
    share = marked_ok / marked if marked else 0.0
    print("samples=%d rewritten=%d chain=%.3f of rewritten, %.3f of all; loop-machinery=%.3f bad=%d"
          % (total, marked, share, chained / total, loop_any / total, bad))
    ok = True
    if share < args.min:
        print("FAIL: %.3f of the rewritten samples show the chain, at least %.2f expected"
              % (share, args.min))
        ok = False
    if chained / total < args.min_all:
        print("FAIL: %.3f of all samples show the chain, at least %.2f expected"
              % (chained / total, args.min_all))
        ok = False
    if bad:
        print("FAIL: %d bad samples, e.g. %s" % (bad, worst[:400]))
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
