/*
 * Version detection that does not trust file names alone: Py_Version
 * (3.11+) read from the target, else the PY_VERSION string inside the
 * ELF file, else the file name. The layout comes from the one chooser
 * (pylayout.c).
 */
#include "pyversion.h"

#include "pyeval.h"

#include <ctype.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "elffile.h"
#include "objcache.h"
#include "proc.h"
#include "pylayout.h"
#include "pytramp.h"

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

/* What an interpreter file says of itself, found once per file and kept
 * on its object entry (OC_PYVERSION): a host that starts many processes
 * of a few interpreters probes each file once, not once per process (the
 * symbol look-ups, linear in .dynsym and .symtab, were a new process's
 * largest cost: ~1 ms for Debian's python3.11). Misses are kept too: the
 * python3.X executable of a shared build holds no runtime. */
struct version_found {
	unsigned hmaj, hmin, major, minor, micro;
	int found;
};

struct probe_memo {
	int is_runtime;			/* probe_file()'s verdict */
	uint64_t base;			/* first PT_LOAD's vaddr */
	uint64_t runtime_vaddr, interp_head_vaddr, py_version_vaddr;
	struct version_found v[2];	/* version_from_image, with the name's
					 * hint and without */
	int n;
	int tramp_done;			/* tramp read, for this version */
	unsigned tramp_major, tramp_minor;
	struct tramp_shape tramp;
};

struct candidate {
	const struct target_src *src;
	struct objcache *oc;
	struct oc_obj *obj;		/* the file's entry in the object layer */
	struct probe_memo *memo;	/* what it says of itself */
	struct probe_memo scratch;	/* ... when no memo can be kept */
	struct proc_map map;		/* its mapping (path: t->module once found) */
	struct elf_file *ef;		/* the object layer's; not closed here */
	uint64_t bias;
	uint64_t runtime_vaddr;		/* _PyRuntime, 0 if absent */
	uint64_t interp_head_vaddr;	/* 3.6's interp_head, 0 if absent */
	uint64_t py_version_vaddr;	/* Py_Version, 0 if absent */
	int version_exact;		/* the version was read from Py_Version */
};

/* 3.6's interp_head is static: stripped, it has no symbol. The exported
 * PyInterpreterState_Head() only returns it (Python/pystate.c at v3.6.15),
 * compiled to `mov interp_head(%rip),%rax; ret` (with endbr64 first in
 * CET builds): its address is read off those bytes, and only off exactly
 * those. 0, or -1 if the code has another shape. */
static int interp_head_from_code(struct elf_file *ef, uint64_t *vaddr)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	uint8_t b[12];
	uint64_t fn, off;
	int32_t rel;
	size_t at = 0;

	if (elf_file_symbol(ef, "PyInterpreterState_Head", &fn, NULL) ||
	    elf_file_vaddr_to_offset(ef, fn, &off) || elf_file_read(ef, off, b, sizeof(b)))
		return -1;
	if (!memcmp(b, endbr64, sizeof(endbr64)))
		at = sizeof(endbr64);
	if (b[at] != 0x48 || b[at + 1] != 0x8b || b[at + 2] != 0x05 || b[at + 7] != 0xc3)
		return -1;
	memcpy(&rel, b + at + 3, sizeof(rel));
	*vaddr = fn + at + 7 + (uint64_t)(int64_t)rel;
	return 0;
}

static void memo_free(void *ctx, void *data)
{
	free(data);
}

/* Looks the runtime's symbols up in ef into m. */
static void probe_symbols(struct elf_file *ef, struct probe_memo *m)
{
	uint64_t v;

	if (elf_file_base_vaddr(ef, &m->base))
		return;
	if (elf_file_symbol(ef, "_PyRuntime", &m->runtime_vaddr, NULL))
		m->runtime_vaddr = 0;
	if (elf_file_symbol(ef, "interp_head", &m->interp_head_vaddr, NULL) &&
	    interp_head_from_code(ef, &m->interp_head_vaddr))
		m->interp_head_vaddr = 0;
	if (elf_file_symbol(ef, "Py_Version", &m->py_version_vaddr, NULL))
		m->py_version_vaddr = 0;
	/* 2.7 and stripped 3.6 have neither symbol; still worth a version
	 * string so the refusal names what was found. */
	m->is_runtime = m->runtime_vaddr || m->interp_head_vaddr ||
			elf_file_symbol(ef, "Py_GetVersion", &v, NULL) == 0;
}

/* o's memo, made and filled on first use; NULL without memory (the
 * caller then probes into one of its own). */
static struct probe_memo *probe_memo_of(struct objcache *oc, struct oc_obj *o)
{
	struct probe_memo *m = o->user[OC_PYVERSION];

	if (m)
		return m;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	probe_symbols(o->ef, m);
	objcache_set_user(oc, OC_PYVERSION, NULL, memo_free, NULL);
	o->user[OC_PYVERSION] = m;
	objcache_account(oc, o, OC_PYVERSION, sizeof(*m));
	return m;
}

/* Does this mapped file hold a CPython runtime? Opened through the object
 * layer: the unwinder and the symbolizer use the same entry later. */
static int probe_file(struct oc_proc *p, size_t i, struct candidate *c)
{
	struct oc_obj *o = objcache_obj(c->oc, p, i);
	struct probe_memo *m;

	if (!o)
		return -1;
	m = probe_memo_of(c->oc, o);
	if (!m) {
		m = &c->scratch;
		memset(m, 0, sizeof(*m));
		probe_symbols(o->ef, m);
	}
	if (!m->is_runtime)
		return -1;
	c->obj = o;
	c->memo = m;
	c->ef = o->ef;
	c->map = p->maps.v[i];
	c->bias = c->map.start - m->base;
	c->runtime_vaddr = m->runtime_vaddr;
	c->interp_head_vaddr = m->interp_head_vaddr;
	c->py_version_vaddr = m->py_version_vaddr;
	return 0;
}

static int find_runtime(struct oc_proc *p, struct candidate *c, int passes)
{
	const struct proc_maps *maps = &p->maps;

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
			if (probe_file(p, i, c) == 0)
				return 0;
		}
	}
	return -1;
}

/* version_from_image, once per file and hint (the scan of up to a MiB
 * of .rodata, for 3.10 and older, which have no Py_Version). */
static int version_of_obj(struct candidate *c, unsigned hmaj, unsigned hmin,
			  struct py_target *t)
{
	struct probe_memo *m = c->memo;
	int found;

	for (int i = 0; i < m->n; i++)
		if (m->v[i].hmaj == hmaj && m->v[i].hmin == hmin) {
			t->major = m->v[i].major;
			t->minor = m->v[i].minor;
			t->micro = m->v[i].micro;
			return m->v[i].found;
		}
	found = version_from_image(c->ef, hmaj, hmin, t);
	if (m->n < 2)
		m->v[m->n++] = (struct version_found){ .hmaj = hmaj, .hmin = hmin,
						       .major = t->major, .minor = t->minor,
						       .micro = t->micro, .found = found };
	return found;
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
		c->version_exact = 1;
		return 0;
	}
	version_from_name(c->map.path, &hmaj, &hmin);
	if (version_of_obj(c, hmaj, hmin, t) == 0 ||
	    (hmaj && version_of_obj(c, 0, 0, t) == 0)) {
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

/* The layout, from the one chooser (pylayout.c). */
static int choose_layout(pid_t pid, const struct candidate *c, struct py_target *t,
			 char *err, size_t errlen)
{
	struct py_facts f = {
		.version_hex = t->version_hex,
		.version_exact = c->version_exact,
		.ft_name = py_ft_from_name(t->module),
		.runtime_addr = c->runtime_vaddr ? c->runtime_vaddr + c->bias : 0,
		.read = pyversion_read,
		.read_ctx = t,
	};
	char why[320], note[320];
	int ret = py_layout_choose(&f, &t->layout, why, sizeof(why));

	proc_root_note(&t->root, note, sizeof(note));
	if (ret == PY_LAYOUT_UNSUPPORTED)
		snprintf(err, errlen, "pid %d (%s) runs Python %u.%u.%u (%s)%s, %s", (int)pid,
			 t->comm, t->major, t->minor, t->micro, t->module, note, why);
	else if (ret)
		snprintf(err, errlen, "pid %d (%s): Python %u.%u.%u in %s%s: %s", (int)pid, t->comm,
			 t->major, t->minor, t->micro, t->module, note, why);
	return ret ? -1 : 0;
}

static void fill_bpf_config(struct py_target *t, const struct candidate *c)
{
	t->bpf.off = t->layout.walk;
	if (t->runtime_addr)
		t->bpf.interp_head_addr = t->runtime_addr + t->layout.runtime_interp_head;
	else
		t->bpf.interp_head_addr = c->interp_head_vaddr + c->bias;
}

static int detect(const struct target_src *src, struct objcache *oc, pid_t pid,
		  const struct proc_stat *ps, struct py_target *t, unsigned how, char *err,
		  size_t errlen);

int pyversion_detect(const struct target_src *src, struct objcache *oc, pid_t pid,
		     struct py_target *t, char *err, size_t errlen)
{
	return detect(src, oc, pid, NULL, t, 0, err, errlen);
}

int pyversion_detect_named(const struct target_src *src, struct objcache *oc, pid_t pid,
			   struct py_target *t, char *err, size_t errlen)
{
	return detect(src, oc, pid, NULL, t, PYV_NAMED, err, errlen);
}

int pyversion_detect_stat(const struct target_src *src, struct objcache *oc, pid_t pid,
			  const struct proc_stat *ps, unsigned how, struct py_target *t,
			  char *err, size_t errlen)
{
	return detect(src, oc, pid, ps, t, how, err, errlen);
}

/* pid's maps as they are now, in the object layer: the unwind tables and
 * the symbolizer use the same view and the objects found behind it, not
 * a read of their own. NULL if they cannot be read. */
static struct oc_proc *maps_now(struct objcache *oc, const struct target_src *src, pid_t pid)
{
	struct timespec ts;
	struct oc_proc *p;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	p = objcache_proc(oc, src, pid);
	/* Known from an earlier try (a process still starting) or a
	 * process that had the pid before: read again. */
	if (p && p->read_ns < now && objcache_refresh(oc, p, now))
		return NULL;
	return p;
}

/* Our own container id ("" outside containers), read once. */
static const char *own_container_id(const struct target_src *src)
{
	static char id[sizeof(((struct py_target *)0)->container_id)];
	static int known;
	size_t n;
	char *text;

	if (!known && (text = target_read_file(src, "/proc/self/cgroup", 65536, &n))) {
		if (proc_container_id_parse(text, n, id, sizeof(id)))
			id[0] = '\0';
		free(text);
		known = 1;
	}
	return id;
}

/* What is read of a process once it is known to run Python. A process
 * whose root is ours is in no container but ours: its container id is
 * ours, known without reading its /proc/PID/cgroup (a new process's
 * costliest /proc file after its maps; a container has a root of its
 * own). root_ours: known already (PYV_ROOT_OURS), not read. */
static void describe_process(const struct target_src *src, pid_t pid, const struct proc_stat *ps,
			     const struct oc_proc *p, struct py_target *t, int root_ours)
{
	proc_cmdline_stat(src, pid, ps, &p->maps, t->cmdline, sizeof(t->cmdline));
	if (root_ours)
		t->root = (struct proc_root){ .pid = (int)pid, .kind = PROC_ROOT_OURS };
	else
		proc_root_read(pid, &t->root);
	if (t->root.kind == PROC_ROOT_OURS)
		snprintf(t->container_id, sizeof(t->container_id), "%s", own_container_id(src));
	else
		proc_container_id(src, pid, t->container_id, sizeof(t->container_id));
}

/* The file's perf trampoline template, read once per file. */
static void tramp_of(struct candidate *c, struct py_target *t)
{
	struct probe_memo *m = c->memo;

	if (!m->tramp_done || m->tramp_major != t->major || m->tramp_minor != t->minor) {
		pytramp_read(c->ef, t->major, t->minor, &m->tramp);
		m->tramp_major = t->major;
		m->tramp_minor = t->minor;
		m->tramp_done = 1;
	}
	t->tramp = m->tramp;
}

static int detect(const struct target_src *src, struct objcache *oc, pid_t pid,
		  const struct proc_stat *ps, struct py_target *t, unsigned how, char *err,
		  size_t errlen)
{
	int passes = how & PYV_NAMED ? 1 : 2;
	struct candidate c = { .src = src, .oc = oc };
	struct proc_stat own;
	struct oc_proc *p;
	char note[320];

	memset(t, 0, sizeof(*t));
	t->src = src;
	t->objs = oc;
	t->pid = pid;
	/* The comm of /proc/PID/stat is /proc/PID/comm's: one read, not two. */
	if (!ps && proc_stat(pid, &own) == 0)
		ps = &own;
	if (ps) {
		t->start_time = ps->start_time;
		snprintf(t->comm, sizeof(t->comm), "%s", ps->comm);
	}
	if (!t->start_time || !(p = maps_now(oc, src, pid))) {
		snprintf(err, errlen, "pid %d: no such process (or /proc/%d/maps unreadable: run as root)",
			 (int)pid, (int)pid);
		return -1;
	}
	/* A process still starting is tried again and again: the failure is
	 * the cheap path (the files' verdicts are kept on their entries). */
	if (find_runtime(p, &c, passes)) {
		snprintf(err, errlen, "pid %d (%s) is not a CPython process: no python executable or libpython with a runtime symbol in its memory maps",
			 (int)pid, t->comm);
		return -1;
	}
	snprintf(t->module, sizeof(t->module), "%s", c.map.path);
	c.map.path = t->module;
	describe_process(src, pid, ps, p, t, (how & PYV_ROOT_OURS) != 0);
	proc_root_note(&t->root, note, sizeof(note));
	if (detect_version(pid, &c, t)) {
		snprintf(err, errlen, "pid %d (%s): cannot tell the Python version of %s%s",
			 (int)pid, t->comm, t->module, note);
		return -1;
	}
	if (choose_layout(pid, &c, t, err, errlen))
		return -1;
	if (!c.runtime_vaddr && !c.interp_head_vaddr) {
		snprintf(err, errlen, "pid %d (%s): Python %u.%u found in %s%s, but neither _PyRuntime nor interp_head is in its symbol tables (stripped 3.6?)",
			 (int)pid, t->comm, t->major, t->minor, t->module, note);
		return -1;
	}
	t->runtime_addr = c.runtime_vaddr ? c.runtime_vaddr + c.bias : 0;
	fill_bpf_config(t, &c);
	/* Before anything else loads objects: c's entry and memo stay. */
	tramp_of(&c, t);
	/* No eval-loop anchor before 3.11: the merge finds the loop by its
	 * code's address instead (pyeval.h). */
	if (t->layout.walk.entry_kind == PY_ENTRY_EVERY)
		pyeval_of_target(t, &t->eval);
	return 0;
}
