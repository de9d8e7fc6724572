/* The payload encoding of recordings; see record_codec.h. */
#include "record_codec.h"

#include <stdlib.h>
#include <string.h>

void rec_put(struct rec_buf *b, const void *p, size_t n)
{
	if (b->oom || !n)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *np;

		while (cap < b->n + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

void rec_put_u32(struct rec_buf *b, uint32_t v)
{
	uint8_t x[4];

	for (int i = 0; i < 4; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	rec_put(b, x, 4);
}

void rec_put_u64(struct rec_buf *b, uint64_t v)
{
	uint8_t x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	rec_put(b, x, 8);
}

void rec_put_str(struct rec_buf *b, const char *s, size_t max)
{
	/* Bounded by the array too: strnlen() must not look past it. */
	size_t n = s ? strnlen(s, max < 65535 ? max : 65535) : 0;
	uint8_t x[2] = { (uint8_t)n, (uint8_t)(n >> 8) };

	rec_put(b, x, 2);
	rec_put(b, s, n);
}

uint32_t rec_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t rec_get_u64(const uint8_t *p)
{
	return (uint64_t)rec_get_u32(p) | (uint64_t)rec_get_u32(p + 4) << 32;
}

const uint8_t *rec_take(struct rec_cur *c, size_t n)
{
	const uint8_t *p = c->p;

	if (c->bad || n > c->n) {
		c->bad = 1;
		return NULL;
	}
	c->p += n;
	c->n -= n;
	return p;
}

uint32_t rec_take_u32(struct rec_cur *c)
{
	const uint8_t *p = rec_take(c, 4);

	return p ? rec_get_u32(p) : 0;
}

uint64_t rec_take_u64(struct rec_cur *c)
{
	const uint8_t *p = rec_take(c, 8);

	return p ? rec_get_u64(p) : 0;
}

const uint8_t *rec_take_strp(struct rec_cur *c, size_t *len)
{
	const uint8_t *lp = rec_take(c, 2);

	*len = lp ? (size_t)lp[0] | (size_t)lp[1] << 8 : 0;
	return rec_take(c, *len);
}

void rec_take_str(struct rec_cur *c, char *out, size_t cap)
{
	size_t n;
	const uint8_t *s = rec_take_strp(c, &n);
	size_t k = !s ? 0 : n < cap ? n : cap - 1;

	memcpy(out, s ? (const char *)s : "", k);
	out[k] = '\0';
	/* A NUL inside is allowed but ends the string. */
}

uint64_t rec_hash(const void *data, size_t n, uint64_t seed)
{
	const uint8_t *p = data;
	uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ull);

	while (n >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
		p += 8;
		n -= 8;
	}
	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	h ^= h >> 29;
	h *= 0xc4ceb9fe1a85ec53ull;
	return (h ^ (h >> 32)) | 1;
}
