/*
 * The Python stack of one thread of a target, read from user space with
 * process_vm_readv (through t->src): the BPF walk (bpf/pyperf.bpf.c,
 * walk_step) done without BPF, for a thread that is not running and so
 * cannot be sampled in its own context. Wall mode uses it for a thread
 * blocked since before the profiler started: no switch-out record ever
 * shows its stack.
 *
 * The frames go into a BPF-format record (bpf/pyperf.h, full layout), so
 * the pipeline symbolizes, merges and labels them like any sample. Same
 * frame decoding and verdicts as the BPF walk (py_frame_decode/classify/
 * flags), same anchors. Bounded: PYPERF_MAX_THREADS thread states,
 * PYPERF_MAX_FRAMES frames, a cycle check; every read checked.
 */
#ifndef PYWALK_H
#define PYWALK_H

#include <stdint.h>

#include "pyperf.h"
#include "pyversion.h"

/* x86_64 glibc: where struct pthread (pthread_self()) keeps the kernel
 * tid. Where thread states hold pthread_self() (<= 3.10), a thread state
 * belongs to tid when this word of its thread_id holds tid. */
#define PYWALK_PTHREAD_TID_OFF	0x2d0

/* The thread state of the thread whose tid, as the target sees it (its
 * PID namespace), is ns_tid; 0 if it has none (or the list is
 * unreadable: *err set). */
uint64_t pywalk_find_tstate(const struct py_target *t, uint32_t ns_tid, int *err);

/* Fills s->h.tstate, s->h.nframes, s->frames (full layout), the anchors
 * (s->anchors, s->na) and adds SAMPLE_F_* flags to s->h.flags as the BPF
 * walk would for thread ns_tid: NO_TSTATE / NO_INTERP, READ_ERR,
 * BAD_CHAIN, TRUNCATED, ANCHORED and the GIL's. */
void pywalk_thread(const struct py_target *t, uint32_t ns_tid, struct py_sample *s);

#endif
