/*
 * Native (C) stack unwinding of a sampled thread from a copy of its
 * registers and the top of its user stack, with libunwind's remote API and
 * the DWARF CFI of the target's object files (.eh_frame_hdr, else
 * .debug_frame of the file or of its separate debug file). The target is
 * never stopped and never written to: memory is served from the copied
 * stack, then from our own read-only copy of the object files for their
 * read-only mappings, and only then read from the live target.
 *
 * Not thread-safe: one context per thread.
 */
#ifndef UNWIND_H
#define UNWIND_H

#include <stddef.h>
#include <stdint.h>

struct target_src;
struct tramp_shape;

/* x86_64 user registers, in the order of enum pyperf_reg (bpf/pyperf.h). */
enum unwind_reg {
	UNWIND_REG_RIP,
	UNWIND_REG_RSP,
	UNWIND_REG_RBP,
	UNWIND_REG_RBX,
	UNWIND_REG_R12,
	UNWIND_REG_R13,
	UNWIND_REG_R14,
	UNWIND_REG_R15,
	UNWIND_REG_RAX,
	UNWIND_REG_RCX,
	UNWIND_REG_RDX,
	UNWIND_REG_RSI,
	UNWIND_REG_RDI,
	UNWIND_REG_R8,
	UNWIND_REG_R9,
	UNWIND_REG_R10,
	UNWIND_REG_R11,
	UNWIND_REG_COUNT
};

#define UNWIND_MAX_FRAMES	512		/* frames per stack, at most */
#define UNWIND_MAX_STACK	(1u << 20)	/* larger stack copies are refused */

struct unwind_input {
	const struct target_src *src;		/* where the target is read */
	int pid;				/* tgid: whose maps and files */
	uint64_t regs[UNWIND_REG_COUNT];
	const uint8_t *stack;			/* copy of the user stack ... */
	uint32_t stack_len;			/* ... this many bytes ... */
	uint64_t stack_addr;			/* ... from this address (rsp) */
	const struct tramp_shape *tramp;	/* the target's trampoline template
						 * (trampoline.h), NULL: none */
	uint64_t taken_ns;			/* when the stack was copied
						 * (bpf_ktime_get_ns()), 0: unknown */
};

/* Why unwind_stack() stopped. */
enum unwind_end {
	UNWIND_END_OUTERMOST = 0,	/* reached the outermost frame */
	UNWIND_END_MAX,			/* max frames written */
	UNWIND_END_NO_INFO,		/* no CFI and no plausible frame pointer */
	UNWIND_END_BAD_FRAME,		/* sp did not grow, pc not in code, ... */
	UNWIND_END_READ,		/* memory the next step needs is unreadable */
};

struct unwind_opts {
	int no_fp_fallback;	/* 1: DWARF only, no frame-pointer steps */
	int no_target_reads;	/* 1: never read the live target's memory */
};

struct unwind_stats {
	uint64_t stacks, frames;
	uint64_t frames_dwarf;		/* steps taken with CFI */
	uint64_t frames_fp;		/* steps taken with the frame pointer */
	uint64_t frames_trampoline;	/* steps through CPython perf trampolines */
	uint64_t end_outermost, end_max, end_no_info, end_bad_frame, end_read;
	uint64_t debug_frame_tables;	/* .debug_frame sections indexed */
	uint64_t mem_stack, mem_file;	/* word reads served from copies */
	uint64_t mem_target, mem_failed;	/* ... from the target / not at all */
};

struct unwind_ctx;
struct objcache;

/* Objects, processes and maps come from oc, which must outlive the
 * context (one unwinder per cache); opts may be NULL for the defaults.
 * NULL on allocation failure. */
struct unwind_ctx *unwind_ctx_new(struct objcache *oc, const struct unwind_opts *opts);
void unwind_ctx_free(struct unwind_ctx *u);

/*
 * Unwinds in->regs over in->stack. Writes at most max (and at most
 * UNWIND_MAX_FRAMES) program counters to pcs, leaf first, and their number
 * to *n. pcs[0] is the sampled rip; pcs[i > 0] are return addresses, so
 * symbolize pcs[i] - 1 for them. Returns an enum unwind_end (>= 0; *n may
 * be > 0 whatever it is), or -1 if the arguments are invalid.
 */
int unwind_stack(struct unwind_ctx *u, const struct unwind_input *in,
		 uint64_t *pcs, size_t max, size_t *n);

/* What a frame of unwind_stack_kinds() is. */
enum unwind_frame_kind {
	UNWIND_FRAME_CODE = 0,		/* ordinary code */
	UNWIND_FRAME_TRAMPOLINE,	/* a CPython perf trampoline (no CFI, a
					 * copy of in->tramp): it
					 * only duplicates the Python frame its
					 * eval-loop call runs */
};

/* unwind_stack() that also writes each frame's enum unwind_frame_kind to
 * kinds[i] (kinds may be NULL). */
int unwind_stack_kinds(struct unwind_ctx *u, const struct unwind_input *in,
		       uint64_t *pcs, uint8_t *kinds, size_t max, size_t *n);

/* unwind_stack_kinds() that also writes each frame's stack pointer to
 * sps[i] (sps may be NULL): frame i spans [sps[i], sps[i + 1]), its
 * callee's CFA to its own. */
int unwind_stack_frames(struct unwind_ctx *u, const struct unwind_input *in,
			uint64_t *pcs, uint8_t *kinds, uint64_t *sps, size_t max, size_t *n);

const struct unwind_stats *unwind_get_stats(const struct unwind_ctx *u);

#endif
