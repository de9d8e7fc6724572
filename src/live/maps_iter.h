/*
 * A process's mappings from the BPF task_vma iterator (bpf/maps_iter.bpf.c)
 * rather than the text of /proc/PID/maps: the live memory source's
 * struct live_maps_reader. Its own BPF object: where it cannot load (an
 * older kernel, no bpf_d_path for iterators), the file is read as before.
 */
#ifndef MAPS_ITER_H
#define MAPS_ITER_H

#include <stddef.h>
#include <sys/types.h>

struct maps_iter;

/* NULL, after saying why with -v, when the program cannot load. */
struct maps_iter *maps_iter_open(int verbose);
void maps_iter_close(struct maps_iter *m);

/* The records for pid (struct py_vma_rec, bpf/pyperf.h), malloc'd; NULL
 * when the iterator cannot be made or read. m is a struct maps_iter. */
void *maps_iter_read(void *m, pid_t pid, size_t *len);

/* Reads that gave records, and that did not. */
void maps_iter_counts(const struct maps_iter *m, unsigned long *ok, unsigned long *failed);

#endif
