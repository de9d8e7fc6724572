/* The pipeline from sample records to profile files; see pipeline.h. */
#define _GNU_SOURCE
#include "pipeline.h"

#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyperf.h"

/* Samples dropped after failed writes, counted in the next profile. */
struct dropped {
	uint64_t intervals, samples;
	int64_t from_wall, to_wall;	/* the first one's start, the last tick */
};

struct pipeline {
	struct pipeline_conf c;
	struct pipeline_io io;
	struct sample_sink sink;
	struct sample_counts n0;	/* counters when this interval began */
	uint64_t lost0;			/* BPF lost counter then */
	uint64_t late0, late_ns0, lost_ns0;	/* ... and the unsampled time's */
	int64_t interval_wall;		/* the interval's start: time_nanos */
	uint64_t interval_mono;
	int own_objs;			/* objs made here, freed here */
	/* Rotations whose write failed: the profile holds their intervals
	 * too; and what was dropped since the last profile written. */
	uint64_t held;
	struct dropped dropped;
};

#define LOG(p, ev, ...) do {						\
	if ((p)->io.log && (p)->io.log->ev)				\
		(p)->io.log->ev((p)->io.log->ctx, __VA_ARGS__);		\
} while (0)

static uint64_t period_ns(const struct pipeline_conf *c)
{
	return c->frequency ? 1000000000ULL / c->frequency : c->sample_period;
}

/* A fresh profile with the run's sample types and period. */
static struct profile *new_profile(const struct pipeline_conf *c)
{
	struct profile *prof = profile_new();
	const char *type = c->wall ? "wall" : "cpu";

	if (!prof)
		return NULL;
	profile_add_sample_type(prof, "samples", "count");
	if (c->hw_cycles) {
		profile_add_sample_type(prof, "cycles", "count");
		profile_set_period(prof, "cycles", "count", (int64_t)c->sample_period);
		return prof;
	}
	profile_add_sample_type(prof, type, "nanoseconds");
	profile_set_period(prof, type, "nanoseconds", (int64_t)period_ns(c));
	return prof;
}

/* A cache size: the default when not given, never above the bound (a
 * recording may ask for anything). */
static uint32_t cache_size(uint32_t asked, uint32_t def)
{
	if (!asked)
		return def;
	return asked < PIPELINE_MAX_CACHE ? asked : PIPELINE_MAX_CACHE;
}

struct pipeline *pipeline_new(const struct pipeline_conf *c, const struct pipeline_io *io)
{
	struct pipeline *p;
	struct sample_sink *k;

	/* The sink's native memo is cache-line aligned (sample.h). */
	if (posix_memalign((void **)&p, _Alignof(struct pipeline), sizeof(*p)))
		return NULL;
	memset(p, 0, sizeof(*p));
	p->c = *c;
	p->c.symcache_entries = cache_size(c->symcache_entries, PIPELINE_SYMCACHE);
	p->c.threadcache_entries = cache_size(c->threadcache_entries, PIPELINE_THREADCACHE);
	p->c.hold_bytes = c->hold_bytes ? c->hold_bytes : PIPELINE_HOLD_BYTES;
	p->io = *io;
	k = &p->sink;
	k->period_ns = period_ns(c);
	k->prof = new_profile(c);
	k->syms = pysym_cache_new(p->c.symcache_entries);
	k->threads = pythread_cache_new(p->c.threadcache_entries);
	k->tasks = pyasyncio_cache_new(PIPELINE_TASKCACHE);
	if (!k->prof || !k->syms || !k->threads || !k->tasks)
		goto fail;
	/* One scan of a process's sys.modules serves both caches. */
	pyasyncio_cache_share(k->tasks, k->threads);
	if (c->async_stacks && !(k->awaits = pyawait_cache_new(PIPELINE_AWAITCACHE)))
		goto fail;
	k->ksym = io->ksym;
	k->objs = io->objs;
	k->clock = io->clock;
	if (!c->stack_bytes)
		return p;
	k->all_native = c->all_native;
	k->native_miss = io->native_miss;
	k->native_miss_ctx = io->native_miss_ctx;
	k->diff = io->diff;
	if (!k->objs) {
		k->objs = objcache_new(NULL);
		p->own_objs = 1;
	}
	k->nsym = k->objs ? nsym_ctx_new(k->objs) : NULL;
	k->unw = k->nsym ? unwind_ctx_new(k->objs, NULL) : NULL;
	if (k->unw)
		return p;
fail:
	pipeline_free(p);
	return NULL;
}

void pipeline_free(struct pipeline *p)
{
	struct sample_sink *k;

	if (!p)
		return;
	k = &p->sink;
	for (size_t i = 0; i < OFFCPU_MAX; i++)
		free(k->offcpu[i].locs);
	pysym_cache_free(k->syms);
	pythread_cache_free(k->threads);
	pyasyncio_cache_free(k->tasks);
	pyawait_cache_free(k->awaits);
	unwind_ctx_free(k->unw);
	free(k->full);
	nsym_ctx_free(k->nsym);
	if (p->own_objs)
		objcache_free(k->objs);
	profile_free(k->prof);
	free(p);
}

void pipeline_start(struct pipeline *p, int64_t wall_ns, uint64_t mono_ns)
{
	LOG(p, start, &p->c, wall_ns, mono_ns);
	p->interval_wall = wall_ns;
	p->interval_mono = mono_ns;
	/* Wall mode: no wait counts from before the window, nor any time on
	 * the CPU (sample.c: wall_span). */
	p->sink.offcpu_floor = mono_ns;
	p->sink.wall_from_ns = p->c.wall ? mono_ns : 0;
}

/* Nothing is kept per target before its samples come (the caches fill
 * then), but the event is logged: replay rebuilds the target from it. */
void pipeline_target_add(struct pipeline *p, const struct py_target *t)
{
	LOG(p, target, t);
}

void pipeline_target_forget(struct pipeline *p, const struct py_target *t)
{
	struct sample_sink *k = &p->sink;

	LOG(p, forget, t);
	pysym_forget(k->syms, t->pid, t->start_time);
	pythread_forget_pid(k->threads, t->pid);
	pyasyncio_forget_pid(k->tasks, t->pid);
	if (k->awaits)
		pyawait_forget_pid(k->awaits, t->pid);
	if (k->objs)
		objcache_forget_pid(k->objs, t->pid);
}

size_t pipeline_task_srcs(struct pipeline *p, int *pids, struct py_task_src *srcs, size_t max)
{
	return p->sink.tasks ? pyasyncio_task_srcs(p->sink.tasks, pids, srcs, max) : 0;
}

void pipeline_precheck(struct pipeline *p, const struct py_target *t, const void *rec,
		       size_t size)
{
	sample_precheck(&p->sink, t, rec, size);
}

size_t pipeline_precheck_queue(const struct pipeline *p, const struct py_target **t,
			       uint64_t *addr, size_t max, uint16_t *len)
{
	return sample_precheck_queue(&p->sink, t, addr, max, len);
}

void pipeline_precheck_answer(struct pipeline *p, size_t i, const uint8_t *bytes, uint64_t at_ns)
{
	sample_precheck_answer(&p->sink, i, bytes, at_ns);
}

void pipeline_precheck_end(struct pipeline *p)
{
	sample_precheck_end(&p->sink);
}

int pipeline_is_prompt(const struct pipeline *p, const struct py_target *t, const void *rec,
		       size_t size)
{
	return sample_is_prompt(&p->sink, t, rec, size);
}

int pipeline_sample(struct pipeline *p, const struct py_target *t, const void *rec,
		    size_t size)
{
	LOG(p, sample, rec, size);
	return sample_add(&p->sink, t, rec, size);
}

/* What happened during this interval: a profile's counters describe its
 * own samples, also in continuous mode. */
static void interval_counts(const struct pipeline *p, struct sample_counts *d)
{
	const struct sample_counts *n = &p->sink.n, *z = &p->n0;

	*d = *n;	/* max_depth is per interval already; threads is not used */
#define SINCE(f) d->f = n->f - z->f
	SINCE(records); SINCE(malformed); SINCE(no_python); SINCE(truncated);
	SINCE(read_errors); SINCE(bad_frames); SINCE(native_stacks);
	SINCE(native_errors); SINCE(stack_errors); SINCE(merge_errors); SINCE(trampolines);
	SINCE(cut_walks);
	SINCE(offcpu_dropped);
#undef SINCE
}

static uint64_t stat(const struct pipeline_tick *k, unsigned idx)
{
	return k->nstats > idx ? k->stats[idx] : 0;
}

static uint64_t lost(const struct pipeline_tick *k)
{
	return stat(k, STAT_LOST);
}

/* Time the events left unsampled (the kernel throttled them, their timer
 * fired late) and the periods of records lost, when there were any: the
 * samples then cover less than the targets ran. */
static void add_rate_comment(struct pipeline *p, const struct pipeline_tick *k)
{
	uint64_t late = stat(k, STAT_LATE) - p->late0, lost_ns = stat(k, STAT_LOST_NS) - p->lost_ns0;
	char buf[256];

	if (!late && !lost_ns)
		return;
	snprintf(buf, sizeof(buf), "unsampled: %" PRIu64 " samples came after skipped periods, %" PRIu64
		 " ns (kernel throttling, late timer); %" PRIu64 " ns of lost records",
		 late, stat(k, STAT_LATE_NS) - p->late_ns0, lost_ns);
	profile_add_comment(p->sink.prof, buf);
}

/* After failed writes, what had to be dropped (pipeline_write). A profile
 * that holds the intervals of failed writes says nothing more than its
 * time and duration: a replay, whose writes do not fail, writes the same
 * bytes. */
static void dropped_comment(struct pipeline *p)
{
	char buf[512];

	if (!p->dropped.intervals)
		return;
	snprintf(buf, sizeof(buf),
		 "dropped: %" PRIu64 " samples of %" PRIu64 " interval%s from %" PRId64 " to %" PRId64
		 " (unix ns): the output failed and the profile held passed %zu bytes",
		 p->dropped.samples, p->dropped.intervals, p->dropped.intervals == 1 ? "" : "s",
		 p->dropped.from_wall, p->dropped.to_wall, p->c.hold_bytes);
	profile_add_comment(p->sink.prof, buf);
}

static void add_comments(struct pipeline *p, const struct pipeline_tick *k)
{
	const struct pipeline_conf *c = &p->c;
	struct profile *prof = p->sink.prof;
	struct sample_counts n;
	char buf[512];

	interval_counts(p, &n);
	/* A write that failed left its comments: these replace them. */
	profile_clear_comments(prof);
	snprintf(buf, sizeof(buf), "command: %s", c->cmdline ? c->cmdline : "");
	profile_add_comment(prof, buf);
	snprintf(buf, sizeof(buf), "event: %s, %s %" PRIu64, c->hw_cycles ? "cycles" : c->event,
		 c->frequency ? "frequency Hz" : "period",
		 c->frequency ? c->frequency : c->sample_period);
	profile_add_comment(prof, buf);
	snprintf(buf, sizeof(buf),
		 "counters: samples=%" PRIu64 " lost=%" PRIu64 " truncated=%" PRIu64
		 " no_python=%" PRIu64 " read_errors=%" PRIu64 " bad_frames=%" PRIu64
		 " max_depth=%" PRIu64 " native_stacks=%" PRIu64 " native_errors=%" PRIu64
		 " stack_errors=%" PRIu64 " merge_errors=%" PRIu64,
		 n.records, lost(k) - p->lost0, n.truncated, n.no_python,
		 n.read_errors, n.bad_frames, n.max_depth, n.native_stacks,
		 n.native_errors, n.stack_errors, n.merge_errors);
	profile_add_comment(prof, buf);
	dropped_comment(p);
	add_rate_comment(p, k);
}

/* The next interval starts at the tick, with a fresh profile. */
static int rotate(struct pipeline *p, const struct pipeline_tick *k)
{
	struct profile *next = new_profile(&p->c);

	if (!next)
		return -1;
	/* Waits still going on go on in the new profile, with their stacks. */
	if (sample_offcpu_move(&p->sink, next))
		fprintf(stderr, "pyperf-pprof: out of memory carrying waits into the next interval; "
			"those threads count again from their next switch-out\n");
	profile_free(p->sink.prof);
	/* Give the freed profile and encoding buffers back to the system: a
	 * sidecar's RSS then follows what it holds, interval after interval. */
	malloc_trim(0);
	p->sink.prof = next;
	p->sink.n.max_depth = 0;	/* the only counter kept per interval */
	p->n0 = p->sink.n;
	p->lost0 = lost(k);
	p->late0 = stat(k, STAT_LATE);
	p->late_ns0 = stat(k, STAT_LATE_NS);
	p->lost_ns0 = stat(k, STAT_LOST_NS);
	p->interval_wall = k->wall_ns;
	p->interval_mono = k->mono_ns;
	return 0;
}

/* d with the current profile counted in: the intervals it holds (since
 * its start), its samples. */
static struct dropped with_current(const struct pipeline *p, struct dropped d,
				   const struct pipeline_tick *k)
{
	if (!d.intervals)
		d.from_wall = p->interval_wall;
	d.to_wall = k->wall_ns;
	d.intervals += p->held + 1;
	d.samples += p->sink.n.records - p->n0.records;
	return d;
}

/* What the profile is of, which pprof shows as its `File:` and title:
 * the host's Python processes, or the targets' program (not the
 * interpreter library the Python frames belong to). */
static void name_profile(struct pipeline *p)
{
	const struct sample_sink *k = &p->sink;
	const char *name = p->c.host ? "all Python processes" :
			   k->programs == 1 ? k->program :
			   k->programs ? "several Python programs" : NULL;

	if (name)
		(void)profile_set_main(k->prof, name);	/* out of memory: unnamed */
}

int pipeline_write(struct pipeline *p, const struct pipeline_tick *k, char *path,
		   size_t pathlen, char *err, size_t errlen)
{
	struct pipeline_tick applied = *k;
	struct dropped d;
	int w, r, drop;

	if (p->c.wall)	/* threads still off the CPU count up to now */
		sample_flush_offcpu(&p->sink, k->mono_ns, p->io.find, p->io.ctx);
	add_comments(p, k);
	name_profile(p);
	profile_set_time(p->sink.prof, p->interval_wall,
			 (int64_t)(k->mono_ns - p->interval_mono));
	r = w = p->io.write(p->io.ctx, p->sink.prof, k->wall_ns, path, pathlen, err, errlen);
	/* A failed write keeps the interval going: its samples stay, up to
	 * hold_bytes; past that they are dropped and counted. The log gets
	 * the tick as applied, so a replay does the same (and writes what
	 * was dropped, its writes working). */
	drop = k->rotate && w && profile_bytes(p->sink.prof) > p->c.hold_bytes;
	d = drop ? with_current(p, p->dropped, k) : p->dropped;
	applied.rotate = k->rotate && (w == 0 || drop);
	if (applied.rotate && rotate(p, k)) {
		snprintf(err, errlen, "out of memory starting a new interval; continuing in the current one");
		applied.rotate = 0;
		drop = 0;	/* kept after all */
		r = -1;
	}
	if (w == 0) {
		p->held = 0;
		memset(&p->dropped, 0, sizeof(p->dropped));
	} else if (drop) {
		p->held = 0;
		p->dropped = d;
	} else if (k->rotate) {
		p->held++;
	}
	LOG(p, tick, &applied);
	return r;
}

const struct sample_sink *pipeline_sink(const struct pipeline *p)
{
	return &p->sink;
}

size_t pipeline_stacks(const struct pipeline *p)
{
	return profile_sample_count(p->sink.prof);
}
