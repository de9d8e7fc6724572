/*
 * The debug tables of CPython's release tags, as C structs, for the unit
 * tests that build or check target images (test_layouts.c,
 * test_debugoffsets.c): struct _Py_DebugOffsets at v3.13.0, v3.14.0 and
 * v3.15.0rc1, and _asyncio's AsyncioDebug section at v3.14.0. Read from
 * sailfishos-mirror/cpython (a full mirror of python/cpython; the tags'
 * commits are named in src/python/pylayout_rows.c).
 */
#ifndef DEBUG_OFFSETS_TAGS_H
#define DEBUG_OFFSETS_TAGS_H

#include <stdint.h>

#include "pyasyncio_debug.h"

/* struct _Py_DebugOffsets, Include/internal/pycore_runtime.h at tag
 * v3.13.0 (the 3.13t table). */
struct dbg313 {
	char cookie[8];
	uint64_t version, free_threaded;
	struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
	struct {
		uint64_t size, id, next, threads_head, gc, imports_modules, sysdict,
			builtins, ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
			gil_runtime_state_locked, gil_runtime_state_holder;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id,
			native_thread_id, datastack_chunk, status;
	} thread_state;
	struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
			localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct { uint64_t size, ob_type; } pyobject;
	struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
	struct { uint64_t size, ob_item, ob_size; } tuple_object, list_object;
	struct { uint64_t size, ma_keys, ma_values; } dict_object;
	struct { uint64_t size, ob_fval; } float_object;
	struct { uint64_t size, lv_tag, ob_digit; } long_object;
	struct { uint64_t size, ob_size, ob_sval; } bytes_object;
	struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
	struct { uint64_t size, collecting; } gc;
};

/* struct _Py_DebugOffsets, Include/internal/pycore_debug_offsets.h at
 * tag v3.14.0 (identical at v3.14.1 to v3.14.7). */
struct dbg314 {
	char cookie[8];
	uint64_t version, free_threaded;
	struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
	struct {
		uint64_t size, id, next, threads_head, threads_main, gc, imports_modules,
			sysdict, builtins, ceval_gil, gil_runtime_state,
			gil_runtime_state_enabled, gil_runtime_state_locked,
			gil_runtime_state_holder, code_object_generation, tlbc_generation;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id,
			native_thread_id, datastack_chunk, status;
	} thread_state;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus, owner,
			stackpointer, tlbc_index;
	} interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
			localsplusnames, localspluskinds, co_code_adaptive, co_tlbc;
	} code_object;
	struct { uint64_t size, ob_type; } pyobject;
	struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
	struct { uint64_t size, ob_item, ob_size; } tuple_object, list_object;
	struct { uint64_t size, used, table, mask; } set_object;
	struct { uint64_t size, ma_keys, ma_values; } dict_object;
	struct { uint64_t size, ob_fval; } float_object;
	struct { uint64_t size, lv_tag, ob_digit; } long_object;
	struct { uint64_t size, ob_size, ob_sval; } bytes_object;
	struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
	struct { uint64_t size, collecting; } gc;
	struct { uint64_t size, gi_name, gi_iframe, gi_frame_state; } gen_object;
	struct { uint64_t next, prev; } llist_node;
	struct {
		uint64_t eval_breaker, remote_debugger_support, remote_debugging_enabled,
			debugger_pending_call, debugger_script_path,
			debugger_script_path_size;
	} debugger_support;
};

/* The same header at tag v3.15.0rc1. */
struct dbg315 {
	char cookie[8];
	uint64_t version, free_threaded;
	struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
	struct {
		uint64_t size, id, next, threads_head, threads_main, gc, imports_modules,
			sysdict, builtins, ceval_gil, gil_runtime_state,
			gil_runtime_state_enabled, gil_runtime_state_locked,
			gil_runtime_state_holder, code_object_generation, tlbc_generation;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, base_frame,
			last_profiled_frame, last_profiled_frame_seq, thread_id,
			native_thread_id, datastack_chunk, status, holds_gil,
			gil_requested, current_exception, exc_state;
	} thread_state;
	struct { uint64_t exc_value; } err_stackitem;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus, owner,
			stackpointer, tlbc_index;
	} interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
			localsplusnames, localspluskinds, co_code_adaptive, co_tlbc;
	} code_object;
	struct { uint64_t size, ob_type; } pyobject;
	struct { uint64_t size, tp_name, tp_repr, tp_flags, tp_basicsize, tp_dictoffset; } type_object;
	struct { uint64_t size, ht_cached_keys; } heap_type_object;
	struct { uint64_t size, ob_item, ob_size; } tuple_object, list_object;
	struct { uint64_t size, used, table, mask; } set_object;
	struct { uint64_t size, ma_keys, ma_values; } dict_object;
	struct { uint64_t size, ob_fval; } float_object;
	struct { uint64_t size, lv_tag, ob_digit; } long_object;
	struct { uint64_t size, ob_size, ob_sval; } bytes_object;
	struct { uint64_t size, state, length, asciiobject_size, compactunicodeobject_size; } unicode_object;
	struct { uint64_t size, collecting, frame, generation_stats_size, generation_stats; } gc;
	struct { uint64_t size, gi_name, gi_iframe, gi_frame_state; } gen_object;
	struct { uint64_t next, prev; } llist_node;
	struct {
		uint64_t eval_breaker, remote_debugger_support, remote_debugging_enabled,
			debugger_pending_call, debugger_script_path,
			debugger_script_path_size;
	} debugger_support;
};

/* struct _Py_AsyncioModuleDebugOffsets, Modules/_asynciomodule.c at
 * v3.14.0 (the same at v3.15.0rc1). */
struct asyncio_dbg {
	struct {
		uint64_t size, task_name, task_awaited_by, task_is_task,
			task_awaited_by_is_set, task_coro, task_node;
	} asyncio_task_object;
	struct { uint64_t size, asyncio_tasks_head; } asyncio_interpreter_state;
	struct {
		uint64_t size, asyncio_running_loop, asyncio_running_task,
			asyncio_tasks_head;
	} asyncio_thread_state;
};

/* The slot counts of the three tags' structs (src/python/check-rows.py). */
_Static_assert(sizeof(struct dbg313) == 73 * 8, "v3.13.0: 73 slots");
_Static_assert(sizeof(struct dbg314) == 95 * 8, "v3.14.0: 95 slots");
_Static_assert(sizeof(struct dbg315) == 111 * 8, "v3.15.0rc1: 111 slots");
_Static_assert(sizeof(struct asyncio_dbg) == PYASYNCIO_SECTION_LEN, "13 slots");
_Static_assert(sizeof(struct dbg313) == 584, "3.13.0's table is 584 bytes (gdb ptype/o)");
_Static_assert(sizeof(struct dbg314) == 760, "3.14's table is 760 bytes");

#endif
