/*
 * _Py_DebugOffsets: CPython's own table of structure offsets (3.13+).
 *
 * The table is a run of uint64 values: the cookie "xdebugpy", version
 * (PY_VERSION_HEX), free_threaded, then one group ("section") per CPython
 * structure. Most sections start with "size", which is sizeof() of the
 * structure the section describes (sizeof(PyThreadState), ...), not the
 * size of the section: the table does not describe its own layout. Newer
 * versions insert sections (3.14: set_object after list_object) and
 * fields inside sections (3.14: interpreter_state.threads_main before gc),
 * so which slot holds which field has to be known per version; the
 * field lists are transcribed from CPython's headers, next to each
 * version's row in pylayout_rows.c.
 *
 * A version newer than the newest sequence here is read with the newest
 * sequence, and whether that guess holds is checked rather than assumed:
 * the PyObject and PyVarObject headers are stable ABI (sizeof(PyObject)
 * 16, ob_type at 8, ob_size at 16 on 64-bit GIL builds), so a table whose
 * sections moved fails those anchors and is refused, and every offset used
 * must be aligned and lie inside its structure's reported size.
 */
#include "pydebugoffsets.h"

#include "pylayout.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define COOKIE			"xdebugpy"
#define SLOT_VERSION		1
#define SLOT_FREE_THREADED	2
#define SLOT_SECTIONS		3		/* first slot of the first section */
#define STRUCT_MAX		(1u << 24)	/* bigger "size" values are misreads */

/* A field pyperf-pprof needs, and where it goes. */
struct need {
	const char *sect, *field;
	uint8_t width;		/* bytes in the structure; also its alignment */
	uint8_t wide;		/* destination is a uint32_t, else a uint16_t */
	uint16_t dst;		/* offsetof(struct py_layout, ...) */
};

#define L(member) offsetof(struct py_layout, member)

static const struct need needs[] = {
	{ "runtime_state", "interpreters_head", 8, 1, L(runtime_interp_head) },
	{ "interpreter_state", "threads_head", 8, 0, L(walk.interp_tstate_head) },
	{ "thread_state", "next", 8, 0, L(walk.ts_next) },
	{ "thread_state", "current_frame", 8, 0, L(walk.ts_frame) },
	{ "thread_state", "thread_id", 8, 0, L(walk.ts_thread_id) },
	{ "thread_state", "native_thread_id", 8, 0, L(walk.ts_native_thread_id) },
	{ "interpreter_frame", "previous", 8, 0, L(walk.frame_back) },
	{ "interpreter_frame", "executable", 8, 0, L(walk.frame_code) },
	{ "interpreter_frame", "instr_ptr", 8, 0, L(walk.frame_lasti) },
	{ "interpreter_frame", "owner", 1, 0, L(walk.frame_owner) },
	{ "code_object", "filename", 8, 0, L(code.co_filename) },
	{ "code_object", "name", 8, 0, L(code.co_name) },
	{ "code_object", "qualname", 8, 0, L(code.co_qualname) },
	{ "code_object", "linetable", 8, 0, L(code.co_linetable) },
	{ "code_object", "firstlineno", 4, 0, L(code.co_firstlineno) },
	{ "code_object", "argcount", 4, 0, L(code.co_argcount) },
	{ "code_object", "co_code_adaptive", 1, 0, L(code.co_code_adaptive) },
	{ "pyobject", "ob_type", 8, 0, L(code.ob_type) },
	{ "type_object", "tp_name", 8, 0, L(code.type_name) },
	{ "tuple_object", "ob_item", 8, 0, L(code.tuple_items) },
	{ "bytes_object", "ob_size", 8, 0, L(code.bytes_size) },
	{ "bytes_object", "ob_sval", 1, 0, L(code.bytes_sval) },
	{ "unicode_object", "state", 4, 0, L(code.unicode_state) },
	{ "unicode_object", "length", 8, 0, L(code.unicode_length) },
};

/*
 * Fields only thread names and the GIL state need (profiling does not):
 * one that is absent or implausible is left NO_FIELD instead of refusing
 * the table. The other py_object_offsets fields are not in the table;
 * py_layout_choose() takes them from the generated entry of the same
 * minor version where the row says so.
 */
static const struct need optional_needs[] = {
	{ "thread_state", "interp", 8, 0, L(obj.ts_interp) },
	{ "interpreter_state", "imports_modules", 8, 0, L(obj.interp_modules) },
	/* sys.__dict__: the attach check reads its type's name. */
	{ "interpreter_state", "sysdict", 8, 0, L(interp_sysdict) },
	{ "type_object", "tp_flags", 8, 0, L(obj.type_flags) },
	{ "dict_object", "ma_keys", 8, 0, L(obj.dict_keys) },
	{ "dict_object", "ma_values", 8, 0, L(obj.dict_values) },
	{ "long_object", "lv_tag", 8, 0, L(obj.long_size) },
	{ "long_object", "ob_digit", 4, 0, L(obj.long_digit) },
	/* The GIL: interp->ceval.gil points to it; the main interpreter's
	 * is interp->_gil. locked and last_holder: derive_gil(). */
	{ "interpreter_state", "ceval_gil", 8, 0, L(gil.interp_ceval_gil) },
	{ "interpreter_state", "gil_runtime_state", 8, 0, L(gil.interp_gil) },
	/* Coroutines, for asyncio task labels (3.14+; 3.13 lacks gen_object). */
	{ "gen_object", "gi_name", 8, 0, L(gen_name) },
	{ "gen_object", "gi_iframe", 8, 0, L(gen_iframe) },
	{ "interpreter_frame", "localsplus", 8, 0, L(frame_localsplus) },
	/* What a suspended coroutine awaits (--async, pyawait.c; 3.14+). */
	{ "gen_object", "gi_frame_state", 1, 0, L(gen_frame_state) },
	{ "interpreter_frame", "stackpointer", 8, 0, L(frame_stackpointer) },
};

/* Needed where the row says there are per-thread bytecode copies (the
 * table holds 0 for them in GIL builds): where a frame's copy is. */
static const struct need ft_needs[] = {
	{ "interpreter_frame", "tlbc_index", 4, 0, L(walk.frame_tlbc_index) },
	{ "code_object", "co_tlbc", 8, 0, L(code.co_tlbc) },
};

/* Stable-ABI values any correctly read table has (64-bit), by build. */
struct anchor {
	const char *sect, *field;
	uint64_t value;
};

struct ctx {
	const uint8_t *buf;
	size_t len;
	const struct py_row *f;
	int guessed;		/* version newer than f */
	char ver[32];		/* "3.14.0rc1"; "" until known */
	char *err;
	size_t errlen;
};

static int __attribute__((format(printf, 2, 3))) fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->ver[0] && c->guessed)
		n = snprintf(c->err, c->errlen, "_Py_DebugOffsets of Python %s (read with the 3.%u%s layout): ",
			     c->ver, c->f->minor, c->f->free_threaded ? "t" : "");
	else if (c->ver[0])
		n = snprintf(c->err, c->errlen, "_Py_DebugOffsets of Python %s: ", c->ver);
	else
		n = snprintf(c->err, c->errlen, "_Py_DebugOffsets: ");
	if (n < 0 || (size_t)n >= c->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(c->err + n, c->errlen - n, fmt, ap);
	va_end(ap);
	return -1;
}

/* "3.13.0", "3.15.0a1", "3.14.0rc2". */
static void version_str(uint32_t hex, char *buf, size_t len)
{
	static const char *const level[16] = { [0xa] = "a", [0xb] = "b", [0xc] = "rc" };
	unsigned lv = hex >> 4 & 0xf;

	if (lv == 0xf)
		snprintf(buf, len, "%u.%u.%u", hex >> 24, hex >> 16 & 0xff, hex >> 8 & 0xff);
	else
		snprintf(buf, len, "%u.%u.%u%s%u", hex >> 24, hex >> 16 & 0xff, hex >> 8 & 0xff,
			 level[lv] ? level[lv] : "?", hex & 0xf);
}

/* Slot of sect.field in the sequence, and of sect.size (-1: none). */
static long find_slot(const struct py_debug_group *seq, const char *sect, const char *field,
		      long *size_slot)
{
	long slot = SLOT_SECTIONS;

	for (; seq->name; seq++) {
		long first = slot;
		int here = strcmp(seq->name, sect) == 0;

		for (const char *const *f = seq->fields; *f; f++, slot++) {
			if (here && strcmp(*f, field) == 0) {
				*size_slot = strcmp(seq->fields[0], "size") == 0 ? first : -1;
				return slot;
			}
		}
	}
	return -1;
}

static int read_slot(const struct ctx *c, long slot, uint64_t *v)
{
	if (slot < 0 || (size_t)slot >= c->len / 8)
		return -1;
	memcpy(v, c->buf + slot * 8, sizeof(*v));
	return 0;
}

/* sect.field and the size of its structure, checked to be readable and
 * the size plausible. */
static int table_value(struct ctx *c, const char *sect, const char *field,
		       uint64_t *v, uint64_t *size)
{
	long size_slot = -1;
	long slot = find_slot(c->f->debug, sect, field, &size_slot);

	if (slot < 0)
		return fail(c, "%s.%s is not in the table: the field is missing", sect, field);
	if (read_slot(c, slot, v) || (size_slot >= 0 && read_slot(c, size_slot, size)))
		return fail(c, "copy truncated at %zu bytes, before %s.%s (bytes %ld to %ld)",
			    c->len, sect, field, slot * 8, slot * 8 + 8);
	if (size_slot < 0) {
		*size = STRUCT_MAX;
		return 0;
	}
	if (*size < 8 || *size > STRUCT_MAX)
		return fail(c, "%s.size %llu is implausible (is this the table layout of this version?)",
			    sect, (unsigned long long)*size);
	return 0;
}

static int take_need(struct ctx *c, const struct need *n, struct py_layout *out)
{
	uint64_t v, size, limit = n->wide ? PY_NO_FIELD32 : PYPERF_NO_FIELD;

	if (table_value(c, n->sect, n->field, &v, &size))
		return -1;
	if (v % n->width)
		return fail(c, "%s.%s = %llu is not aligned to %u bytes: table misread or corrupt",
			    n->sect, n->field, (unsigned long long)v, n->width);
	if (v > size - n->width)	/* size >= 8 >= width */
		return fail(c, "%s.%s (offset %llu + %u) lies beyond %s.size %llu: the field is missing",
			    n->sect, n->field, (unsigned long long)v, n->width, n->sect,
			    (unsigned long long)size);
	if (v >= limit)
		return fail(c, "%s.%s = %llu does not fit the BPF configuration (max %llu)",
			    n->sect, n->field, (unsigned long long)v, (unsigned long long)limit - 1);
	if (n->wide) {
		uint32_t w = (uint32_t)v;

		memcpy((uint8_t *)out + n->dst, &w, sizeof(w));
	} else {
		uint16_t h = (uint16_t)v;

		memcpy((uint8_t *)out + n->dst, &h, sizeof(h));
	}
	return 0;
}

/* Every group of the row's list that starts with its structure's size
 * and lies inside the copy must have a plausible size, used or not: a
 * field list that does not match the table shifts some size slot onto an
 * offset, a flag or a pointer-sized value. */
static int check_group_sizes(struct ctx *c)
{
	long slot = SLOT_SECTIONS;

	for (const struct py_debug_group *g = c->f->debug; g->name; g++) {
		long first = slot;
		uint64_t size;

		for (const char *const *f = g->fields; *f; f++)
			slot++;
		if (strcmp(g->fields[0], "size") || read_slot(c, first, &size))
			continue;
		if (size < 8 || size > STRUCT_MAX)
			return fail(c, "%s.size %llu is implausible for a structure (8 to %u): the table does not have the expected layout",
				    g->name, (unsigned long long)size, STRUCT_MAX);
	}
	return 0;
}

static int check_anchors(struct ctx *c)
{
	const struct anchor anchors[] = {
		{ "pyobject", "size", c->f->pyobject_size },
		{ "pyobject", "ob_type", c->f->ob_type },
		{ "tuple_object", "ob_size", c->f->var_ob_size },
		{ "bytes_object", "ob_size", c->f->var_ob_size },
	};
	const char *build = c->f->free_threaded ? "free-threaded" : "GIL";

	for (size_t i = 0; i < sizeof(anchors) / sizeof(anchors[0]); i++) {
		const struct anchor *a = &anchors[i];
		uint64_t v, size;

		if (table_value(c, a->sect, a->field, &v, &size))
			return -1;
		if (v != a->value)
			return fail(c, "%s.%s is %llu where every 64-bit %s build (free_threaded = %u) has %llu: the table does not have the expected layout",
				    a->sect, a->field, (unsigned long long)v, build,
				    c->f->free_threaded, (unsigned long long)a->value);
	}
	return 0;
}

/*
 * The table gives sizeof(PyASCIIObject) but not the compact size. Since
 * 3.12 (wstr removed) PyCompactUnicodeObject is PyASCIIObject followed by
 * Py_ssize_t utf8_length and char *utf8, so 16 more bytes on 64-bit; the
 * data of a compact non-ASCII string follows it (3.13.0 DWARF: 40 and 56).
 * PyUnicodeObject adds the data pointer, so its size bounds the result.
 */
static int derive_unicode(struct ctx *c, struct py_layout *out)
{
	struct py_code_offsets *o = &out->code;
	uint64_t a, size;

	if (table_value(c, "unicode_object", "asciiobject_size", &a, &size))
		return -1;
	if (a % 8 || a < (uint64_t)o->unicode_state + 4 || a < (uint64_t)o->unicode_length + 8 ||
	    a >= size || size - a < 16)
		return fail(c, "unicode_object.asciiobject_size %llu is implausible (state at %u, length at %u, sizeof(PyUnicodeObject) %llu)",
			    (unsigned long long)a, o->unicode_state, o->unicode_length,
			    (unsigned long long)size);
	o->unicode_ascii_size = (uint16_t)a;
	o->unicode_compact_size = (uint16_t)(a + 16);
	return 0;
}

/* The optional_needs[], with the checks of take_need() on a scratch
 * context: a failure leaves the field absent and the error text alone. */
static void take_optional(const struct ctx *c, struct py_layout *out)
{
	struct ctx q = *c;
	char scratch[8];

	q.err = scratch;
	q.errlen = sizeof(scratch);
	for (size_t i = 0; i < sizeof(optional_needs) / sizeof(optional_needs[0]); i++)
		(void)take_need(&q, &optional_needs[i], out);
}

/*
 * The table gives the GIL's locked and last_holder as offsets in
 * PyInterpreterState (of the embedded interp->_gil); py_gil_offsets has
 * them relative to struct _gil_runtime_state, which interp->ceval.gil
 * points to. Optional: an implausible difference leaves them absent.
 */
static void derive_gil(struct ctx *c, struct py_layout *out)
{
	static const char *const names[2] = { "gil_runtime_state_locked",
					      "gil_runtime_state_holder" };
	uint16_t *dst[2] = { &out->gil.locked, &out->gil.last_holder };
	const unsigned width[2] = { 4, 8 };
	uint64_t base, v, size;
	struct ctx q = *c;
	char scratch[8];

	q.err = scratch;
	q.errlen = sizeof(scratch);
	if (out->gil.interp_gil == PYPERF_NO_FIELD ||
	    table_value(&q, "interpreter_state", "gil_runtime_state", &base, &size))
		return;
	for (int i = 0; i < 2; i++) {
		if (table_value(&q, "interpreter_state", names[i], &v, &size))
			continue;
		/* struct _gil_runtime_state is ~200 bytes; 4096 is generous. */
		if (v < base || v - base >= 4096 || (v - base) % width[i] ||
		    v > size - width[i])
			continue;
		*dst[i] = (uint16_t)(v - base);
	}
}

/* Cookie, version and build of the table; picks the row to read it with. */
static int read_header(struct ctx *c, uint32_t *version_hex)
{
	uint64_t version = 0, ft = 0;
	unsigned minor;

	if (c->len < SLOT_SECTIONS * 8)
		return fail(c, "copy truncated at %zu bytes, before the end of the header (24 bytes)",
			    c->len);
	if (memcmp(c->buf, COOKIE, 8))
		return fail(c, "no \"" COOKIE "\" cookie at the start of _PyRuntime");
	read_slot(c, SLOT_VERSION, &version);
	read_slot(c, SLOT_FREE_THREADED, &ft);
	minor = version >> 16 & 0xff;
	if (version >> 24 != 3 || minor < PY_DEBUG_OFFSETS_MINOR)
		return fail(c, "implausible version 0x%llx (expected 3.%u or later)",
			    (unsigned long long)version, PY_DEBUG_OFFSETS_MINOR);
	version_str((uint32_t)version, c->ver, sizeof(c->ver));
	if (ft > 1)
		return fail(c, "free_threaded is %llu, expected 0 or 1",
			    (unsigned long long)ft);
	c->f = py_row_for_table(minor, (int)ft, &c->guessed);
	if (!c->f)
		return fail(c, "no layout for a %s build of 3.%u",
			    ft ? "free-threaded" : "GIL", minor);
	*version_hex = (uint32_t)version;
	return 0;
}

/* Every offset the table does not give is absent: 0xffff is
 * PYPERF_NO_FIELD and 0xffffffff PY_NO_FIELD32. 3.13+ have no cframe,
 * no gilstate holder, no co_varnames, and need neither the frame's first
 * local (<=3.10) nor is_entry (3.11). The behaviour comes from the row. */
static void layout_init(const struct ctx *c, uint32_t hex, struct py_layout *l)
{
	const struct py_row *f = c->f;

	memset(l, 0xff, sizeof(*l));
	/* The obj fields that are constants, not offsets: 0 is "unknown"
	 * (py_layout_choose() fills them from the generated table). */
	l->obj.managed_dict = 0;
	l->obj.managed_values = 0;
	l->obj.managed_kind = PY_MANAGED_UNKNOWN;
	l->obj.long_kind = PY_LONG_UNKNOWN;
	memset(l->obj._pad, 0, sizeof(l->obj._pad));
	l->obj.tpflag_managed_dict = 0;
	l->obj.tpflag_inline_values = 0;
	l->walk.lasti_in_code = 0;	/* derived in py_layout_choose() */
	l->version_hex = hex;
	l->source = c->guessed && f->guessed ? f->guessed : f->source;
	l->line_kind = f->line_kind;
	l->gil_kind = f->gil_kind;
	l->free_threaded = f->free_threaded;
	l->walk.frame_kind = PY_FRAMES_DIRECT;
	l->walk.tid_kind = PY_TID_NATIVE;
	l->code.unicode_state_shift = f->str_interned_byte ? 6 : 0;
	l->walk.code_tag_mask = f->code_tag_mask;
	l->walk.entry_kind = f->entry_kind;
	l->walk.owner_shim = f->owner_shim;
	l->walk.frame_span = 0;
}

/* sizeof(PyInterpreterState) and sizeof(PyThreadState), which the
 * AsyncioDebug section of the same build must agree with; 0 if absent. */
static void take_sizes(const struct ctx *c, struct py_layout *l)
{
	struct ctx q = *c;
	uint64_t v, size;
	char scratch[8];

	q.err = scratch;
	q.errlen = sizeof(scratch);
	l->interp_size = table_value(&q, "interpreter_state", "size", &v, &size) ? 0 : (uint32_t)v;
	l->tstate_size = table_value(&q, "thread_state", "size", &v, &size) ? 0 : (uint32_t)v;
}

/* free-threaded: gil_runtime_state_enabled is offsetof(struct
 * _gil_runtime_state, enabled) already, not an interpreter offset. */
static void take_gil_enabled(const struct ctx *c, struct py_layout *l)
{
	struct ctx q = *c;
	uint64_t v, size;
	char scratch[8];

	q.err = scratch;
	q.errlen = sizeof(scratch);
	if (!c->f->free_threaded ||
	    table_value(&q, "interpreter_state", "gil_runtime_state_enabled", &v, &size))
		return;
	/* pycore_gil.h: enabled is the first member, so 0 is valid here. */
	if (v < 4096 && v % 4 == 0)
		l->gil.enabled = (uint16_t)v;
}

int py_debug_offsets_parse(const uint8_t *buf, size_t len, uint32_t *version_hex,
			   struct py_layout *out, char *err, size_t errlen)
{
	struct ctx c = { .buf = buf, .len = len, .err = err, .errlen = errlen };
	struct py_layout l;
	uint32_t hex = 0;

	if (read_header(&c, &hex) || check_group_sizes(&c) || check_anchors(&c))
		return -1;
	layout_init(&c, hex, &l);
	for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++)
		if (take_need(&c, &needs[i], &l))
			return -1;
	for (size_t i = 0; c.f->tlbc && i < sizeof(ft_needs) / sizeof(ft_needs[0]); i++)
		if (take_need(&c, &ft_needs[i], &l))
			return -1;
	if (derive_unicode(&c, &l))
		return -1;
	take_optional(&c, &l);
	take_sizes(&c, &l);
	derive_gil(&c, &l);
	take_gil_enabled(&c, &l);
	*out = l;
	*version_hex = hex;
	return 0;
}
