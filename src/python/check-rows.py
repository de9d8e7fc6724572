#!/usr/bin/env python3
"""Compares the _Py_DebugOffsets field lists of pylayout_rows.c with
CPython's own headers at release tags, read from a CPython git directory
(a clone or a bare mirror of python/cpython that has the tags).

    src/python/check-rows.py CPYTHON_GIT_DIR [TAG=ROW ...]

Without TAG=ROW pairs it checks v3.13.0=313 v3.14.0=314 v3.15.0rc1=315
(the tags the rows were read at) and every later patch tag of those
minor versions that the directory has. The struct is taken from
Include/internal/pycore_debug_offsets.h, or pycore_runtime.h before it
existed (3.13). Prints one line per tag; exit 1 on any difference.
"""
import os
import re
import subprocess
import sys

ROWS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pylayout_rows.c")


def git_show(gitdir, rev, path):
    r = subprocess.run(["git", "--git-dir", gitdir, "show", "%s:%s" % (rev, path)],
                       capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def header_groups(text):
    m = re.search(r"typedef struct _Py_DebugOffsets \{(.*?)\n\} _Py_DebugOffsets;", text, re.S)
    if not m:
        return None
    groups, cur = [], None
    for line in m.group(1).splitlines():
        line = re.sub(r"//.*", "", line).strip()
        if re.match(r"struct\s*_?\w*\s*\{", line):
            cur = []
        elif re.match(r"\}\s*\w+;", line) and cur is not None:
            groups.append((re.match(r"\}\s*(\w+);", line).group(1), cur))
            cur = None
        elif cur is not None and re.match(r"uint64_t \w+;", line):
            cur.append(re.match(r"uint64_t (\w+);", line).group(1))
    return groups


def row_groups(text, row):
    m = re.search(r"dbg_%s\[\] = \{(.*?)\{ NULL, NULL \}" % row, text, re.S)
    return [(g.group(1), re.findall(r'"(\w+)"', g.group(2)))
            for g in re.finditer(r'\{ "(\w+)", FIELDS\((.*?)\) \}', m.group(1), re.S)]


def tag_struct(gitdir, tag):
    for path in ("Include/internal/pycore_debug_offsets.h", "Include/internal/pycore_runtime.h"):
        text = git_show(gitdir, tag, path)
        if text and "typedef struct _Py_DebugOffsets" in text:
            return path, header_groups(text)
    return None, None


def default_pairs(gitdir):
    tags = subprocess.run(["git", "--git-dir", gitdir, "tag"], capture_output=True,
                          text=True).stdout.split()
    pairs = [("v3.13.0", "313"), ("v3.14.0", "314"), ("v3.15.0rc1", "315")]
    for minor in (13, 14, 15):
        for t in tags:
            if re.fullmatch(r"v3\.%d\.([1-9]\d*)" % minor, t):
                pairs.append((t, str(300 + minor)))
    return pairs


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip())
        return 2
    gitdir = sys.argv[1]
    pairs = [a.split("=", 1) for a in sys.argv[2:]] or default_pairs(gitdir)
    rows = open(ROWS).read()
    bad = 0
    for tag, row in pairs:
        path, hdr = tag_struct(gitdir, tag)
        if hdr is None:
            print("MISSING %s: no _Py_DebugOffsets in this directory" % tag)
            bad += 1
            continue
        mine = row_groups(rows, row)
        if hdr == mine:
            print("SAME %s %s: %d groups, %d slots == dbg_%s" % (
                tag, path, len(hdr), 3 + sum(len(f) for _, f in hdr), row))
            continue
        bad += 1
        print("DIFFERENT %s %s vs dbg_%s:" % (tag, path, row))
        for i in range(max(len(hdr), len(mine))):
            a = hdr[i] if i < len(hdr) else None
            b = mine[i] if i < len(mine) else None
            if a != b:
                print("  header %s\n  row    %s" % (a, b))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
