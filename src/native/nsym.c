/*
 * Native symbolization: pc -> (object, function). Per object file, the
 * FUNC symbols of .dynsym and .symtab (or of the separate debug file when
 * the object is stripped) become one array sorted by address, with clone
 * suffixes stripped and aliases folded; a lookup is a binary search. The
 * ELF file is closed once its symbols are copied.
 */
#define _GNU_SOURCE
#include "nsym.h"

#include "elffile.h"
#include "objcache.h"
#include "plt.h"
#include "proc.h"
#include "target_src.h"

#include <elf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_MAX_SYMS		(8u << 20)	/* per object, bounds hostile files */
#define NS_NAME_MAX		4096		/* longer names are cut */
#define NS_SIZE0_SPAN		4096	/* reach of a symbol without a size */
#define NS_NEST_SCAN		8	/* earlier symbols tried for nesting */

struct ns_sym {
	uint64_t start;			/* link-time address */
	uint32_t size;
	uint32_t name;			/* offset into names */
};

/* The symbol table hung off an object entry (objcache.h). */
struct ns_table {
	struct ns_sym *syms;
	size_t nsyms;
	char *names;
	size_t bytes;			/* what it holds, for the byte budget */
	int from_debug;
};

struct nsym_ctx {
	struct objcache *oc;
	struct nsym_stats st;
	char path[PATH_MAX];		/* nsym_result.path */
	struct oc_obj *o;		/* the last nsym_locate's object ... */
	struct ns_table *t;		/* ... and its symbols; NULL: none */
};

/* Symbols being collected from one or two ELF files. */
struct ns_tmp {
	uint64_t start, size;
	uint32_t name, len;
	uint8_t rank;			/* higher wins among aliases */
};

struct ns_collect {
	struct ns_tmp *v;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	int oom;
};

/* ---- clone suffixes --------------------------------------------------- */

static int word_is(const char *s, size_t len, const char *const *words)
{
	for (; *words; words++)
		if (strlen(*words) == len && memcmp(s, *words, len) == 0)
			return 1;
	return 0;
}

static int all_digits(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return len > 0;
}

static size_t last_dot(const char *name, size_t len)
{
	while (len > 0 && name[len - 1] != '.')
		len--;
	return len ? len - 1 : 0;	/* 0: none, or a leading dot */
}

size_t nsym_base_len(const char *name, size_t len)
{
	static const char *const numbered[] = { "part", "isra", "constprop", "lto_priv",
						"cold", "llvm", "clone", NULL };
	static const char *const bare[] = { "cold", "localalias", NULL };

	for (;;) {
		size_t d = last_dot(name, len), d2;

		if (!d)
			return len;
		if (word_is(name + d + 1, len - d - 1, bare)) {
			len = d;
			continue;
		}
		if (!all_digits(name + d + 1, len - d - 1))
			return len;
		d2 = last_dot(name, d);
		if (!d2 || !word_is(name + d2 + 1, d - d2 - 1, numbered))
			return len;
		len = d2;
	}
}

/* ---- symbol tables ---------------------------------------------------- */

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 256;
	void *nv;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -1;
	*v = nv;
	*cap = ncap;
	return 0;
}

static uint8_t sym_rank(const struct elf_symbol *s, const char *name, size_t len)
{
	uint8_t r = s->bind == STB_GLOBAL ? 8 : s->bind == STB_WEAK ? 4 : 0;
	size_t under = 0;

	while (under < len && name[under] == '_')
		under++;
	/* Among aliases, "malloc" over "__libc_malloc" over "__GI___libc_malloc". */
	return (uint8_t)(r + (under < 3 ? 3 - under : 0));
}

static int collect_cb(const struct elf_symbol *s, void *arg)
{
	struct ns_collect *k = arg;
	size_t len;

	if ((s->type != STT_FUNC && s->type != STT_GNU_IFUNC) || !s->value)
		return 0;
	if (k->n >= NS_MAX_SYMS)
		return 1;
	len = nsym_base_len(s->name, strnlen(s->name, NS_NAME_MAX));
	if (grow((void **)&k->v, &k->cap, k->n + 1, sizeof(*k->v)) ||
	    grow((void **)&k->names, &k->names_cap, k->names_len + len + 1, 1)) {
		k->oom = 1;
		return 1;
	}
	memcpy(k->names + k->names_len, s->name, len);
	k->names[k->names_len + len] = '\0';
	k->v[k->n].start = s->value;
	k->v[k->n].size = s->size;
	k->v[k->n].name = (uint32_t)k->names_len;
	k->v[k->n].len = (uint32_t)len;
	k->v[k->n++].rank = sym_rank(s, s->name, len);
	k->names_len += len + 1;
	return 0;
}

static int cmp_tmp(const void *a, const void *b)
{
	const struct ns_tmp *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* One entry per address (the best-ranked alias, the largest size), names
 * compacted into a new pool. */
static int fold_symbols(struct ns_table *o, struct ns_collect *k)
{
	size_t pool = 0, n = 0;

	qsort(k->v, k->n, sizeof(*k->v), cmp_tmp);
	for (size_t i = 0; i < k->n; i++)
		if (!i || k->v[i].start != k->v[i - 1].start)
			pool += k->v[i].len + 1;
	o->syms = malloc((k->n ? k->n : 1) * sizeof(*o->syms));
	o->names = malloc(pool ? pool : 1);
	if (!o->syms || !o->names)
		return -1;
	pool = 0;
	for (size_t i = 0; i < k->n; i++) {
		const struct ns_tmp *t = &k->v[i];

		if (i && t->start == k->v[i - 1].start) {
			if (t->size > o->syms[n - 1].size)
				o->syms[n - 1].size = t->size > UINT32_MAX ? UINT32_MAX : (uint32_t)t->size;
			continue;
		}
		memcpy(o->names + pool, k->names + t->name, t->len + 1);
		o->syms[n].start = t->start;
		o->syms[n].size = t->size > UINT32_MAX ? UINT32_MAX : (uint32_t)t->size;
		o->syms[n++].name = (uint32_t)pool;
		pool += t->len + 1;
	}
	/* A symbol without a size reaches the next one, not further than
	 * NS_SIZE0_SPAN: hand-written assembly often lacks .size. */
	for (size_t i = 0; i < n; i++) {
		uint64_t gap = i + 1 < n ? o->syms[i + 1].start - o->syms[i].start : NS_SIZE0_SPAN;

		if (!o->syms[i].size)
			o->syms[i].size = (uint32_t)(gap < NS_SIZE0_SPAN ? gap : NS_SIZE0_SPAN);
	}
	o->nsyms = n;
	o->bytes = sizeof(*o) + n * sizeof(*o->syms) + pool;
	return 0;
}

static const struct ns_sym *sym_find(const struct ns_table *o, uint64_t vaddr)
{
	size_t lo = 0, hi = o->nsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->syms[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo - 1 is the last symbol starting at or below vaddr; a few
	 * earlier ones may still contain it (nested symbols). */
	for (size_t k = lo; k > 0 && lo - k < NS_NEST_SCAN; k--) {
		const struct ns_sym *s = &o->syms[k - 1];

		if (vaddr - s->start < s->size)
			return s;
	}
	return NULL;
}

/* ---- symbol tables of objects ------------------------------------------ */

static void table_free(void *ctx, void *v)
{
	struct nsym_ctx *c = ctx;
	struct ns_table *t = v;

	c->st.bytes -= t->bytes;
	c->st.symbols -= t->nsyms;
	free(t->syms);
	free(t->names);
	free(t);
}

/* Symbols of o's file, and of its debug file when the file is stripped;
 * made on first use and counted against the cache's byte budget. */
static struct ns_table *table_of(struct nsym_ctx *c, struct oc_obj *o, const struct oc_proc *p,
				 const struct proc_map *m)
{
	struct ns_table *t = o->user[OC_SYMS];
	struct ns_collect k = { 0 };
	struct elf_file *dbg = NULL;

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	elf_file_symbols(o->ef, collect_cb, &k);
	if (!k.oom && plt_symbols(o->ef, collect_cb, &k) < 0)
		k.oom = 1;
	if (!elf_file_has_symtab(o->ef))
		dbg = objcache_debug_file(c->oc, o, p, m);
	if (dbg && !k.oom) {
		elf_file_symbols(dbg, collect_cb, &k);
		t->from_debug = 1;
		c->st.debug_files++;
	}
	/* The symbols are copied: their pages need not stay resident. */
	elf_file_release_pages(o->ef);
	elf_file_release_pages(dbg);
	if (k.oom || fold_symbols(t, &k)) {
		free(t->syms);
		free(t->names);
		free(t);
		t = NULL;
	}
	free(k.v);
	free(k.names);
	if (!t)
		return NULL;
	c->st.bytes += t->bytes;
	c->st.symbols += t->nsyms;
	o->user[OC_SYMS] = t;
	objcache_account(c->oc, o, OC_SYMS, t->bytes);
	return t;
}

static int offset_to_vaddr(const struct oc_obj *o, uint64_t off, uint64_t *vaddr)
{
	for (size_t k = 0; k < o->nload; k++) {
		const struct elf_segment *s = &o->load[k];

		if (off >= s->offset && off - s->offset < s->filesz) {
			*vaddr = off - s->offset + s->vaddr;
			return 0;
		}
	}
	return -1;
}

/* ---- lookups ---------------------------------------------------------- */

static int finish(struct nsym_ctx *c, struct nsym_result *out, enum nsym_status s)
{
	uint64_t *ctr[] = {
		[NSYM_OK] = &c->st.found,
		[NSYM_NO_SYMBOL] = &c->st.no_symbol,
		[NSYM_NO_FILE] = &c->st.no_file,
		[NSYM_NO_MAPPING] = &c->st.no_mapping,
	};

	(*ctr[s])++;
	out->status = s;
	return s;
}

static void set_path(struct nsym_ctx *c, const struct proc_map *m, struct nsym_result *out)
{
	static const char del[] = " (deleted)";
	size_t len = strnlen(m->path, sizeof(c->path) - 1);

	memcpy(c->path, m->path, len);
	c->path[len] = '\0';
	if (len > sizeof(del) - 1 && strcmp(c->path + len - (sizeof(del) - 1), del) == 0) {
		c->path[len - (sizeof(del) - 1)] = '\0';
		out->deleted = 1;
	}
	out->path = c->path;
}

/* A miss re-reads the maps (a library loaded since), as
 * objcache_refresh() allows for a pc seen at seen_ns. */
static long map_index(struct nsym_ctx *c, struct oc_proc *p, uint64_t pc, uint64_t seen_ns)
{
	const struct proc_map *m = proc_maps_find(&p->maps, pc);

	if (!m && objcache_refresh(c->oc, p, seen_ns) == 0)
		m = proc_maps_find(&p->maps, pc);
	return m ? m - p->maps.v : -1;
}

int nsym_locate(struct nsym_ctx *c, const struct target_src *src, int pid, uint64_t pc,
		uint64_t seen_ns, struct nsym_result *out)
{
	const struct proc_map *m;
	struct oc_proc *p;
	struct oc_obj *o;
	long i;

	memset(out, 0, sizeof(*out));
	out->path = "";
	out->build_id = "";
	c->o = NULL;
	c->t = NULL;
	p = pid > 0 && src ? objcache_proc(c->oc, src, pid) : NULL;
	i = p ? map_index(c, p, pc, seen_ns) : -1;
	if (i < 0) {
		c->st.lookups++;
		return finish(c, out, NSYM_NO_MAPPING);
	}
	m = &p->maps.v[i];
	out->maps_gen = p->maps_gen;
	out->map_start = m->start;
	out->map_limit = m->end;
	out->map_offset = m->offset;
	set_path(c, m, out);
	o = objcache_obj(c->oc, p, (size_t)i);
	c->t = o ? table_of(c, o, p, m) : NULL;
	if (!c->t) {
		c->st.lookups++;
		return finish(c, out, NSYM_NO_FILE);
	}
	c->o = o;
	out->build_id = o->build_id_hex;
	out->from_debug_file = c->t->from_debug;
	out->object = o->serial;
	out->file_offset = pc - m->start + m->offset;
	out->status = NSYM_NO_SYMBOL;
	return NSYM_NO_SYMBOL;
}

int nsym_name(struct nsym_ctx *c, struct nsym_result *out)
{
	const struct ns_sym *s;

	if (!c->t || !out->object)
		return out->status;	/* not located: counted there */
	c->st.lookups++;
	if (offset_to_vaddr(c->o, out->file_offset, &out->file_vaddr))
		return finish(c, out, NSYM_NO_SYMBOL);
	s = sym_find(c->t, out->file_vaddr);
	if (!s)
		return finish(c, out, NSYM_NO_SYMBOL);
	out->name = c->t->names + s->name;
	out->sym_vaddr = s->start;
	return finish(c, out, NSYM_OK);
}

int nsym_resolve(struct nsym_ctx *c, const struct target_src *src, int pid, uint64_t pc,
		 uint64_t seen_ns, struct nsym_result *out)
{
	if (nsym_locate(c, src, pid, pc, seen_ns, out) != NSYM_NO_SYMBOL)
		return out->status;
	return nsym_name(c, out);
}

struct nsym_ctx *nsym_ctx_new(struct objcache *oc)
{
	struct nsym_ctx *c;

	if (!oc)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->oc = oc;
	objcache_set_user(oc, OC_SYMS, c, table_free, NULL);
	return c;
}

void nsym_ctx_free(struct nsym_ctx *c)
{
	if (!c)
		return;
	objcache_drop_user(c->oc, OC_SYMS);
	free(c);
}

const struct nsym_stats *nsym_get_stats(const struct nsym_ctx *c)
{
	return &c->st;
}
