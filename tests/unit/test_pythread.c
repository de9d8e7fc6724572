/*
 * test_pythread names|gil PID OUTFILE
 *
 * Live checks of src/python/pythread.c against a running
 * tests/workloads/named_threads.py whose standard output is OUTFILE (it
 * prints "ready" and one JSON line per thread: name, ident, native_id).
 *
 *   names  every thread state of the interpreter is resolved to its
 *          threading.Thread name, uncached (by thread state, and by ident
 *          through a fake thread state the test's memory source serves)
 *          and through the cache; the names must be the ones the workload
 *          printed (MainThread, worker-alpha, worker-beta, worker-gamma).
 *          A 3.13+ layout read from _Py_DebugOffsets is also compared with
 *          the generated table for the fields both give.
 *   gil    reads who holds the GIL a few thousand times: the holder must
 *          always be one of the thread states, and every busy worker must
 *          be seen holding it. Up to 3.11 the two ways of telling
 *          (gilstate.tstate_current and gil.locked + last_holder) are
 *          compared too.
 *
 * One "ok ..." / "FAIL ..." line per check, "# ..." for information.
 * Exit 0 all ok, 1 a check failed, 77 cannot test here, 2 usage.
 */
#define _GNU_SOURCE
#include "check.h"
#include "objcache.h"
#include "pyoffsets.h"
#include "pyobj.h"
#include "pythread.h"
#include "pyversion.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

#define NEXPECT	4
#define MAXTS	64

struct expect {
	char name[64];
	uint64_t ident;
	long native_id;
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* CPU time of this thread: the busy workload makes wall time meaningless
 * on a small machine. */
static uint64_t cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/*
 * The target is read through this source: the live one, with the reads of
 * target memory counted, and with a fake thread state of our making
 * served at FAKE_TSTATE (an address the target does not map), so a
 * lookup of any interpreter and thread ident can be asked for through the
 * thread state path the profiler uses.
 */
#define FAKE_TSTATE	0x10000000ull

struct fake_src {
	const struct target_src *live;
	uint8_t tstate[1024];
};

static unsigned long nreads;

static ssize_t counting_readv(void *ctx, pid_t pid, const struct iovec *local,
			      unsigned long nlocal, const struct iovec *remote,
			      unsigned long nremote)
{
	struct fake_src *f = ctx;
	uint64_t at = (uint64_t)(uintptr_t)remote[0].iov_base;

	nreads++;
	if (nlocal == 1 && nremote == 1 && at >= FAKE_TSTATE &&
	    at - FAKE_TSTATE + remote[0].iov_len <= sizeof(f->tstate) &&
	    local[0].iov_len == remote[0].iov_len) {
		memcpy(local[0].iov_base, f->tstate + (at - FAKE_TSTATE), local[0].iov_len);
		return (ssize_t)local[0].iov_len;
	}
	return target_readv(f->live, pid, local, nlocal, remote, nremote);
}

static char *counting_read_file(void *ctx, const char *path, size_t max, size_t *len)
{
	return target_read_file(((struct fake_src *)ctx)->live, path, max, len);
}

static void counting_map_file(void *ctx, pid_t pid, const struct proc_map *m, char *buf,
			      size_t len)
{
	target_map_file(((struct fake_src *)ctx)->live, pid, m, buf, len);
}

static struct elf_file *counting_open_elf(void *ctx, const char *path)
{
	return target_open_elf(((struct fake_src *)ctx)->live, path);
}

static const struct target_src_ops counting_ops = {
	.readv = counting_readv,
	.read_file = counting_read_file,
	.map_file = counting_map_file,
	.open_elf = counting_open_elf,
};

/* {"name": "worker-alpha", "ident": 1398..., "native_id": 4242} */
static int parse_line(const char *line, struct expect *e)
{
	const char *p = strstr(line, "\"name\": \""), *q;
	size_t n;

	if (!p)
		return -1;
	p += 9;
	q = strchr(p, '"');
	if (!q || (n = (size_t)(q - p)) >= sizeof(e->name))
		return -1;
	memcpy(e->name, p, n);
	e->name[n] = '\0';
	p = strstr(line, "\"ident\": ");
	if (!p)
		return -1;
	e->ident = strtoull(p + 9, NULL, 10);
	p = strstr(line, "\"native_id\": ");
	e->native_id = p ? strtol(p + 13, NULL, 10) : 0;
	return e->ident ? 0 : -1;
}

/* Waits (at most 30 s) for the workload's NEXPECT JSON lines. */
static int read_expect(const char *path, struct expect *ex)
{
	for (int tries = 0; tries < 300; tries++) {
		FILE *f = fopen(path, "r");
		char line[512];
		int n = 0;

		if (f) {
			while (n < NEXPECT && fgets(line, sizeof(line), f))
				if (parse_line(line, &ex[n]) == 0)
					n++;
			fclose(f);
		}
		if (n == NEXPECT)
			return 0;
		usleep(100000);
	}
	return -1;
}

static const char *name_of(const struct expect *ex, uint64_t ident)
{
	for (int i = 0; i < NEXPECT; i++)
		if (ex[i].ident == ident)
			return ex[i].name;
	return NULL;
}

/* The new layout fields a _Py_DebugOffsets table gives, against the
 * generated entry of the same minor version. */
static void compare_debug_layout(const struct py_target *t)
{
	const struct py_layout *gen = py_layout_find(t->major, t->minor, t->layout.free_threaded);
	const struct { const char *name; uint16_t got, want; } f[] = {
#define F(m) { #m, t->layout.m, gen ? gen->m : 0 }
		F(obj.ts_interp), F(obj.interp_modules), F(obj.type_flags), F(obj.dict_keys),
		F(obj.dict_values), F(obj.long_size), F(obj.long_digit),
		F(gil.interp_ceval_gil), F(gil.interp_gil), F(gil.locked), F(gil.last_holder),
#undef F
	};

	if (!t->layout.source || !strstr(t->layout.source, "_Py_DebugOffsets"))
		return;
	if (!gen) {
		printf("# no generated %u.%u entry to compare _Py_DebugOffsets with\n", t->major,
		       t->minor);
		return;
	}
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		check(f[i].got == f[i].want, "_Py_DebugOffsets %s = %u, generated table %u",
		      f[i].name, f[i].got, f[i].want);
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

/* Who holds the GIL now, as pythread_gil_locate() tells where to look: 1
 * and *holder, 0 when free, -1 when unreadable. locked + last_holder when
 * known and initialised, else current_addr (see pythread.h). */
static int gil_holder(const struct py_target *t, const struct pythread_gil *g, uint64_t *holder)
{
	*holder = 0;
	if (g->locked_addr && g->holder_addr) {
		int32_t locked;
		uint64_t last;

		if (target_read(t->src, t->pid, g->locked_addr, &locked, sizeof(locked)) ||
		    target_read(t->src, t->pid, g->holder_addr, &last, sizeof(last)))
			return -1;
		if (locked == 0)
			return 0;
		if (locked == 1) {
			*holder = last;
			return last ? 1 : 0;
		}
		/* 3.6 before the GIL exists (-1): ask current_addr. */
	}
	if (g->current_addr) {
		if (target_read(t->src, t->pid, g->current_addr, holder, sizeof(*holder)))
			return -1;
		return *holder ? 1 : 0;
	}
	return -1;
}

/* Uncached: asked as a new process with the pid (another start time),
 * so threading._active is searched again. */
static const char *uncached_name(struct pythread_cache *c, const struct py_target *t,
				 uint64_t tstate)
{
	static struct py_target u;
	static uint64_t gen;

	u = *t;
	u.start_time = t->start_time + ++gen;
	return pythread_cache_name(c, &u, tstate, now_ns());
}

/* The name of thread ident of interpreter interp, asked for through the
 * fake thread state: no real thread state is involved. */
static const char *name_by_ident(struct pythread_cache *c, const struct py_target *t,
				 uint64_t interp, uint64_t ident)
{
	struct fake_src *f = t->src->ctx;
	struct py_object_offsets o;
	struct py_gil_offsets g;

	if (pyobj_offsets(t, &o, &g) || o.ts_interp + 8u > sizeof(f->tstate) ||
	    t->layout.walk.ts_thread_id + 8u > sizeof(f->tstate))
		return NULL;
	memset(f->tstate, 0, sizeof(f->tstate));
	memcpy(f->tstate + o.ts_interp, &interp, 8);
	memcpy(f->tstate + t->layout.walk.ts_thread_id, &ident, 8);
	return uncached_name(c, t, FAKE_TSTATE);
}

/* sys.modules searched for a module the workload lacks (asyncio.tasks):
 * the second search reads only the dict, not its keys again
 * (pyobj_module_find); threading is found by the same scan, the same
 * module as a plain lookup finds, with no key read. */
static void check_module_search(const struct py_target *t, uint64_t interp)
{
	struct pyobj_modindex mi = { 0 };
	struct pyobj_dhead h;
	struct pyobj_ctx c;
	unsigned long first, again, found;
	uint64_t modules, mod;

	if (pyobj_ctx_init(&c, t) || target_read(t->src, t->pid, interp + c.o.interp_modules,
						 &modules, 8) || pyobj_dict_head(&c, modules, &h))
		return;
	nreads = 0;
	mod = pyobj_module_find(&c, &h, PYOBJ_MOD_ASYNCIO_TASKS, &mi, NULL);
	first = nreads;
	nreads = 0;
	mod |= pyobj_module_find(&c, &h, PYOBJ_MOD_ASYNCIO_TASKS, &mi, NULL);
	again = nreads;
	check(!mod && mi.done > 0 && again < first && again <= 2,
	      "a module not imported: %lu reads, then %lu (the keys are not read again)", first,
	      again);
	nreads = 0;
	mod = pyobj_module_find(&c, &h, PYOBJ_MOD_THREADING, &mi, NULL);
	found = nreads;
	check(mod && mod == pyobj_dict_get_str(&c, modules, "threading", NULL, NULL) && found <= 2,
	      "threading found by the same scan (%lu reads) as by a lookup", found);
}

static int run_names(const struct py_target *t, const struct expect *ex)
{
	uint64_t ts[MAXTS], ids[MAXTS], t0, interp = 0;
	struct pythread_cache *cache, *ucache;
	struct pythread_stats st;
	struct py_object_offsets o;
	struct py_gil_offsets g;
	const char *r;
	int n, found = 0, reps = 200;

	compare_debug_layout(t);
	check(pyobj_offsets(t, &o, &g) == 0, "object offsets complete for %u.%u (%s)",
	      t->major, t->minor, t->layout.source);
	n = tstates(t, ts, ids, MAXTS);
	check(n >= NEXPECT, "%d thread states in the interpreter (expected >= %d)", n, NEXPECT);
	if (n <= 0 || target_read(t->src, t->pid, ts[0] + o.ts_interp, &interp, 8))
		return 1;
	cache = pythread_cache_new(256);
	ucache = pythread_cache_new(256);
	for (int i = 0; i < n; i++) {
		const char *want = name_of(ex, ids[i]);
		const char *cached;

		if (!want) {
			printf("# thread state 0x%llx ident %llu is not one of the workload's\n",
			       (unsigned long long)ts[i], (unsigned long long)ids[i]);
			continue;
		}
		found++;
		r = uncached_name(ucache, t, ts[i]);
		check(r && strcmp(r, want) == 0,
		      "tstate 0x%llx ident %llu, uncached: \"%s\", expected \"%s\"",
		      (unsigned long long)ts[i], (unsigned long long)ids[i], r ? r : "(NULL)", want);
		r = name_by_ident(ucache, t, interp, ids[i]);
		check(r && strcmp(r, want) == 0, "ident %llu alone: \"%s\"",
		      (unsigned long long)ids[i], r ? r : "(NULL)");
		cached = pythread_cache_name(cache, t, ts[i], now_ns());
		check(cached && strcmp(cached, want) == 0, "cached name of tstate 0x%llx: \"%s\"",
		      (unsigned long long)ts[i], cached ? cached : "(NULL)");
	}
	check(found == NEXPECT, "all %d workload threads have a thread state (%d found)",
	      NEXPECT, found);
	check(name_by_ident(ucache, t, interp, 12345) == NULL, "an ident no thread has: no name");
	check_module_search(t, interp);

	/* Costs, in CPU time and target reads: uncached lookups, cache hits,
	 * and refreshes (what each thread costs once per TTL). */
	t0 = cpu_ns();
	nreads = 0;
	for (int k = 0; k < reps; k++)
		uncached_name(ucache, t, ts[0]);
	printf("# uncached lookup: %.1f us CPU, %.1f reads per call\n",
	       (double)(cpu_ns() - t0) / reps / 1000.0, (double)nreads / reps);
	t0 = cpu_ns();
	nreads = 0;
	for (int k = 0; k < 100000; k++)
		pythread_cache_name(cache, t, ts[k % n], now_ns());
	printf("# pythread_cache_name, hits: %.3f us CPU, %lu reads in 100000 calls\n",
	       (double)(cpu_ns() - t0) / 100000 / 1000.0, nreads);
	{
		uint64_t fake = now_ns() + 10 * PYTHREAD_TTL_NS;

		t0 = cpu_ns();
		nreads = 0;
		for (int k = 0; k < reps; k++) {
			fake += PYTHREAD_TTL_NS;
			pythread_cache_name(cache, t, ts[k % n], fake);
		}
		printf("# pythread_cache_name, refresh after the TTL: %.1f us CPU, %.1f reads per call\n",
		       (double)(cpu_ns() - t0) / reps / 1000.0, (double)nreads / reps);
	}
	pythread_get_stats(cache, &st);
	printf("# cache: hits %llu lookups %llu failures %llu resolves %llu evictions %llu\n",
	       (unsigned long long)st.hits, (unsigned long long)st.lookups,
	       (unsigned long long)st.failures, (unsigned long long)st.resolves,
	       (unsigned long long)st.evictions);
	check(st.resolves == 1, "threading._active searched once for the whole run (%llu)",
	      (unsigned long long)st.resolves);
	pythread_forget_pid(cache, t->pid);
	pythread_cache_free(cache);
	pythread_cache_free(ucache);
	return 0;
}

static int run_gil(const struct py_target *t, const struct expect *ex)
{
	uint64_t ts[MAXTS], ids[MAXTS];
	unsigned held[MAXTS] = { 0 }, freeg = 0, bad = 0, errs = 0, agree = 0, compared = 0;
	unsigned nreads = 3000;
	struct pythread_gil g;
	int n;

	int located = pythread_gil_locate(t, &g);

	check(located == 0, "GIL located: locked 0x%llx last_holder 0x%llx current 0x%llx",
	      (unsigned long long)g.locked_addr, (unsigned long long)g.holder_addr,
	      (unsigned long long)g.current_addr);
	n = tstates(t, ts, ids, MAXTS);
	if (n < NEXPECT) {
		check(0, "%d thread states", n);
		return 1;
	}
	for (unsigned k = 0; k < nreads; k++) {
		uint64_t h, cur = 0;
		int r = gil_holder(t, &g, &h);
		int i;

		if (r < 0) {
			errs++;
			continue;
		}
		if (r == 0) {
			freeg++;
		} else {
			for (i = 0; i < n && ts[i] != h; i++)
				;
			if (i < n)
				held[i]++;
			else
				bad++;
		}
		/* <=3.11: the current thread state tells the same. */
		if (g.current_addr && g.locked_addr) {
			struct pythread_gil only = { .current_addr = g.current_addr };
			uint64_t h2;
			int r2 = gil_holder(t, &only, &h2);

			if (r2 >= 0) {
				compared++;
				cur = r2 ? h2 : 0;
				agree += cur == (r ? h : 0);
			}
		}
		usleep(300);
	}
	for (int i = 0; i < n; i++) {
		const char *nm = name_of(ex, ids[i]);

		printf("# %-14s tstate 0x%llx held the GIL in %u of %u reads\n", nm ? nm : "?",
		       (unsigned long long)ts[i], held[i], nreads);
		if (nm && strncmp(nm, "worker-", 7) == 0)
			check(held[i] > 0, "%s was seen holding the GIL (%u times)", nm, held[i]);
	}
	printf("# GIL free in %u reads, unreadable %u\n", freeg, errs);
	check(errs == 0, "every GIL read succeeded (%u failed)", errs);
	check(bad == 0, "the holder was always one of the %d thread states (%u reads not)", n,
	      bad);
	if (compared)
		printf("# current tstate and locked/last_holder agree in %u of %u reads (%.1f%%)\n",
		       agree, compared, 100.0 * agree / compared);
	if (compared)
		check(agree * 10 >= compared * 9,
		      "current tstate agrees with locked + last_holder in >= 90%% of reads");
	return 0;
}

int main(int argc, char **argv)
{
	static struct py_target t;
	static struct fake_src fake;
	struct target_src counting = { .ops = &counting_ops, .ctx = &fake };
	struct expect ex[NEXPECT];
	struct objcache *oc;
	char err[512] = "out of memory";
	long pid;
	int rc;

	if (argc != 4 || (strcmp(argv[1], "names") && strcmp(argv[1], "gil"))) {
		fprintf(stderr, "usage: test_pythread names|gil PID OUTFILE\n");
		return 2;
	}
	pid = strtol(argv[2], NULL, 10);
	if (pid <= 0)
		return 2;
	if (read_expect(argv[3], ex)) {
		printf("FAIL the workload did not print its %d threads in %s\n", NEXPECT, argv[3]);
		return 1;
	}
	fake.live = target_src_live();
	oc = objcache_new(NULL);
	if (!oc || pyversion_detect(&counting, oc, (pid_t)pid, &t, err, sizeof(err))) {
		printf("FAIL pyversion_detect: %s\n", err);
		objcache_free(oc);
		return 1;
	}
	printf("# pid %ld: Python %u.%u.%u, %s, layout %s\n", pid, t.major, t.minor, t.micro,
	       t.module, t.layout.source);
	if (strcmp(argv[1], "names") == 0)
		run_names(&t, ex);
	else
		run_gil(&t, ex);
	printf("# %u passed, %u failed\n", check_passed, check_failed);
	rc = check_failed ? 1 : 0;
	objcache_free(oc);
	return rc;
}
