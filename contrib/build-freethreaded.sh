#!/bin/sh
# Build a free-threaded (--disable-gil) CPython from a release tag of a
# local CPython git mirror, for running the profiler's end-to-end cases on
# it by hand (tests/e2e.sh with a case file naming the interpreter).
# Not run by CI or make check: CI has no mirror.
#
#   contrib/build-freethreaded.sh MIRROR TAG [ROOT]
#
# MIRROR is a (bare) git directory holding CPython's tags, TAG a release tag
# (v3.13.15, v3.14.7, v3.15.0rc1: 3.13 is the first to accept
# --disable-gil). The source goes to ROOT/src-TAG, the install to
# ROOT/X.Yt (ROOT defaults to /opt/cpython-ft), giving ROOT/X.Yt/bin/python
# X.Yt with a shared libpython found through its rpath.
#
# No --enable-optimizations (PGO), to keep a build near a quarter of an
# hour on two cores; the eval loop's layout therefore differs from a
# distribution's PGO + LTO build. Optional modules whose -dev package is
# missing are left out by CPython's own configure; the build goes on.
# The Debian packages for a full build: libssl-dev libffi-dev zlib1g-dev
# libbz2-dev liblzma-dev libsqlite3-dev libreadline-dev libncurses-dev
# uuid-dev.
set -eu

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 MIRROR TAG [ROOT]" >&2
	exit 2
fi
mirror=$1
tag=$2
root=${3:-/opt/cpython-ft}

# v3.14.7 -> 3.14; refuse anything not shaped like a 3.13+ release tag.
minor=$(printf '%s\n' "$tag" | sed -n 's/^v\(3\.[0-9][0-9]*\)\..*/\1/p')
case $minor in
3.1[3-9] | 3.[2-9][0-9]) ;;
*)
	echo "$0: '$tag' is not a v3.13-or-newer release tag" >&2
	exit 2
	;;
esac
git --git-dir="$mirror" rev-parse -q --verify "refs/tags/$tag" >/dev/null || {
	echo "$0: no tag $tag in $mirror" >&2
	exit 1
}

src=$root/src-$tag
prefix=$root/${minor}t
jobs=$(nproc)
mkdir -p "$src"
# Files whose blob the mirror lacks are left out: sailfishos-mirror/cpython
# has no Misc/svnmap.txt (every tag) nor, at v3.15.0rc1,
# Doc/library/tachyon-live-mode-1.gif; the build reads neither. Any other
# missing file is named here, and configure or make then fail loudly.
# git archive still prints "invalid object" for each left out; harmless.
missing=$(git --git-dir="$mirror" ls-tree -r "$tag" |
	awk '$2 == "blob" { print $3 }' |
	git --git-dir="$mirror" cat-file --batch-check 2>/dev/null |
	awk '$2 == "missing" { print $1 }')
excludes=
for obj in $missing; do
	path=$(git --git-dir="$mirror" ls-tree -r "$tag" | awk -v o="$obj" '$3 == o' | cut -f2)
	echo "$0: the mirror lacks $path ($obj): left out" >&2
	excludes="$excludes :(exclude)$path"
done
# shellcheck disable=SC2086
git --git-dir="$mirror" archive "$tag" -- . $excludes | tar -x -C "$src"

cd "$src"
start=$(date +%s)
./configure -q --disable-gil --enable-shared --prefix="$prefix" \
	LDFLAGS="-Wl,-rpath=$prefix/lib"
# nice: the build shares the machine with test runs measuring CPU time.
nice -n 19 make -s -j"$jobs"
make -s install
end=$(date +%s)

"$prefix/bin/python${minor}t" -c \
	'import sys, sysconfig; print(sys.version); print("Py_GIL_DISABLED =", sysconfig.get_config_var("Py_GIL_DISABLED"), "gil enabled:", sys._is_gil_enabled())'
echo "$0: $tag built and installed in $prefix in $((end - start)) s"
