/*
 * Objects whose native frames stay unnamed (stripped, no debug file): a
 * count per object file, and the closing hint saying what to install.
 * Pure; unit-tested.
 */
#ifndef SYMGAP_H
#define SYMGAP_H

#include <stddef.h>
#include <stdint.h>

#include "proc_root.h"

#define SYMGAP_OBJECTS	32	/* objects tracked; later ones are not counted */
#define SYMGAP_PATH	256

struct symgap_obj {
	char path[SYMGAP_PATH];
	char build_id[2 * 20 + 1];	/* lowercase hex, "" if none or longer */
	struct proc_root root;		/* the root path is in */
	uint64_t frames, unnamed;
};

struct symgap {
	struct symgap_obj o[SYMGAP_OBJECTS];
	size_t n;
};

/* Counts one native frame of the object at path, a name in root (NULL:
 * ours); named: it had a symbol. Returns the object's slot for
 * symgap_count_slot(), -1 if not counted. */
long symgap_count(struct symgap *g, const struct proc_root *root, const char *path,
		  const char *build_id, int named);

/* Counts one more frame of the object in slot i (symgap_count's answer):
 * the same as symgap_count() with that object's path, without the search. */
void symgap_count_slot(struct symgap *g, long i, int named);

/*
 * Writes into buf the hint for entry i, if at least min_frames of its
 * frames were seen and at least min_percent of them were unnamed: what
 * share, and what to install; for an object in another root, the path
 * inside it and the command run there. Returns 1 if a hint was written,
 * else 0.
 */
int symgap_hint(const struct symgap *g, size_t i, uint64_t min_frames,
		unsigned min_percent, char *buf, size_t len);

#endif
