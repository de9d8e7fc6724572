/*
 * Which native frames a merged stack shows by default. Pure; unit-tested.
 *
 * The interpreter object is the ELF file that holds the Python runtime
 * (py_target.module: libpython3.X.so when the interpreter is linked
 * shared, else the python executable itself). Its functions are the
 * machinery between Python frames (calls, the eval loop, start-up) and are
 * hidden, except those that say what the program is doing: sleeping,
 * waiting for a lock or the GIL, I/O, os, str/bytes methods, re, gc and
 * builtins doing work. Frames of every other object (extension modules,
 * libc, BLAS, zlib, libffi) are kept, except the process and thread start
 * code of libc and perf trampolines (py::...), which repeat what the stack
 * already says. --all-native turns the filter off.
 */
#ifndef NATIVE_FILTER_H
#define NATIVE_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "merge.h"
#include "pyfuncs.h"

/* libc's start-up rules, checked before CPython's (pyfuncs_rules()),
 * ending with a NULL name. */
const struct nf_rule *native_filter_startup_rules(void);

/*
 * 1 if a native frame is hidden by default: name is its function (NULL or
 * "" when it has no symbol), in_interpreter whether it lies in the
 * interpreter object. Frames the table does not match are hidden inside
 * the interpreter object and kept elsewhere.
 */
int native_filter_hides(const char *name, int in_interpreter);

/*
 * Removes from f[0..n) (leaf first, as merge_stacks() writes them) the
 * native frames whose hidden[index] is set; Python frames always stay.
 * When every frame would go, the leaf frame stays so the sample keeps a
 * place. Returns the new count.
 */
size_t native_filter_apply(struct merge_frame *f, size_t n, const uint8_t *hidden);

#endif
