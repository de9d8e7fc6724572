/*
 * Native unwinding of a copied user stack with libunwind's remote API.
 *
 * libunwind asks us, through unw_accessors_t, for registers (the copied
 * ones), memory and the unwind table covering an ip. Memory comes from the
 * copied stack, else from our read-only mapping of the object file when the
 * target maps that file read-only (its bytes are the file's), else from the
 * live target with process_vm_readv, a bounded number of times per stack.
 *
 * Unwind tables: an object's .eh_frame_hdr is searched in place at its
 * runtime address (the reads land in our copy of the file). Code covered
 * only by .debug_frame (in the file or its separate debug file) gets a
 * table we build: the .debug_frame records rewritten in .eh_frame form, at
 * a synthetic address above the user address space that only our
 * access_mem serves.
 */
#define _GNU_SOURCE
#include "unwind.h"

#include "elffile.h"
#include "proc.h"
#include "target_src.h"

#include <elf.h>
#include <libunwind.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Exported by libunwind-generic but declared in no installed header. */
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)
extern int dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
				     unw_dyn_info_t *di, unw_proc_info_t *pi,
				     int need_unwind_info, void *arg);

#define UW_DEF_OBJECTS		256
#define UW_DEF_PROCS		64
#define UW_MAX_OBJECTS		4096	/* synthetic address space holds this many */
#define UW_MAX_LOADS		16	/* PT_LOAD segments kept per object */
#define UW_MAX_PHDRS		64
#define UW_BUILD_ID_MAX		64
#define UW_REFRESH_NS		(20ull * 1000 * 1000)	/* maps re-read at most 50/s */
#define UW_TARGET_READS		256	/* live-target page reads per stack */
#define UW_FP_MAX_FRAME		(256u << 10)	/* rbp - rsp of a plausible frame */
#define UW_VDSO_MAX		(1u << 20)
#define UW_DF_MAX		(64u << 20)	/* .debug_frame bytes indexed, at most */
#define UW_PAGE			4096ull
#define UW_NO_OBJ		UINT64_MAX	/* memo: mapping has no usable object */

/* Object slot k's built table lives at UW_SYNTH_BASE + (k << UW_SYNTH_SHIFT):
 * above 0x0000800000000000, so it is never an address of the target. */
#define UW_SYNTH_BASE		0xffff900000000000ull
#define UW_SYNTH_SHIFT		32

/* DWARF pointer encodings (DW_EH_PE_*) */
#define PE_ABSPTR	0x00
#define PE_UDATA2	0x02
#define PE_UDATA4	0x03
#define PE_UDATA8	0x04
#define PE_SDATA2	0x0a
#define PE_SDATA4	0x0b
#define PE_SDATA8	0x0c
#define PE_DATAREL	0x30

struct uw_obj {
	uint64_t serial;		/* 0: free slot */
	uint64_t tick;			/* last use, for LRU eviction */
	uint64_t dev, ino, size;	/* stat identity of the file ... */
	int64_t mtime_ns;		/* ... all 0 for the vDSO */
	uint8_t build_id[UW_BUILD_ID_MAX];
	size_t build_id_len;
	struct elf_file *ef;		/* whole file, mapped read-only */
	struct elf_segment load[UW_MAX_LOADS];
	size_t nload;
	uint64_t relro_lo, relro_hi;	/* link-time; relocated, not file bytes */
	int has_hdr;			/* .eh_frame_hdr with a search table */
	uint64_t hdr_vaddr, table_vaddr, fde_count;
	int df_state;			/* .debug_frame: 0 untried, 1 ready, -1 none */
	uint8_t *df;			/* [table][records in .eh_frame form] */
	size_t df_len;
	uint64_t df_lo, df_hi, df_count;	/* link-time range, entries */
};

struct uw_memo {
	uint64_t serial;		/* 0: not resolved yet; UW_NO_OBJ */
	uint32_t slot;
};

struct uw_proc {
	int pid;			/* 0: free slot */
	const struct target_src *src;	/* where its maps, memory, files are read */
	uint64_t tick;
	struct proc_maps maps;
	struct uw_memo *memo;		/* one per maps entry */
	unw_addr_space_t as;		/* per process: libunwind caches by ip */
	uint64_t read_ns;		/* when the maps were read */
	int need_flush;			/* maps changed: flush libunwind's cache */
};

/* State of one unwind_stack() call; libunwind's accessor argument. */
struct uw_call {
	struct unwind_ctx *u;
	struct uw_proc *p;
	const struct unwind_input *in;
	uint64_t regs[UNWIND_REG_COUNT];	/* where libunwind (re)starts */
	int refreshed;			/* maps re-read during this stack */
	int noinfo;			/* find_proc_info found no CFI */
	unsigned target_reads;
	uint64_t rlo, rhi;		/* last file-backed region served ... */
	const uint8_t *rbase;		/* ... our copy of its bytes */
	uint64_t page_addr;		/* last target page read (0: none) */
	uint8_t page[UW_PAGE];		/* last: not cleared per call */
};

struct unwind_ctx {
	struct unwind_opts opt;
	struct uw_obj *obj;
	struct uw_proc *proc;
	uint64_t tick, serial;
	unw_accessors_t acc;
	struct unwind_stats st;
	struct uw_call *call;		/* reused: holds a page, too big for a stack */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int is_vdso(const struct proc_map *m)
{
	return strcmp(m->path, "[vdso]") == 0;
}

static int file_backed(const struct proc_map *m)
{
	return m->path[0] == '/' || is_vdso(m);
}

/* ---- per-process state ------------------------------------------------ */

static void proc_clear(struct uw_proc *p)
{
	proc_maps_free(&p->maps);
	free(p->memo);
	if (p->as)
		unw_destroy_addr_space(p->as);
	memset(p, 0, sizeof(*p));
}

/* (Re)reads the maps; keeps the old ones if that fails. */
static int proc_load_maps(struct unwind_ctx *u, struct uw_proc *p)
{
	struct proc_maps m;
	struct uw_memo *memo;

	u->st.maps_reads++;
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
	/* Cached register rules are keyed by ip only: a new library at an
	 * old address must not reuse them. Flushed before the next stack. */
	p->need_flush = 1;
	return 0;
}

static struct uw_proc *proc_get(struct unwind_ctx *u, const struct target_src *src, int pid)
{
	struct uw_proc *p, *victim = &u->proc[0];

	for (size_t i = 0; i < u->opt.max_procs; i++) {
		p = &u->proc[i];
		if (p->pid == pid) {
			u->st.proc_hits++;
			p->tick = ++u->tick;
			return p;
		}
		if (victim->pid && (!p->pid || p->tick < victim->tick))
			victim = p;
	}
	u->st.proc_misses++;
	if (victim->pid) {
		u->st.proc_evictions++;
		proc_clear(victim);
	}
	p = victim;
	p->pid = pid;
	p->src = src;
	p->tick = ++u->tick;
	p->as = unw_create_addr_space(&u->acc, 0);
	if (!p->as || proc_load_maps(u, p)) {
		proc_clear(p);
		return NULL;
	}
	unw_set_caching_policy(p->as, UNW_CACHE_GLOBAL);
	return p;
}

/* An address missed the maps: a library may have been loaded since. At
 * most once per stack and per UW_REFRESH_NS, so garbage addresses cannot
 * make every sample re-read /proc/PID/maps. */
static int maps_refresh(struct uw_call *c)
{
	if (c->refreshed || now_ns() - c->p->read_ns < UW_REFRESH_NS)
		return -1;
	c->refreshed = 1;
	c->rlo = c->rhi = 0;
	return proc_load_maps(c->u, c->p);
}

static long map_index(struct uw_call *c, uint64_t addr, int refresh)
{
	const struct proc_map *m = proc_maps_find(&c->p->maps, addr);

	if (!m && refresh && maps_refresh(c) == 0)
		m = proc_maps_find(&c->p->maps, addr);
	return m ? m - c->p->maps.v : -1;
}

/* ---- object files ----------------------------------------------------- */

static void obj_clear(struct uw_obj *o)
{
	elf_file_close(o->ef);
	free(o->df);
	memset(o, 0, sizeof(*o));
}

/* A free slot, else the least recently used one, emptied. */
static struct uw_obj *obj_slot(struct uw_call *c)
{
	struct unwind_ctx *u = c->u;
	struct uw_obj *victim = &u->obj[0];

	for (size_t i = 0; i < u->opt.max_objects; i++) {
		struct uw_obj *o = &u->obj[i];

		if (!o->serial)
			return o;
		if (o->tick < victim->tick)
			victim = o;
	}
	u->st.obj_evictions++;
	obj_clear(victim);
	/* The region cache may point into the evicted image. */
	c->rlo = c->rhi = 0;
	return victim;
}

static struct uw_obj *obj_hit(struct unwind_ctx *u, struct uw_obj *o)
{
	u->st.obj_hits++;
	o->tick = ++u->tick;
	return o;
}

static struct uw_obj *obj_find(struct unwind_ctx *u, const struct stat *st,
			       const uint8_t *id, size_t idlen)
{
	for (size_t i = 0; i < u->opt.max_objects; i++) {
		struct uw_obj *o = &u->obj[i];

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

static size_t enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		return 8;
	case PE_UDATA4:
	case PE_SDATA4:
		return 4;
	case PE_UDATA2:
	case PE_SDATA2:
		return 2;
	}
	return 0;
}

/* Reads where .eh_frame_hdr's search table is. libunwind searches it
 * itself through access_mem, so only its place and length are kept. */
static void parse_eh_frame_hdr(struct uw_obj *o, const struct elf_segment *s)
{
	const uint8_t *h = elf_file_data(o->ef, s->offset, s->filesz);
	size_t pos = 4, len1, len2;
	uint64_t count = 0;

	if (!h || s->filesz < 4 || h[0] != 1 || h[3] != (PE_DATAREL | PE_SDATA4) ||
	    (h[2] & 0x70))
		return;
	len1 = enc_size(h[1]);
	len2 = enc_size(h[2]);
	if (!len1 || !len2 || pos + len1 + len2 > s->filesz)
		return;
	pos += len1;
	memcpy(&count, h + pos, len2);	/* little-endian, unsigned or >= 0 */
	if (len2 == 2)
		count &= 0xffff;
	else if (len2 == 4)
		count &= 0xffffffff;
	pos += len2;
	if (!count || count > (s->filesz - pos) / 8)
		return;
	o->has_hdr = 1;
	o->hdr_vaddr = s->vaddr;
	o->table_vaddr = s->vaddr + pos;
	o->fde_count = count;
}

static int obj_init(struct uw_obj *o, struct elf_file *ef)
{
	struct elf_segment seg[UW_MAX_PHDRS];
	size_t n = elf_file_segments(ef, seg, UW_MAX_PHDRS);

	o->ef = ef;
	for (size_t i = 0; i < n; i++) {
		if (seg[i].type == PT_LOAD && o->nload < UW_MAX_LOADS) {
			o->load[o->nload++] = seg[i];
		} else if (seg[i].type == PT_GNU_RELRO) {
			o->relro_lo = seg[i].vaddr;
			o->relro_hi = seg[i].vaddr + seg[i].memsz;
		} else if (seg[i].type == PT_GNU_EH_FRAME) {
			parse_eh_frame_hdr(o, &seg[i]);
		}
	}
	return o->nload ? 0 : -1;
}

static struct elf_file *open_vdso(const struct target_src *src, int pid,
				  const struct proc_map *m)
{
	size_t len = m->end - m->start;
	struct elf_file *ef = NULL;
	void *buf;

	if (len > UW_VDSO_MAX)
		return NULL;
	buf = malloc(len);
	if (buf && target_read(src, pid, m->start, buf, len) == 0)
		ef = elf_file_open_mem(buf, len);
	free(buf);
	return ef;
}

/* The file behind m, as the target sees it. Through /proc/PID/root the name
 * may now be another file than the one mapped (replaced on disk): refused
 * when the inode differs. map_files always opens the mapped file. */
static int stat_mapped(const struct target_src *src, int pid, const struct proc_map *m,
		       char *path, size_t len, struct stat *st)
{
	target_map_file(src, pid, m, path, len);
	if (stat(path, st) || !S_ISREG(st->st_mode))
		return -1;
	if (!strstr(path, "/map_files/") && st->st_ino != m->inode)
		return -1;
	return 0;
}

static void obj_set_identity(struct uw_obj *o, const struct stat *st,
			     const uint8_t *id, size_t idlen)
{
	if (st) {
		o->dev = st->st_dev;
		o->ino = st->st_ino;
		o->size = (uint64_t)st->st_size;
		o->mtime_ns = st->st_mtim.tv_sec * 1000000000ll + st->st_mtim.tv_nsec;
	}
	memcpy(o->build_id, id, idlen);
	o->build_id_len = idlen;
}

/* Finds or loads the object file behind mapping m. Keyed by the file's
 * stat identity, then by build-id, so the same library seen through
 * another mount namespace or path is loaded once. */
static struct uw_obj *obj_resolve(struct uw_call *c, const struct proc_map *m)
{
	struct unwind_ctx *u = c->u;
	char path[PATH_MAX + 64];
	uint8_t id[UW_BUILD_ID_MAX];
	struct stat st, *stp = NULL;
	struct elf_file *ef;
	struct uw_obj *o;
	size_t idlen = 0;

	if (is_vdso(m)) {
		ef = open_vdso(c->p->src, c->p->pid, m);
	} else {
		if (stat_mapped(c->p->src, c->p->pid, m, path, sizeof(path), &st))
			goto fail;
		stp = &st;
		o = obj_find(u, stp, NULL, 0);
		if (o)
			return obj_hit(u, o);
		ef = target_open_elf(c->p->src, path);
	}
	if (!ef)
		goto fail;
	if (elf_file_build_id(ef, id, sizeof(id), &idlen))
		idlen = 0;
	o = idlen ? obj_find(u, NULL, id, idlen) : NULL;
	if (o) {
		elf_file_close(ef);
		return obj_hit(u, o);
	}
	o = obj_slot(c);
	if ((!stp && !idlen) || obj_init(o, ef)) {
		elf_file_close(ef);
		memset(o, 0, sizeof(*o));	/* a free slot is all zero */
		goto fail;
	}
	elf_file_drop_fd(ef);
	obj_set_identity(o, stp, id, idlen);
	o->serial = ++u->serial;
	o->tick = ++u->tick;
	u->st.obj_misses++;
	return o;
fail:
	u->st.obj_failures++;
	return NULL;
}

/* The object behind maps entry i, memoized per process until its maps
 * are re-read; a memo whose object was evicted resolves again. */
static struct uw_obj *obj_for_map(struct uw_call *c, size_t i)
{
	struct uw_memo *mm = &c->p->memo[i];
	const struct proc_map *m = &c->p->maps.v[i];
	struct uw_obj *o;

	if (mm->serial == UW_NO_OBJ)
		return NULL;
	if (mm->serial) {
		o = &c->u->obj[mm->slot];
		if (o->serial == mm->serial) {
			o->tick = ++c->u->tick;
			return o;
		}
	}
	o = file_backed(m) ? obj_resolve(c, m) : NULL;
	mm->serial = o ? o->serial : UW_NO_OBJ;
	mm->slot = o ? (uint32_t)(o - c->u->obj) : 0;
	return o;
}

/* Runtime minus link-time address of o as mapped by m. */
static int obj_bias(const struct uw_obj *o, const struct proc_map *m, uint64_t *bias)
{
	for (size_t k = 0; k < o->nload; k++) {
		const struct elf_segment *s = &o->load[k];

		if (m->offset >= (s->offset & ~(UW_PAGE - 1)) &&
		    m->offset < s->offset + s->filesz) {
			*bias = m->start - m->offset + s->offset - s->vaddr;
			return 0;
		}
	}
	return -1;
}

/* ---- memory ----------------------------------------------------------- */

/* Points the region cache at the read-only file-backed mapping holding
 * addr: the target sees the file's bytes there, so our copy serves them. */
static int file_region(struct uw_call *c, uint64_t addr)
{
	long i = map_index(c, addr, 0);
	const struct proc_map *m;
	struct uw_obj *o;
	uint64_t bias, size, hi;

	if (i < 0)
		return -1;
	m = &c->p->maps.v[i];
	if (m->perms[0] != 'r' || m->perms[1] == 'w' || !file_backed(m))
		return -1;
	o = obj_for_map(c, (size_t)i);
	if (!o || obj_bias(o, m, &bias))
		return -1;
	/* RELRO pages were relocated before they became read-only. */
	if (o->relro_hi > o->relro_lo && m->start < bias + o->relro_hi &&
	    bias + o->relro_lo < m->end)
		return -1;
	size = elf_file_size(o->ef);
	if (m->offset >= size)
		return -1;
	hi = m->end - m->start <= size - m->offset ? m->end : m->start + (size - m->offset);
	c->rbase = elf_file_data(o->ef, m->offset, hi - m->start);
	if (!c->rbase)
		return -1;
	c->rlo = m->start;
	c->rhi = hi;
	return 0;
}

static int synth_read(struct uw_call *c, uint64_t addr, void *buf, size_t len)
{
	uint64_t k = (addr - UW_SYNTH_BASE) >> UW_SYNTH_SHIFT;
	uint64_t off = addr & ((1ull << UW_SYNTH_SHIFT) - 1);
	const struct uw_obj *o;

	if (k >= c->u->opt.max_objects)
		return -1;
	o = &c->u->obj[k];
	if (!o->serial || o->df_state != 1 || off > o->df_len || len > o->df_len - off)
		return -1;
	memcpy(buf, o->df + off, len);
	return 0;
}

/* The live target, one page at a time: libunwind reads byte by byte. */
static int page_read(struct uw_call *c, uint64_t addr, void *buf, size_t len)
{
	uint64_t page = addr & ~(UW_PAGE - 1);

	if (addr - page + len > UW_PAGE)
		return -1;
	if (page != c->page_addr || !page) {
		if (c->u->opt.no_target_reads || c->target_reads >= UW_TARGET_READS)
			return -1;
		c->target_reads++;
		c->page_addr = 0;
		if (!page || target_read(c->p->src, c->p->pid, page, c->page, UW_PAGE))
			return -1;
		c->page_addr = page;
	}
	memcpy(buf, c->page + (addr - page), len);
	return 0;
}

static int mem_read(struct uw_call *c, uint64_t addr, void *buf, size_t len)
{
	const struct unwind_input *in = c->in;
	uint64_t off = addr - in->stack_addr;

	if (off < in->stack_len && in->stack_len - off >= len) {
		memcpy(buf, in->stack + off, len);
		c->u->st.mem_stack++;
		return 0;
	}
	if (addr >= UW_SYNTH_BASE)
		return synth_read(c, addr, buf, len);
	if ((addr >= c->rlo && addr < c->rhi) || file_region(c, addr) == 0) {
		if (addr >= c->rlo && addr < c->rhi && c->rhi - addr >= len) {
			memcpy(buf, c->rbase + (addr - c->rlo), len);
			c->u->st.mem_file++;
			return 0;
		}
	}
	if (page_read(c, addr, buf, len) == 0) {
		c->u->st.mem_target++;
		return 0;
	}
	c->u->st.mem_failed++;
	return -1;
}

/* ---- .debug_frame ----------------------------------------------------- */

struct df_entry {
	uint64_t start, end, off;	/* link-time range, record offset */
};

struct df_cie {
	uint64_t in_off, out_off;
};

struct df_build {
	const uint8_t *in;
	size_t in_len;
	uint8_t *out;
	size_t out_len, out_cap;
	struct df_entry *ent;
	size_t nent, ent_cap;
	struct df_cie *cie;
	size_t ncie, cie_cap;
};

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 64;
	void *nv;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if (ncap > UW_DF_MAX / elem + 64)
		return -1;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -1;
	*v = nv;
	*cap = ncap;
	return 0;
}

static int put(struct df_build *b, const void *p, size_t n)
{
	if (grow((void **)&b->out, &b->out_cap, b->out_len + n, 1))
		return -1;
	memcpy(b->out + b->out_len, p, n);
	b->out_len += n;
	return 0;
}

static int put_uleb(struct df_build *b, uint64_t v)
{
	uint8_t byte;

	do {
		byte = v & 0x7f;
		v >>= 7;
		if (v)
			byte |= 0x80;
		if (put(b, &byte, 1))
			return -1;
	} while (v);
	return 0;
}

/* Skips a LEB128 number; -1 if it runs past end or is absurdly long. */
static int leb_skip(const uint8_t **p, const uint8_t *end, uint64_t *val)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (*p < end && shift < 64) {
		uint8_t byte = *(*p)++;

		v |= (uint64_t)(byte & 0x7f) << shift;
		shift += 7;
		if (!(byte & 0x80)) {
			if (val)
				*val = v;
			return 0;
		}
	}
	return -1;
}

/* Rewrites the .debug_frame CIE at [pos, end) in .eh_frame form: id 0,
 * version 3, augmentation "zR" declaring FDE addresses 8-byte
 * data-relative, so libunwind adds pi->gp (the load bias) to them.
 * Returns -1 only when out of memory; unusable CIEs are skipped. */
static int df_cie(struct df_build *b, size_t pos, size_t end)
{
	const uint8_t *p = b->in + pos + 8, *e = b->in + end, *align, *ra_at;
	static const uint8_t head[] = { 0, 0, 0, 0, 3, 'z', 'R', 0 };
	uint8_t enc = PE_DATAREL | PE_SDATA8, version;
	uint64_t ra, out_off = b->out_len;
	uint32_t len;

	if (p >= e || ((version = *p++) != 1 && version != 3 && version != 4))
		return 0;
	if (p >= e || *p++ != 0)	/* augmented debug_frame CIEs: not seen */
		return 0;
	if (version == 4) {
		if (e - p < 2 || p[0] != 8 || p[1] != 0)
			return 0;
		p += 2;
	}
	align = p;		/* code and data alignment factors, kept as is */
	if (leb_skip(&p, e, NULL) || leb_skip(&p, e, NULL))
		return 0;
	ra_at = p;
	if (version == 1) {
		if (p >= e)
			return 0;
		ra = *p++;
	} else if (leb_skip(&p, e, &ra)) {
		return 0;
	}
	if (grow((void **)&b->cie, &b->cie_cap, b->ncie + 1, sizeof(*b->cie)))
		return -1;
	len = 0;
	if (put(b, &len, 4) || put(b, head, sizeof(head)) ||
	    put(b, align, (size_t)(ra_at - align)) ||
	    put_uleb(b, ra) || put_uleb(b, 1) || put(b, &enc, 1) || put(b, p, (size_t)(e - p)))
		return -1;
	len = (uint32_t)(b->out_len - out_off - 4);
	memcpy(b->out + out_off, &len, 4);
	b->cie[b->ncie].in_off = pos;
	b->cie[b->ncie++].out_off = out_off;
	return 0;
}

static const struct df_cie *df_find_cie(const struct df_build *b, uint64_t in_off)
{
	size_t lo = 0, hi = b->ncie;

	/* CIEs were added in file order, so by increasing offset. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->cie[mid].in_off == in_off)
			return &b->cie[mid];
		if (b->cie[mid].in_off < in_off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Rewrites one FDE: .eh_frame's CIE pointer is relative to itself, and a
 * "z" CIE needs an (empty) augmentation length before the instructions. */
static int df_fde(struct df_build *b, size_t pos, size_t end, uint32_t cie_off)
{
	const struct df_cie *cie = df_find_cie(b, cie_off);
	uint64_t start, range, out_off = b->out_len;
	uint32_t len, ptr;
	uint8_t zero = 0;

	if (!cie || end - pos < 24)
		return 0;
	memcpy(&start, b->in + pos + 8, 8);
	memcpy(&range, b->in + pos + 16, 8);
	/* Start 0: a function the linker discarded. */
	if (!start || !range || start + range < start)
		return 0;
	if (grow((void **)&b->ent, &b->ent_cap, b->nent + 1, sizeof(*b->ent)))
		return -1;
	len = (uint32_t)(end - pos - 4 + 1);
	ptr = (uint32_t)(out_off + 4 - cie->out_off);
	if (put(b, &len, 4) || put(b, &ptr, 4) || put(b, b->in + pos + 8, 16) ||
	    put(b, &zero, 1) || put(b, b->in + pos + 24, end - pos - 24))
		return -1;
	b->ent[b->nent].start = start;
	b->ent[b->nent].end = start + range;
	b->ent[b->nent++].off = out_off;
	return 0;
}

static int df_walk(struct df_build *b)
{
	size_t pos = 0;

	while (b->in_len - pos >= 8) {
		uint32_t len, id;
		size_t end;

		memcpy(&len, b->in + pos, 4);
		if (len == 0xffffffff || len < 4 || len > b->in_len - pos - 4)
			break;		/* 64-bit DWARF, or truncated */
		end = pos + 4 + len;
		memcpy(&id, b->in + pos + 4, 4);
		if ((id == 0xffffffff ? df_cie(b, pos, end) : df_fde(b, pos, end, id)))
			return -1;
		pos = end;
	}
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct df_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Lays out [table][records]: table entries are int32 pairs (start
 * relative to df_lo, record offset relative to the buffer). */
static int df_finish(struct uw_obj *o, struct df_build *b)
{
	uint64_t lo, hi = 0, tbytes = b->nent * 8;
	uint8_t *buf;

	if (!b->nent)
		return -1;
	qsort(b->ent, b->nent, sizeof(*b->ent), cmp_entry);
	lo = b->ent[0].start;
	for (size_t i = 0; i < b->nent; i++)
		hi = b->ent[i].end > hi ? b->ent[i].end : hi;
	if (hi - lo > INT32_MAX || tbytes + b->out_len > INT32_MAX)
		return -1;
	/* +8: libunwind reads whole aligned words, past the last byte too. */
	buf = calloc(1, tbytes + b->out_len + 8);
	if (!buf)
		return -1;
	for (size_t i = 0; i < b->nent; i++) {
		int32_t e[2] = { (int32_t)(b->ent[i].start - lo),
				 (int32_t)(tbytes + b->ent[i].off) };

		memcpy(buf + 8 * i, e, 8);
	}
	memcpy(buf + tbytes, b->out, b->out_len);
	o->df = buf;
	o->df_len = tbytes + b->out_len + 8;
	o->df_lo = lo;
	o->df_hi = hi;
	o->df_count = b->nent;
	return 0;
}

static int df_build_table(struct uw_obj *o, const uint8_t *in, size_t len)
{
	struct df_build b = { .in = in, .in_len = len };
	int r = df_walk(&b) ? -1 : df_finish(o, &b);

	free(b.out);
	free(b.ent);
	free(b.cie);
	return r;
}

/* .debug_frame of the object, else of its separate debug file. */
static void df_load(struct uw_call *c, struct uw_obj *o, const struct proc_map *m)
{
	struct elf_file *dbg = NULL;
	uint8_t *data = NULL;
	char root[64], path[PATH_MAX];
	size_t len = 0;

	o->df_state = -1;
	if (elf_file_section_copy(o->ef, ".debug_frame", UW_DF_MAX, &data, &len) &&
	    m->path[0] == '/') {
		/* Maps say "/path (deleted)" for a deleted file. */
		snprintf(path, sizeof(path), "%s", m->path);
		if (strstr(path, " (deleted)"))
			*strstr(path, " (deleted)") = '\0';
		snprintf(root, sizeof(root), "/proc/%d/root", c->p->pid);
		dbg = elf_file_open_debug(c->p->src, o->ef, root, path);
		if (!dbg)
			dbg = elf_file_open_debug(c->p->src, o->ef, "", path);
		if (dbg)
			elf_file_section_copy(dbg, ".debug_frame", UW_DF_MAX, &data, &len);
		elf_file_close(dbg);
	}
	if (data && df_build_table(o, data, len) == 0) {
		o->df_state = 1;
		c->u->st.debug_frame_tables++;
	}
	free(data);
}

/* ---- libunwind accessors ---------------------------------------------- */

static int search_hdr(struct uw_call *c, unw_addr_space_t as, const struct uw_obj *o,
		      const struct proc_map *m, uint64_t bias, unw_word_t ip,
		      unw_proc_info_t *pi, int need)
{
	unw_dyn_info_t di;

	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	/* Any range holding ip: the table covers the whole object. */
	di.start_ip = m->start;
	di.end_ip = m->end;
	di.u.rti.segbase = bias + o->hdr_vaddr;
	di.u.rti.table_data = bias + o->table_vaddr;
	di.u.rti.table_len = o->fde_count * 8 / sizeof(unw_word_t);
	pi->gp = 0;
	return dwarf_search_unwind_table(as, ip, &di, pi, need, c);
}

static int search_debug_frame(struct uw_call *c, unw_addr_space_t as, struct uw_obj *o,
			      const struct proc_map *m, uint64_t bias, unw_word_t ip,
			      unw_proc_info_t *pi, int need)
{
	uint64_t synth = UW_SYNTH_BASE + ((uint64_t)(o - c->u->obj) << UW_SYNTH_SHIFT);
	unw_dyn_info_t di;

	if (!o->df_state)
		df_load(c, o, m);
	if (o->df_state != 1 || ip - bias < o->df_lo || ip - bias >= o->df_hi)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	/* Table starts relative to start_ip, which differs per process;
	 * record offsets relative to segbase, our synthetic address. */
	di.format = UNW_INFO_FORMAT_IP_OFFSET;
	di.start_ip = bias + o->df_lo;
	di.end_ip = bias + o->df_hi;
	di.gp = bias;
	di.u.rti.segbase = synth;
	di.u.rti.table_data = synth;
	di.u.rti.table_len = o->df_count * 8 / sizeof(unw_word_t);
	pi->gp = bias;
	return dwarf_search_unwind_table(as, ip, &di, pi, need, c);
}

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			      int need, void *arg)
{
	struct uw_call *c = arg;
	long i = map_index(c, ip, 1);
	const struct proc_map *m;
	struct uw_obj *o;
	uint64_t bias;
	int r = -UNW_ENOINFO;

	if (i >= 0) {
		m = &c->p->maps.v[i];
		o = m->perms[2] == 'x' ? obj_for_map(c, (size_t)i) : NULL;
		if (o && obj_bias(o, m, &bias) == 0) {
			if (o->has_hdr)
				r = search_hdr(c, as, o, m, bias, ip, pi, need);
			if (r == -UNW_ENOINFO)
				r = search_debug_frame(c, as, o, m, bias, ip, pi, need);
		}
	}
	if (r == -UNW_ENOINFO) {
		/* Not ENOINFO: on that libunwind guesses a frame-pointer
		 * frame itself but takes this frame's rsp + 16 as the
		 * caller's rsp, wrong for any frame with locals or pushes
		 * after rbp. fp_restart() uses rbp + 16 instead. */
		c->noinfo = 1;
		return -UNW_ESTOPUNWIND;
	}
	return r;
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	/* libunwind frees the DWARF info it allocated itself. */
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
	return -UNW_ENOINFO;
}

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val,
			  int write, void *arg)
{
	if (write)
		return -UNW_EINVAL;	/* never write to the target */
	return mem_read(arg, addr, val, sizeof(*val)) ? -UNW_EINVAL : 0;
}

static const int8_t regmap[] = {
	[UNW_X86_64_RAX] = UNWIND_REG_RAX, [UNW_X86_64_RDX] = UNWIND_REG_RDX,
	[UNW_X86_64_RCX] = UNWIND_REG_RCX, [UNW_X86_64_RBX] = UNWIND_REG_RBX,
	[UNW_X86_64_RSI] = UNWIND_REG_RSI, [UNW_X86_64_RDI] = UNWIND_REG_RDI,
	[UNW_X86_64_RBP] = UNWIND_REG_RBP, [UNW_X86_64_RSP] = UNWIND_REG_RSP,
	[UNW_X86_64_R8] = UNWIND_REG_R8, [UNW_X86_64_R9] = UNWIND_REG_R9,
	[UNW_X86_64_R10] = UNWIND_REG_R10, [UNW_X86_64_R11] = UNWIND_REG_R11,
	[UNW_X86_64_R12] = UNWIND_REG_R12, [UNW_X86_64_R13] = UNWIND_REG_R13,
	[UNW_X86_64_R14] = UNWIND_REG_R14, [UNW_X86_64_R15] = UNWIND_REG_R15,
	[UNW_X86_64_RIP] = UNWIND_REG_RIP,
};

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val,
			  int write, void *arg)
{
	struct uw_call *c = arg;

	if (reg < 0 || (size_t)reg >= sizeof(regmap) / sizeof(regmap[0]))
		return -UNW_EBADREG;
	if (write)
		return -UNW_EREADONLYREG;
	*val = c->regs[regmap[reg]];
	return 0;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val,
			    int write, void *arg)
{
	return -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *cur, void *arg)
{
	return -UNW_EINVAL;
}

static int acc_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf,
			     size_t len, unw_word_t *off, void *arg)
{
	return -UNW_ENOINFO;	/* src/native/nsym.c symbolizes */
}

/* ---- the walk --------------------------------------------------------- */

static int is_code(struct uw_call *c, uint64_t addr)
{
	long i = map_index(c, addr, 1);

	return i >= 0 && c->p->maps.v[i].perms[2] == 'x';
}

/* Callee-saved registers of the current frame, read before a step: after a
 * failed step libunwind's cursor no longer holds them. */
static void frame_regs(unw_cursor_t *cur, uint64_t *r)
{
	static const struct { int unw, ours; } saved[] = {
		{ UNW_X86_64_RBP, UNWIND_REG_RBP }, { UNW_X86_64_RBX, UNWIND_REG_RBX },
		{ UNW_X86_64_R12, UNWIND_REG_R12 }, { UNW_X86_64_R13, UNWIND_REG_R13 },
		{ UNW_X86_64_R14, UNWIND_REG_R14 }, { UNW_X86_64_R15, UNWIND_REG_R15 },
	};

	for (size_t i = 0; i < sizeof(saved) / sizeof(saved[0]); i++) {
		unw_word_t v;

		if (unw_get_reg(cur, saved[i].unw, &v) == 0)
			r[saved[i].ours] = v;
	}
}

/* One frame-pointer step from a frame libunwind could not unwind, then a
 * fresh libunwind cursor from the caller's registers. 0 if it restarted. */
static int fp_restart(struct uw_call *c, unw_cursor_t *cur, const uint64_t *fr)
{
	uint64_t sp = fr[UNWIND_REG_RSP], bp = fr[UNWIND_REG_RBP], saved_bp, ret;

	if (c->u->opt.no_fp_fallback)
		return UNWIND_END_NO_INFO;
	/* A frame pointer points just above the frame, into the stack. */
	if (bp < sp || bp - sp > UW_FP_MAX_FRAME || (bp & 7))
		return UNWIND_END_NO_INFO;
	if (mem_read(c, bp, &saved_bp, 8) || mem_read(c, bp + 8, &ret, 8))
		return UNWIND_END_READ;
	if (!is_code(c, ret))
		return UNWIND_END_NO_INFO;
	memcpy(c->regs, fr, sizeof(c->regs));
	c->regs[UNWIND_REG_RIP] = ret;
	c->regs[UNWIND_REG_RSP] = bp + 16;
	c->regs[UNWIND_REG_RBP] = saved_bp;
	if (unw_init_remote(cur, c->p->as, c) < 0)
		return UNWIND_END_READ;
	c->u->st.frames_fp++;
	return 0;
}

static int walk(struct uw_call *c, uint64_t *pcs, size_t max, size_t *n)
{
	uint64_t fr[UNWIND_REG_COUNT], prev_sp = 0;
	unw_cursor_t cur;
	unw_word_t ip, sp;
	int r;

	memcpy(fr, c->regs, sizeof(fr));
	if (unw_init_remote(&cur, c->p->as, c) < 0)
		return UNWIND_END_READ;
	for (;;) {
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) || unw_get_reg(&cur, UNW_REG_SP, &sp))
			return UNWIND_END_READ;
		if (!ip)
			return *n ? UNWIND_END_OUTERMOST : UNWIND_END_BAD_FRAME;
		/* Each caller's frame is above its callee's: no loops. */
		if (*n && (sp <= prev_sp || !is_code(c, ip)))
			return UNWIND_END_BAD_FRAME;
		pcs[(*n)++] = ip;
		if (*n >= max)
			return UNWIND_END_MAX;
		prev_sp = sp;
		fr[UNWIND_REG_RIP] = ip;
		fr[UNWIND_REG_RSP] = sp;
		frame_regs(&cur, fr);
		c->noinfo = 0;
		r = unw_step(&cur);
		if (r > 0) {
			c->u->st.frames_dwarf++;
			continue;
		}
		if (r == 0)
			return UNWIND_END_OUTERMOST;	/* CFI: rip undefined */
		/* No CFI for ip, or the CFI's reads failed: try rbp. */
		r = fp_restart(c, &cur, fr);
		if (r)
			return c->noinfo ? r : UNWIND_END_READ;
	}
}

static int count_end(struct unwind_ctx *u, int end)
{
	uint64_t *ctr[] = {
		[UNWIND_END_OUTERMOST] = &u->st.end_outermost,
		[UNWIND_END_MAX] = &u->st.end_max,
		[UNWIND_END_NO_INFO] = &u->st.end_no_info,
		[UNWIND_END_BAD_FRAME] = &u->st.end_bad_frame,
		[UNWIND_END_READ] = &u->st.end_read,
	};

	(*ctr[end])++;
	return end;
}

int unwind_stack(struct unwind_ctx *u, const struct unwind_input *in,
		 uint64_t *pcs, size_t max, size_t *n)
{
	struct uw_call *c;
	int end;

	if (!u || !in || !in->src || !n || (max && !pcs) || in->pid <= 0 ||
	    in->stack_len > UNWIND_MAX_STACK || (in->stack_len && !in->stack))
		return -1;
	*n = 0;
	if (max > UNWIND_MAX_FRAMES)
		max = UNWIND_MAX_FRAMES;
	u->st.stacks++;
	if (!max)
		return count_end(u, UNWIND_END_MAX);
	c = u->call;
	memset(c, 0, offsetof(struct uw_call, page));
	c->u = u;
	c->in = in;
	memcpy(c->regs, in->regs, sizeof(c->regs));
	c->p = proc_get(u, in->src, in->pid);
	if (!c->p) {
		pcs[(*n)++] = in->regs[UNWIND_REG_RIP];
		end = UNWIND_END_NO_INFO;
	} else {
		if (c->p->need_flush) {
			unw_flush_cache(c->p->as, 0, 0);
			c->p->need_flush = 0;
		}
		end = walk(c, pcs, max, n);
	}
	u->st.frames += *n;
	return count_end(u, end);
}

struct unwind_ctx *unwind_ctx_new(const struct unwind_opts *opts)
{
	struct unwind_ctx *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	if (opts)
		u->opt = *opts;
	if (!u->opt.max_objects)
		u->opt.max_objects = UW_DEF_OBJECTS;
	if (!u->opt.max_procs)
		u->opt.max_procs = UW_DEF_PROCS;
	/* >= 2 objects: the one being searched, most recently used, is never
	 * the victim when a read loads another. */
	if (u->opt.max_objects < 2)
		u->opt.max_objects = 2;
	if (u->opt.max_objects > UW_MAX_OBJECTS)
		u->opt.max_objects = UW_MAX_OBJECTS;
	if (u->opt.max_procs > 4096)
		u->opt.max_procs = 4096;
	u->obj = calloc(u->opt.max_objects, sizeof(*u->obj));
	u->proc = calloc(u->opt.max_procs, sizeof(*u->proc));
	u->call = calloc(1, sizeof(*u->call));
	if (!u->obj || !u->proc || !u->call) {
		unwind_ctx_free(u);
		return NULL;
	}
	u->acc.find_proc_info = acc_find_proc_info;
	u->acc.put_unwind_info = acc_put_unwind_info;
	u->acc.get_dyn_info_list_addr = acc_get_dyn_info_list_addr;
	u->acc.access_mem = acc_access_mem;
	u->acc.access_reg = acc_access_reg;
	u->acc.access_fpreg = acc_access_fpreg;
	u->acc.resume = acc_resume;
	u->acc.get_proc_name = acc_get_proc_name;
	return u;
}

void unwind_ctx_free(struct unwind_ctx *u)
{
	if (!u)
		return;
	for (size_t i = 0; u->proc && i < u->opt.max_procs; i++)
		if (u->proc[i].pid)
			proc_clear(&u->proc[i]);
	for (size_t i = 0; u->obj && i < u->opt.max_objects; i++)
		if (u->obj[i].serial)
			obj_clear(&u->obj[i]);
	free(u->call);
	free(u->proc);
	free(u->obj);
	free(u);
}

void unwind_forget_pid(struct unwind_ctx *u, int pid)
{
	for (size_t i = 0; i < u->opt.max_procs; i++)
		if (u->proc[i].pid == pid && pid)
			proc_clear(&u->proc[i]);
}

const struct unwind_stats *unwind_get_stats(const struct unwind_ctx *u)
{
	return &u->st;
}
