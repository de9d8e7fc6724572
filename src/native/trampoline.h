/*
 * Code without CFI whose shape is known byte for byte, so the unwinder can
 * step through it by rule: CPython's perf trampolines (3.12+, -X perf,
 * PYTHONPERFSUPPORT=1, sys.activate_stack_trampoline("perf")). CPython
 * copies one small function into anonymous executable memory once per
 * code object and runs every Python call through its copy. Pure: unit-
 * tested on byte strings.
 */
#ifndef TRAMPOLINE_H
#define TRAMPOLINE_H

#include <stddef.h>
#include <stdint.h>

/* How to find the caller of a frame stopped inside a known shape. */
struct tramp_rule {
	uint8_t cfa;		/* CFA = rsp + cfa; return address at CFA - 8 */
	int8_t rbp;		/* saved rbp at CFA + rbp; 0: rbp untouched */
};

/* Bytes of code the caller must supply before and after ip. */
#define TRAMP_BEFORE	16
#define TRAMP_AFTER	16

/*
 * code holds the bytes from ip - TRAMP_BEFORE to ip + TRAMP_AFTER. Returns
 * 1 and fills *rule when ip is an instruction boundary of a known shape
 * (return addresses included), else 0.
 */
int tramp_match(const uint8_t code[TRAMP_BEFORE + TRAMP_AFTER], struct tramp_rule *rule);

struct ut_table;

/*
 * The unwind table of len bytes of code holding copies of known shapes
 * (a CPython trampoline arena: mmap'd, filled with copies, then made
 * executable), addresses relative to code: a row at every instruction
 * boundary tramp_match recognises, equal neighbours merged. 0 on success
 * (out->n 0: no known shape, i.e. other JIT code); -1 if out of memory or
 * more than max_rows rows (0: UT_MAX_ROWS). Free with ut_table_free.
 */
int tramp_build_table(const uint8_t *code, size_t len, size_t max_rows, struct ut_table *out);

#endif
