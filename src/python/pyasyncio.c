/*
 * The asyncio task a thread runs. A C Task is found by the BPF program at
 * the sample (bpf/pyperf.h, struct py_task_src and py_task_capture) and
 * named here from what it copied (pyasyncio_cache_capture); what follows
 * is how this file finds where the program is to look (note_src), and how
 * it reads a pure-Python task itself, late, from user space.
 *
 * CPython 3.7 to 3.13 keep "the task each loop is running" in one dict,
 * _asyncio._current_tasks {loop: task} (the C accelerator's; module
 * state from 3.12), which asyncio.tasks re-exports as _current_tasks (the
 * pure-Python fallback keeps its own dict there). A task is in it only
 * while one of its steps runs. A loop's instance attribute _thread_id is
 * threading.get_ident() of the thread running it, i.e. the thread state's
 * thread_id. So for a thread:
 *
 *   sys.modules["asyncio.tasks"].__dict__["_current_tasks"]  (found once)
 *     -> the entry whose loop has _thread_id == tstate->thread_id
 *     -> the task -> its name and its coroutine's __qualname__ and code.
 *
 * Dicts, attributes and ints are read by pythread.c's readers. The C
 * Task (TaskObj of _asyncio) and the coroutine (PyCoroObject) are read
 * at the offsets below; the Task type found through a task's tp_base
 * chain ("_asyncio.Task") and the coroutine type ("coroutine") must have
 * the tp_basicsize the table says, or the process gets no labels (a
 * patch release that moved a field is refused, not misread). A Task
 * class without _asyncio.Task in its bases (asyncio.tasks._PyTask) is
 * read through its instance attributes _name and _coro.
 *
 * CPython 3.14+ keep the running task in the thread state
 * (_PyThreadStateImpl.asyncio_running_task); its offset, TaskObj's and the
 * sizes to check come per process from the AsyncioDebug section
 * (pyasyncio_debug.c) into aproc.dl, which then serves as the table row.
 * Only the C functions set it: a pure-Python Task's step
 * (asyncio.tasks._PyTask, and every task where _asyncio is not imported)
 * enters itself with _py_enter_task into asyncio.tasks._current_tasks, a
 * dict of the module as before 3.14 (Lib/asyncio/tasks.py at v3.14.7 and
 * v3.15.0rc1). So a thread state without a running task is looked up
 * there too, where the object offsets are complete (pyobj_offsets());
 * until a mapped file has the section (_asyncio not imported: a shared
 * module in Debian's 3.14) the coroutine and type offsets are derived from
 * _Py_DebugOffsets alone, and no C Task is read.
 */
#include "pyasyncio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyasyncio_debug.h"
#include "pysym.h"
#include "procslot.h"
#include "pyobj.h"
#include "pythread.h"
#include "setcache.h"
#include "target_src.h"

#define NO16		PYPERF_NO_FIELD
#define WAYS		4
#define NPROCS		16	/* interpreters remembered per cache */
#define NTYPES		16	/* classified types remembered per interpreter */
#define NRECENT		4	/* tasks remembered per thread */
#define NLOOPS		4	/* other threads' loops remembered per thread */
#define NPLOOPS		64	/* loops and their threads, per interpreter */
#define MAX_LOOPS	64	/* _current_tasks entries read, at most */
#define MAX_BASES	16	/* tp_base links followed, at most */
#define TYPE_NAME_MAX	24
#define TASK_READ	256	/* task object bytes read at once */
#define NAME_MAX_READ	64	/* bytes of a task name or qualname kept */
/* A process without asyncio.tasks in sys.modules is looked at again
 * after RETRY_NS, and searched only if sys.modules changed size; while
 * it keeps its size, after twice as long each time, up to RETRY_MAX_NS
 * (two reads every 0.1 s per interpreter were half of the profiler's
 * reads with two busy programs that never import asyncio). */
#define RETRY_NS	100000000ull
#define RETRY_MAX_NS	(32 * RETRY_NS)

/* 3.14+: the layout is read per process from its AsyncioDebug section
 * (aproc.dl); this marks a target whose layout comes from there. */
static const struct pyasyncio_layout from_section = { .minor = 0 };

/* Where t's offsets come from, by its layout (pylayout_rows.c): its row's
 * table, or (section) its process's AsyncioDebug section; NULL: none. */
static const struct pyasyncio_layout *layout_of(const struct py_target *t)
{
	switch (t->layout.asyncio_kind) {
	case PY_ASYNCIO_TABLE:
		return &t->layout.asyncio;
	case PY_ASYNCIO_SECTION:
		return t->layout.interp_size ? &from_section : NULL;
	default:
		return NULL;
	}
}

/* ---- labels ---------------------------------------------------------- */

int pyasyncio_default_name(const char *s)
{
	if (strncmp(s, "Task-", 5) || !s[5])
		return 0;
	for (s += 5; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

void pyasyncio_format(char *buf, size_t len, const char *name, int is_default,
		      const char *qualname)
{
	if (!len)
		return;
	if (name && name[0] && !is_default)
		snprintf(buf, len, "%s", name);
	else if (qualname && qualname[0])
		snprintf(buf, len, "Task-* (%s)", qualname);
	else
		snprintf(buf, len, "Task-*");
}

/* ---- per interpreter ------------------------------------------------- */

/* What classify() makes of an object; TK_OTHER: a Python-level class
 * (a pure-Python Task among them). */
enum tkind { TK_NONE = 0, TK_OTHER, TK_STR, TK_INT, TK_CORO, TK_TASK_C, TK_BAD };

struct aproc {
	struct proc_slot key;		/* first: procslot.h */
	struct py_seen seen;
	struct pyobj_modindex mods;	/* sys.modules' scans, unless shared */
	uint64_t current_tasks;		/* the dict; 0: not found yet */
	uint64_t retry_ns;		/* no search for it before this */
	uint64_t retry_gap;		/* ... since the last look; 0: RETRY_NS */
	int64_t modules_used;		/* len(sys.modules) at the last search */
	int confirmed;			/* current_tasks has held a task */
	uint64_t check_ns, check_gap;	/* unconfirmed: search again then */
	int refused;			/* a Task or coroutine type of the wrong size */
	uint64_t tid_hint, name_hint, coro_hint;	/* attribute key objects */
	struct pyasyncio_layout dl;	/* 3.14+: from the AsyncioDebug section */
	int dl_state;			/* 1: dl read, -1: refused, 0: not yet,
					 * 2: no section yet, dl without C Task */
	uint64_t sec_retry_ns;		/* no look for the section before this */
	/* Where the BPF program finds the running tasks (bpf/pyperf.h);
	 * src_dirty: changed since pyasyncio_task_srcs() last gave it. */
	struct py_task_src src;
	int src_dirty;
	uint64_t str_type;		/* the type classified TK_STR; 0: none yet */
	struct { uint64_t type; uint8_t kind; } types[NTYPES];
	struct { uint64_t loop, ident, ns; } loops[NPLOOPS];	/* whose loop */
	unsigned next_type;
	int warned;
};

/* One read of a target: the cache's whole view of it. */
struct ctx {
	const struct py_target *t;
	const struct pyasyncio_layout *l;
	struct aproc *ap;
	uint64_t *refusals;
	struct pyobj_modindex *mods;	/* ap->mods, or the thread names' */
	struct py_object_offsets o;	/* pyobj_offsets(): complete for
					 * _Py_DebugOffsets layouts too */
	int py_tasks;			/* 3.14+: o can read asyncio.tasks.
					 * _current_tasks (pure-Python tasks) */
};

/* The type's tp_name, NUL-terminated, at most TYPE_NAME_MAX - 1 bytes. */
static int type_name(const struct ctx *x, uint64_t type, char *buf)
{
	uint64_t p = 0;

	if (py_read(x->t, type + x->t->layout.code.type_name, &p, sizeof(p)) || !p)
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

static int64_t type_size(const struct ctx *x, uint64_t type)
{
	int64_t v = -1;

	if (py_read(x->t, type + x->o.type_basicsize, &v, sizeof(v)))
		return -1;
	return v;
}

static void refuse(const struct ctx *x, const char *what, int64_t size, unsigned want)
{
	(*x->refusals)++;
	x->ap->refused = 1;
	if (x->ap->warned++)
		return;
	if (x->l->ts_task)
		fprintf(stderr, "pyperf-pprof: no asyncio_task labels for pid %d: %s is %lld bytes, its AsyncioDebug section and _Py_DebugOffsets say %u\n",
			x->t->pid, what, (long long)size, want);
	else
		fprintf(stderr, "pyperf-pprof: no asyncio_task labels for pid %d: %s is %lld bytes, the %u.%u table says %u; add this build's row to src/python/pyasyncio.c from its DWARF\n",
			x->t->pid, what, (long long)size, x->t->major, x->t->minor, want);
}

static enum tkind classify_uncached(const struct ctx *x, uint64_t type)
{
	char name[TYPE_NAME_MAX];
	int64_t size;

	if (type_name(x, type, name))
		return TK_NONE;
	if (!strcmp(name, "str"))
		return TK_STR;
	if (!strcmp(name, "int"))
		return TK_INT;
	if (!strcmp(name, "coroutine")) {
		size = type_size(x, type);
		if (size == x->l->coro_size)
			return TK_CORO;
		refuse(x, "the coroutine type", size, x->l->coro_size);
		return TK_BAD;
	}
	for (int i = 0; i < MAX_BASES && type; i++) {
		if (i && type_name(x, type, name))
			return TK_NONE;
		if (!strcmp(name, "_asyncio.Task")) {
			/* Its module's section not read yet: unknown, not
			 * refused (and not remembered). */
			if (!x->l->task_size)
				return TK_NONE;
			size = type_size(x, type);
			if (size == x->l->task_size)
				return TK_TASK_C;
			refuse(x, "_asyncio.Task", size, x->l->task_size);
			return TK_BAD;
		}
		type = py_read_ptr(x->t, type + x->l->type_base);
	}
	return TK_OTHER;
}

/* What an object of type type is (remembered per interpreter). */
static enum tkind classify_type(const struct ctx *x, uint64_t type)
{
	struct aproc *ap = x->ap;
	enum tkind k;

	if (!type || (type & 7))
		return TK_NONE;
	for (int i = 0; i < NTYPES; i++)
		if (ap->types[i].type == type)
			return (enum tkind)ap->types[i].kind;
	k = classify_uncached(x, type);
	if (k == TK_STR)
		ap->str_type = type;
	if (k != TK_NONE) {
		ap->types[ap->next_type % NTYPES].type = type;
		ap->types[ap->next_type++ % NTYPES].kind = (uint8_t)k;
	}
	return k;
}

/* What the object at obj is, by its type. */
static enum tkind classify(const struct ctx *x, uint64_t obj)
{
	return classify_type(x, obj ? py_read_ptr(x->t, obj + x->t->layout.code.ob_type) : 0);
}

/* ---- tasks ----------------------------------------------------------- */

/* A task as read from the target, and its label. */
struct recent {
	uint64_t task, name, coro;	/* task 0: empty slot */
	uint64_t code;			/* the coroutine's code object; 0: unknown */
	int c_task;			/* a C Task: labelled from the BPF
					 * program's capture only */
	char label[PYASYNCIO_LABEL_MAX];
};

/* The name and coroutine objects of task. 0 on success. */
static int task_fields(const struct ctx *x, uint64_t task, uint64_t *name, uint64_t *coro)
{
	const struct pyasyncio_layout *l = x->l;
	uint8_t b[TASK_READ];
	enum tkind k = classify(x, task);

	*name = *coro = 0;
	if (k == TK_TASK_C) {
		size_t end = (l->task_name != NO16 && l->task_name > l->task_coro ?
			      l->task_name : l->task_coro) + 8u;

		if (end > sizeof(b) || py_read(x->t, task, b, end))
			return -1;
		memcpy(coro, b + l->task_coro, 8);
		if (l->task_name != NO16)
			memcpy(name, b + l->task_name, 8);
		return (*coro & 7) || (*name & 7) ? -1 : 0;
	}
	if (k != TK_OTHER)
		return -1;
	/* asyncio.tasks._PyTask, or a Task-like object of a task factory. */
	*name = pyobj_attr(x->t, &x->ap->seen, task, "_name", &x->ap->name_hint);
	*coro = pyobj_attr(x->t, &x->ap->seen, task, "_coro", &x->ap->coro_hint);
	return *coro ? 0 : -1;
}

/*
 * The coroutine's code object into *code and __qualname__ into q ("" if
 * unknown). An awaitable that is not a coroutine (a generator-based or
 * Cython one) has no code here (*code 0: its samples are not checked).
 * -1 when a coroutine's fields are unreadable.
 */
static int coro_info(const struct ctx *x, uint64_t coro, uint64_t *code, char *q,
		     size_t len)
{
	const struct pyasyncio_layout *l = x->l;
	const struct py_walk_offsets *w = &x->t->layout.walk;
	enum tkind k = classify(x, coro);
	uint64_t qual;

	q[0] = '\0';
	*code = 0;
	if (k != TK_CORO)
		return k == TK_OTHER ? 0 : -1;
	qual = py_read_ptr(x->t, coro + l->cr_qualname);
	if (qual && classify(x, qual) == TK_STR && pysym_read_str(x->t, qual, q, len))
		q[0] = '\0';
	if (l->cr_code != NO16) {
		*code = py_read_ptr(x->t, coro + l->cr_code);
	} else if (l->cr_iframe != NO16 && py_read(x->t, coro + l->cr_iframe + w->frame_code,
					      code, sizeof(*code)) == 0) {
		*code &= ~(uint64_t)w->code_tag_mask;
		*code = *code & 7 ? 0 : *code;
	}
	return *code ? 0 : -1;
}

/* Reads task into r: its label and its coroutine's code. 0 on success. */
static int task_read(const struct ctx *x, uint64_t task, uint64_t name, uint64_t coro,
		     struct recent *r)
{
	char n[NAME_MAX_READ] = "", q[NAME_MAX_READ];
	int is_default = 1;
	enum tkind k = name ? classify(x, name) : TK_NONE;

	if (k == TK_STR) {
		if (pysym_read_str(x->t, name, n, sizeof(n)))
			return -1;
		is_default = pyasyncio_default_name(n);
	}
	/* TK_INT: 3.12+ keeps the counter until get_name() formats it. */
	r->task = task;
	r->name = name;
	r->coro = coro;
	r->c_task = classify(x, task) == TK_TASK_C;
	if (coro_info(x, coro, &r->code, q, sizeof(q)) || x->ap->refused)
		return -1;
	pyasyncio_format(r->label, sizeof(r->label), n, is_default, q);
	return 0;
}

/* ---- threads --------------------------------------------------------- */

struct tentry {
	int pid;			/* 0: empty */
	uint32_t tid;
	uint64_t start_time;
	uint64_t tstate, interp, ident;	/* ident: threading.get_ident() */
	uint64_t time_ns;		/* when the current task was read; 0: never */
	uint64_t idle_until;		/* no asyncio found in its process: a read
					 * before this finds none (quiet()) */
	uint32_t age;
	int cur;			/* recent[] of the current task; -1: none */
	unsigned next;			/* recent[] slot to fill next */
	struct recent recent[NRECENT];
	struct { uint64_t loop, ns; } loops[NLOOPS];	/* not this thread's */
};

/*
 * Does loop run in e's thread (its _thread_id is e->ident)? A loop found
 * to be some thread's goes in the process's table, so the other threads
 * skip it without reading; a loop found not to be e's thread's in e's.
 * Both are trusted for PYASYNCIO_LOOP_TTL_NS.
 */
static int loop_is_ours(const struct ctx *x, struct tentry *e, uint64_t loop, uint64_t now)
{
	struct aproc *ap = x->ap;
	int old = 0, pold = 0, ours;
	uint64_t tid;

	for (int i = 0; i < NPLOOPS; i++) {
		if (ap->loops[i].loop == loop && now - ap->loops[i].ns < PYASYNCIO_LOOP_TTL_NS)
			return ap->loops[i].ident == e->ident;
		if (ap->loops[i].ns < ap->loops[pold].ns)
			pold = i;
	}
	for (int i = 0; i < NLOOPS; i++) {
		if (e->loops[i].loop == loop && now - e->loops[i].ns < PYASYNCIO_LOOP_TTL_NS)
			return 0;
		if (e->loops[i].ns < e->loops[old].ns)
			old = i;
	}
	tid = pyobj_attr(x->t, &ap->seen, loop, "_thread_id", &ap->tid_hint);
	ours = tid && pyobj_int_equals(x->t, tid, e->ident);
	if (ours) {
		ap->loops[pold].loop = loop;
		ap->loops[pold].ident = e->ident;
		ap->loops[pold].ns = now;
	} else {
		e->loops[old].loop = loop;
		e->loops[old].ns = now;
	}
	return ours;
}

/* Finds asyncio.tasks._current_tasks, at most every RETRY_NS and only
 * when sys.modules changed size since the last search: one read (the
 * dict's header) while asyncio is not imported. 0 when found. */
static int find_current_tasks(const struct ctx *x, uint64_t interp, uint64_t now)
{
	struct aproc *ap = x->ap;
	struct pyobj_dhead h;
	struct pyobj_ctx c;
	uint64_t modules, mod, mdict;

	if (now < ap->retry_ns)
		return -1;
	ap->retry_ns = now + RETRY_NS;
	if (pyobj_ctx_init(&c, x->t))
		return -1;
	modules = pyobj_modules(&c, interp, x->mods, &h, now);
	if (!modules || h.used < 0)
		return -1;
	if (h.used == ap->modules_used) {
		ap->retry_gap = ap->retry_gap ? 2 * ap->retry_gap : 2 * RETRY_NS;
		if (ap->retry_gap > RETRY_MAX_NS)
			ap->retry_gap = RETRY_MAX_NS;
		ap->retry_ns = now + ap->retry_gap;
		return -1;
	}
	ap->retry_gap = 0;
	ap->seen.dict_type = h.type;
	mod = pyobj_module_find(&c, &h, PYOBJ_MOD_ASYNCIO_TASKS, x->mods, &ap->seen.str_type);
	if (!mod) {
		ap->modules_used = h.used;
		return -1;
	}
	/* sys.modules holds a module while it executes: if asyncio.tasks is
	 * there but not its _current_tasks yet, look again next time. */
	mdict = py_read_ptr(x->t, mod + c.o.module_dict);
	ap->current_tasks = mdict ? pyobj_dict_get_str(&c, mdict, "_current_tasks", NULL, NULL) : 0;
	return ap->current_tasks ? 0 : -1;
}

/*
 * asyncio/tasks.py binds _current_tasks to a dict of its own, then to
 * _asyncio's when that imports: a search during the import finds the
 * first. Until the dict has held a task, it is looked up again after
 * 0.1 s, 0.2 s ... at most every 3.2 s.
 */
static void recheck(const struct ctx *x, uint64_t interp, uint64_t now)
{
	struct aproc *ap = x->ap;
	uint64_t d;

	if (ap->confirmed)
		return;
	if (!ap->check_ns) {
		ap->check_gap = RETRY_NS;
		ap->check_ns = now + ap->check_gap;
		return;
	}
	if (now < ap->check_ns)
		return;
	ap->check_gap = ap->check_gap < 32 * RETRY_NS ? 2 * ap->check_gap : ap->check_gap;
	ap->check_ns = now + ap->check_gap;
	d = pyobj_module_attr(x->t, &ap->seen, x->mods, interp, PYOBJ_MOD_ASYNCIO_TASKS,
			      "_current_tasks");
	if (d)
		ap->current_tasks = d;
}

/*
 * Where the BPF program is to find this interpreter's running C Tasks at
 * each sample (struct py_task_src, bpf/pyperf.h): 3.14+ the thread
 * state's running task, before the current-tasks dict found here, with
 * the offsets to read both, a Task's coroutine and its frame. Marked for
 * pyasyncio_task_srcs() when it changed.
 */
static void note_src(const struct ctx *x)
{
	const struct pyasyncio_layout *l = x->l;
	const struct py_object_offsets *o = &x->o;
	struct py_task_src src = {
		.ob_type = x->t->layout.code.ob_type,
		.task_coro = l->task_coro,
		.task_name = l->task_name,
		/* <=3.10: the frame object is the coroutine's first field
		 * (PyCoroObject.cr_frame, 16 in every pyenv build's DWARF) */
		.cr_frame = x->t->minor <= 10 ? (uint16_t)(x->t->layout.code.ob_type + 8) : NO16,
		.cr_iframe = x->t->minor <= 10 ? NO16 : l->cr_iframe,
		.cr_qualname = l->cr_qualname,
	};
	uint16_t end = l->task_coro > src.ob_type ? l->task_coro : src.ob_type;

	/* Learnt from the first str classified (a name or qualname). */
	src.str_type = x->ap->str_type;
	src.str_data = x->t->layout.code.unicode_ascii_size;

	if (l->task_name != NO16 && l->task_name > end)
		end = l->task_name;
	src.task_read = (uint16_t)((end + 8 + 7) & ~7u);

	if (l->free_threaded)
		return;
	if (!l->task_size || l->task_coro == NO16 || l->cr_qualname == NO16 ||
	    (x->t->minor > 10 && l->cr_iframe == NO16))
		src.task_read = 0;	/* no C Task to name */
	else
		src.ts_task = l->ts_task;
	/* The dict: before 3.14 every task's, the C Tasks named from it.
	 * 3.14+ holds pure-Python Tasks alone: the program tells when they
	 * change, and wakes user space to read them while they run
	 * (SAMPLE_F_NEW_TASK); with the thread state's running task NULL
	 * and the dict empty it tells that none runs (SAMPLE_F_NO_TASK).
	 * Given as soon as found: 3.14's asyncio.tasks binds _current_tasks
	 * once (v3.14.7, sid's 3.14), _asyncio has none to rebind it to.
	 * Without a C Task layout, only once it has held a task. */
	if (!x->ap->current_tasks || o->dict_keys == NO16 || o->dk_nentries == NO16 ||
	    o->dk_indices == NO16 || (!src.task_read && !x->ap->confirmed)) {
		if (!src.ts_task)
			return;
	} else {
		src.dict = x->ap->current_tasks;
		src.dict_keys = o->dict_keys;
		src.dk_size = o->dk_size;
		src.dk_log2_index_bytes = o->dk_log2_index_bytes;
		src.dk_kind = o->dk_kind;
		src.dk_kind_general = o->dk_kind_general;
		src.dk_nentries = o->dk_nentries;
		src.dk_indices = o->dk_indices;
		src.entry_size = o->entry_size;
		src.entry_value = o->entry_value;
		/* Before 3.14 every task enters it; the one that has held a
		 * task is asyncio's, not a dict tasks.py rebound since. */
		src.dict_all = !src.ts_task && x->ap->confirmed;
	}
	if (memcmp(&src, &x->ap->src, sizeof(src))) {
		x->ap->src = src;
		x->ap->src_dirty = 1;
	}
}

/* The task e's thread runs now, or 0. */
static uint64_t current_task(const struct ctx *x, struct tentry *e, uint64_t now)
{
	struct aproc *ap = x->ap;
	uint64_t loops[MAX_LOOPS], tasks[MAX_LOOPS];
	int n;

	if (ap->refused)
		return 0;
	/* 3.14+: the thread state says while a C Task's step runs, whatever
	 * the loop; else a pure-Python Task may be running. */
	if (x->l == &ap->dl) {
		uint64_t task = x->l->ts_task ? py_read_ptr(x->t, e->tstate + x->l->ts_task) : 0;
		uint64_t interp = 0;

		if (task || !x->py_tasks)
			return task;
		if (!e->ident && pythread_tstate_ident(x->t, e->tstate, &interp, &e->ident))
			return 0;
	}
	if (!ap->current_tasks && find_current_tasks(x, e->interp, now))
		return 0;
	recheck(x, e->interp, now);
	note_src(x);
	n = pyobj_dict_items(x->t, &ap->seen, ap->current_tasks, loops, tasks, MAX_LOOPS);
	if (n < 0) {
		ap->current_tasks = 0;	/* not a dict (any more): search again */
		return 0;
	}
	if (n > 0)
		ap->confirmed = 1;
	for (int i = 0; i < n; i++)
		if (loop_is_ours(x, e, loops[i], now))
			return tasks[i];
	return 0;
}

/* Reads the current task of e's thread into e->cur. */
static void read_current(const struct ctx *x, struct tentry *e, uint64_t now)
{
	uint64_t task = current_task(x, e, now), name, coro;
	struct recent *r;

	e->cur = -1;
	if (!task || task_fields(x, task, &name, &coro))
		return;
	for (int i = 0; i < NRECENT; i++) {
		r = &e->recent[i];
		if (r->task == task && r->name == name && r->coro == coro) {
			e->cur = i;
			return;
		}
	}
	r = &e->recent[e->next % NRECENT];
	memset(r, 0, sizeof(*r));
	if (task_read(x, task, name, coro, r) == 0)
		e->cur = (int)(e->next++ % NRECENT);
	else
		memset(r, 0, sizeof(*r));
}

/* ---- 3.14+ ----------------------------------------------------------- */

/*
 * x->l and x->o.type_basicsize from the process's AsyncioDebug section,
 * looked for at most every RETRY_NS until a mapped file has it (asyncio
 * imported); a section that fails its checks is refused once, for good.
 * 0 when ready.
 */
static int section_layout(struct ctx *x, uint64_t now)
{
	struct aproc *ap = x->ap;
	uint8_t sec[PYASYNCIO_SECTION_MAX];
	struct py_gil_offsets gil;
	char err[320];
	size_t n = 0;

	if ((ap->dl_state == 0 || ap->dl_state == 2) && now >= ap->sec_retry_ns) {
		int r;

		ap->sec_retry_ns = now + RETRY_NS;
		r = pyasyncio_debug_read(x->t, sec, sizeof(sec), &n);
		if (r == 1 && ap->dl_state == 0) {
			memset(&ap->dl, 0, sizeof(ap->dl));
			ap->dl.minor = x->t->minor;
			if (pyasyncio_debug_derive(&x->t->layout, &ap->dl, err, sizeof(err)) == 0)
				ap->dl_state = 2;
		} else if (r == 0) {
			if (pyasyncio_debug_parse(sec, n, &x->t->layout, &ap->dl, err, sizeof(err))) {
				ap->dl_state = -1;
				ap->refused = 1;
				(*x->refusals)++;
				fprintf(stderr, "pyperf-pprof: no asyncio_task labels for pid %d: %s\n",
					x->t->pid, err);
			} else {
				ap->dl_state = 1;
			}
		}
	}
	if (ap->dl_state != 1 && ap->dl_state != 2)
		return -1;
	x->l = &ap->dl;
	x->py_tasks = pyobj_offsets(x->t, &x->o, &gil) == 0;
	x->o = x->t->layout.obj;
	x->o.type_basicsize = ap->dl.type_basicsize;
	if (ap->dl_state == 1)
		note_src(x);
	/* Without a section only pure-Python tasks can be read. */
	return ap->dl_state == 1 || x->py_tasks ? 0 : -1;
}

/* The interpreter of a 3.14+ thread state, or 0. */
static uint64_t tstate_interp(const struct ctx *x, uint64_t tstate)
{
	uint16_t off = x->t->layout.obj.ts_interp;

	return off == NO16 ? 0 : py_read_ptr(x->t, tstate + off);
}

/* ---- the uncached lookup --------------------------------------------- */

int pyasyncio_task(const struct py_target *t, uint64_t tstate, char *buf, size_t len,
		   uint64_t *code)
{
	struct aproc ap = { .key = { .pid = t->pid } };
	struct tentry e = { .tstate = tstate, .cur = -1 };
	uint64_t refusals = 0;
	struct ctx x = { .t = t, .l = layout_of(t), .ap = &ap, .mods = &ap.mods,
			 .refusals = &refusals };
	struct py_gil_offsets gil;

	if (!x.l || !len)
		return -1;
	if (x.l == &from_section) {
		e.interp = ap.key.interp = tstate_interp(&x, tstate);
		if (!e.interp || section_layout(&x, 1))
			return -1;
	} else if (pyobj_offsets(t, &x.o, &gil) ||
		   pythread_tstate_ident(t, tstate, &e.interp, &e.ident)) {
		return -1;
	}
	ap.key.interp = e.interp;
	read_current(&x, &e, 1);
	if (refusals)
		return -1;
	if (e.cur < 0)
		return 1;
	snprintf(buf, len, "%s", e.recent[e.cur].label);
	if (code)
		*code = e.recent[e.cur].code;
	return 0;
}

/* ---- the cache ------------------------------------------------------- */

struct pyasyncio_cache {
	struct pythread_cache *threads;	/* whose sys.modules scans are shared */
	struct tentry *e;
	size_t nsets;
	uint32_t clock;
	struct aproc procs[NPROCS];
	struct pyasyncio_stats st;
	char label[PYASYNCIO_LABEL_MAX];	/* pyasyncio_cache_capture()'s */
};

struct pyasyncio_cache *pyasyncio_cache_new(size_t capacity)
{
	struct pyasyncio_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->e = setcache_alloc(capacity, WAYS, sizeof(*c->e), &c->nsets);
	if (!c->e) {
		free(c);
		return NULL;
	}
	return c;
}

void pyasyncio_cache_free(struct pyasyncio_cache *c)
{
	if (!c)
		return;
	free(c->e);
	free(c);
}

/* Only the per-process states: a thread's entry names its process by pid
 * and start time (entry_get), so it never matches a later process with
 * the pid and is replaced like any old entry; scanning them all at each
 * exit cost more than the exits' other work here. */
void pyasyncio_forget_pid(struct pyasyncio_cache *c, int pid)
{
	for (int i = 0; i < NPROCS; i++)
		if (c->procs[i].key.pid == pid)
			memset(&c->procs[i], 0, sizeof(c->procs[i]));
}

void pyasyncio_get_stats(const struct pyasyncio_cache *c, struct pyasyncio_stats *st)
{
	*st = c->st;
}

/* The state of (t, interp), made if need be (LRU). */
/* The state of t's interpreter at interp; a reused pid's is started afresh
 * (procslot.h). */
static struct aproc *aproc_get(struct pyasyncio_cache *c, const struct py_target *t,
			       uint64_t interp)
{
	int fresh;
	struct aproc *ap = (struct aproc *)proc_slot_get(c->procs, NPROCS, sizeof(c->procs[0]), t,
							 interp, c->clock, &fresh);

	if (fresh) {
		memset(ap, 0, sizeof(*ap));
		proc_slot_take(&ap->key, t, interp, c->clock);
	}
	return ap;
}

/* The entry of (t, tid), made (evicting the set's oldest) if need be. */
static struct tentry *entry_get(struct pyasyncio_cache *c, const struct py_target *t,
				uint32_t tid, uint64_t tstate, uint64_t now)
{
	uint64_t h = ((uint64_t)tid * 0x9e3779b97f4a7c15ULL) ^ (uint64_t)t->pid << 32;
	struct tentry *set = &c->e[((h ^ h >> 29) & (c->nsets - 1)) * WAYS], *victim = set;

	for (int i = 0; i < WAYS; i++) {
		struct tentry *e = &set[i];

		if (e->pid == t->pid && e->tid == tid && e->start_time == t->start_time &&
		    e->tstate == tstate) {
			e->age = c->clock;
			return e;
		}
		if (e->pid == t->pid && e->tid == tid) {
			victim = e;	/* a new thread state or process */
			break;
		}
		if (!e->pid || (victim->pid && e->age < victim->age))
			victim = e;
	}
	if (victim->pid && victim->time_ns && now - victim->time_ns < PYASYNCIO_LOOP_TTL_NS)
		c->st.evictions++;
	memset(victim, 0, sizeof(*victim));
	victim->pid = t->pid;
	victim->tid = tid;
	victim->start_time = t->start_time;
	victim->tstate = tstate;
	victim->cur = -1;
	victim->age = c->clock;
	return victim;
}

static int in_stack(uint64_t code, const uint64_t *codes, size_t n)
{
	for (size_t i = 0; code && i < n; i++)
		if (codes[i] == code)
			return 1;
	return 0;
}

/* The label e gives a stack running codes, or NULL; *task the task's
 * object, 0 when tasks of one label match and which ran is not known. */
static const char *choose(struct pyasyncio_cache *c, const struct tentry *e,
			  const uint64_t *codes, size_t n, uint64_t *task)
{
	const char *found = NULL;

	*task = 0;
	/* A C Task is named from the BPF program's capture alone
	 * (pyasyncio_cache_capture): this guess by code object is kept for
	 * pure-Python tasks, which it cannot read. */
	if (e->cur >= 0 && !e->recent[e->cur].c_task) {
		const struct recent *r = &e->recent[e->cur];

		if (!r->code || in_stack(r->code, codes, n)) {
			*task = r->task;
			return r->label;
		}
		c->st.mismatches++;
	}
	/* Taken while an earlier task ran: one of the last few, if only
	 * tasks with one label match the stack. */
	for (int i = 0; i < NRECENT; i++) {
		const struct recent *r = &e->recent[i];

		if (!r->task || r->c_task || !in_stack(r->code, codes, n))
			continue;
		if (found && strcmp(found, r->label)) {
			*task = 0;
			return NULL;
		}
		*task = found && *task != r->task ? 0 : r->task;
		if (found && !*task)
			break;
		found = r->label;
	}
	return found;
}

void pyasyncio_cache_share(struct pyasyncio_cache *c, struct pythread_cache *threads)
{
	c->threads = threads;
}

/* The sys.modules scans of (t, interp): the thread names' when shared. */
static struct pyobj_modindex *shared_mods(struct pyasyncio_cache *c, const struct py_target *t,
					  uint64_t interp, struct aproc *ap)
{
	struct pyobj_modindex *mi = c->threads ? pythread_modindex(c->threads, t, interp) : NULL;

	return mi ? mi : &ap->mods;
}

/* The view of e's interpreter (t, layout l) into *x. 0 when ready. */
static int ctx_open(struct pyasyncio_cache *c, const struct py_target *t,
		    const struct pyasyncio_layout *l, struct tentry *e, uint64_t tstate,
		    uint64_t now_ns, struct ctx *x)
{
	struct py_gil_offsets gil;

	*x = (struct ctx){ .t = t, .l = l, .refusals = &c->st.refusals };
	if (l == &from_section) {
		if (!e->interp)
			e->interp = tstate_interp(x, tstate);
		if (!e->interp)
			return -1;
		x->ap = aproc_get(c, t, e->interp);
		x->mods = shared_mods(c, t, e->interp, x->ap);
		return section_layout(x, now_ns);
	}
	if (!e->interp && (c->threads ? pythread_cache_ident(c->threads, t, tstate, now_ns,
							     &e->interp, &e->ident) :
			   pythread_tstate_ident(t, tstate, &e->interp, &e->ident)))
		e->interp = 0;
	if (!e->interp || pyobj_offsets(t, &x->o, &gil))
		return -1;
	x->ap = aproc_get(c, t, e->interp);
	x->mods = shared_mods(c, t, e->interp, x->ap);
	return 0;
}

/*
 * Until when a read of e's current task can only find none again: its
 * process has no asyncio.tasks._current_tasks found, and
 * find_current_tasks() searches again at ap->retry_ns at the earliest,
 * whichever thread asks (retry_ns only grows), so a task started later
 * is found as soon as without this. Table layouts (<=3.13), and 3.14+
 * while no mapped file has the AsyncioDebug section (dl_state 2): no
 * _asyncio, so no C Task sets the thread state's running task (the
 * section is looked for at the next read, with sys.modules). 0: read at
 * each TTL. A process without asyncio then costs a sample a hash lookup,
 * not a read (every sample of every target was one: the TTL is below
 * 99 Hz's period, and a label not found read again).
 */
static uint64_t quiet(const struct ctx *x, const struct tentry *e)
{
	const struct aproc *ap = x->ap;

	if ((x->l != &x->t->layout.asyncio && (x->l != &ap->dl || ap->dl_state != 2)) ||
	    e->cur >= 0 || ap->current_tasks || ap->refused)
		return 0;
	for (int i = 0; i < NRECENT; i++)
		if (e->recent[i].task)
			return 0;
	return ap->retry_ns;
}

/* Reads the thread's current task now, into e's recent tasks. */
static void refresh(struct pyasyncio_cache *c, const struct py_target *t,
		    const struct pyasyncio_layout *l, struct tentry *e, uint64_t tstate,
		    uint64_t now_ns)
{
	struct ctx x;

	c->st.lookups++;
	e->time_ns = now_ns;
	e->cur = -1;
	e->idle_until = 0;
	errno = 0;
	if (ctx_open(c, t, l, e, tstate, now_ns, &x) == 0) {
		read_current(&x, e, now_ns);
		e->idle_until = quiet(&x, e);
	} else if (errno == ESRCH) {
		/* The process has exited and its records are still being
		 * added: nothing more can be read (each of its samples read
		 * again and failed, ~7 reads per short-lived process). */
		e->idle_until = UINT64_MAX;
	}
}

const char *pyasyncio_cache_task_at(struct pyasyncio_cache *c, const struct py_target *t,
				    uint32_t tid, uint64_t tstate, const uint64_t *codes,
				    size_t ncodes, uint64_t now_ns, uint64_t *task)
{
	const struct pyasyncio_layout *l = layout_of(t);
	struct tentry *e;
	const char *label;
	int fresh = 0;

	*task = 0;
	if (!l || !tstate || !tid || !t->pid)
		return NULL;
	if (!now_ns)
		now_ns = 1;
	c->clock++;
	e = entry_get(c, t, tid, tstate, now_ns);
	if (e->time_ns && now_ns >= e->time_ns &&
	    (now_ns - e->time_ns < PYASYNCIO_TTL_NS || now_ns < e->idle_until)) {
		c->st.hits++;
		fresh = now_ns < e->idle_until;	/* no use reading again */
	} else {
		refresh(c, t, l, e, tstate, now_ns);
		fresh = 1;
	}
	label = choose(c, e, codes, ncodes, task);
	/* A cached task that does not match the stack may be stale when
	 * records queue up (a loaded machine): read once more, so the task
	 * that ran enters the recent ones, before giving up the label. */
	if (!label && !fresh) {
		refresh(c, t, l, e, tstate, now_ns);
		label = choose(c, e, codes, ncodes, task);
	}
	if (label)
		c->st.labelled++;
	return label;
}

const char *pyasyncio_cache_task(struct pyasyncio_cache *c, const struct py_target *t,
				 uint32_t tid, uint64_t tstate, const uint64_t *codes,
				 size_t ncodes, uint64_t now_ns)
{
	uint64_t task;

	return pyasyncio_cache_task_at(c, t, tid, tstate, codes, ncodes, now_ns, &task);
}

/* The str (or, name only, int: a default name not formatted yet) whose
 * first len bytes the BPF program copied into obj, into buf ("" when
 * none). 0, or -1 when the object is neither. */
static int captured_str(const struct ctx *x, const uint8_t *obj, size_t len, int *is_int,
			char *buf, size_t size)
{
	uint16_t ob_type = x->t->layout.code.ob_type;
	uint64_t type;

	buf[0] = '\0';
	*is_int = 0;
	if (!len)
		return 0;
	if (len < (size_t)ob_type + 8)
		return -1;
	memcpy(&type, obj + ob_type, sizeof(type));
	switch (classify_type(x, type)) {
	case TK_STR:
		return pysym_str_prefix(x->t, obj, len, buf, size);
	case TK_INT:
		*is_int = 1;
		return 0;
	default:
		return -1;
	}
}

/* The label of the task the BPF program captured, from the capture
 * alone (the task may be gone since). 0, or -1 (no label). */
static int capture_label(const struct ctx *x, const struct py_task_capture *cap, char *buf,
			 size_t len)
{
	char n[NAME_MAX_READ], q[NAME_MAX_READ];
	int n_int, q_int, is_default;

	if (x->ap->refused || classify_type(x, cap->task_type) != TK_TASK_C)
		return -1;
	if (cap->name_len > sizeof(cap->name) || cap->qual_len > sizeof(cap->qual) ||
	    captured_str(x, cap->name, cap->name_len, &n_int, n, sizeof(n)) ||
	    captured_str(x, cap->qual, cap->qual_len, &q_int, q, sizeof(q)) || q_int)
		return -1;
	/* A name not read where the Task has one: no label. */
	if (!cap->name_len && x->l->task_name != NO16)
		return -1;
	is_default = !n[0] || pyasyncio_default_name(n);
	/* No qualname copied: the program judged the name no default one. */
	if (is_default && !cap->qual_len)
		return -1;
	pyasyncio_format(buf, len, n, is_default, q);
	return 0;
}

const char *pyasyncio_cache_capture(struct pyasyncio_cache *c, const struct py_target *t,
				    uint32_t tid, uint64_t tstate,
				    const struct py_task_capture *cap, uint64_t now_ns)
{
	const struct pyasyncio_layout *l = layout_of(t);
	struct tentry *e;
	struct ctx x;

	if (!l || !tstate || !tid || !t->pid)
		return NULL;
	c->clock++;
	e = entry_get(c, t, tid, tstate, now_ns ? now_ns : 1);
	if (ctx_open(c, t, l, e, tstate, now_ns ? now_ns : 1, &x) ||
	    capture_label(&x, cap, c->label, sizeof(c->label))) {
		c->st.capture_refused++;
		return NULL;
	}
	x.ap->confirmed = 1;
	note_src(&x);		/* with the str type now known */
	c->st.labelled++;
	c->st.captured++;
	return c->label;
}

size_t pyasyncio_task_srcs(struct pyasyncio_cache *c, int *pids, struct py_task_src *srcs,
			   size_t max)
{
	size_t n = 0;

	for (int i = 0; i < NPROCS && n < max; i++) {
		struct aproc *ap = &c->procs[i];

		if (!ap->key.pid || !ap->src_dirty)
			continue;
		ap->src_dirty = 0;
		pids[n] = ap->key.pid;
		srcs[n++] = ap->src;
	}
	return n;
}
