/* pyperf-pprof: sample CPython stacks with eBPF, write pprof. */
#include "cli.h"
#include "session.h"

int main(int argc, char **argv)
{
	struct config cfg;

	switch (cli_parse(argc, argv, &cfg)) {
	case CLI_EXIT_OK:
		return 0;
	case CLI_ERROR:
		return 2;
	case CLI_RUN:
		break;
	}
	return session_run(&cfg);
}
