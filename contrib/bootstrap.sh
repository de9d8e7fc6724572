#!/bin/sh
# One-step set-up on Debian 12 as root: install the build and test
# dependencies, build and install (make install), then either profile the
# bundled example (example) or run the whole test suite (check).
set -eu
mode=${1:-example}
cd "$(dirname "$0")/.."

PACKAGES="autoconf automake libtool pkg-config make gcc clang llvm \
libbpf-dev bpftool protobuf-c-compiler libprotobuf-c-dev libelf-dev \
libunwind-dev zlib1g-dev golang-go python3 python3-dev gdb util-linux \
chromium graphviz valgrind libclang-rt-14-dev binutils \
python3-numpy libblas3 strace python3-docutils linux-perf black debootstrap"

if [ "$(id -u)" != 0 ]; then
	echo "bootstrap: run as root (apt-get install, BPF and perf events need it)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# The browser test needs Node.js; Debian's npm conflicts with a NodeSource
# nodejs that may already be installed, so only add them when missing.
command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES nodejs npm"
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q $PACKAGES
# The stripped /usr/bin/python3.11's debug file: python3.11-dbg of exactly
# the interpreter's version (a debug file matches one build id). When the
# archive no longer has that version, both move to the newest one together.
pyver=$(dpkg-query -W -f '${Version}' python3.11-minimal)
if ! apt-get install -y -q "python3.11-dbg=$pyver" "libpython3.11-dbg=$pyver"; then
	echo "bootstrap: python3.11-dbg $pyver is not in the archive; upgrading python3.11 and its -dbg together" >&2
	apt-get install -y -q python3.11 python3.11-minimal libpython3.11-minimal \
		libpython3.11-stdlib python3.11-dbg libpython3.11-dbg
fi

autoreconf -fi
./configure
make -j"$(nproc)"
# pyperf-pprof in /usr/local/bin, its man page in /usr/local/share/man/man1
# (man pyperf-pprof).
make install

case $mode in
bench)
	apt-get install -y -q linux-perf austin python3-matplotlib
	make bench
	;;
example)
	make example
	;;
check)
	# speedscope and playwright-core for the browser test, pinned by the lock.
	npm ci --prefix tests/node --no-audit --no-fund
	# Debian sid's own python3.14 and python3.15 (stripped, newest GCC) in
	# a chroot outside the tree, which the suite profiles as a container's
	# processes (contrib/sid-chroot.sh: made once, kept while complete).
	# Without it the suite still runs and its sid cases fail, each saying why.
	./contrib/sid-chroot.sh ||
		echo "bootstrap: the Debian sid chroot could not be made: the suite's sid cases will fail" >&2
	make -j"$(nproc)" check
	;;
*)
	echo "bootstrap: unknown mode '$mode' (use example, check or bench)" >&2
	exit 2
	;;
esac
