/*
 * libFuzzer target for merge_stacks() (src/pipeline/merge.c).
 *
 * Input: native and Python frame counts (2 bytes each), an output limit
 * (2 bytes), then one byte per native frame (bit 0: eval-loop frame) and
 * one per Python frame (bit 0: entry frame); missing bytes are 0. The
 * inputs are exact-size heap arrays. Checks, against a merge with room
 * for everything: each Python frame appears once and in order, native
 * frames in order, non-eval native frames all appear, eval frames at
 * most once, and a limited merge is a prefix of the full one.
 */
#include "merge.h"
#include "fuzz_common.h"

#define MAX_NATIVE	300	/* UNWIND_MAX_FRAMES is smaller */
#define MAX_PYTHON	1100	/* PYPERF_MAX_FRAMES is smaller */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	size_t nnative = fuzz_u16(&in) % (MAX_NATIVE + 1);
	size_t npython = fuzz_u16(&in) % (MAX_PYTHON + 1);
	size_t max = fuzz_u16(&in) % (MAX_NATIVE + MAX_PYTHON + 2);
	uint8_t *eval = malloc(nnative ? nnative : 1);
	uint8_t *entry = malloc(npython ? npython : 1);
	struct merge_frame *full = malloc((nnative + npython) * sizeof(*full) + 1);
	struct merge_frame *part = malloc((max ? max : 1) * sizeof(*part));
	size_t n, np, next_py = 0, last_native = 0, nontrivial = 0;
	unsigned mism, mism2;
	int seen_native = 0;

	if (!eval || !entry || !full || !part)
		abort();
	for (size_t i = 0; i < nnative; i++) {
		eval[i] = fuzz_u8(&in) & 1;
		nontrivial += !eval[i];
	}
	for (size_t j = 0; j < npython; j++)
		entry[j] = fuzz_u8(&in) & 1;

	n = merge_stacks(eval, nnative, entry, npython, full, nnative + npython, &mism);
	FUZZ_CHECK(n <= nnative + npython);
	FUZZ_CHECK(mism <= nnative + 1);
	for (size_t k = 0; k < n; k++) {
		const struct merge_frame *f = &full[k];

		if (f->kind == MERGE_PYTHON) {
			FUZZ_CHECK(f->index == next_py);
			next_py++;
		} else {
			FUZZ_CHECK(f->kind == MERGE_NATIVE);
			FUZZ_CHECK(f->index < nnative);
			FUZZ_CHECK(!seen_native || f->index > last_native);
			seen_native = 1;
			last_native = f->index;
			nontrivial -= !eval[f->index];
		}
	}
	FUZZ_CHECK(next_py == npython);
	FUZZ_CHECK(nontrivial == 0);

	np = merge_stacks(eval, nnative, entry, npython, part, max, &mism2);
	FUZZ_CHECK(np <= max && np == (n < max ? n : max));
	FUZZ_CHECK(mism2 == mism);
	for (size_t k = 0; k < np; k++)
		FUZZ_CHECK(part[k].kind == full[k].kind && part[k].index == full[k].index);

	free(eval);
	free(entry);
	free(full);
	free(part);
	return 0;
}
