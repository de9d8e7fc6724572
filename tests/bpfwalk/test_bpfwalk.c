/*
 * test_bpfwalk CAPTURE...: replays each capture (bwcap.h) through the BPF
 * walk compiled into user space (bpfwalk.c), its memory served from the
 * capture by the replay source (src/record/replay_src.c) and its unwind
 * tables from the capture's entries, and compares the record with the one
 * the live program sent for the same thread state: the thread state, the
 * walk's flags, every Python frame (code object, instruction, entry flag)
 * and every native pc with its anchor tag. Exit 0 when all are equal, 3
 * otherwise (each difference printed: tests/bpfwalk.sh tells this from a
 * crash), 2 when a capture cannot be read.
 * -v (before the captures) prints each record; --records DIR writes each
 * record the walk made, as the ring buffer holds it, to DIR/NAME.bin (for
 * the names through the pipeline, tests/bpfwalk.sh); --layout prints the
 * record header's sizes and offsets recnames.py assumes; --tasks runs the
 * running task's search on made-up states (bwtasks.c).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bwcap.h"
#include "bwtasks.h"

static struct bwcap_want got;

/* Anchor tags on the pcs: each is an eval-loop frame the merge replaces
 * with its Python frames. */
static unsigned tagged(const struct bwcap_want *w)
{
	unsigned n = 0;

	for (uint32_t i = 0; i < w->native_n; i++)
		n += (w->pcs[i] & PY_PC_EVAL) != 0;
	return n;
}

/* -v: the record, pcs with the mapping they lie in (unwind_procs). */
static void dump(const struct bwcap *c, const struct bwcap_want *w)
{
	const struct py_unwind_proc *p = NULL;

	for (size_t i = 0; i < c->nent; i++)
		if (c->ent[i].map == BW_UNWIND_PROCS && c->ent[i].found)
			p = (const void *)c->ent[i].value;
	printf("  regs ip %#llx sp %#llx bp %#llx, thread state %#llx, flags %#x\n",
	       (unsigned long long)c->in.ip, (unsigned long long)c->in.sp,
	       (unsigned long long)c->in.bp, (unsigned long long)w->tstate, w->flags);
	for (uint32_t i = 0; i < w->nframes; i++)
		printf("  frame %2u code %#llx lasti %#llx flags %u\n", i,
		       (unsigned long long)w->frames[i].code, (unsigned long long)w->frames[i].lasti,
		       w->frames[i].flags);
	for (uint32_t i = 0; i < w->native_n; i++) {
		uint64_t pc = w->pcs[i] & ~PY_PC_TAGS;
		int m = -1;

		for (uint32_t k = 0; p && k < p->n && k < PY_UNWIND_MAX_MAPS; k++)
			if (pc >= p->m[k].start && pc < p->m[k].end)
				m = (int)k;
		printf("  pc %2u %#llx%s%s group %u, mapping %d (object %u, at %#llx)\n", i,
		       (unsigned long long)pc, (w->pcs[i] & PY_PC_EVAL) ? " eval" : "",
		       (w->pcs[i] & PY_PC_TRAMPOLINE) ? " trampoline" : "", PY_PC_GROUP(w->pcs[i]), m,
		       m >= 0 ? p->m[m].obj : 0,
		       m >= 0 ? (unsigned long long)(pc - p->m[m].bias) : 0ull);
	}
	printf("  native walk ended: %u\n", w->native_end);
}

static int verbose;
static const char *dump_dir;	/* --records DIR: each harness record into DIR/NAME.bin */

static void write_record(const char *cap, const struct bpfwalk_in *in,
			 const struct bpfwalk_out *o)
{
	static uint8_t buf[sizeof(struct py_sample)];
	const char *base = strrchr(cap, '/');
	char path[4096];
	size_t n = bwcap_encode(in, o, buf, sizeof(buf));
	FILE *f;

	snprintf(path, sizeof(path), "%s/%.*s.bin", dump_dir, (int)strcspn(base ? base + 1 : cap, "."),
		 base ? base + 1 : cap);
	f = fopen(path, "w");
	if (!f || !n || fwrite(buf, 1, n, f) != n)
		fprintf(stderr, "test_bpfwalk: cannot write %s\n", path);
	if (f)
		fclose(f);
}

static int replay_one(const char *path)
{
	struct bpfwalk_out out = { 0 };
	struct bpfwalk_tables tb;
	struct bwcap c;
	char err[512];
	int diff;

	if (bwcap_load(path, &c, err, sizeof(err)) || rec_replay_begin(c.r, err, sizeof(err))) {
		fprintf(stderr, "test_bpfwalk: %s\n", err);
		bwcap_free(&c);
		return 2;
	}
	tb = bwcap_tables(&c);
	if (bpfwalk_run(&c.in, rec_replay_src(c.r), &tb, &out)) {
		fprintf(stderr, "test_bpfwalk: out of memory\n");
		rec_replay_end(c.r);
		bwcap_free(&c);
		return 2;
	}
	bwcap_want_of_out(&out, &got);
	diff = bwcap_compare(&c.want, &got, stdout);
	printf("%s %s (%s): %u Python frames, %u native pcs (end %u), %u eval-loop frames tagged; "
	       "%llu reads served, %llu not in the capture; %zu code captures\n",
	       diff ? "FAIL" : "ok", path, c.label, got.nframes, got.native_n, got.native_end, tagged(&got),
	       (unsigned long long)c.r->reads, (unsigned long long)c.r->reads_missed, out.ncaps);
	if (verbose)
		dump(&c, &got);
	if (dump_dir)
		write_record(path, &c.in, &out);
	bpfwalk_out_free(&out);
	rec_replay_end(c.r);
	bwcap_free(&c);
	return diff ? 3 : 0;
}

int main(int argc, char **argv)
{
	int rc = 0, r;

	if (argc < 2) {
		fprintf(stderr, "usage: test_bpfwalk CAPTURE...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v")) {
			verbose = 1;
			continue;
		}
		if (!strcmp(argv[i], "--layout")) {
			/* recnames.py's offsets of struct py_sample_hdr */
			printf("%zu %zu %zu %zu %zu\n", sizeof(struct py_sample_hdr),
			       (size_t)PY_SAMPLE_COMPACT_HDR, (size_t)PY_SAMPLE_REGS_OFF,
			       offsetof(struct py_sample_hdr, flags),
			       offsetof(struct py_sample_hdr, native_n));
			return 0;
		}
		if (!strcmp(argv[i], "--tasks")) {
			/* find_tasks on made-up states (bwtasks.c) */
			if (bwtasks_run(stdout))
				rc = 3;
			continue;
		}
		if (!strcmp(argv[i], "--records") && i + 1 < argc) {
			dump_dir = argv[++i];
			continue;
		}
		r = replay_one(argv[i]);
		if (r > rc)
			rc = r;
	}
	return rc;
}
