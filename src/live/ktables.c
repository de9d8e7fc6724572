/*
 * Loading unwind tables into the BPF maps (ktables.h). The object
 * registry is a plain array indexed by object id (the BPF side indexes
 * "unwind_objs" with the same id); lookups are linear, which is fine for
 * the few hundred objects a host's Python processes map and happens only
 * when a process's mappings are (re)loaded, never per sample.
 */
#define _GNU_SOURCE
#include "ktables.h"

#include "elffile.h"
#include "objcache.h"
#include "proc.h"
#include "pyperf.h"
#include "target_src.h"
#include "trampoline.h"
#include "unwind_table.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#define KT_RELOAD_NS	(20ull * 1000 * 1000)	/* per process, at most */
#define KT_PIDS		4096			/* reload throttle slots */
#define KT_SEGS		16
#define KT_VDSO_INO	UINT64_MAX		/* the vDSO's key: no file */
#define KT_ANON_INO	(UINT64_MAX - 1)	/* anonymous code: dev is the pid */
#define KT_ANON_MAX	(4u << 20)		/* anonymous code bytes scanned */

struct kt_obj {
	int used;
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	uint32_t first, count;
	struct elf_segment seg[KT_SEGS];	/* PT_LOAD, for load biases */
	size_t nseg;
};

struct kt_pid {
	pid_t pid;
	uint64_t last_ns;
};

struct ktables {
	int rows_fd, objs_fd, procs_fd, pages_fd;
	uint32_t max_rows, next_row;
	uint32_t next_page;
	uint32_t gen;				/* last py_unwind_proc.gen given */
	struct objcache *oc;			/* where object files are opened */
	struct kt_obj obj[PY_UNWIND_MAX_OBJS];	/* [0] unused: id 0 = none */
	uint32_t top;				/* ids in use are below this: the
						 * scans stop there (each entry is
						 * ~700 bytes: a scan of all 4096
						 * at every exit was 1 % of a
						 * churning host's profiler) */
	uint32_t nanon;				/* anonymous code objects in use */
	struct kt_pid pids[KT_PIDS];
	struct ktables_stats st;
	struct py_unwind_proc proc;		/* scratch: one process's list */
};

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

struct ktables *ktables_new(int rows_fd, int objs_fd, int procs_fd, int pages_fd,
			    uint32_t max_rows, struct objcache *oc)
{
	struct ktables *kt = calloc(1, sizeof(*kt));

	if (!kt)
		return NULL;
	kt->oc = oc;
	kt->top = 1;
	kt->rows_fd = rows_fd;
	kt->objs_fd = objs_fd;
	kt->procs_fd = procs_fd;
	kt->pages_fd = pages_fd;
	kt->max_rows = max_rows;
	return kt;
}

void ktables_free(struct ktables *kt)
{
	free(kt);
}

const struct ktables_stats *ktables_get_stats(const struct ktables *kt)
{
	return &kt->st;
}

/* Everything dropped: the next walk of every process finds no mappings
 * (a marked sample) and triggers its reload. */
static void reset_all(struct ktables *kt)
{
	__u32 key, next;

	memset(kt->obj, 0, kt->top * sizeof(kt->obj[0]));
	kt->top = 1;
	kt->nanon = 0;
	memset(kt->pids, 0, sizeof(kt->pids));
	kt->next_row = 0;
	kt->next_page = 0;
	kt->st.rows = 0;
	kt->st.resets++;
	while (bpf_map_get_next_key(kt->procs_fd, NULL, &next) == 0) {
		key = next;
		if (bpf_map_delete_elem(kt->procs_fd, &key))
			break;
	}
}

/* Writes v[0..n) to a BPF array from index first: one batch, or one
 * update per element on kernels without batch operations. */
static int upload(int fd, const void *v, size_t size, size_t n, uint32_t first)
{
	__u32 *keys, count = (__u32)n;
	int rc = 0;

	if (n == 0)
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return -1;
	for (size_t i = 0; i < n; i++)
		keys[i] = first + (uint32_t)i;
	if (bpf_map_update_batch(fd, keys, v, &count, NULL))
		for (size_t i = 0; i < n && !rc; i++)
			rc = bpf_map_update_elem(fd, &keys[i], (const char *)v + i * size, BPF_ANY);
	free(keys);
	return rc;
}

/* The page index of a table whose rows go to index first (bpf/pyperf.h):
 * per page from the first row's, the row covering the page's start. */
static int upload_pages(struct ktables *kt, const struct ut_table *t, uint32_t first,
			struct py_unwind_obj *bo)
{
	uint32_t base = (uint32_t)(t->rows[0].start >> PY_UNWIND_PAGE_SHIFT);
	uint32_t n = (uint32_t)(t->rows[t->n - 1].start >> PY_UNWIND_PAGE_SHIFT) - base + 1;
	__u32 *pg;
	size_t j = 0;
	int rc;

	if (kt->next_page + n > PY_UNWIND_MAX_PAGES)
		return 1;
	pg = malloc(n * sizeof(*pg));
	if (!pg)
		return -1;
	for (uint32_t k = 0; k < n; k++) {
		uint64_t start = (uint64_t)(base + k) << PY_UNWIND_PAGE_SHIFT;

		while (j + 1 < t->n && t->rows[j + 1].start <= start)
			j++;
		pg[k] = first + (uint32_t)j;
	}
	rc = upload(kt->pages_fd, pg, sizeof(*pg), n, kt->next_page);
	free(pg);
	if (rc)
		return -1;
	bo->page_first = kt->next_page;
	bo->page_count = n;
	bo->page_base = base;
	kt->next_page += n;
	return 0;
}

/* Writes rows [first, first + n) of the BPF array. */
static int upload_rows(struct ktables *kt, const struct ut_table *t, uint32_t first)
{
	struct py_unwind_row *v = malloc(t->n * sizeof(*v));
	int rc;

	if (!v)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		const struct ut_row *r = &t->rows[i];

		v[i] = (struct py_unwind_row){ .pc = (__u32)r->start, .cfa_off = r->cfa_off,
			.rbp_off = r->rbp_off, .kind = (__u8)(r->cfa | r->rbp << 4),
			.plt_thr = r->plt_thr };
	}
	rc = upload(kt->rows_fd, v, sizeof(*v), t->n, first);
	free(v);
	return rc;
}

/* Uploads one object's table (t->n may be 0: frame pointers) under a new
 * id; key carries its identity and load segments. Its id, 0 if none. */
static uint32_t add_table(struct ktables *kt, struct ut_table *t, const struct kt_obj *key)
{
	struct py_unwind_obj bo = { 0 };
	uint32_t id = 0;
	struct kt_obj *o;

	for (uint32_t i = 1; i < PY_UNWIND_MAX_OBJS && !id; i++)
		if (!kt->obj[i].used)
			id = i;
	if (!id) {
		reset_all(kt);
		id = 1;
	}
	/* Rows address 32 bits of link-time address: bigger objects unwind
	 * by frame pointers, as do objects without CFI. */
	if (t->n && t->rows[t->n - 1].start > UINT32_MAX)
		t->n = 0;
	if (t->n && (kt->next_row + t->n > kt->max_rows ||
		     kt->next_page + ((t->rows[t->n - 1].start - t->rows[0].start) >>
				      PY_UNWIND_PAGE_SHIFT) + 2 > PY_UNWIND_MAX_PAGES))
		reset_all(kt);	/* the builders keep t->n <= max_rows */
	o = &kt->obj[id];
	*o = *key;
	o->used = 1;
	kt->nanon += key->ino == KT_ANON_INO;
	if (id >= kt->top)
		kt->top = id + 1;
	if (t->n && t->n <= kt->max_rows && upload_rows(kt, t, kt->next_row) == 0 &&
	    upload_pages(kt, t, kt->next_row, &bo) == 0) {
		bo.first = kt->next_row;
		bo.count = (__u32)t->n;
		kt->next_row += (uint32_t)t->n;
		kt->st.rows = kt->next_row;
	} else {
		kt->st.objects_no_cfi++;
	}
	o->first = bo.first;
	o->count = bo.count;
	if (bpf_map_update_elem(kt->objs_fd, &id, &bo, BPF_ANY))
		o->count = 0;
	kt->st.objects++;
	return id;
}

/* Converts and uploads one ELF object's table; its id, 0 if it has none. */
static uint32_t add_object(struct ktables *kt, struct elf_file *ef, const struct kt_obj *key)
{
	struct kt_obj k = *key;
	struct ut_table t;
	uint64_t t0 = mono_ns();
	uint32_t id;

	if (ut_build_elf(ef, kt->max_rows, &t)) {
		kt->st.objects_failed++;
		return 0;
	}
	kt->st.build_ns += mono_ns() - t0;
	k.nseg = elf_file_segments(ef, k.seg, KT_SEGS);
	id = add_table(kt, &t, &k);
	ut_table_free(&t);
	return id;
}

/* An anonymous executable mapping: JIT code, which unwinds by frame
 * pointers (object 0), unless it holds copies of the target's perf
 * trampoline template (tramp; some shapes keep no frame pointer), whose
 * rows are synthesised from the template's rules. CPython fills a
 * trampoline arena before it makes it executable, so what is read here
 * stays valid. */
static uint32_t anon_object(struct ktables *kt, const struct target_src *src, pid_t pid,
			    const struct tramp_shape *tramp, const struct proc_map *m)
{
	struct kt_obj key = { .dev = (uint64_t)pid, .ino = KT_ANON_INO,
			      .size = m->end - m->start, .mtime_ns = (int64_t)m->start };
	struct ut_table t;
	uint8_t *code;
	uint32_t id;

	if (key.size > KT_ANON_MAX)
		return 0;
	if (!tramp || tramp->status != TRAMP_OK) {
		/* 3.11 and older have none; 3.12+ without one: say so */
		if (tramp && tramp->status != TRAMP_NONE)
			kt->st.anon_no_template++;
		return 0;
	}
	for (uint32_t i = 1; i < kt->top; i++) {
		const struct kt_obj *o = &kt->obj[i];

		if (o->used && o->dev == key.dev && o->ino == key.ino && o->size == key.size &&
		    o->mtime_ns == key.mtime_ns)
			return o->count ? i : 0;
	}
	code = malloc(key.size);
	if (!code)
		return 0;
	if (target_read(src, pid, m->start, code, key.size) ||
	    tramp_build_table(tramp, code, key.size, kt->max_rows, &t)) {
		free(code);
		return 0;
	}
	free(code);
	/* Addresses relative to the mapping: the bias is its start. */
	key.seg[0] = (struct elf_segment){ .type = 1 /* PT_LOAD */, .offset = m->offset,
					   .filesz = key.size };
	key.nseg = 1;
	id = add_table(kt, &t, &key);
	if (t.n)
		kt->st.anon_tables++;
	ut_table_free(&t);
	return id && kt->obj[id].count ? id : 0;
}

/* The object behind executable mapping i of p (loading its table if
 * new), 0 if none. Files are the object layer's entries, found through
 * the maps entry's memo: the symbolizer and the probe resolve the same
 * mapping once between them, and a file seen under another path with the
 * same build-id shares its table. */
static uint32_t object_of(struct ktables *kt, struct oc_proc *p, size_t i,
			  const struct tramp_shape *tramp)
{
	const struct proc_map *m = &p->maps.v[i];
	struct kt_obj key = { 0 };
	struct oc_obj *oo = NULL;

	if (strcmp(m->path, "[vdso]") == 0) {
		/* Keyed by its size: read from the target only when new. */
		key.ino = KT_VDSO_INO;
		key.size = m->end - m->start;
	} else if (m->path[0] != '/') {
		/* "[anon:NAME]": named by prctl (CPython 3.15 names its
		 * arena "cpython:perf_trampoline" in -X dev mode) */
		return m->path[0] && strncmp(m->path, "[anon:", 6) ? 0 :
		       anon_object(kt, p->src, p->pid, tramp, m);
	} else {
		oo = objcache_obj(kt->oc, p, i);
		if (!oo)
			return 0;	/* not a regular file, or not ELF */
		key.dev = oo->dev;
		key.ino = oo->ino;
		key.size = oo->size;
		key.mtime_ns = oo->mtime_ns;
	}
	for (uint32_t k = 1; k < kt->top; k++) {
		const struct kt_obj *o = &kt->obj[k];

		if (o->used && o->dev == key.dev && o->ino == key.ino && o->size == key.size &&
		    o->mtime_ns == key.mtime_ns)
			return k;
	}
	if (!oo)
		oo = objcache_obj(kt->oc, p, i);
	if (!oo) {
		kt->st.objects_failed++;
		return 0;
	}
	return add_object(kt, oo->ef, &key);
}

/* runtime - link-time address for mapping m of object o. */
static int mapping_bias(const struct kt_obj *o, const struct proc_map *m, uint64_t *bias)
{
	for (size_t i = 0; i < o->nseg; i++) {
		const struct elf_segment *g = &o->seg[i];

		if (g->type == 1 /* PT_LOAD */ && m->offset >= g->offset &&
		    m->offset < g->offset + g->filesz) {
			*bias = m->start - (g->vaddr + (m->offset - g->offset));
			return 0;
		}
	}
	return -1;
}

static struct kt_pid *pid_slot(struct ktables *kt, pid_t pid)
{
	return &kt->pids[(uint32_t)pid % KT_PIDS];
}

/* Fills kt->proc from the process's maps. 1 if the tables were reset on
 * the way (the entries made before point to dropped objects). */
static int fill_proc(struct ktables *kt, struct oc_proc *op, const struct tramp_shape *tramp)
{
	struct py_unwind_proc *p = &kt->proc;
	const struct proc_maps *maps = &op->maps;
	uint64_t t0 = kt->st.resets;

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		struct py_unwind_map *um;
		uint64_t bias;
		uint32_t id;

		if (m->perms[2] != 'x')
			continue;
		if (p->n >= PY_UNWIND_MAX_MAPS) {
			kt->st.maps_dropped++;
			continue;
		}
		id = object_of(kt, op, i, tramp);
		if (kt->st.resets != t0)
			return 1;
		um = &p->m[p->n++];
		um->start = m->start;
		um->end = m->end;
		um->obj = id;
		if (id && mapping_bias(&kt->obj[id], m, &bias) == 0)
			um->bias = bias;
		else
			um->obj = 0;	/* offset in no segment: frame pointers */
		if (um->obj && kt->obj[id].ino == KT_ANON_INO)
			um->flags = PY_MAP_TRAMPOLINE;
	}
	return 0;
}

int ktables_load_pid(struct ktables *kt, const struct target_src *src, pid_t pid,
		     const struct tramp_shape *tramp, uint64_t now_ns, uint64_t seen_ns)
{
	struct kt_pid *slot = pid_slot(kt, pid);
	__u32 key = (__u32)pid;
	struct oc_proc *op;
	int reset;

	if (seen_ns != KT_FORCE && slot->pid == pid &&
	    !oc_reread_due(slot->last_ns, seen_ns, now_ns, KT_RELOAD_NS)) {
		kt->st.pid_throttled++;
		return 0;
	}
	/* The object layer's view of the maps: a new target's was read by
	 * the probe a moment ago, and serves unless KT_RELOAD_NS old. */
	op = objcache_proc(kt->oc, src, pid);
	if (!op)
		return -1;
	objcache_refresh(kt->oc, op, seen_ns == KT_FORCE ? 0 : seen_ns);
	/* After a reset the process's objects are loaded first; a second
	 * reset means they alone do not fit. */
	reset = fill_proc(kt, op, tramp) && fill_proc(kt, op, tramp);
	slot = pid_slot(kt, pid);	/* a reset cleared the slots */
	slot->pid = pid;
	slot->last_ns = op->read_ns;
	if (reset) {
		fprintf(stderr, "pyperf-pprof: the unwind tables of pid %d do not fit in %u rows; its native stacks stay marked incomplete\n",
			(int)pid, kt->max_rows);
		return -1;
	}
	kt->st.pid_loads++;
	/* A new tag for the rules BPF caches from this list: never 0, and
	 * 2^32 loads before one repeats. */
	if (++kt->gen == 0)
		kt->gen = 1;
	kt->proc.gen = kt->gen;
	if (bpf_map_update_elem(kt->procs_fd, &key, &kt->proc, BPF_ANY)) {
		fprintf(stderr, "pyperf-pprof: cannot load the unwind mappings of pid %d: %s\n",
			(int)pid, strerror(errno));
		return -1;
	}
	return 0;
}

int ktables_copy_pid(struct ktables *kt, pid_t from, pid_t to, uint64_t now_ns)
{
	const struct kt_pid *src = pid_slot(kt, from);
	struct kt_pid *dst;
	__u32 kfrom = (__u32)from, kto = (__u32)to;

	if (bpf_map_lookup_elem(kt->procs_fd, &kfrom, &kt->proc) || kt->proc.n > PY_UNWIND_MAX_MAPS)
		return -1;
	/* Anonymous code's rows are the parent's (keyed by its pid) and go
	 * when it exits: the child's own are loaded instead. */
	for (__u32 i = 0; i < kt->proc.n; i++)
		if (kt->proc.m[i].flags & PY_MAP_TRAMPOLINE)
			return -1;
	if (++kt->gen == 0)
		kt->gen = 1;
	kt->proc.gen = kt->gen;
	if (bpf_map_update_elem(kt->procs_fd, &kto, &kt->proc, BPF_ANY))
		return -1;
	dst = pid_slot(kt, to);
	dst->pid = to;
	/* As old as the parent's view: a miss since is loaded at once. */
	dst->last_ns = src->pid == from ? src->last_ns : now_ns - KT_RELOAD_NS;
	kt->st.pid_copies++;
	return 0;
}

void ktables_forget_pid(struct ktables *kt, pid_t pid, int bpf_gone)
{
	__u32 key = (__u32)pid;
	struct kt_pid *slot = pid_slot(kt, pid);

	if (slot->pid == pid)
		memset(slot, 0, sizeof(*slot));
	if (!bpf_gone)
		bpf_map_delete_elem(kt->procs_fd, &key);
	/* Its anonymous code goes with it (a later process with this pid
	 * could map other code there); the rows stay until the next reset. */
	for (uint32_t i = 1; kt->nanon && i < kt->top; i++)
		if (kt->obj[i].used && kt->obj[i].ino == KT_ANON_INO &&
		    kt->obj[i].dev == (uint64_t)pid) {
			memset(&kt->obj[i], 0, sizeof(kt->obj[i]));
			kt->nanon--;
		}
}
