/*
 * The await graph of asyncio tasks, from user space.
 *
 * Who awaits a task (Lib/asyncio/{tasks,futures,taskgroups}.py and
 * Modules/_asynciomodule.c at each tag):
 *
 * 3.7 to 3.13: only the futures' done-callbacks say it. A C future keeps
 * its first callback at fut_callback0 and the others in fut_callbacks, a
 * list of (callback, context) tuples. A task blocked on a future added its
 * wakeup to that future's callbacks: a TaskWakeupMethWrapper whose
 * ww_task is the task (3.7-3.9), or a builtin method "task_wakeup" whose
 * m_self is the task (3.10+). So for a plain `await task`, the awaited
 * task's callbacks hold the awaiter. Through gather, wait, wait_for (before
 * 3.12) and shield, the awaited task's callback is a function (or a
 * functools.partial) whose closure cells (or arguments) hold the future
 * the awaiter blocks on: gather's outer _GatheringFuture, wait's waiter:
 * its callbacks are followed the same way (at most MAX_HOPS futures). A
 * TaskGroup's task has the group's bound _on_task_done, and the group
 * keeps its task in _parent_task (3.11+).
 *
 * 3.14+: a future records who awaits it in fut_awaited_by (a future or a
 * set of them; fut_awaited_by_is_set says which), at the offsets of the
 * AsyncioDebug section; the task step adds the awaiting task, gather and
 * TaskGroup add the task that called them. A future there that is not a
 * task is followed in turn.
 *
 * Where a task waits: its coroutine's frame, embedded in the coroutine at
 * cr_iframe (3.11+) or at cr_frame (before), and those of the coroutines
 * it awaits in turn (the one a suspended coroutine awaits is the top of
 * its frame's value stack), up to PYAWAIT_FRAMES.
 *
 * A task whose awaiter cannot be told exactly (two different tasks, a
 * callback of another kind) ends its chain as PYAWAIT_UNKNOWN: no guess.
 * Every read goes through t->src and is checked; every loop has a bound.
 */
#include "pyawait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procslot.h"
#include "pyasyncio_debug.h"
#include "pyobj.h"
#include "pyread.h"
#include "pysym.h"
#include "setcache.h"
#include "target_src.h"

#define NO16		PYPERF_NO_FIELD
#define WAYS		4
#define NPROCS		16	/* processes remembered per cache */
#define NTYPES		32	/* classified types remembered per process */
#define MAX_BASES	16	/* tp_base links followed, at most */
#define MAX_CALLBACKS	16	/* a future's done-callbacks looked at */
#define MAX_CELLS	8	/* closure cells or partial arguments looked at */
#define MAX_HOPS	4	/* futures between a task and its awaiter */
#define MAX_FUTURES	16	/* futures looked at for one task's awaiter: the
				 * bound on the fan-out of the hops */
#define MAX_SET		32	/* entries of an awaited_by set read */
#define MAX_STACK	(1 << 20)	/* a frame's value stack depth, at most */
#define TYPE_NAME_MAX	32
#define NAME_MAX_READ	64
#define RETRY_NS	100000000ull	/* no section yet: look again then */
#define TASK_WORDS	32		/* a task's first words read at once
					 * (pyasyncio_debug.c: fields within 256) */

/* Object layouts the same in every GIL build 3.7 to 3.13 (gdb ptype/o of
 * the pyenv builds' libpython and _asyncio): FutureObj starts with its
 * loop, callback0, context0, callbacks. */
#define FUT_CALLBACK0	24	/* FutureObj.fut_callback0 */
#define FUT_CALLBACKS	40	/* FutureObj.fut_callbacks */
#define WW_TASK		16	/* TaskWakeupMethWrapper.ww_task (3.7-3.9) */
#define CF_ML		16	/* PyCFunctionObject.m_ml */
#define CF_SELF		24	/* PyCFunctionObject.m_self */
#define IM_SELF		24	/* PyMethodObject.im_self */
#define PARTIAL_ARGS	24	/* partialobject.args */
#define CELL_REF	16	/* PyCellObject.ob_ref */
#define VAR_SIZE	16	/* PyVarObject.ob_size */
#define SEQ_ITEMS	24	/* PyTupleObject.ob_item[], PyListObject.ob_item */
#define CR_FRAME	16	/* PyCoroObject.cr_frame (<=3.10) */
#define FUNC_CLOSURE_39	48	/* PyFunctionObject.func_closure (<=3.9) */
#define FUNC_CLOSURE	72	/* ... (3.10+) */

enum okind {
	OK_NONE = 0, OK_OTHER, OK_STR, OK_INT, OK_CORO, OK_TASK, OK_FUTURE, OK_WW,
	OK_BUILTIN, OK_METHOD, OK_FUNCTION, OK_PARTIAL, OK_TUPLE, OK_LIST, OK_CELL,
	OK_SET, OK_GROUP, OK_BAD
};

/* Per process. */
struct awproc {
	struct proc_slot key;		/* first: procslot.h; interp 0 */
	struct py_seen seen;
	struct pyasyncio_layout l;	/* task and coroutine offsets */
	int state;			/* 1 ready, -1 refused, 0 not yet */
	uint64_t retry_ns;
	uint64_t parent_hint;		/* "_parent_task" key object */
	struct { uint64_t type; uint8_t kind; } types[NTYPES];
	unsigned next_type;
};

/* One task as read. */
struct tentry {
	int pid;			/* 0: empty */
	uint64_t start_time, task;
	uint64_t time_ns;
	uint32_t age;
	int ok;				/* 1: read as a task */
	uint64_t name, coro;		/* the objects the label was made of */
	int end;			/* parent 0: enum pyawait_end */
	uint64_t parent;		/* the awaiting task; 0: see end */
	struct pyawait_link link;
};

struct pyawait_cache {
	struct tentry *e;
	size_t nsets;
	uint32_t clock;
	struct awproc procs[NPROCS];
	struct pyawait_stats st;
};

/* One look at a target. */
struct ctx {
	const struct py_target *t;
	struct awproc *ap;
	const struct pyasyncio_layout *l;
	uint16_t hdr;			/* object header bytes (ob_type + 8) */
	int *budget;			/* futures still to look at for the
					 * awaiter of one task */
};

/* ---- types ----------------------------------------------------------- */

/* The type's tp_name (a C string: any alignment). */
static int type_name(const struct ctx *x, uint64_t type, char *buf)
{
	uint64_t p = 0;

	if (py_read_u64(x->t, type + x->t->layout.code.type_name, &p) || !p)
		return -1;
	/* A C string near the end of a mapping: retry shorter. */
	for (size_t n = TYPE_NAME_MAX - 1; n >= 8; n /= 2) {
		if (py_read(x->t, p, buf, n) == 0) {
			buf[n] = '\0';
			return 0;
		}
	}
	return -1;
}

static const struct { const char *name; enum okind kind; } exact[] = {
	{ "str", OK_STR }, { "int", OK_INT }, { "coroutine", OK_CORO },
	{ "TaskWakeupMethWrapper", OK_WW }, { "builtin_function_or_method", OK_BUILTIN },
	{ "method", OK_METHOD }, { "function", OK_FUNCTION },
	{ "functools.partial", OK_PARTIAL }, { "tuple", OK_TUPLE }, { "list", OK_LIST },
	{ "cell", OK_CELL }, { "set", OK_SET }, { "TaskGroup", OK_GROUP },
};

/* A C Task must have the size the layout says, or its fields are not
 * where the layout puts them. */
static enum okind sized(const struct ctx *x, uint64_t type, uint16_t want)
{
	int64_t size = -1;

	if (py_read(x->t, type + x->l->type_basicsize, &size, sizeof(size)))
		return OK_NONE;
	return size == want ? OK_TASK : OK_BAD;
}

static enum okind classify_uncached(const struct ctx *x, uint64_t type)
{
	char name[TYPE_NAME_MAX];

	if (type_name(x, type, name))
		return OK_NONE;
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (!strcmp(name, exact[i].name))
			return exact[i].kind;
	for (int i = 0; i < MAX_BASES && type; i++) {
		if (i && type_name(x, type, name))
			return OK_NONE;
		if (!strcmp(name, "_asyncio.Task"))
			return sized(x, type, x->l->task_size);
		if (!strcmp(name, "_asyncio.Future"))
			return OK_FUTURE;
		type = py_read_ptr(x->t, type + x->l->type_base);
	}
	return OK_OTHER;
}

/* What an object of type type is (remembered per process). */
static enum okind classify_type(const struct ctx *x, uint64_t type)
{
	struct awproc *ap = x->ap;
	enum okind k;

	if (!type || (type & 7))
		return OK_NONE;
	for (int i = 0; i < NTYPES; i++)
		if (ap->types[i].type == type)
			return (enum okind)ap->types[i].kind;
	k = classify_uncached(x, type);
	if (k != OK_NONE) {
		ap->types[ap->next_type % NTYPES].type = type;
		ap->types[ap->next_type++ % NTYPES].kind = (uint8_t)k;
	}
	return k;
}

/* What the object at obj is. */
static enum okind classify(const struct ctx *x, uint64_t obj)
{
	return obj && !(obj & 7) ?
		classify_type(x, py_read_ptr(x->t, obj + x->t->layout.code.ob_type)) : OK_NONE;
}

/* The first n words of the object at obj, in one read; w[OB_TYPE] is its
 * type (a GIL build's header: the readers up to 3.13). 0 on success. */
#define OB_TYPE		1
static int obj_words(const struct ctx *x, uint64_t obj, uint64_t *w, size_t n)
{
	return !obj || (obj & 7) ? -1 : py_read(x->t, obj, w, n * 8);
}

/* The items of a tuple or list at obj (of kind k) into items, at most
 * max; returns how many it has (more than max: some not read), -1 if
 * unreadable. */
static int seq_items(const struct ctx *x, uint64_t obj, enum okind k, uint64_t *items,
		     size_t max)
{
	int64_t n = -1;
	uint64_t at = obj + SEQ_ITEMS, w[SEQ_ITEMS / 8 + MAX_CELLS];

	/* A short tuple: its size and items in one read. */
	if (k == OK_TUPLE && max <= MAX_CELLS &&
	    py_read(x->t, obj + VAR_SIZE, w + VAR_SIZE / 8, 8 + max * 8) == 0) {
		n = (int64_t)w[VAR_SIZE / 8];
		if (n < 0)
			return -1;
		memcpy(items, w + SEQ_ITEMS / 8, ((uint64_t)n > max ? max : (size_t)n) * 8);
		return n > INT32_MAX ? -1 : (int)n;
	}
	if (py_read(x->t, obj + VAR_SIZE, &n, sizeof(n)) || n < 0)
		return -1;
	if (k == OK_LIST && !(at = py_read_ptr(x->t, at)))
		return n ? -1 : 0;
	if (n > INT32_MAX || (n && py_read(x->t, at, items, ((uint64_t)n > max ? max : (size_t)n) * 8)))
		return -1;
	return (int)n;
}

/* ---- 3.7 to 3.13: done-callbacks ------------------------------------- */

static uint64_t awaiter_cb(const struct ctx *x, uint64_t fut, const uint64_t *head, int hops,
			   int *unknown);

/* Is the builtin method cb asyncio's task_wakeup? */
static int is_task_wakeup(const struct ctx *x, uint64_t cb)
{
	uint64_t ml = py_read_ptr(x->t, cb + CF_ML), name = 0;
	char s[16];

	/* PyMethodDef.ml_name, a C string: any alignment. */
	if (!ml || py_read_u64(x->t, ml, &name) || !name)
		return 0;
	return py_read(x->t, name, s, 12) == 0 && !memcmp(s, "task_wakeup", 12);
}

/* The futures among the objects held by cb (a closure's cells, a
 * partial's arguments), followed to their awaiter. */
static uint64_t via_held(const struct ctx *x, uint64_t cb, enum okind k, uint64_t fut,
			 int hops, int *unknown)
{
	uint16_t off = k == OK_PARTIAL ? PARTIAL_ARGS :
		       x->t->minor <= 9 ? FUNC_CLOSURE_39 : FUNC_CLOSURE;
	uint64_t held = py_read_ptr(x->t, cb + off), v[MAX_CELLS], found = 0, w[3];
	int n;

	if (!held || classify(x, held) != OK_TUPLE ||
	    (n = seq_items(x, held, OK_TUPLE, v, MAX_CELLS)) < 0)
		return 0;
	if (n > MAX_CELLS) {	/* what the rest holds is not known */
		*unknown = 1;
		n = MAX_CELLS;
	}
	for (int i = 0; i < n; i++) {
		uint64_t o = v[i], p;

		/* A cell: its header and ob_ref in one read. */
		if (k == OK_FUNCTION)
			o = obj_words(x, o, w, 3) == 0 && classify_type(x, w[OB_TYPE]) == OK_CELL ?
			    w[CELL_REF / 8] : 0;
		if (!o || o == fut || classify(x, o) != OK_FUTURE)
			continue;
		if (hops >= MAX_HOPS) {
			*unknown = 1;
			continue;
		}
		p = awaiter_cb(x, o, NULL, hops + 1, unknown);
		if (p && found && p != found)
			*unknown = 1;
		found = p ? p : found;
	}
	return found;
}

/* The task callback cb of fut wakes up or stands for; 0: none. */
static uint64_t via_callback(const struct ctx *x, uint64_t cb, uint64_t fut, int hops,
			     int *unknown)
{
	enum okind k = classify(x, cb);
	uint64_t o = 0;

	switch (k) {
	case OK_WW:
		o = py_read_ptr(x->t, cb + WW_TASK);
		break;
	case OK_BUILTIN:
		if (!is_task_wakeup(x, cb))
			return 0;	/* e.g. a set's discard */
		o = py_read_ptr(x->t, cb + CF_SELF);
		break;
	case OK_METHOD:
		o = py_read_ptr(x->t, cb + IM_SELF);
		if (classify(x, o) != OK_GROUP)
			return 0;
		o = pyobj_attr(x->t, &x->ap->seen, o, "_parent_task", &x->ap->parent_hint);
		break;
	case OK_FUNCTION:
	case OK_PARTIAL:
		return via_held(x, cb, k, fut, hops, unknown);
	default:
		return 0;
	}
	if (o && classify(x, o) == OK_TASK)
		return o;
	*unknown = 1;
	return 0;
}

/* The task fut's callbacks lead to (0: none, or *unknown: ambiguous);
 * head (NULL: read here): fut's first FUT_CALLBACKS / 8 + 1 words. */
static uint64_t awaiter_cb(const struct ctx *x, uint64_t fut, const uint64_t *head, int hops,
			   int *unknown)
{
	uint64_t cbs[MAX_CALLBACKS], found = 0, list, w[FUT_CALLBACKS / 8 + 1];
	int n = 0, m;

	if (--*x->budget < 0) {
		*unknown = 1;
		return 0;
	}
	if (!head && obj_words(x, fut, w, FUT_CALLBACKS / 8 + 1))
		return 0;
	head = head ? head : w;
	if ((cbs[0] = head[FUT_CALLBACK0 / 8]) && !(cbs[0] & 7))
		n = 1;
	list = head[FUT_CALLBACKS / 8];
	if (list && classify(x, list) == OK_LIST) {
		uint64_t tuples[MAX_CALLBACKS];

		m = seq_items(x, list, OK_LIST, tuples, MAX_CALLBACKS - (size_t)n);
		if (m > MAX_CALLBACKS - n) {	/* callbacks not looked at */
			*unknown = 1;
			m = MAX_CALLBACKS - n;
		}
		for (int i = 0; i < m; i++) {
			uint64_t t[5];	/* header, size, (callback, context) */

			if (obj_words(x, tuples[i], t, 5) == 0 &&
			    classify_type(x, t[OB_TYPE]) == OK_TUPLE && t[2] == 2)
				cbs[n++] = t[3];
		}
	}
	for (int i = 0; i < n; i++) {
		uint64_t p = via_callback(x, cbs[i], fut, hops, unknown);

		if (p && found && p != found)
			*unknown = 1;
		found = p ? p : found;
	}
	return *unknown ? 0 : found;
}

/* ---- 3.14+: awaited_by ----------------------------------------------- */

/* The live keys of the set at set, at most max (PySetObject: fill, used,
 * mask, table after the header; entries of key and hash; a dummy key has
 * hash -1); -1 when unreadable or when some are beyond the entries read. */
static int set_keys(const struct ctx *x, uint64_t set, uint64_t *keys, size_t max)
{
	int64_t sz[3] = { -1, -1, -1 };	/* fill, used, mask */
	uint64_t table = py_read_ptr(x->t, set + x->hdr + 24u), ent[2 * MAX_SET];
	int64_t mask;
	size_t n, k = 0;

	if (!table || py_read(x->t, set + x->hdr, sz, sizeof(sz)) || (mask = sz[2]) < 0)
		return -1;
	n = (uint64_t)mask + 1 < MAX_SET ? (size_t)mask + 1 : MAX_SET;
	if (py_read(x->t, table, ent, n * 16))
		return -1;
	for (size_t i = 0; i < n && k < max; i++)
		if (ent[2 * i] && (int64_t)ent[2 * i + 1] != -1)
			keys[k++] = ent[2 * i];
	return (int64_t)k < sz[1] ? -1 : (int)k;
}

static uint64_t awaiter_ab(const struct ctx *x, uint64_t fut, int hops, int *unknown)
{
	const struct pyasyncio_layout *l = x->l;
	uint64_t ab = py_read_ptr(x->t, fut + l->task_awaited_by), v[MAX_SET], found = 0;
	uint8_t is_set = 0;
	int n = 1;

	if (!ab)
		return 0;
	if (--*x->budget < 0) {
		*unknown = 1;
		return 0;
	}
	if (py_read(x->t, fut + l->task_awaited_by_is_set, &is_set, 1)) {
		*unknown = 1;
		return 0;
	}
	v[0] = ab;
	if (is_set && (classify(x, ab) != OK_SET || (n = set_keys(x, ab, v, MAX_SET)) < 0)) {
		*unknown = 1;
		return 0;
	}
	for (int i = 0; i < n; i++) {
		enum okind k = classify(x, v[i]);
		uint64_t p = 0;

		if (k == OK_TASK)
			p = v[i];
		else if (k == OK_FUTURE && hops < MAX_HOPS)
			p = awaiter_ab(x, v[i], hops + 1, unknown);
		else
			*unknown = 1;
		if (p && found && p != found)
			*unknown = 1;
		found = p ? p : found;
	}
	return *unknown ? 0 : found;
}

/* ---- a task ---------------------------------------------------------- */

/*
 * The object the suspended coroutine coro (its frame at frame) awaits:
 * the top of the frame's value stack while it is suspended in an await
 * (YIELD_FROM, then SEND and YIELD_VALUE, keep the receiver there and
 * save the stack pointer; CPython's _PyGen_yf() reads it so). 0 when it
 * runs, has not started or ended. The offsets: DWARF of the pyenv GIL
 * builds up to 3.13 (PyFrameObject, _PyInterpreterFrame, PyCoroObject),
 * _Py_DebugOffsets from 3.14; the frame states: Include/internal/
 * pycore_frame.h at each tag (3.15 renumbered them; Debian sid's 3.14
 * and 3.15 headers).
 */
static uint64_t awaited(const struct ctx *x, uint64_t coro, uint64_t frame)
{
	const struct py_layout *pl = &x->t->layout;
	unsigned minor = x->t->minor;
	uint64_t top, v, w[2];
	int32_t i = -1;
	int8_t st = 0;

	if (minor <= 9) {		/* f_stacktop 72, NULL while it runs */
		top = py_read_ptr(x->t, frame + 72);
		if (!top || py_read(x->t, frame + 104, &i, 4) || i < 0)
			return 0;	/* f_lasti -1: not started */
		top -= 8;
	} else if (minor == 10) {	/* f_valuestack 64, f_stackdepth 80 */
		top = py_read_ptr(x->t, frame + 64);
		if (!top || py_read(x->t, frame + 108, &st, 1) || st != -1 ||
		    py_read(x->t, frame + 80, &i, 4) || i <= 0 || i > MAX_STACK)
			return 0;	/* f_state FRAME_SUSPENDED -1 */
		top += (uint64_t)(i - 1) * 8;
	} else if (minor <= 13) {	/* cr_frame_state 75 (3.11), 67; stacktop 64 */
		if (py_read(x->t, coro + (minor == 11 ? 75 : 67), &st, 1) || st != -1 ||
		    py_read(x->t, frame + 64, &i, 4) || i <= 0 || i > MAX_STACK)
			return 0;	/* SUSPENDED (3.11-3.12), SUSPENDED_YIELD_FROM */
		top = frame + 72 + (uint64_t)(i - 1) * 8;	/* localsplus 72 */
	} else {
		if (!pl->gen_frame_state || pl->gen_frame_state == NO16 ||
		    !pl->frame_stackpointer || pl->frame_stackpointer == NO16 ||
		    py_read(x->t, coro + pl->gen_frame_state, &st, 1) ||
		    (minor == 14 ? st != -1 : st != 2 && st != 3))
			return 0;	/* SUSPENDED_YIELD_FROM(_LOCKED) */
		/* 3.15: _SEND_GEN_FRAME leaves a NULL above the receiver
		 * (stackpointer[-1], PyStackRef_NULL's bits 1; _PyGen_yf peeks
		 * at depth 2). */
		top = py_read_ptr(x->t, frame + pl->frame_stackpointer);
		if (!top || py_read(x->t, top - 16, w, sizeof(w)) || (minor >= 15 && w[1] > 1))
			return 0;
		v = minor >= 15 ? w[0] : w[1];
		if ((v & 3) >= 2)
			return 0;	/* a _PyStackRef: tag bit 0; 2, 3: not objects */
		v &= ~(uint64_t)1;
		return v & 7 ? 0 : v;
	}
	return py_read_ptr(x->t, top);
}

/* The frame of the coroutine at coro into *f. 0, or -1 with none. */
static int coro_frame(const struct ctx *x, uint64_t coro, uint64_t *frame,
		      struct pyawait_frame *f)
{
	const struct py_walk_offsets *w = &x->t->bpf.off;
	uint8_t win[PYPERF_FRAME_WIN + 8] = { 0 };
	struct py_frame_fields ff = { 0 };

	*frame = x->l->cr_iframe != NO16 ? coro + x->l->cr_iframe :
		 py_read_ptr(x->t, coro + CR_FRAME);
	if (!*frame || !w->frame_span || py_read(x->t, *frame, win, w->frame_span))
		return -1;
	py_frame_decode(w, win, &ff);
	if (py_frame_classify(w, &ff) != PY_FRAME_KEEP)
		return -1;
	*f = (struct pyawait_frame){ ff.code, ff.lasti, ff.self, ff.tlbc };
	return 0;
}

/* The frames of the task's coroutine coro and of the coroutines it
 * awaits in turn, outermost first, into k. */
static void coro_frames(const struct ctx *x, uint64_t coro, struct pyawait_link *k)
{
	uint64_t frame;

	for (k->nframes = 0; k->nframes < PYAWAIT_FRAMES; k->nframes++) {
		if (coro_frame(x, coro, &frame, &k->f[k->nframes]))
			return;
		coro = awaited(x, coro, frame);
		if (!coro || classify(x, coro) != OK_CORO) {
			k->nframes++;
			return;
		}
	}
}

/* The task's label, as pyasyncio.c makes it. */
static void task_label(const struct ctx *x, uint64_t name, uint64_t coro, char *buf,
		       size_t len)
{
	char n[NAME_MAX_READ] = "", q[NAME_MAX_READ] = "";
	uint64_t qual = py_read_ptr(x->t, coro + x->l->cr_qualname);
	int is_default = 1;

	if (name && classify(x, name) == OK_STR && pysym_read_str(x->t, name, n, sizeof(n)) == 0)
		is_default = pyasyncio_default_name(n);
	/* Not a str: 3.12+ keeps the counter until get_name() formats it. */
	if (qual && classify(x, qual) == OK_STR && pysym_read_str(x->t, qual, q, sizeof(q)))
		q[0] = '\0';
	pyasyncio_format(buf, len, n, is_default, q);
}

/* Reads e->task: its label, frame and awaiter; the label as old's (an
 * earlier read of it) when made of the same name and coroutine objects,
 * which the task holds references to. -1 when the task's memory cannot
 * be read at all (the process has exited), else 0. */
static int task_read(const struct ctx *x, struct tentry *e, const struct tentry *old)
{
	const struct pyasyncio_layout *l = x->l;
	uint64_t task = e->task, coro, name = 0, w[TASK_WORDS];
	int budget = MAX_FUTURES;
	struct ctx y = *x;
	size_t end = (l->task_name != NO16 && l->task_name > l->task_coro ?
		      l->task_name : l->task_coro) + 8u;
	int unknown = 0;
	enum okind k;

	/* The task's header, callbacks (up to 3.13), coroutine and name in
	 * one read. */
	e->ok = 0;
	if (end > sizeof(w) || (end & 7) || obj_words(x, task, w, end / 8))
		return -1;
	k = classify_type(x, w[x->t->layout.code.ob_type / 8]);
	if (k != OK_TASK)
		return k == OK_NONE ? -1 : 0;
	coro = w[l->task_coro / 8];
	if (l->task_name != NO16)
		name = w[l->task_name / 8];
	if (!coro || classify(x, coro) != OK_CORO)
		return 0;
	if (old && old->ok && old->name == name && old->coro == coro)
		memcpy(e->link.label, old->link.label, sizeof(e->link.label));
	else
		task_label(x, name, coro, e->link.label, sizeof(e->link.label));
	e->name = name;
	e->coro = coro;
	coro_frames(x, coro, &e->link);
	y.budget = &budget;
	e->parent = l->task_awaited_by ? awaiter_ab(&y, task, 0, &unknown) :
					 awaiter_cb(&y, task, w, 0, &unknown);
	e->end = unknown ? PYAWAIT_UNKNOWN : PYAWAIT_ROOT;
	e->ok = 1;
	return 0;
}

/* ---- per process ----------------------------------------------------- */

/* The layout of t into ap (once; 3.14+: when _asyncio's section is
 * found). 0 when ready. */
static int proc_layout(struct pyawait_cache *c, const struct py_target *t,
		       struct awproc *ap, uint64_t now)
{
	struct py_object_offsets o;
	struct py_gil_offsets gil;
	uint8_t sec[PYASYNCIO_SECTION_MAX];
	char err[320];
	size_t n = 0;
	int r;

	if (ap->state)
		return ap->state == 1 ? 0 : -1;
	if (t->layout.asyncio_kind == PY_ASYNCIO_TABLE) {
		/* Before 3.14 the object offsets above are a GIL build's. */
		if (t->layout.free_threaded || pyobj_offsets(t, &o, &gil)) {
			ap->state = -1;
			return -1;
		}
		ap->l = t->layout.asyncio;
		ap->l.type_basicsize = o.type_basicsize;
		ap->state = 1;
		return 0;
	}
	if (t->layout.asyncio_kind != PY_ASYNCIO_SECTION || now < ap->retry_ns)
		return -1;
	ap->retry_ns = now + RETRY_NS;
	/* Not found (asyncio not imported yet) or unreadable: again later. */
	r = pyasyncio_debug_read(t, sec, sizeof(sec), &n);
	if (r)
		return -1;
	if (pyasyncio_debug_parse(sec, n, &t->layout, &ap->l, err, sizeof(err))) {
		c->st.refusals++;
		ap->state = -1;
		fprintf(stderr, "pyperf-pprof: no --async stacks for pid %d: %s\n", t->pid, err);
		return -1;
	}
	if (!ap->l.task_awaited_by) {
		c->st.refusals++;
		ap->state = -1;
		fprintf(stderr, "pyperf-pprof: no --async stacks for pid %d: its AsyncioDebug section gives no plausible task_awaited_by\n",
			t->pid);
		return -1;
	}
	ap->state = 1;
	return 0;
}

static struct awproc *proc_get(struct pyawait_cache *c, const struct py_target *t)
{
	int fresh;
	struct awproc *ap = (struct awproc *)proc_slot_get(c->procs, NPROCS, sizeof(c->procs[0]),
							   t, 0, c->clock, &fresh);

	if (fresh) {
		memset(ap, 0, sizeof(*ap));
		proc_slot_take(&ap->key, t, 0, c->clock);
	}
	return ap;
}

/* ---- the cache ------------------------------------------------------- */

struct pyawait_cache *pyawait_cache_new(size_t capacity)
{
	struct pyawait_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->e = setcache_alloc(capacity, WAYS, sizeof(*c->e), &c->nsets);
	if (!c->e) {
		free(c);
		return NULL;
	}
	return c;
}

void pyawait_cache_free(struct pyawait_cache *c)
{
	if (!c)
		return;
	free(c->e);
	free(c);
}

void pyawait_forget_pid(struct pyawait_cache *c, int pid)
{
	for (size_t i = 0; i < c->nsets * WAYS; i++)
		if (c->e[i].pid == pid)
			memset(&c->e[i], 0, sizeof(c->e[i]));
	for (int i = 0; i < NPROCS; i++)
		if (c->procs[i].key.pid == pid)
			memset(&c->procs[i], 0, sizeof(c->procs[i]));
}

void pyawait_get_stats(const struct pyawait_cache *c, struct pyawait_stats *st)
{
	*st = c->st;
}

/* The entry of (t, task), fresh at now: read if need be. */
static const struct tentry *entry_get(struct pyawait_cache *c, const struct ctx *x,
				      uint64_t task, uint64_t now)
{
	const struct py_target *t = x->t;
	uint64_t h = (task >> 4) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)t->pid << 32;
	struct tentry *set = &c->e[((h ^ h >> 29) & (c->nsets - 1)) * WAYS], *e = NULL;
	struct tentry tmp = { 0 };
	int hit;

	for (int i = 0; i < WAYS && !e; i++)
		if (set[i].pid == t->pid && set[i].task == task &&
		    set[i].start_time == t->start_time)
			e = &set[i];
	if (e && now >= e->time_ns && now - e->time_ns < PYAWAIT_TTL_NS) {
		c->st.hits++;
		e->age = c->clock;
		return e;
	}
	/* Else the set's empty or least recently used way. */
	for (int i = 0; i < WAYS && !e; i++)
		if (!set[i].pid)
			e = &set[i];
	if (!e) {
		e = &set[0];
		for (int i = 1; i < WAYS; i++)
			if (set[i].age < e->age)
				e = &set[i];
	}
	tmp.pid = t->pid;
	tmp.start_time = t->start_time;
	tmp.task = tmp.link.task = task;
	tmp.time_ns = now;
	tmp.age = c->clock;
	c->st.reads++;
	/* A process that exited before its last records were processed:
	 * its tasks are as last read, if that was lately. */
	hit = e->pid == t->pid && e->task == task && e->start_time == t->start_time;
	if (task_read(x, &tmp, hit ? e : NULL) && hit && e->ok &&
	    now - e->time_ns < PYAWAIT_GONE_NS) {
		c->st.gone++;
		return e;
	}
	*e = tmp;
	return e;
}

int pyawait_chain(struct pyawait_cache *c, const struct py_target *t, uint64_t task,
		  uint64_t now_ns, struct pyawait_chain *out)
{
	struct ctx x = { .t = t };

	out->n = 0;
	out->end = PYAWAIT_ROOT;
	if (!task || !t->pid)
		return -1;
	c->clock++;
	c->st.chains++;
	x.ap = proc_get(c, t);
	if (proc_layout(c, t, x.ap, now_ns ? now_ns : 1))
		return -1;
	x.l = &x.ap->l;
	x.hdr = (uint16_t)(t->layout.code.ob_type + 8u);
	while (task) {
		const struct tentry *e;

		for (size_t i = 0; i < out->n; i++)
			if (out->l[i].task == task)
				task = 0;
		if (!task || out->n == PYAWAIT_DEPTH) {
			out->end = PYAWAIT_CUT;
			break;
		}
		e = entry_get(c, &x, task, now_ns);
		if (!e->ok) {
			if (!out->n) {
				c->st.failed++;
				return -1;
			}
			out->end = PYAWAIT_UNKNOWN;
			break;
		}
		out->l[out->n++] = e->link;
		out->end = e->end;
		task = e->parent;
	}
	if (out->end == PYAWAIT_UNKNOWN)
		c->st.unknown++;
	return 0;
}
