/*
 * libFuzzer target for py_debug_offsets_parse() (src/python/pydebugoffsets.c):
 * the input is a copy of the start of a target's _PyRuntime (seeds: a
 * real 3.13 table and synthetic 3.14 ones). Parsed with a roomy error
 * buffer and again with an exact-size small one (its size from the
 * input's length), so a message overflowing errlen is caught. Checks a
 * success fills offsets the BPF program can use (below PYPERF_NO_FIELD,
 * 32-bit ones below PY_NO_FIELD32) and a failure leaves one
 * NUL-terminated line in err.
 */
#include "pydebugoffsets.h"
#include "fuzz_common.h"

static void check_ok(const struct py_layout *l, uint32_t hex)
{
	FUZZ_CHECK(l->version_hex == hex);
	FUZZ_CHECK(hex >> 24 == 3 && (hex >> 16 & 0xff) >= PY_DEBUG_OFFSETS_MINOR);
	FUZZ_CHECK(l->source != NULL && l->source[0]);
	FUZZ_CHECK(l->runtime_interp_head < PY_NO_FIELD32);
	FUZZ_CHECK(l->walk.ts_frame != PYPERF_NO_FIELD);
	FUZZ_CHECK(l->walk.frame_back != PYPERF_NO_FIELD);
	FUZZ_CHECK(l->walk.frame_code != PYPERF_NO_FIELD);
	FUZZ_CHECK(l->code.co_filename != PYPERF_NO_FIELD);
	FUZZ_CHECK(l->code.unicode_compact_size == l->code.unicode_ascii_size + 16);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = fuzz_dup(data, size);
	size_t small = size % 48;
	char err[512], *serr = malloc(small ? small : 1);
	struct py_layout l, l2;
	uint32_t hex = 0, hex2 = 0;
	int r, r2;

	if (!serr)
		abort();
	memset(err, 'x', sizeof(err));
	r = py_debug_offsets_parse(buf, size, &hex, &l, err, sizeof(err));
	if (r == 0)
		check_ok(&l, hex);
	else
		FUZZ_CHECK(r == -1 && memchr(err, '\0', sizeof(err)) && !strchr(err, '\n'));
	r2 = py_debug_offsets_parse(buf, size, &hex2, &l2, small ? serr : NULL, small);
	FUZZ_CHECK(r2 == r);
	if (r == 0)	/* deterministic: the same layout again */
		FUZZ_CHECK(hex2 == hex && l2.version_hex == l.version_hex &&
			   l2.source == l.source &&
			   l2.runtime_interp_head == l.runtime_interp_head &&
			   l2.runtime_gil_holder == l.runtime_gil_holder &&
			   memcmp(&l.walk, &l2.walk, sizeof(l.walk)) == 0 &&
			   memcmp(&l.code, &l2.code, sizeof(l.code)) == 0);
	else if (small)
		FUZZ_CHECK(memchr(serr, '\0', small) != NULL);
	/* Every shorter copy of a table that parses: a truncated read. */
	if (r == 0)
		for (size_t cut = 0; cut < size; cut += 1 + cut / 8) {
			uint8_t *t = fuzz_dup(buf, cut);

			(void)py_debug_offsets_parse(t, cut, &hex2, &l2, err, sizeof(err));
			free(t);
		}
	free(serr);
	free(buf);
	return 0;
}
