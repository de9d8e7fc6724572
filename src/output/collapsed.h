/* Folded stacks ("root;...;leaf count" per line) for flamegraph.pl. */
#ifndef COLLAPSED_H
#define COLLAPSED_H

#include <stddef.h>

#include "profile.h"

/* Encodes every sample as one line, frames root first, each frame
 * "function (file:line)" or "function" when there is no file; the count is
 * the sample's first value. Returns 0 and a malloc'd buffer, or -1. */
int collapsed_encode(const struct profile *p, char **out, size_t *len);

#endif
