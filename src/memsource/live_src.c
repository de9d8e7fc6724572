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
#include "proc.h"
#include "proc_root.h"

/* Processes whose exit (or exec) the profiler has seen, or whose memory a
 * read found gone: a read fails as the kernel would, without asking it. Samples
 * taken just before an exit are still added after it, and each read of
 * their code objects and labels was a failing process_vm_readv (3.4 per
 * new process on a host starting one every 0.3 s). Failing here, below a
 * recording, keeps the recording as it was: the failure is recorded. */
#define GONE_MAX	128	/* targets' retired list, RETIRED_MAX, fits */
static pid_t gone[GONE_MAX];
static unsigned ngone, gone_next;

void target_src_live_gone(pid_t pid, int is_gone)
{
	unsigned i;

	for (i = 0; i < ngone && gone[i] != pid; i++)
		;
	if (i < ngone && !is_gone)
		gone[i] = gone[--ngone];
	else if (i == ngone && is_gone && pid > 0 && ngone < GONE_MAX)
		gone[ngone++] = pid;
	else if (i == ngone && is_gone && pid > 0)	/* full: one forgotten costs reads */
		gone[gone_next++ % GONE_MAX] = pid;
}

static int is_gone(pid_t pid)
{
	for (unsigned i = 0; i < ngone; i++)
		if (gone[i] == pid)
			return 1;
	return 0;
}

static ssize_t live_readv(void *ctx, pid_t pid, const struct iovec *local, unsigned long nlocal,
			  const struct iovec *remote, unsigned long nremote)
{
	ssize_t r;

	if (ngone && is_gone(pid)) {
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
		target_src_live_gone(pid, 1);
	return r;
}

/* The process whose root is known to be ours (target_src_live_root_ours),
 * or 0. */
static pid_t root_ours;

void target_src_live_root_ours(pid_t pid)
{
	root_ours = pid;
}

/* A chroot's maps name its files with our path to its root in front:
 * name them as the target does (proc_root.h), as a container's are. */
static void own_names(const char *path, char *text, size_t *len)
{
	char prefix[4096];
	unsigned pid;
	int n = 0;

	if (sscanf(path, "/proc/%u/maps%n", &pid, &n) != 1 || path[n] != '\0' ||
	    (root_ours && (pid_t)pid == root_ours))
		return;
	proc_root_prefix((pid_t)pid, prefix, sizeof(prefix));
	*len = proc_root_strip(text, *len, prefix);
}

static char *live_read_file(void *ctx, const char *path, size_t max, size_t *len)
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
	own_names(path, buf, len);
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
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
