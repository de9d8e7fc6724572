# shellcheck shell=sh
# Sourced (not run) by the tests that also run Debian sid's own python3.14
# and python3.15 (issue 22): stripped, no debug files, built by a newer
# GCC with PGO and LTO, run inside the chroot that contrib/sid-chroot.sh
# makes (contrib/bootstrap.sh runs it), and profiled from the host as a
# container's process is. The chroot is a prerequisite CI sets up: when it
# is missing the sid cases FAIL with sid_missing's reason, never skip.
#
# Workloads reach the chroot as copies under its /tmp (no bind mount to
# clean up): sid_workdir makes the directory, sid_path names a host path
# as the process inside sees it.

SID_ROOT=${PYPERF_SID_ROOT:-/var/cache/pyperf-pprof/sid}
SID_INTERPRETERS="/usr/bin/python3.14 /usr/bin/python3.15"

# sid_missing: nothing and 1 when the chroot is complete; else the reason,
# one line, and 0.
sid_missing() {
	if [ ! -f "$SID_ROOT/.pyperf-sid-complete" ]; then
		echo "the Debian sid chroot $SID_ROOT is missing or incomplete (contrib/sid-chroot.sh makes it; PYPERF_SID_ROOT moves it)"
		return 0
	fi
	for py in $SID_INTERPRETERS; do
		if ! chroot "$SID_ROOT" "$py" -c pass 2>/dev/null; then
			echo "$py does not run in the Debian sid chroot $SID_ROOT (contrib/sid-chroot.sh makes it again)"
			return 0
		fi
	done
	return 1
}

# sid_workdir NAME: a new scratch directory under the chroot's /tmp holding
# a copy of tests/workloads and tests/ext; prints its host path.
sid_workdir() {
	d=$(mktemp -d "$SID_ROOT/tmp/pyperf-$1.XXXXXX") &&
		cp -r "$TOP_SRCDIR/tests/workloads" "$TOP_SRCDIR/tests/ext" "$d/" &&
		echo "$d"
}

# sid_path HOST_PATH: the same file as a process in the chroot names it.
sid_path() {
	echo "${1#"$SID_ROOT"}"
}

# sid_build_ext INTERP DIR: tests/ext/cbext.c built by the host's gcc
# against the chroot's headers of INTERP (a path inside the chroot) into
# DIR (a host path); prints native.py's --extension when it was built.
# Debian's Python.h includes the multiarch pyconfig.h as
# <x86_64-linux-gnu/pythonX.Y/pyconfig.h>: the chroot's /usr/include is
# searched for it after the host's own (-idirafter), so that the host's
# C library headers are still the ones used.
sid_build_ext() {
	v=$(basename "$1")
	v=${v#python}
	suffix=$(chroot "$SID_ROOT" "$1" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
	mkdir -p "$2"
	if [ -f "$SID_ROOT/usr/include/python$v/Python.h" ] &&
		gcc -shared -fPIC -O2 -fno-omit-frame-pointer -I"$SID_ROOT/usr/include/python$v" \
			-idirafter "$SID_ROOT/usr/include" \
			-o "$2/cbext$suffix" "$TOP_SRCDIR/tests/ext/cbext.c" >&2; then
		echo --extension
	fi
}

# sid_launch PY WORKLOAD ARGS...: this (sub)shell becomes PY running
# tests/workloads/WORKLOAD, so that "sid_launch ... &" leaves the
# interpreter's pid in $! (chroot execs it). PY "sid:PATH" is PATH inside
# the chroot, running the copy under $sid_workloads (an inside path the
# caller set from sid_workdir); any other PY runs on the host.
sid_launch() {
	py=$1 wl=$2
	shift 2
	# shellcheck disable=SC2154 # sid_workloads: set by the caller
	case $py in
	sid:*) exec chroot "$SID_ROOT" "${py#sid:}" "$sid_workloads/$wl" "$@" ;;
	esac
	exec "$py" "$TOP_SRCDIR/tests/workloads/$wl" "$@"
}
