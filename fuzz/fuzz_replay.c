/*
 * libFuzzer target for recordings (src/record/recording.c) and their replay
 * (src/record/replay.c): the input is a recording. An input that does not start
 * with the "PYPFREC1" header is taken as a stored (uncompressed) body, so
 * the fuzzer mutates records directly; one that does goes through the
 * header checks and zlib. What loads is replayed whole: targets (layouts
 * rebuilt from the recorded _Py_DebugOffsets), samples through
 * sample_add() (Python frames against recorded memory, native stacks
 * unwound and symbolized against recorded, reduced ELF files written to a
 * temporary directory), writes encoded as pprof and collapsed text.
 * Checks: the replay never adds more samples than the recording holds,
 * the seam's hooks are removed and the temporary directory deleted.
 */
#define _GNU_SOURCE
#include "record.h"
#include "replay.h"
#include "collapsed.h"
#include "elffile.h"
#include "pprof_write.h"
#include "proc.h"
#include "fuzz_common.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define BODY_MAX	(4u << 20)	/* decompressed bytes */
#define FILE_MAX	(1u << 20)	/* a recorded file's size */

static int encode(void *ctx, const struct profile *p, int64_t wall_ns, char *path,
		  size_t pathlen, char *err, size_t errlen)
{
	uint8_t *pb = NULL;
	char *text = NULL;
	size_t len = 0;

	(void)ctx;
	(void)wall_ns;
	snprintf(path, pathlen, "fuzz");
	if (pprof_encode(p, 0, &pb, &len) == 0)
		free(pb);
	if (collapsed_encode(p, &text, &len) == 0)
		free(text);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec_limits lim = { .max_body = BODY_MAX, .max_file = FILE_MAX };
	struct replay_stats st;
	struct recording *r;
	struct stat sb;
	char err[512], dir[256];
	uint8_t *in;
	size_t n;

	if (size >= 8 && memcmp(data, REC_MAGIC, 8) == 0) {
		in = fuzz_dup(data, size);
		n = size;
	} else {
		n = size + 16;
		in = malloc(n);
		if (!in)
			abort();
		memcpy(in, REC_MAGIC, 8);
		memset(in + 8, 0, 8);
		in[8] = REC_VERSION;
		in[12] = REC_F_STORED;
		memcpy(in + 16, data, size);
	}
	r = rec_load_mem(in, n, &lim, err, sizeof(err));
	free(in);		/* the recording keeps its own copy */
	if (!r)
		return 0;
	FUZZ_CHECK(r->body_len <= BODY_MAX);
	if (rec_replay_begin(r, err, sizeof(err)) == 0) {
		uint64_t here = 0x1122334455667788ull, got = 0;
		struct iovec l = { &got, 8 }, rm = { &here, 8 };

		/* The recording, not the live system, serves the replay's
		 * source: this process's own memory is not recorded. */
		FUZZ_CHECK(target_readv(rec_replay_src(r), getpid(), &l, 1, &rm, 1) == -1 &&
			   got == 0);
		snprintf(dir, sizeof(dir), "%s", r->dir);
		replay_run(r, encode, NULL, -1, 0, &st);
		FUZZ_CHECK(st.samples + st.skipped <= r->nsamples);
		rec_replay_end(r);
		FUZZ_CHECK(stat(dir, &sb) != 0);
	}
	rec_free(r);
	return 0;
}
