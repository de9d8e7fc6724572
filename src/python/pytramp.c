/* The perf trampoline template of a target's interpreter; see pytramp.h. */
#include "pytramp.h"

#include "elffile.h"

#include <string.h>

int pytramp_read(struct elf_file *ef, unsigned major, unsigned minor, struct tramp_shape *out)
{
	uint8_t code[TRAMP_MAX_LEN];
	uint64_t start, end, off;

	memset(out, 0, sizeof(*out));
	/* Python/perf_trampoline.c and asm_trampoline.S came in 3.12. */
	if (major != 3 || minor < 12)
		return -1;
	/* Exported (global) in every build that has them, stripped or not:
	 * perf_trampoline.c takes their addresses, and Debian's static
	 * /usr/bin/python3.X keeps them in .dynsym (in .rodata there). */
	if (elf_file_symbol(ef, "_Py_trampoline_func_start", &start, NULL) ||
	    elf_file_symbol(ef, "_Py_trampoline_func_end", &end, NULL)) {
		/* Linked without exporting them and stripped: no constant
		 * shape is assumed in their place (it changed with 3.14 and
		 * with CET); copies then unwind by frame pointer only. */
		out->status = TRAMP_MISSING;
		return -1;
	}
	if (end <= start || end - start > TRAMP_MAX_LEN ||
	    elf_file_vaddr_to_offset(ef, start, &off) ||
	    elf_file_read(ef, off, code, (size_t)(end - start))) {
		out->status = TRAMP_UNDECODABLE;
		return -1;
	}
	return tramp_shape_derive(code, (size_t)(end - start), out);
}

const char *pytramp_status_name(const struct tramp_shape *sh)
{
	static const char *const names[] = {
		[TRAMP_NONE] = "none", [TRAMP_OK] = "ok",
		[TRAMP_UNDECODABLE] = "undecodable", [TRAMP_UNTRACKED] = "untracked",
		[TRAMP_MISSING] = "missing (no _Py_trampoline_func_start/_end symbols)",
	};

	return sh->status < sizeof(names) / sizeof(names[0]) ? names[sh->status] : "?";
}
