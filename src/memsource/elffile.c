/* Symbol lookup in a target's executable or shared libraries. */
#include "elffile.h"
#include "target_src.h"

#include <fcntl.h>
#include <limits.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define ELF_MAX_SYMBOLS 10000000	/* per table; bounds hostile files */

struct elf_file {
	int fd;
	Elf *elf;
	const uint8_t *image;	/* whole file, mapped read-only */
	size_t size;
	int file_backed;	/* image maps the file (not a copy in memory) */
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
	ef->file_backed = 1;
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

/* ---- Native unwinding and symbolization ------------------------------ */

#define ELF_MAX_PHDRS		4096	/* bounds hostile files */
#define ELF_MAX_NOTES_BYTES	(1u << 20)
#define ELF_MEM_MAX		(64u << 20)	/* in-memory images (the vDSO) */

struct elf_file *elf_file_open_mem(const void *buf, size_t len)
{
	struct elf_file *ef;
	void *img;

	if (len < sizeof(Elf64_Ehdr) || len > ELF_MEM_MAX ||
	    elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	ef = calloc(1, sizeof(*ef));
	if (!ef)
		return NULL;
	ef->fd = -1;
	/* An anonymous mapping, so elf_file_close()'s munmap frees it. */
	img = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (img == MAP_FAILED)
		goto fail;
	memcpy(img, buf, len);
	mprotect(img, len, PROT_READ);
	ef->image = img;
	ef->size = len;
	ef->elf = elf_memory((char *)img, ef->size);
	if (!ef->elf || elf_kind(ef->elf) != ELF_K_ELF || gelf_getclass(ef->elf) != ELFCLASS64)
		goto fail;
	return ef;
fail:
	elf_file_close(ef);
	return NULL;
}

void elf_file_release_pages(struct elf_file *ef)
{
	/* Read-only private file pages: dropped, they fault back in from the
	 * file (the page cache) when read again. Never on a memory copy. */
	if (ef && ef->file_backed)
		madvise((void *)ef->image, ef->size, MADV_DONTNEED);
}

void elf_file_drop_fd(struct elf_file *ef)
{
	if (ef && ef->fd >= 0) {
		close(ef->fd);
		ef->fd = -1;
	}
}

const void *elf_file_data(const struct elf_file *ef, uint64_t off, size_t len)
{
	if (off > ef->size || len > ef->size - off)
		return NULL;
	return ef->image + off;
}

size_t elf_file_segments(struct elf_file *ef, struct elf_segment *out, size_t max)
{
	size_t n, k = 0;

	if (elf_getphdrnum(ef->elf, &n))
		return 0;
	if (n > ELF_MAX_PHDRS)
		n = ELF_MAX_PHDRS;
	for (size_t i = 0; i < n && k < max; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(ef->elf, (int)i, &ph))
			continue;
		out[k].type = ph.p_type;
		out[k].flags = ph.p_flags;
		out[k].offset = ph.p_offset;
		out[k].vaddr = ph.p_vaddr;
		out[k].filesz = ph.p_filesz;
		out[k].memsz = ph.p_memsz;
		k++;
	}
	return k;
}

int elf_file_offset_to_vaddr(struct elf_file *ef, uint64_t off, uint64_t *vaddr)
{
	size_t n;

	if (elf_getphdrnum(ef->elf, &n))
		return -1;
	for (size_t i = 0; i < n && i < ELF_MAX_PHDRS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(ef->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (off >= ph.p_offset && off - ph.p_offset < ph.p_filesz) {
			*vaddr = off - ph.p_offset + ph.p_vaddr;
			return 0;
		}
	}
	return -1;
}

static Elf_Scn *find_section(struct elf_file *ef, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(ef->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(ef->elf, scn))) {
		const char *s;

		if (!gelf_getshdr(scn, sh))
			continue;
		s = elf_strptr(ef->elf, shstrndx, sh->sh_name);
		if (s && strcmp(s, name) == 0)
			return scn;
	}
	return NULL;
}

int elf_file_section(struct elf_file *ef, const char *name, struct elf_section *out)
{
	GElf_Shdr sh;

	if (!find_section(ef, name, &sh))
		return -1;
	out->offset = sh.sh_offset;
	out->addr = sh.sh_addr;
	out->size = sh.sh_size;
	out->type = sh.sh_type;
	return 0;
}

static int inflate_section(const uint8_t *p, size_t size, size_t max,
			   uint8_t **buf, size_t *len)
{
	Elf64_Chdr ch;
	uLongf out;

	if (size < sizeof(ch))
		return -1;
	memcpy(&ch, p, sizeof(ch));
	if (ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size == 0 || ch.ch_size > max ||
	    size - sizeof(ch) > ULONG_MAX)
		return -1;
	*buf = malloc(ch.ch_size);
	if (!*buf)
		return -1;
	out = (uLongf)ch.ch_size;
	if (uncompress(*buf, &out, p + sizeof(ch), (uLong)(size - sizeof(ch))) != Z_OK ||
	    out != ch.ch_size) {
		free(*buf);
		*buf = NULL;
		return -1;
	}
	*len = out;
	return 0;
}

int elf_file_section_copy(struct elf_file *ef, const char *name, size_t max,
			  uint8_t **buf, size_t *len)
{
	const uint8_t *p;
	GElf_Shdr sh;

	*buf = NULL;
	*len = 0;
	if (!find_section(ef, name, &sh) || sh.sh_type == SHT_NOBITS)
		return -1;
	p = elf_file_data(ef, sh.sh_offset, sh.sh_size);
	if (!p)
		return -1;
	if (sh.sh_flags & SHF_COMPRESSED)
		return inflate_section(p, sh.sh_size, max, buf, len);
	if (sh.sh_size > max || !sh.sh_size)
		return -1;
	*buf = malloc(sh.sh_size);
	if (!*buf)
		return -1;
	memcpy(*buf, p, sh.sh_size);
	*len = sh.sh_size;
	return 0;
}

/* Walks the notes in [off, off + size) of the image for NT_GNU_BUILD_ID.
 * Every field is bounds-checked: the bytes come from the target's files. */
static int scan_notes(const struct elf_file *ef, uint64_t off, uint64_t size,
		      uint64_t align, uint8_t *id, size_t cap, size_t *len)
{
	const uint8_t *p = elf_file_data(ef, off, size), *end;

	if (!p || size > ELF_MAX_NOTES_BYTES)
		return -1;
	align = align == 8 ? 8 : 4;
	end = p + size;
	while ((size_t)(end - p) >= 12) {
		uint32_t nsz, dsz, type;
		size_t npad, dpad;

		memcpy(&nsz, p, 4);
		memcpy(&dsz, p + 4, 4);
		memcpy(&type, p + 8, 4);
		p += 12;
		npad = ((size_t)nsz + align - 1) & ~(align - 1);
		dpad = ((size_t)dsz + align - 1) & ~(align - 1);
		if (npad > (size_t)(end - p) || dpad > (size_t)(end - p) - npad)
			return -1;
		if (type == NT_GNU_BUILD_ID && nsz == 4 && memcmp(p, "GNU", 4) == 0) {
			if (dsz == 0 || dsz > cap)
				return -1;
			memcpy(id, p + npad, dsz);
			*len = dsz;
			return 0;
		}
		p += npad + dpad;
	}
	return -1;
}

int elf_file_build_id(struct elf_file *ef, uint8_t *id, size_t cap, size_t *len)
{
	Elf_Scn *scn = NULL;
	size_t n;

	*len = 0;
	/* Sections first: a separate debug file keeps the note section but
	 * its PT_NOTE headers describe bytes that are not in the file. */
	while ((scn = elf_nextscn(ef->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		if (scan_notes(ef, sh.sh_offset, sh.sh_size, sh.sh_addralign,
			       id, cap, len) == 0)
			return 0;
	}
	if (elf_getphdrnum(ef->elf, &n))
		return -1;
	for (size_t i = 0; i < n && i < ELF_MAX_PHDRS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(ef->elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		if (scan_notes(ef, ph.p_offset, ph.p_filesz, ph.p_align, id, cap, len) == 0)
			return 0;
	}
	return -1;
}

int elf_file_debuglink(struct elf_file *ef, char *name, size_t cap)
{
	GElf_Shdr sh;
	const char *p;
	size_t n;

	if (!find_section(ef, ".gnu_debuglink", &sh) || sh.sh_type == SHT_NOBITS)
		return -1;
	p = elf_file_data(ef, sh.sh_offset, sh.sh_size);
	if (!p)
		return -1;
	n = strnlen(p, sh.sh_size);
	if (n == 0 || n == sh.sh_size || n >= cap || memchr(p, '/', n))
		return -1;
	memcpy(name, p, n);
	name[n] = '\0';
	return 0;
}

int elf_file_has_symtab(struct elf_file *ef)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(ef->elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB &&
		    sh.sh_entsize && sh.sh_size / sh.sh_entsize > 1)
			return 1;
	}
	return 0;
}

static int walk_table(struct elf_file *ef, Elf_Scn *scn, const GElf_Shdr *sh,
		      int (*cb)(const struct elf_symbol *, void *), void *arg)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize || sh->sh_type == SHT_NOBITS)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	if (n > ELF_MAX_SYMBOLS)
		n = ELF_MAX_SYMBOLS;
	for (size_t i = 1; i < n; i++) {
		struct elf_symbol s;
		GElf_Sym sym;
		int r;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		s.name = elf_strptr(ef->elf, sh->sh_link, sym.st_name);
		if (!s.name || !s.name[0])
			continue;
		s.value = sym.st_value;
		s.size = sym.st_size;
		s.type = GELF_ST_TYPE(sym.st_info);
		s.bind = GELF_ST_BIND(sym.st_info);
		s.shndx = sym.st_shndx;
		s.dynamic = sh->sh_type == SHT_DYNSYM;
		r = cb(&s, arg);
		if (r)
			return r;
	}
	return 0;
}

int elf_file_symbols(struct elf_file *ef,
		     int (*cb)(const struct elf_symbol *sym, void *arg), void *arg)
{
	static const Elf64_Word order[] = { SHT_DYNSYM, SHT_SYMTAB };

	for (size_t k = 0; k < 2; k++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(ef->elf, scn))) {
			GElf_Shdr sh;
			int r;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != order[k])
				continue;
			r = walk_table(ef, scn, &sh, cb, arg);
			if (r)
				return r;
		}
	}
	return 0;
}

/* Opens path as a debug file of the object with build-id want (wlen 0:
 * the object has none, accept any ELF file). */
static struct elf_file *open_debug_candidate(const struct target_src *src, const char *path,
					     const uint8_t *want, size_t wlen)
{
	struct elf_file *dbg = target_open_elf(src, path);
	uint8_t id[64];
	size_t len;

	if (!dbg)
		return NULL;
	if (wlen && (elf_file_build_id(dbg, id, sizeof(id), &len) ||
		     len != wlen || memcmp(id, want, len))) {
		elf_file_close(dbg);
		return NULL;
	}
	elf_file_drop_fd(dbg);
	return dbg;
}

static struct elf_file *open_by_build_id(const struct target_src *src, const char *root,
					 const uint8_t *id, size_t len)
{
	char path[4096], hex[2 * 64 + 1];
	int n;

	if (len < 2)
		return NULL;
	for (size_t i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	n = snprintf(path, sizeof(path), "%s/usr/lib/debug/.build-id/%.2s/%s.debug",
		     root, hex, hex + 2);
	if (n < 0 || (size_t)n >= sizeof(path))
		return NULL;
	return open_debug_candidate(src, path, id, len);
}

struct elf_file *elf_file_open_debug(const struct target_src *src, struct elf_file *ef,
				     const char *root, const char *obj_path)
{
	char link[256], dir[4096], path[8192];
	const char *fmt[] = { "%s%s/%s", "%s%s/.debug/%s", "%s/usr/lib/debug%s/%s" };
	struct elf_file *dbg;
	uint8_t id[64];
	size_t len = 0;
	const char *slash;

	if (elf_file_build_id(ef, id, sizeof(id), &len))
		len = 0;
	dbg = open_by_build_id(src, root, id, len);
	if (dbg || !obj_path || elf_file_debuglink(ef, link, sizeof(link)))
		return dbg;
	slash = strrchr(obj_path, '/');
	if (obj_path[0] != '/' || !slash || (size_t)(slash - obj_path) >= sizeof(dir))
		return NULL;
	memcpy(dir, obj_path, (size_t)(slash - obj_path));
	dir[slash - obj_path] = '\0';
	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		int n = snprintf(path, sizeof(path), fmt[i], root, dir, link);

		/* Without a build-id, never take the object itself. */
		if (n < 0 || (size_t)n >= sizeof(path) ||
		    (!len && strcmp(path + strlen(root), obj_path) == 0))
			continue;
		dbg = open_debug_candidate(src, path, id, len);
		if (dbg)
			return dbg;
	}
	return NULL;
}
