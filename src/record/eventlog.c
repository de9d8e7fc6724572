/* The pipeline's input events as recording records; see eventlog.h. */
#include "eventlog.h"

#include <stdio.h>
#include <unistd.h>

#include "record.h"

static void log_start(void *ctx, const struct pipeline_conf *c, int64_t wall_ns,
		      uint64_t mono_ns)
{
	struct rec_meta m = {
		.sample_period = c->sample_period, .frequency = c->frequency,
		.stack_bytes = c->stack_bytes,
		.flags = (c->hw_cycles ? REC_META_HW_CYCLES : 0) | (c->wall ? REC_META_WALL : 0) |
			 (c->gil_only ? REC_META_GIL_ONLY : 0) | (c->host ? REC_META_HOST : 0) |
			 (c->async_stacks ? REC_META_ASYNC : 0),
		.symcache_entries = c->symcache_entries,
		.threadcache_entries = c->threadcache_entries,
		.time_nanos = wall_ns, .start_mono_ns = mono_ns, .cmdline = (char *)c->cmdline,
		/* The live run names its files with its pid (src/live/session.c);
		 * replay names them the same. */
		.run_id = (uint32_t)getpid(),
	};

	snprintf(m.event, sizeof(m.event), "%s", c->event);
	record_meta(ctx, &m);
}

static void log_target(void *ctx, const struct py_target *t)
{
	record_target(ctx, t);
}

static void log_forget(void *ctx, const struct py_target *t)
{
	record_forget(ctx, t);
}

static void log_sample(void *ctx, const void *rec, size_t size)
{
	record_sample(ctx, rec, size);
}

static void log_tick(void *ctx, const struct pipeline_tick *k)
{
	record_tick(ctx, k);
}

void record_event_log(struct recorder *rec, struct pipeline_log *log)
{
	*log = (struct pipeline_log){
		.ctx = rec, .start = log_start, .target = log_target, .forget = log_forget,
		.sample = log_sample, .tick = log_tick,
	};
}
