/*
 * CPython's str hashes as a target computes them: SipHash-1-3 (3.11+) or
 * SipHash-2-4 (3.4-3.10) of the str's bytes, keyed by the process's
 * _Py_HashSecret. Knowing them, a dict of the target is searched as
 * CPython does, by its index table (pyobj.c), reading only the keys on
 * the probe chain instead of every key.
 */
#ifndef PYSTRHASH_H
#define PYSTRHASH_H

#include <stddef.h>
#include <stdint.h>

#include "pyversion.h"

enum pystrhash_alg { PYSTRHASH_SIP13 = 0, PYSTRHASH_SIP24 = 1, PYSTRHASH_NALGS };

/* _Py_HashSecret.siphash {k0, k1} of one process. */
struct pystrhash_key {
	uint64_t k0, k1;
};

/* hash(s) for the n bytes at s (an ASCII str) under key k: Py_hash_t. */
int64_t pystrhash_bytes(const struct pystrhash_key *k, enum pystrhash_alg alg, const void *s,
			size_t n);

/* Where t keeps its key (_Py_HashSecret), from t->runtime_addr and the
 * interpreter file's symbols (looked up once per file); 0: unknown. Which
 * algorithm the build uses is for the caller to check against a hash the
 * target stored. */
uint64_t pystrhash_key_addr(const struct py_target *t);

/* Reads t's key into *k. 0 on success. */
int pystrhash_key_read(const struct py_target *t, struct pystrhash_key *k);

#endif
