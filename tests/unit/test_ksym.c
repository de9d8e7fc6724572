/* Unit tests of ksym.c: kallsyms parsing, lookups, and the refusal when
 * kernel.kptr_restrict hides the addresses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ksym.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) == EOF) {
		perror(path);
		exit(2);
	}
	fclose(f);
}

static int same(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

int main(void)
{
	char path[] = "/tmp/test_ksym.XXXXXX", err[512] = "";
	struct ksym_table *t;
	int fd = mkstemp(path);

	if (fd < 0)
		return 2;
	close(fd);
	write_file(path,
		   "ffffffff81000000 T _stext\n"
		   "ffffffff81200000 T vfs_read\n"
		   "ffffffff81100000 t ksys_read\n"
		   "ffffffff81150000 D some_data\n"
		   "ffffffff81300000 t read_zero\t[mem]\n"
		   "garbage line\n");
	t = ksym_load(path, err, sizeof(err));
	check(t != NULL, "a kallsyms file loads");
	if (t) {
		check(ksym_count(t) == 4, "text symbols only");
		check(ksym_name(t, 0xffffffff80000000ull) == NULL, "before the first symbol: none");
		check(same(ksym_name(t, 0xffffffff81100010ull), "ksys_read"), "inside ksys_read (unsorted input)");
		check(same(ksym_name(t, 0xffffffff81150010ull), "ksys_read"), "data symbols do not split functions");
		check(same(ksym_name(t, 0xffffffff81200000ull), "vfs_read"), "exact start");
		check(same(ksym_name(t, 0xffffffff81300040ull), "read_zero"), "module symbol");
		check(ksym_name(t, 0xffffffff91300040ull) == NULL, "far past the last symbol: none");
		ksym_free(t);
	}
	write_file(path, "0000000000000000 T _stext\n0000000000000000 t ksys_read\n");
	t = ksym_load(path, err, sizeof(err));
	check(!t && strstr(err, "kptr_restrict") && strstr(err, "--kernel"),
	      "kptr_restrict (all addresses 0): refused with a line naming it");
	printf("  message: %s\n", err);
	ksym_free(t);
	unlink(path);
	t = ksym_load(path, err, sizeof(err));
	check(!t && strstr(err, "cannot read"), "missing file: refused");
	return check_exit();
}
