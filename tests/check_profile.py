"""Checks a profile of one of tests/workloads/*.py, read with go tool pprof.

Scenarios:
  ratio    leaf <- heavy|light <- main <- <module>, heavy:light = 3:1 +-25%,
           leaf frames carry line numbers inside leaf()'s body
  methods  Parser.run, Encoder.run and Encoder.build stay apart
  deep     every one of the 150 recurse frames is present
  threads  each of the 8 busy threads' functions is found
Prints what it measured, one "error:" line per failed assertion, and a
"stats:" line (samples, complete-stack share, deepest stack).
"""
import argparse
import ast
import sys

import pprof_raw

BRACKETED = ("[no Python stack]", "[truncated]", "[unreadable Python frame]",
             "[Python not initialised]")


def function_lines(path, name):
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            last = max(getattr(n, "lineno", node.lineno) for n in ast.walk(node))
            # A sample can land on the entry instruction, which carries
            # the def line (3.11+ RESUME; f_lasti == -1 before 3.10).
            return node.lineno, last
    raise KeyError(name)


def weight_where(prof, pred):
    return sum(v[-1] for v, frames, _ in prof.stacks() if pred([f[0] for f in frames], frames))


def check_ratio(prof, args, errors):
    weights = {}
    for mid in ("heavy", "light"):
        chain = ["leaf", mid, "main", "<module>"]
        weights[mid] = weight_where(prof, lambda n, f, c=chain: n[:4] == c)
    total = weight_where(prof, lambda n, f: True)
    body = function_lines(args.workload, "leaf")
    bad = set(f[0][2] for _, f, _ in prof.stacks()
              if f and f[0][0] == "leaf" and not body[0] <= f[0][2] <= body[1])
    chained = weights["heavy"] + weights["light"]
    print("weights: heavy %d light %d (chained share %.1f%%)"
          % (weights["heavy"], weights["light"], 100.0 * chained / max(total, 1)))
    if chained < 0.8 * total:
        errors.append("less than 80% of the weight is in leaf<-heavy|light<-main<-<module>")
    if weights["light"] == 0:
        errors.append("no samples under light()")
    else:
        ratio = float(weights["heavy"]) / weights["light"]
        print("ratio heavy/light: %.2f (truth 3.00)" % ratio)
        if not 2.25 <= ratio <= 3.75:
            errors.append("ratio %.2f outside 3 +-25%%" % ratio)
    if bad:
        errors.append("leaf line numbers %s outside leaf body %d-%d"
                      % (sorted(bad), body[0], body[1]))


def check_methods(prof, args, errors):
    total = weight_where(prof, lambda n, f: True)
    for name in ("Parser.run", "Encoder.run", "Encoder.build"):
        w = weight_where(prof, lambda n, f, x=name: len(n) > 1 and n[1] == x and n[0] == "spin")
        print("%s: %.1f%%" % (name, 100.0 * w / max(total, 1)))
        if w < 0.15 * total:
            errors.append("%s has %.1f%% of the weight, expected about a third"
                          % (name, 100.0 * w / max(total, 1)))
    if weight_where(prof, lambda n, f: "run" in n or "build" in n):
        errors.append("unqualified method names (run/build) present")


def check_deep(prof, args, errors):
    total = weight_where(prof, lambda n, f: True)
    full = weight_where(prof, lambda n, f: n[:1] == ["bottom"] and n.count("recurse") == 151
                        and n[-2:] == ["main", "<module>"])
    print("complete 150-deep stacks: %.1f%%" % (100.0 * full / max(total, 1)))
    if full < 0.9 * total:
        errors.append("only %.1f%% of samples have all 151 recurse frames" % (100.0 * full / max(total, 1)))


def check_truncated(prof, args, errors):
    # 1100-deep recursion: the walk stops at 1024 Python frames and says so.
    total = weight_where(prof, lambda n, f: True)
    cut = weight_where(prof, lambda n, f: n[:1] == ["bottom"] and n[-1] == "[truncated]"
                       and len(n) == 1025)
    print("stacks cut at 1024 frames with [truncated]: %.1f%%" % (100.0 * cut / max(total, 1)))
    if cut < 0.9 * total:
        errors.append("only %.1f%% of samples end in [truncated] after 1024 frames"
                      % (100.0 * cut / max(total, 1)))


def check_threads(prof, args, errors):
    total = weight_where(prof, lambda n, f: True)
    missing = []
    for i in range(8):
        name = "busy_%d" % i
        w = weight_where(prof, lambda n, f, x=name: n[:1] == [x])
        if w == 0:
            missing.append(name)
    nopy = weight_where(prof, lambda n, f: n[:1] == ["[no Python stack]"])
    print("busy functions missing: %s; no-Python-stack share %.1f%%"
          % (missing or "none", 100.0 * nopy / max(total, 1)))
    if missing:
        errors.append("busy threads not found: %s" % ", ".join(missing))
    if nopy > 0.1 * total:
        errors.append("%.1f%% of samples without a Python stack" % (100.0 * nopy / total))


def stats(prof):
    n = complete = depth = 0
    for values, frames, _ in prof.stacks():
        n += values[0]
        names = [f[0] for f in frames]
        # Complete: reaches a root (the main module or a thread's bootstrap)
        # with no bracketed placeholder frame on the way.
        roots = ("<module>", "Thread._bootstrap")
        if names and names[-1] in roots and not any(b in names for b in BRACKETED):
            complete += values[0]
        depth = max(depth, len(frames))
    print("stats: samples=%d complete=%.1f%% deepest=%d" % (n, 100.0 * complete / max(n, 1), depth))
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go", default="go")
    ap.add_argument("--workload", required=True)
    ap.add_argument("--scenario", default="ratio",
                    choices=("ratio", "methods", "deep", "threads", "truncated"))
    ap.add_argument("profile")
    args = ap.parse_args()
    prof = pprof_raw.run_raw(args.profile, args.go)
    errors = []
    if stats(prof) == 0:
        errors.append("profile has no samples")
    else:
        globals()["check_" + args.scenario](prof, args, errors)
    for e in errors:
        print("error: " + e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
