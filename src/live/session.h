/* A profiling session: attach, sample, write. */
#ifndef SESSION_H
#define SESSION_H

#include "cli.h"

/* The exit code of a run that wrote a profile without any sample (after
 * a line saying why); a launched command's non-zero status comes first. */
#define SESSION_EXIT_EMPTY 3

/* Runs the session the config describes. Returns the process exit code. */
int session_run(const struct config *cfg);

#endif
