#!/bin/sh
# The Debian sid chroot of the test suite (issue 22): Debian's own
# python3.14 and python3.15 as users install them (GCC of the day, PGO +
# LTO, stripped, no debug files), python3-docutils for the deep real
# program, and both interpreters' headers so that the host's gcc builds
# tests/ext/cbext.c for them. The tests run these interpreters inside the
# chroot, as a container's process is profiled from the host.
#
# Made at $PYPERF_SID_ROOT (default /var/cache/pyperf-pprof/sid), outside
# any source tree. Idempotent: a chroot with its completion marker and
# working interpreters is kept; anything else there (a run cut short) is
# removed and made again, in ROOT.new first and moved into place when
# complete. Run by contrib/bootstrap.sh; ~1-2 minutes from Debian's
# archive. Exit 0 when the chroot is ready.
set -eu
root=${PYPERF_SID_ROOT:-/var/cache/pyperf-pprof/sid}
mirror=${PYPERF_SID_MIRROR:-http://deb.debian.org/debian}
# Changing this list makes every existing chroot be made again.
include=python3.14,python3.15,python3-docutils,python3.14-dev,python3.15-dev
marker=.pyperf-sid-complete

is_complete() {
	[ "$(cat "$1/$marker" 2>/dev/null)" = "$include" ] &&
		chroot "$1" /usr/bin/python3.14 -c 'import docutils, ctypes, zlib' 2>/dev/null &&
		chroot "$1" /usr/bin/python3.15 -c 'import docutils, ctypes, zlib' 2>/dev/null &&
		[ -f "$1/usr/include/python3.14/Python.h" ] && [ -f "$1/usr/include/python3.15/Python.h" ]
}

# remove DIR: a half-made chroot, never following a mount into the host
# (a test cut short may have left /proc or a bind mount inside).
remove() {
	[ -e "$1" ] || return 0
	findmnt -rn -o TARGET | grep -F "$1/" | sort -r | while read -r m; do
		umount "$m" || umount -l "$m"
	done
	rm -rf --one-file-system "$1"
}

# The interpreters' debug files, unpacked beside the chroot, never installed
# in it (its interpreters stay as users have them): tests/check-offsets.sh
# re-derives the 3.14 and 3.15 offset entries from them. The versions are
# the chroot's own, so the build ids match.
debug_files() {
	dbg=${PYPERF_SID_DEBUG_ROOT:-/var/cache/pyperf-pprof/sid-dbg}
	[ -d "$dbg/usr/lib/debug/.build-id" ] && return 0
	rm -rf "$1/tmp/pyperf-dbg" "$dbg.new"
	mkdir -p "$1/tmp/pyperf-dbg" "$dbg.new"
	chroot "$1" sh -c 'cd /tmp/pyperf-dbg && apt-get -q -o Acquire::Check-Valid-Until=false download \
		python3.14-dbg="$(dpkg-query -W -f "\${Version}" python3.14-minimal)" \
		python3.15-dbg="$(dpkg-query -W -f "\${Version}" python3.15-minimal)"' >/dev/null 2>&1 ||
		{ echo "sid-chroot: cannot download python3.14-dbg and python3.15-dbg" >&2; return 1; }
	for d in "$1"/tmp/pyperf-dbg/*.deb; do dpkg-deb -x "$d" "$dbg.new"; done
	rm -rf "$1/tmp/pyperf-dbg" "$dbg"
	mv "$dbg.new" "$dbg"
	echo "sid-chroot: debug files in $dbg"
}

if is_complete "$root"; then
	debug_files "$root"
	echo "sid-chroot: $root is complete (python3.14 $(chroot "$root" /usr/bin/python3.14 -c 'import platform; print(platform.python_version())'), python3.15 $(chroot "$root" /usr/bin/python3.15 -c 'import platform; print(platform.python_version())'))"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "sid-chroot: run as root (debootstrap and chroot need it)" >&2
	exit 1
fi
command -v debootstrap >/dev/null 2>&1 || {
	echo "sid-chroot: debootstrap is not installed (apt-get install debootstrap)" >&2
	exit 1
}
[ -e "$root" ] && echo "sid-chroot: $root is incomplete: making it again"
remove "$root"
remove "$root.new"
mkdir -p "$(dirname "$root")"
if ! debootstrap --variant=minbase --include="$include" sid "$root.new" "$mirror" \
	> "$root.log" 2>&1; then
	tail -20 "$root.log" >&2
	echo "sid-chroot: debootstrap failed (full log: $root.log)" >&2
	exit 1
fi
# sid's Release file may be older than its Valid-Until by the time apt runs
# inside (an archive snapshot): apt in the chroot must not refuse it.
echo 'Acquire::Check-Valid-Until "false";' > "$root.new/etc/apt/apt.conf.d/99pyperf-no-valid-until"
echo "$include" > "$root.new/$marker"
mv "$root.new" "$root"
if ! is_complete "$root"; then
	echo "sid-chroot: $root was made but its interpreters do not run" >&2
	exit 1
fi
debug_files "$root"
echo "sid-chroot: made $root ($(du -sh "$root" | cut -f1))"
