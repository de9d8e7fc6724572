#!/bin/sh
# The BPF walk replayed from committed captures, offline (no root, no BPF,
# no interpreter): tests/bpfwalk/test_bpfwalk runs the program's own walk
# (bpf/pywalk.bpf.h, native_unwind.bpf.h, checks.bpf.h compiled into user
# space) on each capture of tests/bpfwalk/captures and must give the
# record the live program gave for that thread state (tests/bpfwalk/
# make-captures.sh made them: pyenv's 3.10, 3.12 and 3.13, Debian's 3.11
# (also in a signal handler), sid's 3.14 and 3.15, plain and -X perf),
# and named through the pipeline (pyperf-pprof --replay) as the live
# profile named them.
#
# Then the test is shown to fail when a step of the walk is broken: each
# mutant below is one line of a copy of bpf/ changed, the harness built
# again against it (BPFWALK_CC, BPFWALK_LIBS from make check), and the
# replay must then fail on at least one capture. A mutant the captures do
# not catch fails this test; so does one whose captures are missing.
set -u
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
TEST=${TEST_BPFWALK:-./tests/bpfwalk/test_bpfwalk}
# The captures the mutants below count on (each names its own).
EXPECTED="py310-pyenv py311-debian py311-debian-signal py312-pyenv py313-pyenv py314-sid py314-sid-perf py315-sid py315-sid-perf"
caps=
failed=0
for c in $EXPECTED; do
	f=$TOP_SRCDIR/tests/bpfwalk/captures/$c.cap
	if [ -f "$f" ]; then
		caps="$caps $f"
	else
		echo "FAIL tests/bpfwalk/captures/$c.cap is missing (tests/bpfwalk/make-captures.sh $c)"
		failed=1
	fi
done
[ -n "$caps" ] || exit 1
work=$(mktemp -d /tmp/pyperf-bpfwalk.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
# shellcheck disable=SC2086 # caps: paths without spaces
if "$TEST" --records "$work" $caps; then
	echo "PASS $(echo $caps | wc -w) captures replayed through the BPF walk give the live records"
else
	echo "FAIL the BPF walk in user space differs from the live program's records"
	failed=1
fi

# The running task's search (find_tasks) on made-up 3.14 states: when
# the record may say no task ran (SAMPLE_F_NO_TASK) and when not.
if "$TEST" --tasks > "$work/tasks.out" 2>&1; then
	echo "PASS $(grep -c '^ok' "$work/tasks.out") made-up thread states give the running task's search its answer"
else
	grep -v '^ok' "$work/tasks.out"
	echo "FAIL the running task's search on made-up thread states"
	failed=1
fi

# Then through the pipeline: each record the walk made replaces the live
# one in NAME.names.rec (what the pipeline read to name its Python
# frames, tests/bpfwalk/recnames.py), and pyperf-pprof --replay must name
# the frames the live profile named (NAME.names).
if [ "$("$TEST" --layout)" != "$("${PYTHON3:-python3}" "$TOP_SRCDIR/tests/bpfwalk/recnames.py" layout)" ]; then
	echo "FAIL struct py_sample_hdr changed: tests/bpfwalk/recnames.py's offsets and the captures' names (make-captures.sh) are to be made again"
	failed=1
fi
for c in $caps; do
	n=$(basename "$c" .cap)
	d=$TOP_SRCDIR/tests/bpfwalk/captures
	"${PYTHON3:-python3}" "$TOP_SRCDIR/tests/bpfwalk/recnames.py" splice "$d/$n.names.rec" \
		"$work/$n.bin" "$work/$n.rec" &&
		"$PYPERF" --replay "$work/$n.rec" -q --format collapsed -o "$work/$n.folded" &&
		"${PYTHON3:-python3}" "$TOP_SRCDIR/tests/bpfwalk/recnames.py" frames "$work/$n.folded" \
			> "$work/$n.names"
	if cmp -s "$work/$n.names" "$d/$n.names"; then
		echo "ok $n: the walk's record named through the pipeline: $(wc -l < "$d/$n.names") Python frames as in the live profile"
	else
		diff "$d/$n.names" "$work/$n.names" | head -10
		echo "FAIL $n: the walk's record is named otherwise than in the live profile"
		failed=1
	fi
done

# name|file in bpf/|captures that must catch it (tasks: the made-up
# states of --tasks)|sed expression (one line changed: checked). Not here, because no capture takes those paths: the
# tag bits of 3.14+'s f_executable (set for deferred references, in
# free-threaded builds: GIL builds leave these code references untagged),
# caller_cframe (a sample between two instructions of the eval loop's
# entry), and <= 3.10's f_lasti read as an int (the int after it,
# f_lineno, is 0 while a frame runs untraced).
mutants() {
	cat <<'EOF'
frame window|pywalk.bpf.h|*|s/py_frame_decode(off, w->b + ((addr - ws->lo)/py_frame_decode(off, w->b + ((addr + 8 - ws->lo)/
next frame|pywalk.bpf.h|*|s/^\tc->frame = f.back;/\tc->frame = f.back - (i == 4 ? 16 : 0);/
thread state|pywalk.bpf.h|*|s/^\treturn v == ident;/\treturn v == ident + 1;/
first frame by cframe (3.11-3.12)|pywalk.bpf.h|py31[12]-*|s/if (read_ptr(\&f, f + off->cframe_current_frame)) {/if (read_ptr(\&f, f + off->cframe_current_frame + 8)) {/
cframe anchor (3.11)|native_unwind.bpf.h|py311-*|s/held_word(r, prev + s->anchor_link, \&v)/held_word(r, prev + s->anchor_link + 8, \&v)/
cframe anchor from the stack window (3.11)|native_unwind.bpf.h|py311-*|s/\*v = \*(__u64 \*)(b->b + (off \& (PY_STACK_WIN - 1)));/*v = *(__u64 *)(b->b + ((off + 8) \& (PY_STACK_WIN - 1)));/
next anchor wanted|native_unwind.bpf.h|*|s/s->anchor_want = next < na ? next_anchor(s, r, next, want) : ~0ULL;/s->anchor_want = ~0ULL;/
stored anchors (3.11: the lazy ones follow)|pywalk.bpf.h|py311-*|s/^\ts->na_real = k + 1;/\ts->na_real = k + 2;/
shim anchor (3.12+)|pywalk.bpf.h|py31[2-5]-*|s/^\t\tput_anchor(c->s, addr);/\t\tput_anchor(c->s, f.back);/
entry flag|pyperf.h|py311-*|s/off->entry_kind == PY_ENTRY_FLAG \&\& f->is_entry/off->entry_kind == PY_ENTRY_FLAG \&\& !f->is_entry/
shim owner|pyperf.h|py31[2-5]-*|s/f->owner >= off->owner_shim/f->owner > off->owner_shim/
self (3.10)|pyperf.h|py310-*|s/f->self = PY_WIN_LD(w, off->frame_localsplus, __u64);/f->self = PY_WIN_LD(w, off->frame_localsplus + 8, __u64);/
GIL holder|pyperf.h|*|s/g->locked == 1 \&\& g->holder == tstate/g->holder == tstate/
row step cfa|native_unwind.bpf.h|*|s/^\tw->sp = cfa;/\tw->sp = cfa + 8;/
row step return address|native_unwind.bpf.h|*|s/stack_words(w, cfa - 8, \&ra, 0)/stack_words(w, cfa - 16, \&ra, 0)/
saved rbp|native_unwind.bpf.h|*|s/^\t\tbp = fr\[0\];/\t\tbp = fr[0] + 8;/
frame-pointer step|native_unwind.bpf.h|*|s/w->sp = w->bp + 16;/w->sp = w->bp + 24;/
frame-pointer bound (as it was before rbp == sp was allowed)|native_unwind.bpf.h|*|s/if (w->bp < w->sp || (w->bp \& 7))/if (w->bp <= w->sp || (w->bp \& 7))/
trampoline mark|native_unwind.bpf.h|py31[45]-*-perf|s/\*pc |= PY_PC_TRAMPOLINE;/*pc |= 0;/
anchor tag|native_unwind.bpf.h|*|s/PY_PC_EVAL | (__u64)g << PY_PC_GROUP_SHIFT/(__u64)g << PY_PC_GROUP_SHIFT/
signal frame|native_unwind.bpf.h|*-signal|s/(const void \*)(w->sp + UC_RIP)))/(const void *)(w->sp + UC_RIP + 8)))/
map search|native_unwind.bpf.h|*|s/return pc < p->m\[lo\].end ? \&p->m\[lo\] : NULL;/return pc + 4096 < p->m[lo].end ? \&p->m[lo] : NULL;/
row search|native_unwind.bpf.h|*|s/^\treturn lo - 1;/\treturn lo > base + 1 ? lo - 2 : lo - 1;/
capture name|checks.bpf.h|*|s/__builtin_memcpy(\&name, c->obj + name_off, sizeof(name));/__builtin_memcpy(\&name, c->obj + file_off, sizeof(name));/
new code|checks.bpf.h|*|s/^\treturn capture_code(off, s, code) ?/\treturn capture_code(off, s, code + 8) ?/
no task: the thread state's running task read NULL|asynctask.bpf.h|tasks|s/^\t\t\tnone = 1;/\t\t\tnone = 0;/
no task: the dict read whole|asynctask.bpf.h|tasks|s/^\treturn none \&\& read;/\treturn none;/
no task: a task in the dict|asynctask.bpf.h|tasks|s/^\t\t\tnone = 0;/\t\t\tnone = none;/
no task: before 3.14 only a dict of every task|asynctask.bpf.h|tasks|s/^\tnone = !src->ts_task \&\& src->dict_all == 1;/\tnone = !src->ts_task;/
no task: the shared empty keys|asynctask.bpf.h|tasks|s/^\tif (!nent) {/\tif (!nent \&\& !src) {/
EOF
}

if [ -z "${BPFWALK_CC:-}" ] || [ -z "${BPFWALK_LIBS:-}" ]; then
	echo "FAIL BPFWALK_CC and BPFWALK_LIBS are not set (make check sets them): mutants not built"
	exit 1
fi
n=0 caught=0
while IFS='|' read -r name file want expr; do
	n=$((n + 1))
	rm -rf "$work/bpf"
	cp -r "$TOP_SRCDIR/bpf" "$work/bpf"
	sed "$expr" "$TOP_SRCDIR/bpf/$file" > "$work/bpf/$file"
	if [ "$(diff "$TOP_SRCDIR/bpf/$file" "$work/bpf/$file" | grep -c '^>')" != 1 ]; then
		echo "FAIL mutant '$name' changes no line (or several) of bpf/$file: the source moved"
		failed=1
		continue
	fi
	# shellcheck disable=SC2086 # flags: words
	if ! $BPFWALK_CC -iquote "$work/bpf" -o "$work/mutant" \
		"$TOP_SRCDIR/tests/bpfwalk/test_bpfwalk.c" "$TOP_SRCDIR/tests/bpfwalk/bpfwalk.c" \
		"$TOP_SRCDIR/tests/bpfwalk/bwcap.c" "$TOP_SRCDIR/tests/bpfwalk/bwtasks.c" \
		$BPFWALK_LIBS > "$work/cc.log" 2>&1; then
		head -5 "$work/cc.log"
		echo "FAIL mutant '$name' does not build"
		failed=1
		continue
	fi
	mine=
	[ "$want" = tasks ] && mine=--tasks	# made-up states, not captures
	for c in $caps; do
		# shellcheck disable=SC2254 # want: a pattern
		case $(basename "$c" .cap) in $want) mine="$mine $c" ;; esac
	done
	if [ -z "$mine" ]; then
		echo "FAIL mutant '$name' (bpf/$file): no capture of '$want' to catch it"
		failed=1
		continue
	fi
	# shellcheck disable=SC2086
	"$work/mutant" $mine > "$work/out" 2>&1
	rc=$?
	if [ $rc = 3 ]; then	# differences; not a crash (1: sanitizers) nor 2
		caught=$((caught + 1))
		of="$(echo "$mine" | wc -w) captures of '$want'"
		[ "$want" = tasks ] && of="$(grep -c '^ok\|^FAIL' "$work/out") made-up states"
		echo "ok mutant '$name' (bpf/$file): $(grep -c '^FAIL' "$work/out") of $of differ"
	else
		echo "FAIL mutant '$name' (bpf/$file): the replay of '$want' did not notice (exit $rc)"
		failed=1
	fi
done <<EOF
$(mutants)
EOF
echo "$caught of $n mutants of the walk caught"
[ $failed = 0 ] && echo "PASS" || echo "FAIL"
exit $failed
