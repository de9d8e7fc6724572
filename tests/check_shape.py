"""Checks the shape of a profile's stacks (read with go tool pprof -raw):
under the Python function FUNC, a native frame matching a regular
expression sits leafward of it in at least a given share of FUNC's
samples, and, optionally, those samples carry gil=not_held.

  check_shape.py PROFILE --func F --native RE --min-share 0.5 [--gil-not-held 0.9]
  check_shape.py PROFILE --func F --native RE --max-share 0   (a control)
"""
import argparse
import re
import sys

import pprof_raw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("--go", default="go")
    ap.add_argument("--func", required=True, help="Python function (a frame with a file)")
    ap.add_argument("--native", required=True, help="regex over native function names")
    ap.add_argument("--min-share", type=float, default=None)
    ap.add_argument("--max-share", type=float, default=None)
    ap.add_argument("--gil-not-held", type=float, default=None,
                    help="least share of gil=not_held among the matching samples")
    ap.add_argument("--min-samples", type=int, default=50)
    a = ap.parse_args()
    native = re.compile(a.native)
    prof = pprof_raw.run_raw(a.profile, go=a.go)
    total = hit = not_held = 0
    for values, frames, labels in prof.stacks():
        n = values[0]
        idx = [i for i, (fn, fl, _) in enumerate(frames) if fn == a.func and fl]
        if not idx:
            continue
        total += n
        # Leaf first: frames before the innermost FUNC frame are its callees.
        if any(native.search(fn) and not fl for fn, fl, _ in frames[:idx[0]]):
            hit += n
            not_held += n if labels.get("gil") == "not_held" else 0
    share = float(hit) / total if total else 0.0
    print("%s: %d samples, %d (%.1f%%) with a native frame matching /%s/ above it"
          % (a.func, total, hit, 100 * share, a.native))
    ok = total >= a.min_samples
    if not ok:
        print("FAIL: fewer than %d samples of %s" % (a.min_samples, a.func))
    if a.min_share is not None and share < a.min_share:
        print("FAIL: share %.3f < %.3f" % (share, a.min_share))
        ok = False
    if a.max_share is not None and share > a.max_share:
        print("FAIL: share %.3f > %.3f" % (share, a.max_share))
        ok = False
    if a.gil_not_held is not None:
        g = float(not_held) / hit if hit else 0.0
        print("gil=not_held on %.1f%% of them" % (100 * g))
        if g < a.gil_not_held:
            print("FAIL: gil=not_held share %.3f < %.3f" % (g, a.gil_not_held))
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
