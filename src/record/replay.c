/*
 * Replay of a recording: the pipeline of a live session
 * (src/pipeline/pipeline.c) fed with the recorded events - targets,
 * forgets, samples, interval ticks - instead of BPF, with every read of a
 * target served by the recording (src/record/replay_src.c). The pipeline's
 * settings come from the recording's META, so a replayed profile equals
 * the one the live run wrote, name and interval included.
 */
#define _GNU_SOURCE
#include "replay.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "pipeline.h"
#include "proc.h"
#include "pylayout.h"
#include "pyperf.h"

struct rp_target {
	struct py_target t;
	int ok;				/* layout rebuilt: samples are added */
};

struct replayer {
	struct recording *r;
	struct pipeline *pl;
	struct rp_target **v;		/* in the order they became targets */
	size_t n, cap;
	int verbose;
	struct replay_stats *st;
	pipeline_write_fn write;	/* the caller's */
	void *write_ctx;
	uint64_t first_ns, last_ns;	/* sample clock, for a missing final write */
	int64_t clock_wall;		/* the newest start or tick fed */
	uint64_t clock_mono;
	struct pipeline_tick last;	/* its BPF counters */
};

/* The newest target of pid, as targets_find() prefers a live target to
 * the retired ones. */
static struct rp_target *find(struct replayer *rp, uint32_t pid)
{
	for (size_t i = rp->n; i-- > 0;)
		if ((uint32_t)rp->v[i]->t.pid == pid)
			return rp->v[i];
	return NULL;
}

static const struct py_target *find_cb(void *ctx, int pid)
{
	struct rp_target *t = find(ctx, (uint32_t)pid);

	return t && t->ok ? &t->t : NULL;
}

/* The layout pyversion_detect() chose, by the same chooser, from what the
 * recording holds of the target's memory. */
static int rebuild_layout(struct py_target *t, char *err, size_t errlen)
{
	struct py_facts f = {
		.version_hex = t->version_hex,
		.ft_name = py_ft_from_name(t->module),
		.runtime_addr = t->runtime_addr,
		.read = pyversion_read,
		.read_ctx = t,
	};
	char why[320];
	int ret = py_layout_choose(&f, &t->layout, why, sizeof(why));

	if (ret)
		snprintf(err, errlen, "%s%.*s", ret == PY_LAYOUT_UNSUPPORTED ?
			 "the recorded Python version, " : "", (int)(errlen / 2), why);
	if (ret)
		return -1;
	t->bpf.off = t->layout.walk;
	return 0;
}

static int on_target(struct replayer *rp, const struct rec_event *e)
{
	struct rp_target *t = calloc(1, sizeof(*t));
	char err[320], note[320];

	if (!t)
		return -1;
	if (rec_decode_target(e, &t->t)) {
		free(t);
		return 0;	/* malformed: counted by nobody, like a refused pid */
	}
	t->t.src = rec_replay_src(rp->r);
	rec_replay_target(rp->r, (uint32_t)t->t.pid);
	t->ok = rebuild_layout(&t->t, err, sizeof(err)) == 0;
	rp->st->targets++;
	if (!t->ok) {
		rp->st->bad_targets++;
		if (rp->verbose >= 0)
			fprintf(stderr, "pyperf-pprof: replay: pid %d (%s): %s; its samples are skipped\n",
				(int)t->t.pid, t->t.comm, err);
	} else if (rp->verbose > 0) {
		proc_root_note(&t->t.root, note, sizeof(note));
		fprintf(stderr, "pyperf-pprof: replay: pid %d (%s): Python %u.%u.%u in %s%s\n",
			(int)t->t.pid, t->t.comm, t->t.major, t->t.minor, t->t.micro, t->t.module,
			note);
	}
	if (rp->n == rp->cap) {
		size_t nc = rp->cap ? rp->cap * 2 : 16;
		struct rp_target **nv = realloc(rp->v, nc * sizeof(*nv));

		if (!nv) {
			free(t);
			return -1;
		}
		rp->v = nv;
		rp->cap = nc;
	}
	rp->v[rp->n++] = t;
	if (t->ok)
		pipeline_target_add(rp->pl, &t->t);
	return 0;
}

/* A target was forgotten: the pipeline drops what it cached for the pid. */
static void on_forget(struct replayer *rp, const struct rec_event *e)
{
	struct py_target gone = { 0 };
	uint64_t start;
	uint32_t pid;
	size_t i;

	if (rec_decode_forget(e, &pid, &start))
		return;
	gone.pid = (pid_t)pid;
	gone.start_time = start;
	pipeline_target_forget(rp->pl, &gone);
	for (i = 0; i < rp->n; i++)
		if ((uint32_t)rp->v[i]->t.pid == pid && rp->v[i]->t.start_time == start)
			break;
	if (i == rp->n)
		for (i = 0; i < rp->n && (uint32_t)rp->v[i]->t.pid != pid; i++)
			;
	if (i == rp->n)
		return;
	free(rp->v[i]);
	memmove(rp->v + i, rp->v + i + 1, (rp->n - i - 1) * sizeof(*rp->v));
	rp->n--;
}

static int on_sample(struct replayer *rp, const struct rec_event *e, uint64_t seq)
{
	const struct py_sample_hdr *h;
	struct rp_target *t;
	void *rec;
	int r;

	rec_replay_set_seq(rp->r, seq);
	/* session.c's on_record(): too short or of no target, dropped. */
	if (e->len < PY_SAMPLE_COMPACT_HDR) {
		rp->st->skipped++;
		return 0;
	}
	/* An aligned copy, as the ring buffer hands records out. */
	rec = malloc(e->len);
	if (!rec)
		return -1;
	memcpy(rec, e->p, e->len);
	h = rec;
	if (!rp->first_ns || h->time_ns < rp->first_ns)
		rp->first_ns = h->time_ns;
	if (h->time_ns > rp->last_ns)
		rp->last_ns = h->time_ns;
	t = find(rp, h->pid);
	if (!t || !t->ok) {
		rp->st->skipped++;
		free(rec);
		return 0;
	}
	r = pipeline_sample(rp->pl, &t->t, rec, e->len);
	free(rec);
	rp->st->samples++;
	if (r)
		fprintf(stderr, "pyperf-pprof: out of memory while adding a sample; stopping early\n");
	return r;
}

/* An interval boundary, as the live pipeline took it. */
static int on_tick(struct replayer *rp, const struct pipeline_tick *k)
{
	char err[512], path[4200];

	rp->clock_wall = k->wall_ns;
	rp->clock_mono = k->mono_ns;
	rp->last = *k;
	if (pipeline_write(rp->pl, k, path, sizeof(path), err, sizeof(err)) == 0)
		return 0;
	fprintf(stderr, "pyperf-pprof: %s\n", err);
	return -1;
}

/* A wall-clock time plus a span, as a recording (any bytes) may hold:
 * wraps instead of overflowing. */
static int64_t wall_plus(int64_t wall, uint64_t span)
{
	return (int64_t)((uint64_t)wall + span);
}

/* A WRITE of a recording older than TICK: it says when its interval
 * started and how long it lasted, and was named at its end. */
static int on_old_write(struct replayer *rp, const struct rec_write *w)
{
	struct pipeline_tick k = { .final = (int)w->final, .rotate = (int)w->rotate,
				   .nstats = w->nstats };
	uint64_t mono = w->offcpu_now_ns ? w->offcpu_now_ns : (uint64_t)w->duration_nanos;

	memcpy(k.stats, w->stats, sizeof(k.stats));
	k.wall_ns = wall_plus(w->time_nanos, (uint64_t)w->duration_nanos);
	k.mono_ns = mono;
	pipeline_start(rp->pl, w->time_nanos, mono - (uint64_t)w->duration_nanos);
	return on_tick(rp, &k);
}

/* The recording ends without its final write (the run was killed, or
 * stopped early): write what there is, as the live session would have. */
static int final_write(struct replayer *rp)
{
	struct pipeline_tick k = rp->last;

	k.final = 1;
	k.rotate = 0;
	if (!rp->r->meta.has_start_mono) {
		/* Older recordings: the interval is the span of the samples. */
		pipeline_start(rp->pl, rp->r->meta.time_nanos, rp->first_ns);
		k.wall_ns = wall_plus(rp->r->meta.time_nanos, rp->last_ns - rp->first_ns);
		k.mono_ns = rp->last_ns;
		return on_tick(rp, &k);
	}
	k.mono_ns = rp->last_ns > rp->clock_mono ? rp->last_ns : rp->clock_mono;
	k.wall_ns = wall_plus(rp->clock_wall, k.mono_ns - rp->clock_mono);
	return on_tick(rp, &k);
}

/* Every profile the pipeline writes goes to the caller's writer. */
static int write_cb(void *ctx, const struct profile *p, int64_t wall_ns, char *path,
		    size_t pathlen, char *err, size_t errlen)
{
	struct replayer *rp = ctx;

	rp->st->writes++;
	rp->st->distinct = profile_sample_count(p);
	return rp->write(rp->write_ctx, p, wall_ns, path, pathlen, err, errlen);
}

/* The pipeline the recorded session ran. */
static struct pipeline *setup(struct replayer *rp, int all_native)
{
	const struct rec_meta *m = &rp->r->meta;
	struct pipeline_conf c = {
		.event = m->event, .sample_period = m->sample_period, .frequency = m->frequency,
		.stack_bytes = m->stack_bytes, .all_native = all_native, .hw_cycles = !!(m->flags & REC_META_HW_CYCLES),
		.wall = !!(m->flags & REC_META_WALL), .gil_only = !!(m->flags & REC_META_GIL_ONLY),
		.host = !!(m->flags & REC_META_HOST),
		.async_stacks = !!(m->flags & REC_META_ASYNC),
		.symcache_entries = m->symcache_entries,	/* 0: the defaults */
		.threadcache_entries = m->threadcache_entries,
		.cmdline = m->cmdline,
	};
	struct pipeline_io io = { .write = write_cb, .find = find_cb, .ctx = rp,
				  .diff = &rp->st->diff };
	struct pipeline *pl = pipeline_new(&c, &io);

	if (!pl)
		return NULL;
	rp->clock_wall = m->time_nanos;
	rp->clock_mono = m->start_mono_ns;
	pipeline_start(pl, m->time_nanos, m->start_mono_ns);
	return pl;
}

static void teardown(struct replayer *rp)
{
	const struct sample_sink *k = rp->pl ? pipeline_sink(rp->pl) : NULL;

	if (k && k->objs && rp->verbose > 0) {
		char objs[512];

		objcache_describe(k->objs, objs, sizeof(objs));
		fprintf(stderr, "pyperf-pprof: replay: %s\n", objs);
	}
	pipeline_free(rp->pl);
	for (size_t i = 0; i < rp->n; i++)
		free(rp->v[i]);
	free(rp->v);
}

static int on_event(struct replayer *rp, const struct rec_event *e, uint64_t *seq,
		    int *pending)
{
	struct pipeline_tick k;
	struct rec_write w;

	switch (e->type) {
	case REC_TARGET:
		return on_target(rp, e);
	case REC_FORGET:
		on_forget(rp, e);
		return 0;
	case REC_SAMPLE:
		*pending = 1;
		return on_sample(rp, e, ++*seq);
	case REC_TICK:
		if (rec_decode_tick(e, &k))
			return 0;
		*pending = 0;
		return on_tick(rp, &k);
	case REC_WRITE:
		if (rec_decode_write(e, &w))
			return 0;
		*pending = 0;
		return on_old_write(rp, &w);
	}
	return 0;
}

int replay_run(struct recording *r, pipeline_write_fn write, void *ctx, int verbose,
	       int all_native, struct replay_stats *st)
{
	struct replayer rp = { .r = r, .verbose = verbose, .st = st, .write = write,
			       .write_ctx = ctx };
	uint64_t seq = 0;
	int rc = 0, pending = 0;

	memset(st, 0, sizeof(*st));
	rp.pl = setup(&rp, all_native);
	if (!rp.pl) {
		fprintf(stderr, "pyperf-pprof: out of memory setting up the replay\n");
		return -1;
	}
	for (size_t i = 0; i < r->nev && !rc; i++)
		rc = on_event(&rp, &r->ev[i], &seq, &pending);
	if ((pending || !st->writes) && final_write(&rp))
		rc = -1;
	teardown(&rp);
	return rc;
}

/* ---- the --replay command ------------------------------------------------- */

struct main_ctx {
	const struct config *cfg;
	struct output out;
	char path[4200];
	int failed;
};

static int write_output(void *ctx, const struct profile *p, int64_t wall_ns, char *path,
			size_t pathlen, char *err, size_t errlen)
{
	struct main_ctx *m = ctx;

	if (output_write(&m->out, p, wall_ns, path, pathlen, err, errlen)) {
		m->failed = 1;
		return -1;
	}
	snprintf(m->path, sizeof(m->path), "%s", path);
	if (m->cfg->verbose)
		fprintf(stderr, "pyperf-pprof: wrote %s\n", path);
	return 0;
}

int replay_main(const struct config *cfg)
{
	struct main_ctx m = { .cfg = cfg };
	struct replay_stats st;
	struct recording *r;
	char err[512];
	int rc;

	r = rec_load_file(cfg->replay, NULL, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		return 1;
	}
	if (!r->has_meta) {
		fprintf(stderr, "pyperf-pprof: %s: not a usable recording (no session description in it)\n",
			cfg->replay);
		rec_free(r);
		return 1;
	}
	if (!r->complete && !cfg->quiet)
		fprintf(stderr, "pyperf-pprof: warning: %s is incomplete (the recording run did not end cleanly); replaying its %" PRIu64 " samples\n",
			cfg->replay, r->nsamples);
	if (r->bad_records && !cfg->quiet)
		fprintf(stderr, "pyperf-pprof: warning: %s: %" PRIu64 " malformed records skipped\n",
			cfg->replay, r->bad_records);
	if (output_init(&m.out, cfg, r->meta.run_id, err, sizeof(err)) ||
	    rec_replay_begin(r, err, sizeof(err))) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		rec_free(r);
		return 1;
	}
	rc = replay_run(r, write_output, &m, cfg->verbose, cfg->all_native, &st);
	if (st.diff.stacks && !cfg->quiet)
		native_diff_print(&st.diff, stderr);
	if (cfg->verbose)
		fprintf(stderr, "pyperf-pprof: replay: target memory reads served %" PRIu64
			", not in the recording %" PRIu64 "\n", r->reads, r->reads_missed);
	rec_replay_end(r);
	rec_free(r);
	if (!cfg->quiet && !m.failed)
		fprintf(stderr, "pyperf-pprof: replayed %" PRIu64 " samples (%" PRIu64
			" distinct stacks) of %" PRIu64 " process%s from %s; wrote %s\n",
			st.samples, st.distinct, st.targets, st.targets == 1 ? "" : "es",
			cfg->replay, m.path);
	return rc || m.failed ? 1 : 0;
}
