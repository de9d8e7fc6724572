/*
 * Helpers shared by the libFuzzer targets: a cursor that hands out
 * integers and bytes from the fuzzer's input, and a check that aborts
 * (so libFuzzer keeps the input) when an invariant of the code under test
 * does not hold.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: check failed: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

/* Up to len bytes (fewer at the end of the input; zeros past it). */
static inline void fuzz_bytes(struct fuzz_in *in, void *out, size_t len)
{
	size_t k = len < in->n ? len : in->n;

	memcpy(out, in->p, k);
	memset((uint8_t *)out + k, 0, len - k);
	in->p += k;
	in->n -= k;
}

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	uint8_t v;

	fuzz_bytes(in, &v, 1);
	return v;
}

static inline uint16_t fuzz_u16(struct fuzz_in *in)
{
	uint16_t v;

	fuzz_bytes(in, &v, 2);
	return v;
}

static inline uint32_t fuzz_u32(struct fuzz_in *in)
{
	uint32_t v;

	fuzz_bytes(in, &v, 4);
	return v;
}

static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
	uint64_t v;

	fuzz_bytes(in, &v, 8);
	return v;
}

/* A malloc'd NUL-terminated string of the next len input bytes, cut at
 * the first NUL (any other bytes, so invalid UTF-8 included). */
static inline char *fuzz_str(struct fuzz_in *in, size_t len)
{
	char *s = malloc(len + 1);
	size_t i;

	if (!s)
		abort();
	fuzz_bytes(in, s, len);
	for (i = 0; i < len && s[i]; i++)
		;
	s[i] = '\0';
	return s;
}

/* An exact-size heap copy, so AddressSanitizer sees a read one byte past
 * the end (libFuzzer's own buffer is exact-size too; the copy keeps it so
 * for a part of the input). */
static inline uint8_t *fuzz_dup(const uint8_t *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);

	if (!c)
		abort();
	memcpy(c, p, n);
	return c;
}

#endif
