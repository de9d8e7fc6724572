/*
 * CPython's perf trampoline template, read from the target's own
 * interpreter: the code -X perf and -X perf_jit (3.12+) copy once per code
 * object into anonymous executable memory and run each Python call
 * through. Its shape changes with the version and the build (3.12/3.13
 * sub $8,%rsp; call *%rcx; add $8,%rsp; ret; 3.14+ push %rbp; mov %rsp,%rbp;
 * call *%rcx; pop %rbp; ret; either with endbr64 first in CET builds), so
 * it is never assumed: the unwinders get its bytes and rules as data.
 */
#ifndef PYTRAMP_H
#define PYTRAMP_H

#include "trampoline.h"

struct elf_file;

/*
 * The template of the interpreter file ef (the one holding _PyRuntime) of
 * CPython major.minor into *out: the bytes from _Py_trampoline_func_start
 * to _Py_trampoline_func_end (.dynsym or .symtab) and their rules
 * (tramp_shape_derive). out->status says what was found: TRAMP_NONE for
 * versions without trampolines, TRAMP_MISSING for a 3.12+ file without
 * the symbols. 0 if TRAMP_OK, else -1.
 */
int pytramp_read(struct elf_file *ef, unsigned major, unsigned minor, struct tramp_shape *out);

/* "ok", "none", "undecodable", "untracked" or "missing ...": sh->status
 * for messages. */
const char *pytramp_status_name(const struct tramp_shape *sh);

#endif
