/*
 * One row per CPython minor version and build: what the version does,
 * as data (src/python/pylayout.h), and from 3.13 on the field list of its
 * _Py_DebugOffsets, transcribed from CPython's headers; where each list
 * came from is written next to it. The offsets themselves are never
 * typed in here: up to 3.12 they are generated from DWARF
 * (pyoffsets_table.c), from 3.13 the target publishes them, and where a
 * row says objects_from_table the object offsets _Py_DebugOffsets lacks
 * (dict internals, module and type fields: thread names, asyncio task
 * names) come from the generated DWARF entry of the same minor version
 * and build (3.13 from pyenv's 3.13.0, 3.14 and 3.15 from Debian sid's
 * 3.14.10 and 3.15.2 with their -dbg debug files; the free-threaded rows,
 * whose objects' 32-byte header moves every offset, from their own
 * builds' entries, 3.13.15t, 3.14.7t and 3.15.0rc1t, built from the
 * release tags). The two lookups
 * at the end are the only way to a row.
 *
 * Sources (3.13 on): CPython's release tags, read in the repository
 * sailfishos-mirror/cpython, a mirror of python/cpython that carries the
 * release managers' annotated tags (v3.13.0 PGP-signed; tag object,
 * commit):
 *   v3.13.0     3f27099d916c, commit 60403a5409ff2c3f3b07dd2ca91a7a3e096839c7
 *   v3.14.0     ac991beb29b1, commit ebf955df7a89ed0c7968f79faec1de49f61ed7cb
 *   v3.15.0rc1  4bd9634cf3b6, commit 37e98da7c19a9e5892ee756d6dee08225422cd49
 * (Include/patchlevel.h there: "3.13.0" final, "3.14.0" final,
 * "3.15.0rc1"). 3.15.0 final is not in the mirror (its newest 3.15 tag is
 * v3.15.0rc1; the 3.15 branch head f71fbc55, "3.15.0rc1+dev", changes
 * none of the headers below). The _Py_DebugOffsets field lists are also
 * identical at every tag v3.13.0-v3.13.15 and v3.14.0-v3.14.7.
 */
#include "pylayout.h"

#include "pyperf.h"

#define FIELDS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* 3.13 and 3.13t: struct _Py_DebugOffsets in
 * Include/internal/pycore_runtime.h at tag v3.13.0 (one struct for both
 * builds; also checked against the DWARF of 3.13.0 by
 * tests/check-debugoffsets-live.sh). */
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

/* 3.14 and 3.14t: struct _Py_DebugOffsets in
 * Include/internal/pycore_debug_offsets.h at tag v3.14.0 (new against
 * 3.13: interpreter_state threads_main, code_object_generation,
 * tlbc_generation; interpreter_frame stackpointer, tlbc_index;
 * code_object co_tlbc; set_object; gen_object; llist_node;
 * debugger_support). */
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

/* 3.15 and 3.15t: struct _Py_DebugOffsets in
 * Include/internal/pycore_debug_offsets.h at tag v3.15.0rc1 (3.15.0 final
 * is not available; see above). New against 3.14: thread_state
 * base_frame, last_profiled_frame(_seq), holds_gil, gil_requested,
 * current_exception, exc_state; err_stackitem (no size); type_object
 * tp_basicsize, tp_dictoffset; heap_type_object; unicode_object
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

/*
 * The asyncio offsets of the rows up to 3.13 (py_row.asyncio), from `gdb
 * -batch -ex 'ptype/o TaskObj'` on the pyenv builds'
 * lib/python3.X/lib-dynload/_asyncio.cpython-3X*.so and `ptype/o
 * PyCoroObject`, `ptype/o struct _PyInterpreterFrame`, `ptype/o struct
 * _typeobject` on their libpython3.X.so (3.7.16 3.8.18 3.9.18 3.10.13
 * 3.11.7 3.12.1 3.13.0). coro_size is sizeof(PyCoroObject) up to 3.10,
 * offsetof(cr_iframe) + offsetof(_PyInterpreterFrame, localsplus) from
 * 3.11 (a coroutine is variable-size there); both equal
 * types.CoroutineType.__basicsize__. The 3.13t row is the same from a
 * free-threaded build of v3.13.15 (/opt/cpython-ft/3.13t, see
 * pyoffsets_table.c): its 32-byte object header moves every offset.
 * tests/unit/test_pyasyncio.sh re-derives every one from the DWARF.
 */
#define NO16	PYPERF_NO_FIELD
/* minor size coro name  corosz code qual iframe tp_base (3.14+ only: 0 0) */
static const struct pyasyncio_layout aio_37 = { 7, 136, 112, NO16, 104, 32,   56, NO16, 256, 0, 0, .free_threaded = 0 };
static const struct pyasyncio_layout aio_38 = { 8, 144, 112, 120,  104, 32,   56, NO16, 256, 0, 0, .free_threaded = 0 };
static const struct pyasyncio_layout aio_39 = { 9, 184, 152, 160,  104, 32,   56, NO16, 256, 0, 0, .free_threaded = 0 };
static const struct pyasyncio_layout aio_310 = { 10, 192, 160, 168,  96,  24,   48, NO16, 256, 0, 0, .free_threaded = 0 };
static const struct pyasyncio_layout aio_311 = { 11, 176, 136, 144,  152, 16,   40, 80,   256, 0, 0, .free_threaded = 0 };
static const struct pyasyncio_layout aio_312 = { 12, 176, 136, 144,  144, NO16, 32, 72,   256, 0, 0, .free_threaded = 0 };
static const struct pyasyncio_layout aio_313 = { 13, 144, 120, 128,  144, NO16, 32, 72,   256, 0, 0, .free_threaded = 0 };
static const struct pyasyncio_layout aio_313t = { 13, 160, 136, 144,  160, NO16, 48, 88,   272, 0, 0, .free_threaded = 1 };
#undef NO16

/* GIL builds: PyObject is ob_refcnt, ob_type; PyVarObject adds ob_size. */
#define GIL_ABI		.pyobject_size = 16, .ob_type = 8, .var_ob_size = 16
/* Free-threaded builds (struct _object in Include/object.h under
 * Py_GIL_DISABLED at v3.13.0, v3.14.0, v3.15.0rc1): ob_tid (8), ob_flags
 * (3.13.0: _padding) (2), ob_mutex (1), ob_gc_bits (1), ob_ref_local (4),
 * ob_ref_shared (8), then ob_type. */
#define FT_ABI		.pyobject_size = 32, .ob_type = 24, .var_ob_size = 32

#define DWARF(m, lines, gil, entry, shim, ...) \
	{ .minor = m, .line_kind = lines, .gil_kind = gil, .entry_kind = entry, \
	  .owner_shim = shim, GIL_ABI, __VA_ARGS__ }

/*
 * entry/owner_shim: enum _frameowner, Include/internal/pycore_frame.h at
 * v3.13.0 (CSTACK = 3, the eval loop's entry frame),
 * pycore_interpframe_structs.h at v3.14.0 (INTERPRETER = 3, the entry
 * frame; CSTACK = 4) and v3.15.0rc1 (INTERPRETER = 3, also each thread's
 * base_frame; CSTACK removed): the first complete frame is the first
 * with an owner below 3 (ceval.c at v3.14.0: owner < INTERPRETER).
 * code_tag_mask: _PyInterpreterFrame.f_executable is a PyObject * at
 * v3.13.0 and a _PyStackRef from v3.14.0; Include/internal/
 * pycore_stackref.h at v3.14.0: GIL Py_TAG_BITS 3, Py_TAG_REFCNT 1,
 * NULL = 1; free-threaded Py_TAG_BITS 1 (Py_TAG_DEFERRED), NULL = 1;
 * both Py_INT_TAG 3. At v3.15.0rc1: Py_TAG_BITS 3, Py_TAG_INVALID 2.
 * str_interned_byte: Include/cpython/unicodeobject.h at v3.14.0 and
 * v3.15.0rc1 (unsigned char interned under Py_GIL_DISABLED; at v3.13.0
 * interned:2 in both builds).
 * tlbc: _PyCode_DEF_THREAD_LOCAL_BYTECODE (Include/cpython/code.h at
 * v3.14.0, v3.15.0rc1): _PyCodeArray *co_tlbc, { Py_ssize_t size;
 * char *entries[]; }, entries[0] = co_code_adaptive
 * (Objects/codeobject.c); the frame's int32_t tlbc_index picks the copy
 * (_PyFrame_GetBytecode, Include/internal/pycore_interpframe.h).
 */
const struct py_row py_rows[] = {
	DWARF(6, PY_LINES_LNOTAB, PY_GIL_SYMBOLS, PY_ENTRY_EVERY, 0, .asyncio = NULL),
	DWARF(7, PY_LINES_LNOTAB, PY_GIL_RUNTIME, PY_ENTRY_EVERY, 0, .asyncio = &aio_37),
	DWARF(8, PY_LINES_LNOTAB, PY_GIL_RUNTIME, PY_ENTRY_EVERY, 0, .asyncio = &aio_38),
	DWARF(9, PY_LINES_LNOTAB, PY_GIL_RUNTIME, PY_ENTRY_EVERY, 0, .asyncio = &aio_39),
	DWARF(10, PY_LINES_310, PY_GIL_RUNTIME, PY_ENTRY_EVERY, 0, .asyncio = &aio_310),
	DWARF(11, PY_LINES_311, PY_GIL_RUNTIME, PY_ENTRY_FLAG, 0, .asyncio = &aio_311),
	DWARF(12, PY_LINES_311, PY_GIL_INTERP, PY_ENTRY_SHIM, 3, .asyncio = &aio_312),
	{ .minor = 13, .asyncio = &aio_313, .source = "_Py_DebugOffsets (3.13 layout)", .debug = dbg_313,
	  .line_kind = PY_LINES_311, .gil_kind = PY_GIL_INTERP, .entry_kind = PY_ENTRY_SHIM,
	  .owner_shim = 3, .objects_from_table = 1, GIL_ABI },
	{ .minor = 13, .free_threaded = 1, .asyncio = &aio_313t, .debug = dbg_313,
	  .source = "_Py_DebugOffsets (3.13t layout, from headers at v3.13.0)",
	  .line_kind = PY_LINES_311, .gil_kind = PY_GIL_INTERP, .entry_kind = PY_ENTRY_SHIM,
	  .owner_shim = 3, .objects_from_table = 1, FT_ABI },
	{ .asyncio_section = 1, .minor = 14, .source = "_Py_DebugOffsets (3.14 layout, from headers at v3.14.0)", .debug = dbg_314,
	  .line_kind = PY_LINES_311, .gil_kind = PY_GIL_INTERP, .entry_kind = PY_ENTRY_SHIM,
	  .owner_shim = 3, .code_tag_mask = 3, .objects_from_table = 1, GIL_ABI },
	{ .asyncio_section = 1, .minor = 14, .free_threaded = 1, .debug = dbg_314,
	  .source = "_Py_DebugOffsets (3.14t layout, from headers at v3.14.0)", .tlbc = 1, .str_interned_byte = 1,
	  .line_kind = PY_LINES_311, .gil_kind = PY_GIL_INTERP, .entry_kind = PY_ENTRY_SHIM,
	  .owner_shim = 3, .code_tag_mask = 3, .objects_from_table = 1, FT_ABI },
	{ .asyncio_section = 1, .minor = 15, .source = "_Py_DebugOffsets (3.15 layout, from headers at v3.15.0rc1)", .debug = dbg_315,
	  .guessed = "_Py_DebugOffsets (newer than 3.15, read with the 3.15 layout)",
	  .line_kind = PY_LINES_311, .gil_kind = PY_GIL_INTERP, .entry_kind = PY_ENTRY_SHIM,
	  .owner_shim = 3, .code_tag_mask = 3, .objects_from_table = 1, GIL_ABI },
	{ .asyncio_section = 1, .minor = 15, .free_threaded = 1, .debug = dbg_315,
	  .source = "_Py_DebugOffsets (3.15t layout, from headers at v3.15.0rc1)", .tlbc = 1, .str_interned_byte = 1,
	  .guessed = "_Py_DebugOffsets (newer than 3.15t, read with the 3.15t layout)",
	  .line_kind = PY_LINES_311, .gil_kind = PY_GIL_INTERP, .entry_kind = PY_ENTRY_SHIM,
	  .owner_shim = 3, .code_tag_mask = 3, .objects_from_table = 1, FT_ABI },
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
