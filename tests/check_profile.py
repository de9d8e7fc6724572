"""Checks a profile of one of tests/workloads/*.py, read with go tool pprof.

Scenarios:
  ratio    leaf <- heavy|light <- main <- <module>, heavy:light within 25%
           of the split the workload measured over the profile's time
           window (--truth: its output; 3:1, the iteration count, where
           the interpreter has no thread CPU clock), leaf frames carry
           line numbers inside leaf()'s body
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


def python_view(prof):
    """Stacks with native frames dropped: the Python frames (with a file)
    and the bracketed placeholders, leaf first. Native frames (no file name) merged in by
    --native are checked by the native scenarios."""
    for values, frames, labels in prof.stacks():
        yield values, [f for f in frames if f[1] or f[0] in BRACKETED], labels


def weight_where(prof, pred):
    return sum(v[-1] for v, frames, _ in python_view(prof) if pred([f[0] for f in frames], frames))


def measured_split(path, prof):
    """heavy:light CPU time the ratio workload measured over the profile's
    window, from its "split WALL HEAVY LIGHT EMPTY" lines (cumulative);
    None when it has no thread CPU clock to measure with (Python 2.7:
    "split none"). The empty
    interval's cost is taken off both: each of heavy's and light's timed
    intervals holds the clock's own cost once, as the empty one does."""
    rows = []
    for line in open(path):
        f = line.split()
        if f[:2] == ["split", "none"]:
            return None
        if len(f) == 5 and f[0] == "split":
            rows.append([float(x) for x in f[1:]])
    if not rows:
        raise ValueError("%s holds no split line" % path)
    t0 = prof.time_ns / 1e9
    t1 = t0 + prof.duration_s
    # The lines nearest the window's ends: 50 ms apart, and the workload
    # may be stopped less than 50 ms after the profile's end.
    a = min(rows, key=lambda r: abs(r[0] - t0))
    b = min(rows, key=lambda r: abs(r[0] - t1))
    if abs(a[0] - t0) > 0.25 or abs(b[0] - t1) > 0.25:
        raise ValueError("the workload's split lines (%.2f-%.2f) do not cover the profile's "
                         "window %.2f-%.2f" % (rows[0][0], rows[-1][0], t0, t1))
    empty = b[3] - a[3]
    heavy, light = b[1] - a[1] - empty, b[2] - a[2] - empty
    print("measured by the workload over %.2f s: heavy %.0f ms, light %.0f ms CPU "
          "(timing cost %.0f ms taken off each)"
          % (b[0] - a[0], 1e3 * heavy, 1e3 * light, 1e3 * empty))
    if light <= 0:
        raise ValueError("the workload measured no CPU time in light()")
    return heavy / light


def check_ratio(prof, args, errors):
    weights = {}
    for mid in ("heavy", "light"):
        chain = ["leaf", mid, "main", "<module>"]
        weights[mid] = weight_where(prof, lambda n, f, c=chain: n[:4] == c)
    total = weight_where(prof, lambda n, f: True)
    body = function_lines(args.workload, "leaf")
    bad = set(f[0][2] for _, f, _ in python_view(prof)
              if f and f[0][0] == "leaf" and not body[0] <= f[0][2] <= body[1])
    chained = weights["heavy"] + weights["light"]
    print("weights: heavy %d light %d (chained share %.1f%%)"
          % (weights["heavy"], weights["light"], 100.0 * chained / max(total, 1)))
    if chained < 0.8 * total:
        errors.append("less than 80% of the weight is in leaf<-heavy|light<-main<-<module>")
    truth, how = 3.0, "the iteration count, not measured"
    if args.truth:
        try:
            measured = measured_split(args.truth, prof)
        except (ValueError, TypeError) as e:
            errors.append("no measured split: %s" % e)
            measured = truth = None
        if measured is not None:
            truth, how = measured, "measured"
    if weights["light"] == 0:
        errors.append("no samples under light()")
    elif truth is not None:
        ratio = float(weights["heavy"]) / weights["light"]
        print("ratio heavy/light: %.2f (truth %.2f, %s)" % (ratio, truth, how))
        if not 0.75 * truth <= ratio <= 1.25 * truth:
            errors.append("ratio %.2f outside %.2f +-25%% (%s)" % (ratio, truth, how))
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


def ordered(names, pattern):
    """True when each predicate in pattern matches a frame, in order from
    the leaf to the root."""
    i = 0
    for name in names:
        if i < len(pattern) and pattern[i](name):
            i += 1
    return i == len(pattern)


def check_native(prof, args, errors):
    # Merged stacks, leaf first: Python called back from C called from Python.
    callback = [lambda n: n == "py_compare", lambda n: "qsort" in n,
                lambda n: n == "ffi_call", lambda n: n == "sort_with_callback",
                lambda n: n == "main", lambda n: n == "<module>"]
    zlib = [lambda n: n == "deflate", lambda n: n == "compress_data",
            lambda n: n == "main", lambda n: n == "<module>"]
    shares = {}
    for label, leaf, pattern in (("qsort callback", "py_compare", callback),
                                 ("zlib", "compress_data", zlib)):
        total = good = 0
        for values, frames, _ in prof.stacks():
            names = [f[0] for f in frames]
            if leaf in names:
                total += values[-1]
                if ordered(names, pattern):
                    good += values[-1]
        shares[label] = 100.0 * good / max(total, 1)
        print("%s: %.1f%% of %d ns in the expected merged order" % (label, shares[label], total))
        if total == 0 or good < 0.5 * total:
            errors.append("%s: only %.1f%% of its samples have the merged order" % (label, shares[label]))
    if args.extension:
        ext = [lambda n: n == "burn", lambda n: n == "spin_c", lambda n: n == "inner_py",
               lambda n: n == "call_back", lambda n: n == "outer_py", lambda n: n == "main"]
        total = good = 0
        for values, frames, _ in prof.stacks():
            names = [f[0] for f in frames]
            if "spin_c" in names:
                total += values[-1]
                good += values[-1] if ordered(names, ext) else 0
        print("extension: %.1f%% of %d ns in C -> Python -> C -> Python order"
              % (100.0 * good / max(total, 1), total))
        if total == 0 or good < 0.5 * total:
            errors.append("extension: only %.1f%% of spin_c samples in the merged order"
                          % (100.0 * good / max(total, 1)))
    rooted = sum(v[-1] for v, f, _ in prof.stacks() if f and f[-1][0] == "_start")
    alls = sum(v[-1] for v, f, _ in prof.stacks())
    print("native stacks unwound to _start: %.1f%%" % (100.0 * rooted / max(alls, 1)))
    if rooted < 0.5 * alls:
        errors.append("only %.1f%% of stacks unwind to _start" % (100.0 * rooted / max(alls, 1)))


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
    for values, frames, _ in python_view(prof):
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
                    choices=("ratio", "methods", "deep", "threads", "truncated", "native"))
    ap.add_argument("--extension", action="store_true",
                    help="native: also check the cbext Python->C->Python->C chain")
    ap.add_argument("--truth", help="ratio: the workload's output (its measured split)")
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
