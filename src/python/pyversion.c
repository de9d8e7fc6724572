/*
 * Version detection that does not trust file names alone: Py_Version
 * (3.11+) read from the target, else the PY_VERSION string inside the
 * ELF file, else the file name. The layout comes from the generated
 * tables up to 3.12 and from the target's own _Py_DebugOffsets from 3.13.
 */
#include "pyversion.h"

#include <ctype.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elffile.h"
#include "proc.h"
#include "pydebugoffsets.h"

#define SCAN_MAX_BYTES (256u << 20)

int pyversion_parse(const char *s, unsigned *major, unsigned *minor, unsigned *micro)
{
	unsigned a, b, c;
	int n = 0;

	if (sscanf(s, "%u.%u.%u%n", &a, &b, &c, &n) != 3 || n <= 0)
		return -1;
	if (a < 2 || a > 3 || b > 99 || c > 99)
		return -1;
	*major = a;
	*minor = b;
	*micro = c;
	return 0;
}

/* "libpython3.11.so.1.0" or "python3.11" -> 3, 11. */
static int version_from_name(const char *path, unsigned *major, unsigned *minor)
{
	const char *base = strrchr(path, '/');
	const char *p;

	base = base ? base + 1 : path;
	p = strstr(base, "python");
	if (!p || sscanf(p + 6, "%u.%u", major, minor) != 2)
		return -1;
	return 0;
}

static int is_version_char(int c)
{
	return isdigit(c) || c == '.' || c == 'a' || c == 'b' || c == 'r' || c == 'c' || c == '+';
}

/* PY_VERSION is a NUL-terminated literal such as "3.8.18": look for
 * "M.m.p\0" whose major.minor agree with the hint when there is one. The
 * literal is in .rodata: only that is scanned when the file has one, in
 * place in the mapped image (a copy of a whole libpython with debug info
 * is tens of MiB per new process, which glibc keeps once freed). */
static int version_from_image(struct elf_file *ef, unsigned hmaj,
			      unsigned hmin, struct py_target *t)
{
	struct elf_section sec;
	uint64_t off = 0, len = elf_file_size(ef);
	const uint8_t *img;
	int found = -1;

	if (elf_file_section(ef, ".rodata", &sec) == 0 && sec.type != SHT_NOBITS &&
	    sec.size > 0) {
		off = sec.offset;
		len = sec.size;
	}
	if (len > SCAN_MAX_BYTES)
		len = SCAN_MAX_BYTES;
	img = elf_file_data(ef, off, len);
	if (!img)
		return -1;
	for (size_t i = 1; i + 8 < len && found; i++) {
		unsigned a, b, c;
		size_t j = i;

		/* The linker merges string tails, so the literal may end another
		 * string ("/Python-3.8.18"): only require a non-version byte before. */
		if (is_version_char(img[i - 1]) || (img[i] != '2' && img[i] != '3') ||
		    img[i + 1] != '.')
			continue;
		while (j < len && j - i < 16 && is_version_char(img[j]))
			j++;
		if (j >= len || img[j] != 0 || j - i < 5)
			continue;
		if (pyversion_parse((const char *)img + i, &a, &b, &c))
			continue;
		if (hmaj && (a != hmaj || b != hmin))
			continue;
		t->major = a;
		t->minor = b;
		t->micro = c;
		found = 0;
	}
	return found;
}

struct candidate {
	const struct target_src *src;
	const struct proc_map *map;
	struct elf_file *ef;
	uint64_t bias;
	uint64_t runtime_vaddr;		/* _PyRuntime, 0 if absent */
	uint64_t interp_head_vaddr;	/* 3.6's interp_head, 0 if absent */
	uint64_t py_version_vaddr;	/* Py_Version, 0 if absent */
};

/* Does this mapped file hold a CPython runtime? */
static int probe_file(pid_t pid, const struct proc_map *m, struct candidate *c)
{
	char path[512];
	uint64_t base;

	target_map_file(c->src, pid, m, path, sizeof(path));
	c->ef = target_open_elf(c->src, path);
	if (!c->ef)
		return -1;
	if (elf_file_base_vaddr(c->ef, &base))
		goto no;
	c->map = m;
	c->bias = m->start - base;
	if (elf_file_symbol(c->ef, "_PyRuntime", &c->runtime_vaddr, NULL))
		c->runtime_vaddr = 0;
	if (elf_file_symbol(c->ef, "interp_head", &c->interp_head_vaddr, NULL))
		c->interp_head_vaddr = 0;
	if (elf_file_symbol(c->ef, "Py_Version", &c->py_version_vaddr, NULL))
		c->py_version_vaddr = 0;
	if (c->runtime_vaddr || c->interp_head_vaddr)
		return 0;
	/* 2.7 and stripped 3.6 have neither symbol; still worth a version
	 * string so the refusal names what was found. */
	if (elf_file_symbol(c->ef, "Py_GetVersion", &base, NULL) == 0)
		return 0;
no:
	elf_file_close(c->ef);
	c->ef = NULL;
	return -1;
}

static int find_runtime(pid_t pid, const struct proc_maps *maps, struct candidate *c,
			int passes)
{
	/* Files named like an interpreter first, then everything executable
	 * (an application may embed CPython under another name). */
	for (int pass = 0; pass < passes; pass++) {
		for (size_t i = 0; i < maps->n; i++) {
			const struct proc_map *m = &maps->v[i];
			const char *base = strrchr(m->path, '/');

			if (m->offset != 0 || m->path[0] != '/' || !m->inode)
				continue;
			base = base ? base + 1 : m->path;
			if ((pass == 0) != (strstr(base, "python") != NULL))
				continue;
			if (i > 0 && strcmp(maps->v[i - 1].path, m->path) == 0 &&
			    maps->v[i - 1].inode == m->inode)
				continue;	/* already probed this file */
			if (probe_file(pid, m, c) == 0)
				return 0;
		}
	}
	return -1;
}

static int detect_version(pid_t pid, struct candidate *c, struct py_target *t)
{
	unsigned hmaj = 0, hmin = 0;
	uint64_t hex = 0;

	if (c->py_version_vaddr &&
	    target_read(c->src, pid, c->py_version_vaddr + c->bias, &hex, sizeof(hex)) == 0 &&
	    (hex >> 24) == 3) {
		t->major = (hex >> 24) & 0xff;
		t->minor = (hex >> 16) & 0xff;
		t->micro = (hex >> 8) & 0xff;
		t->version_hex = (uint32_t)hex;
		return 0;
	}
	version_from_name(c->map->path, &hmaj, &hmin);
	if (version_from_image(c->ef, hmaj, hmin, t) == 0 ||
	    (hmaj && version_from_image(c->ef, 0, 0, t) == 0)) {
		t->version_hex = t->major << 24 | t->minor << 16 | t->micro << 8 | 0xf0;
		return 0;
	}
	if (!hmaj)
		return -1;
	t->major = hmaj;
	t->minor = hmin;
	t->version_hex = hmaj << 24 | hmin << 16;
	return 0;
}

/* Copies the start of _PyRuntime; when the full read fails, a shorter
 * copy (the parser says whether it is long enough). 0 if nothing reads. */
static size_t read_runtime_head(const struct target_src *src, pid_t pid, uint64_t addr,
				uint8_t *buf, size_t len)
{
	for (; len >= 64; len /= 2)
		if (target_read(src, pid, addr, buf, len) == 0)
			return len;
	return 0;
}

/* 3.13+: the target's own _Py_DebugOffsets, preferred to the generated
 * table, which knows only the patch release it was generated from. */
static int layout_from_runtime(pid_t pid, const struct candidate *c, struct py_target *t,
			       char *err, size_t errlen)
{
	uint8_t buf[PY_DEBUG_OFFSETS_READ];
	uint64_t addr = c->runtime_vaddr + c->bias;
	char why[256];
	uint32_t hex = 0;
	size_t n;

	if (!c->runtime_vaddr) {
		snprintf(err, errlen, "pid %d (%s): Python %u.%u found in %s, but _PyRuntime is not in its symbol tables",
			 (int)pid, t->comm, t->major, t->minor, t->module);
		return -1;
	}
	n = read_runtime_head(c->src, pid, addr, buf, sizeof(buf));
	if (!n) {
		snprintf(err, errlen, "pid %d (%s): cannot read _PyRuntime at 0x%llx in %s (run as root)",
			 (int)pid, t->comm, (unsigned long long)addr, t->module);
		return -1;
	}
	if (py_debug_offsets_parse(buf, n, &hex, &t->layout, why, sizeof(why))) {
		snprintf(err, errlen, "pid %d (%s): %s", (int)pid, t->comm, why);
		return -1;
	}
	if (hex >> 16 != t->version_hex >> 16) {
		snprintf(err, errlen, "pid %d (%s): _Py_DebugOffsets of %s says Python %u.%u, the interpreter says %u.%u",
			 (int)pid, t->comm, t->module, hex >> 24, hex >> 16 & 0xff, t->major, t->minor);
		return -1;
	}
	return 0;
}

static int choose_layout(pid_t pid, const struct candidate *c, struct py_target *t,
			 char *err, size_t errlen)
{
	const struct py_layout *layout;

	if (t->major == 3 && t->minor >= PY_DEBUG_OFFSETS_MINOR) {
		if (layout_from_runtime(pid, c, t, err, errlen))
			return -1;
	} else {
		layout = py_layout_find(t->major, t->minor);
		if (!layout || t->major != 3) {
			snprintf(err, errlen, "pid %d (%s) runs Python %u.%u.%u (%s), which pyperf-pprof does not support (supported: 3.6 and later)",
				 (int)pid, t->comm, t->major, t->minor, t->micro, t->module);
			return -1;
		}
		t->layout = *layout;
	}
	/* The BPF walk reads the frame fields with one copy of a bounded size. */
	t->layout.walk.frame_span = py_frame_span(&t->layout.walk);
	if (!t->layout.walk.frame_span) {
		snprintf(err, errlen, "pid %d (%s) runs Python %u.%u.%u, whose frame fields lie more than %d bytes into a frame, which pyperf-pprof does not support",
			 (int)pid, t->comm, t->major, t->minor, t->micro, PYPERF_FRAME_WIN);
		return -1;
	}
	return 0;
}

static void fill_bpf_config(struct py_target *t, const struct candidate *c)
{
	t->bpf.off = t->layout.walk;
	if (t->runtime_addr)
		t->bpf.interp_head_addr = t->runtime_addr + t->layout.runtime_interp_head;
	else
		t->bpf.interp_head_addr = c->interp_head_vaddr + c->bias;
}

static int detect(const struct target_src *src, pid_t pid, struct py_target *t, int passes,
		  char *err, size_t errlen);

int pyversion_detect(const struct target_src *src, pid_t pid, struct py_target *t, char *err,
		     size_t errlen)
{
	return detect(src, pid, t, 2, err, errlen);
}

int pyversion_detect_named(const struct target_src *src, pid_t pid, struct py_target *t,
			   char *err, size_t errlen)
{
	return detect(src, pid, t, 1, err, errlen);
}

static int detect(const struct target_src *src, pid_t pid, struct py_target *t, int passes,
		  char *err, size_t errlen)
{
	struct proc_maps maps;
	struct candidate c = { .src = src };
	int ret = -1;

	memset(t, 0, sizeof(*t));
	t->src = src;
	t->pid = pid;
	t->start_time = proc_start_time(pid);
	proc_comm(src, pid, t->comm, sizeof(t->comm));
	proc_cmdline(src, pid, t->cmdline, sizeof(t->cmdline));
	proc_container_id(src, pid, t->container_id, sizeof(t->container_id));
	if (!t->start_time || proc_maps_read(src, pid, &maps)) {
		snprintf(err, errlen, "pid %d: no such process (or /proc/%d/maps unreadable: run as root)",
			 (int)pid, (int)pid);
		return -1;
	}
	if (find_runtime(pid, &maps, &c, passes)) {
		snprintf(err, errlen, "pid %d (%s) is not a CPython process: no python executable or libpython with a runtime symbol in its memory maps",
			 (int)pid, t->comm);
		goto out;
	}
	snprintf(t->module, sizeof(t->module), "%s", c.map->path);
	if (detect_version(pid, &c, t)) {
		snprintf(err, errlen, "pid %d (%s): cannot tell the Python version of %s",
			 (int)pid, t->comm, t->module);
		goto out;
	}
	if (choose_layout(pid, &c, t, err, errlen))
		goto out;
	if (!c.runtime_vaddr && !c.interp_head_vaddr) {
		snprintf(err, errlen, "pid %d (%s): Python %u.%u found in %s, but neither _PyRuntime nor interp_head is in its symbol tables (stripped 3.6?)",
			 (int)pid, t->comm, t->major, t->minor, t->module);
		goto out;
	}
	t->runtime_addr = c.runtime_vaddr ? c.runtime_vaddr + c.bias : 0;
	fill_bpf_config(t, &c);
	ret = 0;
out:
	elf_file_close(c.ef);
	proc_maps_free(&maps);
	return ret;
}
