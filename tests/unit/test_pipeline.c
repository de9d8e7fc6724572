/*
 * The pipeline (src/pipeline/pipeline.c) without BPF: a live run fed by
 * hand - a target, samples without a Python stack, three interval ticks,
 * one of them a failed write - and then a second pipeline fed with what the
 * first one logged, as replay does. Checks each profile's counters (this
 * interval's only), times and name time, that a failed write keeps its
 * interval going and is logged so, and that the fed-back run writes the
 * same bytes at the same name times.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pipeline.h"
#include "pprof_write.h"
#include "profile.pb-c.h"

#define MAX_WRITES	8
#define MAX_EVENTS	64
#define SEC		1000000000LL

struct written {
	int64_t wall_ns;
	uint8_t *pb;		/* raw protobuf */
	size_t len;
};

enum ev_kind { EV_START, EV_TARGET, EV_FORGET, EV_SAMPLE, EV_TICK };

struct event {
	enum ev_kind kind;
	int64_t wall_ns;
	uint64_t mono_ns;
	struct py_sample_hdr rec;
	struct pipeline_tick tick;
};

struct run {
	struct py_target target;
	struct written w[MAX_WRITES];
	int nw;
	int fail_write;		/* the nth write call (1-based) fails */
	int calls;
	struct event ev[MAX_EVENTS];
	int nev;
	struct pipeline_log log;
};

static int write_cb(void *ctx, const struct profile *p, int64_t wall_ns, char *path,
		    size_t pathlen, char *err, size_t errlen)
{
	struct run *r = ctx;

	snprintf(path, pathlen, "profile-%lld", (long long)wall_ns);
	if (++r->calls == r->fail_write) {
		snprintf(err, errlen, "cannot write %s: disk full (test)", path);
		return -1;
	}
	if (r->nw == MAX_WRITES || pprof_encode(p, 0, &r->w[r->nw].pb, &r->w[r->nw].len))
		return -1;
	r->w[r->nw++].wall_ns = wall_ns;
	return 0;
}

static const struct py_target *find_cb(void *ctx, int pid)
{
	struct run *r = ctx;

	return pid == r->target.pid ? &r->target : NULL;
}

static struct event *log_ev(void *ctx, enum ev_kind kind)
{
	struct run *r = ctx;

	if (r->nev == MAX_EVENTS)
		abort();
	r->ev[r->nev].kind = kind;
	return &r->ev[r->nev++];
}

static void log_start(void *ctx, const struct pipeline_conf *c, int64_t wall, uint64_t mono)
{
	struct event *e = log_ev(ctx, EV_START);

	e->wall_ns = wall;
	e->mono_ns = mono;
}

static void log_target(void *ctx, const struct py_target *t)
{
	log_ev(ctx, EV_TARGET);
}

static void log_forget(void *ctx, const struct py_target *t)
{
	log_ev(ctx, EV_FORGET);
}

static void log_sample(void *ctx, const void *rec, size_t size)
{
	memcpy(&log_ev(ctx, EV_SAMPLE)->rec, rec, sizeof(struct py_sample_hdr));
}

static void log_tick(void *ctx, const struct pipeline_tick *k)
{
	log_ev(ctx, EV_TICK)->tick = *k;
}

static const struct pipeline_log test_log = {
	.start = log_start, .target = log_target, .forget = log_forget,
	.sample = log_sample, .tick = log_tick,
};

static const struct pipeline_conf conf = {
	.event = "cpu-clock", .frequency = 100, .cmdline = "pyperf-pprof --test",
};

static struct pipeline *make_conf(struct run *r, int logged, const struct pipeline_conf *c)
{
	struct pipeline_io io = { .write = write_cb, .find = find_cb, .ctx = r };

	if (logged) {
		r->log = test_log;
		r->log.ctx = r;
		io.log = &r->log;
	}

	r->target.pid = 4242;
	r->target.major = 3;
	r->target.minor = 11;
	snprintf(r->target.module, sizeof(r->target.module), "/usr/bin/python3.11");
	snprintf(r->target.comm, sizeof(r->target.comm), "python3.11");
	return pipeline_new(c, &io);
}

static struct pipeline *make(struct run *r, int logged)
{
	return make_conf(r, logged, &conf);
}

static void sample(struct pipeline *p, struct run *r, uint64_t t)
{
	struct py_sample_hdr h = { .pid = 4242, .tid = 4242, .time_ns = t, .period = 10000000,
				   .flags = SAMPLE_F_NO_TSTATE };

	memcpy(h.comm, "python3.11", 10);
	check(pipeline_sample(p, &r->target, &h, sizeof(h)) == 0, "sample added");
}

static int tick(struct pipeline *p, int64_t wall, uint64_t mono, uint64_t lost, int final)
{
	struct pipeline_tick k = { .wall_ns = wall, .mono_ns = mono, .final = final,
				   .rotate = !final, .nstats = STAT_LOST + 1 };
	char path[256], err[256];

	k.stats[STAT_LOST] = lost;
	return pipeline_write(p, &k, path, sizeof(path), err, sizeof(err));
}

/* The counters comment of a written profile, its times. */
static int comment_has(const struct written *w, const char *want, int64_t time_nanos,
		       int64_t duration)
{
	Perftools__Profiles__Profile *m = perftools__profiles__profile__unpack(NULL, w->len, w->pb);
	int found = 0;

	if (!m)
		return 0;
	for (size_t i = 0; i < m->n_comment; i++)
		if ((size_t)m->comment[i] < m->n_string_table &&
		    strstr(m->string_table[m->comment[i]], want))
			found = 1;
	/* command, event, counters: once each, also after a failed write */
	found &= m->n_comment == 3;
	found &= m->time_nanos == time_nanos && m->duration_nanos == duration;
	perftools__profiles__profile__free_unpacked(m, NULL);
	return found;
}

static void live(struct run *r)
{
	struct pipeline *p = make(r, 1);
	int64_t w0 = 1700000000 * SEC;
	uint64_t m0 = 5 * SEC;

	check(p != NULL, "live: pipeline made");
	if (!p)
		return;
	pipeline_start(p, w0, m0);
	pipeline_target_add(p, &r->target);
	for (int i = 0; i < 3; i++)
		sample(p, r, m0 + 100 + i);
	check(tick(p, w0 + SEC, m0 + SEC, 2, 0) == 0, "live: first interval written");
	sample(p, r, m0 + SEC + 100);
	sample(p, r, m0 + SEC + 200);
	r->fail_write = 2;
	check(tick(p, w0 + 2 * SEC, m0 + 2 * SEC, 3, 0) != 0, "live: second write fails");
	sample(p, r, m0 + 2 * SEC + 100);
	check(tick(p, w0 + 3 * SEC, m0 + 3 * SEC, 5, 1) == 0, "live: final write");
	pipeline_free(p);

	check(r->nw == 2 && r->w[0].wall_ns == w0 + SEC && r->w[1].wall_ns == w0 + 3 * SEC,
	      "live: names carry the ticks' wall clock");
	check(r->nw == 2 && comment_has(&r->w[0], "counters: samples=3 lost=2 ", w0, SEC),
	      "live: first profile counts its interval (3 samples, 2 lost), 1 s from the start");
	check(r->nw == 2 && comment_has(&r->w[1], "counters: samples=3 lost=3 ", w0 + SEC, 2 * SEC),
	      "live: after a failed write the interval goes on (2 + 1 samples, 3 lost, 2 s)");
	check(r->nev == 11 && r->ev[0].kind == EV_START && r->ev[1].kind == EV_TARGET &&
	      r->ev[5].kind == EV_TICK && r->ev[5].tick.rotate && r->ev[8].kind == EV_TICK &&
	      !r->ev[8].tick.rotate && r->ev[10].kind == EV_TICK && r->ev[10].tick.final,
	      "live: 11 events logged, the failed write's tick without rotation");
}

/* Is want in one of a written profile's comments? How many comments? */
static int comment_count(const struct written *w, const char *want, size_t *n)
{
	Perftools__Profiles__Profile *m = perftools__profiles__profile__unpack(NULL, w->len, w->pb);
	int found = 0;

	*n = 0;
	if (!m)
		return 0;
	for (size_t i = 0; i < m->n_comment; i++)
		if ((size_t)m->comment[i] < m->n_string_table &&
		    strstr(m->string_table[m->comment[i]], want))
			found = 1;
	*n = m->n_comment;
	perftools__profiles__profile__free_unpacked(m, NULL);
	return found;
}

/* Writes failing with a profile over the bound held (1 byte: any): each
 * failed rotation drops what it holds, and the next profile written
 * counts the drops (samples, intervals, from the first one's start to
 * the last failed tick); the one after says nothing of them. */
static void dropped(struct run *r)
{
	struct pipeline_conf c = conf;
	struct pipeline *p;
	int64_t w0 = 1700000000 * SEC;
	uint64_t m0 = 5 * SEC;
	char want[256];
	size_t n;

	c.hold_bytes = 1;
	p = make_conf(r, 0, &c);
	check(p != NULL, "drop: pipeline made");
	if (!p)
		return;
	pipeline_start(p, w0, m0);
	r->fail_write = 1;
	sample(p, r, m0 + 100);
	sample(p, r, m0 + 200);
	check(tick(p, w0 + SEC, m0 + SEC, 0, 0) != 0, "drop: first write fails");
	r->fail_write = 2;
	sample(p, r, m0 + SEC + 100);
	check(tick(p, w0 + 2 * SEC, m0 + 2 * SEC, 0, 0) != 0, "drop: second write fails");
	sample(p, r, m0 + 2 * SEC + 100);
	check(tick(p, w0 + 3 * SEC, m0 + 3 * SEC, 0, 0) == 0, "drop: third write works");
	sample(p, r, m0 + 3 * SEC + 100);
	check(tick(p, w0 + 4 * SEC, m0 + 4 * SEC, 0, 1) == 0, "drop: final write");
	pipeline_free(p);
	snprintf(want, sizeof(want), "dropped: 3 samples of 2 intervals from %lld to %lld (unix ns)",
		 (long long)w0, (long long)(w0 + 2 * SEC));
	check(r->nw == 2 && comment_count(&r->w[0], want, &n) && n == 4 &&
	      comment_count(&r->w[0], "counters: samples=1 ", &n),
	      "drop: the next profile counts 3 samples of 2 intervals dropped, holds its own 1");
	check(r->nw == 2 && !comment_count(&r->w[1], "dropped", &n) && n == 3,
	      "drop: the profile after it does not");
}

/* What replay does: the logged events, in order, to a fresh pipeline. */
static void replayed(const struct run *live_run, struct run *r)
{
	struct pipeline *p = make(r, 0);
	char path[256], err[256];

	check(p != NULL, "replay: pipeline made");
	if (!p)
		return;
	for (int i = 0; i < live_run->nev; i++) {
		const struct event *e = &live_run->ev[i];

		if (e->kind == EV_START)
			pipeline_start(p, e->wall_ns, e->mono_ns);
		else if (e->kind == EV_TARGET)
			pipeline_target_add(p, &r->target);
		else if (e->kind == EV_FORGET)
			pipeline_target_forget(p, &r->target);
		else if (e->kind == EV_SAMPLE)
			pipeline_sample(p, &r->target, &e->rec, sizeof(e->rec));
		else
			pipeline_write(p, &e->tick, path, sizeof(path), err, sizeof(err));
	}
	pipeline_free(p);
}

int main(void)
{
	struct run *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));

	if (!a || !b)
		return 1;
	live(a);
	replayed(a, b);
	{
		struct run *d = calloc(1, sizeof(*d));

		if (!d)
			return 1;
		dropped(d);
		for (int i = 0; i < MAX_WRITES; i++)
			free(d->w[i].pb);
		free(d);
	}
	/* The live run's failed write is written in replay (the disk is
	 * fine now); it starts no interval there either. */
	check(b->nw == 3 && b->w[0].wall_ns == a->w[0].wall_ns &&
	      b->w[2].wall_ns == a->w[1].wall_ns, "replay: the same name times");
	check(b->nw == 3 && a->nw == 2 && b->w[0].len == a->w[0].len &&
	      !memcmp(b->w[0].pb, a->w[0].pb, a->w[0].len) && b->w[2].len == a->w[1].len &&
	      !memcmp(b->w[2].pb, a->w[1].pb, a->w[1].len),
	      "replay: byte for byte the live profiles");
	for (int i = 0; i < MAX_WRITES; i++) {
		free(a->w[i].pb);
		free(b->w[i].pb);
	}
	free(a);
	free(b);
	return check_exit();
}
