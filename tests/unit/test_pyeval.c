/*
 * src/python/pyeval.c: the eval loop's ranges with and without static
 * symbols. Builds tests/unit/pyeval_fixture.c with the C compiler ($CC,
 * else cc) as a shared object whose _PyEval_EvalFrameDefault has a .cold
 * part, strips a copy (strip --strip-all), and checks that both give the
 * same ranges: the symbols' on the first, found from the code on the
 * second, without the tail-called static function or the other
 * function's .cold part. Also the name matching and the lookup.
 *
 * With arguments, `test_pyeval FILE [DEBUG_FILE]` prints the ranges of a
 * real interpreter (a libpython or a python binary) and exits;
 * `test_pyeval --pid PID` those of a running interpreter, found and read
 * as the profiler does (pyversion_detect, the object cache, the debug file
 * it finds).
 */
#define _GNU_SOURCE
#include "check.h"
#include "elffile.h"
#include "objcache.h"
#include "pyeval.h"
#include "pyversion.h"
#include "target_src.h"

#include <elf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void print_ranges(const char *what, const struct pyeval_ranges *r)
{
	char line[160];

	pyeval_describe(r, line, sizeof(line));
	printf("# %s: %s\n", what, line);
	for (uint32_t i = 0; i < r->n; i++)
		printf("#   %#" PRIx64 "..%#" PRIx64 " (%" PRIu64 " bytes)\n", r->r[i].lo,
		       r->r[i].hi, r->r[i].hi - r->r[i].lo);
}

static int dump(const char *path, const char *dbg_path)
{
	struct elf_file *ef = elf_file_open(path), *dbg = NULL;
	struct pyeval_ranges r;

	if (!ef) {
		fprintf(stderr, "cannot open %s\n", path);
		return 1;
	}
	if (dbg_path && !(dbg = elf_file_open(dbg_path))) {
		fprintf(stderr, "cannot open %s\n", dbg_path);
		return 1;
	}
	pyeval_ranges_build(ef, dbg, &r);
	print_ranges(path, &r);
	elf_file_close(dbg);
	elf_file_close(ef);
	return r.n ? 0 : 1;
}

static int dump_pid(int pid)
{
	struct objcache *oc = objcache_new(NULL);
	struct pyeval_ranges r;
	struct py_target t;
	char err[256], what[300];

	if (!oc || pyversion_detect(target_src_live(), oc, pid, &t, err, sizeof(err))) {
		fprintf(stderr, "pyversion_detect: %s\n", oc ? err : "out of memory");
		objcache_free(oc);
		return 1;
	}
	pyeval_of_target(&t, &r);
	snprintf(what, sizeof(what), "pid %d %u.%u %s, %llu debug files", pid, t.major, t.minor,
		 t.module, (unsigned long long)objcache_get_stats(oc)->debug_files);
	print_ranges(what, &r);
	objcache_free(oc);
	return r.n ? 0 : 1;
}

static void test_names(void)
{
	static const char *const yes[] = {
		"_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault.cold",
		"_PyEval_EvalFrameDefault.part.0", "_PyEval_EvalFrameDefault.constprop.12",
		"_PyEval_EvalFrameDefault.isra.3", "_PyEval_EvalFrameDefault.lto_priv.0",
		"_PyEval_EvalFrameDefault.part.0.cold", "_PyEval_EvalFrameDefault.isra.0.constprop.1",
	};
	static const char *const no[] = {
		"_PyEval_EvalFrameDefaultX", "_PyEval_EvalFrameDefault.", "_PyEval_EvalFrame",
		"_PyEval_EvalFrameDefault.part", "_PyEval_EvalFrameDefault.foo.1",
		"x_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault.cold.x", "",
	};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		check(pyeval_name_is_loop(yes[i]), "name %s is the eval loop", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		check(!pyeval_name_is_loop(no[i]), "name \"%s\" is not", no[i]);
	check(!pyeval_name_is_loop(NULL), "NULL is not");
}

static void test_contains(void)
{
	struct pyeval_ranges r = { .n = 3, .r = { { 0x100, 0x200 }, { 0x300, 0x310 }, { 0x1000, 0x1001 } } };
	struct pyeval_ranges none = { 0 };

	check(pyeval_contains(&r, 0x100) && pyeval_contains(&r, 0x1ff) &&
	      pyeval_contains(&r, 0x305) && pyeval_contains(&r, 0x1000),
	      "contains: inside each range");
	check(!pyeval_contains(&r, 0xff) && !pyeval_contains(&r, 0x200) &&
	      !pyeval_contains(&r, 0x2ff) && !pyeval_contains(&r, 0x310) &&
	      !pyeval_contains(&r, 0x1001) && !pyeval_contains(&r, 0),
	      "contains: not outside, ends exclusive");
	check(!pyeval_contains(&none, 0x100), "contains: empty set");
}

/* The static symbols of the fixture, as the truth: its function, its
 * .cold part, and what must stay out. */
struct truth {
	uint64_t lo, hi, cold_lo, cold_hi, helper, other_cold;
};

static int truth_cb(const struct elf_symbol *s, void *arg)
{
	struct truth *t = arg;

	if (s->dynamic || s->type != STT_FUNC)
		return 0;
	if (strcmp(s->name, "_PyEval_EvalFrameDefault") == 0) {
		t->lo = s->value;
		t->hi = s->value + s->size;
	} else if (strcmp(s->name, "_PyEval_EvalFrameDefault.cold") == 0) {
		t->cold_lo = s->value;
		t->cold_hi = s->value + s->size;
	} else if (strncmp(s->name, "fixture_helper", 14) == 0) {
		t->helper = s->value;
	} else if (strcmp(s->name, "fixture_other.cold") == 0) {
		t->other_cold = s->value;
	}
	return 0;
}

static int run(const char *cmd)
{
	int rc = system(cmd);

	if (rc)
		printf("# `%s` failed (%d)\n", cmd, rc);
	return rc;
}

static int build_fixture(const char *dir, char *so, char *stripped, size_t len)
{
	const char *top = getenv("TOP_SRCDIR"), *cc = getenv("CC");
	char cmd[4096];

	snprintf(so, len, "%s/fixture.so", dir);
	snprintf(stripped, len, "%s/fixture-stripped.so", dir);
	snprintf(cmd, sizeof(cmd),
		 "%s -O2 -freorder-blocks-and-partition -fno-inline-functions-called-once "
		 "-fPIC -shared -o %s %s/tests/unit/pyeval_fixture.c && strip --strip-all -o %s %s",
		 cc && *cc ? cc : "cc", so, top && *top ? top : ".", stripped, so);
	return run(cmd);
}

static void test_fixture(void)
{
	char dir[] = "/tmp/pyperf-pyeval.XXXXXX", so[512], stripped[512], cmd[1200];
	struct pyeval_ranges full, bare;
	struct elf_file *ef, *sf;
	struct truth t = { 0 };

	if (!mkdtemp(dir) || !check(build_fixture(dir, so, stripped, sizeof(so)) == 0,
				    "fixture built with cc and stripped (needs gcc, binutils)"))
		return;
	ef = elf_file_open(so);
	sf = elf_file_open(stripped);
	if (check(ef && sf, "fixture files open")) {
		elf_file_symbols(ef, truth_cb, &t);
		check(t.lo && t.cold_lo && t.helper && t.other_cold,
		      "the compiler split the fixture as meant (entry, .cold, helper, other .cold)");
		check(!elf_file_has_symtab(sf), "the stripped copy has no .symtab");
		pyeval_ranges_build(ef, NULL, &full);
		pyeval_ranges_build(sf, NULL, &bare);
		print_ranges("with symbols", &full);
		print_ranges("stripped", &bare);
		check(full.source == PYEVAL_SYMTAB && full.n == 2 && pyeval_contains(&full, t.lo) &&
		      pyeval_contains(&full, t.hi - 1) && pyeval_contains(&full, t.cold_lo) &&
		      pyeval_contains(&full, t.cold_hi - 1) && !pyeval_contains(&full, t.cold_hi),
		      "with symbols: the function and its .cold part");
		check(bare.source == PYEVAL_CODE && bare.n == full.n &&
		      memcmp(bare.r, full.r, full.n * sizeof(full.r[0])) == 0,
		      "stripped: the same ranges, found from the code");
		check(!pyeval_contains(&bare, t.helper) && !pyeval_contains(&bare, t.other_cold),
		      "stripped: neither the tail-called function nor another function's .cold");
		/* The debug file's symbols win over the code scan. */
		pyeval_ranges_build(sf, ef, &bare);
		check(bare.source == PYEVAL_SYMTAB && bare.n == full.n &&
		      memcmp(bare.r, full.r, full.n * sizeof(full.r[0])) == 0,
		      "stripped with its symbols as debug file: the symbols' ranges");
	}
	elf_file_close(ef);
	elf_file_close(sf);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	run(cmd);
}

/* A file without the function: no ranges, no false answer. */
static void test_absent(const char *self)
{
	struct elf_file *ef = elf_file_open(self);
	struct pyeval_ranges r;

	if (!check(ef != NULL, "own executable opens"))
		return;
	check(pyeval_ranges_build(ef, NULL, &r) == -1 && r.n == 0 && r.source == PYEVAL_NONE,
	      "a file without _PyEval_EvalFrameDefault has no ranges");
	elf_file_close(ef);
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "--pid") == 0)
		return dump_pid(atoi(argv[2]));
	if (argc > 1)
		return dump(argv[1], argc > 2 ? argv[2] : NULL);
	test_names();
	test_contains();
	test_absent("/proc/self/exe");
	test_fixture();
	printf("%u passed, %u failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}
