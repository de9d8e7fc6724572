/*
 * Instruction offset -> source line decoders for CPython's line tables.
 *
 * Each decoder replays the table from the start, as PyCode_Addr2Line() does,
 * and stops at the entry covering the offset.  The tables come from another
 * process and may be torn or garbage, so every read is checked against len,
 * positions and lines are kept in 64 bits (no wrap-around, no signed
 * overflow), and damage the line depends on (a cut or oversized varint, a
 * line outside int) yields -1 rather than a guess.
 */
#include <limits.h>

#include "linetable.h"

/* The "no line" marker of the 3.10 table, stored in the line delta byte. */
#define LT310_NO_LINE	(-128)

/* 3.11+ entry kinds (_PyCodeLocationInfoKind in Include/cpython/code.h). */
#define LT_KIND_ONE_LINE0	10
#define LT_KIND_ONE_LINE2	12
#define LT_KIND_NO_COLUMNS	13
#define LT_KIND_LONG		14
#define LT_KIND_NONE		15

/* 3.11+ entry header: bit 7 set, kind in bits 3-6, code units - 1 in 0-2. */
#define LT_ENTRY_START		0x80
#define LT_VARINT_MORE		0x40
#define LT_VARINT_BITS		0x3f
#define LT_VARINT_CHUNK		6
/* Six chunks hold 32 bits; CPython shifts an unsigned int, so a seventh
 * would be undefined behaviour there and can only come from garbage. */
#define LT_VARINT_MAX_SHIFT	30

/* Signed byte without relying on implementation-defined conversions. */
static int sbyte(uint8_t b)
{
	return b < 128 ? b : (int)b - 256;
}

/* Running lines must stay in int range: CPython keeps them in an int. */
static int line_in_range(int64_t line)
{
	return line >= INT_MIN && line <= INT_MAX;
}

/* A final line; negative ones cannot name a source line. */
static int line_result(int64_t line)
{
	if (line < 0 || line > INT_MAX)
		return -1;
	return (int)line;
}

int linetable_lnotab(const uint8_t *tab, size_t len, int firstlineno,
		     uint32_t byte_offset)
{
	int64_t line = firstlineno;
	uint64_t addr = 0;
	size_t i;

	/* Pairs of (address increment, signed line increment); the increment
	 * applies once the offset reaches the new address. */
	for (i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > byte_offset)
			break;
		line += sbyte(tab[i + 1]);
		if (!line_in_range(line))
			return -1;
	}
	return line_result(line);
}

int linetable_310(const uint8_t *tab, size_t len, int firstlineno,
		  uint32_t byte_offset)
{
	int64_t line = firstlineno;
	uint64_t end = 0;
	size_t i;

	/* Pairs of (range length in bytes, signed line delta).  Each pair is
	 * a range [end, end + length); zero-length ones only move the line.
	 * The -128 marker means "no line" and leaves the running line alone,
	 * as advance() in 3.10's Objects/codeobject.c does. */
	for (i = 0; i + 1 < len; i += 2) {
		int ldelta = sbyte(tab[i + 1]);

		end += tab[i];
		if (ldelta != LT310_NO_LINE) {
			line += ldelta;
			if (!line_in_range(line))
				return -1;
		}
		if (byte_offset < end)
			return ldelta == LT310_NO_LINE ? -1 : line_result(line);
	}
	return -1;
}

/*
 * 3.11+ varints: 6 bits a byte, least significant chunk first, bit 6 set
 * while more follow.  Bit 7 never occurs inside an entry; seeing it means
 * the varint ran into the next entry, i.e. the table is damaged.
 */
static int read_varint(const uint8_t *tab, size_t len, size_t *pos,
		       uint32_t *val)
{
	unsigned int shift = 0;
	uint8_t b;

	*val = 0;
	do {
		if (*pos >= len || shift > LT_VARINT_MAX_SHIFT)
			return -1;
		b = tab[(*pos)++];
		if (b & LT_ENTRY_START)
			return -1;
		*val |= (uint32_t)(b & LT_VARINT_BITS) << shift;
		shift += LT_VARINT_CHUNK;
	} while (b & LT_VARINT_MORE);
	return 0;
}

/* Zig-zag style sign in bit 0, as scan_signed_varint() decodes it. */
static int read_signed_varint(const uint8_t *tab, size_t len, size_t *pos,
			      int64_t *val)
{
	uint32_t u;

	if (read_varint(tab, len, pos, &u) < 0)
		return -1;
	*val = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return 0;
}

/*
 * Line delta of the entry whose header is tab[*pos - 1], mirroring
 * get_line_delta(): short forms (0-9) and "no location" (15) keep the line,
 * one-line forms (10-12) add kind - 10, and the no-column (13) and long (14)
 * forms start with a signed varint.  The column bytes and the long form's
 * other varints do not affect the line and are skipped by the caller.
 */
static int entry_line_delta(const uint8_t *tab, size_t len, size_t *pos,
			    unsigned int kind, int64_t *delta)
{
	*delta = 0;
	if (kind == LT_KIND_NO_COLUMNS || kind == LT_KIND_LONG)
		return read_signed_varint(tab, len, pos, delta);
	if (kind >= LT_KIND_ONE_LINE0 && kind <= LT_KIND_ONE_LINE2)
		*delta = kind - LT_KIND_ONE_LINE0;
	return 0;
}

int linetable_311(const uint8_t *tab, size_t len, int firstlineno,
		  uint32_t unit_offset)
{
	int64_t line = firstlineno;
	uint64_t end = 0;
	size_t pos = 0;

	while (pos < len) {
		uint8_t head = tab[pos++];
		unsigned int kind = (head >> 3) & 0xf;
		int64_t delta;

		/* Only the first byte can lack the marker: the skip below
		 * always stops on one.  CPython would decode it anyway, but
		 * no compiler wrote it. */
		if (!(head & LT_ENTRY_START))
			return -1;
		if (entry_line_delta(tab, len, &pos, kind, &delta) < 0)
			return -1;
		/* The delta applies to the entry's own range (advance()
		 * adds it before setting ar_line); ranges are 1-8 units. */
		line += delta;
		if (!line_in_range(line))
			return -1;
		end += (head & 7) + 1;
		if (unit_offset < end)
			return kind == LT_KIND_NONE ? -1 : line_result(line);
		while (pos < len && !(tab[pos] & LT_ENTRY_START))
			pos++;
	}
	return -1;
}
