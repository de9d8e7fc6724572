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
 */
#define _GNU_SOURCE
#include "pythread.h"

#include "pyobj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elffile.h"
#include "objcache.h"
#include "proc.h"
#include "procslot.h"
#include "pysym.h"
#include "setcache.h"

#define NO16		PYPERF_NO_FIELD
#define WAYS		4
#define HASH_MOD	((1ull << 61) - 1)	/* _PyHASH_MODULUS on 64-bit */
#define NISTATES	16		/* interpreters remembered per cache */

/* What a lookup learns about one interpreter and keeps. */
struct istate {
	struct proc_slot key;		/* first: procslot.h */
	uint64_t active;		/* threading._active, 0: not found yet */
	uint64_t retry_ns;		/* no search for it before this */
	int64_t modules_used;		/* len(sys.modules) at a search that
					 * did not find threading; 0: none */
	struct py_seen seen;		/* its exact dict and str types */
	struct pyobj_modindex mods;	/* sys.modules' scans, for asyncio too */
	uint64_t name_key;		/* a "_name" key object seen */
	uint64_t snap_ns;		/* when snap was read; 0: never */
	size_t nsnap;
	struct snap_ent { uint64_t hash, key, value; } *snap;	/* _active */
};

/* ---- threading._active ---------------------------------------------- */

/* Finds sys.modules["threading"]._active of is->key.interp (sample time
 * now). */
static int find_active(const struct pyobj_ctx *c, struct istate *is, uint64_t now)
{
	const struct py_object_offsets *o = &c->o;
	uint64_t modules, mod, mdict, active;
	struct pyobj_dhead h;

	modules = pyobj_modules(c, is->key.interp, &is->mods, &h, now);
	if (!modules)
		return -1;
	/* A program that has not imported threading (most single-threaded
	 * ones) is searched again only once sys.modules has grown or shrunk:
	 * the search reads every key of it, each second of samples. */
	if (h.used >= 0 && h.used == is->modules_used)
		return -1;
	is->seen.dict_type = h.type;
	mod = pyobj_module_find(c, &h, PYOBJ_MOD_THREADING, &is->mods, &is->seen.str_type);
	if (!mod) {
		is->modules_used = h.used;
		return -1;
	}
	mdict = py_read_ptr(c->t, mod + o->module_dict);
	active = pyobj_dict_get_str(c, mdict, "_active", NULL, NULL);
	if (!active || !is->seen.dict_type ||
	    py_read_ptr(c->t, active + c->t->layout.code.ob_type) != is->seen.dict_type)
		return -1;
	is->active = active;
	return 0;
}

/* Re-reads the entries of _active into is->snap. */
static int read_snapshot(const struct pyobj_ctx *c, struct istate *is, uint64_t now)
{
	struct pyobj_dview v;
	struct snap_ent *s;
	uint64_t type = 0;
	size_t n = 0;

	is->nsnap = 0;
	is->snap_ns = now ? now : 1;
	if (pyobj_dict_view(c, is->active, &v, &type))
		return -1;
	if (type != is->seen.dict_type) {
		pyobj_dview_free(&v);
		is->active = 0;		/* not a dict any more: search again */
		return -1;
	}
	if (v.ehash == NO16 || v.values) {	/* int keys: a general table */
		pyobj_dview_free(&v);
		return -1;
	}
	s = realloc(is->snap, (v.nentries ? v.nentries : 1) * sizeof(*s));
	if (!s) {
		pyobj_dview_free(&v);
		return -1;
	}
	is->snap = s;
	for (uint64_t i = 0; i < v.nentries; i++) {
		const uint8_t *e = v.ent + i * v.esize;
		uint64_t key = py_ld64(e + v.ekey), value = py_ld64(e + v.evalue);

		if (!key || !value || ((key | value) & 7))
			continue;
		s[n].hash = py_ld64(e + v.ehash);
		s[n].key = key;
		s[n].value = value;
		n++;
	}
	is->nsnap = n;
	pyobj_dview_free(&v);
	return 0;
}

/* The Thread object of ident in the snapshot; 0 if absent. */
static uint64_t snap_find(const struct pyobj_ctx *c, const struct istate *is, uint64_t ident)
{
	uint64_t h = ident % HASH_MOD;

	for (size_t i = 0; i < is->nsnap; i++)
		if (is->snap[i].hash == h && pyobj_long_equals(c, is->snap[i].key, ident))
			return is->snap[i].value;
	return 0;
}

/* ---- the lookup ------------------------------------------------------ */

/* tstate->interp and tstate->thread_id, in one read. 0 on success. */
static int read_tstate(const struct pyobj_ctx *c, uint64_t tstate, uint64_t *interp,
		       uint64_t *ident)
{
	uint16_t a = c->o.ts_interp, b = c->t->layout.walk.ts_thread_id;
	uint16_t lo = a < b ? a : b, hi = a < b ? b : a;
	uint8_t buf[512];

	if (!tstate || (tstate & 7))
		return -1;
	if (hi + 8u - lo <= sizeof(buf)) {
		if (py_read(c->t, tstate + lo, buf, hi + 8u - lo))
			return -1;
		memcpy(interp, buf + a - lo, 8);
		memcpy(ident, buf + b - lo, 8);
	} else if (py_read_u64(c->t, tstate + a, interp) || py_read_u64(c->t, tstate + b, ident)) {
		return -1;
	}
	return *interp && !(*interp & 7) && *ident ? 0 : -1;
}

/* The name of ident's Thread in is's interpreter, at now (not 0). */
static int lookup(const struct pyobj_ctx *c, struct istate *is, uint64_t ident, uint64_t now,
		  char *buf, size_t len, uint64_t *resolves)
{
	uint64_t thread, name;
	int fresh = 0;

	if (!is->active) {
		if (now && now < is->retry_ns)
			return -1;
		is->retry_ns = now + PYTHREAD_TTL_NS;
		(*resolves)++;
		if (find_active(c, is, now))
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
	name = pyobj_instance_attr(c, &is->seen, thread, "_name", &is->name_key);
	if (!name || !is->seen.str_type)
		return -1;
	return pyobj_read_short_str(c, &is->seen, name, buf, len);
}

/* ---- the cache ------------------------------------------------------- */

struct tentry {
	int pid;			/* 0: empty */
	int ok;				/* name is valid */
	uint64_t start_time;
	uint64_t tstate;
	uint64_t interp, ident;		/* read with name; interp 0: not read */
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

/* Only the interpreter states, which hold memory: a thread's entry names
 * its process by pid and start time, so a later process with the pid never
 * matches it, and it is replaced like any old entry. A scan of every entry
 * at each exit was ~1 % of the profiler's CPU with a new process every
 * 0.3 s. */
void pythread_forget_pid(struct pythread_cache *c, int pid)
{
	for (int i = 0; i < NISTATES; i++)
		if (c->is[i].key.pid == pid)
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
	int fresh;
	struct istate *is = (struct istate *)proc_slot_get(c->is, NISTATES, sizeof(c->is[0]), t,
							   interp, c->clock, &fresh);

	if (fresh) {
		istate_clear(is);
		proc_slot_take(&is->key, t, interp, c->clock);
	}
	return is;
}

static void refresh(struct pythread_cache *c, const struct py_target *t, struct tentry *e,
		    uint64_t now)
{
	struct istate *is;
	struct pyobj_ctx x;
	uint64_t ident = 0, interp;

	c->st.lookups++;
	e->ok = 0;
	e->time_ns = now;
	e->interp = 0;
	if (pyobj_ctx_init(&x, t) || read_tstate(&x, e->tstate, &interp, &ident))
		goto fail;
	e->interp = interp;
	e->ident = ident;
	is = istate_get(c, t, interp);
	if (lookup(&x, is, ident, now, e->name, sizeof(e->name), &c->st.resolves) == 0 &&
	    e->name[0]) {
		e->ok = 1;
		return;
	}
fail:
	c->st.failures++;
}

static struct tentry *entry_set(const struct pythread_cache *c, const struct py_target *t,
			       uint64_t tstate)
{
	return &c->e[(hash64(tstate ^ (uint64_t)t->pid << 48) & (c->nsets - 1)) * WAYS];
}

int pythread_cache_ident(struct pythread_cache *c, const struct py_target *t, uint64_t tstate,
			 uint64_t now_ns, uint64_t *interp, uint64_t *ident)
{
	struct tentry *set = entry_set(c, t, tstate);

	for (int i = 0; tstate && t->pid && i < WAYS; i++) {
		const struct tentry *e = &set[i];

		if (e->pid == t->pid && e->tstate == tstate && e->start_time == t->start_time &&
		    e->interp && e->time_ns == (now_ns ? now_ns : 1)) {
			*interp = e->interp;
			*ident = e->ident;
			return 0;
		}
	}
	return pythread_tstate_ident(t, tstate, interp, ident);
}

const char *pythread_cache_name(struct pythread_cache *c, const struct py_target *t,
				uint64_t tstate, uint64_t now_ns)
{
	struct tentry *set, *victim;

	if (!tstate || !t->pid)
		return NULL;
	if (!now_ns)
		now_ns = 1;
	set = entry_set(c, t, tstate);
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

struct pyobj_modindex *pythread_modindex(struct pythread_cache *c, const struct py_target *t,
					 uint64_t interp)
{
	return t->pid && interp ? &istate_get(c, t, interp)->mods : NULL;
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
	struct pyobj_ctx c;

	if (pyobj_ctx_init(&c, t))
		return -1;
	return read_tstate(&c, tstate, interp, ident);
}
