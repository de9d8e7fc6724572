// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Sampling side of pyperf-pprof: on each perf event in a target process,
 * find the sampled thread's PyThreadState, walk its Python frames and send
 * the raw (code object, instruction) pairs to user space. Only cheap facts
 * are recorded here; names and lines are resolved in user space.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "pyperf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by user space before load: user stack bytes to copy per sample
 * (0: Python frames only, --no-native). */
const volatile __u32 stack_bytes = 0;

/* The profiler's own PID namespace (the inode of /proc/self/ns/pid; the
 * kernel's ns.inum, which is what a task's pid numbers carry):
 * --pid values and output labels are in this namespace, so a sidecar in a
 * container's namespace works as well as a profiler on the host. */
const volatile __u32 pidns_ino = 0;

/* The initial PID namespace's inode number (include/linux/proc_ns.h). */
#define PROC_PID_INIT_INO	0xEFFFFFFCU
#define PF_EXITING		0x00000004	/* include/linux/sched.h: in do_exit() */

/* --gil: only samples of threads holding the GIL are sent. */
const volatile bool gil_only = false;

/* --kernel: the kernel stack of samples taken in the kernel. */
const volatile bool kernel_stacks = false;

/* --mode wall: samples weigh the time they cover (oncpu_span), in
 * ns of a sampling period at most SPAN_MAX_PERIODS sample_period_ns. */
const volatile bool wall_mode = false;
const volatile __u64 sample_period_ns = 1000000;

/* Elements allocated one by one (kmalloc'd, in the kernel's direct map)
 * rather than preallocated in one vmalloc'd area of 4K pages: at 99 Hz
 * the TLB misses on that area cost ~0.4 us per sample. Only user space
 * adds entries. Resized to TARGETS_MAX by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 2048);
	__type(key, __u32);			/* tgid */
	__type(value, struct py_proc_config);
} procs SEC(".maps");

/* Per thread, its PyThreadState *, so the thread list is walked once per
 * thread, not once per sample. Entries are re-validated on every use.
 * Task storage rather than a hash by tid: it hangs off the task_struct the
 * program already holds, where a 64k-entry hash cost ~1 us of cold pages
 * per sample at 99 Hz; and it goes away with the thread. Most samples are
 * served before it, by cpu_threads (find_tstate). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} tstates SEC(".maps");

/* Wall mode, per target thread: until when its time on the CPU is counted
 * (its last sample, or its switch-in); 0: not known. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} oncpu_since SEC(".maps");

/*
 * Wall mode: the time on the CPU a record of task covers, where every
 * thread is to weigh the whole window. cpu-clock's timer is late under
 * load (an hrtimer forwarded past missed periods fires once), so a
 * period per sample undercounts a busy thread by a few percent; a sample
 * weighs the time since the thread's previous sample or switch-in
 * instead, and a switch-out (leaving) carries the rest, the time since
 * its last sample, for user space to add as running. A thread not seen
 * coming onto the CPU has been on it since its process became a target
 * (proc_since). Where the time is not known (a switch-in not recorded:
 * task storage can fail in this context) or implausible (more than
 * SPAN_MAX_PERIODS periods: samples come every period while it runs), a
 * sample weighs its period and a switch-out nothing.
 */
/* When the duration ends (bpf_ktime_get_ns; 0: never), set by user space,
 * so that a reader falling behind cannot stretch the window. Wall mode
 * samples on a little past it, each record cut to what lies before it. */
__u64 stop_at_ns;

/* The part before stop of a span that ends at now. */
static __always_inline __u64 span_before(__u64 now, __u64 span, __u64 stop)
{
	if (now <= stop)
		return span;
	return now - span < stop ? stop - (now - span) : 0;
}

#define SINCE_OFF		1	/* it left the CPU; its switch-in sets the time */
#define SPAN_MAX_PERIODS	64

static __always_inline __u64 oncpu_span(struct task_struct *task, __u64 now, __u64 period,
					int leaving, __u64 proc_since)
{
	__u64 *since, from, span = 0;

	if (!wall_mode)
		return period;
	since = bpf_task_storage_get(&oncpu_since, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!since)
		return leaving ? 0 : period;
	from = *since == 0 ? proc_since : *since == SINCE_OFF ? 0 : *since;
	if (from && now > from)
		span = now - from;
	if (!span || span > SPAN_MAX_PERIODS * (__u64)sample_period_ns)
		span = leaving ? 0 : period;
	*since = leaving ? SINCE_OFF : now;
	return span;
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);		/* resized by user space */
} events SEC(".maps");

/* exec and fork notices, so new processes are found at once rather than
 * at the next /proc scan. Loaded only when targets are discovered. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} proc_events SEC(".maps");

/* Events proc_events had no room for: user space then scans /proc. */
__u64 proc_events_lost = 0;

/* A sample is too large for the 512-byte BPF stack: build it here, one
 * slot per CPU (a plain array: per-CPU values are limited to 32 KiB).
 * Programs on one CPU do not nest, so a slot has one writer at a time. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* resized to the CPU count */
	__type(key, __u32);
	__type(value, struct py_sample);
} scratch SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += n;
}

/* Waking the reader for every record costs a context switch per sample
 * (and a forced wakeup, an interrupt, ~10 us of this program's time in a
 * VM): it is woken once a batch has piled up, and otherwise polls every
 * 100 ms. Except for a sample with a code object not seen lately: user
 * space names a code object by reading it, and a module body's code is
 * freed as soon as its import ends, so such a sample is delivered at once
 * (at most one wakeup per WAKEUP_FRESH_NS). Steady programs run known
 * code and cause none; a 25 ms poll for all left 3-5 % of docutils'
 * samples with an [unreadable Python frame]. So is a sample that met code
 * the unwind tables lack (a library or a perf trampoline arena mapped
 * since they were loaded): until user space loads them, every sample
 * through that code carries a stack copy, and a deep stack outgrows it
 * (docutils under -X perf: 300 native frames, over 64 KiB). */
#define WAKEUP_BYTES (256 << 10)
#define WAKEUP_FRESH_NS (1000 * 1000)

__u64 last_fresh_wakeup;	/* racy across CPUs: at worst one wakeup more */

static __always_inline __u64 wakeup_flag(int fresh, __u64 now)
{
	if (fresh && now - last_fresh_wakeup >= WAKEUP_FRESH_NS) {
		last_fresh_wakeup = now;
		stat_inc(STAT_FRESH_WAKEUPS);
		return BPF_RB_FORCE_WAKEUP;
	}
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= WAKEUP_BYTES ?
	       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* Code objects seen lately, 2-way set-associative by address: a miss is
 * a code object new to this program (or one evicted by others), worth a
 * prompt wakeup and a capture. Direct-mapped, two hot code objects of one
 * slot took turns in it: up to 10,000 captures in a docutils run, not
 * ~500. */
#define SEEN_CODE_SETS 2048

struct seen_set {
	__u64 tag[2];		/* [0] the newer */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SEEN_CODE_SETS);
	__type(key, __u32);
	__type(value, struct seen_set);
} seen_code SEC(".maps");

static __always_inline int read_ptr(__u64 *dst, __u64 addr)
{
	return bpf_probe_read_user(dst, sizeof(*dst), (const void *)addr);
}

/* The record capture_code() builds, one per CPU (too large for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_code_capture);
} capture_buf SEC(".maps");

/* The first bytes of the str object at addr into buf (len of them, or 64
 * near the end of a mapping); the bytes read. */
static __always_inline __u16 capture_str(__u8 *buf, __u32 len, __u64 addr)
{
	if (!addr)
		return 0;
	if (!bpf_probe_read_user(buf, len, (const void *)addr))
		return (__u16)len;
	return bpf_probe_read_user(buf, 64, (const void *)addr) ? 0 : 64;
}

/* Sends a struct py_code_capture (bpf/pyperf.h) for the code object at
 * code, new to this program: called for fresh code only, so a steady
 * program pays nothing. Global: verified once, and its state stays out of
 * the walk's context (a field more there kept the verifier from pruning
 * the walk's states). */
__noinline int capture_code(const struct py_walk_offsets *off, const struct py_sample *s,
			    __u64 code)
{
	struct py_code_capture *c;
	__u32 zero = 0, name_off, file_off, span;
	__u64 name, file;

	if (!off || !s)
		return 0;
	name_off = off->code_name;
	file_off = off->code_filename;
	span = off->code_span;
	if (name_off > PY_CAPTURE_CODE - 8 || file_off > PY_CAPTURE_CODE - 8 ||
	    span < 8 || span > PY_CAPTURE_CODE)
		return 0;
	c = bpf_map_lookup_elem(&capture_buf, &zero);
	if (!c || bpf_probe_read_user(c->obj, span, (const void *)code))
		return 0;
	__builtin_memcpy(&name, c->obj + name_off, sizeof(name));
	__builtin_memcpy(&file, c->obj + file_off, sizeof(file));
	c->h.pid = s->h.pid;
	c->h.tid = s->h.tid;
	c->h.time_ns = s->h.time_ns;
	c->h.flags = SAMPLE_F_CODE_NAME;
	c->h.nframes = 0;
	c->code = code;
	c->name_len = capture_str(c->name, PY_CAPTURE_NAME, name);
	c->file_len = capture_str(c->file, PY_CAPTURE_FILE, file);
	if (bpf_ringbuf_output(&events, c, sizeof(*c), BPF_RB_NO_WAKEUP))
		stat_inc(STAT_LOST);
	else
		stat_inc(STAT_CODE_CAPTURES);
	return 0;
}

/* 1 if the code object at code, run with globals, is new to the program
 * (then captured: capture_code). Global: the walk's bpf_loop callback
 * calls it and takes a scalar back, one path for the verifier there. */
__noinline int code_is_new(const struct py_walk_offsets *off, const struct py_sample *s,
			   __u64 code, __u64 globals)
{
	/* By process: a forked child has its parent's code objects at the
	 * same addresses, but user space has yet to read them in the child.
	 * By globals: a module's body freed at the end of its import and
	 * another module's code object at its address are two objects. */
	struct seen_set *v;
	__u64 tag;
	__u32 k;

	if (!s)
		return 0;
	tag = code ^ ((__u64)s->h.pid * 0x9E3779B97F4A7C15ULL) ^
	      (globals * 0xC2B2AE3D27D4EB4FULL);
	k = (__u32)((tag >> 4) ^ (tag >> 16)) & (SEEN_CODE_SETS - 1);
	v = bpf_map_lookup_elem(&seen_code, &k);
	if (!v || v->tag[0] == tag || v->tag[1] == tag)
		return 0;
	v->tag[1] = v->tag[0];
	v->tag[0] = tag;
	capture_code(off, s, code);
	return 1;
}

/* The number of pid p in our PID namespace; -1 when the task is not
 * visible there (it lives outside our namespace). */
static __always_inline int pid_nr_in_our_ns(struct pid *p, __u32 *nr)
{
	__u32 level = BPF_CORE_READ(p, level);

	/* Our namespace is an ancestor of the task's (or the same): find its
	 * level, usually the first one tried. 32 is the kernel's nesting
	 * limit (MAX_PID_NS_LEVEL). */
	for (__u32 i = 0; i < 32 && i <= level; i++) {
		if (BPF_CORE_READ(p, numbers[i].ns, ns.inum) == pidns_ino) {
			*nr = BPF_CORE_READ(p, numbers[i].nr);
			return 0;
		}
	}
	return -1;
}

/* The value a PyThreadState stores for the current thread. */
static __always_inline __u64 current_thread_ident(const struct py_walk_offsets *off,
						  __u32 tid)
{
	struct task_struct *task;

	if (off->tid_kind == PY_TID_NATIVE) {
		/* native_thread_id is gettid() as the target sees it: the tid
		 * in the task's innermost PID namespace, which differs from
		 * ours when the target runs in a container. */
		struct pid *p;
		unsigned int level;

		task = bpf_get_current_task_btf();
		p = BPF_CORE_READ(task, thread_pid);
		level = BPF_CORE_READ(p, level);
		return BPF_CORE_READ(p, numbers[level & 31].nr);
	}
	/* thread_id is pthread_self(), which on x86_64 glibc is the TCB
	 * address held in the task's fs base. */
	task = bpf_get_current_task_btf();
	return BPF_CORE_READ(task, thread.fsbase);
}

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

/* The threads sampled last on this CPU, with their PyThreadState and
 * ident: a hit costs one cache line, where the task storage below costs
 * ~1 us of cold pointer chasing per sample at 99 Hz and the ident three
 * kernel reads. Keyed by task pointer and tid (a task freed and its
 * memory reused for a thread with the same tid would still have its
 * tstate re-validated by tstate_matches). */
#define CPU_THREADS 4

struct cpu_thread {
	__u64 task;
	__u64 tstate;
	__u64 ident;
	__u32 tid;
	__u32 _pad;
};

struct cpu_threads {
	struct cpu_thread t[CPU_THREADS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_threads);
} cpu_threads SEC(".maps");

static __always_inline struct cpu_thread *cpu_thread_slot(__u32 tid)
{
	struct cpu_threads *ct;
	__u32 zero = 0;

	ct = bpf_map_lookup_elem(&cpu_threads, &zero);
	return ct ? &ct->t[tid & (CPU_THREADS - 1)] : NULL;
}

/* The slow path: the task's stored PyThreadState, else a search of the
 * interpreter's thread list. */
static __always_inline __u64 find_tstate_slow(const struct py_proc_config *cfg,
					      __u64 ident, int *err)
{
	const struct py_walk_offsets *off = &cfg->off;
	struct find_ctx c = { .off = off, .ident = ident };
	__u64 *cached, interp = 0;

	cached = bpf_task_storage_get(&tstates, bpf_get_current_task_btf(), NULL, 0);
	if (cached && tstate_matches(off, *cached, ident) == 1)
		return *cached;
	if (read_ptr(&interp, cfg->interp_head_addr) || !interp ||
	    read_ptr(&c.cur, interp + off->interp_tstate_head)) {
		*err = 1;
		return 0;
	}
	bpf_loop(PYPERF_MAX_THREADS, find_step, &c, 0);
	*err = c.err;
	if (!c.found)
		return 0;
	if (!cached)
		cached = bpf_task_storage_get(&tstates, bpf_get_current_task_btf(), NULL,
					      BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (cached)
		*cached = c.found;
	return c.found;
}

/* Returns the thread's PyThreadState, 0 if it has none; sets *err when a
 * read failed (e.g. interpreter not yet initialised). */
static __always_inline __u64 find_tstate(const struct py_proc_config *cfg,
					 __u32 tid, int *err)
{
	__u64 task = (__u64)bpf_get_current_task_btf(), ident, tstate;
	struct cpu_thread *slot = cpu_thread_slot(tid);

	if (slot && slot->task == task && slot->tid == tid && slot->tstate &&
	    tstate_matches(&cfg->off, slot->tstate, slot->ident) == 1)
		return slot->tstate;
	/* Computed again, not taken from the slot: an exec keeps the task
	 * and may change which ident the new interpreter stores. */
	ident = current_thread_ident(&cfg->off, tid);
	tstate = find_tstate_slow(cfg, ident, err);
	if (slot) {
		slot->task = task;
		slot->tid = tid;
		slot->ident = ident;
		slot->tstate = tstate;
	}
	return tstate;
}

struct walk_ctx {
	const struct py_walk_offsets *off;
	struct py_sample *s;
	__u64 frame;
	__u64 mark;	/* Brent's cycle check: a frame seen before */
	/* PY_FRAMES_CFRAME: the _PyCFrame the walk began at; then, for
	 * PY_ENTRY_FLAG, the anchor of the next entry frame */
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
 * reason as above. */
__noinline int put_anchor(struct py_sample *s, __u64 addr)
{
	__u32 k;

	if (!s)
		return 0;
	k = s->na;
	if (k < PY_ANCHORS_MAX)
		s->anchors[k & (PY_ANCHORS_MAX - 1)] = addr;
	s->na = k + 1;
	return 0;
}

/* An entry frame was just kept. PY_ENTRY_FLAG: it closes group *na, whose
 * anchor is cf, and the next is the _PyCFrame after cf in the chain,
 * returned (0 when unreadable: that anchor then matches no native frame,
 * and its group goes with the next one matched). Else returns cf. */
__noinline __u64 entry_anchor(const struct py_walk_offsets *off, struct py_sample *s, __u64 cf)
{
	__u64 prev = 0;

	if (!off || off->entry_kind != PY_ENTRY_FLAG)
		return cf;
	put_anchor(s, cf);
	if (!cf || bpf_probe_read_user(&prev, sizeof(prev),
				       (const void *)(cf + off->cframe_previous)))
		return 0;
	return prev;
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

/* 3.11-3.12: _PyEval_EvalFrameDefault publishes its _PyCFrame (on its C
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
		if (r.flags & FRAME_F_ENTRY)
			c->cframe = entry_anchor(off, c->s, c->cframe);
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

static long vma_end_cb(struct task_struct *task, struct vm_area_struct *vma,
		       __u64 *end)
{
	*end = vma->vm_end;
	return 0;
}

/* Copies the user registers and up to stack_bytes of the user stack (never
 * past the end of the stack's mapping) after the n frames of fsize bytes
 * and the npcs pcs. Returns the bytes of stack copied. A global function,
 * verified once: inlined, its page loop was checked for every state that
 * reached it (~120k instructions in kernel mode, ~50k in user mode). */
__noinline __u32 copy_user_stack(__u64 ip, struct py_sample *s, __u32 n, __u32 fsize,
				 __u32 npcs)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 *g, end = 0, top, len, first, off, chunk, fo;
	struct pt_regs u;
	void *dst;

	if (!s)
		return 0;
	g = s->h.regs;

	if (bpf_probe_read_kernel(&u, sizeof(u), r))
		return 0;
	/* Kernel addresses have the top bit set on x86_64; the ctx only
	 * allows 8-byte loads, so cs is not usable here. */
	if ((__s64)ip < 0)
		s->h.flags |= SAMPLE_F_KERNEL;
	g[PYREG_IP] = u.ip; g[PYREG_SP] = u.sp; g[PYREG_BP] = u.bp; g[PYREG_BX] = u.bx;
	g[PYREG_R12] = u.r12; g[PYREG_R13] = u.r13; g[PYREG_R14] = u.r14; g[PYREG_R15] = u.r15;
	g[PYREG_AX] = u.ax; g[PYREG_CX] = u.cx; g[PYREG_DX] = u.dx; g[PYREG_SI] = u.si;
	g[PYREG_DI] = u.di; g[PYREG_R8] = u.r8; g[PYREG_R9] = u.r9; g[PYREG_R10] = u.r10;
	g[PYREG_R11] = u.r11;
	if (bpf_find_vma(task, u.sp, vma_end_cb, &end, 0) || end <= u.sp) {
		stat_inc(STAT_VMA_ERR);
		goto fail;
	}
	/* On the main thread the mapping goes on above the frames, through
	 * argv, the environment and the auxiliary vector, which unwinding never
	 * reads: stop a little above the first frame's stack pointer. */
	top = BPF_CORE_READ(task, mm, start_stack);
	if (top > u.sp && top + 256 < end)
		end = top + 256;
	len = end - u.sp;
	if (len > stack_bytes)
		len = stack_bytes;
	if (len > PYPERF_MAX_STACK)
		len = PYPERF_MAX_STACK;
	/* After the frames and the pcs unwound in BPF, if any (--unwind
	 * both, or kernel's fallback). */
	fo = (__u64)n * (fsize == sizeof(struct py_frame_rec) ? sizeof(struct py_frame_rec) :
							       sizeof(struct py_frame_compact));
	if (fo > sizeof(s->frames) || len == 0)
		goto fail;
	dst = (void *)s->frames + fo + (__u64)(npcs & (PYPERF_MAX_NATIVE * 2 - 1)) * 8;
	if (!bpf_probe_read_user(dst, len, (const void *)u.sp))
		return (__u32)len;
	/* Live frames can hold pages never touched (a large local buffer), and
	 * the copy cannot fault them in: copy page by page. A page that fails
	 * comes back zeroed, which is what an untouched page holds. */
	first = 4096 - (u.sp & 4095);
	if (bpf_probe_read_user(dst, first, (const void *)u.sp))
		goto read_fail;		/* not even sp's own page */
	stat_inc(STAT_STACK_PARTIAL);
	for (off = first; off < len && off < PYPERF_MAX_STACK; off += 4096) {
		chunk = len - off > 4096 ? 4096 : len - off;
		bpf_probe_read_user(dst + (off & (PYPERF_MAX_STACK - 1)), chunk & 8191,
				    (const void *)(u.sp + off));
	}
	return (__u32)len;
read_fail:
	stat_inc(STAT_STACK_READ_ERR);
	goto fail;
fail:
	s->h.flags |= SAMPLE_F_STACK_ERR;
	return 0;
}

/* Appends the kernel stack after the user stack at off; returns the
 * number of addresses written. */
/* A copied stack is unwound in user space, which matches the anchors
 * itself: they follow the record's end at off. Returns the bytes added. */
static __always_inline __u64 copy_anchors(struct py_sample *s, __u64 off, __u32 na)
{
	if (na > PY_ANCHORS_MAX - 1)
		na = PY_ANCHORS_MAX - 1;
	if (!na || off > __builtin_offsetof(struct py_sample, anchors) - PY_ANCHORS_MAX * 8)
		return 0;
	if (bpf_probe_read_kernel((void *)s + off, (na & (PY_ANCHORS_MAX - 1)) * 8, s->anchors))
		return 0;
	s->h.nanchors = (__u8)na;
	return (__u64)na * 8;
}

static __always_inline __u16 copy_kernel_stack(void *ctx, struct py_sample *s, __u64 off)
{
	long n;

	if (off > sizeof(*s) - PYPERF_MAX_KFRAMES * sizeof(__u64))
		return 0;
	n = bpf_get_stack(ctx, (void *)s + off, PYPERF_MAX_KFRAMES * sizeof(__u64), 0);
	return n > 0 ? (__u16)(n / sizeof(__u64)) : 0;
}

/* ---- --unwind kernel: native frames from per-object tables ------------- */

/* Set by user space before load: enum py_unwind_mode. */
const volatile __u32 unwind_mode = PY_UNWIND_USER;

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

	if (w->bp <= w->sp || (w->bp & 7))
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

/* The tag for the pc of a native frame spanning [lo, hi) of the stack:
 * PY_PC_EVAL and the anchor it holds, or 0 (py_anchor_match over s's
 * anchors; s->anchor_next is where the last match left off). Global:
 * verified once, not once per path through the walk's bpf_loop callback
 * (inlined, it went past the verifier's limit). */
__noinline __u64 anchor_tag(struct py_sample *s, __u64 lo, __u64 hi)
{
	__u32 next;
	int g;

	if (!s || !s->na)
		return 0;
	next = s->anchor_next;
	g = py_anchor_match(s->anchors, s->na, &next, lo, hi);
	s->anchor_next = next;
	return g < 0 ? 0 : PY_PC_EVAL | (__u64)g << PY_PC_GROUP_SHIFT;
}

static long nwalk_step(__u32 i, struct nwalk *w)
{
	__u64 off, *pc, lo;
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
	 * the step succeeded. */
	*pc |= anchor_tag(w->s, lo, end < 0 ? w->r.sp : lo);
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

/* Unwinds the user stack from the interrupted registers into pcs after
 * frames[n]; returns how many. */
static __always_inline __u32 unwind_native(struct py_sample *s, __u32 tgid, __u32 n,
					   __u32 fsize)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
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
	w.r.ip = BPF_CORE_READ(regs, ip);
	w.r.sp = BPF_CORE_READ(regs, sp);
	w.r.bp = BPF_CORE_READ(regs, bp);
	w.r.top = BPF_CORE_READ(task, mm, start_stack);
	if (w.r.top <= w.r.sp)
		w.r.top = 0;	/* another thread's stack: its top holds the TCB */
	w.pc_off = (n > PYPERF_MAX_FRAMES ? PYPERF_MAX_FRAMES : n) *
		   (fsize == sizeof(struct py_frame_rec) ? sizeof(struct py_frame_rec)
							 : sizeof(struct py_frame_compact));

	bpf_loop(PYPERF_MAX_NATIVE + 1, nwalk_step, &w, 0);
	s->h.native_end = w.end;
	count_end(w.end);
	s->h.native_n = (__u16)w.n;
	stat_add(STAT_NATIVE_FRAMES, w.n);
	return w.n;
}

/* --unwind kernel met code whose tables are not loaded yet (a process
 * just found, a library or JIT region mapped since): the sample's stack
 * is copied as well and unwound in user space, so that the first samples
 * of a new mapping are never cut short while user space loads it. */
static __always_inline int tables_missing(const struct py_sample *s)
{
	return py_native_end_missing(s->h.native_end);
}

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, PY_CHECK_SLOTS);
	__type(key, __u32);
	__type(value, struct py_check);
} code_checks SEC(".maps");

struct py_check_req check_req;	/* see bpf/pyperf.h */

static long check_one(__u32 i, void *unused)
{
	__u32 k = check_req.next, len = check_req.len;
	__u64 gen = check_req.gen;
	struct py_check *c;

	/* Not atomic (clang 14 has no fetch-add for BPF v2): two CPUs may
	 * both read slot k, which costs a read, not a slot. */
	check_req.next = k + 1;
	if (k >= check_req.n || k >= PY_CHECK_SLOTS)
		return 1;
	c = bpf_map_lookup_elem(&code_checks, &k);
	if (!c || len > PY_CHECK_BYTES)
		return 1;
	c->done_ns = bpf_ktime_get_ns();
	c->err = bpf_probe_read_user(c->bytes, len, (const void *)c->addr);
	/* Last: user space takes a slot whose gen is its request's. */
	c->gen = gen;
	stat_inc(STAT_CODE_CHECKS);
	return 0;
}

/* Reads code objects user space asked about (bpf/pyperf.h). 1 if that
 * ended the request: the reader, waiting for it, is to be woken. */
static __always_inline int do_checks(__u32 tgid)
{
	if (!check_req.n || check_req.tgid != tgid || check_req.next >= check_req.n)
		return 0;
	bpf_loop(PY_CHECKS_PER_SAMPLE, check_one, NULL, 0);
	return check_req.next >= check_req.n;
}

/* Walks the current thread's Python stack (and copies its user stack)
 * into a record and sends it. ip is where the thread was interrupted (a
 * kernel address when it was in a system call). */
static __always_inline int sample_current(void *ctx, __u64 ip, __u64 period, __u64 late,
					  __u32 flags)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid, tid, prev_pid, cpu = bpf_get_smp_processor_id();
	struct walk_ctx w = {};
	__u64 wake;
	struct py_proc_config *cfg;
	struct py_sample *s;
	__u64 tstate, size, now;
	__u32 npcs = 0, fsize;
	void *out;
	int err = 0;

	if (pidns_ino == PROC_PID_INIT_INO) {
		/* The usual case, a profiler on the host: the helper's ids are
		 * ours, and cheaper than walking pid->numbers[] on every event
		 * of every process. */
		__u64 id = bpf_get_current_pid_tgid();

		tgid = id >> 32;
		tid = (__u32)id;
	} else if (pid_nr_in_our_ns(BPF_CORE_READ(task, group_leader, thread_pid), &tgid) ||
		   pid_nr_in_our_ns(BPF_CORE_READ(task, thread_pid), &tid)) {
		return 0;	/* a task outside our PID namespace */
	}
	cfg = bpf_map_lookup_elem(&procs, &tgid);
	if (!cfg)
		return 0;
	stat_inc(STAT_EVENTS);
	if (late) {
		stat_inc(STAT_LATE);
		stat_add(STAT_LATE_NS, late);
	}
	now = bpf_ktime_get_ns();
	period = oncpu_span(task, now, period, (flags & SAMPLE_F_OFFCPU) != 0, cfg->since_ns);
	if (wall_mode && stop_at_ns && now > stop_at_ns) {
		/* Wall mode's last events (session.c waits for them): what a
		 * thread ran until the window's end, and no wait after it. */
		period = span_before(now, period, stop_at_ns);
		flags &= ~SAMPLE_F_OFFCPU;
		if (!period)
			return 0;
	}
	s = bpf_map_lookup_elem(&scratch, &cpu);
	if (!s)
		return 0;
	/* After another process's sample put_frame's "same" means nothing:
	 * such a sample may name new code too. (Setting w.fresh here instead costs
	 * the verifier 20,000 more instructions.) */
	prev_pid = s->h.pid;
	s->h.pid = tgid;
	s->h.tid = tid;
	s->h.time_ns = bpf_ktime_get_ns();
	s->h.period = period;
	s->h.flags = flags;
	s->h.nframes = 0;
	s->h.nkframes = 0;
	s->na = 0;
	s->anchor_next = 0;
	bpf_get_current_comm(s->h.comm, sizeof(s->h.comm));

	/* A compact record (bpf/pyperf.h) where nothing needs regs, self or
	 * tlbc. */
	w.compact = (!stack_bytes || unwind_mode == PY_UNWIND_KERNEL) &&
		    cfg->off.frame_localsplus == PYPERF_NO_FIELD &&
		    cfg->off.frame_tlbc_index == PYPERF_NO_FIELD;
	fsize = w.compact ? sizeof(struct py_frame_compact) : sizeof(struct py_frame_rec);
	tstate = find_tstate(cfg, tid, &err);
	s->h.tstate = tstate;
	s->h.flags |= gil_state(cfg, tstate);
	if (gil_only && !(s->h.flags & SAMPLE_F_GIL_HELD))
		return 0;
	if (!tstate) {
		s->h.flags |= err ? SAMPLE_F_NO_INTERP : SAMPLE_F_NO_TSTATE;
		stat_inc(STAT_NO_TSTATE);
	} else {
		w.off = &cfg->off;
		w.s = s;
		w.frame = first_frame(&cfg->off, tstate, &w.cframe, &w.err);
		/* Two steps a frame at most: under -X perf every call has
		 * its shim frame (3.12+). */
		bpf_loop(2 * PYPERF_MAX_FRAMES + 2, walk_step, &w, 0);
		/* A chain still going when the steps ran out is cut, never
		 * silently short. */
		if (w.frame && !w.err && !(s->h.flags & SAMPLE_F_BAD_CHAIN))
			s->h.flags |= SAMPLE_F_TRUNCATED;
		if (cfg->off.entry_kind != PY_ENTRY_EVERY)
			s->h.flags |= SAMPLE_F_ANCHORED;
		if (w.err) {
			s->h.flags |= SAMPLE_F_READ_ERR;
			stat_inc(STAT_READ_ERR);
		}
		if (s->h.flags & SAMPLE_F_TRUNCATED)
			stat_inc(STAT_TRUNCATED);
		if (s->h.flags & SAMPLE_F_BAD_CHAIN)
			stat_inc(STAT_BAD_CHAIN);
	}
	if (w.n > PYPERF_MAX_FRAMES)
		w.n = PYPERF_MAX_FRAMES;
	s->h.nframes = w.n;
	s->h.native_n = 0;
	s->h.native_end = 0;
	if (stack_bytes && unwind_mode != PY_UNWIND_USER) {
		__u64 t0 = bpf_ktime_get_ns();

		if ((__s64)ip < 0)
			s->h.flags |= SAMPLE_F_KERNEL;
		npcs = unwind_native(s, tgid, w.n, fsize);
		stat_add(STAT_NATIVE_NS, bpf_ktime_get_ns() - t0);
	}
	s->h.stack_len = 0;
	if (stack_bytes && (unwind_mode != PY_UNWIND_KERNEL || tables_missing(s))) {
		s->h.stack_len = copy_user_stack(ip, s, w.n, fsize, npcs);
		if (unwind_mode == PY_UNWIND_KERNEL) {
			stat_inc(STAT_NATIVE_COPY);
			s->h.flags |= SAMPLE_F_COMPACT_REGS;
		}
	}
	size = sizeof(s->h) + (__u64)w.n * fsize + (__u64)npcs * 8 + s->h.stack_len;
	/* ip has the top bit set: interrupted in the kernel (x86_64). */
	if (kernel_stacks && (__s64)ip < 0) {
		s->h.nkframes = copy_kernel_stack(ctx, s, size);
		size += (__u64)s->h.nkframes * sizeof(__u64);
	}
	s->h.nanchors = 0;
	if (s->h.stack_len && (s->h.flags & SAMPLE_F_ANCHORED))
		size += copy_anchors(s, size, s->na);
	if (size > sizeof(*s))
		size = sizeof(*s);
	out = s;
	if (w.compact)
		s->h.flags |= SAMPLE_F_COMPACT;
	/* User space may add these without holding them back (session.c): a
	 * new code object may be freed soon, a mapping waits for its tables. */
	if (w.fresh || prev_pid != tgid)
		s->h.flags |= SAMPLE_F_NEW_CODE;
	if (tables_missing(s))
		s->h.flags |= SAMPLE_F_NO_TABLES;

	if (w.compact && !(s->h.flags & SAMPLE_F_COMPACT_REGS)) {
		/* The header's first part moves over regs, next to its tail. */
		__builtin_memcpy((void *)s + PY_SAMPLE_REGS_LEN, s, PY_SAMPLE_REGS_OFF);
		out = (void *)s + PY_SAMPLE_REGS_LEN;
		size -= PY_SAMPLE_REGS_LEN;
	}
	wake = wakeup_flag(w.fresh || tables_missing(s), s->h.time_ns);
	if (do_checks(tgid))
		wake = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&events, out, size, wake)) {
		stat_inc(STAT_LOST);
		stat_add(STAT_LOST_NS, s->h.period);
	} else
		stat_inc(STAT_SENT);
	/* The program's cost on target samples alone: bpf_stats also counts
	 * the early returns on every other process's events. */
	stat_add(STAT_TARGET_NS, bpf_ktime_get_ns() - s->h.time_ns);
	return 0;
}

/* Set by user space once the events are open: they count time (cpu-clock,
 * task-clock), so late samples can be told. */
bool time_events;

/* Each CPU's last event, for any process: when it fired, whose thread it
 * was, and how many times that thread had left a CPU then. */
struct tick {
	__u64 fired_ns;
	__u64 switches;
	__u32 tid;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tick);
} last_tick SEC(".maps");

/* The time a clock event left unsampled before this sample, while the
 * same thread ran on this CPU (same thread as the previous sample, no
 * switch since): the periods the timer skipped. It fires on a grid of
 * periods, each fire a little late (interrupt latency), and skips the
 * periods it is more than one late for, when the kernel throttles the
 * event (kernel.perf_event_max_sample_rate per scheduler tick) or the
 * interrupts before took too long (each sample costs the CPU 5-10 us
 * here, a VM's timer more): fire to fire is a whole number of periods,
 * give or take the difference in lateness. Samples still weigh one
 * period; the summary and the profile say how much went unsampled. */
static __always_inline __u64 late_ns(const struct tick *last, __u64 now, __u64 period,
				     __u32 tid, __u64 switches)
{
	__u64 periods;

	if (!last->fired_ns || now <= last->fired_ns || last->tid != tid || !tid ||
	    last->switches != switches || !period)
		return 0;
	periods = (now - last->fired_ns + period / 2) / period;
	return periods > 1 ? (periods - 1) * period : 0;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 now = bpf_ktime_get_ns(), late = 0, switches = 0;
	__u32 zero = 0, tid = (__u32)bpf_get_current_pid_tgid();
	struct task_struct *task;
	struct tick *last;

	if (stop_at_ns && now > stop_at_ns && !wall_mode)
		return 0;
	if (time_events && (last = bpf_map_lookup_elem(&last_tick, &zero))) {
		task = bpf_get_current_task_btf();
		switches = task->nvcsw + task->nivcsw;
		late = late_ns(last, now, ctx->sample_period, tid, switches);
	}
	sample_current(ctx, ctx->regs.ip, ctx->sample_period, late, 0);
	if (time_events && (last = bpf_map_lookup_elem(&last_tick, &zero))) {
		last->fired_ns = now;
		last->tid = tid;
		last->switches = switches;
	}
	return 0;
}

/*
 * Wall mode: a thread coming onto the CPU for the first time since its
 * process became a target has waited for a CPU since then (or since it
 * was made), unless it was blocked in a system call, which user space
 * read at the window's start. When that wait began, sent in the switch-in
 * record's period, counts with the thread's next stack (user space,
 * sample.c). 0: seen before, or not known.
 */
static __always_inline __u64 first_sight(struct task_struct *task, __u64 proc_since)
{
	__u64 *since = bpf_task_storage_get(&oncpu_since, task, NULL,
					    BPF_LOCAL_STORAGE_GET_F_CREATE);
	__u64 born = BPF_CORE_READ(task, start_time);

	/* No storage: nothing known, nothing claimed. */
	if (!since || *since)
		return 0;
	return born > proc_since ? born : proc_since;
}

/*
 * Wall mode: a target thread leaving the CPU (to sleep, wait for I/O, a
 * lock or the GIL, or because it was preempted) is sampled there, while it
 * is still current; when it comes back, a short record closes the
 * interval. User space weights the stack by the time off the CPU. The
 * switch-out record's period is the thread's time on the CPU since its
 * last sample (oncpu_span).
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct py_sample_hdr h = {};
	struct py_proc_config *cfg;
	__u64 now;
	__u32 tgid;

	/* A thread that exits leaves the CPU for good: no wait to count
	 * (its interval would stay open until the end of every interval). */
	if (!(BPF_CORE_READ(prev, flags) & PF_EXITING))
		sample_current(ctx, 0xffffffffffffffffULL, 0, 0, SAMPLE_F_OFFCPU);
	if (pid_nr_in_our_ns(BPF_CORE_READ(next, group_leader, thread_pid), &tgid) ||
	    !(cfg = bpf_map_lookup_elem(&procs, &tgid)) ||
	    pid_nr_in_our_ns(BPF_CORE_READ(next, thread_pid), &h.tid))
		return 0;
	now = bpf_ktime_get_ns();
	h.pid = tgid;
	h.time_ns = stop_at_ns && now > stop_at_ns ? stop_at_ns : now;
	h.flags = SAMPLE_F_OFFCPU_END;
	h.period = first_sight(next, cfg->since_ns);
	oncpu_span(next, now, 0, 0, 0);	/* its time on the CPU starts */
	if (bpf_ringbuf_output(&events, &h, sizeof(h), wakeup_flag(0, 0)))
		stat_inc(STAT_LOST);
	return 0;
}

static __always_inline void send_proc_event(__u32 kind, __u32 pid, __u32 ppid)
{
	struct py_proc_event *e = bpf_ringbuf_reserve(&proc_events, sizeof(*e), 0);

	if (!e) {
		/* user space sees the count and scans /proc */
		__sync_fetch_and_add(&proc_events_lost, 1);
		return;
	}
	e->kind = kind;
	e->pid = pid;
	e->ppid = ppid;
	e->_pad = 0;
	bpf_ringbuf_submit(e, 0);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid;

	if (pid_nr_in_our_ns(BPF_CORE_READ(p, group_leader, thread_pid), &pid))
		return 0;
	send_proc_event(PROC_EXEC, pid, 0);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 pid, ppid;

	/* New processes only (not threads), and only children of targets:
	 * a fork copies the parent's interpreter, ready to be profiled. */
	if (BPF_CORE_READ(child, pid) != BPF_CORE_READ(child, tgid) ||
	    pid_nr_in_our_ns(BPF_CORE_READ(parent, group_leader, thread_pid), &ppid) ||
	    !bpf_map_lookup_elem(&procs, &ppid) ||
	    pid_nr_in_our_ns(BPF_CORE_READ(child, thread_pid), &pid))
		return 0;
	send_proc_event(PROC_FORK, pid, ppid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 pid;

	/* Targets only, once their last thread is gone (the tracepoint runs
	 * after signal->live is decremented): user space forgets them now
	 * rather than at a scan of /proc. */
	if (BPF_CORE_READ(p, signal, live.counter) != 0 ||
	    pid_nr_in_our_ns(BPF_CORE_READ(p, group_leader, thread_pid), &pid) ||
	    !bpf_map_lookup_elem(&procs, &pid))
		return 0;
	send_proc_event(PROC_EXIT, pid, 0);
	return 0;
}

/* An interpreter library mapped executable by a process not yet a target:
 * an embedding application at start, or a dlopen() at any time. ld.so maps
 * a library's text with PROT_EXEC, once per library. The mmap(2) system
 * call's tracepoint: function entries (fentry) cannot be traced everywhere
 * (a VM may forbid ftrace), and it runs only for mmap calls; most of them
 * are anonymous or not executable and end at the first test. */
SEC("tracepoint/syscalls/sys_enter_mmap")
int on_mmap(struct trace_event_raw_sys_enter *ctx)
{
	static const char want[] = "libpython";
	struct task_struct *task;
	struct file **fds, *file = NULL;
	unsigned long fd = ctx->args[4];
	char name[sizeof(want)];
	__u32 pid;

	if (!(ctx->args[2] & 4 /* PROT_EXEC */) || fd > 0xffff)
		return 0;
	task = bpf_get_current_task_btf();
	if (fd >= BPF_CORE_READ(task, files, fdt, max_fds))
		return 0;
	fds = BPF_CORE_READ(task, files, fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), fds + fd) || !file ||
	    bpf_probe_read_kernel_str(name, sizeof(name), BPF_CORE_READ(file, f_path.dentry, d_name.name)) < 0)
		return 0;
	for (int i = 0; i < sizeof(want) - 1; i++)
		if (name[i] != want[i])
			return 0;
	if (pid_nr_in_our_ns(BPF_CORE_READ(task, group_leader, thread_pid), &pid) ||
	    bpf_map_lookup_elem(&procs, &pid))
		return 0;
	send_proc_event(PROC_MAP, pid, 0);
	return 0;
}
