/*
 * PLT stubs named as perf names them ("memcpy@plt"): no symbol table
 * covers .plt, .plt.sec or .plt.got, so each 16- (or 8-) byte stub is
 * decoded (jmp *GOT(%rip), after an endbr64 and bnd prefix when present),
 * and the GOT slot it jumps through is matched to its .rela.plt or
 * .rela.dyn relocation, whose .dynsym entry gives the name. x86_64 only.
 */
#ifndef PLT_H
#define PLT_H

#include "elffile.h"

#define PLT_MAX_RELOCS	(1u << 16)	/* relocations read per file, at most */

/*
 * Calls cb with one STT_FUNC symbol per stub that could be named (name
 * valid during the call only). Stops and returns cb's value if non-zero;
 * returns 0 when done, -1 when memory ran out.
 */
int plt_symbols(struct elf_file *ef, int (*cb)(const struct elf_symbol *sym, void *arg),
		void *arg);

#endif
