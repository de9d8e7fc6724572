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
#include "proc.h"
#include "target_src.h"

#include <elf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define NS_DEF_OBJECTS		256
#define NS_DEF_BYTES		(256u << 20)
#define NS_DEF_PROCS		64
#define NS_MAX_LOADS		16
#define NS_MAX_PHDRS		64
#define NS_MAX_SYMS		(8u << 20)	/* per object, bounds hostile files */
#define NS_NAME_MAX		4096		/* longer names are cut */
#define NS_SIZE0_SPAN		4096	/* reach of a symbol without a size */
#define NS_NEST_SCAN		8	/* earlier symbols tried for nesting */
#define NS_REFRESH_NS		(20ull * 1000 * 1000)
#define NS_VDSO_MAX		(1u << 20)
#define NS_NO_OBJ		UINT64_MAX

struct ns_sym {
	uint64_t start;			/* link-time address */
	uint32_t size;
	uint32_t name;			/* offset into names */
};

struct ns_obj {
	uint64_t serial;		/* 0: free slot */
	uint64_t tick;
	uint64_t dev, ino, size;	/* stat identity; 0 for the vDSO */
	int64_t mtime_ns;
	uint8_t build_id[NSYM_BUILD_ID_MAX];
	size_t build_id_len;
	char build_id_hex[2 * NSYM_BUILD_ID_MAX + 1];
	struct elf_segment load[NS_MAX_LOADS];
	size_t nload;
	struct ns_sym *syms;
	size_t nsyms;
	char *names;
	size_t bytes;			/* what this entry holds, for the budget */
	int from_debug;
};

struct ns_memo {
	uint64_t serial;		/* 0: not resolved; NS_NO_OBJ */
	uint32_t slot;
};

struct ns_proc {
	int pid;			/* 0: free slot */
	const struct target_src *src;
	uint64_t tick;
	struct proc_maps maps;
	struct ns_memo *memo;
	uint64_t read_ns;
};

struct nsym_ctx {
	struct nsym_opts opt;
	struct ns_obj *obj;
	struct ns_proc *proc;
	uint64_t tick, serial;
	struct nsym_stats st;
	char path[PATH_MAX];		/* nsym_result.path */
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

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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

/* ---- per-process maps ------------------------------------------------- */

static void proc_clear(struct ns_proc *p)
{
	proc_maps_free(&p->maps);
	free(p->memo);
	memset(p, 0, sizeof(*p));
}

static int proc_load_maps(struct nsym_ctx *c, struct ns_proc *p)
{
	struct proc_maps m;
	struct ns_memo *memo;

	c->st.maps_reads++;
	p->read_ns = now_ns();
	if (proc_maps_read(p->src, p->pid, &m))
		return -1;
	memo = calloc(m.n ? m.n : 1, sizeof(*memo));
	if (!memo) {
		proc_maps_free(&m);
		return -1;
	}
	proc_maps_free(&p->maps);
	free(p->memo);
	p->maps = m;
	p->memo = memo;
	return 0;
}

static struct ns_proc *proc_get(struct nsym_ctx *c, const struct target_src *src, int pid)
{
	struct ns_proc *p, *victim = &c->proc[0];

	for (size_t i = 0; i < c->opt.max_procs; i++) {
		p = &c->proc[i];
		if (p->pid == pid) {
			c->st.proc_hits++;
			p->tick = ++c->tick;
			return p;
		}
		if (victim->pid && (!p->pid || p->tick < victim->tick))
			victim = p;
	}
	c->st.proc_misses++;
	if (victim->pid) {
		c->st.proc_evictions++;
		proc_clear(victim);
	}
	victim->pid = pid;
	victim->src = src;
	victim->tick = ++c->tick;
	if (proc_load_maps(c, victim)) {
		proc_clear(victim);
		return NULL;
	}
	return victim;
}

/* A miss re-reads the maps (a library loaded since), at most once per
 * NS_REFRESH_NS per process so garbage pcs cannot make every lookup do it. */
static long map_index(struct nsym_ctx *c, struct ns_proc *p, uint64_t pc)
{
	const struct proc_map *m = proc_maps_find(&p->maps, pc);

	if (!m && now_ns() - p->read_ns >= NS_REFRESH_NS && proc_load_maps(c, p) == 0)
		m = proc_maps_find(&p->maps, pc);
	return m ? m - p->maps.v : -1;
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
static int fold_symbols(struct ns_obj *o, struct ns_collect *k)
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

static const struct ns_sym *sym_find(const struct ns_obj *o, uint64_t vaddr)
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

/* ---- object files ----------------------------------------------------- */

static void obj_clear(struct nsym_ctx *c, struct ns_obj *o)
{
	c->st.bytes -= o->bytes;
	c->st.symbols -= o->nsyms;
	free(o->syms);
	free(o->names);
	memset(o, 0, sizeof(*o));
}

static struct ns_obj *obj_lru(struct nsym_ctx *c, const struct ns_obj *keep)
{
	struct ns_obj *victim = NULL;

	for (size_t i = 0; i < c->opt.max_objects; i++) {
		struct ns_obj *o = &c->obj[i];

		if (o->serial && o != keep && (!victim || o->tick < victim->tick))
			victim = o;
	}
	return victim;
}

static struct ns_obj *obj_slot(struct nsym_ctx *c)
{
	struct ns_obj *victim;

	for (size_t i = 0; i < c->opt.max_objects; i++)
		if (!c->obj[i].serial)
			return &c->obj[i];
	victim = obj_lru(c, NULL);
	c->st.obj_evictions++;
	obj_clear(c, victim);
	return victim;
}

/* Keeps the cached tables under max_bytes, oldest first, sparing keep. */
static void obj_trim(struct nsym_ctx *c, const struct ns_obj *keep)
{
	struct ns_obj *victim;

	while (c->st.bytes > c->opt.max_bytes && (victim = obj_lru(c, keep))) {
		c->st.obj_evictions++;
		obj_clear(c, victim);
	}
}

static struct ns_obj *obj_find(struct nsym_ctx *c, const struct stat *st,
			       const uint8_t *id, size_t idlen)
{
	for (size_t i = 0; i < c->opt.max_objects; i++) {
		struct ns_obj *o = &c->obj[i];

		if (!o->serial)
			continue;
		if (st && o->ino == st->st_ino && o->dev == st->st_dev &&
		    o->size == (uint64_t)st->st_size &&
		    o->mtime_ns == st->st_mtim.tv_sec * 1000000000ll + st->st_mtim.tv_nsec)
			return o;
		if (idlen && o->build_id_len == idlen && memcmp(o->build_id, id, idlen) == 0)
			return o;
	}
	return NULL;
}

static struct ns_obj *obj_hit(struct nsym_ctx *c, struct ns_obj *o)
{
	c->st.obj_hits++;
	o->tick = ++c->tick;
	return o;
}

/* Symbols of ef, and of its debug file when ef is stripped. */
static int obj_load_symbols(struct nsym_ctx *c, struct ns_obj *o, struct elf_file *ef,
			    const struct target_src *src, int pid, const char *path)
{
	struct ns_collect k = { 0 };
	struct elf_file *dbg = NULL;
	char root[64];
	int r;

	elf_file_symbols(ef, collect_cb, &k);
	if (path[0] == '/' && !elf_file_has_symtab(ef)) {
		snprintf(root, sizeof(root), "/proc/%d/root", pid);
		dbg = elf_file_open_debug(src, ef, root, path);
		if (!dbg)
			dbg = elf_file_open_debug(src, ef, "", path);
	}
	if (dbg && !k.oom) {
		elf_file_symbols(dbg, collect_cb, &k);
		o->from_debug = 1;
		c->st.debug_files++;
	}
	elf_file_close(dbg);
	r = k.oom ? -1 : fold_symbols(o, &k);
	free(k.v);
	free(k.names);
	return r;
}

static int obj_init(struct nsym_ctx *c, struct ns_obj *o, struct elf_file *ef,
		    const struct target_src *src, int pid, const char *path)
{
	struct elf_segment seg[NS_MAX_PHDRS];
	size_t n = elf_file_segments(ef, seg, NS_MAX_PHDRS);

	for (size_t i = 0; i < n; i++)
		if (seg[i].type == PT_LOAD && o->nload < NS_MAX_LOADS)
			o->load[o->nload++] = seg[i];
	if (!o->nload)
		return -1;
	for (size_t i = 0; i < o->build_id_len; i++)
		snprintf(o->build_id_hex + 2 * i, 3, "%02x", o->build_id[i]);
	return obj_load_symbols(c, o, ef, src, pid, path);
}

static struct elf_file *open_vdso(const struct target_src *src, int pid,
				  const struct proc_map *m)
{
	size_t len = m->end - m->start;
	struct elf_file *ef = NULL;
	void *buf;

	if (len > NS_VDSO_MAX)
		return NULL;
	buf = malloc(len);
	if (buf && target_read(src, pid, m->start, buf, len) == 0)
		ef = elf_file_open_mem(buf, len);
	free(buf);
	return ef;
}

/* Opens the file behind m as the target sees it. Through /proc/PID/root a
 * name may now be another file than the one mapped: refused when the
 * inode differs. map_files always opens the mapped file. */
static struct elf_file *open_mapped(const struct target_src *src, int pid,
				    const struct proc_map *m, struct stat *st,
				    struct nsym_ctx *c, struct ns_obj **hit)
{
	char path[PATH_MAX + 64];

	if (strcmp(m->path, "[vdso]") == 0)
		return open_vdso(src, pid, m);
	target_map_file(src, pid, m, path, sizeof(path));
	if (stat(path, st) || !S_ISREG(st->st_mode) ||
	    (!strstr(path, "/map_files/") && st->st_ino != m->inode))
		return NULL;
	*hit = obj_find(c, st, NULL, 0);
	return *hit ? NULL : target_open_elf(src, path);
}

/* Finds or loads the symbols of the object behind m: keyed by the file's
 * stat identity, then by build-id (the same file in another namespace). */
static struct ns_obj *obj_resolve(struct nsym_ctx *c, const struct target_src *src, int pid,
				  const struct proc_map *m,
				  const char *path)
{
	struct stat st = { 0 };
	struct ns_obj *o = NULL;
	uint8_t id[NSYM_BUILD_ID_MAX];
	struct elf_file *ef = open_mapped(src, pid, m, &st, c, &o);
	size_t idlen = 0;

	if (o)
		return obj_hit(c, o);
	if (!ef)
		goto fail;
	if (elf_file_build_id(ef, id, sizeof(id), &idlen))
		idlen = 0;
	o = idlen ? obj_find(c, NULL, id, idlen) : NULL;
	if (o) {
		elf_file_close(ef);
		return obj_hit(c, o);
	}
	o = obj_slot(c);
	memcpy(o->build_id, id, idlen);
	o->build_id_len = idlen;
	if ((!st.st_ino && !idlen) || obj_init(c, o, ef, src, pid, path)) {
		elf_file_close(ef);
		obj_clear(c, o);
		goto fail;
	}
	elf_file_close(ef);
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	o->size = (uint64_t)st.st_size;
	o->mtime_ns = st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
	o->serial = ++c->serial;
	o->tick = ++c->tick;
	c->st.obj_misses++;
	c->st.bytes += o->bytes;
	c->st.symbols += o->nsyms;
	obj_trim(c, o);
	return o;
fail:
	c->st.obj_failures++;
	return NULL;
}

static struct ns_obj *obj_for_map(struct nsym_ctx *c, struct ns_proc *p, size_t i,
				  const char *path)
{
	struct ns_memo *mm = &p->memo[i];
	const struct proc_map *m = &p->maps.v[i];
	struct ns_obj *o;

	if (mm->serial == NS_NO_OBJ)
		return NULL;
	if (mm->serial) {
		o = &c->obj[mm->slot];
		if (o->serial == mm->serial) {
			o->tick = ++c->tick;
			return o;
		}
	}
	o = (m->path[0] == '/' || strcmp(m->path, "[vdso]") == 0) ?
		obj_resolve(c, p->src, p->pid, m, path) : NULL;
	mm->serial = o ? o->serial : NS_NO_OBJ;
	mm->slot = o ? (uint32_t)(o - c->obj) : 0;
	return o;
}

static int offset_to_vaddr(const struct ns_obj *o, uint64_t off, uint64_t *vaddr)
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

int nsym_resolve(struct nsym_ctx *c, const struct target_src *src, int pid, uint64_t pc,
		 struct nsym_result *out)
{
	const struct ns_sym *s;
	const struct proc_map *m;
	struct ns_proc *p;
	struct ns_obj *o;
	long i;

	memset(out, 0, sizeof(*out));
	out->path = "";
	out->build_id = "";
	c->st.lookups++;
	p = pid > 0 && src ? proc_get(c, src, pid) : NULL;
	i = p ? map_index(c, p, pc) : -1;
	if (i < 0)
		return finish(c, out, NSYM_NO_MAPPING);
	m = &p->maps.v[i];
	out->map_start = m->start;
	out->map_limit = m->end;
	out->map_offset = m->offset;
	set_path(c, m, out);
	o = obj_for_map(c, p, (size_t)i, c->path);
	if (!o)
		return finish(c, out, NSYM_NO_FILE);
	out->build_id = o->build_id_hex;
	out->from_debug_file = o->from_debug;
	if (offset_to_vaddr(o, pc - m->start + m->offset, &out->file_vaddr))
		return finish(c, out, NSYM_NO_SYMBOL);
	s = sym_find(o, out->file_vaddr);
	if (!s)
		return finish(c, out, NSYM_NO_SYMBOL);
	out->name = o->names + s->name;
	out->sym_vaddr = s->start;
	return finish(c, out, NSYM_OK);
}

struct nsym_ctx *nsym_ctx_new(const struct nsym_opts *opts)
{
	struct nsym_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (opts)
		c->opt = *opts;
	if (!c->opt.max_objects)
		c->opt.max_objects = NS_DEF_OBJECTS;
	if (!c->opt.max_bytes)
		c->opt.max_bytes = NS_DEF_BYTES;
	if (!c->opt.max_procs)
		c->opt.max_procs = NS_DEF_PROCS;
	c->obj = calloc(c->opt.max_objects, sizeof(*c->obj));
	c->proc = calloc(c->opt.max_procs, sizeof(*c->proc));
	if (!c->obj || !c->proc) {
		nsym_ctx_free(c);
		return NULL;
	}
	return c;
}

void nsym_ctx_free(struct nsym_ctx *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->proc && i < c->opt.max_procs; i++)
		proc_clear(&c->proc[i]);
	for (size_t i = 0; c->obj && i < c->opt.max_objects; i++)
		obj_clear(c, &c->obj[i]);
	free(c->proc);
	free(c->obj);
	free(c);
}

void nsym_forget_pid(struct nsym_ctx *c, int pid)
{
	for (size_t i = 0; i < c->opt.max_procs; i++)
		if (c->proc[i].pid == pid && pid)
			proc_clear(&c->proc[i]);
}

const struct nsym_stats *nsym_get_stats(const struct nsym_ctx *c)
{
	return &c->st;
}
