"""Says where a profile shows a profiler: `check_selfless.py FILE GO PID...`
prints one line per sample labelled with one of the PIDs (the profilers
of the run), per mapping of a pyperf-pprof executable and per function of
the profiler's own code in a stack, then the pids the profile has; exits
1 if it found any. Used by tests/self-exclusion.sh."""
import os
import subprocess
import sys

import pprof_raw

# Functions every profiler sample runs through (its poll loop, its
# pipeline): a stack of the profiler has some of them.
OWN = {"session_run", "poll_loop", "on_record", "pipeline_sample", "sample_add",
       "ring_buffer__poll", "ring_buffer__consume", "native_resolve"}


def main():
    path, go, pids = sys.argv[1], sys.argv[2], set(sys.argv[3:])
    env = dict(os.environ)
    env.setdefault("HOME", "/root")
    text = subprocess.run([go, "tool", "pprof", "-raw", path], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, check=True).stdout.decode()
    prof = pprof_raw.parse_raw(text)
    bad = 0
    seen = set()
    for _, frames, labels in prof.stacks():
        pid = labels.get("pid", "?")
        seen.add(pid)
        own = sorted({f[0] for f in frames} & OWN)
        if pid in pids or own:
            print("sample of pid %s: %s" % (pid, " ".join(own) or "(labelled a profiler)"))
            bad += 1
    section = None
    for line in text.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
        elif section == "Mappings" and ": " in line:
            fields = line.split(": ", 1)[1].split()
            if len(fields) > 1 and os.path.basename(fields[1]) == "pyperf-pprof":
                print("mapping of a profiler: " + line.strip())
                bad += 1
    print("pids: " + " ".join(sorted(seen)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
