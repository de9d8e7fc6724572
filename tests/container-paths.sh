#!/bin/sh
# Containers speak their own paths (issue 22): Debian sid's python3.14,
# stripped and without debug files, run in the suite's sid chroot and
# profiled from the host, twice:
#   chroot    a plain chroot: its root is a directory of ours;
#   namespace the same root bind-mounted in a private mount namespace, so
#             that no path of ours reaches it (as a container's root).
# Each must name the interpreter and libc as the process does
# (/usr/bin/python3.14, /usr/lib/x86_64-linux-gnu/libc.so.6) in the attach
# line and the profile's mappings, say the root once, and give a
# missing-debug-file hint whose commands run there and work: its
# `dpkg -S` finds libc6, and its dpkg-query yields python3.14-dbg's
# version. The chroot case is also recorded and replayed: the replay says
# the root too. The chroot is a prerequisite CI sets up
# (contrib/sid-chroot.sh): missing, the test fails.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${GO:=go}"
sid=${PYPERF_SID_ROOT:-/var/cache/pyperf-pprof/sid}
libc=/usr/lib/x86_64-linux-gnu/libc.so.6
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF, chroot and unshare"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: unshare (util-linux) missing"; exit 77; }
command -v nsenter >/dev/null || { echo "SKIP: nsenter (util-linux) missing"; exit 77; }
command -v "$GO" >/dev/null 2>&1 || { echo "SKIP: go (go tool pprof) not installed"; exit 77; }
if [ ! -f "$sid/.pyperf-sid-complete" ] || ! chroot "$sid" /usr/bin/python3.14 -c pass 2>/dev/null; then
	echo "FAIL: the Debian sid chroot $sid is missing or its python3.14 does not run (contrib/sid-chroot.sh makes it; PYPERF_SID_ROOT moves it)"
	exit 1
fi
work=$(mktemp -d /tmp/pyperf-cpaths.XXXXXX)
PYPERF=$(cd "$(dirname "$PYPERF")" && pwd)/$(basename "$PYPERF")
target=
trap '[ -n "$target" ] && kill -9 "$target" 2>/dev/null; rm -rf "$work"' EXIT
failed=0

ok() { echo "PASS $1"; }
bad() { echo "FAIL $1"; failed=1; }

# The busy loop, ended by itself; $work in its command line finds it.
loop="import time
end = time.time() + 30  # $work
while time.time() < end:
    pass"

# start NAME CMD...: runs CMD (which runs $loop) in the background and
# sets target to the python3.14 it starts.
start() {
	name=$1
	shift
	"$@" 2> "$work/$name.start" &
	i=0
	target=
	while [ -z "$target" ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i+1))
		target=$(pgrep -f "^/usr/bin/python3.14 -c import time.*$work" | head -1)
	done
	[ -n "$target" ] || { bad "$name: the target did not start:"; cat "$work/$name.start"; return 1; }
}

# check NAME ROOT_NOTE: the attach line, the mappings and the hints of
# $work/NAME.pb.gz and its stderr NAME.err.
check() {
	err=$work/$1.err
	if grep -qF "Python 3.14" "$err" && grep -qF "in /usr/bin/python3.14$2" "$err"; then
		ok "$1: attach line names /usr/bin/python3.14$2"
	else
		bad "$1: attach line, want 'in /usr/bin/python3.14$2':"; grep "Python 3" "$err"
	fi
	HOME=$work "$GO" tool pprof -raw "$work/$1.pb.gz" 2>/dev/null |
		sed -n '/^Mappings/,$p' | awk 'NR > 1 { print $3 }' > "$work/$1.maps"
	if grep -qx /usr/bin/python3.14 "$work/$1.maps" && grep -qx "$libc" "$work/$1.maps" &&
		! grep -q "^$sid\|^$work" "$work/$1.maps"; then
		ok "$1: mappings are the container's paths"
	else
		bad "$1: mappings, want /usr/bin/python3.14 and $libc, no host prefix:"; cat "$work/$1.maps"
	fi
	cmd=$(sed -n "s|.* in $libc$2 have no name: .* holds it (\(.*\))\$|\1|p" "$err")
	if [ -n "$cmd" ] && sh -c "$cmd" 2>&1 | grep -q "^libc6:amd64: $libc\$"; then
		ok "$1: libc hint runs where the file is: $cmd"
	else
		bad "$1: libc hint, want a working dpkg -S (got '$cmd'):"; grep "no name" "$err"
	fi
	cmd=$(sed -n "s|.* in /usr/bin/python3.14$2 have no name: .*, on Debian: \(.*\)\$|\1|p" "$err")
	got=$(sh -c "$(echo "$cmd" | sed 's/apt-get install /echo /')" 2>&1)
	if [ -n "$cmd" ] && echo "$got" | grep -q "^python3.14-dbg=3\.14\.[0-9]"; then
		ok "$1: interpreter hint's version query runs there: $got"
	else
		bad "$1: interpreter hint '$cmd' gave '$got'"
	fi
}

# 1. A plain chroot, recorded.
start chroot chroot "$sid" /usr/bin/python3.14 -c "$loop" && {
	"$PYPERF" --pid "$target" -d 2000 -o "$work/chroot.pb.gz" --record "$work/chroot.rec" \
		2> "$work/chroot.err"
	check chroot " (root $sid)"
	"$PYPERF" --replay "$work/chroot.rec" -o "$work/replay.pb.gz" -v 2> "$work/replay.err"
	if grep -qF "Python 3.14" "$work/replay.err" &&
		grep -qF "in /usr/bin/python3.14 (root $sid)" "$work/replay.err"; then
		ok "replay: says the recorded root"
	else
		bad "replay: want '(root $sid)':"; grep "Python 3" "$work/replay.err"
	fi
	kill -9 "$target" 2>/dev/null
	wait
}

# 2. The root out of our reach: bind-mounted in a private mount namespace
#    (and its own PID namespace), as a container's.
mkdir "$work/mnt"
start namespace unshare --mount --pid --fork sh -c \
	"mount --bind '$sid' '$work/mnt' && exec chroot '$work/mnt' /usr/bin/python3.14 -c '$loop'" && {
	"$PYPERF" --pid "$target" -d 2000 -o "$work/namespace.pb.gz" 2> "$work/namespace.err"
	check namespace " (root of pid $target, another mount namespace)"
	kill -9 "$target" 2>/dev/null
	wait
}
target=
exit $failed
