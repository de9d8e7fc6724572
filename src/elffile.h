/* ELF files of a target: symbols and the segment table (libelf). */
#ifndef ELF_FILE_H
#define ELF_FILE_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;

/* Opens path read-only. NULL if it is not a readable ELF file. */
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

#endif
