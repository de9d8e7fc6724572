/*
 * The BPF program's walk run in user space (bpfwalk.c): the same source
 * (bpf/pywalk.bpf.h, native_unwind.bpf.h, checks.bpf.h, common.bpf.h)
 * compiled with the stand-ins of bpf_shim.h, reading target memory
 * through a struct target_src and the unwind tables through a struct
 * bpfwalk_tables. Given the state of one thread (its ident, registers and
 * the process's config as the procs map held it), it gives the record the
 * program's sample_current() builds from that state: the thread state,
 * the Python frames, the native pcs with their anchor tags, the walk's
 * flags, and the code-object captures it sends before the sample.
 */
#ifndef BPFWALK_H
#define BPFWALK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pyperf.h"
#include "target_src.h"

/* The BPF maps the walk consults for the walked process. */
enum bpfwalk_map {
	BW_UNWIND_PROCS = 0,	/* key: tgid; struct py_unwind_proc */
	BW_UNWIND_OBJS,		/* key: object index; struct py_unwind_obj */
	BW_UNWIND_PAGES,	/* key: page index; __u32 */
	BW_UNWIND_ROWS,		/* key: row index; struct py_unwind_row */
	BW_NMAPS,
};

/* Bytes of a value of each map. */
extern const size_t bpfwalk_value_size[BW_NMAPS];

struct bpfwalk_tables {
	/* The value of map at key into v (bpfwalk_value_size[map] bytes):
	 * 0, or -1 where the map has no such key. */
	int (*lookup)(void *ctx, enum bpfwalk_map map, uint32_t key, void *v);
	void *ctx;
};

/* One entry the walk looked up, in order of first lookup. */
struct bpfwalk_entry {
	enum bpfwalk_map map;
	uint32_t key;
	int found;
	uint8_t *value;		/* bpfwalk_value_size[map] bytes */
};

/* The state of one thread, as the entry points take it from the kernel. */
struct bpfwalk_in {
	uint32_t pid, tid;		/* in the profiler's PID namespace */
	uint64_t ident;			/* the thread's id as its thread state holds it
					 * (current_thread_ident) */
	uint64_t ip, sp, bp;		/* user registers */
	uint64_t top;			/* the process's mm->start_stack */
	uint32_t flags;			/* SAMPLE_F_* the entry point starts with */
	int compact;			/* frames as struct py_frame_compact */
	int native;			/* unwind native frames (--unwind kernel) */
	struct py_proc_config cfg;	/* the procs map's entry */
};

struct bpfwalk_out {
	struct py_sample *s;		/* the record: full header, frames as in->compact
					 * says, then h.native_n pcs */
	uint32_t fsize;			/* bytes a frame */
	struct py_code_capture *caps;	/* captures sent, in order */
	size_t ncaps;
	struct bpfwalk_entry *ent;	/* map entries consulted */
	size_t nent;
	uint64_t stats[STAT__COUNT];
};

/* Runs the walk; out is reset first (free with bpfwalk_out_free). -1 out
 * of memory. */
int bpfwalk_run(const struct bpfwalk_in *in, const struct target_src *src,
		const struct bpfwalk_tables *tb, struct bpfwalk_out *out);
void bpfwalk_out_free(struct bpfwalk_out *out);

/* The running task's search (bpf/asynctask.bpf.h, find_tasks) of the
 * thread at tstate of pid, whose process's source is tsrc, into s (its
 * task candidates and task_sig): 1 when it read that no task runs
 * (SAMPLE_F_NO_TASK), else 0. */
int bpfwalk_find_tasks(const struct py_task_src *tsrc, const struct target_src *src,
		       uint32_t pid, uint64_t tstate, struct py_sample *s);

/* The native pcs of out (h.native_n of them). */
const uint64_t *bpfwalk_pcs(const struct bpfwalk_out *out);

#endif
