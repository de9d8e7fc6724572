/*
 * ELF files as a recording keeps them: only the bytes the native unwinder
 * and symbolizer read, every other byte zero, so a recording carries a
 * library's unwind and symbol data without its code (record.h). Pure: it
 * reads the image it is given and nothing else.
 */
#ifndef ELF_REDUCE_H
#define ELF_REDUCE_H

#include <stddef.h>
#include <stdint.h>

/* A copy of the 64-bit ELF image img (size bytes) that keeps the ELF,
 * program and section headers, section names, FUNC symbols of .symtab
 * and .dynsym with their names (.dynsym whole), notes, .gnu_debuglink,
 * .eh_frame, .eh_frame_hdr, .debug_frame and the PLT with its
 * relocations; zeros elsewhere. NULL when img is not a 64-bit ELF file or
 * memory ran out. The caller frees it. */
uint8_t *elf_reduce(const uint8_t *img, size_t size);

#endif
