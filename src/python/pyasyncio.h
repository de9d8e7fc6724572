/*
 * The asyncio task a thread of a CPython target is running, read from
 * user space (never stopping or writing to the target), for the
 * `asyncio_task` sample label.
 *
 * The label is the task's name ("fetch-users"). A task left with its
 * default name "Task-<n>" (or a 3.7 task, which has no name) is labelled
 * "Task-* (<coroutine qualname>)", e.g. "Task-* (Server.handle)": the
 * counter is dropped so the label stays low in cardinality however many
 * tasks a program starts; the coroutine says what the task does.
 *
 * Supported: CPython 3.7 to 3.13 GIL builds, the C Task of _asyncio and the
 * pure-Python Task (asyncio.tasks._PyTask), on loops that keep
 * `_thread_id` in their instance dict (asyncio's own loops; not uvloop).
 * CPython 3.14+ (GIL and free-threaded): the C Task the thread state
 * says its thread runs, through the AsyncioDebug section
 * (src/python/pyasyncio_debug.c), on any loop.
 */
#ifndef PYASYNCIO_H
#define PYASYNCIO_H

#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"
#include "pyversion.h"

#define PYASYNCIO_LABEL_MAX	96		/* bytes of a label, NUL included */
#define PYASYNCIO_TTL_NS	5000000ull	/* a thread's current task: re-read
						 * after 5 ms of sample time */
#define PYASYNCIO_LOOP_TTL_NS	1000000000ull	/* which loop runs in which
						 * thread: re-read after 1 s */

/*
 * The label of a task named name (NULL: no name, 3.7; default: the name
 * is asyncio's "Task-<n>" or a 3.12+ not yet formatted counter) running a
 * coroutine whose __qualname__ is qualname (NULL or "": unknown). Pure.
 */
void pyasyncio_format(char *buf, size_t len, const char *name, int is_default,
		      const char *qualname);

/* 1 when s is what asyncio names a task by default: "Task-" and digits. */
int pyasyncio_default_name(const char *s);

/*
 * Uncached: the label of the task the thread of thread state tstate is
 * running now, and in *code (may be NULL) its coroutine's code object.
 * 0 on success, 1 when the thread runs no task now (no loop, or the loop
 * is between tasks), -1 when unreadable or unsupported.
 */
int pyasyncio_task(const struct py_target *t, uint64_t tstate, char *buf, size_t len,
		   uint64_t *code);

struct pyasyncio_cache;

struct pyasyncio_stats {
	uint64_t hits;		/* answered from a fresh entry */
	uint64_t lookups;	/* current tasks (re-)read from the target */
	uint64_t labelled;	/* samples that got a label */
	uint64_t mismatches;	/* the stack did not hold the current task's
				 * coroutine: an earlier task or none */
	uint64_t evictions;	/* thread entries replaced while fresh */
	uint64_t refusals;	/* a Task or coroutine type of the wrong size */
	uint64_t captured;	/* samples labelled from the BPF program's
				 * capture of their running task */
	uint64_t capture_refused;	/* captures not a C Task, or whose name
					 * or qualname is no str */
};

/* capacity: threads kept (rounded up to a power of two). */
struct pyasyncio_cache *pyasyncio_cache_new(size_t capacity);
void pyasyncio_cache_free(struct pyasyncio_cache *c);
/* Searches sys.modules with the thread-name cache threads (NULL: alone):
 * one scan of a new process's modules then serves both. */
struct pythread_cache;
void pyasyncio_cache_share(struct pyasyncio_cache *c, struct pythread_cache *threads);
void pyasyncio_forget_pid(struct pyasyncio_cache *c, int pid);
void pyasyncio_get_stats(const struct pyasyncio_cache *c, struct pyasyncio_stats *st);

/*
 * The label for a sample of thread tid (thread state tstate) of t whose
 * Python frames run the code objects codes[0..ncodes), or NULL (no task),
 * for a sample the BPF program captured no task for. Also where the task
 * sources (pyasyncio_task_srcs) are found. The current task is read at
 * most once per PYASYNCIO_TTL_NS of sample time (now_ns) per thread; it is
 * read when the sample is processed, ms after it was taken, so only a
 * pure-Python task (which the program cannot read) is labelled this way,
 * and only when the stack holds its coroutine; else the thread's last few
 * such tasks are tried the same way (an unambiguous match among them
 * wins). A C Task gets NULL here: only its capture names it. The string
 * belongs to the cache: copy it before the next call.
 */
const char *pyasyncio_cache_task(struct pyasyncio_cache *c, const struct py_target *t,
				 uint32_t tid, uint64_t tstate, const uint64_t *codes,
				 size_t ncodes, uint64_t now_ns);

/* The same, and in *task the task object the label names (0 when there
 * is no label, or tasks of that label ran and which one is not known):
 * what --async starts a sample's await chain from (pyawait.h). */
const char *pyasyncio_cache_task_at(struct pyasyncio_cache *c, const struct py_target *t,
				    uint32_t tid, uint64_t tstate, const uint64_t *codes,
				    size_t ncodes, uint64_t now_ns, uint64_t *task);

/*
 * The label of the task the BPF program found running at a sample of
 * thread tid (thread state tstate) of t, from what it copied then (struct
 * py_task_capture, bpf/pyperf.h), or NULL: not a C Task, or names that are
 * no str. Exact: nothing is read of the task or its coroutine now. The
 * string belongs to the cache: copy it before the next call.
 */
const char *pyasyncio_cache_capture(struct pyasyncio_cache *c, const struct py_target *t,
				    uint32_t tid, uint64_t tstate,
				    const struct py_task_capture *cap, uint64_t now_ns);

/*
 * Where the BPF program finds the running tasks of each process
 * (struct py_task_src), for those whose source was found or changed since
 * the last call: at most max into pids[] and srcs[]; their count. The
 * caller (the live session) writes them into the program's map.
 */
size_t pyasyncio_task_srcs(struct pyasyncio_cache *c, int *pids, struct py_task_src *srcs,
			   size_t max);

#endif /* PYASYNCIO_H */
