#!/bin/sh
# PLT stubs are named as perf and objdump name them ("memcpy@plt",
# "*ABS*+0x9f550@plt"): plt_names (src/native/plt.c) must list exactly the
# stubs objdump -d lists in .plt, .plt.sec and .plt.got, at the same
# addresses, for the interpreters, libc, zlib, BLAS and an IBT build (.plt.sec)
# compiled here. Needs objdump (binutils) and a C compiler.
set -u
: "${PLT_NAMES:=./tests/unit/plt_names}"
command -v objdump >/dev/null 2>&1 || { echo "SKIP: objdump (binutils) not installed"; exit 77; }
work=$(mktemp -d /tmp/pyperf-plt.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
failed=0 n=0

printf '#include <stdio.h>\n#include <string.h>\nint main(int c, char **v) { char b[64]; memcpy(b, v[0], 8); b[8] = 0; puts(b); return (int)strlen(v[0]); }\n' > "$work/ibt.c"
cc=${CC:-cc}
if $cc -O1 -fcf-protection=full -Wl,-z,ibtplt -o "$work/ibt" "$work/ibt.c" 2>/dev/null; then
	set -- "$work/ibt"
else
	echo "note: $cc cannot build an IBT binary (-fcf-protection=full -Wl,-z,ibtplt); .plt.sec untested"
	set --
fi
for f in "$@" /usr/bin/python3.11 /root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0 \
	/usr/lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libz.so.1 \
	/usr/lib/x86_64-linux-gnu/libblas.so.3 /usr/lib/x86_64-linux-gnu/libstdc++.so.6; do
	[ -f "$f" ] || { echo "note: $f not present"; continue; }
	objdump -d -j .plt -j .plt.sec -j .plt.got "$f" 2>/dev/null |
		sed -n -E 's/^0*([0-9a-f]+) <(.*@plt)>:$/\1 \2/p' | sort > "$work/want"
	if ! "$PLT_NAMES" "$f" | sort > "$work/got"; then
		echo "FAIL $f: plt_names failed"; failed=1; continue
	fi
	want=$(wc -l < "$work/want")
	if [ "$want" -eq 0 ]; then
		echo "note: objdump lists no PLT stub in $f"; continue
	fi
	n=$((n + 1))
	if diff "$work/want" "$work/got" > "$work/diff"; then
		echo "PASS $f: $want stubs named as objdump names them"
	else
		echo "FAIL $f: $(grep -c '^[<>]' "$work/diff") lines differ from objdump"; head -10 "$work/diff"; failed=1
	fi
done
[ $n -gt 0 ] || { echo "FAIL: no file with PLT stubs was compared"; exit 1; }
exit $failed
