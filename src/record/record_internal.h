/*
 * What the files of src/record/ share and callers do not: limits of the
 * format both the writer and the reader hold to, and the index of a
 * loaded recording, which recording.c builds and replay_src.c serves
 * reads from.
 */
#ifndef RECORD_INTERNAL_H
#define RECORD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

#define REC_HDR_LEN		16	/* magic, version, flags */
#define REC_MAX_OBJECTS		65536	/* file object ids: the writer's cap, the reader's bound */

/* One recorded read of target memory. */
struct rec_mem {
	uint32_t pid, len;
	uint64_t addr, seq;
	const uint8_t *p;		/* NULL: the read failed */
	const uint8_t *at;		/* the record, for a stable order */
};

/* One /proc/PID/maps snapshot. */
struct rec_maps {
	uint32_t pid, gen;
	const uint8_t *text;
	size_t len;
};

/* One file object: its size and the extents of its reduced image. */
struct rec_file {
	int present, has_content;
	uint64_t size;
	uint32_t n;
	const uint8_t *ext;		/* n x (u64 offset, u32 length) */
	const uint8_t *data;
};

/* A path as it resolved at seq. */
struct rec_path {
	const uint8_t *path;		/* not NUL-terminated */
	size_t len;
	uint32_t obj;
	uint64_t seq;
};

/* Replay: how many times pid became a target so far. */
struct rec_gen {
	uint32_t pid, gen;
};

/* Makes *v (of elem-sized entries, capacity *cap) hold need; -1 when out
 * of memory, *v unchanged. */
int rec_grow(void **v, size_t *cap, size_t need, size_t elem);
/* The order of recording.paths by path bytes (memcmp, shorter first). */
int rec_path_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

#endif
