/*
 * The await chain as frames. The running task's frames are the sample's
 * own, down to its coroutine's frame: the one place the stack and the
 * chain meet (the coroutine's code object, rootmost on the stack, since
 * nothing rootward of a task's step runs its coroutine's code). Where the
 * other tasks wait is read from their suspended coroutines; their frames
 * are named by the same symbol cache as the sampled ones.
 */
#include "asyncstack.h"

#include <stdio.h>

/* "[task LABEL]" and the other markers: frames of no mapping. */
static uint64_t marker(const struct asyncstack_ctx *a, const char *name)
{
	uint64_t fid = profile_function(a->prof, name, "", "", 0);

	return fid ? profile_location(a->prof, 0, 0, fid, 0) : 0;
}

static uint64_t task_marker(const struct asyncstack_ctx *a, const char *label)
{
	char name[PYASYNCIO_LABEL_MAX + 8];

	snprintf(name, sizeof(name), "[task %s]", label);
	return marker(a, name);
}

/* A frame where a task waits; 0 when there is none to show (a coroutine
 * not started, a code object that cannot be read) or no memory. */
static uint64_t wait_frame(const struct asyncstack_ctx *a, const struct pyawait_frame *f)
{
	struct pyframe_info fi;
	uint64_t fid;

	if (!f->code || pysym_resolve(a->syms, a->t, f->code, f->lasti, f->self, f->tlbc, &fi))
		return 0;
	fid = profile_function(a->prof, fi.name, "", fi.filename, fi.firstlineno);
	return fid ? profile_location(a->prof, a->mid, 0, fid, fi.line > 0 ? fi.line : 0) : 0;
}

size_t asyncstack_apply(const struct asyncstack_ctx *a, uint64_t *locs, size_t n, size_t cap,
			size_t cut, const struct pyawait_chain *ch)
{
	size_t out = cut + 1;

	if (cut >= n || !ch->n)
		return n;
	for (size_t i = 0; i < ch->n && out < cap; i++) {
		const struct pyawait_link *k = &ch->l[i];

		/* An awaiting task's frames, innermost (leafward) first. */
		for (size_t j = i ? k->nframes : 0; j-- > 0 && out + 1 < cap;) {
			uint64_t loc = wait_frame(a, &k->f[j]);

			if (loc)
				locs[out++] = loc;
		}
		if (!(locs[out++] = task_marker(a, k->label)))
			return 0;
	}
	if (ch->end != PYAWAIT_ROOT && out < cap &&
	    !(locs[out++] = marker(a, ch->end == PYAWAIT_UNKNOWN ? "[awaited by ?]" :
						"[await chain cut]")))
		return 0;
	return out;
}

long asyncstack_cut(const uint64_t *locs, size_t n, const uint64_t *pylocs,
		    const uint64_t *pycodes, size_t np, uint64_t code)
{
	uint64_t loc = 0;

	for (size_t i = np; i-- > 0 && !loc;)
		if (pycodes[i] == code)
			loc = pylocs[i];
	for (size_t i = n; loc && i-- > 0;)
		if (locs[i] == loc)
			return (long)i;
	return -1;
}
