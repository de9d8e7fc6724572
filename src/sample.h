/* One BPF sample record -> one sample of the in-memory profile. */
#ifndef SAMPLE_H
#define SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"
#include "profile.h"
#include "pysym.h"
#include "pyversion.h"

struct sample_counts {
	uint64_t records;	/* records received */
	uint64_t malformed;	/* records too short or inconsistent */
	uint64_t no_python;	/* thread without a Python stack */
	uint64_t truncated;	/* stack deeper than the walk limit */
	uint64_t read_errors;	/* BPF could not read the whole chain */
	uint64_t bad_frames;	/* frames whose code object was unreadable */
	uint64_t max_depth;	/* deepest Python stack seen */
	uint64_t threads;	/* distinct thread ids seen (up to TID_SET_SIZE) */
};

#define TID_SET_SIZE 16384	/* bounded: counting stops when full */

struct sample_sink {
	struct profile *prof;
	struct pysym_cache *syms;
	struct sample_counts n;
	uint64_t locs[PYPERF_MAX_FRAMES + 2];	/* reused: no per-sample malloc */
	uint32_t tids[TID_SET_SIZE];		/* open addressing, 0 = empty */
};

/* Adds the record rec (size bytes, as read from the ring buffer) of target
 * t. Returns 0, or -1 on allocation failure. */
int sample_add(struct sample_sink *k, const struct py_target *t, const void *rec,
	       size_t size);

#endif
