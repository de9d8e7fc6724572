"""Prints what a profile says about its processes, read with go tool pprof:
the pids in the labels and the functions seen per pid. Used by
tests/sidecar.sh: `check_targets.py FILE pids` or `... functions PID`."""
import sys

import pprof_raw


def main():
    prof = pprof_raw.run_raw(sys.argv[1], sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "pids" else "go")
    what = sys.argv[2]
    pids = {}
    for values, frames, labels in prof.stacks():
        pid = labels.get("pid", "?")
        pids.setdefault(pid, set()).update(f[0] for f in frames)
    if what == "pids":
        print(" ".join(sorted(pids)))
    else:
        print(" ".join(sorted(pids.get(sys.argv[3], ()))))


if __name__ == "__main__":
    main()
