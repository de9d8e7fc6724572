/*
 * tests/maps-iter.sh: for each PID, the maps text written from the
 * task_vma iterator's records (src/live/maps_iter.c, src/memsource/
 * maps_text.c) against /proc/PID/maps read at once. The first round learns
 * the paths from the file, as the live source does; the second must write
 * the text without it, line for line the file's, but the mappings the
 * iterator does not name (the kernel's [vvar], [vvar_vclock], [vsyscall],
 * [anon:NAME] of prctl): those lines may be missing ([vvar*], [vsyscall])
 * or nameless. Prints "PID written" or "PID file" (a fallback: a deleted
 * file, an internal mount) per PID; exits 1 on any other difference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps_iter.h"
#include "maps_text.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	size_t cap = 1 << 16, n = 0, r;
	char *b = malloc(cap);

	if (!f || !b)
		exit(2);
	while ((r = fread(b + n, 1, cap - n, f)) > 0)
		if ((n += r) == cap && !(b = realloc(b, cap *= 2)))
			exit(2);
	fclose(f);
	*len = n;
	return b;
}

static int excused(const char *kline, size_t klen, const char *oline, size_t olen)
{
	const char *name = klen > 73 ? kline + 73 : "";

	if (!strncmp(name, "[vsyscall]", 10))	/* not a mapping of the process */
		return oline == NULL ? 1 : 0;
	/* [vvar], [anon:x]: the same mapping, no name. */
	return oline && (!strncmp(name, "[vvar", 5) || !strncmp(name, "[anon", 5)) &&
	       klen > olen && !memcmp(kline, oline, olen) ? 2 : 0;
}

/* Line-wise comparison; -1 on a difference (printed). */
static int compare(int pid, const char *k, size_t klen, const char *o, size_t olen)
{
	const char *ke = k + klen, *oe = o + olen;

	while (k < ke) {
		const char *kn = memchr(k, '\n', (size_t)(ke - k)), *on;
		size_t kl = kn ? (size_t)(kn - k) : (size_t)(ke - k), ol;
		int e;

		on = o < oe ? memchr(o, '\n', (size_t)(oe - o)) : NULL;
		ol = o < oe ? (on ? (size_t)(on - o) : (size_t)(oe - o)) : 0;
		if (o < oe && kl == ol && !memcmp(k, o, kl)) {
			k += kl + 1;
			o += ol + 1;
			continue;
		}
		e = excused(k, kl, o < oe && !strncmp(k, o, 25) ? o : NULL, ol);
		if (!e && (e = excused(k, kl, NULL, 0)) != 1)
			e = 0;
		if (!e) {
			fprintf(stderr, "%d: file:    %.*s\n%d: written: %.*s\n", pid, (int)kl, k, pid,
				(int)ol, o < oe ? o : "");
			return -1;
		}
		k += kl + 1;
		if (e == 2)
			o += ol + 1;
	}
	if (o < oe) {
		fprintf(stderr, "%d: written has more: %.*s\n", pid, (int)(oe - o), o);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct maps_iter *mi = maps_iter_open(1);
	struct maps_paths *c = maps_paths_new();
	int bad = 0;

	if (!mi || !c) {
		fprintf(stderr, "maps_check: the iterator did not load\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		int pid = atoi(argv[i]);
		char path[64], *text, *k;
		size_t rlen, tlen, klen;
		void *recs;

		snprintf(path, sizeof(path), "/proc/%d/maps", pid);
		for (int round = 0; round < 2; round++) {
			if (!(recs = maps_iter_read(mi, pid, &rlen)))
				break;
			k = slurp(path, &klen);
			text = maps_text_from_vmas(c, recs, rlen, &tlen);
			if (round == 0 && !text) {
				maps_paths_learn(c, recs, rlen, k, klen);
			} else if (round == 1) {
				printf("%d %s\n", pid, text ? "written" : "file");
				if (text && compare(pid, k, klen, text, tlen))
					bad = 1;
			}
			free(text);
			free(k);
			free(recs);
		}
	}
	maps_paths_free(c);
	maps_iter_close(mi);
	return bad;
}
