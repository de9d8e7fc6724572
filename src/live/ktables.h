/*
 * --unwind kernel: the unwind tables the BPF program walks (bpf/pyperf.h).
 * Per object file (by dev, inode, size, mtime) its CFI rows, converted
 * once (src/native/unwind_table.c) into one contiguous run of the
 * "unwind_rows" map; per process its executable mappings, each with its
 * object and load bias, in "unwind_procs". Loaded when a target is added
 * and again when a sample's walk met an address no loaded mapping covers
 * (a library opened since), at most every KT_RELOAD_NS per process.
 *
 * The row map has a fixed size: when it is full every object is dropped
 * and every process's mappings deleted; each is reloaded on its next miss
 * (those samples are marked "not loaded", never unwound with stale rows).
 */
#ifndef KTABLES_H
#define KTABLES_H

#include <stdint.h>
#include <sys/types.h>

struct ktables_stats {
	uint64_t pid_loads;		/* mappings (re)written for a process */
	uint64_t pid_copies;		/* ... copied from its parent at its fork */
	uint64_t pid_throttled;		/* reloads skipped: too soon */
	uint64_t objects, objects_no_cfi, objects_failed;
	uint64_t rows;			/* rows in use now */
	uint64_t resets;		/* row or object map full: all dropped */
	uint64_t maps_dropped;		/* mappings past PY_UNWIND_MAX_MAPS */
	uint64_t build_ns;		/* time spent converting CFI */
	uint64_t anon_tables;		/* anonymous code with rows synthesised
					 * (CPython perf trampoline arenas) */
	uint64_t anon_no_template;	/* anonymous code of a process whose
					 * template is absent or refused */
};

struct ktables;
struct objcache;
struct target_src;
struct tramp_shape;

/* The map fds of the loaded program; max_rows is unwind_rows' size. Object
 * files are opened through oc, the session's native object layer, so the
 * user-space unwinder and symbolizer do not open them again. */
struct ktables *ktables_new(int rows_fd, int objs_fd, int procs_fd, int pages_fd,
			    uint32_t max_rows, struct objcache *oc);
void ktables_free(struct ktables *kt);

/* Loads the tables of every executable mapping of pid (its maps, memory
 * and files read through src) and writes its mapping list; anonymous
 * code holding copies of tramp (the target's perf trampoline template,
 * NULL: none) gets rows synthesised from its rules. now_ns:
 * CLOCK_MONOTONIC. seen_ns: when the target used a mapping missing from
 * the tables (bpf_ktime_get_ns(), the same clock): pid's maps are read
 * again unless they were read after then and less than KT_RELOAD_NS ago,
 * so a mapping made since the last load waits for no throttle, and a
 * burst of samples taken before the load costs no second one. KT_FORCE:
 * a new target, written now from the object layer's view of its maps
 * (which the probe read a moment ago), read again only if KT_RELOAD_NS
 * old. The maps are the object layer's (objcache_proc), shared with the
 * probe and the symbolizer. 0 on success. */
#define KT_FORCE UINT64_MAX
int ktables_load_pid(struct ktables *kt, const struct target_src *src, pid_t pid,
		     const struct tramp_shape *tramp, uint64_t now_ns, uint64_t seen_ns);

/* Process to was forked from from (a copy of its mappings): from's
 * mapping list serves as it is, without reading to's maps. -1 if from
 * has none, or has anonymous code (its rows go with from): load to's. */
int ktables_copy_pid(struct ktables *kt, pid_t from, pid_t to, uint64_t now_ns);

/* The process is gone: deletes its mappings (from the BPF table too unless
 * bpf_gone: the BPF program did at its exit). */
void ktables_forget_pid(struct ktables *kt, pid_t pid, int bpf_gone);

const struct ktables_stats *ktables_get_stats(const struct ktables *kt);

#endif
