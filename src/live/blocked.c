/* Records for the threads of a target that are off the CPU; see blocked.h. */
#define _GNU_SOURCE
#include "blocked.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"
#include "pywalk.h"
#include "target_src.h"

/* A small /proc file of thread tid of t, NUL-terminated, or NULL. */
static char *task_file(const struct py_target *t, long tid, const char *name)
{
	char path[96];
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/task/%ld/%s", (int)t->pid, tid, name);
	return target_read_file(t->src, path, 4096, &len);
}

/* The thread's tid as the target sees it (the last NSpid), else tid. */
static uint32_t ns_tid(const struct py_target *t, long tid)
{
	char *st = task_file(t, tid, "status"), *l, *end;
	unsigned long v = (unsigned long)tid;

	l = st ? strstr(st, "\nNSpid:") : NULL;
	for (l = l ? l + 7 : NULL; l; l = end) {
		unsigned long x = strtoul(l, &end, 10);

		if (end == l)
			break;
		v = x;
	}
	free(st);
	return (uint32_t)v;
}

/* Up to max bytes of stack from sp into dst, never past its mapping; a
 * page that cannot be read is left zeroed (BPF's copy_user_stack does the
 * same). Returns the bytes copied; 0 if sp's own page is unreadable. */
static uint32_t copy_stack(const struct py_target *t, const struct proc_maps *maps, uint64_t sp,
			   uint8_t *dst, uint32_t max)
{
	const struct proc_map *m = proc_maps_find(maps, sp);
	uint64_t len, off, first;

	if (!m || m->end <= sp)
		return 0;
	len = m->end - sp < max ? m->end - sp : max;
	if (!target_read(t->src, t->pid, sp, dst, len))
		return (uint32_t)len;
	first = 4096 - (sp & 4095);
	first = first < len ? first : len;
	if (target_read(t->src, t->pid, sp, dst, first))
		return 0;
	for (off = first; off < len; off += 4096) {
		uint64_t chunk = len - off > 4096 ? 4096 : len - off;

		if (target_read(t->src, t->pid, sp + off, dst + off, chunk))
			memset(dst + off, 0, chunk);
	}
	return (uint32_t)len;
}

/* The record of thread tid into s; its size, 0 if the thread is running
 * or gone. */
static size_t thread_record(const struct py_target *t, const struct proc_maps *maps, long tid,
			    uint32_t stack_bytes, uint64_t time_ns, struct py_sample *s)
{
	char *text = task_file(t, tid, "syscall"), *comm;
	uint64_t sp = 0, pc = 0;
	size_t off, na;
	int in_kernel = text ? proc_parse_syscall(text, &sp, &pc) : -1;

	free(text);
	if (in_kernel != 1)
		return 0;
	memset(&s->h, 0, sizeof(s->h));
	s->h.pid = (uint32_t)t->pid;
	s->h.tid = (uint32_t)tid;
	s->h.time_ns = time_ns;
	/* Off the CPU in the kernel, as a switch-out record is. */
	s->h.flags = SAMPLE_F_OFFCPU | SAMPLE_F_KERNEL;
	if ((comm = task_file(t, tid, "comm"))) {
		comm[strcspn(comm, "\n")] = '\0';
		memcpy(s->h.comm, comm, strnlen(comm, sizeof(s->h.comm)));
		free(comm);
	}
	pywalk_thread(t, ns_tid(t, tid), s);
	off = PY_SAMPLE_STACK_OFF(s->h.nframes);
	if (!stack_bytes)
		return off;
	s->h.regs[PYREG_SP] = sp;
	s->h.regs[PYREG_IP] = pc;
	s->h.stack_len = copy_stack(t, maps, sp, (uint8_t *)s + off,
				    stack_bytes < PYPERF_MAX_STACK ? stack_bytes : PYPERF_MAX_STACK);
	if (!s->h.stack_len)
		s->h.flags |= SAMPLE_F_STACK_ERR;
	off += s->h.stack_len;
	/* The anchors follow, for the merge by address (bpf/pyperf.h). */
	na = s->na < PY_ANCHORS_MAX - 1 ? s->na : PY_ANCHORS_MAX - 1;
	if (s->h.stack_len && (s->h.flags & SAMPLE_F_ANCHORED) && na &&
	    off + na * 8 <= offsetof(struct py_sample, anchors)) {
		memmove((uint8_t *)s + off, s->anchors, na * 8);
		s->h.nanchors = (uint8_t)na;
		off += na * 8;
	}
	return off;
}

int blocked_snapshot(const struct py_target *t, uint32_t stack_bytes, int gil_only,
		     uint64_t time_ns, blocked_emit_fn emit, void *ctx)
{
	struct proc_maps maps = { 0 };
	struct py_sample *s;
	struct dirent *e;
	char dir[64];
	DIR *d;
	int r = 0, n = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)t->pid);
	if (!(d = opendir(dir)))
		return 0;	/* gone: nothing waits */
	s = malloc(sizeof(*s));
	if (!s || (stack_bytes && proc_maps_read(t->src, t->pid, &maps) < 0)) {
		free(s);
		closedir(d);
		return s ? 0 : -1;	/* maps unreadable: gone too */
	}
	while (!r && n < PYPERF_MAX_THREADS && (e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		size_t size;

		if (end == e->d_name || *end || tid <= 0)
			continue;
		n++;
		size = thread_record(t, &maps, tid, stack_bytes, time_ns, s);
		if (size && (!gil_only || (s->h.flags & SAMPLE_F_GIL_HELD)))
			r = emit(ctx, t, s, size);
	}
	closedir(d);
	proc_maps_free(&maps);
	free(s);
	return r;
}
