/*
 * libFuzzer target for the profile model (src/pipeline/profile.c) and its encoders
 * (pprof_encode() in src/output/pprof_write.c, collapsed_encode() in
 * src/output/collapsed.c).
 *
 * The input is a program of operations on one profile: sample types,
 * period, comments, interned strings, functions, mappings, locations
 * (with inlined lines), samples with labels, all with arbitrary bytes as
 * strings (invalid UTF-8 included) and arbitrary, often invalid, ids.
 * Afterwards the profile is encoded; checks: the raw protobuf unpacks
 * with protobuf-c into as many records as the profile holds, every string
 * is valid UTF-8, string indexes and ids are in range, the gzip encoding
 * inflates to the raw one, and the collapsed text has one line per
 * sample. A failed operation must not change the profile's counts.
 */
#include "collapsed.h"
#include "pprof_write.h"
#include "profile.h"
#include "profile.pb-c.h"
#include "fuzz_common.h"

#include <zlib.h>

#define MAX_OPS		256
#define POOL		16

struct state {
	struct fuzz_in in;
	char *pool[POOL];	/* strings that may be used again */
	size_t npool;
	char **all;		/* every string made, freed at the end */
	size_t nall, capall;
};

/* A string from one byte b: 0xff NULL, 0xfe "", 0xc0-0xfd one made
 * before, else a new one of the next b % 25 bytes. */
static const char *str(struct state *st)
{
	uint8_t b = fuzz_u8(&st->in);
	char *s;

	if (b == 0xff)
		return NULL;
	if (b == 0xfe)
		return "";
	if (b >= 0xc0 && st->npool)
		return st->pool[b % st->npool];
	s = fuzz_str(&st->in, b % 25);
	if (st->nall == st->capall) {
		st->capall = st->capall ? st->capall * 2 : 64;
		st->all = realloc(st->all, st->capall * sizeof(*st->all));
		if (!st->all)
			abort();
	}
	st->all[st->nall++] = s;
	if (st->npool == POOL)
		st->pool[b % POOL] = s;
	else
		st->pool[st->npool++] = s;
	return s;
}

/* A small id, usually valid, sometimes 0 or past the end. */
static uint64_t id(struct state *st, size_t n)
{
	uint8_t b = fuzz_u8(&st->in);

	if (b == 0xff)
		return UINT64_MAX;
	return b % (n + 2);
}

static int utf8_valid(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s, need, lo = 0x80, hi = 0xbf;

		if (c < 0x80) {
			s++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1;
		else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			lo = c == 0xe0 ? 0xa0 : 0x80;
			hi = c == 0xed ? 0x9f : 0xbf;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			lo = c == 0xf0 ? 0x90 : 0x80;
			hi = c == 0xf4 ? 0x8f : 0xbf;
		} else
			return 0;
		s++;
		for (unsigned k = 0; k < need; k++, s++) {
			if (*s < lo || *s > hi)
				return 0;
			lo = 0x80;
			hi = 0xbf;
		}
	}
	return 1;
}

struct counts {
	size_t strings, types, comments, functions, mappings, locations, lines, samples;
};

static struct counts counts(const struct profile *p)
{
	struct profile_view v;
	struct counts c;

	profile_get_view(p, &v);
	c.strings = v.nstrings;
	c.types = v.nsample_types;
	c.comments = v.ncomments;
	c.functions = v.nfunctions;
	c.mappings = v.nmappings;
	c.locations = v.nlocations;
	c.lines = v.nlines;
	c.samples = v.nsamples;
	return c;
}

/* Failed calls may intern strings on the way, nothing else. */
static void check_unchanged(const struct counts *a, const struct counts *b)
{
	FUZZ_CHECK(a->types == b->types && a->comments == b->comments &&
		   a->functions == b->functions && a->mappings == b->mappings &&
		   a->locations == b->locations && a->lines == b->lines &&
		   a->samples == b->samples);
}

static void op(struct state *st, struct profile *p)
{
	struct counts before = counts(p), after;
	uint8_t code = fuzz_u8(&st->in) % 11;
	int failed = 0;

	switch (code) {
	case 0: {
		const char *t = str(st), *u = str(st);

		failed = profile_add_sample_type(p, t, u) != 0;
		break;
	}
	case 1:
		failed = profile_set_default_sample_type(p, str(st)) != 0;
		break;
	case 2: {
		const char *t = str(st), *u = str(st);

		failed = profile_set_period(p, t, u, (int64_t)fuzz_u64(&st->in)) != 0;
		break;
	}
	case 3:
		profile_set_time(p, (int64_t)fuzz_u64(&st->in), (int64_t)fuzz_u64(&st->in));
		break;
	case 4:
		failed = profile_add_comment(p, str(st)) != 0;
		break;
	case 5: {
		int64_t i = profile_intern(p, str(st));

		FUZZ_CHECK(i >= 0 && (size_t)i < counts(p).strings);
		break;
	}
	case 6: {
		const char *n = str(st), *sys = str(st), *f = str(st);
		uint64_t fid = profile_function(p, n, sys, f, (int64_t)fuzz_u64(&st->in));

		FUZZ_CHECK(fid > 0 && fid <= counts(p).functions);
		break;
	}
	case 7: {
		struct profile_mapping_desc d;
		uint8_t flags;
		uint64_t mid;

		d.memory_start = fuzz_u64(&st->in);
		d.memory_limit = fuzz_u64(&st->in);
		d.file_offset = fuzz_u64(&st->in);
		d.filename = str(st);
		d.build_id = str(st);
		flags = fuzz_u8(&st->in);
		d.has_functions = flags & 1;
		d.has_filenames = flags & 2;
		d.has_line_numbers = flags & 4;
		d.has_inline_frames = flags & 8;
		mid = profile_mapping(p, &d);
		FUZZ_CHECK(mid > 0 && mid <= counts(p).mappings);
		break;
	}
	case 8:
	case 9: {
		struct profile_line lines[4];
		size_t n = code == 8 ? 1 : fuzz_u8(&st->in) % 5;
		uint64_t mid = id(st, before.mappings), addr = fuzz_u64(&st->in), lid;

		for (size_t i = 0; i < n; i++) {
			lines[i].function_id = id(st, before.functions);
			lines[i].line = (int64_t)fuzz_u64(&st->in);
		}
		if (code == 8)
			lid = profile_location(p, mid, addr, lines[0].function_id, lines[0].line);
		else
			lid = profile_location_lines(p, mid, addr, n ? lines : NULL, n);
		failed = lid == 0;
		if (!failed)
			FUZZ_CHECK(lid <= counts(p).locations);
		break;
	}
	case 10: {
		struct profile_label labels[PROFILE_MAX_LABELS + 2];
		uint64_t locs[16];
		int64_t values[64] = { 0 };
		size_t nlocs = fuzz_u8(&st->in) % 17;
		size_t nlabels = fuzz_u8(&st->in) % (PROFILE_MAX_LABELS + 3);
		size_t nv = before.types < 64 ? before.types : 64;

		for (size_t i = 0; i < nlocs; i++)
			locs[i] = id(st, before.locations);
		for (size_t i = 0; i < nlabels; i++) {
			uint8_t kind = fuzz_u8(&st->in);

			labels[i].key = str(st);
			labels[i].str = kind & 1 ? str(st) : NULL;
			labels[i].num = (int64_t)fuzz_u64(&st->in);
			labels[i].num_unit = kind & 2 ? str(st) : NULL;
		}
		for (size_t i = 0; i < nv; i++)
			values[i] = (int64_t)fuzz_u64(&st->in);
		if (before.types > 64)
			return;	/* values[] too short for this profile */
		failed = profile_add_sample(p, nlocs ? locs : NULL, nlocs,
					    nlabels ? labels : NULL, nlabels, values) != 0;
		break;
	}
	}
	after = counts(p);
	if (failed)
		check_unchanged(&before, &after);
	FUZZ_CHECK(after.strings >= before.strings);
}

static int gunzip(const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	size_t cap = inlen * 8 + 256;
	uint8_t *buf = malloc(cap);
	z_stream zs;
	int ret;

	if (!buf)
		abort();
	memset(&zs, 0, sizeof(zs));
	FUZZ_CHECK(inflateInit2(&zs, 15 + 16) == Z_OK);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)inlen;
	do {
		if (zs.total_out == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		zs.next_out = buf + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		ret = inflate(&zs, Z_NO_FLUSH);
	} while (ret == Z_OK);
	inflateEnd(&zs);
	if (ret != Z_STREAM_END || zs.avail_in) {
		free(buf);
		return -1;
	}
	*out = buf;
	*outlen = zs.total_out;
	return 0;
}

static void check_pprof(const struct profile *p)
{
	Perftools__Profiles__Profile *m;
	struct profile_view v;
	uint8_t *raw, *gz, *un;
	size_t rawlen, gzlen, unlen;

	profile_get_view(p, &v);
	FUZZ_CHECK(pprof_encode(p, 0, &raw, &rawlen) == 0);
	m = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	FUZZ_CHECK(m != NULL);
	FUZZ_CHECK(m->n_string_table == v.nstrings);
	FUZZ_CHECK(m->n_string_table > 0 && m->string_table[0][0] == '\0');
	for (size_t i = 0; i < m->n_string_table; i++)
		FUZZ_CHECK(utf8_valid((const unsigned char *)m->string_table[i]));
#define STR_OK(x) ((x) >= 0 && (size_t)(x) < m->n_string_table)
	FUZZ_CHECK(m->n_sample_type == v.nsample_types);
	for (size_t i = 0; i < m->n_sample_type; i++)
		FUZZ_CHECK(STR_OK(m->sample_type[i]->type) && STR_OK(m->sample_type[i]->unit) &&
			   m->sample_type[i]->type > 0);
	FUZZ_CHECK(STR_OK(m->default_sample_type));
	for (size_t i = 0; i < m->n_comment; i++)
		FUZZ_CHECK(STR_OK(m->comment[i]));
	FUZZ_CHECK(m->n_function == v.nfunctions);
	for (size_t i = 0; i < m->n_function; i++) {
		const Perftools__Profiles__Function *f = m->function[i];

		FUZZ_CHECK(f->id == i + 1 && STR_OK(f->name) && STR_OK(f->system_name) &&
			   STR_OK(f->filename));
		FUZZ_CHECK(f->system_name == 0 || f->system_name != f->name);
	}
	FUZZ_CHECK(m->n_mapping == v.nmappings);
	for (size_t i = 0; i < m->n_mapping; i++)
		FUZZ_CHECK(m->mapping[i]->id == i + 1 && STR_OK(m->mapping[i]->filename) &&
			   STR_OK(m->mapping[i]->build_id));
	FUZZ_CHECK(m->n_location == v.nlocations);
	for (size_t i = 0; i < m->n_location; i++) {
		const Perftools__Profiles__Location *l = m->location[i];

		FUZZ_CHECK(l->id == i + 1 && l->mapping_id <= m->n_mapping && l->n_line > 0);
		for (size_t k = 0; k < l->n_line; k++)
			FUZZ_CHECK(l->line[k]->function_id >= 1 &&
				   l->line[k]->function_id <= m->n_function);
	}
	FUZZ_CHECK(m->n_sample == v.nsamples);
	for (size_t i = 0; i < m->n_sample; i++) {
		const Perftools__Profiles__Sample *s = m->sample[i];

		FUZZ_CHECK(s->n_value == m->n_sample_type);
		FUZZ_CHECK(s->n_label <= PROFILE_MAX_LABELS);
		for (size_t k = 0; k < s->n_location_id; k++)
			FUZZ_CHECK(s->location_id[k] >= 1 && s->location_id[k] <= m->n_location);
		for (size_t k = 0; k < s->n_label; k++) {
			const Perftools__Profiles__Label *l = s->label[k];

			FUZZ_CHECK(STR_OK(l->key) && l->key > 0 && STR_OK(l->str) &&
				   STR_OK(l->num_unit));
			FUZZ_CHECK(l->str == 0 || (l->num == 0 && l->num_unit == 0));
		}
	}
#undef STR_OK
	perftools__profiles__profile__free_unpacked(m, NULL);

	FUZZ_CHECK(pprof_encode(p, 1, &gz, &gzlen) == 0);
	FUZZ_CHECK(gunzip(gz, gzlen, &un, &unlen) == 0);
	FUZZ_CHECK(unlen == rawlen && memcmp(un, raw, rawlen) == 0);
	free(un);
	free(gz);
	free(raw);
}

static void check_collapsed(const struct profile *p)
{
	struct profile_view v;
	size_t len, lines = 0;
	char *out;

	profile_get_view(p, &v);
	if (!v.nsample_types)
		return;		/* no sample without a sample type */
	FUZZ_CHECK(collapsed_encode(p, &out, &len) == 0);
	FUZZ_CHECK(out != NULL && strlen(out) == len);
	for (size_t i = 0; i < len; i++)
		lines += out[i] == '\n';
	FUZZ_CHECK(lines == v.nsamples);
	FUZZ_CHECK(len == 0 || out[len - 1] == '\n');
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct state st = { .in = { data, size } };
	struct profile *p = profile_new();

	FUZZ_CHECK(p != NULL);
	for (unsigned k = 0; k < MAX_OPS && st.in.n; k++)
		op(&st, p);
	check_pprof(p);
	check_collapsed(p);
	profile_free(p);
	for (size_t i = 0; i < st.nall; i++)
		free(st.all[i]);
	free(st.all);
	return 0;
}
