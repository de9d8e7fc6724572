"""Checks a profile of tests/workloads/ratio.py, read with go tool pprof.

Asserts: the file parses; leaf -> heavy/light -> main -> <module> appears
leaf first; heavy:light CPU is 3:1 within +-25%; leaf frames carry line
numbers inside leaf()'s body.
"""
import argparse
import ast
import sys

import pprof_raw


def function_lines(path, name):
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            last = max(getattr(n, "lineno", node.lineno) for n in ast.walk(node))
            return node.lineno + 1, last
    raise KeyError(name)


def check(args):
    prof = pprof_raw.run_raw(args.profile, args.go)
    errors = []
    weights = {"heavy": 0, "light": 0}
    total = chained = 0
    body = function_lines(args.workload, "leaf")
    bad_lines = set()
    for values, frames, labels in prof.stacks():
        w = values[-1]
        total += w
        names = [f[0] for f in frames]
        if names[:1] == ["leaf"]:
            if not body[0] <= frames[0][2] <= body[1]:
                bad_lines.add(frames[0][2])
            for mid in ("heavy", "light"):
                if names[:4] == ["leaf", mid, "main", "<module>"]:
                    weights[mid] += w
                    chained += w
    print("samples: %d distinct stacks, total weight %d" % (len(prof.samples), total))
    print("weights: heavy %d light %d (chained share %.1f%%)"
          % (weights["heavy"], weights["light"], 100.0 * chained / max(total, 1)))
    if total == 0:
        errors.append("profile has no samples")
    if chained < 0.8 * total:
        errors.append("less than 80%% of the weight is in leaf<-heavy|light<-main<-<module> stacks")
    if weights["light"] == 0:
        errors.append("no samples under light()")
    else:
        ratio = float(weights["heavy"]) / weights["light"]
        print("ratio heavy/light: %.2f (truth 3.00)" % ratio)
        if not 2.25 <= ratio <= 3.75:
            errors.append("ratio %.2f outside 3 +-25%%" % ratio)
    if bad_lines:
        errors.append("leaf line numbers %s outside leaf body %d-%d"
                      % (sorted(bad_lines), body[0], body[1]))
    for e in errors:
        print("error: " + e)
    return 1 if errors else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go", default="go")
    ap.add_argument("--workload", required=True)
    ap.add_argument("profile")
    sys.exit(check(ap.parse_args()))


if __name__ == "__main__":
    main()
