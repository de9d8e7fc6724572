/*
 * The pipeline: everything between "a sample record of a target arrived"
 * and "a profile file was written", the same for a live session
 * (src/live/session.c, fed by BPF) and a replay (src/record/replay.c, fed
 * by a recording). It owns the sample sink and its caches, sets up each
 * profile (sample types, period), adds the comments, and cuts the series
 * into intervals. Its input is five events - a target added, a target
 * forgotten, a sample, an interval boundary (a write), and the start - and
 * every one of them passes through the optional event log as it enters, so
 * a recording holds exactly what a replay must feed back.
 */
#ifndef PIPELINE_H
#define PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "pyversion.h"
#include "sample.h"

#define PIPELINE_MAX_STATS	40		/* BPF counters carried by a tick (STAT__COUNT
					 * at most: session.c checks) */
#define PIPELINE_MAX_CACHE	(1u << 16)	/* bound on the cache sizes asked for */
#define PIPELINE_SYMCACHE	16384		/* code objects cached, when not given */
#define PIPELINE_THREADCACHE	8192		/* thread names cached, when not given */
#define PIPELINE_TASKCACHE	2048		/* threads whose asyncio task is kept */
#define PIPELINE_AWAITCACHE	4096		/* --async: tasks whose awaiter is kept */
#define PIPELINE_HOLD_BYTES	(32u << 20)	/* a profile kept over failed writes,
						 * at most (profile_bytes), when not given */

/* What the profiles are of: fixed for a pipeline's life. */
struct pipeline_conf {
	const char *event;		/* as asked: cpu-clock, task-clock, cycles */
	uint64_t sample_period;		/* events per sample; 0 with frequency */
	uint64_t frequency;		/* samples per second; 0 with a period */
	uint32_t stack_bytes;		/* 0: Python frames only */
	int all_native;			/* --all-native: no native_filter */
	int hw_cycles;			/* sampling hardware cycles, not time */
	int wall;			/* --mode wall: off-CPU time too */
	int gil_only;
	int async_stacks;		/* --async: await chains in task stacks */
	int host;			/* every Python process of the host */
	uint32_t symcache_entries;	/* 0: PIPELINE_SYMCACHE */
	uint32_t threadcache_entries;	/* 0: PIPELINE_THREADCACHE */
	const char *cmdline;		/* the invocation, in each profile */
	size_t hold_bytes;		/* 0: PIPELINE_HOLD_BYTES */
};

/* An interval boundary: the current profile is written. */
struct pipeline_tick {
	int64_t wall_ns;		/* CLOCK_REALTIME now: names the file */
	uint64_t mono_ns;		/* CLOCK_MONOTONIC now: ends the interval */
	int final;			/* the last write of the run */
	int rotate;			/* a new interval (profile) starts here */
	uint32_t nstats;
	uint64_t stats[PIPELINE_MAX_STATS];	/* BPF counters, cumulative */
};

/* Where the input events are logged as they enter (--record). */
struct pipeline_log {
	void *ctx;
	void (*start)(void *ctx, const struct pipeline_conf *c, int64_t wall_ns,
		      uint64_t mono_ns);
	void (*target)(void *ctx, const struct py_target *t);
	void (*forget)(void *ctx, const struct py_target *t);
	void (*sample)(void *ctx, const void *rec, size_t size);
	void (*tick)(void *ctx, const struct pipeline_tick *k);	/* as applied */
};

/* Writes a profile; wall_ns names it. path gets the file's name, err one
 * line on failure (-1). */
typedef int (*pipeline_write_fn)(void *ctx, const struct profile *p, int64_t wall_ns,
				 char *path, size_t pathlen, char *err, size_t errlen);
/* The target of a pid (wall mode: off-CPU intervals closed at a write). */
typedef const struct py_target *(*pipeline_find_fn)(void *ctx, int pid);

struct pipeline_io {
	pipeline_write_fn write;
	pipeline_find_fn find;
	void *ctx;			/* given to write and find */
	const struct pipeline_log *log;	/* NULL: nothing logged */
	/* Live only (sample.h): kernel symbols, a BPF walk's miss. diff: the
	 * --unwind both comparison, live or replayed. */
	const struct ksym_table *ksym;
	void (*native_miss)(void *ctx, int pid, uint64_t taken_ns);
	void *native_miss_ctx;
	struct native_diff *diff;
	/* CLOCK_MONOTONIC: code objects checked since a sample are not read
	 * again for it (pysym_check_note). NULL in replay: every one is, as
	 * the recorded reads were. */
	pysym_clock_fn clock;
	/* The object cache the targets' probes already opened their files
	 * through (each file opened once); NULL: the pipeline makes its own. */
	struct objcache *objs;
};

struct pipeline;

/* NULL when memory ran out. The conf's strings must outlive it. */
struct pipeline *pipeline_new(const struct pipeline_conf *c, const struct pipeline_io *io);
void pipeline_free(struct pipeline *p);

/* The first interval starts at these clocks. */
void pipeline_start(struct pipeline *p, int64_t wall_ns, uint64_t mono_ns);
void pipeline_target_add(struct pipeline *p, const struct py_target *t);
/* t may be gone and its pid reused: what was cached for the pid goes. */
void pipeline_target_forget(struct pipeline *p, const struct py_target *t);
/* Before the records of a drain are added: each is noted (its code
 * objects), then all are checked together (sample_precheck). Live only. */
void pipeline_precheck(struct pipeline *p, const struct py_target *t, const void *rec,
		       size_t size);
void pipeline_precheck_end(struct pipeline *p);
/* Between the two: the checks noted, to be answered by another reader
 * (sample_precheck_queue, sample_precheck_answer). */
size_t pipeline_precheck_queue(const struct pipeline *p, const struct py_target **t,
			       uint64_t *addr, size_t max, uint16_t *len);
void pipeline_precheck_answer(struct pipeline *p, size_t i, const uint8_t *bytes, uint64_t at_ns);
/* Should this record be added with its drain, not held back (sample.h)? */
int pipeline_is_prompt(const struct pipeline *p, const struct py_target *t, const void *rec,
		       size_t size);
/* One ring-buffer record of target t (live: its drain prechecked first).
 * -1 when memory ran out. */
int pipeline_sample(struct pipeline *p, const struct py_target *t, const void *rec,
		    size_t size);
/* Where the BPF program is to find each process's running asyncio tasks,
 * for those found or changed since the last call (pyasyncio_task_srcs).
 * Live only. */
size_t pipeline_task_srcs(struct pipeline *p, int *pids, struct py_task_src *srcs, size_t max);
/*
 * Writes the current interval's profile (counters of that interval only,
 * time from its start to the tick). With k->rotate, and if the write
 * succeeded, the next interval starts at the tick with a fresh profile;
 * the caches are kept. path gets the file's name; -1 with one line in err.
 * A rotation whose write failed keeps the interval going, so the next
 * profile written holds its samples too (its time and duration span
 * them), unless the profile then holds more than hold_bytes: it is
 * dropped and a new interval starts, and the next profile written counts
 * what was dropped in a comment ("dropped: N samples of K intervals").
 */
int pipeline_write(struct pipeline *p, const struct pipeline_tick *k, char *path,
		   size_t pathlen, char *err, size_t errlen);

/* What the sink counted over the whole run, and its caches (summaries). */
const struct sample_sink *pipeline_sink(const struct pipeline *p);
/* Distinct stacks of the current profile. */
size_t pipeline_stacks(const struct pipeline *p);

#endif
