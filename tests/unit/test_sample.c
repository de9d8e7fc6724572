/*
 * Unit tests of src/pipeline/sample.c on synthetic records (issue 15, item
 * 2): a Python walk that meets garbage must end in one placeholder, never
 * in a column of them. The "target" is this process: fake 3.12 code
 * objects and strings live in our own memory, laid out by the generated
 * 3.12 table, so the real readers (process_vm_readv on ourselves) resolve
 * them; a garbage code pointer points at an unmapped page. No root needed.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "collapsed.h"
#include "profile.h"
#include "pyoffsets.h"
#include "pysym.h"
#include "pyversion.h"
#include "sample.h"
#include "target_src.h"

/* A check that shows what it got when it fails. */
static void check_got(int ok, const char *what, const char *got)
{
	if (!check(ok, "%s", what))
		printf("# got: %s\n", got);
}

/* One fake code object with its name, file and an empty line table (so
 * line 0). */
struct fake_code {
	_Alignas(64) uint8_t code[1024];
	_Alignas(16) uint8_t name[128], file[128], table[64];
};

static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static void fake_str(const struct py_code_offsets *o, uint8_t *obj, const char *s)
{
	uint32_t state = (1u << 2) | (1u << 5) | (1u << 6);	/* 1-byte, compact, ascii */

	put_u64(obj + o->unicode_length, strlen(s));
	memcpy(obj + o->unicode_state, &state, 4);
	memcpy(obj + o->unicode_ascii_size, s, strlen(s));
}

static void fake_code(const struct py_code_offsets *o, struct fake_code *c, const char *name)
{
	int32_t first = 10;

	memset(c, 0, sizeof(*c));
	fake_str(o, c->name, name);
	fake_str(o, c->file, "fake.py");
	put_u64(c->code + o->co_qualname, (uintptr_t)c->name);
	put_u64(c->code + o->co_name, (uintptr_t)c->name);
	put_u64(c->code + o->co_filename, (uintptr_t)c->file);
	put_u64(c->code + o->co_linetable, (uintptr_t)c->table);
	memcpy(c->code + o->co_firstlineno, &first, 4);
}

struct env {
	struct py_target t;
	struct sample_sink *k;
	struct py_sample *s;
	struct fake_code a, b, c, d;
	uint64_t garbage;	/* an unmapped page */
};

static void frame(struct env *e, unsigned i, uint64_t code, uint32_t flags)
{
	e->s->frames[i].code = code;
	/* Past the first instruction: a started frame. */
	e->s->frames[i].lasti = code + e->t.layout.code.co_code_adaptive + 2;
	e->s->frames[i].flags = flags;
}

/* The record in buf (len bytes) into a fresh profile: its one collapsed
 * line (static buffer). */
static const char *run_buf(struct env *e, const uint8_t *buf, size_t len)
{
	static char line[4096];
	char *text = NULL;
	size_t n = 0;

	profile_free(e->k->prof);
	e->k->prof = profile_new();
	profile_add_sample_type(e->k->prof, "samples", "count");
	profile_add_sample_type(e->k->prof, "cpu", "nanoseconds");
	memset(&e->k->n, 0, sizeof(e->k->n));
	if (e->k->clock) {	/* live: checked as session.c adds a drain */
		sample_precheck(e->k, &e->t, buf, len);
		sample_precheck_end(e->k);
	}
	if (sample_add(e->k, &e->t, buf, len) || collapsed_encode(e->k->prof, &text, &n))
		return "(sample_add or encode failed)";
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(text, "\n"), text);
	free(text);
	return line;
}

/* Adds the record with n frames and flags to a fresh profile; returns its
 * one collapsed line (static buffer). */
static const char *run(struct env *e, unsigned n, uint32_t flags)
{
	e->s->h.pid = (uint32_t)getpid();
	e->s->h.tid = (uint32_t)getpid();
	e->s->h.period = 1000;
	e->s->h.flags = flags;
	e->s->h.nframes = (uint16_t)n;
	return run_buf(e, (const uint8_t *)e->s, sizeof(e->s->h) + n * sizeof(e->s->frames[0]));
}

#define CODE(x) ((uint64_t)(uintptr_t)(x).code)

static void test_cases(struct env *e)
{
	const char *got;

	/* A chain that ran into garbage, 1024 frames deep (the BPF limit). */
	frame(e, 0, CODE(e->a), 0);
	frame(e, 1, CODE(e->b), FRAME_F_ENTRY);
	for (unsigned i = 2; i < PYPERF_MAX_FRAMES; i++)
		frame(e, i, e->garbage + 64 * i, i % 3 ? 0 : FRAME_F_ENTRY);
	got = run(e, PYPERF_MAX_FRAMES, SAMPLE_F_TRUNCATED);
	check_got(!strcmp(got, "[unreadable Python frame];b (fake.py:0);a (fake.py:0) 1"),
		  "runaway walk: one placeholder at the root, no [truncated]", got);
	check_got(e->k->n.cut_walks == 1 && e->k->n.truncated == 0, "runaway walk: counted as cut",
		  "counters");

	/* The BPF walk stopped at an implausible frame or a cycle. */
	frame(e, 2, CODE(e->c), 0);
	got = run(e, 3, SAMPLE_F_BAD_CHAIN);
	check_got(!strcmp(got, "[unreadable Python frame];c (fake.py:0);b (fake.py:0);a (fake.py:0) 1"),
		  "BPF cut: frames up to the cut, then one placeholder", got);
	check_got(e->k->n.cut_walks == 1, "BPF cut: counted", "counters");

	/* One code object freed since the sample: its neighbours stay. */
	frame(e, 1, e->garbage, 0);
	got = run(e, 3, 0);
	check_got(!strcmp(got, "c (fake.py:0);[unreadable Python frame];a (fake.py:0) 1"),
		  "one unreadable frame in the middle: a placeholder, the outer frames kept", got);
	check_got(e->k->n.cut_walks == 0 && e->k->n.bad_frames == 1, "one unreadable frame: not a cut",
		  "counters");

	/* A run of them is one placeholder. */
	frame(e, 1, e->garbage, FRAME_F_ENTRY);
	frame(e, 2, e->garbage + 4096 - 64, 0);
	frame(e, 3, CODE(e->c), 0);
	got = run(e, 4, 0);
	check_got(!strcmp(got, "c (fake.py:0);[unreadable Python frame];a (fake.py:0) 1"),
		  "a run of unreadable frames: one placeholder", got);

	/* A clean walk is untouched, and a real truncation still says so. */
	frame(e, 1, CODE(e->b), 0);
	frame(e, 2, CODE(e->c), 0);
	got = run(e, 3, SAMPLE_F_TRUNCATED);
	check_got(!strcmp(got, "[truncated];c (fake.py:0);b (fake.py:0);a (fake.py:0) 1"),
		  "clean truncated walk: frames and [truncated]", got);
}

/* Names that the one read of a new code object's strings cannot hold
 * whole: one longer than it reads (read again on its own), one just before
 * an unmapped page (the read stops there; file name and line table are
 * read again on their own). Both come out in full. */
static void test_long_names(struct env *e)
{
	const struct py_code_offsets *o = &e->t.layout.code;
	static uint8_t big[2048];
	static struct fake_code f, g;	/* never cached before */
	char want[600], name[400];
	uint8_t *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			      -1, 0);
	uint8_t *edge;
	const char *got;

	if (pages == MAP_FAILED || mprotect(pages + 4096, 4096, PROT_NONE)) {
		check_got(0, "long names: set-up", "mmap");
		return;
	}
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	fake_code(o, &f, "unused");
	fake_str(o, big, name);
	put_u64(f.code + o->co_qualname, (uintptr_t)big);
	frame(e, 0, CODE(f), 0);
	got = run(e, 1, 0);
	snprintf(want, sizeof(want), "%s (fake.py:0) 1", name);
	check_got(!strcmp(got, want), "a name longer than the first read: read in full", got);

	fake_code(o, &g, "unused");
	edge = pages + 4096 - (o->unicode_compact_size + 16);
	fake_str(o, edge, "edgename");
	put_u64(g.code + o->co_qualname, (uintptr_t)edge);
	frame(e, 0, CODE(g), 0);
	got = run(e, 1, 0);
	check_got(!strcmp(got, "edgename (fake.py:0) 1"),
		  "a name ending at an unmapped page: read in full", got);
	munmap(pages, 8192);
}

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

/* Code object d freed and another allocated at its address (its first
 * line differs, so its fingerprint does), named name. */
static void replace_d(struct env *e, const char *name, int32_t first)
{
	fake_code(&e->t.layout.code, &e->d, name);
	memcpy(e->d.code + e->t.layout.code.co_firstlineno, &first, 4);
}

static uint64_t checks_skipped(struct env *e)
{
	struct pysym_stats st;

	pysym_get_stats(e->k->syms, &st);
	return st.fresh;
}

/* Live sessions do not re-read a code object checked since the sample
 * was taken; a sample taken after the check is checked again. */
static void test_validation_clock(struct env *e)
{
	const char *got;
	uint64_t skipped;

	e->k->clock = fake_clock;
	replace_d(e, "d", 10);
	frame(e, 0, CODE(e->d), 0);
	fake_now = 1000000000;		/* loaded (checked) at 1 s */
	e->s->h.time_ns = 100000000;
	got = run(e, 1, 0);
	check_got(!strcmp(got, "d (fake.py:0) 1"), "clock: code object loaded", got);
	replace_d(e, "e", 20);
	skipped = checks_skipped(e);
	e->s->h.time_ns = 500000000;	/* sampled before the check */
	got = run(e, 1, 0);
	check_got(!strcmp(got, "d (fake.py:0) 1") && checks_skipped(e) == skipped + 1,
		  "clock: a sample older than the last check is not checked again", got);
	fake_now = 2000000000;
	e->s->h.time_ns = 1500000000;	/* sampled after the check */
	got = run(e, 1, 0);
	check_got(!strcmp(got, "e (fake.py:0) 1"),
		  "clock: a sample newer than the last check sees the new code object", got);
	e->k->clock = NULL;		/* replay: every sample checks */
	replace_d(e, "d", 10);
	e->s->h.time_ns = 0;
	got = run(e, 1, 0);
	check_got(!strcmp(got, "d (fake.py:0) 1"), "no clock: every sample checks", got);
}

/* Entries are a process's by pid and start time. A forget (exit, exec:
 * the same pid and start time) refuses the entries made before it, not
 * those made after; a pid reused (another start time) never matches the
 * old process's. Samples older than the last load are not checked
 * (clock), so only the cache's own keys tell the code objects apart. */
static void test_forget(struct env *e)
{
	const char *got;
	uint64_t start = e->t.start_time;

	e->k->clock = fake_clock;
	fake_now = 10000000000;
	e->s->h.time_ns = 9000000000;
	replace_d(e, "d", 10);
	frame(e, 0, CODE(e->d), 0);
	got = run(e, 1, 0);
	check_got(!strcmp(got, "d (fake.py:0) 1"), "forget: d loaded", got);
	replace_d(e, "e", 20);
	got = run(e, 1, 0);
	check_got(!strcmp(got, "d (fake.py:0) 1"), "forget: not checked, d cached", got);
	pysym_forget(e->k->syms, e->t.pid, start);
	got = run(e, 1, 0);
	check_got(!strcmp(got, "e (fake.py:0) 1"), "forget: the entry made before is refused", got);
	replace_d(e, "f", 30);
	got = run(e, 1, 0);
	check_got(!strcmp(got, "e (fake.py:0) 1"), "forget: the entry made after is kept", got);
	e->t.start_time = start + 1;
	got = run(e, 1, 0);
	check_got(!strcmp(got, "f (fake.py:0) 1"), "forget: a reused pid is another process", got);
	replace_d(e, "g", 40);
	e->t.start_time = start;
	got = run(e, 1, 0);
	check_got(!strcmp(got, "e (fake.py:0) 1"),
		  "forget: the first process's later entry is still its own", got);
	/* Enough others forgotten for a pass over the cache: it frees the
	 * refused entries and keeps the rest. */
	for (int i = 1; i <= 70; i++)
		pysym_forget(e->k->syms, e->t.pid + i, start);
	got = run(e, 1, 0);
	check_got(!strcmp(got, "e (fake.py:0) 1"), "forget: a pass keeps the others' entries", got);
	pysym_forget(e->k->syms, e->t.pid, start);
	got = run(e, 1, 0);
	check_got(!strcmp(got, "g (fake.py:0) 1"), "forget: after a pass, forgetting again works",
		  got);
	e->k->clock = NULL;
}

/* A drain's records have their code objects checked together, one read
 * for all, before they are added (session.c); the records then need no
 * read of their own, and a code object replaced since its last check is
 * seen as such. One record full, one compact. */
static void test_precheck(struct env *e)
{
	static uint8_t cbuf[sizeof(struct py_sample_hdr) + sizeof(struct py_frame_compact)];
	struct py_frame_compact c = { 0 };
	struct pysym_stats st0, st1, st2;
	struct py_sample_hdr h;
	const char *got;
	char first[4096];

	e->k->clock = fake_clock;
	fake_now = 3000000000;
	replace_d(e, "d", 10);
	frame(e, 0, CODE(e->d), 0);
	e->s->h.time_ns = 2900000000;
	got = run(e, 1, 0);
	check_got(!strcmp(got, "d (fake.py:0) 1"), "precheck: d loaded", got);
	frame(e, 0, CODE(e->b), 0);
	got = run(e, 1, 0);
	check_got(!strcmp(got, "b (fake.py:0) 1"), "precheck: b loaded", got);
	/* The drain: d replaced since, then sampled (full) with b (compact). */
	replace_d(e, "e", 20);
	fake_now = 5000000000;
	frame(e, 0, CODE(e->d), 0);
	e->s->h.time_ns = 4000000000;
	e->s->h.nframes = 1;
	e->s->h.flags = 0;
	h = e->s->h;
	h.flags = SAMPLE_F_COMPACT;
	memcpy(cbuf, &h, PY_SAMPLE_REGS_OFF);
	memcpy(cbuf + PY_SAMPLE_REGS_OFF, (uint8_t *)&h + PY_SAMPLE_REGS_OFF + PY_SAMPLE_REGS_LEN,
	       sizeof(h) - PY_SAMPLE_REGS_OFF - PY_SAMPLE_REGS_LEN);
	c.code_flags = CODE(e->b);
	c.lasti = CODE(e->b) + e->t.layout.code.co_code_adaptive + 2;
	memcpy(cbuf + PY_SAMPLE_COMPACT_HDR, &c, sizeof(c));
	pysym_get_stats(e->k->syms, &st0);
	sample_precheck(e->k, &e->t, e->s, sizeof(e->s->h) + sizeof(e->s->frames[0]));
	sample_precheck(e->k, &e->t, cbuf, PY_SAMPLE_COMPACT_HDR + sizeof(c));
	/* b again, sampled just before the check: still read once. */
	frame(e, 0, CODE(e->b), 0);
	e->s->h.time_ns = fake_now - 100000;
	sample_precheck(e->k, &e->t, e->s, sizeof(e->s->h) + sizeof(e->s->frames[0]));
	sample_precheck_end(e->k);
	pysym_get_stats(e->k->syms, &st1);
	sample_add(e->k, &e->t, e->s, sizeof(e->s->h) + sizeof(e->s->frames[0]));
	pysym_get_stats(e->k->syms, &st2);
	check(st2.check_reads == st1.check_reads,
	      "precheck: a record sampled just before the check is not read again");
	frame(e, 0, CODE(e->d), 0);
	e->s->h.time_ns = 4000000000;
	check(st1.check_reads == st0.check_reads + 1 && st1.checks == st0.checks + 2,
	      "precheck: three records' two code objects in one read (%llu reads, %llu checks)",
	      (unsigned long long)(st1.check_reads - st0.check_reads),
	      (unsigned long long)(st1.checks - st0.checks));
	snprintf(first, sizeof(first), "%s", run(e, 1, 0));
	got = run_buf(e, cbuf, PY_SAMPLE_COMPACT_HDR + sizeof(c));
	pysym_get_stats(e->k->syms, &st2);
	check_got(!strcmp(first, "e (fake.py:0) 1"), "precheck: the replaced code object read anew",
		  first);
	check_got(!strcmp(got, "b (fake.py:0) 1") && st2.check_reads == st1.check_reads,
		  "precheck: the records need no read of their own", got);
	e->k->clock = NULL;
}

/* A record is added with its drain, not held back, when it names a code
 * object the BPF program had not seen lately and user space has yet to
 * read, or when its native walk waits for tables (session.c). */
static void test_prompt(struct env *e)
{
	size_t len = sizeof(e->s->h) + 2 * sizeof(e->s->frames[0]);
	struct fake_code fresh;

	fake_code(&e->t.layout.code, &fresh, "fresh");
	frame(e, 0, CODE(e->a), 0);
	frame(e, 1, CODE(e->b), 0);
	run(e, 2, 0);			/* a and b are cached now */
	e->s->h.flags = 0;
	check(!sample_is_prompt(e->k, &e->t, e->s, len), "prompt: no flag, held back");
	e->s->h.flags = SAMPLE_F_NEW_CODE;
	check(!sample_is_prompt(e->k, &e->t, e->s, len),
	      "prompt: new to the BPF program, but cached: held back");
	frame(e, 1, CODE(fresh), 0);
	check(sample_is_prompt(e->k, &e->t, e->s, len),
	      "prompt: a code object not read yet: added now");
	e->s->h.flags = 0;
	check(!sample_is_prompt(e->k, &e->t, e->s, len),
	      "prompt: not read yet, but the BPF program saw it lately: held back");
	frame(e, 1, CODE(e->b), 0);
	e->s->h.flags = SAMPLE_F_NO_TABLES;
	check(sample_is_prompt(e->k, &e->t, e->s, len), "prompt: a mapping without tables");
}

/* The checks of a batch answered by another reader (the BPF program,
 * session.c): answered entries are not read again; bytes that differ from
 * what was cached drop the entry, so the next record reads it anew. */
static void test_answers(struct env *e)
{
	size_t len = sizeof(e->s->h) + 2 * sizeof(e->s->frames[0]);
	struct pysym_stats st0, st1, st2;
	const struct py_target *t = NULL;
	uint8_t bytes[2][256];
	uint64_t addr[4];
	uint16_t n, blen = 0;
	int32_t first = 99;

	e->k->clock = fake_clock;
	fake_now = 7000000000;
	frame(e, 0, CODE(e->a), 0);
	frame(e, 1, CODE(e->b), 0);
	e->s->h.time_ns = 6900000000;
	run(e, 2, 0);			/* both cached and checked at 7 s */
	fake_now = 9000000000;
	e->s->h.time_ns = 8000000000;	/* a sample after that check */
	e->s->h.flags = 0;
	pysym_get_stats(e->k->syms, &st0);
	sample_precheck(e->k, &e->t, e->s, len);
	n = (uint16_t)sample_precheck_queue(e->k, &t, addr, 4, &blen);
	if (!check(n == 2 && t == &e->t && blen <= sizeof(bytes[0]) && addr[0] && addr[1],
		   "answers: both code objects queued (%u)", n)) {
		sample_precheck_end(e->k);
		e->k->clock = NULL;
		return;
	}
	memcpy(bytes[0], (void *)(uintptr_t)addr[0], blen);
	memcpy(bytes[1], (void *)(uintptr_t)addr[1], blen);
	/* The second answer saw another code object there (its first line). */
	memcpy(bytes[1] + e->t.layout.code.co_firstlineno - (addr[1] - CODE(e->b)), &first, 4);
	sample_precheck_answer(e->k, 0, bytes[0], 8500000000);
	sample_precheck_answer(e->k, 1, bytes[1], 8500000000);
	sample_precheck_end(e->k);
	pysym_get_stats(e->k->syms, &st1);
	check(st1.check_reads == st0.check_reads && st1.answered == st0.answered + 2 &&
	      st1.stale == st0.stale + 1,
	      "answers: no read of our own, one entry dropped (%llu reads, %llu stale)",
	      (unsigned long long)(st1.check_reads - st0.check_reads),
	      (unsigned long long)(st1.stale - st0.stale));
	sample_add(e->k, &e->t, e->s, len);
	pysym_get_stats(e->k->syms, &st2);
	check(st2.misses == st1.misses + 1, "answers: the dropped one is read anew when added");
	e->k->clock = NULL;
}

/* Compact records (bpf/pyperf.h): 16-byte frames after a header without
 * regs, or after the whole header (SAMPLE_F_COMPACT_REGS: a kernel-mode
 * sample that carries a stack copy). Both read as the full record does. */
static void test_compact(struct env *e)
{
	static uint8_t buf[sizeof(struct py_sample_hdr) + 4 * sizeof(struct py_frame_compact)];
	const size_t regs_end = PY_SAMPLE_REGS_OFF + PY_SAMPLE_REGS_LEN;
	char full[4096];
	const char *got;

	frame(e, 0, CODE(e->a), 0);
	frame(e, 1, CODE(e->b), FRAME_F_ENTRY);
	frame(e, 2, CODE(e->c), 0);
	snprintf(full, sizeof(full), "%s", run(e, 3, 0));
	check_got(!strcmp(full, "c (fake.py:0);b (fake.py:0);a (fake.py:0) 1"),
		  "compact: the full record's stack", full);
	for (int keep_regs = 0; keep_regs < 2; keep_regs++) {
		struct py_sample_hdr h = e->s->h;
		size_t hdr = keep_regs ? sizeof(h) : PY_SAMPLE_COMPACT_HDR;

		h.flags = SAMPLE_F_COMPACT | (keep_regs ? SAMPLE_F_COMPACT_REGS : 0);
		for (int i = 0; i < PYPERF_NREGS; i++)
			h.regs[i] = 0x1111111111111111ull * (uint64_t)(i + 1);
		if (keep_regs) {
			memcpy(buf, &h, sizeof(h));
		} else {
			memcpy(buf, &h, PY_SAMPLE_REGS_OFF);
			memcpy(buf + PY_SAMPLE_REGS_OFF, (uint8_t *)&h + regs_end,
			       sizeof(h) - regs_end);
		}
		for (int i = 0; i < 3; i++) {
			struct py_frame_compact c = {
				.code_flags = e->s->frames[i].code | e->s->frames[i].flags,
				.lasti = e->s->frames[i].lasti };

			memcpy(buf + hdr + (size_t)i * sizeof(c), &c, sizeof(c));
		}
		got = run_buf(e, buf, hdr + 3 * sizeof(struct py_frame_compact));
		check_got(!strcmp(got, full) && e->k->n.malformed == 0,
			  keep_regs ? "compact frames after the whole header: the same stack" :
				      "compact record: the same stack", got);
		/* One byte short of its frames: refused, not misread. */
		got = run_buf(e, buf, hdr + 3 * sizeof(struct py_frame_compact) - 1);
		check(e->k->n.malformed == 1, "%s one byte short: malformed",
		      keep_regs ? "compact frames after the whole header," : "compact record,");
	}
}

/* The weight (second value) of the one sample run() last added; -1 if none. */
static int64_t last_weight(struct env *e)
{
	struct profile_view v;

	profile_get_view(e->k->prof, &v);
	return v.nsamples == 1 && v.nsample_types == 2 ? v.values[1] : -1;
}

/* Wall mode: a thread running when its process became a target counts from
 * then (the BPF program's since_ns), a few ms before the events were
 * attached and the window began; only the part inside the window counts.
 * Before, a busy thread read up to +0.9 % of a 500 ms window. */
static void test_wall_window(struct env *e)
{
	const uint64_t from = 1000000000000ull, ms = 1000000;

	frame(e, 0, CODE(e->a), FRAME_F_ENTRY);
	e->k->wall_from_ns = from;
	e->s->h.time_ns = from + 1 * ms;
	run(e, 1, 0);
	e->s->h.period = 5 * ms;	/* run() set 1000 ns: a record of 5 ms */
	e->s->h.nframes = 1;
	run_buf(e, (const uint8_t *)e->s, sizeof(e->s->h) + sizeof(e->s->frames[0]));
	check(last_weight(e) == (int64_t)(1 * ms),
	      "wall: 5 ms on the CPU ending 1 ms into the window weigh 1 ms (got %lld)",
	      (long long)last_weight(e));
	e->s->h.time_ns = from + 9 * ms;
	run_buf(e, (const uint8_t *)e->s, sizeof(e->s->h) + sizeof(e->s->frames[0]));
	check(last_weight(e) == (int64_t)(5 * ms), "wall: a span inside the window is whole");
	e->s->h.time_ns = from - 1 * ms;
	run_buf(e, (const uint8_t *)e->s, sizeof(e->s->h) + sizeof(e->s->frames[0]));
	check(last_weight(e) == -1, "wall: a record from before the window adds nothing");
	e->k->wall_from_ns = 0;
	run_buf(e, (const uint8_t *)e->s, sizeof(e->s->h) + sizeof(e->s->frames[0]));
	check(last_weight(e) == (int64_t)(5 * ms), "cpu mode: the period, whenever taken");
	e->s->h.time_ns = 0;
}

int main(void)
{
	const struct py_layout *l = py_layout_find(3, 12, 0);
	struct env *e = calloc(1, sizeof(*e));
	void *page;

	if (!l || !e)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	e->t.src = target_src_live();
	e->t.pid = getpid();
	e->t.major = 3;
	e->t.minor = 12;
	e->t.layout = *l;
	snprintf(e->t.module, sizeof(e->t.module), "libpython3.12.so");
	e->k = calloc(1, sizeof(*e->k));
	e->s = calloc(1, sizeof(*e->s));
	page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!e->k || !e->s || page == MAP_FAILED || munmap(page, 4096))
		return 1;
	e->garbage = (uint64_t)(uintptr_t)page;
	e->k->syms = pysym_cache_new(256);
	if (!e->k->syms)
		return 1;
	fake_code(&l->code, &e->a, "a");
	fake_code(&l->code, &e->b, "b");
	fake_code(&l->code, &e->c, "c");
	test_cases(e);
	test_compact(e);
	test_validation_clock(e);
	test_precheck(e);
	test_forget(e);
	test_answers(e);
	test_prompt(e);
	test_long_names(e);
	test_wall_window(e);
	profile_free(e->k->prof);
	pysym_cache_free(e->k->syms);
	free(e->k->full);	/* expand_compact's buffer */
	free(e->s);
	free(e->k);
	free(e);
	return check_exit();
}
