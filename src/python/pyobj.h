/*
 * Python objects of a target read from user space (dicts, instance
 * attributes, short str and int objects), for the readers of thread names
 * (pythread.c) and asyncio tasks (pyasyncio.c). Every read is bounded and
 * checked; 0 or -1 means absent or unreadable.
 */
#ifndef PYOBJ_H
#define PYOBJ_H

#include <stddef.h>
#include <stdint.h>

#include "pyoffsets.h"
#include "pyread.h"
#include "pystrhash.h"
#include "pyversion.h"

/*
 * The object and GIL offsets for t (t->layout's, completed by
 * py_layout_choose()). 0 when objects can be read with *obj, -1 when a
 * needed field is missing (*obj and *gil are filled either way; gil
 * fields may be absent).
 */
int pyobj_offsets(const struct py_target *t, struct py_object_offsets *obj,
		  struct py_gil_offsets *gil);

/* One target with its object offsets. */
struct pyobj_ctx {
	const struct py_target *t;
	struct py_object_offsets o;
	pid_t pid;
};

/* 0 when t's objects can be read (pyobj_offsets()). */
int pyobj_ctx_init(struct pyobj_ctx *c, const struct py_target *t);

/*
 * What readers learn about one interpreter and keep, zeroed before first
 * use: the exact dict type (that of sys.modules) and the exact str type
 * (that of a key found by its bytes).
 */
struct py_seen {
	uint64_t dict_type;
	uint64_t str_type;
};

/* One dict (or a class's shared keys) as the lookups see it. */
struct pyobj_dview {
	uint64_t values;	/* value array of a split table; 0: combined */
	uint64_t entries;	/* address of entry 0 */
	uint64_t nentries;
	uint16_t esize, ekey, evalue, ehash;	/* ehash NO16: no hash stored */
	uint8_t *ent;		/* nentries * esize bytes, malloc'd */
	uint64_t size;		/* slots of the index table */
	unsigned iw;		/* bytes of an index */
	uint8_t *ix;		/* the index table, malloc'd, when asked for */
};

void pyobj_dview_free(struct pyobj_dview *v);

/* Reads a dict object: its keys, entries and (split) value array; and its
 * type when type is not NULL. An empty dict is a view of no entries,
 * whatever its keys. 0 on success (free it with pyobj_dview_free()). */
int pyobj_dict_view(const struct pyobj_ctx *c, uint64_t dict, struct pyobj_dview *v,
		    uint64_t *type);
uint64_t pyobj_ent_key(const struct pyobj_dview *v, uint64_t i);
/* Value of entry i; 0 when absent or unreadable. */
uint64_t pyobj_ent_value(const struct pyobj_ctx *c, const struct pyobj_dview *v, uint64_t i);

/* d[s] for a str key s, 0 when absent. *hint (may be NULL): a key object
 * known to be s, tried first and set to the one found; *str_type (may be
 * NULL) set to the found key's type. */
uint64_t pyobj_dict_get_str(const struct pyobj_ctx *c, uint64_t dict, const char *s,
			    uint64_t *hint, uint64_t *str_type);

/* Is the int object at obj equal to value (a C unsigned long)? */
int pyobj_long_equals(const struct pyobj_ctx *c, uint64_t obj, uint64_t value);

/* obj.<s> for an attribute kept in the instance; 0 when absent. */
uint64_t pyobj_instance_attr(const struct pyobj_ctx *c, struct py_seen *seen, uint64_t obj,
			     const char *s, uint64_t *hint);

/* The str at addr into buf (NUL-terminated, at most len - 1 bytes): one
 * read for a short ASCII string of the exact str type, else
 * pysym_read_str(). 0 on success. */
int pyobj_read_short_str(const struct pyobj_ctx *c, const struct py_seen *seen, uint64_t addr,
			 char *buf, size_t len);

/*
 * The modules readers look for in sys.modules: thread names want
 * threading, asyncio task labels asyncio.tasks. One scan of the keys
 * compares each with all of them, so the readers of one interpreter share
 * it (pythread_modindex()).
 */
enum pyobj_mod { PYOBJ_MOD_THREADING, PYOBJ_MOD_ASYNCIO_TASKS, PYOBJ_NMODS };
/* The name of module m ("threading" ...). */
const char *pyobj_mod_name(enum pyobj_mod m);
/* One read of a dict object's header. */
struct pyobj_dhead {
	uint64_t type, keys, values;
	int64_t used;		/* ma_used; -1 when the layout has no such field */
};
/*
 * The scans of one sys.modules, zeroed before first use. A dict's entries
 * are appended to in place until it is resized (into a new entries table),
 * so a scan leaves where the next may start: a program that has not
 * imported a module yet costs the keys added since, not all of them each
 * time (a new process's sys.modules grows by dozens in its first second).
 */
struct pyobj_modindex {
	uint64_t modules;	/* the dict (interp->modules: set once at start-up) */
	uint64_t entries;	/* the entries table last scanned; 0: none */
	uint64_t done;		/* its first done entries were compared */
	uint64_t key[PYOBJ_NMODS];	/* the last key object found equal to each
					 * name in that table; 0: none */
	uint64_t head_ns;	/* the sample time head was read at; 0: none */
	struct pyobj_dhead head;
	int viewed;		/* a search has seen every entry since head was read */
	/* Searches by hash (pystrhash.h): 0 not tried, 1 key read, 2 and
	 * its algorithm checked against a key's stored hash, -1 unusable
	 * (keys are compared one by one). */
	int hashing;
	int alg;		/* enum pystrhash_alg, when hashing is 2 */
	struct pystrhash_key hk;
};
/* 0 on success. */
int pyobj_dict_head(const struct pyobj_ctx *c, uint64_t dict, struct pyobj_dhead *h);
/* The sys.modules dict of the interpreter at interp, its header into *h;
 * 0 when unreadable. Its address is read once (into mi); its header once
 * per sample time now_ns (not 0): the readers of one sample share it, and
 * a search that follows another on it reads nothing. */
uint64_t pyobj_modules(const struct pyobj_ctx *c, uint64_t interp, struct pyobj_modindex *mi,
		       struct pyobj_dhead *h, uint64_t now_ns);
/* sys.modules[module m], 0 when absent, the dict's header h already read;
 * the found key's type into *str_type (may be NULL). */
uint64_t pyobj_module_find(const struct pyobj_ctx *c, const struct pyobj_dhead *h,
			   enum pyobj_mod m, struct pyobj_modindex *mi, uint64_t *str_type);
/* By target, for readers without a context of their own (pyasyncio.c). */

/* sys.modules[module].__dict__[name] of the interpreter at interp, or 0. */
uint64_t pyobj_module_attr(const struct py_target *t, struct py_seen *seen,
			   struct pyobj_modindex *mi, uint64_t interp, enum pyobj_mod m,
			   const char *name);

/* The live (key, value) pairs of the exact dict at dict, in insertion
 * order, at most max; their count, -1 if unreadable or not an exact dict. */
int pyobj_dict_items(const struct py_target *t, const struct py_seen *seen, uint64_t dict,
		     uint64_t *keys, uint64_t *values, size_t max);

/* obj.<name> kept in the instance, 0 when absent (hint as above). */
uint64_t pyobj_attr(const struct py_target *t, struct py_seen *seen, uint64_t obj,
		    const char *name, uint64_t *hint);

/* Is the int object at obj equal to value? */
int pyobj_int_equals(const struct py_target *t, uint64_t obj, uint64_t value);

#endif
