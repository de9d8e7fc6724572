"""Checks the rules every pprof back end relies on, decoding the gzip
protobuf with its own minimal wire-format decoder (no protobuf library and
none of our C code), so a bug shared by our writer and our reader cannot
hide.

  check_backend_rules.py [--expect-pid PID ...] PROFILE.pb.gz
  check_backend_rules.py --self-test [PROFILE.pb.gz]

The rules: the file is one complete gzip stream of a well-formed Profile
(no unknown fields, no wrong wire types); string_table[0] is ""; every
string is valid UTF-8 and interned once; every string index is in range;
mapping, location and function ids are 1..N in array order; every location
has a line and every line a known function; every sample has one value per
sample type, known location ids and non-negative values; sample type names
have no '-'; every label has a key and either a string or a number, never
both, and one key is always the same kind; time_nanos is within a day of
now, duration_nanos > 0, period_type is set and names a sample type,
period > 0; default_sample_type, when set, names a sample type.

--self-test proves the checker can fail: it encodes a small valid profile,
checks it passes, then breaks it one rule at a time and checks each break
is reported; with a PROFILE it also truncates that file's protobuf inside a
field and its gzip stream, and checks both are rejected.
"""
import argparse
import sys
import time
import zlib


class DecodeError(Exception):
    pass


# ---- wire format --------------------------------------------------------

def read_varint(buf, pos):
    result = shift = 0
    for i in range(10):
        if pos >= len(buf):
            raise DecodeError("truncated varint at byte %d" % pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
    raise DecodeError("varint longer than 10 bytes at byte %d" % pos)


def parse_fields(buf):
    """bytes -> [(field, wire_type, value)]; value is an int or bytes."""
    fields, pos = [], 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        field, wt = key >> 3, key & 7
        if field == 0:
            raise DecodeError("field number 0 at byte %d" % pos)
        if wt == 0:
            value, pos = read_varint(buf, pos)
        elif wt == 1 or wt == 5:
            n = 8 if wt == 1 else 4
            if pos + n > len(buf):
                raise DecodeError("truncated fixed%d field %d" % (n * 8, field))
            value, pos = int.from_bytes(buf[pos:pos + n], "little"), pos + n
        elif wt == 2:
            n, pos = read_varint(buf, pos)
            if pos + n > len(buf):
                raise DecodeError("field %d: length %d runs past the end (%d bytes left)"
                                  % (field, n, len(buf) - pos))
            value, pos = bytes(buf[pos:pos + n]), pos + n
        else:
            raise DecodeError("field %d: unsupported wire type %d" % (field, wt))
        fields.append((field, wt, value))
    return fields


def write_varint(v):
    v &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_fields(fields):
    out = bytearray()
    for field, wt, value in fields:
        out += write_varint(field << 3 | wt)
        if wt == 0:
            out += write_varint(value)
        elif wt == 2:
            out += write_varint(len(value)) + value
        else:
            out += value.to_bytes(8 if wt == 1 else 4, "little")
    return bytes(out)


# ---- schema (proto/profile.proto) ---------------------------------------

SCHEMA = {
    "Profile": {1: ("sample_type", "ValueType", True), 2: ("sample", "Sample", True),
                3: ("mapping", "Mapping", True), 4: ("location", "Location", True),
                5: ("function", "Function", True), 6: ("string_table", "bytes", True),
                7: ("drop_frames", "int64", False), 8: ("keep_frames", "int64", False),
                9: ("time_nanos", "int64", False), 10: ("duration_nanos", "int64", False),
                11: ("period_type", "ValueType", False), 12: ("period", "int64", False),
                13: ("comment", "int64", True), 14: ("default_sample_type", "int64", False),
                15: ("doc_url", "int64", False)},
    "ValueType": {1: ("type", "int64", False), 2: ("unit", "int64", False)},
    "Sample": {1: ("location_id", "uint64", True), 2: ("value", "int64", True),
               3: ("label", "Label", True)},
    "Label": {1: ("key", "int64", False), 2: ("str", "int64", False),
              3: ("num", "int64", False), 4: ("num_unit", "int64", False)},
    "Mapping": {1: ("id", "uint64", False), 2: ("memory_start", "uint64", False),
                3: ("memory_limit", "uint64", False), 4: ("file_offset", "uint64", False),
                5: ("filename", "int64", False), 6: ("build_id", "int64", False),
                7: ("has_functions", "bool", False), 8: ("has_filenames", "bool", False),
                9: ("has_line_numbers", "bool", False), 10: ("has_inline_frames", "bool", False)},
    "Location": {1: ("id", "uint64", False), 2: ("mapping_id", "uint64", False),
                 3: ("address", "uint64", False), 4: ("line", "Line", True),
                 5: ("is_folded", "bool", False)},
    "Line": {1: ("function_id", "uint64", False), 2: ("line", "int64", False),
             3: ("column", "int64", False)},
    "Function": {1: ("id", "uint64", False), 2: ("name", "int64", False),
                 3: ("system_name", "int64", False), 4: ("filename", "int64", False),
                 5: ("start_line", "int64", False)},
}
SCALARS = ("int64", "uint64", "bool")


def scalar(kind, v):
    return v - (1 << 64) if kind == "int64" and v >= 1 << 63 else v


def decode(buf, msg="Profile"):
    """Typed decode: a dict of the fields present (repeated ones always, as
    lists); '_present' is the set of singular fields seen on the wire."""
    schema = SCHEMA[msg]
    out = {"_present": set()}
    for name, kind, rep in schema.values():
        if rep:
            out[name] = []
    for field, wt, value in parse_fields(buf):
        if field not in schema:
            raise DecodeError("%s: unknown field %d" % (msg, field))
        name, kind, rep = schema[field]
        if kind in SCALARS:
            if wt == 2 and rep:         # packed
                vals, pos = [], 0
                while pos < len(value):
                    v, pos = read_varint(value, pos)
                    vals.append(scalar(kind, v))
                out[name].extend(vals)
                continue
            if wt != 0:
                raise DecodeError("%s.%s: wire type %d for a varint field" % (msg, name, wt))
            value = scalar(kind, value)
        else:
            if wt != 2:
                raise DecodeError("%s.%s: wire type %d for a length-delimited field" % (msg, name, wt))
            if kind != "bytes":
                value = decode(value, kind)
        if rep:
            out[name].append(value)
        else:
            if name in out["_present"]:
                raise DecodeError("%s.%s: singular field repeated on the wire" % (msg, name))
            out["_present"].add(name)
            out[name] = value
    for name, kind, rep in schema.values():
        if not rep and name not in out:
            out[name] = {"_present": set()} if kind in SCHEMA else 0
            if kind in SCHEMA:
                for n2, k2, r2 in SCHEMA[kind].values():
                    out[name][n2] = [] if r2 else 0
    return out


def load(path):
    raw = open(path, "rb").read()
    if raw[:2] != b"\x1f\x8b":
        raise DecodeError("not a gzip file (magic %r)" % raw[:2])
    d = zlib.decompressobj(wbits=31)
    try:
        data = d.decompress(raw) + d.flush()
    except zlib.error as e:
        raise DecodeError("gzip: %s" % e)
    if not d.eof:
        raise DecodeError("gzip stream truncated")
    if d.unused_data:
        raise DecodeError("%d bytes after the gzip stream" % len(d.unused_data))
    return data


# ---- rules --------------------------------------------------------------

def check(p, now_ns=None, expect_pids=()):
    errs = []
    err = errs.append
    now_ns = now_ns if now_ns is not None else time.time_ns()
    st = p["string_table"]
    strings = []
    if not st or st[0] != b"":
        err("string_table[0] is %r, not \"\"" % (st[0] if st else None))
    for i, s in enumerate(st):
        try:
            strings.append(s.decode("utf-8"))
        except UnicodeDecodeError as e:
            err("string_table[%d] %r is not valid UTF-8: %s" % (i, s, e))
            strings.append(None)
    seen = {}
    for i, s in enumerate(st):
        if s in seen:
            err("string_table[%d] %r repeats string_table[%d]" % (i, s, seen[s]))
        seen.setdefault(s, i)

    def sidx(where, i):
        if not 0 <= i < len(st):
            err("%s: string index %d out of range (table has %d)" % (where, i, len(st)))
            return None
        return strings[i]

    def ids(kind, items):
        for n, it in enumerate(items):
            if it["id"] != n + 1:
                err("%s[%d] has id %d, expected %d (ids are 1..N in order)" % (kind, n, it["id"], n + 1))
        return set(range(1, len(items) + 1))

    types = []
    for i, vt in enumerate(p["sample_type"]):
        t, u = sidx("sample_type[%d].type" % i, vt["type"]), sidx("sample_type[%d].unit" % i, vt["unit"])
        types.append((t, u))
        if not t or not u:
            err("sample_type[%d] has an empty type or unit" % i)
        elif "-" in t:
            err("sample type name %r contains '-'" % t)
    if not types:
        err("no sample_type")
    pt = p["period_type"]
    if "period_type" not in p["_present"] or not pt["type"] or not pt["unit"]:
        err("period_type is not set")
    else:
        ptn = (sidx("period_type.type", pt["type"]), sidx("period_type.unit", pt["unit"]))
        if ptn not in types:
            err("period_type %s/%s is none of the sample types %s" % (ptn + (types,)))
    if p["period"] <= 0:
        err("period %d is not positive" % p["period"])
    if p["default_sample_type"]:
        dst = sidx("default_sample_type", p["default_sample_type"])
        if dst not in [t for t, _ in types]:
            err("default_sample_type %r names no sample type" % dst)
    if abs(p["time_nanos"] - now_ns) > 86400 * 10**9:
        err("time_nanos %d is not within a day of now (%d)" % (p["time_nanos"], now_ns))
    if not 0 < p["duration_nanos"] < 86400 * 10**9:
        err("duration_nanos %d is not in (0, 1 day)" % p["duration_nanos"])
    for f in ("drop_frames", "keep_frames", "doc_url"):
        sidx(f, p[f])
    for i, c in enumerate(p["comment"]):
        sidx("comment[%d]" % i, c)

    mapping_ids = ids("mapping", p["mapping"])
    for i, m in enumerate(p["mapping"]):
        sidx("mapping[%d].filename" % i, m["filename"])
        sidx("mapping[%d].build_id" % i, m["build_id"])
        if m["memory_limit"] < m["memory_start"]:
            err("mapping[%d]: memory_limit below memory_start" % i)
    function_ids = ids("function", p["function"])
    for i, f in enumerate(p["function"]):
        if not sidx("function[%d].name" % i, f["name"]):
            err("function[%d] has an empty name" % i)
        sidx("function[%d].system_name" % i, f["system_name"])
        sidx("function[%d].filename" % i, f["filename"])
    location_ids = ids("location", p["location"])
    for i, loc in enumerate(p["location"]):
        if loc["mapping_id"] and loc["mapping_id"] not in mapping_ids:
            err("location[%d]: unknown mapping_id %d" % (i, loc["mapping_id"]))
        if not loc["line"]:
            err("location[%d] (id %d) has no line" % (i, loc["id"]))
        for j, ln in enumerate(loc["line"]):
            if ln["function_id"] not in function_ids:
                err("location[%d].line[%d]: unknown function_id %d" % (i, j, ln["function_id"]))
            if ln["line"] < 0:
                err("location[%d].line[%d]: negative line %d" % (i, j, ln["line"]))

    if not p["sample"]:
        err("no samples")
    label_kind = {}
    pids = set()
    for i, s in enumerate(p["sample"]):
        if len(s["value"]) != len(types):
            err("sample[%d] has %d values for %d sample types" % (i, len(s["value"]), len(types)))
        if any(v < 0 for v in s["value"]):
            err("sample[%d] has a negative value %s" % (i, s["value"]))
        if not s["location_id"]:
            err("sample[%d] has no location" % i)
        for lid in s["location_id"]:
            if lid not in location_ids:
                err("sample[%d]: unknown location_id %d" % (i, lid))
        keys = set()
        for j, lab in enumerate(s["label"]):
            key = sidx("sample[%d].label[%d].key" % (i, j), lab["key"])
            if not key:
                err("sample[%d].label[%d] has no key" % (i, j))
            has_str, has_num = lab["str"] != 0, "num" in lab["_present"]
            if has_str == has_num:
                err("sample[%d].label %r has %s" % (i, key, "both str and num" if has_str else "neither str nor num"))
            if lab["num_unit"] and not has_num:
                err("sample[%d].label %r has num_unit without num" % (i, key))
            sval = sidx("sample[%d].label[%d].str" % (i, j), lab["str"])
            sidx("sample[%d].label[%d].num_unit" % (i, j), lab["num_unit"])
            kind = "str" if has_str else "num"
            if label_kind.setdefault(key, kind) != kind:
                err("label %r is sometimes a string, sometimes a number" % key)
            if key in keys:
                err("sample[%d] has label %r twice" % (i, key))
            keys.add(key)
            if key == "pid" and has_num:
                pids.add(lab["num"])
            elif key == "pid":
                pids.add(sval)
    if expect_pids:
        if label_kind.get("pid") != "num":
            err("pid label is %s, expected numeric" % label_kind.get("pid", "absent"))
        if pids != set(expect_pids):
            err("pid labels %s, expected %s" % (sorted(pids, key=str), sorted(expect_pids)))
    return errs


def summary(p):
    st = p["string_table"]
    s = lambda i: st[i].decode("utf-8", "replace") if 0 <= i < len(st) else "?"
    return ("%d strings, %d sample types (%s), %d samples, %d mappings, %d locations, "
            "%d functions, labels %s, period %d %s/%s, duration %.3f s"
            % (len(st), len(p["sample_type"]),
               ", ".join("%s/%s" % (s(t["type"]), s(t["unit"])) for t in p["sample_type"]),
               len(p["sample"]), len(p["mapping"]), len(p["location"]), len(p["function"]),
               sorted(set(s(l["key"]) + ("#" if "num" in l["_present"] else "$")
                          for x in p["sample"] for l in x["label"])),
               p["period"], s(p["period_type"]["type"]), s(p["period_type"]["unit"]),
               p["duration_nanos"] / 1e9))


# ---- self-test ----------------------------------------------------------

def vt(t, u):
    return encode_fields([(1, 0, t), (2, 0, u)])


def synthetic(now_ns, **breaks):
    """A small valid profile as wire bytes; each keyword breaks one rule."""
    strings = ["", "samples", "count", "cpu", "nanoseconds", "pid", "tid", "thread_name",
               "python3.11", "leaf", "main", "w.py", "/usr/bin/python3.11", "comment"]
    if "string0" in breaks:
        strings[0] = "x"
    strings = [s.encode() for s in strings]
    if "utf8" in breaks:
        strings.append(b"caf\xe9")     # Latin-1, not UTF-8
    if "dup_string" in breaks:
        strings.append(b"leaf")
    if "dash" in breaks:
        strings.append(b"cpu-time")
    S = lambda name: strings.index(name.encode())
    f = []
    f.append((1, 2, vt(S("samples"), S("count"))))
    f.append((1, 2, vt(S("cpu-time") if "dash" in breaks else S("cpu"), S("nanoseconds"))))
    loc_ids = [1, 3] if "loc_ids" in breaks else [1, 2]
    for n, (locs, vals) in enumerate((([1, 2], [3, 3000000]), ([2], [1, 1000000]))):
        if "short_values" in breaks and n == 1:
            vals = vals[:1]
        if "bad_loc_ref" in breaks and n == 1:
            locs = [7]
        packed_locs = b"".join(write_varint(x) for x in locs)
        labels = [encode_fields([(1, 0, S("pid")), (3, 0, 4242)]),
                  encode_fields([(1, 0, S("tid")), (3, 0, 4243 + n)]),
                  encode_fields([(1, 0, S("thread_name")), (2, 0, S("python3.11"))]
                                + ([(3, 0, 5)] if "str_and_num" in breaks and n == 0 else []))]
        if "pid_as_string" in breaks:
            labels[0] = encode_fields([(1, 0, S("pid")), (2, 0, S("python3.11"))])
        sample = [(1, 2, packed_locs)] if n == 0 else [(1, 0, x) for x in locs]  # packed and not
        sample += [(2, 2, b"".join(write_varint(v) for v in vals))]
        sample += [(3, 2, l) for l in labels]
        f.append((2, 2, encode_fields(sample)))
    f.append((3, 2, encode_fields([(1, 0, 1), (5, 0, S("/usr/bin/python3.11")), (7, 0, 1)])))
    for n, (lid, fid, line) in enumerate(((loc_ids[0], 1, 11), (loc_ids[1], 2, 30))):
        if "bad_func_ref" in breaks and n == 1:
            fid = 9
        lines = [] if "no_line" in breaks and n == 0 else [(4, 2, encode_fields([(1, 0, fid), (2, 0, line)]))]
        f.append((4, 2, encode_fields([(1, 0, lid), (2, 0, 1)] + lines)))
    for fid, name in ((1, "leaf"), (2, "main")):
        if "func_ids" in breaks:
            fid = 3 - fid
        name_idx = 99 if "str_range" in breaks and name == "main" else S(name)
        f.append((5, 2, encode_fields([(1, 0, fid), (2, 0, name_idx), (3, 0, name_idx),
                                       (4, 0, S("w.py")), (5, 0, 8)])))
    f += [(6, 2, s) for s in strings]
    f.append((9, 0, 0 if "time" in breaks else now_ns))
    f.append((10, 0, 0 if "duration" in breaks else 3 * 10**9))
    if "no_period_type" not in breaks:
        f.append((11, 2, vt(S("cpu"), S("nanoseconds"))))
    f.append((12, 0, 1000000))
    f.append((13, 0, S("comment")))
    if "unknown_field" in breaks:
        f.append((21, 0, 1))
    return encode_fields(f)


BREAKS = {
    "string0": 'string_table[0] is',
    "utf8": "not valid UTF-8",
    "dup_string": "repeats string_table",
    "str_range": "out of range",
    "loc_ids": "ids are 1..N",
    "func_ids": "ids are 1..N",
    "no_line": "has no line",
    "bad_func_ref": "unknown function_id",
    "bad_loc_ref": "unknown location_id",
    "short_values": "1 values for 2 sample types",
    "dash": "contains '-'",
    "str_and_num": "both str and num",
    "pid_as_string": "pid label is str",
    "time": "within a day",
    "duration": "duration_nanos 0",
    "no_period_type": "period_type is not set",
    "unknown_field": "unknown field 21",
}


def self_test(real_profile=None):
    failures = []
    now = time.time_ns()

    def run(buf):
        try:
            return check(decode(buf), now, expect_pids=[4242])
        except DecodeError as e:
            return ["decode error: %s" % e]

    errs = run(synthetic(now))
    if errs:
        failures.append("the valid synthetic profile fails: %s" % errs)
    for brk, want in sorted(BREAKS.items()):
        errs = run(synthetic(now, **{brk: True}))
        if not any(want in e for e in errs):
            failures.append("break %r not reported (wanted %r, got %s)" % (brk, want, errs))
        else:
            print("self-test: break %-15s -> %s" % (brk, next(e for e in errs if want in e)))
    good = synthetic(now)
    for cut in (len(good) // 2, len(good) - 3):
        try:
            decode(good[:cut])
            failures.append("synthetic profile cut to %d bytes decoded without error" % cut)
        except DecodeError as e:
            print("self-test: cut at %d/%d    -> %s" % (cut, len(good), e))
    if real_profile:
        data = load(real_profile)
        top = parse_fields(data)
        pos = 0
        for field, wt, value in top:       # cut inside the first sample
            keylen = len(write_varint(field << 3 | wt))
            if field == 2:
                cut = pos + keylen + len(write_varint(len(value))) + len(value) // 2
                break
            pos += len(encode_fields([(field, wt, value)]))
        else:
            failures.append("%s has no sample to cut" % real_profile)
            cut = len(data) // 2
        try:
            decode(data[:cut])
            failures.append("%s cut to %d bytes decoded without error" % (real_profile, cut))
        except DecodeError as e:
            print("self-test: %s cut at %d/%d -> %s" % (real_profile, cut, len(data), e))
        raw = open(real_profile, "rb").read()
        tmp = real_profile + ".truncated.gz"
        with open(tmp, "wb") as fp:
            fp.write(raw[:len(raw) - 10])
        try:
            load(tmp)
            failures.append("gzip file cut by 10 bytes loaded without error")
        except DecodeError as e:
            print("self-test: gzip cut by 10 bytes -> %s" % e)
    for f in failures:
        print("self-test error: " + f)
    return not failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--expect-pid", type=int, action="append", default=[])
    ap.add_argument("profile", nargs="?")
    args = ap.parse_args()
    if args.self_test:
        try:
            ok = self_test(args.profile)
        except (DecodeError, OSError) as e:
            print("self-test error: %s: %s" % (args.profile, e))
            ok = False
        print("self-test %s" % ("passed" if ok else "FAILED"))
        sys.exit(0 if ok else 1)
    if not args.profile:
        ap.error("a profile is required")
    try:
        p = decode(load(args.profile))
    except (DecodeError, OSError) as e:
        print("error: %s: %s" % (args.profile, e))
        sys.exit(1)
    print("%s: %s" % (args.profile, summary(p)))
    errs = check(p, expect_pids=args.expect_pid)
    for e in errs:
        print("error: " + e)
    print("%d back-end rule violations" % len(errs) if errs else "all back-end rules hold")
    sys.exit(1 if errs else 0)


if __name__ == "__main__":
    main()
