/* Command line → struct config. Nothing else in the program reads argv. */
#ifndef CLI_H
#define CLI_H

#include <stdint.h>
#include <sys/types.h>

#define CLI_MAX_PIDS 64

struct config {
	pid_t pids[CLI_MAX_PIDS];
	int npids;
	uint64_t duration_ms;		/* 0: until interrupted */
	const char *out;
	const char *event;		/* "cpu-clock", "task-clock", "cycles" */
	uint64_t sample_period;		/* events per sample; 0 when frequency set */
	uint64_t frequency;		/* samples per second; 0 when period set */
	uint32_t ringbuf_bytes;		/* 0: sized from the rate */
	uint32_t stack_bytes;		/* user stack copied per sample; 0: no native */
	int unwind_mode;		/* enum py_unwind_mode (bpf/pyperf.h) */
	int verbose;
	int quiet;
	const char *cmdline;		/* the invocation, recorded in the profile */
	int format;			/* enum out_format */
	uint64_t interval_s;		/* continuous mode: one profile per interval */
	int keep;			/* continuous mode: newest files kept, 0 = all */
	int subprocesses;		/* follow descendants of the targets */
	int all;			/* no --pid and no command: whole host */
	char **command;			/* after "--": launched and profiled */
	int duration_set;		/* -d given explicitly */
	int stack_bytes_set;		/* --stack-bytes given explicitly */
	int gil_only;			/* --gil: samples of GIL holders only */
	int wall;			/* --mode wall: off-CPU time too */
	const char *record;		/* --record FILE: also save what was observed */
	const char *replay;		/* --replay FILE: profile a recording, offline */
	int all_native;			/* --all-native: no native frame filter */
	int kernel;			/* --kernel: kernel stacks of samples in the kernel */
	int async_stacks;		/* --async: asyncio tasks' await chains as frames */
};

enum out_format { FORMAT_PPROF = 0, FORMAT_COLLAPSED };

enum cli_result { CLI_RUN = 0, CLI_EXIT_OK = 1, CLI_ERROR = -1 };

/* Fills cfg from argv. CLI_EXIT_OK after --help / --version. */
enum cli_result cli_parse(int argc, char **argv, struct config *cfg);

#endif
