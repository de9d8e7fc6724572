/*
 * The eval loop's address ranges in the interpreter's file; see pyeval.h.
 * Static symbols when there are any, else the exported entry and the parts
 * its jumps reach, each checked against the .eh_frame FDE that covers it.
 */
#define _GNU_SOURCE
#include "pyeval.h"

#include "elffile.h"
#include "nsym.h"
#include "objcache.h"
#include "proc.h"
#include "pyversion.h"
#include "unwind_table.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PE_MAX_FDES	(2u << 20)	/* per file; bounds hostile input */
#define PE_MAX_SYMS	(8u << 20)
#define PE_MAX_CANDS	4096		/* distinct FDEs one range jumps into */

/* An FDE's address range; hits counts jumps into it from the scan under way. */
struct pe_fde {
	uint64_t lo, hi;
	uint32_t hits;			/* accumulate over the scans */
	uint32_t scan;			/* the last scan that listed it, from 1 */
	uint8_t at_start, tried;
};

struct pe_vec {
	void *v;
	size_t n, cap;
};

/* What the code path works from: FDEs sorted by lo, symbol ranges sorted. */
struct pe_file {
	struct elf_file *ef;
	struct pe_vec fdes;		/* struct pe_fde */
	struct pe_vec syms;		/* struct pyeval_range */
	struct ut_table cfi;
	int oom;
};

static int vec_push(struct pe_vec *v, const void *elem, size_t size)
{
	if (v->n == v->cap) {
		size_t ncap = v->cap ? v->cap * 2 : 256;
		void *nv = realloc(v->v, ncap * size);

		if (!nv)
			return -1;
		v->v = nv;
		v->cap = ncap;
	}
	memcpy((char *)v->v + v->n * size, elem, size);
	v->n++;
	return 0;
}

/* ---- names -------------------------------------------------------------- */

int pyeval_name_is_loop(const char *name)
{
	size_t base = sizeof(PYEVAL_NAME) - 1, len;

	if (!name || strncmp(name, PYEVAL_NAME, base) != 0)
		return 0;
	if (name[base] == '\0')
		return 1;
	len = strnlen(name, 4096);
	return name[base] == '.' && nsym_base_len(name, len) == base;
}

/* ---- the answer ----------------------------------------------------------- */

static int cmp_range(const void *a, const void *b)
{
	const struct pyeval_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Adds [lo, hi) and keeps the set sorted and disjoint. */
static void ranges_add(struct pyeval_ranges *out, uint64_t lo, uint64_t hi)
{
	uint32_t k = 0;

	if (hi <= lo)
		return;
	if (out->n == PYEVAL_MAX_RANGES) {
		out->truncated = 1;
		return;
	}
	out->r[out->n++] = (struct pyeval_range){ lo, hi };
	qsort(out->r, out->n, sizeof(out->r[0]), cmp_range);
	for (uint32_t i = 1; i < out->n; i++) {
		if (out->r[i].lo <= out->r[k].hi) {
			if (out->r[i].hi > out->r[k].hi)
				out->r[k].hi = out->r[i].hi;
		} else {
			out->r[++k] = out->r[i];
		}
	}
	out->n = k + 1;
}

int pyeval_contains(const struct pyeval_ranges *r, uint64_t link_addr)
{
	uint32_t a = 0, b = r->n < PYEVAL_MAX_RANGES ? r->n : PYEVAL_MAX_RANGES;

	while (a < b) {		/* first range starting after the address */
		uint32_t m = a + (b - a) / 2;

		if (r->r[m].lo <= link_addr)
			a = m + 1;
		else
			b = m;
	}
	return a > 0 && link_addr < r->r[a - 1].hi;
}

/* ---- source 1: static symbols -------------------------------------------- */

static int symtab_cb(const struct elf_symbol *s, void *arg)
{
	struct pyeval_ranges *out = arg;

	if (s->dynamic || s->type != STT_FUNC || !s->value || !pyeval_name_is_loop(s->name))
		return 0;
	ranges_add(out, s->value, s->value + (s->size ? s->size : 1));
	return 0;
}

/* ---- .eh_frame: the FDEs' address ranges ---------------------------------- */

struct pe_rd {
	const uint8_t *p, *end;
	uint64_t addr;		/* link-time address of p */
	int bad;
};

static uint64_t rd_n(struct pe_rd *r, size_t n)
{
	uint64_t v = 0;

	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	r->addr += n;
	return v;
}

static uint64_t rd_uleb(struct pe_rd *r)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b = (uint8_t)rd_n(r, 1);

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80) || r->bad)
			return v;
	}
	r->bad = 1;
	return v;
}

/* A pointer in DW_EH_PE encoding enc: absolute or pc-relative, the forms
 * .eh_frame uses for FDE addresses. */
static uint64_t rd_ptr(struct pe_rd *r, uint8_t enc)
{
	uint64_t at = r->addr, v;

	switch (enc & 0x0f) {
	case 0x00: v = rd_n(r, 8); break;
	case 0x02: v = rd_n(r, 2); break;
	case 0x03: v = rd_n(r, 4); break;
	case 0x04: v = rd_n(r, 8); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_n(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_n(r, 4); break;
	case 0x0c: v = rd_n(r, 8); break;
	default: r->bad = 1; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: return v;
	case 0x10: return v + at;
	default: r->bad = 1; return 0;
	}
}

/* The FDE pointer encoding of the CIE at r (past its id): 'R' of a "z"
 * augmentation, absolute 8-byte without one. -1 if it cannot be read. */
static int cie_fde_enc(struct pe_rd r)
{
	const char *aug = (const char *)r.p + 1;
	size_t alen;

	if (rd_n(&r, 1) == 0 || r.bad)		/* version */
		return -1;
	alen = strnlen(aug, (size_t)(r.end - r.p));
	if (aug + alen >= (const char *)r.end)
		return -1;
	r.addr += alen + 1;
	r.p += alen + 1;
	if (aug[0] != 'z')
		return aug[0] == '\0' ? 0 : -1;
	rd_uleb(&r);				/* code alignment */
	rd_uleb(&r);				/* data alignment (sleb, skipped alike) */
	rd_uleb(&r);				/* return address column */
	rd_uleb(&r);				/* augmentation length */
	for (size_t i = 1; i < alen && !r.bad; i++) {
		uint8_t enc;

		switch (aug[i]) {
		case 'R': return (int)rd_n(&r, 1);
		case 'L': rd_n(&r, 1); break;
		case 'P': enc = (uint8_t)rd_n(&r, 1); rd_ptr(&r, enc & 0x7f); break;
		case 'S': case 'B': break;
		default: return -1;
		}
	}
	return r.bad ? -1 : 0;
}

/* One entry at off: adds it to f->fdes if it is an FDE. Returns the
 * offset of the next entry, 0 at the end or on a malformed entry. */
static size_t fde_at(struct pe_file *f, const uint8_t *sec, size_t size, uint64_t addr, size_t off)
{
	struct pe_rd r = { sec + off, sec + size, addr + off, 0 };
	uint64_t len = rd_n(&r, 4), id, cie;
	struct pe_fde fde = { 0 };
	int enc;

	if (r.bad || len == 0 || len == 0xffffffff || len > size - off - 4)
		return 0;		/* terminator, 64-bit DWARF (not emitted by gcc), truncated */
	r.end = r.p + len;
	id = rd_n(&r, 4);
	if (r.bad)
		return 0;
	if (id != 0) {
		cie = off + 4 - id;	/* id is the distance back to the CIE */
		if (id > off + 4 || cie + 8 > size)
			return off + 4 + len;
		enc = cie_fde_enc((struct pe_rd){ sec + cie + 8, sec + size, addr + cie + 8, 0 });
		if (enc >= 0) {
			fde.lo = rd_ptr(&r, (uint8_t)enc);
			fde.hi = fde.lo + rd_ptr(&r, (uint8_t)(enc & 0x0f));
			if (!r.bad && fde.hi > fde.lo && f->fdes.n < PE_MAX_FDES &&
			    vec_push(&f->fdes, &fde, sizeof(fde)))
				f->oom = 1;
		}
	}
	return off + 4 + len;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct pe_fde *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void load_fdes(struct pe_file *f)
{
	struct elf_section s;
	const uint8_t *sec;
	size_t off = 0;

	if (elf_file_section(f->ef, ".eh_frame", &s) || s.type == SHT_NOBITS)
		return;
	sec = elf_file_data(f->ef, s.offset, s.size);
	if (!sec)
		return;
	for (size_t k = 0; k < PE_MAX_FDES && off + 4 <= s.size && !f->oom; k++) {
		off = fde_at(f, sec, s.size, s.addr, off);
		if (!off)
			break;
	}
	qsort(f->fdes.v, f->fdes.n, sizeof(struct pe_fde), cmp_fde);
}

static struct pe_fde *fde_find(struct pe_file *f, uint64_t addr)
{
	struct pe_fde *v = f->fdes.v;
	size_t a = 0, b = f->fdes.n;

	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (v[m].lo <= addr)
			a = m + 1;
		else
			b = m;
	}
	return a && addr < v[a - 1].hi ? &v[a - 1] : NULL;
}

/* ---- source 2: the exported entry and the parts its jumps reach ------------ */

static int sym_cb(const struct elf_symbol *s, void *arg)
{
	struct pe_file *f = arg;
	struct pyeval_range r = { s->value, s->value + (s->size ? s->size : 1) };

	if ((s->type != STT_FUNC && s->type != STT_GNU_IFUNC) || !s->value)
		return 0;
	if (f->syms.n >= PE_MAX_SYMS || vec_push(&f->syms, &r, sizeof(r))) {
		f->oom = 1;
		return 1;
	}
	return 0;
}

/* Does any symbol overlap [lo, hi)? Symbols are sorted by start; their
 * sizes vary, so a few earlier ones are looked at too. */
static int sym_covers(const struct pe_file *f, uint64_t lo, uint64_t hi)
{
	const struct pyeval_range *v = f->syms.v;
	size_t a = 0, b = f->syms.n;

	while (a < b) {		/* first symbol starting at or after hi */
		size_t m = a + (b - a) / 2;

		if (v[m].lo < hi)
			a = m + 1;
		else
			b = m;
	}
	for (size_t k = a; k > 0 && a - k < 64; k--)
		if (v[k - 1].hi > lo)
			return 1;
	return 0;
}

/* The code bytes of [lo, hi) in the file, at most PYEVAL_SCAN_MAX. */
static const uint8_t *code_of(struct elf_file *ef, uint64_t lo, uint64_t hi, size_t *len)
{
	uint64_t off;

	*len = hi - lo < PYEVAL_SCAN_MAX ? (size_t)(hi - lo) : PYEVAL_SCAN_MAX;
	if (elf_file_vaddr_to_offset(ef, lo, &off))
		return NULL;
	return elf_file_data(ef, off, *len);
}

/* Calls fn for every near jmp/jcc (E9 rel32, 0F 80..8F rel32) read at any
 * byte offset of [lo, hi): no decoding, so it also reads some bytes that
 * are not instructions; the checks of each target make that harmless. */
static void each_jump(struct elf_file *ef, uint64_t lo, uint64_t hi,
		      void (*fn)(uint64_t target, void *arg), void *arg)
{
	size_t len;
	const uint8_t *b = code_of(ef, lo, hi, &len);

	for (size_t i = 0; b && i + 5 <= len; i++) {
		int32_t rel;

		if (b[i] == 0xe9) {
			memcpy(&rel, b + i + 1, 4);
			fn(lo + i + 5 + (int64_t)rel, arg);
		} else if (b[i] == 0x0f && i + 6 <= len && (b[i + 1] & 0xf0) == 0x80) {
			memcpy(&rel, b + i + 2, 4);
			fn(lo + i + 6 + (int64_t)rel, arg);
		}
	}
}

struct pe_scan {
	struct pe_file *f;
	const struct pyeval_ranges *known;
	struct pe_fde *cand[PE_MAX_CANDS];
	size_t ncand;
	uint32_t scan;
	uint32_t back;		/* jumps back into the known ranges */
};

static void count_out(uint64_t target, void *arg)
{
	struct pe_scan *s = arg;
	struct pe_fde *d;

	if (pyeval_contains(s->known, target))
		return;
	d = fde_find(s->f, target);
	if (!d || d->tried)
		return;
	if (d->scan != s->scan) {
		if (s->ncand == PE_MAX_CANDS)
			return;
		d->scan = s->scan;
		s->cand[s->ncand++] = d;
	}
	d->hits++;
	d->at_start |= target == d->lo;
}

static void count_back(uint64_t target, void *arg)
{
	struct pe_scan *s = arg;

	s->back += pyeval_contains(s->known, target);
}

/* The CFI at an FDE's first byte is that of a function entry: only the
 * return address on the stack (CFA = rsp + 8). A split part starts in the
 * middle of its parent's frame. (The table merges equal neighbouring rows,
 * so the row may start before addr: its rule is still the one at addr.)
 * No CFI there counts as an entry: no evidence. */
static int is_entry_cfi(const struct pe_file *f, uint64_t addr)
{
	const struct ut_row *row = ut_lookup(&f->cfi, addr);

	return !row || row->cfa == UT_CFA_NONE ||
	       (row->cfa == UT_CFA_RSP && row->cfa_off == 8);
}

/* Strong evidence that FDE d is a part of the known ranges. */
static int is_part(struct pe_file *f, const struct pyeval_ranges *known, struct pe_fde *d)
{
	struct pe_scan back = { .f = f, .known = known };

	if (!d->at_start && d->hits < PYEVAL_MIN_HITS)
		return 0;	/* a later part may jump there too */
	d->tried = 1;
	if (sym_covers(f, d->lo, d->hi) || is_entry_cfi(f, d->lo))
		return 0;
	each_jump(f->ef, d->lo, d->hi, count_back, &back);
	return back.back >= PYEVAL_MIN_HITS;
}

/* Scans each range found (the entry, then each part in turn) for parts. */
static void find_parts(struct pe_file *f, struct pyeval_ranges *out)
{
	struct pe_scan *s = calloc(1, sizeof(*s));
	struct pyeval_range todo[PYEVAL_MAX_RANGES];
	size_t ntodo = 1;

	if (!s)
		return;
	todo[0] = out->r[0];
	for (size_t t = 0; t < ntodo; t++) {
		*s = (struct pe_scan){ .f = f, .known = out, .scan = (uint32_t)t + 1 };
		each_jump(f->ef, todo[t].lo, todo[t].hi, count_out, s);
		for (size_t i = 0; i < s->ncand; i++) {
			struct pe_fde *d = s->cand[i];

			if (!d->tried && is_part(f, out, d)) {
				ranges_add(out, d->lo, d->hi);
				if (ntodo < PYEVAL_MAX_RANGES)
					todo[ntodo++] = (struct pyeval_range){ d->lo, d->hi };
			}
		}
	}
	free(s);
}

static int from_code(struct elf_file *ef, struct pyeval_ranges *out)
{
	struct pe_file f = { .ef = ef };
	uint64_t v, size;

	if (elf_file_symbol(ef, PYEVAL_NAME, &v, &size) || !v || !size)
		return -1;
	ranges_add(out, v, v + size);
	out->source = PYEVAL_CODE;
	load_fdes(&f);
	elf_file_symbols(ef, sym_cb, &f);
	if (!f.oom && f.fdes.n && ut_build_elf(ef, 0, &f.cfi) == 0) {
		qsort(f.syms.v, f.syms.n, sizeof(struct pyeval_range), cmp_range);
		find_parts(&f, out);
	}
	ut_table_free(&f.cfi);
	free(f.fdes.v);
	free(f.syms.v);
	return 0;
}

int pyeval_ranges_build(struct elf_file *ef, struct elf_file *dbg, struct pyeval_ranges *out)
{
	struct elf_file *st = dbg && elf_file_has_symtab(dbg) ? dbg :
			      ef && elf_file_has_symtab(ef) ? ef : NULL;

	memset(out, 0, sizeof(*out));
	if (st) {
		elf_file_symbols(st, symtab_cb, out);
		if (out->n) {
			out->source = PYEVAL_SYMTAB;
			return 0;
		}
	}
	if (ef && from_code(ef, out) == 0)
		return 0;
	memset(out, 0, sizeof(*out));
	return -1;
}

/* ---- per object, through the object cache --------------------------------- */

static void ranges_free(void *ctx, void *data)
{
	free(data);
}

const struct pyeval_ranges *pyeval_of_obj(struct objcache *oc, struct oc_obj *o,
					  const struct oc_proc *p, const struct proc_map *m)
{
	struct pyeval_ranges *r = o->user[OC_PYEVAL];

	if (r)
		return r;
	r = malloc(sizeof(*r));
	if (!r)
		return NULL;
	objcache_set_user(oc, OC_PYEVAL, NULL, ranges_free, NULL);
	pyeval_ranges_build(o->ef, objcache_debug_file(oc, o, p, m), r);
	elf_file_release_pages(o->ef);
	o->user[OC_PYEVAL] = r;
	objcache_account(oc, o, OC_PYEVAL, sizeof(*r));
	return r;
}

int pyeval_of_target(const struct py_target *t, struct pyeval_ranges *out)
{
	struct oc_proc *p = t->objs ? objcache_proc(t->objs, t->src, t->pid) : NULL;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; p && i < p->maps.n; i++) {
		const struct proc_map *m = &p->maps.v[i];
		const struct pyeval_ranges *r;
		struct oc_obj *o;

		if (strcmp(m->path, t->module) != 0)
			continue;
		o = objcache_obj(t->objs, p, i);
		r = o && o->ef ? pyeval_of_obj(t->objs, o, p, m) : NULL;
		if (r && r->n) {
			*out = *r;
			return 0;
		}
	}
	return -1;
}

void pyeval_describe(const struct pyeval_ranges *r, char *buf, size_t len)
{
	static const char *const src[] = { "nowhere", "static symbols", "its code (no static symbol)" };
	uint64_t bytes = 0;

	for (uint32_t i = 0; i < r->n && i < PYEVAL_MAX_RANGES; i++)
		bytes += r->r[i].hi - r->r[i].lo;
	snprintf(buf, len, "eval loop: %u range%s, %llu bytes, from %s%s", r->n,
		 r->n == 1 ? "" : "s", (unsigned long long)bytes,
		 src[r->source <= PYEVAL_CODE ? r->source : 0],
		 r->truncated ? " (more parts not kept)" : "");
}
