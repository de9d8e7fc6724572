/*
 * Unit tests of the profile model and the pprof writer.  Prints one
 * "ok ..." or "FAIL ..." line per check and a closing "N passed, N failed"
 * line; exits 0 only if every check passed.
 */
#define _GNU_SOURCE		/* mkdtemp */

#include "check.h"
#include "profile.h"
#include "pprof_write.h"
#include "profile.pb-c.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile pb_profile;

/* Validates UTF-8 by decoding code points, independently of profile.c. */
static int utf8_ok(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned int cp, min;
	int n, k;

	while (*s) {
		if (*s < 0x80) {
			s++;
			continue;
		}
		if ((*s & 0xe0) == 0xc0) {
			n = 1, cp = *s & 0x1f, min = 0x80;
		} else if ((*s & 0xf0) == 0xe0) {
			n = 2, cp = *s & 0x0f, min = 0x800;
		} else if ((*s & 0xf8) == 0xf0) {
			n = 3, cp = *s & 0x07, min = 0x10000;
		} else {
			return 0;
		}
		for (k = 1; k <= n; k++) {
			if ((s[k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		s += n + 1;
	}
	return 1;
}

/* Inflates exactly one gzip member that must span the whole input. */
static int gunzip_one(const uint8_t *in, size_t inlen, uint8_t **out,
		      size_t *outlen)
{
	size_t cap = inlen * 4 + 64;
	uint8_t *buf = malloc(cap), *nb;
	z_stream zs;
	int ret;

	if (!buf)
		return -1;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK) {
		free(buf);
		return -1;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)inlen;
	do {
		if (zs.total_out == cap) {
			nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		zs.next_out = buf + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		ret = inflate(&zs, Z_NO_FLUSH);
	} while (ret == Z_OK);
	inflateEnd(&zs);
	if (ret != Z_STREAM_END || zs.avail_in != 0) {
		free(buf);
		return -1;
	}
	*out = buf;
	*outlen = zs.total_out;
	return 0;
}

static pb_profile *decode(const uint8_t *buf, size_t len, int gzip)
{
	uint8_t *raw = (uint8_t *)buf;
	size_t rawlen = len;
	pb_profile *m;

	if (gzip && gunzip_one(buf, len, &raw, &rawlen))
		return NULL;
	m = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	if (gzip)
		free(raw);
	return m;
}

static pb_profile *encode_decode(const struct profile *p, int gzip)
{
	uint8_t *buf;
	size_t len;
	pb_profile *m;

	if (pprof_encode(p, gzip, &buf, &len))
		return NULL;
	if (gzip && (len < 3 || buf[0] != 0x1f || buf[1] != 0x8b)) {
		free(buf);
		return NULL;
	}
	m = decode(buf, len, gzip);
	free(buf);
	return m;
}

#define STR_OK(m, i) ((i) >= 0 && (uint64_t)(i) < (m)->n_string_table)

static const char *header_problem(const pb_profile *m)
{
	size_t i;

	if (!m->n_string_table || strcmp(m->string_table[0], ""))
		return "string_table[0] is not \"\"";
	for (i = 0; i < m->n_string_table; i++)
		if (!utf8_ok(m->string_table[i]))
			return "invalid UTF-8 in string table";
	for (i = 0; i < m->n_sample_type; i++) {
		if (!STR_OK(m, m->sample_type[i]->type) ||
		    !STR_OK(m, m->sample_type[i]->unit))
			return "sample type string out of range";
		if (strchr(m->string_table[m->sample_type[i]->type], '-'))
			return "sample type name contains '-'";
	}
	if (m->period_type && (!STR_OK(m, m->period_type->type) ||
			       !STR_OK(m, m->period_type->unit)))
		return "period type string out of range";
	for (i = 0; i < m->n_comment; i++)
		if (!STR_OK(m, m->comment[i]))
			return "comment out of range";
	if (!STR_OK(m, m->default_sample_type))
		return "default_sample_type out of range";
	return NULL;
}

static const char *table_problem(const pb_profile *m)
{
	size_t i, j;

	for (i = 0; i < m->n_function; i++) {
		const Perftools__Profiles__Function *f = m->function[i];

		if (f->id != i + 1)
			return "function ids are not 1..N";
		if (!STR_OK(m, f->name) || !STR_OK(m, f->system_name) ||
		    !STR_OK(m, f->filename))
			return "function string out of range";
	}
	for (i = 0; i < m->n_mapping; i++) {
		if (m->mapping[i]->id != i + 1)
			return "mapping ids are not 1..N";
		if (!STR_OK(m, m->mapping[i]->filename) ||
		    !STR_OK(m, m->mapping[i]->build_id))
			return "mapping string out of range";
	}
	for (i = 0; i < m->n_location; i++) {
		const Perftools__Profiles__Location *l = m->location[i];

		if (l->id != i + 1)
			return "location ids are not 1..N";
		if (l->mapping_id > m->n_mapping)
			return "location mapping id out of range";
		if (!l->n_line)
			return "location without a line";
		for (j = 0; j < l->n_line; j++)
			if (!l->line[j]->function_id ||
			    l->line[j]->function_id > m->n_function)
				return "line function id out of range";
	}
	return NULL;
}

static const char *sample_problem(const pb_profile *m)
{
	size_t i, j;

	for (i = 0; i < m->n_sample; i++) {
		const Perftools__Profiles__Sample *s = m->sample[i];

		if (s->n_value != m->n_sample_type)
			return "sample value count != sample type count";
		for (j = 0; j < s->n_location_id; j++)
			if (!s->location_id[j] ||
			    s->location_id[j] > m->n_location)
				return "sample location id out of range";
		for (j = 0; j < s->n_label; j++) {
			const Perftools__Profiles__Label *l = s->label[j];

			if (!STR_OK(m, l->key) || !l->key ||
			    !STR_OK(m, l->str) || !STR_OK(m, l->num_unit))
				return "label string out of range";
			if (l->str && (l->num || l->num_unit))
				return "label with both str and num";
		}
	}
	return NULL;
}

static const char *pb_problem(const pb_profile *m)
{
	const char *why = header_problem(m);

	if (!why)
		why = table_problem(m);
	if (!why)
		why = sample_problem(m);
	return why;
}

static void test_intern(void)
{
	struct profile *p = profile_new();
	struct profile_view v;
	char buf[32];
	int64_t a, b, first = 0;
	int same = 1, i;

	check(p != NULL, "profile_new");
	if (!p)
		return;
	profile_get_view(p, &v);
	check(v.nstrings == 1 && !strcmp(v.strings[0], ""),
	      "intern: index 0 is \"\" in a new profile");
	check(profile_intern(p, "") == 0 && profile_intern(p, NULL) == 0,
	      "intern: \"\" and NULL are index 0");
	a = profile_intern(p, "hello");
	b = profile_intern(p, "hello");
	check(a == 1 && b == 1, "intern: same string, same index");
	check(profile_intern(p, "hell") != a &&
	      profile_intern(p, "hello!") != a,
	      "intern: prefix and extension are distinct strings");
	for (i = 0; i < 20000; i++) {
		snprintf(buf, sizeof(buf), "s%d", i);
		b = profile_intern(p, buf);
		if (i == 0)
			first = b;
		else if (b != first + i)
			same = 0;
	}
	for (i = 0; i < 20000; i++) {
		snprintf(buf, sizeof(buf), "s%d", i);
		if (profile_intern(p, buf) != first + i)
			same = 0;
	}
	profile_get_view(p, &v);
	check(same && v.nstrings == (size_t)first + 20000,
	      "intern: 20000 strings grow the table, indexes stable");
	check(!strcmp(v.strings[first + 12345], "s12345"),
	      "intern: string stored at its index");
	profile_free(p);
}

static void test_utf8(void)
{
	static const struct {
		const char *in, *want, *what;
	} cases[] = {
		{ "abc\xff", "abc\xef\xbf\xbd", "stray 0xff" },
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd", "overlong '/'" },
		{ "a\xed\xa0\x80z", "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz",
		  "surrogate" },
		{ "x\xe2\x82", "x\xef\xbf\xbd", "truncated sequence at end" },
		{ "\xe2\x82y", "\xef\xbf\xbdy", "truncated sequence mid-string" },
		{ "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
		  "\xef\xbf\xbd", "above U+10FFFF" },
		{ "h\xc3\xa9llo \xe2\x82\xac \xf0\x9d\x84\x9e",
		  "h\xc3\xa9llo \xe2\x82\xac \xf0\x9d\x84\x9e",
		  "valid multibyte kept" },
	};
	struct profile *p = profile_new();
	struct profile_view v;
	int64_t idx;
	size_t i;

	if (!p) {
		check(0, "utf8: profile_new");
		return;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		idx = profile_intern(p, cases[i].in);
		profile_get_view(p, &v);
		check(idx > 0 && !strcmp(v.strings[idx], cases[i].want) &&
		      profile_intern(p, cases[i].want) == idx,
		      "utf8: %s", cases[i].what);
	}
	profile_free(p);
}

static void test_functions(void)
{
	struct profile *p = profile_new();
	struct profile_view v;
	uint64_t a, b, c, d;

	if (!p) {
		check(0, "functions: profile_new");
		return;
	}
	a = profile_function(p, "main", NULL, "app.py", 1);
	b = profile_function(p, "work", NULL, "app.py", 10);
	c = profile_function(p, "main", NULL, "app.py", 1);
	d = profile_function(p, "main", NULL, "app.py", 2);
	check(a == 1 && b == 2 && c == 1 && d == 3,
	      "functions: dedup, ids 1..N in insertion order");
	profile_get_view(p, &v);
	check(v.nfunctions == 3 && v.functions[0].system_name == 0 &&
	      !strcmp(v.strings[v.functions[1].filename], "app.py"),
	      "functions: NULL system_name stored as \"\", filename stored");
	check(profile_function(p, "main", "_main", "app.py", 1) == 4,
	      "functions: different system_name is a different function");
	check(profile_function(p, "main", "main", "app.py", 1) == 1,
	      "functions: system_name equal to name stored as \"\" "
	      "(pprof would demangle \"<module>\" to \"\")");
	profile_free(p);
}

static void test_mappings(void)
{
	struct profile_mapping_desc m = {
		.memory_start = 0x1000, .memory_limit = 0x2000,
		.filename = "/usr/bin/python3", .build_id = "abcd",
		.has_functions = true,
	};
	struct profile *p = profile_new();
	uint64_t a, b, c;

	if (!p) {
		check(0, "mappings: profile_new");
		return;
	}
	a = profile_mapping(p, &m);
	b = profile_mapping(p, &m);
	m.has_line_numbers = true;
	c = profile_mapping(p, &m);
	check(a == 1 && b == 1 && c == 2,
	      "mappings: dedup on every field, ids 1..N");
	profile_free(p);
}

static void test_locations(void)
{
	struct profile *p = profile_new();
	struct profile_line lines[2];
	struct profile_view v;
	uint64_t f1, f2, a, b, c, d;

	if (!p) {
		check(0, "locations: profile_new");
		return;
	}
	f1 = profile_function(p, "f", NULL, "a.py", 1);
	f2 = profile_function(p, "g", NULL, "a.py", 9);
	a = profile_location(p, 0, 0, f1, 3);
	b = profile_location(p, 0, 0, f1, 4);
	c = profile_location(p, 0, 0, f1, 3);
	check(a == 1 && b == 2 && c == 1,
	      "locations: dedup on (mapping, address, function, line)");
	errno = 0;
	check(profile_location(p, 0, 0, 99, 3) == 0 && errno == EINVAL,
	      "locations: unknown function id rejected");
	check(profile_location(p, 7, 0, f1, 3) == 0,
	      "locations: unknown mapping id rejected");
	lines[0] = (struct profile_line){ f2, 11 };
	lines[1] = (struct profile_line){ f1, 3 };
	d = profile_location_lines(p, 0, 0, lines, 2);
	check(d == 3 && profile_location_lines(p, 0, 0, lines, 2) == 3,
	      "locations: several lines (inlined) are one location");
	profile_get_view(p, &v);
	check(v.locations[2].nlines == 2 &&
	      v.lines[v.locations[2].line_off].function_id == f2 &&
	      v.lines[v.locations[2].line_off + 1].line == 3,
	      "locations: lines stored innermost first");
	check(profile_location_lines(p, 0, 0, lines, 0) == 0,
	      "locations: a location needs at least one line");
	profile_free(p);
}

static struct profile *sample_profile(uint64_t *locs)
{
	struct profile *p = profile_new();
	uint64_t f;
	int i;

	if (!p)
		return NULL;
	if (profile_add_sample_type(p, "samples", "count") ||
	    profile_add_sample_type(p, "cpu", "nanoseconds")) {
		profile_free(p);
		return NULL;
	}
	for (i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		f = profile_function(p, name, NULL, "m.py", i * 10);
		locs[i] = profile_location(p, 0, 0, f, i * 10 + 1);
	}
	return p;
}

static void test_aggregation(void)
{
	struct profile_label l1[3] = {
		{ .key = "pid", .num = 42 }, { .key = "tid", .num = 43 },
		{ .key = "thread_name", .str = "MainThread" },
	};
	struct profile_label l2[3] = {
		{ .key = "thread_name", .str = "MainThread" },
		{ .key = "tid", .num = 43 }, { .key = "pid", .num = 42 },
	};
	struct profile_label l3[3] = {
		{ .key = "pid", .num = 42 }, { .key = "tid", .num = 44 },
		{ .key = "thread_name", .str = "MainThread" },
	};
	int64_t vals[2] = { 1, 1000000 };
	struct profile_view v;
	uint64_t locs[3];
	struct profile *p = sample_profile(locs);
	int rc = 0, i;

	if (!p) {
		check(0, "aggregation: setup");
		return;
	}
	for (i = 0; i < 1000; i++)
		rc |= profile_add_sample(p, locs, 3, l1, 3, vals);
	check(rc == 0 && profile_sample_count(p) == 1,
	      "aggregation: 1000 identical samples are one sample");
	rc = profile_add_sample(p, locs, 3, l2, 3, vals);
	check(rc == 0 && profile_sample_count(p) == 1,
	      "aggregation: label order does not matter");
	profile_get_view(p, &v);
	check(v.values[0] == 1001 && v.values[1] == 1001000000,
	      "aggregation: values are summed per sample type");
	rc = profile_add_sample(p, locs, 3, l3, 3, vals);
	check(rc == 0 && profile_sample_count(p) == 2,
	      "aggregation: different tid label is a different sample");
	rc = profile_add_sample(p, locs + 1, 2, l1, 3, vals);
	check(rc == 0 && profile_sample_count(p) == 3,
	      "aggregation: different stack is a different sample");
	rc = profile_add_sample(p, locs, 3, NULL, 0, vals);
	check(rc == 0 && profile_sample_count(p) == 4,
	      "aggregation: no labels is a different sample");
	profile_free(p);
}

static void test_sample_errors(void)
{
	struct profile_label many[PROFILE_MAX_LABELS + 1];
	struct profile_label empty_val = { .key = "thread_name", .str = "" };
	struct profile_label no_key = { .key = "", .num = 1 };
	int64_t vals[2] = { 1, 1 };
	uint64_t locs[3], bad = 99;
	struct profile *p = sample_profile(locs);
	struct profile_view v;
	size_t i;

	if (!p) {
		check(0, "sample errors: setup");
		return;
	}
	for (i = 0; i < PROFILE_MAX_LABELS + 1; i++)
		many[i] = (struct profile_label){ .key = "k", .num = (int)i };
	check(profile_add_sample(p, locs, 3, many, PROFILE_MAX_LABELS + 1,
				    vals) == -1 && errno == EINVAL,
	      "sample errors: more than %d labels rejected",
	      PROFILE_MAX_LABELS);
	check(profile_add_sample(p, locs, 3, many, PROFILE_MAX_LABELS,
				    vals) == 0,
	      "sample errors: %d labels accepted", PROFILE_MAX_LABELS);
	check(profile_add_sample(p, locs, 3, &no_key, 1, vals) == -1,
	      "sample errors: label without key rejected");
	check(profile_add_sample(p, &bad, 1, NULL, 0, vals) == -1,
	      "sample errors: unknown location id rejected");
	check(profile_add_sample(p, locs, 3, &empty_val, 1, vals) == 0,
	      "sample errors: empty string label accepted");
	profile_get_view(p, &v);
	check(v.samples[v.nsamples - 1].nlabels == 0,
	      "sample errors: empty string label dropped");
	check(profile_add_sample_type(p, "wall", "nanoseconds") == -1 &&
	      errno == EBUSY, "sample errors: sample type after samples");
	profile_free(p);
	p = profile_new();
	if (!p)
		return;
	check(profile_add_sample(p, NULL, 0, NULL, 0, vals) == -1,
	      "sample errors: sample without sample types rejected");
	check(profile_add_sample_type(p, "cpu-time", "ns") == -1 &&
	      errno == EINVAL, "sample errors: '-' in sample type rejected");
	check(profile_add_sample_type(p, "cpu", "ns") == 0 &&
	      profile_add_sample_type(p, "cpu", "ns") == -1,
	      "sample errors: duplicate sample type rejected");
	check(profile_set_default_sample_type(p, "wall") == -1 &&
	      profile_set_default_sample_type(p, "cpu") == 0,
	      "sample errors: default sample type must exist");
	profile_free(p);
}

/* Many distinct stacks, as a long capture of a busy program gives. */
static void test_many_samples(void)
{
	int64_t vals[2] = { 1, 10 };
	struct profile_label l = { .key = "tid" };
	uint64_t locs[3], stack[4];
	struct profile *p = sample_profile(locs);
	size_t bytes0, bytes1;
	int rc = 0, i;

	if (!p) {
		check(0, "many samples: setup");
		return;
	}
	bytes0 = profile_bytes(p);
	for (i = 0; i < 200000; i++) {
		stack[0] = locs[i % 3];
		stack[1] = locs[(i / 3) % 3];
		stack[2] = locs[(i / 9) % 3];
		stack[3] = locs[(i / 27) % 3];
		l.num = i % 500;
		rc |= profile_add_sample(p, stack, 4, &l, 1, vals);
	}
	/* 81 stacks x 500 tids, coprime periods: every pair occurs. */
	check(rc == 0 && profile_sample_count(p) == 81 * 500,
	      "many samples: 200000 adds aggregate into %zu samples",
	      profile_sample_count(p));
	/* What the pipeline bounds a profile held over failed writes by:
	 * each distinct sample holds at least its record, 4 stack ids, a
	 * label and 2 values. */
	bytes1 = profile_bytes(p);
	check(bytes1 >= bytes0 + 81 * 500 * (4 * 8 + 2 * 8) && bytes1 < 64u << 20,
	      "many samples: profile_bytes %zu -> %zu", bytes0, bytes1);
	profile_free(p);
}

static struct profile *roundtrip_profile(void)
{
	struct profile_mapping_desc md = {
		.memory_limit = ~0ULL, .filename = "[python]",
		.has_functions = true, .has_filenames = true,
		.has_line_numbers = true,
	};
	struct profile_label l[3] = {
		{ .key = "pid", .num = 42 }, { .key = "tid", .num = 43 },
		{ .key = "thread_name", .str = "Main\xffThread" },
	};
	struct profile_label b = { .key = "bytes", .num = 7,
				   .num_unit = "bytes" };
	int64_t vals[2] = { 1, 1000000 };
	struct profile *p = profile_new();
	uint64_t map, f[3], loc[3];
	int i, rc = 0;

	if (!p)
		return NULL;
	rc |= profile_add_sample_type(p, "samples", "count");
	rc |= profile_add_sample_type(p, "cpu", "nanoseconds");
	rc |= profile_set_default_sample_type(p, "cpu");
	rc |= profile_set_period(p, "cpu", "nanoseconds", 1000000);
	profile_set_time(p, 1700000000000000000LL, 1000000000LL);
	rc |= profile_add_comment(p, "pyperf-pprof test");
	map = profile_mapping(p, &md);
	f[0] = profile_function(p, "main", NULL, "app.py", 1);
	f[1] = profile_function(p, "work", NULL, "app.py", 10);
	f[2] = profile_function(p, "helper", NULL, "lib.py", 5);
	for (i = 0; i < 3; i++)
		loc[i] = profile_location(p, map, 0, f[i], 3 + 5 * i);
	/* Leaf first: helper <- work <- main. */
	{
		uint64_t s1[3] = { loc[2], loc[1], loc[0] };

		for (i = 0; i < 3; i++)
			rc |= profile_add_sample(p, s1, 3, l, 3, vals);
		rc |= profile_add_sample(p, s1 + 1, 2, &b, 1, vals);
	}
	if (rc || !map || !loc[0] || !loc[1] || !loc[2]) {
		profile_free(p);
		return NULL;
	}
	return p;
}

static const char *label_str(const pb_profile *m,
			     const Perftools__Profiles__Sample *s,
			     const char *key, int64_t *num)
{
	size_t i;

	for (i = 0; i < s->n_label; i++) {
		if (strcmp(m->string_table[s->label[i]->key], key))
			continue;
		*num = s->label[i]->num;
		return m->string_table[s->label[i]->str];
	}
	return NULL;
}

static void check_roundtrip(const pb_profile *m,
			    const char *how)
{
	const Perftools__Profiles__Sample *s;
	const char *why = pb_problem(m), *tn;
	int64_t num = -1, pid = -1;
	const char *const *st = (const char *const *)m->string_table;

	check(why == NULL, "%s: pprof rules hold (%s)", how,
	      why ? why : "all");
	if (why)
		return;
	check(m->n_sample == 2 && m->n_location == 3 &&
	      m->n_function == 3 && m->n_mapping == 1,
	      "%s: record counts", how);
	if (m->n_sample != 2 || m->n_location != 3)
		return;
	s = m->sample[0];
	check(s->n_location_id == 3 && s->location_id[0] == 3 &&
	      s->location_id[2] == 1, "%s: stack leaf first", how);
	check(s->n_value == 2 && s->value[0] == 3 &&
	      s->value[1] == 3000000, "%s: aggregated values", how);
	tn = label_str(m, s, "thread_name", &num);
	label_str(m, s, "pid", &pid);
	check(tn && !strcmp(tn, "Main\xef\xbf\xbdThread") && num == 0 &&
	      pid == 42, "%s: labels (str sanitized, num)", how);
	tn = label_str(m, m->sample[1], "bytes", &num);
	check(tn && !*tn && num == 7 &&
	      !strcmp(st[m->sample[1]->label[0]->num_unit], "bytes"),
	      "%s: numeric label with unit", how);
	check(!strcmp(st[m->function[2]->name], "helper") &&
	      !strcmp(st[m->function[2]->filename], "lib.py") &&
	      m->function[2]->start_line == 5 &&
	      m->location[2]->line[0]->line == 13 &&
	      m->location[2]->line[0]->function_id == 3,
	      "%s: functions, files and lines", how);
	check(m->period == 1000000 && m->period_type &&
	      !strcmp(st[m->period_type->type], "cpu") &&
	      !strcmp(st[m->default_sample_type], "cpu") &&
	      m->n_comment == 1 && m->time_nanos == 1700000000000000000LL &&
	      m->duration_nanos == 1000000000LL,
	      "%s: period, default type, comment, times", how);
}

static void test_roundtrip(void)
{
	struct profile *p = roundtrip_profile();
	pb_profile *m;

	check(p != NULL, "roundtrip: build profile");
	if (!p)
		return;
	m = encode_decode(p, 1);
	check(m != NULL, "gzip: encode, one gzip member, unpack");
	if (m)
		check_roundtrip(m, "gzip");
	perftools__profiles__profile__free_unpacked(m, NULL);
	m = encode_decode(p, 0);
	check(m != NULL, "raw: encode, unpack");
	if (m)
		check_roundtrip(m, "raw");
	perftools__profiles__profile__free_unpacked(m, NULL);
	profile_free(p);

	p = profile_new();
	m = p ? encode_decode(p, 1) : NULL;
	check(m && m->n_string_table == 1 && !pb_problem(m),
	      "empty profile encodes to a valid profile");
	if (m)
		perftools__profiles__profile__free_unpacked(m, NULL);
	profile_free(p);
}

static int dir_entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static int file_decodes(const char *path)
{
	uint8_t buf[1 << 16];
	pb_profile *m;
	size_t len;
	FILE *f = fopen(path, "rb");

	if (!f)
		return 0;
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	m = decode(buf, len, 1);
	if (!m)
		return 0;
	len = m->n_sample;
	perftools__profiles__profile__free_unpacked(m, NULL);
	return len == 2;
}

static void test_write_missing_dir(struct profile *p)
{
	const char *path = "/nonexistent-pyperf-dir/sub/profile.pb.gz";
	char err[256] = "";
	struct stat st;

	check(pprof_write_file(p, path, err, sizeof(err)) == -1,
	      "write: into a missing directory fails");
	check(strstr(err, "/nonexistent-pyperf-dir/sub") &&
	      strstr(err, "No such file") && !strchr(err, '\n'),
	      "write: message names it: %s", err);
	check(stat(path, &st) == -1 &&
	      stat("/nonexistent-pyperf-dir", &st) == -1,
	      "write: nothing left behind");
	err[0] = '\0';
	check(pprof_check_writable(path, err, sizeof(err)) == -1 && *err,
	      "check_writable: missing directory: %s", err);
}

/* RLIMIT_FSIZE makes write() fail with EFBIG, as a full disk would. */
static void test_write_failure(struct profile *p,
			       const char *dir, const char *path)
{
	struct rlimit old, lim;
	char err[256] = "";
	int rc;

	if (getrlimit(RLIMIT_FSIZE, &old))
		return;
	signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = 16;
	setrlimit(RLIMIT_FSIZE, &lim);
	rc = pprof_write_file(p, path, err, sizeof(err));
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_DFL);
	check(rc == -1 && strstr(err, "cannot write") &&
	      strstr(err, path), "write: short write fails: %s", err);
	check(dir_entries(dir) == 1 && file_decodes(path),
	      "write: failed write keeps the old file, no temp file left");
}

static void test_write_file(void)
{
	char dir[] = "/tmp/test_profile.XXXXXX", path[64], err[256] = "";
	struct profile *p = roundtrip_profile();

	if (!p || !mkdtemp(dir)) {
		check(0, "write: setup");
		profile_free(p);
		return;
	}
	test_write_missing_dir(p);
	snprintf(path, sizeof(path), "%s/profile.pb.gz", dir);
	check(pprof_check_writable(path, err, sizeof(err)) == 0 &&
	      dir_entries(dir) == 0, "check_writable: writable directory");
	check(pprof_write_file(p, path, err, sizeof(err)) == 0 &&
	      dir_entries(dir) == 1 && file_decodes(path),
	      "write: profile written, decodes, no temp file left");
	check(pprof_write_file(p, path, err, sizeof(err)) == 0 &&
	      dir_entries(dir) == 1 && file_decodes(path),
	      "write: overwrite existing file");
	test_write_failure(p, dir, path);
	check(pprof_write_file(p, dir, err, sizeof(err)) == -1 &&
	      dir_entries(dir) == 1, "write: onto a directory fails: %s", err);
	check(pprof_check_writable(dir, err, sizeof(err)) == -1,
	      "check_writable: directory path rejected: %s", err);
	unlink(path);
	rmdir(dir);
	profile_free(p);
}

int main(void)
{
	test_intern();
	test_utf8();
	test_functions();
	test_mappings();
	test_locations();
	test_aggregation();
	test_sample_errors();
	test_many_samples();
	test_roundtrip();
	test_write_file();
	return check_exit();
}
