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

int output_init(struct output *o, const struct config *cfg, char *err, size_t errlen)
{
	const char *ext = cfg->format == FORMAT_COLLAPSED ? "txt" : "pb.gz";
	struct stat st;
	char probe[4200];

	memset(o, 0, sizeof(*o));
	o->cfg = cfg;
	if (stat(cfg->out, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(o->pattern, sizeof(o->pattern), "%s/profile-%%t.%s", cfg->out, ext);
	else
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

/* The pattern with %t replaced by the UTC time (sortable by name). */
static void expand(struct output *o, char *path, size_t len)
{
	char stamp[48];
	const char *t = strstr(o->pattern, "%t");
	struct timespec now;
	struct tm tm;

	if (!t) {
		snprintf(path, len, "%s", o->pattern);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(path, len, "%.*s%s-%03u%s", (int)(t - o->pattern), o->pattern, stamp,
		 o->seq++ % 1000, t + 2);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Deletes the oldest files of the series beyond --keep. Names sort by time:
 * only files with the pattern's prefix and suffix are touched. */
static void prune(struct output *o)
{
	char dir[4096], prefix[4096], *slash, **names = NULL;
	const char *t = strstr(o->pattern, "%t"), *suffix = t + 2;
	size_t n = 0, cap = 0, scanned = 0;
	DIR *d;
	struct dirent *de;

	snprintf(dir, sizeof(dir), "%.*s", (int)(t - o->pattern), o->pattern);
	slash = strrchr(dir, '/');
	snprintf(prefix, sizeof(prefix), "%s", slash ? slash + 1 : dir);
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	d = opendir(dir);
	while (d && (de = readdir(d)) && scanned++ < KEEP_SCAN_MAX) {
		size_t l = strlen(de->d_name), pl = strlen(prefix), sl = strlen(suffix);
		char **nn;

		if (l < pl + sl || strncmp(de->d_name, prefix, pl) ||
		    strcmp(de->d_name + l - sl, suffix) || de->d_name[0] == '.')
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
	qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (n - i > (size_t)o->cfg->keep) {
			char path[8300];

			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			unlink(path);
		}
		free(names[i]);
	}
	free(names);
}

int output_write(struct output *o, const struct profile *p, char *path, size_t pathlen,
		 char *err, size_t errlen)
{
	char *text;
	size_t len;
	int r;

	expand(o, path, pathlen);
	if (o->cfg->format == FORMAT_PPROF) {
		r = pprof_write_file(p, path, err, errlen);
	} else if (collapsed_encode(p, &text, &len)) {
		snprintf(err, errlen, "cannot encode %s: out of memory", path);
		r = -1;
	} else {
		r = pprof_install_buffer(path, (const uint8_t *)text, len, err, errlen);
		free(text);
	}
	if (r == 0 && o->series && o->cfg->keep > 0)
		prune(o);
	return r;
}
