/* Output naming, atomic writes and rotation; see output.h. */
#include "output.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collapsed.h"
#include "pprof_write.h"

#define KEEP_SCAN_MAX 100000	/* directory entries looked at when pruning */
#define OUTPUT_NAME_TRIES 1000	/* taken names skipped before giving up */

int output_init(struct output *o, const struct config *cfg, uint32_t run_id, char *err,
		size_t errlen)
{
	const char *ext = cfg->format == FORMAT_COLLAPSED ? "folded" : "pb.gz";
	struct stat st;
	char probe[4200];

	memset(o, 0, sizeof(*o));
	o->cfg = cfg;
	o->run_id = run_id;
	if (stat(cfg->out, &st) == 0 && S_ISDIR(st.st_mode)) {
		size_t l = strlen(cfg->out);

		snprintf(o->pattern, sizeof(o->pattern), "%s%sprofile-%%t.%s", cfg->out,
			 l && cfg->out[l - 1] == '/' ? "" : "/", ext);
	} else
		snprintf(o->pattern, sizeof(o->pattern), "%s", cfg->out);
	o->series = strstr(o->pattern, "%t") != NULL;
	if (cfg->interval_s && !o->series) {
		snprintf(err, errlen, "--interval writes one file per interval: give --out a directory or a name with %%t (e.g. profile-%%t.pb.gz)");
		return -1;
	}
	/* Check the directory the files will land in. */
	snprintf(probe, sizeof(probe), "%s", o->pattern);
	if (o->series) {
		char *slash = strrchr(probe, '/');

		snprintf(slash ? slash + 1 : probe, sizeof(probe) - (size_t)(slash ? slash + 1 - probe : 0),
			 "profile.probe");
	}
	return pprof_check_writable(probe, err, errlen);
}

/* Can a profile be written again where they go? A page written to a
 * probe file beside them, which is then removed: while writes fail, this
 * is asked before a held profile is encoded again (half a second of CPU
 * at PIPELINE_HOLD_BYTES). */
int output_probe(const struct output *o, char *err, size_t errlen)
{
	static const uint8_t page[4096];
	char probe[4200];
	const char *slash = strrchr(o->pattern, '/');

	/* This run's own probe: runs may share a directory. */
	snprintf(probe, sizeof(probe), "%.*s.pyperf-pprof-%u.probe",
		 slash ? (int)(slash + 1 - o->pattern) : 0, o->pattern, o->run_id);
	if (pprof_install_buffer(probe, page, sizeof(page), 0, err, errlen))
		return -1;
	unlink(probe);
	return 0;
}

/* The pattern with %t replaced by the UTC time wall_ns (sortable by name),
 * the run id and the sequence number seq. */
static void expand(const struct output *o, int64_t wall_ns, unsigned seq, char *path,
		   size_t len)
{
	char stamp[48], id[16] = "";
	const char *t = strstr(o->pattern, "%t");
	time_t sec = (time_t)(wall_ns / 1000000000LL);
	struct tm tm;

	if (!t) {
		snprintf(path, len, "%s", o->pattern);
		return;
	}
	if (!gmtime_r(&sec, &tm))
		memset(&tm, 0, sizeof(tm));
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	if (o->run_id)
		snprintf(id, sizeof(id), "-%u", o->run_id);
	snprintf(path, len, "%.*s%s%s-%03u%s", (int)(t - o->pattern), o->pattern, stamp, id,
		 seq, t + 2);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Is s a stamp expand() writes for this run, "YYYYmmddTHHMMSSZ-ID-NNN"
 * ("-ID" only with a run id; NNN three digits or more)? */
static int is_stamp(const char *s, size_t len, const char *id)
{
	static const char form[] = "dddddddd" "T" "dddddd" "Z";
	size_t fl = sizeof(form) - 1, il = strlen(id);

	if (len < fl + il + 4 || strncmp(s + fl, id, il) || s[fl + il] != '-')
		return 0;
	for (size_t i = 0; i < fl; i++) {
		if (form[i] == 'd' ? s[i] < '0' || s[i] > '9' : s[i] != form[i])
			return 0;
	}
	for (size_t i = fl + il + 1; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
	}
	return 1;
}

/* A file this run names: the pattern's prefix, a stamp with this run's id,
 * its suffix. Anything else in the directory (the user's, another run's)
 * is never touched. */
static int ours(const char *name, const char *prefix, const char *suffix, const char *id)
{
	size_t l = strlen(name), pl = strlen(prefix), sl = strlen(suffix);

	if (l < pl + sl || strncmp(name, prefix, pl) || strcmp(name + l - sl, suffix))
		return 0;
	return is_stamp(name + pl, l - pl - sl, id);
}

/* The names in dir that are ours, except the one just written. */
static char **list_ours(const char *dir, const char *prefix, const char *suffix,
			const char *id, const char *newest, size_t *count)
{
	char **names = NULL, **nn;
	size_t n = 0, cap = 0, scanned = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d)) && scanned++ < KEEP_SCAN_MAX) {
		if (!ours(de->d_name, prefix, suffix, id) || !strcmp(de->d_name, newest))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nn = realloc(names, cap * sizeof(*names));
			if (!nn)
				break;
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (names[n])
			n++;
	}
	if (d)
		closedir(d);
	*count = n;
	return names;
}

/*
 * Deletes the oldest files of the series beyond --keep. Names sort by
 * time. Only names of the exact form expand() writes are candidates, and
 * the file just written (path) always stays: it counts as one of --keep.
 */
static void prune(struct output *o, const char *path)
{
	char dir[4096], prefix[4096], id[16] = "", *slash, **names;
	const char *t = strstr(o->pattern, "%t"), *suffix = t + 2;
	const char *newest = strrchr(path, '/');
	size_t n;

	snprintf(dir, sizeof(dir), "%.*s", (int)(t - o->pattern), o->pattern);
	slash = strrchr(dir, '/');
	snprintf(prefix, sizeof(prefix), "%s", slash ? slash + 1 : dir);
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	if (strchr(suffix, '/'))
		return;	/* %t names a directory: no series of files to prune */
	newest = newest ? newest + 1 : path;
	if (o->run_id)
		snprintf(id, sizeof(id), "-%u", o->run_id);
	names = list_ours(dir, prefix, suffix, id, newest, &n);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (n - i > (size_t)o->cfg->keep - 1) {
			char old[8300];

			snprintf(old, sizeof(old), "%s/%s", dir, names[i]);
			unlink(old);
		}
		free(names[i]);
	}
	free(names);
}

/* Encodes the profile in the configured format into a malloc'd buffer. */
static int encode(const struct output *o, const struct profile *p, uint8_t **buf, size_t *len)
{
	char *text;

	if (o->cfg->format == FORMAT_PPROF)
		return pprof_encode(p, 1, buf, len);
	if (collapsed_encode(p, &text, len))
		return -1;
	*buf = (uint8_t *)text;
	return 0;
}

/*
 * A series' names are made here, so a file of that name that exists is
 * someone else's (another run, a user): it is never replaced; the
 * sequence number moves on until a free name is found.
 */
static int install(struct output *o, const uint8_t *buf, size_t len, int64_t wall_ns,
		   char *path, size_t pathlen, char *err, size_t errlen)
{
	for (int tries = 0;; tries++) {
		expand(o, wall_ns, o->seq++, path, pathlen);
		if (!pprof_install_buffer(path, buf, len, o->series, err, errlen))
			return 0;
		if (!o->series || errno != EEXIST || tries >= OUTPUT_NAME_TRIES)
			return -1;
	}
}

int output_write(struct output *o, const struct profile *p, int64_t wall_ns, char *path,
		 size_t pathlen, char *err, size_t errlen)
{
	unsigned seq = o->seq;
	uint8_t *buf;
	size_t len;
	int r;

	if (encode(o, p, &buf, &len)) {
		expand(o, wall_ns, o->seq, path, pathlen);
		snprintf(err, errlen, "cannot encode the profile for %s: out of memory", path);
		return -1;
	}
	r = install(o, buf, len, wall_ns, path, pathlen, err, errlen);
	free(buf);
	if (r)
		o->seq = seq;	/* a name not written is not used up */
	else if (o->series && o->cfg->keep > 0)
		prune(o, path);
	return r;
}
