"""Prints a profile's totals, read with go tool pprof -raw, one
"TYPE=VALUE" per sample type on one line (e.g. "samples=981
cpu=981000000"), for a test to compare with what it measured.

  profile_total.py PROFILE [--go GO]
"""
import argparse

import pprof_raw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("--go", default="go")
    a = ap.parse_args()
    prof = pprof_raw.run_raw(a.profile, go=a.go)
    totals = None
    for values, _, _ in prof.stacks():
        totals = [0] * len(values) if totals is None else totals
        totals = [t + v for t, v in zip(totals, values)]
    names = [t.split("/")[0] for t in prof.sample_types] or ["samples", "value"]
    print(" ".join("%s=%d" % (n, t) for n, t in zip(names, totals or [0] * len(names))))


if __name__ == "__main__":
    main()
