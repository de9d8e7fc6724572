/* CPython's C functions for the native-frame filter; see pyfuncs.h. */
#include "pyfuncs.h"

#include <stddef.h>

#define KEEP(n)		{ n, NF_PREFIX, NF_INTERPRETER, NF_KEEP }
#define KEEP_EXACT(n)	{ n, NF_EXACT, NF_INTERPRETER, NF_KEEP }
#define HIDE_ANY(n)	{ n, NF_PREFIX, NF_ANYWHERE, NF_HIDE }

/*
 * Names are CPython's C function names (3.6-3.15); a prefix covers a
 * module's functions and their argument-clinic wrappers (os_read and
 * os_read_impl).
 */
static const struct nf_rule rules[] = {
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

const struct nf_rule *pyfuncs_rules(void)
{
	return rules;
}
