#!/usr/bin/env python3
"""Names of a captured stack through the pipeline (tests/bpfwalk).

A recording (src/record/record.h) reduced to one sample and the reads the
pipeline makes to name its Python frames, so that `pyperf-pprof --replay`
names them offline, is made from the live profiler's recording at capture
time; in `make check` the record the BPF walk made in user space takes the
place of the live one, and the replay must name the same frames.

  recnames.py reduce LIVE.rec RECORD.bin OUT.rec
      OUT.rec: LIVE.rec's session (META, with stack_bytes 0: Python frames
      only), targets, memory reads, maps and final TICK, with one SAMPLE:
      RECORD.bin (a live record) without its native pcs. No ELF files.
  recnames.py splice NAMES.rec RECORD.bin OUT.rec
      NAMES.rec with its SAMPLE replaced by RECORD.bin (without its native
      pcs), keeping the replaced record's time, period and command name.
  recnames.py frames FOLDED
      The Python frames (root first, one a line) of the folded stack with
      the most of them.
  recnames.py layout
      The record header's sizes and offsets this script assumes, as
      test_bpfwalk --layout prints them from bpf/pyperf.h.
"""
import re
import struct
import sys
import zlib

MAGIC = b"PYPFREC1"
META, TARGET, FORGET, SAMPLE, MEM, MAPS, FILE, PATH, WRITE, END, MEMFAIL, TICK = range(1, 13)
STORED = 1

# struct py_sample_hdr (bpf/pyperf.h): offsets in the full and compact headers
HDR_FULL, HDR_COMPACT, REGS_OFF, REGS_LEN = 200, 64, 56, 17 * 8
F_NATIVE_PCS, F_COMPACT, F_COMPACT_REGS, F_ANCHORED = 1 << 11, 1 << 13, 1 << 14, 1 << 17


def load(path):
    data = open(path, "rb").read()
    if data[:8] != MAGIC:
        sys.exit("recnames: %s is not a recording" % path)
    flags = struct.unpack_from("<I", data, 12)[0]
    body = data[16:] if flags & STORED else zlib.decompress(data[16:])
    recs, pos = [], 0
    while pos + 5 <= len(body):
        t, n = body[pos], struct.unpack_from("<I", body, pos + 1)[0]
        recs.append((t, body[pos + 5:pos + 5 + n]))
        pos += 5 + n
    return data[:8] + struct.pack("<II", struct.unpack_from("<I", data, 8)[0], 0), recs


def save(path, head, recs):
    body = b"".join(bytes([t]) + struct.pack("<I", len(p)) + p for t, p in recs)
    with open(path, "wb") as f:
        f.write(head + zlib.compress(body, 9))


def layout(rec):
    """(header length, frame size, offset of flags, native_n) of a record."""
    flags = struct.unpack_from("<I", rec, 32)[0]
    compact = flags & F_COMPACT
    hlen = HDR_COMPACT if compact and not flags & F_COMPACT_REGS else HDR_FULL
    fsize = 16 if compact else 32
    return hlen, fsize, flags


def python_only(rec):
    """The record without native pcs (what a --no-native session sends)."""
    hlen, fsize, flags = layout(rec)
    nframes = struct.unpack_from("<H", rec, 36)[0]
    native_at = hlen - 4 if hlen == HDR_COMPACT else HDR_FULL - 4
    out = bytearray(rec[:hlen + nframes * fsize])
    struct.pack_into("<I", out, 32, flags & ~(F_NATIVE_PCS | F_ANCHORED))
    struct.pack_into("<H", out, native_at, 0)      # native_n
    out[native_at + 2] = 0                         # native_end
    return bytes(out)


def reduce(live, record, out):
    head, recs = load(live)
    want = open(record, "rb").read()
    kept, last_tick, found = [], None, False
    for t, p in recs:
        if t == META:
            # stack_bytes (after u64 period, u64 frequency) 0: Python only
            p = p[:16] + struct.pack("<I", 0) + p[20:]
        if t == SAMPLE:
            if p != want or found:
                continue
            p, found = python_only(p), True
        if t == TICK:
            last_tick = p
            continue
        if t in (FILE, WRITE, END):
            continue
        kept.append((t, p))
    if not found or last_tick is None:
        sys.exit("recnames: the record is not in %s" % live)
    kept.append((TICK, last_tick))
    kept.append((END, struct.pack("<Q", 1)))
    save(out, head, kept)


def splice(names, record, out):
    head, recs = load(names)
    got = bytearray(python_only(open(record, "rb").read()))
    done = []
    for t, p in recs:
        if t == SAMPLE:
            got[8:24] = p[8:24]        # time_ns, period: the live record's
            got[40:56] = p[40:56]      # comm
            p = bytes(got)
        done.append((t, p))
    save(out, head, done)


FRAME = re.compile(r" \(.*:\d+\)$")


def frames(folded):
    best = []
    for line in open(folded):
        stack = line.rsplit(" ", 1)[0].split(";")
        py = [f for f in stack if FRAME.search(f)]
        if len(py) > len(best):
            best = py
    print("\n".join(best))


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "layout":
        # what test_bpfwalk --layout must print for the offsets above
        print(HDR_FULL, HDR_COMPACT, REGS_OFF, 32, HDR_FULL - 4)
    elif len(sys.argv) == 5 and sys.argv[1] == "reduce":
        reduce(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "splice":
        splice(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "frames":
        frames(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
