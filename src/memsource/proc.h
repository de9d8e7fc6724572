/* Facts about another process, read from /proc without stopping it. */
#ifndef PROC_H
#define PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct target_src;

struct proc_map {
	uint64_t start, end, offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	char perms[5];
	char *path;		/* "" for anonymous mappings */
};

struct proc_maps {
	struct proc_map *v;
	size_t n;
};

/* All of fd (a /proc file or a BPF iterator: about a page per read) in a
 * malloc'd buffer grown from first bytes; at most max bytes are read (the
 * rest is left). NULL, with errno, on a failed read or out of memory. */
char *proc_read_fd(int fd, size_t first, size_t max, size_t *len);

/* Parses the text of /proc/PID/maps; pure, for tests and fuzzing.
 * Malformed lines are skipped. Returns 0, or -1 on allocation failure. */
int proc_maps_parse(const char *text, size_t len, struct proc_maps *m);
/* The maps of pid, read through src. */
int proc_maps_read(const struct target_src *src, pid_t pid, struct proc_maps *m);
void proc_maps_free(struct proc_maps *m);
const struct proc_map *proc_maps_find(const struct proc_maps *m, uint64_t addr);

struct proc_stat {
	int ppid;
	int num_threads;
	uint64_t start_time;	/* clock ticks since boot */
	char comm[16];
	char state;		/* 'R', 'S', ... 'Z' (zombie), 'X' (dead) */
	uint64_t arg_start, arg_end;	/* its argument area; 0: not shown */
};

/* A zombie or dead process: its memory is gone, it can never be a target. */
static inline int proc_stat_gone(const struct proc_stat *ps)
{
	return ps->state == 'Z' || ps->state == 'X';
}

/* Fields of /proc/PID/stat, read live: which processes exist is
 * bookkeeping of the live session, not something a recording replays. */
int proc_stat(pid_t pid, struct proc_stat *ps);
/* The same from the text of a stat file; pure, for tests. */
int proc_stat_parse(const char *text, struct proc_stat *ps);
/* The command line, space-separated, truncated to len - 1 bytes. */
int proc_cmdline(const struct target_src *src, pid_t pid, char *buf, size_t len);
/* The same from its argument area in memory (ps, as read a moment ago),
 * if it lies in the stack mapping of maps (pid's maps as read since ps):
 * one read of memory, not an open and reads of a /proc file. Else, or if
 * the area is not as the kernel left it, from /proc/PID/cmdline. */
int proc_cmdline_stat(const struct target_src *src, pid_t pid, const struct proc_stat *ps,
		      const struct proc_maps *maps, char *buf, size_t len);
/* The short container id from /proc/PID/cgroup; -1 when there is none. */
int proc_container_id(const struct target_src *src, pid_t pid, char *buf, size_t len);
/* The same from the text of a cgroup file; pure, for tests. */
int proc_container_id_parse(const char *text, size_t n, char *buf, size_t len);
/* Start time in clock ticks since boot (field 22 of stat); 0 on error.
 * (pid, start time) identifies a process across PID reuse. */
uint64_t proc_start_time(pid_t pid);
int proc_comm(const struct target_src *src, pid_t pid, char *buf, size_t len);
/* The user sp and pc in the text of a /proc/PID/task/TID/syscall file
 * ("NR ARG1..ARG6 SP PC", "-1 SP PC" or "running"); pure, for tests.
 * 1 when the thread is off the CPU (in a system call, or blocked
 * elsewhere in the kernel), 0 when it is running or runnable, -1 when
 * the text says neither. */
int proc_parse_syscall(const char *text, uint64_t *sp, uint64_t *pc);

#endif
