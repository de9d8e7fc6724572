/* /proc parsing: maps, stat, cmdline, cgroup, comm. */
#define _GNU_SOURCE
#include "proc.h"
#include "target_src.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAPS_MAX_BYTES	(64u << 20)	/* a sane process has far less */
#define MAPS_MAX_LINES	1000000
#define STAT_FIELDS	49		/* the last field of /proc/PID/stat parsed */
#define ARGS_MAX	4096		/* an argument area read from memory */

/* A number in base 16 or 10 at *p (before end), and *p past it; -1 if
 * there is no digit or it overflows 64 bits. */
static int num(const char **p, const char *end, unsigned base, unsigned long long *v)
{
	const char *q = *p;
	unsigned long long x = 0;

	for (; q < end; q++) {
		unsigned d;

		if (*q >= '0' && *q <= '9')
			d = (unsigned)(*q - '0');
		else if (base == 16 && (*q | 0x20) >= 'a' && (*q | 0x20) <= 'f')
			d = (unsigned)((*q | 0x20) - 'a' + 10);
		else
			break;
		if (x > (~0ull - d) / base)
			return -1;
		x = x * base + d;
	}
	if (q == *p)
		return -1;
	*v = x;
	*p = q;
	return 0;
}

/* Skips the one separator c at *p; -1 if it is not there. */
static int sep(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -1;
	(*p)++;
	return 0;
}

/* "start-end perms offset major:minor inode   path": by hand (sscanf,
 * per line of every maps read, was most of a new process's parse). */
static int parse_line(const char *line, size_t len, struct proc_map *pm)
{
	const char *p = line, *end = line + len, *perms;
	unsigned long long start, stop, off, maj, min, ino;
	size_t np;

	if (num(&p, end, 16, &start) || sep(&p, end, '-') || num(&p, end, 16, &stop) ||
	    sep(&p, end, ' ') || stop < start)
		return -1;
	for (perms = p; p < end && *p != ' '; p++)
		;
	np = (size_t)(p - perms);
	if (!np || np > 4 || sep(&p, end, ' ') || num(&p, end, 16, &off) ||
	    sep(&p, end, ' ') || num(&p, end, 16, &maj) || sep(&p, end, ':') ||
	    num(&p, end, 16, &min) || sep(&p, end, ' ') || num(&p, end, 10, &ino) ||
	    maj > UINT32_MAX || min > UINT32_MAX)
		return -1;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (end - p > 4095)
		end = p + 4095;
	memset(pm, 0, sizeof(*pm));
	pm->start = start;
	pm->end = stop;
	pm->offset = off;
	pm->dev_major = (uint32_t)maj;
	pm->dev_minor = (uint32_t)min;
	pm->inode = ino;
	memcpy(pm->perms, perms, np);
	pm->path = strndup(p, (size_t)(end - p));
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

char *proc_read_fd(int fd, size_t first, size_t max, size_t *len)
{
	size_t cap = first ? first : 4096, n = 0;
	char *buf = malloc(cap);

	while (buf) {
		ssize_t r;

		if (n == cap) {
			char *nb = cap < max ? realloc(buf, cap * 2) : NULL;

			if (cap >= max)
				break;
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
	if (buf)
		*len = n;
	return buf;
fail:
	free(buf);
	return NULL;
}

int proc_maps_read(const struct target_src *src, pid_t pid, struct proc_maps *m)
{
	char path[64];
	size_t len;
	char *text;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	text = target_read_file(src, path, MAPS_MAX_BYTES, &len);
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

/* The decimal field that starts at *p (a negative one reads 0), and *p
 * past it and the space after; -1 if there is none. (sscanf of the 20
 * fields was a new process's largest parsing cost: /proc/PID/stat is read
 * at every attach try and every reap.) */
static int stat_field(const char **p, const char *end, unsigned long long *v)
{
	int neg = *p < end && **p == '-';
	const char *q = *p + neg;

	if (num(&q, end, 10, v))
		return -1;
	if (neg)
		*v = 0;
	*p = q < end && *q == ' ' ? q + 1 : q;
	return 0;
}

int proc_stat_parse(const char *buf, struct proc_stat *ps)
{
	unsigned long long v[STAT_FIELDS - 3];
	const char *lp, *rp, *p, *end = buf + strlen(buf);
	size_t len;

	/* comm may contain spaces and parentheses: fields start after the
	 * last ')'. From field 4 (ppid) on they are numbers; num_threads
	 * is field 20, start time field 22. */
	lp = strchr(buf, '(');
	rp = strrchr(buf, ')');
	if (!lp || !rp || rp < lp || rp[1] != ' ' || !rp[2] || rp[3] != ' ')
		return -1;
	p = rp + 4;
	for (int i = 4; i <= 22; i++)
		if (stat_field(&p, end, &v[i - 4]))
			return -1;
	/* The argument area (fields 48 and 49, Linux 3.5 on) is optional:
	 * 0 when absent, and the kernel shows 0 to a reader it refuses. */
	ps->arg_start = ps->arg_end = 0;
	for (int i = 23; i <= STAT_FIELDS; i++) {
		if (stat_field(&p, end, &v[i - 4]))
			break;
		if (i == STAT_FIELDS) {
			ps->arg_start = v[48 - 4];
			ps->arg_end = v[49 - 4];
		}
	}
	len = (size_t)(rp - lp - 1);
	if (len >= sizeof(ps->comm))
		len = sizeof(ps->comm) - 1;
	memcpy(ps->comm, lp + 1, len);
	ps->comm[len] = '\0';
	ps->state = rp[2];
	ps->ppid = (int)v[4 - 4];
	ps->num_threads = (int)v[20 - 4];
	ps->start_time = v[22 - 4];
	return 0;
}

int proc_stat(pid_t pid, struct proc_stat *ps)
{
	char path[64], buf[1024];
	int fd, n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return proc_stat_parse(buf, ps);
}

uint64_t proc_start_time(pid_t pid)
{
	struct proc_stat ps;

	return proc_stat(pid, &ps) ? 0 : ps.start_time;
}

/* The n bytes of a command line as /proc/PID/cmdline gives them, into
 * buf: arguments are NUL-separated; shown space-separated. */
static void cmdline_format(char *text, size_t n, char *buf, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (text[i] == '\0' || text[i] == '\n')
			text[i] = ' ';
	while (n && text[n - 1] == ' ')
		n--;
	snprintf(buf, len, "%.*s", (int)n, text);
}

int proc_cmdline(const struct target_src *src, pid_t pid, char *buf, size_t len)
{
	char path[64];
	size_t n;
	char *text;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	text = target_read_file(src, path, 65536, &n);
	if (!text || !len) {
		free(text);
		return -1;
	}
	cmdline_format(text, n, buf, len);
	free(text);
	return 0;
}

/* The area holds what /proc/PID/cmdline would give if it lies in the
 * stack mapping of maps (so in the address space those maps describe: an
 * exec since the stat was read put it elsewhere) and ends with a NUL (else
 * setproctitle(3) wrote over it, which the file reads its own way). */
int proc_cmdline_stat(const struct target_src *src, pid_t pid, const struct proc_stat *ps,
		      const struct proc_maps *maps, char *buf, size_t len)
{
	const struct proc_map *m = ps ? proc_maps_find(maps, ps->arg_start) : NULL;
	size_t n = ps ? (size_t)(ps->arg_end - ps->arg_start) : 0;
	char text[ARGS_MAX];

	if (!m || strcmp(m->path, "[stack]") || ps->arg_end <= ps->arg_start ||
	    ps->arg_end > m->end || n > sizeof(text) || !len ||
	    target_read(src, pid, ps->arg_start, text, n) || text[n - 1] != '\0')
		return proc_cmdline(src, pid, buf, len);
	cmdline_format(text, n, buf, len);
	return 0;
}

/* A 64-hex-digit id in a cgroup path is the container id of Docker,
 * containerd and CRI-O ("docker-<id>.scope", "cri-containerd-<id>", ...). */
int proc_container_id_parse(const char *text, size_t n, char *buf, size_t len)
{
	size_t run = 0;

	for (size_t i = 0; i <= n; i++) {
		int hex = i < n && ((text[i] >= '0' && text[i] <= '9') ||
				    (text[i] >= 'a' && text[i] <= 'f'));

		if (hex) {
			run++;
			continue;
		}
		/* Exactly 64: longer hex runs are something else. */
		if (run == 64 && len > 12) {
			/* The short form (12 digits), as docker ps shows it. */
			snprintf(buf, len, "%.12s", text + i - 64);
			return 0;
		}
		run = 0;
	}
	return -1;
}

int proc_container_id(const struct target_src *src, pid_t pid, char *buf, size_t len)
{
	char path[64];
	size_t n;
	char *text;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	text = target_read_file(src, path, 65536, &n);
	if (!text)
		return -1;
	r = proc_container_id_parse(text, n, buf, len);
	free(text);
	return r;
}

int proc_comm(const struct target_src *src, pid_t pid, char *buf, size_t len)
{
	char path[64];
	size_t n;
	char *text;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	text = target_read_file(src, path, 4096, &n);
	if (!text)
		return -1;
	while (n && (text[n - 1] == '\n'))
		n--;
	snprintf(buf, len, "%.*s", (int)n, text);
	free(text);
	return 0;
}

int proc_parse_syscall(const char *text, uint64_t *sp, uint64_t *pc)
{
	const char *p = text;
	char *end;
	long long nr;

	if (strncmp(text, "running", 7) == 0)
		return 0;
	errno = 0;
	nr = strtoll(p, &end, 0);
	if (end == p || errno)
		return -1;
	p = end;
	/* "NR ARG1..ARG6 SP PC" in a system call, "-1 SP PC" blocked
	 * elsewhere in the kernel (a page fault); "running" also when
	 * runnable, waiting for a CPU. */
	for (int i = 0; nr != -1 && i < 6; i++, p = end)
		if (strtoull(p, &end, 0), end == p)
			return -1;
	*sp = strtoull(p, &end, 0);
	if (end == p)
		return -1;
	p = end;
	*pc = strtoull(p, &end, 0);
	return end == p ? -1 : 1;
}
