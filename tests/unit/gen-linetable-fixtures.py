#!/usr/bin/env python3
"""Generate tests/unit/linetable_fixtures.h for tests/unit/test_linetable.c.

The fixtures are the raw line tables of real code objects, plus the line
number the interpreter itself reports for chosen instruction offsets.  Every
interpreter is asked twice: once through its Python-level API
(dis.findlinestarts <= 3.9, co_lines() 3.10, co_positions() 3.11+) and once
through the C function PyCode_Addr2Line() via ctypes, which is the code the
decoders in src/python/linetable.c mirror.  The two must agree or generation fails.

Usage (run it with a real interpreter, not a pyenv shim):

    /root/.pyenv/versions/3.11.7/bin/python3 tests/unit/gen-linetable-fixtures.py \\
        [-o tests/unit/linetable_fixtures.h] [INTERPRETER...]

With no INTERPRETER the eight pyenv builds 3.6 .. 3.13 below are used.  Each
one re-runs this script with --dump (internal) and prints JSON on stdout.
The script must therefore stay valid Python 3.6.
"""

import json
import os
import subprocess
import sys
import textwrap

PYENV = "/root/.pyenv/versions"
DEFAULT_VERSIONS = ["3.6.15", "3.7.16", "3.8.18", "3.9.18",
                    "3.10.13", "3.11.7", "3.12.1", "3.13.0"]

# Keep every n-th offset of a code object besides the line boundaries, so the
# header stays small while each range is still hit at both ends.
STRIDE = 8

SAMPLE_HEAD = '''\
"""Sample module for the line table fixtures."""
import os

GLOBAL = [i * 2 for i in range(10)]


def simple(a, b):
    c = a + b
    return c * 2


def loops(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        while total < i:
            total += 1
    else:
        total -= 1
    return total


def multiline(x, y):
    value = (x +
             y *
             (x -
              y))
    call = max(
        x,
        y,
        key=lambda v: (
            v * 2
        ),
    )
    return value, call


def nested(a):
    def inner(b):
        def innermost(c):
            return a + b + c
        return innermost
    return inner(a)(a)


def handler(x):
    try:
        y = 1 / x
    except ZeroDivisionError as exc:
        y = str(exc)
    except (TypeError, ValueError):
        raise
    else:
        y += 1
    finally:
        x = None
    with open(os.devnull) as f:
        f.read()
    return y


def deco(fn):
    return fn


class Klass:
    attr = 1

    @deco
    def method(self):
        return self.attr


async def coro(x):
    async with x as y:
        await y


def gen(n):
    yield from range(n)
    yield n


def backwards(n):
    while n:
        n -= 1
        if n == 5:
            break
    return n
'''


def build_sample():
    """Return the sample source; the long parts are generated, not typed."""
    parts = [SAMPLE_HEAD]
    # More than 255 bytes of bytecode on one line: lnotab/3.10 need chained
    # address increments, and 3.11+ columns pass 127 (long form).
    # The statement after it makes the table actually record that run.
    parts.append("\n\ndef long_line(a):\n    x = [%s]\n    return x\n" %
                 ", ".join("a + %d" % i for i in range(48)))
    # Columns past 4095: 3-byte column varints in the 3.11+ long form.
    parts.append("\n\ndef wide(a):\n    return %r + str(a)\n" % ("w" * 4200))
    # Line jumps of thousands of lines: chained +127 pairs in lnotab/3.10 and
    # 3-byte signed varints in 3.11+.
    parts.append("\n\ndef big_gap(x):\n    y = x\n")
    parts.append("    # gap\n" * 3000)
    parts.append("    y += 1\n")
    parts.append("\n" * 300)
    parts.append("    return y\n")
    # A loop whose body spans 300 lines: the back edge jumps far backwards
    # (negative deltas below -128) in the versions that put it on the loop
    # header line.
    parts.append("\n\ndef far_loop(items):\n    x = 0\n"
                 "    for item in items:\n        x = item\n")
    parts.append("        # body\n" * 300)
    parts.append("        x += 1\n    return x\n")
    # A call whose arguments span 300 lines: 3.8+ put the call itself back
    # on its first line, a natural jump of about -300.
    parts.append("\n\ndef far_call(x):\n    return max(\n        x,\n")
    parts.append("        # args\n" * 300)
    parts.append("        x + 1)\n")
    parts.append("\n\nTAIL = simple(1, 2)\n")
    return "".join(parts)


# ---------------------------------------------------------------------------
# --dump: runs under the interpreter being described.
# ---------------------------------------------------------------------------

def table_format():
    if sys.version_info < (3, 10):
        return "lnotab"
    if sys.version_info < (3, 11):
        return "310"
    return "311"


def raw_table(co):
    if sys.version_info < (3, 10):
        return co.co_lnotab
    return co.co_linetable


def addr2line():
    import ctypes
    fn = ctypes.pythonapi.PyCode_Addr2Line
    fn.argtypes = [ctypes.py_object, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def walk_code(co):
    """Pre-order walk in co_consts order: deterministic across runs."""
    yield co
    for const in co.co_consts:
        if hasattr(const, "co_code"):
            for sub in walk_code(const):
                yield sub


def unit_of_offset():
    """Offsets in the fixtures: bytes before 3.11, code units after."""
    return 2 if sys.version_info >= (3, 11) else 1


def python_truth(co):
    """Line per fixture offset, from the Python-level API."""
    import dis
    fmt = table_format()
    lines = {}
    if fmt == "lnotab":
        starts = list(dis.findlinestarts(co))
        for ins in dis.get_instructions(co):
            line = None
            for off, ln in starts:
                if off <= ins.offset:
                    line = ln
            lines[ins.offset] = line
    elif fmt == "310":
        # Every instruction is 2 bytes in 3.10; co_lines() covers them all.
        for start, end, line in co.co_lines():
            for off in range(start, end, 2):
                lines[off] = -1 if line is None else line
    else:
        for unit, pos in enumerate(co.co_positions()):
            lines[unit] = -1 if pos[0] is None else pos[0]
        # co_lines() must say the same thing, range by range.
        for start, end, line in co.co_lines():
            for off in range(start, end, 2):
                want = -1 if line is None else line
                if lines.get(off // 2) != want:
                    raise SystemExit("co_lines/co_positions disagree in %s"
                                     " at %d" % (co.co_name, off))
    return lines


def c_truth(fn, co, offset):
    return fn(co, offset * unit_of_offset())


def pick_offsets(lines, stride):
    """Both ends of every line range, plus every stride-th offset."""
    offs = sorted(lines)
    keep = set()
    for i, off in enumerate(offs):
        prev = lines[offs[i - 1]] if i else None
        nxt = lines[offs[i + 1]] if i + 1 < len(offs) else None
        if i % stride == 0 or lines[off] != prev or lines[off] != nxt:
            keep.add(off)
    return sorted(keep)


def code_len(co):
    """Length of the code in fixture offset units."""
    return len(co.co_code) // unit_of_offset()


def describe(co, fn, stride, name=None):
    lines = python_truth(co)
    cases = []
    for off in pick_offsets(lines, stride):
        want = c_truth(fn, co, off)
        if lines[off] != want:
            raise SystemExit("%s: %s offset %d: python says %r, "
                             "PyCode_Addr2Line says %r" %
                             (sys.version.split()[0], co.co_name, off,
                              lines[off], want))
        cases.append([off, want])
    # Past the end: PyCode_Addr2Line keeps the last line for lnotab and
    # reports -1 for the range-based tables.  The release builds have no
    # assert there, so asking is safe.
    end = code_len(co)
    for off in (end, end + 1, end + 1000):
        cases.append([off, c_truth(fn, co, off)])
    if name is None:
        name = getattr(co, "co_qualname", co.co_name)
    return {"name": name, "firstlineno": co.co_firstlineno,
            "table": raw_table(co).hex(), "cases": cases}


def with_table(co, table, firstlineno=None):
    """co with its line table replaced, for the synthetic fixtures."""
    import types
    if firstlineno is None:
        firstlineno = co.co_firstlineno
    if hasattr(co, "replace"):
        if sys.version_info < (3, 10):
            return co.replace(co_lnotab=table, co_firstlineno=firstlineno)
        return co.replace(co_linetable=table, co_firstlineno=firstlineno)
    # 3.6/3.7: no replace(); spell out the constructor.
    return types.CodeType(co.co_argcount, co.co_kwonlyargcount,
                          co.co_nlocals, co.co_stacksize, co.co_flags,
                          co.co_code, co.co_consts, co.co_names,
                          co.co_varnames, co.co_filename, co.co_name,
                          firstlineno, table, co.co_freevars,
                          co.co_cellvars)


def host_code(units):
    """A code object at least `units` offset units long, to carry a table.

    Longer is harmless: offsets past the table read as "not covered".
    """
    n = 1
    while True:
        body = "".join("    x%d = 0\n" % i for i in range(n))
        ns = compile("def h():\n" + body, "<host>", "exec")
        co = [c for c in ns.co_consts if hasattr(c, "co_code")][0]
        if code_len(co) >= units:
            return co
        n += 1


def svarint(v):
    u = (-v << 1) | 1 if v < 0 else v << 1
    return varint(u)


def varint(u):
    out = []
    while u >= 64:
        out.append(64 | (u & 63))
        u >>= 6
    out.append(u)
    return out


def entry311(kind, units, line_delta=0, extra=()):
    """One 3.11+ location entry covering `units` code units."""
    out = [0x80 | (kind << 3) | (units - 1)]
    if kind in (13, 14):
        out += svarint(line_delta)
    return out + list(extra)


def synthetic_tables():
    """Hand-made, well-formed tables the compiler rarely or never emits.

    They are still judged by the interpreter: each is attached to a real code
    object and decoded by PyCode_Addr2Line and the Python API.
    """
    fmt = table_format()
    tabs = []
    if fmt == "lnotab":
        # Signed line deltas (3.6+), negative chains, (255, 0) chains and
        # zero address increments.
        tabs.append(("neg_deltas", [0, 3, 4, 0xff, 6, 0x80, 0, 0x80, 2, 0x7f,
                                    0, 0x7f, 0, 5, 255, 0, 255, 0, 10, 0xfe]))
        tabs.append(("odd_len", [2, 1, 4, 2, 6]))
    elif fmt == "310":
        # -128 = "no line" and leaves the running line alone; zero-length
        # entries carry line deltas only; 254-byte chains.  No zero-length
        # entry at the very end: 3.10's NextAddressRange would read past the
        # table (release builds skip its assert), so the interpreter cannot
        # be asked about that one; test_linetable.c covers it by hand.
        tabs.append(("no_line", [0, 127, 0, 127, 4, 3, 2, 0x80, 6, 0xff,
                                 0, 0x81, 0, 0x81, 2, 0x80, 254, 2, 254, 0,
                                 8, 0x81, 4, 0x80, 2, 1]))
    else:
        t = []
        t += entry311(13, 2, 5)             # no-column form, +5
        t += entry311(15, 1)                # no location
        t += entry311(13, 3, -3)            # no-column form, negative
        t += entry311(14, 1, 2100, varint(0) + varint(7) + varint(9))
        t += entry311(14, 8, -2050, varint(3) + varint(5000) + varint(70))
        for kind in range(10):              # every short form
            t += entry311(kind, 1 + kind % 4, 0, [kind * 5 & 0x7f])
        t += entry311(10, 2, 0, [1, 2])
        t += entry311(11, 1, 0, [3, 4])
        t += entry311(12, 4, 0, [5, 6])
        t += entry311(15, 8)
        t += entry311(13, 1, 0)
        t += entry311(14, 2, -40, varint(1) + varint(0) + varint(0))
        tabs.append(("all_kinds", t))
    out = []
    for name, tab in tabs:
        out.append((name, bytes(tab)))
    return out


def synthetic_units(fmt, tab):
    """Code length a table describes, in fixture offset units."""
    if fmt == "lnotab":
        return sum(tab[0::2]) + 2
    if fmt == "310":
        return sum(tab[0:len(tab) - len(tab) % 2:2])
    units, i = 0, 0
    while i < len(tab):
        units += (tab[i] & 7) + 1
        i += 1
        while i < len(tab) and not tab[i] & 0x80:
            i += 1
    return units


def stats(fmt, tables):
    """What the compiled tables exercise, so coverage gaps are visible."""
    s = {}

    def bump(key):
        s[key] = s.get(key, 0) + 1

    for hexed in tables:
        tab = bytes.fromhex(hexed)
        if fmt in ("lnotab", "310"):
            for i in range(0, len(tab) - 1, 2):
                a, ld = tab[i], tab[i + 1]
                ld = ld - 256 if ld >= 128 else ld
                if fmt == "310" and ld == -128:
                    bump("no_line")
                elif ld < 0:
                    bump("neg_delta")
                if ld == 127:
                    bump("line_chain_up")
                if ld == (-127 if fmt == "310" else -128):
                    bump("line_chain_down")
                if a >= 254:
                    bump("addr_chain")
                if a == 0:
                    bump("zero_addr")
            continue
        i = 0
        while i < len(tab):
            kind = (tab[i] >> 3) & 15
            bump("kind%d" % kind)
            i += 1
            if kind not in (13, 14):
                while i < len(tab) and not tab[i] & 0x80:
                    i += 1
                continue
            for field in range(1 if kind == 13 else 4):
                n = 1
                while tab[i] & 64:
                    i += 1
                    n += 1
                i += 1
                if n > 1:
                    bump("%s_varint_%dB" % ("line" if field == 0 else
                                            "col" if field > 1 else
                                            "endline", n))
    return s


def dump():
    fn = addr2line()
    fmt = table_format()
    co = compile(build_sample(), "<linetable-sample>", "exec")
    tables = [describe(c, fn, STRIDE) for c in walk_code(co)]
    # Only the compiler's own output counts towards the coverage summary.
    st = stats(fmt, [t["table"] for t in tables])
    for name, tab in synthetic_tables():
        host = host_code(synthetic_units(fmt, tab))
        # firstlineno 1000 keeps the negative chains above line 0.
        fake = with_table(host, tab, 1000)
        tables.append(describe(fake, fn, 1, "synthetic:" + name))
    out = {"version": sys.version.split()[0], "format": fmt,
           "tables": tables,
           "stats": st}
    json.dump(out, sys.stdout, sort_keys=True)


# ---------------------------------------------------------------------------
# Driver: collects every interpreter's dump and writes the header.
# ---------------------------------------------------------------------------

FMT_ENUM = {"lnotab": "LT_FMT_LNOTAB", "310": "LT_FMT_310",
            "311": "LT_FMT_311"}


def c_bytes(name, hexed):
    data = bytes.fromhex(hexed)
    rows = []
    for i in range(0, len(data), 12):
        rows.append("\t" + " ".join("0x%02x," % b for b in data[i:i + 12]))
    return "static const uint8_t %s[] = {\n%s\n};\n" % (name, "\n".join(rows))


def c_string(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


def write_header(dumps, path):
    out = []
    out.append("/* Generated by tests/unit/gen-linetable-fixtures.py: do not edit."
               "\n *\n * Line tables of real code objects and the line each"
               " interpreter reports\n * for chosen offsets (PyCode_Addr2Line"
               " and the Python API agreed).\n * Offsets are bytes for"
               " LT_FMT_LNOTAB and LT_FMT_310, code units for\n *"
               " LT_FMT_311.\n *\n")
    out.append(" * What the compiler's own tables exercise, per version:\n")
    for d in dumps:
        st = ", ".join("%s=%d" % kv for kv in sorted(d["stats"].items()))
        text = textwrap.wrap("%s: %s" % (d["version"], st), 72,
                             subsequent_indent="    ")
        out.extend(" * %s\n" % line for line in text)
    out.append(" */\n#ifndef LINETABLE_FIXTURES_H\n#define"
               " LINETABLE_FIXTURES_H\n\n#include <stddef.h>\n"
               "#include <stdint.h>\n\n")
    out.append("enum lt_format { LT_FMT_LNOTAB, LT_FMT_310, LT_FMT_311 };\n\n"
               "struct lt_table {\n\tconst char *version;\n"
               "\tenum lt_format format;\n\tconst char *name;\n"
               "\tconst uint8_t *tab;\t/* NULL when len == 0 */\n"
               "\tsize_t len;\n\tint firstlineno;\n};\n\n"
               "struct lt_case {\n\tuint16_t table;\t\t/* index in"
               " lt_tables */\n\tuint32_t offset;\n\tint32_t line;\t\t/*"
               " what the interpreter said */\n};\n\n")
    tables, cases = [], []
    for d in dumps:
        for t in d["tables"]:
            idx = len(tables)
            sym = "NULL"
            if t["table"]:
                sym = "lt_tab_%d" % idx
                out.append(c_bytes(sym, t["table"]))
            tables.append("\t{ %s, %s, %s, %s, %d, %d },\n" %
                          (c_string(d["version"]), FMT_ENUM[d["format"]],
                           c_string(t["name"]), sym, len(t["table"]) // 2,
                           t["firstlineno"]))
            for off, line in t["cases"]:
                cases.append("\t{ %d, %d, %d },\n" % (idx, off, line))
    out.append("\nstatic const struct lt_table lt_tables[] = {\n")
    out.extend(tables)
    out.append("};\n\nstatic const struct lt_case lt_cases[] = {\n")
    out.extend(cases)
    out.append("};\n\n#endif /* LINETABLE_FIXTURES_H */\n")
    with open(path, "w") as f:
        f.write("".join(out))


def main(argv):
    if argv[1:] == ["--dump"]:
        dump()
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "linetable_fixtures.h")
    args = argv[1:]
    if args[:1] == ["-o"]:
        path, args = args[1], args[2:]
    interps = args or [os.path.join(PYENV, v, "bin", "python3")
                       for v in DEFAULT_VERSIONS]
    dumps = []
    for interp in interps:
        # -I: no user site, no PYTHON* variables, so nothing local leaks in.
        raw = subprocess.check_output([interp, "-I", os.path.abspath(__file__),
                                       "--dump"])
        d = json.loads(raw.decode())
        ncase = sum(len(t["cases"]) for t in d["tables"])
        sys.stderr.write("%s: %d tables, %d cases, %s\n" %
                         (d["version"], len(d["tables"]), ncase,
                          sorted(d["stats"].items())))
        dumps.append(d)
    write_header(dumps, path)
    sys.stderr.write("wrote %s (%d bytes)\n" % (path, os.path.getsize(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
