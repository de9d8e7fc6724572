/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --unwind kernel: the native stack unwound from the interrupted
 * registers with the per-object tables user space loads (bpf/pyperf.h),
 * each frame's pc tagged with the eval-loop anchor it holds. The entry
 * points (pyperf.bpf.c) read the registers from the task. Part of
 * pyperf.bpf.c; needs common.bpf.h and pywalk.bpf.h (struct win).
 */
#ifndef NATIVE_UNWIND_BPF_H
#define NATIVE_UNWIND_BPF_H

/* ---- --unwind kernel: native frames from per-object tables ------------- */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PY_UNWIND_MAX_ROWS);	/* 1 unless --unwind kernel */
	__type(key, __u32);
	__type(value, struct py_unwind_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PY_UNWIND_MAX_PAGES);	/* 1 unless --unwind kernel */
	__type(key, __u32);
	__type(value, __u32);
} unwind_pages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PY_UNWIND_MAX_OBJS);
	__type(key, __u32);
	__type(value, struct py_unwind_obj);
} unwind_objs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 2048);		/* TARGETS_MAX, by user space */
	__type(key, __u32);			/* tgid */
	__type(value, struct py_unwind_proc);
} unwind_procs SEC(".maps");

/* ut_cfa / ut_rbp values (src/native/unwind_table.h). */
enum { ROW_NONE, ROW_RSP, ROW_RBP, ROW_PLT, ROW_SIGNAL, ROW_OUTERMOST, ROW_UNSUPPORTED };
enum { RBP_SAME, RBP_CFA, RBP_UNSUPPORTED };

/* uc_mcontext.gregs of the ucontext_t a signal trampoline's rsp points
 * at: offsets of REG_RBP, REG_RSP, REG_RIP (x86_64 glibc and kernel). */
#define UC_GREGS	40
#define UC_RBP		(UC_GREGS + 10 * 8)
#define UC_RSP		(UC_GREGS + 15 * 8)
#define UC_RIP		(UC_GREGS + 16 * 8)

/* The registers a step needs, and the window of stack read at once. */
struct nregs {
	__u64 ip, sp, bp;
	__u64 exact;		/* ip is not a return address (leaf, signal) */
	__u64 win_lo;		/* stack_win holds [win_lo, win_lo + win_len) */
	__u64 top;		/* main thread: no frame above (mm->start_stack) */
	__u32 win_len;
	__u32 win_tries;	/* window reads so far (PY_STACK_WIN_TRIES) */
	__u32 map_flags;	/* PY_MAP_* of the frame stepped last */
	__u32 map_hint;		/* see find_map */
};

/* Each bpf_probe_read_user costs far more than the bytes it copies (~0.1
 * us in a VM), and a walk reads one or two words per frame, over ~1.5 KiB
 * of stack on make bench's workload (13 frames) and ~15 KiB on a deep
 * program (black: 38 frames): a few reads of the stack ahead serve them
 * (at most 32 KiB copied). With 3 windows of 2 KiB, black's walks still
 * made 47 reads of their own per sample. */
#define PY_STACK_WIN		4096	/* power of 2 */
#define PY_STACK_WIN_TRIES	8

struct stack_window {
	__u8 b[PY_STACK_WIN + 16];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_window);
} stack_win SEC(".maps");

/* Fills the window from addr on: PY_STACK_WIN bytes, fewer where the main
 * thread's stack ends (a read past a mapping fails whole). */
static __always_inline struct stack_window *fill_window(struct nregs *w, __u64 addr)
{
	struct stack_window *b;
	__u32 zero = 0;
	__u64 len = PY_STACK_WIN, lo = addr;

	w->win_len = 0;
	if (w->win_tries >= PY_STACK_WIN_TRIES)
		return NULL;
	w->win_tries++;
	/* From the frame's sp: its saved registers lie below the return
	 * address (rbp pushed after others), and a window starting at the
	 * return address sent each of those to a read of its own. */
	if (w->sp <= addr && addr - w->sp <= PY_STACK_WIN / 4)
		lo = w->sp;
	if (w->top > lo && w->top - lo < len)
		len = w->top - lo;
	b = bpf_map_lookup_elem(&stack_win, &zero);
	if (!b || len < 16 || len > PY_STACK_WIN ||
	    bpf_probe_read_user(b->b, len, (const void *)lo))
		return NULL;
	w->win_lo = lo;
	w->win_len = (__u32)len;
	return b;
}

/* Reads 2 stack words at addr (or 1, into v[0], when two is 0): from the
 * window, refilled from addr when it does not hold them, else by a read of
 * their own. */
static __always_inline int stack_words(struct nregs *w, __u64 addr, __u64 *v, int two)
{
	__u32 len = two ? 16 : 8, zero = 0;
	struct stack_window *b = NULL;
	__u64 off = addr - w->win_lo;

	if (addr >= w->win_lo && off + len <= w->win_len)
		b = bpf_map_lookup_elem(&stack_win, &zero);
	else if ((b = fill_window(w, addr)))
		off = addr - w->win_lo;
	if (!b || off + len > w->win_len)
		return bpf_probe_read_user(v, len, (const void *)addr);
	off &= PY_STACK_WIN - 1;
	v[0] = *(__u64 *)(b->b + off);
	if (two)
		v[1] = *(__u64 *)(b->b + off + 8);
	return 0;
}

struct nwalk {
	struct py_sample *s;
	const struct py_unwind_proc *proc;
	struct nregs r;
	__u32 pc_off;		/* byte offset of the pcs in s->frames */
	__u32 n;
	__u8 end;
};

/* A binary search for the last mapping starting at or before pc. */
struct map_search {
	const struct py_unwind_proc *p;
	__u64 pc;
	__u32 lo, hi;
};

/* One step of it, as a bpf_loop callback, verified once: written as a
 * loop, the verifier walked its unrolled steps down both branches for
 * every state reaching it, ~770k of the ~930k instructions it checked for
 * the whole program in kernel mode (its limit is 1M, and other kernels
 * prune differently). */
static long map_search_step(__u32 i, struct map_search *s)
{
	__u32 mid;

	if (s->lo >= s->hi)
		return 1;
	mid = (s->lo + s->hi) / 2;
	if (s->p->m[mid & (PY_UNWIND_MAX_MAPS - 1)].start <= s->pc)
		s->lo = mid + 1;
	else
		s->hi = mid;
	return 0;
}

/* The mapping holding pc, or NULL. *hint is the index of the mapping
 * found last in this walk: most frames of a stack lie in few objects
 * (the interpreter, libc), and trying it first spares the search. */
static __always_inline const struct py_unwind_map *find_map(const struct py_unwind_proc *p,
							    __u64 pc, __u32 *hint)
{
	struct map_search s = { .p = p, .pc = pc, .hi = p->n };
	const struct py_unwind_map *m = &p->m[*hint & (PY_UNWIND_MAX_MAPS - 1)];
	__u32 lo;

	if (*hint < p->n && m->start <= pc && pc < m->end)
		return m;
	if (s.hi > PY_UNWIND_MAX_MAPS)
		s.hi = PY_UNWIND_MAX_MAPS;
	bpf_loop(PY_UNWIND_MAP_SEARCH, map_search_step, &s, 0);
	if (s.lo == 0)
		return NULL;
	lo = (s.lo - 1) & (PY_UNWIND_MAX_MAPS - 1);
	*hint = lo;
	return pc < p->m[lo].end ? &p->m[lo] : NULL;
}

/* The index of the row covering link-time address rel in object obj, or
 * -1. A global function: verified once, not per call site. */
__noinline long find_row(__u32 obj, __u64 rel)
{
	const struct py_unwind_obj *o = bpf_map_lookup_elem(&unwind_objs, &obj);
	const struct py_unwind_row *r;
	__u32 lo, hi, mid, p, base;
	const __u32 *pg;

	if (!o || !o->count || !o->page_count || rel > 0xffffffffULL)
		return -1;
	if ((rel >> PY_UNWIND_PAGE_SHIFT) < o->page_base)
		return -1;	/* before the first row */
	p = (__u32)(rel >> PY_UNWIND_PAGE_SHIFT) - o->page_base;
	hi = o->first + o->count;
	if (p >= o->page_count) {
		p = o->page_count - 1;	/* past the last page: its rows on */
	} else if (p + 1 < o->page_count) {
		base = o->page_first + p + 1;
		pg = bpf_map_lookup_elem(&unwind_pages, &base);
		if (!pg)
			return -1;
		hi = *pg + 1;
	}
	base = o->page_first + p;
	pg = bpf_map_lookup_elem(&unwind_pages, &base);
	if (!pg)
		return -1;
	lo = *pg;
	base = lo;
	for (int k = 0; k < PY_UNWIND_ROW_SEARCH && lo < hi; k++) {
		mid = lo + (hi - lo) / 2;
		r = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!r)
			return -1;
		if (r->pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo <= base)
		return -1;	/* no row at or before rel */
	return lo - 1;
}

/* Signal trampoline: the interrupted registers are in the ucontext_t at
 * rsp; the next frame's ip is exact, not a return address. */
static __always_inline int signal_step(struct nregs *w)
{
	__u64 g[3];

	if (bpf_probe_read_user(&g[0], 8, (const void *)(w->sp + UC_RBP)) ||
	    bpf_probe_read_user(&g[1], 8, (const void *)(w->sp + UC_RSP)) ||
	    bpf_probe_read_user(&g[2], 8, (const void *)(w->sp + UC_RIP)))
		return PY_NATIVE_END_READ;
	stat_inc(STAT_NATIVE_SIGNAL);
	w->bp = g[0];
	w->sp = g[1];
	w->ip = g[2];
	w->exact = 1;
	return -1;
}

/* Frame-pointer step: rbp points at the saved rbp, the return address
 * above it. Only where no table rule applies. */
static __always_inline int fp_step(struct nregs *w)
{
	__u64 fr[2];

	/* rbp == sp is a frame with no locals calling out (push rbp; mov
	 * rsp, rbp; call): its callee's CFA is its rbp. src/native/unwind.c
	 * takes it too. */
	if (w->bp < w->sp || (w->bp & 7))
		return PY_NATIVE_END_BAD;
	if (stack_words(w, w->bp, fr, 1))
		return PY_NATIVE_END_READ;
	stat_inc(STAT_NATIVE_FP);
	w->sp = w->bp + 16;
	w->bp = fr[0];
	w->ip = fr[1];
	w->exact = 0;
	return -1;
}

/* One step by a table row; -1 to go on, else an enum py_native_end. */
static __always_inline int row_step(struct nregs *w, const struct py_unwind_row *r)
{
	__u8 cfa_kind = PY_ROW_CFA(r->kind), rbp_kind = PY_ROW_RBP(r->kind);
	__u64 cfa, ra = 0, bp = w->bp;

	if (cfa_kind == ROW_RSP)
		cfa = w->sp + (__s64)r->cfa_off;
	else if (cfa_kind == ROW_RBP)
		cfa = w->bp + (__s64)r->cfa_off;
	else if (cfa_kind == ROW_PLT) {
		cfa = w->sp + (__s64)r->cfa_off + ((w->ip & 15) >= r->plt_thr ? 8 : 0);
		stat_inc(STAT_NATIVE_PLT);
	} else if (cfa_kind == ROW_OUTERMOST)
		return PY_NATIVE_END_OUTERMOST;
	else if (cfa_kind == ROW_SIGNAL)
		return signal_step(w);
	else
		return fp_step(w);	/* no rule here, or one we cannot follow */
	if (cfa <= w->sp)
		return PY_NATIVE_END_BAD;
	/* A read costs far more than its bytes: where rbp was pushed first
	 * (CFA - 16, the usual prologue), one read gets it and the return
	 * address together. */
	if (rbp_kind == RBP_CFA && r->rbp_off == -16) {
		__u64 fr[2];

		if (stack_words(w, cfa - 16, fr, 1))
			return PY_NATIVE_END_READ;
		bp = fr[0];
		ra = fr[1];
	} else if (stack_words(w, cfa - 8, &ra, 0)) {
		return PY_NATIVE_END_READ;
	} else if (rbp_kind == RBP_CFA) {
		if (stack_words(w, cfa + (__s64)r->rbp_off, &bp, 0))
			return PY_NATIVE_END_READ;
	} else if (rbp_kind == RBP_UNSUPPORTED) {
		bp = 0;		/* unknown: an rbp-based rule above stops */
	}
	w->sp = cfa;
	w->bp = bp;
	w->ip = ra;
	w->exact = 0;
	return -1;
}

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << PY_RULE_CACHE_BITS);	/* CPUs << BITS, by user space */
	__type(key, __u32);
	__type(value, struct py_rule_slot);
} rule_cache SEC(".maps");

/* The link-time address where row idx of object obj ends: the next row's
 * (gaps between FDEs have rows of their own), or limit after the last. */
static __always_inline __u64 row_end(__u32 obj, __u32 idx, __u64 limit)
{
	const struct py_unwind_obj *o = bpf_map_lookup_elem(&unwind_objs, &obj);
	const struct py_unwind_row *r;

	idx++;
	if (!o || idx >= o->first + o->count || !(r = bpf_map_lookup_elem(&unwind_rows, &idx)))
		return limit;
	return r->pc;
}

/* The rule for pc (already less 1 for a return address) from the tables
 * into c, with the pcs it holds for (clamped to pc's mapping): kind
 * ROW_NONE where no table covers pc. -1 if pc is in no loaded mapping. */
static __always_inline int lookup_rule(const struct py_unwind_proc *p, __u64 pc,
				       struct py_rule_slot *c, __u32 *map_hint)
{
	const struct py_unwind_row *r = NULL;
	const struct py_unwind_map *m = find_map(p, pc, map_hint);
	__u64 lo, hi;
	long idx;
	__u32 key;

	if (!m)
		return -1;
	c->kind = ROW_NONE;
	c->map_flags = m->flags;
	lo = m->start;		/* no table: frame pointers, all of it */
	hi = m->end;
	if (m->obj) {
		idx = find_row(m->obj, pc - m->bias);
		key = (__u32)idx;
		if (idx >= 0)
			r = bpf_map_lookup_elem(&unwind_rows, &key);
		lo = pc;	/* without a row: this pc alone */
		hi = pc + 1;
	}
	if (r) {
		c->cfa_off = r->cfa_off;
		c->rbp_off = r->rbp_off;
		c->kind = r->kind;
		c->plt_thr = r->plt_thr;
		lo = r->pc + m->bias;
		hi = row_end(m->obj, key, m->end - m->bias) + m->bias;
		if (lo < m->start)
			lo = m->start;
		if (hi > m->end)
			hi = m->end;
		if (pc < lo || pc >= hi) {
			lo = pc;	/* tables that disagree: this pc alone */
			hi = pc + 1;
		}
	}
	c->start = lo;
	c->len = hi - lo > 0xffffffffULL ? 0xffffffffU : (__u32)(hi - lo);
	return 0;
}

/* Per CPU, the last rules found that hold for long ranges, most of them
 * whole functions: the sampled pc lands anywhere in a hot function (the
 * eval loop's row covers ~50 KiB), in a granule of rule_cache not filled
 * yet, and a search costs ~1.6 us cold. A few lines scanned in order
 * serve it instead. */
#define RECENT_RULES	16	/* power of 2 */
#define RECENT_MIN_LEN	32	/* bytes: shorter ranges stay in rule_cache alone */

struct recent_rules {
	__u32 next;		/* slot the next long range replaces */
	__u32 _pad[7];
	struct py_rule_slot e[RECENT_RULES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct recent_rules);
} recent_rules SEC(".maps");

static __always_inline int rule_holds(const struct py_rule_slot *c, __u64 pc, __u32 gen)
{
	return c->gen == gen && gen && pc - c->start < c->len;
}

/* Into *c, the rule for pc: from recent_rules, else from the tables (and
 * then kept there if its range is long). -1 if pc is in no loaded
 * mapping. */
static __always_inline int find_rule(const struct py_unwind_proc *p, __u64 pc,
				     struct py_rule_slot *c, __u32 *map_hint)
{
	struct recent_rules *rr;
	__u32 zero = 0;

	rr = bpf_map_lookup_elem(&recent_rules, &zero);
	if (rr) {
		for (__u32 i = 0; i < RECENT_RULES; i++) {
			if (rule_holds(&rr->e[i], pc, p->gen)) {
				*c = rr->e[i];
				return 0;
			}
		}
	}
	if (lookup_rule(p, pc, c, map_hint))
		return -1;
	c->gen = p->gen;
	if (rr && c->len >= RECENT_MIN_LEN) {
		rr->e[rr->next & (RECENT_RULES - 1)] = *c;
		rr->next++;
	}
	return 0;
}

/* One native frame: the caller's registers into *w. -1 to go on, else an
 * enum py_native_end. A global function: the verifier checks it once,
 * not once per path through the bpf_loop callback (which exceeded its
 * instruction limit). */
__noinline int native_step(const struct py_unwind_proc *p, struct nregs *w)
{
	struct py_rule_slot *c, tmp;
	struct py_unwind_row row;
	__u64 pc;
	__u32 k;

	if (!p || !w)
		return PY_NATIVE_END_BAD;
	pc = w->ip - (w->exact ? 0 : 1);
	/* Slots per CPU, and programs on a CPU do not nest (see scratch): a
	 * slot is never read half written. */
	k = bpf_get_smp_processor_id() << PY_RULE_CACHE_BITS |
	    (__u32)(((pc >> PY_RULE_GRANULE_SHIFT) * 0x9e3779b97f4a7c15ULL) >>
		    (64 - PY_RULE_CACHE_BITS));
	c = bpf_map_lookup_elem(&rule_cache, &k);
	if (!c || !rule_holds(c, pc, p->gen)) {
		if (!c)
			c = &tmp;
		if (find_rule(p, pc, c, &w->map_hint))
			return PY_NATIVE_END_NO_MAP;
	}
	row.cfa_off = c->cfa_off;
	row.rbp_off = c->rbp_off;
	row.kind = c->kind;
	row.plt_thr = c->plt_thr;
	w->map_flags = c->map_flags;
	return PY_ROW_CFA(row.kind) == ROW_NONE ? fp_step(w) : row_step(w, &row);
}

/* The stack word at addr, from the window where it holds it, else by a
 * read of its own: never a refill, so the walk's windows stay as they
 * were. */
static __always_inline int held_word(const struct nregs *r, __u64 addr, __u64 *v)
{
	struct stack_window *b = NULL;
	__u64 off = addr - r->win_lo;
	__u32 zero = 0;

	if (addr >= r->win_lo && off + 8 <= r->win_len)
		b = bpf_map_lookup_elem(&stack_win, &zero);
	if (!b)
		return bpf_probe_read_user(v, 8, (const void *)addr);
	*v = *(__u64 *)(b->b + (off & (PY_STACK_WIN - 1)));
	return 0;
}

/* Anchor j, given anchor j - 1 as read (prev): the one the Python walk
 * put, else (left PY_ANCHOR_LAZY, entry_anchor) the _PyCFrame prev links
 * to, 0 if unreadable (an anchor in no frame, as a failed read always
 * gave). Nothing is stored: each is wanted once, in order. Inlined: a
 * call of its own cost ~25 % of a tag (a second call, spills). */
static __always_inline __u64 next_anchor(const struct py_sample *s, const struct nregs *r,
					 __u32 j, __u64 prev)
{
	__u32 k = j & (PY_ANCHORS_MAX - 1);
	__u64 v = 0;

	/* k as computed: clang otherwise indexes by j, unbounded to the
	 * verifier, once j < PY_ANCHORS_MAX is known. */
	asm volatile("" : "+r"(k));
	if (!s || !r)
		return 0;
	if (j < s->na_real && j < PY_ANCHORS_MAX)
		return s->anchors[k];
	if (prev && prev != PY_ANCHOR_LAZY && held_word(r, prev + s->anchor_link, &v))
		v = 0;
	return prev ? v : 0;
}

/* The tag for the pc of a native frame spanning [lo, hi) of the stack:
 * PY_PC_EVAL and the anchor it holds, or 0: py_anchor_match's steps
 * (bpf/pyperf.h) on the anchors as next_anchor reads them, from
 * s->anchor_next (where the last match left off) and s->anchor_want
 * (that anchor, read). A lazy anchor is read after the match before it,
 * where its link lies in the frame just matched, which the stack window
 * holds. Called only for a frame reaching the wanted anchor. Global:
 * verified once, not once per path through the walk's bpf_loop callback
 * (inlined, it went past the verifier's limit). */
__noinline __u64 anchor_tag(struct py_sample *s, const struct nregs *r, __u64 lo, __u64 hi)
{
	__u32 next, na, g;
	__u64 want;

	if (!s || !r)
		return 0;
	next = s->anchor_next;
	want = s->anchor_want;
	na = s->na < PY_ANCHORS_MAX ? s->na : PY_ANCHORS_MAX;
	/* Past at most PY_ANCHOR_SKIPS anchors in no frame (below lo). */
	for (int k = 0; k < PY_ANCHOR_SKIPS; k++) {
		if (next >= na || want >= lo)
			break;
		next++;
		want = next < na ? next_anchor(s, r, next, want) : ~0ULL;
	}
	if (next >= na || want < lo || want >= hi) {
		s->anchor_next = next;
		s->anchor_want = next < na ? want : ~0ULL;
		return 0;
	}
	g = next++;
	s->anchor_next = next;
	s->anchor_want = next < na ? next_anchor(s, r, next, want) : ~0ULL;
	return PY_PC_EVAL | (__u64)g << PY_PC_GROUP_SHIFT;
}

static long nwalk_step(__u32 i, struct nwalk *w)
{
	__u64 off, *pc, lo, hi;
	int end;

	if (w->r.ip == 0) {
		w->end = PY_NATIVE_END_OUTERMOST;
		return 1;
	}
	if (w->n >= PYPERF_MAX_NATIVE) {
		w->end = PY_NATIVE_END_MAX;
		return 1;
	}
	off = (__u64)w->pc_off + (__u64)w->n * 8;
	pc = (__u64 *)((void *)w->s->frames + (off & 0xffff));
	*pc = w->r.ip;
	w->n++;
	w->r.map_flags = 0;
	lo = w->r.sp;
	end = native_step(w->proc, &w->r);
	if (w->r.map_flags & PY_MAP_TRAMPOLINE)
		*pc |= PY_PC_TRAMPOLINE;
	/* The frame spans [its sp, its CFA = the caller's sp), known when
	 * the step succeeded; below the next anchor, it holds none. */
	hi = end < 0 ? w->r.sp : lo;
	if (hi > w->s->anchor_want)
		*pc |= anchor_tag(w->s, &w->r, lo, hi);
	if (end >= 0) {
		w->end = end;
		return 1;
	}
	return 0;
}

static __always_inline void count_end(__u8 end)
{
	switch (end) {
	case PY_NATIVE_END_MAX: stat_inc(STAT_NATIVE_END_MAX); break;
	case PY_NATIVE_END_NO_MAP: stat_inc(STAT_NATIVE_END_NO_MAP); break;
	case PY_NATIVE_END_READ: stat_inc(STAT_NATIVE_END_READ); break;
	case PY_NATIVE_END_BAD: stat_inc(STAT_NATIVE_END_BAD); break;
	}
}

/* Unwinds the user stack from the interrupted registers (ip, sp, bp; top:
 * the main thread's mm->start_stack) into pcs after frames[n]; returns how
 * many. */
static __always_inline __u32 unwind_native(struct py_sample *s, __u32 tgid, __u32 n,
					   __u32 fsize, __u64 ip, __u64 sp, __u64 bp, __u64 top)
{
	struct nwalk w = { .s = s, .r.exact = 1 };

	s->h.flags |= SAMPLE_F_NATIVE_PCS;
	stat_inc(STAT_NATIVE_WALKS);
	w.proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (!w.proc) {
		s->h.native_end = PY_NATIVE_END_NO_PROC;
		stat_inc(STAT_NATIVE_END_NO_PROC);
		return 0;
	}
	/* Three fields, not a copy of pt_regs: the 512-byte stack is shared
	 * with the stack copy's. */
	w.r.ip = ip;
	w.r.sp = sp;
	w.r.bp = bp;
	w.r.top = top;
	if (w.r.top <= w.r.sp)
		w.r.top = 0;	/* another thread's stack: its top holds the TCB */
	w.pc_off = (n > PYPERF_MAX_FRAMES ? PYPERF_MAX_FRAMES : n) *
		   (fsize == sizeof(struct py_frame_rec) ? sizeof(struct py_frame_rec)
							 : sizeof(struct py_frame_compact));

	s->anchor_want = s->na ? s->anchors[0] : ~0ULL;
	bpf_loop(PYPERF_MAX_NATIVE + 1, nwalk_step, &w, 0);
	s->h.native_end = w.end;
	count_end(w.end);
	s->h.native_n = (__u16)w.n;
	stat_add(STAT_NATIVE_FRAMES, w.n);
	return w.n;
}

#endif /* NATIVE_UNWIND_BPF_H */
