"""Checks the asyncio_task labels of a profile of asyncio_tasks.py against
the CPU time each task measured itself (the workload's TASK lines: label,
CPU seconds, coroutine function).

  shares    each task's share of the labelled CPU time, as selected by
            `go tool pprof -tagfocus asyncio_task=<label>`, is within
            --tolerance (absolute) of its share of the measured CPU time
  purity    at least 95 % of the time labelled with a task lies in stacks
            running that task's coroutine function (stacks with an
            "[unreadable Python frame]" cannot tell and are left out)
  coverage  at least 85 % of the time in stacks running a task's coroutine
            carries a label
The workload's main() coroutine runs as a default-named task too: its
label "Task-* (main)" is allowed (it is not part of the shares) and must
lie in main() as well.
"""
import argparse
import re
import sys

import pprof_raw

def read_truth(path):
    truth = []
    with open(path) as f:
        for line in f:
            if line.startswith("TASK "):
                label, cpu, fn = line[5:].rstrip("\n").split("\t")
                truth.append((label, float(cpu), fn))
    return truth


def loop_of(frames, fns):
    names = [f[0].split(".")[-1] for f in frames]
    for fn in fns:
        if fn in names:
            return fn
    return None


def tagfocus_time(path, go, label):
    prof = pprof_raw.run_raw(path, go, ["-tagfocus", "asyncio_task=^%s$" % re.escape(label)])
    return sum(v[-1] for v, _, _ in prof.stacks())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go", default="go")
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("profile")
    ap.add_argument("truth")
    args = ap.parse_args()
    truth = read_truth(args.truth)
    if len(truth) < 3:
        print("FAIL: the workload printed %d TASK lines, expected at least 3" % len(truth))
        return 1
    # Tasks a label cannot tell apart (3.7's have no names: one coroutine
    # function, one label) count as one.
    merged = {}
    for label, cpu, fn in truth:
        merged[label] = (merged.get(label, (0.0, fn))[0] + cpu, fn)
    truth = [(label, cpu, fn) for label, (cpu, fn) in merged.items()]
    errors = []
    prof = pprof_raw.run_raw(args.profile, args.go)
    labelled, pure, in_task, covered = {}, {}, 0, 0
    impure = {}
    unreadable = 0
    all_labelled = {}
    want_loop = {label: fn for label, _, fn in truth}
    extra = {"Task-* (main)": "main"}
    for values, frames, labels in prof.stacks():
        t = values[-1]
        label = labels.get("asyncio_task")
        fn = loop_of(frames, want_loop.values())
        if label in extra:
            fn = loop_of(frames, [extra[label]])
        if fn:
            in_task += t
            covered += t if label else 0
        if label:
            all_labelled[label] = all_labelled.get(label, 0) + t
        if label and "[unreadable Python frame]" in [f[0] for f in frames]:
            unreadable += t
            label = None
        if label:
            labelled[label] = labelled.get(label, 0) + t
            if want_loop.get(label, extra.get(label)) == fn:
                pure[label] = pure.get(label, 0) + t
            else:
                key = (label, " <- ".join(f[0] for f in frames[:8]))
                impure[key] = impure.get(key, 0) + t
    unknown = sorted(set(all_labelled) - set(want_loop) - set(extra))
    for label in set(labelled) & set(extra):
        purity = pure.get(label, 0) / max(labelled[label], 1)
        print("%-22s %.3f s labelled, %.1f%% in %s" % (label, labelled[label] / 1e9, 100 * purity, extra[label]))
        if purity < 0.95:
            errors.append("%s: only %.1f%% of its time is in %s" % (label, 100 * purity, extra[label]))
    if unknown:
        errors.append("unexpected asyncio_task labels: %s" % unknown)
    total_true = sum(c for _, c, _ in truth)
    focus = {label: tagfocus_time(args.profile, args.go, label) for label, _, _ in truth}
    total_prof = sum(focus.values())
    if total_true <= 0 or total_prof <= 0:
        print("FAIL: no task CPU time (measured %.3f s, labelled %.3f s)" % (total_true, total_prof / 1e9))
        return 1
    for label, cpu, _ in truth:
        want = cpu / total_true
        got = focus[label] / total_prof
        purity = pure.get(label, 0) / max(labelled.get(label, 0), 1)
        print("%-22s truth %5.1f%%  profile %5.1f%%  (%.2f s of CPU measured, %.2f s labelled, %.1f%% in %s)"
              % (label, 100 * want, 100 * got, cpu, focus[label] / 1e9, 100 * purity, want_loop[label]))
        if abs(got - want) > args.tolerance:
            errors.append("%s: %.1f%% of the labelled time, the task measured %.1f%% (tolerance %.0f%%)"
                          % (label, 100 * got, 100 * want, 100 * args.tolerance))
        if focus[label] != all_labelled.get(label, 0):
            errors.append("%s: -tagfocus selects %d ns, the labels say %d ns" % (label, focus[label], all_labelled.get(label, 0)))
        if purity < 0.95:
            errors.append("%s: only %.1f%% of its time is in %s" % (label, 100 * purity, want_loop[label]))
    if unreadable:
        print("%.3f s labelled in stacks with unreadable Python frames (left out of purity)" % (unreadable / 1e9))
    coverage = float(covered) / max(in_task, 1)
    print("coverage: %.1f%% of the time in task coroutines is labelled" % (100 * coverage))
    if coverage < 0.85:
        errors.append("only %.1f%% of the time in task coroutines is labelled" % (100 * coverage))
    if errors:
        for (label, stack), t in sorted(impure.items(), key=lambda kv: -kv[1])[:8]:
            print("labelled %s, not in its coroutine: %.3f s in %s" % (label, t / 1e9, stack))
    for e in errors:
        print("FAIL: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
