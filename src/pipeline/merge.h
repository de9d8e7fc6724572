/* Native + Python frames -> one call stack. Pure; unit-tested. */
#ifndef MERGE_H
#define MERGE_H

#include <stddef.h>
#include <stdint.h>

enum merge_kind { MERGE_NATIVE = 0, MERGE_PYTHON = 1 };

struct merge_frame {
	uint8_t kind;		/* enum merge_kind */
	uint32_t index;		/* into the native or the Python input */
};

/*
 * native_is_eval[i]: native frame i (leaf first) is a CPython eval-loop
 * call. py_entry[j]: Python frame j (leaf first) is the outermost frame of
 * its eval-loop call. Each eval-loop native frame is replaced, innermost
 * first, by its group of Python frames, so C frames called from Python sit
 * above the Python frame that called them and Python called back from C
 * sits above that C code. Python groups left over when the native stack
 * ends early go at the root; eval frames without a group stay native.
 * Writes at most max frames, leaf first, and returns their number;
 * *mismatches counts groups or eval frames that had no partner.
 */
size_t merge_stacks(const uint8_t *native_is_eval, size_t nnative,
		    const uint8_t *py_entry, size_t npython,
		    struct merge_frame *out, size_t max, unsigned *mismatches);

/*
 * The merge by address (3.11+, bpf/pyperf.h "Eval-loop anchors"):
 * native_group[i] is the eval-loop group whose anchor native frame i
 * holds, -1 for other frames; py_group[j] the group of Python frame j
 * (leaf first, non-decreasing). An eval-loop frame is replaced by the
 * Python frames of its group and of earlier groups no native frame held
 * (their anchor unread, their frame not unwound), which count as
 * mismatches. One with no frame left stays native (its group had none to
 * show). Groups left when the native stack ends go at the root, a
 * mismatch if there was a native stack at all.
 */
size_t merge_by_group(const int32_t *native_group, size_t nnative,
		      const uint32_t *py_group, size_t npython,
		      struct merge_frame *out, size_t max, unsigned *mismatches);

#endif
