/* Unit tests of the default native frame filter (native_filter.c) over
 * synthetic stacks shaped like real ones, and of the unnamed-frame hint
 * (symgap.c). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "merge.h"
#include "native_filter.h"
#include "symgap.h"

#define I 1	/* in the interpreter object */
#define O 0	/* in another object */

struct nframe {
	const char *name;	/* NULL: no symbol */
	int in_interp;
};

/* A check that shows what it got and wanted when it fails. */
static void check_want(const char *what, int ok, const char *got, const char *want)
{
	if (ok)
		check(1, "%s", what);
	else
		check(0, "%s: got '%s', want '%s'", what, got, want);
}

/* Merges n native frames (leaf first; _PyEval_EvalFrameDefault marks the
 * eval loop) with np Python frames, each its own eval-loop group, filters,
 * and renders the names leaf first; "?" for a frame without a name. */
static void check_stack(const char *what, const struct nframe *nf, size_t n,
			const char *const *py, size_t np, int all_native, const char *want)
{
	uint8_t is_eval[64], hidden[64], entry[64];
	struct merge_frame m[128];
	unsigned mis;
	char got[1024] = "";
	size_t len = 0, k;

	for (size_t i = 0; i < n; i++) {
		is_eval[i] = nf[i].name && strcmp(nf[i].name, "_PyEval_EvalFrameDefault") == 0;
		hidden[i] = (uint8_t)native_filter_hides(nf[i].name, nf[i].in_interp);
	}
	memset(entry, 1, sizeof(entry));
	k = merge_stacks(is_eval, n, entry, np, m, 128, &mis);
	if (!all_native)
		k = native_filter_apply(m, k, hidden);
	for (size_t i = 0; i < k; i++) {
		const char *s = m[i].kind == MERGE_PYTHON ? py[m[i].index] : nf[m[i].index].name;

		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s", i ? ";" : "",
					s ? s : "?");
	}
	check_want(what, strcmp(got, want) == 0, got, want);
}

static void test_stacks(void)
{
	/* The stack of the issue: a str method under two Python frames, with
	 * the call machinery between them and start-up below <module>. */
	static const struct nframe main_thread[] = {
		{ "PyUnicode_Format", I }, { "_PyEval_EvalFrameDefault", I },
		{ "_PyFunction_Vectorcall", I }, { "PyObject_Vectorcall", I },
		{ "_PyObject_MakeTpCall", I }, { "PyObject_CallFunctionObjArgs", I },
		{ "_PyEval_EvalFrameDefault", I }, { NULL, I }, { "PyEval_EvalCode", I },
		{ "run_eval_code_obj", I }, { "run_mod", I }, { "_PyRun_SimpleFileObject", I },
		{ "_PyRun_AnyFileObject", I }, { "Py_RunMain", I }, { "Py_BytesMain", I },
		{ "__libc_start_call_main", O }, { "__libc_start_main", O }, { "_start", I },
	};
	static const char *const py2[] = { "format", "<module>" };
	/* numpy: BLAS called from a C extension under a Python function. */
	static const struct nframe blas[] = {
		{ "dgemm_kernel", O }, { "cblas_dgemm", O }, { "DOUBLE_matmul", O },
		{ "ufunc_generic_fastcall", O }, { "_PyObject_MakeTpCall", I },
		{ "_PyEval_EvalFrameDefault", I }, { "_PyEval_EvalFrameDefault", I },
		{ "Py_BytesMain", I }, { "__libc_start_main", O }, { "_start", I },
	};
	/* A worker thread: zlib in an extension module, GIL released; thread
	 * start-up in libc and the interpreter below. */
	static const struct nframe worker[] = {
		{ "deflate_slow", O }, { "deflate", O }, { "zlib_compress", O },
		{ "cfunction_vectorcall_FASTCALL_KEYWORDS", I },
		{ "_PyEval_EvalFrameDefault", I }, { "_PyFunction_Vectorcall", I },
		{ "thread_run", I }, { "pythread_wrapper", I }, { "start_thread", O },
		{ "clone3", O },
	};
	/* Waiting: interpreter functions that say what the thread does. */
	static const struct nframe waits[] = {
		{ "__futex_abstimed_wait_common", O }, { "pthread_cond_timedwait", O },
		{ "take_gil", I }, { "PyEval_RestoreThread", I }, { "time_sleep", I },
		{ "_PyEval_EvalFrameDefault", I }, { "_start", I },
	};
	static const struct nframe io[] = {
		{ "read", O }, { "_Py_read", I }, { "_io_FileIO_read", I },
		{ "_io__Buffered_read", I }, { "method_vectorcall_VARARGS", I },
		{ "_PyEval_EvalFrameDefault", I },
	};
	static const struct nframe misc[] = {
		{ "sre_ucs1_search", I }, { "_sre_SRE_Pattern_search", I },
		{ "gc_collect_main", I }, { "os_stat", I }, { "builtin_sorted", I },
		{ "list_sort_impl", I }, { "PyTuple_New", I }, { "memcpy@plt", I },
		{ "ffi_call", O }, { NULL, O }, { "py::f:/x.py", O },
		{ "_PyEval_EvalFrameDefault", I },
	};
	/* zlib linked into the interpreter (Debian): still a module at work. */
	static const struct nframe builtin_zlib[] = {
		{ "deflate", O }, { "zlib_compress_impl", I }, { "zlib_compress", I },
		{ "cfunction_vectorcall_FASTCALL_KEYWORDS", I }, { "_PyEval_EvalFrameDefault", I },
	};
	static const struct nframe all_hidden[] = {
		{ "PyTuple_New", I }, { "_PyObject_MakeTpCall", I }, { "_start", I },
	};
	static const char *const py1[] = { "f" };

	check_stack("issue stack, default", main_thread, 18, py2, 2, 0, "PyUnicode_Format;format;<module>");
	check_stack("issue stack, --all-native", main_thread, 18, py2, 2, 1,
		    "PyUnicode_Format;format;_PyFunction_Vectorcall;PyObject_Vectorcall;"
		    "_PyObject_MakeTpCall;PyObject_CallFunctionObjArgs;<module>;?;PyEval_EvalCode;"
		    "run_eval_code_obj;run_mod;_PyRun_SimpleFileObject;_PyRun_AnyFileObject;"
		    "Py_RunMain;Py_BytesMain;__libc_start_call_main;__libc_start_main;_start");
	check_stack("BLAS under its Python function", blas, 10, py2, 2, 0,
		    "dgemm_kernel;cblas_dgemm;DOUBLE_matmul;ufunc_generic_fastcall;format;<module>");
	check_stack("zlib worker thread", worker, 10, py1, 1, 0, "deflate_slow;deflate;zlib_compress;f");
	check_stack("GIL wait in time.sleep", waits, 7, py1, 1, 0,
		    "__futex_abstimed_wait_common;pthread_cond_timedwait;take_gil;"
		    "PyEval_RestoreThread;time_sleep;f");
	check_stack("file read", io, 6, py1, 1, 0, "read;_Py_read;_io_FileIO_read;_io__Buffered_read;f");
	check_stack("re, gc, os, builtins kept; calls, PLT, trampolines hidden", misc, 12, py1, 1, 0,
		    "sre_ucs1_search;_sre_SRE_Pattern_search;gc_collect_main;os_stat;builtin_sorted;"
		    "list_sort_impl;ffi_call;?;f");
	check_stack("zlib built into the interpreter", builtin_zlib, 5, py1, 1, 0,
		    "deflate;zlib_compress_impl;zlib_compress;f");
	check_stack("everything hidden: the leaf stays", all_hidden, 3, NULL, 0, 0, "PyTuple_New");
	check_stack("Python frames only", NULL, 0, py2, 2, 0, "format;<module>");
}

static void test_rules(void)
{
	const struct nf_rule *r = pyfuncs_rules(), *su = native_filter_startup_rules();
	size_t n = 0, nsu = 0;
	char got[24];	/* a size_t in decimal */

	for (; r[n].name; n++)
		;
	snprintf(got, sizeof(got), "%zu", n);
	check_want("CPython's rule table is terminated and not empty", n > 10, got, "> 10");
	for (; su[nsu].name; nsu++)
		;
	snprintf(got, sizeof(got), "%zu", nsu);
	check_want("start-up rule table is terminated and not empty", nsu >= 5, got, ">= 5");
	check_want("libc start-up hidden outside the interpreter", native_filter_hides("__libc_start_main", 0),
		   "kept", "hidden");
	check_want("unnamed frame outside the interpreter kept", !native_filter_hides(NULL, 0), "hidden", "kept");
	check_want("unnamed frame in the interpreter hidden", native_filter_hides("", 1), "kept", "hidden");
	check_want("a kept prefix does not leak outside the interpreter scope",
		   !native_filter_hides("PyObject_Vectorcall", 0), "hidden", "kept");
	check_want("exact rules are exact", native_filter_hides("collect_exception_group_leaf_ids", 1),
		   "kept", "hidden");
}

static void test_symgap(void)
{
	struct symgap g = { 0 };
	char buf[512] = "";
	int r;

	for (int i = 0; i < 1000; i++)
		symgap_count(&g, NULL, "/usr/bin/python3.11", "c561f3aa7232f2bd6ac6d56bd475f1c154a00486", i % 3 == 0);
	for (int i = 0; i < 1000; i++)
		symgap_count(&g, NULL, "/usr/lib/x86_64-linux-gnu/libc.so.6", "", i % 50 != 0);
	for (int i = 0; i < 50; i++)
		symgap_count(&g, NULL, "/opt/x/libfoo.so", "", 0);
	r = symgap_hint(&g, 0, 100, 10, buf, sizeof(buf));
	check_want("stripped interpreter: hint names the package and the debug file",
		   r == 1 && strstr(buf, "66% of the native frames in /usr/bin/python3.11") &&
		   strstr(buf, "python3.11-dbg=") &&
		   strstr(buf, "/usr/lib/debug/.build-id/c5/61f3aa7232f2bd6ac6d56bd475f1c154a00486.debug"),
		   buf, "66% ... python3.11-dbg= ... .build-id/c5/61f3....debug");
	buf[0] = '\0';
	r = symgap_hint(&g, 1, 100, 10, buf, sizeof(buf));
	check_want("2% unnamed: no hint", r == 0, buf, "");
	r = symgap_hint(&g, 2, 100, 10, buf, sizeof(buf));
	check_want("too few frames: no hint", r == 0, buf, "");
	r = symgap_hint(&g, 3, 100, 10, buf, sizeof(buf));
	check_want("out of range: no hint", r == 0, buf, "");
	for (int i = 0; i < 2 * SYMGAP_OBJECTS; i++) {
		char p[32];

		snprintf(p, sizeof(p), "/lib/o%d.so", i);
		symgap_count(&g, NULL, p, "", 1);
	}
	snprintf(buf, sizeof(buf), "%zu", g.n);
	check_want("object table bounded", g.n == SYMGAP_OBJECTS, buf, "SYMGAP_OBJECTS");
	g.n = 0;
	for (int i = 0; i < 200; i++)
		symgap_count(&g, NULL, "/usr/lib/libz.so.1", "", 0);
	r = symgap_hint(&g, 0, 100, 10, buf, sizeof(buf));
	check_want("other objects: generic hint", r == 1 && strstr(buf, "dpkg -S /usr/lib/libz.so.1"),
		   buf, "... dpkg -S /usr/lib/libz.so.1");
}

/* Objects in a chroot or a container: named inside it, the command run
 * there, one entry per root. */
static void test_symgap_roots(void)
{
	static const char libc[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	struct proc_root jail = { .kind = PROC_ROOT_DIR, .pid = 7, .dev = 1, .ino = 2,
				  .dir = "/var/cache/jail" };
	struct proc_root ns = { .kind = PROC_ROOT_NS, .pid = 42, .dev = 3, .ino = 4 };
	struct symgap g = { 0 };
	char buf[1024] = "";
	int r;

	for (int i = 0; i < 200; i++) {
		symgap_count(&g, &jail, libc, "a226e0f150be89099d375c6b865b1dba794648ae", 0);
		symgap_count(&g, &ns, libc, "", 0);
		symgap_count(&g, NULL, libc, "", 1);
		symgap_count(&g, &jail, "/usr/bin/python3.14", "", 0);
	}
	for (int i = 0; i < 200; i++)
		symgap_count(&g, &jail, "[vdso]", "c00c1cc96491047c8970ae5895283b58abf134c2", 0);
	snprintf(buf, sizeof(buf), "%zu", g.n);
	check_want("libc in three roots: three objects, five in all", g.n == 5, buf, "5");
	r = symgap_hint(&g, 4, 100, 10, buf, sizeof(buf));
	check_want("vDSO: the kernel's debug package, on the host, no dpkg -S",
		   r == 1 && strstr(buf, "in [vdso] have no name: it is the running kernel's") &&
		   strstr(buf, "/c0/0c1cc96491047c8970ae5895283b58abf134c2.debug)") &&
		   strstr(buf, "apt-get install linux-image-\"$(uname -r)\"-dbg") &&
		   !strstr(buf, "dpkg -S") && !strstr(buf, "chroot"),
		   buf, "... [vdso] ... linux-image-$(uname -r)-dbg");
	r = symgap_hint(&g, 0, 100, 10, buf, sizeof(buf));
	check_want("chroot: path inside it, root said once, chroot dpkg -S",
		   r == 1 && strstr(buf, "frames in /usr/lib/x86_64-linux-gnu/libc.so.6 (root /var/cache/jail) have") &&
		   strstr(buf, "/a2/26e0f150be89099d375c6b865b1dba794648ae.debug in that root)") &&
		   strstr(buf, "(chroot /var/cache/jail dpkg -S /usr/lib/x86_64-linux-gnu/libc.so.6)") &&
		   !strstr(buf, "/var/cache/jail/usr"),
		   buf, "... libc.so.6 (root /var/cache/jail) ... (chroot /var/cache/jail dpkg -S /usr/lib/...)");
	r = symgap_hint(&g, 1, 100, 10, buf, sizeof(buf));
	check_want("other mount namespace: nsenter into pid's root",
		   r == 1 && strstr(buf, "libc.so.6 (root of pid 42, another mount namespace)") &&
		   strstr(buf, "(nsenter -t 42 -m -r -w dpkg -S /usr/lib/x86_64-linux-gnu/libc.so.6)"),
		   buf, "... (nsenter -t 42 -m -r -w dpkg -S ...)");
	r = symgap_hint(&g, 2, 100, 10, buf, sizeof(buf));
	check_want("our root's copy counted apart: all named, no hint", r == 0, buf, "");
	r = symgap_hint(&g, 3, 100, 10, buf, sizeof(buf));
	check_want("interpreter in a chroot: apt-get and dpkg-query both run there",
		   r == 1 && strstr(buf, "on Debian: chroot /var/cache/jail sh -c 'apt-get install python3.14-dbg=\"$(dpkg-query -W -f \"\\${Version}\" python3.14-minimal)\"'"),
		   buf, "chroot /var/cache/jail sh -c 'apt-get install python3.14-dbg=...'");
}

int main(void)
{
	test_stacks();
	test_rules();
	test_symgap();
	test_symgap_roots();
	return check_exit();
}
