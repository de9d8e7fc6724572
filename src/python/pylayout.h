/*
 * All CPython version knowledge in one place: one row per minor version
 * and build (src/python/pylayout_rows.c) and the one chooser that turns a
 * target's version, build and memory into its layout. Readers (pysym,
 * pythread, the BPF walk) branch on layout fields, never on a version.
 *
 * Adding a CPython minor version = one row in pylayout_rows.c, plus either
 * a regeneration of pyoffsets_table.c (DWARF) or, from 3.13 on, the field
 * list of its _Py_DebugOffsets next to the row.
 */
#ifndef PYLAYOUT_H
#define PYLAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "pyoffsets.h"

/* One field list of _Py_DebugOffsets: the groups in table order. */
struct py_debug_group {
	const char *name;
	const char *const *fields;	/* table order, NULL-terminated */
};

/* What a version does, as data. */
struct py_row {
	uint8_t minor;
	uint8_t free_threaded;		/* a Py_GIL_DISABLED build ("3.14t") */
	const char *source;		/* py_layout.source; where the facts are from */
	const char *guessed;		/* the same, when read for a newer version */
	const struct py_debug_group *debug;	/* field list of _Py_DebugOffsets;
						 * NULL: the generated DWARF table */
	uint8_t line_kind;		/* enum py_line_kind */
	uint8_t gil_kind;		/* enum py_gil_kind */
	uint8_t entry_kind;		/* enum py_entry_kind (bpf/pyperf.h) */
	uint8_t owner_shim;		/* PY_ENTRY_SHIM: owners >= this have no code */
	uint8_t code_tag_mask;		/* f_executable is a _PyStackRef: its tag bits */
	uint8_t tlbc;			/* per-thread bytecode copies (free-threaded
					 * 3.14+): tlbc_index and co_tlbc */
	uint8_t str_interned_byte;	/* PyASCIIObject.state.interned is an
					 * unsigned char (free-threaded 3.14+) */
	uint8_t objects_from_table;	/* take the object offsets _Py_DebugOffsets
					 * lacks from the generated table of this
					 * minor (the same build) */
	/* Stable-ABI anchors a correctly read table must show (64-bit). */
	uint8_t pyobject_size;		/* sizeof(PyObject): 16, free-threaded 32 */
	uint8_t ob_type;		/* offsetof(PyObject, ob_type): 8 or 24 */
	uint8_t var_ob_size;		/* offsetof(PyVarObject, ob_size): 16 or 32 */
	/* The asyncio task labels' offsets: a table, or each process's
	 * AsyncioDebug section (3.14+); neither: no labels. */
	const struct pyasyncio_layout *asyncio;
	uint8_t asyncio_section;
};

extern const struct py_row py_rows[];
extern const size_t py_rows_count;

/* The row for 3.minor and build; NULL when there is none. */
const struct py_row *py_row_find(unsigned minor, int free_threaded);

/* The row a _Py_DebugOffsets table of 3.minor is read with: its own, or
 * for a newer version the newest row of the build (*guessed set). */
const struct py_row *py_row_for_table(unsigned minor, int free_threaded, int *guessed);

/* Reads len bytes of the target at addr into buf; 0 on success. */
typedef int (*py_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* What is known of a target before its layout is chosen. */
struct py_facts {
	uint32_t version_hex;		/* PY_VERSION_HEX */
	int version_exact;		/* read from the target's Py_Version (else
					 * from a version string or file name) */
	int ft_name;			/* 1: the file is named like a free-threaded
					 * build ("python3.14t"), 0: like a GIL
					 * build, -1: cannot tell */
	uint64_t runtime_addr;		/* _PyRuntime in the target, 0 if none */
	py_read_fn read;
	void *read_ctx;
};

/* 1 for a file named like a free-threaded build ("libpython3.14t.so",
 * "python3.13t"), 0 like a GIL build ("python3.14"), -1 otherwise. */
int py_ft_from_name(const char *path);

#define PY_LAYOUT_UNSUPPORTED	(-2)	/* no row for the version */

/*
 * Chooses and checks the layout of a target: the generated table (up to
 * 3.12) or the target's own _Py_DebugOffsets (3.13+), completed from the
 * version's row. Checks the table's cookie, its version against the
 * target's (exactly when version_exact), the free-threaded flag against
 * the row and the file name, group sizes, stable-ABI anchors and, when the
 * interpreter is initialised, the type name of its sys.__dict__ ("dict")
 * read through the layout. 0 on success; -1 with one line in err naming
 * the field and both values; PY_LAYOUT_UNSUPPORTED with err completing
 * "runs Python X.Y.Z (file), ".
 */
int py_layout_choose(const struct py_facts *f, struct py_layout *out, char *err,
		     size_t errlen);

/*
 * Where the bytecode a frame's instruction pointer points into starts:
 * co_code_adaptive, or in free-threaded 3.14+ the frame's per-thread copy
 * tlbc (its tlbc_index) found through the code object's co_tlbc table.
 * 0 on success; -1 when the copy cannot be found (the line is unknown).
 */
int py_code_start(const struct py_layout *l, py_read_fn read, void *ctx, uint64_t code,
		  uint32_t tlbc, uint64_t *start);

/* The line of instruction lasti (f_lasti, or an instruction pointer into
 * the bytecode at start) in the line table tab; -2 for a frame that has
 * not started, -1 when unknown. */
int py_layout_line(const struct py_layout *l, const uint8_t *tab, size_t len,
		   int firstlineno, uint64_t lasti, uint64_t start);

#endif /* PYLAYOUT_H */
