/*
 * Unit tests of the _Py_DebugOffsets parser (src/python/pydebugoffsets.c), on
 * tables built in memory. The tables are declared here as C structures
 * shaped like CPython's own, independently of the parser's field lists,
 * so a slot the parser counts wrong shows up as a wrong value. Prints one
 * "ok ..." or "FAIL ..." line per check and a closing count; exits 0 only
 * if every check passed.
 */
#include "pydebugoffsets.h"
#include "pyoffsets.h"
#include "check.h"
#include "debug_offsets_tags.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The values in the .data of 3.13.0's libpython3.13.so
 * (gdb: print _PyRuntime.debug_offsets). */
static const struct dbg313 real_313 = {
	.cookie = "xdebugpy", .version = 0x030d00f0, .free_threaded = 0,
	.runtime_state = { 283320, 0x260, 0x278 },
	.interpreter_state = { 194968, 0x1c68, 0x1c60, 0x1cb0, 0x1ce8, 0x1de8, 0x1dd8,
			       0x1de0, 0x10, 0x1e48, 0, 0x1e58, 0x1e50 },
	.thread_state = { 0x130, 0, 0x8, 0x10, 0x48, 0x98, 0xa0, 0xe8, 0x20 },
	.interpreter_frame = { 0x50, 0x8, 0, 0x38, 0x48, 0x46 },
	.code_object = { 0xd0, 0x70, 0x78, 0x80, 0x88, 0x44, 0x34, 0x60, 0x68, 0xc8 },
	.pyobject = { 0x10, 0x8 },
	.type_object = { 0x1a0, 0x18, 0x58, 0xa8 },
	.tuple_object = { 0x20, 0x18, 0x10 },
	.list_object = { 0x28, 0x18, 0x10 },
	.dict_object = { 0x30, 0x20, 0x28 },
	.float_object = { 0x18, 0x10 },
	.long_object = { 0x20, 0x10, 0x18 },
	.bytes_object = { 0x28, 0x10, 0x20 },
	.unicode_object = { 0x40, 0x20, 0x10, 0x28 },
	.gc = { 0xf0, 0xc8 },
};

/* A made-up 3.14 table: every offset differs from 3.13 and from its
 * neighbours, so a field read from the wrong slot is caught. */
static const struct dbg314 synth_314 = {
	.cookie = "xdebugpy", .version = 0x030e00f0, .free_threaded = 0,
	.runtime_state = { 300000, 0x268, 0x288 },
	.interpreter_state = { 200000, 0x1d68, 0x1d60, 7400, 7408, 0x1df0, 0x1e00, 0x1e08,
			       0x1e10, 0x18, 0x1e50, 0, 0x1e60, 0x1e58, 0x1f00, 0 },
	.thread_state = { 0x150, 0, 0x10, 0x18, 0x58, 0xa8, 0xb8, 0xf0, 0x28 },
	.interpreter_frame = { 0x58, 0x10, 0x8, 0x40, 0x50, 0x4e, 0x48, 0 },
	.code_object = { 0xe8, 0x78, 0x80, 0x90, 0x98, 0x4c, 0x38, 0x68, 0x70, 0xe0, 0 },
	.pyobject = { 0x10, 0x8 },
	.type_object = { 0x1b0, 0x20, 0x60, 0xb0 },
	.tuple_object = { 0x28, 0x20, 0x10 },
	.list_object = { 0x28, 0x18, 0x10 },
	.set_object = { 0xc8, 0x18, 0x28, 0x20 },
	.dict_object = { 0x30, 0x20, 0x28 },
	.float_object = { 0x18, 0x10 },
	.long_object = { 0x20, 0x10, 0x18 },
	.bytes_object = { 0x30, 0x10, 0x28 },
	.unicode_object = { 0x48, 0x24, 0x18, 0x30 },
	.gc = { 0x100, 0xd0 },
	.gen_object = { 0xa0, 0x18, 0x48, 0x43 },
	.llist_node = { 0, 8 },
	.debugger_support = { 0x18, 0x150, 0x1eb0, 0, 4, 512 },
};

/* Parses a private copy of exactly len bytes, so that a sanitizer or
 * valgrind catches any read past the end. */
static int parse(const void *table, size_t len, uint32_t *hex, struct py_layout *l,
		 char *err, size_t errlen)
{
	uint8_t *copy = malloc(len ? len : 1);
	int ret;

	if (!copy)
		abort();
	memcpy(copy, table, len);
	ret = py_debug_offsets_parse(copy, len, hex, l, err, errlen);
	free(copy);
	return ret;
}

#define FLD(m, w) { #m, offsetof(struct py_layout, m), w }

static const struct { const char *name; size_t off, width; } fields[] = {
	FLD(runtime_interp_head, 4), FLD(runtime_gil_holder, 4),
	FLD(walk.interp_tstate_head, 2), FLD(walk.ts_next, 2), FLD(walk.ts_frame, 2),
	FLD(walk.cframe_current_frame, 2), FLD(walk.ts_thread_id, 2),
	FLD(walk.ts_native_thread_id, 2), FLD(walk.frame_back, 2), FLD(walk.frame_code, 2),
	FLD(walk.frame_lasti, 2), FLD(walk.frame_owner, 2), FLD(walk.frame_localsplus, 2),
	FLD(walk.frame_is_entry, 2), FLD(walk.frame_kind, 1),
	FLD(walk.tid_kind, 1), FLD(walk.code_tag_mask, 1),
	FLD(code.co_filename, 2), FLD(code.co_name, 2), FLD(code.co_qualname, 2),
	FLD(code.co_firstlineno, 2), FLD(code.co_linetable, 2), FLD(code.co_code_adaptive, 2),
	FLD(code.co_argcount, 2), FLD(code.co_varnames, 2), FLD(code.unicode_state, 2),
	FLD(code.unicode_length, 2), FLD(code.unicode_ascii_size, 2),
	FLD(code.unicode_compact_size, 2), FLD(code.bytes_size, 2), FLD(code.bytes_sval, 2),
	FLD(code.tuple_items, 2), FLD(code.ob_type, 2), FLD(code.type_name, 2),
};

static uint32_t field(const struct py_layout *l, size_t i)
{
	const uint8_t *p = (const uint8_t *)l + fields[i].off;
	uint32_t v32;
	uint16_t v16;

	if (fields[i].width == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	if (fields[i].width == 2) {
		memcpy(&v16, p, 2);
		return v16;
	}
	return *p;
}

/* Field by field: the 3.13 table gives exactly the generated entry. */
static void test_313_matches_generated(void)
{
	const struct py_layout *gen = py_layout_find(3, 13, 0);
	struct py_layout l;
	uint32_t hex = 0;
	char err[256] = "";
	int ret = parse(&real_313, sizeof(real_313), &hex, &l, err, sizeof(err));

	check(ret == 0, "3.13.0 table parses (%s)", ret ? err : "no error");
	check(hex == 0x030d00f0, "3.13.0 version_hex 0x%08x", hex);
	if (ret || !gen) {
		check(gen != NULL, "generated 3.13 entry exists");
		return;
	}
	check(l.version_hex == 0x030d00f0 && l.source && strstr(l.source, "_Py_DebugOffsets"),
	      "3.13 layout names its source (%s)", l.source ? l.source : "NULL");
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		check(field(&l, i) == field(gen, i), "3.13 %s: debug offsets %u, generated table %u",
		      fields[i].name, field(&l, i), field(gen, i));
}

/* The parsed 3.14 layout against the values put in synth_314. */
static void check_314_values(const char *what, const struct py_layout *l,
			     const struct dbg314 *t)
{
	const struct py_walk_offsets *w = &l->walk;
	const struct py_code_offsets *c = &l->code;

	check(l->runtime_interp_head == t->runtime_state.interpreters_head &&
	      l->runtime_gil_holder == PY_NO_FIELD32, "%s runtime offsets", what);
	check(w->interp_tstate_head == t->interpreter_state.threads_head &&
	      w->ts_next == t->thread_state.next && w->ts_frame == t->thread_state.current_frame &&
	      w->ts_thread_id == t->thread_state.thread_id &&
	      w->ts_native_thread_id == t->thread_state.native_thread_id &&
	      w->cframe_current_frame == PYPERF_NO_FIELD, "%s thread offsets", what);
	check(w->frame_back == t->interpreter_frame.previous &&
	      w->frame_code == t->interpreter_frame.executable &&
	      w->frame_lasti == t->interpreter_frame.instr_ptr &&
	      w->frame_owner == t->interpreter_frame.owner &&
	      w->frame_localsplus == PYPERF_NO_FIELD && w->frame_is_entry == PYPERF_NO_FIELD &&
	      w->frame_tlbc_index == PYPERF_NO_FIELD && w->entry_kind == PY_ENTRY_SHIM &&
	      w->owner_shim == 3, "%s frame offsets", what);
	check(w->frame_kind == PY_FRAMES_DIRECT && w->tid_kind == PY_TID_NATIVE &&
	      w->code_tag_mask == 3, "%s kinds, code_tag_mask %u", what, w->code_tag_mask);
	check(c->co_filename == t->code_object.filename && c->co_name == t->code_object.name &&
	      c->co_qualname == t->code_object.qualname &&
	      c->co_linetable == t->code_object.linetable &&
	      c->co_firstlineno == t->code_object.firstlineno &&
	      c->co_argcount == t->code_object.argcount &&
	      c->co_code_adaptive == t->code_object.co_code_adaptive &&
	      c->co_varnames == PYPERF_NO_FIELD, "%s code object offsets", what);
	check(c->ob_type == 8 && c->type_name == t->type_object.tp_name &&
	      c->tuple_items == t->tuple_object.ob_item &&
	      c->bytes_size == t->bytes_object.ob_size && c->bytes_sval == t->bytes_object.ob_sval,
	      "%s object offsets", what);
	check(c->unicode_state == t->unicode_object.state &&
	      c->unicode_length == t->unicode_object.length &&
	      c->unicode_ascii_size == t->unicode_object.asciiobject_size &&
	      c->unicode_compact_size == t->unicode_object.asciiobject_size + 16,
	      "%s unicode offsets (compact size %u)", what, c->unicode_compact_size);
}

static void test_314(void)
{
	struct py_layout l;
	uint32_t hex = 0;
	char err[256] = "";
	int ret = parse(&synth_314, sizeof(synth_314), &hex, &l, err, sizeof(err));

	check(ret == 0 && hex == 0x030e00f0, "3.14 table parses (%s)", ret ? err : "no error");
	if (ret)
		return;
	check(strstr(l.source, "3.14 layout") && !strstr(l.source, "newer"),
	      "3.14 source: %s", l.source);
	check_314_values("3.14", &l, &synth_314);
}

static int fails_with(const void *t, size_t len, const char *what,
		      const char *want1, const char *want2)
{
	struct py_layout l;
	uint32_t hex = 0;
	char err[256] = "";
	int ret = parse(t, len, &hex, &l, err, sizeof(err));
	int ok = ret == -1 && strstr(err, want1) && (!want2 || strstr(err, want2)) &&
		 !strchr(err, '\n');

	check(ok, "%s refused: %s", what, err[0] ? err : "(no error)");
	return ok;
}

static void test_refusals(void)
{
	struct dbg313 t = real_313;
	struct dbg314 u = synth_314;

	memcpy(t.cookie, "xdebugpY", 8);
	fails_with(&t, sizeof(t), "wrong cookie", "cookie", NULL);
	t = real_313;
	t.code_object.size = 0x78;	/* covers filename only */
	fails_with(&t, sizeof(t), "code_object.size dropping name", "code_object.name",
		   "3.13.0");
	t = real_313;
	t.interpreter_frame.size = 0x46;	/* owner at 0x46 is a char */
	fails_with(&t, sizeof(t), "interpreter_frame.size dropping owner",
		   "interpreter_frame.owner", "3.13.0");
	u.thread_state.size = u.thread_state.native_thread_id;
	fails_with(&u, sizeof(u), "3.14 thread_state.size dropping native_thread_id",
		   "thread_state.native_thread_id", "3.14.0");
	t = real_313;
	t.free_threaded = 1;
	fails_with(&t, sizeof(t), "free-threaded build", "free-threaded", "3.13.0");
	t = real_313;
	t.version = 0x030c01f0;
	fails_with(&t, sizeof(t), "version 3.12 in the table", "version", NULL);
	t = real_313;
	t.thread_state.next = 12;
	fails_with(&t, sizeof(t), "misaligned thread_state.next", "thread_state.next",
		   "aligned");
	t = real_313;
	t.pyobject.ob_type = 16;
	fails_with(&t, sizeof(t), "pyobject.ob_type off the stable ABI", "pyobject.ob_type",
		   NULL);
	t = real_313;
	t.interpreter_state.threads_head = 0x10000;
	fails_with(&t, sizeof(t), "threads_head beyond a u16", "threads_head", "fit");
	t = real_313;
	t.code_object.size = 0;
	fails_with(&t, sizeof(t), "code_object.size 0", "code_object.size", "implausible");
	/* A 3.14 table mistaken for 3.13: set_object shifts what follows. */
	memcpy(&t, &synth_314, sizeof(t));
	t.version = 0x030d00f0;
	fails_with(&t, sizeof(t), "3.14 table labelled 3.13", "3.13.0", NULL);
}

/* 3.15 has its own field list: a 3.14-shaped table labelled 3.15 (the
 * shape of the previous version applied to the next) is refused. */
static void test_future(void)
{
	struct dbg314 u = synth_314;

	u.version = 0x030f00a1;
	fails_with(&u, sizeof(u), "3.14-shaped table labelled 3.15.0a1", "3.15.0a1",
		   "expected layout");
}

/* A future table read with the newest field list that does not fit it
 * must be refused, not misread. */
static void test_future_shifted(void)
{
	uint64_t t[sizeof(struct dbg314) / 8 + 3];
	size_t at = offsetof(struct dbg314, thread_state.thread_id) / 8;
	const uint64_t extra[3] = { 0x60, 0x68, 0x70 };

	memcpy(t, &synth_314, at * 8);
	memcpy(t + at, extra, sizeof(extra));
	memcpy(t + at + 3, (const uint64_t *)&synth_314 + at, sizeof(synth_314) - at * 8);
	t[1] = 0x031000a1;
	fails_with(t, sizeof(t), "3.16 with fields inserted in thread_state", "3.16.0a1",
		   "3.15 layout");
}

/* Every length short of the needed prefix fails cleanly; exact-size
 * copies let a sanitizer catch a read past the end. */
static void test_truncated(void)
{
	size_t need13 = offsetof(struct dbg313, gc);
	size_t need14 = offsetof(struct dbg314, gc);
	struct py_layout l;
	uint32_t hex;
	char err[256];
	int bad = 0;

	for (size_t len = 0; len <= sizeof(real_313); len++) {
		int ret = parse(&real_313, len, &hex, &l, err, sizeof(err));

		bad += (ret == 0) != (len >= need13);
	}
	check(!bad, "3.13 table: lengths 0..%zu succeed exactly from %zu (%d wrong)",
	      sizeof(real_313), need13, bad);
	bad = 0;
	for (size_t len = 0; len <= sizeof(synth_314); len++) {
		int ret = parse(&synth_314, len, &hex, &l, err, sizeof(err));

		bad += (ret == 0) != (len >= need14);
	}
	check(!bad, "3.14 table: lengths 0..%zu succeed exactly from %zu (%d wrong)",
	      sizeof(synth_314), need14, bad);
	fails_with(&real_313, 200, "3.13 copy of 200 bytes", "truncated", "3.13.0");
	fails_with(&real_313, 10, "10-byte copy", "truncated", NULL);
}

static void test_small_err(void)
{
	struct dbg313 t = real_313;
	struct py_layout l;
	uint32_t hex;
	char err[12];

	memset(err, 'x', sizeof(err));
	t.free_threaded = 1;
	check(parse(&t, sizeof(t), &hex, &l, err, 8) == -1 && err[7] == 0 && err[8] == 'x',
	      "error text stays inside a small buffer");
}

int main(void)
{
	test_313_matches_generated();
	test_314();
	test_refusals();
	test_future();
	test_future_shifted();
	test_truncated();
	test_small_err();
	return check_exit();
}
