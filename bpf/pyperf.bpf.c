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
#include "common.bpf.h"
#include "checks.bpf.h"
#include "asynctask.bpf.h"
#include "pywalk.bpf.h"
#include "native_unwind.bpf.h"

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

/* Explicit targets (--pid, a command: set by user space): every code
 * object new to the program wakes user space, not only those not captured
 * whole, so that the first batch of a program starting asyncio is added
 * at once and the program learns where its tasks are (pyasyncio.c) before
 * most of their samples; a task's labels are otherwise missing from its
 * first ~200 ms (one batch). On a whole host each such wake-up is paid by
 * every new process (issue 25), so there only urgent code wakes. */
const volatile bool prompt_new_code = false;

static __always_inline int code_wakes(__u32 fresh)
{
	return (fresh & CODE_URGENT) || (prompt_new_code && (fresh & CODE_NEW));
}
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

/* Set by user space with task_srcs' first entry: until then a sample
 * looks nothing up there (a hash lookup a sample, ~0.1 us on a loaded
 * host, for programs without asyncio). */
bool task_srcs_any;

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
/* Whether a sample of size leaves the last eighth of the ring buffer
 * free. That eighth is for the captures of code objects (checks.bpf.h):
 * when the reader falls behind (a slow start, the sanitizer pass lost 221
 * records of a docutils run), samples are dropped first, and the code
 * objects met meanwhile are still named, for the samples kept before and
 * after, however soon they are freed. */
static __always_inline int room_for_sample(__u64 size)
{
	__u64 ring = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);

	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + size <= ring - ring / 8;
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
	__u64 *cached, found;

	cached = bpf_task_storage_get(&tstates, bpf_get_current_task_btf(), NULL, 0);
	if (cached && tstate_matches(&cfg->off, *cached, ident) == 1)
		return *cached;
	found = search_tstate(cfg, ident, err);
	if (!found)
		return 0;
	if (!cached)
		cached = bpf_task_storage_get(&tstates, bpf_get_current_task_btf(), NULL,
					      BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (cached)
		*cached = found;
	return found;
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

/* No stack window: next_anchor reads each lazy one. */
struct resolve_ctx {
	struct py_sample *s;
	struct nregs none;
};

static long resolve_one(__u32 i, struct resolve_ctx *c)
{
	__u64 prev = i ? c->s->anchors[(i - 1) & (PY_ANCHORS_MAX - 1)] : 0;

	c->s->anchors[i & (PY_ANCHORS_MAX - 1)] = next_anchor(c->s, &c->none, i, prev);
	return 0;
}

/* A copied stack is unwound in user space, which matches the anchors
 * itself: they follow the record's end at off, the lazy ones read first.
 * Returns the bytes added. */
static __always_inline __u64 copy_anchors(struct py_sample *s, __u64 off, __u32 na)
{
	struct resolve_ctx c = { .s = s };

	if (na > PY_ANCHORS_MAX - 1)
		na = PY_ANCHORS_MAX - 1;
	if (!na || off > __builtin_offsetof(struct py_sample, anchors) - PY_ANCHORS_MAX * 8)
		return 0;
	bpf_loop(na, resolve_one, &c, 0);
	if (bpf_probe_read_kernel((void *)s + off, (na & (PY_ANCHORS_MAX - 1)) * 8, s->anchors))
		return 0;
	s->h.nanchors = (__u8)na;
	return (__u64)na * 8;
}

/* Appends the kernel stack after the user stack at off; returns the
 * number of addresses written. */
static __always_inline __u16 copy_kernel_stack(void *ctx, struct py_sample *s, __u64 off)
{
	long n;

	if (off > sizeof(*s) - PYPERF_MAX_KFRAMES * sizeof(__u64))
		return 0;
	n = bpf_get_stack(ctx, (void *)s + off, PYPERF_MAX_KFRAMES * sizeof(__u64), 0);
	return n > 0 ? (__u16)(n / sizeof(__u64)) : 0;
}

/* Set by user space before load: enum py_unwind_mode. */
const volatile __u32 unwind_mode = PY_UNWIND_USER;

/* unwind_native from the current task's user registers. */
static __always_inline __u32 unwind_current(struct py_sample *s, __u32 tgid, __u32 n,
					    __u32 fsize)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	return unwind_native(s, tgid, n, fsize, BPF_CORE_READ(regs, ip), BPF_CORE_READ(regs, sp),
			     BPF_CORE_READ(regs, bp), BPF_CORE_READ(task, mm, start_stack));
}

/* --unwind kernel met code whose tables are not loaded yet (a process
 * just found, a library or JIT region mapped since): the sample's stack
 * is copied as well and unwound in user space, so that the first samples
 * of a new mapping are never cut short while user space loads it. */
static __always_inline int tables_missing(const struct py_sample *s)
{
	return py_native_end_missing(s->h.native_end);
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
	const struct py_task_src *src;
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
	s->h.time_ns = now;
	s->h.period = period;
	s->h.flags = flags;
	s->h.nframes = 0;
	s->h.nkframes = 0;
	s->na = 0;
	s->na_real = 0;
	s->anchor_next = 0;
	s->ntask = 0;
	s->task_hits = 0;
	s->task_sig = 0;
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
	/* The running task's candidates, for the walk to find. */
	src = tstate && task_srcs_any ? bpf_map_lookup_elem(&task_srcs, &tgid) : NULL;
	if (src) {
		if (find_tasks(src, s, tstate)) {
			s->h.flags |= SAMPLE_F_NO_TASK;
			stat_inc(STAT_TASK_NONE);
		}
		if (s->ntask)
			stat_inc(STAT_TASK_CANDS);
	}
	walk_thread(&w, cfg, s, tstate, err);
	s->h.native_n = 0;
	s->h.native_end = 0;
	if (stack_bytes && unwind_mode != PY_UNWIND_USER) {
		__u64 t0 = bpf_ktime_get_ns();

		if ((__s64)ip < 0)
			s->h.flags |= SAMPLE_F_KERNEL;
		npcs = unwind_current(s, tgid, w.n, fsize);
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
	if (s->task_hits == 1) {
		src = bpf_map_lookup_elem(&task_srcs, &tgid);
		if (src && put_task(src, s, size)) {
			/* Learnt for sign_task (the map's value: written
			 * once, not at every sample of every CPU). */
			if (src->c_task_type != s->tcap.task_type)
				((struct py_task_src *)src)->c_task_type = s->tcap.task_type;
			size += sizeof(struct py_task_capture);
			s->h.flags |= SAMPLE_F_TASK;
			stat_inc(STAT_TASK_FOUND);
		}
	}
	if (size > sizeof(*s))
		size = sizeof(*s);
	out = s;
	if (w.compact)
		s->h.flags |= SAMPLE_F_COMPACT;
	/* User space may add these without holding them back (session.c): a
	 * new code object may be freed soon, a mapping waits for its tables.
	 * Not a code object captured whole: its entry is made from the
	 * capture, however late (pysym.c). */
	if (code_wakes(w.fresh) || prev_pid != tgid || cfg->wake_first)
		s->h.flags |= SAMPLE_F_NEW_CODE;
	if (tables_missing(s))
		s->h.flags |= SAMPLE_F_NO_TABLES;
	/* Not named by the program: user space reads the task running when
	 * it adds the record, so one whose tasks changed is added at once. */
	if (s->task_sig && !(s->h.flags & SAMPLE_F_TASK) && tasks_changed(s, tid))
		s->h.flags |= SAMPLE_F_NEW_TASK;

	if (w.compact && !(s->h.flags & SAMPLE_F_COMPACT_REGS)) {
		/* The header's first part moves over regs, next to its tail. */
		__builtin_memcpy((void *)s + PY_SAMPLE_REGS_LEN, s, PY_SAMPLE_REGS_OFF);
		out = (void *)s + PY_SAMPLE_REGS_LEN;
		size -= PY_SAMPLE_REGS_LEN;
	}
	/* A process's first sample too, where user space asks (wake_first):
	 * it then learns soon where its asyncio tasks are (pyasyncio.c),
	 * which the program needs to name them. */
	wake = wakeup_flag(code_wakes(w.fresh) || tables_missing(s) ||
			   (s->h.flags & SAMPLE_F_NEW_TASK) || cfg->wake_first, s->h.time_ns);
	if (cfg->wake_first)
		cfg->wake_first = 0;
	if (do_checks(tgid))
		wake = BPF_RB_FORCE_WAKEUP;
	if (!room_for_sample(size) || bpf_ringbuf_output(&events, out, size, wake)) {
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

static __always_inline void wake_if_due(__u64 now);

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 now = bpf_ktime_get_ns(), late = 0, switches = 0;
	__u32 zero = 0, tid = (__u32)bpf_get_current_pid_tgid();
	struct task_struct *task;
	struct tick *last;

	wake_if_due(now);
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

/* Whole host (set by user space): a target's exit is read at the next
 * wake-up, not one of its own (every short-lived process cost one, ~50 us
 * of the profiler's CPU); the other events then force theirs or are due
 * later (event_wake), since the ring buffer's adaptive wake-up skips a
 * record submitted while an earlier one is unread. */
const volatile bool lazy_exits = false;

/* Processes whose exec said "python" (pid -> the exec's time): their
 * libpython mapping, a moment later, needs no event of its own, since
 * user space tries them from the exec on (PENDING_*, targets.h); their
 * forks are reported, target or not yet (PROC_F_FORKS_SEEN: a child
 * forked before its parent was attached needs no read of the parent's
 * /proc/PID/task/TID/children). An entry goes at the process's exit or
 * its exec of another program: not an LRU, which could drop a live
 * process's entry, and with it forks user space counts on seeing. */
#define PY_EXEC_QUIET_NS	2000000000ull
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u64);
} py_execs SEC(".maps");

/* A task's start, as /proc/PID/stat counts it (in ns): 0 where the
 * kernel has no start_boottime (before 5.5). */
static __always_inline __u64 start_ns_of(struct task_struct *p)
{
	if (!bpf_core_field_exists(p->start_boottime))
		return 0;
	return BPF_CORE_READ(p, group_leader, start_boottime);
}

/* exec: the task that exec'd, whose start, argument area and name go
 * with a python's exec (PROC_F_NAME_PYTHON); NULL otherwise. */
static __always_inline void send_proc_event(__u32 kind, __u32 pid, __u32 ppid, __u32 flags,
					    __u64 wake, struct task_struct *exec)
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
	e->flags = flags;
	e->time_ns = bpf_ktime_get_ns();
	e->start_ns = e->arg_start = e->arg_end = 0;
	__builtin_memset(e->comm, 0, sizeof(e->comm));
	if (exec && (flags & PROC_F_NAME_PYTHON)) {
		e->start_ns = start_ns_of(exec);
		e->arg_start = BPF_CORE_READ(exec, mm, arg_start);
		e->arg_end = BPF_CORE_READ(exec, mm, arg_end);
		bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), exec->comm);
	}
	bpf_ringbuf_submit(e, wake);
}

/* Whole host, out of wall mode: an event user space acts on a moment
 * later (a target's fork child is copied FORK_WAIT_NS after it, an exec'd
 * interpreter first tried PENDING_FIRST_NS after: src/live/targets.h)
 * wakes it not at once but at the first clock event on any CPU from then
 * (wake_if_due), and user space takes it at its time_ns: the exec's
 * wake-up and the first try's timer are one, the fork's goes. Before a
 * new process every 0.3 s cost three wake-ups, ~30-50 us each. */
#define FORK_DUE_NS	20000000ull	/* FORK_WAIT_NS */
#define EXEC_DUE_NS	5000000ull	/* PENDING_FIRST_NS */
__u64 wake_due_ns;	/* racy across CPUs: at worst a wake-up more */
__u32 wake_due_pid;	/* whose event set it: its exec may put it later */

static __always_inline __u64 wake_at(__u64 due, __u32 pid)
{
	if (!wake_due_ns || due < wake_due_ns || wake_due_pid == pid) {
		wake_due_ns = due;
		wake_due_pid = pid;
	}
	return BPF_RB_NO_WAKEUP;
}

static __always_inline void wake_if_due(__u64 now)
{
	__u64 due = wake_due_ns;

	if (!due || now < due)
		return;
	wake_due_ns = 0;
	send_proc_event(PROC_WAKE, 0, 0, 0, BPF_RB_FORCE_WAKEUP, NULL);
}

/* How a process event wakes user space: lazily or when due (above) on a
 * whole host, where a target's exit and any exec that makes no target
 * wait for the next wake-up, at once where it changes a target (an exec)
 * or the exec'd file's name is unknown; as the ring buffer decides
 * (after the records before are read) otherwise. */
static __always_inline __u64 event_wake(__u32 kind, __u32 pid, __u32 flags)
{
	if (!lazy_exits)
		return 0;
	if (kind == PROC_EXIT)
		return BPF_RB_NO_WAKEUP;
	if (wall_mode || kind == PROC_MAP)
		return BPF_RB_FORCE_WAKEUP;
	if (kind == PROC_FORK)
		return wake_at(bpf_ktime_get_ns() + FORK_DUE_NS, pid);
	if (!(flags & PROC_F_NAME_READ) || bpf_map_lookup_elem(&procs, &pid))
		return BPF_RB_FORCE_WAKEUP;
	if (flags & PROC_F_NAME_PYTHON)
		return wake_at(bpf_ktime_get_ns() + EXEC_DUE_NS, pid);
	return BPF_RB_NO_WAKEUP;
}

#define EXE_NAME_MAX	64

/* Is the executable's file named like a Python interpreter? Read here,
 * from the file the exec opened (symbolic links followed), so that user
 * space does not readlink /proc/PID/exe at every exec of the host (2 %
 * of the profiler's CPU on a host starting a Python process every 0.3 s).
 * A name longer than the buffer is left to user space. */
static __always_inline __u32 exe_name_flags(struct linux_binprm *bprm)
{
	char name[EXE_NAME_MAX];
	long n = bpf_probe_read_kernel_str(name, sizeof(name),
					   BPF_CORE_READ(bprm, file, f_path.dentry, d_name.name));

	if (n <= 0 || n >= (long)sizeof(name))
		return 0;
	for (int i = 0; i + 6 <= EXE_NAME_MAX - 1; i++) {
		if (i + 6 > n - 1)
			break;
		if (name[i] == 'p' && name[i + 1] == 'y' && name[i + 2] == 't' &&
		    name[i + 3] == 'h' && name[i + 4] == 'o' && name[i + 5] == 'n')
			return PROC_F_NAME_READ | PROC_F_NAME_PYTHON;
	}
	return PROC_F_NAME_READ;
}

/* The profiler's root (mount and directory), set by learn_root, which
 * user space runs once (BPF_PROG_TEST_RUN: in its own context); 0 until
 * then. Both stay valid while the profiler lives (it holds its root), so
 * another process with the same two has the same root. */
__u64 our_root_mnt = 0, our_root_dentry = 0;
__u64 our_start_ns = 0;		/* the profiler's start_ns_of(): user space
				 * checks the clock of PROC_EXEC's start_ns */

SEC("raw_tp/sys_enter")
int learn_root(void *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	our_root_mnt = (__u64)(long)BPF_CORE_READ(task, fs, root.mnt);
	our_root_dentry = (__u64)(long)BPF_CORE_READ(task, fs, root.dentry);
	our_start_ns = start_ns_of(task);
	return 0;
}

static __always_inline int root_is_ours(struct task_struct *p)
{
	return our_root_dentry &&
	       (__u64)(long)BPF_CORE_READ(p, fs, root.mnt) == our_root_mnt &&
	       (__u64)(long)BPF_CORE_READ(p, fs, root.dentry) == our_root_dentry;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid, flags;
	__u64 now;

	if (pid_nr_in_our_ns(BPF_CORE_READ(p, group_leader, thread_pid), &pid))
		return 0;
	flags = exe_name_flags(bprm);
	now = bpf_ktime_get_ns();
	if ((flags & PROC_F_NAME_PYTHON) && root_is_ours(p))
		flags |= PROC_F_ROOT_OURS;
	if ((flags & PROC_F_NAME_PYTHON) &&
	    bpf_map_update_elem(&py_execs, &pid, &now, BPF_ANY) == 0)
		flags |= PROC_F_FORKS_SEEN;
	else
		bpf_map_delete_elem(&py_execs, &pid);
	send_proc_event(PROC_EXEC, pid, 0, flags, event_wake(PROC_EXEC, pid, flags), p);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 pid, ppid;

	/* New processes only (not threads), and only children of targets
	 * (a fork copies the parent's interpreter, ready to be profiled) or
	 * of interpreters that exec'd and may not be targets yet. */
	if (BPF_CORE_READ(child, pid) != BPF_CORE_READ(child, tgid) ||
	    pid_nr_in_our_ns(BPF_CORE_READ(parent, group_leader, thread_pid), &ppid) ||
	    (!bpf_map_lookup_elem(&procs, &ppid) && !bpf_map_lookup_elem(&py_execs, &ppid)) ||
	    pid_nr_in_our_ns(BPF_CORE_READ(child, thread_pid), &pid))
		return 0;
	send_proc_event(PROC_FORK, pid, ppid, 0, event_wake(PROC_FORK, pid, 0), NULL);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 pid, flags = 0;
	int tracked;

	/* Targets only, once their last thread is gone (the tracepoint runs
	 * after signal->live is decremented): user space forgets them now
	 * rather than at a scan of /proc. */
	if (BPF_CORE_READ(p, signal, live.counter) != 0 ||
	    pid_nr_in_our_ns(BPF_CORE_READ(p, group_leader, thread_pid), &pid))
		return 0;
	/* On a whole host user space may wait to attach a python that exec'd
	 * (it learns its start from the exec, not /proc/PID/stat): its exit
	 * ends the wait. */
	tracked = bpf_map_delete_elem(&py_execs, &pid) == 0;
	/* A target's entries go now, not at user space's next wake-up: two
	 * system calls fewer per short-lived process. Its last samples are
	 * in the ring buffer already. */
	if (bpf_map_delete_elem(&procs, &pid) == 0) {
		bpf_map_delete_elem(&unwind_procs, &pid);
		bpf_map_delete_elem(&task_srcs, &pid);
		flags = PROC_F_FORGOTTEN;
	} else if (!tracked || !lazy_exits) {
		return 0;
	}
	send_proc_event(PROC_EXIT, pid, 0, flags, event_wake(PROC_EXIT, pid, 0), NULL);
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
	__u64 *exec_ns;
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
	exec_ns = bpf_map_lookup_elem(&py_execs, &pid);
	if (exec_ns && bpf_ktime_get_ns() - *exec_ns < PY_EXEC_QUIET_NS)
		return 0;
	send_proc_event(PROC_MAP, pid, 0, 0, event_wake(PROC_MAP, pid, 0), NULL);
	return 0;
}
