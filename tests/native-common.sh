# Sourced (not run) by tests/unwind-diff.sh and tests/record-native.sh: the
# native workload (tests/workloads/native.py: ctypes qsort callback, zlib,
# the C-extension chain of tests/ext/cbext.c) started in the background
# and stopped, and the extension built for an interpreter. The sourcing
# script sets $work (a scratch directory) and cleans $pid up on exit.

pid=

# start INTERP WORKLOAD ARGS...: runs it in the background until it prints
# "ready" (20 s at most); sets $pid. 1 if it never did.
start() {
	py=$1
	shift
	rm -f "$work/ready"
	"$py" "$@" > "$work/ready" &
	pid=$!
	i=0
	until grep -q ready "$work/ready" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 200 ] && return 1
		sleep 0.1
	done
}

stop() {
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	pid=
}

# build_ext INTERP DIR: tests/ext/cbext.c built for INTERP into DIR; prints
# native.py's --extension when it was, nothing when the interpreter has no
# headers (the workload then runs without the C-extension chain).
build_ext() {
	include=$("$1" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
	suffix=$("$1" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX") or ".so")')
	mkdir -p "$2"
	if [ -f "$include/Python.h" ] && gcc -shared -fPIC -O2 -I"$include" \
		-o "$2/cbext$suffix" "$TOP_SRCDIR/tests/ext/cbext.c" 2>/dev/null; then
		echo --extension
	fi
}
