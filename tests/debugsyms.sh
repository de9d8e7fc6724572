#!/bin/sh
# Stripped interpreters: Debian's /usr/bin/python3.11 has no .symtab; its
# debug file comes from python3.11-dbg of the same version (installed by
# contrib/bootstrap.sh) under /usr/lib/debug/.build-id/. Profiles the
# bundled example with --all-native:
#   with the debug file   at most 5% of samples end in an unnamed
#                         [python3.11] frame, and no hint is printed;
#   without it (hidden under an empty tmpfs in a private mount namespace
#   that holds both the target and the profiler)
#                         more than 10% do, and the closing summary says
#                         what to install (python3.11-dbg=VERSION).
set -u
test_tag=dbg
. "$(cd "$(dirname "$0")" && pwd)/py311-common.sh"
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
failed=0

id=$(readelf -n $py 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
dbg=/usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug
if [ -z "$id" ] || [ ! -f "$dbg" ]; then
	echo "FAIL: no debug file for $py (build-id ${id:-?}): install python3.11-dbg=$(dpkg-query -W -f '${Version}' python3.11-minimal 2>/dev/null) (contrib/bootstrap.sh does)"
	exit 1
fi

# The workload and the profiler in one shell, so a private mount namespace
# hides the debug files from both.
cat > "$work/run.sh" <<EOS
set -u
if [ "\$1" = hide ]; then mount -t tmpfs -o size=4k tmpfs /usr/lib/debug || exit 99; fi
$py "$TOP_SRCDIR/contrib/example.py" 30 > /dev/null &
p=\$!
sleep 1
"$PYPERF" --pid \$p -d 3000 --all-native -o "\$2" 2> "\$2.err"
rc=\$?
kill \$p
exit \$rc
EOS
leaf_share() {
	PYTHONPATH=$TOP_SRCDIR/tests "$PYTHON3" - "$1" "$GO" <<'EOP'
import sys
import pprof_raw
p = pprof_raw.run_raw(sys.argv[1], go=sys.argv[2])
tot = unnamed = 0
for values, frames, labels in p.stacks():
    tot += values[0]
    if frames and frames[0][0] == "[python3.11]":
        unnamed += values[0]
print("%.1f" % (100.0 * unnamed / max(tot, 1)))
EOP
}

sh "$work/run.sh" show "$work/with.pb.gz" || failed=1
with=$(leaf_share "$work/with.pb.gz")
echo "with $dbg: ${with}% of samples end in [python3.11]"
if awk "BEGIN { exit !($with <= 5) }" && ! grep -q "have no name" "$work/with.pb.gz.err"; then
	echo "PASS debug file used"
else
	cat "$work/with.pb.gz.err"; echo "FAIL debug file not used, or a hint printed anyway"; failed=1
fi

if unshare --mount --propagation private sh "$work/run.sh" hide "$work/without.pb.gz"; then
	without=$(leaf_share "$work/without.pb.gz")
	echo "without it: ${without}% of samples end in [python3.11]"
	grep "have no name" "$work/without.pb.gz.err"
	if awk "BEGIN { exit !($without > 10) }" &&
	   grep -q "of the native frames in /usr/bin/python3.11 have no name: install .*python3.11-dbg=" "$work/without.pb.gz.err"; then
		echo "PASS stripped without debug file: unnamed share shown and the hint printed"
	else
		cat "$work/without.pb.gz.err"; echo "FAIL no hint, or the frames were named anyway"; failed=1
	fi
else
	echo "SKIP without debug file: cannot hide /usr/lib/debug in a private mount namespace (unshare -m)"
fi
exit $failed
