/*
 * Symbolization of Python frames by reading the target's code objects with
 * process_vm_readv. Results are cached per (process, code address) in a
 * bounded set-associative cache: code objects live as long as their
 * functions, so a hot stack costs no syscalls at all after the first sample.
 */
#define _GNU_SOURCE
#include "pysym.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "proc.h"
#include "pylayout.h"
#include "pysym_int.h"
#include "setcache.h"

#define WAYS		4
#define CODE_READ_MAX	512		/* bytes of PyCodeObject we read */
/* A record's time_ns is taken before the BPF program walks the frames;
 * the walk is bounded far below this, so a check this much later than
 * time_ns read memory after the walk did. */
#define WALK_SLACK_NS	1000000ULL

struct pysym_cache *pysym_cache_new(size_t capacity)
{
	struct pysym_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->e = setcache_alloc(capacity, WAYS, sizeof(*c->e), &c->nsets);
	c->captures = calloc(CAPTURES, sizeof(*c->captures));
	if (!c->e || !c->captures) {
		free(c->e);
		free(c->captures);
		free(c);
		return NULL;
	}
	c->round = 1;
	return c;
}

void sym_entry_clear(struct entry *e)
{
	free(e->name);
	free(e->filename);
	free(e->table);
	memset(e, 0, sizeof(*e));
}

void pysym_cache_free(struct pysym_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nsets * WAYS; i++)
		sym_entry_clear(&c->e[i]);
	for (size_t i = 0; i < CAPTURES; i++)
		cap_clear(&c->captures[i]);
	free(c->e);
	free(c->captures);
	free(c);
}

uint64_t sym_hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static unsigned forget_bit(int pid)
{
	return (unsigned)sym_hash64((uint64_t)pid) & (FORGET_BITS - 1);
}

/* Was x's process forgotten since x was made? */
static int gone(const struct pysym_cache *c, const struct tag *x)
{
	unsigned b = forget_bit(x->pid);

	if (!(c->forget_bits[b / 64] & 1ull << (b % 64)))
		return 0;
	for (size_t i = 0; i < c->nforget; i++)
		if (c->forget[i].pid == x->pid && c->forget[i].start == x->start &&
		    c->forget[i].seq > x->born)
			return 1;
	return 0;
}

/* Is x t's (and not forgotten since)? */
int sym_tag_is(const struct pysym_cache *c, const struct tag *x, const struct py_target *t)
{
	return x->pid == t->pid && x->start == t->start_time && (!c->nforget || !gone(c, x));
}

struct tag sym_tag_of(const struct pysym_cache *c, const struct py_target *t)
{
	return (struct tag){ .pid = t->pid, .start = t->start_time, .born = c->forgets };
}

/* Empty or forgotten, an entry goes first; then the least used. */
uint64_t sym_keep_rank(const struct pysym_cache *c, const struct tag *x, uint64_t use)
{
	return !x->pid || (c->nforget && gone(c, x)) ? 0 : use;
}

/* Drops what belongs to the processes forgotten: one pass over all. */
static void forget_flush(struct pysym_cache *c)
{
	for (size_t i = 0; i < c->nsets * WAYS; i++)
		if (c->e[i].tag.pid && gone(c, &c->e[i].tag))
			sym_entry_clear(&c->e[i]);
	for (size_t i = 0; i < CAPTURES; i++)
		if (c->captures[i].tag.pid && gone(c, &c->captures[i].tag))
			cap_clear(&c->captures[i]);
	for (size_t i = 0; i < TYPE_CACHE; i++)
		if (c->types[i].tag.pid && gone(c, &c->types[i].tag))
			c->types[i].tag.pid = 0;
	c->nforget = 0;
	memset(c->forget_bits, 0, sizeof(c->forget_bits));
}

void pysym_forget(struct pysym_cache *c, int pid, uint64_t start_time)
{
	unsigned b = forget_bit(pid);

	if (!pid)
		return;
	if (c->nforget == FORGET_MAX)
		forget_flush(c);
	c->forget[c->nforget++] = (struct forgotten){ pid, start_time, ++c->forgets };
	c->forget_bits[b / 64] |= 1ull << (b % 64);
}

void pysym_get_stats(const struct pysym_cache *c, struct pysym_stats *st)
{
	*st = c->st;
}

/* Appends code point cp as UTF-8; returns bytes written (0 if no room). */
static size_t put_utf8(char *out, size_t room, uint32_t cp)
{
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;	/* lone surrogates are not valid UTF-8 */
	if (cp < 0x80 && room >= 1) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800 && room >= 2) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000 && cp >= 0x800 && room >= 3) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	if (cp >= 0x10000 && room >= 4) {
		out[0] = (char)(0xf0 | cp >> 18);
		out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[3] = (char)(0x80 | (cp & 0x3f));
		return 4;
	}
	return 0;
}

/* Where a str object's characters are, from its header: *off from the
 * object, *bytes long (at most MAX_STR characters), *width per character.
 * -1 if it is not a compact str. */
static int str_layout(const struct py_code_offsets *o, const uint8_t *hdr, size_t *off,
		      size_t *bytes, unsigned *width)
{
	uint32_t state;
	uint64_t n;
	unsigned kind;

	memcpy(&n, hdr + o->unicode_length, sizeof(n));
	memcpy(&state, hdr + o->unicode_state, sizeof(state));
	kind = py_str_kind(o, state);
	if (!py_str_compact(o, state) || (kind != 1 && kind != 2 && kind != 4) || n > (1u << 30))
		return -1;	/* legacy non-compact strings: not in code objects */
	*width = kind;
	if (n > MAX_STR)
		n = MAX_STR;
	*off = py_str_ascii(o, state) ? o->unicode_ascii_size : o->unicode_compact_size;
	*bytes = (size_t)n * kind;
	return 0;
}

/* The characters of a str (bytes of width each) as UTF-8 into buf. */
static void str_utf8(const uint8_t *data, size_t bytes, unsigned width, char *buf, size_t len)
{
	size_t out = 0, n = bytes / width;

	for (size_t i = 0; i < n; i++) {
		uint32_t cp = width == 1 ? data[i] : width == 2 ?
			(uint32_t)(data[2 * i] | data[2 * i + 1] << 8) :
			(uint32_t)(data[4 * i] | data[4 * i + 1] << 8 |
				   data[4 * i + 2] << 16 | (uint32_t)data[4 * i + 3] << 24);
		size_t w = put_utf8(buf + out, len - 1 - out, cp);

		if (!w)
			break;
		out += w;
	}
	buf[out] = '\0';
}

int pysym_read_str(const struct py_target *t, uint64_t addr, char *buf, size_t len)
{
	const struct py_code_offsets *o = &t->layout.code;
	uint8_t hdr[128], data[MAX_STR * 4];
	size_t off, bytes;
	unsigned width;

	if (!len || !addr || o->unicode_compact_size > sizeof(hdr))
		return -1;
	if (target_read(t->src, t->pid, addr, hdr, o->unicode_compact_size) ||
	    str_layout(o, hdr, &off, &bytes, &width) ||
	    target_read(t->src, t->pid, addr + off, data, bytes))
		return -1;
	str_utf8(data, bytes, width, buf, len);
	return 0;
}

/* pysym_read_str() from the first got bytes of the object, read already:
 * 0 done, 1 not all there (read it alone), -1 not a str. */
int sym_str_from(const struct py_target *t, const uint8_t *obj, size_t got, char *buf,
		    size_t len)
{
	const struct py_code_offsets *o = &t->layout.code;
	size_t off, bytes;
	unsigned width;

	if (got < o->unicode_compact_size || o->unicode_compact_size > 128)
		return 1;
	if (str_layout(o, obj, &off, &bytes, &width))
		return -1;
	if (off + bytes > got)
		return 1;
	str_utf8(obj + off, bytes, width, buf, len);
	return 0;
}

int pysym_str_prefix(const struct py_target *t, const uint8_t *obj, size_t got, char *buf,
		     size_t len)
{
	const struct py_code_offsets *o = &t->layout.code;
	size_t off, bytes;
	unsigned width;

	if (!len || got < o->unicode_compact_size || str_layout(o, obj, &off, &bytes, &width) ||
	    off > got)
		return -1;
	if (off + bytes > got)
		bytes = (got - off) / width * width;
	str_utf8(obj + off, bytes, width, buf, len);
	return 0;
}

int sym_read_bytes_obj(const struct py_target *t, uint64_t addr, uint8_t **data,
			  uint32_t *dlen)
{
	const struct py_code_offsets *o = &t->layout.code;
	int64_t n = 0;

	if (!addr || target_read(t->src, t->pid, addr + o->bytes_size, &n, sizeof(n)) ||
	    n < 0 || n > MAX_LINETABLE)
		return -1;
	*data = malloc(n ? (size_t)n : 1);
	if (!*data)
		return -1;
	if (target_read(t->src, t->pid, addr + o->bytes_sval, *data, (size_t)n)) {
		free(*data);
		*data = NULL;
		return -1;
	}
	*dlen = (uint32_t)n;
	return 0;
}

/* sym_read_bytes_obj() from the first got bytes of the object, read already:
 * 0 done, 1 not all there or not valid (read it alone), -1 no memory. */
int sym_bytes_from(const struct py_target *t, const uint8_t *obj, size_t got,
		      uint8_t **data, uint32_t *dlen)
{
	const struct py_code_offsets *o = &t->layout.code;
	int64_t n;

	if (got < (size_t)o->bytes_size + sizeof(n))
		return 1;
	memcpy(&n, obj + o->bytes_size, sizeof(n));
	if (n < 0 || n > MAX_LINETABLE || (size_t)o->bytes_sval + (size_t)n > got)
		return 1;
	*data = malloc(n ? (size_t)n : 1);
	if (!*data)
		return -1;
	memcpy(*data, obj + o->bytes_sval, (size_t)n);
	*dlen = (uint32_t)n;
	return 0;
}

uint64_t sym_field_ptr(const uint8_t *code, uint16_t off)
{
	uint64_t v;

	memcpy(&v, code + off, sizeof(v));
	return v;
}

enum first_arg sym_kind_of(const char *first)
{
	return strcmp(first, "self") == 0 ? ARG_SELF : strcmp(first, "cls") == 0 ? ARG_CLS :
								     ARG_PLAIN;
}

static enum first_arg first_arg_kind(const struct py_target *t, const uint8_t *code)
{
	const struct py_code_offsets *o = &t->layout.code;
	int32_t argc;
	uint64_t name;
	char s[8];

	if (o->co_qualname != PYPERF_NO_FIELD || o->co_varnames == PYPERF_NO_FIELD ||
	    o->co_varnames >= 248 || o->co_argcount >= 248)
		return ARG_PLAIN;
	memcpy(&argc, code + o->co_argcount, sizeof(argc));
	if (argc < 1 ||
	    target_read(t->src, t->pid, sym_field_ptr(code, o->co_varnames) + o->tuple_items, &name, 8) ||
	    pysym_read_str(t, name, s, sizeof(s)))
		return ARG_PLAIN;
	return sym_kind_of(s);
}

/* The part of a code object the fingerprint covers: [*lo, *lo + *len). */
void sym_fp_span(const struct py_code_offsets *o, uint16_t *lo, uint16_t *len)
{
	uint16_t f[4] = { o->co_filename, o->co_name, o->co_linetable, o->co_firstlineno };
	uint16_t a = f[0], b = f[0];

	for (int i = 1; i < 4; i++) {
		a = f[i] < a ? f[i] : a;
		b = f[i] > b ? f[i] : b;
	}
	*lo = a;
	*len = (uint16_t)(b + 8 - a);
}

/* Identifies a code object by fields that differ between any two code
 * objects: its file, name and line table objects and its first line. A
 * code object freed and another allocated at its address changes it. */
uint64_t sym_fingerprint(const struct py_code_offsets *o, const uint8_t *buf,
			    uint16_t base)
{
	int32_t first;
	uint64_t h;

	memcpy(&first, buf + o->co_firstlineno - base, sizeof(first));
	h = sym_hash64(sym_field_ptr(buf, (uint16_t)(o->co_filename - base)));
	h = sym_hash64(h ^ sym_field_ptr(buf, (uint16_t)(o->co_name - base)));
	h = sym_hash64(h ^ sym_field_ptr(buf, (uint16_t)(o->co_linetable - base)));
	return sym_hash64(h ^ (uint32_t)first);
}

/* The first bytes of a code object's name, file name and line table
 * objects, with one system call; got[i] of each could be read. */
struct spec_read {
	uint8_t name[SPEC_STR], file[SPEC_STR], table[SPEC_TABLE];
	size_t got[3];
};

static void spec_read(const struct py_target *t, const uint64_t addr[3], struct spec_read *r)
{
	struct iovec local[3] = { { r->name, SPEC_STR }, { r->file, SPEC_STR },
				  { r->table, SPEC_TABLE } };
	struct iovec remote[3];
	ssize_t got;
	size_t left;

	for (int i = 0; i < 3; i++)
		remote[i] = (struct iovec){ (void *)(uintptr_t)addr[i], local[i].iov_len };
	memset(r->got, 0, sizeof(r->got));
	if (!addr[0] || !addr[1] || !addr[2])
		return;
	got = target_readv(t->src, t->pid, local, 3, remote, 3);
	left = got > 0 ? (size_t)got : 0;
	/* The read stops at the first byte it cannot read. */
	for (int i = 0; i < 3; i++) {
		r->got[i] = left < local[i].iov_len ? left : local[i].iov_len;
		left -= r->got[i];
	}
}

/* Reads everything a code object contributes, once. Strings and line
 * table come from spec_read() when they fit, else from their own reads:
 * the same bytes either way. */
static int load_entry(const struct py_target *t, uint64_t code_addr, struct entry *e)
{
	const struct py_code_offsets *o = &t->layout.code;
	uint8_t code[CODE_READ_MAX];
	char name[MAX_STR], file[MAX_STR];
	uint16_t name_off = o->co_qualname != PYPERF_NO_FIELD ? o->co_qualname : o->co_name;
	uint64_t addr[3];
	struct spec_read sr;
	int32_t first;
	int r;

	if (target_read(t->src, t->pid, code_addr, code, sizeof(code)) &&
	    target_read(t->src, t->pid, code_addr, code, 256))
		return -1;
	if (name_off >= 248 || o->co_filename >= 248 || o->co_linetable >= 248 ||
	    o->co_firstlineno >= 248)
		return -1;
	addr[0] = sym_field_ptr(code, name_off);
	addr[1] = sym_field_ptr(code, o->co_filename);
	addr[2] = sym_field_ptr(code, o->co_linetable);
	spec_read(t, addr, &sr);
	if ((sym_str_from(t, sr.name, sr.got[0], name, sizeof(name)) &&
	     pysym_read_str(t, addr[0], name, sizeof(name))) ||
	    (sym_str_from(t, sr.file, sr.got[1], file, sizeof(file)) &&
	     pysym_read_str(t, addr[1], file, sizeof(file))))
		return -1;
	memcpy(&first, code + o->co_firstlineno, sizeof(first));
	e->name = strdup(name);
	e->filename = strdup(file);
	e->firstlineno = first;
	r = e->name && e->filename ? sym_bytes_from(t, sr.table, sr.got[2], &e->table, &e->table_len)
				   : -1;
	if (r < 0 || (r && sym_read_bytes_obj(t, addr[2], &e->table, &e->table_len))) {
		sym_entry_clear(e);
		return -1;
	}
	e->code = code_addr;
	e->first_arg = (uint8_t)first_arg_kind(t, code);
	e->fp = sym_fingerprint(o, code, 0);
	e->type = sym_field_ptr(code, o->ob_type);
	return 0;
}

struct entry *sym_find(struct pysym_cache *c, const struct py_target *t, uint64_t code)
{
	struct entry *set = &c->e[(sym_hash64(code ^ (uint64_t)t->pid << 48) & (c->nsets - 1)) * WAYS];

	for (int i = 0; i < WAYS; i++)
		if (set[i].code == code && sym_tag_is(c, &set[i].tag, t))
			return &set[i];
	return NULL;
}

int pysym_cached(const struct pysym_cache *c, const struct py_target *t, uint64_t code)
{
	return sym_find((struct pysym_cache *)c, t, code) != NULL;
}

/* Compares the queued entries with their code objects, with one
 * process_vm_readv for all of them; drops those that changed. */
static void validate_queued(struct pysym_cache *c)
{
	const struct py_target *t = c->check_t;
	uint16_t lo, len;
	uint64_t now_ns;
	size_t n = 0;
	ssize_t got;

	for (size_t i = 0; i < c->ncheck; i++)	/* answered ones are done */
		if (c->check[i])
			c->check[n++] = c->check[i];
	c->ncheck = 0;
	if (!n)
		return;
	sym_fp_span(&t->layout.code, &lo, &len);
	for (size_t i = 0; i < n; i++) {
		c->local[i].iov_base = c->fpbuf + i * FP_SPAN_MAX;
		c->local[i].iov_len = len;
		c->remote[i].iov_base = (void *)(uintptr_t)(c->check[i]->code + lo);
		c->remote[i].iov_len = len;
	}
	/* The clock is read before the memory: the check is no earlier. */
	now_ns = c->now ? c->now() : 0;
	got = target_readv(t->src, t->pid, c->local, n, c->remote, n);
	c->st.checks += n;
	c->st.check_reads++;
	/* The process has exited since the sample was taken (records still
	 * queued when it ends): what was cached then is the best there is. */
	if (got < 0 && errno == ESRCH)
		return;
	for (size_t i = 0; i < n; i++) {
		/* An unreadable code object is gone: drop it too. */
		if (got < (ssize_t)((i + 1) * len) ||
		    sym_fingerprint(&t->layout.code, c->fpbuf + i * FP_SPAN_MAX, lo) != c->check[i]->fp) {
			c->st.stale++;
			sym_entry_clear(c->check[i]);
			continue;
		}
		c->check[i]->checked_ns = now_ns;
	}
}

void pysym_check_note(struct pysym_cache *c, const struct py_target *t, uint64_t code,
		      uint64_t sample_ns, pysym_clock_fn now)
{
	uint16_t lo, len;
	struct entry *e;

	c->now = now;
	sym_fp_span(&t->layout.code, &lo, &len);
	if (len > FP_SPAN_MAX || !(e = sym_find(c, t, code)) || e->checked == c->round)
		return;		/* not checkable, not cached, or queued already */
	if (now && e->checked_ns > sample_ns + WALK_SLACK_NS) {
		c->st.fresh++;
		return;		/* checked since the sample was taken */
	}
	if (c->ncheck && (c->check_t != t || c->ncheck == VALIDATE_MAX))
		validate_queued(c);
	e->checked = c->round;
	c->check_t = t;
	c->check[c->ncheck++] = e;
}

size_t pysym_check_queue(const struct pysym_cache *c, const struct py_target **t,
			 uint64_t *addr, size_t max, uint16_t *len)
{
	uint16_t lo;
	size_t n = 0;

	if (!c->ncheck)
		return 0;
	*t = c->check_t;
	sym_fp_span(&c->check_t->layout.code, &lo, len);
	for (size_t i = 0; i < c->ncheck && i < max; i++)
		addr[n++] = c->check[i] ? c->check[i]->code + lo : 0;
	return n;
}

void pysym_check_answer(struct pysym_cache *c, size_t i, const uint8_t *bytes, uint64_t at_ns)
{
	struct entry *e = i < c->ncheck ? c->check[i] : NULL;
	uint16_t lo, len;

	if (!e)
		return;
	c->check[i] = NULL;
	c->st.checks++;
	c->st.answered++;
	sym_fp_span(&c->check_t->layout.code, &lo, &len);
	if (sym_fingerprint(&c->check_t->layout.code, bytes, lo) != e->fp) {
		c->st.stale++;
		sym_entry_clear(e);
		return;
	}
	e->checked_ns = at_ns;
}

void pysym_check_end(struct pysym_cache *c)
{
	validate_queued(c);
	if (++c->round == 0)	/* 0 is every new entry's */
		c->round = 1;
}

/* first_arg_kind() of a code object whose first argument's name is the
 * str at addr: one read where the name is short, as "self" is. */
enum first_arg sym_arg_kind(const struct py_target *t, uint64_t addr)
{
	const struct py_code_offsets *o = &t->layout.code;
	uint8_t obj[128];
	size_t n = o->unicode_compact_size + 16u;
	char s[8];
	int r = 1;

	if (n <= sizeof(obj) && !target_read(t->src, t->pid, addr, obj, n))
		r = sym_str_from(t, obj, n, s, sizeof(s));
	if (r == 1)
		r = pysym_read_str(t, addr, s, sizeof(s));
	return r ? ARG_PLAIN : sym_kind_of(s);
}

/* Reads code into e (empty), from its capture where there is one. */
static int load(struct pysym_cache *c, const struct py_target *t, uint64_t code,
		struct entry *e)
{
	const struct capture *k = cap_find(c, t, code, NULL);
	int r;

	if (!k || !k->whole || (r = cap_load(c, t, k, e)) < 0)
		r = load_entry(t, code, e) || !cap_agrees(c, t, e);
	if (!r)
		return 0;
	sym_entry_clear(e);
	e->checked_ns = c->now ? c->now() : 0;
	return cap_entry(c, t, code, e);
}

static struct entry *lookup(struct pysym_cache *c, const struct py_target *t,
			    uint64_t code, int *err)
{
	struct entry *set = &c->e[(sym_hash64(code ^ (uint64_t)t->pid << 48) & (c->nsets - 1)) * WAYS];
	struct entry *victim = &set[0];

	*err = 0;
	c->clock++;
	for (int i = 0; i < WAYS; i++) {
		if (set[i].code == code && sym_tag_is(c, &set[i].tag, t)) {
			set[i].age = c->clock;
			c->st.hits++;
			return &set[i];
		}
		if (sym_keep_rank(c, &set[i].tag, set[i].age) < sym_keep_rank(c, &victim->tag, victim->age))
			victim = &set[i];
	}
	c->st.misses++;
	if (victim->tag.pid) {
		if (!c->nforget || !gone(c, &victim->tag))
			c->st.evictions++;
		sym_entry_clear(victim);
	}
	/* Read before the code object: a load is a check too. */
	victim->checked_ns = c->now ? c->now() : 0;
	if (load(c, t, code, victim)) {
		c->st.errors++;
		*err = 1;
		return NULL;
	}
	victim->tag = sym_tag_of(c, t);
	victim->age = c->clock;
	victim->serial = ++c->serials;
	return victim;
}

/* Line of the instruction a frame is at; -2 for a frame not yet started. */
static int frame_line(const struct py_target *t, const struct entry *e, uint64_t code,
		      uint64_t lasti, uint32_t tlbc)
{
	uint64_t start;

	if (!e->table)		/* from a capture: the code object is gone */
		return e->firstlineno;
	if (py_code_start(&t->layout, pyversion_read, (void *)t, code, tlbc, &start))
		return -1;
	return py_layout_line(&t->layout, e->table, e->table_len, e->firstlineno, lasti, start);
}

#define TPFLAGS_TYPE_SUBCLASS	(1ul << 31)	/* Py_TPFLAGS_TYPE_SUBCLASS, 3.0+ */

/* Is the object at type not a type: its own type's tp_flags, read, lack
 * Py_TPFLAGS_TYPE_SUBCLASS (CPython's PyType_Check)? A self read after
 * its frame returned may point at freed or reused memory, whose "type"
 * names nothing real. Where those words cannot be read (a recording made
 * before this check holds none of them), the name's own check decides. */
static int not_a_type(const struct py_target *t, uint64_t type)
{
	uint64_t meta = 0, flags = 0;
	uint16_t tf = t->layout.obj.type_flags;

	if (!type || (type & 7))
		return 1;
	if (tf == PYPERF_NO_FIELD ||
	    target_read(t->src, t->pid, type + t->layout.code.ob_type, &meta, sizeof(meta)))
		return 0;
	if (!meta || (meta & 7))
		return 1;
	return target_read(t->src, t->pid, meta + tf, &flags, sizeof(flags)) == 0 &&
	       !(flags & TPFLAGS_TYPE_SUBCLASS);
}

/* A class name as CPython writes tp_name: "Name" or "module.Name". */
static int plausible_type_name(const char *s)
{
	if (!s[0] || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.'))
			return 0;
	return 1;
}

/* tp_name of a type object of the target; NULL if unreadable or not a
 * type's. */
static const char *type_name(struct pysym_cache *c, const struct py_target *t,
			     uint64_t type)
{
	struct type_entry *te = &c->types[sym_hash64(type ^ (uint64_t)t->pid << 48) % TYPE_CACHE];
	uint64_t name;

	if (te->type == type && sym_tag_is(c, &te->tag, t))
		return te->name;
	te->tag.pid = 0;
	if (not_a_type(t, type))
		return NULL;
	if (target_read(t->src, t->pid, type + t->layout.code.type_name, &name, sizeof(name)) ||
	    target_read(t->src, t->pid, name, te->name, sizeof(te->name) - 1)) {
		/* tp_name may sit near the end of a mapping: read less. */
		if (!name || target_read(t->src, t->pid, name, te->name, 32))
			return NULL;
		te->name[32] = '\0';
	}
	te->name[sizeof(te->name) - 1] = '\0';
	if (!plausible_type_name(te->name))
		return NULL;
	te->tag = sym_tag_of(c, t);
	te->type = type;
	return te->name;
}

/* "Class.method" for a <3.11 method frame, else the plain name. */
static const char *qualify(struct pysym_cache *c, const struct py_target *t,
			   const struct entry *e, uint64_t self)
{
	const char *cls, *dot;
	uint64_t type = self;

	if (e->first_arg == ARG_PLAIN || !self)
		return e->name;
	if (e->first_arg == ARG_SELF &&
	    target_read(t->src, t->pid, self + t->layout.code.ob_type, &type, sizeof(type)))
		return e->name;
	cls = type_name(c, t, type);
	if (!cls || !cls[0] || strcmp(cls, "cell") == 0)
		return e->name;		/* self captured in a closure cell */
	dot = strrchr(cls, '.');	/* "module.Class" for static types */
	snprintf(c->qualname, sizeof(c->qualname), "%s.%s", dot ? dot + 1 : cls, e->name);
	return c->qualname;
}

/* 0 when the frame's name depends on self's type, not on e alone. */
static uint64_t entry_key(const struct entry *e, uint64_t self)
{
	return e->first_arg == ARG_PLAIN || !self ? e->serial : 0;
}

uint64_t pysym_frame_key(const struct pysym_cache *c, const struct py_target *t,
			 uint64_t code, uint64_t self)
{
	const struct entry *set = &c->e[(sym_hash64(code ^ (uint64_t)t->pid << 48) & (c->nsets - 1)) * WAYS];

	for (int i = 0; code && i < WAYS; i++)
		if (set[i].code == code && sym_tag_is(c, &set[i].tag, t))
			return entry_key(&set[i], self);
	return 0;
}

int pysym_resolve(struct pysym_cache *c, const struct py_target *t, uint64_t code,
		  uint64_t lasti, uint64_t self, uint32_t tlbc, struct pyframe_info *out)
{
	struct entry *e;
	int err, line;

	if (!code)
		return -1;
	e = lookup(c, t, code, &err);
	if (!e)
		return -1;
	line = frame_line(t, e, code, lasti, tlbc);
	if (line == -2)
		return 1;
	out->name = qualify(c, t, e, self);
	out->filename = e->filename;
	out->firstlineno = e->firstlineno;
	out->line = line;
	out->key = entry_key(e, self);
	return 0;
}
