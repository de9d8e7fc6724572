/*
 * The BPF program's captures of code objects (struct py_code_capture,
 * bpf/pyperf.h): decoded and kept per (process, address) as they come
 * (pysym_capture), for pysym.c to make an entry from, with nothing read
 * where a capture is whole, and to name a code object gone by the time
 * its records are resolved.
 */
#define _GNU_SOURCE
#include "pysym_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

void cap_clear(struct capture *k)
{
	free(k->tab);
	free(k->name);
	free(k->filename);
	k->tab = NULL;
	k->tab_len = 0;
	k->name = k->filename = NULL;
	k->tag.pid = 0;
}

/* The capture of code, or NULL; with victim, the slot to put it in (its
 * own, an empty one or the oldest of its set). */
struct capture *cap_find(struct pysym_cache *c, const struct py_target *t,
				    uint64_t code, struct capture **victim)
{
	struct capture *set = &c->captures[(sym_hash64(code ^ (uint64_t)t->pid << 48) %
					    (CAPTURES / CAPTURE_WAYS)) * CAPTURE_WAYS];
	struct capture *v = &set[0];

	for (int i = 0; i < CAPTURE_WAYS; i++) {
		if (set[i].code == code && sym_tag_is(c, &set[i].tag, t)) {
			v = &set[i];
			if (victim)
				*victim = v;
			return v;
		}
		if (sym_keep_rank(c, &set[i].tag, set[i].seq) < sym_keep_rank(c, &v->tag, v->seq))
			v = &set[i];
	}
	if (victim)
		*victim = v;
	return NULL;
}

/* A str of a capture: from the bytes the program read, else (longer than
 * that) read from the target while the record is fresh. */
static int capture_str(const struct py_target *t, const uint8_t *obj, size_t got,
		       uint64_t addr, char *buf, size_t len)
{
	int r = sym_str_from(t, obj, got, buf, len);

	return r == 1 ? pysym_read_str(t, addr, buf, len) : r;
}

/* Whether str_utf8() had room for every character of a str into a buffer
 * of len (a character takes at most 4 bytes): then a larger buffer, as
 * load_entry()'s, holds the same. */
static int str_whole(const char *s, size_t len)
{
	return strlen(s) + 4 < len - 1;
}

/* What else of k cap_load() needs, from the captured bytes: the line
 * table's address and, where the name depends on it (before 3.11), the
 * argument names; k->whole if it has all load_entry() would read. */
static void capture_whole(const struct py_target *t, const struct py_code_capture *cap,
			  struct capture *k, const char *name, const char *file)
{
	const struct py_code_offsets *o = &t->layout.code;
	uint16_t span = t->layout.walk.code_span;
	uint16_t name_off = o->co_qualname != PYPERF_NO_FIELD ? o->co_qualname : o->co_name;
	int32_t argc = 0;

	k->whole = 0;
	k->table = sym_field_ptr(cap->obj, o->co_linetable);
	k->varnames = 0;
	/* load_entry()'s limits: fields in the first 256 bytes */
	if (o->co_linetable + 8u > span || !k->table || name_off >= 248 ||
	    o->co_firstlineno >= 248 ||
	    o->co_filename >= 248 || o->co_linetable >= 248 ||
	    !str_whole(name, CAPTURE_NAME) || !str_whole(file, CAPTURE_FILE))
		return;
	if (o->co_qualname == PYPERF_NO_FIELD && o->co_varnames != PYPERF_NO_FIELD &&
	    o->co_varnames < 248 && o->co_argcount < 248) {
		if (o->co_varnames + 8u > span || o->co_argcount + 4u > span)
			return;
		memcpy(&argc, cap->obj + o->co_argcount, sizeof(argc));
		k->varnames = argc >= 1 ? sym_field_ptr(cap->obj, o->co_varnames) : 0;
	}
	k->whole = 1;
}

/* k->tab from the line table the program captured, in table[] and (a
 * longer one) table_more[]. 0, or not all there. */
static int capture_table(const struct py_target *t, const struct py_code_capture *cap,
			 struct capture *k)
{
	uint8_t buf[PY_CAPTURE_TABLE + PY_CAPTURE_TABLE_MORE];

	if (cap->table_len > PY_CAPTURE_TABLE)
		return -1;
	if (cap->table_len < PY_CAPTURE_TABLE || !cap->more_len)
		return sym_bytes_from(t, cap->table, cap->table_len, &k->tab, &k->tab_len);
	if (cap->more_len > PY_CAPTURE_TABLE_MORE)
		return -1;
	memcpy(buf, cap->table, PY_CAPTURE_TABLE);
	memcpy(buf + PY_CAPTURE_TABLE, cap->table_more, cap->more_len);
	return sym_bytes_from(t, buf, PY_CAPTURE_TABLE + cap->more_len, &k->tab, &k->tab_len);
}

/* k->arg from the first argument's name the program captured: what
 * first_arg_kind() reads, when the capture holds all of the str. */
static uint8_t capture_arg(const struct py_target *t, const struct py_code_capture *cap,
			   const struct capture *k)
{
	char s[8];
	int r;

	if (!k->varnames || !cap->arg_len || cap->arg_len > PY_CAPTURE_ARG)
		return 0;
	r = sym_str_from(t, cap->arg, cap->arg_len, s, sizeof(s));
	return r == 1 ? 0 : (uint8_t)(1 + (r ? ARG_PLAIN : sym_kind_of(s)));
}

void pysym_capture(struct pysym_cache *c, const struct py_target *t,
		   const struct py_code_capture *cap)
{
	const struct py_code_offsets *o = &t->layout.code;
	uint16_t name_off = o->co_qualname != PYPERF_NO_FIELD ? o->co_qualname : o->co_name;
	char name[CAPTURE_NAME], file[CAPTURE_FILE];
	struct capture *k;
	struct entry *e;
	uint16_t lo, len;

	cap_find(c, t, cap->code, &k);
	sym_fp_span(o, &lo, &len);
	if (t->layout.walk.code_span > PY_CAPTURE_CODE ||
	    name_off + 8u > t->layout.walk.code_span ||
	    o->ob_type + 8u > t->layout.walk.code_span ||
	    lo + len > t->layout.walk.code_span || cap->name_len > PY_CAPTURE_NAME ||
	    cap->file_len > PY_CAPTURE_FILE)
		return;
	cap_clear(k);
	if (capture_str(t, cap->name, cap->name_len, sym_field_ptr(cap->obj, name_off), name,
			sizeof(name)) ||
	    capture_str(t, cap->file, cap->file_len, sym_field_ptr(cap->obj, o->co_filename),
			file, sizeof(file)) ||
	    !(k->name = strdup(name)) || !(k->filename = strdup(file))) {
		cap_clear(k);
		return;
	}
	memcpy(&k->firstlineno, cap->obj + o->co_firstlineno, sizeof(k->firstlineno));
	k->fp = sym_fingerprint(o, cap->obj, 0);
	k->type = sym_field_ptr(cap->obj, o->ob_type);
	capture_whole(t, cap, k, name, file);
	if (capture_table(t, cap, k)) {
		k->tab = NULL;	/* not all there: read when loaded */
		k->tab_len = 0;
	}
	k->arg = capture_arg(t, cap, k);
	k->time_ns = cap->h.time_ns;
	k->code = cap->code;
	k->tag = sym_tag_of(c, t);
	k->seq = ++c->capture_seq;
	c->st.captures++;
	/* The program saw a code object new at this address (or one it had
	 * forgotten): what is cached for it may be of the one before,
	 * possibly with the same fields, a line table and a file name str at
	 * the same addresses too, but not the same name and file name. */
	if ((e = sym_find(c, t, cap->code)) && !cap_agrees(c, t, e))
		sym_entry_clear(e);
}

/* Whether e, just read from code, is the object last captured at its
 * address (or nothing was). Records are resolved in the order they were
 * taken, and the program captures every code object it meets at an
 * address where it met another: so the capture, not what the address
 * holds now, is the code object of the record being resolved. What is
 * read is used only where it is that object still (its type, fields,
 * name and file name the same), for its line table. */
int cap_agrees(struct pysym_cache *c, const struct py_target *t, const struct entry *e)
{
	const struct capture *k = cap_find(c, t, e->code, NULL);

	if (!k)
		return 1;
	return e->type == k->type && e->fp == k->fp && strcmp(e->name, k->name) == 0 &&
	       strcmp(e->filename, k->filename) == 0;
}

/* The capture's line table into e, if it has one. 0, or -1: no memory. */
static int copy_table(const struct capture *k, struct entry *e)
{
	if (!k->tab)
		return 0;
	e->table = malloc(k->tab_len ? k->tab_len : 1);
	if (!e->table)
		return -1;
	memcpy(e->table, k->tab, k->tab_len);
	e->table_len = k->tab_len;
	return 0;
}

/* e (empty but for what the caller read) as capture k has it: names,
 * first line, fingerprint, type, and the line table with table when
 * captured. The tail every entry made from a capture shares. 0, or -1:
 * no memory. */
static int fill_from_capture(const struct capture *k, struct entry *e, int table)
{
	e->name = strdup(k->name);
	e->filename = strdup(k->filename);
	if (!e->name || !e->filename || (table && copy_table(k, e)))
		return -1;
	e->firstlineno = k->firstlineno;
	e->code = k->code;
	e->fp = k->fp;
	e->type = k->type;
	return 0;
}

/* e from the capture of code, when there is one: named, its line table
 * if that was captured (else its frames show the first line). */
int cap_entry(struct pysym_cache *c, const struct py_target *t, uint64_t code,
			struct entry *e)
{
	struct capture *k = cap_find(c, t, code, NULL);

	if (!k)
		return -1;
	if (fill_from_capture(k, e, 1)) {
		sym_entry_clear(e);
		return -1;
	}
	e->tag = sym_tag_of(c, t);
	c->st.from_captures++;
	return 0;
}

/* The first argument's kind as captured; ARG_PLAIN if unknown. */
static enum first_arg captured_arg(const struct capture *k)
{
	return k->arg ? (enum first_arg)(k->arg - 1) : ARG_PLAIN;
}

/* How much of a code object cap_load() reads: from its start to its
 * type and the fingerprint's end. No other reader reads this range, which
 * a replay tells from the checks' (validate_queued) by its address and
 * length. */
static uint16_t head_len(const struct py_code_offsets *o)
{
	uint16_t lo, len;

	sym_fp_span(o, &lo, &len);
	len = (uint16_t)(lo + len);
	return o->ob_type + 8u > len ? (uint16_t)(o->ob_type + 8u) : len;
}

/* e from capture k, whole and with its line table: what the sample saw,
 * read at its instant, so nothing is read but, before 3.11, the first
 * argument's name where the capture lacks it, with the object's head to
 * tell it is the captured one still (if not, its first argument is not
 * known: ARG_PLAIN, as cap_entry() has it). 0, or 1 (no memory). */
static int load_all_captured(struct pysym_cache *c, const struct py_target *t,
			     const struct capture *k, struct entry *e)
{
	const struct py_code_offsets *o = &t->layout.code;
	uint8_t code[256];
	uint64_t arg0 = 0, names = k->arg ? 0 : k->varnames;
	uint16_t len = head_len(o);
	struct iovec local[2] = { { code, len }, { &arg0, sizeof(arg0) } };
	struct iovec remote[2] = {
		{ (void *)(uintptr_t)k->code, len },
		{ (void *)(uintptr_t)(names + o->tuple_items), sizeof(arg0) } };
	int alive = 0;

	if (fill_from_capture(k, e, 1))
		return 1;
	if (names && len <= sizeof(code))
		alive = target_readv(t->src, t->pid, local, 2, remote, 2) ==
				(ssize_t)(len + sizeof(arg0)) &&
			sym_fingerprint(o, code, 0) == k->fp && sym_field_ptr(code, o->ob_type) == k->type;
	e->first_arg = (uint8_t)(alive ? sym_arg_kind(t, arg0) : captured_arg(k));
	if (!alive)	/* the capture is the check */
		e->checked_ns = c->now ? k->time_ns : 0;
	c->st.captured_loads++;
	c->st.captured_tables++;
	return 0;
}

/* e from capture k, whole, reading only what it lacks: the line table
 * (and before 3.11 the first argument's name), with the type and the
 * fields the fingerprint covers in the same read, which tell the code
 * object is the one captured still. Then e is what load_entry() and cap_agrees()
 * would make of it, in one system call instead of two or more. 0 done,
 * 1 the code object is not the captured one or unreadable (from_capture),
 * -1 to be read by load_entry(). */
int cap_load(struct pysym_cache *c, const struct py_target *t,
			 const struct capture *k, struct entry *e)
{
	const struct py_code_offsets *o = &t->layout.code;
	uint8_t code[256], table[SPEC_TABLE];
	uint64_t arg0 = 0, names = k->arg ? 0 : k->varnames;
	struct iovec local[3], remote[3];
	uint16_t len = head_len(o);
	size_t n = 0, head;
	ssize_t got;
	int r;

	if (k->tab)
		return load_all_captured(c, t, k, e);
	if (len > sizeof(code))
		return -1;
	local[n] = (struct iovec){ code, len };
	remote[n++] = (struct iovec){ (void *)(uintptr_t)k->code, len };
	if (names) {
		local[n] = (struct iovec){ &arg0, sizeof(arg0) };
		remote[n++] = (struct iovec){ (void *)(uintptr_t)(names + o->tuple_items),
					      sizeof(arg0) };
	}
	head = len + (names ? sizeof(arg0) : 0);
	local[n] = (struct iovec){ table, sizeof(table) };
	remote[n++] = (struct iovec){ (void *)(uintptr_t)k->table, sizeof(table) };
	got = target_readv(t->src, t->pid, local, n, remote, n);
	if (got < (ssize_t)len || sym_fingerprint(o, code, 0) != k->fp ||
	    sym_field_ptr(code, o->ob_type) != k->type)
		return 1;
	if (names && got < (ssize_t)head)
		return -1;	/* rare: what load_entry() makes of it */
	r = sym_bytes_from(t, table, (size_t)got - head, &e->table, &e->table_len);
	if (r < 0 || (r && sym_read_bytes_obj(t, k->table, &e->table, &e->table_len)))
		return 1;
	if (fill_from_capture(k, e, 0))
		return 1;
	e->first_arg = (uint8_t)(names ? sym_arg_kind(t, arg0) : captured_arg(k));
	c->st.captured_loads++;
	return 0;
}
