/*
 * Which root a target's file names are in. A process in a chroot or a
 * container names its files from its own root, and so does the profiler
 * when it shows them: /proc/PID/maps, read from here, prefixes the names
 * with that root when it lies under ours (a chroot), so the live source
 * strips the prefix as it reads them (proc_root_strip()); another mount
 * namespace's names come as the target sees them already. Files are still
 * opened through /proc/PID/map_files or /proc/PID/root (live_src.c).
 * This tells the user which root a name is in, and how to run a command
 * there (to find the package that holds a file, for instance).
 */
#ifndef PROC_ROOT_H
#define PROC_ROOT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum proc_root_kind {
	PROC_ROOT_OURS = 0,	/* the target's root is ours: names mean the same here */
	PROC_ROOT_DIR,		/* a directory of ours (a chroot): dir */
	PROC_ROOT_NS,		/* not one of our paths (another mount namespace):
				 * reached through pid's /proc/PID/root */
};

struct proc_root {
	int kind;		/* enum proc_root_kind */
	int pid;		/* a process in that root, as we number it */
	uint64_t dev, ino;	/* the root directory: which root it is */
	char dir[256];		/* PROC_ROOT_DIR: that directory, a path of ours */
};

/* The root of pid, live (a replay has it from the recording). A process
 * that cannot be looked at is taken as in our root. */
void proc_root_read(pid_t pid, struct proc_root *r);

/* The prefix pid's maps give its file names: its root as the kernel names
 * it to us (readlink of /proc/PID/root); "" when that is "/" or unknown. */
void proc_root_prefix(pid_t pid, char *buf, size_t len);

/* Removes prefix from the file names of the maps text (len bytes) that lie
 * under it, in place; names elsewhere stay. Returns the new length. Pure. */
size_t proc_root_strip(char *text, size_t len, const char *prefix);

/* Says where r's names are, for after a name: " (root /srv/jail)",
 * " (root of pid 42, another mount namespace)", or "" for our root. */
void proc_root_note(const struct proc_root *r, char *buf, size_t len);

/* What runs a command in r, followed by a space: "chroot /srv/jail ",
 * "nsenter -t 42 -m -r -w ", or "" for our root. */
void proc_root_run(const struct proc_root *r, char *buf, size_t len);

/* 1 if a and b are the same root directory (NULL is ours), however
 * reached. */
int proc_root_same(const struct proc_root *a, const struct proc_root *b);

#endif
