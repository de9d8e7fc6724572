/*
 * --async: the stack of a sample that ran an asyncio task, with the event
 * loop's machinery (run, run_forever, _run_once, Handle._run, the task's
 * step) replaced by the task's await chain (src/python/pyawait.h).
 */
#ifndef ASYNCSTACK_H
#define ASYNCSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "pyawait.h"
#include "pysym.h"
#include "pyversion.h"

/* What the rewrite adds locations to. */
struct asyncstack_ctx {
	struct profile *prof;
	struct pysym_cache *syms;
	const struct py_target *t;
	uint64_t mid;			/* the interpreter's mapping */
};

/*
 * locs[0..n) (leaf first) holds at index cut the frame of the running
 * task's coroutine (ch->l[0]). Everything rootward of it is replaced by:
 * a marker "[task LABEL]" for that task, then for each task that awaits
 * it in turn the frame where that one is suspended and its marker; a
 * chain that ends at an awaiter not told exactly ends with "[awaited by
 * ?]", one cut at a cycle or the depth bound with "[await chain cut]".
 * At most cap locations. Returns the new count, 0 if out of memory.
 */
size_t asyncstack_apply(const struct asyncstack_ctx *a, uint64_t *locs, size_t n, size_t cap,
			size_t cut, const struct pyawait_chain *ch);

/*
 * The index in locs[0..n) to cut at: the rootmost place of the frame
 * whose location is the one of the rootmost Python frame running code
 * (pylocs[i], pycodes[i], leaf first, np of them). -1 when the stack does
 * not hold it (a sample between two steps of the task).
 */
long asyncstack_cut(const uint64_t *locs, size_t n, const uint64_t *pylocs,
		    const uint64_t *pycodes, size_t np, uint64_t code);

#endif
