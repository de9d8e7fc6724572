/*
 * In-memory pprof profile: interned strings, deduplicated functions,
 * mappings and locations, and hashed aggregation of samples.
 *
 * Ids handed out are 1..N in insertion order, which is also the order the
 * writer emits them in, so pprof's "id N is entry N" rule holds by
 * construction.  Every string that reaches the profile goes through
 * profile_intern(), which replaces invalid UTF-8 with U+FFFD: the strings
 * come from the profiled process and protobuf readers reject bad UTF-8.
 *
 * Errors: functions returning an id return 0, functions returning int or
 * a string index return -1; errno is ENOMEM, EINVAL (bad argument: unknown
 * id, too many labels, ...) or EBUSY (sample types changed after the first
 * sample).  The profile is left as it was, apart from strings that may
 * have been interned on the way, which is harmless.
 */
#ifndef PROFILE_H
#define PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Labels per sample, so a sample's key stays small and fixed-size. */
#define PROFILE_MAX_LABELS 8

struct profile;

struct profile_mapping_desc {
	uint64_t memory_start;
	uint64_t memory_limit;
	uint64_t file_offset;
	const char *filename;		/* NULL means "" */
	const char *build_id;		/* NULL means "" */
	bool has_functions;
	bool has_filenames;
	bool has_line_numbers;
	bool has_inline_frames;
};

/* One source line of a location; the last of several is the caller. */
struct profile_line {
	uint64_t function_id;
	int64_t line;
};

/* A sample label: numeric when str is NULL (num_unit may be NULL). */
struct profile_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit;
};

struct profile *profile_new(void);
void profile_free(struct profile *p);

/* Sample types must all be added before the first sample; no '-' in type. */
int profile_add_sample_type(struct profile *p, const char *type,
			    const char *unit);
/*
 * Selects an already added sample type as the one readers show first.
 * Add that type last as well: readers that ignore default_sample_type
 * (and older speedscope, which misreads it) show the last type.
 */
int profile_set_default_sample_type(struct profile *p, const char *type);
int profile_set_period(struct profile *p, const char *type, const char *unit,
		       int64_t period);
void profile_set_time(struct profile *p, int64_t time_nanos,
		      int64_t duration_nanos);
int profile_add_comment(struct profile *p, const char *text);
/* Drops the comments (their strings stay interned). */
void profile_clear_comments(struct profile *p);

/* String table index of s (NULL or "" is 0), or -1. */
int64_t profile_intern(struct profile *p, const char *s);

/*
 * system_name may be NULL.  It is stored as "" when NULL or equal to name:
 * pprof reads name == system_name as a mangled name to demangle, and its
 * heuristics would turn "<module>" into "".  Demangle native names first.
 */
uint64_t profile_function(struct profile *p, const char *name,
			  const char *system_name, const char *filename,
			  int64_t start_line);
uint64_t profile_mapping(struct profile *p,
			 const struct profile_mapping_desc *m);
/*
 * The profile's main mapping: pprof takes the first mapping listed for
 * the program profiled (`File:` in go tool pprof, the web UI's title).
 * A mapping named name, with no address range, is listed first. -1 when
 * out of memory.
 */
int profile_set_main(struct profile *p, const char *name);
/* mapping_id may be 0 (no mapping); function_id must exist. */
uint64_t profile_location(struct profile *p, uint64_t mapping_id,
			  uint64_t address, uint64_t function_id,
			  int64_t line);
/* Same with inlined frames: lines[0] innermost, lines[nlines - 1] caller. */
uint64_t profile_location_lines(struct profile *p, uint64_t mapping_id,
				uint64_t address,
				const struct profile_line *lines,
				size_t nlines);

/* Location loc of profile src, with its mapping and functions, interned
 * in dst (an interval's stack still open when the next begins): its id in
 * dst, or 0 (unknown loc, more than PROFILE_COPY_LINES lines, no memory). */
#define PROFILE_COPY_LINES 64
uint64_t profile_copy_location(struct profile *dst, const struct profile *src, uint64_t loc);

/*
 * Adds values (one per sample type) to the sample for this stack (location
 * ids, leaf first) and label set, creating it if new.  Label order does
 * not matter.
 */
int profile_add_sample(struct profile *p, const uint64_t *locs, size_t nlocs,
		       const struct profile_label *labels, size_t nlabels,
		       const int64_t *values);

/* Number of distinct samples. */
size_t profile_sample_count(const struct profile *p);
/* Bytes the profile holds (its arrays as allocated, tables, strings),
 * without the allocator's own overhead. */
size_t profile_bytes(const struct profile *p);

/*
 * Read-only view of the stored profile, for the writer and for tests.
 * Everything below is in terms of string indexes and ids; pointers are
 * valid until the next call that modifies the profile.
 */
struct profile_value_type {
	int64_t type;
	int64_t unit;
};

struct profile_function_rec {
	int64_t name;
	int64_t system_name;
	int64_t filename;
	int64_t start_line;
};

struct profile_mapping_rec {
	uint64_t memory_start;
	uint64_t memory_limit;
	uint64_t file_offset;
	int64_t filename;
	int64_t build_id;
	bool has_functions;
	bool has_filenames;
	bool has_line_numbers;
	bool has_inline_frames;
};

struct profile_location_rec {
	uint64_t mapping_id;
	uint64_t address;
	uint32_t line_off;		/* into profile_view.lines */
	uint32_t nlines;
};

/* Exactly one of str (> 0) or the numeric pair is meaningful. */
struct profile_label_rec {
	int64_t key;
	int64_t str;
	int64_t num;
	int64_t num_unit;
};

struct profile_sample_rec {
	uint32_t loc_off;		/* into profile_view.stack_ids */
	uint32_t nlocs;
	uint32_t label_off;		/* into profile_view.labels */
	uint32_t nlabels;
	/* values: profile_view.values + index * nsample_types */
};

struct profile_view {
	const char *const *strings;
	size_t nstrings;
	const struct profile_value_type *sample_types;
	size_t nsample_types;
	struct profile_value_type period_type;
	int64_t period;
	int64_t time_nanos;
	int64_t duration_nanos;
	int64_t default_sample_type;	/* string index, 0 if unset */
	const int64_t *comments;
	size_t ncomments;
	const struct profile_function_rec *functions;	/* id = index + 1 */
	size_t nfunctions;
	const struct profile_mapping_rec *mappings;	/* id = index + 1 */
	size_t nmappings;
	uint64_t main_mapping;		/* to list first; 0: none set */
	const struct profile_location_rec *locations;	/* id = index + 1 */
	size_t nlocations;
	const struct profile_line *lines;
	size_t nlines;
	const struct profile_sample_rec *samples;
	size_t nsamples;
	const uint64_t *stack_ids;
	const struct profile_label_rec *labels;
	size_t nlabels;
	const int64_t *values;
};

void profile_get_view(const struct profile *p, struct profile_view *v);

/* A number no other profile of this process has: caches of ids of one
 * profile tell by it when the profile they refer to changed. */
uint64_t profile_serial(const struct profile *p);

#endif /* PROFILE_H */
