/* The default filter of native frames; see native_filter.h for the rule. */
#include "native_filter.h"

#include <string.h>

#define HIDE_ANY(n)	{ n, NF_PREFIX, NF_ANYWHERE, NF_HIDE }
#define HIDE_ANY_EXACT(n) { n, NF_EXACT, NF_ANYWHERE, NF_HIDE }

/*
 * libc's and the loader's process and thread start-up, in every stack:
 * checked before CPython's rules (src/python/pyfuncs.c).
 */
static const struct nf_rule startup[] = {
	HIDE_ANY_EXACT("_start"),
	HIDE_ANY("__libc_start_"),
	HIDE_ANY_EXACT("start_thread"),
	HIDE_ANY_EXACT("clone"),
	HIDE_ANY_EXACT("clone3"),
	{ NULL, 0, 0, 0 },
};

const struct nf_rule *native_filter_startup_rules(void)
{
	return startup;
}

static int matches(const struct nf_rule *r, const char *name)
{
	size_t len = strlen(r->name);

	if (r->match == NF_EXACT)
		return strcmp(name, r->name) == 0;
	return strncmp(name, r->name, len) == 0;
}

/* The first rule of t that matches name: 1 hide, 0 keep; -1 if none. */
static int decide(const struct nf_rule *t, const char *name, int in_interpreter)
{
	for (const struct nf_rule *r = t; r->name; r++) {
		if (r->scope == NF_INTERPRETER && !in_interpreter)
			continue;
		if (matches(r, name))
			return r->action == NF_HIDE;
	}
	return -1;
}

int native_filter_hides(const char *name, int in_interpreter)
{
	int d;

	if (!name || !name[0])
		return in_interpreter;
	d = decide(startup, name, in_interpreter);
	if (d < 0)
		d = decide(pyfuncs_rules(), name, in_interpreter);
	return d < 0 ? in_interpreter : d;
}

size_t native_filter_apply(struct merge_frame *f, size_t n, const uint8_t *hidden)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++) {
		if (f[i].kind == MERGE_NATIVE && hidden[f[i].index])
			continue;
		f[out++] = f[i];
	}
	/* Nothing was kept, so f[0] is still the leaf: it stays, and the
	 * sample keeps a place in the profile. */
	return out == 0 && n > 0 ? 1 : out;
}
