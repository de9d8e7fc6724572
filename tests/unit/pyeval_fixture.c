/*
 * A stand-in interpreter for tests/unit/test_pyeval.c, built at test time
 * (cc -O2 -freorder-blocks-and-partition -shared): an exported
 * _PyEval_EvalFrameDefault whose unlikely paths (calls of a cold function)
 * GCC moves to _PyEval_EvalFrameDefault.cold, each jumping back to the
 * loop; a tail call to a static function (its own FDE, the CFI of an
 * entry: never a part); and a second function with its own .cold part
 * (not ours either).
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((cold, noinline)) void fixture_report(const char *what, long v)
{
	fprintf(stderr, "%s %ld\n", what, v);
}

static __attribute__((noinline)) long fixture_helper(long x, long y)
{
	return x * 31 + y / 7 + (long)getenv("FIXTURE_NONE");
}

long _PyEval_EvalFrameDefault(const long *ops, long n, long k)
{
	long acc = 0;

	for (long i = 0; i < n; i++) {
		switch (ops[i] & 7) {
		case 0: acc += ops[i]; break;
		case 1: acc ^= ops[i] << 3; break;
		case 2:
			if (__builtin_expect(acc > 1000000, 0)) {
				fixture_report("overflow", acc);
				acc = 0;
			}
			break;
		case 3:
			if (__builtin_expect(ops[i] < 0, 0)) {
				fixture_report("negative", ops[i]);
				acc -= k;
			}
			break;
		case 4:
			if (__builtin_expect(i > 100000, 0)) {
				fixture_report("long", i);
				acc += k * 3;
			}
			break;
		case 5: acc *= 3; break;
		default:
			if (__builtin_expect(ops[i] == 77, 0)) {
				fixture_report("seventy-seven", acc);
				acc += 1;
			}
			acc -= 1;
		}
	}
	if (acc == 42)
		return fixture_helper(acc, k);
	return acc;
}

long fixture_other(const long *v, long n)
{
	long s = 0;

	for (long i = 0; i < n; i++) {
		if (__builtin_expect(v[i] == 13, 0)) {
			fixture_report("unlucky", i);
			s += 2;
		}
		s += v[i];
	}
	return s;
}
