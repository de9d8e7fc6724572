#!/bin/sh
# One-step set-up on Debian 12 as root: install the build and test
# dependencies, build, then either profile the bundled example (example)
# or run the whole test suite (check).
set -eu
mode=${1:-example}
cd "$(dirname "$0")/.."

PACKAGES="autoconf automake libtool pkg-config make gcc clang llvm \
libbpf-dev bpftool protobuf-c-compiler libprotobuf-c-dev libelf-dev \
libunwind-dev zlib1g-dev golang-go python3 python3-dev gdb util-linux \
chromium graphviz valgrind libclang-rt-14-dev"

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

autoreconf -fi
./configure
make -j"$(nproc)"

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
	make -j"$(nproc)" check
	;;
*)
	echo "bootstrap: unknown mode '$mode' (use example, check or bench)" >&2
	exit 2
	;;
esac
