/* Kernel text symbols from kallsyms; see ksym.h. */
#define _GNU_SOURCE
#include "ksym.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KSYM_LAST_SPAN	(1u << 20)	/* reach of the last symbol */

struct ksym {
	uint64_t addr;
	uint32_t name;		/* offset into names */
};

struct ksym_table {
	struct ksym *v;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
};

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 1024;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * size);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

/* Text symbols only (t, T, w, W): kernel functions and module ones. */
static int add_line(struct ksym_table *t, const char *line, int *zero)
{
	char type, name[512];
	uint64_t addr;
	size_t len;

	if (sscanf(line, "%" SCNx64 " %c %511s", &addr, &type, name) != 3)
		return 0;
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	if (!addr)
		return 0;
	*zero = 0;
	len = strlen(name);
	if (t->n >= KSYM_MAX_SYMS || t->names_len + len + 1 > UINT32_MAX)
		return 0;
	if (grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)) ||
	    grow((void **)&t->names, &t->names_cap, t->names_len + len + 1, 1))
		return -1;
	memcpy(t->names + t->names_len, name, len + 1);
	t->v[t->n].addr = addr;
	t->v[t->n++].name = (uint32_t)t->names_len;
	t->names_len += len + 1;
	return 0;
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct ksym_table *ksym_load(const char *path, char *err, size_t errlen)
{
	struct ksym_table *t = calloc(1, sizeof(*t));
	FILE *f = fopen(path, "re");
	char line[1024];
	int zero = 1, oom = 0;

	if (!t || !f) {
		snprintf(err, errlen, "--kernel: cannot read %s: %s", path,
			 t ? strerror(errno) : "out of memory");
		goto fail;
	}
	while (!oom && fgets(line, sizeof(line), f))
		oom = add_line(t, line, &zero);
	if (oom) {
		snprintf(err, errlen, "--kernel: out of memory reading %s", path);
		goto fail;
	}
	if (zero) {
		snprintf(err, errlen, "--kernel: %s shows no kernel addresses (kernel.kptr_restrict hides them): run as root (CAP_SYSLOG) with kernel.kptr_restrict at most 1 (sysctl -w kernel.kptr_restrict=1), or drop --kernel",
			 path);
		goto fail;
	}
	fclose(f);
	qsort(t->v, t->n, sizeof(*t->v), cmp_ksym);
	return t;
fail:
	if (f)
		fclose(f);
	ksym_free(t);
	return NULL;
}

void ksym_free(struct ksym_table *t)
{
	if (!t)
		return;
	free(t->v);
	free(t->names);
	free(t);
}

const char *ksym_name(const struct ksym_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	if (!t->n || addr < t->v[0].addr)
		return NULL;
	while (hi - lo > 1) {	/* v[lo].addr <= addr < v[hi].addr */
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (lo == t->n - 1 && addr - t->v[lo].addr >= KSYM_LAST_SPAN)
		return NULL;
	return t->names + t->v[lo].name;
}

size_t ksym_count(const struct ksym_table *t)
{
	return t->n;
}
