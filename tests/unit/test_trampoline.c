/*
 * Tests of src/native/trampoline.c on byte strings: the rules derived from
 * a trampoline template at each instruction boundary, for the four shapes
 * CPython's x86-64 builds use (Python/asm_trampoline.S: 3.12/3.13
 * sub $8,%rsp; call *%rcx; add $8,%rsp; ret and 3.14+ push %rbp;
 * mov %rsp,%rbp; call *%rcx; pop %rbp; ret, each with and without
 * endbr64), shapes no CPython has shipped (nops, other registers, stack
 * alignment), the refusals (never a guess), matching an ip against copies,
 * and the table of a whole arena at the strides CPython copies with; then
 * src/python/pytramp.c on the interpreters of this machine (pyenv's 3.11
 * to 3.13, Debian sid's 3.14 and 3.15 in the chroot $PYPERF_SID_ROOT (contrib/sid-chroot.sh), which must
 * exist).
 *
 * One "ok ..." / "FAIL ..." line per check; exits 1 if any check failed.
 */
#include "check.h"
#include "elffile.h"
#include "pytramp.h"
#include "trampoline.h"
#include "unwind_table.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* One expected boundary: offset, base, CFA offset, saved rbp (0: same). */
struct want {
	uint8_t at, base, cfa;
	int8_t rbp;
};

struct shape_case {
	const char *what;
	uint8_t code[TRAMP_MAX_LEN];
	uint8_t len;
	struct want w[12];
	uint8_t nw;
};

#define RSP TRAMP_CFA_RSP
#define RBP TRAMP_CFA_RBP

static const struct shape_case shapes[] = {
	/* pyenv 3.12.1 and 3.13.0 (objdump of libpython's template) */
	{ "3.12/3.13: sub; call *%rcx; add; ret",
	  { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3 }, 11,
	  { { 0, RSP, 8, 0 }, { 4, RSP, 16, 0 }, { 6, RSP, 16, 0 }, { 10, RSP, 8, 0 } }, 4 },
	{ "3.12/3.13 CET: endbr64; sub; call *%rcx; add; ret",
	  { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08,
	    0xc3 }, 15,
	  { { 0, RSP, 8, 0 }, { 4, RSP, 8, 0 }, { 8, RSP, 16, 0 }, { 10, RSP, 16, 0 },
	    { 14, RSP, 8, 0 } }, 5 },
	/* Debian sid's 3.14.10 and 3.15.2 (.rodata of /usr/bin/python3.1x) */
	{ "3.14/3.15 CET: endbr64; push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret",
	  { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 }, 12,
	  { { 0, RSP, 8, 0 }, { 4, RSP, 8, 0 }, { 5, RSP, 16, -16 }, { 8, RSP, 16, -16 },
	    { 10, RSP, 16, -16 }, { 11, RSP, 8, 0 } }, 6 },
	{ "3.14/3.15: push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret",
	  { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 }, 8,
	  { { 0, RSP, 8, 0 }, { 1, RSP, 16, -16 }, { 4, RSP, 16, -16 }, { 6, RSP, 16, -16 },
	    { 7, RSP, 8, 0 } }, 5 },
	/* never shipped: a 5-byte nop, the other mov encoding, and a leave */
	{ "unseen: nopl 0(%rax,%rax); push %rbp; mov %rsp,%rbp (8b ec); call *%rax; leave; ret",
	  { 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x55, 0x48, 0x8b, 0xec, 0xff, 0xd0, 0xc9, 0xc3 }, 13,
	  { { 0, RSP, 8, 0 }, { 5, RSP, 8, 0 }, { 6, RSP, 16, -16 }, { 9, RSP, 16, -16 },
	    { 11, RSP, 16, -16 }, { 12, RSP, 8, 0 } }, 6 },
	{ "unseen: push %rbx; sub $0x10,%rsp; call *%r11; add $0x10,%rsp; pop %rbx; nop; ret",
	  { 0x53, 0x48, 0x83, 0xec, 0x10, 0x41, 0xff, 0xd3, 0x48, 0x83, 0xc4, 0x10, 0x5b, 0x90,
	    0xc3 }, 15,
	  { { 0, RSP, 8, 0 }, { 1, RSP, 16, 0 }, { 5, RSP, 32, 0 }, { 8, RSP, 32, 0 },
	    { 12, RSP, 16, 0 }, { 13, RSP, 8, 0 }, { 14, RSP, 8, 0 } }, 7 },
	/* stack alignment: only the frame pointer knows the CFA in between */
	{ "unseen: push %rbp; mov %rsp,%rbp; and $-16,%rsp; call *%rcx; mov %rbp,%rsp; pop %rbp; ret",
	  { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xe4, 0xf0, 0xff, 0xd1, 0x48, 0x89, 0xec, 0x5d,
	    0xc3 }, 15,
	  { { 0, RSP, 8, 0 }, { 1, RSP, 16, -16 }, { 4, RSP, 16, -16 }, { 8, RBP, 16, -16 },
	    { 10, RBP, 16, -16 }, { 13, RSP, 16, -16 }, { 14, RSP, 8, 0 } }, 7 },
	{ "unseen: 66 2e 0f 1f 84 00 00 00 00 00 (10-byte nop); sub $0x88,%rsp (imm32); "
	  "call *%rcx; add; ret",
	  { 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,
	    0x48, 0x81, 0xec, 0x88, 0x00, 0x00, 0x00, 0xff, 0xd1,
	    0x48, 0x81, 0xc4, 0x88, 0x00, 0x00, 0x00, 0xc3 }, 27,
	  { { 0, RSP, 8, 0 }, { 10, RSP, 8, 0 }, { 17, RSP, 144, 0 }, { 19, RSP, 144, 0 },
	    { 26, RSP, 8, 0 } }, 5 },
};

static void test_derive(void)
{
	for (size_t i = 0; i < N(shapes); i++) {
		const struct shape_case *c = &shapes[i];
		struct tramp_shape sh;
		int ok = tramp_shape_derive(c->code, c->len, &sh) == 0 && sh.status == TRAMP_OK &&
			 sh.len == c->len && sh.nrows == c->nw;

		for (unsigned k = 0; ok && k < c->nw; k++) {
			const struct tramp_row *r = &sh.row[k];

			ok = r->at == c->w[k].at && r->rule.base == c->w[k].base &&
			     r->rule.cfa == c->w[k].cfa && r->rule.rbp == c->w[k].rbp;
			if (!ok)
				printf("  row %u: at %u base %u cfa %u rbp %d\n", k, r->at,
				       r->rule.base, r->rule.cfa, r->rule.rbp);
		}
		check(ok, "derive %s: %u rules (status %u, %u rows)", c->what, c->nw, sh.status,
		      sh.nrows);
	}
}

/* Templates the decoder must refuse, and why. */
static void test_refuse(void)
{
	static const struct {
		const char *what;
		uint8_t code[TRAMP_MAX_LEN];
		uint8_t len, why;
	} bad[] = {
		{ "mov %rdi,%rax (not a template instruction)",
		  { 0x48, 0x89, 0xf8, 0xff, 0xd1, 0xc3 }, 6, TRAMP_UNDECODABLE },
		{ "jmp *%rcx (a tail call: no frame of its own)", { 0xff, 0xe1 }, 2,
		  TRAMP_UNDECODABLE },
		{ "call rel32 (breaks when copied)", { 0xe8, 0, 0, 0, 0, 0xc3 }, 6,
		  TRAMP_UNDECODABLE },
		{ "int3 padding after ret", { 0xff, 0xd1, 0xc3, 0xcc }, 4, TRAMP_UNTRACKED },
		{ "no ret", { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1 }, 6, TRAMP_UNTRACKED },
		{ "nop after ret", { 0xff, 0xd1, 0xc3, 0x90 }, 4, TRAMP_UNTRACKED },
		{ "ret with rsp not back", { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0xc3 }, 7,
		  TRAMP_UNTRACKED },
		{ "mov %rsp,%rbp without saving the caller's rbp",
		  { 0x48, 0x89, 0xe5, 0xff, 0xd1, 0xc3 }, 6, TRAMP_UNTRACKED },
		{ "pop %rbp of a value never pushed", { 0x53, 0x5d, 0xc3 }, 3, TRAMP_UNTRACKED },
		{ "add popping the return address", { 0x48, 0x83, 0xc4, 0x08, 0xc3 }, 5,
		  TRAMP_UNTRACKED },
		{ "and $-16,%rsp without a frame pointer", { 0x48, 0x83, 0xe4, 0xf0, 0xff, 0xd1, 0xc3 },
		  7, TRAMP_UNTRACKED },
		{ "instruction cut at the end", { 0xff, 0xd1, 0x48, 0x83, 0xc4 }, 5,
		  TRAMP_UNDECODABLE },
		{ "empty", { 0 }, 0, TRAMP_UNDECODABLE },
	};
	uint8_t big[TRAMP_MAX_LEN + 1];
	struct tramp_shape sh;

	for (size_t i = 0; i < N(bad); i++) {
		int r = tramp_shape_derive(bad[i].code, bad[i].len, &sh);

		check(r == -1 && sh.status == bad[i].why && sh.nrows == 0 && sh.len == 0,
		      "refuse %s (status %u, want %u)", bad[i].what, sh.status, bad[i].why);
	}
	memset(big, 0x90, sizeof(big));
	big[sizeof(big) - 1] = 0xc3;
	check(tramp_shape_derive(big, sizeof(big), &sh) == -1 && sh.status == TRAMP_UNDECODABLE,
	      "refuse a template longer than %d bytes", TRAMP_MAX_LEN);
	/* a refused shape matches nothing and builds no table */
	check(tramp_build_table(&sh, big, sizeof(big), 0, &(struct ut_table){ 0 }) == 0,
	      "a refused shape builds an empty table");
}

struct buf {
	const uint8_t *p;
	uint64_t base;
	size_t len;
};

static int read_buf(void *ctx, uint64_t addr, void *out, size_t len)
{
	const struct buf *b = ctx;

	if (addr < b->base || addr - b->base > b->len || b->len - (addr - b->base) < len)
		return -1;
	memcpy(out, b->p + (addr - b->base), len);
	return 0;
}

/* Every boundary of every shape matches with its rule; ips inside an
 * instruction, other code and unreadable bytes do not. */
static void test_match(void)
{
	for (size_t i = 0; i < N(shapes); i++) {
		const struct shape_case *c = &shapes[i];
		uint8_t mem[3 * TRAMP_MAX_LEN];
		struct buf b = { mem, 0x10000, sizeof(mem) };
		uint64_t start = b.base + TRAMP_MAX_LEN;
		struct tramp_shape sh;
		struct tramp_rule r;
		int ok = 1, inside = 0;

		memset(mem, 0xcc, sizeof(mem));
		memcpy(mem + TRAMP_MAX_LEN, c->code, c->len);
		tramp_shape_derive(c->code, c->len, &sh);
		for (unsigned at = 0; at < c->len; at++) {
			int boundary = 0, m = tramp_match(&sh, read_buf, &b, start + at, &r);

			for (unsigned k = 0; k < c->nw; k++) {
				if (c->w[k].at != at)
					continue;
				boundary = 1;
				ok &= m == 1 && r.base == c->w[k].base && r.cfa == c->w[k].cfa &&
				      r.rbp == c->w[k].rbp;
			}
			if (!boundary) {
				ok &= m == 0;
				inside++;
			}
		}
		check(ok, "match %s: each boundary its rule, %d ips inside instructions none",
		      c->what, inside);
		/* the copy's last byte unreadable: no match anywhere */
		b.len = TRAMP_MAX_LEN + c->len - 1;
		check(tramp_match(&sh, read_buf, &b, start, &r) == 0,
		      "match %s: a copy cut by unreadable memory: none", c->what);
		b.len = sizeof(mem);
		mem[TRAMP_MAX_LEN + c->len - 1] = 0xc2;	/* ret imm16 */
		check(tramp_match(&sh, read_buf, &b, start, &r) == 0,
		      "match %s: one byte different: none", c->what);
	}
	check(tramp_match(NULL, read_buf, NULL, 0x1000, &(struct tramp_rule){ 0 }) == 0,
	      "match without a template: none");
}

/* An arena as CPython fills it: copies every stride bytes from 0 (3.12:
 * the code size; 3.13: rounded up to 16; 3.14+: to 32; -X perf_jit adds
 * room for its unwind data first), the rest of each chunk zero, room for a
 * partial copy at the end. */
static void test_table_stride(const struct shape_case *c, size_t stride, unsigned copies)
{
	size_t len = stride * copies + c->len / 2;
	uint8_t *arena = calloc(1, len);
	struct tramp_shape sh;
	struct ut_table t;
	int ok;

	if (!arena) {
		check(0, "out of memory");
		return;
	}
	for (unsigned i = 0; i < copies; i++)
		memcpy(arena + i * stride, c->code, c->len);
	memcpy(arena + copies * stride, c->code, c->len / 2);
	tramp_shape_derive(c->code, c->len, &sh);
	ok = tramp_build_table(&sh, arena, len, 0, &t) == 0 && t.n > 0;
	for (unsigned i = 0; ok && i < copies; i++) {
		for (unsigned k = 0; ok && k < c->nw; k++) {
			/* every byte of the instruction starting at w[k].at */
			unsigned end = k + 1 < c->nw ? c->w[k + 1].at : c->len;

			for (unsigned a = c->w[k].at; ok && a < end; a++) {
				const struct ut_row *r = ut_lookup(&t, i * stride + a);

				ok = r && r->cfa == (c->w[k].base == RBP ? UT_CFA_RBP : UT_CFA_RSP) &&
				     r->cfa_off == c->w[k].cfa &&
				     r->rbp == (c->w[k].rbp ? UT_RBP_CFA : UT_RBP_SAME) &&
				     r->rbp_off == c->w[k].rbp;
			}
		}
		if (ok && stride > c->len) {
			const struct ut_row *r = ut_lookup(&t, i * stride + c->len);

			ok = r && r->cfa == UT_CFA_NONE;	/* the gap */
		}
	}
	if (ok) {
		const struct ut_row *r = ut_lookup(&t, copies * stride);

		ok = r && r->cfa == UT_CFA_NONE;	/* the partial copy */
	}
	check(ok, "table %s, %u copies every %zu bytes: each copy's rules, none between or "
	      "after (%zu rows)", c->what, copies, stride, t.n);
	ut_table_free(&t);
	free(arena);
}

static void test_table(void)
{
	struct tramp_shape sh;
	uint8_t other[4096];
	struct ut_table t;

	for (size_t i = 0; i < N(shapes); i++) {
		test_table_stride(&shapes[i], shapes[i].len, 5);
		test_table_stride(&shapes[i], 32, 5);
	}
	test_table_stride(&shapes[0], 16, 300);
	memset(other, 0x90, sizeof(other));
	tramp_shape_derive(shapes[2].code, shapes[2].len, &sh);
	check(tramp_build_table(&sh, other, sizeof(other), 0, &t) == 0 && t.n == 0,
	      "table: other code has no rows");
	ut_table_free(&t);
	{
		uint8_t arena[10 * 32] = { 0 };

		for (int i = 0; i < 10; i++)
			memcpy(arena + i * 32, shapes[2].code, shapes[2].len);
		check(tramp_build_table(&sh, arena, sizeof(arena), 5, &t) == -1 && t.n == 0 &&
		      !t.rows, "table: more rows than allowed fails, nothing kept");
	}
}

/* The template of each interpreter file: its shape, or none before 3.12. */
static void test_interpreters(void)
{
	const char *sid = getenv("PYPERF_SID_ROOT") ? getenv("PYPERF_SID_ROOT") : "/var/cache/pyperf-pprof/sid";
	static const struct {
		int sid;
		const char *path;
		unsigned minor;
		int shape;	/* index in shapes[], -1: none expected */
	} files[] = {
		{ 0, "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0", 11, -1 },
		{ 0, "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0", 12, 0 },
		{ 0, "/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0", 13, 0 },
		{ 1, "/usr/bin/python3.14", 14, 2 },
		{ 1, "/usr/bin/python3.15", 15, 2 },
	};
	char path[512];

	for (size_t i = 0; i < N(files); i++) {
		struct tramp_shape sh;
		struct elf_file *ef;
		int r, ok;

		snprintf(path, sizeof(path), "%s%s", files[i].sid ? sid : "", files[i].path);
		ef = elf_file_open(path);
		if (!ef) {
			if (files[i].sid)
				check(0, "%s: present (the Debian sid chroot PYPERF_SID_ROOT=%s)", path, sid);
			else
				check_skip("%s: not present", path);
			continue;
		}
		r = pytramp_read(ef, 3, files[i].minor, &sh);
		if (files[i].shape < 0) {
			ok = r == -1 && sh.status == TRAMP_NONE;
		} else {
			const struct shape_case *c = &shapes[files[i].shape];

			ok = r == 0 && sh.status == TRAMP_OK && sh.len == c->len &&
			     memcmp(sh.code, c->code, c->len) == 0 && sh.nrows == c->nw;
		}
		check(ok, "%s: template %s, %u bytes (want %s)", path, pytramp_status_name(&sh),
		      sh.len, files[i].shape < 0 ? "none" : shapes[files[i].shape].what);
		elf_file_close(ef);
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_derive();
	test_refuse();
	test_match();
	test_table();
	test_interpreters();
	return check_exit();
}
