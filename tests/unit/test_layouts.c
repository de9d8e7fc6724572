/*
 * The layouts no interpreter here can run (3.13t, 3.14, 3.14t, 3.15,
 * 3.15t), tested on synthetic memory images of a small program: a
 * _PyRuntime whose _Py_DebugOffsets is filled with offsetof() of C
 * structures transcribed from CPython's headers (below, with the header
 * of each), an interpreter with two threads, frames with code objects,
 * names and location tables, a GIL. The image is walked with the code the
 * profiler runs: py_layout_choose() (the attach checks), the frame step
 * of the BPF walk (py_frame_decode/classify/flags in bpf/pyperf.h),
 * pysym_resolve() for names, files and lines (per-thread bytecode copies
 * included), pythread_gil_locate() and the BPF program's GIL decision
 * (py_gil_flags), and on 3.14+ the asyncio task each thread runs
 * (pyasyncio_task and its cache, the AsyncioDebug section read from an
 * ELF file of the image's _asyncio module). Memory, maps and files are
 * injected as a struct target_src serving the image, the interface every
 * reader gets its target's memory from.
 * Negative images must give a one-line refusal naming the field and both
 * values.
 *
 * The generated DWARF table (pyoffsets_table.c) is checked entry by
 * entry against the rows: one entry per minor version and build, the
 * build's stable-ABI anchors, object offsets pythread accepts where a row
 * takes them from the table, and a model image whose _Py_DebugOffsets
 * disagrees with the entry (or is of the other build) gets none of them.
 * Thread names themselves on 3.14+ run live (tests/threads.sh, Debian
 * sid's 3.14.10 and 3.15.2).
 */
#include "elffile.h"
#include "pyasyncio.h"
#include "pyasyncio_debug.h"
#include "check.h"
#include "debug_offsets_tags.h"
#include "pylayout.h"
#include "pyoffsets.h"
#include "proc.h"
#include "pyperf.h"
#include "pysym.h"
#include "pyobj.h"
#include "pythread.h"
#include "pywalk.h"
#include "target_src.h"

#include <elf.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- CPython structures, 64-bit ------------------------------------- */

/*
 * Transcribed from CPython's headers at the release tags v3.13.0 (commit
 * 60403a54), v3.14.0 (ebf955df) and v3.15.0rc1 (37e98da7), read in
 * sailfishos-mirror/cpython (a mirror of python/cpython with the release
 * tags; see src/python/pylayout_rows.c). 3.15's code object, frame,
 * string header and GIL are the same as 3.14's at those tags, so one
 * set serves both. PyThreadState and PyInterpreterState are models: the
 * members the profiler reads in their header order, the others folded
 * into padding (their offsets reach the profiler only through the
 * table, which is filled with offsetof() of the model).
 */

/* struct _object, Include/object.h: GIL build; Py_GIL_DISABLED build
 * (3.13.0 calls ob_flags _padding). */
#define HEAD_GIL	int64_t ob_refcnt; uint64_t ob_type;
#define HEAD_FT		uint64_t ob_tid; uint16_t ob_flags; uint8_t ob_mutex, ob_gc_bits; \
			uint32_t ob_ref_local; int64_t ob_ref_shared; uint64_t ob_type;

/* PyASCIIObject.state, Include/cpython/unicodeobject.h: interned:2 at
 * v3.13.0 (both builds) and in GIL builds; under Py_GIL_DISABLED from
 * v3.14.0 an unsigned char, the struct aligned to 4 (_Py_ALIGN_AS(4)). */
#define STATE_BITS	struct { unsigned int interned:2, kind:3, compact:1, ascii:1,	\
			statically_allocated:1, :24; } state;
#define STATE_FT314	struct __attribute__((aligned(4))) { unsigned char interned;	\
			unsigned int kind:3, compact:1, ascii:1,			\
			statically_allocated:1; } state;

/* _PyCode_DEF, Include/cpython/code.h: v3.14.0 adds Py_ssize_t
 * _co_unique_id after _co_monitoring and, under Py_GIL_DISABLED,
 * _PyCodeArray *co_tlbc before co_code_adaptive. */
#define CODE_314	int64_t _co_unique_id;

/* _PyInterpreterFrame: Include/internal/pycore_frame.h at v3.13.0
 * (PyObject *f_executable, int stacktop) and pycore_interpframe_structs.h
 * at v3.14.0 (_PyStackRef f_executable, stackpointer, int32_t tlbc_index
 * under Py_GIL_DISABLED, uint8_t visited). */
#define FRAME_313	uint64_t f_executable, previous, f_funcobj, f_globals,		\
			f_builtins, f_locals, frame_obj, instr_ptr;			\
			int32_t stacktop; uint16_t return_offset; char owner;		\
			uint64_t localsplus[1];
#define FRAME_314(FT)	uint64_t f_executable, previous, f_funcobj, f_globals,		\
			f_builtins, f_locals, frame_obj, instr_ptr, stackpointer;	\
			FT uint16_t return_offset; char owner; uint8_t visited;		\
			uint64_t localsplus[1];

/* struct _gil_runtime_state, Include/internal/pycore_gil.h (the same at
 * the three tags): int enabled first under Py_GIL_DISABLED. */
#define DEFINE(SFX, HEAD, STATE, CODE_NEW, FT_CODE, FRAME, FT_GIL, FT_TASK)	\
struct obj_##SFX { HEAD };							\
struct ascii_##SFX { HEAD int64_t length; int64_t hash; STATE };		\
struct unicode_##SFX { struct ascii_##SFX a; int64_t utf8_length;		\
	uint64_t utf8; uint64_t data; };					\
struct bytes_##SFX { HEAD int64_t ob_size; int64_t ob_shash; char ob_sval[8]; }; \
struct tuple_##SFX { HEAD int64_t ob_size; uint64_t ob_item[1]; };		\
struct type_##SFX { HEAD int64_t ob_size; uint64_t tp_name;			\
	int64_t tp_basicsize, tp_itemsize;					\
	uint64_t tp_dealloc, tp_vectorcall_offset, tp_getattr, tp_setattr,	\
		tp_as_async, tp_repr, tp_as_number, tp_as_sequence,		\
		tp_as_mapping, tp_hash, tp_call, tp_str, tp_getattro,		\
		tp_setattro, tp_as_buffer;					\
	uint64_t tp_flags;							\
	uint64_t tp_doc, tp_traverse, tp_clear, tp_richcompare,			\
		tp_weaklistoffset, tp_iter, tp_iternext, tp_methods,		\
		tp_members, tp_getset, tp_base, tp_rest[20]; };			\
struct code_##SFX { HEAD int64_t ob_size;					\
	uint64_t co_consts, co_names, co_exceptiontable;			\
	int32_t co_flags, co_argcount, co_posonlyargcount, co_kwonlyargcount,	\
		co_stacksize, co_firstlineno, co_nlocalsplus, co_framesize,	\
		co_nlocals, co_ncellvars, co_nfreevars;				\
	uint32_t co_version;							\
	uint64_t co_localsplusnames, co_localspluskinds, co_filename, co_name,	\
		co_qualname, co_linetable, co_weakreflist, co_executors,	\
		_co_cached, _co_instrumentation_version, _co_monitoring;	\
	CODE_NEW								\
	int32_t _co_firsttraceable;						\
	uint64_t co_extra;							\
	FT_CODE									\
	char co_code_adaptive[16]; };						\
struct frame_##SFX { FRAME };							\
struct gil_##SFX { FT_GIL uint64_t interval; uint64_t last_holder;		\
	int32_t locked; uint64_t switch_number; };				\
struct tstate_##SFX { uint64_t prev, next, interp, eval_breaker;		\
	uint64_t pad1[4]; uint64_t current_frame; uint64_t pad2[6];		\
	uint64_t thread_id, native_thread_id, pad3[4]; };			\
struct tsimpl_##SFX { struct tstate_##SFX base; int64_t refcount;		\
	uint64_t c_stack_top, c_stack_soft_limit, c_stack_hard_limit;		\
	uint64_t asyncio_running_loop, asyncio_running_task;			\
	uint64_t asyncio_tasks_head[2]; };					\
struct task_##SFX { HEAD uint64_t fut_loop, fut_callback0, fut_context0,	\
	fut_callbacks, fut_exception, fut_exception_tb, fut_result,		\
	fut_source_tb, fut_cancel_msg, fut_cancelled_exc, fut_awaited_by;	\
	int32_t fut_state; char fut_is_task, fut_awaited_by_is_set;		\
	unsigned fut_log_tb:1, fut_blocking:1;					\
	unsigned task_must_cancel:1, task_log_destroy_pending:1;		\
	int32_t task_num_cancels_requested;					\
	uint64_t task_fut_waiter, task_coro, task_name, task_context;		\
	uint64_t task_node[2]; FT_TASK };					\
struct coro_##SFX { HEAD uint64_t cr_weakreflist, cr_name, cr_qualname;	\
	uint64_t cr_exc_state[2], cr_origin_or_finalizer;			\
	char cr_hooks_inited, cr_closed, cr_running_async;			\
	int8_t cr_frame_state; struct frame_##SFX cr_iframe; };			\
struct interp_##SFX { uint64_t id, next, threads_head, threads_main,		\
	pad1[8], imports_modules, sysdict, builtins, ceval_gil;			\
	struct gil_##SFX _gil; };						\
/* The state word of a compact ASCII str, laid out by the compiler. */	\
static uint32_t ascii_state_##SFX(void)						\
{										\
	struct ascii_##SFX a;							\
	uint32_t w;								\
										\
	memset(&a, 0, sizeof(a));						\
	a.state.kind = 1;							\
	a.state.compact = 1;							\
	a.state.ascii = 1;							\
	memcpy(&w, &a.state, sizeof(w));					\
	return w;								\
}

/*
 * In DEFINE: TaskObj (FutureObj_HEAD, task_tid under Py_GIL_DISABLED),
 * Modules/_asynciomodule.c at v3.14.0 and v3.15.0rc1; PyCoroObject
 * (_PyGenObject_HEAD, _PyErr_StackItem), Include/internal/
 * pycore_interpframe_structs.h and Include/cpython/pystate.h at the same
 * tags; _PyThreadStateImpl (pycore_tstate.h) is a model like
 * PyThreadState: base, then the members up to the asyncio ones.
 */
DEFINE(t313, HEAD_FT, STATE_BITS, , , FRAME_313, int32_t enabled;, uint64_t task_tid;)
DEFINE(g314, HEAD_GIL, STATE_BITS, CODE_314, , FRAME_314(), , )
DEFINE(t314, HEAD_FT, STATE_FT314, CODE_314, uint64_t co_tlbc;, FRAME_314(int32_t tlbc_index;),
       int32_t enabled;, uint64_t task_tid;)

/* _PyCodeArray, Include/cpython/code.h at v3.14.0 (free-threaded). */
struct code_array { int64_t size; uint64_t entries[2]; };

/* ---- the memory image ------------------------------------------------- */

#define IMG_BASE	0x7f1200000000ull
#define IMG_SIZE	(1u << 20)

struct image {
	uint8_t *mem;
	size_t used;
	const char *maps;	/* /proc/PID/maps of the image's process */
	uint8_t elf[1024];	/* the _asyncio extension module: an ELF file */
	size_t elf_len;		/* holding .AsyncioDebug; 0: none */
};

static uint64_t img_alloc(struct image *im, size_t n)
{
	uint64_t a = IMG_BASE + im->used;

	im->used += (n + 63) & ~(size_t)63;
	if (im->used > IMG_SIZE) {
		fprintf(stderr, "image full\n");
		exit(2);
	}
	return a;
}

static void *at(struct image *im, uint64_t addr)
{
	return im->mem + (addr - IMG_BASE);
}

/* The reader the chooser and the line lookup get: only inside the image. */
static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ctx;

	if (addr < IMG_BASE || len > IMG_SIZE || addr - IMG_BASE > IMG_SIZE - len)
		return -1;
	memcpy(buf, im->mem + (addr - IMG_BASE), len);
	return 0;
}

/* process_vm_readv over the image: stops at the first remote element
 * outside it, as the system call does. */
static ssize_t img_readv(void *ctx, pid_t pid, const struct iovec *local, unsigned long nlocal,
			 const struct iovec *remote, unsigned long nremote)
{
	size_t li = 0, loff = 0;
	ssize_t done = 0;

	(void)pid;
	for (unsigned long r = 0; r < nremote; r++) {
		uint64_t addr = (uint64_t)(uintptr_t)remote[r].iov_base;
		size_t left = remote[r].iov_len;
		uint8_t tmp[4096];

		if (left > sizeof(tmp) || img_read(ctx, addr, tmp, left))
			return done ? done : -1;
		for (size_t k = 0; k < left; k++) {
			while (li < nlocal && loff == local[li].iov_len) {
				li++;
				loff = 0;
			}
			if (li == nlocal)
				return done;
			((uint8_t *)local[li].iov_base)[loff++] = tmp[k];
			done++;
		}
	}
	return done;
}

static char *img_read_file(void *ctx, const char *path, size_t max, size_t *len)
{
	struct image *im = ctx;
	size_t n = im->maps ? strlen(im->maps) : 0;
	char *text;

	if (!n || n > max || strcmp(path + strlen(path) - 5, "/maps") || !(text = malloc(n + 1)))
		return NULL;
	memcpy(text, im->maps, n + 1);
	*len = n;
	return text;
}

static void img_map_file(void *ctx, pid_t pid, const struct proc_map *m, char *buf, size_t len)
{
	(void)ctx; (void)pid;
	snprintf(buf, len, "%s", m->path);
}

/* Only the _asyncio module is a file here. */
static struct elf_file *img_open_elf(void *ctx, const char *path)
{
	struct image *im = ctx;

	return im->elf_len && strstr(path, "/_asyncio.") ? elf_file_open_mem(im->elf, im->elf_len)
							   : NULL;
}

static const struct target_src_ops img_ops = {
	.readv = img_readv, .read_file = img_read_file, .map_file = img_map_file,
	.open_elf = img_open_elf,
};

static void put64(struct image *im, uint64_t addr, uint64_t v)
{
	memcpy(at(im, addr), &v, 8);
}

static void put32(struct image *im, uint64_t addr, uint32_t v)
{
	memcpy(at(im, addr), &v, 4);
}

/* ---- one version and build ------------------------------------------- */

struct shape {
	const char *name;		/* "3.14t" */
	uint32_t hex;			/* PY_VERSION_HEX */
	int ft;
	const char *file;		/* the interpreter's file name */
	int table;			/* 313, 314 or 315: which debug struct */
	uint8_t shim_owner;		/* FRAME_OWNED_BY_INTERPRETER */
};

/* Member offsets of the build's structures, taken with offsetof. */
struct offs {
	size_t obj_size, ob_type, var_size, ascii_size, uni_size, state, length;
	uint32_t ascii_state;	/* state word of a compact ASCII str */
	size_t bytes_size, bytes_sval, bytes_ob_size, tuple_size, tuple_item, tuple_ob_size;
	size_t type_size, tp_name, tp_flags;
	size_t code_size, filename, name, qualname, linetable, firstlineno, argcount,
		localsplusnames, localspluskinds, adaptive, tlbc;
	size_t frame_size, previous, executable, instr_ptr, localsplus, owner, stackpointer,
		tlbc_index;
	size_t ts_size, ts_prev, ts_next, ts_interp, ts_frame, ts_tid, ts_ntid;
	size_t is_size, is_next, is_threads, is_main, is_modules, is_sysdict, is_builtins,
		is_ceval_gil, is_gil, gil_enabled, gil_locked, gil_holder;
	struct asyncio_dbg adbg;	/* the AsyncioDebug section (3.14+) */
	size_t tsimpl_size, task_size, task_coro, task_name, coro_basicsize, cr_qualname,
		cr_iframe, cr_name, tp_basicsize, tp_base;
};

#define FILL(SFX, o, ft) do {								\
	o.obj_size = sizeof(struct obj_##SFX);						\
	o.ob_type = offsetof(struct obj_##SFX, ob_type);				\
	o.var_size = offsetof(struct bytes_##SFX, ob_size);				\
	o.ascii_size = sizeof(struct ascii_##SFX);					\
	o.uni_size = sizeof(struct unicode_##SFX);					\
	o.state = offsetof(struct ascii_##SFX, state);					\
	o.length = offsetof(struct ascii_##SFX, length);				\
	o.bytes_size = sizeof(struct bytes_##SFX);					\
	o.bytes_ob_size = offsetof(struct bytes_##SFX, ob_size);			\
	o.bytes_sval = offsetof(struct bytes_##SFX, ob_sval);				\
	o.tuple_size = sizeof(struct tuple_##SFX);					\
	o.tuple_item = offsetof(struct tuple_##SFX, ob_item);				\
	o.tuple_ob_size = offsetof(struct tuple_##SFX, ob_size);			\
	o.type_size = sizeof(struct type_##SFX);					\
	o.tp_name = offsetof(struct type_##SFX, tp_name);				\
	o.tp_flags = offsetof(struct type_##SFX, tp_flags);				\
	o.code_size = sizeof(struct code_##SFX);					\
	o.filename = offsetof(struct code_##SFX, co_filename);				\
	o.name = offsetof(struct code_##SFX, co_name);					\
	o.qualname = offsetof(struct code_##SFX, co_qualname);				\
	o.linetable = offsetof(struct code_##SFX, co_linetable);			\
	o.firstlineno = offsetof(struct code_##SFX, co_firstlineno);			\
	o.argcount = offsetof(struct code_##SFX, co_argcount);				\
	o.localsplusnames = offsetof(struct code_##SFX, co_localsplusnames);		\
	o.localspluskinds = offsetof(struct code_##SFX, co_localspluskinds);		\
	o.adaptive = offsetof(struct code_##SFX, co_code_adaptive);			\
	o.frame_size = sizeof(struct frame_##SFX);					\
	o.previous = offsetof(struct frame_##SFX, previous);				\
	o.executable = offsetof(struct frame_##SFX, f_executable);			\
	o.instr_ptr = offsetof(struct frame_##SFX, instr_ptr);				\
	o.localsplus = offsetof(struct frame_##SFX, localsplus);			\
	o.owner = offsetof(struct frame_##SFX, owner);					\
	o.ts_size = sizeof(struct tstate_##SFX);					\
	o.ts_prev = offsetof(struct tstate_##SFX, prev);				\
	o.ts_next = offsetof(struct tstate_##SFX, next);				\
	o.ts_interp = offsetof(struct tstate_##SFX, interp);				\
	o.ts_frame = offsetof(struct tstate_##SFX, current_frame);			\
	o.ts_tid = offsetof(struct tstate_##SFX, thread_id);				\
	o.ts_ntid = offsetof(struct tstate_##SFX, native_thread_id);			\
	o.is_size = sizeof(struct interp_##SFX);					\
	o.is_next = offsetof(struct interp_##SFX, next);				\
	o.is_threads = offsetof(struct interp_##SFX, threads_head);			\
	o.is_main = offsetof(struct interp_##SFX, threads_main);			\
	o.is_modules = offsetof(struct interp_##SFX, imports_modules);			\
	o.is_sysdict = offsetof(struct interp_##SFX, sysdict);				\
	o.is_builtins = offsetof(struct interp_##SFX, builtins);			\
	o.is_ceval_gil = offsetof(struct interp_##SFX, ceval_gil);			\
	o.is_gil = offsetof(struct interp_##SFX, _gil);					\
	o.gil_locked = offsetof(struct gil_##SFX, locked);				\
	o.gil_holder = offsetof(struct gil_##SFX, last_holder);				\
	o.ascii_state = ascii_state_##SFX();						\
	o.tsimpl_size = sizeof(struct tsimpl_##SFX);					\
	o.task_size = sizeof(struct task_##SFX);					\
	o.task_coro = offsetof(struct task_##SFX, task_coro);				\
	o.task_name = offsetof(struct task_##SFX, task_name);				\
	o.coro_basicsize = offsetof(struct coro_##SFX, cr_iframe) +			\
		offsetof(struct frame_##SFX, localsplus);				\
	o.cr_qualname = offsetof(struct coro_##SFX, cr_qualname);			\
	o.cr_iframe = offsetof(struct coro_##SFX, cr_iframe);				\
	o.cr_name = offsetof(struct coro_##SFX, cr_name);				\
	o.tp_basicsize = offsetof(struct type_##SFX, tp_basicsize);			\
	o.tp_base = offsetof(struct type_##SFX, tp_base);				\
	o.adbg = (struct asyncio_dbg){							\
		.asyncio_task_object = {						\
			.size = sizeof(struct task_##SFX),				\
			.task_name = offsetof(struct task_##SFX, task_name),		\
			.task_awaited_by = offsetof(struct task_##SFX, fut_awaited_by), \
			.task_is_task = offsetof(struct task_##SFX, fut_is_task),	\
			.task_awaited_by_is_set =					\
				offsetof(struct task_##SFX, fut_awaited_by_is_set),	\
			.task_coro = offsetof(struct task_##SFX, task_coro),		\
			.task_node = offsetof(struct task_##SFX, task_node),		\
		},									\
		.asyncio_interpreter_state = { .size = sizeof(struct interp_##SFX) },	\
		.asyncio_thread_state = {						\
			.size = sizeof(struct tsimpl_##SFX),				\
			.asyncio_running_loop =						\
				offsetof(struct tsimpl_##SFX, asyncio_running_loop),	\
			.asyncio_running_task =						\
				offsetof(struct tsimpl_##SFX, asyncio_running_task),	\
			.asyncio_tasks_head =						\
				offsetof(struct tsimpl_##SFX, asyncio_tasks_head),	\
		},									\
	};										\
} while (0)

/* The structures of the shape's tag and build. */
static void fill_offs(struct offs *o, const struct shape *s)
{
	memset(o, 0, sizeof(*o));
	if (s->table == 313) {
		FILL(t313, (*o), 1);
		o->gil_enabled = offsetof(struct gil_t313, enabled);
	} else if (s->ft) {
		FILL(t314, (*o), 1);
		o->gil_enabled = offsetof(struct gil_t314, enabled);
		o->stackpointer = offsetof(struct frame_t314, stackpointer);
		o->tlbc = offsetof(struct code_t314, co_tlbc);
		o->tlbc_index = offsetof(struct frame_t314, tlbc_index);
	} else {
		FILL(g314, (*o), 0);
		o->stackpointer = offsetof(struct frame_g314, stackpointer);
	}
}

/* A table of the shape's version, as CPython's _Py_DebugOffsets_INIT
 * fills it: sizes and offsetof of the structures above. */
static size_t make_table(const struct shape *s, const struct offs *o, uint8_t *buf,
			 uint64_t runtime_size, uint64_t interp_head)
{
	uint64_t ft = s->ft;

#define GROUPS(T)									\
	memcpy(T.cookie, "xdebugpy", 8);						\
	T.version = s->hex; T.free_threaded = ft;					\
	T.runtime_state.size = runtime_size;						\
	T.runtime_state.interpreters_head = interp_head;				\
	T.interpreter_state.size = o->is_size; T.interpreter_state.next = o->is_next;	\
	T.interpreter_state.threads_head = o->is_threads;				\
	T.interpreter_state.imports_modules = o->is_modules;				\
	T.interpreter_state.sysdict = o->is_sysdict;					\
	T.interpreter_state.builtins = o->is_builtins;					\
	T.interpreter_state.ceval_gil = o->is_ceval_gil;				\
	T.interpreter_state.gil_runtime_state = o->is_gil;				\
	T.interpreter_state.gil_runtime_state_enabled = ft ? o->gil_enabled : 0;	\
	T.interpreter_state.gil_runtime_state_locked = o->is_gil + o->gil_locked;	\
	T.interpreter_state.gil_runtime_state_holder = o->is_gil + o->gil_holder;	\
	T.thread_state.size = o->ts_size; T.thread_state.prev = o->ts_prev;		\
	T.thread_state.next = o->ts_next; T.thread_state.interp = o->ts_interp;		\
	T.thread_state.current_frame = o->ts_frame;					\
	T.thread_state.thread_id = o->ts_tid;						\
	T.thread_state.native_thread_id = o->ts_ntid;					\
	T.interpreter_frame.size = o->frame_size;					\
	T.interpreter_frame.previous = o->previous;					\
	T.interpreter_frame.executable = o->executable;					\
	T.interpreter_frame.instr_ptr = o->instr_ptr;					\
	T.interpreter_frame.localsplus = o->localsplus;					\
	T.interpreter_frame.owner = o->owner;						\
	T.code_object.size = o->code_size; T.code_object.filename = o->filename;	\
	T.code_object.name = o->name; T.code_object.qualname = o->qualname;		\
	T.code_object.linetable = o->linetable;						\
	T.code_object.firstlineno = o->firstlineno;					\
	T.code_object.argcount = o->argcount;						\
	T.code_object.localsplusnames = o->localsplusnames;				\
	T.code_object.localspluskinds = o->localspluskinds;				\
	T.code_object.co_code_adaptive = o->adaptive;					\
	T.pyobject.size = o->obj_size; T.pyobject.ob_type = o->ob_type;			\
	T.type_object.size = o->type_size; T.type_object.tp_name = o->tp_name;		\
	T.type_object.tp_flags = o->tp_flags;						\
	T.tuple_object.size = o->tuple_size; T.tuple_object.ob_item = o->tuple_item;	\
	T.tuple_object.ob_size = o->tuple_ob_size;					\
	T.list_object.size = o->tuple_size; T.list_object.ob_item = o->tuple_item;	\
	T.list_object.ob_size = o->tuple_ob_size;					\
	T.dict_object.size = 48; T.dict_object.ma_keys = o->obj_size + 16;		\
	T.dict_object.ma_values = o->obj_size + 24;					\
	T.float_object.size = o->obj_size + 8; T.float_object.ob_fval = o->obj_size;	\
	T.long_object.size = o->obj_size + 16; T.long_object.lv_tag = o->obj_size;	\
	T.long_object.ob_digit = o->obj_size + 8;					\
	T.bytes_object.size = o->bytes_size; T.bytes_object.ob_size = o->bytes_ob_size; \
	T.bytes_object.ob_sval = o->bytes_sval;						\
	T.unicode_object.size = o->uni_size; T.unicode_object.state = o->state;		\
	T.unicode_object.length = o->length;						\
	T.unicode_object.asciiobject_size = o->ascii_size;				\
	T.gc.size = 0x100; T.gc.collecting = 8;

	if (s->table == 313) {
		struct dbg313 t = { 0 };

		GROUPS(t)
		memcpy(buf, &t, sizeof(t));
		return sizeof(t);
	}
	if (s->table == 314) {
		struct dbg314 t = { 0 };

		GROUPS(t)
		t.interpreter_state.threads_main = o->is_main;
		t.interpreter_frame.stackpointer = o->stackpointer;
		t.interpreter_frame.tlbc_index = ft ? o->tlbc_index : 0;
		t.code_object.co_tlbc = ft ? o->tlbc : 0;
		t.set_object.size = 200;
		t.gen_object.size = o->cr_iframe + o->frame_size;
		t.gen_object.gi_name = o->cr_name;
		t.gen_object.gi_iframe = o->cr_iframe;
		t.llist_node.prev = 8;
		memcpy(buf, &t, sizeof(t));
		return sizeof(t);
	}
	struct dbg315 t = { 0 };

	GROUPS(t)
	t.interpreter_state.threads_main = o->is_main;
	t.interpreter_frame.stackpointer = o->stackpointer;
	t.interpreter_frame.tlbc_index = ft ? o->tlbc_index : 0;
	t.code_object.co_tlbc = ft ? o->tlbc : 0;
	t.type_object.tp_basicsize = o->tp_basicsize;
	t.heap_type_object.size = o->type_size + 64;
	t.heap_type_object.ht_cached_keys = o->type_size + 8;
	t.unicode_object.compactunicodeobject_size = o->ascii_size + 16;
	t.set_object.size = 200;
	t.gen_object.size = o->cr_iframe + o->frame_size;
	t.gen_object.gi_name = o->cr_name;
	t.gen_object.gi_iframe = o->cr_iframe;
	t.llist_node.prev = 8;
	memcpy(buf, &t, sizeof(t));
	return sizeof(t);
#undef GROUPS
}

/* ---- the program ------------------------------------------------------ */

#define RUNTIME_SIZE	0x2000
#define RUNTIME_IHEAD	0x1800		/* _PyRuntime.interpreters.head */
#define TID1		1001
#define TID2		1002

struct program {
	struct image im;
	struct offs o;
	const struct shape *s;
	uint64_t runtime, interp, ts[2], str_type, leaf1, leaf2;
	uint64_t work, mainc, helper, run;	/* code objects */
	uint64_t task[2];			/* 3.14+: each thread's running task */
	size_t table_len;
};

static uint64_t make_type(struct program *p, const char *name)
{
	uint64_t t = img_alloc(&p->im, p->o.type_size), n = img_alloc(&p->im, strlen(name) + 1);

	memcpy(at(&p->im, n), name, strlen(name) + 1);
	put64(&p->im, t + p->o.tp_name, n);
	return t;
}

/* A compact ASCII str (state: kind 1, compact, ascii). */
static uint64_t make_str(struct program *p, const char *s)
{
	size_t n = strlen(s);
	uint64_t a = img_alloc(&p->im, p->o.ascii_size + n + 1);

	put64(&p->im, a + p->o.ob_type, p->str_type);
	put64(&p->im, a + p->o.length, n);
	put32(&p->im, a + p->o.state, p->o.ascii_state);
	memcpy(at(&p->im, a + p->o.ascii_size), s, n + 1);
	return a;
}

/*
 * The location table of every code object here (3.11+ format, entries
 * of kind 13 "no columns", two code units each, line delta as a signed
 * varint): units 0-1 line first, 2-3 first + 2, 4-5 first + 3.
 */
static const uint8_t linetable[] = { 0xe9, 0x00, 0xe9, 0x04, 0xe9, 0x02 };

static uint64_t make_code(struct program *p, const char *qualname, int firstlineno)
{
	const struct offs *o = &p->o;
	uint64_t c = img_alloc(&p->im, o->code_size);
	uint64_t b = img_alloc(&p->im, o->bytes_size + sizeof(linetable));

	put64(&p->im, b + o->bytes_ob_size, sizeof(linetable));
	memcpy(at(&p->im, b + o->bytes_sval), linetable, sizeof(linetable));
	put64(&p->im, c + o->filename, make_str(p, "app.py"));
	put64(&p->im, c + o->name, make_str(p, strrchr(qualname, '.') ?
					    strrchr(qualname, '.') + 1 : qualname));
	put64(&p->im, c + o->qualname, make_str(p, qualname));
	put64(&p->im, c + o->linetable, b);
	put32(&p->im, c + o->firstlineno, (uint32_t)firstlineno);
	return c;
}

/* A frame at code unit `unit` of code (of bytecode copy `copy`, whose
 * start is `base`), linked to previous. */
static uint64_t make_frame(struct program *p, uint64_t code, uint64_t exec_bits, uint64_t base,
			   unsigned unit, int32_t copy, uint8_t owner, uint64_t previous)
{
	const struct offs *o = &p->o;
	uint64_t f = img_alloc(&p->im, o->frame_size);

	put64(&p->im, f + o->executable, code ? code | exec_bits : exec_bits);
	put64(&p->im, f + o->previous, previous);
	put64(&p->im, f + o->instr_ptr, base + 2ull * unit);
	*(char *)at(&p->im, f + o->owner) = (char)owner;
	if (p->s->ft && o->tlbc_index)
		put32(&p->im, f + o->tlbc_index, (uint32_t)copy);
	return f;
}

/* Thread 2's bytecode copy 1 (free-threaded 3.14+): co_tlbc points to a
 * _PyCodeArray { size 2, entries { co_code_adaptive, copy } }. */
static uint64_t make_copy(struct program *p, uint64_t code)
{
	uint64_t arr = img_alloc(&p->im, sizeof(struct code_array)), copy = img_alloc(&p->im, 16);

	put64(&p->im, arr + offsetof(struct code_array, size), 2);
	put64(&p->im, arr + offsetof(struct code_array, entries[0]), code + p->o.adaptive);
	put64(&p->im, arr + offsetof(struct code_array, entries[1]), copy);
	put64(&p->im, code + p->o.tlbc, arr);
	return copy;
}

static uint64_t make_tstate(struct program *p, uint64_t ntid, uint64_t frame, uint64_t next)
{
	uint64_t t = img_alloc(&p->im, p->o.tsimpl_size);

	put64(&p->im, t + p->o.ts_interp, p->interp);
	put64(&p->im, t + p->o.ts_frame, frame);
	put64(&p->im, t + p->o.ts_ntid, ntid);
	put64(&p->im, t + p->o.ts_tid, 0x7f0000001000ull + ntid);
	put64(&p->im, t + p->o.ts_next, next);
	return t;
}

/* ---- asyncio (3.14+) -------------------------------------------------- */

#define ASYNCIO_SO	"/opt/py/lib/python3.14/lib-dynload/_asyncio.cpython-314-x86_64-linux-gnu.so"
#define ASYNCIO_MAPS	"7f1300000000-7f1300001000 r--p 00000000 08:01 42 " ASYNCIO_SO "\n"

/* A minimal ELF file holding one section, as the _asyncio module holds
 * .AsyncioDebug: header, the section's bytes, the names, three section
 * headers (none, the section, the names). Its size, or 0. */
static size_t make_elf(uint8_t *out, size_t cap, const void *sec, size_t len)
{
	static const char names[] = "\0" PYASYNCIO_SECTION "\0.shstrtab";
	size_t off_names = sizeof(Elf64_Ehdr) + len;
	size_t off_sh = (off_names + sizeof(names) + 7) & ~(size_t)7;
	Elf64_Ehdr eh = { .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			  .e_shoff = off_sh, .e_ehsize = sizeof(Elf64_Ehdr),
			  .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 3, .e_shstrndx = 2 };
	Elf64_Shdr sh[3] = {
		{ 0 },
		{ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_WRITE,
		  .sh_offset = sizeof(Elf64_Ehdr), .sh_size = len, .sh_addralign = 8 },
		{ .sh_name = 2 + sizeof(PYASYNCIO_SECTION) - 1, .sh_type = SHT_STRTAB,
		  .sh_offset = off_names, .sh_size = sizeof(names), .sh_addralign = 1 },
	};

	if (off_sh + sizeof(sh) > cap)
		return 0;
	memset(out, 0, off_sh + sizeof(sh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(out, &eh, sizeof(eh));
	memcpy(out + sizeof(eh), sec, len);
	memcpy(out + off_names, names, sizeof(names));
	memcpy(out + off_sh, sh, sizeof(sh));
	return off_sh + sizeof(sh);
}

/* A coroutine whose frame runs code (f_executable a tagged reference). */
static uint64_t make_coro(struct program *p, uint64_t type, uint64_t code, const char *qualname)
{
	const struct offs *o = &p->o;
	uint64_t c = img_alloc(&p->im, o->coro_basicsize + 16);

	put64(&p->im, c + o->ob_type, type);
	put64(&p->im, c + o->cr_qualname, make_str(p, qualname));
	put64(&p->im, c + o->cr_iframe + o->executable, code | 1);
	return c;
}

static uint64_t make_task(struct program *p, uint64_t type, uint64_t name, uint64_t coro)
{
	uint64_t t = img_alloc(&p->im, p->o.task_size);

	put64(&p->im, t + p->o.ob_type, type);
	put64(&p->im, t + p->o.task_name, name);
	put64(&p->im, t + p->o.task_coro, coro);
	return t;
}

/*
 * Thread 1 runs the task "fetch-users", an _asyncio.Task, of coroutine
 * Worker.work; thread 2 a task of a Task subclass left with its default
 * name (an int until get_name() formats it), of coroutine helper. The
 * _asyncio module is mapped and its file holds the section.
 */
static void make_asyncio(struct program *p)
{
	const struct offs *o = &p->o;
	uint64_t task_t = make_type(p, "_asyncio.Task"), sub_t = make_type(p, "MyTask");
	uint64_t coro_t = make_type(p, "coroutine"), int_t = make_type(p, "int");
	uint64_t n = img_alloc(&p->im, o->obj_size + 16);

	put64(&p->im, task_t + o->tp_basicsize, o->task_size);
	put64(&p->im, sub_t + o->tp_basicsize, o->task_size + 16);
	put64(&p->im, sub_t + o->tp_base, task_t);
	put64(&p->im, coro_t + o->tp_basicsize, o->coro_basicsize);
	put64(&p->im, n + o->ob_type, int_t);
	p->task[0] = make_task(p, task_t, make_str(p, "fetch-users"),
			       make_coro(p, coro_t, p->work, "Worker.work"));
	p->task[1] = make_task(p, sub_t, n, make_coro(p, coro_t, p->helper, "helper"));
	for (int i = 0; i < 2; i++)
		put64(&p->im, p->ts[i] + o->adbg.asyncio_thread_state.asyncio_running_task,
		      p->task[i]);
	p->im.maps = ASYNCIO_MAPS;
	p->im.elf_len = make_elf(p->im.elf, sizeof(p->im.elf), &o->adbg, sizeof(o->adbg));
}

/*
 * Thread 1: work (line 12, f_executable tagged as a borrowed reference
 * on 3.14+) <- main (line 13) <- shim. Thread 2: helper (line 13 in
 * bytecode copy 1 on free-threaded 3.14+, else line 10) <- shim (owner
 * 4, FRAME_OWNED_BY_CSTACK, on 3.14; 3.15 has no such value) <- run
 * (line 12) <- shim (3.15: also every thread's base_frame). The GIL is
 * held by thread 1; gil_enabled says whether a free-threaded GIL is on.
 */
static void make_program(struct program *p, const struct shape *s, int gil_enabled)
{
	const struct offs *o = &p->o;
	uint64_t work, mainc, helper, run, base2, f, g, t2, dict;
	uint64_t tag = s->table >= 314 ? 1 : 0;
	int copies = s->ft && s->table >= 314;

	memset(p->im.mem, 0, IMG_SIZE);
	p->im.used = 0;
	p->im.maps = NULL;
	p->im.elf_len = 0;
	p->s = s;
	fill_offs(&p->o, s);
	p->runtime = img_alloc(&p->im, RUNTIME_SIZE);
	p->interp = img_alloc(&p->im, o->is_size);
	put64(&p->im, p->runtime + RUNTIME_IHEAD, p->interp);
	p->str_type = make_type(p, "str");
	dict = img_alloc(&p->im, 64);
	put64(&p->im, dict + o->ob_type, make_type(p, "dict"));
	put64(&p->im, p->interp + o->is_sysdict, dict);
	work = make_code(p, "Worker.work", 10);
	mainc = make_code(p, "<module>", 10);
	helper = make_code(p, "helper", 10);
	run = make_code(p, "Thread.run", 10);
	base2 = copies ? make_copy(p, helper) : helper + o->adaptive;

	f = make_frame(p, 0, 0, 0, 0, 0, s->shim_owner, 0);
	f = make_frame(p, mainc, 0, mainc + o->adaptive, 4, 0, 0, f);
	p->leaf1 = make_frame(p, work, tag, work + o->adaptive, 2, 0, 0, f);
	f = make_frame(p, 0, 0, 0, 0, 0, s->shim_owner, 0);
	f = make_frame(p, run, 0, run + o->adaptive, 2, 0, 0, f);
	f = make_frame(p, 0, 0, 0, 0, 0, s->table == 314 ? 4 : s->shim_owner, f);
	p->leaf2 = make_frame(p, helper, 0, base2, copies ? 4 : 0, copies, 0, f);

	t2 = make_tstate(p, TID2, p->leaf2, 0);
	p->ts[0] = make_tstate(p, TID1, p->leaf1, t2);
	p->ts[1] = t2;
	put64(&p->im, p->interp + o->is_threads, p->ts[0]);
	put64(&p->im, p->interp + o->is_main, p->ts[0]);
	g = p->interp + o->is_gil;
	put64(&p->im, p->interp + o->is_ceval_gil, g);
	put32(&p->im, g + o->gil_locked, 1);
	put64(&p->im, g + o->gil_holder, p->ts[0]);
	if (s->ft)
		put32(&p->im, g + o->gil_enabled, (uint32_t)gil_enabled);
	p->work = work;
	p->mainc = mainc;
	p->helper = helper;
	p->run = run;
	if (s->table >= 314)
		make_asyncio(p);
	p->table_len = make_table(s, o, at(&p->im, p->runtime), RUNTIME_SIZE, RUNTIME_IHEAD);
}

static int choose(struct program *p, const char *file, uint32_t py_version, struct py_layout *l,
		  char *err, size_t errlen)
{
	struct py_facts f = {
		.version_hex = py_version,
		.version_exact = 1,
		.ft_name = py_ft_from_name(file),
		.runtime_addr = p->runtime,
		.read = img_read,
		.read_ctx = &p->im,
	};

	err[0] = 0;
	return py_layout_choose(&f, l, err, errlen);
}

/* ---- walking it as the profiler does ----------------------------------- */

static uint64_t rd64(struct program *p, uint64_t addr)
{
	uint64_t v = 0;

	return img_read(&p->im, addr, &v, 8) ? 0 : v;
}

/* The target the profiler would have after attaching to the image. */
static void make_target(struct program *p, const struct py_layout *l, struct py_target *t,
			struct target_src *src)
{
	*src = (struct target_src){ .ops = &img_ops, .ctx = &p->im };
	memset(t, 0, sizeof(*t));
	t->src = src;
	t->pid = 4242;
	t->runtime_addr = p->runtime;
	t->layout = *l;
	t->bpf.off = l->walk;
	t->bpf.interp_head_addr = p->runtime + l->runtime_interp_head;
}

/* The user-space walk (src/python/pywalk.c, wall mode's blocked threads)
 * gives the n frames the walk below found, or, bad, stops at a bad frame
 * after them. */
static void same_as_pywalk(const struct py_target *t, uint64_t ntid,
			   const struct py_frame_rec *rec, unsigned n, int bad)
{
	struct py_sample *s = calloc(1, sizeof(*s));
	int same;

	if (!s) {
		check(0, "memory for a record");
		return;
	}
	unsigned k = 0;

	pywalk_thread(t, (uint32_t)ntid, s);
	same = !(s->h.flags & SAMPLE_F_READ_ERR) && !!(s->h.flags & SAMPLE_F_BAD_CHAIN) == bad;
	/* Its empty groups (an eval-loop call between frames, 3.15's base
	 * frame) are the BPF walk's too; the walk below has none. */
	for (unsigned i = 0; same && i < s->h.nframes; i++) {
		if (s->frames[i].flags & FRAME_F_EMPTY)
			continue;
		same = k < n && s->frames[i].code == rec[k].code &&
		       s->frames[i].lasti == rec[k].lasti &&
		       (s->frames[i].flags & FRAME_F_ENTRY) == (rec[k].flags & FRAME_F_ENTRY) &&
		       s->frames[i].tlbc == rec[k].tlbc;
		k++;
	}
	same = same && k == n;
	check(same, "user-space walk of thread %llu: %u frames%s (flags 0x%x), expected %u%s",
	      (unsigned long long)ntid, k,
	      s->h.flags & SAMPLE_F_BAD_CHAIN ? " then a bad one" : "", s->h.flags, n,
	      bad ? " then a bad one" : "");
	free(s);
}

/* "qualname@file:line" per frame, innermost first, "*" after an eval-loop
 * entry frame, ";" between; "BAD" when the walk refused a frame. */
static void walk_thread(struct program *p, const struct py_layout *l, uint64_t ntid,
			char *out, size_t len, uint64_t *tstate)
{
	const struct py_walk_offsets *w = &l->walk;
	uint8_t win[PYPERF_FRAME_WIN + 8];
	struct py_frame_rec rec[16];
	struct pysym_cache *syms = pysym_cache_new(64);
	struct target_src src;
	struct py_target t;
	uint64_t ts, frame;
	unsigned n = 0;

	out[0] = 0;
	make_target(p, l, &t, &src);
	ts = rd64(p, rd64(p, t.bpf.interp_head_addr) + w->interp_tstate_head);
	for (int i = 0; ts && i < 16 && rd64(p, ts + w->ts_native_thread_id) != ntid; i++)
		ts = rd64(p, ts + w->ts_next);
	*tstate = ts;
	frame = ts ? rd64(p, ts + w->ts_frame) : 0;
	for (int i = 0; frame && i < 64 && n < 16; i++) {
		struct py_frame_fields f;
		int v;

		memset(win, 0, sizeof(win));
		if (img_read(&p->im, frame, win, w->frame_span)) {
			snprintf(out, len, "READ");
			goto done;
		}
		py_frame_decode(w, win, &f);
		frame = f.back;
		v = py_frame_classify(w, &f);
		if (v == PY_FRAME_BAD) {
			snprintf(out, len, "BAD");
			same_as_pywalk(&t, ntid, rec, n, 1);
			goto done;
		}
		if (v == PY_FRAME_SHIM) {
			if (n)
				rec[n - 1].flags |= FRAME_F_ENTRY;
			continue;
		}
		rec[n] = (struct py_frame_rec){ .code = f.code, .lasti = f.lasti,
						 .flags = py_frame_flags(w, &f), .tlbc = f.tlbc };
		n++;
	}
	same_as_pywalk(&t, ntid, rec, n, 0);
	for (unsigned i = 0; i < n; i++) {
		struct pyframe_info fi;
		int r = pysym_resolve(syms, &t, rec[i].code, rec[i].lasti, 0, rec[i].tlbc, &fi);

		snprintf(out + strlen(out), len - strlen(out), "%s%s@%s:%d%s", i ? ";" : "",
			 r == 0 ? fi.name : r == 1 ? "[not started]" : "[unreadable]",
			 r == 0 ? fi.filename : "", r == 0 ? fi.line : -1,
			 rec[i].flags & FRAME_F_ENTRY ? "*" : "");
	}
done:
	pysym_cache_free(syms);
}

/* The GIL words at the addresses pythread_gil_locate() finds, decided by
 * the BPF program's py_gil_flags(). */
static const char *gil_label(struct program *p, const struct py_layout *l, uint64_t tstate)
{
	struct py_gil_read r = { 0 };
	struct pythread_gil g;
	struct target_src src;
	struct py_target t;
	uint32_t flags;

	make_target(p, l, &t, &src);
	if (pythread_gil_locate(&t, &g))
		return "not located";
	if (g.enabled_addr)
		r.has_enabled = !img_read(&p->im, g.enabled_addr, &r.enabled, 4);
	if (g.locked_addr && g.holder_addr)
		r.has_locked = !img_read(&p->im, g.locked_addr, &r.locked, 4) &&
			       !img_read(&p->im, g.holder_addr, &r.holder, 8);
	if (g.current_addr)
		r.has_current = !img_read(&p->im, g.current_addr, &r.current, 8);
	flags = py_gil_flags(&r, tstate);
	return flags & SAMPLE_F_GIL_UNKNOWN ? "unknown" : flags & SAMPLE_F_GIL_OFF ? "disabled" :
	       flags & SAMPLE_F_GIL_HELD ? "held" : "not_held";
}

/* ---- the tests -------------------------------------------------------- */

static const struct shape shapes[] = {
	{ "3.13t", 0x030d00f0, 1, "/opt/py/lib/libpython3.13t.so.1.0", 313, 3 },
	{ "3.14", 0x030e00f0, 0, "/opt/py/bin/python3.14", 314, 3 },
	{ "3.14t", 0x030e00f0, 1, "/opt/py/bin/python3.14t", 314, 3 },
	{ "3.15", 0x030f00f0, 0, "/opt/py/lib/libpython3.15.so.1.0", 315, 3 },
	{ "3.15t", 0x030f00f0, 1, "/opt/py/lib/libpython3.15t.so.1.0", 315, 3 },
};

static void test_shape(struct program *p, const struct shape *s)
{
	int copies = s->ft && s->table >= 314;
	const char *want2 = copies ? "helper@app.py:13*;Thread.run@app.py:12*" :
				     "helper@app.py:10*;Thread.run@app.py:12*";
	char err[512], got[256];
	struct py_layout l;
	uint64_t ts1, ts2;
	int ret;

	make_program(p, s, 0);
	ret = choose(p, s->file, s->hex, &l, err, sizeof(err));
	check(ret == 0, "%s: layout chosen (%s)", s->name, ret ? err : l.source);
	if (ret)
		return;
	check(l.free_threaded == s->ft && l.line_kind == PY_LINES_311 &&
	      l.walk.entry_kind == PY_ENTRY_SHIM && l.walk.owner_shim == 3 &&
	      l.walk.code_tag_mask == (s->table >= 314 ? 3 : 0),
	      "%s: behaviour from its row (ft %u, lines %u, entry %u/%u, tag mask %u)", s->name,
	      l.free_threaded, l.line_kind, l.walk.entry_kind, l.walk.owner_shim,
	      l.walk.code_tag_mask);
	check((l.walk.frame_tlbc_index != PYPERF_NO_FIELD) == copies &&
	      (l.code.co_tlbc != PYPERF_NO_FIELD) == copies,
	      "%s: per-thread bytecode fields %s", s->name, copies ? "present" : "absent");
	walk_thread(p, &l, TID1, got, sizeof(got), &ts1);
	check(strcmp(got, "Worker.work@app.py:12;<module>@app.py:13*") == 0,
	      "%s: thread 1 stack %s", s->name, got);
	walk_thread(p, &l, TID2, got, sizeof(got), &ts2);
	check(strcmp(got, want2) == 0, "%s: thread 2 stack %s (want %s)", s->name, got, want2);
	check(ts1 == p->ts[0] && ts2 == p->ts[1], "%s: thread states found by native id",
	      s->name);
	if (s->ft) {
		check(strcmp(gil_label(p, &l, ts1), "disabled") == 0 &&
		      strcmp(gil_label(p, &l, ts2), "disabled") == 0,
		      "%s: GIL disabled at run time: gil=%s/%s", s->name, gil_label(p, &l, ts1),
		      gil_label(p, &l, ts2));
		make_program(p, s, 1);
	}
	check(strcmp(gil_label(p, &l, ts1), "held") == 0 &&
	      strcmp(gil_label(p, &l, ts2), "not_held") == 0,
	      "%s: GIL enabled: thread 1 gil=%s, thread 2 gil=%s", s->name,
	      gil_label(p, &l, ts1), gil_label(p, &l, ts2));
}

/* err names what it must and is one line. */
static void refused(int ret, const char *err, const char *what, const char *w1,
		    const char *w2, const char *w3)
{
	int ok = ret != 0 && strstr(err, w1) && (!w2 || strstr(err, w2)) &&
		 (!w3 || strstr(err, w3)) && !strchr(err, '\n');

	check(ok, "%s refused: %s", what, err[0] ? err : "(no error)");
}

static void put_slot(struct program *p, size_t off, uint64_t v)
{
	put64(&p->im, p->runtime + off, v);
}

static void test_refusals(struct program *p)
{
	const struct shape *s314 = &shapes[1], *s314t = &shapes[2], *s315 = &shapes[3];
	char err[512], got[256];
	struct py_layout l;
	uint64_t ts;
	int ret;

	make_program(p, s314, 0);
	memcpy(at(&p->im, p->runtime), "xdebugpY", 8);
	ret = choose(p, s314->file, s314->hex, &l, err, sizeof(err));
	refused(ret, err, "wrong cookie", "cookie", NULL, NULL);

	make_program(p, s314, 0);
	put_slot(p, offsetof(struct dbg314, interpreter_frame.size), p->o.owner);
	ret = choose(p, s314->file, s314->hex, &l, err, sizeof(err));
	refused(ret, err, "interpreter_frame.size below owner", "interpreter_frame.owner",
		"interpreter_frame.size", "beyond");

	make_program(p, s314, 0);
	put_slot(p, offsetof(struct dbg314, set_object.size), 0);
	ret = choose(p, s314->file, s314->hex, &l, err, sizeof(err));
	refused(ret, err, "set_object.size 0 (a group the profiler does not use)",
		"set_object.size 0", "implausible", NULL);

	make_program(p, s314, 0);
	put_slot(p, offsetof(struct dbg314, free_threaded), 1);
	ret = choose(p, "/opt/py/bin/python3", s314->hex, &l, err, sizeof(err));
	refused(ret, err, "GIL image with free_threaded = 1", "pyobject.size is 16", "32",
		"free_threaded = 1");

	make_program(p, s314t, 0);
	ret = choose(p, "/opt/py/bin/python3.14", s314t->hex, &l, err, sizeof(err));
	refused(ret, err, "free-threaded table in a file named like a GIL build",
		"free_threaded is 1", "GIL build", "free_threaded 0");

	make_program(p, s314, 0);
	put_slot(p, offsetof(struct dbg314, version), 0x030e00c1);
	ret = choose(p, s314->file, 0x030e00f0, &l, err, sizeof(err));
	refused(ret, err, "table of 3.14.0rc1 in a 3.14.0 interpreter", "version",
		"0x030e00c1 (3.14.0rc1)", "0x030e00f0 (3.14.0)");

	make_program(p, s314, 0);
	memcpy(at(&p->im, rd64(p, rd64(p, rd64(p, p->interp + p->o.is_sysdict) +
					    p->o.ob_type) + p->o.tp_name)), "list", 5);
	ret = choose(p, s314->file, s314->hex, &l, err, sizeof(err));
	refused(ret, err, "sys.__dict__ whose type is not dict", "sysdict", "\"list\"",
		"\"dict\"");

	/* The 3.14 shape applied to 3.15, and 3.15's to 3.14: the anchors
	 * and sizes catch it. */
	make_program(p, s314, 0);
	put_slot(p, offsetof(struct dbg314, version), s315->hex);
	ret = choose(p, s315->file, s315->hex, &l, err, sizeof(err));
	refused(ret, err, "3.14-shaped table labelled 3.15", "3.15.0", "expected layout", NULL);
	make_program(p, s315, 0);
	put_slot(p, offsetof(struct dbg315, version), s314->hex);
	ret = choose(p, s314->file, s314->hex, &l, err, sizeof(err));
	refused(ret, err, "3.15-shaped table labelled 3.14", "3.14.0", NULL, NULL);

	/* Tagged garbage in f_executable: a tagged int, NULL, the invalid tag. */
	static const uint64_t garbage[] = { (5 << 2) | 3, 1, 0, 0x1000 | 2 };

	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		make_program(p, s314, 0);
		ret = choose(p, s314->file, s314->hex, &l, err, sizeof(err));
		put64(&p->im, p->leaf1 + p->o.executable, garbage[i]);
		walk_thread(p, &l, TID1, got, sizeof(got), &ts);
		check(ret == 0 && strcmp(got, "BAD") == 0,
		      "f_executable 0x%llx refused by the frame step: %s",
		      (unsigned long long)garbage[i], got);
	}
}

/* ---- asyncio task labels (3.14+) --------------------------------------- */

static int asyncio_target(struct program *p, const struct shape *s, struct py_layout *l,
			  struct py_target *t, struct target_src *src)
{
	char err[512];

	if (choose(p, s->file, s->hex, l, err, sizeof(err))) {
		check(0, "%s: layout chosen for asyncio: %s", s->name, err);
		return -1;
	}
	make_target(p, l, t, src);
	t->major = 3;
	t->minor = s->hex >> 16 & 0xff;
	return 0;
}

/* What the BPF program copies of task k at a sample (bpf/pyperf.h). */
static void capture_of(struct program *p, int k, struct py_task_capture *cap)
{
	const struct offs *o = &p->o;
	uint64_t task = p->task[k], coro, name, qual;

	memset(cap, 0, sizeof(*cap));
	memcpy(&coro, at(&p->im, task + o->task_coro), 8);
	memcpy(&name, at(&p->im, task + o->task_name), 8);
	memcpy(&qual, at(&p->im, coro + o->cr_qualname), 8);
	cap->task = task;
	memcpy(&cap->task_type, at(&p->im, task + o->ob_type), 8);
	cap->coro = coro;
	cap->name_len = cap->qual_len = PY_CAPTURE_TASK_STR;
	memcpy(cap->name, at(&p->im, name), PY_CAPTURE_TASK_STR);
	memcpy(cap->qual, at(&p->im, qual), PY_CAPTURE_TASK_STR);
}

/* Labels from captures: the task's name, "Task-* (qualname)" for a
 * default one (an int), none for an object that is no Task; and the
 * source the BPF program is given (the thread state's running task). */
static void test_asyncio_capture(struct program *p, const struct shape *s,
				 struct pyasyncio_cache *c, const struct py_target *t)
{
	struct py_task_capture cap;
	struct py_task_src src;
	const char *a, *b, *x;
	size_t n;
	int pid;

	capture_of(p, 0, &cap);
	a = pyasyncio_cache_capture(c, t, TID1, p->ts[0], &cap, 1000);
	a = a ? strdup(a) : NULL;
	capture_of(p, 1, &cap);
	b = pyasyncio_cache_capture(c, t, TID2, p->ts[1], &cap, 1000);
	check(a && strcmp(a, "fetch-users") == 0 && b && strcmp(b, "Task-* (helper)") == 0,
	      "%s: captured labels %s and %s", s->name, a ? a : "(none)", b ? b : "(none)");
	free((void *)a);
	/* No qualname copied (the program judged the name no default one):
	 * the name alone; for a default name, no label. */
	capture_of(p, 0, &cap);
	cap.qual_len = 0;
	a = pyasyncio_cache_capture(c, t, TID1, p->ts[0], &cap, 1000);
	check(a && !strcmp(a, "fetch-users"), "%s: a name without its qualname: %s", s->name,
	      a ? a : "(none)");
	capture_of(p, 1, &cap);
	cap.qual_len = 0;
	x = pyasyncio_cache_capture(c, t, TID2, p->ts[1], &cap, 1000);
	check(!x, "%s: a default name without its qualname: no label (got %s)", s->name,
	      x ? x : "(none)");
	cap.task_type = cap.coro;	/* a coroutine, not a Task */
	x = pyasyncio_cache_capture(c, t, TID2, p->ts[1], &cap, 1000);
	check(!x, "%s: no label for a capture of no Task (got %s)", s->name, x ? x : "(none)");
	n = pyasyncio_task_srcs(c, &pid, &src, 1);
	check(n == 1 && pid == t->pid && src.str_type == p->str_type && src.ts_task ==
	      p->o.adbg.asyncio_thread_state.asyncio_running_task && !src.dict &&
	      src.task_coro == p->o.task_coro && src.task_name == p->o.task_name &&
	      src.cr_qualname == p->o.cr_qualname && src.cr_iframe == p->o.cr_iframe,
	      "%s: the BPF program's task source (%zu, ts_task %u)", s->name, n,
	      n ? src.ts_task : 0);
	check(pyasyncio_task_srcs(c, &pid, &src, 1) == 0, "%s: a source is given once", s->name);
}

static void test_asyncio(struct program *p, const struct shape *s)
{
	char buf[PYASYNCIO_LABEL_MAX] = "";
	struct pyasyncio_cache *c;
	struct target_src src;
	struct py_target t;
	struct py_layout l;
	uint64_t code = 0, codes[2];
	const char *a;
	int r;

	make_program(p, s, 1);
	if (asyncio_target(p, s, &l, &t, &src))
		return;
	r = pyasyncio_task(&t, p->ts[0], buf, sizeof(buf), &code);
	check(r == 0 && strcmp(buf, "fetch-users") == 0 && code == p->work,
	      "%s: thread 1 asyncio_task=%s (%d, its coroutine's code %s)", s->name, buf, r,
	      code == p->work ? "Worker.work" : "wrong");
	buf[0] = 0;
	r = pyasyncio_task(&t, p->ts[1], buf, sizeof(buf), &code);
	check(r == 0 && strcmp(buf, "Task-* (helper)") == 0 && code == p->helper,
	      "%s: thread 2 (a Task subclass, default name) asyncio_task=%s (%d)", s->name, buf, r);
	/* Through the cache, a C Task is named only from the BPF program's
	 * capture (issue 23): never by the task running when the record is
	 * read, even with its coroutine on the stack. */
	c = pyasyncio_cache_new(16);
	codes[0] = p->work;
	codes[1] = p->mainc;
	a = pyasyncio_cache_task(c, &t, TID1, p->ts[0], codes, 2, 1000);
	check(!a, "%s: no label read late for a C Task (got %s)", s->name, a ? a : "(none)");
	test_asyncio_capture(p, s, c, &t);
	pyasyncio_cache_free(c);
	put64(&p->im, p->ts[1] + p->o.adbg.asyncio_thread_state.asyncio_running_task, 0);
	r = pyasyncio_task(&t, p->ts[1], buf, sizeof(buf), &code);
	check(r == 1, "%s: a thread between tasks has no task (%d)", s->name, r);
}

/* A section changed by one field, parsed against the image's layout. */
static void section_refused(const struct shape *s, const struct py_layout *l,
			    const struct asyncio_dbg *d, size_t len, const char *what,
			    const char *w1, const char *w2, const char *w3)
{
	struct pyasyncio_layout al;
	char err[512] = "", name[96];
	int r = pyasyncio_debug_parse((const uint8_t *)d, len, l, &al, err, sizeof(err));

	snprintf(name, sizeof(name), "%s: %s", s->name, what);
	refused(r, err, name, w1, w2, w3);
}

static void test_asyncio_refusals(struct program *p, const struct shape *s)
{
	char w1[64], w2[64], buf[PYASYNCIO_LABEL_MAX];
	struct asyncio_dbg d;
	struct target_src src;
	struct py_target t;
	struct py_layout l, l2;
	uint64_t code;
	int r;

	make_program(p, s, 1);
	if (asyncio_target(p, s, &l, &t, &src))
		return;
	d = p->o.adbg;
	d.asyncio_interpreter_state.size += 8;
	snprintf(w1, sizeof(w1), "size is %llu", (unsigned long long)d.asyncio_interpreter_state.size);
	snprintf(w2, sizeof(w2), "interpreter_state.size is %u", l.interp_size);
	section_refused(s, &l, &d, sizeof(d), "section of another build",
			"asyncio_interpreter_state.size", w1, w2);
	d = p->o.adbg;
	d.asyncio_thread_state.asyncio_running_task += 8;
	section_refused(s, &l, &d, sizeof(d), "running task not next to the running loop",
			"asyncio_running_task", "asyncio_running_loop + 8", NULL);
	d = p->o.adbg;
	d.asyncio_task_object.task_name += 8;
	section_refused(s, &l, &d, sizeof(d), "task_name not next to task_coro", "task_name",
			"task_coro + 8", NULL);
	section_refused(s, &l, &p->o.adbg, 96, "truncated section", "96 bytes", "104", NULL);
	l2 = l;
	l2.obj.type_flags += 8;
	snprintf(w1, sizeof(w1), "tp_flags is %u", l2.obj.type_flags);
	section_refused(s, &l2, &p->o.adbg, sizeof(d), "PyTypeObject not as at v3.14.0",
			"type_object.tp_flags", w1, "tp_name + 144");
	l2 = l;
	l2.gen_iframe = PYPERF_NO_FIELD;
	section_refused(s, &l2, &p->o.adbg, sizeof(d), "no gen_object in _Py_DebugOffsets",
			"gen_object", NULL, NULL);

	/* End to end: each gives no label (-1), never a wrong one. */
	put64(&p->im, rd64(p, p->task[0] + p->o.ob_type) + p->o.tp_basicsize,
	      p->o.task_size + 8);
	r = pyasyncio_task(&t, p->ts[0], buf, sizeof(buf), &code);
	check(r == -1, "%s: an _asyncio.Task of another size gives no label (%d)", s->name, r);
	make_program(p, s, 1);
	p->im.elf_len = 0;
	p->im.maps = "7f1300000000-7f1300001000 r--p 00000000 08:01 42 /opt/py/bin/python3\n";
	r = pyasyncio_task(&t, p->ts[0], buf, sizeof(buf), &code);
	check(r == -1, "%s: no _asyncio module mapped (asyncio not imported) gives no label (%d)",
	      s->name, r);
	make_program(p, s, 1);
	d = p->o.adbg;
	d.asyncio_thread_state.size = 8;
	p->im.elf_len = make_elf(p->im.elf, sizeof(p->im.elf), &d, sizeof(d));
	r = pyasyncio_task(&t, p->ts[0], buf, sizeof(buf), &code);
	check(r == -1, "%s: a module whose section fails its checks gives no label (%d)",
	      s->name, r);
}

/* The rows themselves: one per version and build, no row without its
 * behaviour, and the chooser refuses versions without one. */
/* Each generated entry: unique per minor and build, found by
 * py_layout_find() for its own build only, with its build's object
 * header, and complete object offsets where a row takes them. */
static void test_tables(void)
{
	int bad = 0;

	for (unsigned i = 0; i < py_layouts_count; i++) {
		const struct py_layout *e = &py_layouts[i];
		unsigned minor = e->version_hex >> 16 & 0xff;
		const struct py_row *r = py_row_find(minor, e->free_threaded);
		struct py_target t = { .layout = *e };
		struct py_object_offsets o;
		struct py_gil_offsets g;
		int ok = r && py_layout_find(3, minor, e->free_threaded) == e &&
			 e->code.ob_type == r->ob_type && e->code.bytes_size == r->var_ob_size &&
			 e->code.tuple_items >= r->var_ob_size + 8;

		if (r && r->objects_from_table)
			ok = ok && pyobj_offsets(&t, &o, &g) == 0 &&
			     o.managed_kind == PY_MANAGED_INLINE && o.long_kind == PY_LONG_LV_TAG &&
			     o.managed_dict == (e->free_threaded ? -8 : -24);
		check(ok, "generated %s (3.%u%s): unique, its build's header (ob_type %u), objects %s",
		      e->source, minor, e->free_threaded ? "t" : "", e->code.ob_type,
		      r && r->objects_from_table ? "usable" : "not taken by the row");
		bad += !ok;
	}
	for (size_t i = 0; i < py_rows_count; i++) {
		const struct py_row *r = &py_rows[i];

		if (r->objects_from_table && !py_layout_find(3, r->minor, r->free_threaded))
			bad++, check(0, "row 3.%u%s takes objects from a table entry that is missing",
				     r->minor, r->free_threaded ? "t" : "");
	}
	check(py_layout_find(3, 14, 0) && py_layout_find(3, 15, 0) &&
	      py_layout_find(3, 14, 1) != py_layout_find(3, 14, 0) &&
	      py_layout_find(3, 15, 1) != py_layout_find(3, 15, 0) &&
	      py_layout_find(3, 13, 1) != py_layout_find(3, 13, 0),
	      "3.14 and 3.15 GIL entries present; a free-threaded build never gets a GIL entry");
	check(!bad, "%u generated entries consistent with the rows", py_layouts_count);
}

/*
 * The model images' _Py_DebugOffsets (offsetof() of the models above)
 * disagree with the real builds' entries where both give a field (the
 * model's PyInterpreterState folds members, so imports_modules moves),
 * free-threaded builds included (their entries come from real 3.13.15t,
 * 3.14.7t and 3.15.0rc1t): the chooser must leave the object offsets it
 * would take from the table absent, and thread names unread, rather than
 * mix two layouts.
 */
static void test_table_not_mixed(struct program *p, const struct shape *s)
{
	const struct py_layout *gen = py_layout_find(3, s->hex >> 16 & 0xff, s->ft);
	struct py_object_offsets o;
	struct py_gil_offsets g;
	struct py_target t;
	struct py_layout l;
	char err[512];

	make_program(p, s, 0);
	if (choose(p, s->file, s->hex, &l, err, sizeof(err)))
		return;
	t = (struct py_target){ .layout = l };
	check(l.obj.dk_indices == PYPERF_NO_FIELD && pyobj_offsets(&t, &o, &g) != 0 &&
	      gen && gen->free_threaded == s->ft &&
	      gen->obj.interp_modules != l.obj.interp_modules,
	      "%s: no object offsets from the table (the entry disagrees; imports_modules %u,"
	      " the entry's %u)", s->name, l.obj.interp_modules,
	      gen ? gen->obj.interp_modules : 0);
}

static void test_rows(struct program *p)
{
	char err[512];
	struct py_layout l;
	int bad = 0;

	for (size_t i = 0; i < py_rows_count; i++) {
		const struct py_row *r = &py_rows[i];

		bad += !r->line_kind || !r->gil_kind || !r->entry_kind ||
		       py_row_find(r->minor, r->free_threaded) != r ||
		       (r->minor >= 13) != (r->debug != NULL);
	}
	check(!bad, "%zu rows, each complete and unique (%d bad)", py_rows_count, bad);
	make_program(p, &shapes[1], 0);
	check(choose(p, "/opt/py/bin/python2.7", 0x020712f0, &l, err, sizeof(err)) ==
	      PY_LAYOUT_UNSUPPORTED && strstr(err, "does not support"),
	      "Python 2.7 has no row: %s", err);
	check(py_ft_from_name("/usr/lib/libpython3.14t.so.1.0") == 1 &&
	      py_ft_from_name("/usr/bin/python3.14") == 0 &&
	      py_ft_from_name("/usr/bin/myapp") == -1, "free-threaded file names recognised");
}

int main(void)
{
	struct program p = { .im = { .mem = calloc(1, IMG_SIZE) } };

	if (!p.im.mem)
		return 2;
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		test_shape(&p, &shapes[i]);
	test_refusals(&p);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		if (shapes[i].table < 314)
			continue;
		test_asyncio(&p, &shapes[i]);
		test_asyncio_refusals(&p, &shapes[i]);
	}
	test_rows(&p);
	test_tables();
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		test_table_not_mixed(&p, &shapes[i]);
	free(p.im.mem);
	return check_exit();
}
