/*
 * libFuzzer target for the three line-table decoders of src/python/linetable.c.
 *
 * Input: byte 0 selects the decoder (mod 3: lnotab, 3.10, 3.11+), bytes
 * 1-4 are firstlineno, bytes 5-6 the number of extra offsets to query,
 * the next 4 bytes a first offset; the rest is the table. Offsets queried:
 * the first one, 0, every offset up to a bound, some from the table's own
 * bytes, and UINT32_MAX. The table is an exact-size heap copy so that a
 * read past its end is caught by AddressSanitizer (every prefix of the
 * table is decoded too: a torn copy is a shorter table). Checks that each
 * result is -1 or a line in 0..INT_MAX, and the empty-table rules of
 * linetable.h.
 */
#include "linetable.h"
#include "fuzz_common.h"


static int decode(unsigned fmt, const uint8_t *tab, size_t len, int first,
		  uint32_t off)
{
	int line;

	switch (fmt) {
	case 0:
		line = linetable_lnotab(tab, len, first, off);
		break;
	case 1:
		line = linetable_310(tab, len, first, off);
		break;
	default:
		line = linetable_311(tab, len, first, off);
		break;
	}
	FUZZ_CHECK(line >= -1);
	return line;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	unsigned fmt = fuzz_u8(&in) % 3;
	int first = (int)fuzz_u32(&in);
	unsigned extra = fuzz_u16(&in) % 512;
	uint32_t off0 = fuzz_u32(&in);
	uint8_t *tab = in.n ? fuzz_dup(in.p, in.n) : NULL;
	size_t len = in.n;
	int empty;

	(void)decode(fmt, tab, len, first, off0);
	(void)decode(fmt, tab, len, first, UINT32_MAX);
	for (uint32_t off = 0; off < extra; off++)
		(void)decode(fmt, tab, len, first, off);
	for (size_t i = 0; i + 4 <= len && i < 64; i += 4) {
		uint32_t off;

		memcpy(&off, tab + i, 4);
		(void)decode(fmt, tab, len, first, off);
	}
	/* Prefixes of the table. */
	for (size_t cut = 0; cut < len && cut < 64; cut++) {
		uint8_t *t = fuzz_dup(tab, cut);

		(void)decode(fmt, cut ? t : NULL, cut, first, off0 % 4096);
		free(t);
	}
	/* An empty lnotab covers every offset with firstlineno. */
	empty = decode(0, NULL, 0, first, off0);
	FUZZ_CHECK(empty == (first < 0 ? -1 : first));
	FUZZ_CHECK(decode(1, NULL, 0, first, off0) == -1);
	FUZZ_CHECK(decode(2, NULL, 0, first, off0) == -1);
	free(tab);
	return 0;
}
