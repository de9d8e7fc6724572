/* The merge of native and Python frames; see merge.h for the rule. */
#include "merge.h"

static size_t emit(struct merge_frame *out, size_t n, size_t max, uint8_t kind,
		   uint32_t index)
{
	if (n < max) {
		out[n].kind = kind;
		out[n].index = index;
		n++;
	}
	return n;
}

/* Emits Python frames from *py up to and including the end of its group
 * (an entry frame, or the last frame). */
static size_t emit_group(const uint8_t *py_entry, size_t npython, size_t *py,
			 struct merge_frame *out, size_t n, size_t max)
{
	while (*py < npython) {
		size_t j = (*py)++;

		n = emit(out, n, max, MERGE_PYTHON, (uint32_t)j);
		if (py_entry[j])
			break;
	}
	return n;
}

size_t merge_stacks(const uint8_t *native_is_eval, size_t nnative,
		    const uint8_t *py_entry, size_t npython,
		    struct merge_frame *out, size_t max, unsigned *mismatches)
{
	size_t n = 0, py = 0;

	*mismatches = 0;
	for (size_t i = 0; i < nnative; i++) {
		if (!native_is_eval[i]) {
			n = emit(out, n, max, MERGE_NATIVE, (uint32_t)i);
			continue;
		}
		if (py == npython) {
			/* An eval loop with no Python frame left: the frame
			 * walk was cut short, or the loop is between frames. */
			(*mismatches)++;
			n = emit(out, n, max, MERGE_NATIVE, (uint32_t)i);
			continue;
		}
		n = emit_group(py_entry, npython, &py, out, n, max);
	}
	/* The native unwind ended before the outermost eval loop. */
	if (py < npython && nnative)
		(*mismatches)++;
	while (py < npython)
		n = emit(out, n, max, MERGE_PYTHON, (uint32_t)py++);
	return n;
}

size_t merge_by_group(const int32_t *native_group, size_t nnative,
		      const uint32_t *py_group, size_t npython,
		      struct merge_frame *out, size_t max, unsigned *mismatches)
{
	size_t n = 0, py = 0;

	*mismatches = 0;
	for (size_t i = 0; i < nnative; i++) {
		int32_t g = native_group[i];

		if (g < 0 || py == npython || py_group[py] > (uint32_t)g) {
			n = emit(out, n, max, MERGE_NATIVE, (uint32_t)i);
			continue;
		}
		if (py_group[py] < (uint32_t)g)
			(*mismatches)++;	/* a group no frame held */
		while (py < npython && py_group[py] <= (uint32_t)g)
			n = emit(out, n, max, MERGE_PYTHON, (uint32_t)py++);
	}
	if (py < npython && nnative)
		(*mismatches)++;
	while (py < npython)
		n = emit(out, n, max, MERGE_PYTHON, (uint32_t)py++);
	return n;
}
