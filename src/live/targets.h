/*
 * The set of processes being profiled: explicit PIDs, every Python process
 * of the host, a launched command, and optionally their descendants. A
 * process is (pid, start time): a reused PID is a new process.
 */
#ifndef TARGETS_H
#define TARGETS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pyversion.h"
#include "proc.h"

struct py_proc_event;

/* Also the size of the BPF maps by process (procs, unwind_procs): with
 * 2048 entries their bucket arrays (16 bytes each) are 32 KiB, small
 * enough for the kernel to kmalloc them (bpf_map_area_alloc) into its
 * direct map; larger ones are vmalloc'd, and a TLB miss on one of those
 * pages costs 0.1-0.2 us per sample at 99 Hz in a VM. */
#define TARGETS_MAX	2048
#define TARGETS_SLOTS	(2 * TARGETS_MAX)	/* pid index: a power of two, at most half full */
#define IGNORED_SLOTS	16384		/* non-Python processes remembered */
#define PENDING_MAX	256

/* Called when a target is added (event 1), has exited (0: stop sampling
 * it; samples already in flight are still attributed to it) and is
 * finally forgotten (-1, just before its memory is freed). */
typedef void (*target_cb)(void *ctx, const struct py_target *t, int event);

#define RETIRED_MAX 64		/* exited targets kept for late samples */
#define RETIRED_NS 1000000000LL	/* ... for at least this long (their last
				 * samples are drained by then) */

struct pending {
	pid_t pid;
	uint64_t start_time;
	int64_t until_ns;		/* give up after this */
	int64_t next_ns;		/* not tried before this */
	int64_t gap_ns;			/* ... after the last try */
	pid_t parent;			/* a fork of this target, not exec'd yet:
					 * copied from it when due; 0: probed */
	int forks_seen;			/* every fork since its exec is reported
					 * (PROC_F_FORKS_SEEN): no children to
					 * look for when it is attached */
	int root_ours;			/* its root is ours, as of its exec
					 * (PROC_F_ROOT_OURS) */
	int ev_ok;			/* ev is its stat, from its exec event:
					 * /proc/PID/stat is not read (its exit
					 * is reported: PROC_EXIT) */
	struct proc_stat ev;
	int probe_orphan;		/* a fork child whose parent was not a
					 * target yet: probed if the parent is
					 * not one when the child is due */
};

/* A target's fork child is attached (copied from its parent) this long
 * after the event, unless it exec'd first: a program that runs
 * subprocesses forks to exec at once, and copying and dropping each
 * child cost ~20 system calls. At 2 ms, half of a Python spawner's
 * children on a busy 2-CPU host were copied before their exec (the child
 * waits for a CPU): 20 ms. A child that stays a copy (multiprocessing's
 * fork start method) loses its first 20 ms, 2 samples at 99 Hz. */
#define FORK_WAIT_NS		20000000LL

/* A process that exec'd or mapped a libpython is tried this long after
 * (its loader maps the interpreter's libraries in a millisecond or two,
 * where the event comes as it starts), then after twice as long each
 * time, at most every PENDING_GAP_MAX_NS: a try that finds nothing reads
 * its maps, and at a tick of 100 ms a 0.15 s program was half over
 * before it was attached. */
#define PENDING_FIRST_NS	5000000LL
#define PENDING_GAP_MAX_NS	100000000LL

struct target_set {
	struct py_target *v[TARGETS_MAX];
	size_t n;
	uint16_t slot[TARGETS_SLOTS];	/* by pid hash: index in v + 1, 0 empty */
	int all;			/* every Python process of the host */
	int children;			/* descendants of targets too */
	pid_t root;			/* the launched command: its descendants
					 * are followed even if it is not Python */
	struct py_target *retired[RETIRED_MAX];	/* exited, oldest first */
	size_t nretired;
	size_t retired_old;		/* the first ones, retired before the last tick */
	int64_t last_forget_ns;		/* that tick */
	struct pending pending[PENDING_MAX];	/* not Python (yet): retried */
	size_t npending;
	uint64_t ignored[IGNORED_SLOTS];	/* hashes of (pid, start, comm) */
	size_t nignored;
	int64_t last_scan_ns;
	uint64_t added, exited, failed;	/* counters for the summary */
	uint64_t scans;			/* of /proc, reaping and looking */
	uint64_t tick_ns;		/* ns of a /proc/PID/stat start time tick
					 * if PROC_EXEC's start_ns is on its clock
					 * (targets_exec_clock); 0: not used */
	uint64_t found_by_event, found_by_scan;	/* targets added after the start */
	uint64_t tries_failed;		/* pending processes tried too early */
	int adopting;			/* in adopt_children(): no recursion */
	pid_t self;			/* this profiler's pid, never a target */
	uint64_t self_dev, self_ino;	/* its executable: another process
					 * running it is a profiler too */
	uint64_t self_map_dev, self_map_ino;	/* ... as maps lines name it */
	target_cb cb;
	void *ctx;
	const struct target_src *src;	/* where targets are read (live or recorded) */
	struct objcache *objs;		/* where their ELF files are opened */
};

void targets_init(struct target_set *ts, const struct target_src *src, struct objcache *objs,
		  int all, int children, target_cb cb, void *ctx);
void targets_free(struct target_set *ts);

/* The name every pyperf-pprof gives its own process (prctl PR_SET_NAME),
 * whatever its executable is called, so that another instance knows it. */
#define TARGETS_PROFILER_COMM	"pyperf-pprof"

/* Is pid a pyperf-pprof: this one, a process of the same executable, or
 * one named TARGETS_PROFILER_COMM? It maps interpreters' files to read
 * them, so it looks like Python, but is never profiled. */
int targets_is_profiler(const struct target_set *ts, pid_t pid);

/* Profiles pid from now on; errors are printed unless quiet. 0 on success. */
int targets_add(struct target_set *ts, pid_t pid, int quiet);

/* Keeps retrying pid until it runs Python or wait_ns passes (a launched
 * command that is not Python yet: a shell, an interpreter starting up). */
void targets_add_pending(struct target_set *ts, pid_t pid, int64_t now_ns, int64_t wait_ns);

/* Retries pending processes; forgets targets retired RETIRED_NS ago; at
 * most every scan_ns also reaps exited targets and, in system-wide or
 * children mode, looks for new processes in /proc (with process events,
 * a safety net). */
void targets_update(struct target_set *ts, int64_t now_ns, int64_t scan_ns);
/* When the next pending process is due to be tried; INT64_MAX if none. */
int64_t targets_next_try_ns(const struct target_set *ts);
/* Will targets_update scan or forget retired targets, now? */
int targets_scan_due(const struct target_set *ts, int64_t now_ns, int64_t scan_ns);

const struct py_target *targets_find(const struct target_set *ts, pid_t pid);

/* A process exec'd (e, a PROC_EXEC): a target that exec'd is a new
 * program (dropped, then retried); a new process worth watching is
 * retried for a while, since its interpreter's libraries are mapped only
 * after the exec. Only a file named python is (PROC_F_NAME_*, else
 * /proc/PID/exe is read); what else the event tells (PROC_F_FORKS_SEEN,
 * PROC_F_ROOT_OURS, its stat) spares reads of /proc at its attach. */
void targets_on_exec(struct target_set *ts, const struct py_proc_event *e, int64_t now_ns);

/* The profiler's own start as the BPF program reads a task's (PROC_EXEC's
 * start_ns; 0: unknown): if it gives /proc/self/stat's start time, exec
 * events give a new interpreter's, on a whole host (no time namespace
 * offset, a kernel with the field). */
void targets_exec_clock(struct target_set *ts, uint64_t own_start_ns);

/* A target, or a process waiting to be attached, forked (fork copies its
 * interpreter): profile the child, FORK_WAIT_NS from now unless it execs
 * first. */
void targets_on_fork(struct target_set *ts, pid_t pid, pid_t ppid, int64_t now_ns);

/* A target exited: stop sampling it (it is retired, for late samples). A
 * process waiting to be attached is not any more. */
void targets_on_exit(struct target_set *ts, pid_t pid);

/* A process mapped an interpreter library (an embedder, dlopen): one worth
 * watching is retried for a while, until its mapping is complete. */
void targets_on_map(struct target_set *ts, pid_t pid, int64_t now_ns);

#endif
