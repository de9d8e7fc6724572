/*
 * pprof encoding: the profile view is mapped onto protobuf-c messages
 * without copying strings or pools (the messages point into the profile),
 * packed, gzip-compressed and written atomically.
 */
#define _GNU_SOURCE		/* mkostemp */
#define ZLIB_CONST

#include "pprof_write.h"
#include "profile.h"
#include "profile.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Keeps the temporary name within NAME_MAX whatever the target's name. */
#define TMP_BASE_MAX	128
#define OUTPUT_MODE	0644

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;

/* The message tree: each kind in one array plus its pointer array. */
struct pb_tree {
	pb_profile msg;
	pb_value_type period_type;
	pb_value_type *stypes, **stype_ptrs;
	pb_function *funcs, **func_ptrs;
	pb_mapping *maps, **map_ptrs;
	pb_location *locs, **loc_ptrs;
	pb_line *lines, **line_ptrs;
	pb_sample *samples, **sample_ptrs;
	pb_label *labels, **label_ptrs;
};

/* calloc(0) may return NULL; an empty array must not look like failure. */
static void *alloc_array(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static void pb_tree_free(struct pb_tree *t)
{
	free(t->stypes);
	free(t->stype_ptrs);
	free(t->funcs);
	free(t->func_ptrs);
	free(t->maps);
	free(t->map_ptrs);
	free(t->locs);
	free(t->loc_ptrs);
	free(t->lines);
	free(t->line_ptrs);
	free(t->samples);
	free(t->sample_ptrs);
	free(t->labels);
	free(t->label_ptrs);
}

static int pb_tree_alloc(struct pb_tree *t, const struct profile_view *v)
{
#define ALLOC_PAIR(arr, ptrs, n) \
	(((arr) = alloc_array((n), sizeof(*(arr)))) != NULL && \
	 ((ptrs) = alloc_array((n), sizeof(*(ptrs)))) != NULL)
	if (ALLOC_PAIR(t->stypes, t->stype_ptrs, v->nsample_types) &&
	    ALLOC_PAIR(t->funcs, t->func_ptrs, v->nfunctions) &&
	    ALLOC_PAIR(t->maps, t->map_ptrs, v->nmappings) &&
	    ALLOC_PAIR(t->locs, t->loc_ptrs, v->nlocations) &&
	    ALLOC_PAIR(t->lines, t->line_ptrs, v->nlines) &&
	    ALLOC_PAIR(t->samples, t->sample_ptrs, v->nsamples) &&
	    ALLOC_PAIR(t->labels, t->label_ptrs, v->nlabels))
		return 0;
#undef ALLOC_PAIR
	pb_tree_free(t);
	errno = ENOMEM;
	return -1;
}

/* protobuf-c fields are not const, but packing only reads them. */
static void pb_fill_header(struct pb_tree *t, const struct profile_view *v)
{
	pb_profile *m = &t->msg;
	size_t i;

	for (i = 0; i < v->nsample_types; i++) {
		perftools__profiles__value_type__init(&t->stypes[i]);
		t->stypes[i].type = v->sample_types[i].type;
		t->stypes[i].unit = v->sample_types[i].unit;
		t->stype_ptrs[i] = &t->stypes[i];
	}
	m->n_sample_type = v->nsample_types;
	m->sample_type = t->stype_ptrs;
	m->n_string_table = v->nstrings;
	m->string_table = (char **)v->strings;
	m->time_nanos = v->time_nanos;
	m->duration_nanos = v->duration_nanos;
	if (v->period_type.type || v->period_type.unit) {
		perftools__profiles__value_type__init(&t->period_type);
		t->period_type.type = v->period_type.type;
		t->period_type.unit = v->period_type.unit;
		m->period_type = &t->period_type;
	}
	m->period = v->period;
	m->n_comment = v->ncomments;
	m->comment = (int64_t *)v->comments;
	m->default_sample_type = v->default_sample_type;
}

static void pb_fill_functions(struct pb_tree *t, const struct profile_view *v)
{
	size_t i;

	for (i = 0; i < v->nfunctions; i++) {
		pb_function *f = &t->funcs[i];

		perftools__profiles__function__init(f);
		f->id = i + 1;
		f->name = v->functions[i].name;
		f->system_name = v->functions[i].system_name;
		f->filename = v->functions[i].filename;
		f->start_line = v->functions[i].start_line;
		t->func_ptrs[i] = f;
	}
	t->msg.n_function = v->nfunctions;
	t->msg.function = t->func_ptrs;
}

/*
 * The id a mapping is written with. The main mapping goes first, as
 * pprof expects (it names the profile after it), and ids stay 1..N in
 * the order written (some back ends index by id): the main one becomes 1,
 * those made before it move up one.
 */
static uint64_t written_map_id(const struct profile_view *v, uint64_t id)
{
	uint64_t main = v->main_mapping;

	if (!main || !id || id > main)
		return id;
	return id == main ? 1 : id + 1;
}

static void pb_fill_mappings(struct pb_tree *t, const struct profile_view *v)
{
	size_t i;

	for (i = 0; i < v->nmappings; i++) {
		size_t slot = written_map_id(v, i + 1) - 1;
		const struct profile_mapping_rec *r = &v->mappings[i];
		pb_mapping *m = &t->maps[slot];

		perftools__profiles__mapping__init(m);
		m->id = slot + 1;
		m->memory_start = r->memory_start;
		m->memory_limit = r->memory_limit;
		m->file_offset = r->file_offset;
		m->filename = r->filename;
		m->build_id = r->build_id;
		m->has_functions = r->has_functions;
		m->has_filenames = r->has_filenames;
		m->has_line_numbers = r->has_line_numbers;
		m->has_inline_frames = r->has_inline_frames;
		t->map_ptrs[slot] = m;
	}
	t->msg.n_mapping = v->nmappings;
	t->msg.mapping = t->map_ptrs;
}

static void pb_fill_locations(struct pb_tree *t, const struct profile_view *v)
{
	size_t i;

	for (i = 0; i < v->nlines; i++) {
		perftools__profiles__line__init(&t->lines[i]);
		t->lines[i].function_id = v->lines[i].function_id;
		t->lines[i].line = v->lines[i].line;
		t->line_ptrs[i] = &t->lines[i];
	}
	for (i = 0; i < v->nlocations; i++) {
		const struct profile_location_rec *r = &v->locations[i];
		pb_location *l = &t->locs[i];

		perftools__profiles__location__init(l);
		l->id = i + 1;
		l->mapping_id = written_map_id(v, r->mapping_id);
		l->address = r->address;
		l->n_line = r->nlines;
		l->line = t->line_ptrs + r->line_off;
		t->loc_ptrs[i] = l;
	}
	t->msg.n_location = v->nlocations;
	t->msg.location = t->loc_ptrs;
}

static void pb_fill_samples(struct pb_tree *t, const struct profile_view *v)
{
	size_t i;

	for (i = 0; i < v->nlabels; i++) {
		pb_label *l = &t->labels[i];

		perftools__profiles__label__init(l);
		l->key = v->labels[i].key;
		l->str = v->labels[i].str;
		l->num = v->labels[i].num;
		l->num_unit = v->labels[i].num_unit;
		t->label_ptrs[i] = l;
	}
	for (i = 0; i < v->nsamples; i++) {
		const struct profile_sample_rec *r = &v->samples[i];
		pb_sample *s = &t->samples[i];

		perftools__profiles__sample__init(s);
		s->n_location_id = r->nlocs;
		s->location_id = (uint64_t *)(v->stack_ids + r->loc_off);
		s->n_value = v->nsample_types;
		s->value = (int64_t *)(v->values + i * v->nsample_types);
		s->n_label = r->nlabels;
		s->label = t->label_ptrs + r->label_off;
		t->sample_ptrs[i] = s;
	}
	t->msg.n_sample = v->nsamples;
	t->msg.sample = t->sample_ptrs;
}

static int pack_profile(const struct profile *p, uint8_t **out,
			size_t *outlen)
{
	struct profile_view v;
	struct pb_tree t;
	size_t len;
	uint8_t *buf;

	memset(&t, 0, sizeof(t));
	profile_get_view(p, &v);
	if (pb_tree_alloc(&t, &v))
		return -1;
	perftools__profiles__profile__init(&t.msg);
	pb_fill_header(&t, &v);
	pb_fill_functions(&t, &v);
	pb_fill_mappings(&t, &v);
	pb_fill_locations(&t, &v);
	pb_fill_samples(&t, &v);
	len = perftools__profiles__profile__get_packed_size(&t.msg);
	buf = malloc(len ? len : 1);
	if (!buf) {
		pb_tree_free(&t);
		errno = ENOMEM;
		return -1;
	}
	*outlen = perftools__profiles__profile__pack(&t.msg, buf);
	*out = buf;
	pb_tree_free(&t);
	return 0;
}

/*
 * One gzip member (windowBits 15 + 16) into a deflateBound-sized buffer,
 * fed in uInt-sized chunks so that any size_t input works.
 */
static int gzip_buf(const uint8_t *in, size_t inlen, uint8_t **out,
		    size_t *outlen)
{
	size_t bound, ileft = inlen, oleft;
	uInt ain, aout;
	z_stream zs;
	uint8_t *buf;
	int ret;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		errno = ENOMEM;
		return -1;
	}
	bound = deflateBound(&zs, inlen);
	buf = malloc(bound);
	if (!buf) {
		deflateEnd(&zs);
		errno = ENOMEM;
		return -1;
	}
	zs.next_in = in;
	zs.next_out = buf;
	oleft = bound;
	do {
		ain = zs.avail_in = ileft > UINT_MAX ? UINT_MAX : (uInt)ileft;
		aout = zs.avail_out = oleft > UINT_MAX ? UINT_MAX : (uInt)oleft;
		ret = deflate(&zs, ileft == ain ? Z_FINISH : Z_NO_FLUSH);
		ileft -= ain - zs.avail_in;
		oleft -= aout - zs.avail_out;
	} while (ret == Z_OK && oleft > 0);
	deflateEnd(&zs);
	if (ret != Z_STREAM_END) {
		free(buf);
		errno = EIO;	/* deflateBound promised room */
		return -1;
	}
	*out = buf;
	*outlen = bound - oleft;
	return 0;
}

int pprof_encode(const struct profile *p, int gzip, uint8_t **out,
		 size_t *outlen)
{
	uint8_t *raw;
	size_t rawlen;
	int ret;

	if (pack_profile(p, &raw, &rawlen))
		return -1;
	if (!gzip) {
		*out = raw;
		*outlen = rawlen;
		return 0;
	}
	ret = gzip_buf(raw, rawlen, out, outlen);
	free(raw);
	return ret;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * Splits path into the directory to name in messages and a mkostemp
 * template in that directory: "dir/.base.XXXXXX", hidden so that a
 * leftover from a killed run does not look like a profile.
 */
static int tmp_names(const char *path, char **dir, char **tmpl)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	size_t blen = strlen(base);

	if (!blen) {
		errno = EISDIR;
		return -1;
	}
	if (blen > TMP_BASE_MAX)
		blen = TMP_BASE_MAX;
	*dir = malloc(dlen + 2);
	*tmpl = malloc(dlen + blen + 10);
	if (!*dir || !*tmpl) {
		free(*dir);
		free(*tmpl);
		errno = ENOMEM;
		return -1;
	}
	if (!slash)
		strcpy(*dir, ".");
	else if (!dlen)
		strcpy(*dir, "/");
	else
		snprintf(*dir, dlen + 1, "%s", path);
	snprintf(*tmpl, dlen + blen + 10, "%.*s.%.*s.XXXXXX",
		 (int)(slash ? dlen + 1 : 0), path, (int)blen, base);
	return 0;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len > SSIZE_MAX ? SSIZE_MAX : len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Returns NULL, or the verb for the message with errno set. */
static const char *write_tmp(int fd, const uint8_t *buf, size_t len)
{
	int saved;

	/* mkostemp makes the file 0600; a profile is meant to be shared. */
	if (fchmod(fd, OUTPUT_MODE) || write_all(fd, buf, len)) {
		saved = errno;
		close(fd);
		errno = saved;
		return "write";
	}
	if (fsync(fd)) {
		saved = errno;
		close(fd);
		errno = saved;
		return "sync";
	}
	/* Network filesystems may report write errors only at close. */
	if (close(fd))
		return "write";
	return NULL;
}

/*
 * Makes the rename itself durable.  Failure is not reported: the profile
 * is complete at path already, and some filesystems refuse to sync a
 * directory.
 */
static void sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return;
	(void)fsync(fd);
	close(fd);
}

/*
 * Puts the complete temporary file at path. Replacing: rename(2). Not
 * replacing (excl): renameat2(RENAME_NOREPLACE), or where the file system
 * lacks it link(2) and unlink; both fail with EEXIST rather than take the
 * place of a file someone else created there.
 */
static int put_in_place(const char *tmpl, const char *path, int excl)
{
	int saved;

	if (!excl)
		return rename(tmpl, path);
	if (renameat2(AT_FDCWD, tmpl, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	if (link(tmpl, path))
		return -1;
	saved = errno;
	unlink(tmpl);
	errno = saved;
	return 0;
}

static int install(const char *path, const char *dir, char *tmpl,
		   const uint8_t *buf, size_t len, int excl, char *err, size_t errlen)
{
	const char *verb;
	int fd, saved;

	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0) {
		set_err(err, errlen, "cannot create a temporary file in %s: %s",
			dir, strerror(errno));
		return -1;
	}
	verb = write_tmp(fd, buf, len);
	if (verb) {
		saved = errno;
		unlink(tmpl);
		set_err(err, errlen, "cannot %s %s: %s", verb, path,
			strerror(saved));
		return -1;
	}
	if (put_in_place(tmpl, path, excl)) {
		saved = errno;
		unlink(tmpl);
		set_err(err, errlen, "cannot rename a temporary file to %s: %s",
			path, strerror(saved));
		errno = saved;
		return -1;
	}
	sync_dir(dir);
	return 0;
}

int pprof_write_file(const struct profile *p, const char *path, char *err,
		     size_t errlen)
{
	char *dir, *tmpl;
	uint8_t *buf;
	size_t len;
	int ret;

	if (tmp_names(path, &dir, &tmpl)) {
		set_err(err, errlen, "cannot write %s: %s", path,
			strerror(errno));
		return -1;
	}
	if (pprof_encode(p, 1, &buf, &len)) {
		set_err(err, errlen, "cannot encode the profile for %s: %s",
			path, strerror(errno));
		free(dir);
		free(tmpl);
		return -1;
	}
	ret = install(path, dir, tmpl, buf, len, 0, err, errlen);
	free(buf);
	free(dir);
	free(tmpl);
	return ret;
}

int pprof_install_buffer(const char *path, const uint8_t *buf, size_t len, int excl,
			 char *err, size_t errlen)
{
	char *dir, *tmpl;
	int ret;

	if (tmp_names(path, &dir, &tmpl)) {
		set_err(err, errlen, "cannot write %s: %s", path,
			strerror(errno));
		return -1;
	}
	ret = install(path, dir, tmpl, buf, len, excl, err, errlen);
	free(dir);
	free(tmpl);
	return ret;
}

int pprof_check_writable(const char *path, char *err, size_t errlen)
{
	char *dir, *tmpl;
	struct stat st;
	int fd, ret = 0;

	if (tmp_names(path, &dir, &tmpl)) {
		set_err(err, errlen, "cannot write %s: %s", path,
			strerror(errno));
		return -1;
	}
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		set_err(err, errlen, "cannot write %s: %s", path,
			strerror(EISDIR));
		ret = -1;
	} else if ((fd = mkostemp(tmpl, O_CLOEXEC)) < 0) {
		set_err(err, errlen, "cannot create a temporary file in %s: %s",
			dir, strerror(errno));
		ret = -1;
	} else {
		close(fd);
		unlink(tmpl);
	}
	free(dir);
	free(tmpl);
	return ret;
}
