/*
 * .debug_frame -> the .eh_frame form libunwind searches (see
 * debug_frame.h). Pure: bytes in, a table out; every length and offset of
 * the input is checked against its end.
 */
#include "debug_frame.h"

#include <stdlib.h>
#include <string.h>

struct df_entry {
	uint64_t start, end, off;	/* link-time range, record offset */
};

struct df_cie {
	uint64_t in_off, out_off;
};

struct df_build {
	const uint8_t *in;
	size_t in_len;
	uint8_t *out;
	size_t out_len, out_cap;
	struct df_entry *ent;
	size_t nent, ent_cap;
	struct df_cie *cie;
	size_t ncie, cie_cap;
};

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 64;
	void *nv;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if (ncap > DEBUG_FRAME_MAX / elem + 64)
		return -1;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -1;
	*v = nv;
	*cap = ncap;
	return 0;
}

static int put(struct df_build *b, const void *p, size_t n)
{
	if (grow((void **)&b->out, &b->out_cap, b->out_len + n, 1))
		return -1;
	memcpy(b->out + b->out_len, p, n);
	b->out_len += n;
	return 0;
}

static int put_uleb(struct df_build *b, uint64_t v)
{
	uint8_t byte;

	do {
		byte = v & 0x7f;
		v >>= 7;
		if (v)
			byte |= 0x80;
		if (put(b, &byte, 1))
			return -1;
	} while (v);
	return 0;
}

/* Skips a LEB128 number; -1 if it runs past end or is absurdly long. */
static int leb_skip(const uint8_t **p, const uint8_t *end, uint64_t *val)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (*p < end && shift < 64) {
		uint8_t byte = *(*p)++;

		v |= (uint64_t)(byte & 0x7f) << shift;
		shift += 7;
		if (!(byte & 0x80)) {
			if (val)
				*val = v;
			return 0;
		}
	}
	return -1;
}

/* Rewrites the .debug_frame CIE at [pos, end) in .eh_frame form: id 0,
 * version 3, augmentation "zR" declaring FDE addresses 8-byte
 * data-relative, so libunwind adds pi->gp (the load bias) to them.
 * Returns -1 only when out of memory; unusable CIEs are skipped. */
static int df_cie(struct df_build *b, size_t pos, size_t end)
{
	const uint8_t *p = b->in + pos + 8, *e = b->in + end, *align, *ra_at;
	static const uint8_t head[] = { 0, 0, 0, 0, 3, 'z', 'R', 0 };
	uint8_t enc = DW_EH_PE_DATAREL | DW_EH_PE_SDATA8, version;
	uint64_t ra, out_off = b->out_len;
	uint32_t len;

	if (p >= e || ((version = *p++) != 1 && version != 3 && version != 4))
		return 0;
	if (p >= e || *p++ != 0)	/* augmented debug_frame CIEs: not seen */
		return 0;
	if (version == 4) {
		if (e - p < 2 || p[0] != 8 || p[1] != 0)
			return 0;
		p += 2;
	}
	align = p;		/* code and data alignment factors, kept as is */
	if (leb_skip(&p, e, NULL) || leb_skip(&p, e, NULL))
		return 0;
	ra_at = p;
	if (version == 1) {
		if (p >= e)
			return 0;
		ra = *p++;
	} else if (leb_skip(&p, e, &ra)) {
		return 0;
	}
	if (grow((void **)&b->cie, &b->cie_cap, b->ncie + 1, sizeof(*b->cie)))
		return -1;
	len = 0;
	if (put(b, &len, 4) || put(b, head, sizeof(head)) ||
	    put(b, align, (size_t)(ra_at - align)) ||
	    put_uleb(b, ra) || put_uleb(b, 1) || put(b, &enc, 1) || put(b, p, (size_t)(e - p)))
		return -1;
	len = (uint32_t)(b->out_len - out_off - 4);
	memcpy(b->out + out_off, &len, 4);
	b->cie[b->ncie].in_off = pos;
	b->cie[b->ncie++].out_off = out_off;
	return 0;
}

static const struct df_cie *df_find_cie(const struct df_build *b, uint64_t in_off)
{
	size_t lo = 0, hi = b->ncie;

	/* CIEs were added in file order, so by increasing offset. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->cie[mid].in_off == in_off)
			return &b->cie[mid];
		if (b->cie[mid].in_off < in_off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Rewrites one FDE: .eh_frame's CIE pointer is relative to itself, and a
 * "z" CIE needs an (empty) augmentation length before the instructions. */
static int df_fde(struct df_build *b, size_t pos, size_t end, uint32_t cie_off)
{
	const struct df_cie *cie = df_find_cie(b, cie_off);
	uint64_t start, range, out_off = b->out_len;
	uint32_t len, ptr;
	uint8_t zero = 0;

	if (!cie || end - pos < 24)
		return 0;
	memcpy(&start, b->in + pos + 8, 8);
	memcpy(&range, b->in + pos + 16, 8);
	/* Start 0: a function the linker discarded. */
	if (!start || !range || start + range < start)
		return 0;
	if (grow((void **)&b->ent, &b->ent_cap, b->nent + 1, sizeof(*b->ent)))
		return -1;
	len = (uint32_t)(end - pos - 4 + 1);
	ptr = (uint32_t)(out_off + 4 - cie->out_off);
	if (put(b, &len, 4) || put(b, &ptr, 4) || put(b, b->in + pos + 8, 16) ||
	    put(b, &zero, 1) || put(b, b->in + pos + 24, end - pos - 24))
		return -1;
	b->ent[b->nent].start = start;
	b->ent[b->nent].end = start + range;
	b->ent[b->nent++].off = out_off;
	return 0;
}

static int df_walk(struct df_build *b)
{
	size_t pos = 0;

	while (b->in_len - pos >= 8) {
		uint32_t len, id;
		size_t end;

		memcpy(&len, b->in + pos, 4);
		if (len == 0xffffffff || len < 4 || len > b->in_len - pos - 4)
			break;		/* 64-bit DWARF, or truncated */
		end = pos + 4 + len;
		memcpy(&id, b->in + pos + 4, 4);
		if ((id == 0xffffffff ? df_cie(b, pos, end) : df_fde(b, pos, end, id)))
			return -1;
		pos = end;
	}
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct df_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Lays out [table][records]: table entries are int32 pairs (start
 * relative to df_lo, record offset relative to the buffer). */
static int df_finish(struct debug_frame_table *t, struct df_build *b)
{
	uint64_t lo, hi = 0, tbytes = b->nent * 8;
	uint8_t *buf;

	if (!b->nent)
		return -1;
	qsort(b->ent, b->nent, sizeof(*b->ent), cmp_entry);
	lo = b->ent[0].start;
	for (size_t i = 0; i < b->nent; i++)
		hi = b->ent[i].end > hi ? b->ent[i].end : hi;
	if (hi - lo > INT32_MAX || tbytes + b->out_len > INT32_MAX)
		return -1;
	/* +8: libunwind reads whole aligned words, past the last byte too. */
	buf = calloc(1, tbytes + b->out_len + 8);
	if (!buf)
		return -1;
	for (size_t i = 0; i < b->nent; i++) {
		int32_t e[2] = { (int32_t)(b->ent[i].start - lo),
				 (int32_t)(tbytes + b->ent[i].off) };

		memcpy(buf + 8 * i, e, 8);
	}
	memcpy(buf + tbytes, b->out, b->out_len);
	t->buf = buf;
	t->len = tbytes + b->out_len + 8;
	t->lo = lo;
	t->hi = hi;
	t->count = b->nent;
	return 0;
}

int debug_frame_build(const uint8_t *in, size_t len, struct debug_frame_table *t)
{
	struct df_build b = { .in = in, .in_len = len };
	int r;

	memset(t, 0, sizeof(*t));
	if (!in || len > DEBUG_FRAME_MAX)
		return -1;
	r = df_walk(&b) ? -1 : df_finish(t, &b);
	free(b.out);
	free(b.ent);
	free(b.cie);
	return r;
}

void debug_frame_free(struct debug_frame_table *t)
{
	free(t->buf);
	memset(t, 0, sizeof(*t));
}
