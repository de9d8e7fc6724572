#!/bin/sh
# fuzz/run.sh [SECONDS | brief]: builds the libFuzzer targets (fuzz/fuzz_*.c) with
# clang -fsanitize=fuzzer,address,undefined straight from the source files,
# into a temporary directory, and runs each for SECONDS (default 60),
# starting from the seed corpus fuzz/corpus/<target>/ (read only: new
# inputs go to the temporary directory). Prints the executions per target
# from libFuzzer's final statistics. Exits 0 if no target found anything,
# 1 if one crashed, leaked, hit a sanitizer error or a check (the input is
# kept in $FUZZ_ARTIFACTS, with the binary to reproduce it:
# `fuzz-artifacts/fuzz_elf fuzz-artifacts/elf-crash-...`), 2 if a target
# did not build, 77 if clang's libFuzzer runtime is missing.
#
# `brief` (make check): every target runs a fixed number of inputs (about
# five seconds here) from a fixed seed, so the run is the same on every
# machine and a CI result does not depend on what a random search met that
# day; open-ended search is `make fuzz`, and what it finds goes to the
# seed corpus as a regression input.
#
# Environment:
#   BUILDDIR        configured build tree holding the generated
#                   proto/profile.pb-c.c (default: the source tree, else it
#                   is generated here with protoc-c)
#   FUZZ_TARGETS    targets to run (default: all)
#   FUZZ_PARALLEL   targets run at once (default 1)
#   FUZZ_ARTIFACTS  where crash inputs go (default ./fuzz-artifacts)
#   FUZZ_CORPUS_OUT keep the grown corpora in this directory
#   CC_FUZZ         compiler (default clang)
set -u
secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
cc=${CC_FUZZ:-clang}
targets=${FUZZ_TARGETS:-"elf maps linetable debugoffsets merge profile replay debug_frame unwind_table"}
parallel=${FUZZ_PARALLEL:-1}
artifacts=${FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}
builddir=${BUILDDIR:-$top}

case $secs in
brief) ;;
''|*[!0-9]*) echo "usage: fuzz/run.sh [SECONDS | brief]" >&2; exit 2 ;;
esac
command -v "$cc" >/dev/null 2>&1 || { echo "fuzz: $cc not found" >&2; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/pyperf-fuzz.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# The sanitizer runtime of this clang must be installed (libclang-rt-N-dev).
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' > "$work/probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$work/probe.c" -o "$work/probe" 2>"$work/probe.err"; then
	echo "fuzz: $cc cannot link -fsanitize=fuzzer,address,undefined (is libclang-rt-dev of this clang installed?):" >&2
	sed 's/^/  /' "$work/probe.err" | head -5 >&2
	exit 77
fi

# Generated protobuf-c code for fuzz_profile.
proto=$builddir/proto
if [ ! -f "$proto/profile.pb-c.c" ]; then
	proto=$work/proto
	mkdir -p "$proto"
	if ! protoc-c -I"$top/proto" --c_out="$proto" "$top/proto/profile.proto" 2>"$work/protoc.err"; then
		echo "fuzz: no $builddir/proto/profile.pb-c.c and protoc-c failed (set BUILDDIR to a built tree):" >&2
		cat "$work/protoc.err" >&2
		exit 2
	fi
fi

CFLAGS_FUZZ="-g -O1 -std=gnu11 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	$(for d in src src/live src/memsource src/python src/native src/pipeline src/output src/record; do printf -- "-I%s/%s " "$top" "$d"; done) -I$top/bpf -I$proto -I$here"

sources() {
	case $1 in
	elf) echo "src/memsource/elffile.c src/memsource/live_src.c src/memsource/maps_text.c src/memsource/proc.c src/memsource/proc_root.c" ;;
	maps) echo "src/memsource/proc.c" ;;
	linetable) echo "src/python/linetable.c" ;;
	debugoffsets) echo "src/python/pydebugoffsets.c src/python/pylayout_rows.c" ;;
	merge) echo "src/pipeline/merge.c" ;;
	debug_frame) echo "src/native/debug_frame.c" ;;
	unwind_table) echo "src/native/unwind_table.c src/memsource/elffile.c src/memsource/live_src.c src/memsource/maps_text.c src/memsource/proc.c src/memsource/proc_root.c" ;;
	profile) echo "src/pipeline/profile.c src/output/pprof_write.c src/output/collapsed.c" ;;
	replay) echo "src/record/record_codec.c src/record/recorder.c src/record/elf_reduce.c src/record/recording.c src/record/replay_src.c src/record/replay.c src/memsource/proc.c src/memsource/proc_root.c src/memsource/elffile.c src/memsource/live_src.c src/memsource/maps_text.c src/pipeline/sample.c src/pipeline/asyncstack.c src/pipeline/merge.c src/pipeline/native_diff.c
		src/native/objcache.c src/native/debug_frame.c src/native/unwind.c src/native/unwind_table.c src/native/trampoline.c src/native/nsym.c src/native/plt.c src/native/ksym.c
		src/pipeline/native_filter.c src/python/pyfuncs.c src/pipeline/symgap.c src/python/pysym.c src/python/pycapture.c src/python/pythread.c src/python/pyobj.c src/python/pystrhash.c src/python/pyasyncio.c src/python/pyasyncio_debug.c src/python/pyawait.c src/python/linetable.c
		src/python/pyoffsets_table.c src/python/pydebugoffsets.c src/python/pylayout.c src/python/pyeval.c src/python/pytramp.c src/python/pyversion.c
		src/python/pylayout_rows.c src/pipeline/profile.c src/pipeline/pipeline.c src/output/pprof_write.c
		src/output/collapsed.c src/output/output.c" ;;
	*) return 1 ;;
	esac
}

libs() {
	case $1 in
	elf|unwind_table) echo "-lelf -lz" ;;
	profile) echo "-lprotobuf-c -lz" ;;
	replay) echo "-lelf -lz -lprotobuf-c -lunwind-generic -lunwind" ;;
	esac
}

# Longest input tried: files for elf and maps, small for the rest.
maxlen() {
	case $1 in
	elf|maps|replay|debug_frame|unwind_table) echo 65536 ;;
	debugoffsets|profile) echo 8192 ;;
	*) echo 4096 ;;
	esac
}

build() {
	t=$1
	src=$(sources "$t") || { echo "fuzz: unknown target $t" >&2; return 1; }
	set --
	for s in $src; do set -- "$@" "$top/$s"; done
	case $t in profile|replay) set -- "$@" "$proto/profile.pb-c.c" ;; esac
	# shellcheck disable=SC2046,SC2086
	$cc $CFLAGS_FUZZ "$here/fuzz_$t.c" "$@" $(libs "$t") -o "$work/fuzz_$t" \
		>"$work/build-$t.log" 2>&1
}

# Inputs a brief run tries per target: about five seconds' worth on a
# 2-CPU machine with the sanitizers on.
brief_runs() {
	case $1 in
	replay) echo 1000 ;;
	linetable|profile) echo 25000 ;;
	debug_frame|unwind_table) echo 400000 ;;
	*) echo 100000 ;;
	esac
}

# How long or how far one target runs.
limits() {
	if [ "$secs" = brief ]; then
		echo "-runs=$(brief_runs "$1") -seed=1"
	else
		echo "-max_total_time=$secs"
	fi
}

# Runs one target; its result goes to $work/$t.result.
run() {
	t=$1
	out=$work/corpus-$t
	mkdir -p "$out" "$artifacts"
	start=$(date +%s)
	# shellcheck disable=SC2046 # limits: separate options
	"$work/fuzz_$t" $(limits "$t") -print_final_stats=1 \
		-timeout=30 -rss_limit_mb=2560 -max_len="$(maxlen "$t")" \
		-artifact_prefix="$artifacts/$t-" \
		"$out" "$here/corpus/$t" >"$work/$t.log" 2>&1
	rc=$?
	end=$(date +%s)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$work/$t.log" | tail -1 | sed 's/cov: //')
	units=$(find "$out" -type f | wc -l)
	echo "$rc ${execs:-?} ${cov:-?} $units $((end - start))" >"$work/$t.result"
	if [ -n "${FUZZ_CORPUS_OUT:-}" ]; then
		mkdir -p "$FUZZ_CORPUS_OUT/$t"
		cp "$out"/* "$FUZZ_CORPUS_OUT/$t"/ 2>/dev/null
	fi
}

status=0
built=""
for t in $targets; do
	if build "$t"; then
		built="$built $t"
	else
		echo "fuzz_$t: BUILD FAILED"
		sed 's/^/  /' "$work/build-$t.log" | head -30
		status=2
	fi
done

# shellcheck disable=SC2086 # target names: one word each
set -- $built
while [ $# -gt 0 ]; do
	batch=""
	i=0
	while [ $# -gt 0 ] && [ $i -lt "$parallel" ]; do
		run "$1" &
		batch="$batch $1"
		i=$((i + 1))
		shift
	done
	wait
	for t in $batch; do
		read -r rc execs cov units took <"$work/$t.result"
		if [ "$rc" = 0 ]; then
			echo "fuzz_$t: $execs executions in ${took}s, coverage $cov, $units new inputs, no crash"
			continue
		fi
		status=1
		cp "$work/fuzz_$t" "$artifacts/fuzz_$t"
		echo "fuzz_$t: FAILED (libFuzzer exit $rc) after $execs executions"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|.*check failed|artifact_prefix|Test unit written)' \
			"$work/$t.log" | head -20 | sed 's/^/  /'
		cp "$work/$t.log" "$artifacts/fuzz_$t.log"
		echo "  log: $artifacts/fuzz_$t.log; reproduce: $artifacts/fuzz_$t <crash file>"
	done
done
rmdir "$artifacts" 2>/dev/null	# only if nothing was found
exit $status
