/*
 * The one chooser of a target's layout: a version's row
 * (pylayout_rows.c) plus its offsets, from the generated DWARF table or
 * the target's own _Py_DebugOffsets, checked against the target before
 * anything is sampled with them.
 */
#include "pylayout.h"

#include <stdio.h>
#include <string.h>

#include "linetable.h"
#include "pydebugoffsets.h"
#include "pyperf.h"

#define NO16		PYPERF_NO_FIELD
#define TLBC_MAX	(1u << 16)	/* per-thread bytecode copies, at most */

/* ---- completing a _Py_DebugOffsets layout ----------------------------- */

#define OU16(m) offsetof(struct py_object_offsets, m)
#define GU16(m) offsetof(struct py_gil_offsets, m)

static const size_t obj_u16[] = {
	OU16(ts_interp), OU16(interp_modules), OU16(module_dict), OU16(type_flags),
	OU16(type_basicsize), OU16(type_dictoffset), OU16(heaptype_cached_keys),
	OU16(dict_used), OU16(dict_keys), OU16(dict_values), OU16(dk_size),
	OU16(dk_log2_size), OU16(dk_log2_index_bytes), OU16(dk_kind),
	OU16(dk_kind_general), OU16(dk_nentries), OU16(dk_indices), OU16(entry_size),
	OU16(entry_hash), OU16(entry_key), OU16(entry_value), OU16(uentry_size),
	OU16(uentry_key), OU16(uentry_value), OU16(values_values), OU16(values_valid),
	OU16(long_size), OU16(long_digit),
};

static const size_t gil_u16[] = {
	GU16(interp_ceval_gil), GU16(interp_gil), GU16(locked), GU16(last_holder),
};

#define CU16(m) offsetof(struct py_code_offsets, m)

/* Compared, never taken: the object header, tuple and str fields both give
 * say whether the entry describes the same structures at all. */
static const size_t code_u16[] = {
	CU16(ob_type), CU16(type_name), CU16(tuple_items), CU16(bytes_size),
	CU16(bytes_sval), CU16(unicode_state), CU16(unicode_length),
	CU16(unicode_ascii_size),
};

/* Fills the absent u16 fields of mine from gen; 1 if a field both have
 * differs. */
static int merge16(void *mine, const void *gen, const size_t *offs, size_t n)
{
	int conflict = 0;

	for (size_t i = 0; i < n; i++) {
		uint16_t a, b;

		memcpy(&a, (const uint8_t *)mine + offs[i], sizeof(a));
		memcpy(&b, (const uint8_t *)gen + offs[i], sizeof(b));
		if (a == NO16)
			memcpy((uint8_t *)mine + offs[i], &b, sizeof(b));
		else if (b != NO16 && a != b)
			conflict = 1;
	}
	return conflict;
}

/*
 * _Py_DebugOffsets has only some of the object offsets thread names need;
 * the generated table of the same minor version and build has the rest,
 * used only when every field both give agrees (else the structures
 * changed within the minor version and the generated entry is not
 * trusted). An entry of the other build is never used: free-threaded
 * objects have a 32-byte header, so every object offset differs.
 */
static void complete_objects(struct py_layout *l, const struct py_layout *gen)
{
	struct py_object_offsets o = l->obj;
	struct py_gil_offsets g = l->gil;
	struct py_code_offsets c = l->code;
	int conflict = gen->free_threaded != l->free_threaded;

	conflict |= merge16(&c, &gen->code, code_u16, sizeof(code_u16) / sizeof(code_u16[0]));
	conflict |= merge16(&o, &gen->obj, obj_u16, sizeof(obj_u16) / sizeof(obj_u16[0]));
	conflict |= merge16(&g, &gen->gil, gil_u16, sizeof(gil_u16) / sizeof(gil_u16[0]));
	if (g.runtime_gil == PY_NO_FIELD32)
		g.runtime_gil = gen->gil.runtime_gil;
	else if (gen->gil.runtime_gil != PY_NO_FIELD32 && g.runtime_gil != gen->gil.runtime_gil)
		conflict = 1;
	if (o.managed_kind == PY_MANAGED_UNKNOWN) {
		o.managed_kind = gen->obj.managed_kind;
		o.managed_dict = gen->obj.managed_dict;
		o.managed_values = gen->obj.managed_values;
		o.tpflag_managed_dict = gen->obj.tpflag_managed_dict;
		o.tpflag_inline_values = gen->obj.tpflag_inline_values;
	}
	if (o.long_kind == PY_LONG_UNKNOWN)
		o.long_kind = gen->obj.long_kind;
	if (conflict)
		return;
	l->obj = o;
	l->gil = g;
}

/* ---- checks against the target ---------------------------------------- */

static int rd(const struct py_facts *f, uint64_t addr, void *buf, size_t len)
{
	return addr ? f->read(f->read_ctx, addr, buf, len) : -1;
}

/* Copies the start of _PyRuntime; when the full read fails, a shorter
 * copy (the parser says whether it is long enough). 0 if nothing reads. */
static size_t read_runtime_head(const struct py_facts *f, uint8_t *buf, size_t len)
{
	for (; len >= 64; len /= 2)
		if (rd(f, f->runtime_addr, buf, len) == 0)
			return len;
	return 0;
}

/* "0x030e00c1 (3.14.0rc1)". */
static void hex_str(uint32_t hex, char *buf, size_t len)
{
	static const char *const level[16] = { [0xa] = "a", [0xb] = "b", [0xc] = "rc" };
	unsigned lv = hex >> 4 & 0xf;

	if (lv == 0xf)
		snprintf(buf, len, "0x%08x (%u.%u.%u)", hex, hex >> 24, hex >> 16 & 0xff,
			 hex >> 8 & 0xff);
	else
		snprintf(buf, len, "0x%08x (%u.%u.%u%s%u)", hex, hex >> 24, hex >> 16 & 0xff,
			 hex >> 8 & 0xff, level[lv] ? level[lv] : "?", hex & 0xf);
}

/*
 * An anchor read through the layout: the type of the interpreter's
 * sys.__dict__ must be named "dict". Skipped (0) while the interpreter is
 * not initialised or when a pointer on the way cannot be read (a replay
 * holds only what the live run read); a readable wrong name refuses.
 */
static int check_sysdict(const struct py_facts *f, const struct py_layout *l, char *err,
			 size_t errlen)
{
	uint64_t interp = 0, dict = 0, type = 0, name = 0;
	char s[16] = "";

	if (l->interp_sysdict == NO16 || l->runtime_interp_head == PY_NO_FIELD32 ||
	    rd(f, f->runtime_addr + l->runtime_interp_head, &interp, 8) || !interp ||
	    rd(f, interp + l->interp_sysdict, &dict, 8) || !dict ||
	    rd(f, dict + l->code.ob_type, &type, 8) || !type ||
	    rd(f, type + l->code.type_name, &name, 8) || !name ||
	    rd(f, name, s, sizeof(s) - 1))
		return 0;
	if (strcmp(s, "dict") == 0)
		return 0;
	snprintf(err, errlen, "%s: the type of sys.__dict__, read through interpreter_state.sysdict, pyobject.ob_type and type_object.tp_name, is named \"%.15s\", expected \"dict\": the layout does not match this interpreter",
		 l->source, s);
	return -1;
}

static int check_target(const struct py_facts *f, const struct py_layout *l, char *err,
			size_t errlen)
{
	char a[40], b[40];

	if (f->version_exact ? l->version_hex != f->version_hex :
			       l->version_hex >> 16 != f->version_hex >> 16) {
		hex_str(l->version_hex, a, sizeof(a));
		hex_str(f->version_hex, b, sizeof(b));
		snprintf(err, errlen, "_Py_DebugOffsets.version is %s, the interpreter's %s is %s",
			 a, f->version_exact ? "Py_Version" : "version string", b);
		return -1;
	}
	if (f->ft_name >= 0 && f->ft_name != l->free_threaded) {
		snprintf(err, errlen, "_Py_DebugOffsets.free_threaded is %u, the interpreter's file is named like a %s build (free_threaded %d)",
			 l->free_threaded, f->ft_name ? "free-threaded" : "GIL", f->ft_name);
		return -1;
	}
	return check_sysdict(f, l, err, errlen);
}

/* Where the asyncio task labels' offsets come from: the row's table, or
 * each process's AsyncioDebug section (pyasyncio.c). */
static void apply_asyncio(const struct py_row *r, struct py_layout *l)
{
	l->asyncio_kind = !r ? PY_ASYNCIO_NONE : r->asyncio_section ? PY_ASYNCIO_SECTION :
			  r->asyncio ? PY_ASYNCIO_TABLE : PY_ASYNCIO_NONE;
	if (l->asyncio_kind == PY_ASYNCIO_TABLE)
		l->asyncio = *r->asyncio;
}

static int from_debug_offsets(const struct py_facts *f, struct py_layout *out, char *err,
			      size_t errlen)
{
	uint8_t buf[PY_DEBUG_OFFSETS_READ];
	const struct py_row *row;
	uint32_t hex = 0;
	int guessed;
	size_t n;

	if (!f->runtime_addr) {
		snprintf(err, errlen, "_PyRuntime is not in the interpreter's symbol tables");
		return -1;
	}
	n = read_runtime_head(f, buf, sizeof(buf));
	if (!n) {
		snprintf(err, errlen, "cannot read _PyRuntime at 0x%llx (run as root)",
			 (unsigned long long)f->runtime_addr);
		return -1;
	}
	if (py_debug_offsets_parse(buf, n, &hex, out, err, errlen))
		return -1;
	row = py_row_find(hex >> 16 & 0xff, out->free_threaded);
	/* A newer version than the rows: read as the newest row reads. */
	apply_asyncio(row ? row : py_row_for_table(hex >> 16 & 0xff, out->free_threaded, &guessed),
		      out);
	if (row && row->objects_from_table) {
		const struct py_layout *t = py_layout_find(3, row->minor, row->free_threaded);

		if (t)
			complete_objects(out, t);
	}
	return check_target(f, out, err, errlen);
}

static void apply_row(const struct py_row *r, struct py_layout *l)
{
	apply_asyncio(r, l);
	l->line_kind = r->line_kind;
	l->gil_kind = r->gil_kind;
	l->free_threaded = r->free_threaded;
	l->interp_sysdict = NO16;
	l->code.co_tlbc = NO16;
	l->code.unicode_state_shift = r->str_interned_byte ? 6 : 0;
	l->gil.enabled = NO16;
	l->interp_size = l->tstate_size = 0;
	l->gen_name = l->gen_iframe = l->frame_localsplus = NO16;
	l->gen_frame_state = l->frame_stackpointer = NO16;
	l->walk.entry_kind = r->entry_kind;
	l->walk.owner_shim = r->owner_shim;
	l->walk.frame_tlbc_index = NO16;
	/* struct _PyCFrame: previous follows current_frame (Include/cpython/
	 * pystate.h at v3.11.0, after a uint8_t use_tracing, and v3.12.0). */
	l->walk.cframe_previous = l->walk.frame_kind == PY_FRAMES_CFRAME &&
				  l->walk.cframe_current_frame != NO16 ?
				  l->walk.cframe_current_frame + 8 : NO16;
}

/* How much of a code object its capture takes (struct py_code_capture):
 * to the end of the last field pysym_capture() reads, name_off's, the
 * fingerprint's (pysym.c) and ob_type; 0 beyond PY_CAPTURE_CODE. */
static uint16_t capture_span(const struct py_code_offsets *o, uint16_t name_off)
{
	const uint16_t f[] = { name_off, o->co_filename, o->co_name, o->co_linetable,
			       o->co_firstlineno, o->ob_type };
	uint32_t end = 0;

	for (unsigned i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (f[i] == NO16)
			return 0;
		if (f[i] + 8u > end)
			end = f[i] + 8u;
	}
	return end <= PY_CAPTURE_CODE ? (uint16_t)end : 0;
}

/* What the BPF program needs to tell a capture holds all pysym.c takes
 * of a code object (bpf/checks.bpf.h, capture_whole): the str and bytes
 * layouts; str_length stays 0 (no capture whole) where pysym.c's
 * capture_whole() would read more anyway: a field past the capture or
 * its first 248 bytes, or a first argument's name not captured. */
static void capture_sizes(const struct py_code_offsets *o, struct py_walk_offsets *w)
{
	uint16_t name_off = w->code_name;
	int arg = o->co_qualname == NO16 && o->co_varnames != NO16 && o->co_varnames < 248 &&
		  o->co_argcount < 248;

	w->str_length = 0;
	if (w->code_span == NO16 || w->code_linetable == NO16 ||
	    w->code_linetable + 8u > w->code_span || name_off >= 248 || o->co_filename >= 248 ||
	    o->co_linetable >= 248 || o->co_firstlineno >= 248 ||
	    (arg && w->code_varnames == NO16) || o->unicode_length > 56 ||
	    o->unicode_state > 60 || o->unicode_ascii_size > 128 ||
	    o->unicode_compact_size > 128 || o->bytes_size > 56 || o->bytes_sval > 128 ||
	    o->unicode_state_shift > 15 || !o->unicode_length)
		return;
	w->str_length = (uint8_t)o->unicode_length;
	w->str_state = (uint8_t)o->unicode_state;
	w->str_shift = (uint8_t)o->unicode_state_shift;
	w->str_ascii_size = (uint8_t)o->unicode_ascii_size;
	w->str_compact_size = (uint8_t)o->unicode_compact_size;
	w->bytes_size = (uint8_t)o->bytes_size;
	w->bytes_sval = (uint8_t)o->bytes_sval;
}

/* Where a frame's f_globals is, for code_is_new() in the BPF program;
 * neither the generated tables nor _Py_DebugOffsets have it. The frame
 * structures (Include/frameobject.h to v3.10, Include/internal/
 * pycore_frame.h from v3.11, pycore_interpframe_structs.h from v3.14):
 * f_back, f_code, f_builtins, f_globals after PyObject_VAR_HEAD to 3.10;
 * f_func, f_globals, f_builtins, f_locals, f_code in 3.11; f_code (then
 * f_executable), previous, f_funcobj, f_globals from 3.12. Anything else
 * is a layout this does not know: NO16, and new code is told by address
 * alone. */
static uint16_t frame_globals(unsigned minor, const struct py_walk_offsets *w)
{
	if (minor <= 10 && w->frame_kind == PY_FRAMES_OBJECT && w->frame_code == 32 &&
	    w->frame_back == 24)
		return 48;
	if (minor == 11 && w->frame_code == 32)
		return 8;
	if (minor >= 12 && w->frame_code == 0 && w->frame_back == 8)
		return 24;
	return NO16;
}

int py_layout_choose(const struct py_facts *f, struct py_layout *out, char *err,
		     size_t errlen)
{
	unsigned major = f->version_hex >> 24, minor = f->version_hex >> 16 & 0xff;
	const struct py_row *row = major == 3 ? py_row_find(minor, f->ft_name == 1) : NULL;
	const struct py_layout *table = major == 3 ? py_layout_find(major, minor, f->ft_name == 1) :
						     NULL;

	if (major == 3 && minor >= PY_DEBUG_OFFSETS_MINOR) {
		if (from_debug_offsets(f, out, err, errlen))
			return -1;
	} else if (row && table && !row->debug) {
		*out = *table;
		apply_row(row, out);
	} else {
		snprintf(err, errlen, "which pyperf-pprof does not support (supported: 3.6 to 3.15, free-threaded 3.13t to 3.15t)");
		return PY_LAYOUT_UNSUPPORTED;
	}
	/* 3.11-3.13: a frame's instruction pointer points into its code
	 * object's co_code_adaptive, which the BPF walk checks; 3.14 (tagged
	 * references, per-thread bytecode copies) is not checked. */
	out->walk.lasti_in_code = out->line_kind == PY_LINES_311 && !out->walk.code_tag_mask &&
				  out->walk.frame_tlbc_index == NO16;
	/* What the BPF program captures of a code object new to it (struct
	 * py_code_capture): where its name and file name are. */
	out->walk.code_name = out->code.co_qualname != NO16 ? out->code.co_qualname :
							      out->code.co_name;
	out->walk.code_filename = out->code.co_filename;
	out->walk.code_linetable = out->code.co_linetable;
	out->walk.code_span = capture_span(&out->code, out->walk.code_name);
	if (out->walk.code_name > PY_CAPTURE_CODE - 8 ||
	    out->walk.code_filename > PY_CAPTURE_CODE - 8 || !out->walk.code_span)
		out->walk.code_name = out->walk.code_filename = out->walk.code_span = NO16;
	/* capture_span() covers it; the argument names only where they
	 * name methods (before 3.11) and lie within it */
	if (out->walk.code_span == NO16)
		out->walk.code_linetable = NO16;
	out->walk.code_argcount = out->walk.code_varnames = out->walk.tuple_items = NO16;
	if (out->code.co_qualname == NO16 && out->code.co_varnames != NO16 &&
	    out->code.co_argcount != NO16 && out->walk.code_span != NO16 &&
	    out->code.co_varnames + 8u <= out->walk.code_span &&
	    out->code.co_argcount + 4u <= out->walk.code_span && out->code.tuple_items <= 64) {
		out->walk.code_argcount = out->code.co_argcount;
		out->walk.code_varnames = out->code.co_varnames;
		out->walk.tuple_items = out->code.tuple_items;
	}
	capture_sizes(&out->code, &out->walk);
	out->walk.frame_globals = frame_globals(minor, &out->walk);
	/* The BPF walk reads the frame fields with one copy of a bounded size. */
	out->walk.frame_span = py_frame_span(&out->walk);
	if (!out->walk.frame_span) {
		snprintf(err, errlen, "the frame fields of Python %u.%u lie more than %d bytes into a frame, which pyperf-pprof does not support",
			 major, minor, PYPERF_FRAME_WIN);
		return -1;
	}
	return 0;
}

int py_ft_from_name(const char *path)
{
	const char *base = strrchr(path, '/');
	const char *p;
	unsigned major, minor;
	int n = 0;

	base = base ? base + 1 : path;
	p = strstr(base, "python");
	if (!p || sscanf(p + 6, "%u.%u%n", &major, &minor, &n) != 2 || n <= 0)
		return -1;
	return p[6 + n] == 't';
}

/* ---- what readers ask of a layout -------------------------------------- */

int py_code_start(const struct py_layout *l, py_read_fn read, void *ctx, uint64_t code,
		  uint32_t tlbc, uint64_t *start)
{
	uint64_t arr = 0, size = 0, entry = 0;

	*start = code + l->code.co_code_adaptive;
	/* Copy 0 is co_code_adaptive itself; others hang off co_tlbc, a
	 * _PyCodeArray { Py_ssize_t size; char *entries[]; }. */
	if (!tlbc)
		return 0;
	if (l->code.co_tlbc == NO16 || tlbc >= TLBC_MAX ||
	    read(ctx, code + l->code.co_tlbc, &arr, 8) || !arr || (arr & 7) ||
	    read(ctx, arr, &size, 8) || size <= tlbc || size > TLBC_MAX ||
	    read(ctx, arr + 8 + 8ull * tlbc, &entry, 8) || !entry)
		return -1;
	*start = entry;
	return 0;
}

int py_layout_line(const struct py_layout *l, const uint8_t *tab, size_t len,
		   int firstlineno, uint64_t lasti, uint64_t start)
{
	switch (l->line_kind) {
	case PY_LINES_LNOTAB:
		if ((int32_t)lasti < 0)
			return firstlineno;
		return linetable_lnotab(tab, len, firstlineno, (uint32_t)lasti);
	case PY_LINES_310:
		if ((int32_t)lasti < 0)
			return firstlineno;
		return linetable_310(tab, len, firstlineno, (uint32_t)lasti * 2);
	case PY_LINES_311:
		/* Before the first instruction the pointer is just below
		 * the code (an incomplete frame). */
		if (lasti < start)
			return -2;
		if ((lasti - start) / 2 > UINT32_MAX)
			return -1;
		return linetable_311(tab, len, firstlineno, (uint32_t)((lasti - start) / 2));
	}
	return -1;
}
