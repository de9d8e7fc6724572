/*
 * Replay of a recording: the same sink, caches, sample_add(), profile and
 * output code as src/live/session.c, driven by the recorded events instead of
 * the BPF ring buffer, with every read of a target served by the recording
 * (src/record/record.c). Profile types, period, comments and times are rebuilt
 * from what the recording says the live session used, so a replayed
 * profile equals the one the live run wrote.
 */
#define _GNU_SOURCE
#include "replay.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "proc.h"
#include "pylayout.h"
#include "pyperf.h"
#include "sample.h"

/* What src/live/session.c uses when the recording does not say. */
#define DEF_SYMCACHE		16384
#define DEF_THREADCACHE		8192
#define MAX_CACHE_ENTRIES	(1u << 16)	/* bounds what a recording may ask for */

struct rp_target {
	struct py_target t;
	int ok;				/* layout rebuilt: samples are added */
};

struct replayer {
	struct recording *r;
	struct sample_sink *sink;
	struct rp_target **v;		/* in the order they became targets */
	size_t n, cap;
	int verbose;
	struct replay_stats *st;
	uint64_t first_ns, last_ns;	/* sample clock, for a missing final write */
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
	char err[320];

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
		fprintf(stderr, "pyperf-pprof: replay: pid %d (%s): Python %u.%u.%u in %s\n",
			(int)t->t.pid, t->t.comm, t->t.major, t->t.minor, t->t.micro, t->t.module);
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
	return 0;
}

/* A target was forgotten: session.c's on_target(-1) drops its caches. */
static void on_forget(struct replayer *rp, const struct rec_event *e)
{
	struct sample_sink *k = rp->sink;
	uint64_t start;
	uint32_t pid;
	size_t i;

	if (rec_decode_forget(e, &pid, &start))
		return;
	pysym_forget_pid(k->syms, (int)pid);
	pythread_forget_pid(k->threads, (int)pid);
	pyasyncio_forget_pid(k->tasks, (int)pid);
	if (k->objs)
		objcache_forget_pid(k->objs, (int)pid);
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
	if (e->len < sizeof(*h)) {
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
	r = sample_add(rp->sink, &t->t, rec, e->len);
	free(rec);
	rp->st->samples++;
	if (r)
		fprintf(stderr, "pyperf-pprof: out of memory while adding a sample; stopping early\n");
	return r;
}

/* The same profile session.c's new_profile() makes. */
static struct profile *new_profile(const struct rec_meta *m)
{
	struct profile *p = profile_new();
	uint64_t period = m->frequency ? 1000000000ULL / m->frequency : m->sample_period;

	if (!p)
		return NULL;
	profile_add_sample_type(p, "samples", "count");
	if (m->flags & REC_META_HW_CYCLES) {
		profile_add_sample_type(p, "cycles", "count");
		profile_set_period(p, "cycles", "count", (int64_t)m->sample_period);
	} else {
		const char *type = (m->flags & REC_META_WALL) ? "wall" : "cpu";

		profile_add_sample_type(p, type, "nanoseconds");
		profile_set_period(p, type, "nanoseconds", (int64_t)period);
	}
	return p;
}

/* The comments session.c's add_comments() adds, from the recorded values. */
static void add_comments(struct replayer *rp, const struct rec_write *w)
{
	const struct rec_meta *m = &rp->r->meta;
	const struct sample_counts *n = &rp->sink->n;
	uint64_t lost = w->nstats > STAT_LOST ? w->stats[STAT_LOST] : 0;
	char buf[512];

	snprintf(buf, sizeof(buf), "command: %s", m->cmdline ? m->cmdline : "");
	profile_add_comment(rp->sink->prof, buf);
	snprintf(buf, sizeof(buf), "event: %s, %s %" PRIu64,
		 (m->flags & REC_META_HW_CYCLES) ? "cycles" : m->event,
		 m->frequency ? "frequency Hz" : "period",
		 m->frequency ? m->frequency : m->sample_period);
	profile_add_comment(rp->sink->prof, buf);
	snprintf(buf, sizeof(buf),
		 "counters: samples=%" PRIu64 " lost=%" PRIu64 " truncated=%" PRIu64
		 " no_python=%" PRIu64 " read_errors=%" PRIu64 " bad_frames=%" PRIu64
		 " max_depth=%" PRIu64 " native_stacks=%" PRIu64 " native_errors=%" PRIu64
		 " stack_errors=%" PRIu64 " merge_errors=%" PRIu64,
		 n->records, lost, n->truncated, n->no_python,
		 n->read_errors, n->bad_frames, n->max_depth, n->native_stacks,
		 n->native_errors, n->stack_errors, n->merge_errors);
	profile_add_comment(rp->sink->prof, buf);
}

/* session.c's write_profile(), with the recorded clocks. */
static int on_write(struct replayer *rp, const struct rec_write *w, replay_write_fn write,
		    void *ctx)
{
	struct sample_sink *k = rp->sink;
	struct profile *next;
	int r;

	if (rp->r->meta.flags & REC_META_WALL)
		sample_flush_offcpu(k, w->offcpu_now_ns, find_cb, rp);
	add_comments(rp, w);
	profile_set_time(k->prof, w->time_nanos, w->duration_nanos);
	rp->st->writes++;
	rp->st->distinct = profile_sample_count(k->prof);
	r = write(ctx, k->prof, w);
	if (!w->rotate)
		return r;
	next = new_profile(&rp->r->meta);
	if (!next) {
		fprintf(stderr, "pyperf-pprof: out of memory starting a new interval; continuing in the current one\n");
		return -1;
	}
	profile_free(k->prof);
	k->prof = next;
	return r;
}

static int setup(struct replayer *rp, int all_native)
{
	const struct rec_meta *m = &rp->r->meta;
	struct sample_sink *k = calloc(1, sizeof(*k));
	uint32_t syms = m->symcache_entries ? m->symcache_entries : DEF_SYMCACHE;
	uint32_t threads = m->threadcache_entries ? m->threadcache_entries : DEF_THREADCACHE;

	rp->sink = k;
	if (!k)
		return -1;
	k->all_native = all_native;
	if (syms > MAX_CACHE_ENTRIES)
		syms = MAX_CACHE_ENTRIES;
	if (threads > MAX_CACHE_ENTRIES)
		threads = MAX_CACHE_ENTRIES;
	k->period_ns = m->frequency ? 1000000000ULL / m->frequency : m->sample_period;
	k->prof = new_profile(m);
	k->syms = pysym_cache_new(syms);
	k->threads = pythread_cache_new(threads);
	k->tasks = pyasyncio_cache_new(threads);
	if (!k->prof || !k->syms || !k->threads || !k->tasks)
		return -1;
	if (!m->stack_bytes)
		return 0;
	k->objs = objcache_new(NULL);
	k->unw = unwind_ctx_new(k->objs, NULL);
	k->nsym = nsym_ctx_new(k->objs);
	return k->unw && k->nsym ? 0 : -1;
}

static void teardown(struct replayer *rp)
{
	struct sample_sink *k = rp->sink;

	if (k) {
		for (size_t i = 0; i < OFFCPU_MAX; i++)
			free(k->offcpu[i].locs);
		pysym_cache_free(k->syms);
		pythread_cache_free(k->threads);
		pyasyncio_cache_free(k->tasks);
		if (k->objs && rp->verbose > 0) {
			char objs[512];

			objcache_describe(k->objs, objs, sizeof(objs));
			fprintf(stderr, "pyperf-pprof: replay: %s\n", objs);
		}
		unwind_ctx_free(k->unw);
		nsym_ctx_free(k->nsym);
		objcache_free(k->objs);
		profile_free(k->prof);
		free(k);
	}
	for (size_t i = 0; i < rp->n; i++)
		free(rp->v[i]);
	free(rp->v);
}

int replay_run(struct recording *r, replay_write_fn write, void *ctx, int verbose,
	       int all_native, struct replay_stats *st)
{
	struct replayer rp = { .r = r, .verbose = verbose, .st = st };
	struct rec_write w;
	uint64_t seq = 0;
	int rc = 0, pending = 0;

	memset(st, 0, sizeof(*st));
	if (setup(&rp, all_native)) {
		fprintf(stderr, "pyperf-pprof: out of memory setting up the replay\n");
		teardown(&rp);
		return -1;
	}
	for (size_t i = 0; i < r->nev && !rc; i++) {
		const struct rec_event *e = &r->ev[i];

		switch (e->type) {
		case REC_TARGET:
			rc = on_target(&rp, e);
			break;
		case REC_FORGET:
			on_forget(&rp, e);
			break;
		case REC_SAMPLE:
			rc = on_sample(&rp, e, ++seq);
			pending = 1;
			break;
		case REC_WRITE:
			if (rec_decode_write(e, &w) == 0) {
				rc = on_write(&rp, &w, write, ctx);
				pending = 0;
			}
			break;
		}
	}
	if (pending || !st->writes) {
		/* Cut short (or a stopped replay): write what there is, as the
		 * live session writes what it collected. */
		memset(&w, 0, sizeof(w));
		w.final = 1;
		w.time_nanos = r->meta.time_nanos;
		w.duration_nanos = (int64_t)(rp.last_ns - rp.first_ns);
		w.offcpu_now_ns = rp.last_ns;
		if (on_write(&rp, &w, write, ctx))
			rc = -1;
	}
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

static int write_output(void *ctx, const struct profile *p, const struct rec_write *w)
{
	struct main_ctx *m = ctx;
	char err[512];

	if (output_write(&m->out, p, m->path, sizeof(m->path), err, sizeof(err))) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		m->failed = 1;
		return -1;
	}
	if (m->cfg->verbose)
		fprintf(stderr, "pyperf-pprof: wrote %s\n", m->path);
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
	if (output_init(&m.out, cfg, err, sizeof(err)) ||
	    rec_replay_begin(r, err, sizeof(err))) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		rec_free(r);
		return 1;
	}
	rc = replay_run(r, write_output, &m, cfg->verbose, cfg->all_native, &st);
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
