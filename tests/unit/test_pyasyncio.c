/*
 * test_pyasyncio format
 * test_pyasyncio layout MINOR
 * test_pyasyncio live PID MAIN SIDE c|py
 * test_pyasyncio refuse PID MINOR
 *
 *   format  the label format and the default-name test (pure);
 *   layout  prints the offset table row of 3.MINOR (13t: of the
 *           free-threaded build), "field value" per
 *           line, for tests/unit/test_pyasyncio.sh to compare with DWARF;
 *   live    PID runs tests/workloads/asyncio_tasks.py --side-thread with
 *           a turn so long that the first task of each thread burns CPU
 *           for the whole test: both thread states are resolved to their
 *           current task, uncached; one must be labelled MAIN, the other
 *           SIDE (each loop is matched to its own thread), both with a
 *           coroutine code object. Then through the cache: a stack
 *           holding MAIN's coroutine gets MAIN, a stack without it none.
 *   refuse  the same workload (C Task) read with the table of 3.MINOR,
 *           whose _asyncio.Task size differs: every thread is refused,
 *           uncached and cached, and nothing is labelled.
 *
 * One "ok ..." / "FAIL ..." line per check. Exit 0 all ok, 1 a check
 * failed, 2 usage.
 */
#include "check.h"
#include "objcache.h"
#include "pyasyncio.h"
#include "pylayout.h"
#include "pythread.h"
#include "pyversion.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXTS	64

static void format_checks(void)
{
	char b[PYASYNCIO_LABEL_MAX];

	check(pyasyncio_default_name("Task-1") && pyasyncio_default_name("Task-123456"),
	      "Task-<digits> is a default name");
	check(!pyasyncio_default_name("Task-") && !pyasyncio_default_name("Task-1a") &&
	      !pyasyncio_default_name("task-1") && !pyasyncio_default_name("fetch"),
	      "other names are not");
	pyasyncio_format(b, sizeof(b), "fetch-users", 0, "Server.fetch");
	check(!strcmp(b, "fetch-users"), "a named task: its name (%s)", b);
	pyasyncio_format(b, sizeof(b), "Task-7", 1, "Server.handle");
	check(!strcmp(b, "Task-* (Server.handle)"), "a default name: Task-* and the coroutine (%s)", b);
	pyasyncio_format(b, sizeof(b), NULL, 1, "worker");
	check(!strcmp(b, "Task-* (worker)"), "no name (3.7): the same (%s)", b);
	pyasyncio_format(b, sizeof(b), "Task-7", 1, "");
	check(!strcmp(b, "Task-*"), "unknown coroutine: Task-* (%s)", b);
	pyasyncio_format(b, 12, "a-very-long-task-name", 0, NULL);
	check(!strcmp(b, "a-very-long"), "truncated to the buffer (%s)", b);
}

/* minor: "13", or "13t" for the free-threaded build's row. */
static int layout(const char *minor)
{
	char *end;
	unsigned m = (unsigned)strtoul(minor, &end, 10);
	const struct py_row *r = py_row_find(m, *end == 't');
	const struct pyasyncio_layout *l = r ? r->asyncio : NULL;

	if (!l) {
		printf("FAIL no table row for 3.%s\n", minor);
		return 1;
	}
	printf("task_size %u\ntask_coro %u\ntask_name %u\ncoro_size %u\ncr_code %u\n"
	       "cr_qualname %u\ncr_iframe %u\ntype_base %u\n", l->task_size, l->task_coro,
	       l->task_name, l->coro_size, l->cr_code, l->cr_qualname, l->cr_iframe,
	       l->type_base);
	return 0;
}

/* The thread states of t's first interpreter, in list order, with their
 * thread_id (threading.get_ident()); at most max. -1 if unreadable. */
static int tstates(const struct py_target *t, uint64_t *ts, uint64_t *idents, size_t max)
{
	const struct py_walk_offsets *w = &t->layout.walk;
	uint64_t interp = 0, at = 0;
	size_t n = 0;

	if (target_read(t->src, t->pid, t->bpf.interp_head_addr, &interp, 8) || !interp ||
	    target_read(t->src, t->pid, interp + w->interp_tstate_head, &at, 8))
		return -1;
	while (at && n < max) {
		uint64_t id = 0;

		if (target_read(t->src, t->pid, at + w->ts_thread_id, &id, 8))
			return -1;
		ts[n] = at;
		idents[n++] = id;
		if (target_read(t->src, t->pid, at + w->ts_next, &at, 8))
			return -1;
	}
	return (int)n;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Through the cache: a pure-Python task's label needs its coroutine in
 * the stack; a C Task gets none read late (the BPF program's capture
 * names it, issue 23), coroutine in the stack or not. */
static void cached_checks(const struct py_target *t, uint64_t tstate, uint64_t code,
			  const char *want, int c_task)
{
	struct pyasyncio_cache *c = pyasyncio_cache_new(16);
	uint64_t with[3] = { 0x1000, code, 0x2000 }, without[2] = { 0x1000, 0x2000 };
	const char *l;

	if (!c) {
		check(0, "pyasyncio_cache_new");
		return;
	}
	l = pyasyncio_cache_task(c, t, 1, tstate, with, 3, now_ns());
	if (c_task)
		check(!l, "cached: a C Task gets no label read late (%s)", l ? l : "none");
	else
		check(l && !strcmp(l, want), "cached: a stack holding the coroutine gets %s (%s)",
		      want, l ? l : "none");
	l = pyasyncio_cache_task(c, t, 1, tstate, without, 2, now_ns());
	check(!l, "cached: a stack without it gets none (%s)", l ? l : "none");
	pyasyncio_cache_free(c);
}

/* pyversion_detect() with the object layer the target's files are opened
 * through; the layer lives as long as the test process. */
static int detect(long pid, struct py_target *t, char *err, size_t errlen)
{
	static struct objcache *oc;

	if (!oc)
		oc = objcache_new(NULL);
	if (!oc) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return pyversion_detect(target_src_live(), oc, (pid_t)pid, t, err, errlen);
}

/* want: the labels of the main thread's and the side thread's task. */
static int live(long pid, const char *want_main, const char *want_side, int c_task)
{
	uint64_t ts[MAXTS], ids[MAXTS], code = 0, task_ts = 0;
	struct py_target t;
	char err[512], buf[PYASYNCIO_LABEL_MAX];
	int n, main_seen = 0, side_seen = 0;

	if (detect(pid, &t, err, sizeof(err))) {
		printf("FAIL pyversion_detect: %s\n", err);
		return 1;
	}
	n = tstates(&t, ts, ids, MAXTS);
	check(n == 2, "%d thread states (main and side)", n);
	for (int i = 0; i < n; i++) {
		uint64_t c = 0;
		int r = pyasyncio_task(&t, ts[i], buf, sizeof(buf), &c);

		printf("# thread state %#llx: %s\n", (unsigned long long)ts[i],
		       r == 0 ? buf : r == 1 ? "(no task)" : "(unreadable)");
		check(r == 0 && c != 0, "thread state %d runs a task with a coroutine code object", i);
		if (r)
			continue;
		if (!strcmp(buf, want_main)) {
			main_seen++;
			code = c;
			task_ts = ts[i];
		} else if (!strcmp(buf, want_side)) {
			side_seen++;
		}
	}
	check(main_seen == 1 && side_seen == 1,
	      "each thread gets its own loop's task: %s once (%d), %s once (%d)", want_main,
	      main_seen, want_side, side_seen);
	if (task_ts)
		cached_checks(&t, task_ts, code, want_main, c_task);
	return 0;
}

/* The target read with the table of 3.minor, whose Task size differs:
 * every lookup must be refused, none labelled. */
static int refuse(long pid, unsigned minor)
{
	uint64_t ts[MAXTS], ids[MAXTS], code = 1, codes[1];
	struct pyasyncio_cache *c = pyasyncio_cache_new(16);
	struct pyasyncio_stats st;
	struct py_target t;
	char err[512], buf[PYASYNCIO_LABEL_MAX];
	int n, refused = 0, labelled = 0;

	if (!c || detect(pid, &t, err, sizeof(err))) {
		printf("FAIL pyversion_detect: %s\n", c ? err : "out of memory");
		return 1;
	}
	printf("# a 3.%u target read with the 3.%u table\n", t.minor, minor);
	/* The layout says which offsets are read, not the version number. */
	if (!py_row_find(minor, 0) || !py_row_find(minor, 0)->asyncio) {
		printf("FAIL no asyncio table for 3.%u\n", minor);
		return 1;
	}
	t.layout.asyncio_kind = PY_ASYNCIO_TABLE;
	t.layout.asyncio = *py_row_find(minor, 0)->asyncio;
	n = tstates(&t, ts, ids, MAXTS);
	for (int i = 0; i < n; i++) {
		refused += pyasyncio_task(&t, ts[i], buf, sizeof(buf), &code) == -1;
		codes[0] = code;
		labelled += pyasyncio_cache_task(c, &t, (uint32_t)i + 1, ts[i], codes, 1, 1) != NULL;
	}
	pyasyncio_get_stats(c, &st);
	check(n > 0 && refused == n, "uncached: %d of %d thread states refused", refused, n);
	check(labelled == 0 && st.refusals > 0, "cached: %d labelled, %llu refusals", labelled,
	      (unsigned long long)st.refusals);
	pyasyncio_cache_free(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "format")) {
		format_checks();
	} else if (argc == 3 && !strcmp(argv[1], "layout")) {
		return layout(argv[2]);
	} else if (argc == 4 && !strcmp(argv[1], "refuse")) {
		if (refuse(strtol(argv[2], NULL, 10), (unsigned)strtoul(argv[3], NULL, 10)))
			return 1;
	} else if (argc == 6 && !strcmp(argv[1], "live")) {
		if (live(strtol(argv[2], NULL, 10), argv[3], argv[4], !strcmp(argv[5], "c")))
			return 1;
	} else {
		fprintf(stderr, "usage: test_pyasyncio format | layout MINOR | live PID MAIN SIDE c|py | refuse PID MINOR\n");
		return 2;
	}
	return check_failed ? 1 : 0;
}
