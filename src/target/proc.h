/* Facts about another process, read from /proc without stopping it. */
#ifndef PROC_H
#define PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

/* Parses the text of /proc/PID/maps; pure, for tests and fuzzing.
 * Malformed lines are skipped. Returns 0, or -1 on allocation failure. */
int proc_maps_parse(const char *text, size_t len, struct proc_maps *m);
int proc_maps_read(pid_t pid, struct proc_maps *m);
void proc_maps_free(struct proc_maps *m);
const struct proc_map *proc_maps_find(const struct proc_maps *m, uint64_t addr);

/* Reads target memory with process_vm_readv; never writes, never stops it.
 * Returns 0 only when all len bytes were read. */
int proc_read(pid_t pid, uint64_t addr, void *buf, size_t len);

/* A path that opens the file behind a mapping even if it was deleted or
 * lives in another mount namespace: /proc/PID/map_files/..., falling back
 * to /proc/PID/root/PATH. */
void proc_map_file(pid_t pid, const struct proc_map *m, char *buf, size_t len);

int proc_alive(pid_t pid);

struct proc_stat {
	int ppid;
	uint64_t start_time;	/* clock ticks since boot */
	char comm[16];
};

/* Fields of /proc/PID/stat. 0 on success. */
int proc_stat(pid_t pid, struct proc_stat *ps);
/* The command line, space-separated, truncated to len - 1 bytes. */
int proc_cmdline(pid_t pid, char *buf, size_t len);
/* The short container id from /proc/PID/cgroup; -1 when there is none. */
int proc_container_id(pid_t pid, char *buf, size_t len);
/* The same from the text of a cgroup file; pure, for tests. */
int proc_container_id_parse(const char *text, size_t n, char *buf, size_t len);
/* Start time in clock ticks since boot (field 22 of stat); 0 on error.
 * (pid, start time) identifies a process across PID reuse. */
uint64_t proc_start_time(pid_t pid);
int proc_comm(pid_t pid, char *buf, size_t len);

/*
 * Record and replay seam (src/record/record.c). Every read of a target goes
 * through process_vm_readv() (src/record/record.c defines it, so pysym.c's and
 * pythread.c's batched reads pass too), the /proc file reader and
 * proc_map_file(). With proc_hooks NULL (the default) they are the live
 * system; --record and --replay install hooks. The *_live functions are
 * what the hooks wrap when recording.
 */
struct iovec;
struct proc_hooks {
	ssize_t (*vm_readv)(pid_t pid, const struct iovec *local, unsigned long nlocal,
			    const struct iovec *remote, unsigned long nremote,
			    unsigned long flags);
	/* A malloc'd copy of a /proc file of at most max bytes, or NULL. */
	char *(*read_file)(const char *path, size_t max, size_t *len);
	void (*map_file)(pid_t pid, const struct proc_map *m, char *buf, size_t len);
};
extern const struct proc_hooks *proc_hooks;

/* What process_vm_readv() is in a program that links src/record/record.c, which
 * defines process_vm_readv() as a call of it. */
ssize_t proc_vm_readv_seam(pid_t pid, const struct iovec *local, unsigned long nlocal,
			   const struct iovec *remote, unsigned long nremote,
			   unsigned long flags);
ssize_t proc_vm_readv_live(pid_t pid, const struct iovec *local, unsigned long nlocal,
			   const struct iovec *remote, unsigned long nremote,
			   unsigned long flags);
char *proc_read_file_live(const char *path, size_t max, size_t *len);
void proc_map_file_live(pid_t pid, const struct proc_map *m, char *buf, size_t len);

#endif
