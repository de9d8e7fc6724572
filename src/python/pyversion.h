/* Which CPython a process runs, and where its runtime state lives. */
#ifndef PYVERSION_H
#define PYVERSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pyeval.h"
#include "proc_root.h"
#include "pyoffsets.h"
#include "target_src.h"
#include "trampoline.h"

struct objcache;

struct py_target {
	const struct target_src *src;	/* where its memory and files are read */
	struct objcache *objs;		/* where its ELF files are opened (objcache.h) */
	pid_t pid;
	uint64_t start_time;		/* with pid, identifies the process */
	unsigned major, minor, micro;
	uint32_t version_hex;		/* PY_VERSION_HEX */
	uint64_t runtime_addr;		/* _PyRuntime, 0 for 3.6 */
	struct py_layout layout;	/* offsets for this version */
	struct py_proc_config bpf;	/* what the BPF walk gets */
	char module[256];		/* file holding the runtime */
	char comm[16];
	char cmdline[96];		/* truncated: labels stay low-cardinality */
	char container_id[16];		/* "" outside containers */
	struct pyeval_ranges eval;	/* <=3.10: where its eval loop lies in
					 * module (no anchor to merge by) */
	struct proc_root root;		/* the root its paths (module, maps) are in */
	struct tramp_shape tramp;	/* its perf trampoline template (pytramp.h) */
	pid_t forked_from;		/* a copy of this target made at its fork
					 * (same files at the same addresses), or
					 * 0: probed */
};

/* Finds the interpreter in pid's address space, read through src (kept in
 * t->src), its files opened through the object layer oc (kept in t->objs),
 * so the native unwinder and symbolizer find them already open. On failure returns -1 with one line in err saying what was
 * found and what to do. */
int pyversion_detect(const struct target_src *src, struct objcache *oc, pid_t pid,
		     struct py_target *t, char *err, size_t errlen);

/* The same, but only files named like a Python interpreter are probed:
 * cheap enough to run over every process of a host. */
int pyversion_detect_named(const struct target_src *src, struct objcache *oc, pid_t pid,
			   struct py_target *t, char *err, size_t errlen);

struct proc_stat;

/* pyversion_detect_stat()'s how: */
#define PYV_NAMED	1u	/* pyversion_detect_named(), else pyversion_detect() */
#define PYV_ROOT_OURS	2u	/* pid's root is known to be ours (the exec event
				 * said so): t->root is not read */

/* Either of the two (how) with pid's /proc/PID/stat as the caller read it
 * a moment ago (ps; NULL: read it here): its start time and comm are the
 * target's, and a process tried again and again while it starts reads
 * that file once per try. */
int pyversion_detect_stat(const struct target_src *src, struct objcache *oc, pid_t pid,
			  const struct proc_stat *ps, unsigned how, struct py_target *t,
			  char *err, size_t errlen);

/* A py_read_fn (pylayout.h) over target t (ctx): reads through t->src. */
static inline int pyversion_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct py_target *t = ctx;

	return target_read(t->src, t->pid, addr, buf, len);
}

/* Parses "3.11.7", "3.12.0rc1+" ... at s. 0 on success. */
int pyversion_parse(const char *s, unsigned *major, unsigned *minor, unsigned *micro);

#endif
