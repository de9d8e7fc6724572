/* Per-version layout of the CPython structures pyperf-pprof reads. */
#ifndef PYOFFSETS_H
#define PYOFFSETS_H

#include <stdint.h>
#include <linux/types.h>
#include "pyperf.h"

/* Offsets used in user space to symbolize code objects. */
struct py_code_offsets {
	uint16_t co_filename;
	uint16_t co_name;
	uint16_t co_qualname;		/* PYPERF_NO_FIELD before 3.11 */
	uint16_t co_firstlineno;	/* int */
	uint16_t co_linetable;		/* co_lnotab (<=3.9) or co_linetable */
	uint16_t co_code_adaptive;	/* 3.11+: first code unit; else NO_FIELD */
	uint16_t co_argcount;		/* int; used to qualify methods <3.11 */
	uint16_t co_varnames;		/* <3.11: tuple of argument names */
	uint16_t unicode_state;		/* PyASCIIObject.state (bitfield word) */
	uint16_t unicode_length;	/* PyASCIIObject.length */
	uint16_t unicode_ascii_size;	/* sizeof(PyASCIIObject) */
	uint16_t unicode_compact_size;	/* sizeof(PyCompactUnicodeObject) */
	uint16_t bytes_size;		/* PyVarObject.ob_size */
	uint16_t bytes_sval;		/* PyBytesObject.ob_sval */
	uint16_t tuple_items;		/* PyTupleObject.ob_item */
	uint16_t ob_type;		/* PyObject.ob_type */
	uint16_t type_name;		/* PyTypeObject.tp_name (char *) */
	uint16_t co_tlbc;		/* free-threaded 3.14+: _PyCodeArray *co_tlbc,
					 * the per-thread bytecode copies; else
					 * PYPERF_NO_FIELD (set by the chooser) */
	uint16_t unicode_state_shift;	/* how far kind/compact/ascii lie above
					 * bits 2-6 of state: 0, or 6 (set by the
					 * chooser; py_str_kind() below) */
};

/*
 * PyASCIIObject.state (Include/cpython/unicodeobject.h): interned:2 kind:3
 * compact:1 ascii:1 from bit 0 up to 3.13 and in GIL builds; free-threaded
 * 3.14+ (v3.14.0, v3.15.0rc1) make interned a whole unsigned char, so the
 * same bits follow at bit 8 and unicode_state_shift is 6.
 */
static inline unsigned py_str_kind(const struct py_code_offsets *o, uint32_t state)
{
	return state >> (2 + o->unicode_state_shift) & 7;
}

static inline unsigned py_str_compact(const struct py_code_offsets *o, uint32_t state)
{
	return state >> (5 + o->unicode_state_shift) & 1;
}

static inline unsigned py_str_ascii(const struct py_code_offsets *o, uint32_t state)
{
	return state >> (6 + o->unicode_state_shift) & 1;
}

/* How a code object maps an instruction to a line (py_layout.line_kind). */
enum py_line_kind {
	PY_LINES_LNOTAB = 1,		/* <=3.9: co_lnotab, f_lasti in bytes */
	PY_LINES_310,			/* 3.10: co_linetable, f_lasti in code units */
	PY_LINES_311,			/* 3.11+: location table, an instruction
					 * pointer into co_code_adaptive (or a
					 * per-thread copy of it) */
};

/* Where the GIL's state is found (py_layout.gil_kind). */
enum py_gil_kind {
	PY_GIL_SYMBOLS = 1,		/* 3.6: static gil_locked, gil_last_holder */
	PY_GIL_RUNTIME,			/* 3.7-3.11: _PyRuntime.ceval.gil */
	PY_GIL_INTERP,			/* 3.12+: *(interp + interp_ceval_gil) */
};

/* A 32-bit runtime offset the version does not have. */
#define PY_NO_FIELD32 0xffffffffu

/*
 * Where the GIL is and who holds it. The GIL is a struct
 * _gil_runtime_state { ...; PyThreadState *last_holder; int locked; ... }:
 *   3.6        no struct: static globals gil_locked and gil_last_holder of
 *              ceval.c (local ELF symbols; pythread_gil_locate() looks them
 *              up), so every field here is absent
 *   3.7-3.11   _PyRuntime.ceval.gil                (runtime_gil)
 *   3.12+      *(interp + interp_ceval_gil), a pointer; for the main
 *              interpreter it points at interp + interp_gil
 * locked is 1 while some thread holds the GIL, 0 when it is free (3.6:
 * -1 until the first thread starts creates it). last_holder is the last
 * thread state that took it and is not cleared on release, so "thread
 * state S holds the GIL" is locked == 1 && last_holder == S. Up to 3.11
 * runtime_gil_holder (3.6: the _PyThreadState_Current symbol) says the
 * same more directly: it is S while S holds the GIL and NULL while the
 * GIL is released. src/python/pythread.h has the details.
 */
struct py_gil_offsets {
	uint32_t runtime_gil;		/* 3.7-3.11: offsetof(_PyRuntimeState,
					 * ceval.gil); else PY_NO_FIELD32 */
	uint16_t interp_ceval_gil;	/* 3.12+: offsetof(PyInterpreterState,
					 * ceval.gil), a struct _gil_runtime_state * */
	uint16_t interp_gil;		/* 3.12+: offsetof(PyInterpreterState, _gil) */
	uint16_t locked;		/* int, in struct _gil_runtime_state (3.7+) */
	uint16_t last_holder;		/* PyThreadState *, same (3.7+) */
	uint16_t enabled;		/* free-threaded: int enabled, same (the GIL
					 * can be switched on at run time); else
					 * PYPERF_NO_FIELD (set by the chooser) */
};

/* How an instance keeps its attributes when its type has no plain
 * tp_dictoffset > 0 (struct py_object_offsets.managed_kind). */
enum py_managed_kind {
	PY_MANAGED_UNKNOWN = 0,		/* not known (a _Py_DebugOffsets layout) */
	PY_MANAGED_NONE,		/* <=3.10: *(obj + tp_dictoffset) */
	PY_MANAGED_VALUES_PTR,		/* 3.11: PyDictValues * at obj + managed_values,
					 * else the dict at obj + managed_dict */
	PY_MANAGED_TAGGED,		/* 3.12: obj + managed_dict holds the dict, or
					 * the PyDictValues * minus 1 (low bit set) */
	PY_MANAGED_INLINE,		/* 3.13: PyDictValues inline at obj +
					 * tp_basicsize when the type has
					 * Py_TPFLAGS_INLINE_VALUES and values.valid,
					 * else the dict at obj + managed_dict */
};

/* How a PyLongObject stores its size and sign (py_object_offsets.long_kind). */
enum py_long_kind {
	PY_LONG_UNKNOWN = 0,
	PY_LONG_OB_SIZE,		/* <=3.11: ob_size = sign * ndigits */
	PY_LONG_LV_TAG,			/* 3.12+: lv_tag = ndigits << 3 | sign
					 * (0 positive, 1 zero, 2 negative) */
};

/*
 * Offsets to read an attribute of a Python object, a dict and an int:
 * what thread names need (src/python/pythread.c). u16 fields use PYPERF_NO_FIELD
 * for a member the version lacks; the signed and enum fields use 0.
 */
struct py_object_offsets {
	uint16_t ts_interp;		/* PyThreadState.interp */
	uint16_t interp_modules;	/* PyInterpreterState.modules (<=3.11) or
					 * .imports.modules (3.12+): sys.modules */
	uint16_t module_dict;		/* PyModuleObject.md_dict */
	uint16_t type_flags;		/* PyTypeObject.tp_flags (unsigned long) */
	uint16_t type_basicsize;	/* PyTypeObject.tp_basicsize */
	uint16_t type_dictoffset;	/* PyTypeObject.tp_dictoffset */
	uint16_t heaptype_cached_keys;	/* PyHeapTypeObject.ht_cached_keys: the
					 * shared keys of split/managed values */
	uint16_t dict_used;		/* PyDictObject.ma_used */
	uint16_t dict_keys;		/* PyDictObject.ma_keys */
	uint16_t dict_values;		/* PyDictObject.ma_values: PyObject ** (<=3.10),
					 * PyDictValues * (3.11+); NULL: combined */
	uint16_t dk_size;		/* <=3.10: PyDictKeysObject.dk_size (ssize_t) */
	uint16_t dk_log2_size;		/* 3.11+: dk_log2_size (uint8) */
	uint16_t dk_log2_index_bytes;	/* 3.11+: dk_log2_index_bytes (uint8) */
	uint16_t dk_kind;		/* 3.11+: dk_kind (uint8) */
	uint16_t dk_kind_general;	/* 3.11+: DICT_KEYS_GENERAL, the dk_kind of
					 * tables with PyDictKeyEntry (others
					 * have PyDictUnicodeEntry) */
	uint16_t dk_nentries;		/* dk_nentries (ssize_t) */
	uint16_t dk_indices;		/* dk_indices: the entries follow the index
					 * table (dk_size * index width <=3.10,
					 * 1 << dk_log2_index_bytes 3.11+) */
	uint16_t entry_size;		/* sizeof(PyDictKeyEntry) */
	uint16_t entry_hash;		/* PyDictKeyEntry.me_hash */
	uint16_t entry_key;		/* PyDictKeyEntry.me_key */
	uint16_t entry_value;		/* PyDictKeyEntry.me_value */
	uint16_t uentry_size;		/* 3.11+: sizeof(PyDictUnicodeEntry) */
	uint16_t uentry_key;		/* 3.11+: PyDictUnicodeEntry.me_key */
	uint16_t uentry_value;		/* 3.11+: PyDictUnicodeEntry.me_value */
	uint16_t values_values;		/* 3.11+: PyDictValues.values */
	uint16_t values_valid;		/* 3.13+: PyDictValues.valid (uint8) */
	uint16_t long_size;		/* ob_size (<=3.11) or long_value.lv_tag */
	uint16_t long_digit;		/* ob_digit: 30-bit digits in uint32 */
	int16_t managed_dict;		/* 3.11+: MANAGED_DICT_OFFSET (-24); else 0 */
	int16_t managed_values;		/* 3.11: _PyObject_ValuesPointer (-32); else 0 */
	uint8_t managed_kind;		/* enum py_managed_kind */
	uint8_t long_kind;		/* enum py_long_kind */
	uint8_t _pad[2];
	uint32_t tpflag_managed_dict;	/* Py_TPFLAGS_MANAGED_DICT (3.11+), else 0 */
	uint32_t tpflag_inline_values;	/* Py_TPFLAGS_INLINE_VALUES (3.13+), else 0 */
};

/*
 * What the asyncio task labels read (src/python/pyasyncio.c): up to 3.13
 * a row's table (pylayout_rows.c, from the DWARF of the pyenv builds;
 * TaskObj: the _asyncio extension; PyCoroObject, _PyInterpreterFrame,
 * PyTypeObject: libpython), from 3.14 each process's AsyncioDebug section
 * (pyasyncio_debug.c). PYPERF_NO_FIELD for what the version lacks.
 */
struct pyasyncio_layout {
	unsigned minor;		/* of the version read (3.14+: from the section) */
	uint16_t task_size;	/* sizeof(TaskObj): _asyncio.Task's tp_basicsize */
	uint16_t task_coro;	/* TaskObj.task_coro */
	uint16_t task_name;	/* TaskObj.task_name (3.8+) */
	uint16_t coro_size;	/* PyCoro_Type's tp_basicsize */
	uint16_t cr_code;	/* PyCoroObject.cr_code (<=3.11) */
	uint16_t cr_qualname;	/* PyCoroObject.cr_qualname */
	uint16_t cr_iframe;	/* PyCoroObject.cr_iframe (3.11+): the frame */
	uint16_t type_base;	/* PyTypeObject.tp_base */
	/* 3.14+ only (src/python/pyasyncio_debug.c); 0 in the DWARF rows: */
	uint16_t ts_task;	/* _PyThreadStateImpl.asyncio_running_task */
	uint16_t type_basicsize;	/* PyTypeObject.tp_basicsize */
	uint16_t task_awaited_by;	/* FutureObj/TaskObj.*_awaited_by: who
					 * awaits it, a future or a set */
	uint16_t task_awaited_by_is_set;	/* char: awaited_by is a set */
	uint16_t task_is_task;	/* char: the future is a Task */
	int free_threaded;	/* a Py_GIL_DISABLED build's row */
};

/* Where a layout's asyncio offsets come from. */
enum py_asyncio_kind {
	PY_ASYNCIO_NONE = 0,	/* no task labels (3.6) */
	PY_ASYNCIO_TABLE,	/* py_layout.asyncio, from the row's table */
	PY_ASYNCIO_SECTION,	/* each process's AsyncioDebug section (3.14+) */
};

struct py_layout {
	uint32_t version_hex;		/* PY_VERSION_HEX of the table's source */
	const char *source;		/* e.g. "3.11.7 libpython3.11.so DWARF" */
	uint32_t runtime_interp_head;	/* _PyRuntime.interpreters.head (3.7+) */
	uint32_t runtime_gil_holder;	/* _PyRuntime.gilstate.tstate_current
					 * (<=3.11), else NO_FIELD */
	uint16_t interp_sysdict;	/* PyInterpreterState.sysdict: the attach
					 * check reads its type's name; else
					 * PYPERF_NO_FIELD */
	uint8_t line_kind;		/* enum py_line_kind */
	uint8_t gil_kind;		/* enum py_gil_kind */
	uint8_t free_threaded;		/* a Py_GIL_DISABLED build (in the
					 * generated table: the build the entry
					 * was read from) */
	/* From _Py_DebugOffsets (3.14+), for the asyncio task labels
	 * (src/python/pyasyncio_debug.c): 0 or PYPERF_NO_FIELD when absent. */
	uint32_t interp_size;		/* sizeof(PyInterpreterState) */
	uint32_t tstate_size;		/* sizeof(PyThreadState) */
	uint16_t gen_name;		/* PyGenObject.gi_name */
	uint16_t gen_iframe;		/* PyGenObject.gi_iframe */
	uint16_t frame_localsplus;	/* _PyInterpreterFrame.localsplus */
	uint16_t gen_frame_state;	/* PyGenObject.gi_frame_state (int8) */
	uint16_t frame_stackpointer;	/* _PyInterpreterFrame.stackpointer */
	struct py_walk_offsets walk;
	struct py_code_offsets code;
	struct py_gil_offsets gil;
	struct py_object_offsets obj;
	uint8_t asyncio_kind;		/* enum py_asyncio_kind, from the row */
	struct pyasyncio_layout asyncio;	/* PY_ASYNCIO_TABLE: the offsets */
};

/* The generated tables, one per minor version 3.6..3.15 and build
 * (pyoffsets_table.c). */
extern const struct py_layout py_layouts[];
extern const unsigned py_layouts_count;

/* The table entry for a major.minor version of that build (free_threaded:
 * a Py_GIL_DISABLED build), or NULL when none exists: a free-threaded
 * build's objects have another header, so one build never gets the
 * other's entry. */
const struct py_layout *py_layout_find(unsigned major, unsigned minor, int free_threaded);

#endif /* PYOFFSETS_H */
