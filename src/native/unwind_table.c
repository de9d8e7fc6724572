/*
 * CFI -> compact unwind table (unwind_table.h). Every CIE and FDE is read
 * with bounds checks against its own entry; a malformed one is skipped and
 * counted, never trusted. The CFA programs run on a small state machine
 * that tracks only what the table can express: the CFA rule, rbp's rule
 * and the return address's rule.
 */
#include "unwind_table.h"

#include "elffile.h"

#include <stdlib.h>
#include <string.h>

/* DWARF register numbers on x86_64. */
#define DW_RBP		6
#define DW_RSP		7
#define DW_RA		16

#define REMEMBER_MAX	16	/* DW_CFA_remember_state nesting kept */
#define DEBUG_FRAME_MAX	(256u << 20)	/* inflated .debug_frame, at most */

/* DW_EH_PE_* pointer encodings. */
#define PE_OMIT		0xff
#define PE_FMT(e)	((e) & 0x0f)
#define PE_APP(e)	((e) & 0x70)
#define PE_PCREL	0x10
#define PE_INDIRECT	0x80

struct rd {
	const uint8_t *p, *end;
	int err;
};

static uint64_t rd_n(struct rd *r, size_t n)
{
	uint64_t v = 0;

	if (r->err || (size_t)(r->end - r->p) < n) {
		r->err = 1;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;

	for (unsigned shift = 0; !r->err; shift += 7) {
		uint8_t b = (uint8_t)rd_n(r, 1);

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
		if (shift > 70)
			r->err = 1;	/* longer than any 64-bit value */
	}
	return 0;
}

static int64_t rd_sleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		b = (uint8_t)rd_n(r, 1);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (shift > 77)
			r->err = 1;
	} while ((b & 0x80) && !r->err);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return r->err ? 0 : (int64_t)v;
}

/* A pointer in encoding enc; addr is the link-time address of sec_data[0]
 * for pc-relative encodings. Text/data/function-relative ones are refused:
 * x86_64 toolchains do not emit them in CFI. */
static uint64_t rd_ptr(struct rd *r, uint8_t enc, const uint8_t *sec_data, uint64_t addr)
{
	uint64_t here = addr + (uint64_t)(r->p - sec_data), v;

	switch (PE_FMT(enc)) {
	case 0x00: v = rd_n(r, 8); break;
	case 0x01: v = rd_uleb(r); break;
	case 0x02: v = rd_n(r, 2); break;
	case 0x03: v = rd_n(r, 4); break;
	case 0x04: v = rd_n(r, 8); break;
	case 0x09: v = (uint64_t)rd_sleb(r); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_n(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_n(r, 4); break;
	case 0x0c: v = rd_n(r, 8); break;
	default: r->err = 1; return 0;
	}
	if (PE_APP(enc) == PE_PCREL)
		v += here;
	else if (PE_APP(enc) != 0)
		r->err = 1;
	return v;
}

/* The part of a CIE an FDE needs. */
struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	uint8_t has_z;
	uint8_t signal;
	uint8_t addr_size;
	const uint8_t *insns, *insns_end;
};

/* Where one register's value is: only what the table can express. */
enum reg_how { REG_SAME = 0, REG_AT_CFA, REG_UNDEF, REG_OTHER };

struct reg_rule {
	uint8_t how;
	int64_t off;
};

struct cfa_state {
	uint8_t expr;		/* 0: register + offset; 1: PLT; 2: other */
	uint8_t plt_thr;
	uint64_t reg;
	int64_t off;
	struct reg_rule rbp, ra;
};

/* One section being read: its bytes, address and dialect. */
struct sec {
	const uint8_t *data;
	size_t size;
	uint64_t addr;
	int is_eh;
};

/* An entry's header: [*body, *end) after its length and id fields. */
static int entry_header(const struct sec *s, size_t off, const uint8_t **id_pos,
			uint64_t *id, const uint8_t **end, int *dwarf64)
{
	struct rd r = { s->data + off, s->data + s->size, 0 };
	uint64_t len = rd_n(&r, 4);

	*dwarf64 = len == 0xffffffffu;
	if (*dwarf64)
		len = rd_n(&r, 8);
	if (r.err || len > (uint64_t)(r.end - r.p) || len < 4)
		return -1;
	*end = r.p + len;
	*id_pos = r.p;
	r.end = *end;
	*id = rd_n(&r, *dwarf64 && !s->is_eh ? 8 : 4);
	return r.err ? -1 : 0;
}

static int is_cie_id(const struct sec *s, uint64_t id, int dwarf64)
{
	if (s->is_eh)
		return id == 0;
	return dwarf64 ? id == UINT64_MAX : id == 0xffffffffu;
}

/* The augmentation data of a "z" CIE (eh_frame). */
static int parse_aug(struct rd *r, const char *aug, struct cie *c, const struct sec *s)
{
	uint64_t len = rd_uleb(r);
	const uint8_t *end;

	if (r->err || len > (uint64_t)(r->end - r->p))
		return -1;
	end = r->p + len;
	for (const char *a = aug + 1; *a && !r->err; a++) {
		if (*a == 'R') {
			c->fde_enc = (uint8_t)rd_n(r, 1);
		} else if (*a == 'P') {
			uint8_t enc = (uint8_t)rd_n(r, 1);

			(void)rd_ptr(r, enc & ~PE_INDIRECT, s->data, s->addr);
		} else if (*a == 'L') {
			(void)rd_n(r, 1);
		} else if (*a == 'S') {
			c->signal = 1;
		} else {
			break;	/* unknown: the length lets us skip the rest */
		}
	}
	if (r->err || r->p > end)
		return -1;
	r->p = end;
	return 0;
}

static int parse_cie(const struct sec *s, size_t off, struct cie *c)
{
	const uint8_t *id_pos, *end;
	uint64_t id;
	int d64, ver;
	const char *aug;
	struct rd r;

	if (off >= s->size || entry_header(s, off, &id_pos, &id, &end, &d64) ||
	    !is_cie_id(s, id, d64))
		return -1;
	memset(c, 0, sizeof(*c));
	r = (struct rd){ id_pos + (d64 && !s->is_eh ? 8 : 4), end, 0 };
	ver = (int)rd_n(&r, 1);
	aug = (const char *)r.p;
	while (r.p < r.end && *r.p)
		r.p++;
	if (r.p >= r.end || (ver != 1 && ver != 3 && ver != 4))
		return -1;
	r.p++;
	/* "z..." (eh_frame), "" or "S" (gas in .debug_frame); "eh" and other
	 * pre-"z" forms are not supported. */
	if (aug[0] == 'S' && !aug[1])
		c->signal = 1;
	else if (aug[0] && aug[0] != 'z')
		return -1;
	c->has_z = aug[0] == 'z';
	c->addr_size = 8;
	if (ver == 4) {
		c->addr_size = (uint8_t)rd_n(&r, 1);
		(void)rd_n(&r, 1);	/* segment selector size */
	}
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = ver == 1 ? rd_n(&r, 1) : rd_uleb(&r);
	c->fde_enc = c->addr_size == 4 ? 0x03 : 0x00;
	if (c->has_z && parse_aug(&r, aug, c, s))
		return -1;
	if (r.err || (c->addr_size != 4 && c->addr_size != 8) || c->ra_reg != DW_RA)
		return -1;
	c->insns = r.p;
	c->insns_end = end;
	return 0;
}

/* The shape of the lazy-binding PLT's CFA expression:
 *   breg7(rsp) K; breg16(rip) 0; lit15; and; litN; ge; lit3; shl; plus
 * i.e. CFA = rsp + K + ((rip & 15) >= N ? 8 : 0). Returns N, or 0. */
static uint8_t plt_expr_thr(const uint8_t *e, size_t len, int64_t *k)
{
	struct rd r = { e, e + len, 0 };
	uint8_t thr;

	if (rd_n(&r, 1) != 0x77)
		return 0;
	*k = rd_sleb(&r);
	if (rd_n(&r, 1) != 0x80 || rd_sleb(&r) != 0 || rd_n(&r, 1) != 0x3f ||
	    rd_n(&r, 1) != 0x1a)
		return 0;
	thr = (uint8_t)(rd_n(&r, 1) - 0x30);
	if (thr > 15 || rd_n(&r, 1) != 0x2a || rd_n(&r, 1) != 0x33 ||
	    rd_n(&r, 1) != 0x24 || rd_n(&r, 1) != 0x22 || r.err || r.p != r.end)
		return 0;
	return thr ? thr : 0;
}

/* Rows being collected, unsorted. */
struct rows {
	struct ut_row *v;
	size_t n, cap, max;
	int full;
};

static int rows_push(struct rows *rs, const struct ut_row *row)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 1024;
		struct ut_row *v;

		if (rs->n >= rs->max) {
			rs->full = 1;
			return -1;
		}
		if (cap > rs->max)
			cap = rs->max;
		v = realloc(rs->v, cap * sizeof(*v));
		if (!v) {
			rs->full = 1;
			return -1;
		}
		rs->v = v;
		rs->cap = cap;
	}
	rs->v[rs->n++] = *row;
	return 0;
}

/* The table's row for a state: everything it cannot say becomes a kind. */
static void state_to_row(const struct cfa_state *st, const struct cie *c,
			 uint64_t loc, struct ut_row *row)
{
	memset(row, 0, sizeof(*row));
	row->start = loc;
	if (st->ra.how == REG_UNDEF) {
		row->cfa = UT_CFA_OUTERMOST;
		return;
	}
	if (c->signal) {
		row->cfa = UT_CFA_SIGNAL;
		return;
	}
	if (st->ra.how != REG_AT_CFA || st->ra.off != -8) {
		row->cfa = UT_CFA_UNSUPPORTED;
		return;
	}
	if (st->expr == 1) {
		row->cfa = UT_CFA_PLT;
		row->plt_thr = st->plt_thr;
	} else if (st->expr == 0 && (st->reg == DW_RSP || st->reg == DW_RBP) &&
		   st->off >= INT32_MIN && st->off <= INT32_MAX) {
		row->cfa = st->reg == DW_RSP ? UT_CFA_RSP : UT_CFA_RBP;
	} else {
		row->cfa = UT_CFA_UNSUPPORTED;
		return;
	}
	row->cfa_off = (int32_t)st->off;
	if (st->rbp.how == REG_AT_CFA && st->rbp.off >= INT16_MIN && st->rbp.off <= INT16_MAX) {
		row->rbp = UT_RBP_CFA;
		row->rbp_off = (int16_t)st->rbp.off;
	} else if (st->rbp.how == REG_AT_CFA || st->rbp.how == REG_OTHER) {
		row->rbp = UT_RBP_UNSUPPORTED;
	}
}

/* A CFA program being run over [loc, end) of one FDE. */
struct prog {
	const struct cie *c;
	const struct sec *s;
	struct cfa_state st, init;
	struct cfa_state saved[REMEMBER_MAX];
	unsigned nsaved;
	uint64_t loc, end;
	struct rows *rows;
	struct ut_stats *stats;
	int emit;		/* 0 while running the CIE's initial program */
};

static int emit_row(struct prog *p)
{
	struct ut_row row;

	if (!p->emit)
		return 0;
	state_to_row(&p->st, p->c, p->loc, &row);
	p->stats->rows_raw++;
	return rows_push(p->rows, &row);
}

/* Moves the location to to (emitting the row in force until then).
 * Returns 1 when the FDE's end is reached, -1 on error. */
static int advance(struct prog *p, uint64_t to)
{
	if (!p->emit || to <= p->loc)
		return 0;	/* CIE programs and backward moves change nothing */
	if (emit_row(p))
		return -1;
	if (to >= p->end) {
		p->loc = p->end;
		return 1;
	}
	p->loc = to;
	return 0;
}

/* sign * v * align; out of every table range (so "unsupported") when it
 * does not fit, which only hostile input does. */
static int64_t scale(uint64_t v, int sign, int64_t align)
{
	int64_t r;

	if (__builtin_mul_overflow((int64_t)v, align, &r) ||
	    (sign < 0 && __builtin_mul_overflow(r, -1, &r)))
		return INT64_MAX;
	return r;
}

static void set_reg(struct prog *p, uint64_t reg, uint8_t how, int64_t off)
{
	struct reg_rule rr = { how, off };

	if (reg == DW_RBP)
		p->st.rbp = rr;
	else if (reg == DW_RA)
		p->st.ra = rr;
}

static void restore_reg(struct prog *p, uint64_t reg)
{
	if (reg == DW_RBP)
		p->st.rbp = p->init.rbp;
	else if (reg == DW_RA)
		p->st.ra = p->init.ra;
}

static void def_cfa_expr(struct prog *p, struct rd *r)
{
	uint64_t len = rd_uleb(r);
	int64_t k = 0;
	uint8_t thr;

	if (r->err || len > (uint64_t)(r->end - r->p)) {
		r->err = 1;
		return;
	}
	thr = plt_expr_thr(r->p, (size_t)len, &k);
	r->p += len;
	if (thr) {
		p->st.expr = 1;
		p->st.plt_thr = thr;
		p->st.off = k;
		p->stats->expr_plt++;
	} else {
		p->st.expr = 2;
		p->stats->expr_unsupported++;
	}
}

/* Skips a DW_CFA_expression / val_expression block; the register's value
 * then comes from an expression the table cannot follow. */
static void reg_expr(struct prog *p, struct rd *r)
{
	uint64_t reg = rd_uleb(r), len = rd_uleb(r);

	if (r->err || len > (uint64_t)(r->end - r->p)) {
		r->err = 1;
		return;
	}
	r->p += len;
	set_reg(p, reg, REG_OTHER, 0);
}

/* The extended opcodes (low six bits of the primary ones are operands). */
static int run_ext(struct prog *p, struct rd *r, uint8_t op)
{
	const struct cie *c = p->c;
	uint64_t reg;

	switch (op) {
	case 0x00: return 0;					/* nop */
	case 0x01: return advance(p, rd_ptr(r, c->fde_enc, p->s->data, p->s->addr));
	case 0x02: return advance(p, p->loc + rd_n(r, 1) * c->code_align);
	case 0x03: return advance(p, p->loc + rd_n(r, 2) * c->code_align);
	case 0x04: return advance(p, p->loc + rd_n(r, 4) * c->code_align);
	case 0x05: reg = rd_uleb(r);				/* offset_extended */
		set_reg(p, reg, REG_AT_CFA, scale(rd_uleb(r), 1, c->data_align)); return 0;
	case 0x06: restore_reg(p, rd_uleb(r)); return 0;	/* restore_extended */
	case 0x07: set_reg(p, rd_uleb(r), REG_UNDEF, 0); return 0;
	case 0x08: set_reg(p, rd_uleb(r), REG_SAME, 0); return 0;
	case 0x09: reg = rd_uleb(r); (void)rd_uleb(r);	/* register */
		set_reg(p, reg, REG_OTHER, 0); return 0;
	case 0x0a:						/* remember_state */
		if (p->nsaved >= REMEMBER_MAX)
			return -1;
		p->saved[p->nsaved++] = p->st;
		return 0;
	case 0x0b:						/* restore_state */
		if (!p->nsaved)
			return -1;
		p->st = p->saved[--p->nsaved];
		return 0;
	case 0x0c: p->st.reg = rd_uleb(r); p->st.off = (int64_t)rd_uleb(r);
		p->st.expr = 0; return 0;
	case 0x0d: p->st.reg = rd_uleb(r); p->st.expr = 0; return 0;
	case 0x0e: p->st.off = (int64_t)rd_uleb(r); return 0;
	case 0x0f: def_cfa_expr(p, r); return 0;
	case 0x10: case 0x16: reg_expr(p, r); return 0;
	case 0x11: reg = rd_uleb(r);				/* offset_extended_sf */
		set_reg(p, reg, REG_AT_CFA, scale((uint64_t)rd_sleb(r), 1, c->data_align)); return 0;
	case 0x12: p->st.reg = rd_uleb(r);			/* def_cfa_sf */
		p->st.off = scale((uint64_t)rd_sleb(r), 1, c->data_align); p->st.expr = 0; return 0;
	case 0x13: p->st.off = scale((uint64_t)rd_sleb(r), 1, c->data_align); return 0;
	case 0x14: case 0x15: reg = rd_uleb(r);			/* val_offset(_sf) */
		(void)(op == 0x14 ? (int64_t)rd_uleb(r) : rd_sleb(r));
		set_reg(p, reg, REG_OTHER, 0); return 0;
	case 0x2e: (void)rd_uleb(r); return 0;			/* GNU_args_size */
	case 0x2f: reg = rd_uleb(r);				/* GNU_negative_offset_ext */
		set_reg(p, reg, REG_AT_CFA, scale(rd_uleb(r), -1, c->data_align)); return 0;
	default: return -1;
	}
}

/* Runs a CFA program. 0 at its end, 1 at the FDE's end, -1 if malformed
 * (the rows emitted so far stand: they describe the addresses before). */
static int run_program(struct prog *p, const uint8_t *insns, const uint8_t *end)
{
	struct rd r = { insns, end, 0 };
	int rc = 0;

	while (!rc && r.p < r.end && !r.err) {
		uint8_t op = (uint8_t)rd_n(&r, 1), arg = op & 0x3f;

		switch (op >> 6) {
		case 1: rc = advance(p, p->loc + arg * p->c->code_align); break;
		case 2: set_reg(p, arg, REG_AT_CFA, scale(rd_uleb(&r), 1, p->c->data_align));
			break;
		case 3: restore_reg(p, arg); break;
		default: rc = run_ext(p, &r, op); break;
		}
	}
	if (r.err)
		return -1;
	return rc;
}

/* Runs one FDE's CIE and own programs over [begin, begin + range) and
 * emits its rows, then a UT_CFA_NONE row at its end. */
static int run_fde(const struct sec *s, const struct cie *c, uint64_t begin, uint64_t range,
		   const uint8_t *insns, const uint8_t *end, struct rows *rows,
		   struct ut_stats *st)
{
	struct prog *p = calloc(1, sizeof(*p));
	struct ut_row gap = { .start = begin + range, .cfa = UT_CFA_NONE };
	int rc;

	if (!p)
		return -1;
	p->c = c;
	p->s = s;
	p->loc = begin;
	p->end = begin + range;
	p->rows = rows;
	p->stats = st;
	p->st.reg = DW_RSP;
	p->st.off = 8;
	/* A CIE that never says where the return address is describes no
	 * caller: stop there rather than guess. */
	p->st.ra.how = REG_UNDEF;
	rc = run_program(p, c->insns, c->insns_end);
	if (rc < 0)
		st->bad_programs++;
	p->init = p->st;
	p->nsaved = 0;
	p->emit = 1;
	rc = run_program(p, insns, end);
	if (rc < 0)
		st->bad_programs++;
	if (rc != 1 && p->loc < p->end && emit_row(p))
		rc = -2;
	if (c->signal)
		st->signal_fdes++;
	free(p);
	if (rc == -2 || rows->full)
		return -1;
	st->rows_raw++;
	return rows_push(rows, &gap);
}

/* Address ranges of the FDEs of .eh_frame, to shadow .debug_frame's. */
struct ranges {
	uint64_t (*v)[2];
	size_t n, cap;
	int sorted;
};

static int ranges_add(struct ranges *rg, uint64_t lo, uint64_t hi)
{
	if (rg->n == rg->cap) {
		size_t cap = rg->cap ? rg->cap * 2 : 256;
		void *v = realloc(rg->v, cap * sizeof(*rg->v));

		if (!v)
			return -1;
		rg->v = v;
		rg->cap = cap;
	}
	rg->v[rg->n][0] = lo;
	rg->v[rg->n][1] = hi;
	rg->n++;
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* 1 if [lo, hi) overlaps a range (sorted by start, possibly nested). */
static int ranges_overlap(const struct ranges *rg, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = rg->n;

	while (a < b) {		/* first range starting at or after hi */
		size_t m = a + (b - a) / 2;

		if (rg->v[m][0] < hi)
			a = m + 1;
		else
			b = m;
	}
	/* Ranges are short and rarely nested: a few before it decide. */
	for (size_t i = a, k = 0; i > 0 && k < 8; i--, k++)
		if (rg->v[i - 1][1] > lo)
			return 1;
	return 0;
}

/* One FDE at [id_pos, end): its CIE, range and program. */
static int do_fde(const struct sec *s, const uint8_t *id_pos, uint64_t id, int d64,
		  const uint8_t *end, struct cie *c, size_t *cie_off,
		  struct rows *rows, struct ranges *eh_ranges, struct ut_stats *st)
{
	size_t want = s->is_eh ? (size_t)(id_pos - s->data) - (size_t)id : (size_t)id;
	struct rd r = { id_pos + (d64 && !s->is_eh ? 8 : 4), end, 0 };
	uint64_t begin, range;

	if (s->is_eh && id > (uint64_t)(id_pos - s->data))
		return 1;
	if (want != *cie_off) {
		*cie_off = SIZE_MAX;
		if (parse_cie(s, want, c))
			return 1;
		*cie_off = want;
		st->cies++;
	}
	begin = rd_ptr(&r, c->fde_enc, s->data, s->addr);
	range = rd_ptr(&r, PE_FMT(c->fde_enc), s->data, s->addr);
	if (c->has_z) {
		uint64_t alen = rd_uleb(&r);

		if (alen > (uint64_t)(r.end - r.p))
			return 1;
		r.p += alen;
	}
	if (r.err || range == 0 || range > (1ull << 32) || begin + range < begin)
		return 1;
	if (!s->is_eh && eh_ranges && ranges_overlap(eh_ranges, begin, begin + range)) {
		st->fdes_shadowed++;
		return 0;
	}
	if (s->is_eh && eh_ranges && ranges_add(eh_ranges, begin, begin + range))
		return -1;
	st->fdes++;
	if (!s->is_eh)
		st->fdes_debug_frame++;
	return run_fde(s, c, begin, range, r.p, end, rows, st) ? -1 : 0;
}

/* Every FDE of a section. -1 on allocation failure or too many rows. */
static int walk_section(const struct sec *s, struct rows *rows, struct ranges *eh_ranges,
			struct ut_stats *st)
{
	struct cie c;
	size_t off = 0, cie_off = SIZE_MAX;

	while (off + 4 <= s->size) {
		const uint8_t *id_pos, *end;
		uint64_t id;
		int d64, rc;

		if (s->is_eh && !memcmp(s->data + off, "\0\0\0\0", 4))
			break;		/* the terminator */
		if (entry_header(s, off, &id_pos, &id, &end, &d64)) {
			st->bad_entries++;
			break;		/* no length to skip by */
		}
		off = (size_t)(end - s->data);
		if (is_cie_id(s, id, d64))
			continue;	/* parsed when an FDE refers to it */
		rc = do_fde(s, id_pos, id, d64, end, &c, &cie_off, rows, eh_ranges, st);
		if (rc < 0)
			return -1;
		if (rc > 0)
			st->bad_entries++;
	}
	return 0;
}

/* By address; at one address a gap row sorts first, so a row that starts
 * there wins over the end of the FDE before it. */
static int cmp_row(const void *a, const void *b)
{
	const struct ut_row *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->cfa != UT_CFA_NONE) - (y->cfa != UT_CFA_NONE);
}

static int same_rule(const struct ut_row *a, const struct ut_row *b)
{
	return a->cfa == b->cfa && a->cfa_off == b->cfa_off && a->rbp == b->rbp &&
	       a->rbp_off == b->rbp_off && a->plt_thr == b->plt_thr;
}

/* Sorts, keeps the last row of each address, merges equal neighbours. */
static size_t finish_rows(struct ut_row *v, size_t n)
{
	size_t out = 0;

	if (n)
		qsort(v, n, sizeof(*v), cmp_row);
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n && v[i + 1].start == v[i].start)
			continue;
		if (out == 0 ? v[i].cfa == UT_CFA_NONE : same_rule(&v[out - 1], &v[i]))
			continue;
		v[out++] = v[i];
	}
	return out;
}

int ut_build(const struct ut_section *eh_frame, const struct ut_section *debug_frame,
	     size_t max_rows, struct ut_table *out)
{
	struct rows rows = { .max = max_rows ? max_rows : UT_MAX_ROWS };
	struct ranges rg = { 0 };
	int rc = 0, have_eh = eh_frame && eh_frame->data && eh_frame->size,
	    have_dbg = debug_frame && debug_frame->data && debug_frame->size;

	memset(out, 0, sizeof(*out));
	if (have_eh) {
		struct sec s = { eh_frame->data, eh_frame->size, eh_frame->addr, 1 };

		rc = walk_section(&s, &rows, have_dbg ? &rg : NULL, &out->st);
	}
	if (!rc && have_dbg) {
		struct sec s = { debug_frame->data, debug_frame->size, debug_frame->addr, 0 };

		if (rg.n)
			qsort(rg.v, rg.n, sizeof(*rg.v), cmp_range);
		rc = walk_section(&s, &rows, &rg, &out->st);
	}
	free(rg.v);
	if (rc) {
		free(rows.v);
		return -1;
	}
	out->n = finish_rows(rows.v, rows.n);
	out->rows = rows.v;
	if (out->n == 0) {
		free(rows.v);
		out->rows = NULL;
	}
	return 0;
}

int ut_build_elf(struct elf_file *ef, size_t max_rows, struct ut_table *out)
{
	struct ut_section eh = { 0 }, dbg = { 0 };
	struct elf_section sec;
	uint8_t *dbg_copy = NULL;
	size_t dbg_len = 0;
	int rc;

	if (elf_file_section(ef, ".eh_frame", &sec) == 0 && sec.type != 8 /* NOBITS */) {
		eh.data = elf_file_data(ef, sec.offset, sec.size);
		eh.size = eh.data ? sec.size : 0;
		eh.addr = sec.addr;
	}
	if (elf_file_section_copy(ef, ".debug_frame", DEBUG_FRAME_MAX, &dbg_copy, &dbg_len) == 0) {
		dbg.data = dbg_copy;
		dbg.size = dbg_len;
	}
	rc = ut_build(&eh, &dbg, max_rows, out);
	free(dbg_copy);
	return rc;
}

void ut_table_free(struct ut_table *t)
{
	free(t->rows);
	t->rows = NULL;
	t->n = 0;
}

const struct ut_row *ut_lookup(const struct ut_table *t, uint64_t addr)
{
	size_t a = 0, b = t->n;

	while (a < b) {		/* first row starting after addr */
		size_t m = a + (b - a) / 2;

		if (t->rows[m].start <= addr)
			a = m + 1;
		else
			b = m;
	}
	return a ? &t->rows[a - 1] : NULL;
}
