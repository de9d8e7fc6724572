#!/usr/bin/python3
"""`make bench`: measure pyperf-pprof's cost on this machine.

Run as root with Debian's /usr/bin/python3 (never a pyenv shim):

    /usr/bin/python3 bench/run.py --profiler ./pyperf-pprof \
        --out BENCHMARKS.md --plot bench/overhead.png

BENCH_QUICK=1 makes a ~2-minute smoke run (fewer rounds, shorter
workloads) that writes bench-quick/BENCHMARKS.md and bench-quick/overhead.png
under the current directory instead, so the committed table stays a full run.

What is measured, for a single-threaded and a 4-thread CPU-bound workload
(bench/workloads/), at 99 Hz and 999 Hz:

  * target slowdown: the workload's fixed amount of work timed (by the
    workload itself) with and without a profiler attached, A/B interleaved
    (B C1 B C2 ... B, configurations shuffled per round); each run's ratio
    is taken against the mean of the two baselines around it;
  * the profiler's own CPU time (wait4() rusage of the child) per sample
    written, raw and with the fixed start-up/write cost (measured against
    an idle target) subtracted;
  * the BPF program's run time per run (kernel.bpf_stats_enabled=1 for the
    bench, restored after; the program is found through the profiler's own
    fds and held open so its counters survive the profiler's exit);
  * the profiler's peak RSS and the size of what it wrote;
  * the highest -F with zero lost samples, two busy target processes;
  * side by side: perf record --call-graph dwarf, and austin (CPython <= 3.8
    only, so that group runs the pyenv 3.8 interpreter).

Environment: BENCH_QUICK, BENCH_ROUNDS, BENCH_SCALE (multiplies the work),
BENCH_PY311, BENCH_PY38, BENCH_SEED, BENCH_KEEP=1 (keep the work directory).
"""

import argparse
import ctypes
import datetime
import json
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "workloads")

QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")

# Work units (see workloads/cpu.py): about 1.8 s on this kind of machine
# with Debian's 3.11 and 8000 units about as long with 3.8.
UNITS_FULL = {"3.11": 12000, "3.8": 8000}
UNITS_QUICK = {"3.11": 3000, "3.8": 2000}

BUDGETS = {
    "slowdown_99": 1.0,       # % at 99 Hz, native on
    "slowdown_999": 3.0,      # % at 999 Hz, native on
    "user_nonative": 10.0,    # us per sample
    "user_native": 40.0,      # us per sample
    "bpf_nonative": 5.0,      # us per sample
    "total_rate": 10000,      # samples/s total with zero lost, --no-native
    "rss_mib": 64.0,
}

children = []               # Popen objects still to reap on an abort


def log(msg):
    sys.stderr.write("bench: %s\n" % msg)
    sys.stderr.flush()


def die(msg):
    log(msg)
    sys.exit(1)


# ---------------------------------------------------------------- sysctl

def sysctl_path(name):
    return "/proc/sys/" + name.replace(".", "/")


def sysctl_get(name):
    with open(sysctl_path(name)) as f:
        return f.read().strip()


def sysctl_set(name, value):
    with open(sysctl_path(name), "w") as f:
        f.write(str(value))


class Sysctls:
    """Sets sysctls for the bench and puts the old values back."""

    def __init__(self):
        self.saved = {}

    def set(self, name, value):
        if name not in self.saved:
            self.saved[name] = sysctl_get(name)
        sysctl_set(name, value)

    def remember(self, name):
        if name not in self.saved:
            self.saved[name] = sysctl_get(name)

    def restore(self):
        for name, value in self.saved.items():
            try:
                if sysctl_get(name) != value:
                    sysctl_set(name, value)
                    log("restored %s = %s" % (name, value))
            except OSError as e:
                log("cannot restore %s: %s" % (name, e))
        self.saved = {}


# ------------------------------------------------------- BPF program stats

_libc = ctypes.CDLL(None, use_errno=True)
NR_BPF = 321                # x86_64
BPF_PROG_GET_FD_BY_ID = 13


def bpf_prog_fd_by_id(prog_id):
    """An fd on the program: keeps it (and its counters) after its loader exits."""
    attr = (ctypes.c_uint32 * 4)(prog_id, 0, 0, 0)
    fd = _libc.syscall(NR_BPF, BPF_PROG_GET_FD_BY_ID, ctypes.byref(attr), 16)
    return fd if fd >= 0 else None


def fdinfo(pid, fd):
    info = {}
    try:
        with open("/proc/%s/fdinfo/%d" % (pid, fd)) as f:
            for line in f:
                k, _, v = line.partition(":")
                info[k.strip()] = v.strip()
    except OSError:
        pass
    return info


def bpftool_prog(prog_id):
    try:
        out = subprocess.run(["bpftool", "prog", "show", "id", str(prog_id), "-j"],
                             capture_output=True, text=True, timeout=20).stdout
        return json.loads(out)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {}


def find_prog(pid, name="on_sample"):
    """Program id of `name` among the BPF program fds process pid holds."""
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:bpf-prog":
                continue
        except OSError:
            continue
        prog_id = fdinfo(pid, int(fd)).get("prog_id")
        if prog_id and bpftool_prog(int(prog_id)).get("name") == name:
            return int(prog_id)
    return None


class HeldProg:
    """Our on_sample program, held open so its stats outlive the profiler."""

    def __init__(self, prog_id):
        self.id = prog_id
        self.fd = bpf_prog_fd_by_id(prog_id)

    def stats(self):
        j = bpftool_prog(self.id)
        if "run_cnt" in j:
            return int(j.get("run_time_ns", 0)), int(j["run_cnt"])
        info = fdinfo("self", self.fd) if self.fd is not None else {}
        return int(info.get("run_time_ns", 0)), int(info.get("run_cnt", 0))

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


# ------------------------------------------------------------------ runs

def kill_child(p, sig=signal.SIGKILL):
    if p.returncode is None:
        try:
            os.kill(p.pid, sig)
        except ProcessLookupError:
            pass


def reap(p, timeout, sig_first=signal.SIGINT):
    """wait4() a child with a deadline; returns (status, rusage)."""
    deadline = time.monotonic() + timeout
    sent = None
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            if p in children:
                children.remove(p)
            return p.returncode, ru
        now = time.monotonic()
        if now > deadline:
            if sent is None:
                kill_child(p, sig_first)
                sent = sig_first
                deadline = now + 15
            elif sent != signal.SIGKILL:
                kill_child(p, signal.SIGKILL)
                sent = signal.SIGKILL
                deadline = now + 15
            else:
                raise RuntimeError("pid %d does not die" % p.pid)
        time.sleep(0.01)


def spawn(argv, **kw):
    p = subprocess.Popen(argv, **kw)
    children.append(p)
    return p


def start_workload(py, name, units, wd):
    err = open(os.path.join(wd, "workload.err"), "ab")
    p = spawn([py, os.path.join(WORKLOADS, name + ".py"), "--wait", str(units)],
              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
              cwd=WORKLOADS)
    err.close()
    line = p.stdout.readline().decode()
    if not line.startswith("ready"):
        kill_child(p)
        reap(p, 10)
        die("workload %s under %s did not start (see %s/workload.err)" % (name, py, wd))
    return p


def finish_workload(p):
    out = p.stdout.read().decode()
    p.stdout.close()
    p.stdin.close()
    rc, ru = reap(p, 600)
    m = re.search(r"elapsed ([0-9.]+) cpu ([0-9.]+)", out)
    if rc != 0 or not m:
        die("workload failed (rc %s): %r" % (rc, out))
    return float(m.group(1)), float(m.group(2))


def wait_until(cond, timeout, what, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("%s: tool exited early (rc %s)" % (what, proc.returncode))
        time.sleep(0.02)
    raise RuntimeError("%s: not ready after %ss" % (what, timeout))


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def perf_event_fds(pid):
    n = 0
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[perf_event]":
                    n += 1
            except OSError:
                pass
    except OSError:
        pass
    return n


class Tool:
    """How to start one profiler on a pid and read its results."""

    def __init__(self, kind, hz, native=False):
        self.kind = kind        # pyperf | perf | austin
        self.hz = hz
        self.native = native

    @property
    def label(self):
        if self.kind == "pyperf":
            return "pyperf-pprof" + ("" if self.native else " --no-native")
        if self.kind == "perf":
            return "perf record --call-graph dwarf"
        return "austin"

    @property
    def key(self):
        if self.kind == "pyperf":
            return "pyperf-native" if self.native else "pyperf-nonative"
        return self.kind

    def argv(self, ctx, pids, out):
        if self.kind == "pyperf":
            a = [ctx.profiler, "-d", "0", "-F", str(self.hz), "-o", out, "-v"]
            for pid in pids:
                a += ["--pid", str(pid)]
            return a + ([] if self.native else ["--no-native"])
        if self.kind == "perf":
            return ["perf", "record", "-e", "cpu-clock", "-F", str(self.hz),
                    "--call-graph", "dwarf", "-o", out,
                    "-p", ",".join(str(p) for p in pids)]
        return ["austin", "-i", str(int(round(1e6 / self.hz))), "-o", out,
                "-p", str(pids[0])]

    def wait_ready(self, p, errpath, out, nthreads):
        if self.kind == "pyperf":
            wait_until(lambda: "sampling " in read_text(errpath), 60, self.label, p)
        elif self.kind == "perf":
            seen = []

            def stable():
                seen.append(perf_event_fds(p.pid))
                return len(seen) > 3 and seen[-1] >= nthreads and seen[-1] == seen[-4]
            wait_until(stable, 30, self.label, p)
            time.sleep(0.3)
        else:
            wait_until(lambda: "Thread " in read_text(out), 30, self.label, p)

    def parse(self, err, out):
        r = {"samples": None, "lost": 0}
        if self.kind == "pyperf":
            m = re.search(r"bpf: events=(\d+) sent=(\d+) lost=(\d+)", err)
            if m:
                r["bpf_events"], r["bpf_sent"], r["lost"] = map(int, m.groups())
            m = re.search(r"pyperf-pprof: (\d+) samples", err)
            if m:
                r["samples"] = int(m.group(1))
            if not m or "bpf_events" not in r:
                m2 = re.search(r"(\d+) lost|lost (\d+)", err)
                if m2:
                    r["lost"] = int(m2.group(1) or m2.group(2))
        elif self.kind == "perf":
            m = re.search(r"\((\d+) samples\)", err)
            if m:
                r["samples"] = int(m.group(1))
            m = re.search(r"lost (\d+) chunks", err)
            if m:
                r["lost"] = int(m.group(1))
        else:
            m = re.search(r"Error rate : (\d+)/(\d+)", err)
            if m:
                r["samples"] = int(m.group(2))
                r["errors"] = int(m.group(1))
            else:
                r["samples"] = sum(1 for line in read_text(out).splitlines()
                                   if line.startswith("Thread "))
        return r


NTHREADS = {"cpu": 1, "threads": 5}
CLK_TCK = os.sysconf("SC_CLK_TCK")


def busy_cpu_seconds():
    """All CPUs' busy time so far (/proc/stat), seconds."""
    f = read_text("/proc/stat").split("\n", 1)[0].split()[1:]
    v = [int(x) for x in f]
    return (sum(v[:8]) - v[3] - v[4]) / CLK_TCK       # less idle and iowait


def run_once(ctx, py, workload, units, tool, nprocs=1, idle_seconds=None):
    """One run: workload(s) (and a tool) start, go, finish. idle_seconds:
    leave the target idle that long instead, then stop the tool (fixed cost)."""
    wd = ctx.workdir
    ws = [start_workload(py, workload, 0 if idle_seconds else units, wd)
          for _ in range(nprocs)]
    pids = [w.pid for w in ws]
    res = {"tool": tool.key if tool else "baseline"}
    p = held = None
    out = os.path.join(wd, "out.%s" % ("data" if tool and tool.kind == "perf" else "pb.gz"))
    errpath = os.path.join(wd, "tool.err")
    try:
        if tool:
            for f in (out, errpath):
                if os.path.exists(f):
                    os.unlink(f)
            with open(errpath, "wb") as ef:
                p = spawn(tool.argv(ctx, pids, out), stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=ef)
                res["tool_t0"] = time.monotonic()
            tool.wait_ready(p, errpath, out, NTHREADS[workload] * nprocs)
            if tool.kind == "pyperf":
                prog_id = find_prog(p.pid)
                if prog_id:
                    held = HeldProg(prog_id)
                    res["bpf_ns0"], res["bpf_cnt0"] = held.stats()
        if idle_seconds:
            time.sleep(idle_seconds)
            kill_child(p, signal.SIGINT)
        b0, m0 = busy_cpu_seconds(), time.monotonic()
        for w in ws:
            w.stdin.write(b"go\n")
            w.stdin.flush()
        el = [finish_workload(w) for w in ws]
        b1, m1 = busy_cpu_seconds(), time.monotonic()
        res["elapsed"] = max(e for e, _ in el)
        res["target_cpu"] = sum(c for _, c in el)
        if tool:
            rc, ru = reap(p, 60)
            res["rc"] = rc
            res["tool_cpu"] = ru.ru_utime + ru.ru_stime
            # the tool's share of the busy time, prorated over its life
            res["tool_life"] = time.monotonic() - res["tool_t0"]
            res["tool_utime"] = ru.ru_utime
            res["tool_stime"] = ru.ru_stime
            res["maxrss_kib"] = ru.ru_maxrss
            err = read_text(errpath)
            res.update(tool.parse(err, out))
            if rc != 0 and tool.kind != "austin" and not (idle_seconds and rc == -2):
                log("%s exited %s: %s" % (tool.label, rc, err.strip()[-500:]))
            res["out_bytes"] = os.path.getsize(out) if os.path.exists(out) else 0
            if held:
                ns, cnt = held.stats()
                res["bpf_run_ns"] = ns - res.get("bpf_ns0", 0)
                res["bpf_run_cnt"] = cnt - res.get("bpf_cnt0", 0)
        # CPUs kept busy by others during the work: all busy time less ours
        # (the tool's CPU time prorated to the work's share of its life).
        ours = res["target_cpu"]
        if tool and res.get("tool_life"):
            ours += res["tool_cpu"] * min(1.0, (m1 - m0) / res["tool_life"])
        res["background_cpus"] = max(0.0, (b1 - b0) - ours) / max(1e-3, m1 - m0)
    finally:
        if held:
            held.close()
        for c in ws + ([p] if p else []):
            if c.returncode is None:
                kill_child(c)
                reap(c, 30)
    return res


# ------------------------------------------------------------ experiments

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def slowdown_group(ctx, name, py, workload, units, tools, rounds):
    """A/B interleaved: per round B C1 B C2 ... Ck B (shuffled configs)."""
    log("group %s: %s %s, %d configs x %d rounds" % (name, os.path.basename(py),
                                                     workload, len(tools), rounds))
    run_once(ctx, py, workload, units, None)          # warm-up, discarded
    per = {i: [] for i in range(len(tools))}
    baselines = []
    background = []
    for r in range(rounds):
        order = list(range(len(tools)))
        ctx.rng.shuffle(order)
        prev = run_once(ctx, py, workload, units, None)
        baselines.append(prev["elapsed"])
        background.append(prev["background_cpus"])
        for i in order:
            res = run_once(ctx, py, workload, units, tools[i])
            nxt = run_once(ctx, py, workload, units, None)
            baselines.append(nxt["elapsed"])
            background.append(nxt["background_cpus"])
            background.append(res["background_cpus"])
            base = (prev["elapsed"] + nxt["elapsed"]) / 2
            base_cpu = (prev["target_cpu"] + nxt["target_cpu"]) / 2
            res["ratio"] = res["elapsed"] / base
            res["cpu_ratio"] = res["target_cpu"] / base_cpu
            per[i].append(res)
            prev = nxt
        log("  round %d/%d done (%s)" % (r + 1, rounds, ", ".join(
            "%s@%d %+.1f%%" % (tools[i].key, tools[i].hz, (per[i][-1]["ratio"] - 1) * 100)
            for i in range(len(tools)))))
    rows = []
    for i, t in enumerate(tools):
        runs = per[i]
        slow = [(x["ratio"] - 1) * 100 for x in runs]
        rows.append({
            "group": name, "python": ctx.pyname[py], "workload": workload,
            "tool": t.key, "label": t.label, "hz": t.hz,
            "slowdown_med": med(slow), "slowdown_min": min(slow), "slowdown_max": max(slow),
            "cpu_slowdown_med": med([(x["cpu_ratio"] - 1) * 100 for x in runs]),
            "runs": runs,
        })
    # Per-sample cost as the slope between the lowest and highest rate of
    # the same tool in the same round: fixed and per-stack costs cancel.
    for t in set(r["tool"] for r in rows):
        rs = sorted((r for r in rows if r["tool"] == t), key=lambda r: r["hz"])
        if len(rs) < 2:
            continue
        lo, hi = rs[0]["runs"], rs[-1]["runs"]
        slopes = [(b["tool_cpu"] - a["tool_cpu"]) / (b["samples"] - a["samples"]) * 1e6
                  for a, b in zip(lo, hi)
                  if a.get("samples") is not None and b.get("samples") is not None
                  and b["samples"] > a["samples"]]
        for r in rs:
            r["user_us_slope"] = med(slopes)
    return {"name": name, "python": ctx.pyname[py], "workload": workload,
            "baseline_med": med(baselines), "baseline_min": min(baselines),
            "baseline_max": max(baselines), "background_med": med(background),
            "background_max": max(background), "rows": rows}


def fixed_costs(ctx, py, tools, seconds, reps):
    """CPU a tool uses attached to an idle target for `seconds`: start-up,
    polling and writing, none of it per sample."""
    res = {}
    for t in tools:
        cpu = []
        for _ in range(reps):
            r = run_once(ctx, py, "cpu", 0, t, idle_seconds=seconds)
            cpu.append(r["tool_cpu"])
        res[t.key] = med(cpu)
        log("fixed cost %s %s: %.1f ms CPU" % (ctx.pyname[py], t.key, res[t.key] * 1e3))
    return res


def max_rate(ctx, py, units, rates, native):
    """Two busy single-threaded targets, one profiler: lost samples per -F."""
    out = []
    limit = int(sysctl_get("kernel.perf_event_max_sample_rate"))
    for hz in rates:
        if hz > limit:
            out.append({"hz": hz, "skipped": "kernel.perf_event_max_sample_rate=%d" % limit})
            break
        t = Tool("pyperf", hz, native)
        r = run_once(ctx, py, "cpu", units, t, nprocs=2)
        r["hz"] = hz
        r["rate"] = (r["samples"] or 0) / r["elapsed"]
        out.append(r)
        log("max-rate %s -F %d: %d samples, %d lost, %.0f samples/s" % (
            t.key, hz, r["samples"] or 0, r["lost"], r["rate"]))
        if r["lost"] or r.get("rc"):
            break
        limit = int(sysctl_get("kernel.perf_event_max_sample_rate"))
    return out


# ---------------------------------------------------------------- report

def cpu_model():
    for line in read_text("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def cmd_out(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def fmt(x, spec="%.1f", none="–"):
    return none if x is None else spec % x


def per_sample_us(run, fixed=0.0):
    if not run.get("samples"):
        return None
    return (run["tool_cpu"] - fixed) / run["samples"] * 1e6


def summarize_row(row, fixed):
    runs = row["runs"]
    row["samples_med"] = med([r.get("samples") for r in runs])
    row["lost_sum"] = sum(r.get("lost") or 0 for r in runs)
    row["user_us_raw"] = med([per_sample_us(r) for r in runs])
    fx = fixed.get((row["python"], row["tool"]))
    row["fixed_ms"] = None if fx is None else fx * 1e3
    row["user_us"] = None if fx is None else med([per_sample_us(r, fx) for r in runs])
    bpf = [r["bpf_run_ns"] / r["bpf_run_cnt"] / 1e3 for r in runs if r.get("bpf_run_cnt")]
    row["bpf_us"] = med(bpf)
    bpf_ev = [r["bpf_run_ns"] / r["bpf_events"] / 1e3 for r in runs
              if r.get("bpf_events") and r.get("bpf_run_ns") is not None]
    row["bpf_us_per_event"] = med(bpf_ev)
    row["rss_mib"] = max(r["maxrss_kib"] for r in runs) / 1024
    row["out_kib"] = med([r["out_bytes"] for r in runs]) / 1024


def budget_lines(res):
    """[(budget, measured, met)] from the rows."""
    rows = [r for g in res["groups"] for r in g["rows"]]
    main = res["main_python"]
    lines = []

    def pick(tool, hz, python=None):
        return [r for r in rows if r["tool"] == tool and r["hz"] == hz
                and (python is None or r["python"] == python)]

    for hz, key in ((99, "slowdown_99"), (999, "slowdown_999")):
        for r in pick("pyperf-native", hz):
            lim = BUDGETS[key]
            lines.append(("target slowdown ≤ %g%% at %d Hz, native (%s, %s)"
                          % (lim, hz, r["python"], r["workload"]),
                          "%+.2f%% [%+.1f … %+.1f] (target CPU time %+.2f%%)" % (
                              r["slowdown_med"], r["slowdown_min"], r["slowdown_max"],
                              r["cpu_slowdown_med"]),
                          r["slowdown_med"] <= lim))
    for tool, key, what in (("pyperf-nonative", "user_nonative", "Python-only"),
                            ("pyperf-native", "user_native", "native")):
        for r in pick(tool, 999, main):
            lim = BUDGETS[key]
            v = r.get("user_us_slope")
            r99 = pick(tool, 99, main)
            r99 = [x for x in r99 if x["workload"] == r["workload"]]
            lines.append(("user-space CPU ≤ %g µs/sample, %s (%s, %s)"
                          % (lim, what, r["python"], r["workload"]),
                          "%s µs per extra sample (99→999 Hz); raw total/samples: "
                          "%s µs at 999 Hz, %s µs at 99 Hz" % (
                              fmt(v), fmt(r["user_us_raw"]),
                              fmt(r99[0]["user_us_raw"] if r99 else None)),
                          v is not None and v <= lim))
    for hz in (99, 999):
        for r in pick("pyperf-nonative", hz):
            lim = BUDGETS["bpf_nonative"]
            v = r["bpf_us"]
            lines.append(("BPF ≤ %g µs/sample, Python-only, %d Hz (%s, %s)"
                          % (lim, hz, r["python"], r["workload"]),
                          "%s µs" % fmt(v, "%.2f"), v is not None and v <= lim))
    mr = [x for x in res["max_rate"].get("pyperf-nonative", []) if "skipped" not in x]
    ok = [x for x in mr if not x["lost"] and not x.get("rc")]
    best = max(ok, key=lambda x: x["rate"]) if ok else None
    # Met when a run wrote >= the budget's samples per second with nothing
    # lost, and no run at a lower rate lost any.
    goal = BUDGETS["total_rate"]
    first = next((x for x in mr if x["rate"] >= goal), None)
    met = first is not None and all(x in ok for x in mr[:mr.index(first) + 1])
    lost = [x for x in mr if x["lost"]]
    lines.append(("0 lost at %d samples/s total, --no-native (2 busy targets)" % goal,
                  ("highest lossless: -F %d → %.0f samples/s written" % (best["hz"], best["rate"])
                   if best else "no lossless rate") +
                  ("; first loss at -F %d (%d lost of %d)" % (
                      lost[0]["hz"], lost[0]["lost"], lost[0]["lost"] + (lost[0]["samples"] or 0))
                   if lost else "; none lost at any rate tried"), met))
    allrss = [r["rss_mib"] for r in rows if r["tool"].startswith("pyperf")]
    allrss += [x["maxrss_kib"] / 1024 for v in res["max_rate"].values() for x in v
               if "maxrss_kib" in x]
    if allrss:
        lines.append(("profiler peak RSS ≤ %g MiB (all runs)" % BUDGETS["rss_mib"],
                      "%.1f MiB" % max(allrss), max(allrss) <= BUDGETS["rss_mib"]))
    return lines


def write_markdown(res, path, plot_rel):
    L = []
    m = res["machine"]
    L.append("# pyperf-pprof benchmarks")
    L.append("")
    L.append("Generated by `make bench` (`bench/run.py`%s); do not edit by hand."
             % (", BENCH_QUICK=1: smoke run, indicative only" if res["quick"] else ""))
    L.append("")
    L.append("## Machine")
    L.append("")
    L.append("| | |")
    L.append("|---|---|")
    for k, v in (("date", m["date"]), ("CPU", "%s, %d CPUs" % (m["cpu"], m["ncpu"])),
                 ("kernel", m["kernel"]), ("OS", m["os"]),
                 ("profiler", m["profiler"]), ("perf", m["perf"]), ("austin", m["austin"]),
                 ("interpreters", "; ".join("%s = `%s`" % (k2, v2) for k2, v2 in
                                            m["pythons"].items())),
                 ("event", "cpu-clock (this machine has no hardware cycles counter)"),
                 ("work per run", ", ".join("%s: %d units" % (k2, v2) for k2, v2 in
                                            res["units"].items())),
                 ("load average", "%s at start, %s at end" % (m["load_start"], m["load_end"])),
                 ("bench time", "%.1f min, %d rounds per configuration" % (
                     res["seconds"] / 60, res["rounds"]))):
        L.append("| %s | %s |" % (k, v))
    L.append("")
    L.append("## Budgets")
    L.append("")
    L.append("| budget | measured | |")
    L.append("|---|---|---|")
    for what, val, ok in res["budgets"]:
        L.append("| %s | %s | %s |" % (what, val, "met" if ok else "**not met**"))
    L.append("")
    L.append("## Overhead")
    L.append("")
    L.append("*Slowdown (wall)*: the workload's own timing of its fixed amount of work "
             "with the tool attached against without, A/B interleaved, each run against "
             "the mean of the baselines either side; median over rounds [min … max]. "
             "*Slowdown (CPU)*: the same ratio for the target's CPU time "
             "(`time.process_time()`, which includes the BPF program: it runs in the "
             "target's context), less disturbed by other jobs. "
             "*Tool µs/sample*: the tool's user+sys time (wait4 rusage) per sample "
             "written: *raw*; *less fixed*, less the CPU the same tool uses attached to an "
             "idle target (start-up, BPF load, writing: the *fixed ms* column); *per extra "
             "sample*, the slope (CPU at 999 Hz − CPU at 99 Hz) / (samples at 999 − at 99) "
             "within a round, which also cancels one-off costs per distinct stack "
             "(symbol reads, interning, encoding). *BPF µs/run*: `run_time_ns / run_cnt` "
             "of `on_sample` (bpf_stats_enabled). *Peak RSS*: the tool's ru_maxrss. "
             "*Output*: profile, perf.data or austin output size.")
    L.append("")
    for g in res["groups"]:
        L.append("### %s, `%s` workload" % (g["python"], g["workload"]))
        L.append("")
        L.append("Baseline %.2f s [%.2f … %.2f]; other jobs kept %.2f CPUs busy during "
                 "the runs (median; max %.2f)." % (
                     g["baseline_med"], g["baseline_min"], g["baseline_max"],
                     g["background_med"], g["background_max"]))
        L.append("")
        L.append("| tool | Hz | slowdown (wall) | slowdown (CPU) | samples | lost | "
                 "tool µs/sample raw | less fixed | per extra sample | fixed ms | BPF µs/run | "
                 "peak RSS MiB | output KiB |")
        L.append("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for r in sorted(g["rows"], key=lambda r: (r["hz"], r["tool"])):
            L.append("| %s | %d | %+.2f%% [%+.1f … %+.1f] | %+.2f%% | %s | %d | %s | %s | %s | %s | %s | %.1f | %.1f |" % (
                r["label"], r["hz"], r["slowdown_med"], r["slowdown_min"], r["slowdown_max"],
                r["cpu_slowdown_med"], fmt(r["samples_med"], "%.0f"), r["lost_sum"],
                fmt(r["user_us_raw"]), fmt(r["user_us"]), fmt(r.get("user_us_slope")),
                fmt(r["fixed_ms"], "%.0f"), fmt(r["bpf_us"], "%.2f"), r["rss_mib"],
                r["out_kib"]))
        L.append("")
    L.append("## Highest lossless rate")
    L.append("")
    L.append("Two single-threaded `cpu` workloads (%s) busy on the %d CPUs, one "
             "pyperf-pprof for both; samples/s is what was written per second of "
             "the workloads' run. The ring buffer is the default 8 MiB."
             % (res["main_python"], m["ncpu"]))
    L.append("")
    L.append("| mode | -F Hz | samples | samples/s | lost | BPF µs/run | tool µs/sample raw | "
             "peak RSS MiB |")
    L.append("|---|--:|--:|--:|--:|--:|--:|--:|")
    for mode, runs in res["max_rate"].items():
        for x in runs:
            if "skipped" in x:
                L.append("| %s | %d | – | – | – | – | – | skipped: %s |" % (mode, x["hz"], x["skipped"]))
                continue
            bpf = x["bpf_run_ns"] / x["bpf_run_cnt"] / 1e3 if x.get("bpf_run_cnt") else None
            L.append("| %s | %d | %d | %.0f | %d | %s | %s | %.1f |" % (
                mode, x["hz"], x["samples"] or 0, x["rate"], x["lost"], fmt(bpf, "%.2f"),
                fmt(per_sample_us(x)), x["maxrss_kib"] / 1024))
    L.append("")
    if plot_rel:
        L.append("## Plot")
        L.append("")
        L.append("![target slowdown against sampling frequency](%s)" % plot_rel)
        L.append("")
    L.append("## Notes")
    L.append("")
    for n in res["notes"]:
        L.append("* " + n)
    L.append("")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(L))
    os.replace(path + ".tmp", path)


def plot(res, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("python3-matplotlib is missing: no plot (apt-get install python3-matplotlib)")
        return False
    groups = res["groups"]
    fig, axes = plt.subplots(2, len(groups), figsize=(5.0 * len(groups), 8.0),
                             sharex=True, squeeze=False)
    styles = {"pyperf-nonative": ("tab:blue", "o"), "pyperf-native": ("tab:green", "s"),
              "perf": ("tab:red", "^"), "austin": ("tab:purple", "D")}
    order = list(styles)
    handles = {}
    for col, g in enumerate(groups):
        tools = sorted(set(r["tool"] for r in g["rows"]),
                       key=lambda t: order.index(t) if t in order else 99)
        for row, (key, what) in enumerate((("slowdown", "wall-clock"),
                                           ("cpu_slowdown", "target CPU time"))):
            ax = axes[row][col]
            for i, t in enumerate(tools):
                rs = sorted((r for r in g["rows"] if r["tool"] == t), key=lambda r: r["hz"])
                xs = [r["hz"] * (1 + 0.05 * (i - (len(tools) - 1) / 2)) for r in rs]  # dodge
                c, mk = styles.get(t, ("black", "x"))
                if key == "slowdown":
                    ys = [r["slowdown_med"] for r in rs]
                    err = [[r["slowdown_med"] - r["slowdown_min"] for r in rs],
                           [r["slowdown_max"] - r["slowdown_med"] for r in rs]]
                else:
                    ys = [r["cpu_slowdown_med"] for r in rs]
                    cs = [[(x["cpu_ratio"] - 1) * 100 for x in r["runs"]] for r in rs]
                    err = [[y - min(v) for y, v in zip(ys, cs)],
                           [max(v) - y for y, v in zip(ys, cs)]]
                h = ax.errorbar(xs, ys, yerr=err, color=c, marker=mk, capsize=3,
                                label=rs[0]["label"])
                handles.setdefault(rs[0]["label"], h)
            h = ax.plot([99, 999], [BUDGETS["slowdown_99"], BUDGETS["slowdown_999"]], "k_",
                        markersize=20, mew=2.5, label="budget, pyperf-pprof native")[0]
            handles.setdefault(h.get_label(), h)
            ax.axhline(0, color="grey", lw=0.6)
            ax.set_xscale("log")
            ax.grid(True, which="both", alpha=0.3)
            ax.set_title("%s, %s workload: %s" % (g["python"], g["workload"], what),
                         fontsize=9.5)
            if row == 1:
                ax.set_xlabel("sampling frequency (Hz)")
            if col == 0:
                ax.set_ylabel("target slowdown (%%), %s\nmedian, bars min–max" % what)
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center",
               ncol=min(5, len(handles)), fontsize=9, frameon=False)
    fig.suptitle("Target slowdown against sampling frequency — %s, %d CPUs, %s%s" % (
        res["machine"]["cpu"], res["machine"]["ncpu"], res["machine"]["date"][:10],
        " (quick run)" if res["quick"] else ""), fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path + ".tmp.png", dpi=100)
    plt.close(fig)
    os.replace(path + ".tmp.png", path)
    return True


# ------------------------------------------------------------------ main

class Ctx:
    pass


def pyversion(py):
    return cmd_out([py, "-c", "import platform; print(platform.python_version())"])


def git_desc(srcdir):
    d = cmd_out(["git", "-C", srcdir, "describe", "--always", "--dirty"])
    return d or "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profiler")
    ap.add_argument("--from-json", metavar="FILE",
                    help="only rewrite the table and plot from a run's results.json")
    ap.add_argument("--srcdir", default=os.path.dirname(HERE))
    ap.add_argument("--out", default=None, help="markdown table (default BENCHMARKS.md in srcdir)")
    ap.add_argument("--plot", default=None, help="PNG (default bench/overhead.png in srcdir)")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            res = json.load(f)
        md = os.path.abspath(args.out or "BENCHMARKS.md")
        png = os.path.abspath(args.plot or "overhead.png")
        res["budgets"] = budget_lines(res)
        rel = os.path.relpath(png, os.path.dirname(md)) if plot(res, png) else None
        write_markdown(res, md, rel)
        log("wrote %s" % md)
        return
    if not args.profiler:
        ap.error("--profiler is required")

    if os.geteuid() != 0:
        die("run as root (BPF, perf events, bpf_stats_enabled)")
    for tool in ("perf", "bpftool"):
        if not shutil.which(tool):
            die("%s not found: apt-get install linux-perf bpftool" % tool)
    if QUICK:
        outdir = os.path.abspath("bench-quick")
        os.makedirs(outdir, exist_ok=True)
        md = os.path.join(outdir, "BENCHMARKS.md")
        png = os.path.join(outdir, "overhead.png")
    else:
        md = os.path.abspath(args.out or os.path.join(args.srcdir, "BENCHMARKS.md"))
        png = os.path.abspath(args.plot or os.path.join(args.srcdir, "bench", "overhead.png"))

    ctx = Ctx()
    ctx.workdir = tempfile.mkdtemp(prefix="pyperf-bench-")
    ctx.profiler = os.path.join(ctx.workdir, "pyperf-pprof")
    shutil.copy2(args.profiler, ctx.profiler)   # immune to rebuilds during the run
    ctx.rng = random.Random(int(os.environ.get("BENCH_SEED", "7")))
    py311 = os.environ.get("BENCH_PY311", "/usr/bin/python3")
    py38 = os.environ.get("BENCH_PY38", "/root/.pyenv/versions/3.8.18/bin/python3.8")
    ctx.pyname = {}
    for py in (py311, py38):
        if os.access(py, os.X_OK):
            ctx.pyname[py] = "Python " + pyversion(py)
    if py311 not in ctx.pyname:
        die("%s not found" % py311)
    have_austin = shutil.which("austin") is not None and py38 in ctx.pyname
    rounds = int(os.environ.get("BENCH_ROUNDS", "2" if QUICK else "5"))
    scale = float(os.environ.get("BENCH_SCALE", "1"))
    table = UNITS_QUICK if QUICK else UNITS_FULL
    units = {py311: int(table["3.11"] * scale), py38: int(table["3.8"] * scale)}
    nice = int(os.environ.get("BENCH_NICE", "-10"))
    if nice:
        os.setpriority(os.PRIO_PROCESS, 0, nice)    # children inherit it
    notes = []

    sysctls = Sysctls()

    def on_signal(sig, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    t0 = time.monotonic()
    load_start = " ".join(read_text("/proc/loadavg").split()[:3])
    res = {"quick": QUICK, "rounds": rounds, "units": {ctx.pyname.get(k, k): v for k, v in units.items()},
           "nice": nice, "groups": [], "max_rate": {},
           "main_python": ctx.pyname[py311], "notes": notes}
    try:
        sysctls.set("kernel.bpf_stats_enabled", 1)
        sysctls.remember("kernel.perf_event_max_sample_rate")
        orig_rate = sysctls.saved["kernel.perf_event_max_sample_rate"]

        rates = [99, 999]
        pyperf_tools = [Tool("pyperf", hz, n) for hz in rates for n in (False, True)]
        perf_tools = [Tool("perf", hz) for hz in rates]

        log("work dir %s; %s units per run, %d rounds, nice %d" % (
            ctx.workdir, "/".join(str(units[p]) for p in ctx.pyname), rounds, nice))
        # Fixed (per-run, not per-sample) cost of each tool, idle target.
        idle_s = 1.0 if QUICK else 2.0
        reps = 1 if QUICK else 2
        fixed = {}
        for py in ctx.pyname:
            fc = fixed_costs(ctx, py, [Tool("pyperf", 999, False), Tool("pyperf", 999, True),
                                       Tool("perf", 999)], idle_s, reps)
            for k, v in fc.items():
                fixed[(ctx.pyname[py], k)] = v

        groups = [("py311-cpu", py311, "cpu", pyperf_tools + perf_tools),
                  ("py311-threads", py311, "threads", pyperf_tools + perf_tools)]
        if py38 in ctx.pyname:
            groups.append(("py38-cpu", py38, "cpu", pyperf_tools + perf_tools +
                           ([Tool("austin", hz) for hz in rates] if have_austin else [])))
        if not have_austin:
            notes.append("austin or the 3.8 interpreter is missing: no austin comparison "
                         "(apt-get install austin)")
        for name, py, wl, tools in groups:
            g = slowdown_group(ctx, name, py, wl, units[py], tools, rounds)
            for r in g["rows"]:
                summarize_row(r, fixed)
            res["groups"].append(g)

        mr_rates = [999, 5000, 9999, 19999] if QUICK else [99, 999, 2999, 5000, 9999, 19999]
        mr_units = units[py311]
        res["max_rate"]["pyperf-nonative"] = max_rate(ctx, py311, mr_units, mr_rates, False)
        if not QUICK:
            res["max_rate"]["pyperf-native"] = max_rate(ctx, py311, mr_units, mr_rates, True)
        res["max_sample_rate_after"] = sysctl_get("kernel.perf_event_max_sample_rate")
    except KeyboardInterrupt:
        log("interrupted")
        for c in list(children):
            kill_child(c)
        sysctls.restore()
        sys.exit(130)
    finally:
        for c in list(children):
            if c.returncode is None:
                kill_child(c)
                try:
                    reap(c, 10)
                except RuntimeError:
                    pass
        sysctls.restore()

    res["seconds"] = time.monotonic() - t0
    res["machine"] = {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "cpu": cpu_model(), "ncpu": os.cpu_count(), "kernel": platform.release(),
        "os": "Debian " + read_text("/etc/debian_version").strip(),
        "profiler": "pyperf-pprof %s" % git_desc(args.srcdir),
        "perf": cmd_out(["perf", "--version"]),
        "austin": cmd_out(["austin", "--version"]) if have_austin else "not run",
        "pythons": {v: k for k, v in ctx.pyname.items()},
        "load_start": load_start,
        "load_end": " ".join(read_text("/proc/loadavg").split()[:3]),
    }
    if nice:
        notes.append("The bench runs at nice %d (workloads and tools inherit it) so that "
                     "other jobs on the machine disturb the timings less." % nice)
    notes.append("Each run's tool is started on the waiting workload and is sampling "
                 "before the work starts; pyperf-pprof runs with `-d 0 -v` and stops "
                 "when the target exits.")
    notes.append("perf record uses `-e cpu-clock --call-graph dwarf` (8 KiB of stack "
                 "per sample); pyperf-pprof's native mode copies up to 16 KiB.")
    notes.append("austin %s supports CPython ≤ 3.8, hence the 3.8 group; its interval "
                 "is 1e6/Hz µs of wall time and it samples idle threads too." %
                 res["machine"]["austin"].replace("austin ", ""))
    notes.append("The 4-thread workload holds the GIL in turn: about one CPU busy. The "
                 "lossless-rate test uses two processes to keep both CPUs busy: with "
                 "`-F HZ` each CPU samples HZ times per second, so the total is HZ × busy "
                 "CPUs.")
    if res.get("max_sample_rate_after", orig_rate) != orig_rate:
        notes.append("kernel.perf_event_max_sample_rate was lowered by the kernel during "
                     "the run (to %s) and restored." % res["max_sample_rate_after"])
    res["budgets"] = budget_lines(res)
    plotted = plot(res, png)
    rel = os.path.relpath(png, os.path.dirname(md)) if plotted else None
    write_markdown(res, md, rel)
    with open(os.path.join(ctx.workdir, "results.json"), "w") as f:
        json.dump(res, f, indent=1, default=str)
    log("wrote %s%s; raw results in %s/results.json" % (md, " and " + png if plotted else "",
                                                       ctx.workdir))
    for what, val, ok in res["budgets"]:
        print("%-9s %s: %s" % ("met" if ok else "NOT MET", what, val))
    if os.environ.get("BENCH_KEEP", "") in ("", "0"):
        for f in os.listdir(ctx.workdir):
            if f != "results.json":
                p = os.path.join(ctx.workdir, f)
                if os.path.isfile(p):
                    os.unlink(p)


if __name__ == "__main__":
    main()
