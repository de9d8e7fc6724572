/* pyperf-pprof: sample CPython stacks with eBPF, write pprof. */
#include <stdlib.h>

#include "cli.h"
#include "replay.h"
#include "session.h"

int main(int argc, char **argv)
{
	struct config cfg;
	int rc;

	switch (cli_parse(argc, argv, &cfg)) {
	case CLI_EXIT_OK:
		return 0;
	case CLI_ERROR:
		return 2;
	case CLI_RUN:
		break;
	}
	/* --replay: a recording instead of live processes (src/record/replay.c). */
	rc = cfg.replay ? replay_main(&cfg) : session_run(&cfg);
	/* cli_parse() allocated it; LeakSanitizer and valgrind see it lost. */
	free((char *)cfg.cmdline);
	return rc;
}
