/*
 * dump_runtime PID [--raw]
 *
 * Finds _PyRuntime in a running CPython 3.13+ (its ELF symbol plus the load
 * bias from /proc/PID/maps), copies the start of it with process_vm_readv
 * and either writes the bytes to stdout (--raw) or parses them as
 * _Py_DebugOffsets and compares the result field by field with the
 * generated table entry of the same minor version, and with what
 * pyversion_detect() hands the BPF program. One "ok ..." or "FAIL ..."
 * line per check. Exit 0 all ok, 1 a check failed, 77 cannot test here
 * (no permission, no generated entry), 2 usage or lookup error.
 */
#include "check.h"
#include "elffile.h"
#include "objcache.h"
#include "proc.h"
#include "pydebugoffsets.h"
#include "pyoffsets.h"
#include "pyversion.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLD(m, w) { #m, offsetof(struct py_layout, m), w }

static const struct { const char *name; size_t off, width; } fields[] = {
	FLD(runtime_interp_head, 4), FLD(runtime_gil_holder, 4),
	FLD(walk.interp_tstate_head, 2), FLD(walk.ts_next, 2), FLD(walk.ts_frame, 2),
	FLD(walk.cframe_current_frame, 2), FLD(walk.ts_thread_id, 2),
	FLD(walk.ts_native_thread_id, 2), FLD(walk.frame_back, 2), FLD(walk.frame_code, 2),
	FLD(walk.frame_lasti, 2), FLD(walk.frame_owner, 2), FLD(walk.frame_localsplus, 2),
	FLD(walk.frame_is_entry, 2), FLD(walk.frame_kind, 1),
	FLD(walk.tid_kind, 1), FLD(walk.code_tag_mask, 1),
	FLD(code.co_filename, 2), FLD(code.co_name, 2), FLD(code.co_qualname, 2),
	FLD(code.co_firstlineno, 2), FLD(code.co_linetable, 2), FLD(code.co_code_adaptive, 2),
	FLD(code.co_argcount, 2), FLD(code.co_varnames, 2), FLD(code.unicode_state, 2),
	FLD(code.unicode_length, 2), FLD(code.unicode_ascii_size, 2),
	FLD(code.unicode_compact_size, 2), FLD(code.bytes_size, 2), FLD(code.bytes_sval, 2),
	FLD(code.tuple_items, 2), FLD(code.ob_type, 2), FLD(code.type_name, 2),
};

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static uint32_t field(const struct py_layout *l, size_t i)
{
	const uint8_t *p = (const uint8_t *)l + fields[i].off;
	uint32_t v32;
	uint16_t v16;

	if (fields[i].width == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	if (fields[i].width == 2) {
		memcpy(&v16, p, 2);
		return v16;
	}
	return *p;
}

/* One check of a value, with what was expected when it fails. */
static void check_value(int cond, const char *what, uint64_t got, uint64_t want)
{
	char expected[48] = "";

	if (!cond)
		snprintf(expected, sizeof(expected), ", expected %llu", (unsigned long long)want);
	check(cond, "%s = %llu%s", what, (unsigned long long)got, expected);
}

/* Address of _PyRuntime: the first file mapped at offset 0 whose ELF
 * symbols have it (libpython, or a statically linked python). */
static uint64_t find_runtime(pid_t pid, char *module, size_t len)
{
	struct proc_maps maps;
	uint64_t addr = 0;

	if (proc_maps_read(target_src_live(), pid, &maps))
		return 0;
	for (size_t i = 0; i < maps.n && !addr; i++) {
		const struct proc_map *m = &maps.v[i];
		struct elf_file *ef;
		uint64_t sym, base;
		char path[512];

		if (m->offset || m->path[0] != '/' || !strstr(m->path, "python"))
			continue;
		target_map_file(target_src_live(), pid, m, path, sizeof(path));
		ef = target_open_elf(target_src_live(), path);
		if (!ef)
			continue;
		if (!elf_file_symbol(ef, "_PyRuntime", &sym, NULL) && !elf_file_base_vaddr(ef, &base)) {
			addr = sym + m->start - base;
			snprintf(module, len, "%s", m->path);
		}
		elf_file_close(ef);
	}
	proc_maps_free(&maps);
	return addr;
}

/* Copies the head of _PyRuntime, halving the length until a read works. */
static size_t read_head(pid_t pid, uint64_t addr, uint8_t *buf, size_t len)
{
	for (; len >= 64; len /= 2)
		if (target_read(target_src_live(), pid, addr, buf, len) == 0)
			return len;
	return 0;
}

static void compare(const char *label, const struct py_layout *got,
		    const struct py_layout *want)
{
	char what[96];

	for (size_t i = 0; i < NFIELDS; i++) {
		snprintf(what, sizeof(what), "%s %s", label, fields[i].name);
		check_value(field(got, i) == field(want, i), what, field(got, i), field(want, i));
	}
}

/* What pyversion_detect() gives the BPF program must be the parsed table. */
static void check_detect(pid_t pid, uint64_t runtime, const struct py_layout *l)
{
	static struct py_target t;
	struct objcache *oc = objcache_new(NULL);
	char err[512] = "out of memory";

	if (!oc || pyversion_detect(target_src_live(), oc, pid, &t, err, sizeof(err))) {
		check(0, "pyversion_detect: %s", err);
		objcache_free(oc);
		return;
	}
	check_value(t.layout.source && strstr(t.layout.source, "_Py_DebugOffsets") != NULL,
	      "pyversion_detect layout from _Py_DebugOffsets", 1, 1);
	printf("# pyversion_detect: Python %u.%u.%u, layout source: %s\n", t.major, t.minor,
	       t.micro, t.layout.source ? t.layout.source : "NULL");
	check_value(t.runtime_addr == runtime, "pyversion_detect runtime_addr", t.runtime_addr, runtime);
	check_value(t.bpf.interp_head_addr == runtime + l->runtime_interp_head,
	      "bpf interp_head_addr", t.bpf.interp_head_addr, runtime + l->runtime_interp_head);
	{
		/* What the BPF side gets: the parsed offsets plus the span and
		 * the per-version plausibility switch (3.11-3.13). */
		struct py_walk_offsets want = l->walk;

		want.lasti_in_code = t.minor >= 11 && t.minor <= 13;
		/* A new code object's capture (bpf/pyperf.h): its qualname and
		 * file name fields; f_globals follows f_executable, previous
		 * and f_funcobj in every 3.13+ frame. */
		want.code_name = l->code.co_qualname;
		want.code_filename = l->code.co_filename;
		want.code_linetable = l->code.co_linetable;
		want.code_argcount = want.code_varnames = want.tuple_items = PYPERF_NO_FIELD;
		want.frame_globals = 24;
		want.code_span = t.bpf.off.code_span;	/* checked below */
		/* Whether a capture can be whole: the str and bytes fields,
		 * from the same layout, on every interpreter tested here. */
		want.str_length = (uint8_t)l->code.unicode_length;
		want.str_state = (uint8_t)l->code.unicode_state;
		want.str_shift = (uint8_t)l->code.unicode_state_shift;
		want.str_ascii_size = (uint8_t)l->code.unicode_ascii_size;
		want.str_compact_size = (uint8_t)l->code.unicode_compact_size;
		want.bytes_size = (uint8_t)l->code.bytes_size;
		want.bytes_sval = (uint8_t)l->code.bytes_sval;
		want.frame_span = py_frame_span(&want);
		check_value(want.frame_span != 0, "frame span within the BPF window", want.frame_span, 1);
		check_value(want.code_span >= l->code.co_qualname + 8 &&
			    want.code_span >= l->code.co_filename + 8 &&
			    want.code_span >= l->code.co_linetable + 8 &&
			    want.code_span >= l->code.co_firstlineno + 4 &&
			    want.code_span <= PY_CAPTURE_CODE, "code span covers the captured fields",
			    want.code_span, want.code_span);
		check_value(memcmp(&t.bpf.off, &want, sizeof(want)) == 0, "bpf walk offsets identical",
		      t.bpf.off.frame_span, want.frame_span);
	}
	compare("detect vs parse:", &t.layout, l);
	objcache_free(oc);
}

static int run(pid_t pid, int raw)
{
	static uint8_t buf[PY_DEBUG_OFFSETS_READ];
	const struct py_layout *gen;
	struct py_layout l;
	char module[256], err[256];
	uint32_t hex;
	uint64_t addr = find_runtime(pid, module, sizeof(module));
	size_t n;

	if (!addr) {
		fprintf(stderr, "dump_runtime: no _PyRuntime symbol in the python files mapped by pid %d\n",
			(int)pid);
		return 2;
	}
	n = read_head(pid, addr, buf, sizeof(buf));
	if (!n) {
		printf("SKIP cannot read pid %d at 0x%llx: %s\n", (int)pid,
		       (unsigned long long)addr, strerror(errno));
		return errno == EPERM || errno == EACCES ? 77 : 2;
	}
	if (raw)
		return fwrite(buf, 1, n, stdout) == n ? 0 : 2;
	printf("# %s: _PyRuntime at 0x%llx, %zu bytes read\n", module, (unsigned long long)addr, n);
	if (py_debug_offsets_parse(buf, n, &hex, &l, err, sizeof(err))) {
		printf("FAIL parse: %s\n", err);
		return 1;
	}
	printf("ok parse: Python 0x%08x, %s\n", hex, l.source);
	gen = py_layout_find(hex >> 24, hex >> 16 & 0xff, l.free_threaded);
	if (gen)
		compare("debug offsets vs generated:", &l, gen);
	else
		printf("# no generated table entry for %u.%u: nothing to compare with\n",
		       hex >> 24, hex >> 16 & 0xff);
	check_detect(pid, addr, &l);
	if (check_failed)
		return 1;
	return gen ? 0 : 77;
}

int main(int argc, char **argv)
{
	char *end;
	long pid;

	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--raw"))) {
		fprintf(stderr, "usage: dump_runtime PID [--raw]\n");
		return 2;
	}
	pid = strtol(argv[1], &end, 10);
	if (*end || pid <= 0) {
		fprintf(stderr, "dump_runtime: bad pid %s\n", argv[1]);
		return 2;
	}
	return run((pid_t)pid, argc == 3);
}
