"""Compares the CPU time a profile gives a busy thread with the CPU time
the thread really had during the profile's window (Time to Time +
Duration, as go tool pprof -raw prints them), read from the thread's own
log (tests/workloads/cpulog.py). Prints both and their ratio; exits 1 if
the ratio is outside [--min, --max].

  cpu_window.py PROFILE LOG [--min 0.95] [--max 1.05] [--go GO]
"""
import argparse
import bisect
import sys

import pprof_raw


def cpu_at(log, t):
    """The thread's CPU ns at wall time t, interpolated in its log."""
    walls = [w for w, _ in log]
    i = bisect.bisect_left(walls, t)
    if i == 0 or i == len(log):
        sys.exit("cpu_window: the window (%d) is outside the log (%d..%d)" %
                 (t, walls[0], walls[-1]))
    (w0, c0), (w1, c1) = log[i - 1], log[i]
    return c0 + (c1 - c0) * (t - w0) / float(w1 - w0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("log")
    ap.add_argument("--min", type=float, default=0.95)
    ap.add_argument("--max", type=float, default=1.05)
    ap.add_argument("--go", default="go")
    a = ap.parse_args()
    prof = pprof_raw.run_raw(a.profile, go=a.go)
    col = [i for i, t in enumerate(prof.sample_types) if t.endswith("/nanoseconds")][0]
    got = sum(v[col] for v, _, _ in prof.stacks())
    log = [tuple(int(x) for x in line.split()) for line in open(a.log) if line.strip()]
    start = prof.time_ns
    if prof.duration_s is None or not 0.1 <= prof.duration_s < 10:
        sys.exit("cpu_window: cannot use the duration '%s' (100 ms to 10 s only)"
                 % prof.duration_text)
    end = start + int(prof.duration_s * 1e9)
    real = cpu_at(log, end) - cpu_at(log, start)
    ratio = got / real if real else float("inf")
    print("profile %.1f ms, the thread's CPU time in the %.0f ms window %.1f ms: ratio %.3f"
          % (got / 1e6, (end - start) / 1e6, real / 1e6, ratio))
    sys.exit(0 if a.min <= ratio <= a.max else 1)


if __name__ == "__main__":
    main()
