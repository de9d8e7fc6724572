/*
 * libFuzzer target for the .debug_frame rewriter (src/native/debug_frame.c).
 *
 * Input: the bytes of a .debug_frame section, as an exact-size heap copy
 * (a read past its end is caught by AddressSanitizer). When a table is
 * built, checks what libunwind will trust in it: at least one entry, the
 * entries sorted by start and inside [lo, hi), each record offset inside
 * the buffer with its whole length too, and each FDE's CIE pointer landing
 * on an earlier record that is a CIE of the rewritten form (id 0, version
 * 3, augmentation "zR").
 */
#include "debug_frame.h"
#include "fuzz_common.h"

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static void check_record(const struct debug_frame_table *t, size_t tbytes, size_t rec)
{
	size_t end = t->len - 8;	/* the zero padding is not a record */
	uint32_t len, ptr;
	size_t cie;

	FUZZ_CHECK(rec >= tbytes && rec + 8 <= end);
	len = u32_at(t->buf + rec);
	FUZZ_CHECK(len >= 4 && len <= end - rec - 4);
	ptr = u32_at(t->buf + rec + 4);
	FUZZ_CHECK(ptr != 0 && ptr <= rec + 4 - tbytes);
	cie = rec + 4 - ptr;
	FUZZ_CHECK(cie >= tbytes && cie + 12 <= end);
	FUZZ_CHECK(u32_at(t->buf + cie + 4) == 0 && t->buf[cie + 8] == 3 &&
		   t->buf[cie + 9] == 'z' && t->buf[cie + 10] == 'R' && t->buf[cie + 11] == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *in = fuzz_dup(data, size);
	struct debug_frame_table t;
	int64_t prev = -1;
	size_t tbytes;

	if (debug_frame_build(in, size, &t)) {
		FUZZ_CHECK(!t.buf && !t.len && !t.count);
		free(in);
		return 0;
	}
	free(in);
	FUZZ_CHECK(t.buf && t.count > 0 && t.lo < t.hi);
	FUZZ_CHECK(t.count <= (t.len - 8) / 8);
	tbytes = t.count * 8;
	for (uint64_t i = 0; i < t.count; i++) {
		int32_t e[2];

		memcpy(e, t.buf + 8 * i, 8);
		FUZZ_CHECK(e[0] >= 0 && e[0] >= prev && t.lo + (uint64_t)e[0] < t.hi);
		prev = e[0];
		FUZZ_CHECK(e[1] >= 0);
		check_record(&t, tbytes, (size_t)e[1]);
	}
	debug_frame_free(&t);
	return 0;
}
