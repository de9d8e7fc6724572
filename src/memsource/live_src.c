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

#define GONE_MAX	128	/* targets' retired list, RETIRED_MAX, fits */

/* A live source's own state (its ctx): every live source has one, the
 * default of target_src_live() too. */
struct live {
	struct target_src src;
	/* Processes whose exit (or exec) the profiler has seen, or whose
	 * memory a read found gone: a read fails as the kernel would, without
	 * asking it. Samples taken just before an exit are still added after
	 * it, and each read of their code objects and labels was a failing
	 * process_vm_readv (3.4 per new process on a host starting one every
	 * 0.3 s). Failing here, below a recording, keeps the recording as it
	 * was: the failure is recorded. */
	pid_t gone[GONE_MAX];
	unsigned ngone, gone_next;
	pid_t root_ours;		/* its root is known to be ours; 0: none */
	struct live_maps_reader r;	/* r.read NULL: /proc/PID/maps is read */
	struct maps_paths *paths;
	unsigned long written, read;	/* maps texts: from records, from the file */
};

static void gone_set(struct live *l, pid_t pid, int is_gone)
{
	unsigned i;

	for (i = 0; i < l->ngone && l->gone[i] != pid; i++)
		;
	if (i < l->ngone && !is_gone)
		l->gone[i] = l->gone[--l->ngone];
	else if (i == l->ngone && is_gone && pid > 0 && l->ngone < GONE_MAX)
		l->gone[l->ngone++] = pid;
	else if (i == l->ngone && is_gone && pid > 0)	/* full: one forgotten costs reads */
		l->gone[l->gone_next++ % GONE_MAX] = pid;
}

static int is_gone(const struct live *l, pid_t pid)
{
	for (unsigned i = 0; i < l->ngone; i++)
		if (l->gone[i] == pid)
			return 1;
	return 0;
}

static ssize_t live_readv(void *ctx, pid_t pid, const struct iovec *local, unsigned long nlocal,
			  const struct iovec *remote, unsigned long nremote)
{
	struct live *l = ctx;
	ssize_t r;

	if (l->ngone && is_gone(l, pid)) {
		errno = ESRCH;
		return -1;
	}
	/* The system call itself: no libc or sanitizer wrapper in between. */
	r = syscall(SYS_process_vm_readv, pid, local, nlocal, remote, nremote, 0);
	/* No such process, or one without memory (in its exit, before the
	 * exit event is seen: the late samples of a process caught while it
	 * ends were several failing reads each): so it stays until the pid
	 * is probed anew. */
	if (r < 0 && errno == ESRCH)
		gone_set(l, pid, 1);
	return r;
}

/* A chroot's maps name its files with our path to its root in front:
 * name them as the target does (proc_root.h), as a container's are. */
static void own_names(const struct live *l, pid_t pid, char *text, size_t *len)
{
	char prefix[4096];

	if (l->root_ours && pid == l->root_ours)
		return;
	proc_root_prefix(pid, prefix, sizeof(prefix));
	*len = proc_root_strip(text, *len, prefix);
}

/* A file of at most max bytes, as it is. */
static char *read_path(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf;

	if (fd < 0)
		return NULL;
	buf = proc_read_fd(fd, 65536, max, len);
	close(fd);
	return buf;
}

/* /proc/PID/maps: written from the reader's records where it knows every
 * file's path, else read, and the records' paths learnt from it. */
static char *read_maps(struct live *l, const char *path, pid_t pid, size_t max, size_t *len)
{
	void *recs = l->r.read ? l->r.read(l->r.ctx, pid, len) : NULL;
	size_t rlen = recs ? *len : 0;
	char *text = recs ? maps_text_from_vmas(l->paths, recs, rlen, len) : NULL;

	if (text) {
		l->written++;
	} else if ((text = read_path(path, max, len))) {
		l->read++;
		if (recs)
			maps_paths_learn(l->paths, recs, rlen, text, *len);
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
		own_names(ctx, (pid_t)pid, text, len);
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

static struct live live_default = { .src = { .ops = &live_ops, .ctx = &live_default } };

const struct target_src *target_src_live(void)
{
	return &live_default.src;
}

struct target_src *target_src_live_new(const struct live_maps_reader *r)
{
	struct live *l = calloc(1, sizeof(*l));

	if (!l || !(l->paths = maps_paths_new())) {
		free(l);
		return NULL;
	}
	l->r = *r;
	l->src.ops = &live_ops;
	l->src.ctx = l;
	return &l->src;
}

void target_src_live_free(struct target_src *s)
{
	struct live *l = s ? s->ctx : NULL;

	if (!l || l == &live_default)
		return;
	maps_paths_free(l->paths);
	free(l);
}

void target_src_live_maps_counts(const struct target_src *s, unsigned long *written,
				 unsigned long *read)
{
	const struct live *l = target_src_is_live(s) ? s->ctx : NULL;

	*written = l ? l->written : 0;
	*read = l ? l->read : 0;
}

void target_src_live_gone(const struct target_src *s, pid_t pid, int is_gone)
{
	if (target_src_is_live(s))
		gone_set(s->ctx, pid, is_gone);
}

void target_src_live_root_ours(const struct target_src *s, pid_t pid)
{
	if (target_src_is_live(s))
		((struct live *)s->ctx)->root_ours = pid;
}

int target_src_is_live(const struct target_src *s)
{
	return s && s->ops == &live_ops;
}
