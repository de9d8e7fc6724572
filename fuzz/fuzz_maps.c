/*
 * libFuzzer target for proc_maps_parse() and proc_maps_find() (src/memsource/proc.c):
 * the input is the text of a /proc/PID/maps file, not NUL-terminated.
 * Checks the parsed entries (start <= end, a NUL-terminated path, perms
 * of at most 4 characters) and that the binary search finds each entry of
 * a sorted, non-overlapping table by its first and last address.
 */
#include "proc.h"
#include "fuzz_common.h"

static int sorted(const struct proc_maps *m)
{
	for (size_t i = 0; i + 1 < m->n; i++)
		if (m->v[i].end > m->v[i + 1].start)
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *text = fuzz_dup(data, size);
	struct proc_maps m;
	const struct proc_map *pm;
	int ok;

	if (proc_maps_parse((const char *)text, size, &m)) {
		free(text);
		return 0;
	}
	FUZZ_CHECK(m.n == 0 || m.v != NULL);
	ok = sorted(&m);
	for (size_t i = 0; i < m.n; i++) {
		const struct proc_map *e = &m.v[i];

		FUZZ_CHECK(e->start <= e->end);
		FUZZ_CHECK(e->path != NULL);
		FUZZ_CHECK(strlen(e->path) <= size);
		FUZZ_CHECK(memchr(e->perms, '\0', sizeof(e->perms)) != NULL);
		pm = proc_maps_find(&m, e->start);
		if (ok && e->start < e->end)
			FUZZ_CHECK(pm == e);
		pm = proc_maps_find(&m, e->end - 1);
		if (ok && e->start < e->end)
			FUZZ_CHECK(pm == e);
		pm = proc_maps_find(&m, e->end);
		if (ok && pm)
			FUZZ_CHECK(pm->start <= e->end && e->end < pm->end);
	}
	/* Addresses from the last bytes of the input. */
	for (size_t k = 0; k + 8 <= size && k < 64; k += 8) {
		uint64_t a;

		memcpy(&a, data + size - 8 - k, 8);
		pm = proc_maps_find(&m, a);
		if (pm)
			FUZZ_CHECK(a >= pm->start && a < pm->end);
	}
	(void)proc_maps_find(&m, 0);
	(void)proc_maps_find(&m, UINT64_MAX);
	proc_maps_free(&m);
	FUZZ_CHECK(m.v == NULL && m.n == 0);
	free(text);
	return 0;
}
