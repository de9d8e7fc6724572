/*
 * The unit tests' checks: one "ok WHAT" or "FAIL WHAT" line per check (a
 * "skip WHAT" line for one that cannot run here) and a closing "N passed,
 * N failed" line, so every test reads the same in its log and a failure
 * is found by grepping FAIL. Header only: each test is one program and
 * the counters are that program's own.
 */
#ifndef CHECK_H
#define CHECK_H

#include <stdarg.h>
#include <stdio.h>

static unsigned check_passed, check_failed, check_skipped;

/* Prints and counts one check; returns cond, so a caller can add detail
 * after a failure. */
__attribute__((format(printf, 2, 3)))
static inline int check(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", cond ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (cond)
		check_passed++;
	else
		check_failed++;
	return cond;
}

/* A check that cannot run on this machine: its reason, counted apart. */
__attribute__((format(printf, 1, 2)))
static inline void check_skip(const char *fmt, ...)
{
	va_list ap;

	printf("skip ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	check_skipped++;
}

/* The totals, and main()'s exit status: 1 if a check failed; 77 (skip,
 * with its reason) if none passed, so a test that checked nothing does
 * not pass; else 0. */
static inline int check_exit(void)
{
	if (check_skipped)
		printf("%u passed, %u failed, %u skipped\n", check_passed, check_failed,
		       check_skipped);
	else
		printf("%u passed, %u failed\n", check_passed, check_failed);
	if (check_failed)
		return 1;
	if (!check_passed) {
		printf("SKIP: no check passed (%u skipped)\n", check_skipped);
		return 77;
	}
	return 0;
}

#endif
