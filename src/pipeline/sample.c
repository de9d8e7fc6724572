/*
 * Turns the raw frame records of one BPF sample into pprof locations, leaf
 * first, and adds the sample with its labels. States that are not Python
 * code (no thread state, truncated stack, unreadable frame) become visible
 * bracketed frames, so their CPU time is shown rather than lost.
 */
#include "sample.h"

#include "asyncstack.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t synthetic(struct sample_sink *k, const char *name)
{
	uint64_t fid = profile_function(k->prof, name, "", "", 0);

	return fid ? profile_location(k->prof, 0, 0, fid, 0) : 0;
}

/* Python frames belong to the interpreter binary: one mapping per target
 * marked as already symbolized, so pprof neither warns nor re-symbolizes.
 * Asked for on every sample: memoized per target and profile, the module
 * compared, as interning it costs a hash of the path and two searches. */
static uint64_t interpreter_mapping(struct sample_sink *k, const struct py_target *t)
{
	struct profile_mapping_desc m = {
		.filename = t->module,
		.has_functions = true,
		.has_filenames = true,
		.has_line_numbers = true,
	};
	uint64_t prof = profile_serial(k->prof);
	struct interp_memo *im = &k->imemo[((uintptr_t)t >> 4) % INTERP_MEMO];

	if (im->t == t && im->prof == prof && strcmp(im->module, t->module) == 0)
		return im->mid;
	im->mid = profile_mapping(k->prof, &m);
	im->t = im->mid ? t : NULL;
	im->prof = prof;
	snprintf(im->module, sizeof(im->module), "%s", t->module);
	return im->mid;
}

static struct loc_memo *memo_slot(struct sample_sink *k, uint64_t key, uint64_t lasti)
{
	return &k->memo[(key * 0x9e3779b97f4a7c15ULL ^ lasti) % LOC_MEMO];
}

/* The BPF walk stopped at a frame it could not trust (garbage by
 * py_frame_classify() in bpf/pyperf.h, or a cycle by walk_step()'s check in
 * pyperf.bpf.c): what lay beyond was
 * garbage, so the stack ends here with one placeholder that closes its
 * eval-loop group. Returns the new count, 0 if out of memory. */
static size_t cut_walk(struct sample_sink *k, size_t n, int after_one)
{
	uint64_t loc;

	k->n.cut_walks++;
	if (after_one && n) {
		k->pyentry[n - 1] = 1;
		return n;
	}
	loc = synthetic(k, "[unreadable Python frame]");
	if (!loc)
		return 0;
	k->pyentry[n] = 1;
	k->pygroup[n] = k->group;
	k->pycode[n] = 0;
	k->pyloc[n++] = loc;
	return n;
}

/* A code object unreadable now: usually freed since the sample (a module's
 * body after its import), its neighbours still right. One placeholder
 * stands for a run of them, so a chain that went astray shows as one frame,
 * never as a column. Returns 0, or -1 if out of memory. */
static int unreadable_frame(struct sample_sink *k, size_t *n, int entry, int after_one)
{
	uint64_t loc;

	k->n.bad_frames++;
	if (after_one && *n) {
		k->pyentry[*n - 1] |= entry;
		return 0;
	}
	loc = synthetic(k, "[unreadable Python frame]");
	if (!loc)
		return -1;
	k->pyentry[*n] = entry;
	k->pygroup[*n] = k->group;
	k->pycode[*n] = 0;
	k->pyloc[(*n)++] = loc;
	return 0;
}

/* One frame record f into k->pyloc[*np] (or none, or merged into the
 * placeholder before it); *bad: the last frame kept is a placeholder. The
 * frame's group is k->group, the record's (its FRAME_F_ENTRY frames before
 * f), by which the BPF walk numbers its eval-loop anchors. 0, or -1 if out
 * of memory. */
static int python_frame(struct sample_sink *k, const struct py_target *t,
			const struct py_frame_rec *f, uint64_t mid, uint64_t prof, size_t *np,
			int *bad)
{
	uint64_t key = pysym_frame_key(k->syms, t, f->code, f->self);
	struct loc_memo *m = memo_slot(k, key, f->lasti);
	struct pyframe_info fi;
	size_t n = *np;
	uint64_t fid, loc;
	int r;

	if (f->flags & FRAME_F_EMPTY) {
		/* Pairs with its eval loop's native frame in the merge, then
		 * leaves no location (merged_stack). */
		loc = 0;
		goto keep;
	}
	if (key && m->key == key && m->lasti == f->lasti && m->prof == prof) {
		loc = m->loc;
		goto keep;
	}
	r = pysym_resolve(k->syms, t, f->code, f->lasti, f->self, f->tlbc, &fi);
	if (r == 1 && (f->flags & FRAME_F_ENTRY) && (n == 0 || k->pyentry[n - 1]) && !f->tlbc) {
		/* Alone in its eval-loop call (every call is, under -X perf):
		 * the loop's prologue runs for it, so it is shown at its first
		 * instruction, not dropped, or that loop's native frame would
		 * have no Python partner. */
		r = pysym_resolve(k->syms, t, f->code,
				  f->code + t->layout.code.co_code_adaptive, f->self, 0, &fi);
	}
	if (r == 1) {
		/* A frame pushed but not started; if it ended its eval-loop
		 * group, the frame before it does now. */
		if ((f->flags & FRAME_F_ENTRY) && n)
			k->pyentry[n - 1] = 1;
		return 0;
	}
	if (r < 0) {
		if (unreadable_frame(k, np, (f->flags & FRAME_F_ENTRY) != 0, *bad))
			return -1;
		*bad = 1;
		return 0;
	}
	fid = profile_function(k->prof, fi.name, "", fi.filename, fi.firstlineno);
	loc = fid ? profile_location(k->prof, mid, 0, fid, fi.line > 0 ? fi.line : 0) : 0;
	if (loc && fi.key)
		*memo_slot(k, fi.key, f->lasti) = (struct loc_memo){ fi.key, f->lasti, prof, loc };
	if (!loc)
		return -1;
keep:
	*bad = 0;
	k->pyentry[n] = (f->flags & FRAME_F_ENTRY) != 0;
	k->pygroup[n] = k->group;
	k->pycode[n] = f->code;
	k->pyloc[n] = loc;
	*np = n + 1;
	return 0;
}

/* Resolves the Python frames into k->pyloc (leaf first) with their
 * eval-loop entry flags in k->pyentry and groups in k->pygroup; *np gets
 * their number and *cut whether the BPF walk stopped at a frame it could
 * not trust. */
static int python_frames(struct sample_sink *k, const struct py_target *t,
			 const struct py_sample *s, size_t *np, int *cut)
{
	uint64_t mid = interpreter_mapping(k, t), prof = profile_serial(k->prof);
	size_t n = 0;
	int bad = 0;		/* the last frame kept is a placeholder */

	*cut = 0;
	for (unsigned i = 0; i < s->h.nframes; i++)
		k->codes[i] = s->frames[i].code;
	/* Live records were checked a drain at a time (sample_precheck). */
	if (!k->clock) {
		for (unsigned i = 0; i < s->h.nframes; i++)
			pysym_check_note(k->syms, t, k->codes[i], s->h.time_ns, NULL);
		pysym_check_end(k->syms);
	}
	k->group = 0;
	for (unsigned i = 0; i < s->h.nframes; i++) {
		if (python_frame(k, t, &s->frames[i], mid, prof, &n, &bad))
			return -1;
		if (s->frames[i].flags & FRAME_F_ENTRY)
			k->group++;
	}
	/* Unreadable frames all the way to the depth limit: a chain that went
	 * astray, which the BPF checks could not tell from a real one. */
	if ((s->h.flags & SAMPLE_F_BAD_CHAIN) || (bad && (s->h.flags & SAMPLE_F_TRUNCATED)))
		*cut = 1;
	if (*cut && !(n = cut_walk(k, n, bad)))
		return -1;
	*np = n;
	return 0;
}

/* "[libfoo.so]" for code without a symbol: one function per object keeps
 * the function table small; the location keeps the address. */
static uint64_t unknown_native(struct sample_sink *k, const struct nsym_result *r)
{
	char name[256];
	const char *base = r->path ? strrchr(r->path, '/') : NULL;

	snprintf(name, sizeof(name), "[%s]", base ? base + 1 : r->path && r->path[0] ?
		 r->path : "unknown");
	return profile_function(k->prof, name, "", "", 0);
}

/* native_filter_hides(name, in_interp) of function fid, memoized. */
static uint8_t hides(struct sample_sink *k, uint64_t fid, const char *name, int in_interp)
{
	uint64_t prof = profile_serial(k->prof);
	struct hide_memo *m = &k->hmemo[(fid * 2 + (uint64_t)in_interp) % HIDE_MEMO];

	if (!fid)
		return (uint8_t)native_filter_hides(name, in_interp);
	if (m->prof != prof || m->fid != fid || m->in_interp != in_interp)
		*m = (struct hide_memo){ prof, fid, (uint8_t)in_interp,
					 (uint8_t)native_filter_hides(name, in_interp) };
	return m->hide;
}

/* The symbol of the located r (nsym_locate), searched once per file
 * offset of an object however many processes map it: a new process of a
 * known interpreter repeats the others' frames. Sets r's status, name and
 * file_vaddr as nsym_name() does (not sym_vaddr); returns the memo slot,
 * whose fid caches the name's function in profile fm->prof. */
static struct file_memo *file_symbol(struct sample_sink *k, struct nsym_result *r)
{
	uint64_t h = (r->file_offset ^ r->object << 44) * 0x9e3779b97f4a7c15ULL;
	struct file_memo *f = &k->fmemo[(h >> 32) % FILE_MEMO];

	/* The object is cached now (nsym_locate found it), so a name from
	 * its symbol table is still valid: serials are never reused. */
	if (f->object == r->object && f->offset == r->file_offset) {
		r->status = f->name ? NSYM_OK : NSYM_NO_SYMBOL;
		r->name = f->name;
		r->file_vaddr = f->file_vaddr;
		return f;
	}
	nsym_name(k->nsym, r);
	*f = (struct file_memo){ .object = r->object, .offset = r->file_offset,
				 .file_vaddr = r->file_vaddr, .name = r->name };
	return f;
}

/* The function of the named frame r in the current profile, by way of the
 * file memo f. 0 if out of memory. */
static uint64_t named_function(struct sample_sink *k, const struct nsym_result *r,
			       struct file_memo *f)
{
	uint64_t prof = profile_serial(k->prof);

	if (f->prof != prof || !f->fid) {
		f->fid = profile_function(k->prof, r->name, "", "", 0);
		f->prof = prof;
	}
	return f->fid;
}

/* The pprof mapping of the located r's mapping, as interned. */
static uint64_t mapping_of(struct sample_sink *k, const struct nsym_result *r)
{
	struct profile_mapping_desc d = { .memory_start = r->map_start,
		.memory_limit = r->map_limit, .file_offset = r->map_offset,
		.filename = r->path, .build_id = r->build_id, .has_functions = true };

	return profile_mapping(k->prof, &d);
}

/* The pprof mapping of the located r's mapping in t, whether it is t's
 * interpreter file, and its symbol-gap slot, kept per maps read: every
 * frame of a new process in a known file needs them, and they cost a
 * path search and the interning of two strings. Counts the frame in the
 * symbol gaps as symgap_count() does. */
static const struct map_memo *native_mapping(struct sample_sink *k, const struct py_target *t,
					     const struct nsym_result *r, int named)
{
	uint64_t prof = profile_serial(k->prof);
	uint64_t h = (r->map_start ^ r->maps_gen << 40) * 0x9e3779b97f4a7c15ULL;
	struct map_memo *m = &k->mmemo[(h >> 32) % MAP_MEMO];

	if (m->maps_gen == r->maps_gen && m->start == r->map_start && m->t == t) {
		symgap_count_slot(&k->gaps, m->gap, named);
		if (m->prof == prof)
			return m;
	} else {
		*m = (struct map_memo){ .maps_gen = r->maps_gen, .start = r->map_start, .t = t,
			.in_interp = strcmp(r->path, t->module) == 0,
			.gap = (int32_t)symgap_count(&k->gaps, &t->root, r->path, r->build_id,
						     named) };
	}
	m->mid = mapping_of(k, r);
	m->prof = m->mid ? prof : 0;
	return m;
}

/* One native frame -> a location in its object's mapping; *is_eval tells
 * whether it is CPython's eval loop (where Python frames get merged). */
static uint64_t native_resolve(struct sample_sink *k, const struct py_target *t, int pid,
			       uint64_t pc, uint64_t seen_ns, int leaf, uint8_t *is_eval, uint8_t *hide,
			       struct native_memo *memo)
{
	struct nsym_result r;
	const struct map_memo *mm;
	struct file_memo *f = NULL;
	uint64_t fid, mid = 0;
	int named, in_interp;

	/* Return addresses point after the call: look up the call itself. */
	if (nsym_locate(k->nsym, t->src, pid, leaf ? pc : pc - 1, seen_ns, &r) == NSYM_NO_SYMBOL)
		f = file_symbol(k, &r);
	named = r.status == NSYM_OK;
	memo->flags = named ? NATIVE_MEMO_NAMED : 0;
	memo->gap = -1;
	if (f) {
		mm = native_mapping(k, t, &r, named);
		in_interp = mm->in_interp;
		mid = mm->mid;
		memo->gap = (int8_t)mm->gap;
	} else {
		memo->prof = 0;		/* may resolve after a maps re-read */
		in_interp = r.status != NSYM_NO_MAPPING && strcmp(r.path, t->module) == 0;
	}
	/* Only where no anchor tells (<=3.10, recordings made before them):
	 * the loop's code ranges, split parts and stripped files included;
	 * its name where those are unknown. */
	if (t->eval.n)
		*is_eval = in_interp && pyeval_contains(&t->eval, r.file_vaddr);
	else
		*is_eval = named && pyeval_name_is_loop(r.name);
	if (r.status == NSYM_NO_FILE)
		mid = mapping_of(k, &r);
	fid = named ? named_function(k, &r, f) : unknown_native(k, &r);
	*hide = hides(k, fid, named ? r.name : NULL, in_interp);
	return fid ? profile_location(k->prof, mid, pc, fid, 0) : 0;
}

static struct native_memo *native_slot(struct sample_sink *k, int pid, uint64_t pc)
{
	uint64_t h = (pc ^ (uint64_t)pid << 40) * 0x9e3779b97f4a7c15ULL;

	return &k->nmemo[(h >> 32) % NATIVE_MEMO];
}

_Static_assert(SYMGAP_OBJECTS <= INT8_MAX, "a symgap slot fits native_memo.gap");

/* native_resolve(), memoized per (maps read, pc, leaf) and profile. */
static uint64_t native_location(struct sample_sink *k, const struct py_target *t, int pid,
				uint64_t pc, uint64_t seen_ns, int leaf, uint8_t *is_eval, uint8_t *hide)
{
	struct oc_proc *p = objcache_proc(k->objs, t->src, pid);
	uint64_t prof = profile_serial(k->prof), gen = p ? p->maps_gen : 0;
	struct native_memo *m = native_slot(k, pid, pc);
	struct native_memo r = { 0 };
	uint64_t loc;

	if (gen && m->prof == prof && m->maps_gen == gen && m->pc == pc &&
	    !(m->flags & NATIVE_MEMO_LEAF) == !leaf) {
		symgap_count_slot(&k->gaps, m->gap, m->flags & NATIVE_MEMO_NAMED);
		*is_eval = !!(m->flags & NATIVE_MEMO_EVAL);
		*hide = !!(m->flags & NATIVE_MEMO_HIDE);
		return m->loc;
	}
	r.prof = prof;
	loc = native_resolve(k, t, pid, pc, seen_ns, leaf, is_eval, hide, &r);
	/* A miss in the maps re-reads them: keyed by the maps it used. */
	p = objcache_proc(k->objs, t->src, pid);
	if (loc && p && r.prof && loc <= UINT32_MAX)
		*m = (struct native_memo){ p->maps_gen, pc, prof, (uint32_t)loc, r.gap,
			(uint8_t)((leaf ? NATIVE_MEMO_LEAF : 0) | (*is_eval ? NATIVE_MEMO_EVAL : 0) |
				  (*hide ? NATIVE_MEMO_HIDE : 0) | (r.flags & NATIVE_MEMO_NAMED)) };
	return loc;
}

/* When s was taken, on this machine's CLOCK_MONOTONIC: live only (a
 * recording's times are another boot's); 0 in replay. */
static uint64_t taken_ns(const struct sample_sink *k, const struct py_sample *s)
{
	return k->clock ? s->h.time_ns : 0;
}

/* Unwinds the stack copied at off with libunwind into k->pcs; returns the
 * count, -1 if the record has no stack. */
static long user_unwind(struct sample_sink *k, const struct py_target *t,
			const struct py_sample *s, size_t size, size_t off, int *end)
{
	struct unwind_input in = { .src = t->src, .pid = (int)s->h.pid, .tramp = &t->tramp,
				    .taken_ns = taken_ns(k, s) };
	size_t n = 0;

	if (!k->unw || !s->h.stack_len || off + s->h.stack_len > size)
		return -1;
	memcpy(in.regs, s->h.regs, sizeof(in.regs));
	in.stack = (const uint8_t *)s + off;
	in.stack_len = s->h.stack_len;
	in.stack_addr = s->h.regs[PYREG_SP];
	*end = unwind_stack_frames(k->unw, &in, k->pcs, k->nkind, k->nsps, UNWIND_MAX_FRAMES, &n);
	return (long)n;
}

/* The eval-loop anchor each of the n frames libunwind found holds, from
 * the anchors after the record's end (bpf/pyperf.h), into k->ngroup. */
static void user_anchors(struct sample_sink *k, const struct py_sample *s, size_t size,
			 size_t n)
{
	size_t off = PY_SAMPLE_ANCHOR_OFF(s->h.nframes, s->h.native_n, s->h.stack_len,
					  s->h.nkframes);
	__u64 a[PY_ANCHORS_MAX];
	uint32_t na = s->h.nanchors, next = 0;

	if (off + (size_t)na * 8 > size)
		na = 0;
	memcpy(a, (const uint8_t *)s + off, (size_t)na * 8);
	for (size_t i = 0; i < n; i++)
		k->ngroup[i] = py_anchor_match(a, na, &next, k->nsps[i],
					       i + 1 < n ? k->nsps[i + 1] : UINT64_MAX);
}

/* The anchor tags the BPF walk put on its pcs into k->ngroup. */
static void kernel_anchors(struct sample_sink *k, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		k->ngroup[i] = k->kpcs[i] & PY_PC_EVAL ? (int32_t)PY_PC_GROUP(k->kpcs[i]) : -1;
		k->kpcs[i] &= ~PY_PC_TAGS;
	}
}

static const char *diff_object(void *ctx, uint64_t pc)
{
	struct sample_sink *k = ((void **)ctx)[0];
	const struct py_target *t = ((void **)ctx)[1];
	const int *pid = ((void **)ctx)[2];
	struct nsym_result r;

	nsym_resolve(k->nsym, t->src, *pid, pc, 0, &r);
	return r.path;
}

/* --unwind both: the BPF walk against libunwind's on the same sample. */
static void diff_unwinds(struct sample_sink *k, const struct py_target *t,
			 const struct py_sample *s, size_t nk, size_t nu, int uend)
{
	int pid = (int)s->h.pid;
	void *ctx[3] = { k, (void *)t, &pid };
	int truncated = s->h.native_end == PY_NATIVE_END_MAX || uend == UNWIND_END_MAX;
	int not_loaded = py_native_end_missing(s->h.native_end);

	native_diff_add(k->diff, k->kpcs, nk, k->pcs, nu, truncated, not_loaded,
			diff_object, ctx);
}

/* The kinds of the nk pcs unwound in BPF: a perf trampoline's carries
 * PY_PC_TRAMPOLINE in the record. */
static void kernel_kinds(struct sample_sink *k, const struct py_sample *s, size_t nk)
{
	const uint8_t *p = (const uint8_t *)s + PY_SAMPLE_STACK_OFF(s->h.nframes);
	uint64_t pc;

	for (size_t i = 0; i < nk; i++) {
		memcpy(&pc, p + i * 8, 8);
		k->nkind[i] = pc & PY_PC_TRAMPOLINE ? UNWIND_FRAME_TRAMPOLINE : UNWIND_FRAME_CODE;
	}
}

/* The native pcs of a record into k->pcs (unwound in BPF, or here from
 * the copied stack); returns the count. *not_loaded: the BPF walk met a
 * mapping not loaded yet, so the stack is incomplete. */
static size_t native_pcs(struct sample_sink *k, const struct py_target *t,
			 const struct py_sample *s, size_t size, int *not_loaded)
{
	size_t off = PY_SAMPLE_STACK_OFF(s->h.nframes), nk = s->h.native_n;
	int kernel = (s->h.flags & SAMPLE_F_NATIVE_PCS) != 0, uend = UNWIND_END_OUTERMOST;
	long nu;

	if (s->h.flags & SAMPLE_F_STACK_ERR)
		k->n.stack_errors++;
	if (kernel && (nk > PYPERF_MAX_NATIVE || off + nk * 8 > size)) {
		k->n.malformed++;
		return 0;
	}
	if (kernel) {
		memcpy(k->kpcs, (const uint8_t *)s + off, nk * 8);
		kernel_anchors(k, nk);
		off += nk * 8;
		*not_loaded = py_native_end_missing(s->h.native_end);
	}
	nu = user_unwind(k, t, s, size, off, &uend);
	if (kernel && nu >= 0 && k->diff)
		diff_unwinds(k, t, s, nk, (size_t)nu, uend);
	if (!kernel && nu < 0)
		return 0;
	k->n.native_stacks++;
	if (kernel && *not_loaded) {
		if (k->native_miss)
			k->native_miss(k->native_miss_ctx, (int)s->h.pid, taken_ns(k, s));
		if (nu >= 0) {
			/* BPF copied the stack because its tables lacked a
			 * mapping: libunwind's whole stack, not the cut one. */
			k->n.native_copied++;
			*not_loaded = 0;
			kernel = 0;
		}
	}
	if (!kernel) {
		if (uend != UNWIND_END_OUTERMOST) {
			k->n.native_errors++;
			if ((unsigned)uend <= UNWIND_END_READ)
				k->n.user_end[uend]++;
		}
		user_anchors(k, s, size, (size_t)nu);
		return (size_t)nu;
	}
	if (*not_loaded) {
		k->n.native_not_loaded++;
	} else if (s->h.native_end != PY_NATIVE_END_OUTERMOST) {
		k->n.native_errors++;
		if (s->h.native_end <= PY_NATIVE_END_BAD)
			k->n.kernel_end[s->h.native_end]++;
	}
	memcpy(k->pcs, k->kpcs, nk * 8);
	kernel_kinds(k, s, nk);
	return nk;
}

/* CPython's perf trampolines (-X perf) sit between each eval-loop call
 * and its caller: they name the Python function the eval loop runs, which
 * the Python frames already show. Drops them unless --all-native; returns
 * the frames left in k->pcs. */
static size_t drop_trampolines(struct sample_sink *k, size_t n)
{
	size_t kept = 0;

	if (k->all_native)
		return n;
	for (size_t i = 0; i < n; i++) {
		if (k->nkind[i] == UNWIND_FRAME_TRAMPOLINE) {
			k->n.trampolines++;
			continue;
		}
		k->ngroup[kept] = k->ngroup[i];
		k->pcs[kept++] = k->pcs[i];
	}
	return kept;
}

/* The native frames of a record into k->nloc / k->neval; returns the
 * count. */
static size_t native_frames(struct sample_sink *k, const struct py_target *t,
			    const struct py_sample *s, size_t size)
{
	int not_loaded = 0, leaf;
	size_t n = native_pcs(k, t, s, size, &not_loaded);

	/* Only the sampled ip is not a return address. */
	leaf = n && (k->nkind[0] != UNWIND_FRAME_TRAMPOLINE || k->all_native);
	n = drop_trampolines(k, n);
	/* Each frame's memo slot is a cache miss, the slots independent:
	 * asked for all at once they overlap instead of queueing. */
	for (size_t i = 0; i < n; i++)
		__builtin_prefetch(native_slot(k, (int)s->h.pid, k->pcs[i]));
	for (size_t i = 0; i < n; i++) {
		k->nloc[i] = native_location(k, t, (int)s->h.pid, k->pcs[i], taken_ns(k, s),
					     i == 0 && leaf,
					     &k->neval[i], &k->nhide[i]);
		if (!k->nloc[i])
			return 0;
	}
	/* Never a silently short stack: say where it was cut. */
	if (not_loaded && n < UNWIND_MAX_FRAMES) {
		k->nloc[n] = synthetic(k, "[native: mapping not loaded yet]");
		k->neval[n] = 0;
		k->ngroup[n] = -1;
		k->nhide[n] = 0;
		if (k->nloc[n])
			n++;
	}
	return n;
}

/* Merges native and Python frames into k->locs; returns the count. */
static size_t merged_stack(struct sample_sink *k, size_t nn, size_t np)
{
	const size_t max = sizeof(k->merged) / sizeof(k->merged[0]);
	unsigned mismatches;
	size_t out = 0, n;

	/* Empty groups at the root hold nothing to place: the thread's base
	 * frame (3.15+, its anchor in the thread state, no native frame's),
	 * or an eval-loop call running no frame yet. */
	while (k->anchored && np && !k->pyloc[np - 1])
		np--;
	n = k->anchored ?
		merge_by_group(k->ngroup, nn, k->pygroup, np, k->merged, max, &mismatches) :
		merge_stacks(k->neval, nn, k->pyentry, np, k->merged, max, &mismatches);

	if (mismatches)
		k->n.merge_errors++;
	if (!k->all_native)
		n = native_filter_apply(k->merged, n, k->nhide);
	for (size_t i = 0; i < n; i++) {
		uint64_t loc = k->merged[i].kind == MERGE_NATIVE ? k->nloc[k->merged[i].index]
								 : k->pyloc[k->merged[i].index];

		if (loc)	/* 0: an empty eval-loop group */
			k->locs[out++] = loc;
	}
	return out;
}

static const char *kernel_name(struct sample_sink *k, const struct py_sample *s, size_t off)
{
	uint64_t ip;

	memcpy(&ip, (const uint8_t *)s + off, sizeof(ip));
	return ksym_name(k->ksym, ip);
}

static int is_tracing_frame(const char *name)
{
	static const char *const prefix[] = { "bpf_prog_", "bpf_trace_run", "__traceiter_",
					      "__bpf_trace_" };

	for (size_t i = 0; name && i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (strncmp(name, prefix[i], strlen(prefix[i])) == 0)
			return 1;
	return 0;
}

/* --kernel: the kernel frames of the record go on top of the n frames
 * of k->locs, in the "[kernel]" mapping. Returns the new count; n when
 * the record has none (or they do not fit in it). */
static size_t kernel_frames(struct sample_sink *k, const struct py_sample *s, size_t size,
			    size_t n)
{
	struct profile_mapping_desc m = { .filename = "[kernel]", .has_functions = true };
	size_t off = PY_SAMPLE_KSTACK_OFF(s->h.nframes, s->h.native_n, s->h.stack_len);
	size_t nk = s->h.nkframes, cap = sizeof(k->locs) / sizeof(k->locs[0]);
	uint64_t mid, ip;

	if (!k->ksym || !nk || nk > PYPERF_MAX_KFRAMES || off + nk * sizeof(ip) > size ||
	    n + nk > cap)
		return n;
	/* Wall mode samples in sched_switch, from inside our BPF program:
	 * its own frames and the tracepoint's are not the thread's. */
	while (nk && is_tracing_frame(kernel_name(k, s, off)))
		off += sizeof(ip), nk--;
	mid = profile_mapping(k->prof, &m);
	memmove(k->locs + nk, k->locs, n * sizeof(k->locs[0]));
	for (size_t i = 0; i < nk; i++) {
		const char *name = kernel_name(k, s, off + i * sizeof(ip));
		uint64_t fid = profile_function(k->prof, name ? name : "[kernel]", "", "", 0);

		memcpy(&ip, (const uint8_t *)s + off + i * sizeof(ip), sizeof(ip));
		k->locs[i] = fid && mid ? profile_location(k->prof, mid, ip, fid, 0) : 0;
	}
	k->n.kernel_stacks++;
	return n + nk;
}

/* Puts loc at the leaf end of k->locs. */
static size_t prepend(struct sample_sink *k, size_t n, uint64_t loc)
{
	if (n + 1 >= sizeof(k->locs) / sizeof(k->locs[0]))
		return n;
	memmove(k->locs + 1, k->locs, n * sizeof(k->locs[0]));
	k->locs[0] = loc;
	return n + 1;
}

static void count_thread(struct sample_sink *k, uint32_t tid)
{
	uint32_t h = tid * 2654435761u;

	if (!tid || k->n.threads >= TID_SET_SIZE / 2)
		return;		/* keep the table half empty: probes stay short */
	for (uint32_t i = 0; i < TID_SET_SIZE; i++) {
		uint32_t *slot = &k->tids[(h + i) % TID_SET_SIZE];

		if (*slot == tid)
			return;
		if (!*slot) {
			*slot = tid;
			k->n.threads++;
			return;
		}
	}
}

/* Adds one stack with all its labels. */
/* The program the samples come from (pipeline.c names the profile after
 * it): the process name while there is one. */
static void note_program(struct sample_sink *k, const struct py_target *t)
{
	if (!t->comm[0] || (k->programs == 1 && !strcmp(k->program, t->comm)))
		return;
	if (k->programs++ == 0)
		snprintf(k->program, sizeof(k->program), "%s", t->comm);
	else
		k->programs = 2;
}

static int add_labeled(struct sample_sink *k, const struct py_target *t, const uint64_t *locs,
		       size_t n, uint32_t pid, uint32_t tid, const char *tname, const char *task,
		       uint32_t flags, int64_t count, int64_t weight)
{
	struct profile_label labels[9];
	int64_t values[2] = { count, weight };
	size_t nl = 5;

	note_program(k, t);
	labels[0] = (struct profile_label){ .key = "pid", .num = pid };
	labels[1] = (struct profile_label){ .key = "tid", .num = tid };
	labels[2] = (struct profile_label){ .key = "thread_name", .str = tname };
	labels[3] = (struct profile_label){ .key = "gil", .str =
		(flags & SAMPLE_F_GIL_UNKNOWN) ? "unknown" :
		(flags & SAMPLE_F_GIL_OFF) ? "disabled" :
		(flags & SAMPLE_F_GIL_HELD) ? "held" : "not_held" };
	labels[4] = (struct profile_label){ .key = "state", .str =
		(flags & SAMPLE_F_OFFCPU) ? "waiting" : "running" };
	/* Per process: low cardinality, what back ends turn into series. */
	if (t->comm[0])
		labels[nl++] = (struct profile_label){ .key = "process_name", .str = t->comm };
	if (t->cmdline[0])
		labels[nl++] = (struct profile_label){ .key = "cmdline", .str = t->cmdline };
	if (t->container_id[0])
		labels[nl++] = (struct profile_label){ .key = "container_id", .str = t->container_id };
	if (task && task[0])
		labels[nl++] = (struct profile_label){ .key = "asyncio_task", .str = task };
	return profile_add_sample(k->prof, locs, n, labels, nl, values);
}

static struct offcpu *offcpu_slot(struct sample_sink *k, uint32_t tid, int create)
{
	size_t h = (tid * 2654435761u) % OFFCPU_MAX;

	for (size_t i = 0; i < OFFCPU_MAX; i++, h = (h + 1) % OFFCPU_MAX) {
		if (k->offcpu[h].tid == tid)
			return &k->offcpu[h];
		if (!k->offcpu[h].tid)
			return create ? &k->offcpu[h] : NULL;
	}
	return NULL;
}

static void offcpu_clear(struct sample_sink *k, struct offcpu *o)
{
	size_t i = (size_t)(o - k->offcpu), j = i;

	free(o->locs);
	memset(o, 0, sizeof(*o));
	/* Backward-shift deletion keeps linear probing chains intact. */
	for (;;) {
		size_t home;

		j = (j + 1) % OFFCPU_MAX;
		if (!k->offcpu[j].tid)
			return;
		home = (k->offcpu[j].tid * 2654435761u) % OFFCPU_MAX;
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			k->offcpu[i] = k->offcpu[j];
			memset(&k->offcpu[j], 0, sizeof(k->offcpu[j]));
			i = j;
		}
	}
}

/* The stack weighs the time it was away, up to now_ns. */
static int offcpu_add(struct sample_sink *k, const struct py_target *t, const struct offcpu *o,
		      uint64_t now_ns)
{
	int64_t w = now_ns > o->start_ns ? (int64_t)(now_ns - o->start_ns) : 0;
	int64_t count = k->period_ns ? (w + (int64_t)k->period_ns / 2) / (int64_t)k->period_ns : 1;

	return w > 0 && o->locs ? add_labeled(k, t, o->locs, o->n, o->pid, o->tid, o->tname,
					      o->task, o->flags, count, w) : 0;
}

/* It is back. */
static int offcpu_end(struct sample_sink *k, const struct py_target *t, struct offcpu *o,
		      uint64_t now_ns)
{
	int r = offcpu_add(k, t, o, now_ns);

	offcpu_clear(k, o);
	return r;
}

/* A thread left the CPU: keep its stack until it returns (or count it now
 * if its return was read first). */
static int offcpu_start(struct sample_sink *k, const struct py_target *t,
			const struct py_sample *s, size_t n, const char *tname, const char *task)
{
	struct offcpu *o = offcpu_slot(k, s->h.tid, 1);
	uint64_t back;

	if (!o) {
		k->n.offcpu_dropped++;
		return 0;
	}
	back = o->tid && !o->locs ? o->end_ns : 0;
	free(o->locs);
	o->locs = malloc(n * sizeof(*o->locs));
	if (!o->locs) {
		memset(o, 0, sizeof(*o));
		offcpu_clear(k, o);
		return -1;
	}
	memcpy(o->locs, k->locs, n * sizeof(*o->locs));
	o->n = n;
	o->pid = s->h.pid;
	o->tid = s->h.tid;
	o->flags = s->h.flags;
	o->end_ns = 0;
	/* A switch-out read after the interval's boundary, from before it,
	 * counts from the boundary: the interval before is written. */
	o->start_ns = s->h.time_ns > k->offcpu_floor ? s->h.time_ns : k->offcpu_floor;
	snprintf(o->tname, sizeof(o->tname), "%s", tname);
	snprintf(o->task, sizeof(o->task), "%s", task ? task : "");
	/* Its switch-in came first: this wait is over. (An older one is of
	 * an earlier run on the CPU, whose switch-out was never seen.) */
	return back >= s->h.time_ns ? offcpu_end(k, t, o, back) : 0;
}

/* A thread came back to the CPU at now_ns; first_ns: off it since then,
 * its first time on it (bpf: first_sight), else 0. */
static int offcpu_back(struct sample_sink *k, const struct py_target *t, uint32_t tid,
		       uint64_t now_ns, uint64_t first_ns)
{
	struct offcpu *o = offcpu_slot(k, tid, 1);

	if (!o) {
		k->n.offcpu_dropped++;
		return 0;
	}
	if (o->tid && o->locs)
		return offcpu_end(k, t, o, now_ns);
	/* No wait open: its switch-out may still be on its way, or this is
	 * a thread that waited for a CPU since before the window (not
	 * blocked: those were read at its start, blocked.c). */
	o->tid = tid;
	o->pid = (uint32_t)t->pid;
	o->end_ns = now_ns;
	o->first_ns = first_ns > k->offcpu_floor ? first_ns : k->offcpu_floor;
	if (!first_ns || o->first_ns >= now_ns)
		o->first_ns = 0;
	return 0;
}

/* A record's weight: its period, in wall mode the time on the CPU that
 * ended with it (oncpu_span in BPF), of which only the part inside the
 * window counts. A thread running when it became a target counts from
 * then (the target's since_ns), which is before the events were attached
 * and the window began (session.c: start): that part, up to a few ms
 * under load, would make a thread's time exceed the window. */
static int64_t wall_span(const struct sample_sink *k, const struct py_sample *s)
{
	int64_t w = (int64_t)s->h.period;

	if (!k->wall_from_ns || s->h.time_ns - (uint64_t)w >= k->wall_from_ns)
		return w;
	return s->h.time_ns > k->wall_from_ns ? (int64_t)(s->h.time_ns - k->wall_from_ns) : 0;
}

/* A thread's first stack after a first switch-in: the stack it waited
 * with, as every sample's stack weighs the time before it. */
static int offcpu_first(struct sample_sink *k, const struct py_target *t, const struct py_sample *s,
			size_t n, const char *tname, const char *task)
{
	struct offcpu *o = offcpu_slot(k, s->h.tid, 0);
	int64_t w, p = (int64_t)k->period_ns;
	int r;

	if (!o || o->locs || !o->first_ns)
		return 0;
	w = (int64_t)(o->end_ns - o->first_ns);
	r = add_labeled(k, t, k->locs, n, s->h.pid, s->h.tid, tname, task,
			s->h.flags | SAMPLE_F_OFFCPU, p ? (w + p / 2) / p : 1, w);
	offcpu_clear(k, o);
	return r;
}

/* A wait still going on counts up to now_ns in this interval and goes on
 * in the next from there: a thread blocked for hours shows in every
 * interval, whole. A thread whose process is gone is dropped. */
void sample_flush_offcpu(struct sample_sink *k, uint64_t now_ns,
			 const struct py_target *(*find)(void *ctx, int pid), void *ctx)
{
	for (size_t i = 0; i < OFFCPU_MAX; i++) {
		struct offcpu *o = &k->offcpu[i];
		const struct py_target *t;

		while (o->tid) {	/* clearing may shift another entry here */
			t = find(ctx, (int)o->pid);
			/* A switch-in whose switch-out has not come in a whole
			 * interval is of a thread still running (or gone). */
			if (!t || (!o->locs && o->end_ns < k->offcpu_floor)) {
				offcpu_clear(k, o);
				continue;
			}
			offcpu_add(k, t, o, now_ns);
			if (now_ns > o->start_ns)
				o->start_ns = now_ns;
			break;
		}
	}
	if (now_ns > k->offcpu_floor)
		k->offcpu_floor = now_ns;
}

int sample_offcpu_move(struct sample_sink *k, struct profile *next)
{
	int r = 0;

	for (size_t i = 0; i < OFFCPU_MAX; i++) {
		struct offcpu *o = &k->offcpu[i];
		size_t j = 0;

		while (o->tid) {	/* clearing may shift another entry here */
			for (j = 0; j < o->n; j++)
				if (!(o->locs[j] = profile_copy_location(next, k->prof, o->locs[j])))
					break;
			if (j == o->n)
				break;
			offcpu_clear(k, o);	/* out of memory: its wait is lost */
			r = -1;
		}
	}
	return r;
}

/* Where a record's frames are: *hdr bytes of header before them, *fsize
 * bytes each, *n of them (either layout, bpf/pyperf.h). -1 if size cannot
 * hold them: a malformed record. */
static int record_frames(const uint8_t *c, size_t size, size_t *hdr, size_t *fsize,
			 size_t *n)
{
	uint32_t flags;
	uint16_t nframes;

	if (size < PY_SAMPLE_COMPACT_HDR)
		return -1;
	memcpy(&flags, c + offsetof(struct py_sample_hdr, flags), sizeof(flags));
	memcpy(&nframes, c + offsetof(struct py_sample_hdr, nframes), sizeof(nframes));
	*hdr = sizeof(struct py_sample_hdr);
	*fsize = sizeof(struct py_frame_rec);
	if (flags & SAMPLE_F_COMPACT) {
		*fsize = sizeof(struct py_frame_compact);
		if (!(flags & SAMPLE_F_COMPACT_REGS))
			*hdr = PY_SAMPLE_COMPACT_HDR;	/* compact frames, header without regs */
	}
	*n = nframes;
	return *n > PYPERF_MAX_FRAMES || size < *hdr + *n * *fsize ? -1 : 0;
}

/* The code object of frame i of a record laid out as record_frames()
 * says (compact frames keep their flags in the low bits). */
static uint64_t record_code(const uint8_t *c, size_t hdr, size_t fsize, size_t i)
{
	uint64_t code;

	memcpy(&code, c + hdr + i * fsize, sizeof(code));
	return code & ~(uint64_t)7;
}

/* A compact record (SAMPLE_F_COMPACT, bpf/pyperf.h) into the full
 * layout in k->full: regs zeroed (unless SAMPLE_F_COMPACT_REGS kept
 * them), frames of 32 bytes. 0, or -1 if out of
 * memory; *rec and *size then describe the full record. A malformed one
 * is left as it is for sample_add to refuse. */
static int expand_compact(struct sample_sink *k, const void **rec, size_t *size)
{
	const uint8_t *c = *rec;
	const size_t fhdr = sizeof(struct py_sample_hdr);
	struct py_frame_compact fc;
	struct py_frame_rec *f;
	size_t chdr, fsize, n, need, rest;

	if (record_frames(c, *size, &chdr, &fsize, &n))
		return 0;
	rest = *size - chdr - n * sizeof(fc);
	need = fhdr + n * sizeof(*f) + rest;
	if (need > k->full_cap) {
		uint8_t *b = realloc(k->full, need);

		if (!b)
			return -1;
		k->full = b;
		k->full_cap = need;
	}
	if (chdr == fhdr) {
		memcpy(k->full, c, fhdr);
	} else {
		memcpy(k->full, c, PY_SAMPLE_REGS_OFF);
		memset(k->full + PY_SAMPLE_REGS_OFF, 0, PY_SAMPLE_REGS_LEN);
		memcpy(k->full + PY_SAMPLE_REGS_OFF + PY_SAMPLE_REGS_LEN,
		       c + PY_SAMPLE_REGS_OFF, chdr - PY_SAMPLE_REGS_OFF);
	}
	f = (struct py_frame_rec *)(k->full + fhdr);
	for (size_t i = 0; i < n; i++) {
		memcpy(&fc, c + chdr + i * sizeof(fc), sizeof(fc));
		f[i] = (struct py_frame_rec){ .code = fc.code_flags & ~(uint64_t)7,
			.lasti = fc.lasti, .flags = (uint32_t)(fc.code_flags & 7) };
	}
	memcpy(k->full + fhdr + n * sizeof(*f), c + chdr + n * sizeof(fc), rest);
	*rec = k->full;
	*size = need;
	return 0;
}

void sample_precheck(struct sample_sink *k, const struct py_target *t, const void *rec,
		     size_t size)
{
	size_t hdr, fsize, n;
	uint64_t time_ns;

	if (!k->clock || record_frames(rec, size, &hdr, &fsize, &n))
		return;		/* replay checks every one, as recorded; malformed
				 * records are sample_add's to count */
	memcpy(&time_ns, (const uint8_t *)rec + offsetof(struct py_sample_hdr, time_ns),
	       sizeof(time_ns));
	for (size_t i = 0; i < n; i++)
		pysym_check_note(k->syms, t, record_code(rec, hdr, fsize, i), time_ns, k->clock);
}

int sample_is_prompt(const struct sample_sink *k, const struct py_target *t, const void *rec,
		     size_t size)
{
	size_t hdr, fsize, n;
	uint32_t flags;

	if (record_frames(rec, size, &hdr, &fsize, &n))
		return 0;
	memcpy(&flags, (const uint8_t *)rec + offsetof(struct py_sample_hdr, flags), sizeof(flags));
	if (flags & SAMPLE_F_NO_TABLES)
		return 1;
	if (!(flags & SAMPLE_F_NEW_CODE))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!pysym_cached(k->syms, t, record_code(rec, hdr, fsize, i)))
			return 1;
	return 0;
}

size_t sample_precheck_queue(const struct sample_sink *k, const struct py_target **t,
			     uint64_t *addr, size_t max, uint16_t *len)
{
	return k->clock ? pysym_check_queue(k->syms, t, addr, max, len) : 0;
}

void sample_precheck_answer(struct sample_sink *k, size_t i, const uint8_t *bytes, uint64_t at_ns)
{
	if (k->clock)
		pysym_check_answer(k->syms, i, bytes, at_ns);
}

void sample_precheck_end(struct sample_sink *k)
{
	if (k->clock)
		pysym_check_end(k->syms);
}

/*
 * --async: the stack locs[0..n) of a sample that ran the task object
 * task (np Python frames in k->pyloc) with the loop's machinery replaced
 * by the task's await chain. Returns the new count; n unchanged when the
 * chain cannot be read or the stack does not hold the task's coroutine.
 */
static size_t async_stack(struct sample_sink *k, const struct py_target *t, size_t n,
			  size_t np, uint64_t task, uint64_t now_ns)
{
	struct asyncstack_ctx a = { .prof = k->prof, .syms = k->syms, .t = t };
	const size_t cap = sizeof(k->locs) / sizeof(k->locs[0]);
	long cut;
	size_t m;

	if (pyawait_chain(k->awaits, t, task, now_ns, &k->chain) || !k->chain.l[0].nframes)
		return n;
	cut = asyncstack_cut(k->locs, n, k->pyloc, k->pycode, np, k->chain.l[0].f[0].code);
	if (cut < 0) {
		k->n.async_unmatched++;
		return n;
	}
	a.mid = interpreter_mapping(k, t);
	m = asyncstack_apply(&a, k->locs, n, cap, (size_t)cut, &k->chain);
	if (!m)
		return n;
	k->n.async_stacks++;
	return m;
}

/* The asyncio_task label of record s (size bytes, full layout), or NULL:
 * named from the task the BPF program found running (SAMPLE_F_TASK),
 * none where it read that none ran (SAMPLE_F_NO_TASK); else, for
 * pure-Python tasks only, from the task running now if the stack runs
 * its coroutine (python_frames() left the frames' code objects in
 * k->codes). *task: the task object the label names (--async's start),
 * or 0. */
static const char *task_label(struct sample_sink *k, const struct py_target *t,
			      const struct py_sample *s, size_t size, uint64_t *task)
{
	size_t off = PY_SAMPLE_TASK_OFF(s->h.nframes, s->h.native_n, s->h.stack_len,
					s->h.nkframes, s->h.nanchors);
	struct py_task_capture cap;
	const char *label;

	*task = 0;
	/* The program read that no task ran: nothing to read here. */
	if (s->h.flags & SAMPLE_F_NO_TASK) {
		k->n.task_none++;
		return NULL;
	}
	if (!(s->h.flags & SAMPLE_F_TASK))
		return pyasyncio_cache_task_at(k->tasks, t, s->h.tid, s->h.tstate, k->codes,
					       s->h.nframes, s->h.time_ns, task);
	if (off + sizeof(cap) > size) {
		k->n.malformed++;
		return NULL;
	}
	memcpy(&cap, (const uint8_t *)s + off, sizeof(cap));
	if (cap.frame >= s->h.nframes)
		return NULL;
	label = pyasyncio_cache_capture(k->tasks, t, s->h.tid, s->h.tstate, &cap, s->h.time_ns);
	if (label)
		*task = cap.task;
	return label;
}

int sample_add(struct sample_sink *k, const struct py_target *t, const void *rec,
	       size_t size)
{
	const struct py_sample *s = rec;
	const char *tname = NULL, *task = NULL;
	uint64_t task_obj = 0;
	char comm[PYPERF_COMM_LEN + 1];
	size_t n = 0, np = 0, nn;
	int cut;

	if (size >= PY_SAMPLE_COMPACT_HDR && (s->h.flags & SAMPLE_F_CODE_NAME)) {
		struct py_code_capture cap;

		/* Recordings made before the line table was captured hold
		 * shorter ones: table_len is 0 there. */
		if (size >= sizeof(cap)) {
			pysym_capture(k->syms, t, rec);
		} else if (size >= PY_CAPTURE_MIN) {
			memset(&cap, 0, sizeof(cap));
			memcpy(&cap, rec, size);
			pysym_capture(k->syms, t, &cap);
		}
		return 0;
	}
	if (size >= sizeof(s->h) && (s->h.flags & SAMPLE_F_OFFCPU_END)) {
		return offcpu_back(k, t, s->h.tid, s->h.time_ns, s->h.period);
	}
	k->n.records++;
	k->n.record_bytes += size;	/* as sent */
	if (size >= PY_SAMPLE_COMPACT_HDR && (s->h.flags & SAMPLE_F_COMPACT)) {
		if (expand_compact(k, &rec, &size))
			return -1;
		s = rec;
	}
	if (size < sizeof(s->h) ||
	    s->h.nframes > PYPERF_MAX_FRAMES ||
	    size < sizeof(s->h) + s->h.nframes * sizeof(s->frames[0])) {
		k->n.malformed++;
		return 0;
	}
	count_thread(k, s->h.tid);
	if (python_frames(k, t, s, &np, &cut))
		return -1;
	if (s->h.nframes > k->n.max_depth)
		k->n.max_depth = s->h.nframes;
	if (s->h.flags & SAMPLE_F_READ_ERR)
		k->n.read_errors++;
	k->anchored = (s->h.flags & SAMPLE_F_ANCHORED) != 0;
	nn = k->nsym ? native_frames(k, t, s, size) : 0;
	n = merged_stack(k, nn, np);
	if (s->h.nkframes && k->ksym)
		n = kernel_frames(k, s, size, n);
	else if ((s->h.flags & SAMPLE_F_KERNEL) && k->nsym)
		n = prepend(k, n, synthetic(k, "[kernel]"));
	/* A cut walk ends before the depth limit: what was past it is not
	 * Python stack, however deep the BPF walk went. */
	if ((s->h.flags & SAMPLE_F_TRUNCATED) && !cut) {
		k->n.truncated++;
		k->locs[n++] = synthetic(k, "[truncated]");
	}
	if (np == 0 && (s->h.flags & (SAMPLE_F_NO_TSTATE | SAMPLE_F_NO_INTERP))) {
		k->n.no_python++;
		k->locs[n++] = synthetic(k, (s->h.flags & SAMPLE_F_NO_INTERP) ?
					 "[Python not initialised]" : "[no Python stack]");
	}
	if (n == 0)
		k->locs[n++] = synthetic(k, "[no stack]");
	for (size_t i = 0; i < n; i++)
		if (!k->locs[i])
			return -1;	/* out of memory in the profile */
	memcpy(comm, s->h.comm, PYPERF_COMM_LEN);
	comm[PYPERF_COMM_LEN] = '\0';
	if (k->threads && s->h.tstate)
		tname = pythread_cache_name(k->threads, t, s->h.tstate, s->h.time_ns);
	/* threading's name for the main thread, whether or not the target
	 * imported threading (the comm would be the process name). */
	if (!tname && s->h.tid == s->h.pid)
		tname = "MainThread";
	if (k->tasks && s->h.tstate)
		task = task_label(k, t, s, size, &task_obj);
	if (k->awaits && task_obj)
		n = async_stack(k, t, n, np, task_obj, s->h.time_ns);
	if (offcpu_first(k, t, s, n, tname ? tname : comm, task))
		return -1;
	if (s->h.flags & SAMPLE_F_OFFCPU) {
		/* Its time on the CPU since its last sample (wall mode's
		 * oncpu_span in BPF) ended here: running, with this stack. */
		int64_t w = wall_span(k, s), p = (int64_t)k->period_ns;

		if (w > 0 && add_labeled(k, t, k->locs, n, s->h.pid, s->h.tid, tname ? tname : comm,
					 task, s->h.flags & ~SAMPLE_F_OFFCPU,
					 p ? (w + p / 2) / p : 1, w))
			return -1;
		return offcpu_start(k, t, s, n, tname ? tname : comm, task);
	}
	if (k->wall_from_ns && wall_span(k, s) <= 0)
		return 0;	/* all of it before the window */
	return add_labeled(k, t, k->locs, n, s->h.pid, s->h.tid, tname ? tname : comm, task,
			   s->h.flags, 1, wall_span(k, s));
}
