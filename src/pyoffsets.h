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
};

/* A 32-bit runtime offset the version does not have. */
#define PY_NO_FIELD32 0xffffffffu

struct py_layout {
	uint32_t version_hex;		/* PY_VERSION_HEX of the table's source */
	const char *source;		/* e.g. "3.11.7 libpython3.11.so DWARF" */
	uint32_t runtime_interp_head;	/* _PyRuntime.interpreters.head (3.7+) */
	uint32_t runtime_gil_holder;	/* _PyRuntime.gilstate.tstate_current
					 * (<=3.11), else NO_FIELD */
	struct py_walk_offsets walk;
	struct py_code_offsets code;
};

/* The generated tables, one per minor version 3.6..3.13 (pyoffsets_table.c). */
extern const struct py_layout py_layouts[];
extern const unsigned py_layouts_count;

/* The table entry for a major.minor version, or NULL when none exists. */
const struct py_layout *py_layout_find(unsigned major, unsigned minor);

#endif /* PYOFFSETS_H */
