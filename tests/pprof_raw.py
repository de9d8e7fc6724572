"""Reads a profile through the real client: `go tool pprof -raw`.

Parsing pprof's own text output (rather than decoding the protobuf
ourselves) means the tests see exactly what users of go tool pprof see.
"""
import datetime
import os
import re
import subprocess

LOC_RE = re.compile(r"^\s*(\d+): (0x[0-9a-f]+) (?:M=(\d+) ?)?(.*)$")
LINE_RE = re.compile(r"^\s*(.*?) (\S*):(\d+) s=(\d+)(\(.*\))?$")
SAMPLE_RE = re.compile(r"^\s*([\d ]+?): ([\d ]+)\s*$")
LABEL_RE = re.compile(r"(\w+):\[([^\]]*)\]")


class Profile(object):
    def __init__(self):
        self.comments = []
        self.sample_types = []
        self.samples = []       # dicts: values, locs (leaf first), labels
        self.locations = {}     # id -> list of (function, file, line), inner first
        self.time_ns = None     # time_nanos: when sampling began (epoch ns)
        self.duration_s = None  # duration_nanos, as pprof prints it (10 ms
                                # steps from 1 s, 1 ms below: parse_duration)
        self.duration_text = None  # ... as printed

    def stacks(self):
        """Yields (values, frames leaf first, labels); frames are
        (function, file, line) with inlined lines expanded."""
        for s in self.samples:
            frames = []
            for loc in s["locs"]:
                frames.extend(self.locations.get(loc, [("?", "", 0)]))
            yield s["values"], frames, s["labels"]


def run_raw(path, go="go", extra=()):
    env = dict(os.environ)
    env.setdefault("HOME", "/root")
    out = subprocess.run([go, "tool", "pprof", "-raw"] + list(extra) + [path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, check=True)
    return parse_raw(out.stdout.decode("utf-8"))


def parse_raw(text):
    p = Profile()
    section = None
    for line in text.splitlines():
        if line.startswith("Comment: "):
            p.comments.append(line[len("Comment: "):])
        elif line.startswith("Time: ") and section is None:
            p.time_ns = parse_time(line[len("Time: "):])
        elif line.startswith("Duration: ") and section is None:
            p.duration_text = line[len("Duration: "):]
            p.duration_s = parse_duration(p.duration_text)
        elif line in ("Samples:", "Locations", "Mappings"):
            section = line
        elif section == "Samples:":
            _parse_sample_line(p, line)
        elif section == "Locations":
            _parse_location_line(p, line)
    return p


def parse_duration(text):
    """duration_nanos as go tool pprof prints it, in seconds: the first four
    characters of Go's duration string. "1.01" (1.012s), "2s", "1.5s",
    "12.3" (12.34s): seconds, 10 ms steps; "505." (505.1ms), "800m"
    (800ms), "80ms": milliseconds, 1 ms steps. None if unreadable."""
    t = text.strip()
    try:
        if t.endswith("ms"):
            return float(t[:-2]) / 1e3
        if t.endswith("s"):
            return float(t[:-1])
        if t.endswith("m") or (t.endswith(".") and len(t) == 4):
            return float(t[:-1]) / 1e3
        return float(t)
    except ValueError:
        return None


def parse_time(text):
    """go's time.Time.String(), "2026-12-02 08:37:08.454289793 +0000 UTC",
    as epoch nanoseconds."""
    date, clock, zone = text.split()[:3]
    whole, _, frac = clock.partition(".")
    t = datetime.datetime.strptime(date + " " + whole + " " + zone, "%Y-%m-%d %H:%M:%S %z")
    return int(t.timestamp()) * 10**9 + int((frac + "000000000")[:9])


def _parse_sample_line(p, line):
    if not p.sample_types:
        p.sample_types = line.split()
        return
    m = SAMPLE_RE.match(line)
    if m:
        p.samples.append({"values": [int(v) for v in m.group(1).split()],
                          "locs": [int(x) for x in m.group(2).split()],
                          "labels": {}})
        return
    for k, v in LABEL_RE.findall(line):
        if p.samples:
            p.samples[-1]["labels"][k] = v


def _parse_location_line(p, line):
    m = LOC_RE.match(line)
    if m:
        loc = int(m.group(1))
        p.locations[loc] = []
        rest = m.group(4)
        p._last = loc
    else:
        rest = line.strip()
        loc = getattr(p, "_last", None)
        if loc is None or not rest:
            return
    lm = LINE_RE.match(rest)
    if lm:
        name = lm.group(1)
        p.locations[loc].append((name, lm.group(2), int(lm.group(3))))
