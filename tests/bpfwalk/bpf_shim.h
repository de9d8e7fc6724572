/*
 * The kernel's side of the BPF program's parts, in user space: included
 * before bpf/common.bpf.h, checks.bpf.h, asynctask.bpf.h, pywalk.bpf.h
 * and native_unwind.bpf.h so that they compile as they are into the harness
 * (bpfwalk.c), which runs the walk the program runs over memory from a
 * struct target_src. What each stand-in does:
 *
 *   SEC(), __uint(), __type()   the map declarations become plain (unused)
 *                               variables; their addresses name the maps
 *   bpf_map_lookup_elem         bpfh_map_lookup(): the harness's storage for
 *                               the per-CPU scratch maps and caches (one CPU,
 *                               empty at each run), the unwind tables of the
 *                               walked process from its struct bpfwalk_tables
 *   bpf_probe_read_user         target_read() through the run's source; like
 *                               the helper, a failed read zeroes the buffer
 *   bpf_probe_read_kernel       memcpy (the program reads only its scratch)
 *   bpf_loop                    a loop, the callback's 1 ending it
 *   bpf_ringbuf_output          records (code-object captures) kept for the run
 *   bpf_ktime_get_ns, bpf_get_smp_processor_id   a counter, CPU 0
 *
 * The parts read no kernel structure (the entry points in pyperf.bpf.c do:
 * the thread's ident, its registers, task storage), so nothing else is
 * needed; a part that starts using another helper fails to compile here.
 */
#ifndef BPF_SHIM_H
#define BPF_SHIM_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <linux/bpf.h>
#include <linux/types.h>

#define SEC(name)
#define __uint(name, val)	int (*name)[val]
#define __type(name, val)	__typeof__(val) *name
#define __noinline		__attribute__((noinline))

/* Implemented by the harness (bpfwalk.c) for the run under way. */
void *bpfh_map_lookup(const void *map, const void *key);
long bpfh_read_user(void *dst, __u32 size, __u64 addr);
long bpfh_ringbuf_output(const void *map, const void *data, __u64 size);
__u64 bpfh_ktime(void);

static inline void *bpf_map_lookup_elem(const void *map, const void *key)
{
	return bpfh_map_lookup(map, key);
}

static inline long bpf_probe_read_user(void *dst, __u32 size, const void *src)
{
	return bpfh_read_user(dst, size, (__u64)(uintptr_t)src);
}

static inline long bpf_ringbuf_output(const void *map, const void *data, __u64 size,
				      __u64 flags)
{
	return bpfh_ringbuf_output(map, data, size);
}

/* The program's own memory (the per-CPU scratch): plain bytes here. */
static inline long bpf_probe_read_kernel(void *dst, __u32 size, const void *src)
{
	memcpy(dst, src, size);
	return 0;
}

static inline __u64 bpf_ktime_get_ns(void)
{
	return bpfh_ktime();
}

static inline __u32 bpf_get_smp_processor_id(void)
{
	return 0;
}

/* The helper's contract: callback(i, ctx) for i = 0.. nr - 1 until it
 * returns 1; the iterations done. */
static inline long bpf_loop(__u32 nr, void *callback, void *ctx, __u64 flags)
{
	long (*fn)(__u32, void *) = (long (*)(__u32, void *))callback;
	__u32 i;

	for (i = 0; i < nr; i++)
		if (fn(i, ctx)) {
			i++;
			break;
		}
	return i;
}

#endif
