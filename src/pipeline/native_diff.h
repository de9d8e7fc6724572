/*
 * --unwind both: the native stack of one sample unwound twice, in BPF from
 * the tables and by libunwind over the copied stack, compared frame for
 * frame. Disagreements are counted by the object the first differing
 * frame lies in (the kernel's pc there, else libunwind's).
 */
#ifndef NATIVE_DIFF_H
#define NATIVE_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define NATIVE_DIFF_OBJS	32	/* objects listed; the rest are "other" */
#define NATIVE_DIFF_PATH	128

struct native_diff {
	uint64_t stacks, agree;
	uint64_t frames_kernel, frames_user;
	uint64_t not_loaded;		/* the BPF walk met an unloaded mapping */
	struct {
		char path[NATIVE_DIFF_PATH];
		uint64_t n;
		uint64_t example[2];	/* kernel and user pc of one case */
	} obj[NATIVE_DIFF_OBJS];
	size_t nobj;
	uint64_t other;			/* disagreements past the list */
};

/*
 * Compares kernel pcs kp[0..nk) with user pcs up[0..nu). truncated: one
 * side stopped at its frame limit, so only the common depth counts.
 * object_of(ctx, pc) names the object holding pc. Returns 1 if they agree.
 */
int native_diff_add(struct native_diff *d, const uint64_t *kp, size_t nk, const uint64_t *up,
		    size_t nu, int truncated, int not_loaded,
		    const char *(*object_of)(void *ctx, uint64_t pc), void *ctx);

/* The summary lines ("pyperf-pprof: unwind diff: ...") to out, live or
 * replayed alike. */
void native_diff_print(const struct native_diff *d, FILE *out);

#endif
