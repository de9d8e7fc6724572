/* The command after "--": started, and later reaped with its exit code. */
#ifndef LAUNCH_H
#define LAUNCH_H

#include <sys/types.h>

/* Forks and execs argv; the pid, or -1 after printing why it did not run
 * (an exec that fails is reported here, not as an exit code). */
pid_t launch_command(char *const *argv);

/* Has pid exited? 1 with its exit code (128 + signal when killed) in
 * status, else 0. Does not wait. */
int launch_reap(pid_t pid, int *status);

#endif
