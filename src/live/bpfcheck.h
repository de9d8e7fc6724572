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

/* Fewer checks than this are read at once, by process_vm_readv: the
 * program's answer wakes the reader once more (~30 us in this VM at 99
 * Hz, where a read of a few pages takes ~5-10 us), which pays off only
 * for many code objects (a deep program: dozens, each a page pinned). */
#define BPFCHECK_MIN	8

struct bpfcheck {
	struct py_check_req *req;	/* the program's; NULL: not available */
	struct py_check *slots;		/* PY_CHECK_SLOTS, shared with it */
	uint64_t gen;			/* of the request in flight */
	size_t n;			/* its slots; 0: none in flight */
	uint64_t issued_ns;		/* CLOCK_MONOTONIC */
	uint64_t addr[PY_CHECK_SLOTS];	/* scratch for bpfcheck_issue */
};

/* Asks the program for the checks pipeline_precheck noted (those of one
 * target), if there are BPFCHECK_MIN or more. Returns how many, 0 if
 * none, too few or not available. */
size_t bpfcheck_issue(struct bpfcheck *c, struct pipeline *pl, uint64_t now_ns);

/* Has the program answered every one? */
int bpfcheck_done(const struct bpfcheck *c);

/* Hands the answers so far to the pipeline and withdraws the request;
 * the unanswered ones are pipeline_precheck_end's to read. */
void bpfcheck_collect(struct bpfcheck *c, struct pipeline *pl);

#endif
