#!/bin/sh
# tests/recordings/make-recordings.sh [NAME...]: regenerates the committed
# recordings that tests/replay.sh replays (run it only to refresh them;
# needs root, a built ./pyperf-pprof and the interpreters below).
#
# For each case: starts the workload from tests/workloads (from the top of
# the source tree, so file names read tests/workloads/...), profiles it
# live with --record, replays the recording, and refuses to keep it unless
# the replayed profile equals the live one byte for byte (and, with go,
# `go tool pprof -raw` of both agree). Then writes, per case,
#   NAME.rec        the recording
#   NAME.collapsed  `--replay NAME.rec --format collapsed` (the expected output)
#   NAME.raw        `go tool pprof -raw` of the replayed profile (with go)
# and checks that everything under tests/recordings stays below 3 MB.
# A continuous-mode case (--interval) writes a series of files into a
# directory instead: the replay must write the same names with the same
# bytes, and NAME.live lists them (sha256sum of the live run's files).
#
# Cases (name, interpreter, workload, pyperf-pprof options):
#   py38-frames       pyenv 3.8.18   methods.py        Python only; <= 3.10
#                                                      frame objects, Class.method
#                                                      from the first local
#   py311-debian-wall /usr/bin/python3.11 named_threads.py  Python only, --mode wall:
#                                                      3.11-3.12 frames, thread
#                                                      names, off-CPU intervals
#   py313-debugoffsets pyenv 3.13.0  methods.py        Python only; layout from
#                                                      the target's _Py_DebugOffsets
#   py312-asyncio     pyenv 3.12.1   asyncio_tasks.py  Python only; asyncio_task
#                                                      labels: C Tasks taking turns,
#                                                      a second thread with its own
#                                                      loop
#   native-py311-debian /usr/bin/python3.11 native.py  native frames merged: stripped
#                                                      interpreter unwound by .eh_frame,
#                                                      ctypes qsort callback, zlib,
#                                                      the C extension tests/ext/cbext.c
#   native-py311-both /usr/bin/python3.11 native.py  the same with --unwind both:
#                                                      kernel tables and libunwind per
#                                                      sample, compared on replay
#   py311-continuous  /usr/bin/python3.11 methods.py   continuous mode: 3 intervals of
#                                                      1 s, counters per interval, file
#                                                      names from the recorded clocks
#
# Environment: PYPERF (default ./pyperf-pprof of the top directory), GO
# (default go), PY38, PY311, PY312, PY313 (the interpreters).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
PYPERF=${PYPERF:-$top/pyperf-pprof}
GO=${GO:-go}
PY38=${PY38:-/root/.pyenv/versions/3.8.18/bin/python3.8}
PY311=${PY311:-/usr/bin/python3.11}
PY312=${PY312:-/root/.pyenv/versions/3.12.1/bin/python3.12}
PY313=${PY313:-/root/.pyenv/versions/3.13.0/bin/python3.13}
MAX_BYTES=3000000

die() { echo "make-recordings: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (BPF) to record"
[ -x "$PYPERF" ] || die "$PYPERF not built"
have_go=0
command -v "$GO" >/dev/null 2>&1 && have_go=1

work=$(mktemp -d /tmp/pyperf-recordings.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT INT TERM

cases() {
	cat <<EOF
py38-frames $PY38 methods.py --no-native -d 600
py311-debian-wall $PY311 named_threads.py --no-native --mode wall -F 250 -d 600
py313-debugoffsets $PY313 methods.py --no-native -d 600
py312-asyncio $PY312 asyncio_tasks.py --no-native -d 600
native-py311-debian $PY311 native.py -c 4000000 -d 800
native-py311-both $PY311 native.py --unwind both -c 4000000 -d 1200
py311-continuous $PY311 methods.py --no-native -F 199 --interval 1 -d 3000
EOF
}

# The C extension of native.py, for PY311.
build_ext() {
	inc=$("$PY311" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
	suffix=$("$PY311" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
	mkdir -p "$work/ext"
	gcc -shared -fPIC -O2 -fno-omit-frame-pointer -I"$inc" -o "$work/ext/cbext$suffix" \
		"$top/tests/ext/cbext.c" || die "cannot build tests/ext/cbext.c (python3-dev?)"
}

record_one() {
	name=$1 interp=$2 workload=$3
	shift 3
	[ -x "$interp" ] || die "$name: $interp not present"
	rm -f "$work/ready"
	(cd "$top" && PYTHONPATH="$work/ext" exec "$interp" "tests/workloads/$workload" 30 > "$work/ready") &
	pid=$!
	i=0
	until grep -q ready "$work/ready" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 200 ] || die "$name: workload did not start"
		sleep 0.1
	done
	sleep 0.2
	case " $* " in *" --interval "*)
		record_series "$name" "$@"
		return ;;
	esac
	"$PYPERF" --pid $pid "$@" -q --record "$work/$name.rec" -o "$work/$name.live.pb.gz" ||
		die "$name: pyperf-pprof failed"
	kill $pid 2>/dev/null; wait $pid 2>/dev/null || true; pid=
	# Replayed as nobody would: no root needed (the process is gone anyway).
	"$PYPERF" --replay "$work/$name.rec" -q -o "$work/$name.replay.pb.gz" ||
		die "$name: replay failed"
	if [ $have_go = 1 ]; then
		HOME=${HOME:-/root} "$GO" tool pprof -raw "$work/$name.live.pb.gz" > "$work/$name.live.raw" 2>&1
		HOME=${HOME:-/root} "$GO" tool pprof -raw "$work/$name.replay.pb.gz" > "$work/$name.raw" 2>&1
		diff -u "$work/$name.live.raw" "$work/$name.raw" > "$work/$name.diff" ||
			{ head -40 "$work/$name.diff"; die "$name: replayed profile differs from the live one"; }
	fi
	cmp -s "$work/$name.live.pb.gz" "$work/$name.replay.pb.gz" ||
		die "$name: replayed profile differs from the live one (bytes)"
	"$PYPERF" --replay "$work/$name.rec" -q --format collapsed -o "$work/$name.collapsed" ||
		die "$name: replay --format collapsed failed"
	"$PYPERF" --replay "$work/$name.rec" -q --all-native --format collapsed -o "$work/$name.all-native.collapsed" ||
		die "$name: replay --all-native failed"
	cp "$work/$name.rec" "$work/$name.collapsed" "$here/"
	cmp -s "$work/$name.collapsed" "$work/$name.all-native.collapsed" ||
		cp "$work/$name.all-native.collapsed" "$here/"
	[ $have_go = 1 ] && cp "$work/$name.raw" "$here/"
	echo "$name: $(wc -c < "$here/$name.rec") bytes, $(awk '{n += $NF} END {print n}' "$here/$name.collapsed") samples, replay equals the live profile"
}

# Continuous mode: the live run's files, by name and bytes, are what the
# replay must write.
record_series() {
	name=$1
	shift
	mkdir "$work/$name.live" "$work/$name.replay"
	"$PYPERF" --pid $pid "$@" -q --record "$work/$name.rec" -o "$work/$name.live/" ||
		die "$name: pyperf-pprof failed"
	kill $pid 2>/dev/null; wait $pid 2>/dev/null || true; pid=
	"$PYPERF" --replay "$work/$name.rec" -q -o "$work/$name.replay/" ||
		die "$name: replay failed"
	(cd "$work/$name.live" && sha256sum -- *) > "$work/$name.live.sums"
	(cd "$work/$name.replay" && sha256sum -- *) > "$work/$name.replay.sums"
	diff -u "$work/$name.live.sums" "$work/$name.replay.sums" ||
		die "$name: the replayed files differ from the live ones (names or bytes)"
	cp "$work/$name.rec" "$here/"
	cp "$work/$name.live.sums" "$here/$name.live"
	echo "$name: $(wc -c < "$here/$name.rec") bytes, $(wc -l < "$here/$name.live") files, replay equals the live files"
}

build_ext
cases | while read -r name interp workload opts; do
	if [ $# -gt 0 ]; then
		case " $* " in *" $name "*) ;; *) continue ;; esac
	fi
	# shellcheck disable=SC2086
	record_one "$name" "$interp" "$workload" $opts
done
total=$(cat "$here"/* | wc -c)
echo "tests/recordings: $total bytes"
[ "$total" -lt $MAX_BYTES ] || die "tests/recordings holds $total bytes, more than $MAX_BYTES"
