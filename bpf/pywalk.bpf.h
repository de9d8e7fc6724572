/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The Python walk: the thread state of an ident in the interpreter's
 * thread list, then its frames by the target's layout into a record
 * (bpf/pyperf.h), with the eval-loop anchors the native walk matches.
 * No kernel structure is read here: the entry points (pyperf.bpf.c) find
 * the ident and the cached thread state. Part of pyperf.bpf.c; needs
 * common.bpf.h and checks.bpf.h.
 */
#ifndef PYWALK_BPF_H
#define PYWALK_BPF_H

/* A frame's fields are decoded from a copy of target memory in this
 * window rather than read one by one: each bpf_probe_read_user costs far
 * more than the bytes it copies (~0.1 us each, measured at 99 Hz). From
 * 3.11 on, a thread's frames lie on its data stack, each caller just
 * below its callee, so one copy of the PY_DATASTACK_WIN bytes below a frame
 * serves its callers too. The extra PYPERF_FRAME_WIN + 8 bytes let the
 * verifier bound a field's load at any frame offset in the window. */
#define PY_DATASTACK_WIN	2048	/* bytes of data stack copied at once, a power
				 * of 2 (PYPERF_FRAME_WIN: one frame's) */

struct frame_window {
	__u8 b[PY_DATASTACK_WIN + PYPERF_FRAME_WIN + 8];
};

/* Which target bytes frame_win holds: [lo, lo + len), and the frame read
 * last. */
struct win_bounds {
	__u64 lo;
	__u64 prev;
	__u32 len;
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct frame_window);
} frame_win SEC(".maps");

static __always_inline int tstate_matches(const struct py_walk_offsets *off,
					  __u64 tstate, __u64 ident)
{
	__u16 field = off->tid_kind == PY_TID_NATIVE ? off->ts_native_thread_id
						      : off->ts_thread_id;
	__u64 v = 0;

	if (read_ptr(&v, tstate + field))
		return -1;
	return v == ident;
}

struct find_ctx {
	const struct py_walk_offsets *off;
	__u64 ident;
	__u64 cur;
	__u64 found;
	int err;
};

static long find_step(__u32 i, struct find_ctx *c)
{
	int m;

	if (!c->cur)
		return 1;
	m = tstate_matches(c->off, c->cur, c->ident);
	if (m < 0) {
		c->err = 1;
		return 1;
	}
	if (m) {
		c->found = c->cur;
		return 1;
	}
	if (read_ptr(&c->cur, c->cur + c->off->ts_next)) {
		c->err = 1;
		return 1;
	}
	return 0;
}

/* The thread state whose thread id is ident in the interpreter's thread
 * list, or 0; sets *err when a read failed (e.g. the interpreter not yet
 * initialised). */
static __always_inline __u64 search_tstate(const struct py_proc_config *cfg, __u64 ident,
					   int *err)
{
	const struct py_walk_offsets *off = &cfg->off;
	struct find_ctx c = { .off = off, .ident = ident };
	__u64 interp = 0;

	if (read_ptr(&interp, cfg->interp_head_addr) || !interp ||
	    read_ptr(&c.cur, interp + off->interp_tstate_head)) {
		*err = 1;
		return 0;
	}
	bpf_loop(PYPERF_MAX_THREADS, find_step, &c, 0);
	*err = c.err;
	return c.found;
}

struct walk_ctx {
	const struct py_walk_offsets *off;
	struct py_sample *s;
	__u64 frame;
	__u64 mark;	/* Brent's cycle check: a frame seen before */
	/* PY_FRAMES_CFRAME: the _PyCFrame the walk began at; then, for
	 * PY_ENTRY_FLAG, the anchor of the next entry frame (PY_ANCHOR_LAZY
	 * after the first: see entry_anchor) */
	__u64 cframe;
	__u32 n;
	int err;
	int compact;	/* frames as struct py_frame_compact (SAMPLE_F_COMPACT) */
	int fresh;	/* a code object not seen lately (code_is_new) */
	struct win_bounds win;	/* what frame_win holds */
};

/* Records frame n (< PYPERF_MAX_FRAMES) of s from *f, full or compact.
 * Returns 1 if the slot held the same code object before: the previous
 * sample on this CPU had it at the same depth, so it was seen lately
 * (see code_is_new), and the check costs no cache line the write does
 * not. Global, like the two below: verified once, not once per path of
 * the walk's bpf_loop callback (which exceeded the verifier's limit). */
__noinline int put_frame(struct py_sample *s, __u32 n, int compact,
			 const struct py_frame_rec *f)
{
	struct py_frame_compact *c;
	int same;

	if (!s || !f)
		return 0;
	n &= PYPERF_MAX_FRAMES - 1;
	if (compact) {
		c = (struct py_frame_compact *)s->frames + n;
		same = (c->code_flags & ~(__u64)7) == f->code;
		c->code_flags = f->code | f->flags;
		c->lasti = f->lasti;
		return same;
	}
	same = s->frames[n].code == f->code;
	s->frames[n] = *f;
	return same;
}

/* The walk kept frame n at addr: is it the coroutine frame of a running
 * task's candidate (asynctask.bpf.h)? Global: nothing in the walk's own
 * states. */
__noinline int match_task(struct py_sample *s, __u64 addr, __u32 n)
{
	if (!s)
		return 0;
	for (__u32 k = 0; k < PY_TASK_CANDS; k++) {
		if (k >= s->ntask)
			break;
		if (s->task_frame[k] == addr) {
			s->task_hits++;
			s->task_at = n;
			s->task_which = k;
		}
	}
	return 0;
}

/* Sets FRAME_F_ENTRY in frame n; 0 if it was set already. */
__noinline int mark_entry(struct py_sample *s, __u32 n, int compact)
{
	struct py_frame_compact *c;

	if (!s)
		return 0;
	n &= PYPERF_MAX_FRAMES - 1;
	if (compact) {
		c = (struct py_frame_compact *)s->frames + n;
		if (c->code_flags & FRAME_F_ENTRY)
			return 0;
		c->code_flags |= FRAME_F_ENTRY;
		return 1;
	}
	if (s->frames[n].flags & FRAME_F_ENTRY)
		return 0;
	s->frames[n].flags |= FRAME_F_ENTRY;
	return 1;
}

/* Closes the next eval-loop group with the anchor at addr (bpf/pyperf.h).
 * The count lives in s, not in the walk's context: a field more there
 * kept the verifier from pruning the walk's states. Global for the same
 * reason as above. A PY_ANCHOR_LAZY anchor is counted, not stored
 * (walk_step counts them inline): the native walk reads it from the one
 * before (next_anchor), and the lazy ones all follow the stored ones
 * (na_real), so neither walk writes a line of anchors[] for them (~11 a
 * sample on black). */
__noinline int put_anchor(struct py_sample *s, __u64 addr)
{
	__u32 k;

	if (!s)
		return 0;
	k = s->na;
	s->na = k + 1;
	if (addr == PY_ANCHOR_LAZY)
		return 0;
	if (k < PY_ANCHORS_MAX)
		s->anchors[k & (PY_ANCHORS_MAX - 1)] = addr;
	s->na_real = k + 1;
	return 0;
}

/* An entry frame was just kept. PY_ENTRY_FLAG: it closes group *na, whose
 * anchor is cf, and the next anchor is the _PyCFrame after cf in the
 * chain: PY_ANCHOR_LAZY, returned, for the native walk to read where its
 * stack window holds cf (next_anchor, native_unwind.bpf.h) rather than
 * by a read of its own here (~0.1 us an entry frame: a generator-deep
 * program such as black has ~10). Else returns cf. */
__noinline __u64 entry_anchor(const struct py_walk_offsets *off, struct py_sample *s, __u64 cf)
{
	if (!off || off->entry_kind != PY_ENTRY_FLAG)
		return cf;
	put_anchor(s, cf);
	return PY_ANCHOR_LAZY;
}

static __always_inline void put_empty(struct walk_ctx *c, __u32 n)
{
	struct py_frame_rec f = { .flags = FRAME_F_ENTRY | FRAME_F_EMPTY };

	put_frame(c->s, n, c->compact, &f);
}

/* The frame at addr, decoded by the step shared with the unit tests
 * (bpf/pyperf.h) from frame_win, which is refilled unless it holds the
 * frame's first off->frame_span bytes. A refill reads from up to
 * PY_DATASTACK_WIN bytes below the frame's end, but not below the page the
 * frame starts in: those bytes are mapped if the frame is, so the window
 * never fails where the frame alone would not. Every field lies inside
 * the frame structure (f_localsplus[0] included: it is counted in
 * sizeof(PyFrameObject)), so a read that fails means a bad frame pointer.
 * A global function: the verifier checks it once, not once per branch
 * combination of every bpf_loop iteration, which exceeded its limit. */
__noinline int read_frame(const struct py_walk_offsets *off, __u64 addr,
			  struct win_bounds *ws, struct py_frame_fields *f)
{
	struct frame_window *w;
	__u32 zero = 0, span;
	__u64 lo, end, len;

	if (!off || !ws || !f)
		return -1;
	span = off->frame_span;
	w = bpf_map_lookup_elem(&frame_win, &zero);
	if (!w || span == 0 || span > PYPERF_FRAME_WIN || addr > ~0ULL - span)
		return -1;
	end = addr + span;
	if (addr < ws->lo || end > ws->lo + ws->len) {
		lo = addr;
		/* Only where this frame lies just below the last one, on the
		 * data stack: <= 3.10's frames and generators' are heap
		 * objects, their callers anywhere. */
		if (off->frame_kind != PY_FRAMES_OBJECT && end > PY_DATASTACK_WIN &&
		    (!ws->prev || (addr < ws->prev && ws->prev - addr < PY_DATASTACK_WIN))) {
			lo = end - PY_DATASTACK_WIN;
			if (lo < (addr & ~4095ULL))
				lo = addr & ~4095ULL;
		}
		ws->len = 0;
		len = end - lo;
		if (len > PY_DATASTACK_WIN || bpf_probe_read_user(w->b, len, (const void *)lo))
			return -1;
		ws->lo = lo;
		ws->len = (__u32)len;
	}
	ws->prev = addr;
	py_frame_decode(off, w->b + ((addr - ws->lo) & (PY_DATASTACK_WIN - 1)), f);
	return 0;
}

/* 3.11-3.12: the eval loop publishes its _PyCFrame (on its C
 * stack) a few instructions before it sets the cframe's current_frame, and
 * a sample in between reads what the stack held before. The caller's
 * cframe, the next field after current_frame in both versions, is whole:
 * walk from its frame, after an empty group for the eval-loop call that has
 * not taken its frame yet. Returns the bpf_loop verdict. */
static __always_inline long caller_cframe(struct walk_ctx *c)
{
	__u64 prev = 0, f = 0;

	if (read_ptr(&prev, c->cframe + c->off->cframe_current_frame + 8) || !prev ||
	    read_ptr(&f, prev + c->off->cframe_current_frame) || !f) {
		c->s->h.flags |= SAMPLE_F_BAD_CHAIN;
		return 1;
	}
	put_empty(c, 0);
	/* The new call's cframe is its anchor, the caller's the next one. */
	put_anchor(c->s, c->cframe);
	c->cframe = prev;
	c->n = 1;
	c->frame = f;
	stat_inc(STAT_CFRAME_FALLBACK);
	return 0;
}

static long walk_step(__u32 i, struct walk_ctx *c)
{
	const struct py_walk_offsets *off = c->off;
	struct py_frame_fields f = {};
	__u64 addr = c->frame;	/* a shim's: its eval-loop call's anchor */
	__u32 n = c->n;
	int verdict, bad;

	if (!c->frame)
		return 1;
	if (n >= PYPERF_MAX_FRAMES) {
		c->s->h.flags |= SAMPLE_F_TRUNCATED;
		return 1;
	}
	if (read_frame(off, c->frame, &c->win, &f)) {
		c->err = 1;
		return 1;
	}
	verdict = py_frame_classify(off, &f);
	bad = verdict == PY_FRAME_BAD || (c->frame & 7);
	if (bad && i == 0 && c->cframe)
		return caller_cframe(c);
	/* Garbage (see py_frame_classify) or a cycle: the walk stops, and
	 * user space shows one placeholder where it did. */
	if (bad || (c->mark && f.back == c->mark)) {
		c->s->h.flags |= SAMPLE_F_BAD_CHAIN;
		return 1;
	}
	/* The mark moves to every 2^k-th frame: a cycle of any length is
	 * found within twice its length plus its tail. */
	if ((i & (i + 1)) == 0)
		c->mark = c->frame;
	c->frame = f.back;
	/* A shim frame carries no Python code but marks where an eval-loop
	 * call began: the frame recorded before it is its outermost. */
	if (verdict == PY_FRAME_SHIM) {
		/* Its address is the anchor of the group it closes. */
		put_anchor(c->s, addr);
		if (n > 0 && n <= PYPERF_MAX_FRAMES && mark_entry(c->s, n - 1, c->compact))
			return 0;
		/* No Python frame since the previous shim: this eval-loop
		 * call is between frames (just entered, or clearing the frame
		 * it returned from), or this is the thread's base frame (the
		 * chain's root from 3.15, in the thread state: its anchor
		 * matches no native frame). An empty group keeps the merge
		 * paired. */
		if (n < PYPERF_MAX_FRAMES) {
			put_empty(c, n);
			c->n = n + 1;
		}
		return 0;
	}
	if (n < PYPERF_MAX_FRAMES) {
		struct py_frame_rec r = { .code = f.code, .lasti = f.lasti, .self = f.self,
					  .flags = py_frame_flags(off, &f), .tlbc = f.tlbc };

		if (!put_frame(c->s, n, c->compact, &r))
			c->fresh |= code_is_new(off, c->s, f.code, f.globals);
		/* No call where no task runs (a program without asyncio). */
		if (c->s->ntask)
			match_task(c->s, addr, n);
		/* Anchors: 3.11's entry frames (3.12+'s are shims, <= 3.10
		 * has none). After the first, one more lazy anchor to count
		 * (put_anchor): no call (~11 a sample on black). */
		if ((r.flags & FRAME_F_ENTRY) && off->entry_kind == PY_ENTRY_FLAG) {
			if (c->cframe == PY_ANCHOR_LAZY)
				c->s->na++;
			else
				c->cframe = entry_anchor(off, c->s, c->cframe);
		}
		c->n = n + 1;
	}
	return 0;
}

/* Reads the GIL's words for py_gil_flags() (bpf/pyperf.h). */
static __always_inline __u32 gil_state(const struct py_proc_config *cfg, __u64 tstate)
{
	struct py_gil_read g = {};

	if (!tstate)
		return SAMPLE_F_GIL_UNKNOWN;
	if (cfg->gil_enabled_addr)
		g.has_enabled = !bpf_probe_read_user(&g.enabled, sizeof(g.enabled),
						     (const void *)cfg->gil_enabled_addr);
	if (cfg->gil_locked_addr && cfg->gil_holder_addr)
		g.has_locked = !bpf_probe_read_user(&g.locked, sizeof(g.locked),
						    (const void *)cfg->gil_locked_addr) &&
			       !read_ptr(&g.holder, cfg->gil_holder_addr);
	if (cfg->gil_current_addr)
		g.has_current = !read_ptr(&g.current, cfg->gil_current_addr);
	return py_gil_flags(&g, tstate);
}

static __always_inline __u64 first_frame(const struct py_walk_offsets *off,
					 __u64 tstate, __u64 *cframe, int *err)
{
	__u64 f = 0;

	if (read_ptr(&f, tstate + off->ts_frame)) {
		*err = 1;
		return 0;
	}
	if (off->frame_kind != PY_FRAMES_CFRAME || !f)
		return f;
	*cframe = f;
	if (read_ptr(&f, f + off->cframe_current_frame)) {
		*err = 1;
		return 0;
	}
	return f;
}

/* The Python frames of thread state tstate (0: none; err: a read failed
 * finding it) into s, with the walk's flags; w holds the walk's state
 * (w->compact set by the caller), w->n the frames put. */
static __always_inline void walk_thread(struct walk_ctx *w, const struct py_proc_config *cfg,
					struct py_sample *s, __u64 tstate, int err)
{
	if (!tstate) {
		s->h.flags |= err ? SAMPLE_F_NO_INTERP : SAMPLE_F_NO_TSTATE;
		stat_inc(STAT_NO_TSTATE);
	} else {
		w->off = &cfg->off;
		w->s = s;
		s->anchor_link = cfg->off.cframe_previous;
		w->frame = first_frame(&cfg->off, tstate, &w->cframe, &w->err);
		/* Two steps a frame at most: under -X perf every call has
		 * its shim frame (3.12+). */
		bpf_loop(2 * PYPERF_MAX_FRAMES + 2, walk_step, w, 0);
		/* A chain still going when the steps ran out is cut, never
		 * silently short. */
		if (w->frame && !w->err && !(s->h.flags & SAMPLE_F_BAD_CHAIN))
			s->h.flags |= SAMPLE_F_TRUNCATED;
		if (cfg->off.entry_kind != PY_ENTRY_EVERY)
			s->h.flags |= SAMPLE_F_ANCHORED;
		if (w->err) {
			s->h.flags |= SAMPLE_F_READ_ERR;
			stat_inc(STAT_READ_ERR);
		}
		if (s->h.flags & SAMPLE_F_TRUNCATED)
			stat_inc(STAT_TRUNCATED);
		if (s->h.flags & SAMPLE_F_BAD_CHAIN)
			stat_inc(STAT_BAD_CHAIN);
	}
	if (w->n > PYPERF_MAX_FRAMES)
		w->n = PYPERF_MAX_FRAMES;
	s->h.nframes = w->n;
}

#endif /* PYWALK_BPF_H */
