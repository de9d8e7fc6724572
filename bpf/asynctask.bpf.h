/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The asyncio task a sampled thread runs, found at the sample (issue 23;
 * struct py_task_src and py_task_capture in bpf/pyperf.h): the candidates
 * before the walk (find_tasks), the walk keeps the one whose coroutine's
 * frame it meets (match_task, in pywalk.bpf.h), and the record gets its
 * capture after the walk (put_task). Part of pyperf.bpf.c; needs
 * common.bpf.h and checks.bpf.h (capture_str).
 */
#ifndef ASYNCTASK_BPF_H
#define ASYNCTASK_BPF_H

/* Per target process using asyncio: where its running tasks are (struct
 * py_task_src), written by user space when it finds them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 2048);
	__type(key, __u32);			/* tgid */
	__type(value, struct py_task_src);
} task_srcs SEC(".maps");

/* Candidate task (an object at task, not 0) into s->task_*: its type,
 * name and coroutine from one read of the Task, and the coroutine's frame,
 * the address the walk looks for. Returns its type (0: not read), taken
 * or not: a pure-Python Task read at a C Task's offsets may be no
 * candidate at all. */
static __always_inline __u64 add_task(const struct py_task_src *src, struct py_sample *s,
				      __u64 task)
{
	__u32 k = s->ntask, len = src->task_read;
	__u64 coro, frame = 0, type;

	if (!task || (task & 7) || k >= PY_TASK_CANDS || len < 16 || len > sizeof(s->task_buf) ||
	    src->task_coro > len - 8 || src->ob_type > len - 8 ||
	    (src->task_name != PYPERF_NO_FIELD && src->task_name > len - 8))
		return 0;
	if (bpf_probe_read_user(s->task_buf, len, (const void *)task))
		return 0;
	type = s->task_buf[(src->ob_type / 8) & 31];
	coro = s->task_buf[(src->task_coro / 8) & 31];
	if (!coro || (coro & 7))
		return type;
	if (src->cr_frame != PYPERF_NO_FIELD) {
		if (read_ptr(&frame, coro + src->cr_frame))
			return type;
	} else {
		frame = coro + src->cr_iframe;
	}
	if (!frame)
		return type;
	k &= PY_TASK_CANDS - 1;
	s->task_frame[k] = frame;
	s->task_obj[k] = task;
	s->task_coro[k] = coro;
	s->task_type[k] = type;
	s->task_name[k] = src->task_name == PYPERF_NO_FIELD ? 0 :
			  s->task_buf[(src->task_name / 8) & 31];
	s->ntask = k + 1;
	return type;
}

/* task, of type type (0: unknown), into s->task_sig, the running tasks
 * the program cannot name (SAMPLE_F_NEW_TASK): not of the C Task type it
 * named last. */
static __always_inline void sign_task(const struct py_task_src *src, struct py_sample *s,
				      __u64 task, __u64 type)
{
	if (task && (!type || type != src->c_task_type))
		s->task_sig += (task ^ (task >> 29)) * 0xBF58476D1CE4E5B9ULL;
}

/* Bytes of a PyDictKeyEntry (hash, key, value), the only kind read. */
#define TASK_ENTRY_BYTES	24

/* The entries of the dict's keys object at keys into s->task_ents; their
 * count, 0 when unreadable or more than PY_TASK_DICT_ENTRIES (more loops
 * than that: no label, not a guess). *read: 1 when all were read (then
 * 0 entries is an empty dict). */
static __always_inline __u64 dict_entries(const struct py_task_src *src, struct py_sample *s,
					  __u64 keys, int *read)
{
	const __u8 *hdr = (const __u8 *)s->task_keys;
	__u64 nent = 0, size = 0, idx;
	__u8 lg;

	if (src->dk_nentries > 40 || src->dk_indices > 40 ||
	    (src->dk_size > 40 && src->dk_size != PYPERF_NO_FIELD) ||
	    (src->dk_size == PYPERF_NO_FIELD &&
	     (src->dk_log2_index_bytes > 47 || src->dk_kind > 47)))
		return 0;
	if (bpf_probe_read_user(s->task_keys, sizeof(s->task_keys), (const void *)keys))
		return 0;
	__builtin_memcpy(&nent, hdr + (src->dk_nentries & 0x3f), 8);
	/* No entry ever: an empty dict, also one with the interpreter's
	 * shared empty keys (log2 size 0, not of the general kind), which
	 * an asyncio.tasks._current_tasks that never held a task has. */
	if (!nent) {
		*read = 1;
		return 0;
	}
	if (src->dk_size != PYPERF_NO_FIELD) {	/* <=3.10: 1-byte indices */
		__builtin_memcpy(&size, hdr + (src->dk_size & 0x3f), 8);
		if (size < 8 || size > 0x80)
			return 0;
		idx = size;
	} else {				/* 3.11+ */
		if (hdr[src->dk_kind & 0x3f] != src->dk_kind_general)
			return 0;
		lg = hdr[src->dk_log2_index_bytes & 0x3f];
		if (lg < 3 || lg > 7)
			return 0;
		idx = 1ull << lg;
	}
	if (nent > PY_TASK_DICT_ENTRIES ||
	    bpf_probe_read_user(s->task_ents, nent * TASK_ENTRY_BYTES,
				(const void *)(keys + src->dk_indices + idx)))
		return 0;
	*read = 1;
	return nent;
}

/* The candidates of the process's source src for thread state tstate
 * into s (s->ntask of them), and the running tasks it cannot name into
 * s->task_sig. Returns 1 when it read that the thread runs no task now
 * (SAMPLE_F_NO_TASK): the dict read whole with no task in it, and 3.14+
 * the thread state's running task NULL (the dict has pure-Python Tasks
 * alone), before the dict alone where it holds every task (dict_all);
 * else 0. Global: verified once. */
__noinline int find_tasks(const struct py_task_src *src, struct py_sample *s, __u64 tstate)
{
	__u64 task = 0, keys = 0, nent, type;
	int none, read = 0;

	if (!src || !s)
		return 0;
	s->ntask = 0;
	s->task_hits = 0;
	s->task_sig = 0;
	none = !src->ts_task && src->dict_all == 1;
	/* 3.14+: only pure-Python Tasks enter the dict (if given). */
	if (src->ts_task && tstate && !read_ptr(&task, tstate + src->ts_task)) {
		if (task)
			add_task(src, s, task);
		else
			none = 1;
	}
	/* PyDictKeyEntry is { hash, key, value } in every version read. */
	if (!src->dict || src->entry_size != TASK_ENTRY_BYTES || src->entry_value != 16)
		return 0;
	if (read_ptr(&keys, src->dict + src->dict_keys) || !keys || (keys & 7))
		return 0;
	nent = dict_entries(src, s, keys, &read);
	for (__u32 i = 0; i < PY_TASK_DICT_ENTRIES; i++) {
		if (i >= nent)
			break;
		/* A deleted entry holds NULL (its key a dummy). */
		task = s->task_ents[(i * 3 + 2) & 63];
		type = src->ts_task ? 0 : add_task(src, s, task);
		sign_task(src, s, task, type);
		if (task)
			none = 0;	/* some loop's, perhaps this thread's */
	}
	return none && read;
}

/* This thread's last task_sig (a 4-way set by tid): a new one is
 * SAMPLE_F_NEW_TASK's cue. */
#define SEEN_TASK_SETS 256

struct seen_tasks {
	__u32 tid[4];
	__u64 sig[4];
	__u32 next;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SEEN_TASK_SETS);
	__type(key, __u32);
	__type(value, struct seen_tasks);
} seen_tasks SEC(".maps");

/* Does thread tid run under other tasks (s->task_sig, not 0) than at its
 * last sample? Racy across CPUs: at worst a wake-up more. */
static __always_inline int tasks_changed(const struct py_sample *s, __u32 tid)
{
	__u32 k = (tid * 0x9E3779B1u) >> 24, w;
	struct seen_tasks *v = bpf_map_lookup_elem(&seen_tasks, &k);

	if (!v)
		return 0;
	for (w = 0; w < 4; w++)
		if (v->tid[w] == tid)
			break;
	if (w == 4)
		w = v->next++ & 3;
	if (v->tid[w] == tid && v->sig[w] == s->task_sig)
		return 0;
	v->tid[w] = tid;
	v->sig[w] = s->task_sig;
	return 1;
}

/* Is the name copied into c a str that is no default name ("Task-" and
 * digits, always compact ASCII)? Then the label is the name alone. */
static __always_inline int named(const struct py_task_src *src, const struct py_task_capture *c)
{
	__u32 d = src->str_data;
	__u64 type;

	if (!src->str_type || d > 64 || c->name_len < d + 5 || src->ob_type > 16)
		return 0;
	__builtin_memcpy(&type, c->name + (src->ob_type & 0x1f), 8);
	if (type != src->str_type)
		return 0;
	d &= 0x7f;
	return c->name[d] != 'T' || c->name[d + 1] != 'a' || c->name[d + 2] != 's' ||
	       c->name[d + 3] != 'k' || c->name[d + 4] != '-';
}

/* After the walk: the matched task's capture (bpf/pyperf.h) at off of
 * the record; returns the bytes added (0: no task, or not exactly one). */
__noinline __u64 put_task(const struct py_task_src *src, struct py_sample *s, __u64 off)
{
	struct py_task_capture *c;
	__u64 coro, name, qual = 0;
	__u32 k;

	if (!src || !s || s->task_hits != 1)
		return 0;
	if (off > __builtin_offsetof(struct py_sample, anchors) - sizeof(*c))
		return 0;
	k = s->task_which & (PY_TASK_CANDS - 1);
	coro = s->task_coro[k];
	name = s->task_name[k];
	c = &s->tcap;
	c->task = s->task_obj[k];
	c->coro = coro;
	c->frame = s->task_at;
	c->task_type = s->task_type[k];
	c->name_len = capture_str(c->name, PY_CAPTURE_TASK_STR, name);
	c->qual_len = 0;
	if (!named(src, c)) {
		if (read_ptr(&qual, coro + src->cr_qualname))
			return 0;
		c->qual_len = capture_str(c->qual, PY_CAPTURE_TASK_STR, qual);
	}
	if (bpf_probe_read_kernel((void *)s + off, sizeof(*c), c))
		return 0;
	return sizeof(*c);
}

#endif /* ASYNCTASK_BPF_H */
