/* The default filter of native frames; see native_filter.h for the rule. */
#include "native_filter.h"

#include <string.h>

#define KEEP(n)		{ n, NF_PREFIX, NF_INTERPRETER, NF_KEEP }
#define KEEP_EXACT(n)	{ n, NF_EXACT, NF_INTERPRETER, NF_KEEP }
#define HIDE_ANY(n)	{ n, NF_PREFIX, NF_ANYWHERE, NF_HIDE }
#define HIDE_ANY_EXACT(n) { n, NF_EXACT, NF_ANYWHERE, NF_HIDE }

/*
 * Names are CPython's C function names (3.6-3.14); a prefix covers a
 * module's functions and their argument-clinic wrappers (os_read and
 * os_read_impl). Entries that hide anywhere come first.
 */
static const struct nf_rule rules[] = {
	/* Process and thread start-up: libc and the loader, in every stack. */
	HIDE_ANY_EXACT("_start"),
	HIDE_ANY("__libc_start_"),
	HIDE_ANY_EXACT("start_thread"),
	HIDE_ANY_EXACT("clone"),
	HIDE_ANY_EXACT("clone3"),
	/* Perf trampolines (3.12+ -X perf) repeat the Python frame above. */
	HIDE_ANY("py::"),

	/* Sleeping, and waiting for a lock or the GIL. */
	KEEP("time_sleep"), KEEP("pysleep"),
	KEEP("take_gil"), KEEP_EXACT("PyEval_RestoreThread"),
	KEEP_EXACT("PyEval_AcquireThread"), KEEP_EXACT("eval_frame_handle_pending"),
	KEEP("acquire_timed"), KEEP("lock_PyThread_acquire_lock"), KEEP("rlock_acquire"),
	KEEP("PyThread_acquire_lock"), KEEP("thread_PyThread_"),
	/* I/O, os, select, signals. */
	KEEP("_io_"), KEEP("_Py_read"), KEEP("_Py_write"), KEEP("_Py_open"),
	KEEP("_Py_fstat"), KEEP("_Py_stat"), KEEP("_bufferedreader_"), KEEP("_bufferedwriter_"),
	KEEP("_io__"), KEEP("fileio_"), KEEP("buffered_"), KEEP("textiowrapper_"),
	KEEP("os_"), KEEP("posix_"), KEEP("select_"), KEEP("signal_"),
	/* str and bytes methods and their string libraries. */
	KEEP("PyUnicode_"), KEEP("_PyUnicode"), KEEP("unicode_"), KEEP("unicodeiter_"),
	KEEP("ucs1lib_"), KEEP("ucs2lib_"), KEEP("ucs4lib_"), KEEP("asciilib_"),
	KEEP("stringlib_"), KEEP("PyBytes_"), KEEP("_PyBytes_"), KEEP("bytes_"),
	KEEP("bytearray_"), KEEP("_Py_bytes_"), KEEP("do_string_format"),
	/* re. */
	KEEP("_sre_"), KEEP("sre_"), KEEP_EXACT("pattern_subx"),
	/* gc. */
	KEEP("gc_collect"), KEEP("_PyGC_"), KEEP("PyGC_Collect"), KEEP_EXACT("collect"),
	KEEP("collect_with_callback"), KEEP("collect_generations"),
	/* Builtins doing work. */
	KEEP("builtin_"), KEEP("list_sort"), KEEP("marshal_"), KEEP("_imp_"),
	/* Extension modules some builds (Debian's) link into the interpreter
	 * rather than load from lib-dynload: their functions are work too. */
	KEEP("zlib_"), KEEP("sock_"), KEEP("socket_"), KEEP("_sha"), KEEP("sha_"),
	KEEP("SHA"), KEEP("_blake2"), KEEP("blake2"), KEEP("_md5"), KEEP("md5_"),
	KEEP("Keccak"), KEEP("math_"), KEEP("cmath_"), KEEP("binascii_"),
	KEEP("_pickle_"), KEEP("_struct_"), KEEP("_json"), KEEP("_csv_"),
	KEEP("_elementtree_"), KEEP("pyexpat_"), KEEP("unicodedata_"),
	KEEP("_random_"), KEEP("_bisect_"), KEEP("_heapq_"), KEEP("array_"),
	KEEP("_posixsubprocess_"), KEEP("subprocess_fork_exec"), KEEP("fcntl_"),
	{ NULL, 0, 0, 0 },
};

const struct nf_rule *native_filter_rules(void)
{
	return rules;
}

static int matches(const struct nf_rule *r, const char *name)
{
	size_t len = strlen(r->name);

	if (r->match == NF_EXACT)
		return strcmp(name, r->name) == 0;
	return strncmp(name, r->name, len) == 0;
}

int native_filter_hides(const char *name, int in_interpreter)
{
	if (!name || !name[0])
		return in_interpreter;
	for (const struct nf_rule *r = rules; r->name; r++) {
		if (r->scope == NF_INTERPRETER && !in_interpreter)
			continue;
		if (matches(r, name))
			return r->action == NF_HIDE;
	}
	return in_interpreter;
}

size_t native_filter_apply(struct merge_frame *f, size_t n, const uint8_t *hidden)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++) {
		if (f[i].kind == MERGE_NATIVE && hidden[f[i].index])
			continue;
		f[out++] = f[i];
	}
	/* Nothing was kept, so f[0] is still the leaf: it stays, and the
	 * sample keeps a place in the profile. */
	return out == 0 && n > 0 ? 1 : out;
}
