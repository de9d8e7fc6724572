/*
 * The BPF side of a live session: load the program with the session's
 * settings, keep its table of target processes, open one perf event per
 * CPU (and sched_switch, exec and fork where needed), read its counters,
 * and detach. Nothing here reads a ring-buffer record.
 */
#ifndef BPF_ATTACH_H
#define BPF_ATTACH_H

#include <stdint.h>

#include "cli.h"
#include "pyperf.h"
#include "targets.h"

struct pyperf_bpf;
struct bpf_link;

struct bpf_attach {
	struct pyperf_bpf *skel;
	struct py_check *checks;	/* code_checks, mapped; NULL until asked */
	struct bpf_link **links;	/* one per CPU's perf event */
	int *event_fds;
	int nevents;
	struct bpf_link *exec_link, *fork_link, *exit_link, *mmap_link, *switch_link;
	int hw_cycles;			/* sampling hardware cycles, not time */
	int task_srcs_given;		/* bpf_attach_task_src() was called: an
					 * exit deletes the pid's entry (else
					 * there is none: a system call saved
					 * per exit of a host without asyncio) */
};

/* libbpf's messages: warnings with -v, debug with -vv. */
void bpf_attach_log_level(int verbose);

/* Loads the program for cfg and registers the targets of ts. -1 after
 * printing why. */
int bpf_attach_load(struct bpf_attach *a, const struct config *cfg, const struct target_set *ts);

/* Opens the perf events and attaches the programs cfg needs. scan_ms is
 * how often /proc is scanned when exec and fork cannot be watched. -1
 * after printing why. */
int bpf_attach_events(struct bpf_attach *a, const struct config *cfg, long scan_ms);

/* A target came (add) or went: the BPF table follows. */
void bpf_attach_target(struct bpf_attach *a, const struct py_target *t, int add);

/* Where the program finds process pid's running asyncio tasks (struct
 * py_task_src, from the pipeline). */
void bpf_attach_task_src(struct bpf_attach *a, int pid, const struct py_task_src *src);

/* The unwind-table maps (--unwind kernel/both): rows, objects, process
 * mappings, pages; in the order ktables_new() takes them. */
void bpf_attach_unwind_fds(const struct bpf_attach *a, int fds[4]);

/* The ring buffers' map fds: samples, and process events (exec, fork,
 * exit, mmap; -1 if none is watched). */
int bpf_attach_events_fd(const struct bpf_attach *a);
int bpf_attach_proc_events_fd(const struct bpf_attach *a);

/* Does every process event cfg needs come (exits; and exec, fork and
 * libpython mappings when new processes are looked for)? Then /proc is
 * scanned only as a safety net. */
int bpf_attach_proc_events_complete(const struct bpf_attach *a, const struct config *cfg);

/* Process events dropped so far for want of room (a flood of execs). */
uint64_t bpf_attach_proc_events_lost(const struct bpf_attach *a);

/* The profiler's own start as the BPF program reads a task's (ns after
 * boot, PROC_EXEC's start_ns), or 0 if unknown: to check that clock. */
uint64_t bpf_attach_own_start_ns(const struct bpf_attach *a);

/* The program's code-object checks (bpf/pyperf.h): its request, in its
 * .bss, and the PY_CHECK_SLOTS slots, mapped into our memory. 0, or -1
 * if they cannot be mapped (user space then reads every check itself). */
int bpf_attach_checks(struct bpf_attach *a, struct py_check_req **req, struct py_check **slots);

/* Sums the per-CPU counters (enum pyperf_stat) into stats. */
void bpf_attach_read_stats(const struct bpf_attach *a, uint64_t stats[STAT__COUNT]);

/* The events take no sample after mono_ns (CLOCK_MONOTONIC; 0: none):
 * the duration's end, whenever the reader gets to it. */
void bpf_attach_stop_at(struct bpf_attach *a, uint64_t mono_ns);

/* Stops every event; records already in the ring buffers stay. */
void bpf_attach_stop(struct bpf_attach *a);
void bpf_attach_free(struct bpf_attach *a);

#endif
