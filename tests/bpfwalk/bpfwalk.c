/*
 * The BPF walk in user space; see bpfwalk.h. The parts of the program are
 * included here as they are, after the stand-ins of bpf_shim.h, whose
 * functions below serve them from one run's state: the BPF program has no
 * context to hand over but its maps, so neither does this harness (one
 * run at a time, state in H).
 */
#include "bpf_shim.h"
#include "pyperf.h"
#include "common.bpf.h"
#include "checks.bpf.h"
#include "asynctask.bpf.h"
#include "pywalk.bpf.h"
#include "native_unwind.bpf.h"

#include <stdlib.h>

#include "bpfwalk.h"

const size_t bpfwalk_value_size[BW_NMAPS] = {
	[BW_UNWIND_PROCS] = sizeof(struct py_unwind_proc),
	[BW_UNWIND_OBJS] = sizeof(struct py_unwind_obj),
	[BW_UNWIND_PAGES] = sizeof(__u32),
	[BW_UNWIND_ROWS] = sizeof(struct py_unwind_row),
};

/* What the maps hold during a run: the per-CPU ones for CPU 0, empty at
 * the start like a CPU's first sample (the caches then miss, and every
 * code object is new: its capture is sent). */
static struct {
	const struct target_src *src;
	pid_t pid;
	const struct bpfwalk_tables *tb;
	struct bpfwalk_out *out;
	size_t ent_cap;
	uint32_t *hash;			/* open addressing: index + 1 into out->ent */
	size_t hash_cap;
	__u64 clock;
	struct frame_window frame_win __attribute__((aligned(8)));
	struct stack_window stack_win __attribute__((aligned(8)));
	struct py_code_capture capture_buf;
	struct recent_rules recent_rules;
	struct py_rule_slot rule_cache[1 << PY_RULE_CACHE_BITS];
	struct seen_set seen_code[SEEN_CODE_SETS];
	struct py_check code_checks[PY_CHECK_SLOTS];
} H;

static uint32_t ent_hash(enum bpfwalk_map map, uint32_t key)
{
	return (uint32_t)(((uint64_t)key * 0x9E3779B97F4A7C15ULL + map) >> 32);
}

static int hash_grow(void)
{
	size_t cap = H.hash_cap ? H.hash_cap * 2 : 1024;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -1;
	for (size_t i = 0; i < H.out->nent; i++) {
		const struct bpfwalk_entry *e = &H.out->ent[i];
		size_t j = ent_hash(e->map, e->key) & (cap - 1);

		while (h[j])
			j = (j + 1) & (cap - 1);
		h[j] = (uint32_t)i + 1;
	}
	free(H.hash);
	H.hash = h;
	H.hash_cap = cap;
	return 0;
}

/* The run's copy of map[key]: looked up once, then the same bytes (a BPF
 * map value stays put while the program runs). */
static struct bpfwalk_entry *table_entry(enum bpfwalk_map map, uint32_t key)
{
	struct bpfwalk_out *o = H.out;
	struct bpfwalk_entry *e;
	size_t j;

	if (2 * (o->nent + 1) > H.hash_cap && hash_grow())
		return NULL;
	for (j = ent_hash(map, key) & (H.hash_cap - 1); H.hash[j]; j = (j + 1) & (H.hash_cap - 1)) {
		e = &o->ent[H.hash[j] - 1];
		if (e->map == map && e->key == key)
			return e;
	}
	if (o->nent == H.ent_cap) {
		size_t cap = H.ent_cap ? 2 * H.ent_cap : 256;
		void *p = realloc(o->ent, cap * sizeof(*o->ent));

		if (!p)
			return NULL;
		o->ent = p;
		H.ent_cap = cap;
	}
	e = &o->ent[o->nent];
	*e = (struct bpfwalk_entry){ .map = map, .key = key };
	e->value = calloc(1, bpfwalk_value_size[map]);
	if (!e->value)
		return NULL;
	e->found = H.tb && H.tb->lookup && !H.tb->lookup(H.tb->ctx, map, key, e->value);
	H.hash[j] = (uint32_t)o->nent + 1;
	o->nent++;
	return e;
}

static void *table_lookup(enum bpfwalk_map map, uint32_t key)
{
	struct bpfwalk_entry *e = table_entry(map, key);

	if (!e)
		abort();	/* out of memory: a miss would be a wrong walk */
	return e->found ? e->value : NULL;
}

/* A per-CPU array of one element, or an array of n, as the kernel serves
 * them: NULL past the end. */
#define ARRAY_SLOT(arr, n, key) ((key) < (n) ? (void *)&(arr)[key] : NULL)

void *bpfh_map_lookup(const void *map, const void *key)
{
	__u32 k = *(const __u32 *)key;

	if (map == &frame_win)
		return k ? NULL : &H.frame_win;
	if (map == &stack_win)
		return k ? NULL : &H.stack_win;
	if (map == &capture_buf)
		return k ? NULL : &H.capture_buf;
	if (map == &recent_rules)
		return k ? NULL : &H.recent_rules;
	if (map == &rule_cache)
		return ARRAY_SLOT(H.rule_cache, 1u << PY_RULE_CACHE_BITS, k);
	if (map == &seen_code)
		return ARRAY_SLOT(H.seen_code, SEEN_CODE_SETS, k);
	if (map == &stats)
		return ARRAY_SLOT(H.out->stats, STAT__COUNT, k);
	if (map == &code_checks)
		return ARRAY_SLOT(H.code_checks, PY_CHECK_SLOTS, k);
	if (map == &unwind_procs)
		return table_lookup(BW_UNWIND_PROCS, k);
	if (map == &unwind_objs)
		return table_lookup(BW_UNWIND_OBJS, k);
	if (map == &unwind_pages)
		return table_lookup(BW_UNWIND_PAGES, k);
	if (map == &unwind_rows)
		return table_lookup(BW_UNWIND_ROWS, k);
	abort();	/* a map the harness does not know: add it above */
}

long bpfh_read_user(void *dst, __u32 size, __u64 addr)
{
	if (!target_read(H.src, H.pid, addr, dst, size))
		return 0;
	memset(dst, 0, size);
	return -EFAULT;
}

long bpfh_ringbuf_output(const void *map, const void *data, __u64 size)
{
	struct bpfwalk_out *o = H.out;
	void *p;

	if (map != &events || size != sizeof(struct py_code_capture))
		abort();	/* the parts send nothing else */
	p = realloc(o->caps, (o->ncaps + 1) * sizeof(*o->caps));
	if (!p)
		abort();
	o->caps = p;
	memcpy(&o->caps[o->ncaps++], data, size);
	return 0;
}

__u64 bpfh_ktime(void)
{
	return ++H.clock;
}

void bpfwalk_out_free(struct bpfwalk_out *out)
{
	for (size_t i = 0; i < out->nent; i++)
		free(out->ent[i].value);
	free(out->ent);
	free(out->caps);
	free(out->s);
	memset(out, 0, sizeof(*out));
}

const uint64_t *bpfwalk_pcs(const struct bpfwalk_out *out)
{
	return (const uint64_t *)((const uint8_t *)out->s->frames +
				  (size_t)out->s->h.nframes * out->fsize);
}

/* sample_current() (bpf/pyperf.bpf.c) from the thread state on, with the
 * kernel's parts taken from in: the thread state by a search of the
 * thread list (the program's caches would give the same one, checked),
 * the GIL, the Python walk, the native unwind. */
static void run(const struct bpfwalk_in *in, struct py_sample *s, uint32_t fsize)
{
	struct walk_ctx w = { .compact = in->compact };
	__u64 tstate;
	int err = 0;

	s->h.pid = in->pid;
	s->h.tid = in->tid;
	s->h.flags = in->flags;
	tstate = search_tstate(&in->cfg, in->ident, &err);
	s->h.tstate = tstate;
	s->h.flags |= gil_state(&in->cfg, tstate);
	walk_thread(&w, &in->cfg, s, tstate, err);
	if (in->native)
		unwind_native(s, in->pid, w.n, fsize, in->ip, in->sp, in->bp, in->top);
}

int bpfwalk_run(const struct bpfwalk_in *in, const struct target_src *src,
		const struct bpfwalk_tables *tb, struct bpfwalk_out *out)
{
	bpfwalk_out_free(out);
	free(H.hash);
	memset(&H, 0, sizeof(H));
	memset(&check_req, 0, sizeof(check_req));
	H.src = src;
	H.pid = (pid_t)in->pid;
	H.tb = tb;
	H.out = out;
	out->s = calloc(1, sizeof(*out->s));
	if (!out->s || hash_grow())
		return -1;
	out->fsize = in->compact ? sizeof(struct py_frame_compact) : sizeof(struct py_frame_rec);
	run(in, out->s, out->fsize);
	free(H.hash);
	H.hash = NULL;
	H.hash_cap = 0;
	return 0;
}

int bpfwalk_find_tasks(const struct py_task_src *tsrc, const struct target_src *src,
		       uint32_t pid, uint64_t tstate, struct py_sample *s)
{
	int none;

	memset(&H, 0, sizeof(H));
	H.src = src;
	H.pid = (pid_t)pid;
	none = find_tasks(tsrc, s, tstate);
	H.src = NULL;
	return none;
}
