/* ELF files of a target: symbols and the segment table (libelf). */
#ifndef ELF_FILE_H
#define ELF_FILE_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;
struct target_src;

/* Opens path read-only. NULL if it is not a readable ELF file. Readers of
 * a target open files through its source (target_open_elf()), which calls
 * this for the live system. */
struct elf_file *elf_file_open(const char *path);
void elf_file_close(struct elf_file *ef);

/* Looks a symbol up by name in .dynsym, then .symtab. 0 if found. */
int elf_file_symbol(struct elf_file *ef, const char *name, uint64_t *value,
		    uint64_t *size);

/* Converts a link-time virtual address to its offset in the file, using the
 * PT_LOAD segments. 0 if the address lies in a file-backed segment. */
int elf_file_vaddr_to_offset(struct elf_file *ef, uint64_t vaddr, uint64_t *off);

/* The link-time address of file offset 0 (lowest PT_LOAD's p_vaddr minus
 * p_offset). The load bias of a mapping at offset 0 is start - base. */
int elf_file_base_vaddr(struct elf_file *ef, uint64_t *base);

/* Copies len bytes at a file offset out of the file image. 0 on success. */
int elf_file_read(struct elf_file *ef, uint64_t off, void *buf, size_t len);

size_t elf_file_size(const struct elf_file *ef);

/* ---- Native unwinding and symbolization (src/native/unwind.c, src/native/nsym.c) ---- */

struct elf_segment {
	uint32_t type, flags;		/* PT_*, PF_* */
	uint64_t offset, vaddr, filesz, memsz;
};

struct elf_section {
	uint64_t offset, addr, size;
	uint32_t type;			/* SHT_NOBITS: no bytes in this file */
};

struct elf_symbol {
	const char *name;		/* valid during the callback only */
	uint64_t value, size;
	uint8_t type, bind;		/* STT_*, STB_* */
	uint16_t shndx;
	int dynamic;			/* from .dynsym rather than .symtab */
};

/* Opens a private copy of an ELF image held in memory (the vDSO). */
struct elf_file *elf_file_open_mem(const void *buf, size_t len);

/* Closes the file descriptor; the image stays mapped. Caches of many
 * files use it so they do not hold one descriptor per file. */
void elf_file_drop_fd(struct elf_file *ef);

/* Returns the pages of the image read so far to the system (a file kept
 * open after a one-off scan of its symbols); they are read again from the
 * file when needed. Pointers into the image stay valid. */
void elf_file_release_pages(struct elf_file *ef);

/* A pointer to len bytes at a file offset inside the image, or NULL if
 * they are not all inside it. Valid until elf_file_close(). */
const void *elf_file_data(const struct elf_file *ef, uint64_t off, size_t len);

/* Copies up to max program headers; returns how many it copied. */
size_t elf_file_segments(struct elf_file *ef, struct elf_segment *out, size_t max);

/* Inverse of elf_file_vaddr_to_offset: the link-time address of a file
 * offset inside a PT_LOAD segment's file bytes. 0 if found. */
int elf_file_offset_to_vaddr(struct elf_file *ef, uint64_t off, uint64_t *vaddr);

/* Finds a section by name. 0 if found. */
int elf_file_section(struct elf_file *ef, const char *name, struct elf_section *out);

/* A malloc'd copy of a section's bytes, inflated if it is SHF_COMPRESSED
 * (zlib; what Debian's debug files use), refused if larger than max bytes.
 * 0 on success; the caller frees *buf. */
int elf_file_section_copy(struct elf_file *ef, const char *name, size_t max,
			  uint8_t **buf, size_t *len);

/* The NT_GNU_BUILD_ID note (from note sections, else PT_NOTE segments).
 * 0 and *len > 0 if found and it fits in cap bytes. */
int elf_file_build_id(struct elf_file *ef, uint8_t *id, size_t cap, size_t *len);

/* The file name in .gnu_debuglink (a plain name, no '/'). 0 if present. */
int elf_file_debuglink(struct elf_file *ef, char *name, size_t cap);

/* 1 if the file has a non-empty .symtab (it is not stripped). */
int elf_file_has_symtab(struct elf_file *ef);

/* Calls cb for every defined symbol of .dynsym, then .symtab, at most
 * 10 million per table. Stops early and returns cb's value if non-zero. */
int elf_file_symbols(struct elf_file *ef,
		     int (*cb)(const struct elf_symbol *sym, void *arg), void *arg);

/*
 * Opens, through src, the separate debug file of ef, looking under root (a prefix such
 * as "/proc/PID/root", or "" for our own root): the build-id path
 * /usr/lib/debug/.build-id/xx/yyyy.debug, then the .gnu_debuglink name in
 * the directory of obj_path (the object's path as the target sees it), in
 * its .debug/ subdirectory and under /usr/lib/debug/<dir>/. A candidate
 * whose build-id differs from ef's is rejected. NULL if none is found.
 */
struct elf_file *elf_file_open_debug(const struct target_src *src, struct elf_file *ef,
				     const char *root, const char *obj_path);

#endif
