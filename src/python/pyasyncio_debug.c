/*
 * The AsyncioDebug section of CPython 3.14+.
 *
 * Modules/_asynciomodule.c (tags v3.14.0 and v3.15.0rc1, identical) fills
 * a struct _Py_AsyncioModuleDebugOffsets with sizeof/offsetof of its own
 * structures and places it with GENERATE_DEBUG_SECTION(AsyncioDebug, ...)
 * (Include/internal/pycore_debug_offsets.h), on Linux
 * __attribute__((section(".AsyncioDebug"), used)): a section of the file
 * holding _asyncio, the extension module _asyncio.cpython-3XX*.so or the
 * interpreter itself where _asyncio is built in. The values are constants
 * of the build, so the file's bytes are read, not the process's. Thirteen
 * uint64 values:
 *
 *   asyncio_task_object        size, task_name, task_awaited_by,
 *                              task_is_task, task_awaited_by_is_set,
 *                              task_coro, task_node        (TaskObj)
 *   asyncio_interpreter_state  size, asyncio_tasks_head   (PyInterpreterState)
 *   asyncio_thread_state       size, asyncio_running_loop,
 *                              asyncio_running_task, asyncio_tasks_head
 *                                                         (_PyThreadStateImpl)
 *
 * The running task of a thread is _PyThreadStateImpl.asyncio_running_task,
 * set by the C Task's step (swap_current_task) for as long as the step
 * runs. The coroutine and type offsets the section lacks come from
 * _Py_DebugOffsets and from headers at the same tags:
 *   coroutine tp_basicsize = offsetof(PyCoroObject, cr_iframe.localsplus)
 *       (PyCoro_Type, Objects/genobject.c) = gi_iframe + localsplus;
 *   cr_qualname = gi_name + 8 (_PyGenObject_HEAD, weakreflist, name,
 *       qualname: Include/internal/pycore_interpframe_structs.h);
 *   tp_basicsize = tp_name + 8, tp_flags = tp_name + 144, tp_base =
 *       tp_name + 232 (struct _typeobject, Include/cpython/object.h);
 *       tp_flags is in _Py_DebugOffsets, so the derivation is checked.
 */
#include "pyasyncio_debug.h"

#include <elf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "elffile.h"
#include "objcache.h"
#include "proc.h"
#include "target_src.h"

#define NO16		PYPERF_NO_FIELD
#define TASK_READ_MAX	256		/* pyasyncio.c reads a task's first bytes */
#define STRUCT_MAX	(1u << 24)
#define TP_BASICSIZE	8		/* offsets from tp_name, v3.14.0 */
#define TP_FLAGS	144
#define TP_BASE		232

enum slot {
	TASK_SIZE, TASK_NAME, TASK_AWAITED_BY, TASK_IS_TASK, TASK_AWAITED_BY_IS_SET,
	TASK_CORO, TASK_NODE, INTERP_SIZE, INTERP_TASKS_HEAD, TS_SIZE, TS_RUNNING_LOOP,
	TS_RUNNING_TASK, TS_TASKS_HEAD, NSLOTS
};

static int __attribute__((format(printf, 3, 4))) fail(char *err, size_t errlen,
						       const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "AsyncioDebug section: ");

	if (n < 0 || (size_t)n >= errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - n, fmt, ap);
	va_end(ap);
	return -1;
}

/* The section against the interpreter of the same process. */
static int check_states(const uint64_t *v, const struct py_layout *pl, char *err, size_t errlen)
{
	if (!pl->interp_size || !pl->tstate_size || pl->interp_size == PY_NO_FIELD32)
		return fail(err, errlen, "the interpreter's _Py_DebugOffsets gives no interpreter_state.size or thread_state.size to check it against");
	if (v[INTERP_SIZE] != pl->interp_size)
		return fail(err, errlen, "asyncio_interpreter_state.size is %llu, _Py_DebugOffsets interpreter_state.size is %u: the section is not of this interpreter's build",
			    (unsigned long long)v[INTERP_SIZE], pl->interp_size);
	if (v[TS_SIZE] < pl->tstate_size || v[TS_SIZE] > STRUCT_MAX)
		return fail(err, errlen, "asyncio_thread_state.size is %llu, _Py_DebugOffsets thread_state.size is %u (_PyThreadStateImpl starts with PyThreadState)",
			    (unsigned long long)v[TS_SIZE], pl->tstate_size);
	if (v[TS_RUNNING_TASK] != v[TS_RUNNING_LOOP] + 8)
		return fail(err, errlen, "asyncio_thread_state.asyncio_running_task is %llu, expected asyncio_running_loop + 8 = %llu",
			    (unsigned long long)v[TS_RUNNING_TASK],
			    (unsigned long long)v[TS_RUNNING_LOOP] + 8);
	if (v[TS_RUNNING_LOOP] < pl->tstate_size || v[TS_RUNNING_TASK] % 8 ||
	    v[TS_RUNNING_TASK] + 8 > v[TS_SIZE] || v[TS_RUNNING_TASK] >= NO16)
		return fail(err, errlen, "asyncio_thread_state.asyncio_running_task %llu is not an aligned pointer between thread_state.size %u and asyncio_thread_state.size %llu",
			    (unsigned long long)v[TS_RUNNING_TASK], pl->tstate_size,
			    (unsigned long long)v[TS_SIZE]);
	return 0;
}

static int check_task(const uint64_t *v, const struct py_layout *pl, char *err, size_t errlen)
{
	if (v[TASK_NAME] != v[TASK_CORO] + 8)
		return fail(err, errlen, "asyncio_task_object.task_name is %llu, expected task_coro + 8 = %llu",
			    (unsigned long long)v[TASK_NAME], (unsigned long long)v[TASK_CORO] + 8);
	if (v[TASK_CORO] % 8 || v[TASK_CORO] < pl->code.ob_type + 8u ||
	    v[TASK_NAME] + 8 > v[TASK_SIZE] || v[TASK_NAME] + 8 > TASK_READ_MAX)
		return fail(err, errlen, "asyncio_task_object.task_coro %llu is not an aligned pointer between the object header (%u) and asyncio_task_object.size %llu (at most %u)",
			    (unsigned long long)v[TASK_CORO], pl->code.ob_type + 8u,
			    (unsigned long long)v[TASK_SIZE], TASK_READ_MAX);
	return 0;
}

/* What the section lacks, from _Py_DebugOffsets and the headers. */
int pyasyncio_debug_derive(const struct py_layout *pl, struct pyasyncio_layout *out,
			   char *err, size_t errlen)
{
	unsigned tp_name = pl->code.type_name;

	if (pl->gen_name == NO16 || pl->gen_iframe == NO16 || pl->frame_localsplus == NO16)
		return fail(err, errlen, "the interpreter's _Py_DebugOffsets gives no gen_object.gi_name, gen_object.gi_iframe or interpreter_frame.localsplus (is it older than 3.14?)");
	if (tp_name == NO16 || pl->obj.type_flags != tp_name + TP_FLAGS)
		return fail(err, errlen, "type_object.tp_flags is %u, expected tp_name + %u = %u (struct _typeobject of v3.14.0): tp_basicsize and tp_base cannot be derived",
			    pl->obj.type_flags, TP_FLAGS, tp_name + TP_FLAGS);
	if ((unsigned)pl->gen_iframe + pl->frame_localsplus >= NO16)
		return fail(err, errlen, "gen_object.gi_iframe %u + interpreter_frame.localsplus %u is implausible",
			    pl->gen_iframe, pl->frame_localsplus);
	out->coro_size = (uint16_t)(pl->gen_iframe + pl->frame_localsplus);
	out->cr_code = NO16;
	out->cr_qualname = (uint16_t)(pl->gen_name + 8);
	out->cr_iframe = pl->gen_iframe;
	out->type_base = (uint16_t)(tp_name + TP_BASE);
	out->type_basicsize = (uint16_t)(tp_name + TP_BASICSIZE);
	return 0;
}

int pyasyncio_debug_parse(const uint8_t *sec, size_t len, const struct py_layout *pl,
			  struct pyasyncio_layout *out, char *err, size_t errlen)
{
	uint64_t v[NSLOTS];
	struct pyasyncio_layout l;

	if (len < sizeof(v))
		return fail(err, errlen, "%zu bytes, the struct _Py_AsyncioModuleDebugOffsets of v3.14.0 has %zu",
			    len, sizeof(v));
	memcpy(v, sec, sizeof(v));
	if (check_states(v, pl, err, errlen) || check_task(v, pl, err, errlen))
		return -1;
	memset(&l, 0, sizeof(l));
	l.minor = pl->version_hex >> 16 & 0xff;
	l.task_size = (uint16_t)v[TASK_SIZE];
	l.task_coro = (uint16_t)v[TASK_CORO];
	l.task_name = (uint16_t)v[TASK_NAME];
	l.ts_task = (uint16_t)v[TS_RUNNING_TASK];
	/* The await graph (--async, pyawait.c, which refuses a layout
	 * without it); a char each for the flags. Not the labels' concern. */
	if (v[TASK_AWAITED_BY] && !(v[TASK_AWAITED_BY] % 8) &&
	    v[TASK_AWAITED_BY] + 8 <= v[TASK_SIZE] && v[TASK_IS_TASK] < v[TASK_SIZE] &&
	    v[TASK_AWAITED_BY_IS_SET] < v[TASK_SIZE]) {
		l.task_awaited_by = (uint16_t)v[TASK_AWAITED_BY];
		l.task_awaited_by_is_set = (uint16_t)v[TASK_AWAITED_BY_IS_SET];
		l.task_is_task = (uint16_t)v[TASK_IS_TASK];
	}
	if (pyasyncio_debug_derive(pl, &l, err, errlen))
		return -1;
	*out = l;
	return 0;
}

/* The section of ef into buf: 0, 1 when ef has none, -1 when unreadable. */
static int section_of(struct elf_file *ef, uint8_t *buf, size_t cap, size_t *len)
{
	struct elf_section s;

	if (elf_file_section(ef, PYASYNCIO_SECTION, &s))
		return 1;
	if (s.type == SHT_NOBITS || !s.size || s.size > cap || elf_file_read(ef, s.offset, buf, s.size))
		return -1;
	*len = s.size;
	return 0;
}

/* The section in the file behind mapping m, opened through the object
 * layer when t has one (the file is then opened once for all readers). */
static int section_in_map(const struct py_target *t, const struct proc_map *m, uint8_t *buf,
			  size_t cap, size_t *len)
{
	char path[PATH_MAX];
	struct elf_file *ef;
	int r;

	if (t->objs) {
		const struct oc_obj *o = objcache_map_obj(t->objs, t->src, t->pid, m);

		return o && o->ef ? section_of(o->ef, buf, cap, len) : -1;
	}
	target_map_file(t->src, t->pid, m, path, sizeof(path));
	ef = target_open_elf(t->src, path);
	if (!ef)
		return -1;
	r = section_of(ef, buf, cap, len);
	elf_file_close(ef);
	return r;
}

static int is_asyncio_module(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "_asyncio.", 9) == 0 && strstr(base, ".so") != NULL;
}

int pyasyncio_debug_read(const struct py_target *t, uint8_t *buf, size_t cap, size_t *len)
{
	struct proc_maps maps;
	int r = 1;

	if (proc_maps_read(t->src, t->pid, &maps))
		return -1;
	/* The extension module first; then the interpreter (built in). */
	for (int pass = 0; pass < 2 && r == 1; pass++) {
		for (size_t i = 0; i < maps.n && r == 1; i++) {
			const struct proc_map *m = &maps.v[i];

			if (m->offset || !m->path[0] ||
			    !(pass ? strcmp(m->path, t->module) == 0 : is_asyncio_module(m->path)))
				continue;
			r = section_in_map(t, m, buf, cap, len);
		}
	}
	proc_maps_free(&maps);
	return r;
}
