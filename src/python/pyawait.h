/*
 * The await graph of a CPython target's asyncio tasks, read from user
 * space (never stopping or writing to the target), for --async stacks:
 * from the task a sample ran, the task that awaits it, where that task
 * is suspended, the task that awaits that one ... up to the root task.
 *
 * Supported: the C Task and Future of _asyncio, CPython 3.7 to 3.13 GIL
 * builds (the futures' done-callbacks) and 3.14+ (the futures'
 * awaited_by, offsets from the AsyncioDebug section). A chain stops at a
 * task awaited by nothing (the root), at a task whose awaiter cannot be
 * told exactly (two tasks, or a link this reader does not follow), at a
 * cycle, or at PYAWAIT_DEPTH tasks.
 */
#ifndef PYAWAIT_H
#define PYAWAIT_H

#include <stddef.h>
#include <stdint.h>

#include "pyasyncio.h"
#include "pyversion.h"

#define PYAWAIT_DEPTH		16		/* tasks in one chain, at most */
#define PYAWAIT_TTL_NS		20000000ull	/* a task's awaiter and where it
						 * waits: re-read after 20 ms of
						 * sample time */
#define PYAWAIT_GONE_NS		1000000000ull	/* a task read at most this long
						 * before its process exited
						 * serves its last samples */

#define PYAWAIT_FRAMES		8		/* coroutines of one task shown */

/* A coroutine's frame as a frame record has it (bpf/pyperf.h). */
struct pyawait_frame {
	uint64_t code, lasti, self;
	uint32_t tlbc;
};

/* One task of a chain. */
struct pyawait_link {
	uint64_t task;			/* the task object */
	/* f[0]: the frame of the task's coroutine; f[1] that of the
	 * coroutine it awaits, and so on (a suspended task only): for the
	 * first task, whose frames the sample holds, f[0].code tells where
	 * they end; for the others, where each waits. nframes 0: no frame
	 * (a coroutine finished, or not a coroutine). */
	size_t nframes;
	struct pyawait_frame f[PYAWAIT_FRAMES];
	char label[PYASYNCIO_LABEL_MAX];	/* as the asyncio_task label */
};

enum pyawait_end {
	PYAWAIT_ROOT = 0,		/* the last task is awaited by none */
	PYAWAIT_UNKNOWN,		/* ... by what could not be told exactly */
	PYAWAIT_CUT,			/* a cycle or PYAWAIT_DEPTH tasks */
};

struct pyawait_chain {
	size_t n;
	struct pyawait_link l[PYAWAIT_DEPTH];
	int end;			/* enum pyawait_end */
};

struct pyawait_stats {
	uint64_t chains;	/* chains asked for */
	uint64_t reads;		/* tasks (re-)read from the target */
	uint64_t hits;		/* tasks answered from a fresh entry */
	uint64_t unknown;	/* chains ended at an awaiter not told exactly */
	uint64_t failed;	/* running tasks that could not be read */
	uint64_t gone;		/* tasks answered as last read: the process
				 * had exited (PYAWAIT_GONE_NS) */
	uint64_t refusals;	/* processes refused (layout or type size) */
};

struct pyawait_cache;

/* capacity: tasks kept (rounded up to a power of two). */
struct pyawait_cache *pyawait_cache_new(size_t capacity);
void pyawait_cache_free(struct pyawait_cache *c);
void pyawait_forget_pid(struct pyawait_cache *c, int pid);
void pyawait_get_stats(const struct pyawait_cache *c, struct pyawait_stats *st);

/*
 * The chain of task, a task t runs at sample time now_ns, into *out:
 * out->l[0] is task itself. 0 on success, -1 when task cannot be read as
 * a task (no chain: the sample keeps its stack).
 */
int pyawait_chain(struct pyawait_cache *c, const struct py_target *t, uint64_t task,
		  uint64_t now_ns, struct pyawait_chain *out);

#endif /* PYAWAIT_H */
