#!/bin/sh
# The tree's layering, checked from the sources and the built objects:
#  1. every #include "..." of src/ and bpf/ points down the data flow of
#     doc/architecture.md (a folder includes only itself and the folders
#     before it in LAYERS below) and there is no include cycle between
#     files; the folder graph is printed; README.md's Layout table has a
#     line for each file;
#  2. neither libpyperf.a nor the binary defines a global symbol that
#     libc's dynamic symbol table also defines (an override such as a
#     process_vm_readv() that reroutes every caller).
# Needs python3 and nm (binutils); no root. Exit 0 pass, 1 fail.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${PYTHON3:=python3}"
failed=0

# Lowest first. cli is the parsed configuration (no dependency on the
# rest); native and python both read targets; python may use the native
# object layer (the interpreter's ELF file); main starts live or replay.
LAYERS="bpf cli memsource native python pipeline output record live main"

"$PYTHON3" - "$TOP_SRCDIR" "$LAYERS" <<'EOF' || failed=1
import os, re, sys

top, layers = sys.argv[1], sys.argv[2].split()
rank = {m: i for i, m in enumerate(layers)}
# Generated at build time (configure, bpftool, protoc-c): not in the tree.
generated = {"config.h", "vmlinux.h", "pyperf.skel.h", "maps_iter.skel.h", "profile.pb-c.h"}

def module(rel):
    parts = rel.split("/")
    if parts[0] == "bpf":
        return "bpf"
    if len(parts) == 2:		# src/cli.c, src/main.c
        return os.path.splitext(parts[1])[0]
    return parts[1]

files = {}
for d in ("src", "bpf"):
    for root, _, names in os.walk(os.path.join(top, d)):
        for n in names:
            if n.endswith((".c", ".h")) and n not in generated:
                rel = os.path.relpath(os.path.join(root, n), top)
                if n in files:
                    print("FAIL two files named %s: %s and %s (includes are by name)"
                          % (n, files[n], rel))
                    sys.exit(1)
                files[n] = rel

bad = 0
edges, deps = {}, {}
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for n, rel in sorted(files.items()):
    m = module(rel)
    if m not in rank:
        print("FAIL %s: folder '%s' is not in LAYERS (tests/layering.sh)" % (rel, m))
        bad += 1
        continue
    deps[rel] = []
    with open(os.path.join(top, rel), errors="replace") as f:
        text = f.read()
    for name in inc.findall(text):
        base = os.path.basename(name)
        if base not in files:
            if base not in generated:
                print("FAIL %s includes \"%s\", which is not in src/ or bpf/" % (rel, name))
                bad += 1
            continue
        target = files[base]
        deps[rel].append(target)
        tm = module(target)
        if tm == m:
            continue
        edges[(m, tm)] = edges.get((m, tm), 0) + 1
        if rank.get(tm, -1) > rank[m]:
            print("FAIL %s (%s) includes %s (%s): against the data flow %s"
                  % (rel, m, target, tm, " < ".join(layers)))
            bad += 1

print("# folder graph (includes between folders):")
for m in layers:
    out = sorted((t for (f, t) in edges if f == m), key=lambda t: rank.get(t, -1))
    if out:
        print("#   %-8s -> %s" % (m, ", ".join("%s (%d)" % (t, edges[(m, t)]) for t in out)))

# Cycles between files: depth-first search, grey = on the current path.
state, stack, cycles = {}, [], []
def visit(f):
    state[f] = 1
    stack.append(f)
    for g in deps.get(f, []):
        if state.get(g) == 1:
            cycles.append(stack[stack.index(g):] + [g])
        elif not state.get(g):
            visit(g)
    stack.pop()
    state[f] = 2
sys.setrecursionlimit(10000)
for f in sorted(deps):
    if not state.get(f):
        visit(f)
for c in cycles:
    print("FAIL include cycle: " + " -> ".join(c))
    bad += 1
# The README's Layout table: one line per file, no line for a gone file.
try:
    readme = open(os.path.join(top, "README.md")).read()
    table = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
except (OSError, IndexError):
    table = ""
listed = set(re.findall(r"^\| `((?:src|bpf)/[^`]+)` \|", table, re.M))
for rel in sorted(set(deps) - listed):
    print("FAIL %s has no line in README.md's Layout table" % rel)
    bad += 1
for rel in sorted(listed - set(deps) - set(r for r in listed if not r.endswith((".c", ".h")))):
    print("FAIL README.md's Layout table lists %s, which does not exist" % rel)
    bad += 1
if not bad:
    print("PASS %d files in %d folders: every include goes down the data flow, no include cycle, each in README.md's Layout table"
          % (len(deps), len(set(module(r) for r in deps))))
sys.exit(1 if bad else 0)
EOF

# 2. No libc symbol defined by our objects.
command -v nm >/dev/null 2>&1 || { echo "FAIL: nm (binutils) not installed"; exit 1; }
libc=$(${CC:-cc} -print-file-name=libc.so.6 2>/dev/null)
[ -f "$libc" ] || libc=$(ldd "$PYPERF" 2>/dev/null | sed -n 's/.*libc\.so\.6 => \([^ ]*\).*/\1/p')
[ -f "$libc" ] || { echo "FAIL: cannot find libc.so.6 (cc -print-file-name, ldd $PYPERF)"; exit 1; }
lib=$(dirname "$PYPERF")/libpyperf.a
work=$(mktemp -d /tmp/pyperf-layering.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
nm -D --defined-only "$(readlink -f "$libc")" | awk '{print $NF}' | sed 's/@.*//' | sort -u > "$work/libc"
[ -s "$work/libc" ] || { echo "FAIL: no dynamic symbols read from $libc"; exit 1; }
for obj in "$lib" "$PYPERF"; do
	[ -f "$obj" ] || { echo "FAIL $obj not built"; failed=1; continue; }
	# Global definitions: text, weak, data, bss, read-only data, ifunc.
	nm --defined-only "$obj" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[TWVDBRi]$/ {print $3}' |
		sort -u > "$work/ours"
	[ -s "$work/ours" ] || { echo "FAIL $obj: nm lists no symbol"; failed=1; continue; }
	comm -12 "$work/ours" "$work/libc" > "$work/both"
	if [ -s "$work/both" ]; then
		echo "FAIL $obj defines libc symbols (they override libc for every caller): $(tr '\n' ' ' < "$work/both")"
		failed=1
	else
		echo "PASS $obj: $(wc -l < "$work/ours") global symbols, none of libc's $(wc -l < "$work/libc")"
	fi
done
exit $failed
