/* /proc parsing and cross-process reads. */
#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAPS_MAX_BYTES	(64u << 20)	/* a sane process has far less */
#define MAPS_MAX_LINES	1000000

static int parse_line(const char *line, size_t len, struct proc_map *pm)
{
	char buf[4096 + 256], perms[8] = "", path[4096] = "";
	unsigned long long start, end, off, ino;
	unsigned maj, min;
	int n = 0;

	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, line, len);
	buf[len] = '\0';
	if (sscanf(buf, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms,
		   &off, &maj, &min, &ino, &n) < 7 || end < start)
		return -1;
	if (n > 0 && (size_t)n <= len) {
		snprintf(path, sizeof(path), "%s", buf + n);
	}
	memset(pm, 0, sizeof(*pm));
	pm->start = start;
	pm->end = end;
	pm->offset = off;
	pm->dev_major = maj;
	pm->dev_minor = min;
	pm->inode = ino;
	memcpy(pm->perms, perms, 4);
	pm->path = strdup(path);
	return pm->path ? 0 : -2;
}

int proc_maps_parse(const char *text, size_t len, struct proc_maps *m)
{
	size_t cap = 0, pos = 0;

	m->v = NULL;
	m->n = 0;
	while (pos < len && m->n < MAPS_MAX_LINES) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos;
		struct proc_map pm;
		int r;

		if (m->n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct proc_map *nv = realloc(m->v, ncap * sizeof(*nv));

			if (!nv)
				goto oom;
			m->v = nv;
			cap = ncap;
		}
		r = parse_line(text + pos, ll, &pm);
		if (r == -2)
			goto oom;
		if (r == 0)
			m->v[m->n++] = pm;
		pos += ll + 1;
	}
	return 0;
oom:
	proc_maps_free(m);
	return -1;
}

static char *read_small_file(const char *path, size_t max, size_t *len)
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

int proc_maps_read(pid_t pid, struct proc_maps *m)
{
	char path[64];
	size_t len;
	char *text;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	text = read_small_file(path, MAPS_MAX_BYTES, &len);
	if (!text)
		return -1;
	r = proc_maps_parse(text, len, m);
	free(text);
	return r;
}

void proc_maps_free(struct proc_maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

const struct proc_map *proc_maps_find(const struct proc_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	/* /proc/PID/maps is sorted by address. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < m->v[mid].start)
			hi = mid;
		else if (addr >= m->v[mid].end)
			lo = mid + 1;
		else
			return &m->v[mid];
	}
	return NULL;
}

int proc_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t r;

	if (!len)
		return 0;
	if (!addr || addr + len < addr)
		return -1;
	r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return r == (ssize_t)len ? 0 : -1;
}

void proc_map_file(pid_t pid, const struct proc_map *m, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
		 m->start, m->end);
	if (access(buf, R_OK) == 0)
		return;
	snprintf(buf, len, "/proc/%d/root%s", (int)pid, m->path);
}

int proc_alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

uint64_t proc_start_time(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long long st = 0;
	const char *p;
	size_t len;
	char *text;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	text = read_small_file(path, 65536, &len);
	if (!text)
		return 0;
	snprintf(buf, sizeof(buf), "%.*s", (int)(len < 1023 ? len : 1023), text);
	free(text);
	/* comm may contain spaces and parentheses: fields start after the
	 * last ')'. start time is field 22, the 20th after it. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u"
			 " %*d %*d %*d %*d %*d %*d %llu", &st) != 1)
		return 0;
	return st;
}

int proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	size_t n;
	char *text;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	text = read_small_file(path, 4096, &n);
	if (!text)
		return -1;
	while (n && (text[n - 1] == '\n'))
		n--;
	snprintf(buf, len, "%.*s", (int)n, text);
	free(text);
	return 0;
}
