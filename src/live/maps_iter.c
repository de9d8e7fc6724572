/* A process's mappings from the BPF task_vma iterator. */
#include "maps_iter.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "maps_iter.skel.h"
#include "proc.h"
#include "pyperf.h"

#define READ_FIRST	(16u << 10)	/* a Python process's records: ~6 KiB */
#define READ_MAX	(64u << 20)	/* as /proc/PID/maps is read: MAPS_MAX_BYTES */

struct maps_iter {
	struct maps_iter_bpf *skel;
	unsigned long ok, failed;
};

struct maps_iter *maps_iter_open(int verbose)
{
	struct maps_iter *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->skel = maps_iter_bpf__open_and_load();
	if (!m->skel) {
		if (verbose)
			fprintf(stderr, "pyperf-pprof: mappings are read from /proc/PID/maps: "
				"the task_vma iterator did not load (%s)\n", strerror(errno));
		free(m);
		return NULL;
	}
	return m;
}

void maps_iter_close(struct maps_iter *m)
{
	if (!m)
		return;
	maps_iter_bpf__destroy(m->skel);
	free(m);
}

void *maps_iter_read(void *ctx, pid_t pid, size_t *len)
{
	struct maps_iter *m = ctx;
	union bpf_iter_link_info info = { .task.pid = (__u32)pid };
	LIBBPF_OPTS(bpf_link_create_opts, o, .iter_info = &info, .iter_info_len = sizeof(info));
	/* The system call itself: bpf_program__attach_iter looks the
	 * program's BTF up again for each link. */
	int link = bpf_link_create(bpf_program__fd(m->skel->progs.py_maps), 0, BPF_TRACE_ITER, &o);
	void *buf = NULL;
	int fd;

	if (link < 0) {
		m->failed++;
		return NULL;
	}
	fd = bpf_iter_create(link);
	close(link);		/* the iterator holds what it needs */
	if (fd >= 0) {
		buf = proc_read_fd(fd, READ_FIRST, READ_MAX, len);
		close(fd);
	}
	if (buf)
		m->ok++;
	else
		m->failed++;
	return buf;
}

void maps_iter_counts(const struct maps_iter *m, unsigned long *ok, unsigned long *failed)
{
	*ok = m ? m->ok : 0;
	*failed = m ? m->failed : 0;
}
