/* A profiling session: attach, sample, write. */
#ifndef SESSION_H
#define SESSION_H

#include "cli.h"

/* Runs the session the config describes. Returns the process exit code. */
int session_run(const struct config *cfg);

#endif
