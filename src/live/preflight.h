/* Checks that must pass before a capture starts, so a long capture never
 * fails at its end for a reason known at its start. */
#ifndef PREFLIGHT_H
#define PREFLIGHT_H

#include <stddef.h>

/* Privileges, kernel BTF and the BPF helpers the program needs. Returns
 * 0, or -1 with one line in err saying what is missing and what to do. */
int preflight_check(char *err, size_t errlen);

/* Once BPF is loaded and attached: keeps only the capabilities still needed
 * (reading targets: SYS_PTRACE, SYS_ADMIN for /proc/PID/map_files,
 * DAC_READ_SEARCH/DAC_OVERRIDE for files and output) and drops the rest,
 * BPF and PERFMON included, from the effective, permitted and bounding
 * sets. Failure is not fatal: it is reported with -v. */
void preflight_drop_capabilities(int verbose);

#endif
