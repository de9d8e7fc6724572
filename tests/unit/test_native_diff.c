/*
 * Tests of src/pipeline/native_diff.c: the frame-for-frame comparison of
 * the BPF unwinder's pcs with libunwind's (--unwind both). Agreement,
 * disagreement blamed on the object of the first differing frame, depth
 * cut by a frame limit, marked "not loaded" walks, and the bounded list.
 */
#include "check.h"
#include "native_diff.h"

#include <stdio.h>
#include <string.h>

/* Objects by address: "lib0" below 0x1000, "lib1" below 0x2000, ... */
static const char *obj_of(void *ctx, uint64_t pc)
{
	static char name[32];

	(*(int *)ctx)++;
	snprintf(name, sizeof(name), "lib%u", (unsigned)(pc / 0x1000));
	return name;
}

int main(void)
{
	static struct native_diff d;
	const uint64_t a[] = { 0x10, 0x1010, 0x2010, 0x3010 };
	const uint64_t b[] = { 0x10, 0x1010, 0x2020, 0x3010 };
	int calls = 0;

	check(native_diff_add(&d, a, 4, a, 4, 0, 0, obj_of, &calls) == 1 && calls == 0,
	      "equal stacks agree, no object lookup");
	check(native_diff_add(&d, a, 4, b, 4, 0, 0, obj_of, &calls) == 0 && d.nobj == 1 &&
	      strcmp(d.obj[0].path, "lib2") == 0 && d.obj[0].example[0] == 0x2010 &&
	      d.obj[0].example[1] == 0x2020, "a differing frame is blamed on its object");
	check(native_diff_add(&d, a, 3, a, 4, 0, 0, obj_of, &calls) == 0 && d.nobj == 2 &&
	      strcmp(d.obj[1].path, "lib3") == 0 && d.obj[1].example[0] == 0,
	      "a shorter kernel stack is blamed on libunwind's next frame");
	check(native_diff_add(&d, a, 3, a, 4, 1, 0, obj_of, &calls) == 1,
	      "cut by a frame limit: the common depth agrees");
	check(native_diff_add(&d, a, 1, a, 4, 0, 1, obj_of, &calls) == 0 && d.not_loaded == 1 &&
	      strstr(d.obj[2].path, "not loaded") != NULL, "a marked walk is listed apart");
	check(native_diff_add(&d, NULL, 0, NULL, 0, 0, 0, obj_of, &calls) == 1,
	      "two empty stacks agree");
	check(d.stacks == 6 && d.agree == 3 && d.frames_kernel == 15 && d.frames_user == 20,
	      "counts");
	for (int i = 0; i < 40; i++) {
		uint64_t x = 0x1000u * (uint64_t)(i + 5), y = x + 1;

		native_diff_add(&d, &x, 1, &y, 1, 0, 0, obj_of, &calls);
	}
	check(d.nobj == NATIVE_DIFF_OBJS && d.other > 0, "the list is bounded; the rest are counted");
	return check_exit();
}
