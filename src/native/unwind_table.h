/*
 * DWARF call frame information (.eh_frame, .debug_frame) of one x86_64 ELF
 * object -> a compact unwind table: rows sorted by link-time address, each
 * saying from that address on how to find the caller's frame:
 *
 *   CFA = rsp + off or rbp + off; return address at CFA - 8;
 *   caller's rbp at CFA + rbp_off, or unchanged.
 *
 * That is what gcc and clang emit for almost every address; what it cannot
 * say is kept as a row of its own kind (PLT entries get a synthesised rule,
 * signal trampolines theirs, other expressions are "unsupported": the
 * unwinder takes a frame-pointer step or stops and counts it). The table
 * is what the BPF unwinder binary-searches (bpf/pyperf.h has its wire
 * form); building it is a pure function of the section bytes, so it is
 * unit-tested and fuzzed without a process.
 */
#ifndef UNWIND_TABLE_H
#define UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;

/* How the CFA (the caller's rsp) is found. */
enum ut_cfa {
	UT_CFA_NONE = 0,	/* no CFI covers this address (gap between FDEs) */
	UT_CFA_RSP,		/* rsp + cfa_off */
	UT_CFA_RBP,		/* rbp + cfa_off */
	UT_CFA_PLT,		/* rsp + 8, + 8 more if (rip & 15) >= plt_thr:
				 * the lazy-binding PLT's CFA expression */
	UT_CFA_SIGNAL,		/* signal trampoline (augmentation "S"): the
				 * interrupted registers are in the ucontext_t
				 * at rsp (uc_mcontext.gregs) */
	UT_CFA_OUTERMOST,	/* return address undefined: the outermost frame */
	UT_CFA_UNSUPPORTED,	/* another register or an expression */
};

/* Where the caller's rbp is. */
enum ut_rbp {
	UT_RBP_SAME = 0,	/* unchanged (never saved, or restored) */
	UT_RBP_CFA,		/* saved at CFA + rbp_off */
	UT_RBP_UNSUPPORTED,	/* in another register or an expression */
};

struct ut_row {
	uint64_t start;		/* link-time address the row starts at */
	int32_t cfa_off;
	int16_t rbp_off;
	uint8_t cfa;		/* enum ut_cfa */
	uint8_t rbp;		/* enum ut_rbp */
	uint8_t plt_thr;	/* UT_CFA_PLT only */
	uint8_t _pad[7];
};

struct ut_stats {
	uint64_t cies, fdes;
	uint64_t fdes_debug_frame;	/* FDEs taken from .debug_frame */
	uint64_t fdes_shadowed;		/* .debug_frame FDEs .eh_frame covers */
	uint64_t bad_entries;		/* CIEs/FDEs skipped: malformed */
	uint64_t bad_programs;		/* CFA programs cut short: malformed */
	uint64_t expr_plt, expr_unsupported, signal_fdes;
	uint64_t rows_raw;		/* rows before merging */
};

struct ut_table {
	struct ut_row *rows;	/* sorted by start, no two equal neighbours */
	size_t n;
	struct ut_stats st;
};

/* One CFI section: its bytes and the link-time address it is loaded at
 * (sh_addr; .eh_frame's pc-relative pointers need it, .debug_frame's do
 * not). data NULL or size 0: absent. */
struct ut_section {
	const uint8_t *data;
	size_t size;
	uint64_t addr;
};

#define UT_MAX_ROWS	(4u << 20)	/* per object; bounds hostile input */

/*
 * Builds the table of an object from its .eh_frame and/or .debug_frame
 * (either may be absent; where both describe an address, .eh_frame wins).
 * max_rows 0 means UT_MAX_ROWS. 0 on success (out->n may be 0); -1 on
 * allocation failure or more than max_rows rows. Free with ut_table_free.
 */
int ut_build(const struct ut_section *eh_frame, const struct ut_section *debug_frame,
	     size_t max_rows, struct ut_table *out);

/* The same from an ELF image: its .eh_frame and .debug_frame sections. */
int ut_build_elf(struct elf_file *ef, size_t max_rows, struct ut_table *out);

void ut_table_free(struct ut_table *t);

/* The row covering a link-time address, NULL if none (before the first
 * row). A UT_CFA_NONE row means no CFI there. */
const struct ut_row *ut_lookup(const struct ut_table *t, uint64_t addr);

#endif
