/*
 * Kernel symbols for --kernel: /proc/kallsyms -> a sorted table of text
 * symbols; an address -> the function holding it. Read once per session.
 */
#ifndef KSYM_H
#define KSYM_H

#include <stddef.h>
#include <stdint.h>

#define KSYM_MAX_SYMS	(4u << 20)	/* bounds what a file may ask for */

struct ksym_table;

/*
 * Loads the text symbols of path (the kallsyms format: "ADDR TYPE NAME
 * [module]"). NULL with one line in err when the file cannot be read, or
 * shows every address as 0 (kernel.kptr_restrict hides them).
 */
struct ksym_table *ksym_load(const char *path, char *err, size_t errlen);
void ksym_free(struct ksym_table *t);

/* The function holding addr, or NULL when addr lies before the first
 * symbol or past the last one's reach. */
const char *ksym_name(const struct ksym_table *t, uint64_t addr);

size_t ksym_count(const struct ksym_table *t);

#endif
