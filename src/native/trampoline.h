/*
 * Code without CFI that is a copy of a small template the unwinder knows
 * byte for byte, so it can step through it by rule: CPython's perf
 * trampolines (3.12+, -X perf, -X perf_jit, PYTHONPERFSUPPORT=1,
 * sys.activate_stack_trampoline), which CPython copies into anonymous
 * executable memory once per code object. Which template a target uses
 * is CPython knowledge (src/python/pytramp.c reads it from the target's
 * interpreter); this file only derives rules from its bytes, with a tiny
 * x86-64 decoder of the instructions such templates are made of, and
 * finds copies of it. Pure: unit-tested on byte strings.
 */
#ifndef TRAMPOLINE_H
#define TRAMPOLINE_H

#include <stddef.h>
#include <stdint.h>

#define TRAMP_MAX_LEN	32	/* template bytes, at most */

enum tramp_base {
	TRAMP_CFA_RSP = 0,	/* CFA = rsp + cfa */
	TRAMP_CFA_RBP,		/* CFA = rbp + cfa */
};

/* How to find the caller of a frame stopped inside a copy. */
struct tramp_rule {
	uint8_t base;		/* enum tramp_base */
	uint8_t cfa;		/* return address at CFA - 8 */
	int8_t rbp;		/* caller's rbp saved at CFA + rbp; 0: in rbp */
};

/* Why a template has no rules (struct tramp_shape.status). */
enum tramp_status {
	TRAMP_NONE = 0,		/* no template expected (not looked up) */
	TRAMP_OK,		/* rules at every instruction boundary */
	TRAMP_UNDECODABLE,	/* an instruction the decoder does not know */
	TRAMP_UNTRACKED,	/* known instructions, but the CFA or the
				 * caller's rbp is lost somewhere */
	TRAMP_MISSING,		/* expected, but not found */
};

/* A template and its rule at each instruction boundary (ret included). */
struct tramp_shape {
	uint8_t status;		/* enum tramp_status */
	uint8_t len;		/* bytes of code */
	uint8_t nrows;
	uint8_t code[TRAMP_MAX_LEN];
	struct tramp_row {
		uint8_t at;	/* bytes from the start */
		struct tramp_rule rule;
	} row[TRAMP_MAX_LEN];
};

/*
 * Decodes len bytes of a template into *out. Returns 0 and status
 * TRAMP_OK when every byte is an instruction it knows (endbr64, nops,
 * push/pop, mov %rsp,%rbp and back, leave, sub/add/and of an immediate to
 * rsp, call *%reg, a final ret) and the CFA and the caller's rbp are known
 * at every boundary; else -1, no rows, and status says why. Never guesses.
 */
int tramp_shape_derive(const uint8_t *code, size_t len, struct tramp_shape *out);

/* Reads len bytes of code at addr into buf; 0 on success. */
typedef int (*tramp_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * Is ip an instruction boundary of a copy of sh (return addresses
 * included)? Reads each candidate copy, ip - boundary, through read.
 * Returns 1 and fills *rule if so, else 0 (sh NULL or not TRAMP_OK: 0).
 */
int tramp_match(const struct tramp_shape *sh, tramp_read_fn read, void *ctx, uint64_t ip,
		struct tramp_rule *rule);

struct ut_table;

/*
 * The unwind table of len bytes of code holding copies of sh (a CPython
 * trampoline arena: mmap'd, filled with copies at any stride, then made
 * executable), addresses relative to code: a row at every instruction
 * boundary of each copy, none past one, equal neighbours merged. 0 on
 * success (out->n 0: no copy, i.e. other JIT code, or sh not TRAMP_OK);
 * -1 if out of memory or more than max_rows rows (0: UT_MAX_ROWS). Free
 * with ut_table_free.
 */
int tramp_build_table(const struct tramp_shape *sh, const uint8_t *code, size_t len,
		      size_t max_rows, struct ut_table *out);

#endif
