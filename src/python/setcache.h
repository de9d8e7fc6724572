/* Storage for the set-associative caches (pysym.c, pythread.c): entries in
 * sets of `ways`, the set count a power of two so a hash masks to a set. */
#ifndef SETCACHE_H
#define SETCACHE_H

#include <stdlib.h>

/* Zeroed room for at least capacity entries of entry_size bytes; *nsets
 * gets the number of sets. NULL if out of memory. */
static inline void *setcache_alloc(size_t capacity, size_t ways, size_t entry_size,
				   size_t *nsets)
{
	size_t sets = 1;

	while (sets * ways < capacity)
		sets <<= 1;
	*nsets = sets;
	return calloc(sets * ways, entry_size);
}

#endif
