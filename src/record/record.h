/*
 * Recordings (--record FILE) of what a profiling session observed, and the
 * memory source that replays them (--replay FILE, src/record/replay.c) through the same
 * unwinding, symbolization, merge and output code, offline and without
 * BPF or root.
 *
 * Written by recorder.c (ELF files reduced by elf_reduce.c), read back by
 * recording.c, served by replay_src.c; record_codec.h is the byte
 * encoding all three share and record_internal.h the rest they share.
 *
 * What is recorded: the raw ring-buffer records exactly as sample_add()
 * got them (registers, copied stack, Python frame records), each target's
 * identity (version, runtime addresses, labels), every successful read of
 * target memory (process_vm_readv, deduplicated), the /proc/PID/maps
 * snapshots and the ELF files the native unwinder and symbolizer opened
 * (reduced: see below), and each profile write (time, duration, BPF
 * counters). Replay serves reads from it: a read that was not recorded
 * fails as an unmapped address would.
 *
 * File format, version 1 (all integers little-endian):
 *
 *   "PYPFREC1"  u32 version (1)  u32 flags
 *   body: a zlib stream (flags bit 0 clear) or the bytes as they are
 *         (bit 0 set: "stored", for tests and fuzzing), holding records
 *         u8 type  u32 length  payload[length]
 *
 * Record payloads (str = u16 length + bytes):
 *   META    u64 sample_period, u64 frequency, u32 stack_bytes, u32 flags
 *           (1 hw cycles, 2 wall, 4 gil only, 8 whole host), u32 symcache_entries,
 *           u32 threadcache_entries, i64 time_nanos, str event, str cmdline,
 *           u64 start_mono_ns (CLOCK_MONOTONIC at time_nanos; absent in
 *           recordings made before TICK existed), u32 run_id (the
 *           profiler's pid, in its files' names; absent in older ones)
 *   TARGET  u32 pid, u64 start_time, u32 major, minor, micro, version_hex,
 *           u64 runtime_addr, interp_head_addr, gil_locked_addr,
 *           gil_holder_addr, gil_current_addr, str module, str comm,
 *           str cmdline, str container_id, then (absent in recordings made
 *           before it) the root its paths are in: u32 kind (0 ours, 1 a
 *           directory of ours, 2 another mount namespace's), u64 dev,
 *           u64 inode, str directory (src/memsource/proc_root.h)
 *   FORGET  u32 pid, u64 start_time (the target was forgotten: caches dropped)
 *   SAMPLE  the ring-buffer record, as is
 *   MEM     u32 pid, u64 addr, u64 seq, bytes (one successful read)
 *   MEMFAIL u32 pid, u64 addr, u64 seq, u32 length (a read that failed)
 *   MAPS    u32 pid, u32 generation, the text of /proc/PID/maps
 *   FILE    u32 object, u64 size, u32 n, n x (u64 offset, u32 length), then
 *           the bytes of the n extents; the rest of the file reads as zeros
 *   PATH    u32 object, u64 seq, str path (the path resolves to object;
 *           object 0xffffffff: the path did not resolve then)
 *   TICK    i64 wall_ns, u64 mono_ns (CLOCK_REALTIME and CLOCK_MONOTONIC at
 *           an interval boundary of the pipeline, src/pipeline/pipeline.h:
 *           the profile written then is named by wall_ns and lasts until
 *           mono_ns), u32 final, u32 rotate (as applied: 0 when the write
 *           failed), u32 n, n x u64 BPF counters
 *   WRITE   (older recordings, instead of TICK) i64 time_nanos, i64 duration_nanos, u64 offcpu_now_ns,
 *           u32 final, u32 rotate, u32 n, n x u64 BPF counters
 *   END     u64 samples (the recording was closed properly)
 *   BPFWALK, BPFMAP, BPFWANT  a capture of one thread's state for the BPF
 *           walk run in user space: its input, each BPF map entry it
 *           consulted, the record the live program gave (payloads in
 *           tests/bpfwalk/bwcap.c, their only reader and writer); replay
 *           skips them
 * Unknown record types are skipped.
 *
 * seq is the number of SAMPLE records up to the read: where a memory
 * range or path was seen with different contents, or failed, replay
 * serves the newest version seen at or before the sample being replayed
 * (else the oldest); a read that failed live fails in replay. A read
 * recorded nowhere may be served from a recorded range that holds it;
 * else it fails as an unmapped address would. Maps: the last snapshot of a process (generation: how many
 * times that pid became a target) is served for all its reads, so a
 * library loaded mid-run resolves whenever the live run could resolve it.
 *
 * ELF files are reduced to what the unwinder and symbolizer read: ELF,
 * program and section headers, section names, FUNC symbols of .symtab and
 * .dynsym with their names, notes (build-id), .gnu_debuglink, .eh_frame,
 * .eh_frame_hdr and .debug_frame; every other byte is zero. Replay writes
 * them as sparse files under a temporary directory.
 */
#ifndef RECORD_H
#define RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pipeline.h"
#include "pyversion.h"
#include "target_src.h"

#define REC_MAGIC		"PYPFREC1"
#define REC_VERSION		1
#define REC_F_STORED		1u	/* body not compressed */

enum rec_type {
	REC_META = 1, REC_TARGET, REC_FORGET, REC_SAMPLE, REC_MEM, REC_MAPS,
	REC_FILE, REC_PATH, REC_WRITE, REC_END, REC_MEMFAIL, REC_TICK,
	REC_BPFWALK, REC_BPFMAP, REC_BPFWANT,
};

#define REC_META_HW_CYCLES	1u
#define REC_META_WALL		2u
#define REC_META_GIL_ONLY	4u
#define REC_META_HOST		8u	/* every Python process of the host */
#define REC_META_ASYNC		16u	/* --async */
#define REC_MAX_STATS		PIPELINE_MAX_STATS

struct rec_meta {
	uint64_t sample_period, frequency;
	uint32_t stack_bytes;		/* 0: Python frames only */
	uint32_t flags;			/* REC_META_* */
	uint32_t symcache_entries, threadcache_entries;
	int64_t time_nanos;		/* wall clock at the start */
	char event[32];
	char *cmdline;			/* the recorded invocation */
	uint64_t start_mono_ns;		/* monotonic clock at the start */
	int has_start_mono;		/* 0 in recordings older than TICK */
	uint32_t run_id;		/* the recording profiler's pid: names its
					 * files (src/output/output.h); 0 in older
					 * recordings */
};

/* An older recording's profile write (WRITE); newer ones have TICKs. */
struct rec_write {
	int64_t time_nanos, duration_nanos;
	uint64_t offcpu_now_ns;		/* wall mode: off-CPU intervals closed here */
	uint32_t final, rotate;
	uint32_t nstats;
	uint64_t stats[REC_MAX_STATS];	/* BPF counters (enum pyperf_stat) */
};

/* ---- recording (--record) --------------------------------------------- */

struct recorder;

/* Creates path; what is read through record_src() is read from live and
 * recorded. NULL with one line in err. */
struct recorder *record_open(const char *path, const struct target_src *live, char *err,
			     size_t errlen);
/* The memory source of a recorded session: live's, teed into the recording. */
const struct target_src *record_src(struct recorder *rec);
/* Each of these does nothing when rec is NULL (not recording). */
void record_meta(struct recorder *rec, const struct rec_meta *m);
void record_target(struct recorder *rec, const struct py_target *t);
void record_forget(struct recorder *rec, const struct py_target *t);
/* Before sample_add() of each record: the SAMPLE is written and counted,
 * and the reads after it carry its number (seq). Memory, files and maps
 * are recorded whenever they are read, in a sample or not. */
void record_sample(struct recorder *rec, const void *data, size_t size);
void record_tick(struct recorder *rec, const struct pipeline_tick *k);
/* A record of a type whose payload its user encodes (REC_BPFWALK...). */
void record_raw(struct recorder *rec, uint8_t type, const void *p, size_t len);
/* Ends the recording and frees rec; -1 with one line in err if it could
 * not be written. */
int record_close(struct recorder *rec, char *err, size_t errlen);

/* ---- reading and replaying (--replay) --------------------------------- */

struct rec_event {
	uint8_t type;			/* REC_TARGET, REC_FORGET, REC_SAMPLE, REC_WRITE,
					 * REC_TICK, REC_BPF* */
	uint32_t len;
	const uint8_t *p;		/* payload, inside the recording's buffer */
};

struct rec_mem;
struct rec_maps;
struct rec_file;
struct rec_path;
struct rec_gen;

struct rec_limits {
	size_t max_body;		/* decompressed bytes; 0: 4 GiB */
	size_t max_file;		/* size of one recorded file; 0: 4 GiB */
};

struct recording {
	uint8_t *body;			/* decompressed records */
	size_t body_len;
	struct rec_meta meta;
	int has_meta, complete;		/* META seen; END seen */
	uint64_t bad_records;		/* malformed records skipped */
	struct rec_event *ev;		/* targets, forgets, samples, writes in order */
	size_t nev;
	uint64_t nsamples;
	struct rec_mem *mem;		/* sorted by (pid, addr, len, seq) */
	size_t nmem;
	struct rec_maps *maps;
	size_t nmaps;
	struct rec_file *files;		/* by object id */
	size_t nfiles;
	struct rec_path *paths;		/* sorted by (path, seq) */
	size_t npaths;
	struct rec_limits lim;
	char dir[256];			/* replay: where files are written */
	uint64_t seq;			/* replay: samples replayed so far */
	struct rec_gen *gens;		/* replay: generation per pid */
	size_t ngens, gens_cap;
	uint64_t reads, reads_missed;	/* replay: memory reads served / not */
	struct target_src src;		/* replay: rec_replay_src() */
};

/* Reads a recording (a file, or a buffer). A truncated body is read up to
 * its last whole record (complete stays 0). NULL with one line in err when
 * it is not a recording or cannot be read. */
struct recording *rec_load_file(const char *path, const struct rec_limits *lim,
				char *err, size_t errlen);
struct recording *rec_load_mem(const void *buf, size_t len, const struct rec_limits *lim,
			       char *err, size_t errlen);
void rec_free(struct recording *r);

/* Payload decoders; 0 when the payload is well-formed. */
int rec_decode_target(const struct rec_event *e, struct py_target *t);
int rec_decode_forget(const struct rec_event *e, uint32_t *pid, uint64_t *start_time);
int rec_decode_write(const struct rec_event *e, struct rec_write *w);
int rec_decode_tick(const struct rec_event *e, struct pipeline_tick *k);

/* Writes the recorded files under a temporary directory and makes
 * rec_replay_src(r) serve reads from r. -1 with one line in err. */
int rec_replay_begin(struct recording *r, char *err, size_t errlen);
/* The memory source of the replayed targets, from rec_replay_begin() to
 * rec_replay_end(). */
const struct target_src *rec_replay_src(struct recording *r);
/* Removes the temporary directory. */
void rec_replay_end(struct recording *r);
/* Before each SAMPLE: the number of samples replayed before it. */
void rec_replay_set_seq(struct recording *r, uint64_t seq);
/* At each TARGET: pid became a target (again). */
void rec_replay_target(struct recording *r, uint32_t pid);

#endif
