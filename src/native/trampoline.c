/* Rules from a template's bytes, and its copies; see trampoline.h. */
#include "trampoline.h"

#include "unwind_table.h"

#include <stdlib.h>
#include <string.h>

/* What is known at an instruction boundary. CFA is the caller's rsp. */
struct tr_state {
	int rsp_ok;		/* rsp = CFA - rsp (known) */
	int rsp;
	int fp_ok;		/* rbp = CFA - fp: a frame pointer */
	int fp;
	int rbp_caller;		/* rbp still holds the caller's value */
	int rbp_saved;		/* caller's rbp at CFA + rbp_saved; 0: not */
};

/* One decoded instruction: how it moves the state. */
enum tr_op {
	OP_NOP, OP_PUSH, OP_POP, OP_PUSH_RBP, OP_POP_RBP, OP_MOV_RSP_RBP, OP_MOV_RBP_RSP,
	OP_LEAVE, OP_SUB_RSP, OP_ADD_RSP, OP_AND_RSP, OP_CALL_REG, OP_RET,
};

struct tr_insn {
	enum tr_op op;
	uint8_t len;
	int32_t imm;
};

static int32_t imm32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

/* The length of a ModRM operand (modrm byte included) at p, n bytes left;
 * 0 if it does not fit. */
static size_t modrm_len(const uint8_t *p, size_t n)
{
	unsigned mod = p[0] >> 6, rm = p[0] & 7;
	size_t len = 1;

	if (mod != 3 && rm == 4) {
		if (n < 2)
			return 0;
		if (mod == 0 && (p[1] & 7) == 5)
			len += 4;
		len++;
	}
	if (mod == 1)
		len += 1;
	else if (mod == 2 || (mod == 0 && rm == 5))
		len += 4;
	return len <= n ? len : 0;
}

/* Nops: 90, 66 90, and 0f 1f /0 with any 66/2e prefixes (what assemblers
 * and compilers pad with). */
static int decode_nop(const uint8_t *p, size_t n, struct tr_insn *in)
{
	size_t k = 0, m;

	while (k < n && k < 14 && (p[k] == 0x66 || p[k] == 0x2e))
		k++;
	if (k < n && p[k] == 0x90 && k <= 1 && (k == 0 || p[0] == 0x66)) {
		*in = (struct tr_insn){ OP_NOP, (uint8_t)(k + 1), 0 };
		return 0;
	}
	if (k + 2 < n && p[k] == 0x0f && p[k + 1] == 0x1f && ((p[k + 2] >> 3) & 7) == 0) {
		m = modrm_len(p + k + 2, n - k - 2);
		if (m) {
			*in = (struct tr_insn){ OP_NOP, (uint8_t)(k + 2 + m), 0 };
			return 0;
		}
	}
	return -1;
}

/* REX.W forms: mov between rsp and rbp, sub/add/and of an immediate. */
static int decode_rexw(const uint8_t *p, size_t n, struct tr_insn *in)
{
	static const struct { uint8_t op, modrm; enum tr_op what; } movs[] = {
		{ 0x89, 0xe5, OP_MOV_RSP_RBP }, { 0x8b, 0xec, OP_MOV_RSP_RBP },
		{ 0x89, 0xec, OP_MOV_RBP_RSP }, { 0x8b, 0xe5, OP_MOV_RBP_RSP },
	};
	enum tr_op what;

	if (n < 3)
		return -1;
	for (size_t i = 0; i < sizeof(movs) / sizeof(movs[0]); i++) {
		if (p[1] == movs[i].op && p[2] == movs[i].modrm) {
			*in = (struct tr_insn){ movs[i].what, 3, 0 };
			return 0;
		}
	}
	if (p[2] == 0xec)
		what = OP_SUB_RSP;
	else if (p[2] == 0xc4)
		what = OP_ADD_RSP;
	else if (p[2] == 0xe4)
		what = OP_AND_RSP;
	else
		return -1;
	if (p[1] == 0x83 && n >= 4)
		*in = (struct tr_insn){ what, 4, (int8_t)p[3] };
	else if (p[1] == 0x81 && n >= 7)
		*in = (struct tr_insn){ what, 7, imm32(p + 3) };
	else
		return -1;
	return 0;
}

/* One instruction at p (n bytes left); -1 if not one of the few known. */
static int decode(const uint8_t *p, size_t n, struct tr_insn *in)
{
	unsigned rex_b = n > 1 && p[0] == 0x41;
	const uint8_t *q = p + rex_b;

	if (n >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa) {
		*in = (struct tr_insn){ OP_NOP, 4, 0 };	/* endbr64 */
		return 0;
	}
	if (decode_nop(p, n, in) == 0)
		return 0;
	if (p[0] == 0x48)
		return decode_rexw(p, n, in);
	if (*q >= 0x50 && *q <= 0x5f) {
		int pop = *q >= 0x58, rbp = !rex_b && (*q & 7) == 5;

		*in = (struct tr_insn){ pop ? (rbp ? OP_POP_RBP : OP_POP)
					    : (rbp ? OP_PUSH_RBP : OP_PUSH), (uint8_t)(1 + rex_b), 0 };
		return 0;
	}
	/* call *%reg; not *%rsp (ff d4), which no template would do */
	if (n > rex_b + 1u && q[0] == 0xff && (q[1] & 0xf8) == 0xd0 && (rex_b || q[1] != 0xd4)) {
		*in = (struct tr_insn){ OP_CALL_REG, (uint8_t)(2 + rex_b), 0 };
		return 0;
	}
	if (rex_b)
		return -1;
	if (p[0] == 0xc9) {
		*in = (struct tr_insn){ OP_LEAVE, 1, 0 };
		return 0;
	}
	if (p[0] == 0xc3) {
		*in = (struct tr_insn){ OP_RET, 1, 0 };
		return 0;
	}
	return -1;
}

/* rsp moves by d bytes (d > 0: pushed); the return address must stay. */
static int move_rsp(struct tr_state *s, int64_t d)
{
	if (!s->rsp_ok)
		return 0;
	if (s->rsp + d < 8 || s->rsp + d > 255)
		return -1;
	s->rsp += (int)d;
	return 0;
}

static int pop_rbp(struct tr_state *s)
{
	if (!s->rsp_ok)
		return -1;
	if (s->rbp_saved && s->rbp_saved == -s->rsp) {
		*s = (struct tr_state){ .rsp_ok = 1, .rsp = s->rsp, .rbp_caller = 1 };
	} else if (s->rbp_saved) {
		s->rbp_caller = 0;	/* another value; the saved one stays */
		s->fp_ok = 0;
	} else {
		return -1;		/* the caller's rbp would be lost */
	}
	return move_rsp(s, -8);
}

/* Applies one instruction; -1 if the state is lost. */
static int step(struct tr_state *s, const struct tr_insn *in)
{
	switch (in->op) {
	case OP_NOP:
	case OP_CALL_REG:	/* the callee returns rsp and rbp as they were */
		return 0;
	case OP_PUSH:
		return move_rsp(s, 8);
	case OP_POP:
		return move_rsp(s, -8);
	case OP_PUSH_RBP:
		if (move_rsp(s, 8))
			return -1;
		if (s->rbp_caller && !s->rbp_saved) {
			if (!s->rsp_ok)
				return -1;
			s->rbp_saved = -s->rsp;
		}
		return 0;
	case OP_POP_RBP:
		return pop_rbp(s);
	case OP_MOV_RSP_RBP:
		if (!s->rsp_ok || (s->rbp_caller && !s->rbp_saved))
			return -1;
		s->fp_ok = 1;
		s->fp = s->rsp;
		s->rbp_caller = 0;
		return 0;
	case OP_MOV_RBP_RSP:
	case OP_LEAVE:
		if (!s->fp_ok)
			return -1;
		s->rsp_ok = 1;
		s->rsp = s->fp;
		return in->op == OP_LEAVE ? pop_rbp(s) : 0;
	case OP_SUB_RSP:
		return move_rsp(s, in->imm);
	case OP_ADD_RSP:
		return move_rsp(s, -(int64_t)in->imm);
	case OP_AND_RSP:
		s->rsp_ok = 0;		/* aligned: only a frame pointer tells */
		return s->fp_ok ? 0 : -1;
	case OP_RET:
		return s->rsp_ok && s->rsp == 8 && s->rbp_caller ? 0 : -1;
	}
	return -1;
}

/* The rule at a boundary in state s; -1 if it cannot be written as one. */
static int rule_of(const struct tr_state *s, struct tramp_rule *r)
{
	if (s->rsp_ok) {
		r->base = TRAMP_CFA_RSP;
		r->cfa = (uint8_t)s->rsp;
	} else if (s->fp_ok && s->fp >= 0 && s->fp <= 255) {
		r->base = TRAMP_CFA_RBP;
		r->cfa = (uint8_t)s->fp;
	} else {
		return -1;
	}
	if (s->rbp_saved < -128)
		return -1;
	if (!s->rbp_saved && !s->rbp_caller)
		return -1;
	r->rbp = (int8_t)s->rbp_saved;
	return 0;
}

static int refuse(struct tramp_shape *out, enum tramp_status why)
{
	memset(out, 0, sizeof(*out));
	out->status = (uint8_t)why;
	return -1;
}

int tramp_shape_derive(const uint8_t *code, size_t len, struct tramp_shape *out)
{
	struct tr_state s = { .rsp_ok = 1, .rsp = 8, .rbp_caller = 1 };
	struct tr_insn in = { OP_NOP, 0, 0 };
	size_t at = 0;

	memset(out, 0, sizeof(*out));
	if (!len || len > TRAMP_MAX_LEN)
		return refuse(out, TRAMP_UNDECODABLE);
	while (at < len) {
		struct tramp_row *row = &out->row[out->nrows];

		if (decode(code + at, len - at, &in))
			return refuse(out, TRAMP_UNDECODABLE);
		row->at = (uint8_t)at;
		if (rule_of(&s, &row->rule) || step(&s, &in))
			return refuse(out, TRAMP_UNTRACKED);
		out->nrows++;
		at += in.len;
		if (in.op == OP_RET && at != len)
			return refuse(out, TRAMP_UNTRACKED);	/* code after ret */
	}
	if (in.op != OP_RET)
		return refuse(out, TRAMP_UNTRACKED);
	memcpy(out->code, code, len);
	out->len = (uint8_t)len;
	out->status = TRAMP_OK;
	return 0;
}

int tramp_match(const struct tramp_shape *sh, tramp_read_fn read, void *ctx, uint64_t ip,
		struct tramp_rule *rule)
{
	uint8_t code[TRAMP_MAX_LEN];

	if (!sh || sh->status != TRAMP_OK)
		return 0;
	for (unsigned r = 0; r < sh->nrows; r++) {
		if (ip < sh->row[r].at || read(ctx, ip - sh->row[r].at, code, sh->len) ||
		    memcmp(code, sh->code, sh->len))
			continue;
		*rule = sh->row[r].rule;
		return 1;
	}
	return 0;
}

static int same_rule(const struct ut_row *a, const struct ut_row *b)
{
	return a->cfa == b->cfa && a->cfa_off == b->cfa_off && a->rbp == b->rbp &&
	       a->rbp_off == b->rbp_off;
}

struct tr_table {
	struct ut_table *t;
	size_t cap, max_rows;
};

/* Appends r unless it repeats the last row's rule. */
static int add_row(struct tr_table *b, const struct ut_row *r)
{
	struct ut_table *t = b->t;

	if (t->n && same_rule(&t->rows[t->n - 1], r))
		return 0;
	if (t->n == b->max_rows)
		return -1;
	if (t->n == b->cap) {
		size_t c = b->cap ? b->cap * 2 : 256;
		struct ut_row *v = realloc(t->rows, c * sizeof(*v));

		if (!v)
			return -1;
		t->rows = v;
		b->cap = c;
	}
	t->rows[t->n++] = *r;
	return 0;
}

/* The rows of one copy at off; the row past it is the caller's to add. */
static int add_copy(struct tr_table *b, const struct tramp_shape *sh, size_t off)
{
	for (unsigned i = 0; i < sh->nrows; i++) {
		const struct tramp_rule *ru = &sh->row[i].rule;
		struct ut_row r = {
			.start = off + sh->row[i].at,
			.cfa = ru->base == TRAMP_CFA_RBP ? UT_CFA_RBP : UT_CFA_RSP,
			.cfa_off = ru->cfa,
			.rbp = ru->rbp ? UT_RBP_CFA : UT_RBP_SAME,
			.rbp_off = ru->rbp,
		};

		if (add_row(b, &r))
			return -1;
	}
	return 0;
}

int tramp_build_table(const struct tramp_shape *sh, const uint8_t *code, size_t len,
		      size_t max_rows, struct ut_table *out)
{
	struct tr_table b = { out, 0, max_rows ? max_rows : UT_MAX_ROWS };
	size_t off = 0, end = 0;	/* end: past the last copy, 0 if none */
	struct ut_row none = { .cfa = UT_CFA_NONE };
	const uint8_t *p;

	memset(out, 0, sizeof(*out));
	if (!sh || sh->status != TRAMP_OK || !sh->len)
		return 0;
	while (off + sh->len <= len) {
		p = memchr(code + off, sh->code[0], len - off - sh->len + 1);
		if (!p)
			break;
		off = (size_t)(p - code);
		if (memcmp(p, sh->code, sh->len)) {
			off++;
			continue;
		}
		none.start = end;
		if ((end && end != off && add_row(&b, &none)) || add_copy(&b, sh, off))
			goto fail;
		off += sh->len;
		end = off;
	}
	none.start = end;
	if (end && add_row(&b, &none))
		goto fail;
	return 0;
fail:
	free(out->rows);	/* not ut_table_free: no link to the CFI parser
				 * for this file's users */
	memset(out, 0, sizeof(*out));
	return -1;
}
