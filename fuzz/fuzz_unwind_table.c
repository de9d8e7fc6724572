/*
 * libFuzzer target for src/native/unwind_table.c. The first input byte
 * picks what the rest is: 0 a raw .eh_frame, 1 a raw .debug_frame (8 bytes
 * of section address first in both), 2 both (a 2-byte length splits them),
 * 3 an ELF image (ut_build_elf). Checks the table's invariants: rows
 * strictly sorted, no two equal neighbours, kinds in range, and that a
 * lookup returns the last row starting at or before the address.
 */
#include "elffile.h"
#include "unwind_table.h"
#include "fuzz_common.h"

#define MAX_ROWS	(1u << 16)

static void check_table(const struct ut_table *t, struct fuzz_in *in)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct ut_row *r = &t->rows[i];

		FUZZ_CHECK(r->cfa <= UT_CFA_UNSUPPORTED && r->rbp <= UT_RBP_UNSUPPORTED);
		FUZZ_CHECK(r->plt_thr <= 15);
		FUZZ_CHECK(i == 0 || t->rows[i - 1].start < r->start);
		if (i > 0) {
			const struct ut_row *p = &t->rows[i - 1];

			FUZZ_CHECK(p->cfa != r->cfa || p->cfa_off != r->cfa_off ||
				   p->rbp != r->rbp || p->rbp_off != r->rbp_off ||
				   p->plt_thr != r->plt_thr);
		}
	}
	FUZZ_CHECK(t->n == 0 || t->rows[0].cfa != UT_CFA_NONE);
	for (int k = 0; k < 16 && t->n; k++) {
		uint64_t a = k < 8 ? t->rows[fuzz_u16(in) % t->n].start + fuzz_u8(in) : fuzz_u64(in);
		const struct ut_row *r = ut_lookup(t, a);

		if (!r) {
			FUZZ_CHECK(a < t->rows[0].start);
			continue;
		}
		FUZZ_CHECK(r->start <= a);
		FUZZ_CHECK(r == &t->rows[t->n - 1] || r[1].start > a);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct ut_section eh = { 0 }, dbg = { 0 };
	struct ut_table t;
	uint8_t mode = fuzz_u8(&in) % 4;
	uint8_t *copy;
	int rc;

	if (mode == 3) {
		struct elf_file *ef = elf_file_open_mem(in.p, in.n);

		if (!ef)
			return 0;
		rc = ut_build_elf(ef, MAX_ROWS, &t);
		elf_file_close(ef);
		if (rc == 0) {
			check_table(&t, &in);
			ut_table_free(&t);
		}
		return 0;
	}
	eh.addr = dbg.addr = fuzz_u64(&in);
	/* Exact-size copies: a read past a section's end is an ASan error. */
	copy = fuzz_dup(in.p, in.n);
	if (mode == 0) {
		eh.data = copy;
		eh.size = in.n;
	} else if (mode == 1) {
		dbg.data = copy;
		dbg.size = in.n;
	} else {
		size_t split = in.n >= 2 ? (size_t)(copy[0] | copy[1] << 8) : 0;

		if (split > in.n - (in.n >= 2 ? 2 : 0))
			split = in.n >= 2 ? in.n - 2 : 0;
		eh.data = copy + 2;
		eh.size = split;
		dbg.data = copy + 2 + split;
		dbg.size = in.n >= 2 ? in.n - 2 - split : 0;
	}
	rc = ut_build(&eh, &dbg, MAX_ROWS, &t);
	if (rc == 0) {
		struct fuzz_in probe = { data, size };

		check_table(&t, &probe);
		ut_table_free(&t);
	}
	free(copy);
	return 0;
}
