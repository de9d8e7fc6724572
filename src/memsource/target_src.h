/*
 * Where everything about a target is read from: its memory, its /proc
 * files and the files it maps. A reader never opens or reads a target by
 * itself: it gets a source with the target it works on (py_target.src,
 * unwind_input.src, nsym_resolve's argument). Sources: the live system
 * (target_src_live(), src/memsource/live_src.c), a recording of it that wraps
 * the live one (record_src(), src/record/recorder.c), a replay serving a
 * recording (rec_replay_src(), src/record/replay_src.c), or a test's fake.
 */
#ifndef TARGET_SRC_H
#define TARGET_SRC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct proc_map;
struct elf_file;

struct target_src_ops {
	/* process_vm_readv(2) without flags: bytes read, stopping at the
	 * first remote element that fails; -1 with errno when none is read. */
	ssize_t (*readv)(void *ctx, pid_t pid, const struct iovec *local, unsigned long nlocal,
			 const struct iovec *remote, unsigned long nremote);
	/* A malloc'd copy of a /proc file of at most max bytes, or NULL. */
	char *(*read_file)(void *ctx, const char *path, size_t max, size_t *len);
	/* A path that opens the file behind mapping m of pid. */
	void (*map_file)(void *ctx, pid_t pid, const struct proc_map *m, char *buf, size_t len);
	/* elf_file_open() of a path this source gave or a debug file path. */
	struct elf_file *(*open_elf)(void *ctx, const char *path);
};

struct target_src {
	const struct target_src_ops *ops;
	void *ctx;
};

/* The live system: process_vm_readv, /proc, the files themselves. */
const struct target_src *target_src_live(void);

/* Where a live source may get a process's mappings without the text of
 * /proc/PID/maps (src/live/maps_iter.c): a malloc'd buffer of struct
 * py_vma_rec records (bpf/pyperf.h) and their length, or NULL (then the
 * file is read). */
struct live_maps_reader {
	void *(*read)(void *ctx, pid_t pid, size_t *len);
	void *ctx;
};

/* The live system, its mappings read through r (the caller's, kept until
 * target_src_live_free); NULL if out of memory. */
struct target_src *target_src_live_new(const struct live_maps_reader *r);
void target_src_live_free(struct target_src *s);
/* Maps texts a source of target_src_live_new wrote from the reader's
 * records, and read from the file; 0 for others. */
void target_src_live_maps_counts(const struct target_src *s, unsigned long *written,
				 unsigned long *read);
/* s reads the live system itself (target_src_live or _new), not a
 * recording or a replay. */
int target_src_is_live(const struct target_src *s);

/* pid's exit (or exec) was seen (is_gone 1), or a read of it failed with
 * ESRCH: reads of its memory through live source s fail at once, with
 * ESRCH, until it is called with 0 (the pid is probed anew, or its retired
 * target forgotten). Nothing for another source (a recording records the
 * failures of the live source it wraps). */
void target_src_live_gone(const struct target_src *s, pid_t pid, int is_gone);

/* pid's root is known to be ours (its exec event said so): live source s
 * reads its maps without a look at /proc/PID/root for the prefix to strip
 * (there is none), until it is called with another pid or 0. */
void target_src_live_root_ours(const struct target_src *s, pid_t pid);

static inline ssize_t target_readv(const struct target_src *s, pid_t pid,
				   const struct iovec *local, unsigned long nlocal,
				   const struct iovec *remote, unsigned long nremote)
{
	return s->ops->readv(s->ctx, pid, local, nlocal, remote, nremote);
}

static inline char *target_read_file(const struct target_src *s, const char *path, size_t max,
				     size_t *len)
{
	return s->ops->read_file(s->ctx, path, max, len);
}

static inline void target_map_file(const struct target_src *s, pid_t pid,
				   const struct proc_map *m, char *buf, size_t len)
{
	s->ops->map_file(s->ctx, pid, m, buf, len);
}

static inline struct elf_file *target_open_elf(const struct target_src *s, const char *path)
{
	return s->ops->open_elf(s->ctx, path);
}

/* Reads len bytes of target memory at addr; never writes, never stops the
 * target. 0 only when all len bytes were read. */
static inline int target_read(const struct target_src *s, pid_t pid, uint64_t addr, void *buf,
			      size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	if (!len)
		return 0;
	if (!addr || addr + len < addr)
		return -1;
	return s->ops->readv(s->ctx, pid, &local, 1, &remote, 1) == (ssize_t)len ? 0 : -1;
}

#endif
