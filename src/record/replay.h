/*
 * --replay FILE: feeds a recording (src/record/record.h) through sample_add() -
 * native unwinding, symbolization, the native/Python merge, the profile -
 * and the output writers, as a live session would have, offline: no BPF,
 * no root, no access to the recorded processes or their files.
 */
#ifndef REPLAY_H
#define REPLAY_H

#include <stdint.h>

#include "cli.h"
#include "native_diff.h"
#include "pipeline.h"
#include "record.h"

struct replay_stats {
	uint64_t samples;		/* records given to sample_add() */
	uint64_t skipped;		/* records of no (usable) target */
	uint64_t targets, bad_targets;	/* targets whose layout could not be rebuilt */
	uint64_t writes;
	uint64_t distinct;		/* distinct stacks of the last profile */
	/* Samples recorded with --unwind both (kernel pcs and a stack copy)
	 * compared again: the differential test on a recording. */
	struct native_diff diff;
};

/*
 * Replays r (rec_replay_begin() must have installed its hooks): targets,
 * samples and writes in recorded order, with the caches a live session
 * uses. A recording that ends without a final write gets one. verbose:
 * 0 prints only problems, > 0 each target too, < 0 nothing. all_native:
 * every native frame, no native_filter (the filter is the replayer's
 * choice, not the recording's). Returns 0,
 * or -1 when memory ran out or write failed (what was replayed until then
 * has been written).
 */
int replay_run(struct recording *r, pipeline_write_fn write, void *ctx, int verbose,
	       int all_native, struct replay_stats *st);

/* The --replay command: cfg->replay to cfg->out in cfg->format. Exit code. */
int replay_main(const struct config *cfg);

#endif
