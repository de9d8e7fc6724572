/*
 * Where CPython's eval loop lies in the interpreter's ELF file (the file
 * holding _PyRuntime): the link-time address ranges of
 * _PyEval_EvalFrameDefault and of the parts compilers split off it.
 *
 * For the merge of native and Python frames where no stack anchor exists
 * (3.10 and older): a native frame whose pc (minus 1 for a return address)
 * lies in these ranges is an eval-loop call. A name does not do: GCC moves
 * the loop's unlikely blocks to "_PyEval_EvalFrameDefault.cold" (Debian
 * sid's 3.15 build: 844 bytes exported, 82 KB in .cold), LTO and IPA clone
 * it (".part.N", ".constprop.N", ".isra.N", ".lto_priv.N"), and stripping
 * removes every local symbol, so the clones are nameless there.
 *
 * Two sources, the first that answers:
 *  1. static symbols (.symtab of the file, or of its separate debug file):
 *     _PyEval_EvalFrameDefault and every _PyEval_EvalFrameDefault.<clone
 *     suffixes>;
 *  2. no static symbol: the exported (.dynsym) _PyEval_EvalFrameDefault,
 *     plus split-off parts found from its code: its near jumps (E9 rel32,
 *     0F 8x rel32) that leave it for an .eh_frame FDE no symbol covers are
 *     counted per FDE; an FDE is taken as a part only on strong evidence:
 *     its CFI at its first byte is not a function entry (a cold part starts
 *     inside its parent's frame, CFA above rsp + 8), it is jumped to at its
 *     first byte or from at least PYEVAL_MIN_HITS places, and it jumps back
 *     into the ranges found so far from at least as many. Parts found are scanned in turn. A tail
 *     call to a static function (CFI of an entry) or a byte pattern that
 *     happens to read as a jump is never taken. Bounded: PYEVAL_MAX_RANGES
 *     ranges, PYEVAL_SCAN_MAX bytes scanned per range.
 * Clones entered by a call (".constprop.N" of the whole function) are
 * found from symbols only.
 */
#ifndef PYEVAL_H
#define PYEVAL_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;
struct objcache;
struct oc_obj;
struct oc_proc;
struct proc_map;
struct py_target;

#define PYEVAL_NAME		"_PyEval_EvalFrameDefault"
#define PYEVAL_MAX_RANGES	16
#define PYEVAL_MIN_HITS		2		/* jumps into a part (unless one hits its start), and back */
#define PYEVAL_SCAN_MAX		(4u << 20)	/* code bytes scanned per range */

enum pyeval_source {
	PYEVAL_NONE = 0,	/* no _PyEval_EvalFrameDefault in the file */
	PYEVAL_SYMTAB,		/* static symbols (the file's or its debug file's) */
	PYEVAL_CODE,		/* the exported symbol and parts found from its code */
};

struct pyeval_range {
	uint64_t lo, hi;	/* link-time addresses, [lo, hi) */
};

/* Plain data, no pointers: copy it into whatever per-target state needs it. */
struct pyeval_ranges {
	struct pyeval_range r[PYEVAL_MAX_RANGES];	/* sorted by lo, disjoint */
	uint32_t n;
	uint8_t source;		/* enum pyeval_source */
	uint8_t truncated;	/* more parts than PYEVAL_MAX_RANGES were found */
};

/*
 * Computes the ranges of ef; dbg is its separate debug file or NULL (its
 * .symtab is used when present; code bytes always come from ef). Returns
 * 0 when the function was found (out->n > 0), -1 if not (out->n == 0,
 * source PYEVAL_NONE). Reads only the files; no allocation survives.
 */
int pyeval_ranges_build(struct elf_file *ef, struct elf_file *dbg, struct pyeval_ranges *out);

/* 1 if link_addr (an address in the file's link-time space, e.g.
 * nsym_result.file_vaddr) is in the eval loop. Binary search; r may have
 * n == 0 (then 0). */
int pyeval_contains(const struct pyeval_ranges *r, uint64_t link_addr);

/* 1 if name is _PyEval_EvalFrameDefault or one of its compiler clones or
 * split parts (".cold", ".part.N", ".isra.N", ".constprop.N",
 * ".lto_priv.N", in any combination; nsym_base_len()'s suffixes). */
int pyeval_name_is_loop(const char *name);

/*
 * The ranges of object o (behind mapping m of process p), computed once
 * per object and kept with its other per-file data in the object cache
 * (dropped with the entry); the debug file is the one the object layer
 * finds for o. NULL on allocation failure; a file without the function
 * gives ranges with n == 0.
 */
const struct pyeval_ranges *pyeval_of_obj(struct objcache *oc, struct oc_obj *o,
					  const struct oc_proc *p, const struct proc_map *m);

/* The ranges of t's interpreter file (t->module), through t->objs.
 * 0 and *out filled if found there; -1 otherwise (out->n == 0). */
int pyeval_of_target(const struct py_target *t, struct pyeval_ranges *out);

/* One line for -v: "eval loop: N ranges, B bytes, from SOURCE". */
void pyeval_describe(const struct pyeval_ranges *r, char *buf, size_t len);

#endif
