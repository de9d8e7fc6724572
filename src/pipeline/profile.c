/*
 * In-memory pprof profile model.
 *
 * Each kind of record lives in a growable array whose index + 1 is the id
 * pprof sees, with an open-addressing hash index beside it for dedup.  The
 * variable-length parts (location lines, sample stacks, labels, values) go
 * into shared pools addressed by 32-bit offsets, so a record stays small
 * and adding one costs no allocation in the common case.
 *
 * Every insertion first reserves room everywhere it will write and only
 * then commits, so a failed allocation leaves the profile unchanged.
 */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_INIT_CAP	16
#define HTAB_INIT_SLOTS	64
/* Offsets and slot indexes are 32-bit; keep every array below this. */
#define MAX_ENTRIES	((size_t)UINT32_MAX - 1)

/* The hash is kept to skip most key comparisons and to rehash cheaply. */
struct htab_slot {
	uint32_t hash;
	uint32_t idx;		/* entry index + 1; 0 marks an empty slot */
};

struct htab {
	struct htab_slot *slots;
	uint32_t mask;
	uint32_t used;
};

struct profile {
	uint64_t serial;		/* unique per profile_new() */
	char **strs;
	size_t nstrs, strs_cap;
	size_t str_bytes;		/* the strings' own allocations */
	struct htab str_ht;

	struct profile_value_type *stypes;
	size_t nstypes, stypes_cap;
	struct profile_value_type period_type;
	int64_t period;
	int64_t time_nanos;
	int64_t duration_nanos;
	int64_t default_stype;
	int64_t *comments;
	size_t ncomments, comments_cap;

	struct profile_function_rec *funcs;
	size_t nfuncs, funcs_cap;
	struct htab func_ht;

	struct profile_mapping_rec *maps;
	size_t nmaps, maps_cap;
	struct htab map_ht;
	uint64_t main_map;		/* listed first; 0: the first made */

	struct profile_location_rec *locs;
	size_t nlocs, locs_cap;
	struct htab loc_ht;
	struct profile_line *lines;
	size_t nlines, lines_cap;

	struct profile_sample_rec *samples;
	size_t nsamples, samples_cap;
	struct htab sample_ht;
	uint64_t *stack_ids;
	size_t nstack_ids, stack_ids_cap;
	struct profile_label_rec *labels;
	size_t nlabels, labels_cap;
	int64_t *values;
	size_t nvalues, values_cap;
};

typedef bool (*htab_eq_fn)(const struct profile *p, uint32_t idx,
			   const void *key);

/*
 * Returns the array with room for extra more elements past len, or NULL
 * with the array untouched.  Arrays are never NULL (profile_new allocates
 * them), so NULL unambiguously means failure even when extra is 0.
 */
static void *reserve(void *data, size_t *cap, size_t len, size_t extra,
		     size_t elsize)
{
	size_t need, ncap;
	void *nd;

	if (extra > MAX_ENTRIES - len) {
		errno = ENOMEM;
		return NULL;
	}
	need = len + extra;
	if (need <= *cap)
		return data;
	ncap = *cap;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	if (ncap > SIZE_MAX / elsize) {
		errno = ENOMEM;
		return NULL;
	}
	nd = realloc(data, ncap * elsize);
	if (!nd) {
		errno = ENOMEM;
		return NULL;
	}
	*cap = ncap;
	return nd;
}

static int htab_init(struct htab *h)
{
	h->slots = calloc(HTAB_INIT_SLOTS, sizeof(*h->slots));
	if (!h->slots)
		return -1;
	h->mask = HTAB_INIT_SLOTS - 1;
	h->used = 0;
	return 0;
}

static int64_t htab_find(const struct htab *h, uint32_t hash,
			 htab_eq_fn eq, const struct profile *p,
			 const void *key)
{
	const struct htab_slot *s;
	uint32_t i;

	for (i = hash & h->mask; h->slots[i].idx; i = (i + 1) & h->mask) {
		s = &h->slots[i];
		if (s->hash == hash && eq(p, s->idx - 1, key))
			return s->idx - 1;
	}
	return -1;
}

/* Slot placement for a key known to be absent, room already reserved. */
static void htab_put(struct htab *h, uint32_t hash, size_t idx)
{
	uint32_t i;

	for (i = hash & h->mask; h->slots[i].idx; i = (i + 1) & h->mask)
		;
	h->slots[i].hash = hash;
	h->slots[i].idx = (uint32_t)idx + 1;
	h->used++;
}

/* Grows before the table is half full, which keeps probe runs short. */
static int htab_reserve(struct htab *h)
{
	size_t nslots = (size_t)h->mask + 1, i;
	struct htab old = *h;

	if (((size_t)h->used + 1) * 2 <= nslots)
		return 0;
	if (nslots > UINT32_MAX / 2) {
		errno = ENOMEM;
		return -1;
	}
	h->slots = calloc(nslots * 2, sizeof(*h->slots));
	if (!h->slots) {
		*h = old;
		errno = ENOMEM;
		return -1;
	}
	h->mask = (uint32_t)(nslots * 2 - 1);
	h->used = 0;
	for (i = 0; i < nslots; i++)
		if (old.slots[i].idx)
			htab_put(h, old.slots[i].hash, old.slots[i].idx - 1);
	free(old.slots);
	return 0;
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0xff51afd7ed558ccdULL;
	return h ^ (h >> 32);
}

static uint32_t hash_final(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (uint32_t)h;
}

static uint32_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return hash_final(h);
}

/*
 * Length of the well-formed UTF-8 sequence at s, or 0 with *bad set to the
 * length of the maximal ill-formed subpart (Unicode ch. 3, table 3-7), so
 * that each such subpart becomes one U+FFFD as browsers and Python do.
 */
static size_t utf8_seq(const unsigned char *s, size_t avail, size_t *bad)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, k;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 1;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 2;
		if (s[0] == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (s[0] == 0xed)
			hi = 0x9f;	/* surrogates */
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 3;
		if (s[0] == 0xf0)
			lo = 0x90;	/* overlong */
		else if (s[0] == 0xf4)
			hi = 0x8f;	/* above U+10FFFF */
	} else {
		*bad = 1;
		return 0;
	}
	for (k = 1; k <= n; k++) {
		if (k >= avail || s[k] < lo || s[k] > hi) {
			*bad = k;
			return 0;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return n + 1;
}

/*
 * Copies s to out (if not NULL) with ill-formed parts replaced by U+FFFD;
 * returns the output length and whether anything was replaced.
 */
static size_t utf8_fix(const char *s, size_t len, char *out, bool *changed)
{
	static const char repl[3] = { '\xef', '\xbf', '\xbd' };
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0, n, bad;

	*changed = false;
	while (i < len) {
		n = utf8_seq(u + i, len - i, &bad);
		if (n) {
			if (out)
				memcpy(out + o, s + i, n);
			i += n;
			o += n;
			continue;
		}
		if (out)
			memcpy(out + o, repl, sizeof(repl));
		i += bad;
		o += sizeof(repl);
		*changed = true;
	}
	return o;
}

struct str_key {
	const char *s;
	size_t len;
};

static bool str_eq(const struct profile *p, uint32_t idx, const void *key)
{
	const struct str_key *k = key;

	/* strncmp stops at the stored string's NUL, so no overread. */
	return strncmp(p->strs[idx], k->s, k->len) == 0 &&
	       p->strs[idx][k->len] == '\0';
}

static int64_t intern_valid(struct profile *p, const char *s, size_t len)
{
	struct str_key key = { s, len };
	uint32_t hash = hash_bytes(s, len);
	int64_t idx = htab_find(&p->str_ht, hash, str_eq, p, &key);
	char **strs, *copy;

	if (idx >= 0)
		return idx;
	strs = reserve(p->strs, &p->strs_cap, p->nstrs, 1, sizeof(*strs));
	if (!strs)
		return -1;
	p->strs = strs;
	if (htab_reserve(&p->str_ht))
		return -1;
	copy = malloc(len + 1);
	if (!copy) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(copy, s, len);
	copy[len] = '\0';
	p->str_bytes += len + 1;
	htab_put(&p->str_ht, hash, p->nstrs);
	strs[p->nstrs] = copy;
	return (int64_t)p->nstrs++;
}

int64_t profile_intern(struct profile *p, const char *s)
{
	size_t len, clen;
	bool changed;
	int64_t idx;
	char *clean;

	if (!s || !*s)
		return 0;
	len = strlen(s);
	/* Every stored string is valid UTF-8, so one found as it is needs no
	 * check: most calls are repeats, and the check costs more than the
	 * lookup. */
	idx = htab_find(&p->str_ht, hash_bytes(s, len), str_eq, p,
			&(struct str_key){ s, len });
	if (idx >= 0)
		return idx;
	clen = utf8_fix(s, len, NULL, &changed);
	if (!changed)
		return intern_valid(p, s, len);
	clean = malloc(clen);
	if (!clean) {
		errno = ENOMEM;
		return -1;
	}
	utf8_fix(s, len, clean, &changed);
	idx = intern_valid(p, clean, clen);
	free(clean);
	if (idx < 0)
		errno = ENOMEM;	/* free() may clobber it */
	return idx;
}

struct profile *profile_new(void)
{
	static uint64_t serials;
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->serial = ++serials;
#define ALLOC_ARRAY(arr, cap) \
	((arr) = malloc(((cap) = ARRAY_INIT_CAP) * sizeof(*(arr))))
	if (!ALLOC_ARRAY(p->strs, p->strs_cap) ||
	    !ALLOC_ARRAY(p->stypes, p->stypes_cap) ||
	    !ALLOC_ARRAY(p->comments, p->comments_cap) ||
	    !ALLOC_ARRAY(p->funcs, p->funcs_cap) ||
	    !ALLOC_ARRAY(p->maps, p->maps_cap) ||
	    !ALLOC_ARRAY(p->locs, p->locs_cap) ||
	    !ALLOC_ARRAY(p->lines, p->lines_cap) ||
	    !ALLOC_ARRAY(p->samples, p->samples_cap) ||
	    !ALLOC_ARRAY(p->stack_ids, p->stack_ids_cap) ||
	    !ALLOC_ARRAY(p->labels, p->labels_cap) ||
	    !ALLOC_ARRAY(p->values, p->values_cap))
		goto fail;
#undef ALLOC_ARRAY
	if (htab_init(&p->str_ht) || htab_init(&p->func_ht) ||
	    htab_init(&p->map_ht) || htab_init(&p->loc_ht) ||
	    htab_init(&p->sample_ht))
		goto fail;
	/* pprof requires "" at index 0; interning never looks it up. */
	p->strs[0] = calloc(1, 1);
	if (!p->strs[0])
		goto fail;
	p->nstrs = 1;
	return p;
fail:
	profile_free(p);
	errno = ENOMEM;
	return NULL;
}

void profile_free(struct profile *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nstrs; i++)
		free(p->strs[i]);
	free(p->strs);
	free(p->str_ht.slots);
	free(p->stypes);
	free(p->comments);
	free(p->funcs);
	free(p->func_ht.slots);
	free(p->maps);
	free(p->map_ht.slots);
	free(p->locs);
	free(p->loc_ht.slots);
	free(p->lines);
	free(p->samples);
	free(p->sample_ht.slots);
	free(p->stack_ids);
	free(p->labels);
	free(p->values);
	free(p);
}

int profile_add_sample_type(struct profile *p, const char *type,
			    const char *unit)
{
	struct profile_value_type vt, *stypes;
	size_t i;

	if (p->nsamples) {
		errno = EBUSY;	/* existing samples would lack a value */
		return -1;
	}
	/* pprof's -sample_index syntax cannot name a type containing '-'. */
	if (!type || !*type || strchr(type, '-')) {
		errno = EINVAL;
		return -1;
	}
	vt.type = profile_intern(p, type);
	vt.unit = profile_intern(p, unit);
	if (vt.type < 0 || vt.unit < 0)
		return -1;
	for (i = 0; i < p->nstypes; i++) {
		if (p->stypes[i].type == vt.type) {
			errno = EINVAL;	/* readers select types by name */
			return -1;
		}
	}
	stypes = reserve(p->stypes, &p->stypes_cap, p->nstypes, 1,
			 sizeof(*stypes));
	if (!stypes)
		return -1;
	p->stypes = stypes;
	stypes[p->nstypes++] = vt;
	return 0;
}

int profile_set_default_sample_type(struct profile *p, const char *type)
{
	int64_t idx = profile_intern(p, type);
	size_t i;

	if (idx < 0)
		return -1;
	for (i = 0; i < p->nstypes; i++) {
		if (p->stypes[i].type == idx && idx > 0) {
			p->default_stype = idx;
			return 0;
		}
	}
	errno = EINVAL;
	return -1;
}

int profile_set_period(struct profile *p, const char *type, const char *unit,
		       int64_t period)
{
	int64_t t = profile_intern(p, type);
	int64_t u = profile_intern(p, unit);

	if (t < 0 || u < 0)
		return -1;
	p->period_type.type = t;
	p->period_type.unit = u;
	p->period = period;
	return 0;
}

void profile_set_time(struct profile *p, int64_t time_nanos,
		      int64_t duration_nanos)
{
	p->time_nanos = time_nanos;
	p->duration_nanos = duration_nanos;
}

int profile_add_comment(struct profile *p, const char *text)
{
	int64_t idx = profile_intern(p, text);
	int64_t *comments;

	if (idx < 0)
		return -1;
	comments = reserve(p->comments, &p->comments_cap, p->ncomments, 1,
			   sizeof(*comments));
	if (!comments)
		return -1;
	p->comments = comments;
	comments[p->ncomments++] = idx;
	return 0;
}

void profile_clear_comments(struct profile *p)
{
	p->ncomments = 0;
}

static bool func_eq(const struct profile *p, uint32_t idx, const void *key)
{
	const struct profile_function_rec *a = &p->funcs[idx], *b = key;

	return a->name == b->name && a->system_name == b->system_name &&
	       a->filename == b->filename && a->start_line == b->start_line;
}

static uint32_t func_hash(const struct profile_function_rec *f)
{
	uint64_t h = hash_u64(0, (uint64_t)f->name);

	h = hash_u64(h, (uint64_t)f->system_name);
	h = hash_u64(h, (uint64_t)f->filename);
	h = hash_u64(h, (uint64_t)f->start_line);
	return hash_final(h);
}

uint64_t profile_function(struct profile *p, const char *name,
			  const char *system_name, const char *filename,
			  int64_t start_line)
{
	struct profile_function_rec f, *funcs;
	uint32_t hash;
	int64_t idx;

	f.name = profile_intern(p, name);
	f.system_name = system_name ? profile_intern(p, system_name) : 0;
	f.filename = profile_intern(p, filename);
	f.start_line = start_line;
	if (f.name < 0 || f.system_name < 0 || f.filename < 0)
		return 0;
	/*
	 * pprof takes name == system_name to mean "not demangled yet" and
	 * runs its C++ heuristics, which strip "<...>": "<module>" would
	 * be shown as "".  An empty system_name keeps the name verbatim.
	 */
	if (f.system_name == f.name)
		f.system_name = 0;
	hash = func_hash(&f);
	idx = htab_find(&p->func_ht, hash, func_eq, p, &f);
	if (idx >= 0)
		return (uint64_t)idx + 1;
	funcs = reserve(p->funcs, &p->funcs_cap, p->nfuncs, 1, sizeof(*funcs));
	if (!funcs)
		return 0;
	p->funcs = funcs;
	if (htab_reserve(&p->func_ht))
		return 0;
	htab_put(&p->func_ht, hash, p->nfuncs);
	funcs[p->nfuncs++] = f;
	return p->nfuncs;
}

static bool map_eq(const struct profile *p, uint32_t idx, const void *key)
{
	const struct profile_mapping_rec *a = &p->maps[idx], *b = key;

	return a->memory_start == b->memory_start &&
	       a->memory_limit == b->memory_limit &&
	       a->file_offset == b->file_offset &&
	       a->filename == b->filename && a->build_id == b->build_id &&
	       a->has_functions == b->has_functions &&
	       a->has_filenames == b->has_filenames &&
	       a->has_line_numbers == b->has_line_numbers &&
	       a->has_inline_frames == b->has_inline_frames;
}

static uint32_t map_hash(const struct profile_mapping_rec *m)
{
	uint64_t h = hash_u64(0, m->memory_start);

	h = hash_u64(h, m->memory_limit);
	h = hash_u64(h, m->file_offset);
	h = hash_u64(h, (uint64_t)m->filename);
	h = hash_u64(h, (uint64_t)m->build_id);
	h = hash_u64(h, (uint64_t)m->has_functions |
			(uint64_t)m->has_filenames << 1 |
			(uint64_t)m->has_line_numbers << 2 |
			(uint64_t)m->has_inline_frames << 3);
	return hash_final(h);
}

uint64_t profile_mapping(struct profile *p,
			 const struct profile_mapping_desc *d)
{
	struct profile_mapping_rec m, *maps;
	uint32_t hash;
	int64_t idx;

	memset(&m, 0, sizeof(m));
	m.memory_start = d->memory_start;
	m.memory_limit = d->memory_limit;
	m.file_offset = d->file_offset;
	m.filename = profile_intern(p, d->filename);
	m.build_id = profile_intern(p, d->build_id);
	m.has_functions = d->has_functions;
	m.has_filenames = d->has_filenames;
	m.has_line_numbers = d->has_line_numbers;
	m.has_inline_frames = d->has_inline_frames;
	if (m.filename < 0 || m.build_id < 0)
		return 0;
	hash = map_hash(&m);
	idx = htab_find(&p->map_ht, hash, map_eq, p, &m);
	if (idx >= 0)
		return (uint64_t)idx + 1;
	maps = reserve(p->maps, &p->maps_cap, p->nmaps, 1, sizeof(*maps));
	if (!maps)
		return 0;
	p->maps = maps;
	if (htab_reserve(&p->map_ht))
		return 0;
	htab_put(&p->map_ht, hash, p->nmaps);
	maps[p->nmaps++] = m;
	return p->nmaps;
}

struct loc_key {
	uint64_t mapping_id;
	uint64_t address;
	const struct profile_line *lines;
	size_t nlines;
};

static bool loc_eq(const struct profile *p, uint32_t idx, const void *key)
{
	const struct profile_location_rec *l = &p->locs[idx];
	const struct loc_key *k = key;
	const struct profile_line *lines = p->lines + l->line_off;
	size_t i;

	if (l->mapping_id != k->mapping_id || l->address != k->address ||
	    l->nlines != k->nlines)
		return false;
	for (i = 0; i < k->nlines; i++)
		if (lines[i].function_id != k->lines[i].function_id ||
		    lines[i].line != k->lines[i].line)
			return false;
	return true;
}

static uint32_t loc_hash(const struct loc_key *k)
{
	uint64_t h = hash_u64(hash_u64(0, k->mapping_id), k->address);
	size_t i;

	for (i = 0; i < k->nlines; i++) {
		h = hash_u64(h, k->lines[i].function_id);
		h = hash_u64(h, (uint64_t)k->lines[i].line);
	}
	return hash_final(h);
}

static bool loc_key_valid(const struct profile *p, const struct loc_key *k)
{
	size_t i;

	/* pprof needs at least one Line naming an existing Function. */
	if (!k->lines || !k->nlines || k->mapping_id > p->nmaps)
		return false;
	for (i = 0; i < k->nlines; i++)
		if (!k->lines[i].function_id ||
		    k->lines[i].function_id > p->nfuncs)
			return false;
	return true;
}

uint64_t profile_location_lines(struct profile *p, uint64_t mapping_id,
				uint64_t address,
				const struct profile_line *lines,
				size_t nlines)
{
	struct loc_key key = { mapping_id, address, lines, nlines };
	struct profile_location_rec *locs;
	struct profile_line *pool;
	uint32_t hash;
	int64_t idx;

	if (!loc_key_valid(p, &key)) {
		errno = EINVAL;
		return 0;
	}
	hash = loc_hash(&key);
	idx = htab_find(&p->loc_ht, hash, loc_eq, p, &key);
	if (idx >= 0)
		return (uint64_t)idx + 1;
	locs = reserve(p->locs, &p->locs_cap, p->nlocs, 1, sizeof(*locs));
	if (!locs)
		return 0;
	p->locs = locs;
	pool = reserve(p->lines, &p->lines_cap, p->nlines, nlines,
		       sizeof(*pool));
	if (!pool)
		return 0;
	p->lines = pool;
	if (htab_reserve(&p->loc_ht))
		return 0;
	memcpy(pool + p->nlines, lines, nlines * sizeof(*lines));
	locs[p->nlocs].mapping_id = mapping_id;
	locs[p->nlocs].address = address;
	locs[p->nlocs].line_off = (uint32_t)p->nlines;
	locs[p->nlocs].nlines = (uint32_t)nlines;
	p->nlines += nlines;
	htab_put(&p->loc_ht, hash, p->nlocs);
	return ++p->nlocs;
}

/* Mapping id of src, interned in dst: 0 for none, UINT64_MAX on failure. */
static uint64_t copy_mapping(struct profile *dst, const struct profile *src, uint64_t id)
{
	const struct profile_mapping_rec *m;
	struct profile_mapping_desc d;
	uint64_t r;

	if (!id)
		return 0;
	if (id > src->nmaps)
		return UINT64_MAX;
	m = &src->maps[id - 1];
	d = (struct profile_mapping_desc){ .memory_start = m->memory_start,
		.memory_limit = m->memory_limit, .file_offset = m->file_offset,
		.filename = src->strs[m->filename], .build_id = src->strs[m->build_id],
		.has_functions = m->has_functions, .has_filenames = m->has_filenames,
		.has_line_numbers = m->has_line_numbers,
		.has_inline_frames = m->has_inline_frames };
	r = profile_mapping(dst, &d);
	return r ? r : UINT64_MAX;
}

uint64_t profile_copy_location(struct profile *dst, const struct profile *src, uint64_t loc)
{
	struct profile_line lines[PROFILE_COPY_LINES];
	const struct profile_location_rec *l;
	uint64_t mid;

	if (!loc || loc > src->nlocs)
		return 0;
	l = &src->locs[loc - 1];
	if (l->nlines > PROFILE_COPY_LINES || (mid = copy_mapping(dst, src, l->mapping_id)) == UINT64_MAX)
		return 0;
	for (uint32_t i = 0; i < l->nlines; i++) {
		const struct profile_line *sl = &src->lines[l->line_off + i];
		const struct profile_function_rec *f;

		if (!sl->function_id || sl->function_id > src->nfuncs)
			return 0;
		f = &src->funcs[sl->function_id - 1];
		lines[i].line = sl->line;
		lines[i].function_id = profile_function(dst, src->strs[f->name],
							src->strs[f->system_name],
							src->strs[f->filename], f->start_line);
		if (!lines[i].function_id)
			return 0;
	}
	return profile_location_lines(dst, mid, l->address, lines, l->nlines);
}

uint64_t profile_location(struct profile *p, uint64_t mapping_id,
			  uint64_t address, uint64_t function_id,
			  int64_t line)
{
	struct profile_line l = { function_id, line };

	return profile_location_lines(p, mapping_id, address, &l, 1);
}

struct sample_key {
	const uint64_t *locs;
	size_t nlocs;
	const struct profile_label_rec *labels;
	size_t nlabels;
};

static bool sample_eq(const struct profile *p, uint32_t idx, const void *key)
{
	const struct profile_sample_rec *s = &p->samples[idx];
	const struct sample_key *k = key;
	const struct profile_label_rec *a = p->labels + s->label_off;
	size_t i;

	if (s->nlocs != k->nlocs || s->nlabels != k->nlabels)
		return false;
	for (i = 0; i < k->nlocs; i++)
		if (p->stack_ids[s->loc_off + i] != k->locs[i])
			return false;
	for (i = 0; i < k->nlabels; i++)
		if (a[i].key != k->labels[i].key ||
		    a[i].str != k->labels[i].str ||
		    a[i].num != k->labels[i].num ||
		    a[i].num_unit != k->labels[i].num_unit)
			return false;
	return true;
}

static uint32_t sample_hash(const struct sample_key *k)
{
	uint64_t h = hash_u64(0, k->nlocs);
	size_t i;

	for (i = 0; i < k->nlocs; i++)
		h = hash_u64(h, k->locs[i]);
	for (i = 0; i < k->nlabels; i++) {
		h = hash_u64(h, (uint64_t)k->labels[i].key);
		h = hash_u64(h, (uint64_t)k->labels[i].str);
		h = hash_u64(h, (uint64_t)k->labels[i].num);
		h = hash_u64(h, (uint64_t)k->labels[i].num_unit);
	}
	return hash_final(h);
}

static int label_cmp(const struct profile_label_rec *a,
		     const struct profile_label_rec *b)
{
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->str != b->str)
		return a->str < b->str ? -1 : 1;
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	if (a->num_unit != b->num_unit)
		return a->num_unit < b->num_unit ? -1 : 1;
	return 0;
}

/*
 * Interns labels into out, sorted so that label order does not split a
 * sample.  A string label with an empty value is dropped: pprof would
 * read str == 0 as a numeric label of 0.  Returns the count kept, or -1.
 */
static int intern_labels(struct profile *p, const struct profile_label *in,
			 size_t n, struct profile_label_rec *out)
{
	struct profile_label_rec l;
	size_t i, j, kept = 0;

	for (i = 0; i < n; i++) {
		l.key = profile_intern(p, in[i].key);
		l.str = in[i].str ? profile_intern(p, in[i].str) : 0;
		l.num = in[i].str ? 0 : in[i].num;
		l.num_unit = in[i].str ? 0 : profile_intern(p, in[i].num_unit);
		if (l.key < 0 || l.str < 0 || l.num_unit < 0)
			return -1;
		if (l.key == 0) {
			errno = EINVAL;
			return -1;
		}
		if (in[i].str && l.str == 0)
			continue;
		for (j = kept; j > 0 && label_cmp(&out[j - 1], &l) > 0; j--)
			out[j] = out[j - 1];
		out[j] = l;
		kept++;
	}
	return (int)kept;
}

static int64_t add_saturated(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

static int sample_append(struct profile *p, const struct sample_key *k,
			 uint32_t hash, const int64_t *values)
{
	struct profile_sample_rec *samples, *s;
	struct profile_label_rec *labels;
	uint64_t *stack_ids;
	int64_t *vals;

	samples = reserve(p->samples, &p->samples_cap, p->nsamples, 1,
			  sizeof(*samples));
	if (!samples)
		return -1;
	p->samples = samples;
	stack_ids = reserve(p->stack_ids, &p->stack_ids_cap, p->nstack_ids,
			    k->nlocs, sizeof(*stack_ids));
	if (!stack_ids)
		return -1;
	p->stack_ids = stack_ids;
	labels = reserve(p->labels, &p->labels_cap, p->nlabels, k->nlabels,
			 sizeof(*labels));
	if (!labels)
		return -1;
	p->labels = labels;
	vals = reserve(p->values, &p->values_cap, p->nvalues, p->nstypes,
		       sizeof(*vals));
	if (!vals)
		return -1;
	p->values = vals;
	if (htab_reserve(&p->sample_ht))
		return -1;

	s = &samples[p->nsamples];
	s->loc_off = (uint32_t)p->nstack_ids;
	s->nlocs = (uint32_t)k->nlocs;
	s->label_off = (uint32_t)p->nlabels;
	s->nlabels = (uint32_t)k->nlabels;
	if (k->nlocs)	/* locs may be NULL when nlocs is 0 */
		memcpy(stack_ids + p->nstack_ids, k->locs, k->nlocs * sizeof(*k->locs));
	memcpy(labels + p->nlabels, k->labels, k->nlabels * sizeof(*labels));
	memcpy(vals + p->nvalues, values, p->nstypes * sizeof(*vals));
	p->nstack_ids += k->nlocs;
	p->nlabels += k->nlabels;
	p->nvalues += p->nstypes;
	htab_put(&p->sample_ht, hash, p->nsamples++);
	return 0;
}

int profile_add_sample(struct profile *p, const uint64_t *locs, size_t nlocs,
		       const struct profile_label *labels, size_t nlabels,
		       const int64_t *values)
{
	struct profile_label_rec lab[PROFILE_MAX_LABELS];
	struct sample_key key;
	int64_t idx, *dst;
	uint32_t hash;
	size_t i;
	int kept;

	if (!p->nstypes || !values || (nlocs && !locs) ||
	    nlabels > PROFILE_MAX_LABELS || (nlabels && !labels)) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < nlocs; i++) {
		if (!locs[i] || locs[i] > p->nlocs) {
			errno = EINVAL;
			return -1;
		}
	}
	kept = intern_labels(p, labels, nlabels, lab);
	if (kept < 0)
		return -1;
	key.locs = locs;
	key.nlocs = nlocs;
	key.labels = lab;
	key.nlabels = (size_t)kept;
	hash = sample_hash(&key);
	idx = htab_find(&p->sample_ht, hash, sample_eq, p, &key);
	if (idx < 0)
		return sample_append(p, &key, hash, values);
	dst = p->values + (size_t)idx * p->nstypes;
	for (i = 0; i < p->nstypes; i++)
		dst[i] = add_saturated(dst[i], values[i]);
	return 0;
}

int profile_set_main(struct profile *p, const char *name)
{
	struct profile_mapping_desc m = {
		.filename = name, .has_functions = true, .has_filenames = true,
		.has_line_numbers = true,
	};
	uint64_t id = profile_mapping(p, &m);

	if (!id)
		return -1;
	p->main_map = id;
	return 0;
}

size_t profile_sample_count(const struct profile *p)
{
	return p->nsamples;
}

static size_t htab_bytes(const struct htab *h)
{
	return ((size_t)h->mask + 1) * sizeof(*h->slots);
}

size_t profile_bytes(const struct profile *p)
{
	return sizeof(*p) + p->str_bytes + p->strs_cap * sizeof(*p->strs) +
	       htab_bytes(&p->str_ht) + p->stypes_cap * sizeof(*p->stypes) +
	       p->comments_cap * sizeof(*p->comments) + p->funcs_cap * sizeof(*p->funcs) +
	       htab_bytes(&p->func_ht) + p->maps_cap * sizeof(*p->maps) + htab_bytes(&p->map_ht) +
	       p->locs_cap * sizeof(*p->locs) + htab_bytes(&p->loc_ht) +
	       p->lines_cap * sizeof(*p->lines) + p->samples_cap * sizeof(*p->samples) +
	       htab_bytes(&p->sample_ht) + p->stack_ids_cap * sizeof(*p->stack_ids) +
	       p->labels_cap * sizeof(*p->labels) + p->values_cap * sizeof(*p->values);
}

void profile_get_view(const struct profile *p, struct profile_view *v)
{
	v->strings = (const char *const *)p->strs;
	v->nstrings = p->nstrs;
	v->sample_types = p->stypes;
	v->nsample_types = p->nstypes;
	v->period_type = p->period_type;
	v->period = p->period;
	v->time_nanos = p->time_nanos;
	v->duration_nanos = p->duration_nanos;
	v->default_sample_type = p->default_stype;
	v->comments = p->comments;
	v->ncomments = p->ncomments;
	v->functions = p->funcs;
	v->nfunctions = p->nfuncs;
	v->mappings = p->maps;
	v->nmappings = p->nmaps;
	v->main_mapping = p->main_map;
	v->locations = p->locs;
	v->nlocations = p->nlocs;
	v->lines = p->lines;
	v->nlines = p->nlines;
	v->samples = p->samples;
	v->nsamples = p->nsamples;
	v->stack_ids = p->stack_ids;
	v->labels = p->labels;
	v->nlabels = p->nlabels;
	v->values = p->values;
}

uint64_t profile_serial(const struct profile *p)
{
	return p->serial;
}
