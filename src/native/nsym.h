/*
 * Native symbolization: a program counter of a target process -> function
 * name, object file, build-id and mapping, from the object's ELF .symtab
 * and .dynsym or, for a stripped file, its separate debug file (build-id
 * path, .gnu_debuglink). Files are read through /proc/PID/map_files (which
 * still opens deleted or replaced files) or /proc/PID/root (the target's
 * mount namespace). Per object a sorted symbol array hangs off its entry
 * in the shared object cache (objcache.h), bounded and evicted with it.
 *
 * Not thread-safe: one context per thread.
 */
#ifndef NSYM_H
#define NSYM_H

#include <stddef.h>
#include <stdint.h>

struct target_src;

#define NSYM_BUILD_ID_MAX	64	/* bytes */

enum nsym_status {
	NSYM_OK = 0,		/* name is set */
	NSYM_NO_SYMBOL,		/* object known (path, build-id, vaddr), no symbol */
	NSYM_NO_FILE,		/* mapping known, its file unreadable or anonymous */
	NSYM_NO_MAPPING,	/* pc is in no mapping of the process */
};

struct nsym_result {
	enum nsym_status status;
	/* The strings below stay valid until the next nsym_* call. */
	const char *name;	/* function; .cold/.part.N/... clone suffixes
				 * stripped; NULL unless NSYM_OK */
	const char *path;	/* object as the target names it, without
				 * " (deleted)"; "" for anonymous memory */
	const char *build_id;	/* lowercase hex; "" if none */
	int deleted;		/* the mapped file was deleted */
	int from_debug_file;	/* the symbol came from a separate debug file */
	uint64_t map_start, map_limit, map_offset;	/* for pprof Mapping */
	uint64_t file_vaddr;	/* link-time address of pc in the object */
	uint64_t sym_vaddr;	/* link-time address of the symbol (NSYM_OK) */
	/* NSYM_OK, NSYM_NO_SYMBOL: the object cache entry's serial, the
	 * same in every process that maps the file while it is cached (and
	 * never reused), and pc's offset in the file: together what the
	 * symbol depends on. */
	uint64_t object, file_offset;
	uint64_t maps_gen;	/* the maps read the mapping is in (objcache's
				 * oc_proc.maps_gen); 0: NSYM_NO_MAPPING */
};

struct nsym_stats {
	uint64_t lookups, found, no_symbol, no_file, no_mapping;
	uint64_t debug_files;		/* symbol tables read from separate debug files */
	uint64_t symbols;		/* symbols held now */
	uint64_t bytes;			/* bytes held now */
};

struct nsym_ctx;
struct objcache;

/* Objects, processes and maps come from oc, which must outlive the
 * context (one symbolizer per cache). NULL on allocation failure. */
struct nsym_ctx *nsym_ctx_new(struct objcache *oc);
void nsym_ctx_free(struct nsym_ctx *c);

/*
 * Resolves pc in process pid, whose maps and files are read through src;
 * returns out->status. For a return address
 * (pcs[i > 0] from unwind_stack) pass pc - 1, so a call that ends a
 * function is not attributed to the next one. seen_ns: when the target
 * ran pc (bpf_ktime_get_ns(); 0: unknown), which decides whether a pc in
 * no known mapping re-reads the maps (objcache_refresh()).
 */
int nsym_resolve(struct nsym_ctx *c, const struct target_src *src, int pid, uint64_t pc,
		 uint64_t seen_ns, struct nsym_result *out);

/*
 * nsym_resolve() in two steps, for callers that memoize symbols per
 * (object, file_offset) across processes: nsym_locate() finds pc's
 * mapping and object; out->status is NSYM_NO_MAPPING or NSYM_NO_FILE as
 * nsym_resolve() says, else NSYM_NO_SYMBOL with object and file_offset
 * set and no symbol searched yet. nsym_name() then searches it, out
 * becoming what nsym_resolve() returns; it must follow the nsym_locate()
 * of out with no nsym_* call between. A located result whose symbol is
 * taken from a memo instead counts no lookup in the statistics.
 */
int nsym_locate(struct nsym_ctx *c, const struct target_src *src, int pid, uint64_t pc,
		uint64_t seen_ns, struct nsym_result *out);
int nsym_name(struct nsym_ctx *c, struct nsym_result *out);

const struct nsym_stats *nsym_get_stats(const struct nsym_ctx *c);

/* Length of name without the suffixes GCC and LLVM add to clones and split
 * parts (".cold", ".part.N", ".isra.N", ".constprop.N", ".lto_priv.N",
 * ".localalias", ".llvm.N", in any combination), so they resolve to the
 * parent function. Never 0 for a non-empty name. */
size_t nsym_base_len(const char *name, size_t len);

#endif
