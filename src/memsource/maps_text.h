/* The text of /proc/PID/maps from the task_vma iterator's records. */
#ifndef MAPS_TEXT_H
#define MAPS_TEXT_H

#include <stddef.h>

/* The paths of files seen in a maps text, by the iterator's key of each
 * (mount, dentry, device, inode, generation: one path). Bounded: a slot
 * per key's hash, a new key takes the slot. */
struct maps_paths;

struct maps_paths *maps_paths_new(void);
void maps_paths_free(struct maps_paths *c);

/*
 * The text the kernel prints for /proc/PID/maps, from recs[0..len): the
 * records of bpf/maps_iter.bpf.c (struct py_vma_rec), paths from c. What
 * comes after (proc_maps_parse, a recording) sees what it saw before. A
 * malloc'd text and its length, or NULL when the file must be read
 * instead: a file c does not know, a record asks for it
 * (PY_VMA_F_FALLBACK), or the records are cut, empty, or not from one
 * state of the process (their map_count is not the record count).
 */
char *maps_text_from_vmas(const struct maps_paths *c, const void *recs, size_t len,
			  size_t *text_len);

/* Learns the paths of recs' files from text, the maps text read just
 * after them (a mapping's start, device and inode must agree). */
void maps_paths_learn(struct maps_paths *c, const void *recs, size_t len, const char *text,
		      size_t text_len);

#endif
