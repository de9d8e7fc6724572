"""Checks thread, GIL and wall-clock labels of a profile (issue 6), read
with go tool pprof -raw. Scenarios:
  names    named_threads.py, cpu mode: each worker-* has about a third of
           the CPU time, MainThread (sleeping) almost none
  gil      same profile: gil=held time is at most one thread's worth
  gilonly  --gil profile: every sample has gil=held
  wall     named_threads.py, --mode wall: MainThread has about a quarter of
           the wall time, waiting in main()
  io       pipe_reader.py, --mode wall: a native read sits under read_input
"""
import argparse
import sys

import pprof_raw


def by_label(prof, key):
    out = {}
    for values, frames, labels in prof.stacks():
        out[labels.get(key, "?")] = out.get(labels.get(key, "?"), 0) + values[-1]
    return out


def share(d, key):
    return float(d.get(key, 0)) / max(sum(d.values()), 1)


def check(args, prof, duration_ns, errors):
    names = by_label(prof, "thread_name")
    print("thread time: " + ", ".join("%s %.1f%%" % (k, 100 * share(names, k)) for k in sorted(names)))
    if args.scenario == "names":
        for w in ("worker-alpha", "worker-beta", "worker-gamma"):
            if not 0.2 <= share(names, w) <= 0.47:
                errors.append("%s has %.1f%% of CPU time, expected about a third" % (w, 100 * share(names, w)))
        # Its GIL waits in time.sleep's wake-ups are CPU time: 0.1 % on a
        # quiet machine, 3.3-4.2 % at load average 11-16 (take_gil's
        # timed waits, seen in its stacks).
        if share(names, "MainThread") > 0.06:
            errors.append("the sleeping MainThread has %.1f%% of CPU time" % (100 * share(names, "MainThread")))
    elif args.scenario == "gil":
        held = by_label(prof, "gil").get("held", 0)
        print("gil=held: %.2f s in a %.2f s profile" % (held / 1e9, duration_ns / 1e9))
        if held > 1.1 * duration_ns or held == 0:
            errors.append("gil=held time %.2f s is not within one thread's worth (%.2f s)" % (held / 1e9, duration_ns / 1e9))
    elif args.scenario == "gilonly":
        gil = by_label(prof, "gil")
        print("gil labels: %s" % gil)
        if set(gil) != {"held"}:
            errors.append("--gil kept samples with gil=%s" % sorted(set(gil) - {"held"}))
    elif args.scenario == "wall":
        main = share(names, "MainThread")
        waiting = sum(v[-1] for v, f, l in prof.stacks()
                      if l.get("thread_name") == "MainThread" and l.get("state") == "waiting"
                      and "main" in [x[0] for x in f])
        print("MainThread: %.1f%% of wall time, %.2f s waiting in main()" % (100 * main, waiting / 1e9))
        if not 0.18 <= main <= 0.32:
            errors.append("MainThread has %.1f%% of wall time, expected about 25%%" % (100 * main))
        if waiting < 0.8 * names.get("MainThread", 0):
            errors.append("MainThread's wall time is not spent waiting in main()")
    elif args.scenario == "io":
        total = under = 0
        for values, frames, labels in prof.stacks():
            n = [f[0] for f in frames]
            if "read_input" in n:
                total += values[-1]
                i = n.index("read_input")
                if any("read" in x and x != "read_input" for x in n[:i]):
                    under += values[-1]
        print("read_input: %.2f s, %.0f%% of it in a native read" % (total / 1e9, 100.0 * under / max(total, 1)))
        if total < 0.5 * duration_ns or under < 0.8 * total:
            errors.append("read_input is not shown waiting in read (%.2f s, %.0f%%)" % (total / 1e9, 100.0 * under / max(total, 1)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go", default="go")
    ap.add_argument("--scenario", required=True, choices=("names", "gil", "gilonly", "wall", "io"))
    ap.add_argument("--duration-ms", type=int, required=True)
    ap.add_argument("profile")
    args = ap.parse_args()
    prof = pprof_raw.run_raw(args.profile, args.go)
    duration_ns = args.duration_ms * 1000000
    errors = []
    check(args, prof, duration_ns, errors)
    for e in errors:
        print("error: " + e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
