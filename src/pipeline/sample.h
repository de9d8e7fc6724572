/* One BPF sample record -> one sample of the in-memory profile. */
#ifndef SAMPLE_H
#define SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"
#include "merge.h"
#include "native_filter.h"
#include "symgap.h"
#include "native_diff.h"
#include "nsym.h"
#include "unwind.h"
#include "objcache.h"
#include "ksym.h"
#include "profile.h"
#include "unwind.h"
#include "pysym.h"
#include "pythread.h"
#include "pyasyncio.h"
#include "pyawait.h"
#include "pyversion.h"

struct sample_counts {
	uint64_t records;	/* records received */
	uint64_t malformed;	/* records too short or inconsistent */
	uint64_t no_python;	/* thread without a Python stack */
	uint64_t truncated;	/* stack deeper than the walk limit */
	uint64_t read_errors;	/* BPF could not read the whole chain */
	uint64_t bad_frames;	/* frames whose code object was unreadable */
	uint64_t cut_walks;	/* Python stacks cut at an unreadable or implausible
				 * frame or a cycle (one placeholder each) */
	uint64_t max_depth;	/* deepest Python stack seen */
	uint64_t threads;	/* distinct thread ids seen (up to TID_SET_SIZE) */
	uint64_t native_stacks;	/* samples with a native stack unwound */
	uint64_t native_errors;	/* unwinds that stopped before the outermost frame */
	uint64_t stack_errors;	/* BPF could not copy the user stack */
	uint64_t merge_errors;	/* eval loops and Python groups that did not pair */
	uint64_t trampolines;	/* CPython perf trampoline frames hidden */
	uint64_t offcpu_dropped;	/* wall mode: more threads off CPU than OFFCPU_MAX */
	uint64_t kernel_stacks;		/* --kernel: samples with kernel frames */
	uint64_t async_stacks;		/* --async: stacks given their await chain */
	uint64_t async_unmatched;	/* ... whose stack did not hold the task's
					 * coroutine (left as sampled) */
	uint64_t task_none;		/* samples the BPF program read to run no
					 * asyncio task (SAMPLE_F_NO_TASK) */
	uint64_t record_bytes;		/* bytes of all records received */
	uint64_t native_not_loaded;	/* --unwind kernel: the walk met a mapping
					 * not loaded yet; the stack is marked */
	uint64_t native_copied;		/* ... and unwound from the stack copy
					 * BPF made instead (not marked) */
	/* native_errors by why the walk ended: enum py_native_end (in BPF)
	 * and enum unwind_end (libunwind on a stack copy), so that a summary
	 * that counts stops also says where to look. */
	uint64_t kernel_end[PY_NATIVE_END_BAD + 1];
	uint64_t user_end[UNWIND_END_READ + 1];
};

#define TID_SET_SIZE 16384	/* bounded: counting stops when full */
#define LOC_MEMO 8192		/* Python frame -> location, direct-mapped */

/* A Python frame's location in one profile, by pysym_frame_key and lasti:
 * saves resolving names, line tables and interning on repeated frames. */
struct loc_memo {
	uint64_t key, lasti;
	uint64_t prof;		/* profile_serial() the location belongs to */
	uint64_t loc;
};
/* A native function's native_filter verdict, by function id: the rule
 * table is too long to match on every frame of every sample. */
#define HIDE_MEMO 1024
struct hide_memo {
	uint64_t prof;		/* profile_serial(); 0: empty */
	uint64_t fid;
	uint8_t in_interp, hide;
};
/* A native pc's location and verdicts in one profile, by process maps:
 * saves the symbol search, the symbol-gap count's path search and the
 * interning of mapping, function and location on every frame. Only named
 * or object-known results (NSYM_OK, NSYM_NO_SYMBOL) are kept: the others
 * may change when the maps are read again, which changes maps_gen. */
#define NATIVE_MEMO 8192	/* direct-mapped, overwritten on collision */
/* Probed for every native frame of every sample: 32 bytes, 256 KiB in
 * all, so that the probes (each a cache miss) touch fewer pages. */
struct native_memo {
	uint64_t maps_gen;	/* objcache's, unique per maps read of any
				 * process: it names the pid too; 0: empty */
	uint64_t pc;
	uint64_t prof;		/* profile_serial(); 0: empty */
	uint32_t loc;		/* ids above UINT32_MAX are not kept */
	int8_t gap;		/* symgap slot counted, -1: none */
	uint8_t flags;		/* NATIVE_MEMO_* */
};
#define NATIVE_MEMO_LEAF	1
#define NATIVE_MEMO_EVAL	2
#define NATIVE_MEMO_HIDE	4
#define NATIVE_MEMO_NAMED	8
/* A native pc's symbol by file: the object cache entry's serial and the
 * file offset looked up (nsym_result), the same in every process that
 * maps the file. */
#define FILE_MEMO 4096		/* direct-mapped, overwritten on collision */
struct file_memo {
	uint64_t object;	/* 0: empty */
	uint64_t offset;
	uint64_t file_vaddr;
	const char *name;	/* NULL: NSYM_NO_SYMBOL; in the object's table */
	uint64_t prof, fid;	/* name's function in profile prof */
};
/* A mapping of a process (one maps read) seen by a target: its pprof
 * mapping in profile prof, whether it is the target's interpreter file,
 * and its symbol-gap slot. */
#define MAP_MEMO 1024		/* direct-mapped, overwritten on collision */
struct map_memo {
	uint64_t maps_gen;	/* 0: empty */
	uint64_t start;
	const struct py_target *t;
	uint64_t prof, mid;
	int32_t gap;		/* symgap slot, -1: none */
	uint8_t in_interp;
};
/* A target's interpreter mapping in profile prof (interpreter_mapping). */
#define INTERP_MEMO 64		/* direct-mapped by target, overwritten */
struct interp_memo {
	const struct py_target *t;	/* NULL: empty */
	uint64_t prof, mid;
	char module[sizeof(((struct py_target *)0)->module)];	/* t's, then */
};
#define OFFCPU_MAX 4096		/* wall mode: threads off the CPU at once */

/* Wall mode: a thread's stack when it left the CPU, waiting for its return.
 * The ring buffer is shared by the CPUs, and a switch-out record (a stack
 * walk long) may come after the switch-in record another CPU wrote the
 * moment the thread came back there: a slot without locs keeps that
 * switch-in (end_ns) for the switch-out to come. */
struct offcpu {
	uint32_t pid, tid;	/* tid 0: free slot */
	uint32_t flags;		/* SAMPLE_F_* of the switch-out record */
	uint64_t start_ns;
	uint64_t end_ns;	/* locs NULL: a switch-in seen first */
	uint64_t first_ns;	/* locs NULL: that switch-in was the thread's
				 * first, off the CPU since then (waiting for a
				 * CPU); its next stack takes the wait. 0: not */
	uint64_t *locs;		/* NULL: no wait open */
	size_t n;
	char tname[64];
	char task[PYASYNCIO_LABEL_MAX];	/* "": no asyncio task */
};

struct sample_sink {
	struct profile *prof;
	struct pysym_cache *syms;
	struct pythread_cache *threads;		/* Python thread names */
	struct pyasyncio_cache *tasks;		/* asyncio task labels; NULL: none */
	struct pyawait_cache *awaits;		/* --async: await chains; NULL: off */
	struct pyawait_chain chain;		/* scratch of async_stack() */
	struct sample_counts n;
	struct objcache *objs;			/* native objects of unw and nsym */
	struct unwind_ctx *unw;			/* NULL: Python frames only */
	uint64_t period_ns;			/* wall mode: counts = weight / period */
	struct offcpu offcpu[OFFCPU_MAX];
	uint64_t offcpu_floor;			/* the last boundary: no wait
						 * counts from before it */
	uint64_t wall_from_ns;			/* wall mode: the window's start,
						 * no time on the CPU counts from
						 * before it; 0: cpu mode */
	struct nsym_ctx *nsym;			/* NULL: Python frames only */
	int all_native;				/* 1: no native_filter */
	const struct ksym_table *ksym;		/* --kernel: names of kernel frames */
	struct symgap gaps;			/* unnamed native frames per object */
	/* --unwind kernel: a record whose BPF walk met no loaded mapping
	 * asks for the process's tables to be (re)loaded. */
	void (*native_miss)(void *ctx, int pid, uint64_t taken_ns);
	void *native_miss_ctx;
	struct native_diff *diff;		/* --unwind both: compare the two */
	char program[16];			/* the sampled processes' name */
	int programs;				/* names seen: 0, 1, 2 = several */
	pysym_clock_fn clock;			/* live only: see sample_add */
	uint8_t *full;				/* a compact record, expanded */
	size_t full_cap;
	uint64_t kpcs[PYPERF_MAX_NATIVE];
	/* Scratch reused by every sample: no per-sample allocation. */
	uint64_t locs[PYPERF_MAX_FRAMES + UNWIND_MAX_FRAMES + 4];
	uint64_t pyloc[PYPERF_MAX_FRAMES];
	uint64_t pycode[PYPERF_MAX_FRAMES];	/* each pyloc's code object; 0: none */
	uint64_t codes[PYPERF_MAX_FRAMES];
	uint8_t pyentry[PYPERF_MAX_FRAMES];
	uint32_t pygroup[PYPERF_MAX_FRAMES];	/* eval-loop group of each */
	uint32_t group;				/* python_frames: the current one */
	int anchored;				/* merge by anchor (SAMPLE_F_ANCHORED) */
	int32_t ngroup[UNWIND_MAX_FRAMES + 1];	/* anchor each native frame
						 * holds; -1: none */
	uint64_t nsps[UNWIND_MAX_FRAMES];	/* libunwind: each frame's sp */
	uint64_t pcs[UNWIND_MAX_FRAMES];
	uint8_t nkind[UNWIND_MAX_FRAMES];	/* enum unwind_frame_kind */
	uint64_t nloc[UNWIND_MAX_FRAMES];
	uint8_t neval[UNWIND_MAX_FRAMES];
	uint8_t nhide[UNWIND_MAX_FRAMES];	/* native_filter_hides() of each */
	struct merge_frame merged[PYPERF_MAX_FRAMES + UNWIND_MAX_FRAMES];
	uint32_t tids[TID_SET_SIZE];		/* open addressing, 0 = empty */
	struct loc_memo memo[LOC_MEMO];
	struct hide_memo hmemo[HIDE_MEMO];
	struct native_memo nmemo[NATIVE_MEMO] __attribute__((aligned(64)));
	struct file_memo fmemo[FILE_MEMO];
	struct map_memo mmemo[MAP_MEMO];
	struct interp_memo imemo[INTERP_MEMO];
};

/* Adds the record rec (size bytes, as read from the ring buffer) of target
 * t. Live (k->clock set), its code objects must have been checked by
 * sample_precheck and sample_precheck_end first; in replay each record
 * checks its own. Returns 0, or -1 on allocation failure. */
int sample_add(struct sample_sink *k, const struct py_target *t, const void *rec,
	       size_t size);

/* Live: notes the code objects of record rec of target t, to be checked
 * against the target together by sample_precheck_end before the records
 * are added one by one. A drain of the ring buffer then costs one
 * validation read per target (pysym_check_end) instead of one per record
 * (0.4 per sample on a deep program at 1 kHz, a system call of a few us
 * in a VM), and a code object is read once per drain however many
 * records name it. No-ops in replay. */
void sample_precheck(struct sample_sink *k, const struct py_target *t, const void *rec,
		     size_t size);
void sample_precheck_end(struct sample_sink *k);
/* Before sample_precheck_end: the checks noted, for the BPF program to
 * read in the target's context, and their answers (pysym_check_queue,
 * pysym_check_answer). */
size_t sample_precheck_queue(const struct sample_sink *k, const struct py_target **t,
			     uint64_t *addr, size_t max, uint16_t *len);
void sample_precheck_answer(struct sample_sink *k, size_t i, const uint8_t *bytes, uint64_t at_ns);

/* Live: should record rec of t be added now rather than held back with
 * others? Yes if its native walk met a mapping without tables (loaded
 * when the record is added), or if it names a code object the BPF
 * program had not seen lately that is not cached either: user space has
 * yet to read it, and it may be freed soon (a module body's code, at the
 * end of its import). Reads nothing. */
int sample_is_prompt(const struct sample_sink *k, const struct py_target *t, const void *rec,
		     size_t size);

/* Wall mode: adds every open off-CPU interval up to now_ns (CLOCK_MONOTONIC),
 * an interval boundary; those of live threads go on from now_ns. find maps
 * a pid to its target (NULL: the process is gone, its intervals dropped). */
void sample_flush_offcpu(struct sample_sink *k, uint64_t now_ns,
			 const struct py_target *(*find)(void *ctx, int pid), void *ctx);

/* Wall mode: the stacks of the waits still open, moved into profile next
 * (k->prof's successor, the next interval's). 0, or -1 when some had to
 * be dropped for want of memory. */
int sample_offcpu_move(struct sample_sink *k, struct profile *next);

#endif
