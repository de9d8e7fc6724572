/*
 * Typed reads of a target's memory, the one set every reader in
 * src/python uses: through the target's memory source (py_target.src),
 * every read checked, nothing written. 0 / -1 or a 0 value mean absent or
 * unreadable; address 0 is never read.
 */
#ifndef PYREAD_H
#define PYREAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pyversion.h"
#include "target_src.h"

static inline int py_read(const struct py_target *t, uint64_t addr, void *buf, size_t len)
{
	return addr ? target_read(t->src, t->pid, addr, buf, len) : -1;
}

static inline int py_read_u64(const struct py_target *t, uint64_t addr, uint64_t *v)
{
	return py_read(t, addr, v, sizeof(*v));
}

/* A pointer field; 0 for NULL, misaligned (not an object) or unreadable. */
static inline uint64_t py_read_ptr(const struct py_target *t, uint64_t addr)
{
	uint64_t v = 0;

	if (py_read_u64(t, addr, &v) || (v & 7))
		return 0;
	return v;
}

/* A word of bytes already read (unaligned). */
static inline uint64_t py_ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

#endif
