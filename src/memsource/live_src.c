/* The live memory source: process_vm_readv, /proc files, mapped files. */
#define _GNU_SOURCE
#include "target_src.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "elffile.h"
#include "maps_text.h"
#include "proc.h"
#include "proc_root.h"

static ssize_t live_readv(void *ctx, pid_t pid, const struct iovec *local, unsigned long nlocal,
			  const struct iovec *remote, unsigned long nremote)
{
	/* The system call itself: no libc or sanitizer wrapper in between. */
	return syscall(SYS_process_vm_readv, pid, local, nlocal, remote, nremote, 0);
}

/* A chroot's maps name its files with our path to its root in front:
 * name them as the target does (proc_root.h), as a container's are. */
static void own_names(const char *path, char *text, size_t *len)
{
	char prefix[4096];
	unsigned pid;
	int n = 0;

	if (sscanf(path, "/proc/%u/maps%n", &pid, &n) != 1 || path[n] != '\0')
		return;
	proc_root_prefix((pid_t)pid, prefix, sizeof(prefix));
	*len = proc_root_strip(text, *len, prefix);
}

/* A file of at most max bytes, as it is. */
static char *read_path(const char *path, size_t max, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf)
		goto fail;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb;

			if (cap >= max)
				break;
			nb = realloc(buf, cap * 2);
			if (!nb)
				goto fail;
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

struct live_with {
	struct target_src src;
	struct live_maps_reader r;
	struct maps_paths *paths;
	unsigned long written, read;	/* maps texts: from records, from the file */
};

/* /proc/PID/maps: written from the reader's records where it knows every
 * file's path, else read, and the records' paths learnt from it. */
static char *read_maps(struct live_with *w, const char *path, pid_t pid, size_t max,
		       size_t *len)
{
	void *recs = w ? w->r.read(w->r.ctx, pid, len) : NULL;
	size_t rlen = recs ? *len : 0;
	char *text = recs ? maps_text_from_vmas(w->paths, recs, rlen, len) : NULL;

	if (text) {
		w->written++;
	} else if ((text = read_path(path, max, len)) && w) {
		w->read++;
		if (recs)
			maps_paths_learn(w->paths, recs, rlen, text, *len);
	}
	free(recs);
	return text;
}

static char *live_read_file(void *ctx, const char *path, size_t max, size_t *len)
{
	unsigned pid;
	char *text;
	int n = 0;

	if (sscanf(path, "/proc/%u/maps%n", &pid, &n) != 1 || path[n] != '\0')
		return read_path(path, max, len);
	text = read_maps(ctx, path, (pid_t)pid, max, len);
	if (text)
		own_names(path, text, len);
	return text;
}

/* /proc/PID/map_files/... opens the mapped file even if it was deleted or
 * lives in another mount namespace; else /proc/PID/root/PATH. */
static void live_map_file(void *ctx, pid_t pid, const struct proc_map *m, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
		 m->start, m->end);
	if (access(buf, R_OK) == 0)
		return;
	snprintf(buf, len, "/proc/%d/root%s", (int)pid, m->path);
}

static struct elf_file *live_open_elf(void *ctx, const char *path)
{
	return elf_file_open(path);
}

static const struct target_src_ops live_ops = {
	.readv = live_readv,
	.read_file = live_read_file,
	.map_file = live_map_file,
	.open_elf = live_open_elf,
};

static const struct target_src live_src = { .ops = &live_ops };

const struct target_src *target_src_live(void)
{
	return &live_src;
}

struct target_src *target_src_live_new(const struct live_maps_reader *r)
{
	struct live_with *w = calloc(1, sizeof(*w));

	if (!w || !(w->paths = maps_paths_new())) {
		free(w);
		return NULL;
	}
	w->r = *r;
	w->src.ops = &live_ops;
	w->src.ctx = w;
	return &w->src;
}

void target_src_live_free(struct target_src *s)
{
	struct live_with *w = (struct live_with *)s;

	if (!s || s == &live_src)
		return;
	maps_paths_free(w->paths);
	free(w);
}

void target_src_live_maps_counts(const struct target_src *s, unsigned long *written,
				 unsigned long *read)
{
	const struct live_with *w = (const struct live_with *)s;
	int with = s && s != &live_src && target_src_is_live(s);

	*written = with ? w->written : 0;
	*read = with ? w->read : 0;
}

int target_src_is_live(const struct target_src *s)
{
	return s && s->ops == &live_ops;
}
