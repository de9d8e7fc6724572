/*
 * The reduced ELF image of a recording; see elf_reduce.h. What is kept
 * follows what src/native/unwind.c, nsym.c and plt.c read: a byte they
 * read that is zeroed here makes a replay name or unwind differently from
 * the live run (tests/replay.sh would show it).
 */
#include "elf_reduce.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void keep(uint8_t *shadow, const uint8_t *img, size_t size, uint64_t off, uint64_t len)
{
	if (off >= size)
		return;
	if (len > size - off)
		len = size - off;
	memcpy(shadow + off, img + off, len);
}

static int read_shdr(const uint8_t *img, size_t size, const Elf64_Ehdr *eh, uint64_t i,
		     Elf64_Shdr *sh)
{
	uint64_t off = eh->e_shoff + i * sizeof(*sh);

	if (off < eh->e_shoff || off > size || size - off < sizeof(*sh))
		return -1;
	memcpy(sh, img + off, sizeof(*sh));
	return 0;
}

/* FUNC symbols (what src/native/nsym.c collects) and their names; others zero. */
static void keep_functions(uint8_t *shadow, const uint8_t *img, size_t size,
			   const Elf64_Shdr *sym, const Elf64_Shdr *str)
{
	uint64_t n;

	if (sym->sh_entsize != sizeof(Elf64_Sym) || sym->sh_offset > size ||
	    sym->sh_size > size - sym->sh_offset)
		return;
	n = sym->sh_size / sizeof(Elf64_Sym);
	for (uint64_t j = 1; j < n; j++) {
		uint64_t off = sym->sh_offset + j * sizeof(Elf64_Sym);
		Elf64_Sym s;
		int type;

		memcpy(&s, img + off, sizeof(s));
		type = ELF64_ST_TYPE(s.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
		    !s.st_value)
			continue;
		memcpy(shadow + off, &s, sizeof(s));
		if (str && s.st_name < str->sh_size && str->sh_offset <= size &&
		    str->sh_size <= size - str->sh_offset) {
			const char *name = (const char *)img + str->sh_offset + s.st_name;
			size_t len = strnlen(name, str->sh_size - s.st_name);

			keep(shadow, img, size, str->sh_offset + s.st_name,
			     len < str->sh_size - s.st_name ? len + 1 : len);
		}
	}
}

static int kept_name(const char *name)
{
	/* The PLT stubs and their relocations: plt.c names the stubs. */
	static const char *const names[] = { ".gnu_debuglink", ".eh_frame", ".eh_frame_hdr",
					     ".debug_frame", ".plt", ".plt.sec", ".plt.got",
					     ".rela.plt", ".rela.dyn", NULL };

	for (const char *const *n = names; *n; n++)
		if (strcmp(name, *n) == 0)
			return 1;
	return 0;
}

/* Section i of shnum: whole, its FUNC symbols, or nothing. shstr: the
 * section names (sh_size 0 when there are none). */
static void keep_section(uint8_t *shadow, const uint8_t *img, size_t size, const Elf64_Ehdr *eh,
			 uint64_t shnum, const Elf64_Shdr *shstr, uint64_t i)
{
	Elf64_Shdr sh, str;
	char name[32] = "";
	int has_str;

	if (read_shdr(img, size, eh, i, &sh) || sh.sh_type == SHT_NOBITS)
		return;
	if (shstr->sh_size && sh.sh_name < shstr->sh_size && shstr->sh_offset <= size &&
	    shstr->sh_size <= size - shstr->sh_offset) {
		size_t max = shstr->sh_size - sh.sh_name;

		snprintf(name, sizeof(name), "%.*s", (int)(max < 31 ? max : 31),
			 (const char *)img + shstr->sh_offset + sh.sh_name);
	}
	if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) {
		if (sh.sh_type == SHT_NOTE || sh.sh_type == SHT_SYMTAB_SHNDX || kept_name(name))
			keep(shadow, img, size, sh.sh_offset, sh.sh_size);
		return;
	}
	has_str = sh.sh_link < shnum && read_shdr(img, size, eh, sh.sh_link, &str) == 0 &&
		  str.sh_type != SHT_NOBITS;
	keep_functions(shadow, img, size, &sh, has_str ? &str : NULL);
	/* .dynsym whole: the PLT's relocations name undefined symbols, which
	 * keep_functions() leaves out. */
	if (sh.sh_type == SHT_DYNSYM) {
		keep(shadow, img, size, sh.sh_offset, sh.sh_size);
		if (has_str)
			keep(shadow, img, size, str.sh_offset, str.sh_size);
	}
}

/* The program headers and the notes (build-id) and .eh_frame_hdr they
 * point to, for readers that go by segments rather than sections (a file
 * without section headers has only these). */
static void keep_segments(uint8_t *shadow, const uint8_t *img, size_t size,
			  const Elf64_Ehdr *eh, uint64_t phnum)
{
	if (!eh->e_phoff || eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff >= size)
		return;
	if (phnum > (size - eh->e_phoff) / sizeof(Elf64_Phdr))
		phnum = (size - eh->e_phoff) / sizeof(Elf64_Phdr);
	keep(shadow, img, size, eh->e_phoff, phnum * sizeof(Elf64_Phdr));
	for (uint64_t i = 0; i < phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, img + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_NOTE || ph.p_type == PT_GNU_EH_FRAME)
			keep(shadow, img, size, ph.p_offset, ph.p_filesz);
	}
}

uint8_t *elf_reduce(const uint8_t *img, size_t size)
{
	Elf64_Ehdr eh;
	Elf64_Shdr s0 = { 0 }, shstr = { 0 };
	uint64_t shnum, phnum, strndx, room;
	uint8_t *shadow;
	int have_s0;

	if (size < sizeof(eh))
		return NULL;
	memcpy(&eh, img, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return NULL;
	shadow = calloc(1, size);
	if (!shadow)
		return NULL;
	keep(shadow, img, size, 0, sizeof(eh));
	/* Section 0 holds the counts that do not fit the ELF header's fields. */
	have_s0 = eh.e_shoff && eh.e_shentsize == sizeof(Elf64_Shdr) &&
		  read_shdr(img, size, &eh, 0, &s0) == 0;
	shnum = eh.e_shnum ? eh.e_shnum : have_s0 ? s0.sh_size : 0;
	strndx = eh.e_shstrndx == SHN_XINDEX && have_s0 ? s0.sh_link : eh.e_shstrndx;
	if (!have_s0)
		shnum = 0;
	room = (size - (eh.e_shoff < size ? eh.e_shoff : size)) / sizeof(Elf64_Shdr);
	if (shnum > room)
		shnum = room;
	if (shnum) {
		keep(shadow, img, size, eh.e_shoff, shnum * sizeof(Elf64_Shdr));
		if (strndx < shnum && read_shdr(img, size, &eh, strndx, &shstr) == 0 &&
		    shstr.sh_type != SHT_NOBITS)
			keep(shadow, img, size, shstr.sh_offset, shstr.sh_size);
	}
	for (uint64_t i = 1; i < shnum; i++)
		keep_section(shadow, img, size, &eh, shnum, &shstr, i);
	phnum = eh.e_phnum == PN_XNUM && have_s0 ? s0.sh_info : eh.e_phnum;
	keep_segments(shadow, img, size, &eh, phnum);
	return shadow;
}
