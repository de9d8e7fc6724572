/* The known trampoline shapes; see trampoline.h. */
#include "trampoline.h"

#include "unwind_table.h"

#include <stdlib.h>
#include <string.h>

#define ROWS_MAX	6

/* One row per instruction boundary: where ip may be, and the rule there. */
struct tramp_row {
	uint8_t at;		/* bytes from the shape's start */
	struct tramp_rule rule;
};

struct tramp_shape {
	const char *what;
	uint8_t len;
	uint8_t bytes[TRAMP_BEFORE];
	uint8_t nrows;
	struct tramp_row row[ROWS_MAX];
};

/* CPython's Python/asm_trampoline.S for x86_64 (3.12, 3.13, 3.14):
 * sub $8,%rsp; call *%rcx; add $8,%rsp; ret, with endbr64 first in CET
 * builds. It keeps rbp and every callee-saved register as they are. */
static const struct tramp_shape shapes[] = {
	{ "CPython perf trampoline", 11,
	  { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3 }, 4,
	  { { 0, { 8, 0 } }, { 4, { 16, 0 } }, { 6, { 16, 0 } }, { 10, { 8, 0 } } } },
	{ "CPython perf trampoline (CET)", 15,
	  { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4,
	    0x08, 0xc3 }, 5,
	  { { 0, { 8, 0 } }, { 4, { 8, 0 } }, { 8, { 16, 0 } }, { 10, { 16, 0 } },
	    { 14, { 8, 0 } } } },
};

/* tramp_match, and *to_end: bytes from ip to the end of the shape. */
static int match(const uint8_t code[TRAMP_BEFORE + TRAMP_AFTER], struct tramp_rule *rule,
		 size_t *to_end)
{
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		const struct tramp_shape *sh = &shapes[s];

		for (unsigned r = 0; r < sh->nrows; r++) {
			const uint8_t *start = code + TRAMP_BEFORE - sh->row[r].at;

			if (memcmp(start, sh->bytes, sh->len) == 0) {
				*rule = sh->row[r].rule;
				*to_end = sh->len - sh->row[r].at;
				return 1;
			}
		}
	}
	return 0;
}

int tramp_match(const uint8_t code[TRAMP_BEFORE + TRAMP_AFTER], struct tramp_rule *rule)
{
	size_t to_end;

	return match(code, rule, &to_end);
}

/* The TRAMP_BEFORE + TRAMP_AFTER bytes around off, zero outside code. */
static void window(const uint8_t *code, size_t len, size_t off,
		   uint8_t w[TRAMP_BEFORE + TRAMP_AFTER])
{
	size_t lo = off >= TRAMP_BEFORE ? off - TRAMP_BEFORE : 0;
	size_t hi = len - off > TRAMP_AFTER ? off + TRAMP_AFTER : len;

	memset(w, 0, TRAMP_BEFORE + TRAMP_AFTER);
	memcpy(w + (lo + TRAMP_BEFORE - off), code + lo, hi - lo);
}

static int same_rule(const struct ut_row *a, const struct ut_row *b)
{
	return a->cfa == b->cfa && a->cfa_off == b->cfa_off && a->rbp == b->rbp &&
	       a->rbp_off == b->rbp_off;
}

/* Appends r unless it repeats the last row's rule. */
static int add_row(struct ut_table *t, size_t *cap, size_t max_rows, const struct ut_row *r)
{
	if (t->n && same_rule(&t->rows[t->n - 1], r))
		return 0;
	if (t->n == max_rows)
		return -1;
	if (t->n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct ut_row *v = realloc(t->rows, c * sizeof(*v));

		if (!v)
			return -1;
		t->rows = v;
		*cap = c;
	}
	t->rows[t->n++] = *r;
	return 0;
}

int tramp_build_table(const uint8_t *code, size_t len, size_t max_rows, struct ut_table *out)
{
	uint8_t w[TRAMP_BEFORE + TRAMP_AFTER];
	struct tramp_rule rule;
	size_t cap = 0, to_end, shape_end = 0;

	memset(out, 0, sizeof(*out));
	if (!max_rows)
		max_rows = UT_MAX_ROWS;
	for (size_t off = 0; off < len; off++) {
		struct ut_row r = { .start = off, .cfa = UT_CFA_RSP };

		window(code, len, off, w);
		if (match(w, &rule, &to_end)) {
			r.cfa_off = rule.cfa;
			r.rbp = rule.rbp ? UT_RBP_CFA : UT_RBP_SAME;
			r.rbp_off = rule.rbp;
			shape_end = off + to_end;
		} else if (off == shape_end && out->n) {
			r.cfa = UT_CFA_NONE;	/* past a copy: no rule */
		} else {
			continue;	/* inside an instruction: the row goes on */
		}
		if (add_row(out, &cap, max_rows, &r)) {
			free(out->rows);	/* not ut_table_free: no link to the
						 * CFI parser for this file's users */
			memset(out, 0, sizeof(*out));
			return -1;
		}
	}
	return 0;
}
