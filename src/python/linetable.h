/*
 * Instruction offset -> source line decoders for CPython's line tables.
 *
 * Pure functions over bytes copied out of the target process: no CPython
 * headers, no allocation, and no read outside tab[0 .. len - 1], whatever the
 * bytes are.  Each one mirrors PyCode_Addr2Line() of the versions it names.
 */
#ifndef LINETABLE_H
#define LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/*
 * co_lnotab, CPython 3.6-3.9; byte_offset is f_lasti (bytes).
 *
 * Like PyCode_Addr2Line(), every offset is "covered": an empty table means
 * firstlineno everywhere and offsets past the code keep the last line, since
 * the table does not record the code size.  A trailing odd byte is ignored.
 */
int linetable_lnotab(const uint8_t *tab, size_t len, int firstlineno,
		     uint32_t byte_offset);

/*
 * co_linetable, CPython 3.10; byte_offset is f_lasti * 2 (f_lasti counts
 * code units in 3.10).  -1 for ranges without a line (the -128 marker) and
 * for offsets past the last range.
 */
int linetable_310(const uint8_t *tab, size_t len, int firstlineno,
		  uint32_t byte_offset);

/*
 * co_linetable location table, CPython 3.11+; unit_offset counts 2-byte code
 * units.  -1 for "no location" entries and offsets past the last entry.
 */
int linetable_311(const uint8_t *tab, size_t len, int firstlineno,
		  uint32_t unit_offset);

/*
 * All three return the line number, or -1 if the offset is not covered or
 * the table is malformed (truncated or oversized varint, a line outside
 * 0..INT_MAX).  Damaged input may also yield a wrong but harmless line.
 * tab may be NULL only when len is 0.
 *
 * Offsets are unsigned: a frame that has not started yet (f_lasti == -1, or
 * 3.11+'s prev_instr one unit before the code) must be mapped to firstlineno
 * by the caller, as PyCode_Addr2Line() does for negative offsets.
 */

#endif /* LINETABLE_H */
