/*
 * Code-object checks answered by the BPF program (bpf/pyperf.h): the
 * checks a batch of records needs (pipeline_precheck) are written into
 * the program's request; it reads them when it next samples the target,
 * in the target's own context; the answers go back to the pipeline, and
 * pipeline_precheck_end reads whatever is left the usual way.
 */
#ifndef BPFCHECK_H
#define BPFCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"

struct pipeline;

struct bpfcheck {
	struct py_check_req *req;	/* the program's; NULL: not available */
	struct py_check *slots;		/* PY_CHECK_SLOTS, shared with it */
	uint64_t gen;			/* of the request in flight */
	size_t n;			/* its slots; 0: none in flight */
	uint64_t issued_ns;		/* CLOCK_MONOTONIC */
	uint64_t addr[PY_CHECK_SLOTS];	/* scratch for bpfcheck_issue */
};

/* Asks the program for the checks pipeline_precheck noted (those of one
 * target). Returns how many, 0 if none or not available. */
size_t bpfcheck_issue(struct bpfcheck *c, struct pipeline *pl, uint64_t now_ns);

/* Has the program answered every one? */
int bpfcheck_done(const struct bpfcheck *c);

/* Hands the answers so far to the pipeline and withdraws the request;
 * the unanswered ones are pipeline_precheck_end's to read. */
void bpfcheck_collect(struct bpfcheck *c, struct pipeline *pl);

#endif
