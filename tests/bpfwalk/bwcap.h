/*
 * A capture: one thread's state as the BPF walk needs it, in a recording
 * (src/record/record.h) so that its memory is served by the replay source
 * like any recorded read:
 *
 *   BPFWALK  the walk's input (struct bpfwalk_in; the process config by
 *            field name, so a field added to it later leaves old captures
 *            readable), and a label saying what was captured
 *   BPFMAP   each unwind-table entry the walk looked up (found or not)
 *   BPFWANT  the record the live program sent for that state (struct
 *            bwcap_want, field by field: not the ring buffer's layout)
 *   MEM, MEMFAIL  every read of target memory the walk made
 *
 * Written by bpfcapture.c, read by test_bpfwalk.c.
 */
#ifndef BWCAP_H
#define BWCAP_H

#include <stdio.h>

#include "bpfwalk.h"
#include "record.h"

/* What a record says about a walk, compared between the live program and
 * the harness: the thread state, the walk's flags, frames, native pcs. */
struct bwcap_want {
	uint64_t tstate;
	uint32_t flags;			/* & BWCAP_WALK_FLAGS */
	uint32_t nframes;
	struct py_frame_rec frames[PYPERF_MAX_FRAMES];	/* self, tlbc: 0 if compact */
	uint32_t native_n;
	uint32_t native_end;
	uint64_t pcs[PYPERF_MAX_NATIVE];
	/* The code objects' captures (struct py_code_capture) the program
	 * sent in the live session, for those the walk captures: their name
	 * and file name bytes (the string objects' heads, whose first 8
	 * bytes, the reference count, are not compared). */
	uint32_t ncaps;
	struct bwcap_name {
		uint64_t code;
		uint16_t name_len, file_len;
		uint8_t name[PY_CAPTURE_NAME], file[PY_CAPTURE_FILE];
	} caps[64];
};

/* The flags the walk sets (the entry points set the others). */
#define BWCAP_WALK_FLAGS (SAMPLE_F_TRUNCATED | SAMPLE_F_NO_TSTATE | SAMPLE_F_READ_ERR | \
			  SAMPLE_F_NO_INTERP | SAMPLE_F_GIL_HELD | SAMPLE_F_GIL_UNKNOWN | \
			  SAMPLE_F_GIL_OFF | SAMPLE_F_NATIVE_PCS | SAMPLE_F_BAD_CHAIN | \
			  SAMPLE_F_ANCHORED)

struct bwcap_entry {
	enum bpfwalk_map map;
	uint32_t key;
	int found;
	uint8_t value[sizeof(struct py_unwind_proc)] __attribute__((aligned(8)));
};

struct bwcap {
	struct recording *r;
	char label[256];
	struct bpfwalk_in in;
	struct bwcap_want want;
	struct bwcap_entry *ent;
	size_t nent;
};

/* The capture at path into c (bwcap_free after). -1 with one line in err. */
int bwcap_load(const char *path, struct bwcap *c, char *err, size_t errlen);
void bwcap_free(struct bwcap *c);
/* The tables of a loaded capture, for bpfwalk_run. */
struct bpfwalk_tables bwcap_tables(struct bwcap *c);

/* Writes BPFWALK, the BPFMAP entries of o and BPFWANT to rec. */
void bwcap_write(struct recorder *rec, const char *label, const struct bpfwalk_in *in,
		 const struct bpfwalk_out *o, const struct bwcap_want *want);

/* A ring-buffer record (compact or full, bpf/pyperf.h) into w; -1 if it
 * is malformed. */
int bwcap_want_of_record(const void *rec, size_t size, struct bwcap_want *w);
/* The harness's record into w (with its captures). */
void bwcap_want_of_out(const struct bpfwalk_out *o, struct bwcap_want *w);
/* Adds a capture record of the live program to w (up to 64, the newest of
 * each code object kept). */
void bwcap_want_capture(struct bwcap_want *w, const struct py_code_capture *c);
/* The harness's record as the program sends it (the ring buffer's bytes,
 * compact where in->compact): into buf (cap bytes); its size, 0 if it
 * does not fit. */
size_t bwcap_encode(const struct bpfwalk_in *in, const struct bpfwalk_out *o, void *buf,
		    size_t cap);
/* 0 when a and b say the same; else each difference, one line on why
 * (NULL: none printed), and the number of differences. */
int bwcap_compare(const struct bwcap_want *want, const struct bwcap_want *got, FILE *why);

#endif
