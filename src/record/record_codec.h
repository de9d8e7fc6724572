/*
 * The little-endian encoding every record payload uses (record.h has the
 * format), shared by the writer (recorder.c) and the readers
 * (recording.c, replay_src.c) so both sides agree byte for byte. Internal
 * to src/record/.
 */
#ifndef RECORD_CODEC_H
#define RECORD_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* A growing payload; a failed allocation sticks in oom, so a record is
 * built without checks and dropped whole at the end. */
struct rec_buf {
	uint8_t *p;
	size_t n, cap;
	int oom;
};

void rec_put(struct rec_buf *b, const void *p, size_t n);
void rec_put_u32(struct rec_buf *b, uint32_t v);
void rec_put_u64(struct rec_buf *b, uint64_t v);
/* A str (u16 length + bytes) of s up to its first NUL, cut at 65535
 * bytes. max: the size of s's array (nothing past it is read), or
 * SIZE_MAX for a NUL-terminated string. NULL: the empty string. */
void rec_put_str(struct rec_buf *b, const char *s, size_t max);

uint32_t rec_get_u32(const uint8_t *p);
uint64_t rec_get_u64(const uint8_t *p);

/* A cursor over one payload: reads past its end fail and stick in bad,
 * so a decoder reads every field and checks once. */
struct rec_cur {
	const uint8_t *p;
	size_t n;
	int bad;
};

const uint8_t *rec_take(struct rec_cur *c, size_t n);
uint32_t rec_take_u32(struct rec_cur *c);
uint64_t rec_take_u64(struct rec_cur *c);
/* A str into out (cap bytes, NUL-terminated, truncated). */
void rec_take_str(struct rec_cur *c, char *out, size_t cap);
/* A str as it lies in the payload (not NUL-terminated); NULL if cut. */
const uint8_t *rec_take_strp(struct rec_cur *c, size_t *len);

/* Never 0, so 0 can mean "no hash" in the recorder's tables. */
uint64_t rec_hash(const void *data, size_t n, uint64_t seed);

#endif
