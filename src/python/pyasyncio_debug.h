/*
 * CPython 3.14+ describe their asyncio structures in an ELF section of
 * their own, ".AsyncioDebug", in the file that holds _asyncio: this reads
 * that section and turns it into the asyncio layout of one process.
 */
#ifndef PYASYNCIO_DEBUG_H
#define PYASYNCIO_DEBUG_H

#include <stddef.h>
#include <stdint.h>

#include "pyasyncio.h"
#include "pyoffsets.h"
#include "pyversion.h"

#define PYASYNCIO_SECTION	".AsyncioDebug"
#define PYASYNCIO_SECTION_LEN	104	/* 13 uint64 values (v3.14.0, v3.15.0rc1) */
#define PYASYNCIO_SECTION_MAX	1024	/* bytes of the section copied, at most */

/*
 * The asyncio layout from the section's bytes (sec, len) and the
 * interpreter's _Py_DebugOffsets layout pl of the same process. Pure.
 * Checks the section against the interpreter (its sizeof(PyInterpreterState)
 * and of the thread state), the adjacent fields the headers put side by
 * side, and the anchors of what is derived (PyTypeObject.tp_flags at
 * tp_name + 144). 0 on success; -1 with one line in err naming the field
 * and both values.
 */
int pyasyncio_debug_parse(const uint8_t *sec, size_t len, const struct py_layout *pl,
			  struct pyasyncio_layout *out, char *err, size_t errlen);

/*
 * The part of the layout that needs no section: the coroutine and type
 * offsets, from _Py_DebugOffsets (pl) and the headers, with no C Task
 * (task_size, task_coro, task_name, ts_task 0). What pure-Python tasks
 * need where _asyncio is not loaded. 0, or -1 with err as above. Pure.
 */
int pyasyncio_debug_derive(const struct py_layout *pl, struct pyasyncio_layout *out,
			   char *err, size_t errlen);

/*
 * Copies the section from the files t maps: an extension module named
 * "_asyncio.*" first, then the file holding the runtime (_asyncio built
 * in). 0 when found (*len bytes, at most cap), 1 when no mapped file has
 * it (asyncio not imported yet), -1 when it cannot be read.
 */
int pyasyncio_debug_read(const struct py_target *t, uint8_t *buf, size_t cap, size_t *len);

#endif /* PYASYNCIO_DEBUG_H */
