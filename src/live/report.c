/* Status line and summary of a live session; see report.h. */
#include "report.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "ktables.h"

/* What the user asked to see: nothing of the summary with --quiet. */
static void say(const struct report_view *v, const char *fmt, ...)
{
	va_list ap;

	if (v->cfg->quiet)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

void report_status(const struct report_view *v, int final)
{
	const struct sample_counts *n = &v->sink->n;

	fprintf(stderr, "\r\033[K%.1fs", v->elapsed_ns / 1e9);
	if (v->cfg->duration_ms)
		fprintf(stderr, "/%.1fs", v->cfg->duration_ms / 1e3);
	fprintf(stderr, "  samples %" PRIu64 "  processes %d  threads %" PRIu64
		"  lost %" PRIu64 "  errors %" PRIu64 "%s",
		n->records, v->processes, n->threads, v->bpf[STAT_LOST],
		n->bad_frames + n->read_errors + n->malformed, final ? "\n" : "");
}

static void print_kernel_unwind_stats(const struct report_view *v)
{
	const struct ktables_stats *k = ktables_get_stats(v->kt);
	const uint64_t *b = v->bpf;

	fprintf(stderr, "pyperf-pprof: bpf unwind: walks=%" PRIu64 " frames=%" PRIu64 " (fp %" PRIu64
		", plt %" PRIu64 ", signal %" PRIu64 ") ends: max=%" PRIu64 " no_proc=%" PRIu64
		" no_map=%" PRIu64 " read=%" PRIu64 " bad=%" PRIu64 " (stack copied %" PRIu64 ")\n",
		b[STAT_NATIVE_WALKS],
		b[STAT_NATIVE_FRAMES], b[STAT_NATIVE_FP], b[STAT_NATIVE_PLT], b[STAT_NATIVE_SIGNAL],
		b[STAT_NATIVE_END_MAX], b[STAT_NATIVE_END_NO_PROC], b[STAT_NATIVE_END_NO_MAP],
		b[STAT_NATIVE_END_READ], b[STAT_NATIVE_END_BAD], b[STAT_NATIVE_COPY]);
	fprintf(stderr, "pyperf-pprof: unwind tables: objects=%" PRIu64 " (no cfi %" PRIu64
		", failed %" PRIu64 ") rows=%" PRIu64 " (%" PRIu64 " KiB) loads=%" PRIu64
		" (copied at a fork %" PRIu64 ") throttled=%" PRIu64 " resets=%" PRIu64 " maps_dropped=%" PRIu64 " build=%.1f ms"
		" trampoline tables=%" PRIu64 " (anonymous code without a usable template %" PRIu64 ")\n",
		k->objects, k->objects_no_cfi, k->objects_failed, k->rows,
		k->rows * sizeof(struct py_unwind_row) / 1024, k->pid_loads, k->pid_copies,
		k->pid_throttled,
		k->resets, k->maps_dropped, (double)k->build_ns / 1e6, k->anon_tables,
		k->anon_no_template);
}

static void print_native_stats(const struct report_view *v)
{
	const struct unwind_stats *u = v->sink->unw ? unwind_get_stats(v->sink->unw) : NULL;
	const struct nsym_stats *y = nsym_get_stats(v->sink->nsym);

	if (v->kt)
		print_kernel_unwind_stats(v);
	if (!u)
		goto symbols;
	fprintf(stderr, "pyperf-pprof: unwind: stacks=%" PRIu64 " frames=%" PRIu64 " (dwarf %" PRIu64
		", fp %" PRIu64 ", trampoline %" PRIu64 ") ends: outermost=%" PRIu64 " max=%" PRIu64
		" no_info=%" PRIu64 " bad_frame=%" PRIu64 " read=%" PRIu64 "\n", u->stacks, u->frames,
		u->frames_dwarf, u->frames_fp, u->frames_trampoline, u->end_outermost, u->end_max, u->end_no_info, u->end_bad_frame,
		u->end_read);
	fprintf(stderr, "pyperf-pprof: unwind memory: words from stack=%" PRIu64 " file=%" PRIu64
		" target=%" PRIu64 " failed=%" PRIu64 "; .debug_frame tables=%" PRIu64 "\n",
		u->mem_stack, u->mem_file, u->mem_target, u->mem_failed, u->debug_frame_tables);
symbols:
	fprintf(stderr, "pyperf-pprof: symbols: lookups=%" PRIu64 " found=%" PRIu64
		" from debug files=%" PRIu64 " symbols=%" PRIu64 " bytes=%" PRIu64 "\n", y->lookups,
		y->found, y->debug_files, y->symbols, y->bytes);
}

static void print_task_stats(const struct report_view *v)
{
	struct pyasyncio_stats a;

	pyasyncio_get_stats(v->sink->tasks, &a);
	fprintf(stderr, "pyperf-pprof: asyncio tasks: labelled=%" PRIu64 " hits=%" PRIu64
		" lookups=%" PRIu64 " mismatches=%" PRIu64 " evictions=%" PRIu64
		" refusals=%" PRIu64 " captured=%" PRIu64 " capture_refused=%" PRIu64
		" none_at_sample=%" PRIu64 "\n",
		a.labelled, a.hits, a.lookups, a.mismatches, a.evictions, a.refusals, a.captured,
		a.capture_refused, v->sink->n.task_none);
	if (v->sink->awaits) {
		struct pyawait_stats w;

		pyawait_get_stats(v->sink->awaits, &w);
		fprintf(stderr, "pyperf-pprof: --async: stacks=%" PRIu64 " unmatched=%" PRIu64
			" chains=%" PRIu64 " task reads=%" PRIu64 " hits=%" PRIu64
			" gone=%" PRIu64 " awaiter unknown=%" PRIu64 " failed=%" PRIu64
			" refusals=%" PRIu64 "\n",
			v->sink->n.async_stacks, v->sink->n.async_unmatched, w.chains, w.reads,
			w.hits, w.gone, w.unknown, w.failed, w.refusals);
	}
}

/* Objects whose native frames mostly stay unnamed: what to install. */
static void print_symbol_gaps(const struct report_view *v)
{
	char line[1024];

	for (size_t i = 0; i < v->sink->gaps.n; i++)
		if (symgap_hint(&v->sink->gaps, i, 100, 10, line, sizeof(line)))
			say(v, "pyperf-pprof: %s\n", line);
}

/* Time the targets ran that no sample covers: the kernel throttled the
 * events or fired them late (STAT_LATE_NS, an estimate: a VM's stolen
 * time counts too), or the ring buffer was full (STAT_LOST_NS). Said
 * when over 5 % of what was sampled (a loaded VM at -F 1000: 2 %). */
static void print_unsampled(const struct report_view *v)
{
	double late = (double)v->bpf[STAT_LATE_NS] / 1e6, lost = (double)v->bpf[STAT_LOST_NS] / 1e6;
	double sampled = (double)v->sink->n.records * (double)(v->cfg->frequency ?
		1000000000ULL / v->cfg->frequency : v->cfg->sample_period) / 1e6;

	if (v->cfg->wall || (late + lost) * 20 <= sampled || !sampled)
		return;
	say(v, "pyperf-pprof: warning: about %.0f ms the targets ran were not sampled (%.0f ms: the kernel throttled the events or fired them late, %" PRIu64
	    " times; %.0f ms: %" PRIu64 " records lost), against %.0f ms sampled: the weights undercount; use a lower -F or a larger -c\n",
	    late + lost, late, v->bpf[STAT_LATE], lost, v->bpf[STAT_LOST], sampled);
}

void report_summary(const struct report_view *v)
{
	const struct sample_counts *n = &v->sink->n;
	struct pysym_stats ps;
	struct pythread_stats ts;
	char objs[512];

	say(v, "pyperf-pprof: %" PRIu64 " samples (%zu distinct stacks) from %d process%s, %"
	    PRIu64 " thread%s; lost %" PRIu64 "\n", n->records,
	    v->stacks, (int)v->processes_seen, v->processes_seen == 1 ? "" : "es",
	    n->threads, n->threads == 1 ? "" : "s", v->bpf[STAT_LOST]);
	say(v, "pyperf-pprof: errors: %" PRIu64 " without Python stack, %" PRIu64
	    " truncated, %" PRIu64 " unreadable frames, %" PRIu64 " walks cut at a bad frame, %"
	    PRIu64 " partial reads, %" PRIu64 " malformed records\n", n->no_python, n->truncated,
	    n->bad_frames, n->cut_walks, n->read_errors, n->malformed);
	print_unsampled(v);
	if (v->sink->diff && !v->cfg->quiet)
		native_diff_print(v->sink->diff, stderr);
	if (v->sink->nsym)
		say(v, "pyperf-pprof: native: %" PRIu64 " stacks unwound, %" PRIu64
		    " stopped early, %" PRIu64 " stack copies failed, %" PRIu64 " merge mismatches, %"
		    PRIu64 " marked (mapping not loaded yet), %" PRIu64
		    " perf trampoline frames hidden, %" PRIu64 " unwound from a stack copy"
		    " (tables not loaded yet)\n", n->native_stacks, n->native_errors,
		    n->stack_errors, n->merge_errors, n->native_not_loaded, n->trampolines,
		    n->native_copied);
	if (v->sink->nsym && n->native_errors)
		say(v, "pyperf-pprof: native: stopped early in BPF: %" PRIu64 " at a frame limit, %"
		    PRIu64 " unreadable stack, %" PRIu64 " bad frame; on a stack copy: %" PRIu64
		    " at a frame limit, %" PRIu64 " no unwind info, %" PRIu64 " bad frame, %" PRIu64
		    " unreadable memory\n", n->kernel_end[PY_NATIVE_END_MAX],
		    n->kernel_end[PY_NATIVE_END_READ], n->kernel_end[PY_NATIVE_END_BAD],
		    n->user_end[UNWIND_END_MAX], n->user_end[UNWIND_END_NO_INFO],
		    n->user_end[UNWIND_END_BAD_FRAME], n->user_end[UNWIND_END_READ]);
	if (v->ksym)
		say(v, "pyperf-pprof: kernel: %" PRIu64 " samples with kernel frames (%zu kernel symbols)\n",
		    n->kernel_stacks, ksym_count(v->ksym));
	print_symbol_gaps(v);
	if (!v->cfg->verbose)
		return;
	pysym_get_stats(v->sink->syms, &ps);
	fprintf(stderr, "pyperf-pprof: records: %" PRIu64 " bytes, %.0f bytes per record\n",
		n->record_bytes, n->records ? (double)n->record_bytes / (double)n->records : 0.0);
	fprintf(stderr, "pyperf-pprof: bpf: events=%" PRIu64 " sent=%" PRIu64 " lost=%" PRIu64
		" no_tstate=%" PRIu64 " read_err=%" PRIu64 " truncated=%" PRIu64
		" vma_err=%" PRIu64 " stack_read_err=%" PRIu64 " stack_partial=%" PRIu64
		" bad_chain=%" PRIu64 " cframe_fallback=%" PRIu64 " new_code_wakeups=%" PRIu64
		" code_captures=%" PRIu64 " task_cands=%" PRIu64 " task_found=%" PRIu64 " task_none=%" PRIu64 "\n",
		v->bpf[STAT_EVENTS], v->bpf[STAT_SENT], v->bpf[STAT_LOST],
		v->bpf[STAT_NO_TSTATE], v->bpf[STAT_READ_ERR],
		v->bpf[STAT_TRUNCATED], v->bpf[STAT_VMA_ERR],
		v->bpf[STAT_STACK_READ_ERR], v->bpf[STAT_STACK_PARTIAL],
		v->bpf[STAT_BAD_CHAIN], v->bpf[STAT_CFRAME_FALLBACK], v->bpf[STAT_FRESH_WAKEUPS],
		v->bpf[STAT_CODE_CAPTURES], v->bpf[STAT_TASK_CANDS], v->bpf[STAT_TASK_FOUND],
		v->bpf[STAT_TASK_NONE]);
	fprintf(stderr, "pyperf-pprof: bpf time: %.2f us per target sample (%.2f us of it in the native walk)\n",
		v->bpf[STAT_EVENTS] ? (double)v->bpf[STAT_TARGET_NS] / 1e3 /
		(double)v->bpf[STAT_EVENTS] : 0.0,
		v->bpf[STAT_EVENTS] ? (double)v->bpf[STAT_NATIVE_NS] / 1e3 /
		(double)v->bpf[STAT_EVENTS] : 0.0);
	fprintf(stderr, "pyperf-pprof: code-object cache: hits=%" PRIu64 " misses=%" PRIu64
		" evictions=%" PRIu64 " stale=%" PRIu64 " errors=%" PRIu64 " checks=%" PRIu64
		" (%" PRIu64 " read by the BPF program, the rest in %" PRIu64 " reads), skipped=%"
		PRIu64 ", named by the BPF program at their first sample %" PRIu64 " (%" PRIu64
		" made from them, %" PRIu64 " without reading the line table; used %" PRIu64
		" times: gone when read)\n", ps.hits, ps.misses, ps.evictions, ps.stale, ps.errors,
		ps.checks, ps.answered, ps.check_reads, ps.fresh, ps.captures, ps.captured_loads,
		ps.captured_tables, ps.from_captures);
	fprintf(stderr, "pyperf-pprof: records added in %" PRIu64 " batches, %" PRIu64
		" of them early (a code object not read yet, or a mapping without tables)\n",
		v->batches, v->batches_early);
	pythread_get_stats(v->sink->threads, &ts);
	fprintf(stderr, "pyperf-pprof: thread-name cache: hits=%" PRIu64 " lookups=%" PRIu64
		" failures=%" PRIu64 " threading._active searches=%" PRIu64 " evictions=%" PRIu64
		"\n", ts.hits, ts.lookups, ts.failures, ts.resolves, ts.evictions);
	print_task_stats(v);
	if (v->sink->nsym)
		print_native_stats(v);
	objcache_describe(v->sink->objs, objs, sizeof(objs));
	fprintf(stderr, "pyperf-pprof: %s\n", objs);
}

/* Why a run ended without a sample, and what to do, in one line. The
 * first case that fits: nothing ever ran Python, only threads that held
 * no GIL, or targets that never ran on a CPU while sampled (blocked, or
 * too short for one sample period). */
int report_empty(const struct report_view *v)
{
	const struct config *c = v->cfg;
	const char *what = c->command ? "the command" : c->all ? "no process" : "the target";

	if (v->sink->n.records)
		return 0;
	if (!v->processes_seen && c->command && !c->subprocesses)
		fprintf(stderr, "pyperf-pprof: no sample: %s (%s) never ran Python itself; if it starts Python processes (a shell script, a wrapper), add --subprocesses\n",
			what, c->command[0]);
	else if (!v->processes_seen)
		fprintf(stderr, "pyperf-pprof: no sample: %s ran Python%s during the run\n",
			c->all ? "no process on this host" : "neither the command nor a process it started",
			c->all ? " on a CPU" : "");
	else if (c->gil_only)
		fprintf(stderr, "pyperf-pprof: no sample: no thread of %s held the GIL while on a CPU; drop --gil to see the others\n",
			c->all ? "a Python process" : what);
	else if (!c->wall)
		fprintf(stderr, "pyperf-pprof: no sample: %s never ran on a CPU while sampled (blocked, sleeping, or shorter than one sample period): use --mode wall to see where it waits\n",
			c->all ? "no Python process" : what);
	else
		fprintf(stderr, "pyperf-pprof: no sample: %s ran no Python thread during the run\n",
			c->all ? "no Python process" : what);
	return 1;
}
