/*
 * One row per CPython minor version and build: what the version does,
 * as data (src/python/pylayout.h), and from 3.13 on the field list of its
 * _Py_DebugOffsets, transcribed from CPython's headers; where each list
 * came from is written next to it. The offsets themselves are never
 * typed in here: up to 3.12 they are generated from DWARF
 * (pyoffsets_table.c), from 3.13 the target publishes them. The two
 * lookups at the end are the only way to a row.
 */
#include "pylayout.h"

#include "pyperf.h"

#define FIELDS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* 3.13 and 3.13t: Include/internal/pycore_runtime.h at v3.13.0 (one
 * struct for both builds; checked against the DWARF of 3.13.0 by
 * tests/check-debugoffsets-live.sh, and the same list is in
 * Include/internal/pycore_debug_offsets.h of python/cpython@01d08a85). */
static const struct py_debug_group dbg_313[] = {
	{ "runtime_state", FIELDS("size", "finalizing", "interpreters_head") },
	{ "interpreter_state", FIELDS("size", "id", "next", "threads_head", "gc",
		"imports_modules", "sysdict", "builtins", "ceval_gil",
		"gil_runtime_state", "gil_runtime_state_enabled",
		"gil_runtime_state_locked", "gil_runtime_state_holder") },
	{ "thread_state", FIELDS("size", "prev", "next", "interp", "current_frame",
		"thread_id", "native_thread_id", "datastack_chunk", "status") },
	{ "interpreter_frame", FIELDS("size", "previous", "executable", "instr_ptr",
		"localsplus", "owner") },
	{ "code_object", FIELDS("size", "filename", "name", "qualname", "linetable",
		"firstlineno", "argcount", "localsplusnames", "localspluskinds",
		"co_code_adaptive") },
	{ "pyobject", FIELDS("size", "ob_type") },
	{ "type_object", FIELDS("size", "tp_name", "tp_repr", "tp_flags") },
	{ "tuple_object", FIELDS("size", "ob_item", "ob_size") },
	{ "list_object", FIELDS("size", "ob_item", "ob_size") },
	{ "dict_object", FIELDS("size", "ma_keys", "ma_values") },
	{ "float_object", FIELDS("size", "ob_fval") },
	{ "long_object", FIELDS("size", "lv_tag", "ob_digit") },
	{ "bytes_object", FIELDS("size", "ob_size", "ob_sval") },
	{ "unicode_object", FIELDS("size", "state", "length", "asciiobject_size") },
	{ "gc", FIELDS("size", "collecting") },
	{ NULL, NULL }
};

/* 3.14 and 3.14t: Include/internal/pycore_debug_offsets.h of the 3.14
 * line. NOT read at tag v3.14.0 (the stored index holds python/cpython
 * only at 3.14 alphas, 7a57f7c2, and the mirror is too large to fetch):
 * 7a57f7c2 has threads_main, stackpointer, set_object, gen_object and
 * debugger_support as here; code_object_generation, tlbc_generation,
 * tlbc_index, co_tlbc and llist_node are in the 3.15 development header
 * (taegyunkim/cpython@8543f762) at these positions. A wrong position is
 * caught at attach (anchors, sizes, alignment, the sys.__dict__ type
 * name) and refused, never sampled. */
static const struct py_debug_group dbg_314[] = {
	{ "runtime_state", FIELDS("size", "finalizing", "interpreters_head") },
	{ "interpreter_state", FIELDS("size", "id", "next", "threads_head",
		"threads_main", "gc", "imports_modules", "sysdict", "builtins",
		"ceval_gil", "gil_runtime_state", "gil_runtime_state_enabled",
		"gil_runtime_state_locked", "gil_runtime_state_holder",
		"code_object_generation", "tlbc_generation") },
	{ "thread_state", FIELDS("size", "prev", "next", "interp", "current_frame",
		"thread_id", "native_thread_id", "datastack_chunk", "status") },
	{ "interpreter_frame", FIELDS("size", "previous", "executable", "instr_ptr",
		"localsplus", "owner", "stackpointer", "tlbc_index") },
	{ "code_object", FIELDS("size", "filename", "name", "qualname", "linetable",
		"firstlineno", "argcount", "localsplusnames", "localspluskinds",
		"co_code_adaptive", "co_tlbc") },
	{ "pyobject", FIELDS("size", "ob_type") },
	{ "type_object", FIELDS("size", "tp_name", "tp_repr", "tp_flags") },
	{ "tuple_object", FIELDS("size", "ob_item", "ob_size") },
	{ "list_object", FIELDS("size", "ob_item", "ob_size") },
	{ "set_object", FIELDS("size", "used", "table", "mask") },
	{ "dict_object", FIELDS("size", "ma_keys", "ma_values") },
	{ "float_object", FIELDS("size", "ob_fval") },
	{ "long_object", FIELDS("size", "lv_tag", "ob_digit") },
	{ "bytes_object", FIELDS("size", "ob_size", "ob_sval") },
	{ "unicode_object", FIELDS("size", "state", "length", "asciiobject_size") },
	{ "gc", FIELDS("size", "collecting") },
	{ "gen_object", FIELDS("size", "gi_name", "gi_iframe", "gi_frame_state") },
	{ "llist_node", FIELDS("next", "prev") },
	{ "debugger_support", FIELDS("eval_breaker", "remote_debugger_support",
		"remote_debugging_enabled", "debugger_pending_call",
		"debugger_script_path", "debugger_script_path_size") },
	{ NULL, NULL }
};

/* 3.15 and 3.15t: Include/internal/pycore_debug_offsets.h of the 3.15
 * development line, taegyunkim/cpython@8543f762 (a fork of main; not
 * the v3.15.0 tag, which the stored index does not hold). New against
 * 3.14: thread_state base_frame, last_profiled_frame(_seq), holds_gil,
 * gil_requested, current_exception, exc_state; err_stackitem (no size);
 * type_object tp_basicsize, tp_dictoffset; heap_type_object; unicode
 * compactunicodeobject_size; gc frame, generation_stats(_size). */
static const struct py_debug_group dbg_315[] = {
	{ "runtime_state", FIELDS("size", "finalizing", "interpreters_head") },
	{ "interpreter_state", FIELDS("size", "id", "next", "threads_head",
		"threads_main", "gc", "imports_modules", "sysdict", "builtins",
		"ceval_gil", "gil_runtime_state", "gil_runtime_state_enabled",
		"gil_runtime_state_locked", "gil_runtime_state_holder",
		"code_object_generation", "tlbc_generation") },
	{ "thread_state", FIELDS("size", "prev", "next", "interp", "current_frame",
		"base_frame", "last_profiled_frame", "last_profiled_frame_seq",
		"thread_id", "native_thread_id", "datastack_chunk", "status",
		"holds_gil", "gil_requested", "current_exception", "exc_state") },
	{ "err_stackitem", FIELDS("exc_value") },
	{ "interpreter_frame", FIELDS("size", "previous", "executable", "instr_ptr",
		"localsplus", "owner", "stackpointer", "tlbc_index") },
	{ "code_object", FIELDS("size", "filename", "name", "qualname", "linetable",
		"firstlineno", "argcount", "localsplusnames", "localspluskinds",
		"co_code_adaptive", "co_tlbc") },
	{ "pyobject", FIELDS("size", "ob_type") },
	{ "type_object", FIELDS("size", "tp_name", "tp_repr", "tp_flags",
		"tp_basicsize", "tp_dictoffset") },
	{ "heap_type_object", FIELDS("size", "ht_cached_keys") },
	{ "tuple_object", FIELDS("size", "ob_item", "ob_size") },
	{ "list_object", FIELDS("size", "ob_item", "ob_size") },
	{ "set_object", FIELDS("size", "used", "table", "mask") },
	{ "dict_object", FIELDS("size", "ma_keys", "ma_values") },
	{ "float_object", FIELDS("size", "ob_fval") },
	{ "long_object", FIELDS("size", "lv_tag", "ob_digit") },
	{ "bytes_object", FIELDS("size", "ob_size", "ob_sval") },
	{ "unicode_object", FIELDS("size", "state", "length", "asciiobject_size",
		"compactunicodeobject_size") },
	{ "gc", FIELDS("size", "collecting", "frame", "generation_stats_size",
		"generation_stats") },
	{ "gen_object", FIELDS("size", "gi_name", "gi_iframe", "gi_frame_state") },
	{ "llist_node", FIELDS("next", "prev") },
	{ "debugger_support", FIELDS("eval_breaker", "remote_debugger_support",
		"remote_debugging_enabled", "debugger_pending_call",
		"debugger_script_path", "debugger_script_path_size") },
	{ NULL, NULL }
};

/* GIL builds: PyObject is ob_refcnt, ob_type; PyVarObject adds ob_size. */
#define GIL_ABI		.pyobject_size = 16, .ob_type = 8, .var_ob_size = 16
/* Free-threaded builds (Include/object.h, Py_GIL_DISABLED): ob_tid (8),
 * ob_flags (2), ob_mutex (1), ob_gc_bits (1), ob_ref_local (4),
 * ob_ref_shared (8), then ob_type. */
#define FT_ABI		.pyobject_size = 32, .ob_type = 24, .var_ob_size = 32

#define DWARF(m, lines, gil, entry, shim) \
	{ .minor = m, .line_kind = lines, .gil_kind = gil, .entry_kind = entry, \
	  .owner_shim = shim, GIL_ABI }

/*
 * entry/owner_shim: FRAME_OWNED_BY_* of Include/internal/pycore_frame.h
 * (3.12-3.13: CSTACK = 3), pycore_interpframe_structs.h (3.14:
 * INTERPRETER = 3, CSTACK = 4; 3.15: INTERPRETER = 3, CSTACK removed):
 * the first complete frame is the first with an owner below 3.
 * code_tag_mask: Include/internal/pycore_stackref.h (3.14 GIL: Py_TAG_BITS
 * covers bit 0 for references, 3 for tagged ints; free-threaded:
 * Py_TAG_DEFERRED = 1; 3.15: Py_TAG_BITS = 3).
 */
const struct py_row py_rows[] = {
	DWARF(6, PY_LINES_LNOTAB, PY_GIL_SYMBOLS, PY_ENTRY_EVERY, 0),
	DWARF(7, PY_LINES_LNOTAB, PY_GIL_RUNTIME, PY_ENTRY_EVERY, 0),
	DWARF(8, PY_LINES_LNOTAB, PY_GIL_RUNTIME, PY_ENTRY_EVERY, 0),
	DWARF(9, PY_LINES_LNOTAB, PY_GIL_RUNTIME, PY_ENTRY_EVERY, 0),
	DWARF(10, PY_LINES_310, PY_GIL_RUNTIME, PY_ENTRY_EVERY, 0),
	DWARF(11, PY_LINES_311, PY_GIL_RUNTIME, PY_ENTRY_FLAG, 0),
	DWARF(12, PY_LINES_311, PY_GIL_INTERP, PY_ENTRY_SHIM, 3),
	{ .minor = 13, .source = "_Py_DebugOffsets (3.13 layout)", .debug = dbg_313,
	  .line_kind = PY_LINES_311, .gil_kind = PY_GIL_INTERP, .entry_kind = PY_ENTRY_SHIM,
	  .owner_shim = 3, .objects_from_table = 1, GIL_ABI },
	{ .minor = 13, .free_threaded = 1, .debug = dbg_313,
	  .source = "_Py_DebugOffsets (3.13t layout, from headers at v3.13.0)",
	  .line_kind = PY_LINES_311, .gil_kind = PY_GIL_INTERP, .entry_kind = PY_ENTRY_SHIM,
	  .owner_shim = 3, FT_ABI },
	{ .minor = 14, .source = "_Py_DebugOffsets (3.14 layout)", .debug = dbg_314,
	  .line_kind = PY_LINES_311, .gil_kind = PY_GIL_INTERP, .entry_kind = PY_ENTRY_SHIM,
	  .owner_shim = 3, .code_tag_mask = 3, GIL_ABI },
	{ .minor = 14, .free_threaded = 1, .debug = dbg_314,
	  .source = "_Py_DebugOffsets (3.14t layout)", .tlbc = 1,
	  .line_kind = PY_LINES_311, .gil_kind = PY_GIL_INTERP, .entry_kind = PY_ENTRY_SHIM,
	  .owner_shim = 3, .code_tag_mask = 3, FT_ABI },
	{ .minor = 15, .source = "_Py_DebugOffsets (3.15 layout)", .debug = dbg_315,
	  .guessed = "_Py_DebugOffsets (newer than 3.15, read with the 3.15 layout)",
	  .line_kind = PY_LINES_311, .gil_kind = PY_GIL_INTERP, .entry_kind = PY_ENTRY_SHIM,
	  .owner_shim = 3, .code_tag_mask = 3, GIL_ABI },
	{ .minor = 15, .free_threaded = 1, .debug = dbg_315,
	  .source = "_Py_DebugOffsets (3.15t layout)", .tlbc = 1,
	  .guessed = "_Py_DebugOffsets (newer than 3.15t, read with the 3.15t layout)",
	  .line_kind = PY_LINES_311, .gil_kind = PY_GIL_INTERP, .entry_kind = PY_ENTRY_SHIM,
	  .owner_shim = 3, .code_tag_mask = 3, FT_ABI },
};

const size_t py_rows_count = sizeof(py_rows) / sizeof(py_rows[0]);

const struct py_row *py_row_find(unsigned minor, int free_threaded)
{
	for (size_t i = 0; i < py_rows_count; i++)
		if (py_rows[i].minor == minor && py_rows[i].free_threaded == !!free_threaded)
			return &py_rows[i];
	return NULL;
}

const struct py_row *py_row_for_table(unsigned minor, int free_threaded, int *guessed)
{
	const struct py_row *newest = NULL;

	*guessed = 0;
	for (size_t i = 0; i < py_rows_count; i++) {
		const struct py_row *r = &py_rows[i];

		if (!r->debug || r->free_threaded != !!free_threaded)
			continue;
		if (r->minor == minor)
			return r;
		if (!newest || r->minor > newest->minor)
			newest = r;
	}
	if (!newest || minor < newest->minor)
		return NULL;
	*guessed = 1;
	return newest;
}
