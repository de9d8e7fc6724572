/*
 * The native object layer the unwinder (unwind.c) and the symbolizer
 * (nsym.c) share, so each ELF object is opened once however many of them
 * use it:
 *
 *  - per process: its /proc/PID/maps, re-read on a miss at most every
 *    OC_REFRESH_NS, with the object behind each mapping memoized;
 *  - per ELF object (a mapped file or the vDSO): one entry keyed by
 *    build-id, else by the file's dev, inode, size and mtime, holding the
 *    mapped image, its load segments, its separate debug file (opened
 *    once, when first asked for) and what each user hangs off it
 *    (unwind tables, symbol tables).
 *
 * Bounded: at most max_objects entries and max_procs processes, and the
 * users' data under max_bytes, least recently used evicted first. Files
 * are read through each process's memory source (target_src.h).
 *
 * Not thread-safe: one cache per thread.
 */
#ifndef OBJCACHE_H
#define OBJCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "elffile.h"
#include "proc.h"

#define OC_BUILD_ID_MAX		64	/* bytes */
#define OC_MAX_LOADS		16	/* PT_LOAD segments kept per object */
#define OC_REFRESH_NS		(20ull * 1000 * 1000)	/* maps re-read at most 50/s */

struct target_src;

/* Who hangs data off entries and processes. */
/* OC_PYEVAL: the eval loop's ranges of an interpreter file (src/python/pyeval.c).
 * OC_PYVERSION: the version string found in its image (src/python/pyversion.c). */
enum oc_user { OC_UNWIND, OC_SYMS, OC_PYEVAL, OC_PYVERSION, OC_USERS };

struct oc_obj {
	uint64_t serial;		/* 0: free slot; never reused */
	uint64_t tick;			/* last use, for LRU eviction */
	uint64_t dev, ino, size;	/* stat identity of the file ... */
	int64_t mtime_ns;		/* ... all 0 for the vDSO */
	uint8_t build_id[OC_BUILD_ID_MAX];
	size_t build_id_len;
	char build_id_hex[2 * OC_BUILD_ID_MAX + 1];
	struct elf_file *ef;		/* whole file, mapped read-only, no fd */
	struct elf_segment load[OC_MAX_LOADS];
	size_t nload;
	uint64_t relro_lo, relro_hi;	/* link-time; relocated, not file bytes */
	int dbg_state;			/* debug file: 0 not tried, 1 open, -1 none */
	struct elf_file *dbg;
	void *user[OC_USERS];		/* freed with the entry */
	size_t user_bytes[OC_USERS];	/* counted against max_bytes */
	int wd;				/* inotify watch on the file, 0: none
					 * (its maps identities are stat'ed
					 * again every OC_FID_NS instead) */
};

struct oc_memo;

struct oc_proc {
	int pid;			/* 0: free slot */
	const struct target_src *src;	/* where its maps, memory and files are read */
	uint64_t tick;
	struct proc_maps maps;
	struct oc_memo *memo;		/* one per maps entry */
	uint64_t read_ns;		/* when the maps were read */
	uint64_t maps_gen;		/* unique per (re)read, of any process */
	void *user[OC_USERS];		/* freed with the process */
};

struct objcache_opts {
	size_t max_objects;	/* object entries; 0: 256 */
	size_t max_procs;	/* processes; 0: 64 */
	size_t max_bytes;	/* users' data (tables), bytes; 0: 256 MiB */
};

struct objcache_stats {
	uint64_t elf_opens;		/* ELF files opened: objects and debug files */
	uint64_t vdso_copies;		/* vDSO images made entries of (no file; one
					 * equal to an entry's is that entry) */
	uint64_t distinct;		/* distinct objects and debug files among them */
	uint64_t obj_loads, obj_hits, obj_evictions, obj_failures;
	uint64_t debug_files;		/* separate debug files opened */
	uint64_t proc_hits, proc_misses, proc_evictions;
	uint64_t maps_reads;		/* /proc/PID/maps (re)reads */
	uint64_t fid_hits;		/* mapped files known by their maps
					 * identity: no stat ... */
	uint64_t fid_checks;		/* ... or one, OC_FID_NS after the last
					 * (files without a watch) */
	uint64_t watches;		/* inotify watches held now */
	uint64_t watch_fired;		/* watched objects a change event
					 * (or a lost one) made stat again */
	uint64_t bytes;			/* users' data held now */
};

/* opts may be NULL for the defaults. NULL on allocation failure. */
struct objcache *objcache_new(const struct objcache_opts *opts);
void objcache_free(struct objcache *oc);

/* How user u's data is freed when an entry or a process is dropped:
 * obj_free(ctx, o->user[u]), proc_free(ctx, p->user[u]). */
void objcache_set_user(struct objcache *oc, enum oc_user u, void *ctx,
		       void (*obj_free)(void *ctx, void *data),
		       void (*proc_free)(void *ctx, void *data));
/* Frees all of user u's data and forgets its free functions (the user is
 * going away before the cache). */
void objcache_drop_user(struct objcache *oc, enum oc_user u);

/* Process pid read through src, its maps read on first use. NULL if they
 * cannot be read. Valid until the next objcache_proc() or forget. */
struct oc_proc *objcache_proc(struct objcache *oc, const struct target_src *src, int pid);

/* Re-reads p's maps after a miss on an address the target used at
 * seen_ns (CLOCK_MONOTONIC, as bpf_ktime_get_ns(); 0: unknown): always if
 * the maps were read before then (they cannot hold a mapping made since;
 * records come in batches, so that is one read per batch at most), else
 * only if they were read OC_REFRESH_NS ago or more, so that garbage
 * addresses cannot make every lookup re-read them. 0 if they were re-read
 * (indices and memos of the old maps are gone). */
int objcache_refresh(struct objcache *oc, struct oc_proc *p, uint64_t seen_ns);

/* The rule objcache_refresh() and the BPF tables' reload share: a view
 * read at read_ns is read again for a miss seen at seen_ns if it predates
 * that, or if it is throttle_ns old. */
static inline int oc_reread_due(uint64_t read_ns, uint64_t seen_ns, uint64_t now_ns,
				uint64_t throttle_ns)
{
	return read_ns < seen_ns || now_ns - read_ns >= throttle_ns;
}

/* The object behind p->maps.v[i] (a file or the vDSO), loaded on first
 * use and memoized until the maps are re-read. NULL if there is none. */
struct oc_obj *objcache_obj(struct objcache *oc, struct oc_proc *p, size_t i);

/* The object behind mapping m of pid, read through src, for readers that
 * walk a process's maps themselves (the interpreter probe at attach, the
 * 3.6 GIL symbols): the same entry objcache_obj() finds later, so the file
 * is opened once. NULL if there is none. Valid until the next load. */
struct oc_obj *objcache_map_obj(struct objcache *oc, const struct target_src *src, int pid,
				const struct proc_map *m);

/* The separate debug file of o (build-id path, .gnu_debuglink), looked
 * for once, under p's root then ours; m is the mapping that names o. */
struct elf_file *objcache_debug_file(struct objcache *oc, struct oc_obj *o,
				     const struct oc_proc *p, const struct proc_map *m);

/* Entry slots, for users that address entries by index. */
size_t objcache_capacity(const struct objcache *oc);
struct oc_obj *objcache_slot(struct objcache *oc, size_t k);

/* Adds bytes of user u's data to o (set o->user[u] first); then evicts
 * other entries, oldest first, while the users' data exceed max_bytes. */
void objcache_account(struct objcache *oc, struct oc_obj *o, enum oc_user u, size_t bytes);

/* Drops what is cached for a process (it exited: a reused pid would see
 * stale maps until a miss). */
void objcache_forget_pid(struct objcache *oc, int pid);

const struct objcache_stats *objcache_get_stats(const struct objcache *oc);

/* One line for -v: "native objects: N opened, M maps parses, V vDSO
 * images read (D distinct ...)". Each file opened once: N equals D. */
void objcache_describe(const struct objcache *oc, char *buf, size_t len);

#endif
