/*
 * What pysym.c (the cache of code objects) and pycapture.c (the BPF
 * program's captures of them) share: the cache's layout and the helpers
 * both use. Not an interface: nothing else includes it.
 */
#ifndef PYSYM_INT_H
#define PYSYM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "pysym.h"
#include "pylayout.h"

#define MAX_STR		1024		/* longest name or path kept */
#define MAX_LINETABLE	(1u << 20)	/* bytes; real tables are far smaller */
#define VALIDATE_MAX	1024		/* code objects checked per call (IOV_MAX) */
#define FP_SPAN_MAX	256		/* bytes read per code object to check it */
/* A new code object's name, file name and line table are read together,
 * this much of each object (header and data); longer ones again alone. */
#define SPEC_STR	256
#define SPEC_TABLE	1024
/* Code objects named by the BPF program at their first sample, kept for
 * when they are gone by the time their records are resolved: a docutils
 * start-up makes ~500 in its first second, a batch of records up to 200 ms
 * of them. The oldest of a set goes first. */
#define CAPTURE_WAYS	4
#define CAPTURES	4096		/* CAPTURES / CAPTURE_WAYS sets */
#define CAPTURE_NAME	256		/* UTF-8 of PY_CAPTURE_NAME str bytes fits */
#define CAPTURE_FILE	512

/* Whose an entry is: a process by pid and start time (a pid reused is
 * another process), made after forget number born (pysym_forget: an exec
 * keeps pid and start time, and what the old program left is dropped). */
struct tag {
	int pid;			/* 0: empty */
	uint64_t start;
	uint64_t born;
};

struct entry {
	struct tag tag;
	uint64_t code;
	char *name, *filename;
	int firstlineno;
	uint8_t *table;
	uint32_t table_len;
	uint32_t age;
	uint8_t first_arg;		/* enum first_arg: how to qualify <3.11 */
	uint32_t checked;		/* round it was last queued in */
	uint64_t checked_ns;		/* live: clock before the last check's read */
	uint64_t fp;			/* fingerprint of the code object's fields */
	uint64_t serial;		/* unique per load: see pysym_frame_key */
	uint64_t type;			/* its ob_type when read */
};

/* What a struct py_code_capture said of a code object (pysym_capture). */
struct capture {
	struct tag tag;
	uint64_t code;
	uint64_t type;			/* its ob_type: the code type's address */
	uint64_t fp;			/* sym_fingerprint(), as load_entry() computes it */
	int32_t firstlineno;
	uint8_t whole;			/* names as load_entry() reads them, the
					 * fields below known: cap_load() */
	uint64_t table;			/* its co_linetable (co_lnotab) */
	uint64_t varnames;		/* <3.11 with arguments: co_varnames */
	uint8_t arg;			/* 1 + first_arg_kind(), from the first
					 * argument's name captured; 0 unknown */
	uint8_t *tab;			/* that line table, when captured whole */
	uint32_t tab_len;
	uint64_t time_ns;		/* of the sample it was taken at */
	uint64_t seq;			/* captures before it: its age */
	/* Decoded into CAPTURE_NAME and CAPTURE_FILE bytes, kept apart: a
	 * set's four then lie in a few cache lines of one page, not four
	 * pages that a new one first touched. */
	char *name, *filename;
};

/* Before 3.11 code objects have no qualname; a method's class comes from
 * its first argument when that is named self or cls. */
enum first_arg { ARG_PLAIN = 0, ARG_SELF, ARG_CLS };

#define TYPE_CACHE	1024		/* type object -> name, direct-mapped */
/* Forgotten processes whose entries are dropped together, by one pass
 * over the cache once this many were: a pass reads ~5 MB, and a host that
 * starts a process every 0.3 s forgets one each time. Until then their
 * entries are only refused (tag_of). */
#define FORGET_MAX	64
#define FORGET_BITS	1024		/* a filter of the pids pending */

struct forgotten {
	int pid;
	uint64_t start;
	uint64_t seq;			/* forget number: entries born before go */
};

struct type_entry {
	struct tag tag;
	uint64_t type;
	char name[128];
};

struct pysym_cache {
	struct entry *e;
	size_t nsets;
	uint32_t clock;
	uint64_t serials;		/* entries loaded so far */
	struct pysym_stats st;
	struct type_entry types[TYPE_CACHE];
	char qualname[MAX_STR + 128];	/* result of the last qualification */
	uint32_t round;			/* pysym_check_end() calls, from 1 */
	pysym_clock_fn now;		/* the last pysym_check_note()'s clock */
	const struct py_target *check_t;	/* whose entries are queued */
	size_t ncheck;
	struct entry *check[VALIDATE_MAX];	/* queued by pysym_check_note() */
	struct iovec local[VALIDATE_MAX], remote[VALIDATE_MAX];
	uint8_t fpbuf[VALIDATE_MAX * FP_SPAN_MAX];
	struct capture *captures;	/* CAPTURES of them */
	uint64_t capture_seq;
	struct forgotten forget[FORGET_MAX];	/* processes whose entries go */
	size_t nforget;
	uint64_t forgets;		/* pysym_forget() calls: tag.born */
	uint64_t forget_bits[FORGET_BITS / 64];	/* pids in forget[] */
};

/* pysym.c */
uint64_t sym_hash64(uint64_t x);
int sym_tag_is(const struct pysym_cache *c, const struct tag *x, const struct py_target *t);
struct tag sym_tag_of(const struct pysym_cache *c, const struct py_target *t);
uint64_t sym_keep_rank(const struct pysym_cache *c, const struct tag *x, uint64_t use);
int sym_str_from(const struct py_target *t, const uint8_t *obj, size_t got, char *buf,
		 size_t len);
int sym_read_bytes_obj(const struct py_target *t, uint64_t addr, uint8_t **data,
		       uint32_t *dlen);
int sym_bytes_from(const struct py_target *t, const uint8_t *obj, size_t got, uint8_t **data,
		   uint32_t *dlen);
uint64_t sym_field_ptr(const uint8_t *code, uint16_t off);
enum first_arg sym_kind_of(const char *first);
enum first_arg sym_arg_kind(const struct py_target *t, uint64_t addr);
void sym_fp_span(const struct py_code_offsets *o, uint16_t *lo, uint16_t *len);
uint64_t sym_fingerprint(const struct py_code_offsets *o, const uint8_t *buf, uint16_t base);
struct entry *sym_find(struct pysym_cache *c, const struct py_target *t, uint64_t code);
void sym_entry_clear(struct entry *e);

/* pycapture.c */
void cap_clear(struct capture *k);
struct capture *cap_find(struct pysym_cache *c, const struct py_target *t, uint64_t code,
			 struct capture **victim);
int cap_agrees(struct pysym_cache *c, const struct py_target *t, const struct entry *e);
int cap_entry(struct pysym_cache *c, const struct py_target *t, uint64_t code,
	      struct entry *e);
int cap_load(struct pysym_cache *c, const struct py_target *t, const struct capture *k,
	     struct entry *e);

#endif
