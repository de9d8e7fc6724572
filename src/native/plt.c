/* PLT stubs -> "name@plt"; see plt.h. */
#include "plt.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLT_NAME_MAX	512

struct plt_slot {
	uint64_t got;		/* GOT address the stub jumps through */
	uint64_t addend;	/* IRELATIVE: the resolver's address */
	uint32_t sym;		/* .dynsym index; 0: IRELATIVE */
};

struct plt_tables {
	struct plt_slot *v;
	size_t n;
	const Elf64_Sym *syms;
	size_t nsyms;
	const char *str;
	size_t strsz;
};

/* The bytes of a section inside the file, or NULL (absent, NOBITS, cut). */
static const void *section_bytes(struct elf_file *ef, const char *name, struct elf_section *s)
{
	if (elf_file_section(ef, name, s) || s->type == SHT_NOBITS || !s->size)
		return NULL;
	return elf_file_data(ef, s->offset, s->size);
}

/* Appends the jump-slot, GLOB_DAT and IRELATIVE relocations of one
 * relocation section. */
static int add_relocs(struct elf_file *ef, const char *name, struct plt_tables *t)
{
	struct elf_section s;
	const Elf64_Rela *r = section_bytes(ef, name, &s);
	size_t n = r ? s.size / sizeof(*r) : 0;
	struct plt_slot *v;

	if (!n)
		return 0;
	if (n > PLT_MAX_RELOCS - t->n)
		n = PLT_MAX_RELOCS - t->n;
	v = realloc(t->v, (t->n + n) * sizeof(*v));
	if (!v)
		return -1;
	t->v = v;
	for (size_t i = 0; i < n; i++) {
		Elf64_Rela rel;
		uint32_t type, sym;

		memcpy(&rel, &r[i], sizeof(rel));	/* the image may be unaligned */
		type = (uint32_t)ELF64_R_TYPE(rel.r_info);
		sym = (uint32_t)ELF64_R_SYM(rel.r_info);
		if ((type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT) && sym)
			t->v[t->n++] = (struct plt_slot){ rel.r_offset, 0, sym };
		else if (type == R_X86_64_IRELATIVE)
			t->v[t->n++] = (struct plt_slot){ rel.r_offset, (uint64_t)rel.r_addend, 0 };
	}
	return 0;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct plt_slot *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

/* The stub's name as perf and objdump write it: "memcpy@plt", or
 * "*ABS*+0x9f550@plt" for an IFUNC resolved at load. 0 if named. */
static int slot_name(const struct plt_tables *t, uint64_t got, char *buf, size_t len)
{
	struct plt_slot key = { .got = got }, *hit;
	Elf64_Sym sym;

	hit = bsearch(&key, t->v, t->n, sizeof(*t->v), cmp_slot);
	if (!hit)
		return -1;
	if (!hit->sym) {
		snprintf(buf, len, "*ABS*+0x%llx@plt", (unsigned long long)hit->addend);
		return 0;
	}
	if (hit->sym >= t->nsyms)
		return -1;
	memcpy(&sym, &t->syms[hit->sym], sizeof(sym));
	if (sym.st_name >= t->strsz || !t->str[sym.st_name] ||
	    !memchr(t->str + sym.st_name, '\0', t->strsz - sym.st_name))
		return -1;
	snprintf(buf, len, "%s@plt", t->str + sym.st_name);
	return 0;
}

/* The GOT address a stub at addr jumps through: jmp *disp32(%rip)
 * (ff 25), alone or after endbr64 (f3 0f 1e fa) and a bnd prefix (f2). */
static int stub_target(const uint8_t *p, size_t len, uint64_t addr, uint64_t *got)
{
	static const size_t at[] = { 0, 4, 5 };

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		size_t o = at[i];
		int32_t disp;

		if (o + 6 > len || p[o] != 0xff || p[o + 1] != 0x25)
			continue;
		memcpy(&disp, p + o + 2, sizeof(disp));
		*got = addr + o + 6 + (int64_t)disp;
		return 0;
	}
	return -1;
}

/* One PLT section, stub by stub (stub bytes each; 0: guess, .plt.got). */
static int name_stubs(struct elf_file *ef, const char *name, size_t stub,
		      const struct plt_tables *t,
		      int (*cb)(const struct elf_symbol *sym, void *arg), void *arg)
{
	struct elf_section s;
	const uint8_t *p = section_bytes(ef, name, &s);
	char buf[PLT_NAME_MAX];

	/* .plt.got stubs are 8 bytes, or 16 when they start with endbr64. */
	if (!stub)
		stub = p && s.size >= 4 && memcmp(p, "\xf3\x0f\x1e\xfa", 4) == 0 ? 16 : 8;
	for (uint64_t off = 0; p && off + stub <= s.size; off += stub) {
		struct elf_symbol sym = { .name = buf, .size = stub, .type = STT_FUNC,
					  .bind = STB_LOCAL, .value = s.addr + off };
		uint64_t got;
		int r;

		if (stub_target(p + off, stub, sym.value, &got) ||
		    slot_name(t, got, buf, sizeof(buf)))
			continue;
		r = cb(&sym, arg);
		if (r)
			return r;
	}
	return 0;
}

int plt_symbols(struct elf_file *ef, int (*cb)(const struct elf_symbol *sym, void *arg),
		void *arg)
{
	struct plt_tables t = { 0 };
	struct elf_section ds, ss;
	int r = 0;

	t.syms = section_bytes(ef, ".dynsym", &ds);
	t.str = section_bytes(ef, ".dynstr", &ss);
	if (!t.syms || !t.str)
		return 0;
	t.nsyms = ds.size / sizeof(Elf64_Sym);
	t.strsz = ss.size;
	if (add_relocs(ef, ".rela.plt", &t) || add_relocs(ef, ".rela.dyn", &t)) {
		free(t.v);
		return -1;
	}
	if (t.n) {
		qsort(t.v, t.n, sizeof(*t.v), cmp_slot);
		/* .plt's first stub (PLT0) jumps through GOT[2], which has
		 * no relocation: it stays unnamed. */
		r = name_stubs(ef, ".plt", 16, &t, cb, arg);
		if (!r)
			r = name_stubs(ef, ".plt.sec", 16, &t, cb, arg);
		if (!r)
			r = name_stubs(ef, ".plt.got", 0, &t, cb, arg);
	}
	free(t.v);
	return r;
}
