/* Checks that must pass before a capture starts, so a long capture never
 * fails at its end for a reason known at its start. */
#ifndef PREFLIGHT_H
#define PREFLIGHT_H

#include <stddef.h>

/* Privileges, kernel BTF and the BPF helpers the program needs. Returns
 * 0, or -1 with one line in err saying what is missing and what to do. */
int preflight_check(char *err, size_t errlen);

#endif
