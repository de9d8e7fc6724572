/*
 * Wall mode: the threads of a target that are off the CPU now. The BPF
 * program sees a thread's stack when it leaves the CPU (sched_switch); a
 * thread blocked since before the profiler started never does, so its
 * wait would count nowhere. blocked_snapshot() makes for each such thread
 * the record that switch-out would have sent: its Python frames read from
 * its thread state (src/python/pywalk.c), and, with native frames, the
 * user registers the kernel shows for a thread in a system call
 * (/proc/PID/task/TID/syscall: its sp and pc) with a copy of its stack
 * from sp, for the unwinder that handles BPF's stack copies. The pipeline
 * takes it like any switch-out record: the thread's wait counts from
 * time_ns until it runs again or the interval ends.
 *
 * Only sp and pc are known: the callee-saved registers are not (zero in
 * the record), so an unwind that needs one (a frame whose CFA is its
 * caller's rbp, kept in the register all the way down) stops at that
 * frame and is counted as stopped early, as any unwind cut short; the
 * Python frames are whole either way. Seen here: every frame found on
 * pyenv 3.8-3.13, Debian's 3.11 and sid's 3.14; sid's 3.15 (frame
 * pointers) loses the outermost libc frames at times, as its switch-out
 * samples do.
 */
#ifndef BLOCKED_H
#define BLOCKED_H

#include <stddef.h>
#include <stdint.h>

#include "pyversion.h"

/* Called with each record; non-zero stops the snapshot (and is returned). */
typedef int (*blocked_emit_fn)(void *ctx, const struct py_target *t, const void *rec,
			       size_t size);

/* Every thread of t not running now (at most PYPERF_MAX_THREADS): one
 * SAMPLE_F_OFFCPU record each, stamped time_ns (CLOCK_MONOTONIC), with up
 * to stack_bytes of stack (0: Python frames only). Threads that are on a
 * CPU, or gone, are skipped: their switch-out will tell; with gil_only
 * (--gil), so are those not holding the GIL, as BPF skips them. Returns
 * 0, the emitter's non-zero, or -1 out of memory. */
int blocked_snapshot(const struct py_target *t, uint32_t stack_bytes, int gil_only,
		     uint64_t time_ns, blocked_emit_fn emit, void *ctx);

#endif
