"""Checks a profile of tests/workloads/ratio.py in Debian's go tool pprof,
the way a user reads it: -top, -traces, -raw, -tagfocus on each label, and
the web UI (-http): the graph (when graphviz's dot is installed), top and
flame graph pages.

Exit status 0 when every check passes, 1 otherwise; every failed check is
printed as "error: ...".
"""
import argparse
import html
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pprof_raw

FUNCS = ("leaf", "heavy", "light", "main", "<module>")
UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0,
         "min": 60.0, "hrs": 3600.0, "h": 3600.0}


class Checker(object):
    def __init__(self, args):
        self.args = args
        self.errors = []

    def error(self, msg):
        print("error: " + msg)
        self.errors.append(msg)

    def expect(self, cond, msg):
        if not cond:
            self.error(msg)
        return cond

    def pprof(self, *opts):
        cmd = [self.args.go, "tool", "pprof"] + list(opts) + [self.args.profile]
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            self.error("%s exited with %d: %s" % (" ".join(cmd), out.returncode,
                                                   out.stderr.decode("utf-8", "replace").strip()))
        return out.stdout.decode("utf-8"), out.stderr.decode("utf-8", "replace")


def seconds(text):
    """'2996ms' -> 2.996, '0' -> 0.0, '1.57s' -> 1.57."""
    m = re.match(r"^(-?[\d.]+)([a-z\u00b5]*)$", text)
    if not m:
        raise ValueError("not a duration: %r" % text)
    return float(m.group(1)) * (UNITS[m.group(2)] if m.group(2) else 1e-9)


def check_top(c):
    text, _ = c.pprof("-top")
    print("--- go tool pprof -top")
    print(text.rstrip())
    rows = {}
    header = False
    for line in text.splitlines():
        if re.match(r"^\s*flat\s+flat%\s+sum%\s+cum\s+cum%", line):
            header = True
            continue
        if header:
            f = line.split(None, 5)
            if len(f) == 6:
                rows[f[5]] = (seconds(f[0]), seconds(f[3]), float(f[4].rstrip("%")))
    for fn in FUNCS:
        c.expect(fn in rows, "-top does not list %s" % fn)
    if not all(fn in rows for fn in FUNCS):
        return
    flat_max = max(rows.values(), key=lambda r: r[0])
    c.expect(rows["leaf"] == flat_max, "-top: leaf does not have the most flat time")
    c.expect(rows["leaf"][0] > 0.8 * sum(r[0] for r in rows.values()),
             "-top: leaf has under 80% of the flat time")
    c.expect(rows["heavy"][1] > rows["light"][1],
             "-top: heavy cum %s not above light cum %s" % (rows["heavy"][1], rows["light"][1]))
    for fn in ("main", "<module>"):
        c.expect(rows[fn][2] >= 99.0, "-top: %s cum%% is %.2f, not ~100%%" % (fn, rows[fn][2]))


def parse_traces(text):
    """go tool pprof -traces -> list of (labels dict, weight text, frames leaf first)."""
    traces = []
    for block in re.split(r"^-+\+-+$", text, flags=re.M)[1:]:
        labels, frames, weight = {}, [], None
        for line in block.splitlines():
            if not line.strip():
                continue
            if weight is None:
                m = re.match(r"^\s*(-?[\d.]+[a-z\u00b5]*)\s+(\S.*)$", line)
                if m:
                    weight = m.group(1)
                    frames.append(m.group(2).strip())
                    continue
                m = re.match(r"^\s*(\S+):\s+(.*)$", line)
                if m:
                    labels[m.group(1)] = m.group(2).strip()
            else:
                frames.append(line.strip())
        if weight is not None:
            traces.append((labels, weight, frames))
    return traces


def check_traces(c):
    text, _ = c.pprof("-traces")
    traces = parse_traces(text)
    print("--- go tool pprof -traces: %d traces; the first:" % len(traces))
    for labels, weight, frames in traces[:1]:
        print("    labels %s, %s: %s" % (labels, weight, " <- ".join(frames)))
    chains = {}
    bad = set()
    for labels, weight, frames in traces:
        for mid in ("heavy", "light"):
            if frames[:4] == ["leaf", mid, "main", "<module>"]:
                chains[mid] = chains.get(mid, 0) + seconds(weight)
        if labels.get("thread_name") != c.args.thread_name:
            bad.add("-traces: thread_name label %r, expected %r"
                    % (labels.get("thread_name"), c.args.thread_name))
        if labels.get("pid") != str(c.args.pid):
            bad.add("-traces: pid label %r, expected %d" % (labels.get("pid"), c.args.pid))
        if "tid" not in labels:
            bad.add("-traces: trace without a tid label")
    for msg in sorted(bad):
        c.error(msg)
    c.expect(traces, "-traces: no traces")
    for mid in ("heavy", "light"):
        c.expect(chains.get(mid, 0) > 0, "-traces: no leaf <- %s <- main <- <module> chain" % mid)
    print("    chained weight: heavy %.3fs, light %.3fs" % (chains.get("heavy", 0), chains.get("light", 0)))


def raw(c, *opts):
    text, err = c.pprof("-raw", *opts)
    return pprof_raw.parse_raw(text), err


def check_raw_and_tags(c):
    prof, _ = raw(c)
    total = sum(s["values"][-1] for s in prof.samples)
    print("--- go tool pprof -raw: sample types %s, %d samples, %d locations, total %d"
          % (prof.sample_types, len(prof.samples), len(prof.locations), total))
    c.expect(prof.sample_types == ["samples/count", "cpu/nanoseconds"],
             "-raw: sample types %s" % prof.sample_types)
    c.expect(len(prof.samples) > 0 and total > 0, "-raw: no samples")
    c.expect(len(prof.locations) > 0, "-raw: no locations")
    names = set(f[0] for locs in prof.locations.values() for f in locs)
    for fn in FUNCS:
        c.expect(fn in names, "-raw: no location for %s" % fn)
    for s in prof.samples:
        lab = s["labels"]
        if not c.expect(set(("pid", "tid", "thread_name")) <= set(lab),
                        "-raw: sample labels %s lack pid/tid/thread_name" % lab):
            break

    # pprof reads a value that looks numeric as a range over numeric labels
    # (so pid=N also proves pid is a numeric label); thread_name is a string.
    cases = [
        # string values are unanchored regexps: anchor, and check a prefix fails
        ("thread_name=^%s$" % re.escape(c.args.thread_name), True),
        ("thread_name=nonexistent", False),
        ("thread_name=^%s$" % re.escape(c.args.thread_name[:-1]), False),
        ("pid=%d" % c.args.pid, True),
        ("pid=%d" % (c.args.pid + 1), False),
        ("tid=%d" % c.args.pid, True),  # the main thread's tid is the pid
    ]
    for expr, keeps_all in cases:
        fprof, err = raw(c, "-tagfocus", expr)
        ftotal = sum(s["values"][-1] for s in fprof.samples)
        print("    -tagfocus %-28s -> %d samples, total %d%s" % (
            expr, len(fprof.samples), ftotal,
            " (%s)" % "; ".join(err.split("\n")).strip("; ") if err.strip() else ""))
        if keeps_all:
            c.expect(len(fprof.samples) == len(prof.samples) and ftotal == total,
                     "-tagfocus %s kept %d of %d samples" % (expr, len(fprof.samples), len(prof.samples)))
        else:
            c.expect(len(fprof.samples) == 0, "-tagfocus %s kept %d samples, expected none"
                     % (expr, len(fprof.samples)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read().decode("utf-8", "replace")


def js_string_json(html, prefix):
    """The JSON text inside `prefix"...")` (a JS string literal), or None."""
    i = html.find(prefix + '"')
    if i < 0:
        return None
    i += len(prefix) + 1
    j = html.find('");', i)
    return json.loads(json.loads('"' + html[i:j] + '"'))


def check_flame_tree(c, tree):
    """Go <= 1.20 embeds the flame graph as a tree {n, v, c: [...]}."""
    def child(node, name):
        for ch in node.get("c") or []:
            if ch["n"] == name:
                return ch
        return None
    main = child(child(tree, "<module>") or {}, "main")
    if not c.expect(main is not None, "flamegraph: no root -> <module> -> main path"):
        return
    w = {}
    for mid in ("heavy", "light"):
        node = child(main, mid)
        c.expect(node is not None and child(node, "leaf") is not None,
                 "flamegraph: no main -> %s -> leaf path" % mid)
        w[mid] = node["v"] if node else 0
    print("    flame graph tree: root %s, main %s, heavy %s, light %s"
          % (tree.get("l"), main.get("l"), w["heavy"], w["light"]))
    c.expect(w["heavy"] > w["light"], "flamegraph: heavy %s not above light %s" % (w["heavy"], w["light"]))


def check_graph(c, base):
    """/ui/, pprof's landing page: the call graph, drawn by graphviz's dot."""
    if not shutil.which("dot"):
        print("    /ui/ graph view not checked: graphviz (dot) is not installed")
        return
    try:
        status, svg = fetch(base + "/ui/")
    except urllib.error.HTTPError as e:
        status, svg = e.code, e.read().decode("utf-8", "replace")
    if not c.expect(status == 200, "/ui/ (graph) status %s: %s" % (status, svg[:200])):
        return
    nodes = dict((n, html.unescape(name)) for n, name in re.findall(
        r'<title>(N\d+)</title>\s*<g id="a_node\d+"><a xlink:title="(.*?) \(', svg))
    edges = set((nodes.get(a), nodes.get(b)) for a, b in
                re.findall(r"<title>(N\d+)&#45;&gt;(N\d+)</title>", svg))
    print("    /ui/ graph: %d bytes, nodes %s, edges %s" % (
        len(svg), sorted(nodes.values()), ", ".join("%s->%s" % e for e in sorted(edges, key=str))))
    for e in (("<module>", "main"), ("main", "heavy"), ("main", "light"),
              ("heavy", "leaf"), ("light", "leaf")):
        c.expect(e in edges, "/ui/ graph has no edge %s -> %s" % e)
    c.expect("thread_name:" + html.escape(c.args.thread_name) in svg,
             "/ui/ graph shows no thread_name:%s tag" % c.args.thread_name)


def check_web(c):
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    log = open(os.path.join(c.args.tmpdir, "pprof-http.log"), "w+")
    proc = subprocess.Popen([c.args.go, "tool", "pprof", "-http=127.0.0.1:%d" % port,
                             "-no_browser", c.args.profile], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + c.args.http_timeout
        status, fg = None, ""
        while time.time() < deadline:
            if proc.poll() is not None:
                break
            try:
                status, fg = fetch(base + "/ui/flamegraph")
                break
            except urllib.error.HTTPError as e:
                status = e.code
                break
            except (urllib.error.URLError, ConnectionError, socket.timeout):
                time.sleep(0.2)
        if not c.expect(status == 200, "pprof -http: /ui/flamegraph not served within %ds (exit %s)"
                        % (c.args.http_timeout, proc.poll())):
            log.seek(0)
            print(log.read())
            return
        status, top = fetch(base + "/ui/top")
        c.expect(status == 200, "pprof -http: /ui/top status %s" % status)
        print("--- go tool pprof -http=%s: /ui/flamegraph %d bytes, /ui/top %d bytes"
              % (base, len(fg), len(top)))
        check_graph(c, base)
        for page, html in (("/ui/flamegraph", fg), ("/ui/top", top)):
            text = html.replace("\\u003c", "<").replace("\\u003e", ">")
            for fn in FUNCS:
                c.expect('"%s"' % fn in text, "%s does not name %s" % (page, fn))
        tree = js_string_json(fg, "var data = JSON.parse(")
        if tree is not None:
            check_flame_tree(c, tree)
        else:
            print("    (no embedded flame graph tree: newer pprof; names checked only)")
        m = re.search(r"makeTopTable\(\s*(\d+)\s*,\s*(\[.*?\])\);", top, re.S)
        if c.expect(m is not None, "/ui/top: no makeTopTable data"):
            rows = {r["Name"]: r for r in json.loads(m.group(2))}
            print("    top table: %s" % ", ".join("%s flat %s cum %s" % (n, r["FlatFormat"], r["CumFormat"])
                                                for n, r in rows.items()))
            c.expect(max(rows.values(), key=lambda r: r["Flat"])["Name"] == "leaf",
                     "/ui/top: leaf is not the heaviest flat row")
            c.expect(rows.get("heavy", {}).get("Cum", 0) > rows.get("light", {}).get("Cum", 0),
                     "/ui/top: heavy cum not above light cum")
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go", default="go")
    ap.add_argument("--pid", type=int, required=True, help="the profiled workload's pid")
    ap.add_argument("--thread-name", required=True, help="its main thread's comm")
    ap.add_argument("--http-timeout", type=int, default=30)
    ap.add_argument("--tmpdir", default=os.environ.get("TMPDIR", "/tmp"))
    ap.add_argument("profile")
    args = ap.parse_args()
    if not os.environ.get("HOME"):
        os.environ["HOME"] = args.tmpdir
    c = Checker(args)
    check_top(c)
    check_traces(c)
    check_raw_and_tags(c)
    check_web(c)
    print("%d client checks failed" % len(c.errors) if c.errors else "all client checks passed")
    sys.exit(1 if c.errors else 0)


if __name__ == "__main__":
    main()
