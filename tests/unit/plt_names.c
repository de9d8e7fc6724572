/* Prints "ADDRESS NAME" (hex, no 0x) for each PLT stub plt_symbols() names
 * in the ELF file argv[1]; tests/plt.sh compares it with objdump. */
#include <stdio.h>

#include "elffile.h"
#include "plt.h"

static int print_cb(const struct elf_symbol *s, void *arg)
{
	printf("%llx %s\n", (unsigned long long)s->value, s->name);
	return 0;
}

int main(int argc, char **argv)
{
	struct elf_file *ef;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: plt_names ELF-FILE\n");
		return 2;
	}
	ef = elf_file_open(argv[1]);
	if (!ef) {
		fprintf(stderr, "plt_names: %s is not a readable ELF file\n", argv[1]);
		return 1;
	}
	r = plt_symbols(ef, print_cb, NULL);
	elf_file_close(ef);
	return r ? 1 : 0;
}
