/*
 * Unwind tables for code covered only by .debug_frame (in the object or
 * its separate debug file): the records rewritten in .eh_frame form (CIE
 * id 0, version 3, augmentation "zR" with 8-byte data-relative FDE
 * addresses, so libunwind adds the load bias) behind a sorted search
 * table, the layout of libunwind's UNW_INFO_FORMAT_IP_OFFSET tables.
 * Pure: no I/O, fuzzed by fuzz/fuzz_debug_frame.c.
 */
#ifndef DEBUG_FRAME_H
#define DEBUG_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* DWARF pointer encodings (DW_EH_PE_*) */
#define DW_EH_PE_ABSPTR		0x00
#define DW_EH_PE_UDATA2		0x02
#define DW_EH_PE_UDATA4		0x03
#define DW_EH_PE_UDATA8		0x04
#define DW_EH_PE_SDATA2		0x0a
#define DW_EH_PE_SDATA4		0x0b
#define DW_EH_PE_SDATA8		0x0c
#define DW_EH_PE_DATAREL	0x30

#define DEBUG_FRAME_MAX		(64u << 20)	/* .debug_frame bytes indexed, at most */

struct debug_frame_table {
	/* [table: count x (int32 start - lo, int32 record offset)]
	 * [records], then 8 zero bytes: libunwind reads whole aligned
	 * words, past the last byte too. */
	uint8_t *buf;
	size_t len;
	uint64_t lo, hi;	/* link-time range covered */
	uint64_t count;		/* table entries (FDEs kept) */
};

/* Builds t from the len bytes of a .debug_frame section (64-bit
 * addresses, 32-bit DWARF). 0 when at least one FDE was kept; -1 (t
 * empty) when none, when out of memory or when len > DEBUG_FRAME_MAX. */
int debug_frame_build(const uint8_t *in, size_t len, struct debug_frame_table *t);
void debug_frame_free(struct debug_frame_table *t);

#endif
