#!/bin/sh
# tests/bpfwalk/make-captures.sh [NAME...]: regenerates the captures
# tests/bpfwalk.sh replays (run it only to refresh them; needs root, a
# built tree (make check builds tests/bpfwalk/bpfcapture), Debian's
# python3.11 with python3.11-dev, and the sid chroot of contrib/sid-chroot.sh
# for the 3.14 and 3.15 cases).
#
# Each case runs tests/workloads/blocked_deep.py (Python recursion, libc's
# qsort calling back into Python, os.walk's generator calling back, then
# tests/ext/cbext.c's call_back, built without CFI so that its frames are
# unwound by frame pointer, and an os.read that blocks for good) under a live `pyperf-pprof --mode wall
# --record` (default native unwinding in BPF), lets it block, and runs
# bpfcapture on it: the capture is written only if the BPF walk compiled
# into user space, run on that thread's registers against the live
# process with the profiler's own map entries, gave the record the
# profiler's BPF program sent when the thread blocked (bpfcapture.c).
# NAME.names.rec and NAME.names are for the names through the pipeline
# (recnames.py, names below).
#
# Cases (name, interpreter, its options[, ":" and the workload's arguments]):
#   py310-pyenv      pyenv 3.10.13                  <= 3.10: frame objects, self, pthread ident
#   py311-debian     /usr/bin/python3.11            3.11: cframe chain anchors, is_entry
#   py311-debian-signal  the same inside a C signal handler: the signal frame step
#   py312-pyenv      pyenv 3.12.1                   3.12: cframe and shim frames, libpython
#   py313-pyenv      pyenv 3.13.0                   3.13: _Py_DebugOffsets, current_frame
#   py314-sid        sid:/usr/bin/python3.14        3.14: tagged f_executable, shim frames
#   py314-sid-perf   sid:/usr/bin/python3.14 -X perf   and perf trampolines (no CFI)
#   py315-sid        sid:/usr/bin/python3.15        3.15: the thread's base frame
#   py315-sid-perf   sid:/usr/bin/python3.15 -X perf
#
# Environment: PYPERF (default ./pyperf-pprof of the top directory),
# BPFCAPTURE (default tests/bpfwalk/bpfcapture of the top directory),
# PY310, PY311, PY312, PY313, PYPERF_SID_ROOT.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
export TOP_SRCDIR="$top"	# sid-common.sh's sid_workdir
PYPERF=${PYPERF:-$top/pyperf-pprof}
BPFCAPTURE=${BPFCAPTURE:-$top/tests/bpfwalk/bpfcapture}
PY310=${PY310:-/root/.pyenv/versions/3.10.13/bin/python3.10}
PY311=${PY311:-/usr/bin/python3.11}
PY312=${PY312:-/root/.pyenv/versions/3.12.1/bin/python3.12}
PY313=${PY313:-/root/.pyenv/versions/3.13.0/bin/python3.13}
PYTHON3=${PYTHON3:-python3}
MAX_BYTES=1000000
# cbext without unwind information: the native walk takes frame-pointer
# steps through its frames.
NOCFI="-fno-omit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables"
# shellcheck source=tests/sid-common.sh
. "$top/tests/sid-common.sh"

die() { echo "make-captures: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (BPF, ptrace)"
[ -x "$PYPERF" ] || die "$PYPERF not built"
[ -x "$BPFCAPTURE" ] || die "$BPFCAPTURE not built (make check builds it)"

work=$(mktemp -d /tmp/pyperf-captures.XXXXXX)
pid='' prof='' sid_dir=''
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	[ -n "$prof" ] && kill "$prof" 2>/dev/null
	[ -n "$sid_dir" ] && rm -rf "$sid_dir"
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

cases() {
	cat <<EOF
py310-pyenv $PY310
py311-debian $PY311
py311-debian-signal $PY311 : signal
py312-pyenv $PY312
py313-pyenv $PY313
py314-sid sid:/usr/bin/python3.14
py314-sid-perf sid:/usr/bin/python3.14 -X perf
py315-sid sid:/usr/bin/python3.15
py315-sid-perf sid:/usr/bin/python3.15 -X perf
EOF
}

# start_workload INTERP OPTS... [: ARGS...]: blocked_deep.py started with
# ARGS, its stdin the fifo $work/go (held open on fd 3); sets pid and fd
# (the pipe it will block on).
start_workload() {
	interp=$1
	shift
	opts='' args=''
	for a in "$@"; do
		case $a in
		:) args=" " ;;
		*) if [ -n "$args" ]; then args="$args $a"; else opts="$opts $a"; fi ;;
		esac
	done
	# shellcheck disable=SC2086 # opts: words
	set -- $opts
	rm -f "$work/go" "$work/ready"
	mkfifo "$work/go"
	case $interp in
	sid:*)
		[ -z "$(sid_missing)" ] || die "$(sid_missing)"
		[ -n "$sid_dir" ] || sid_dir=$(sid_workdir captures)
		sid_workloads=$(sid_path "$sid_dir")/workloads
		ext=$(sid_path "$sid_dir")/ext-$(basename "${interp#sid:}")
		v=$(basename "${interp#sid:}")
		v=${v#python}
		suffix=$(chroot "$SID_ROOT" "${interp#sid:}" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
		mkdir -p "$sid_dir/ext-python$v"
		# shellcheck disable=SC2086 # NOCFI: words
		gcc -shared -fPIC -O2 $NOCFI -I"$SID_ROOT/usr/include/python$v" \
			-idirafter "$SID_ROOT/usr/include" -o "$sid_dir/ext-python$v/cbext$suffix" \
			"$top/tests/ext/cbext.c" || die "cannot build cbext for $interp"
		# shellcheck disable=SC2086 # args: words
		(PYTHONPATH=$ext exec chroot "$SID_ROOT" "${interp#sid:}" "$@" \
			"$sid_workloads/blocked_deep.py" $args < "$work/go" > "$work/ready") &
		;;
	*)
		inc=$("$interp" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
		suffix=$("$interp" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
		mkdir -p "$work/ext"
		# shellcheck disable=SC2086 # NOCFI: words
		gcc -shared -fPIC -O2 $NOCFI -I"$inc" -o "$work/ext/cbext$suffix" \
			"$top/tests/ext/cbext.c" || die "cannot build tests/ext/cbext.c (python3-dev?)"
		# shellcheck disable=SC2086 # args: words
		(cd "$top" && PYTHONPATH="$work/ext" exec "$interp" "$@" tests/workloads/blocked_deep.py \
			$args < "$work/go" > "$work/ready") &
		;;
	esac
	pid=$!
	exec 3> "$work/go"
	i=0
	until grep -q ready "$work/ready" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 100 ] || die "the workload did not start"
		sleep 0.1
	done
	fd=$(awk '{print $2}' "$work/ready")
}

# wait_blocked: until the main thread is in read(2) of that pipe.
wait_blocked() {
	want=$(printf '0 0x%x ' "$fd")
	i=0
	until case $(cat /proc/$pid/syscall 2>/dev/null) in "$want"*) true ;; *) false ;; esac; do
		i=$((i + 1))
		[ $i -le 100 ] || die "the workload did not block in os.read"
		sleep 0.1
	done
}

# names NAME: NAME.names.rec, the live record with what the pipeline reads
# to name its Python frames (recnames.py), and NAME.names, those names as
# the live profile has them (its replay: the same bytes); kept only if
# the reduced recording's replay names them the same.
names() {
	"$PYPERF" --replay "$work/$1.rec" -q --format collapsed -o "$work/$1.live.folded" ||
		die "$1: the live recording does not replay"
	"$PYTHON3" "$here/recnames.py" frames "$work/$1.live.folded" > "$work/$1.names"
	[ -s "$work/$1.names" ] || die "$1: no Python frames in the live profile"
	"$PYTHON3" "$here/recnames.py" reduce "$work/$1.rec" "$work/$1.bin" "$work/$1.names.rec"
	"$PYPERF" --replay "$work/$1.names.rec" -q --format collapsed -o "$work/$1.names.folded" ||
		die "$1: the reduced recording does not replay"
	"$PYTHON3" "$here/recnames.py" frames "$work/$1.names.folded" |
		cmp -s - "$work/$1.names" || die "$1: the reduced recording names other frames"
	cp "$work/$1.names.rec" "$work/$1.names" "$here/captures/"
}

capture_one() {
	name=$1 interp=$2
	shift 2
	start_workload "$interp" "$@"
	"$PYPERF" --pid $pid --mode wall -d 0 -q --record "$work/$name.rec" \
		-o "$work/$name.pb.gz" 2> "$work/$name.err" &
	prof=$!
	sleep 3		# attached (its tables loaded) before the stack forms
	echo go >&3
	wait_blocked
	sleep 0.5	# the switch-out record written
	ver=$(cat /proc/$pid/cmdline | tr '\0' ' ')
	"$BPFCAPTURE" --profiler $prof --recording "$work/$name.rec" --pid $pid \
		--label "$name: $ver" -o "$here/captures/$name.cap" \
		--live-record "$work/$name.bin" ||
		{ cat "$work/$name.err" >&2; die "$name: no capture"; }
	wait $prof 2>/dev/null || true
	prof=
	names "$name"
	exec 3>&-
	kill $pid 2>/dev/null; wait $pid 2>/dev/null || true; pid=
}

cases > "$work/cases"
while read -r name interp opts; do
	if [ $# -gt 0 ]; then
		case " $* " in *" $name "*) ;; *) continue ;; esac
	fi
	# shellcheck disable=SC2086 # opts: words
	capture_one "$name" "$interp" $opts
	echo "$name: $(wc -c < "$here/captures/$name.cap") bytes, names $(wc -c < "$here/captures/$name.names.rec") bytes"
done < "$work/cases"
total=$(cat "$here"/captures/* | wc -c)
[ "$total" -le $MAX_BYTES ] || die "the captures take $total bytes, more than $MAX_BYTES"
