/*
 * Python-level facts about a target's threads, read from user space with
 * process_vm_readv (the target is never stopped or written to):
 *
 *  - the name of a thread's threading.Thread ("worker-alpha",
 *    "MainThread"), found as threading._active[ident]._name;
 *  - where the GIL is and which thread state holds it.
 *
 * Every read is checked and bounded; any failure gives "unknown" and the
 * caller falls back to what it had (the kernel's comm for names).
 */
#ifndef PYTHREAD_H
#define PYTHREAD_H

#include <stddef.h>
#include <stdint.h>

#include "pyoffsets.h"
#include "pyversion.h"

#define PYTHREAD_NAME_MAX	64		/* bytes kept of a name, NUL included */
#define PYTHREAD_TTL_NS		1000000000ull	/* a cached name is re-read after 1 s */

struct pythread_cache;

struct pythread_stats {
	uint64_t hits;		/* answered from the cache */
	uint64_t lookups;	/* names (re-)read from the target */
	uint64_t failures;	/* lookups that found no name (comm is used) */
	uint64_t evictions;	/* entries replaced while still fresh */
	uint64_t resolves;	/* sys.modules["threading"]._active searches */
};

/* capacity: thread entries kept (rounded up to a power of two). */
struct pythread_cache *pythread_cache_new(size_t capacity);
void pythread_cache_free(struct pythread_cache *c);

/*
 * The name of the thread whose PyThreadState is at tstate in t, or NULL
 * (use comm). Cached per (pid, tstate) for PYTHREAD_TTL_NS, failures too,
 * so a sample costs a hash lookup, and a thread about ten reads once a
 * second. now_ns is CLOCK_MONOTONIC (a sample's bpf_ktime_get_ns() time).
 * The string belongs to the cache: copy it before the next call. A name
 * changed in the target (thread.name = ...) shows within the TTL; a
 * thread state address reused by a new thread within the TTL keeps the
 * old thread's name until then.
 */
const char *pythread_cache_name(struct pythread_cache *c, const struct py_target *t,
				uint64_t tstate, uint64_t now_ns);

/* The scans of sys.modules of t's interpreter at interp, kept with its
 * thread names, for the other readers of its modules (pyasyncio.c): one
 * scan finds threading and asyncio.tasks. NULL when pid or interp is 0.
 * Valid until the next call on c. */
struct pyobj_modindex;
struct pyobj_modindex *pythread_modindex(struct pythread_cache *c, const struct py_target *t,
					 uint64_t interp);
/* pythread_tstate_ident() (below), with no read when c read them for
 * tstate at now_ns (pythread_cache_name() at the same sample). */
int pythread_cache_ident(struct pythread_cache *c, const struct py_target *t, uint64_t tstate,
			 uint64_t now_ns, uint64_t *interp, uint64_t *ident);
/* Forgets a process (it exited or exec'd). */
void pythread_forget_pid(struct pythread_cache *c, int pid);
void pythread_get_stats(const struct pythread_cache *c, struct pythread_stats *st);

/*
 * Absolute addresses, in the target, of what says who holds the GIL of
 * the first (main) interpreter; 0 for what the version lacks:
 *
 *   version     locked_addr / holder_addr            current_addr
 *   3.6         static gil_locked / gil_last_holder   _PyThreadState_Current
 *               (local symbols: 0 if stripped)
 *   3.7-3.11    _PyRuntime.ceval.gil.{locked,last_holder}
 *                                                     _PyRuntime.gilstate.
 *                                                     tstate_current
 *   3.12+       interp->ceval.gil->{locked,last_holder}   (none)
 *
 * Thread state S holds the GIL when *(int *)locked_addr == 1 and
 * *(PyThreadState **)holder_addr == S. last_holder is the last thread
 * state that took the GIL and is not cleared when it is released, hence
 * the locked test. take_gil() sets locked before last_holder, so for a few
 * instructions at a switch the previous holder is reported. current_addr
 * (<=3.11) is S while S holds the GIL and NULL while it is released (set
 * just after take_gil(), cleared just before drop_gil()). In 3.6, locked
 * is -1 until the first thread is started (PyEval_InitThreads creates the
 * GIL); only current_addr tells then. For 3.12+ the GIL pointer is read
 * once here: interp->ceval.gil of the main interpreter does not change
 * after start-up (subinterpreters with their own GIL are not covered).
 */
struct pythread_gil {
	uint64_t locked_addr;	/* int */
	uint64_t holder_addr;	/* PyThreadState * */
	uint64_t current_addr;	/* PyThreadState * */
	uint64_t enabled_addr;	/* free-threaded: int enabled (0: GIL off) */
};

/* 0 when at least one way to tell the holder was found. */
int pythread_gil_locate(const struct py_target *t, struct pythread_gil *g);

/* tstate->interp and tstate->thread_id (threading.get_ident()), for other
 * readers of a thread's Python objects (src/python/pyasyncio.c). 0 on
 * success. */
int pythread_tstate_ident(const struct py_target *t, uint64_t tstate, uint64_t *interp,
			  uint64_t *ident);

#endif /* PYTHREAD_H */
