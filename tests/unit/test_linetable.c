/*
 * Unit tests for src/python/linetable.c.
 *
 *   gcc -Wall -Wextra -O1 -fsanitize=address,undefined -Isrc \
 *       tests/unit/test_linetable.c src/python/linetable.c -o /tmp/tl && /tmp/tl
 *
 * Prints one "ok ..." or "FAIL ..." line per case; exits 1 on any failure.
 * Every table is copied into a heap buffer of exactly its length first, so
 * AddressSanitizer catches a decoder reading one byte too far.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "linetable.h"
#include "linetable_fixtures.h"

/* The hand-written cases accept any sane result: they only must not crash. */
#define ANY_LINE	INT32_MIN

struct hand_case {
	const char *name;
	enum lt_format format;
	const uint8_t *tab;
	size_t len;
	int firstlineno;
	uint32_t offset;
	int32_t line;
};

static const char *const format_names[] = {
	[LT_FMT_LNOTAB] = "lnotab",
	[LT_FMT_310] = "310",
	[LT_FMT_311] = "311",
};

/* An exact-size heap copy; NULL stays NULL so len 0 is tested as such. */
static uint8_t *dup_table(const uint8_t *tab, size_t len)
{
	uint8_t *copy;

	if (!tab)
		return NULL;
	copy = malloc(len ? len : 1);
	if (!copy) {
		perror("malloc");
		exit(1);
	}
	memcpy(copy, tab, len);
	return copy;
}

static int decode(enum lt_format format, const uint8_t *tab, size_t len,
		  int firstlineno, uint32_t offset)
{
	switch (format) {
	case LT_FMT_LNOTAB:
		return linetable_lnotab(tab, len, firstlineno, offset);
	case LT_FMT_310:
		return linetable_310(tab, len, firstlineno, offset);
	case LT_FMT_311:
		return linetable_311(tab, len, firstlineno, offset);
	}
	return -2;
}

static int decode_copy(enum lt_format format, const uint8_t *tab, size_t len,
		       int firstlineno, uint32_t offset)
{
	uint8_t *copy = dup_table(tab, len);
	int got = decode(format, copy, len, firstlineno, offset);

	free(copy);
	return got;
}

static void report(int pass, const char *what, const char *version,
		   const char *name, uint32_t offset, int got, int32_t want)
{
	char w[16] = "any";

	if (want != ANY_LINE)
		snprintf(w, sizeof(w), "%d", want);
	check(pass, "%s %s %s offset=%u got=%d want=%s", what, version, name, offset, got, w);
}

static void run_fixtures(void)
{
	size_t i;

	for (i = 0; i < sizeof(lt_cases) / sizeof(lt_cases[0]); i++) {
		const struct lt_case *c = &lt_cases[i];
		const struct lt_table *t = &lt_tables[c->table];
		int got = decode_copy(t->format, t->tab, t->len,
				      t->firstlineno, c->offset);

		report(got == c->line, format_names[t->format], t->version,
		       t->name, c->offset, got, c->line);
	}
}

/* Hand-written tables: empty, truncated, damaged and extreme input. */
static const uint8_t h_lnotab_odd[] = { 2, 1, 4 };
static const uint8_t h_lnotab_neg[] = { 0, 0x80 };
static const uint8_t h_lnotab_chain[] = { 255, 0, 255, 0, 255, 0, 255, 0,
					  1, 1 };
static const uint8_t h_310_zero_tail[] = { 4, 1, 6, 2, 0, 5 };
static const uint8_t h_310_odd[] = { 4, 1, 6 };
static const uint8_t h_310_no_line[] = { 2, 0x80 };
static const uint8_t h_311_trunc_varint[] = { 0xf0, 0x41 };
static const uint8_t h_311_no_varint[] = { 0xe8 };
static const uint8_t h_311_varint_into_next[] = { 0xe8, 0x40, 0x80, 0x00 };
static const uint8_t h_311_no_marker[] = { 0x00, 0x80 };
static const uint8_t h_311_long_varint[] = { 0xe8, 0x7f, 0x7f, 0x7f, 0x7f,
					     0x7f, 0x7f, 0x3f };
/* delta +INT_MAX, then firstlineno pushes it past INT_MAX */
static const uint8_t h_311_huge_up[] = { 0xe8, 0x7e, 0x7f, 0x7f, 0x7f,
					 0x7f, 0x03 };
/* delta -INT_MAX: below zero */
static const uint8_t h_311_huge_down[] = { 0xe8, 0x7f, 0x7f, 0x7f, 0x7f,
					   0x7f, 0x03 };
static const uint8_t h_311_short_no_col[] = { 0x80 };
static const uint8_t h_311_prefix_ok[] = { 0x80, 0x00, 0xf0, 0x41 };
/* long form +3 with its column varints cut off: the line is still known */
static const uint8_t h_311_long_no_cols[] = { 0xf1, 0x06 };
static const uint8_t h_311_none[] = { 0xf8, 0xd8, 0x01, 0x02 };

#define H(name, fmt, tab, first, off, line) \
	{ name, fmt, tab, sizeof(tab), first, off, line }

static const struct hand_case hand_cases[] = {
	/* An empty lnotab is what one-line code objects have. */
	{ "lnotab_empty", LT_FMT_LNOTAB, NULL, 0, 7, 0, 7 },
	{ "lnotab_empty_far", LT_FMT_LNOTAB, NULL, 0, 7, UINT32_MAX, 7 },
	H("lnotab_odd_len", LT_FMT_LNOTAB, h_lnotab_odd, 5, 100, 6),
	H("lnotab_below_zero", LT_FMT_LNOTAB, h_lnotab_neg, 1, 0, -1),
	H("lnotab_chain_before", LT_FMT_LNOTAB, h_lnotab_chain, 5, 1020, 5),
	H("lnotab_chain_after", LT_FMT_LNOTAB, h_lnotab_chain, 5, 1021, 6),
	H("lnotab_chain_max", LT_FMT_LNOTAB, h_lnotab_chain, 5, UINT32_MAX,
	  6),
	{ "310_empty", LT_FMT_310, NULL, 0, 7, 0, -1 },
	H("310_zero_tail_in", LT_FMT_310, h_310_zero_tail, 5, 9, 8),
	H("310_zero_tail_end", LT_FMT_310, h_310_zero_tail, 5, 10, -1),
	H("310_odd_len_in", LT_FMT_310, h_310_odd, 5, 2, 6),
	H("310_odd_len_out", LT_FMT_310, h_310_odd, 5, 5, -1),
	H("310_no_line", LT_FMT_310, h_310_no_line, 5, 0, -1),
	H("310_max_offset", LT_FMT_310, h_310_zero_tail, 5, UINT32_MAX, -1),
	{ "311_empty", LT_FMT_311, NULL, 0, 7, 0, -1 },
	H("311_truncated_varint", LT_FMT_311, h_311_trunc_varint, 5, 0, -1),
	H("311_missing_varint", LT_FMT_311, h_311_no_varint, 5, 0, -1),
	H("311_varint_into_next", LT_FMT_311, h_311_varint_into_next, 5, 0,
	  -1),
	H("311_no_marker", LT_FMT_311, h_311_no_marker, 5, 0, -1),
	H("311_long_varint", LT_FMT_311, h_311_long_varint, 5, 0, -1),
	H("311_huge_up", LT_FMT_311, h_311_huge_up, 10, 0, -1),
	H("311_huge_down", LT_FMT_311, h_311_huge_down, 10, 0, -1),
	H("311_short_no_column", LT_FMT_311, h_311_short_no_col, 5, 0, 5),
	H("311_prefix_ok", LT_FMT_311, h_311_prefix_ok, 5, 0, 5),
	H("311_prefix_bad", LT_FMT_311, h_311_prefix_ok, 5, 1, -1),
	H("311_long_no_columns", LT_FMT_311, h_311_long_no_cols, 5, 1, 8),
	H("311_long_past_end", LT_FMT_311, h_311_long_no_cols, 5, 2, -1),
	H("311_none", LT_FMT_311, h_311_none, 5, 0, -1),
	H("311_after_none", LT_FMT_311, h_311_none, 5, 1, 6),
	H("311_max_offset", LT_FMT_311, h_311_none, 5, UINT32_MAX, -1),
};

static void run_hand_cases(void)
{
	size_t i;

	for (i = 0; i < sizeof(hand_cases) / sizeof(hand_cases[0]); i++) {
		const struct hand_case *c = &hand_cases[i];
		int got = decode_copy(c->format, c->tab, c->len,
				      c->firstlineno, c->offset);
		int pass = c->line == ANY_LINE ? got >= -1 : got == c->line;

		report(pass, format_names[c->format], "hand", c->name,
		       c->offset, got, c->line);
	}
}

/*
 * Every prefix of every fixture table: a torn read from the target.  The
 * range formats must then say either what the whole table says or -1; the
 * lnotab has no notion of "not covered", so there it only must not crash.
 */
static void run_truncations(void)
{
	unsigned int bad = 0, runs = 0;
	size_t i, cut;

	for (i = 0; i < sizeof(lt_tables) / sizeof(lt_tables[0]); i++) {
		const struct lt_table *t = &lt_tables[i];

		for (cut = 0; cut < t->len; cut++) {
			uint8_t *copy = dup_table(t->tab, cut);
			uint32_t off;

			for (off = 0; off < 600; off += 37) {
				int whole = decode(t->format, t->tab, t->len,
						   t->firstlineno, off);
				int got = decode(t->format, copy, cut,
						 t->firstlineno, off);

				runs++;
				if (got < -1 || (t->format != LT_FMT_LNOTAB &&
						 got != -1 && got != whole))
					bad++;
			}
			free(copy);
		}
	}
	check(!bad, "truncated-prefixes runs=%u bad=%u", runs, bad);
}

/* xorshift32: deterministic, so a failure reproduces. */
static uint32_t rnd(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

/* Random bytes, biased toward entry headers and varint continuations. */
static void fill_random(uint8_t *buf, size_t len, uint32_t *state)
{
	static const uint8_t picks[] = { 0x00, 0x40, 0x7f, 0x80, 0xe8, 0xef,
					 0xf0, 0xf7, 0xf8, 0xff };
	size_t i;

	for (i = 0; i < len; i++) {
		uint32_t r = rnd(state);

		buf[i] = (r & 0x100) ? picks[(r >> 9) % sizeof(picks)] :
				       (uint8_t)r;
	}
}

static void run_random(enum lt_format format)
{
	uint32_t state = 0x9e3779b9u + format;
	unsigned int bad = 0, iter;

	for (iter = 0; iter < 20000; iter++) {
		size_t len = rnd(&state) % 65;
		uint8_t *buf = malloc(len ? len : 1);
		int k;

		if (!buf) {
			perror("malloc");
			exit(1);
		}
		fill_random(buf, len, &state);
		for (k = 0; k < 4; k++) {
			uint32_t off = k == 3 ? UINT32_MAX : rnd(&state) % 600;
			int first = (int)(rnd(&state) % 4) == 0 ?
				    INT32_MAX - 3 : (int)(rnd(&state) % 5000);
			int got = decode(format, buf, len, first, off);

			if (got < -1)
				bad++;
		}
		free(buf);
	}
	check(!bad, "random-input %s iterations=20000 bad=%u", format_names[format], bad);
}

int main(void)
{
	run_fixtures();
	run_hand_cases();
	run_truncations();
	run_random(LT_FMT_LNOTAB);
	run_random(LT_FMT_310);
	run_random(LT_FMT_311);
	return check_exit();
}
