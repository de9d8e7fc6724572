/* The collapsed ("folded") text format of Brendan Gregg's flamegraph.pl. */
#include "collapsed.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	char *p;
	size_t len, cap;
};

static int put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *np;

		while (cap < b->len + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			return -1;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* ';' separates frames and ' ' ends the stack: replace them in names. */
static int put_clean(struct buf *b, const char *s)
{
	for (; *s; s++) {
		char c = (*s == ';') ? ':' : (*s == '\n') ? ' ' : *s;

		if (put(b, &c, 1))
			return -1;
	}
	return 0;
}

static int put_line(struct buf *b, const struct profile_view *v,
		    const struct profile_line *ln)
{
	const struct profile_function_rec *f = &v->functions[ln->function_id - 1];
	const char *file = v->strings[f->filename];
	char num[32];

	if (put_clean(b, v->strings[f->name]))
		return -1;
	if (!file[0])
		return 0;
	snprintf(num, sizeof(num), ":%" PRId64 ")", ln->line);
	return put(b, " (", 2) || put_clean(b, file) || put(b, num, strlen(num));
}

static int put_sample(struct buf *b, const struct profile_view *v, size_t i)
{
	const struct profile_sample_rec *s = &v->samples[i];
	int first = 1;
	char num[32];

	/* Locations are leaf first, and a location's lines innermost first:
	 * walk both backwards for root-first output. */
	for (uint32_t k = s->nlocs; k-- > 0;) {
		const struct profile_location_rec *l =
			&v->locations[v->stack_ids[s->loc_off + k] - 1];

		for (uint32_t j = l->nlines; j-- > 0;) {
			if ((!first && put(b, ";", 1)) ||
			    put_line(b, v, &v->lines[l->line_off + j]))
				return -1;
			first = 0;
		}
	}
	snprintf(num, sizeof(num), " %" PRId64 "\n", v->values[i * v->nsample_types]);
	return put(b, num, strlen(num));
}

int collapsed_encode(const struct profile *p, char **out, size_t *len)
{
	struct profile_view v;
	struct buf b = { 0 };

	profile_get_view(p, &v);
	if (put(&b, "", 0))
		return -1;
	for (size_t i = 0; i < v.nsamples; i++) {
		if (put_sample(&b, &v, i)) {
			free(b.p);
			return -1;
		}
	}
	*out = b.p;
	*len = b.len;
	return 0;
}
