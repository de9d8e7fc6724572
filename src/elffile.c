/* Symbol lookup in a target's executable or shared libraries. */
#include "elffile.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELF_MAX_SYMBOLS 10000000	/* per table; bounds hostile files */

struct elf_file {
	int fd;
	Elf *elf;
	const uint8_t *image;	/* whole file, mapped read-only */
	size_t size;
};

struct elf_file *elf_file_open(const char *path)
{
	struct elf_file *ef;
	struct stat st;
	void *img;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	ef = calloc(1, sizeof(*ef));
	if (!ef)
		return NULL;
	ef->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (ef->fd < 0 || fstat(ef->fd, &st) || st.st_size < (off_t)sizeof(Elf64_Ehdr))
		goto fail;
	img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, ef->fd, 0);
	if (img == MAP_FAILED)
		goto fail;
	ef->image = img;
	ef->size = (size_t)st.st_size;
	/* elf_memory parses our private read-only copy: the target's file can
	 * change under us without affecting what libelf sees mid-parse. */
	ef->elf = elf_memory((char *)img, ef->size);
	if (!ef->elf || elf_kind(ef->elf) != ELF_K_ELF || gelf_getclass(ef->elf) != ELFCLASS64)
		goto fail;
	return ef;
fail:
	elf_file_close(ef);
	return NULL;
}

void elf_file_close(struct elf_file *ef)
{
	if (!ef)
		return;
	if (ef->elf)
		elf_end(ef->elf);
	if (ef->image)
		munmap((void *)ef->image, ef->size);
	if (ef->fd >= 0)
		close(ef->fd);
	free(ef);
}

static int find_in_table(struct elf_file *ef, Elf_Scn *scn, const GElf_Shdr *sh,
			 const char *name, uint64_t *value, uint64_t *size)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return -1;
	n = sh->sh_size / sh->sh_entsize;
	if (n > ELF_MAX_SYMBOLS)
		n = ELF_MAX_SYMBOLS;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *s;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		s = elf_strptr(ef->elf, sh->sh_link, sym.st_name);
		if (s && strcmp(s, name) == 0) {
			*value = sym.st_value;
			if (size)
				*size = sym.st_size;
			return 0;
		}
	}
	return -1;
}

int elf_file_symbol(struct elf_file *ef, const char *name, uint64_t *value,
		    uint64_t *size)
{
	static const Elf64_Word order[] = { SHT_DYNSYM, SHT_SYMTAB };

	for (size_t k = 0; k < 2; k++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(ef->elf, scn))) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != order[k])
				continue;
			if (find_in_table(ef, scn, &sh, name, value, size) == 0)
				return 0;
		}
	}
	return -1;
}

int elf_file_vaddr_to_offset(struct elf_file *ef, uint64_t vaddr, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(ef->elf, &n))
		return -1;
	for (size_t i = 0; i < n && i < 4096; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(ef->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -1;
}

int elf_file_read(struct elf_file *ef, uint64_t off, void *buf, size_t len)
{
	if (off > ef->size || len > ef->size - off)
		return -1;
	memcpy(buf, ef->image + off, len);
	return 0;
}

int elf_file_base_vaddr(struct elf_file *ef, uint64_t *base)
{
	uint64_t best = UINT64_MAX;
	size_t n;

	if (elf_getphdrnum(ef->elf, &n))
		return -1;
	for (size_t i = 0; i < n && i < 4096; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(ef->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_vaddr - ph.p_offset < best)
			best = ph.p_vaddr - ph.p_offset;
	}
	if (best == UINT64_MAX)
		return -1;
	*base = best;
	return 0;
}

size_t elf_file_size(const struct elf_file *ef)
{
	return ef->size;
}
