/* Target discovery and bookkeeping; see targets.h. */
#include "targets.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objcache.h"
#include "proc.h"
#include "pyperf.h"
#include "pythread.h"
#include "target_src.h"

#define ANCESTRY_MAX 16		/* parent links followed for --subprocesses */

/* Our executable as maps lines name it (device, inode): the mapping
 * that holds this code. */
static void own_exe_map(struct target_set *ts)
{
	size_t len;
	char *text = target_read_file(target_src_live(), "/proc/self/maps", 1u << 24, &len);
	const struct proc_map *m;
	struct proc_maps maps;

	if (text && proc_maps_parse(text, len, &maps) == 0) {
		m = proc_maps_find(&maps, (uint64_t)(uintptr_t)&own_exe_map);
		if (m && m->inode) {
			ts->self_map_dev = (uint64_t)m->dev_major << 32 | m->dev_minor;
			ts->self_map_ino = m->inode;
		}
		proc_maps_free(&maps);
	}
	free(text);
}

void targets_init(struct target_set *ts, const struct target_src *src, struct objcache *objs,
		  int all, int children, target_cb cb, void *ctx)
{
	struct stat st;

	memset(ts, 0, sizeof(*ts));
	ts->src = src;
	ts->objs = objs;
	ts->all = all;
	ts->children = children;
	ts->cb = cb;
	ts->ctx = ctx;
	ts->self = getpid();
	if (stat("/proc/self/exe", &st) == 0) {
		ts->self_dev = (uint64_t)st.st_dev;
		ts->self_ino = (uint64_t)st.st_ino;
	}
	own_exe_map(ts);
}

void targets_free(struct target_set *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		free(ts->v[i]);
	for (size_t i = 0; i < ts->nretired; i++)
		free(ts->retired[i]);
	ts->n = ts->nretired = 0;
	memset(ts->slot, 0, sizeof(ts->slot));
}

/* ---- pid index: every sample looks its target up ------------------------ */

static size_t pid_hash(pid_t pid)
{
	return ((uint32_t)pid * 2654435761u) & (TARGETS_SLOTS - 1);
}

/* The slot holding pid, or -1. The index is at most half full, so the
 * probe ends at an empty slot. */
static long slot_of(const struct target_set *ts, pid_t pid)
{
	for (size_t i = pid_hash(pid); ts->slot[i]; i = (i + 1) & (TARGETS_SLOTS - 1))
		if (ts->v[ts->slot[i] - 1]->pid == pid)
			return (long)i;
	return -1;
}

static void index_add(struct target_set *ts, pid_t pid, size_t vi)
{
	size_t i = pid_hash(pid);

	while (ts->slot[i])
		i = (i + 1) & (TARGETS_SLOTS - 1);
	ts->slot[i] = (uint16_t)(vi + 1);
}

/* Empties slot i, moving later entries of its probe run back so that no
 * lookup stops early (linear probing without tombstones). */
static void index_del(struct target_set *ts, size_t i)
{
	size_t j = i;

	for (;;) {
		size_t k;

		j = (j + 1) & (TARGETS_SLOTS - 1);
		if (!ts->slot[j])
			break;
		k = pid_hash(ts->v[ts->slot[j] - 1]->pid);
		/* j's entry may fill the hole unless its home lies in (i, j]. */
		if ((i < j) ? (k <= i || k > j) : (k <= i && k > j)) {
			ts->slot[i] = ts->slot[j];
			i = j;
		}
	}
	ts->slot[i] = 0;
}

static const struct py_target *find_live(const struct target_set *ts, pid_t pid)
{
	long i = slot_of(ts, pid);

	return i < 0 ? NULL : ts->v[ts->slot[i] - 1];
}

const struct py_target *targets_find(const struct target_set *ts, pid_t pid)
{
	const struct py_target *t = find_live(ts, pid);

	/* Samples taken just before a target exited are still in the ring
	 * buffer: they belong to the newest retired target of that pid. */
	for (size_t i = ts->nretired; !t && i-- > 0;)
		if (ts->retired[i]->pid == pid)
			t = ts->retired[i];
	return t;
}

/* Forgets the n oldest retired targets. */
static void forget_retired(struct target_set *ts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!find_live(ts, ts->retired[i]->pid))
			target_src_live_gone(ts->src, ts->retired[i]->pid, 0);
		if (ts->cb)
			ts->cb(ts->ctx, ts->retired[i], -1);
		free(ts->retired[i]);
	}
	memmove(ts->retired, ts->retired + n, (ts->nretired - n) * sizeof(ts->retired[0]));
	ts->nretired -= n;
	ts->retired_old = ts->retired_old > n ? ts->retired_old - n : 0;
}

/* Where the BPF program finds the GIL's holder; left 0 (unknown) when the
 * interpreter is not far enough initialised to tell. */
static void locate_gil(struct py_target *t)
{
	struct pythread_gil g;

	if (pythread_gil_locate(t, &g))
		return;
	t->bpf.gil_locked_addr = g.locked_addr;
	t->bpf.gil_holder_addr = g.holder_addr;
	t->bpf.gil_current_addr = g.current_addr;
	t->bpf.gil_enabled_addr = g.enabled_addr;
}

/* Three marks, cheapest first: our own pid; the name every instance
 * gives itself (a renamed executable or another build of it, from this
 * version on); the same executable file (an instance not yet renamed, or
 * an older one: its name is its file's). The name alone could be taken
 * by any program; one that does is not profiled. */
/* is_profiler() by pid and name only (exe 0), or also by executable
 * file (exe 1). */
static int is_profiler(const struct target_set *ts, pid_t pid, const struct proc_stat *ps,
		       int exe)
{
	struct stat st;
	char link[64];

	if (pid == ts->self)
		return 1;
	if (ps && !strcmp(ps->comm, TARGETS_PROFILER_COMM))
		return 1;
	if (!exe)
		return 0;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	return ts->self_ino && stat(link, &st) == 0 && (uint64_t)st.st_dev == ts->self_dev &&
	       (uint64_t)st.st_ino == ts->self_ino;
}

/* The third mark without a system call, once pid's maps are read (the
 * probe's, in the object layer): does it run our executable's code? A
 * profiler maps other programs' files only to read them, never
 * executable. */
static int runs_our_exe(const struct target_set *ts, pid_t pid)
{
	const struct oc_proc *p;

	if (!ts->self_map_ino || !ts->objs || !(p = objcache_proc(ts->objs, ts->src, pid)))
		return 0;
	for (size_t i = 0; i < p->maps.n; i++) {
		const struct proc_map *m = &p->maps.v[i];

		if (m->perms[2] == 'x' && m->inode == ts->self_map_ino &&
		    ((uint64_t)m->dev_major << 32 | m->dev_minor) == ts->self_map_dev)
			return 1;
	}
	return 0;
}

int targets_is_profiler(const struct target_set *ts, pid_t pid)
{
	struct proc_stat ps;

	return is_profiler(ts, pid, proc_stat(pid, &ps) == 0 ? &ps : NULL, 1);
}

#define ADOPT_THREADS	256	/* threads of a new target whose children are read */

/* Adds the pids listed in a /proc/PID/task/TID/children file. */
static void adopt_listed(struct target_set *ts, const char *path)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *q = buf, *end; *q; q = end) {
		long child = strtol(q, &end, 10);

		if (end == q)
			break;
		if (child > 0 && !find_live(ts, (pid_t)child) &&
		    targets_add(ts, (pid_t)child, 1) == 0)
			ts->found_by_event++;
	}
}

/* Children a process forked before it became a target (while it waited
 * to be attached): the BPF program reports forks of targets only, and a
 * child that never execs (multiprocessing's fork start method) would
 * wait for the safety-net scan. Read from /proc/PID/task/TID/children;
 * direct children only, at most ADOPT_THREADS threads' lists. A process
 * of one thread (nthreads 1, from its stat a moment ago; 0: unknown) has
 * one list: read without listing the task directory (a new process was
 * 8 system calls here, 3 now). */
static void adopt_children(struct target_set *ts, pid_t pid, int nthreads)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	ts->adopting = 1;
	if (nthreads == 1) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
		adopt_listed(ts, path);
		ts->adopting = 0;
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	while (dir && (d = readdir(dir)) && n < ADOPT_THREADS) {
		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		n++;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)pid, d->d_name);
		adopt_listed(ts, path);
	}
	if (dir)
		closedir(dir);
	ts->adopting = 0;
}

/* t becomes a target; nthreads as adopt_children(); adopt 0: the
 * children it made so far are known otherwise (its forks were reported,
 * PROC_F_FORKS_SEEN). 0. */
static int attach(struct target_set *ts, struct py_target *t, int nthreads, int adopt)
{
	index_add(ts, t->pid, ts->n);
	ts->v[ts->n++] = t;
	ts->added++;
	if (ts->cb)
		ts->cb(ts->ctx, t, 1);
	if ((ts->all || ts->children) && !ts->adopting && adopt)
		adopt_children(ts, t->pid, nthreads);
	return 0;
}

/* add()'s how: */
#define ADD_NO_ADOPT	1u	/* its forks were reported: attach()'s adopt 0 */
#define ADD_ROOT_OURS	2u	/* its root is ours (PROC_F_ROOT_OURS) */

/* targets_add() with pid's stat as read a moment ago (NULL: read here). */
static int add(struct target_set *ts, pid_t pid, int quiet, const struct proc_stat *known,
	       unsigned how)
{
	struct proc_stat ps;
	struct py_target *t;
	char err[512];
	int r;

	if (find_live(ts, pid))
		return 0;
	target_src_live_gone(ts->src, pid, 0);	/* a new process, or the old one exec'd */
	if (!known && proc_stat(pid, &ps) == 0)
		known = &ps;
	/* Quiet (discovery), the executable is checked after the probe, by
	 * its maps: a stat of /proc/PID/exe fewer per new process. */
	if (is_profiler(ts, pid, known, !quiet)) {
		if (!quiet)
			fprintf(stderr, "pyperf-pprof: pid %d not profiled: it is %s\n", (int)pid,
				pid == ts->self ? "this profiler" : "a pyperf-pprof");
		return -1;
	}
	if (ts->n == TARGETS_MAX) {
		if (!quiet)
			fprintf(stderr, "pyperf-pprof: pid %d not profiled: already %d processes\n",
				(int)pid, TARGETS_MAX);
		return -1;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -1;
	if (how & ADD_ROOT_OURS)
		target_src_live_root_ours(ts->src, pid);
	r = pyversion_detect_stat(ts->src, ts->objs, pid, known,
				  (ts->all || quiet ? PYV_NAMED : 0) |
				  (how & ADD_ROOT_OURS ? PYV_ROOT_OURS : 0), t, err, sizeof(err));
	target_src_live_root_ours(ts->src, 0);
	if (r) {
		if (!quiet)
			fprintf(stderr, "pyperf-pprof: %s\n", err);
		free(t);
		ts->failed++;
		return -1;
	}
	if (quiet && runs_our_exe(ts, pid)) {
		free(t);
		return -1;
	}
	locate_gil(t);
	return attach(ts, t, known ? known->num_threads : 0, !(how & ADD_NO_ADOPT));
}

int targets_add(struct target_set *ts, pid_t pid, int quiet)
{
	return add(ts, pid, quiet, NULL, 0);
}

/* A target's child made by fork: a copy of its parent, the same files
 * mapped at the same addresses, so the same interpreter, layout, runtime
 * and GIL addresses. Its target is the parent's with its own pid and
 * start time: no probe (a Python program that runs subprocesses forks
 * before every exec, and each probe cost as much as a new process's). */
static int add_forked(struct target_set *ts, pid_t pid, const struct py_target *parent)
{
	struct proc_stat ps;
	struct py_target *t;

	if (find_live(ts, pid))
		return 0;
	if (ts->n == TARGETS_MAX || proc_stat(pid, &ps) || !ps.start_time ||
	    !(t = malloc(sizeof(*t))))
		return -1;	/* gone already, or no room */
	target_src_live_gone(ts->src, pid, 0);
	*t = *parent;
	t->pid = pid;
	t->forked_from = parent->pid;
	t->start_time = ps.start_time;
	return attach(ts, t, ps.num_threads, 1);
}

/* pid is (again) to be probed until wait_ns from now. exec_flags: its
 * exec event's PROC_F_* (for struct pending's forks_seen and root_ours),
 * or -1: not an exec, those as they were (0 for a new entry). start: its start time if the caller read it, which the tries
 * check the process by; 0:
 * unknown, learnt at the first try (a read of /proc/PID/stat fewer per new
 * process: a pid is reused only after the whole pid space, not within the
 * few ms before that try). A process that exec'd keeps its start time, so
 * a pending entry's stays when its interpreter's library is mapped (the
 * second event of most new processes). */
static void pending_add(struct target_set *ts, pid_t pid, int64_t now_ns, int64_t wait_ns,
			long exec_flags, uint64_t start, const struct proc_stat *ev)
{
	struct pending *p = NULL;

	for (size_t i = 0; i < ts->npending && !p; i++)
		if (ts->pending[i].pid == pid)	/* exec, then its libpython mapped */
			p = &ts->pending[i];
	if (!p && ts->npending == PENDING_MAX)
		return;
	if (!p) {
		p = &ts->pending[ts->npending++];
		*p = (struct pending){ .pid = pid, .until_ns = now_ns + wait_ns };
	}
	if (p->parent)		/* exec'd: another program, to be probed */
		p->start_time = 0;
	p->parent = 0;
	if (exec_flags >= 0) {
		p->forks_seen = (exec_flags & PROC_F_FORKS_SEEN) != 0;
		p->root_ours = (exec_flags & PROC_F_ROOT_OURS) != 0;
		p->ev_ok = ev != NULL;
		if (ev)
			p->ev = *ev;
	}
	if (start)
		p->start_time = start;
	if (p->until_ns < now_ns + wait_ns)
		p->until_ns = now_ns + wait_ns;
	p->next_ns = now_ns + PENDING_FIRST_NS;
	p->gap_ns = PENDING_FIRST_NS;
}

void targets_add_pending(struct target_set *ts, pid_t pid, int64_t now_ns, int64_t wait_ns)
{
	pending_add(ts, pid, now_ns, wait_ns, -1, proc_start_time(pid), NULL);
}

int64_t targets_next_try_ns(const struct target_set *ts)
{
	int64_t next = INT64_MAX;

	for (size_t i = 0; i < ts->npending; i++)
		if (ts->pending[i].next_ns < next)
			next = ts->pending[i].next_ns;
	return next;
}

static uint64_t ignore_key(pid_t pid, const struct proc_stat *ps)
{
	uint64_t h = (uint64_t)pid * 0x9e3779b97f4a7c15ULL ^ ps->start_time;

	/* exec keeps pid and start time but changes comm: a shell that
	 * execs python must be looked at again. */
	for (const char *c = ps->comm; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	return h | 1;
}

/* Remembers a process that is not Python; the table is cleared when full,
 * which only costs re-probing. */
static int ignored(struct target_set *ts, uint64_t key, int insert)
{
	size_t i = key % IGNORED_SLOTS;

	for (size_t k = 0; k < IGNORED_SLOTS; k++, i = (i + 1) % IGNORED_SLOTS) {
		if (ts->ignored[i] == key)
			return 1;
		if (!ts->ignored[i])
			break;
	}
	if (!insert)
		return 0;
	if (ts->nignored >= IGNORED_SLOTS / 2) {
		memset(ts->ignored, 0, sizeof(ts->ignored));
		ts->nignored = 0;
		i = key % IGNORED_SLOTS;
	}
	ts->ignored[i] = key;
	ts->nignored++;
	return 0;
}

static int descends_from_target(const struct target_set *ts, int ppid)
{
	for (int depth = 0; depth < ANCESTRY_MAX && ppid > 1; depth++) {
		struct proc_stat ps;

		if (find_live(ts, ppid) || (ts->root && ppid == ts->root))
			return 1;
		if (proc_stat(ppid, &ps))
			return 0;
		ppid = ps.ppid;
	}
	return 0;
}

static void drop(struct target_set *ts, size_t i);

static void reap(struct target_set *ts)
{
	for (size_t i = 0; i < ts->n;) {
		if (proc_start_time(ts->v[i]->pid) == ts->v[i]->start_time)
			i++;
		else
			drop(ts, i);
	}
}

/* The entry of pid waiting to be probed (not a fork child), or NULL. */
static struct pending *pending_probe(struct target_set *ts, pid_t pid)
{
	for (size_t i = 0; i < ts->npending; i++)
		if (ts->pending[i].pid == pid && !ts->pending[i].parent)
			return &ts->pending[i];
	return NULL;
}

/* A fork child p's copy of its parent, if both are still there. 0 when
 * attached; 1 when p became an entry to probe: its parent, forked before
 * it was attached, is not (yet) a target, and the child may be Python
 * all the same (the parent's children are not looked for when it is
 * attached: PROC_F_FORKS_SEEN). */
static int fork_due(struct target_set *ts, struct pending *p, int64_t now_ns)
{
	const struct py_target *parent = find_live(ts, p->parent);

	if (parent)
		return add_forked(ts, p->pid, parent);
	if (!p->probe_orphan)
		return -1;
	*p = (struct pending){ .pid = p->pid, .until_ns = now_ns + 2 * 1000000000LL,
			       .next_ns = now_ns, .gap_ns = PENDING_FIRST_NS };
	return 1;
}

/* Removes pid's entry if it is a fork child waiting to be copied. */
static void cancel_fork(struct target_set *ts, pid_t pid)
{
	for (size_t i = 0; i < ts->npending; i++)
		if (ts->pending[i].pid == pid && ts->pending[i].parent) {
			ts->pending[i] = ts->pending[--ts->npending];
			return;
		}
}

/* pid exec'd: if it waits to be probed, its start time is learnt again
 * at the next try (an entry left by a process that had the pid before
 * would refuse it), as the next event of the same program keeps it. */
static void exec_pending(struct target_set *ts, pid_t pid)
{
	for (size_t i = 0; i < ts->npending; i++)
		if (ts->pending[i].pid == pid && !ts->pending[i].parent) {
			/* Nor is what its exec told true any more (another
			 * program's exec tells its own). */
			ts->pending[i].start_time = 0;
			ts->pending[i].forks_seen = ts->pending[i].root_ours = 0;
			ts->pending[i].ev_ok = 0;
			return;
		}
}

static void retry_pending(struct target_set *ts, int64_t now_ns)
{
	for (size_t i = 0; i < ts->npending;) {
		struct pending *p = &ts->pending[i];
		struct proc_stat ps;
		int gone;

		if (now_ns < p->next_ns) {
			i++;
			continue;
		}
		if (p->parent) {	/* a fork child that did not exec */
			int r = fork_due(ts, p, now_ns);

			ts->found_by_event += r == 0;
			if (r != 1)
				*p = ts->pending[--ts->npending];
			continue;
		}
		/* One read of its stat serves the check and the probe; none
		 * when its exec told it (its exit would have ended this). */
		if (p->ev_ok)
			ps = p->ev;
		gone = (!p->ev_ok && (proc_stat(p->pid, &ps) || proc_stat_gone(&ps))) ||
		       (p->start_time && ps.start_time != p->start_time) || now_ns > p->until_ns;
		if (!gone)
			p->start_time = ps.start_time;
		if (gone || add(ts, p->pid, 1, &ps, (p->forks_seen ? ADD_NO_ADOPT : 0) |
						     (p->root_ours ? ADD_ROOT_OURS : 0)) == 0) {
			ts->found_by_event += !gone;
			*p = ts->pending[--ts->npending];
			continue;
		}
		ts->tries_failed++;
		p->gap_ns = p->gap_ns * 2 < PENDING_GAP_MAX_NS ? p->gap_ns * 2 : PENDING_GAP_MAX_NS;
		p->next_ns = now_ns + p->gap_ns;
		i++;
	}
}

static void scan_proc(struct target_set *ts)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	while (d && (de = readdir(d))) {
		struct proc_stat ps;
		pid_t pid;
		uint64_t key;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = (pid_t)atoi(de->d_name);
		/* A zombie has no memory to probe (a churning host's exited
		 * processes, not yet waited for, were a maps read each). */
		if (find_live(ts, pid) || proc_stat(pid, &ps) || proc_stat_gone(&ps))
			continue;
		key = ignore_key(pid, &ps);
		if (ignored(ts, key, 0))
			continue;
		if (!ts->all && !descends_from_target(ts, ps.ppid))
			continue;	/* not ours; its parent may become ours later */
		if (add(ts, pid, 1, &ps, 0))
			ignored(ts, key, 1);
		else
			ts->found_by_scan++;
	}
	if (d)
		closedir(d);
}

static int forget_due(const struct target_set *ts, int64_t now_ns)
{
	return ts->nretired && now_ns - ts->last_forget_ns >= RETIRED_NS;
}

int targets_scan_due(const struct target_set *ts, int64_t now_ns, int64_t scan_ns)
{
	return now_ns - ts->last_scan_ns >= scan_ns || forget_due(ts, now_ns);
}

void targets_update(struct target_set *ts, int64_t now_ns, int64_t scan_ns)
{
	retry_pending(ts, now_ns);
	if (forget_due(ts, now_ns)) {
		/* Those retired before the previous tick have had their last
		 * samples drained by now. */
		forget_retired(ts, ts->retired_old);
		ts->retired_old = ts->nretired;
		ts->last_forget_ns = now_ns;
	}
	if (now_ns - ts->last_scan_ns < scan_ns)
		return;
	ts->last_scan_ns = now_ns;
	ts->scans++;
	reap(ts);
	if (ts->all || ts->children)
		scan_proc(ts);
}

static int exe_named_python(pid_t pid)
{
	char link[64], exe[512];
	ssize_t n;
	const char *base;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	base = strrchr(exe, '/');
	return strstr(base ? base + 1 : exe, "python") != NULL;
}

static void drop(struct target_set *ts, size_t i)
{
	struct py_target *t = ts->v[i];

	if (ts->cb)
		ts->cb(ts->ctx, t, 0);
	if (ts->nretired == RETIRED_MAX)
		forget_retired(ts, 1);
	ts->retired[ts->nretired++] = t;
	/* Exited, reused or exec'd: what its late samples would read is
	 * gone (or another program's). */
	target_src_live_gone(ts->src, t->pid, 1);
	index_del(ts, (size_t)slot_of(ts, t->pid));
	ts->v[i] = ts->v[--ts->n];
	if (i < ts->n)		/* the last target moved to i */
		ts->slot[slot_of(ts, ts->v[i]->pid)] = (uint16_t)(i + 1);
	ts->exited++;
}

static int wanted(const struct target_set *ts, pid_t pid, uint64_t *start);

void targets_exec_clock(struct target_set *ts, uint64_t own_start_ns)
{
	long hz = sysconf(_SC_CLK_TCK);
	struct proc_stat ps;

	ts->tick_ns = 0;
	if (own_start_ns && hz > 0 && 1000000000L % hz == 0 && proc_stat(getpid(), &ps) == 0 &&
	    own_start_ns / (uint64_t)(1000000000L / hz) == ps.start_time)
		ts->tick_ns = (uint64_t)(1000000000L / hz);
}

/* What /proc/PID/stat would say of e's process, from e, into ps; NULL if
 * e does not tell (not a python's exec, a clock not checked, its exit
 * not reported). */
static const struct proc_stat *exec_stat(const struct target_set *ts,
					 const struct py_proc_event *e, struct proc_stat *ps)
{
	if (!ts->all || !ts->tick_ns || !e->start_ns || !(e->flags & PROC_F_FORKS_SEEN))
		return NULL;
	*ps = (struct proc_stat){ .num_threads = 1, .state = 'R',
				  .start_time = e->start_ns / ts->tick_ns,
				  .arg_start = e->arg_start, .arg_end = e->arg_end };
	memcpy(ps->comm, e->comm, sizeof(ps->comm));
	ps->comm[sizeof(ps->comm) - 1] = '\0';
	return ps;
}

void targets_on_exec(struct target_set *ts, const struct py_proc_event *e, int64_t now_ns)
{
	pid_t pid = (pid_t)e->pid;
	long i = slot_of(ts, pid);
	int named = !(e->flags & PROC_F_NAME_READ) ? -1 : (e->flags & PROC_F_NAME_PYTHON) != 0;
	struct proc_stat ev;
	uint64_t start;

	cancel_fork(ts, pid);	/* not a copy of its parent any more */
	exec_pending(ts, pid);
	if (i >= 0)
		drop(ts, ts->slot[i] - 1);
	if (!wanted(ts, pid, &start))
		return;
	/* Retrying every exec of a busy host would cost more than it finds:
	 * only interpreters named python are retried; an embedding
	 * application is found when it maps its libpython (PROC_MAP), one
	 * linked statically under another name by the safety-net scan. */
	if (named < 0 ? !exe_named_python(pid) : !named)
		return;
	pending_add(ts, pid, now_ns, 2 * 1000000000LL, (long)e->flags,
		    start ? start : e->start_ns && ts->tick_ns ? e->start_ns / ts->tick_ns : 0,
		    exec_stat(ts, e, &ev));
}

/* Is a new process pid, or one that changed (exec, a library mapped),
 * one to look at? *start: its start time if read on the way, else 0. */
static int wanted(const struct target_set *ts, pid_t pid, uint64_t *start)
{
	struct proc_stat ps;

	*start = 0;
	if (ts->all)
		return 1;
	if (!ts->children || proc_stat(pid, &ps))
		return 0;
	*start = ps.start_time;
	return descends_from_target(ts, ps.ppid);
}

void targets_on_fork(struct target_set *ts, pid_t pid, pid_t ppid, int64_t now_ns)
{
	/* multiprocessing's fork start method: a copy that never execs.
	 * A parent still waiting to be attached (its forks are reported
	 * from its exec on) is most likely attached by the child's turn. */
	int orphan = !find_live(ts, ppid);

	if (!(ts->all || ts->children) || (orphan && !pending_probe(ts, ppid)) ||
	    find_live(ts, pid) || ts->npending == PENDING_MAX)
		return;
	cancel_fork(ts, pid);
	ts->pending[ts->npending++] = (struct pending){
		.pid = pid, .parent = ppid, .next_ns = now_ns + FORK_WAIT_NS,
		.until_ns = now_ns + FORK_WAIT_NS, .probe_orphan = orphan,
	};
}

void targets_on_exit(struct target_set *ts, pid_t pid)
{
	long i = slot_of(ts, pid);
	struct pending *p = pending_probe(ts, pid);

	if (p)
		*p = ts->pending[--ts->npending];

	if (i >= 0)
		drop(ts, ts->slot[i] - 1);
}

void targets_on_map(struct target_set *ts, pid_t pid, int64_t now_ns)
{
	/* The library is being mapped as we hear of it: retried shortly. */
	uint64_t start;

	if (!find_live(ts, pid) && wanted(ts, pid, &start))
		pending_add(ts, pid, now_ns, 2 * 1000000000LL, -1, start, NULL);
}
