/*
 * CPython's str hash (Python/pyhash.c) and where a target keeps its key.
 *
 * _Py_HashSecret is a global of the file that holds _PyRuntime (the
 * executable or libpython), so its address is t->runtime_addr plus a
 * distance fixed for that file: found once from the file's symbols and
 * kept per file (by path and version; a stale one gives hashes that fail
 * the caller's check, never a wrong answer).
 */
#define _GNU_SOURCE
#include "pystrhash.h"

#include <stdio.h>
#include <string.h>

#include "elffile.h"
#include "objcache.h"
#include "pyread.h"

#define NFILES	8	/* interpreter files whose distance is kept */

/* ---- SipHash (Python/pyhash.c, little-endian) ------------------------ */

#define ROTL(x, b)	(uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define HALF_ROUND(a, b, c, d, s, t) \
	do { a += b; c += d; b = ROTL(b, s) ^ a; d = ROTL(d, t) ^ c; a = ROTL(a, 32); } while (0)
#define SIP_ROUND(v0, v1, v2, v3) \
	do { HALF_ROUND(v0, v1, v2, v3, 13, 16); HALF_ROUND(v2, v1, v0, v3, 17, 21); } while (0)

static uint64_t siphash(const struct pystrhash_key *k, int crounds, int drounds,
			const uint8_t *in, size_t n)
{
	uint64_t v0 = k->k0 ^ 0x736f6d6570736575ULL, v1 = k->k1 ^ 0x646f72616e646f6dULL;
	uint64_t v2 = k->k0 ^ 0x6c7967656e657261ULL, v3 = k->k1 ^ 0x7465646279746573ULL;
	uint64_t b = (uint64_t)n << 56, t = 0, m;

	for (; n >= 8; n -= 8, in += 8) {
		memcpy(&m, in, 8);
		v3 ^= m;
		for (int r = 0; r < crounds; r++)
			SIP_ROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	memcpy(&t, in, n);
	b |= t;
	v3 ^= b;
	for (int r = 0; r < crounds; r++)
		SIP_ROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	for (int r = 0; r < drounds; r++)
		SIP_ROUND(v0, v1, v2, v3);
	return (v0 ^ v1) ^ (v2 ^ v3);
}

int64_t pystrhash_bytes(const struct pystrhash_key *k, enum pystrhash_alg alg, const void *s,
			size_t n)
{
	int64_t x;

	if (!n)
		return 0;
	x = (int64_t)(alg == PYSTRHASH_SIP13 ? siphash(k, 1, 3, s, n) : siphash(k, 2, 4, s, n));
	return x == -1 ? -2 : x;
}

/* ---- the key --------------------------------------------------------- */

static struct {
	char module[256];
	uint32_t version_hex;
	int64_t delta;		/* _Py_HashSecret - _PyRuntime */
	int ok;
} files[NFILES];
static unsigned next_file;

/* _Py_HashSecret - _PyRuntime in t->module's symbols. 0 on success. */
static int find_delta(const struct py_target *t, int64_t *delta)
{
	struct oc_proc *p = t->objs ? objcache_proc(t->objs, t->src, t->pid) : NULL;

	for (size_t i = 0; p && i < p->maps.n; i++) {
		const struct proc_map *m = &p->maps.v[i];
		struct oc_obj *o;
		uint64_t secret, runtime;

		if (m->offset || strcmp(m->path, t->module))
			continue;
		o = objcache_obj(t->objs, p, i);
		if (!o || elf_file_symbol(o->ef, "_Py_HashSecret", &secret, NULL) ||
		    elf_file_symbol(o->ef, "_PyRuntime", &runtime, NULL))
			return -1;
		*delta = (int64_t)(secret - runtime);
		return 0;
	}
	return -1;
}

uint64_t pystrhash_key_addr(const struct py_target *t)
{
	unsigned i;

	if (!t->runtime_addr || !t->module[0])
		return 0;
	for (i = 0; i < NFILES; i++)
		if (files[i].version_hex == t->version_hex && !strcmp(files[i].module, t->module))
			break;
	if (i == NFILES) {
		i = next_file++ % NFILES;
		memset(&files[i], 0, sizeof(files[i]));
		snprintf(files[i].module, sizeof(files[i].module), "%s", t->module);
		files[i].version_hex = t->version_hex;
		files[i].ok = find_delta(t, &files[i].delta) == 0;
	}
	return files[i].ok ? t->runtime_addr + (uint64_t)files[i].delta : 0;
}

int pystrhash_key_read(const struct py_target *t, struct pystrhash_key *k)
{
	uint64_t at = pystrhash_key_addr(t);

	return at ? py_read(t, at, k, sizeof(*k)) : -1;
}
