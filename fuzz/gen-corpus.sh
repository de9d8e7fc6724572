#!/bin/sh
# shellcheck disable=SC2086 # $small is a list of options
# fuzz/gen-corpus.sh [DUMP_RUNTIME]: regenerates the seed corpora in
# fuzz/corpus/<target>/ (they are committed; run this only to refresh
# them). Needs gcc, objcopy, python3 and, for the real _Py_DebugOffsets
# seed, a built tests/unit/dump_runtime (the argument, default
# ./tests/unit/dump_runtime) and /root/.pyenv/versions/3.13.0 (run as root:
# dump_runtime reads the interpreter's memory).
#
#   elf           tiny ELF files built here: static and shared, with and
#                 without .symtab, build-id, .gnu_debuglink, a compressed
#                 section (each < 16 KB)
#   maps          /proc/PID/maps of this shell's python3 and of a sleep,
#                 plus edge cases (deleted files, no path, long path)
#   linetable     tables of tests/unit/linetable_fixtures.h in the fuzzer's
#                 input format (decoder byte, firstlineno, count, offset)
#   debugoffsets  a 3.13.0 _PyRuntime head (dump_runtime --raw) and
#                 synthetic 3.14 and 3.15 tables
#   merge         a few native/Python frame mixes
#   debug_frame   .debug_frame sections of the elf seeds' program built
#                 without .eh_frame by gcc and clang (CIE versions 1 and 4)
#   profile       a few operation programs (types, functions, samples)
#   unwind_table  .eh_frame and .debug_frame of tests/unit/unwind_table_cfi.c
#                 (every rule kind) in the fuzzer's
#                 input format (mode byte, section address), and one ELF
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
dump=${1:-$top/tests/unit/dump_runtime}
c=$here/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Only the directories made here: other targets keep their own seeds.
for t in elf maps linetable debugoffsets merge profile debug_frame unwind_table; do
	rm -rf "${c:?}/$t"
	mkdir -p "$c/$t"
done

# ---- elf ----------------------------------------------------------------
cat >"$tmp/t.c" <<'EOF'
static int counter;
const unsigned long Py_Version = 0x030b07f0;
__attribute__((noinline)) int helper(int x) { return x * 3 + counter++; }
int entry(int x) { return helper(x) + 1; }
void _start(void) { for (;;) entry(1); }
EOF
small="-Os -nostdlib -fno-asynchronous-unwind-tables -Wl,-z,noseparate-code -Wl,-z,norelro"
gcc $small -static -Wl,--build-id "$tmp/t.c" -o "$c/elf/static-buildid"
gcc $small -static -Wl,--build-id=none "$tmp/t.c" -o "$c/elf/static-nobuildid"
gcc $small -fPIC -shared -Wl,--build-id "$tmp/t.c" -o "$c/elf/shared"
gcc $small -fasynchronous-unwind-tables -static -Wl,--build-id "$tmp/t.c" -o "$c/elf/static-ehframe"
# Stripped with a debuglink, and the debug file it names (compressed DWARF).
gcc $small -g -static -Wl,--build-id "$tmp/t.c" -o "$tmp/dbg-full"
objcopy --only-keep-debug --compress-debug-sections=zlib-gabi "$tmp/dbg-full" "$c/elf/debugfile-zlib"
objcopy --strip-all "$tmp/dbg-full" "$tmp/stripped"
(cd "$tmp" && cp "$c/elf/debugfile-zlib" t.debug && objcopy --add-gnu-debuglink=t.debug stripped "$c/elf/stripped-debuglink")
for f in "$c"/elf/*; do
	size=$(wc -c <"$f")
	[ "$size" -le 16384 ] || { echo "gen-corpus: $f is $size bytes" >&2; exit 1; }
done

# ---- debug_frame --------------------------------------------------------
# The elf seeds' program without .eh_frame: gcc writes version 1 CIEs,
# clang -gdwarf-5 version 4 ones (address and segment sizes).
gcc $small -g -static -Wl,--build-id "$tmp/t.c" -o "$tmp/df-gcc"
objcopy --dump-section .debug_frame="$c/debug_frame/gcc" "$tmp/df-gcc"
if command -v clang >/dev/null 2>&1; then
	clang $small -fno-unwind-tables -g -gdwarf-5 -static -fuse-ld=bfd -Wl,--build-id \
		"$tmp/t.c" -o "$tmp/df-clang"
	objcopy --dump-section .debug_frame="$c/debug_frame/clang-dwarf5" "$tmp/df-clang"
fi

# ---- maps ---------------------------------------------------------------
python3 -c 'import sys; sys.stdout.write(open("/proc/self/maps").read())' >"$c/maps/python3"
sleep 5 &
cat "/proc/$!/maps" >"$c/maps/sleep"
kill $! 2>/dev/null || :
cat >"$c/maps/edge" <<'EOF'
55d0c0a00000-55d0c0a01000 r--p 00000000 fe:01 1234567                    /usr/bin/python3.11
55d0c0a01000-55d0c0c00000 r-xp 00001000 fe:01 1234567                    /usr/bin/python3.11
7f0000000000-7f0000021000 rw-p 00000000 00:00 0 
7f0000100000-7f0000101000 r-xp 00000000 08:02 42                         /tmp/x.so (deleted)
7f0000200000-7f0000201000 rw-s 00000000 00:05 9                          /memfd:jit (deleted)
7ffd5a1b0000-7ffd5a1d1000 rw-p 00000000 00:00 0                          [stack]
7ffd5a1fc000-7ffd5a1fe000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
garbage line
7f00-7e00 r--p 0 0:0 0 /backwards
EOF
python3 -c '
import sys
sys.stdout.write("7f1000000000-7f1000001000 r--p 00000000 fe:01 77 /" + "d/" * 2100 + "long.so\n")
sys.stdout.write("7f2000000000-7f2000001000 r--p 00000000 fe:01 78 /no/newline/at/end")
' >"$c/maps/long"

# ---- linetable ----------------------------------------------------------
cat >"$tmp/lt.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include "linetable_fixtures.h"
int main(int argc, char **argv)
{
	size_t n = sizeof(lt_tables) / sizeof(lt_tables[0]), taken = 0;
	const char *last = "";
	int lastfmt = -1;

	/* The first three tables of each version: small, and each format. */
	for (size_t i = 0; i < n; i++) {
		const struct lt_table *t = &lt_tables[i];
		static int per;
		char path[4096];
		unsigned char hdr[11];
		uint16_t extra = 300;
		uint32_t off = 7;
		FILE *f;

		if (strcmp(t->version, last) || (int)t->format != lastfmt)
			per = 0;
		last = t->version;
		lastfmt = t->format;
		if (per++ >= 3)
			continue;
		hdr[0] = (unsigned char)t->format;
		memcpy(hdr + 1, &t->firstlineno, 4);
		memcpy(hdr + 5, &extra, 2);
		memcpy(hdr + 7, &off, 4);
		snprintf(path, sizeof(path), "%s/%s-%zu", argv[1], t->version, i);
		f = fopen(path, "wb");
		if (!f)
			return 1;
		fwrite(hdr, 1, sizeof(hdr), f);
		if (t->len)
			fwrite(t->tab, 1, t->len, f);
		fclose(f);
		taken++;
	}
	fprintf(stderr, "linetable: %zu of %zu tables\n", taken, n);
	return 0;
}
EOF
gcc -I"$top/tests/unit" "$tmp/lt.c" -o "$tmp/lt"
"$tmp/lt" "$c/linetable"

# ---- debugoffsets -------------------------------------------------------
py313=/root/.pyenv/versions/3.13.0/bin/python3.13
if [ -x "$dump" ] && [ -x "$py313" ]; then
	"$py313" -c 'import time; time.sleep(30)' &
	pid=$!
	sleep 1
	"$dump" "$pid" --raw >"$c/debugoffsets/3.13.0-runtime" || echo "gen-corpus: dump_runtime failed" >&2
	kill "$pid" 2>/dev/null || :
	# The table proper (584 bytes): the fuzzer spends less time on the rest.
	head -c 584 "$c/debugoffsets/3.13.0-runtime" >"$c/debugoffsets/3.13.0-table"
else
	echo "gen-corpus: no $dump or $py313: no real 3.13 seed" >&2
fi
python3 - "$c/debugoffsets" <<'EOF'
import struct, sys
out = sys.argv[1]
# Section by section, (name, [field values]); "size" first where the
# section has one. Offsets are plausible (aligned, inside size), not real.
def table(version, ft, secs):
    vals = [struct.unpack("<Q", b"xdebugpy")[0], version, ft]
    for _, fields in secs:
        vals += fields
    return struct.pack("<%dQ" % len(vals), *vals)
s314 = [
    ("runtime_state", [1024, 8, 16]),
    ("interpreter_state", [8192, 8, 0, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112]),
    ("thread_state", [512, 0, 8, 16, 56, 152, 160, 176, 184]),
    ("interpreter_frame", [80, 8, 0, 56, 80, 74, 64, 72]),
    ("code_object", [208, 112, 120, 128, 136, 68, 48, 96, 104, 200, 160]),
    ("pyobject", [16, 8]),
    ("type_object", [416, 24, 88, 168]),
    ("tuple_object", [32, 24, 16]),
    ("list_object", [40, 24, 16]),
    ("set_object", [200, 24, 40, 32]),
    ("dict_object", [48, 32, 40]),
    ("float_object", [24, 16]),
    ("long_object", [32, 16, 24]),
    ("bytes_object", [40, 16, 32]),
    ("unicode_object", [80, 32, 16, 40]),
    ("gc", [368, 32]),
    ("gen_object", [80, 48, 72, 67]),
    ("llist_node", [0, 8]),
    ("debugger_support", [16, 24, 32, 40, 48, 512]),
]
open(out + "/3.14-synthetic", "wb").write(table(0x030e00f0, 0, s314))
open(out + "/3.15a1-synthetic", "wb").write(table(0x030f00a1, 0, s314))
open(out + "/3.14-freethreaded", "wb").write(table(0x030e00f0, 1, s314))
EOF

# ---- merge --------------------------------------------------------------
python3 - "$c/merge" <<'EOF'
import struct, sys
out = sys.argv[1]
def seed(name, native, python, limit):
    b = struct.pack("<HHH", len(native), len(python), limit)
    b += bytes(native) + bytes(python)
    open(out + "/" + name, "wb").write(b)
# leaf first: C frames, an eval loop, C called from Python, eval, main
seed("callback", [0, 0, 1, 0, 0, 1, 0, 0], [0, 1, 0, 1], 64)
seed("no-native", [], [0, 0, 1], 64)
seed("short-native", [0, 1], [1, 0, 1, 0, 1], 64)
seed("cut", [0, 1, 0, 1, 0, 1], [1, 1, 1], 4)
seed("deep", [1] * 120, [1, 0, 0] * 100, 1200)
EOF

# ---- unwind_table -------------------------------------------------------
gcc -O2 -c "$top/tests/unit/unwind_table_cfi.c" -o "$tmp/cfi-eh.o"
gcc -O2 -g -fno-asynchronous-unwind-tables -DUT_DEBUG_FRAME -c "$top/tests/unit/unwind_table_cfi.c" -o "$tmp/cfi-dbg.o"
objcopy --dump-section .eh_frame="$tmp/eh.bin" "$tmp/cfi-eh.o" /dev/null || : >"$tmp/eh.bin"
objcopy --dump-section .debug_frame="$tmp/dbg.bin" "$tmp/cfi-dbg.o" /dev/null || : >"$tmp/dbg.bin"
{ printf '\000\000\020\000\000\000\000\000\000'; cat "$tmp/eh.bin"; } >"$c/unwind_table/eh-kinds"
{ printf '\001\000\000\000\000\000\000\000\000'; cat "$tmp/dbg.bin"; } >"$c/unwind_table/debug-kinds"
{ printf '\003'; cat "$c/elf/shared"; } >"$c/unwind_table/elf-shared"

# ---- profile ------------------------------------------------------------
python3 - "$c/profile" <<'EOF'
import struct, sys
out = sys.argv[1]
def s(text):
    b = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    assert len(b) <= 24
    return bytes([len(b)]) + b
def u64(v): return struct.pack("<q", v) if v < 0 else struct.pack("<Q", v)
REUSE = lambda i: bytes([0xc0 + i])
NULL, EMPTY = b"\xff", b"\xfe"
def stype(t, u): return b"\x00" + s(t) + s(u)
def default(t): return b"\x01" + s(t)
def period(t, u, p): return b"\x02" + s(t) + s(u) + u64(p)
def time_(t, d): return b"\x03" + u64(t) + u64(d)
def comment(t): return b"\x04" + s(t)
def func(n, sys_, f, line): return b"\x06" + n + sys_ + f + u64(line)
def mapping(start, limit, off, fn, bid, flags):
    return b"\x07" + u64(start) + u64(limit) + u64(off) + fn + bid + bytes([flags])
def loc(mid, addr, fid, line): return b"\x08" + bytes([mid]) + u64(addr) + bytes([fid]) + u64(line)
def loclines(mid, addr, lines):
    b = b"\x09" + bytes([len(lines)]) + bytes([mid]) + u64(addr)
    for fid, line in lines:
        b += bytes([fid]) + u64(line)
    return b
def sample(locs, labels, values):
    b = b"\x0a" + bytes([len(locs)]) + bytes([len(labels)])
    b += bytes(locs)
    for key, sv, num, unit in labels:
        kind = (1 if sv is not None else 0) | (2 if unit is not None else 0)
        b += bytes([kind]) + s(key)
        if sv is not None:
            b += sv
        b += u64(num)
        if unit is not None:
            b += unit
    for v in values:
        b += u64(v)
    return b
basic = (stype("samples", "count") + stype("cpu", "nanoseconds") + default("cpu") +
         period("cpu", "nanoseconds", 1000000) + time_(1700000000000000000, 5000000000) +
         comment("pyperf-pprof --pid 1") +
         func(s("<module>"), NULL, s("/app/main.py"), 1) +
         func(s("work"), NULL, s("/app/main.py"), 10) +
         func(s("qsort"), s("qsort"), s(""), 0) +
         mapping(0x400000, 0x500000, 0, s("/usr/bin/python3.11"), s("abcdef0123"), 15) +
         loc(0, 0, 1, 3) + loc(0, 0, 2, 12) + loc(1, 0x401234, 3, 0) +
         loclines(1, 0x401300, [(3, 0), (2, 11)]) +
         sample([2, 1], [("pid", None, 42, None), ("thread_name", s("MainThread"), 0, None)], [1, 1000000]) +
         sample([3, 2, 1], [("tid", None, 43, s("id"))], [2, 2000000]) +
         sample([4, 1], [], [1, 1000000]) +
         sample([2, 1], [("thread_name", s("MainThread"), 0, None), ("pid", None, 42, None)], [1, 1000000]))
open(out + "/basic", "wb").write(basic)
bad = (stype("samples", "count") +
       func(s(b"\xff\xfe\xc3(\xed\xa0\x80bad"), s(b"\xf4\x90\x80\x80"), s(b"caf\xc3\xa9;x\ny.py"), -5) +
       loc(0, 0, 1, -1) + loc(7, 0, 1, 1) + loc(0, 0, 9, 1) +
       sample([1], [("k", s(""), 0, None)], [1]) + sample([1, 1, 1], [], [(1 << 63) - 1]) +
       sample([1, 1, 1], [], [5]) + sample([0], [], [1]) + stype("late", "count") +
       sample([1], [("", None, 1, None)], [1]))
open(out + "/invalid-utf8", "wb").write(bad)
empty = stype("samples", "count") + sample([], [], [1]) + default("nope")
open(out + "/empty-stack", "wb").write(empty)
EOF
du -sh "$c"
