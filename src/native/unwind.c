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
 * table built by debug_frame.c, at a synthetic address above the user
 * address space that only our access_mem serves. Objects, processes and
 * their maps come from the shared object cache (objcache.h); the tables
 * hang off its entries.
 */
#define _GNU_SOURCE
#include "unwind.h"

#include "debug_frame.h"
#include "elffile.h"
#include "objcache.h"
#include "proc.h"
#include "target_src.h"
#include "trampoline.h"

#include <elf.h>
#include <libunwind.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exported by libunwind-generic but declared in no installed header. */
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)
extern int dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
				     unw_dyn_info_t *di, unw_proc_info_t *pi,
				     int need_unwind_info, void *arg);

#define UW_MAX_PHDRS		64
#define UW_TARGET_READS		256	/* live-target page reads per stack */
#define UW_FP_MAX_FRAME		(256u << 10)	/* rbp - rsp of a plausible frame */
#define UW_PAGE			4096ull

/* Object slot k's .debug_frame table lives at UW_SYNTH_BASE +
 * (k << UW_SYNTH_SHIFT): above 0x0000800000000000, so it is never an
 * address of the target (objcache slots: at most 4096). */
#define UW_SYNTH_BASE		0xffff900000000000ull
#define UW_SYNTH_SHIFT		32

/* What the unwinder hangs off an object entry (objcache.h). */
struct uw_tables {
	int has_hdr;			/* .eh_frame_hdr with a search table */
	uint64_t hdr_vaddr, table_vaddr, fde_count;
	int df_state;			/* .debug_frame: 0 untried, 1 ready, -1 none */
	struct debug_frame_table df;
};

/* ... and off a process: libunwind caches register rules by ip in it. */
#define UW_TRAMP_MEMO		512	/* trampoline addresses kept per process */

struct uw_pstate {
	unw_addr_space_t as;
	uint64_t maps_gen;		/* the maps its cache was built on */
	/* Addresses found inside a perf trampoline, direct-mapped: a deep
	 * stack crosses dozens, whose code would otherwise be read from the
	 * target for every sample. Cleared when the maps change. */
	struct uw_tramp {
		uint64_t ip;		/* 0: empty */
		struct tramp_rule rule;
	} tramp[UW_TRAMP_MEMO];
};

/* State of one unwind_stack() call; libunwind's accessor argument. */
struct uw_call {
	struct unwind_ctx *u;
	struct oc_proc *p;
	struct uw_pstate *ps;
	const struct unwind_input *in;
	uint64_t regs[UNWIND_REG_COUNT];	/* where libunwind (re)starts */
	int refreshed;			/* maps re-read during this stack */
	int noinfo;			/* find_proc_info found no CFI */
	uint8_t *kinds;			/* per frame: enum unwind_frame_kind, or NULL */
	uint64_t *sps;		/* NULL, or each frame's sp (unwind_stack_frames) */
	unsigned target_reads;
	uint64_t rlo, rhi;		/* last file-backed region served ... */
	const uint8_t *rbase;		/* ... our copy of its bytes */
	uint64_t page_addr;		/* last target page read (0: none) */
	uint8_t page[UW_PAGE];		/* last: not cleared per call */
};

struct unwind_ctx {
	struct unwind_opts opt;
	struct objcache *oc;
	const uint64_t *evictions;	/* the cache's eviction count */
	unw_accessors_t acc;
	struct unwind_stats st;
	struct uw_call *call;		/* reused: holds a page, too big for a stack */
};

static int file_backed(const struct proc_map *m)
{
	return m->path[0] == '/' || strcmp(m->path, "[vdso]") == 0;
}

/* ---- per-process state ------------------------------------------------ */

static void pstate_free(void *ctx, void *v)
{
	struct uw_pstate *ps = v;

	if (ps->as)
		unw_destroy_addr_space(ps->as);
	free(ps);
}

static struct uw_pstate *pstate_get(struct unwind_ctx *u, struct oc_proc *p)
{
	struct uw_pstate *ps = p->user[OC_UNWIND];

	if (ps)
		return ps;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return NULL;
	ps->as = unw_create_addr_space(&u->acc, 0);
	if (!ps->as) {
		free(ps);
		return NULL;
	}
	unw_set_caching_policy(ps->as, UNW_CACHE_GLOBAL);
	ps->maps_gen = p->maps_gen;
	p->user[OC_UNWIND] = ps;
	return ps;
}

/* A miss re-reads the maps (a library loaded since) at most once per stack,
 * as objcache_refresh() allows. */
static long map_index(struct uw_call *c, uint64_t addr, int refresh)
{
	const struct proc_map *m = proc_maps_find(&c->p->maps, addr);

	if (!m && refresh && !c->refreshed) {
		c->refreshed = 1;
		if (objcache_refresh(c->u->oc, c->p, c->in->taken_ns) == 0) {
			c->rlo = c->rhi = 0;
			m = proc_maps_find(&c->p->maps, addr);
		}
	}
	return m ? m - c->p->maps.v : -1;
}

/* ---- unwind tables of an object --------------------------------------- */

static void tables_free(void *ctx, void *v)
{
	struct uw_tables *t = v;

	debug_frame_free(&t->df);
	free(t);
}

static size_t enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_ABSPTR:
	case DW_EH_PE_UDATA8:
	case DW_EH_PE_SDATA8:
		return 8;
	case DW_EH_PE_UDATA4:
	case DW_EH_PE_SDATA4:
		return 4;
	case DW_EH_PE_UDATA2:
	case DW_EH_PE_SDATA2:
		return 2;
	}
	return 0;
}

/* Reads where .eh_frame_hdr's search table is. libunwind searches it
 * itself through access_mem, so only its place and length are kept. */
static void parse_eh_frame_hdr(struct uw_tables *t, const struct oc_obj *o,
			       const struct elf_segment *s)
{
	const uint8_t *h = elf_file_data(o->ef, s->offset, s->filesz);
	size_t pos = 4, len1, len2;
	uint64_t count = 0;

	if (!h || s->filesz < 4 || h[0] != 1 || h[3] != (DW_EH_PE_DATAREL | DW_EH_PE_SDATA4) ||
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
	t->has_hdr = 1;
	t->hdr_vaddr = s->vaddr;
	t->table_vaddr = s->vaddr + pos;
	t->fde_count = count;
}

/* The unwinder's tables of o, made on first use. */
static struct uw_tables *tables_of(struct uw_call *c, struct oc_obj *o)
{
	struct elf_segment seg[UW_MAX_PHDRS];
	struct uw_tables *t = o->user[OC_UNWIND];
	size_t n;

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	n = elf_file_segments(o->ef, seg, UW_MAX_PHDRS);
	for (size_t i = 0; i < n; i++)
		if (seg[i].type == PT_GNU_EH_FRAME)
			parse_eh_frame_hdr(t, o, &seg[i]);
	o->user[OC_UNWIND] = t;
	objcache_account(c->u->oc, o, OC_UNWIND, sizeof(*t));
	return t;
}

/* Loading an object or a table may evict others: the region cache must
 * not point into an evicted image. */
static void after_load(struct uw_call *c, uint64_t evictions)
{
	if (*c->u->evictions != evictions)
		c->rlo = c->rhi = 0;
}

/* The object behind maps entry i with the unwinder's tables; NULL if none. */
static struct oc_obj *obj_for_map(struct uw_call *c, size_t i, struct uw_tables **t)
{
	uint64_t evictions = *c->u->evictions;
	struct oc_obj *o = objcache_obj(c->u->oc, c->p, i);

	*t = o ? tables_of(c, o) : NULL;
	after_load(c, evictions);
	return *t ? o : NULL;
}

/* Runtime minus link-time address of o as mapped by m. */
static int obj_bias(const struct oc_obj *o, const struct proc_map *m, uint64_t *bias)
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
	struct uw_tables *t;
	struct oc_obj *o;
	uint64_t bias, size, hi;

	if (i < 0)
		return -1;
	m = &c->p->maps.v[i];
	if (m->perms[0] != 'r' || m->perms[1] == 'w' || !file_backed(m))
		return -1;
	o = obj_for_map(c, (size_t)i, &t);
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
	const struct oc_obj *o = objcache_slot(c->u->oc, k);
	const struct uw_tables *t = o && o->serial ? o->user[OC_UNWIND] : NULL;

	if (!t || t->df_state != 1 || off > t->df.len || len > t->df.len - off)
		return -1;
	memcpy(buf, t->df.buf + off, len);
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

/* .debug_frame of the object, else of its separate debug file. */
static void df_load(struct uw_call *c, struct oc_obj *o, struct uw_tables *t,
		    const struct proc_map *m)
{
	uint64_t evictions = *c->u->evictions;
	struct elf_file *dbg;
	uint8_t *data = NULL;
	size_t len = 0;

	t->df_state = -1;
	if (elf_file_section_copy(o->ef, ".debug_frame", DEBUG_FRAME_MAX, &data, &len)) {
		dbg = objcache_debug_file(c->u->oc, o, c->p, m);
		if (dbg)
			elf_file_section_copy(dbg, ".debug_frame", DEBUG_FRAME_MAX, &data, &len);
		elf_file_release_pages(dbg);	/* copied */
	}
	if (data && debug_frame_build(data, len, &t->df) == 0) {
		t->df_state = 1;
		c->u->st.debug_frame_tables++;
		objcache_account(c->u->oc, o, OC_UNWIND, t->df.len);
	}
	free(data);
	after_load(c, evictions);
}

/* ---- libunwind accessors ---------------------------------------------- */

static int search_hdr(struct uw_call *c, unw_addr_space_t as, const struct uw_tables *o,
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

static int search_debug_frame(struct uw_call *c, unw_addr_space_t as, struct oc_obj *o,
			      struct uw_tables *t, const struct proc_map *m, uint64_t bias,
			      unw_word_t ip, unw_proc_info_t *pi, int need)
{
	uint64_t synth = UW_SYNTH_BASE + ((uint64_t)(o - objcache_slot(c->u->oc, 0)) << UW_SYNTH_SHIFT);
	unw_dyn_info_t di;

	if (!t->df_state)
		df_load(c, o, t, m);
	if (t->df_state != 1 || ip - bias < t->df.lo || ip - bias >= t->df.hi)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	/* Table starts relative to start_ip, which differs per process;
	 * record offsets relative to segbase, our synthetic address. */
	di.format = UNW_INFO_FORMAT_IP_OFFSET;
	di.start_ip = bias + t->df.lo;
	di.end_ip = bias + t->df.hi;
	di.gp = bias;
	di.u.rti.segbase = synth;
	di.u.rti.table_data = synth;
	di.u.rti.table_len = t->df.count * 8 / sizeof(unw_word_t);
	pi->gp = bias;
	return dwarf_search_unwind_table(as, ip, &di, pi, need, c);
}

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			      int need, void *arg)
{
	struct uw_call *c = arg;
	long i = map_index(c, ip, 1);
	const struct proc_map *m;
	struct uw_tables *t;
	struct oc_obj *o;
	uint64_t bias;
	int r = -UNW_ENOINFO;

	if (i >= 0) {
		m = &c->p->maps.v[i];
		o = m->perms[2] == 'x' ? obj_for_map(c, (size_t)i, &t) : NULL;
		if (o && obj_bias(o, m, &bias) == 0) {
			if (t->has_hdr)
				r = search_hdr(c, as, t, m, bias, ip, pi, need);
			if (r == -UNW_ENOINFO)
				r = search_debug_frame(c, as, o, t, m, bias, ip, pi, need);
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
	if (unw_init_remote(cur, c->ps->as, c) < 0)
		return UNWIND_END_READ;
	c->u->st.frames_fp++;
	return 0;
}

/* len bytes of code at addr (a tramp_read_fn), read in two parts where
 * they cross a page: the target is read a page at a time. */
static int read_code(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct uw_call *c = ctx;
	uint64_t first = UW_PAGE - (addr & (UW_PAGE - 1));

	if (first >= len)
		return mem_read(c, addr, buf, len);
	return mem_read(c, addr, buf, first) ||
	       mem_read(c, addr + first, (uint8_t *)buf + first, len - first);
}

/* A frame libunwind has no CFI for, inside a copy of the target's
 * trampoline template (in->tramp: a CPython perf trampoline): its rule
 * gives the caller, then a fresh libunwind cursor starts there. 0 if it
 * restarted. */
static int tramp_restart(struct uw_call *c, unw_cursor_t *cur, const uint64_t *fr)
{
	uint64_t sp = fr[UNWIND_REG_RSP], cfa, ret, bp = fr[UNWIND_REG_RBP];
	uint64_t ip = fr[UNWIND_REG_RIP];
	struct uw_tramp *memo = &c->ps->tramp[(ip >> 2) % UW_TRAMP_MEMO];
	struct tramp_rule rule;

	if (memo->ip == ip) {
		rule = memo->rule;
	} else {
		if (!tramp_match(c->in->tramp, read_code, c, ip, &rule))
			return -1;
		memo->ip = ip;
		memo->rule = rule;
	}
	cfa = (rule.base == TRAMP_CFA_RBP ? bp : sp) + rule.cfa;
	if (mem_read(c, cfa - 8, &ret, 8) || !is_code(c, ret))
		return -1;
	if (rule.rbp && mem_read(c, cfa + rule.rbp, &bp, 8))
		return -1;
	memcpy(c->regs, fr, sizeof(c->regs));
	c->regs[UNWIND_REG_RIP] = ret;
	c->regs[UNWIND_REG_RSP] = cfa;
	c->regs[UNWIND_REG_RBP] = bp;
	if (unw_init_remote(cur, c->ps->as, c) < 0)
		return -1;
	c->u->st.frames_trampoline++;
	return 0;
}

static int walk(struct uw_call *c, uint64_t *pcs, size_t max, size_t *n)
{
	uint64_t fr[UNWIND_REG_COUNT], prev_sp = 0;
	unw_cursor_t cur;
	unw_word_t ip, sp;
	int r;

	memcpy(fr, c->regs, sizeof(fr));
	if (unw_init_remote(&cur, c->ps->as, c) < 0)
		return UNWIND_END_READ;
	for (;;) {
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) || unw_get_reg(&cur, UNW_REG_SP, &sp))
			return UNWIND_END_READ;
		if (!ip)
			return *n ? UNWIND_END_OUTERMOST : UNWIND_END_BAD_FRAME;
		/* Each caller's frame is above its callee's: no loops. */
		if (*n && (sp <= prev_sp || !is_code(c, ip)))
			return UNWIND_END_BAD_FRAME;
		if (c->kinds)
			c->kinds[*n] = UNWIND_FRAME_CODE;
		if (c->sps)
			c->sps[*n] = sp;
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
		/* No CFI for ip: code of a known shape, else try rbp. */
		if (c->noinfo && tramp_restart(c, &cur, fr) == 0) {
			if (c->kinds)
				c->kinds[*n - 1] = UNWIND_FRAME_TRAMPOLINE;
			continue;
		}
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
	return unwind_stack_kinds(u, in, pcs, NULL, max, n);
}

int unwind_stack_kinds(struct unwind_ctx *u, const struct unwind_input *in,
		       uint64_t *pcs, uint8_t *kinds, size_t max, size_t *n)
{
	return unwind_stack_frames(u, in, pcs, kinds, NULL, max, n);
}

int unwind_stack_frames(struct unwind_ctx *u, const struct unwind_input *in,
			uint64_t *pcs, uint8_t *kinds, uint64_t *sps, size_t max, size_t *n)
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
	c->kinds = kinds;
	c->sps = sps;
	memcpy(c->regs, in->regs, sizeof(c->regs));
	c->p = objcache_proc(u->oc, in->src, in->pid);
	c->ps = c->p ? pstate_get(u, c->p) : NULL;
	if (!c->ps) {
		pcs[(*n)++] = in->regs[UNWIND_REG_RIP];
		end = UNWIND_END_NO_INFO;
	} else {
		/* Cached register rules are keyed by ip only: a new library
		 * at an old address must not reuse them. */
		if (c->ps->maps_gen != c->p->maps_gen) {
			unw_flush_cache(c->ps->as, 0, 0);
			memset(c->ps->tramp, 0, sizeof(c->ps->tramp));
			c->ps->maps_gen = c->p->maps_gen;
		}
		end = walk(c, pcs, max, n);
	}
	u->st.frames += *n;
	return count_end(u, end);
}

struct unwind_ctx *unwind_ctx_new(struct objcache *oc, const struct unwind_opts *opts)
{
	struct unwind_ctx *u;

	if (!oc)
		return NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	if (opts)
		u->opt = *opts;
	u->oc = oc;
	u->evictions = &objcache_get_stats(oc)->obj_evictions;
	u->call = calloc(1, sizeof(*u->call));
	if (!u->call) {
		unwind_ctx_free(u);
		return NULL;
	}
	objcache_set_user(oc, OC_UNWIND, u, tables_free, pstate_free);
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
	if (u->oc)
		objcache_drop_user(u->oc, OC_UNWIND);
	free(u->call);
	free(u);
}

const struct unwind_stats *unwind_get_stats(const struct unwind_ctx *u)
{
	return &u->st;
}
