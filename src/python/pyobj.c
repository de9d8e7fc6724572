/*
 * Python objects of a target, read from user space by the layout's object
 * offsets: dicts, instance attributes, short str and int objects.
 *
 * Dicts are read as CPython lays them out (3.6+ compact dicts): a keys
 * object with an index table followed by dk_nentries entries in insertion
 * order; deleted entries have a NULL key or value. Lookups scan the
 * entries rather than hash (str hashes are randomised per process): a
 * str key is compared by its bytes, once, then by the address of the
 * interned key object; an int key by its hash, which for 0 <= n < 2**61-1
 * is n itself, then by its digits. sys.modules alone (big, and searched in
 * every new process) is probed by hash, with the process's hash key
 * (pystrhash.h), as CPython does: see hashed_find().
 *
 * Instance attributes (the Thread's "_name") live in:
 *   <=3.10  the dict at obj + tp_dictoffset, combined or split (split:
 *           keys shared with the class, values in ma_values[i]);
 *   3.11    if the type has Py_TPFLAGS_MANAGED_DICT: a PyDictValues * at
 *           obj - 32 (values[i] for the class's ht_cached_keys entry i),
 *           or when that is NULL the dict at obj - 24;
 *   3.12    the word at obj - 24 is the dict, or the PyDictValues * - 1
 *           (low bit set);
 *   3.13    with Py_TPFLAGS_INLINE_VALUES the PyDictValues is inline at
 *           obj + tp_basicsize and used while its "valid" byte is set,
 *           else the dict at obj - 24.
 * (CPython's own order: _PyObject_GenericGetAttrWithDict of each version.)
 */
#define _GNU_SOURCE
#include "pyobj.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "pysym.h"

#define NO16		PYPERF_NO_FIELD
#define MAX_ENTRIES	(1u << 15)	/* dict entries read, at most */
#define STR_BATCH	64		/* keys compared per process_vm_readv */
#define SPAN_MAX	4096		/* bytes of one remote range of keys */
#define KEY_MAX		32		/* longest key name looked up */
#define HDR_MAX		64		/* bytes of a dict keys header */
#define PREFETCH	1024		/* keys object bytes read at once */
#define PREFETCH_BIG	4096		/* ... of sys.modules (35-102 keys at start) */
#define STR_FAST	128		/* str object bytes read at once */
#define IX_MAX		(1u << 16)	/* index table bytes read, at most */
#define CHAIN_MAX	12		/* keys on a probe chain read, at most */
#define NCHECK		4		/* keys whose stored hash checks the key */

/* ---- offsets --------------------------------------------------------- */

#define OU16(m) offsetof(struct py_object_offsets, m)

static uint16_t get16(const void *s, size_t off)
{
	uint16_t v;

	memcpy(&v, (const uint8_t *)s + off, sizeof(v));
	return v;
}

static int obj_usable(const struct py_object_offsets *o)
{
	static const size_t always[] = {
		OU16(ts_interp), OU16(interp_modules), OU16(module_dict), OU16(type_flags),
		OU16(type_basicsize), OU16(type_dictoffset), OU16(heaptype_cached_keys),
		OU16(dict_keys), OU16(dict_values), OU16(dk_nentries), OU16(dk_indices),
		OU16(entry_size), OU16(entry_hash), OU16(entry_key), OU16(entry_value),
		OU16(long_size), OU16(long_digit),
	};
	static const size_t v311[] = {
		OU16(dk_log2_size), OU16(dk_log2_index_bytes), OU16(dk_kind),
		OU16(dk_kind_general), OU16(uentry_size), OU16(uentry_key),
		OU16(uentry_value), OU16(values_values),
	};

	for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
		if (get16(o, always[i]) == NO16)
			return 0;
	if (o->managed_kind == PY_MANAGED_UNKNOWN || o->long_kind == PY_LONG_UNKNOWN)
		return 0;
	if (o->dk_size == NO16) {	/* 3.11+ keys */
		for (size_t i = 0; i < sizeof(v311) / sizeof(v311[0]); i++)
			if (get16(o, v311[i]) == NO16)
				return 0;
	}
	if (o->managed_kind == PY_MANAGED_INLINE && o->values_valid == NO16)
		return 0;
	/* keys_view() reads the keys header, up to dk_indices, into a
	 * buffer of HDR_MAX bytes. */
	if (o->dk_indices > HDR_MAX || o->dk_nentries + 8u > o->dk_indices ||
	    (o->dk_size != NO16 && o->dk_size + 8u > o->dk_indices) ||
	    (o->dk_size == NO16 && (o->dk_log2_size >= o->dk_indices ||
				    o->dk_kind >= o->dk_indices ||
				    o->dk_log2_index_bytes >= o->dk_indices)) ||
	    o->entry_size > 64 || o->entry_size < 16 || o->entry_hash > o->entry_size - 8 ||
	    o->entry_key > o->entry_size - 8 || o->entry_value > o->entry_size - 8)
		return 0;
	if (o->dk_size == NO16 && (o->uentry_size > 64 || o->uentry_size < 16 ||
				   o->uentry_key > o->uentry_size - 8 ||
				   o->uentry_value > o->uentry_size - 8))
		return 0;
	return 1;
}

int pyobj_offsets(const struct py_target *t, struct py_object_offsets *obj,
		     struct py_gil_offsets *gil)
{
	*obj = t->layout.obj;
	*gil = t->layout.gil;
	return obj_usable(obj) ? 0 : -1;
}

int pyobj_ctx_init(struct pyobj_ctx *c, const struct py_target *t)
{
	struct py_gil_offsets g;

	c->t = t;
	c->pid = t->pid;
	return pyobj_offsets(t, &c->o, &g);
}

/* ---- dicts ----------------------------------------------------------- */

void pyobj_dview_free(struct pyobj_dview *v)
{
	free(v->ent);
	free(v->ix);
	v->ent = NULL;
	v->ix = NULL;
}

/* The index table of the keys object at keys (idx_bytes bytes after its
 * header) into v->ix: from the have bytes already read at pre, or read. */
static int index_read(const struct pyobj_ctx *c, uint64_t keys, const uint8_t *pre, size_t have,
		      struct pyobj_dview *v, uint64_t idx_bytes)
{
	uint64_t at = c->o.dk_indices;

	v->ix = malloc(idx_bytes);
	if (!v->ix)
		return -1;
	if (at + idx_bytes <= have)
		memcpy(v->ix, pre + at, idx_bytes);
	else if (py_read(c->t, keys + at, v->ix, idx_bytes))
		return -1;
	return 0;
}

/* Reads a PyDictKeysObject and its entries. A small one (a class's
 * shared keys, _active) takes one read: PREFETCH bytes are read first,
 * beyond the object if it is smaller (harmless: only its own bytes are
 * used), else the header alone when that read fails. */
static int keys_view_n(const struct pyobj_ctx *c, uint64_t keys, struct pyobj_dview *v,
		       size_t have, int want_ix)
{
	const struct py_object_offsets *o = &c->o;
	uint8_t pre[PREFETCH_BIG];
	const uint8_t *hdr = pre;
	uint64_t size, idx_bytes, off;
	int64_t n;

	memset(v, 0, sizeof(*v));
	if (!keys || (keys & 7))
		return -1;
	if (py_read(c->t, keys, pre, have)) {
		have = o->dk_indices;
		if (py_read(c->t, keys, pre, have))
			return -1;
	}
	if (o->dk_size != NO16) {		/* <=3.10: dk_size, index width by size */
		size = py_ld64(hdr + o->dk_size);
		if (size < 8 || size > (1u << 30) || (size & (size - 1)))
			return -1;
		idx_bytes = size * (size <= 0xff ? 1 : size <= 0xffff ? 2 : 4);
		v->esize = o->entry_size;
		v->ekey = o->entry_key;
		v->evalue = o->entry_value;
		v->ehash = o->entry_hash;
	} else {			/* 3.11+: log2 sizes and the entry kind */
		unsigned lg = hdr[o->dk_log2_size], lgi = hdr[o->dk_log2_index_bytes];
		unsigned w = lg < 8 ? 0 : lg < 16 ? 1 : lg < 32 ? 2 : 3;

		if (lg < 3 || lg > 30 || lgi != lg + w)
			return -1;
		size = 1ull << lg;
		idx_bytes = 1ull << lgi;
		if (hdr[o->dk_kind] == o->dk_kind_general) {
			v->esize = o->entry_size;
			v->ekey = o->entry_key;
			v->evalue = o->entry_value;
			v->ehash = o->entry_hash;
		} else {
			v->esize = o->uentry_size;
			v->ekey = o->uentry_key;
			v->evalue = o->uentry_value;
			v->ehash = NO16;
		}
	}
	n = (int64_t)py_ld64(hdr + o->dk_nentries);
	if (n < 0 || (uint64_t)n > size || (uint64_t)n > MAX_ENTRIES)
		return -1;
	v->nentries = (uint64_t)n;
	v->size = size;
	v->iw = (unsigned)(idx_bytes / size);
	if (want_ix && idx_bytes <= IX_MAX && index_read(c, keys, pre, have, v, idx_bytes)) {
		pyobj_dview_free(v);
		return -1;
	}
	off = o->dk_indices + idx_bytes;
	v->entries = keys + off;
	v->ent = malloc(n ? (size_t)n * v->esize : 1);
	if (!v->ent) {
		pyobj_dview_free(v);
		return -1;
	}
	if (off + (uint64_t)n * v->esize <= have)
		memcpy(v->ent, pre + off, (size_t)n * v->esize);
	else if (py_read(c->t, v->entries, v->ent, (size_t)n * v->esize)) {
		pyobj_dview_free(v);
		return -1;
	}
	return 0;
}

static int keys_view(const struct pyobj_ctx *c, uint64_t keys, struct pyobj_dview *v)
{
	return keys_view_n(c, keys, v, PREFETCH, 0);
}

int pyobj_dict_head(const struct pyobj_ctx *c, uint64_t dict, struct pyobj_dhead *h)
{
	const struct py_object_offsets *o = &c->o;
	uint16_t ob_type = c->t->layout.code.ob_type;
	uint16_t end = o->dict_keys > o->dict_values ? o->dict_keys : o->dict_values;
	uint8_t d[HDR_MAX];

	/* ob_type, ma_used, ma_keys and ma_values in one read (obj_usable()
	 * bounds the last two). */
	end = end > ob_type ? end : ob_type;
	if (o->dict_used != NO16 && o->dict_used > end)
		end = o->dict_used;
	end += 8;
	if (!dict || (dict & 7) || end > sizeof(d) || py_read(c->t, dict, d, end))
		return -1;
	h->type = py_ld64(d + ob_type);
	h->used = o->dict_used != NO16 ? (int64_t)py_ld64(d + o->dict_used) : -1;
	h->keys = py_ld64(d + o->dict_keys);
	h->values = py_ld64(d + o->dict_values);
	return h->values & 7 ? -1 : 0;
}

/* The view of a dict whose header is h, reading prefetch bytes of its
 * keys object first. */
static int head_view(const struct pyobj_ctx *c, const struct pyobj_dhead *h,
		     struct pyobj_dview *v, size_t prefetch, int want_ix)
{
	if (keys_view_n(c, h->keys, v, prefetch, want_ix))
		return -1;
	if (h->values)
		v->values = h->values + (c->o.values_values == NO16 ? 0 : c->o.values_values);
	return 0;
}

/* Reads a dict object: its keys, entries and (split) value array; and
 * its type when type is not NULL. */
int pyobj_dict_view(const struct pyobj_ctx *c, uint64_t dict, struct pyobj_dview *v, uint64_t *type)
{
	struct pyobj_dhead h;

	memset(v, 0, sizeof(*v));
	if (pyobj_dict_head(c, dict, &h))
		return -1;
	if (type)
		*type = h.type;
	/* Empty: its keys may be the interpreter's shared empty keys (log2
	 * size 0), which are no table to view; it has no entries either way
	 * (3.14's _current_tasks of a process without pure-Python tasks: it
	 * was searched for again at every read). */
	if (!h.used)
		return 0;
	return head_view(c, &h, v, PREFETCH, 0);
}

uint64_t pyobj_ent_key(const struct pyobj_dview *v, uint64_t i)
{
	return py_ld64(v->ent + i * v->esize + v->ekey);
}

/* Value of entry i; 0 when absent or unreadable. */
uint64_t pyobj_ent_value(const struct pyobj_ctx *c, const struct pyobj_dview *v, uint64_t i)
{
	uint64_t val;

	if (!pyobj_ent_key(v, i))
		return 0;
	if (v->values)
		return py_read_ptr(c->t, v->values + i * 8);
	val = py_ld64(v->ent + i * v->esize + v->evalue);
	return val & 7 ? 0 : val;
}

/* Is the object read into buf (n bytes) the compact ASCII str s? */
static int str_matches(const struct pyobj_ctx *c, const uint8_t *buf, const char *s, size_t n)
{
	const struct py_code_offsets *co = &c->t->layout.code;
	uint32_t state;
	uint64_t len;

	memcpy(&state, buf + co->unicode_state, sizeof(state));
	memcpy(&len, buf + co->unicode_length, sizeof(len));
	return py_str_kind(co, state) == 1 && py_str_compact(co, state) &&
	       py_str_ascii(co, state) &&
	       len == n && memcmp(buf + co->unicode_ascii_size, s, n) == 0;
}

/* A batch of str keys read at once (read_keys()). */
struct key_batch {
	uint8_t buf[STR_BATCH][HDR_MAX + KEY_MAX];
	uint64_t idx[STR_BATCH];	/* their entries */
	size_t have[STR_BATCH];		/* bytes read of each */
};

/* One remote range of a merged read: keys [first, first + n) of the
 * batch's address order. */
struct span { uint64_t start, end; unsigned first, n; };

/* Sorts the n keys at a (their batch slots in slot) by address. */
static void sort_keys(uint64_t *a, unsigned *slot, unsigned n)
{
	for (unsigned i = 1; i < n; i++) {
		uint64_t x = a[i];
		unsigned y = slot[i], j = i;

		for (; j && a[j - 1] > x; j--) {
			a[j] = a[j - 1];
			slot[j] = slot[j - 1];
		}
		a[j] = x;
		slot[j] = y;
	}
}

/*
 * Reads need bytes at each of the n addresses a[] into b->buf[slot[]], in
 * one system call; b->have[slot[]] says how many were read: need, or
 * least, or 0 (a key read alone, as a recording made with shorter reads
 * holds it). Keys near each other (a
 * module's name strs sit in the same few allocator pools) share one
 * remote range: the kernel pins a range's pages once per range, which
 * was most of a sys.modules scan's cost with a range per key.
 */
static void read_merged(const struct pyobj_ctx *c, uint64_t *a, unsigned *slot, unsigned n,
			size_t need, size_t least, struct key_batch *b)
{
	struct iovec local[STR_BATCH], remote[STR_BATCH];
	struct span sp[STR_BATCH];
	unsigned ns = 0;
	size_t total = 0, off = 0;
	uint8_t *buf;
	ssize_t got;
	int gone;

	sort_keys(a, slot, n);
	for (unsigned k = 0; k < n; k++) {
		if (ns && a[k] + need - sp[ns - 1].start <= SPAN_MAX) {
			if (a[k] + need > sp[ns - 1].end)
				sp[ns - 1].end = a[k] + need;
			sp[ns - 1].n++;
			continue;
		}
		sp[ns++] = (struct span){ a[k], a[k] + need, k, 1 };
	}
	for (unsigned j = 0; j < ns; j++)
		total += sp[j].end - sp[j].start;
	buf = malloc(total);
	got = -1;
	if (buf) {
		for (unsigned j = 0; j < ns; j++) {
			local[j].iov_base = buf + off;
			local[j].iov_len = sp[j].end - sp[j].start;
			remote[j].iov_base = (void *)(uintptr_t)sp[j].start;
			remote[j].iov_len = local[j].iov_len;
			off += local[j].iov_len;
		}
		got = target_readv(c->t->src, c->pid, local, ns, remote, ns);
	}
	gone = got < 0 && errno == ESRCH;
	off = 0;
	for (unsigned j = 0; j < ns; j++) {
		for (unsigned k = sp[j].first; k < sp[j].first + sp[j].n; k++) {
			size_t at = off + (size_t)(a[k] - sp[j].start);

			/* Past what was read (a range ending in an unmapped
			 * page): that key alone. */
			uint8_t *dst = b->buf[slot[k]];
			size_t *have = &b->have[slot[k]];

			if (got >= 0 && at + need <= (size_t)got) {
				memcpy(dst, buf + at, need);
				*have = need;
			} else {
				*have = gone ? 0 : py_read(c->t, a[k], dst, need) == 0 ? need :
					least < need && py_read(c->t, a[k], dst, least) == 0 ? least : 0;
			}
		}
		off += sp[j].end - sp[j].start;
	}
	free(buf);
}

/*
 * Reads the first need bytes of the keys of v from entry *i on (but key
 * skip), up to STR_BATCH at once, into b; *i is left after them. Returns
 * how many were read, -1 at the end. A key that cannot be read is passed
 * over.
 */
static long read_keys(const struct pyobj_ctx *c, const struct pyobj_dview *v, uint64_t *i,
		      size_t need, size_t least, uint64_t skip, struct key_batch *b)
{
	uint64_t addr[STR_BATCH], idx[STR_BATCH];
	unsigned slot[STR_BATCH], m = 0;
	long n = 0;

	for (; *i < v->nentries && m < STR_BATCH; (*i)++) {
		uint64_t key = pyobj_ent_key(v, *i);

		if (!key || (key & 7) || key == skip)
			continue;
		addr[m] = key;
		slot[m] = m;
		idx[m++] = *i;
	}
	if (!m)
		return -1;
	read_merged(c, addr, slot, m, need, least, b);
	/* Keep the entry order, the read ones first. */
	for (unsigned k = 0; k < m; k++) {
		if (!b->have[k])
			continue;
		if ((unsigned)n != k) {
			memcpy(b->buf[n], b->buf[k], b->have[k]);
			b->have[n] = b->have[k];
		}
		b->idx[n++] = idx[k];
	}
	return n;
}

/* Can str keys be compared by their first need bytes? */
static int keys_comparable(const struct py_code_offsets *co, size_t n)
{
	return n <= KEY_MAX && co->unicode_ascii_size <= HDR_MAX &&
	       co->unicode_state + 4u <= co->unicode_ascii_size &&
	       co->unicode_length + 8u <= co->unicode_ascii_size;
}

/*
 * Index of the entry whose key is the str s, or -1. Keys equal to *hint
 * (a key object known to be s) match at once; otherwise the keys are read,
 * STR_BATCH per system call, and the one found becomes *hint, its type
 * *str_type (an interned key is an exact str).
 */
static long find_str(const struct pyobj_ctx *c, const struct pyobj_dview *v, const char *s,
		     uint64_t *hint, uint64_t *str_type)
{
	const struct py_code_offsets *co = &c->t->layout.code;
	size_t n = strlen(s);
	struct key_batch b;
	uint64_t i = 0;
	long got;

	if (!keys_comparable(co, n))
		return -1;
	if (hint && *hint)
		for (uint64_t k = 0; k < v->nentries; k++)
			if (pyobj_ent_key(v, k) == *hint)
				return (long)k;
	while ((got = read_keys(c, v, &i, co->unicode_ascii_size + n, co->unicode_ascii_size + n,
				hint ? *hint : 0, &b)) >= 0) {
		for (long k = 0; k < got; k++) {
			if (str_matches(c, b.buf[k], s, n)) {
				uint64_t key = pyobj_ent_key(v, b.idx[k]);

				if (hint)
					*hint = key;
				if (str_type)
					*str_type = py_read_ptr(c->t, key + co->ob_type);
				return (long)b.idx[k];
			}
		}
	}
	return -1;
}

/* Value of d[s] for a str key s; 0 when absent. */
uint64_t pyobj_dict_get_str(const struct pyobj_ctx *c, uint64_t dict, const char *s,
			     uint64_t *hint, uint64_t *str_type)
{
	struct pyobj_dview v;
	uint64_t val = 0;
	long i;

	if (pyobj_dict_view(c, dict, &v, NULL))
		return 0;
	i = find_str(c, &v, s, hint, str_type);
	if (i >= 0)
		val = pyobj_ent_value(c, &v, (uint64_t)i);
	pyobj_dview_free(&v);
	return val;
}

/* Is the int object at key equal to ident (a C unsigned long)? */
int pyobj_long_equals(const struct pyobj_ctx *c, uint64_t key, uint64_t ident)
{
	const struct py_object_offsets *o = &c->o;
	uint32_t digit[3];
	uint64_t word, nd, val = 0;
	unsigned have = 0;		/* digits already read */
	uint8_t b[16];

	/* The size word and two digits (60 bits: any pthread_t seen in
	 * practice) in one read; every int object is at least this big. */
	if (o->long_digit == o->long_size + 8u && py_read(c->t, key + o->long_size, b, 16) == 0) {
		memcpy(&word, b, 8);
		memcpy(digit, b + 8, 8);
		have = 2;
	} else if (py_read_u64(c->t, key + o->long_size, &word)) {
		return 0;
	}
	if (o->long_kind == PY_LONG_OB_SIZE) {
		if ((int64_t)word < 0)
			return 0;	/* negative */
		nd = word;
	} else {
		if ((word & 3) == 2)
			return 0;	/* negative */
		nd = (word & 3) == 1 ? 0 : word >> 3;
	}
	if (nd > 3 || (nd > have && py_read(c->t, key + o->long_digit, digit, nd * 4)))
		return 0;
	for (uint64_t k = 0; k < nd; k++) {
		if (digit[k] >> 30)
			return 0;	/* not a 30-bit digit: not an int */
		if (k == 2 && digit[k] >> 4)
			return 0;	/* beyond 64 bits */
		val |= (uint64_t)digit[k] << (30 * k);
	}
	return val == ident;
}

/* ---- attributes and short strings -------------------------------------- */

/* Value of the shared-keys entry s in a values array (managed/inline). */
static uint64_t values_get(const struct pyobj_ctx *c, struct py_seen *seen, uint64_t keys,
			   uint64_t values, const char *s, uint64_t *hint)
{
	struct pyobj_dview v;
	uint64_t val = 0;
	long i;

	if (!keys || keys_view(c, keys, &v))
		return 0;
	i = find_str(c, &v, s, hint, &seen->str_type);
	if (i >= 0)
		val = py_read_ptr(c->t, values + c->o.values_values + (uint64_t)i * 8);
	pyobj_dview_free(&v);
	return val;
}

/* What instance_attr() needs of a type, read at once when it can be. */
struct type_info {
	uint64_t flags, cached_keys;
	int64_t dictoffset, basicsize;
};

static int read_type(const struct pyobj_ctx *c, uint64_t type, struct type_info *ti)
{
	const struct py_object_offsets *o = &c->o;
	const uint16_t f[4] = { o->type_flags, o->type_dictoffset, o->type_basicsize,
				o->heaptype_cached_keys };
	uint64_t *dst[4] = { &ti->flags, (uint64_t *)&ti->dictoffset,
			     (uint64_t *)&ti->basicsize, &ti->cached_keys };
	uint8_t buf[PREFETCH];
	uint16_t lo = f[0], hi = f[0];

	for (int i = 1; i < 4; i++) {
		lo = f[i] < lo ? f[i] : lo;
		hi = f[i] > hi ? f[i] : hi;
	}
	/* A heap type (every class) is bigger than its ht_cached_keys. */
	if (hi + 8u - lo <= sizeof(buf) && py_read(c->t, type + lo, buf, hi + 8u - lo) == 0) {
		for (int i = 0; i < 4; i++)
			memcpy(dst[i], buf + f[i] - lo, 8);
		return 0;
	}
	for (int i = 0; i < 3; i++)
		if (py_read_u64(c->t, type + f[i], dst[i]))
			return -1;
	ti->cached_keys = 0;	/* read below, where needed */
	return 0;
}

/* obj.<s> for an attribute kept in the instance; 0 when absent. */
uint64_t pyobj_instance_attr(const struct pyobj_ctx *c, struct py_seen *seen, uint64_t obj,
			      const char *s, uint64_t *hint)
{
	const struct py_object_offsets *o = &c->o;
	const uint16_t ob_type = c->t->layout.code.ob_type;
	int64_t lo = 0;
	uint8_t pre[64];
	uint64_t type, dict = 0, w;
	struct type_info ti;

	/* The managed dict/values words sit just before the object: read
	 * them with ob_type. */
	if (o->managed_kind != PY_MANAGED_NONE) {
		lo = o->managed_dict < lo ? o->managed_dict : lo;
		lo = o->managed_values < lo ? o->managed_values : lo;
	}
	if (!obj || (obj & 7) || lo < -32 || ob_type > 40 ||
	    py_read(c->t, obj + (uint64_t)lo, pre, (size_t)(ob_type + 8 - lo)))
		return 0;
	memcpy(&type, pre + ob_type - lo, 8);
	if (!type || (type & 7) || read_type(c, type, &ti))
		return 0;
	if (!ti.cached_keys && o->managed_kind != PY_MANAGED_NONE)
		ti.cached_keys = py_read_ptr(c->t, type + o->heaptype_cached_keys);
	if (o->tpflag_managed_dict && (ti.flags & o->tpflag_managed_dict)) {
		memcpy(&w, pre + (o->managed_dict - lo), 8);
		switch (o->managed_kind) {
		case PY_MANAGED_VALUES_PTR: {
			uint64_t values;

			memcpy(&values, pre + (o->managed_values - lo), 8);
			if (values)
				return values & 7 ? 0 :
				       values_get(c, seen, ti.cached_keys, values, s, hint);
			dict = w;
			break;
		}
		case PY_MANAGED_TAGGED:
			if (w & 1)
				return values_get(c, seen, ti.cached_keys, w + 1, s, hint);
			dict = w;
			break;
		case PY_MANAGED_INLINE:
			if (o->tpflag_inline_values && (ti.flags & o->tpflag_inline_values)) {
				uint64_t values = obj + (uint64_t)ti.basicsize;
				uint8_t valid = 0;

				if (ti.basicsize < 16 || ti.basicsize > 4096 ||
				    py_read(c->t, values + o->values_valid, &valid, 1))
					return 0;
				if (valid)
					return values_get(c, seen, ti.cached_keys, values, s, hint);
			}
			dict = w;
			break;
		default:
			return 0;
		}
	} else if (ti.dictoffset > 0 && ti.dictoffset < 4096) {
		dict = py_read_ptr(c->t, obj + (uint64_t)ti.dictoffset);
	}
	/* dictoffset < 0 (variable-size objects): not a Thread; unsupported. */
	return dict && !(dict & 7) ? pyobj_dict_get_str(c, dict, s, hint, &seen->str_type) : 0;
}

/*
 * Reads the str at addr into buf: one read for a short ASCII string of the
 * exact str type (a thread name), else pysym_read_str(). 0 on success.
 */
int pyobj_read_short_str(const struct pyobj_ctx *c, const struct py_seen *seen, uint64_t addr,
		     char *buf, size_t len)
{
	const struct py_code_offsets *co = &c->t->layout.code;
	uint8_t b[STR_FAST];
	uint64_t type, n;
	uint32_t state;

	if (co->unicode_ascii_size >= sizeof(b) || co->ob_type + 8u > co->unicode_ascii_size)
		return -1;
	if (py_read(c->t, addr, b, sizeof(b)) == 0) {
		memcpy(&type, b + co->ob_type, 8);
		if (type != seen->str_type)
			return -1;	/* not an exact str */
		memcpy(&state, b + co->unicode_state, 4);
		memcpy(&n, b + co->unicode_length, 8);
		if (py_str_kind(co, state) == 1 && py_str_compact(co, state) &&
		    py_str_ascii(co, state) &&
		    n < sizeof(b) - co->unicode_ascii_size && n < len) {
			memcpy(buf, b + co->unicode_ascii_size, n);
			buf[n] = '\0';
			return 0;
		}
	} else if (py_read_ptr(c->t, addr + co->ob_type) != seen->str_type) {
		return -1;
	}
	return pysym_read_str(c->t, addr, buf, len);
}

/* ---- by target, for other readers (pyasyncio.c) ------------------------ */

static const char *const mod_names[PYOBJ_NMODS] = { "threading", "asyncio.tasks" };

const char *pyobj_mod_name(enum pyobj_mod m)
{
	return (unsigned)m < PYOBJ_NMODS ? mod_names[m] : "";
}

/* Compares the keys from entry from on with every name of mod_names; a
 * match becomes mi->key[]. */
static void scan_names(const struct pyobj_ctx *c, const struct pyobj_dview *v, uint64_t from,
		       struct pyobj_modindex *mi)
{
	const struct py_code_offsets *co = &c->t->layout.code;
	size_t len[PYOBJ_NMODS], most = 0, least = KEY_MAX;
	struct key_batch b;
	uint64_t i = from;
	long got;

	for (int m = 0; m < PYOBJ_NMODS; m++) {
		len[m] = strlen(mod_names[m]);
		most = len[m] > most ? len[m] : most;
		least = len[m] < least ? len[m] : least;
	}
	if (!keys_comparable(co, most))
		return;
	while ((got = read_keys(c, v, &i, co->unicode_ascii_size + most,
				co->unicode_ascii_size + least, 0, &b)) >= 0)
		for (long k = 0; k < got; k++)
			for (int m = 0; m < PYOBJ_NMODS; m++)
				if (co->unicode_ascii_size + len[m] <= b.have[k] &&
				    str_matches(c, b.buf[k], mod_names[m], len[m]))
					mi->key[m] = pyobj_ent_key(v, b.idx[k]);
}

/* Index slot i of v's table: an entry index, or -1 (empty), -2 (deleted). */
static int64_t index_at(const struct pyobj_dview *v, uint64_t i)
{
	const uint8_t *p = v->ix + i * v->iw;

	switch (v->iw) {
	case 1: return (int8_t)p[0];
	case 2: { int16_t x; memcpy(&x, p, 2); return x; }
	case 4: { int32_t x; memcpy(&x, p, 4); return x; }
	default: { int64_t x; memcpy(&x, p, 8); return x; }
	}
}

/*
 * The entries on hash's probe chain in v (Objects/dictobject.c's order,
 * the same in 3.6-3.14) whose stored hash, if entries keep one, is hash:
 * the only ones whose key can equal a str of that hash. Their count into
 * at, at most max; -1 if more, or the table looks wrong.
 */
static int probe(const struct pyobj_dview *v, int64_t hash, uint64_t *at, int max)
{
	uint64_t mask = v->size - 1, perturb = (uint64_t)hash, i = (uint64_t)hash & mask;
	int n = 0;

	for (uint64_t step = 0; step < v->size; step++) {
		int64_t ix = index_at(v, i);
		const uint8_t *e;

		if (ix == -1)
			return n;
		if (ix >= 0) {
			if ((uint64_t)ix >= v->nentries)
				return -1;
			e = v->ent + (uint64_t)ix * v->esize;
			if (v->ehash == NO16 || (int64_t)py_ld64(e + v->ehash) == hash) {
				if (n == max)
					return -1;
				at[n++] = (uint64_t)ix;
			}
		}
		perturb >>= 5;
		i = (i * 5 + perturb + 1) & mask;
	}
	return -1;
}

/* The str read into buf (have bytes) as ASCII bytes: 0 and *s, *n. */
static int ascii_of(const struct pyobj_ctx *c, const uint8_t *buf, size_t have,
		    const uint8_t **s, size_t *n)
{
	const struct py_code_offsets *co = &c->t->layout.code;
	uint32_t state;
	uint64_t len;

	memcpy(&state, buf + co->unicode_state, sizeof(state));
	memcpy(&len, buf + co->unicode_length, sizeof(len));
	if (py_str_kind(co, state) != 1 || !py_str_compact(co, state) || !py_str_ascii(co, state) ||
	    !len || len > have - co->unicode_ascii_size)
		return -1;
	*s = buf + co->unicode_ascii_size;
	*n = (size_t)len;
	return 0;
}

/* Which algorithm hashes the keys read into b (owner -1: read to check)
 * to the hash they keep (PyASCIIObject.hash, just after length): into
 * mi->alg, hashing 2; -1 when none does. */
static int check_alg(const struct pyobj_ctx *c, struct pyobj_modindex *mi,
		     const struct key_batch *b, const int *owner, unsigned n)
{
	const struct py_code_offsets *co = &c->t->layout.code;

	for (unsigned k = 0; k < n; k++) {
		const uint8_t *s;
		size_t len;
		int64_t kept;

		if (owner[k] != -1 || !b->have[k] || ascii_of(c, b->buf[k], b->have[k], &s, &len))
			continue;
		memcpy(&kept, b->buf[k] + co->unicode_length + 8, sizeof(kept));
		if (kept == -1)
			continue;	/* not hashed yet */
		for (int a = 0; a < PYSTRHASH_NALGS; a++) {
			if (pystrhash_bytes(&mi->hk, (enum pystrhash_alg)a, s, len) == kept) {
				mi->alg = a;
				mi->hashing = 2;
				return 0;
			}
		}
		return -1;	/* a kept hash no algorithm gives */
	}
	return -1;
}

/*
 * Sets mi->key[] from v the way CPython looks the names up: their hashes
 * (the process's key, pystrhash.h) give the probe chains, and only the
 * keys on them are read, with, until the algorithm is known, NCHECK
 * other keys whose kept hash tells it. A scan reads every key, on as many
 * pages (a new process's 30-150: 40-150 us). 0 when mi->key[] is exact,
 * -1: compare the keys one by one instead.
 */
static int hashed_find(const struct pyobj_ctx *c, const struct pyobj_dview *v,
		       struct pyobj_modindex *mi)
{
	const struct py_code_offsets *co = &c->t->layout.code;
	uint64_t addr[STR_BATCH], key[STR_BATCH], at[CHAIN_MAX], found[PYOBJ_NMODS];
	unsigned slot[STR_BATCH], n = 0;
	int owner[STR_BATCH], a0, a1;	/* owner: m * NALGS + alg, -1: check */
	struct key_batch b;

	if (mi->hashing < 0 || !v->ix || v->iw * v->size == 0 || (v->size & (v->size - 1)) ||
	    co->unicode_state != co->unicode_length + 16 || !keys_comparable(co, KEY_MAX))
		return -1;
	if (!mi->hashing) {
		mi->hashing = pystrhash_key_read(c->t, &mi->hk) ? -1 : 1;
		if (mi->hashing < 0)
			return -1;
	}
	for (uint64_t i = 0; mi->hashing == 1 && i < v->nentries && n < NCHECK; i++) {
		key[n] = pyobj_ent_key(v, i);
		if (key[n] && !(key[n] & 7))
			owner[n++] = -1;
	}
	a0 = mi->hashing == 2 ? mi->alg : 0;
	a1 = mi->hashing == 2 ? mi->alg : PYSTRHASH_NALGS - 1;
	for (int m = 0; m < PYOBJ_NMODS; m++) {
		for (int a = a0; a <= a1; a++) {
			int64_t h = pystrhash_bytes(&mi->hk, (enum pystrhash_alg)a, mod_names[m],
						    strlen(mod_names[m]));
			int got = probe(v, h, at, CHAIN_MAX);

			if (got < 0 || n + (unsigned)got > STR_BATCH)
				return -1;
			for (int j = 0; j < got; j++) {
				key[n] = pyobj_ent_key(v, at[j]);
				owner[n++] = m * PYSTRHASH_NALGS + a;
			}
		}
	}
	for (unsigned k = 0; k < n; k++) {
		addr[k] = key[k];
		slot[k] = k;
	}
	if (n)
		read_merged(c, addr, slot, n, co->unicode_ascii_size + KEY_MAX,
			    co->unicode_ascii_size + 1, &b);
	if (mi->hashing == 1 && check_alg(c, mi, &b, owner, n)) {
		mi->hashing = -1;
		return -1;
	}
	memset(found, 0, sizeof(found));
	for (unsigned k = 0; k < n; k++) {
		int m = owner[k] / PYSTRHASH_NALGS;
		size_t len;

		if (owner[k] < 0 || owner[k] % PYSTRHASH_NALGS != mi->alg)
			continue;
		len = strlen(mod_names[m]);
		if (b.have[k] < co->unicode_ascii_size + len)
			return -1;	/* a key on the chain unread */
		if (str_matches(c, b.buf[k], mod_names[m], len))
			found[m] = key[k];
	}
	memcpy(mi->key, found, sizeof(found));
	return 0;
}

uint64_t pyobj_module_find(const struct pyobj_ctx *c, const struct pyobj_dhead *h,
			   enum pyobj_mod m, struct pyobj_modindex *mi, uint64_t *str_type)
{
	struct pyobj_dview v;
	uint64_t val = 0;

	if ((unsigned)m >= PYOBJ_NMODS)
		return 0;
	/* The header this sample's other reader searched with: it saw every
	 * entry then. */
	if (mi->viewed && !mi->key[m] && !memcmp(h, &mi->head, sizeof(*h)))
		return 0;
	if (head_view(c, h, &v, PREFETCH_BIG, 1))
		return 0;
	/* By hash when the process's key is known; else by comparing keys:
	 * the same entries table, not shorter, the keys before mi->done are
	 * the ones compared then (a resize makes a new table, whose keys are
	 * all compared again). */
	if (hashed_find(c, &v, mi) == 0) {
		mi->entries = v.entries;
		mi->done = v.nentries;
	} else if (v.entries != mi->entries || v.nentries < mi->done) {
		memset(mi->key, 0, sizeof(mi->key));
		mi->entries = v.entries;
		mi->done = 0;
	}
	if (v.nentries > mi->done) {
		scan_names(c, &v, mi->done, mi);
		mi->done = v.nentries;
	}
	mi->viewed = mi->head_ns && !memcmp(h, &mi->head, sizeof(*h));
	/* Deleted entries have no key: the key found is the module's while
	 * an entry holds it. */
	for (uint64_t i = 0; mi->key[m] && i < v.nentries; i++) {
		if (pyobj_ent_key(&v, i) != mi->key[m])
			continue;
		val = pyobj_ent_value(c, &v, i);
		if (val && str_type)
			*str_type = py_read_ptr(c->t, mi->key[m] + c->t->layout.code.ob_type);
		break;
	}
	pyobj_dview_free(&v);
	return val;
}

/* interp->modules, and in the same read the process's str hash key into
 * mi (hashing 1, or -1 when it has none): a new process's search needs
 * both. 0 when unreadable. */
static uint64_t modules_and_key(const struct pyobj_ctx *c, uint64_t interp,
				struct pyobj_modindex *mi)
{
	uint64_t modules = 0, at = mi->hashing ? 0 : pystrhash_key_addr(c->t);
	struct iovec local[2] = { { &modules, 8 }, { &mi->hk, sizeof(mi->hk) } };
	struct iovec remote[2] = {
		{ (void *)(uintptr_t)(interp + c->o.interp_modules), 8 },
		{ (void *)(uintptr_t)at, sizeof(mi->hk) },
	};
	ssize_t got = target_readv(c->t->src, c->pid, local, at ? 2 : 1, remote, at ? 2 : 1);

	if (!mi->hashing)
		mi->hashing = at && got == (ssize_t)(8 + sizeof(mi->hk)) ? 1 : -1;
	/* A source that fails the whole read for the key (a recording made
	 * without it): the pointer alone. */
	if (got < 8 && at)
		got = target_readv(c->t->src, c->pid, local, 1, remote, 1);
	return got >= 8 ? modules : 0;
}

uint64_t pyobj_modules(const struct pyobj_ctx *c, uint64_t interp, struct pyobj_modindex *mi,
		       struct pyobj_dhead *h, uint64_t now_ns)
{
	uint64_t modules = mi->modules;

	if (modules && now_ns && mi->head_ns == now_ns) {
		*h = mi->head;
		return modules;
	}
	mi->head_ns = 0;
	mi->viewed = 0;
	if (!modules) {
		modules = interp ? modules_and_key(c, interp, mi) : 0;
		if (!modules || (modules & 7))
			return 0;
	}
	if (pyobj_dict_head(c, modules, h))
		return 0;
	mi->modules = modules;
	mi->head = *h;
	mi->head_ns = now_ns;
	return modules;
}

uint64_t pyobj_module_attr(const struct py_target *t, struct py_seen *seen,
			   struct pyobj_modindex *mi, uint64_t interp, enum pyobj_mod m,
			   const char *name)
{
	struct pyobj_dhead h;
	struct pyobj_ctx c;
	uint64_t mod, mdict;

	if (pyobj_ctx_init(&c, t) || !interp)
		return 0;
	if (!pyobj_modules(&c, interp, mi, &h, 0))
		return 0;
	seen->dict_type = h.type;
	mod = pyobj_module_find(&c, &h, m, mi, &seen->str_type);
	mdict = mod ? py_read_ptr(c.t, mod + c.o.module_dict) : 0;
	return mdict ? pyobj_dict_get_str(&c, mdict, name, NULL, NULL) : 0;
}

int pyobj_dict_items(const struct py_target *t, const struct py_seen *seen,
			uint64_t dict, uint64_t *keys, uint64_t *values, size_t max)
{
	struct pyobj_dview v;
	struct pyobj_ctx c;
	uint64_t type = 0;
	size_t n = 0;

	if (pyobj_ctx_init(&c, t) || !seen->dict_type || pyobj_dict_view(&c, dict, &v, &type))
		return -1;
	if (type != seen->dict_type) {
		pyobj_dview_free(&v);
		return -1;
	}
	for (uint64_t i = 0; i < v.nentries && n < max; i++) {
		uint64_t value = pyobj_ent_value(&c, &v, i);

		if (!value)
			continue;
		keys[n] = pyobj_ent_key(&v, i);
		values[n++] = value;
	}
	pyobj_dview_free(&v);
	return (int)n;
}

uint64_t pyobj_attr(const struct py_target *t, struct py_seen *seen,
				uint64_t obj, const char *name, uint64_t *hint)
{
	struct pyobj_ctx c;

	if (pyobj_ctx_init(&c, t))
		return 0;
	return pyobj_instance_attr(&c, seen, obj, name, hint);
}

int pyobj_int_equals(const struct py_target *t, uint64_t obj, uint64_t value)
{
	struct pyobj_ctx c;

	if (pyobj_ctx_init(&c, t) || !obj || (obj & 7))
		return 0;
	return pyobj_long_equals(&c, obj, value);
}
