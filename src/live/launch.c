/* Starting and reaping the profiled command; see launch.h. */
#define _GNU_SOURCE
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t launch_command(char *const *argv)
{
	int pfd[2], e = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC)) {
		fprintf(stderr, "pyperf-pprof: cannot run %s: %s\n", argv[0], strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		/* The exec closes pfd[1]; only a failed exec writes to it. */
		execvp(argv[0], argv);
		e = errno;
		if (write(pfd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		fprintf(stderr, "pyperf-pprof: cannot run %s: %s\n", argv[0], strerror(errno));
		return -1;
	}
	n = read(pfd[0], &e, sizeof(e));
	close(pfd[0]);
	if (n == (ssize_t)sizeof(e)) {
		waitpid(pid, NULL, 0);
		fprintf(stderr, "pyperf-pprof: cannot run %s: %s\n", argv[0], strerror(e));
		return -1;
	}
	return pid;
}

int launch_reap(pid_t pid, int *status)
{
	int st;

	if (waitpid(pid, &st, WNOHANG) != pid)
		return 0;
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 1;
}
