/* Python code object -> {qualified name, file name, current line}. */
#ifndef PYSYM_H
#define PYSYM_H

#include <stddef.h>
#include <stdint.h>

#include "pyversion.h"

struct pysym_cache;

struct pyframe_info {
	const char *name;	/* owned by the cache; copy before the next call */
	const char *filename;
	int firstlineno;
	int line;		/* -1 when unknown */
	uint64_t key;		/* pysym_frame_key() of this frame */
};

struct pysym_stats {
	uint64_t hits, misses, evictions, errors;
	uint64_t stale;		/* entries dropped: their code object changed */
	uint64_t fresh;		/* checks skipped: checked since the sample */
	uint64_t checks, check_reads;	/* entries checked, in so many readv */
	uint64_t answered;	/* of the checks, read by another reader */
	uint64_t captures;	/* code objects named by the BPF program */
	uint64_t from_captures;	/* entries made from those: the code
				 * object was gone when read */
	uint64_t captured_loads;	/* entries made from those, reading
					 * the line table alone at most, in one
					 * system call */
	uint64_t captured_tables;	/* ... of them with the line table
					 * captured too: nothing read */
};

/* capacity is rounded up to a power of two; entries are evicted beyond it. */
struct pysym_cache *pysym_cache_new(size_t capacity);
void pysym_cache_free(struct pysym_cache *c);

/* Resolves one frame record; self is the frame's first local before 3.11
 * (names methods "Class.method" as co_qualname does from 3.11), tlbc the
 * frame's bytecode copy (free-threaded 3.14+, else 0). Returns 0 on success, 1 for a frame that has
 * not started executing yet (skip it), -1 when the code object could not be
 * read (counted in errors). */
int pysym_resolve(struct pysym_cache *c, const struct py_target *t, uint64_t code,
		  uint64_t lasti, uint64_t self, uint32_t tlbc, struct pyframe_info *out);

/* Nonzero: a number that, with lasti, determines what pysym_resolve answers
 * for this frame, as long as the cache holds this code object (a reload
 * gets a new number; numbers are never reused). 0 when the code object is
 * not cached (nothing is read here) or the answer depends on more (a <3.11
 * method named after its self's type). Lets callers memoize results per
 * (key, lasti) and skip pysym_resolve, whose statistics then do not count
 * those frames. */
uint64_t pysym_frame_key(const struct pysym_cache *c, const struct py_target *t,
			 uint64_t code, uint64_t self);

/* CLOCK_MONOTONIC now, in ns: the clock of a sample's time_ns
 * (bpf_ktime_get_ns). */
typedef uint64_t (*pysym_clock_fn)(void);

/* Checks cached entries against the target's memory before the records
 * naming them are resolved, and drops those whose code object was freed
 * and its address reused: a cache keyed by address alone would name new
 * code with old names. pysym_check_note() queues the entry of one code
 * object named by a record taken at sample_ns (its time_ns; nothing if the
 * code object is not cached: loading it is a check); pysym_check_end()
 * reads all queued ones, one process_vm_readv per target and IOV_MAX
 * entries. Between two ends an entry is queued once, so a drain of records
 * costs one read. With a clock (live sessions), an entry checked after the
 * sample was taken is not queued: that check already saw the code object
 * the sample saw. Without one (replay) every entry is. Nothing else may
 * use the cache between a note and the end. */
void pysym_check_note(struct pysym_cache *c, const struct py_target *t, uint64_t code,
		      uint64_t sample_ns, pysym_clock_fn now);
void pysym_check_end(struct pysym_cache *c);

/* Between the notes and the end, the queue may be read by someone else
 * (the BPF program, in the target's own context, much cheaper than a
 * system call): pysym_check_queue gives its target, each entry's address
 * (0: answered already) and the bytes to read there (*len, the same for
 * all); pysym_check_answer checks entry i against bytes read there at
 * at_ns, after the records that named it were taken. pysym_check_end
 * reads only the entries left unanswered. */
size_t pysym_check_queue(const struct pysym_cache *c, const struct py_target **t,
			 uint64_t *addr, size_t max, uint16_t *len);
void pysym_check_answer(struct pysym_cache *c, size_t i, const uint8_t *bytes, uint64_t at_ns);

/* Is this code object of t cached (nothing is read)? */
int pysym_cached(const struct pysym_cache *c, const struct py_target *t, uint64_t code);

/* Forgets every entry of a process, pid started at start_time (it exited
 * or exec'd): they are refused from now on and freed by one pass over the
 * cache once FORGET_MAX processes were forgotten, or replaced before. An
 * entry is another process's when its pid or start time differs, so pid
 * reuse needs no forgetting; an exec keeps both, the forget tells. */
void pysym_forget(struct pysym_cache *c, int pid, uint64_t start_time);

void pysym_get_stats(const struct pysym_cache *c, struct pysym_stats *st);

/* Reads a str object of the target as UTF-8 into buf (NUL-terminated,
 * truncated to len-1 bytes). 0 on success. */
int pysym_read_str(const struct py_target *t, uint64_t addr, char *buf, size_t len);

/* The same from the first got bytes of a str object copied already (by
 * the BPF program): the characters those bytes hold, so a longer str is
 * cut. 0 on success, -1 when the bytes are no compact str. Pure. */
int pysym_str_prefix(const struct py_target *t, const uint8_t *obj, size_t got, char *buf,
		     size_t len);

/* Keeps what the BPF program read of a code object at its first sample
 * (bpf/pyperf.h), to name it if it is gone when a record naming it is
 * resolved. Records are given in the order they were taken: a capture
 * comes before the samples it serves. */
void pysym_capture(struct pysym_cache *c, const struct py_target *t,
		   const struct py_code_capture *cap);

#endif
