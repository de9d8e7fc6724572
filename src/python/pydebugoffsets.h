/*
 * CPython 3.13+ publish the offsets of their own structures in
 * _Py_DebugOffsets, the first member of _PyRuntime. This parses a copy of
 * those bytes into the layout pyperf-pprof uses.
 */
#ifndef PYDEBUGOFFSETS_H
#define PYDEBUGOFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "pyoffsets.h"

/* Bytes worth reading from the start of _PyRuntime: every known table is
 * far smaller (3.13: 584, 3.14: 760, 3.15: 888 bytes), and _PyRuntime itself
 * is far bigger. */
#define PY_DEBUG_OFFSETS_READ	4096

/* Oldest minor version that has the table. */
#define PY_DEBUG_OFFSETS_MINOR	13

/*
 * Parses len bytes copied from the start of a target's _PyRuntime with the
 * field list of the version's row (src/python/pylayout_rows.c; a newer
 * version is read with the newest list of its build). Pure: reads nothing
 * but buf[0..len). On success fills *out (offsets and the row's behaviour)
 * and *version_hex (the table's PY_VERSION_HEX) and returns 0. A bad
 * cookie, a truncated copy, a build without a row, stable-ABI anchors of
 * the other build, an implausible table or a needed field the table lacks
 * returns -1 with one line in err naming the field and the values.
 */
int py_debug_offsets_parse(const uint8_t *buf, size_t len, uint32_t *version_hex,
			   struct py_layout *out, char *err, size_t errlen);

#endif /* PYDEBUGOFFSETS_H */
