/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The records the BPF program and user space exchange. Both sides include
 * this file; nothing else may define a layout shared across the boundary.
 * Types are the kernel's fixed-width __u* so the file compiles under
 * clang -target bpf (vmlinux.h) and in user space (<linux/types.h>).
 */
#ifndef PYPERF_H
#define PYPERF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define PYPERF_MAX_FRAMES	1024	/* Python recursion limit is 1000 */
#define PYPERF_MAX_THREADS	4096	/* thread-list walk limit per sample */
#define PYPERF_COMM_LEN		16
#define PYPERF_NO_FIELD		0xffff	/* offset of a field this version lacks */
#define PYPERF_MAX_STACK	(64 << 10)	/* user stack bytes copied, at most */
#define PYPERF_FRAME_WIN	512	/* frame bytes read at once (power of 2) */
#define PYPERF_MAX_KFRAMES	64	/* kernel frames per sample (--kernel) */
#define PYPERF_MAX_NATIVE	512	/* native frames unwound in BPF (--unwind kernel);
					 * = UNWIND_MAX_FRAMES: -X perf takes 5-6 per
					 * Python call, and docutils under it went
					 * past 256 in 1.2-1.5 % of samples */

/* How a version links its frames; decides the walk in pyperf.bpf.c. */
enum py_frame_kind {
	PY_FRAMES_OBJECT = 1,	/* <=3.10: PyFrameObject.f_back chain */
	PY_FRAMES_CFRAME,	/* 3.11-3.12: tstate->cframe->current_frame */
	PY_FRAMES_DIRECT,	/* 3.13+: tstate->current_frame */
};

/* How the frame where an eval-loop call began is recognised. */
enum py_entry_kind {
	PY_ENTRY_EVERY = 1,	/* <=3.10: every frame is its own call */
	PY_ENTRY_FLAG,		/* 3.11: bool is_entry in the frame */
	PY_ENTRY_SHIM,		/* 3.12+: a shim frame (owner >= owner_shim)
				 * follows the outermost frame of the call */
};

/*
 * Eval-loop anchors. Each call of the eval loop keeps a structure on its
 * own C stack that the Python walk also reaches, so the native frame whose
 * stack range holds it IS that call, whatever the compiler named or split
 * the function into (.cold parts, stripped binaries). The entry kind says
 * which: PY_ENTRY_SHIM, the shim frame itself (the local entry frame,
 * linked into the frame chain); PY_ENTRY_FLAG, the call's _PyCFrame local,
 * the chain tstate->cframe, ->previous, ... in the order of the is_entry
 * frames. PY_ENTRY_EVERY (<=3.10) has none: the merge goes by symbol.
 * Anchor k is that of the group of Python frames closed by the k-th
 * FRAME_F_ENTRY frame (innermost first), so anchors grow with k.
 */
#define PY_ANCHORS_MAX		256	/* power of 2; more groups than native
					 * frames the BPF walk can reach */
#define PY_ANCHOR_SKIPS		4	/* anchors in no frame, passed per frame */
/* The BPF walk's scratch only, never in a record: an anchor not read yet,
 * the _PyCFrame the previous anchor's links to (odd: no _PyCFrame's
 * address). */
#define PY_ANCHOR_LAZY		1

/* Native frame [lo, hi) of the stack (from its callee's CFA to its own):
 * the index of the anchor it holds, or -1. *next is the first anchor not
 * yet matched; frames are given leaf first, so ranges and anchors both
 * grow. Shared by the BPF walk and user space's stack-copy path. */
static __always_inline int py_anchor_match(const __u64 *anchors, __u32 na, __u32 *next,
					   __u64 lo, __u64 hi)
{
	__u32 j = *next;
	__u64 a;

	if (na > PY_ANCHORS_MAX)
		na = PY_ANCHORS_MAX;
	for (int k = 0; k < PY_ANCHOR_SKIPS; k++) {
		if (j >= na || anchors[j & (PY_ANCHORS_MAX - 1)] >= lo)
			break;
		j++;
	}
	*next = j;
	if (j >= na)
		return -1;
	a = anchors[j & (PY_ANCHORS_MAX - 1)];
	if (a < lo || a >= hi)
		return -1;
	*next = j + 1;
	return (int)j;
}

/* What a thread state's thread_id holds, to match the sampled thread. */
enum py_tid_kind {
	PY_TID_NATIVE = 1,	/* native_thread_id == kernel tid (3.11+) */
	PY_TID_PTHREAD,		/* thread_id == pthread_self() == fsbase */
};

/* Offsets the BPF walk needs, in bytes. Filled per process from the
 * generated tables (<=3.12) or _Py_DebugOffsets (3.13+). */
struct py_walk_offsets {
	__u16 interp_tstate_head;	/* PyInterpreterState -> first tstate */
	__u16 ts_next;
	__u16 ts_frame;		/* frame / cframe / current_frame */
	__u16 cframe_current_frame;	/* PY_FRAMES_CFRAME only */
	__u16 ts_thread_id;
	__u16 ts_native_thread_id;	/* PYPERF_NO_FIELD before 3.11 */
	__u16 frame_back;		/* f_back / previous */
	__u16 frame_code;		/* f_code / f_executable */
	__u16 frame_lasti;		/* f_lasti (int) / prev_instr / instr_ptr */
	__u16 frame_owner;		/* char owner; PYPERF_NO_FIELD before 3.11 */
	__u16 frame_localsplus;		/* <=3.10: f_localsplus, for methods' self */
	__u16 frame_is_entry;		/* 3.11: bool is_entry; else NO_FIELD */
	__u8 frame_kind;		/* enum py_frame_kind */
	__u8 tid_kind;			/* enum py_tid_kind */
	__u8 code_tag_mask;		/* frame_code is a tagged _PyStackRef (3.14+):
					 * these low bits are tags; 0: a pointer */
	__u8 entry_kind;		/* enum py_entry_kind */
	__u16 frame_span;		/* bytes from a frame's start to the end of
					 * its last field above (py_frame_span) */
	__u16 frame_tlbc_index;		/* free-threaded 3.14+: int32 tlbc_index,
					 * which copy of the bytecode instr_ptr is in */
	__u8 owner_shim;		/* PY_ENTRY_SHIM: owner values >= this are
					 * frames without Python code */
	__u8 lasti_in_code;		/* 1: frame_lasti points into the code
					 * object (3.11-3.13), a plausibility
					 * check of each frame */
	__u16 cframe_previous;		/* PY_ENTRY_FLAG: _PyCFrame.previous, the
					 * chain of eval-loop anchors */
	/* For a code object's capture (struct py_code_capture): where its
	 * co_qualname (co_name before 3.11) and co_filename are, each
	 * < PY_CAPTURE_CODE - 8; PYPERF_NO_FIELD: no captures. */
	__u16 code_name;
	__u16 code_filename;
	__u16 code_linetable;		/* co_linetable (co_lnotab), < PY_CAPTURE_CODE
					 * - 8; PYPERF_NO_FIELD: not captured */
	/* Before 3.11 (no co_qualname), where a method's class comes from
	 * its first argument: co_argcount and co_varnames (< PY_CAPTURE_CODE
	 * - 8, within code_span) and a tuple's ob_item; PYPERF_NO_FIELD:
	 * its name is not captured. */
	__u16 code_argcount;
	__u16 code_varnames;
	__u16 tuple_items;
	/* f_globals, which with the code object tells code_is_new() a code
	 * object from the one freed at its address before (two modules'
	 * bodies have two live dicts); PYPERF_NO_FIELD: by address alone */
	__u16 frame_globals;
	__u16 code_span;		/* bytes of a code object captured: to the
					 * end of the last field user space takes
					 * (<= PY_CAPTURE_CODE), none past it, where
					 * the mapping may end */
	/* Whether a capture holds all user space takes of a code object
	 * (checks.bpf.h, capture_whole; pysym.c makes the entry from it
	 * with nothing read): PyASCIIObject's length and state, how far
	 * the state's kind/compact/ascii bits lie above bits 2-6 (0 or 6),
	 * sizeof(PyASCIIObject) and sizeof(PyCompactUnicodeObject),
	 * PyBytesObject's ob_size and ob_sval. str_length 0: no capture is
	 * whole (every new code object wakes user space). */
	__u8 str_length, str_state, str_shift, str_ascii_size, str_compact_size;
	__u8 bytes_size, bytes_sval, whole_pad;
};

/* What user space puts in frame_span: the walk reads that many bytes of
 * each frame at once. 0 if the fields lie beyond PYPERF_FRAME_WIN. */
static inline __u16 py_frame_span(const struct py_walk_offsets *off)
{
	const __u16 field[] = { off->frame_back, off->frame_code, off->frame_lasti,
				off->frame_owner, off->frame_localsplus, off->frame_is_entry,
				off->frame_tlbc_index, off->frame_globals };
	const __u16 size[] = { 8, 8, 8, 1, 8, 1, 4, 8 };
	__u32 end = 0;

	for (unsigned i = 0; i < sizeof(field) / sizeof(field[0]); i++)
		if (field[i] != PYPERF_NO_FIELD && (__u32)field[i] + size[i] > end)
			end = (__u32)field[i] + size[i];
	return end <= PYPERF_FRAME_WIN ? (__u16)end : 0;
}

/* Per target process, keyed by tgid in the "procs" map. */
struct py_proc_config {
	__u64 interp_head_addr;	/* address of the PyInterpreterState * */
	/* Who holds the GIL: locked == 1 && last_holder == tstate, or, where
	 * those are unknown, tstate_current == tstate (<=3.11). 0: unknown. */
	__u64 gil_locked_addr;	/* int locked */
	__u64 gil_holder_addr;	/* PyThreadState *last_holder */
	__u64 gil_current_addr;	/* PyThreadState *tstate_current */
	__u64 gil_enabled_addr;	/* free-threaded: int enabled; 0 elsewhere */
	struct py_walk_offsets off;
	__u64 since_ns;		/* wall mode: bpf_ktime_get_ns() when the process
				 * became a target (set as the entry is written):
				 * a thread running since has its time on the CPU
				 * counted from there */
	__u32 wake_first;	/* 1: the process's first sample wakes user
				 * space (then the program sets 0): one that
				 * ran before it was found may be running
				 * asyncio tasks, which the program can name
				 * once user space has seen where they are */
	__u32 wake_pad;
};

/*
 * The asyncio task a thread runs, found at the sample (issue 23): the
 * label named later from what was read then, never from what runs when
 * user space reads. Per target process, in the "task_srcs" map, written
 * by user space once it knows where the process keeps its running tasks
 * (src/python/pyasyncio.c). Candidates: the thread state's running task
 * (3.14+, ts_task), else the values of asyncio's current-tasks dict
 * {loop: task} (3.7-3.13; one entry per loop running a step). A
 * candidate is the thread's running task only if its coroutine's frame
 * is on the thread's Python stack at that instant (its frame lives in the
 * coroutine from 3.11, coroutine->cr_frame before): exactly one must be.
 */
#define PY_TASK_CANDS		4	/* candidates checked per sample */
#define PY_TASK_DICT_ENTRIES	21	/* dict entries read, at most: a table of
					 * 32 slots fills up at 21; two loops'
					 * inserts and deletes made tables of 16
					 * with 10 entries on 3.12 */
#define PY_CAPTURE_TASK_STR	112	/* bytes of the name and qualname objects */

struct py_task_src {
	__u64 dict;		/* the current-tasks dict; 0: none */
	__u16 ts_task;		/* thread state -> running task; 0: none */
	__u16 dict_keys;	/* PyDictObject.ma_keys */
	__u16 dk_size;		/* <=3.10 PyDictKeysObject.dk_size; NO_FIELD 3.11+ */
	__u16 dk_log2_index_bytes;	/* 3.11+ */
	__u16 dk_kind;		/* 3.11+; entries must be of kind dk_kind_general */
	__u16 dk_kind_general;
	__u16 dk_nentries;
	__u16 dk_indices;
	__u16 entry_size;	/* PyDictKeyEntry */
	__u16 entry_value;
	__u16 ob_type;		/* PyObject.ob_type */
	__u16 task_coro;	/* TaskObj.task_coro */
	__u16 task_name;	/* TaskObj.task_name; NO_FIELD (3.7): none */
	__u16 cr_frame;		/* <=3.10: PyCoroObject.cr_frame (a pointer);
				 * NO_FIELD from 3.11 */
	__u16 cr_iframe;	/* 3.11+: the frame inside the coroutine */
	__u16 cr_qualname;	/* PyCoroObject.cr_qualname */
	__u16 task_read;	/* bytes of a Task read at once: to the end of
				 * ob_type, task_coro and task_name (<= 256) */
	__u16 str_data;		/* where a compact ASCII str's characters start */
	__u16 dict_all;		/* 1: the dict holds every running task of the
				 * process (<=3.13, where user space saw it
				 * hold one: not a copy asyncio.tasks rebound
				 * since), so its emptiness is
				 * SAMPLE_F_NO_TASK's */
	__u64 str_type;		/* the str type (&PyUnicode_Type); 0: not known
				 * yet. A name of that type that does not begin
				 * "Task-" is no default name: its task's label
				 * is the name alone, no qualname is copied */
	__u64 c_task_type;	/* the program's: the type of the last Task it
				 * named (SAMPLE_F_NEW_TASK leaves those out);
				 * user space writes 0 */
};

/* The record's tail with SAMPLE_F_TASK. user space names the task from
 * it alone: task_type must be a C Task (checked there), name and qualname
 * are the first bytes of the task's name object (a str, 3.12+ an int for
 * a default name, 3.7 none) and of its coroutine's __qualname__ as they
 * were at the sample, so a task freed since and an object at its address
 * cannot lend their names. */
struct py_task_capture {
	__u64 task;		/* the Task object */
	__u64 task_type;	/* its ob_type */
	__u64 coro;		/* its coroutine */
	__u32 frame;		/* index of the coroutine's frame in the record */
	__u16 name_len;		/* bytes of name read; 0: no name object */
	__u16 qual_len;		/* bytes of qual read; 0: not needed (a name
				 * that is no default, py_task_src.str_type) */
	__u8 name[PY_CAPTURE_TASK_STR];
	__u8 qual[PY_CAPTURE_TASK_STR];
};

/* Process events for discovery (the "proc_events" ring buffer), in the
 * profiler's PID namespace. */
enum proc_event_kind {
	PROC_EXEC = 1,
	PROC_FORK,		/* a child (not a thread) of a target or of a
				 * process whose exec had PROC_F_FORKS_SEEN */
	PROC_EXIT,		/* a target's last thread exited; on a whole host
				 * also a process whose exec had
				 * PROC_F_FORKS_SEEN, target or not */
	PROC_MAP,		/* a process not a target mapped a libpython*
				 * executable (an embedder, dlopen) */
	PROC_WAKE,		/* none: an event before is due (pyperf.bpf.c,
				 * wake_due) */
};

/* py_proc_event.flags of PROC_EXEC: the name of the executable file
 * (after symbolic links, as /proc/PID/exe's last part) was read; it has
 * "python" in it. Without PROC_F_NAME_READ user space reads the link. */
#define PROC_F_NAME_READ	(1u << 0)
#define PROC_F_NAME_PYTHON	(1u << 1)
/* PROC_EXEC of a python: every fork of the process from the exec on is
 * reported (PROC_FORK, its child) until it exits or execs again, target
 * or not yet, so user space need not list the children it made before it
 * was attached (py_execs, pyperf.bpf.c). Not set when that table was
 * full. */
#define PROC_F_FORKS_SEEN	(1u << 2)
/* PROC_EXEC of a python: its root is the profiler's own (the same mount
 * and directory: learn_root, pyperf.bpf.c), so its file names mean what
 * they mean to the profiler, without a look at /proc/PID/root. */
#define PROC_F_ROOT_OURS	(1u << 3)
/* PROC_EXIT of a target: the BPF program has deleted its entries (procs,
 * unwind_procs, task_srcs) itself; user space need not. */
#define PROC_F_FORGOTTEN	(1u << 4)

struct py_proc_event {
	__u32 kind;		/* enum proc_event_kind */
	__u32 pid;		/* the process that exec'd, exited or mapped, or
				 * the new child */
	__u32 ppid;		/* fork: the parent (a target) */
	__u32 flags;		/* PROC_F_* */
	__u64 time_ns;		/* bpf_ktime_get_ns() at the event */
	/* PROC_EXEC of a python, what /proc/PID/stat would tell of it now
	 * (0 otherwise): its start (task start_boottime, ns after boot; 0 if
	 * this kernel has no such field), its argument area and its name. */
	__u64 start_ns;
	__u64 arg_start, arg_end;
	char comm[16];
};

/* sample flags */
#define SAMPLE_F_TRUNCATED	(1u << 0) /* deeper than PYPERF_MAX_FRAMES */
#define SAMPLE_F_NO_TSTATE	(1u << 1) /* thread has no PyThreadState */
#define SAMPLE_F_READ_ERR	(1u << 2) /* a read of target memory failed */
#define SAMPLE_F_NO_INTERP	(1u << 3) /* interpreter not initialised */
#define SAMPLE_F_KERNEL		(1u << 4) /* sampled in kernel mode (syscall) */
#define SAMPLE_F_STACK_ERR	(1u << 5) /* user stack could not be copied */
#define SAMPLE_F_GIL_HELD	(1u << 6) /* the thread held the GIL */
#define SAMPLE_F_GIL_UNKNOWN	(1u << 7) /* the GIL's state could not be read */
#define SAMPLE_F_OFFCPU		(1u << 8) /* wall mode: thread left the CPU */
#define SAMPLE_F_OFFCPU_END	(1u << 9) /* wall mode: it is back (no frames) */
#define SAMPLE_F_GIL_OFF	(1u << 10) /* free-threaded build running
					    * with the GIL disabled */
#define SAMPLE_F_NATIVE_PCS	(1u << 11) /* native_n pcs unwound in BPF follow
					    * the frames (--unwind kernel) */
#define SAMPLE_F_BAD_CHAIN	(1u << 12) /* the frame chain met an implausible
					    * frame or a cycle: walk stopped */
#define SAMPLE_F_COMPACT	(1u << 13) /* a compact record: see
					    * struct py_sample_compact */
#define SAMPLE_F_COMPACT_REGS	(1u << 14) /* with SAMPLE_F_COMPACT: the header
					    * keeps regs (a fallback copy of
					    * the stack follows the pcs) */
#define SAMPLE_F_NEW_CODE	(1u << 15) /* may name a code object the program
					    * has not seen lately in this process
					    * and could not capture whole (user
					    * space is to read it soon) */
#define SAMPLE_F_NO_TABLES	(1u << 16) /* the native walk met a mapping
					    * with no tables yet */
#define SAMPLE_F_CODE_NAME	(1u << 18) /* not a sample: a struct
					    * py_code_capture */
#define SAMPLE_F_TASK		(1u << 19) /* a struct py_task_capture ends
					    * the record: the asyncio task
					    * running at the sample */
#define SAMPLE_F_NEW_TASK	(1u << 20) /* the running tasks (the values of
					    * asyncio's current-tasks dict)
					    * are not those of this thread's
					    * last sample, and none was
					    * captured: a pure-Python task,
					    * which user space reads late
					    * (pyasyncio.c), while it runs if
					    * the record is added at once */
#define SAMPLE_F_NO_TASK	(1u << 21) /* the program read where the thread's
					    * running task is (struct
					    * py_task_src: the thread state's,
					    * 3.14+, and the current-tasks
					    * dict, or that dict alone where
					    * dict_all) and no task ran at the
					    * sample: no asyncio_task label,
					    * nothing for user space to read */
#define SAMPLE_F_ANCHORED	(1u << 17) /* the layout has eval-loop anchors:
					    * native pcs carry PY_PC_EVAL, and
					    * a copied stack is followed by
					    * nanchors anchors */

/* What the GIL's words read, for py_gil_flags(). */
struct py_gil_read {
	__s32 enabled, locked;
	__u64 holder, current;
	__u8 has_enabled;	/* enabled was read (free-threaded builds) */
	__u8 has_locked;	/* locked and holder were read */
	__u8 has_current;	/* current (tstate_current, <=3.11) was read */
};

/* SAMPLE_F_GIL_HELD, 0 (not held), SAMPLE_F_GIL_OFF or SAMPLE_F_GIL_UNKNOWN
 * for thread state tstate; shared by the BPF program and the unit tests.
 * enabled == 0: a free-threaded build running without the GIL (it can be
 * switched on at run time, so it is read per sample). locked is -1 before
 * the GIL is first created (3.6-3.8): only current tells then. */
static __always_inline __u32 py_gil_flags(const struct py_gil_read *g, __u64 tstate)
{
	if (!tstate)
		return SAMPLE_F_GIL_UNKNOWN;
	if (g->has_enabled && g->enabled == 0)
		return SAMPLE_F_GIL_OFF;
	if (g->has_locked && g->locked >= 0)
		return g->locked == 1 && g->holder == tstate ? SAMPLE_F_GIL_HELD : 0;
	if (g->has_current)
		return g->current == tstate ? SAMPLE_F_GIL_HELD : 0;
	return SAMPLE_F_GIL_UNKNOWN;
}

/* Counters the BPF side keeps per CPU in the "stats" map, by index. */
enum pyperf_stat {
	STAT_EVENTS = 0,	/* perf events in a target process */
	STAT_SENT,		/* records written to the ring buffer */
	STAT_LOST,		/* ring buffer full: record dropped */
	STAT_NO_TSTATE,		/* thread had no PyThreadState */
	STAT_READ_ERR,		/* a target memory read failed */
	STAT_TRUNCATED,		/* stack deeper than PYPERF_MAX_FRAMES */
	STAT_VMA_ERR,		/* bpf_find_vma failed for the user sp */
	STAT_STACK_READ_ERR,	/* the user stack could not be read */
	STAT_STACK_PARTIAL,	/* stack copied page by page (untouched pages) */
	/* --unwind kernel: native frames unwound in BPF (enum py_native_end
	 * says why each walk ended) */
	STAT_NATIVE_WALKS,
	STAT_NATIVE_FRAMES,
	STAT_NATIVE_FP,		/* steps by frame pointer (no table, or no
				 * rule the table can express) */
	STAT_NATIVE_PLT,	/* steps by the synthesised PLT rule */
	STAT_NATIVE_SIGNAL,	/* signal frames crossed */
	STAT_NATIVE_END_MAX,
	STAT_NATIVE_END_NO_PROC,	/* no mappings loaded for the process */
	STAT_NATIVE_END_NO_MAP,	/* pc in no loaded mapping */
	STAT_NATIVE_END_READ,
	STAT_NATIVE_END_BAD,	/* the stack did not grow, bad frame pointer */
	STAT_TARGET_NS,		/* ns spent on target samples (from the
				 * header's time to the record's output) */
	STAT_NATIVE_NS,		/* ns of that in the native walk */
	STAT_BAD_CHAIN,		/* walk stopped at an implausible frame or cycle */
	STAT_CFRAME_FALLBACK,	/* 3.11-3.12: walk began at the caller's cframe */
	STAT_NATIVE_COPY,	/* --unwind kernel: tables missing, the stack
				 * copied for user space to unwind instead */
	STAT_FRESH_WAKEUPS,	/* reader woken for a sample with new code */
	STAT_CODE_CHECKS,	/* code objects read for user space's check */
	/* Clock events: a target sample after periods the timer skipped,
	 * the same thread running all along (the kernel throttled the event
	 * or its timer fired late); and the ns of those periods (late_ns in
	 * pyperf.bpf.c). */
	STAT_LATE,
	STAT_LATE_NS,
	STAT_LOST_NS,		/* periods of the lost records (STAT_LOST) */
	STAT_CODE_CAPTURES,	/* struct py_code_capture records sent */
	STAT_TASK_CANDS,	/* samples with asyncio task candidates */
	STAT_TASK_FOUND,	/* ... whose running task was captured */
	STAT_TASK_NONE,		/* samples read to run no task (SAMPLE_F_NO_TASK) */
	STAT__COUNT,
};

/* Code-object checks done in the target's own context. User space checks
 * the code objects of a batch of records against its cache (a freed code
 * object's address may hold another one now) by reading a few bytes of
 * each: a system call that pins each page of the target costs 1-13 us in
 * a VM, most of the profiler's time. Instead it may write the addresses
 * into the code_checks map (memory-mapped) and a request into check_req
 * (.bss); the program reads up to PY_CHECKS_PER_SAMPLE of them whenever
 * it samples that process, ~0.1 us each, and user space takes the bytes
 * of those done, reading the rest itself after a while. A read after the
 * batch's records were taken is a check as good as its own. */
#define PY_CHECK_SLOTS		2048	/* requests at once */
#define PY_CHECK_BYTES		256	/* bytes read per code object, at most */
#define PY_CHECKS_PER_SAMPLE	32

struct py_check_req {
	__u32 tgid;		/* whose code objects */
	__u32 len;		/* bytes to read at each address */
	__u32 n;		/* slots 0..n-1 of code_checks; 0: none */
	__u32 next;		/* the next slot to claim (atomic) */
	__u64 gen;		/* of this request, echoed in each slot done */
};

struct py_check {
	__u64 addr;		/* written by user space */
	__u64 gen;		/* py_check_req.gen when done */
	__u64 done_ns;		/* bpf_ktime_get_ns() before the read */
	__s64 err;		/* the read's result: 0 or -errno */
	__u8 bytes[PY_CHECK_BYTES];
};

/* py_frame_rec.flags */
#define FRAME_F_ENTRY	(1u << 0) /* outermost frame of its eval-loop call:
				   * the native/Python merge boundary */
#define FRAME_F_EMPTY	(1u << 1) /* no frame: an eval-loop call that runs no
				   * Python frame at this instant (3.12+) */

struct py_frame_rec {
	__u64 code;	/* PyCodeObject * */
	__u64 lasti;	/* f_lasti (<=3.10) or instruction pointer (3.11+) */
	__u64 self;	/* <=3.10: first local (self/cls of a method), else 0 */
	__u32 flags;	/* FRAME_F_* */
	__u32 tlbc;	/* free-threaded 3.14+: the frame's tlbc_index (the
			 * bytecode copy lasti points into); else 0 */
};

/*
 * One step of the frame walk, shared by the BPF program and the unit
 * tests (tests/unit/test_layouts.c), so the logic the tests check is the
 * logic that runs in the kernel. w holds the frame's first frame_span
 * bytes (PYPERF_FRAME_WIN + 8 readable bytes).
 */
struct py_frame_fields {
	__u64 back, code, lasti, self, globals;
	__u32 tlbc;
	__u8 owner, is_entry;
};

/* What the walk does with a decoded frame. */
enum py_frame_verdict {
	PY_FRAME_KEEP = 0,	/* a Python frame: record it */
	PY_FRAME_SHIM,		/* no Python code; marks an eval-loop entry */
	PY_FRAME_BAD,		/* f_executable is NULL, a tagged int or an
				 * invalid tag, a pointer is misaligned, or the
				 * instruction pointer lies outside the code
				 * object: stop, the stack is not trusted */
};

/* Largest distance from a code object to its frames' instruction pointer
 * where lasti_in_code (the bytecode is stored inside the code object). */
#define PY_CODE_SPAN_MAX	(16u << 20)

#ifdef __bpf__
#define PY_WIN_LD(w, off, type) (*(const type *)((w) + ((off) & (PYPERF_FRAME_WIN - 1))))
#else
#define PY_WIN_LD(w, off, type) ({ type v_; \
	__builtin_memcpy(&v_, (w) + ((off) & (PYPERF_FRAME_WIN - 1)), sizeof(v_)); v_; })
#endif

static __always_inline void py_frame_decode(const struct py_walk_offsets *off, const __u8 *w,
					    struct py_frame_fields *f)
{
	f->back = PY_WIN_LD(w, off->frame_back, __u64);
	f->code = PY_WIN_LD(w, off->frame_code, __u64);
	f->lasti = PY_WIN_LD(w, off->frame_lasti, __u64);
	if (off->frame_kind == PY_FRAMES_OBJECT)
		f->lasti = (__u32)f->lasti;	/* f_lasti is an int */
	f->owner = 0;
	if (off->frame_owner != PYPERF_NO_FIELD && off->frame_kind != PY_FRAMES_OBJECT)
		f->owner = PY_WIN_LD(w, off->frame_owner, __u8);
	f->self = 0;
	if (off->frame_localsplus != PYPERF_NO_FIELD)
		f->self = PY_WIN_LD(w, off->frame_localsplus, __u64);
	f->is_entry = 0;
	if (off->frame_is_entry != PYPERF_NO_FIELD)
		f->is_entry = PY_WIN_LD(w, off->frame_is_entry, __u8);
	f->tlbc = 0;
	if (off->frame_tlbc_index != PYPERF_NO_FIELD)
		f->tlbc = PY_WIN_LD(w, off->frame_tlbc_index, __u32);
	f->globals = 0;
	if (off->frame_globals != PYPERF_NO_FIELD)
		f->globals = PY_WIN_LD(w, off->frame_globals, __u64);
}

/*
 * A _PyStackRef (3.14+): bit 0 set marks a borrowed or deferred
 * reference to an object, both low bits set a tagged int, 2 alone is the
 * invalid (error) tag, and NULL is 0 or the bare tag bit. Objects are
 * 8-aligned, so what remains after clearing the tag is the object.
 */
static __always_inline int py_frame_classify(const struct py_walk_offsets *off,
					     struct py_frame_fields *f)
{
	/* A frame read in the middle of a push (the eval loop publishes its
	 * frame a few instructions before it links it) or from freed memory
	 * holds garbage; following it yields a column of unreadable frames. */
	if (f->back & 7)
		return PY_FRAME_BAD;
	if (off->entry_kind == PY_ENTRY_SHIM && f->owner >= off->owner_shim)
		return PY_FRAME_SHIM;
	if (off->code_tag_mask) {
		if ((f->code & 3) == 3 || (f->code & 3) == 2)
			return PY_FRAME_BAD;
		f->code &= ~(__u64)off->code_tag_mask;
	}
	if (!f->code || (f->code & 7))
		return PY_FRAME_BAD;
	if (off->lasti_in_code && f->lasti - f->code > PY_CODE_SPAN_MAX)
		return PY_FRAME_BAD;
	return PY_FRAME_KEEP;
}

/* FRAME_F_ENTRY for a kept frame, from the layout's entry rule (a shim
 * frame marks the frame kept before it instead). */
static __always_inline __u32 py_frame_flags(const struct py_walk_offsets *off,
					    const struct py_frame_fields *f)
{
	if (off->entry_kind == PY_ENTRY_EVERY)
		return FRAME_F_ENTRY;
	if (off->entry_kind == PY_ENTRY_FLAG && f->is_entry)
		return FRAME_F_ENTRY;
	return 0;
}

/* User registers at the sample, in this order (x86_64). */
enum pyperf_reg {
	PYREG_IP, PYREG_SP, PYREG_BP, PYREG_BX, PYREG_R12, PYREG_R13, PYREG_R14, PYREG_R15,
	PYREG_AX, PYREG_CX, PYREG_DX, PYREG_SI, PYREG_DI, PYREG_R8, PYREG_R9, PYREG_R10, PYREG_R11,
	PYPERF_NREGS
};

struct py_sample_hdr {
	__u32 pid;		/* tgid */
	__u32 tid;
	__u64 time_ns;		/* bpf_ktime_get_ns() */
	__u64 period;		/* event period of this sample (ns for cpu-clock) */
	__u64 tstate;
	__u32 flags;		/* SAMPLE_F_* */
	__u16 nframes;		/* py_frame_rec entries that follow */
	__u16 nkframes;		/* kernel return addresses after the stack */
	char comm[PYPERF_COMM_LEN];
	__u64 regs[PYPERF_NREGS];	/* user registers (native stacks on) */
	__u32 stack_len;	/* user stack bytes after the native pcs */
	__u16 native_n;		/* pcs unwound in BPF after the frames */
	__u8 native_end;	/* enum py_native_end (SAMPLE_F_NATIVE_PCS) */
	__u8 nanchors;		/* anchors after the kernel frames (a copied
				 * stack with SAMPLE_F_ANCHORED only) */
};

/* The ring buffer record: header, then nframes frames, innermost first,
 * then native_n native pcs (leaf first: the sampled ip, then return
 * addresses; --unwind kernel), then stack_len bytes of user stack starting
 * at regs[PYREG_SP], then nkframes __u64 kernel addresses, innermost first
 * (--kernel, samples taken in the kernel). Only the used parts are sent. */
struct py_sample {
	struct py_sample_hdr h;
	struct py_frame_rec frames[PYPERF_MAX_FRAMES];
	__u8 stack[PYPERF_MAX_STACK];
	/* lets the verifier bound page-wise copies, after the pcs too; holds
	 * the kernel frames after a full stack */
	__u8 slack[4096 + PYPERF_MAX_NATIVE * 2 * 8];
	/* The walks' counters, together and just before the anchors they
	 * count: every sample touches these lines (each one missed costs
	 * ~0.1 us on a loaded host). */
	__u32 na;		/* groups closed: anchors put (may pass the max) */
	__u32 anchor_next;	/* the native walk's place in them */
	/* PY_ENTRY_FLAG: offset of _PyCFrame.previous, for the anchors left
	 * PY_ANCHOR_LAZY (the previous anchor's previous) */
	__u32 anchor_link;
	__u32 ntask;		/* the task search's candidates (below) */
	__u32 task_hits;	/* how many the walk matched */
	__u32 task_at;		/* frame index of the match */
	__u32 task_which;	/* its candidate */
	__u32 na_real;		/* anchors[0, na_real) put; the rest PY_ANCHOR_LAZY */
	/* anchors[anchor_next], read: the native walk looks for it only in a
	 * frame reaching it (~0ULL: none left) */
	__u64 anchor_want;
	/* The walk's eval-loop anchors: scratch, never sent from here (a
	 * copy follows the kernel frames where a stack is copied). */
	__u64 anchors[PY_ANCHORS_MAX];
	/* Scratch of the task search (struct py_task_src): candidates'
	 * coroutine frames, the one matched and how many matched. */
	__u64 task_frame[PY_TASK_CANDS];
	__u64 task_obj[PY_TASK_CANDS];
	__u64 task_coro[PY_TASK_CANDS];
	__u64 task_type[PY_TASK_CANDS];
	__u64 task_name[PY_TASK_CANDS];
	__u64 task_sig;		/* the current-tasks dict's values, mixed
				 * (SAMPLE_F_NEW_TASK); 0: none read */
	__u64 task_buf[32];	/* a Task's first task_read bytes */
	__u64 task_keys[6];	/* the dict's keys object header */
	__u64 task_ents[64];	/* its entries: PY_TASK_DICT_ENTRIES * 3 words,
				 * rounded up to a power of 2 */
	struct py_task_capture tcap;
};

/*
 * A code object named at its first sample. User space reads a code object
 * when it processes the record, up to 200 ms later (ms even for a record
 * that wakes it at once: at start-up it is busy loading unwind tables),
 * and a module's body is freed when its import ends: its frames showed as
 * [unreadable Python frame] in 3-5 % of a docutils run's samples. So when
 * the walk meets a code object not seen lately (code_is_new), the program
 * sends this record before the sample's: the code object's first bytes
 * (name, file name, line table pointers, first line: what user space's
 * fingerprint covers) and the first bytes of its name and file name str
 * objects, which user space decodes as it would have read them, the
 * first bytes of its line table's bytes object and, before 3.11, of its
 * first argument's name (self, cls: the class a method is named after
 * then comes from that argument's type): user space makes its entry
 * from these alone when they hold the whole of each (no system call), and
 * names the frame from them when the code object is gone by then.
 */
#define PY_CAPTURE_CODE		256	/* code object bytes (power of 2) */
#define PY_CAPTURE_NAME		128	/* str object bytes of the name */
#define PY_CAPTURE_FILE		256	/* ... of the file name */
#define PY_CAPTURE_TABLE	512	/* bytes object bytes of the line table */
#define PY_CAPTURE_ARG		128	/* str object bytes of the first argument */
#define PY_CAPTURE_TABLE_MORE	1536	/* ... and of a longer line table past the
					 * first PY_CAPTURE_TABLE (a module's body
					 * has 0.5-2 KB, and is freed when its
					 * import ends) */

struct py_code_capture {
	struct py_sample_hdr h;	/* pid, tid, time_ns; flags SAMPLE_F_CODE_NAME,
				 * no frames */
	__u64 code;		/* the code object's address */
	/* obj holds the code object's first code_span bytes (the layout's,
	 * py_walk_offsets), name and file the first name_len and file_len
	 * bytes of its name and file name. */
	__u16 name_len;		/* bytes of name read: PY_CAPTURE_NAME, less
				 * near the end of a mapping, 0 unread */
	__u16 file_len;		/* ... of file */
	__u16 table_len;	/* ... of table */
	__u16 arg_len;		/* ... of arg */
	__u8 obj[PY_CAPTURE_CODE];
	__u8 name[PY_CAPTURE_NAME];
	__u8 file[PY_CAPTURE_FILE];
	/* Last: a record of before it (table_len 0 there) is this one's
	 * beginning, so recordings made then still replay. */
	__u8 table[PY_CAPTURE_TABLE];
	/* Before 3.11, for a code object with arguments: the str object of
	 * the first one's name (a method's self or cls). */
	__u8 arg[PY_CAPTURE_ARG];
	/* Last, as table was (more_len 0 in a record of before): the line
	 * table's bytes after table[], read where it is longer. */
	__u16 more_len;
	__u16 more_pad[3];
	__u8 table_more[PY_CAPTURE_TABLE_MORE];
};

/* The shortest struct py_code_capture user space takes (without table). */
#define PY_CAPTURE_MIN		__builtin_offsetof(struct py_code_capture, table)

/*
 * Where no stack is copied (--unwind kernel, --no-native) and the layout
 * has neither self (<=3.10) nor tlbc (free-threaded 3.14+), the record
 * leaves out what it would only carry as zeros or garbage: h.regs, and
 * per frame self, tlbc and the 4 bytes of flags (they go into the low bits
 * of code, which a kept frame has 8-aligned and an empty one 0). Its
 * header is h's first PY_SAMPLE_REGS_OFF bytes then h's fields after regs
 * (pid, tid, time_ns, flags stay where they are); user space puts the
 * record back into the full layout (src/pipeline/sample.c) before reading
 * it. A kernel-mode sample whose tables were missing carries a stack copy
 * and so keeps the whole header, regs included (SAMPLE_F_COMPACT_REGS),
 * its frames still compact. 136 + 16 bytes a frame less: ~1.3 KB -> ~0.75 KB per sample on a
 * deep program.
 */
#define PY_SAMPLE_REGS_OFF	__builtin_offsetof(struct py_sample_hdr, regs)
#define PY_SAMPLE_REGS_LEN	(PYPERF_NREGS * 8)
#define PY_SAMPLE_COMPACT_HDR	(sizeof(struct py_sample_hdr) - PY_SAMPLE_REGS_LEN)

struct py_frame_compact {
	__u64 code_flags;	/* code | FRAME_F_* (flags < 8) */
	__u64 lasti;
};

/* Where the native pcs start inside a record (each with PY_PC_TRAMPOLINE
 * set where it is a perf trampoline's); the copied stack follows
 * them (native_n * 8 bytes later). */
#define PY_SAMPLE_STACK_OFF(nframes) \
	(sizeof(struct py_sample_hdr) + (nframes) * sizeof(struct py_frame_rec))

/* ... and where its kernel frames start. */
#define PY_SAMPLE_KSTACK_OFF(nframes, native_n, stack_len) \
	(PY_SAMPLE_STACK_OFF(nframes) + (native_n) * 8 + (stack_len))

/* ... and its eval-loop anchors (__u64 each), where a stack was copied. */
#define PY_SAMPLE_ANCHOR_OFF(nframes, native_n, stack_len, nkframes) \
	(PY_SAMPLE_KSTACK_OFF(nframes, native_n, stack_len) + (nkframes) * 8)

/* ... and its struct py_task_capture (SAMPLE_F_TASK), after the anchors. */
#define PY_SAMPLE_TASK_OFF(nframes, native_n, stack_len, nkframes, nanchors) \
	(PY_SAMPLE_ANCHOR_OFF(nframes, native_n, stack_len, nkframes) + (nanchors) * 8)

/* ---- --unwind kernel: native unwinding in BPF ---------------------------
 * User space converts each object's CFI to rows (src/native/unwind_table.c)
 * and loads them into "unwind_rows", one contiguous run per object
 * ("unwind_objs"); each process's executable mappings go to
 * "unwind_procs", sorted by address. */
enum py_unwind_mode {
	PY_UNWIND_USER = 0,	/* copy the user stack; libunwind in user space */
	PY_UNWIND_KERNEL,	/* unwind in BPF from the tables */
	PY_UNWIND_BOTH,		/* both, for the differential test */
};

#define PY_UNWIND_MAX_MAPS	256	/* executable mappings per process */
#define PY_UNWIND_MAX_OBJS	4096	/* object id 0: no table */
#define PY_UNWIND_MAX_ROWS	(1u << 20)
#define PY_UNWIND_ROW_SEARCH	21	/* binary search steps: 2^21 > MAX_ROWS */
#define PY_UNWIND_MAP_SEARCH	9	/* 2^9 > MAX_MAPS */

/* Why a walk in BPF ended. */
enum py_native_end {
	PY_NATIVE_END_OUTERMOST = 0,	/* return address 0 or undefined */
	PY_NATIVE_END_MAX,		/* PYPERF_MAX_NATIVE frames */
	PY_NATIVE_END_NO_PROC,		/* the process's mappings are not loaded */
	PY_NATIVE_END_NO_MAP,		/* pc in no loaded mapping (mapped since) */
	PY_NATIVE_END_READ,		/* a stack word could not be read */
	PY_NATIVE_END_BAD,		/* the stack did not grow, bad rbp */
};

/* The walk ended where the tables lack the code (the process or a mapping
 * not loaded yet): the stack is incomplete through no fault of its own, a
 * stack copy goes with it, and user space loads the tables. */
static inline int py_native_end_missing(__u32 end)
{
	return end == PY_NATIVE_END_NO_PROC || end == PY_NATIVE_END_NO_MAP;
}

/* Row kinds: enum ut_cfa in the low nibble, enum ut_rbp in the high one
 * (src/native/unwind_table.h, whose values these are). */
#define PY_ROW_CFA(kind)	((kind) & 0xf)
#define PY_ROW_RBP(kind)	((kind) >> 4)

struct py_unwind_row {
	__u32 pc;		/* link-time address the row starts at */
	__s32 cfa_off;
	__s16 rbp_off;
	__u8 kind;
	__u8 plt_thr;
};

/* A binary search over an object's rows (64k for libpython) misses the
 * cache at every step: a page index narrows it first. pages[k] (in
 * "unwind_pages", from page_first) is the row covering the start of the
 * object's k-th PY_UNWIND_PAGE_SHIFT page from page_base; the rows of an
 * address lie between its page's entry and the next page's. */
#define PY_UNWIND_PAGE_SHIFT	10
#define PY_UNWIND_MAX_PAGES	(1u << 19)	/* 512 MiB of code */

struct py_unwind_obj {
	__u32 first;		/* index in unwind_rows */
	__u32 count;
	__u32 page_first;	/* index in unwind_pages */
	__u32 page_count;
	__u32 page_base;	/* first row's address >> PY_UNWIND_PAGE_SHIFT */
	__u32 _pad;
};

struct py_unwind_map {
	__u64 start, end;	/* executable mapping [start, end) */
	__u64 bias;		/* runtime address - link-time address */
	__u32 obj;		/* index in unwind_objs; 0: frame pointers */
	__u32 flags;		/* PY_MAP_* */
};

/* Anonymous code whose rows ktables.c synthesised: CPython's perf
 * trampolines. Their pcs go to user space with PY_PC_TRAMPOLINE set. */
#define PY_MAP_TRAMPOLINE	(1u << 0)
#define PY_PC_TRAMPOLINE	(1ULL << 63)	/* user pcs are below 2^47 */
/* The frame holds eval-loop anchor k (SAMPLE_F_ANCHORED): pc | PY_PC_EVAL |
 * k << PY_PC_GROUP_SHIFT. */
#define PY_PC_EVAL		(1ULL << 62)
#define PY_PC_GROUP_SHIFT	48
#define PY_PC_GROUP(pc)		((__u32)((pc) >> PY_PC_GROUP_SHIFT) & 0x3fff)
#define PY_PC_TAGS		(~0ULL << PY_PC_GROUP_SHIFT)

struct py_unwind_proc {
	__u32 n;
	__u32 gen;		/* this list's load, unique in the session: tags
				 * the rules cached for its pcs (never 0) */
	struct py_unwind_map m[PY_UNWIND_MAX_MAPS];
};

/* Per CPU, a direct-mapped cache of the rules found, so a frame seen
 * before costs one cache line instead of the map and row searches (at
 * 99 Hz a search costs ~1.6 us: every page it touches is cold). A slot
 * holds a row's whole address range, indexed by the pc's granule: the
 * sampled pc (the leaf) is a different address every time, but mostly
 * in a range seen before. Tagged with the mapping list's gen: a reloaded
 * process misses, never finds a stale rule. */
#define PY_RULE_CACHE_BITS	9	/* slots per CPU: 512 x 32 bytes */
#define PY_RULE_GRANULE_SHIFT	5

struct py_rule_slot {
	__u64 start;		/* the rule holds for pcs in [start, start + len) */
	__u32 len;
	__u32 gen;		/* py_unwind_proc.gen; 0: empty */
	__s32 cfa_off;		/* the rule: struct py_unwind_row's fields */
	__s16 rbp_off;
	__u8 kind;		/* ROW_NONE: frame-pointer step */
	__u8 plt_thr;
	__u32 map_flags;	/* the mapping's PY_MAP_* */
	__u32 _pad;
};

/*
 * A process's mappings from the task_vma iterator (bpf/maps_iter.bpf.c),
 * in place of the text of /proc/PID/maps: the kernel formats that text
 * and looks each mapping up under its own lock (~95 us for a new Python
 * process, most of its attach). One record per mapping, without the path:
 * user space names a file it has seen in a maps text before by its key
 * (mount, dentry, inode and its generation: one path), and reads the
 * text for a process with a file it has not (src/memsource/maps_text.c).
 */
#define PY_VMA_F_FILE		(1u << 0)	/* file-backed: key is set */
#define PY_VMA_F_FALLBACK	(1u << 1)	/* read /proc/PID/maps: a file of an
						 * internal mount (an overlayfs layer,
						 * whose maps name is its user path;
						 * shmem, memfd), or a deleted one */
#define PY_VMA_NAME_HEAP	1
#define PY_VMA_NAME_STACK	2
#define PY_VMA_NAME_VDSO	3

struct py_vma_rec {
	__u64 start, end;
	__u64 pgoff;		/* bytes; 0 for an anonymous mapping */
	__u64 ino;
	__u64 key;		/* the file's mount and dentry, mixed (not the
				 * kernel's addresses themselves) */
	__u32 gen;		/* the inode's i_generation */
	__u32 dev;		/* the kernel's encoding: major << 20 | minor */
	__u32 vm_flags;		/* VM_READ 1, VM_WRITE 2, VM_EXEC 4, VM_MAYSHARE 0x80 */
	__u32 map_count;	/* mm->map_count at this record: all equal and
				 * the record count, or the list is incomplete */
	__u16 flags;		/* PY_VMA_F_* */
	__u8 name;		/* PY_VMA_NAME_*, anonymous mappings; 0: none */
	__u8 _pad[5];
};

#endif /* PYPERF_H */
