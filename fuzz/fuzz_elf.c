/*
 * libFuzzer target for src/memsource/elffile.c: the input is an ELF image, opened
 * with elf_file_open_mem() (the same libelf parse elf_file_open() does on
 * its private mapping of a file). Exercises symbol lookup and iteration,
 * the segment table and address conversions, sections (copied, inflated
 * if compressed), build-id notes and .gnu_debuglink.
 */
#include "elffile.h"
#include "target_src.h"
#include "fuzz_common.h"

#include <elf.h>

#define COPY_MAX	(1u << 20)	/* bounds inflated sections */

static const char *const symbols[] = {
	"_start", "main", "Py_Version", "_PyRuntime", "PyEval_EvalFrameDefault",
	"_PyEval_EvalFrameDefault", "", "x",
};

static const char *const sections[] = {
	".text", ".symtab", ".dynsym", ".gnu_debuglink", ".note.gnu.build-id",
	".eh_frame", ".eh_frame_hdr", ".debug_frame", ".debug_info", ".rodata",
	".data", ".bss", "",
};

struct walk {
	struct elf_file *ef;
	unsigned count;
	uint64_t sum;
};

/* Touches every byte of the name and converts the symbol's address. */
static int on_symbol(const struct elf_symbol *s, void *arg)
{
	struct walk *w = arg;
	uint64_t off, va;

	FUZZ_CHECK(s->name != NULL);
	w->sum += strlen(s->name) + s->type + s->bind + s->shndx;
	/* Lookup by name must find a symbol of that name (maybe another). */
	if (w->count < 8) {
		uint64_t value = 0, size = 0;

		FUZZ_CHECK(elf_file_symbol(w->ef, s->name, &value, &size) == 0);
	}
	if (w->count < 64 && elf_file_vaddr_to_offset(w->ef, s->value, &off) == 0) {
		uint8_t b[16];

		(void)elf_file_read(w->ef, off, b, sizeof(b));
		(void)elf_file_data(w->ef, off, s->size < 4096 ? s->size : 4096);
		(void)elf_file_offset_to_vaddr(w->ef, off, &va);
	}
	return ++w->count >= 100000;	/* stop early on huge tables */
}

static void probe_address(struct elf_file *ef, uint64_t a)
{
	uint64_t off, va;
	uint8_t b[8];

	if (elf_file_vaddr_to_offset(ef, a, &off) == 0) {
		/* The offset is inside a PT_LOAD's file bytes, not
		 * necessarily inside the file: reads must be checked. */
		(void)elf_file_read(ef, off, b, sizeof(b));
		(void)elf_file_data(ef, off, 1);
	}
	if (elf_file_offset_to_vaddr(ef, a, &va) == 0)
		(void)elf_file_vaddr_to_offset(ef, va, &off);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_segment seg[64];
	struct elf_section sec;
	struct walk w = { 0 };
	struct elf_file *ef, *dbg;
	uint8_t id[64], *buf;
	char link[256];
	uint64_t base, v, sz;
	size_t n, len;

	ef = elf_file_open_mem(data, size);
	if (!ef)
		return 0;
	FUZZ_CHECK(elf_file_size(ef) == size);
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++)
		if (elf_file_symbol(ef, symbols[i], &v, &sz) == 0)
			probe_address(ef, v);
	if (elf_file_base_vaddr(ef, &base) == 0)
		probe_address(ef, base);
	n = elf_file_segments(ef, seg, sizeof(seg) / sizeof(seg[0]));
	FUZZ_CHECK(n <= sizeof(seg) / sizeof(seg[0]));
	for (size_t i = 0; i < n; i++) {
		probe_address(ef, seg[i].vaddr);
		probe_address(ef, seg[i].vaddr + seg[i].filesz - 1);
		probe_address(ef, seg[i].vaddr + seg[i].filesz);
		probe_address(ef, seg[i].offset);
		probe_address(ef, seg[i].offset + seg[i].filesz - 1);
	}
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (elf_file_section(ef, sections[i], &sec) == 0 && sec.type != SHT_NOBITS)
			(void)elf_file_data(ef, sec.offset, sec.size);
		if (elf_file_section_copy(ef, sections[i], COPY_MAX, &buf, &len) == 0) {
			FUZZ_CHECK(buf != NULL && len > 0 && len <= COPY_MAX);
			/* Touch every byte: ASan checks the length is true. */
			for (size_t k = 0; k < len; k++)
				w.sum += buf[k];
			free(buf);
		} else {
			FUZZ_CHECK(buf == NULL);
		}
	}
	if (elf_file_build_id(ef, id, sizeof(id), &len) == 0)
		FUZZ_CHECK(len > 0 && len <= sizeof(id));
	if (elf_file_debuglink(ef, link, sizeof(link)) == 0)
		FUZZ_CHECK(strlen(link) > 0 && strlen(link) < sizeof(link) &&
			   !strchr(link, '/'));
	(void)elf_file_has_symtab(ef);
	w.ef = ef;
	(void)elf_file_symbols(ef, on_symbol, &w);
	/* The debug-file search composes paths from the build-id and the
	 * debuglink; under a root that does not exist every open fails. */
	dbg = elf_file_open_debug(target_src_live(), ef, "/nonexistent-fuzz-root",
				  "/usr/lib/libx.so.1");
	FUZZ_CHECK(dbg == NULL);
	elf_file_drop_fd(ef);
	elf_file_close(ef);
	return (int)(w.sum & 0);
}
