/*
 * What a live session tells the user on stderr: the status line redrawn on
 * a terminal while sampling, and the summary at the end (-v: BPF counters,
 * caches, unwind tables). Reads counters; changes nothing.
 */
#ifndef REPORT_H
#define REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "ksym.h"
#include "pyperf.h"
#include "sample.h"

struct ktables;

/* The numbers a report is made of, gathered by the session. */
struct report_view {
	const struct config *cfg;
	const struct sample_sink *sink;		/* counters over the whole run */
	size_t stacks;				/* distinct stacks of the profile */
	int processes;				/* targets now */
	uint64_t processes_seen;		/* targets over the run */
	const uint64_t *bpf;			/* STAT__COUNT BPF counters */
	int64_t elapsed_ns;
	const struct ksym_table *ksym;		/* --kernel, else NULL */
	const struct ktables *kt;		/* --unwind kernel/both, else NULL */
	uint64_t batches, batches_early;	/* records are added a batch at a time */
};

/* One status line, drawn over the previous one; final ends it. */
void report_status(const struct report_view *v, int final);

/* The end-of-run summary (not with --quiet); -v adds the counters. */
void report_summary(const struct report_view *v);

/* With no sample over the whole run: prints why and what to do (even
 * with --quiet) and returns 1; else 0. */
int report_empty(const struct report_view *v);

#endif
