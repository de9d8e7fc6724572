/*
 * Thread names and the GIL holder of a CPython target, from user space.
 *
 * A thread's name is threading._active[ident]._name. The path there:
 *
 *   tstate->interp -> interp->modules (<=3.11) or interp->imports.modules
 *   (3.12+), i.e. sys.modules -> ["threading"] -> module->md_dict ->
 *   ["_active"]: a dict {ident (int): Thread}, the same object for the
 *   life of the module (threading only mutates it) -> [ident] -> the
 *   Thread's attribute "_name" -> a str.
 *
 * Dicts are read as CPython lays them out (3.6+ compact dicts): a keys
 * object with an index table followed by dk_nentries entries in insertion
 * order; deleted entries have a NULL key or value. Lookups scan the
 * entries rather than hash (str hashes are randomised per process): a
 * str key is compared by its bytes, once, then by the address of the
 * interned key object; an int key by its hash, which for 0 <= n < 2**61-1
 * is n itself, then by its digits.
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
#include "pythread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "elffile.h"
#include "objcache.h"
#include "proc.h"
#include "pysym.h"
#include "setcache.h"

#define NO16		PYPERF_NO_FIELD
#define MAX_ENTRIES	(1u << 15)	/* dict entries read, at most */
#define STR_BATCH	64		/* keys compared per process_vm_readv */
#define KEY_MAX		32		/* longest key name looked up */
#define HDR_MAX		64		/* bytes of a dict keys header */
#define PREFETCH	1024		/* keys object bytes read at once */
#define STR_FAST	128		/* str object bytes read at once */
#define WAYS		4
#define HASH_MOD	((1ull << 61) - 1)	/* _PyHASH_MODULUS on 64-bit */
#define NISTATES	16		/* interpreters remembered per cache */

/* One target, with its merged offsets. */
struct ctx {
	const struct py_target *t;
	struct py_object_offsets o;
	pid_t pid;
};

/* What a lookup learns about one interpreter and keeps. */
struct istate {
	int pid;			/* 0: empty */
	uint64_t start_time;
	uint64_t interp;
	uint64_t active;		/* threading._active, 0: not found yet */
	uint64_t retry_ns;		/* no search for it before this */
	uint64_t dict_type;		/* type of sys.modules: exact dict */
	uint64_t str_type;		/* type of a key found by its bytes */
	uint64_t name_key;		/* a "_name" key object seen */
	uint64_t snap_ns;		/* when snap was read; 0: never */
	size_t nsnap;
	struct snap_ent { uint64_t hash, key, value; } *snap;	/* _active */
	uint32_t age;
};

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

int pythread_offsets(const struct py_target *t, struct py_object_offsets *obj,
		     struct py_gil_offsets *gil)
{
	*obj = t->layout.obj;
	*gil = t->layout.gil;
	return obj_usable(obj) ? 0 : -1;
}

/* ---- reading --------------------------------------------------------- */

static int rd(const struct ctx *c, uint64_t addr, void *buf, size_t len)
{
	return target_read(c->t->src, c->pid, addr, buf, len);
}

static int rd_u64(const struct ctx *c, uint64_t addr, uint64_t *v)
{
	return rd(c, addr, v, sizeof(*v));
}

/* A pointer field; 0 (failure) for NULL or unreadable. */
static uint64_t rd_ptr(const struct ctx *c, uint64_t addr)
{
	uint64_t v = 0;

	if (rd_u64(c, addr, &v) || (v & 7))
		return 0;
	return v;
}

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* One dict (or a class's shared keys) as the lookups see it. */
struct dview {
	uint64_t values;	/* value array of a split table; 0: combined */
	uint64_t entries;	/* address of entry 0 */
	uint64_t nentries;
	uint16_t esize, ekey, evalue, ehash;	/* ehash NO16: no hash stored */
	uint8_t *ent;		/* nentries * esize bytes, malloc'd */
};

static void dview_free(struct dview *v)
{
	free(v->ent);
	v->ent = NULL;
}

/* Reads a PyDictKeysObject and its entries. */
/* Reads a PyDictKeysObject and its entries. A small one (a class's
 * shared keys, _active) takes one read: PREFETCH bytes are read first,
 * beyond the object if it is smaller (harmless: only its own bytes are
 * used), else the header alone when that read fails. */
static int keys_view(const struct ctx *c, uint64_t keys, struct dview *v)
{
	const struct py_object_offsets *o = &c->o;
	uint8_t pre[PREFETCH];
	const uint8_t *hdr = pre;
	size_t have = sizeof(pre);
	uint64_t size, idx_bytes, off;
	int64_t n;

	memset(v, 0, sizeof(*v));
	if (!keys || (keys & 7))
		return -1;
	if (rd(c, keys, pre, have)) {
		have = o->dk_indices;
		if (rd(c, keys, pre, have))
			return -1;
	}
	if (o->dk_size != NO16) {		/* <=3.10: dk_size, index width by size */
		size = ld64(hdr + o->dk_size);
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
	n = (int64_t)ld64(hdr + o->dk_nentries);
	if (n < 0 || (uint64_t)n > size || (uint64_t)n > MAX_ENTRIES)
		return -1;
	v->nentries = (uint64_t)n;
	off = o->dk_indices + idx_bytes;
	v->entries = keys + off;
	v->ent = malloc(n ? (size_t)n * v->esize : 1);
	if (!v->ent)
		return -1;
	if (off + (uint64_t)n * v->esize <= have)
		memcpy(v->ent, pre + off, (size_t)n * v->esize);
	else if (rd(c, v->entries, v->ent, (size_t)n * v->esize)) {
		dview_free(v);
		return -1;
	}
	return 0;
}

/* Reads a dict object: its keys, entries and (split) value array; and
 * its type when type is not NULL. */
static int dict_view(const struct ctx *c, uint64_t dict, struct dview *v, uint64_t *type)
{
	const struct py_object_offsets *o = &c->o;
	uint16_t ob_type = c->t->layout.code.ob_type;
	uint16_t end = o->dict_keys > o->dict_values ? o->dict_keys : o->dict_values;
	uint8_t d[HDR_MAX];
	uint64_t keys, values;

	memset(v, 0, sizeof(*v));
	/* ob_type, ma_keys and ma_values in one read (obj_usable() bounds
	 * them). */
	end = (end > ob_type ? end : ob_type) + 8;
	if (!dict || (dict & 7) || end > sizeof(d) || rd(c, dict, d, end))
		return -1;
	if (type)
		*type = ld64(d + ob_type);
	keys = ld64(d + o->dict_keys);
	values = ld64(d + o->dict_values);
	if (values & 7)
		return -1;
	if (keys_view(c, keys, v))
		return -1;
	if (values)
		v->values = values + (o->values_values == NO16 ? 0 : o->values_values);
	return 0;
}

static uint64_t ent_key(const struct dview *v, uint64_t i)
{
	return ld64(v->ent + i * v->esize + v->ekey);
}

/* Value of entry i; 0 when absent or unreadable. */
static uint64_t ent_value(const struct ctx *c, const struct dview *v, uint64_t i)
{
	uint64_t val;

	if (!ent_key(v, i))
		return 0;
	if (v->values)
		return rd_ptr(c, v->values + i * 8);
	val = ld64(v->ent + i * v->esize + v->evalue);
	return val & 7 ? 0 : val;
}

/* Is the object read into buf (n bytes) the compact ASCII str s? */
static int str_matches(const struct ctx *c, const uint8_t *buf, const char *s, size_t n)
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

/*
 * Index of the entry whose key is the str s, or -1. Keys equal to *hint
 * (a key object known to be s) match at once; otherwise the keys are read,
 * STR_BATCH per system call, and the one found becomes *hint, its type
 * *str_type (an interned key is an exact str).
 */
static long find_str(const struct ctx *c, const struct dview *v, const char *s,
		     uint64_t *hint, uint64_t *str_type)
{
	const struct py_code_offsets *co = &c->t->layout.code;
	size_t n = strlen(s), need = co->unicode_ascii_size + n;
	uint8_t buf[STR_BATCH][HDR_MAX + KEY_MAX];
	struct iovec local[STR_BATCH], remote[STR_BATCH];
	uint64_t idx[STR_BATCH];
	uint64_t i = 0;

	if (n > KEY_MAX || co->unicode_ascii_size > HDR_MAX ||
	    co->unicode_state + 4u > co->unicode_ascii_size ||
	    co->unicode_length + 8u > co->unicode_ascii_size)
		return -1;
	if (hint && *hint)
		for (uint64_t k = 0; k < v->nentries; k++)
			if (ent_key(v, k) == *hint)
				return (long)k;
	while (i < v->nentries) {
		size_t m = 0;
		ssize_t got;

		for (; i < v->nentries && m < STR_BATCH; i++) {
			uint64_t key = ent_key(v, i);

			if (!key || (key & 7) || (hint && key == *hint))
				continue;
			local[m].iov_base = buf[m];
			local[m].iov_len = need;
			remote[m].iov_base = (void *)(uintptr_t)key;
			remote[m].iov_len = need;
			idx[m++] = i;
		}
		if (!m)
			break;
		got = target_readv(c->t->src, c->pid, local, m, remote, m);
		for (size_t k = 0; k < m; k++) {
			if (got < (ssize_t)((k + 1) * need)) {
				/* The read stopped at key k (unreadable): go
				 * on after it. */
				i = idx[k] + 1;
				break;
			}
			if (str_matches(c, buf[k], s, n)) {
				uint64_t key = ent_key(v, idx[k]);

				if (hint)
					*hint = key;
				if (str_type)
					*str_type = rd_ptr(c, key + co->ob_type);
				return (long)idx[k];
			}
		}
	}
	return -1;
}

/* Value of d[s] for a str key s; 0 when absent. */
static uint64_t dict_get_str(const struct ctx *c, uint64_t dict, const char *s,
			     uint64_t *hint, uint64_t *str_type)
{
	struct dview v;
	uint64_t val = 0;
	long i;

	if (dict_view(c, dict, &v, NULL))
		return 0;
	i = find_str(c, &v, s, hint, str_type);
	if (i >= 0)
		val = ent_value(c, &v, (uint64_t)i);
	dview_free(&v);
	return val;
}

/* Is the int object at key equal to ident (a C unsigned long)? */
static int long_equals(const struct ctx *c, uint64_t key, uint64_t ident)
{
	const struct py_object_offsets *o = &c->o;
	uint32_t digit[3];
	uint64_t word, nd, val = 0;
	unsigned have = 0;		/* digits already read */
	uint8_t b[16];

	/* The size word and two digits (60 bits: any pthread_t seen in
	 * practice) in one read; every int object is at least this big. */
	if (o->long_digit == o->long_size + 8u && rd(c, key + o->long_size, b, 16) == 0) {
		memcpy(&word, b, 8);
		memcpy(digit, b + 8, 8);
		have = 2;
	} else if (rd_u64(c, key + o->long_size, &word)) {
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
	if (nd > 3 || (nd > have && rd(c, key + o->long_digit, digit, nd * 4)))
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

/* ---- threading._active ---------------------------------------------- */

/* Finds sys.modules["threading"]._active of is->interp. */
static int find_active(const struct ctx *c, struct istate *is)
{
	const struct py_object_offsets *o = &c->o;
	uint64_t modules, mod, mdict, active;

	modules = rd_ptr(c, is->interp + o->interp_modules);
	if (!modules)
		return -1;
	is->dict_type = rd_ptr(c, modules + c->t->layout.code.ob_type);
	mod = dict_get_str(c, modules, "threading", NULL, &is->str_type);
	if (!mod)
		return -1;
	mdict = rd_ptr(c, mod + o->module_dict);
	active = dict_get_str(c, mdict, "_active", NULL, NULL);
	if (!active || !is->dict_type ||
	    rd_ptr(c, active + c->t->layout.code.ob_type) != is->dict_type)
		return -1;
	is->active = active;
	return 0;
}

/* Re-reads the entries of _active into is->snap. */
static int read_snapshot(const struct ctx *c, struct istate *is, uint64_t now)
{
	struct dview v;
	struct snap_ent *s;
	uint64_t type = 0;
	size_t n = 0;

	is->nsnap = 0;
	is->snap_ns = now ? now : 1;
	if (dict_view(c, is->active, &v, &type))
		return -1;
	if (type != is->dict_type) {
		dview_free(&v);
		is->active = 0;		/* not a dict any more: search again */
		return -1;
	}
	if (v.ehash == NO16 || v.values) {	/* int keys: a general table */
		dview_free(&v);
		return -1;
	}
	s = realloc(is->snap, (v.nentries ? v.nentries : 1) * sizeof(*s));
	if (!s) {
		dview_free(&v);
		return -1;
	}
	is->snap = s;
	for (uint64_t i = 0; i < v.nentries; i++) {
		const uint8_t *e = v.ent + i * v.esize;
		uint64_t key = ld64(e + v.ekey), value = ld64(e + v.evalue);

		if (!key || !value || ((key | value) & 7))
			continue;
		s[n].hash = ld64(e + v.ehash);
		s[n].key = key;
		s[n].value = value;
		n++;
	}
	is->nsnap = n;
	dview_free(&v);
	return 0;
}

/* The Thread object of ident in the snapshot; 0 if absent. */
static uint64_t snap_find(const struct ctx *c, const struct istate *is, uint64_t ident)
{
	uint64_t h = ident % HASH_MOD;

	for (size_t i = 0; i < is->nsnap; i++)
		if (is->snap[i].hash == h && long_equals(c, is->snap[i].key, ident))
			return is->snap[i].value;
	return 0;
}

/* ---- attributes ------------------------------------------------------ */

/* Value of the shared-keys entry s in a values array (managed/inline). */
static uint64_t values_get(const struct ctx *c, struct istate *is, uint64_t keys,
			   uint64_t values, const char *s, uint64_t *hint)
{
	struct dview v;
	uint64_t val = 0;
	long i;

	if (!keys || keys_view(c, keys, &v))
		return 0;
	i = find_str(c, &v, s, hint, &is->str_type);
	if (i >= 0)
		val = rd_ptr(c, values + c->o.values_values + (uint64_t)i * 8);
	dview_free(&v);
	return val;
}

/* What instance_attr() needs of a type, read at once when it can be. */
struct type_info {
	uint64_t flags, cached_keys;
	int64_t dictoffset, basicsize;
};

static int read_type(const struct ctx *c, uint64_t type, struct type_info *ti)
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
	if (hi + 8u - lo <= sizeof(buf) && rd(c, type + lo, buf, hi + 8u - lo) == 0) {
		for (int i = 0; i < 4; i++)
			memcpy(dst[i], buf + f[i] - lo, 8);
		return 0;
	}
	for (int i = 0; i < 3; i++)
		if (rd_u64(c, type + f[i], dst[i]))
			return -1;
	ti->cached_keys = 0;	/* read below, where needed */
	return 0;
}

/* obj.<s> for an attribute kept in the instance; 0 when absent. */
static uint64_t instance_attr(const struct ctx *c, struct istate *is, uint64_t obj,
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
	    rd(c, obj + (uint64_t)lo, pre, (size_t)(ob_type + 8 - lo)))
		return 0;
	memcpy(&type, pre + ob_type - lo, 8);
	if (!type || (type & 7) || read_type(c, type, &ti))
		return 0;
	if (!ti.cached_keys && o->managed_kind != PY_MANAGED_NONE)
		ti.cached_keys = rd_ptr(c, type + o->heaptype_cached_keys);
	if (o->tpflag_managed_dict && (ti.flags & o->tpflag_managed_dict)) {
		memcpy(&w, pre + (o->managed_dict - lo), 8);
		switch (o->managed_kind) {
		case PY_MANAGED_VALUES_PTR: {
			uint64_t values;

			memcpy(&values, pre + (o->managed_values - lo), 8);
			if (values)
				return values & 7 ? 0 :
				       values_get(c, is, ti.cached_keys, values, s, hint);
			dict = w;
			break;
		}
		case PY_MANAGED_TAGGED:
			if (w & 1)
				return values_get(c, is, ti.cached_keys, w + 1, s, hint);
			dict = w;
			break;
		case PY_MANAGED_INLINE:
			if (o->tpflag_inline_values && (ti.flags & o->tpflag_inline_values)) {
				uint64_t values = obj + (uint64_t)ti.basicsize;
				uint8_t valid = 0;

				if (ti.basicsize < 16 || ti.basicsize > 4096 ||
				    rd(c, values + o->values_valid, &valid, 1))
					return 0;
				if (valid)
					return values_get(c, is, ti.cached_keys, values, s, hint);
			}
			dict = w;
			break;
		default:
			return 0;
		}
	} else if (ti.dictoffset > 0 && ti.dictoffset < 4096) {
		dict = rd_ptr(c, obj + (uint64_t)ti.dictoffset);
	}
	/* dictoffset < 0 (variable-size objects): not a Thread; unsupported. */
	return dict && !(dict & 7) ? dict_get_str(c, dict, s, hint, &is->str_type) : 0;
}

/*
 * Reads the str at addr into buf: one read for a short ASCII string of the
 * exact str type (a thread name), else pysym_read_str(). 0 on success.
 */
static int read_name(const struct ctx *c, const struct istate *is, uint64_t addr,
		     char *buf, size_t len)
{
	const struct py_code_offsets *co = &c->t->layout.code;
	uint8_t b[STR_FAST];
	uint64_t type, n;
	uint32_t state;

	if (co->unicode_ascii_size >= sizeof(b) || co->ob_type + 8u > co->unicode_ascii_size)
		return -1;
	if (rd(c, addr, b, sizeof(b)) == 0) {
		memcpy(&type, b + co->ob_type, 8);
		if (type != is->str_type)
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
	} else if (rd_ptr(c, addr + co->ob_type) != is->str_type) {
		return -1;
	}
	return pysym_read_str(c->t, addr, buf, len);
}

/* ---- the lookup ------------------------------------------------------ */

static int ctx_init(struct ctx *c, const struct py_target *t)
{
	struct py_gil_offsets g;

	c->t = t;
	c->pid = t->pid;
	return pythread_offsets(t, &c->o, &g);
}

/* tstate->interp and tstate->thread_id, in one read. 0 on success. */
static int read_tstate(const struct ctx *c, uint64_t tstate, uint64_t *interp,
		       uint64_t *ident)
{
	uint16_t a = c->o.ts_interp, b = c->t->layout.walk.ts_thread_id;
	uint16_t lo = a < b ? a : b, hi = a < b ? b : a;
	uint8_t buf[512];

	if (!tstate || (tstate & 7))
		return -1;
	if (hi + 8u - lo <= sizeof(buf)) {
		if (rd(c, tstate + lo, buf, hi + 8u - lo))
			return -1;
		memcpy(interp, buf + a - lo, 8);
		memcpy(ident, buf + b - lo, 8);
	} else if (rd_u64(c, tstate + a, interp) || rd_u64(c, tstate + b, ident)) {
		return -1;
	}
	return *interp && !(*interp & 7) && *ident ? 0 : -1;
}

/* The name of ident's Thread in is's interpreter, at now (not 0). */
static int lookup(const struct ctx *c, struct istate *is, uint64_t ident, uint64_t now,
		  char *buf, size_t len, uint64_t *resolves)
{
	uint64_t thread, name;
	int fresh = 0;

	if (!is->active) {
		if (now && now < is->retry_ns)
			return -1;
		is->retry_ns = now + PYTHREAD_TTL_NS;
		(*resolves)++;
		if (find_active(c, is))
			return -1;
		is->snap_ns = 0;
	}
	if (!now || !is->snap_ns || now - is->snap_ns >= PYTHREAD_TTL_NS) {
		if (read_snapshot(c, is, now))
			return -1;
		fresh = 1;
	}
	thread = snap_find(c, is, ident);
	/* A thread started since the snapshot: read it again, at most ten
	 * times a TTL. */
	if (!thread && !fresh && now - is->snap_ns >= PYTHREAD_TTL_NS / 10) {
		if (read_snapshot(c, is, now))
			return -1;
		thread = snap_find(c, is, ident);
	}
	if (!thread)
		return -1;
	name = instance_attr(c, is, thread, "_name", &is->name_key);
	if (!name || !is->str_type)
		return -1;
	return read_name(c, is, name, buf, len);
}

/* ---- the cache ------------------------------------------------------- */

struct tentry {
	int pid;			/* 0: empty */
	int ok;				/* name is valid */
	uint64_t start_time;
	uint64_t tstate;
	uint64_t time_ns;		/* when it was read */
	uint32_t age;
	char name[PYTHREAD_NAME_MAX];
};

struct pythread_cache {
	struct tentry *e;
	size_t nsets;
	uint32_t clock;
	struct istate is[NISTATES];
	struct pythread_stats st;
};

struct pythread_cache *pythread_cache_new(size_t capacity)
{
	struct pythread_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->e = setcache_alloc(capacity, WAYS, sizeof(*c->e), &c->nsets);
	if (!c->e) {
		free(c);
		return NULL;
	}
	return c;
}

static void istate_clear(struct istate *is)
{
	free(is->snap);
	memset(is, 0, sizeof(*is));
}

void pythread_cache_free(struct pythread_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < NISTATES; i++)
		istate_clear(&c->is[i]);
	free(c->e);
	free(c);
}

void pythread_forget_pid(struct pythread_cache *c, int pid)
{
	for (size_t i = 0; i < c->nsets * WAYS; i++)
		if (c->e[i].pid == pid)
			memset(&c->e[i], 0, sizeof(c->e[i]));
	for (int i = 0; i < NISTATES; i++)
		if (c->is[i].pid == pid)
			istate_clear(&c->is[i]);
}

void pythread_get_stats(const struct pythread_cache *c, struct pythread_stats *st)
{
	*st = c->st;
}

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

/* The interpreter state of (t, interp), made if need be (LRU). */
static struct istate *istate_get(struct pythread_cache *c, const struct py_target *t,
				 uint64_t interp)
{
	struct istate *victim = &c->is[0];

	for (int i = 0; i < NISTATES; i++) {
		struct istate *is = &c->is[i];

		if (is->pid == t->pid && is->interp == interp) {
			if (is->start_time == t->start_time) {
				is->age = c->clock;
				return is;
			}
			victim = is;		/* the pid was reused */
			break;
		}
		if (!is->pid || (victim->pid && is->age < victim->age))
			victim = is;
	}
	istate_clear(victim);
	victim->pid = t->pid;
	victim->start_time = t->start_time;
	victim->interp = interp;
	victim->age = c->clock;
	return victim;
}

static void refresh(struct pythread_cache *c, const struct py_target *t, struct tentry *e,
		    uint64_t now)
{
	struct istate *is;
	struct ctx x;
	uint64_t ident = 0, interp;

	c->st.lookups++;
	e->ok = 0;
	e->time_ns = now;
	if (ctx_init(&x, t) || read_tstate(&x, e->tstate, &interp, &ident))
		goto fail;
	is = istate_get(c, t, interp);
	if (lookup(&x, is, ident, now, e->name, sizeof(e->name), &c->st.resolves) == 0 &&
	    e->name[0]) {
		e->ok = 1;
		return;
	}
fail:
	c->st.failures++;
}

const char *pythread_cache_name(struct pythread_cache *c, const struct py_target *t,
				uint64_t tstate, uint64_t now_ns)
{
	struct tentry *set, *victim;

	if (!tstate || !t->pid)
		return NULL;
	if (!now_ns)
		now_ns = 1;
	set = &c->e[(hash64(tstate ^ (uint64_t)t->pid << 48) & (c->nsets - 1)) * WAYS];
	victim = &set[0];
	c->clock++;
	for (int i = 0; i < WAYS; i++) {
		struct tentry *e = &set[i];

		if (e->pid == t->pid && e->tstate == tstate && e->start_time == t->start_time) {
			e->age = c->clock;
			if (now_ns - e->time_ns < PYTHREAD_TTL_NS && now_ns >= e->time_ns) {
				c->st.hits++;
				return e->ok ? e->name : NULL;
			}
			refresh(c, t, e, now_ns);
			return e->ok ? e->name : NULL;
		}
		if (!e->pid || (victim->pid && e->age < victim->age))
			victim = e;
	}
	if (victim->pid && now_ns - victim->time_ns < PYTHREAD_TTL_NS)
		c->st.evictions++;
	memset(victim, 0, sizeof(*victim));
	victim->pid = t->pid;
	victim->start_time = t->start_time;
	victim->tstate = tstate;
	victim->age = c->clock;
	refresh(c, t, victim, now_ns);
	return victim->ok ? victim->name : NULL;
}

/* ---- the GIL --------------------------------------------------------- */

/* 3.6: the static gil_locked and gil_last_holder (local symbols, absent
 * from a stripped file) and the exported _PyThreadState_Current, from the
 * interpreter's object entry the probe at attach already opened. */
static void gil_symbols_36(const struct py_target *t, struct pythread_gil *g)
{
	struct proc_maps maps;

	if (!t->objs || proc_maps_read(t->src, t->pid, &maps))
		return;
	for (size_t i = 0; i < maps.n; i++) {
		const struct proc_map *m = &maps.v[i];
		const struct oc_obj *o;
		struct elf_file *ef;
		uint64_t base, v;

		if (m->offset || strcmp(m->path, t->module))
			continue;
		o = objcache_map_obj(t->objs, t->src, t->pid, m);
		if (!o)
			break;
		ef = o->ef;
		if (elf_file_base_vaddr(ef, &base) == 0) {
			uint64_t bias = m->start - base;

			if (elf_file_symbol(ef, "gil_locked", &v, NULL) == 0)
				g->locked_addr = v + bias;
			if (elf_file_symbol(ef, "gil_last_holder", &v, NULL) == 0)
				g->holder_addr = v + bias;
			if (elf_file_symbol(ef, "_PyThreadState_Current", &v, NULL) == 0)
				g->current_addr = v + bias;
			if (!g->locked_addr || !g->holder_addr)
				g->locked_addr = g->holder_addr = 0;
		}
		break;
	}
	proc_maps_free(&maps);
}

int pythread_gil_locate(const struct py_target *t, struct pythread_gil *g)
{
	const struct py_gil_offsets *gil = &t->layout.gil;
	uint64_t base = 0, interp = 0;

	memset(g, 0, sizeof(*g));
	switch (t->layout.gil_kind) {
	case PY_GIL_SYMBOLS:
		gil_symbols_36(t, g);
		return g->holder_addr || g->current_addr ? 0 : -1;
	case PY_GIL_RUNTIME:
		if (gil->runtime_gil != PY_NO_FIELD32 && t->runtime_addr)
			base = t->runtime_addr + gil->runtime_gil;
		break;
	case PY_GIL_INTERP:
		if (gil->interp_ceval_gil != NO16 &&
		    (target_read(t->src, t->pid, t->bpf.interp_head_addr, &interp, 8) || !interp ||
		     target_read(t->src, t->pid, interp + gil->interp_ceval_gil, &base, 8)))
			base = 0;
		break;
	default:
		return -1;
	}
	if (base && gil->locked != NO16 && gil->last_holder != NO16) {
		g->locked_addr = base + gil->locked;
		g->holder_addr = base + gil->last_holder;
	}
	if (base && gil->enabled != NO16)
		g->enabled_addr = base + gil->enabled;
	if (t->layout.runtime_gil_holder != PY_NO_FIELD32 && t->runtime_addr)
		g->current_addr = t->runtime_addr + t->layout.runtime_gil_holder;
	return g->holder_addr || g->current_addr ? 0 : -1;
}

/* ---- readers shared with other modules (pythread.h) ------------------ */

int pythread_tstate_ident(const struct py_target *t, uint64_t tstate, uint64_t *interp,
			  uint64_t *ident)
{
	struct ctx c;

	if (ctx_init(&c, t))
		return -1;
	return read_tstate(&c, tstate, interp, ident);
}

uint64_t pythread_module_attr(const struct py_target *t, struct pythread_seen *seen,
			      uint64_t interp, const char *module, const char *name)
{
	struct ctx c;
	uint64_t modules, mod, mdict;

	if (ctx_init(&c, t) || !interp)
		return 0;
	modules = rd_ptr(&c, interp + c.o.interp_modules);
	if (!modules)
		return 0;
	seen->dict_type = rd_ptr(&c, modules + t->layout.code.ob_type);
	mod = dict_get_str(&c, modules, module, NULL, &seen->str_type);
	mdict = mod ? rd_ptr(&c, mod + c.o.module_dict) : 0;
	return mdict ? dict_get_str(&c, mdict, name, NULL, NULL) : 0;
}

int pythread_dict_items(const struct py_target *t, const struct pythread_seen *seen,
			uint64_t dict, uint64_t *keys, uint64_t *values, size_t max)
{
	struct dview v;
	struct ctx c;
	uint64_t type = 0;
	size_t n = 0;

	if (ctx_init(&c, t) || !seen->dict_type || dict_view(&c, dict, &v, &type))
		return -1;
	if (type != seen->dict_type) {
		dview_free(&v);
		return -1;
	}
	for (uint64_t i = 0; i < v.nentries && n < max; i++) {
		uint64_t value = ent_value(&c, &v, i);

		if (!value)
			continue;
		keys[n] = ent_key(&v, i);
		values[n++] = value;
	}
	dview_free(&v);
	return (int)n;
}

uint64_t pythread_instance_attr(const struct py_target *t, struct pythread_seen *seen,
				uint64_t obj, const char *name, uint64_t *hint)
{
	struct istate is = { .str_type = seen->str_type, .dict_type = seen->dict_type };
	struct ctx c;
	uint64_t v;

	if (ctx_init(&c, t))
		return 0;
	v = instance_attr(&c, &is, obj, name, hint);
	if (is.str_type)
		seen->str_type = is.str_type;
	return v;
}

int pythread_int_equals(const struct py_target *t, uint64_t obj, uint64_t value)
{
	struct ctx c;

	if (ctx_init(&c, t) || !obj || (obj & 7))
		return 0;
	return long_equals(&c, obj, value);
}
