/* GENERATED FILE - DO NOT EDIT.  Regenerate with src/gen-offsets.py.
 *
 * Per-minor-version offsets of the CPython structures pyperf-pprof reads,
 * taken by gdb from the DWARF debug info of these interpreters
 * ($PYENV_ROOT is the pyenv root, by default /root/.pyenv):
 *
 *   3.6.15   $PYENV_ROOT/versions/3.6.15/lib/libpython3.6m.so
 *   3.7.16   $PYENV_ROOT/versions/3.7.16/lib/libpython3.7m.so
 *   3.8.18   $PYENV_ROOT/versions/3.8.18/lib/libpython3.8.so
 *   3.9.18   $PYENV_ROOT/versions/3.9.18/lib/libpython3.9.so
 *   3.10.13  $PYENV_ROOT/versions/3.10.13/lib/libpython3.10.so
 *   3.11.7   $PYENV_ROOT/versions/3.11.7/lib/libpython3.11.so
 *   3.12.1   $PYENV_ROOT/versions/3.12.1/lib/libpython3.12.so
 *   3.13.0   $PYENV_ROOT/versions/3.13.0/lib/libpython3.13.so
 *
 * Regenerate (and review the diff) with:
 *
 *   python3 src/gen-offsets.py \
 *	$PYENV_ROOT/versions/3.6.15/lib/libpython3.6m.so \
 *	$PYENV_ROOT/versions/3.7.16/lib/libpython3.7m.so \
 *	$PYENV_ROOT/versions/3.8.18/lib/libpython3.8.so \
 *	$PYENV_ROOT/versions/3.9.18/lib/libpython3.9.so \
 *	$PYENV_ROOT/versions/3.10.13/lib/libpython3.10.so \
 *	$PYENV_ROOT/versions/3.11.7/lib/libpython3.11.so \
 *	$PYENV_ROOT/versions/3.12.1/lib/libpython3.12.so \
 *	$PYENV_ROOT/versions/3.13.0/lib/libpython3.13.so
 *
 * and check it against every installed interpreter with
 * "python3 src/gen-offsets.py --check" or tests/check-offsets.sh.
 *
 * PYPERF_NO_FIELD marks a field the version does not have.  The u32
 * runtime_* offsets use 0xffffffff for that: 3.6 has no _PyRuntime (use
 * the globals interp_head and _PyThreadState_Current), and 3.12+ has no
 * gilstate.tstate_current.  3.13+ entries are a fallback: at run time
 * those versions publish their own offsets in _Py_DebugOffsets, and the
 * generator checked that both agree.  frame_owner values differ by
 * version (3.11 has no CSTACK): the comment above each frame_owner
 * lists that version's FRAME_OWNED_BY_* values.
 */

#include <stddef.h>

#include "pyoffsets.h"

const struct py_layout py_layouts[] = {
	{	/* 3.6.15 libpython3.6m.so */
		.version_hex = 0x03060ff0,
		.source = "3.6.15 libpython3.6m.so",
		.runtime_interp_head = 0xffffffff,
		.runtime_gil_holder = 0xffffffff,
		.walk = {
			.interp_tstate_head = 8,
			.ts_next = 8,
			.ts_frame = 24,
			.cframe_current_frame = PYPERF_NO_FIELD,
			.ts_thread_id = 152,
			.ts_native_thread_id = PYPERF_NO_FIELD,
			.frame_back = 24,
			.frame_code = 32,
			.frame_lasti = 120,
			.frame_owner = PYPERF_NO_FIELD,
			.frame_localsplus = 376,
			.frame_is_entry = PYPERF_NO_FIELD,
			.frame_kind = PY_FRAMES_OBJECT,
			.tid_kind = PY_TID_PTHREAD,
			.code_tag_mask = 0,
		},
		.code = {
			.co_filename = 96,
			.co_name = 104,
			.co_qualname = PYPERF_NO_FIELD,
			.co_firstlineno = 36,
			.co_linetable = 112,
			.co_code_adaptive = PYPERF_NO_FIELD,
			.co_argcount = 16,
			.co_varnames = 64,
			.unicode_state = 32,
			.unicode_length = 16,
			.unicode_ascii_size = 48,
			.unicode_compact_size = 72,
			.bytes_size = 16,
			.bytes_sval = 32,
			.tuple_items = 24,
			.ob_type = 8,
			.type_name = 24,
		},
	},
	{	/* 3.7.16 libpython3.7m.so */
		.version_hex = 0x030710f0,
		.source = "3.7.16 libpython3.7m.so",
		.runtime_interp_head = 24,
		.runtime_gil_holder = 1480,
		.walk = {
			.interp_tstate_head = 8,
			.ts_next = 8,
			.ts_frame = 24,
			.cframe_current_frame = PYPERF_NO_FIELD,
			.ts_thread_id = 176,
			.ts_native_thread_id = PYPERF_NO_FIELD,
			.frame_back = 24,
			.frame_code = 32,
			.frame_lasti = 104,
			.frame_owner = PYPERF_NO_FIELD,
			.frame_localsplus = 360,
			.frame_is_entry = PYPERF_NO_FIELD,
			.frame_kind = PY_FRAMES_OBJECT,
			.tid_kind = PY_TID_PTHREAD,
			.code_tag_mask = 0,
		},
		.code = {
			.co_filename = 96,
			.co_name = 104,
			.co_qualname = PYPERF_NO_FIELD,
			.co_firstlineno = 36,
			.co_linetable = 112,
			.co_code_adaptive = PYPERF_NO_FIELD,
			.co_argcount = 16,
			.co_varnames = 64,
			.unicode_state = 32,
			.unicode_length = 16,
			.unicode_ascii_size = 48,
			.unicode_compact_size = 72,
			.bytes_size = 16,
			.bytes_sval = 32,
			.tuple_items = 24,
			.ob_type = 8,
			.type_name = 24,
		},
	},
	{	/* 3.8.18 libpython3.8.so */
		.version_hex = 0x030812f0,
		.source = "3.8.18 libpython3.8.so",
		.runtime_interp_head = 32,
		.runtime_gil_holder = 1368,
		.walk = {
			.interp_tstate_head = 8,
			.ts_next = 8,
			.ts_frame = 24,
			.cframe_current_frame = PYPERF_NO_FIELD,
			.ts_thread_id = 176,
			.ts_native_thread_id = PYPERF_NO_FIELD,
			.frame_back = 24,
			.frame_code = 32,
			.frame_lasti = 104,
			.frame_owner = PYPERF_NO_FIELD,
			.frame_localsplus = 360,
			.frame_is_entry = PYPERF_NO_FIELD,
			.frame_kind = PY_FRAMES_OBJECT,
			.tid_kind = PY_TID_PTHREAD,
			.code_tag_mask = 0,
		},
		.code = {
			.co_filename = 104,
			.co_name = 112,
			.co_qualname = PYPERF_NO_FIELD,
			.co_firstlineno = 40,
			.co_linetable = 120,
			.co_code_adaptive = PYPERF_NO_FIELD,
			.co_argcount = 16,
			.co_varnames = 72,
			.unicode_state = 32,
			.unicode_length = 16,
			.unicode_ascii_size = 48,
			.unicode_compact_size = 72,
			.bytes_size = 16,
			.bytes_sval = 32,
			.tuple_items = 24,
			.ob_type = 8,
			.type_name = 24,
		},
	},
	{	/* 3.9.18 libpython3.9.so */
		.version_hex = 0x030912f0,
		.source = "3.9.18 libpython3.9.so",
		.runtime_interp_head = 32,
		.runtime_gil_holder = 568,
		.walk = {
			.interp_tstate_head = 8,
			.ts_next = 8,
			.ts_frame = 24,
			.cframe_current_frame = PYPERF_NO_FIELD,
			.ts_thread_id = 176,
			.ts_native_thread_id = PYPERF_NO_FIELD,
			.frame_back = 24,
			.frame_code = 32,
			.frame_lasti = 104,
			.frame_owner = PYPERF_NO_FIELD,
			.frame_localsplus = 360,
			.frame_is_entry = PYPERF_NO_FIELD,
			.frame_kind = PY_FRAMES_OBJECT,
			.tid_kind = PY_TID_PTHREAD,
			.code_tag_mask = 0,
		},
		.code = {
			.co_filename = 104,
			.co_name = 112,
			.co_qualname = PYPERF_NO_FIELD,
			.co_firstlineno = 40,
			.co_linetable = 120,
			.co_code_adaptive = PYPERF_NO_FIELD,
			.co_argcount = 16,
			.co_varnames = 72,
			.unicode_state = 32,
			.unicode_length = 16,
			.unicode_ascii_size = 48,
			.unicode_compact_size = 72,
			.bytes_size = 16,
			.bytes_sval = 32,
			.tuple_items = 24,
			.ob_type = 8,
			.type_name = 24,
		},
	},
	{	/* 3.10.13 libpython3.10.so */
		.version_hex = 0x030a0df0,
		.source = "3.10.13 libpython3.10.so",
		.runtime_interp_head = 32,
		.runtime_gil_holder = 568,
		.walk = {
			.interp_tstate_head = 8,
			.ts_next = 8,
			.ts_frame = 24,
			.cframe_current_frame = PYPERF_NO_FIELD,
			.ts_thread_id = 176,
			.ts_native_thread_id = PYPERF_NO_FIELD,
			.frame_back = 24,
			.frame_code = 32,
			.frame_lasti = 96,
			.frame_owner = PYPERF_NO_FIELD,
			.frame_localsplus = 352,
			.frame_is_entry = PYPERF_NO_FIELD,
			.frame_kind = PY_FRAMES_OBJECT,
			.tid_kind = PY_TID_PTHREAD,
			.code_tag_mask = 0,
		},
		.code = {
			.co_filename = 104,
			.co_name = 112,
			.co_qualname = PYPERF_NO_FIELD,
			.co_firstlineno = 40,
			.co_linetable = 120,
			.co_code_adaptive = PYPERF_NO_FIELD,
			.co_argcount = 16,
			.co_varnames = 72,
			.unicode_state = 32,
			.unicode_length = 16,
			.unicode_ascii_size = 48,
			.unicode_compact_size = 72,
			.bytes_size = 16,
			.bytes_sval = 32,
			.tuple_items = 24,
			.ob_type = 8,
			.type_name = 24,
		},
	},
	{	/* 3.11.7 libpython3.11.so */
		.version_hex = 0x030b07f0,
		.source = "3.11.7 libpython3.11.so",
		.runtime_interp_head = 40,
		.runtime_gil_holder = 576,
		.walk = {
			.interp_tstate_head = 16,
			.ts_next = 8,
			.ts_frame = 56,
			.cframe_current_frame = 8,
			.ts_thread_id = 152,
			.ts_native_thread_id = 160,
			.frame_back = 48,
			.frame_code = 32,
			.frame_lasti = 56,
			/* THREAD=0 GENERATOR=1 FRAME_OBJECT=2 */
			.frame_owner = 69,
			.frame_localsplus = PYPERF_NO_FIELD,
			.frame_is_entry = 68,
			.frame_kind = PY_FRAMES_CFRAME,
			.tid_kind = PY_TID_NATIVE,
			.code_tag_mask = 0,
		},
		.code = {
			.co_filename = 112,
			.co_name = 120,
			.co_qualname = 128,
			.co_firstlineno = 72,
			.co_linetable = 136,
			.co_code_adaptive = 184,
			.co_argcount = 56,
			.co_varnames = PYPERF_NO_FIELD,
			.unicode_state = 32,
			.unicode_length = 16,
			.unicode_ascii_size = 48,
			.unicode_compact_size = 72,
			.bytes_size = 16,
			.bytes_sval = 32,
			.tuple_items = 24,
			.ob_type = 8,
			.type_name = 24,
		},
	},
	{	/* 3.12.1 libpython3.12.so */
		.version_hex = 0x030c01f0,
		.source = "3.12.1 libpython3.12.so",
		.runtime_interp_head = 40,
		.runtime_gil_holder = 0xffffffff,
		.walk = {
			.interp_tstate_head = 72,
			.ts_next = 8,
			.ts_frame = 56,
			.cframe_current_frame = 0,
			.ts_thread_id = 136,
			.ts_native_thread_id = 144,
			.frame_back = 8,
			.frame_code = 0,
			.frame_lasti = 56,
			/* THREAD=0 GENERATOR=1 FRAME_OBJECT=2 CSTACK=3 */
			.frame_owner = 70,
			.frame_localsplus = PYPERF_NO_FIELD,
			.frame_is_entry = PYPERF_NO_FIELD,
			.frame_kind = PY_FRAMES_CFRAME,
			.tid_kind = PY_TID_NATIVE,
			.code_tag_mask = 0,
		},
		.code = {
			.co_filename = 112,
			.co_name = 120,
			.co_qualname = 128,
			.co_firstlineno = 68,
			.co_linetable = 136,
			.co_code_adaptive = 192,
			.co_argcount = 52,
			.co_varnames = PYPERF_NO_FIELD,
			.unicode_state = 32,
			.unicode_length = 16,
			.unicode_ascii_size = 40,
			.unicode_compact_size = 56,
			.bytes_size = 16,
			.bytes_sval = 32,
			.tuple_items = 24,
			.ob_type = 8,
			.type_name = 24,
		},
	},
	{	/* 3.13.0 libpython3.13.so */
		.version_hex = 0x030d00f0,
		.source = "3.13.0 libpython3.13.so",
		.runtime_interp_head = 632,
		.runtime_gil_holder = 0xffffffff,
		.walk = {
			.interp_tstate_head = 7344,
			.ts_next = 8,
			.ts_frame = 72,
			.cframe_current_frame = PYPERF_NO_FIELD,
			.ts_thread_id = 152,
			.ts_native_thread_id = 160,
			.frame_back = 8,
			.frame_code = 0,
			.frame_lasti = 56,
			/* THREAD=0 GENERATOR=1 FRAME_OBJECT=2 CSTACK=3 */
			.frame_owner = 70,
			.frame_localsplus = PYPERF_NO_FIELD,
			.frame_is_entry = PYPERF_NO_FIELD,
			.frame_kind = PY_FRAMES_DIRECT,
			.tid_kind = PY_TID_NATIVE,
			.code_tag_mask = 0,
		},
		.code = {
			.co_filename = 112,
			.co_name = 120,
			.co_qualname = 128,
			.co_firstlineno = 68,
			.co_linetable = 136,
			.co_code_adaptive = 200,
			.co_argcount = 52,
			.co_varnames = PYPERF_NO_FIELD,
			.unicode_state = 32,
			.unicode_length = 16,
			.unicode_ascii_size = 40,
			.unicode_compact_size = 56,
			.bytes_size = 16,
			.bytes_sval = 32,
			.tuple_items = 24,
			.ob_type = 8,
			.type_name = 24,
		},
	},
};

const unsigned py_layouts_count = sizeof(py_layouts) / sizeof(py_layouts[0]);

const struct py_layout *py_layout_find(unsigned major, unsigned minor)
{
	unsigned i;

	for (i = 0; i < py_layouts_count; i++) {
		uint32_t v = py_layouts[i].version_hex;

		if (v >> 24 == major && (v >> 16 & 0xff) == minor)
			return &py_layouts[i];
	}
	return NULL;
}
