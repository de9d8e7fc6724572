/* Option parsing; perf-like flags (-p, -F, -c, -e, -o) plus py-spy's -d. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "pyperf.h"

#define DEFAULT_PERIOD 1000000ULL	/* 1 ms of cpu-clock: 1000 Hz */
#define DEFAULT_STACK	(32u << 10)

static void usage(FILE *f)
{
	fprintf(f,
"Usage: pyperf-pprof [options] [--pid PID]... [-- COMMAND [ARGS...]]\n"
"Sample the Python stacks of CPython processes with eBPF and write a\n"
"gzip-compressed pprof profile. Without --pid or a command, every Python\n"
"process of the host is profiled, including those started later.\n"
"\n"
"  -p, --pid PID            process to profile (repeatable)\n"
"  -- COMMAND [ARGS...]     launch COMMAND, profile it until it exits, and\n"
"                           exit with its status\n"
"      --subprocesses       also profile descendants of the targets\n"
"                           (multiprocessing workers, gunicorn workers)\n"
"      --interval SECONDS   continuous mode: write one profile per interval\n"
"                           (--out is then a directory or contains %%t;\n"
"                           names carry the time and this run's pid)\n"
"      --keep N             continuous mode: keep only this run's newest N\n"
"                           files (default 0: keep all)\n"
"  -d, --duration MS        sampling time in milliseconds, 0 = until Ctrl-C\n"
"                           or SIGTERM (default 1000; 0 with a command:\n"
"                           until it exits)\n"
"  -o, --out FILE           output file (default profile.pb.gz, or\n"
"                           profile.folded with --format collapsed)\n"
"      --format FORMAT      pprof (gzip-compressed protobuf, default) or\n"
"                           collapsed (folded stacks for flamegraph.pl)\n"
"  -e, --event NAME         cpu-clock (default), task-clock, or cycles\n"
"                           (cycles falls back to cpu-clock where the CPU\n"
"                           has no hardware counters)\n"
"  -c, --sample-period N    one sample every N events (default 1000000;\n"
"                           for cpu-clock that is nanoseconds)\n"
"  -F, --frequency HZ       sample HZ times per second instead of -c\n"
"      --mode MODE          cpu (default): time on the CPU; wall: also time\n"
"                           off it (sleep, I/O, locks, GIL), every thread\n"
"      --gil                only samples of threads holding the GIL\n"
"      --async              asyncio: a running task's stack ends, in place of\n"
"                           the event loop's frames, with a [task NAME] frame\n"
"                           and the await chain above it: where the task\n"
"                           that awaits it waits (gather, TaskGroup, wait,\n"
"                           wait_for, await task), its [task NAME], and so\n"
"                           on up to the root task\n"
"      --ringbuf-size BYTES BPF ring buffer size (default: 100 ms of records\n"
"                           at the sampling rate on every CPU, 2 to 16 MiB)\n"
"      --no-native          Python frames only: do not copy and unwind the\n"
"                           native stack (cheaper)\n"
"      --native             merge native frames into the stacks (default)\n"
"      --all-native         show every native frame; by default the\n"
"                           interpreter's own frames (calls, eval loop,\n"
"                           start-up) are hidden, its frames that wait,\n"
"                           sleep, do I/O, str, re or gc work are kept\n"
"      --kernel             kernel frames on top of samples taken in the\n"
"                           kernel (system calls), named from /proc/kallsyms\n"
"      --stack-bytes N      user stack bytes copied per sample when one is\n"
"                           (default 32768 with --unwind user or both, 65536\n"
"                           with kernel; at most 65536)\n"
"      --unwind MODE        where native frames are unwound: kernel (default:\n"
"                           in BPF from unwind tables; a sample meeting code\n"
"                           not loaded yet is copied and unwound by\n"
"                           libunwind), user (stack copy + libunwind on every\n"
"                           sample), or both (debug: compare the two on\n"
"                           every sample)\n"
"      --record FILE        also save what the session observes (samples,\n"
"                           target memory and files read) to FILE\n"
"      --replay FILE        no sampling: turn a --record FILE into --out\n"
"                           offline (no root, no BPF, the processes gone);\n"
"                           only the output options apply\n"
"  -v, --verbose            print counters and cache statistics\n"
"  -q, --quiet              print errors only\n"
"  -h, --help               this help\n"
"      --version            print the version\n"
"\n"
"SIGUSR1 writes the profile collected so far (in continuous mode: ends the\n"
"current interval). SIGINT and SIGTERM write the profile and exit 0; with\n"
"a command, it gets the signal once and its exit status is returned.\n"
"Exit 3: the profile holds no sample (a line says why).\n"
"Needs root, or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE.\n"
"Open the result with: go tool pprof -top profile.pb.gz\n");
}

static int parse_u64(const char *opt, const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-') {
		fprintf(stderr, "pyperf-pprof: %s expects a non-negative integer, got '%s'\n",
			opt, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int add_pid(struct config *cfg, const char *s)
{
	uint64_t v;

	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v == 0 || v > 4194304) {
		fprintf(stderr, "pyperf-pprof: --pid expects a process id, got '%s'\n", s);
		return -1;
	}
	if (cfg->npids == CLI_MAX_PIDS) {
		fprintf(stderr, "pyperf-pprof: at most %d --pid options\n", CLI_MAX_PIDS);
		return -1;
	}
	cfg->pids[cfg->npids++] = (pid_t)v;
	return 0;
}

static char *join_argv(int argc, char **argv)
{
	size_t len = 1;
	char *s;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = calloc(1, len);
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

enum { OPT_VERSION = 256, OPT_MODE, OPT_GIL, OPT_INTERVAL, OPT_KEEP, OPT_SUBPROCESSES, OPT_FORMAT, OPT_RINGBUF, OPT_NATIVE, OPT_NO_NATIVE, OPT_STACK_BYTES, OPT_RECORD, OPT_REPLAY, OPT_ALL_NATIVE, OPT_KERNEL, OPT_UNWIND, OPT_ASYNC };

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "duration", required_argument, NULL, 'd' },
	{ "out", required_argument, NULL, 'o' },
	{ "event", required_argument, NULL, 'e' },
	{ "sample-period", required_argument, NULL, 'c' },
	{ "frequency", required_argument, NULL, 'F' },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "keep", required_argument, NULL, OPT_KEEP },
	{ "subprocesses", no_argument, NULL, OPT_SUBPROCESSES },
	{ "gil", no_argument, NULL, OPT_GIL },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "ringbuf-size", required_argument, NULL, OPT_RINGBUF },
	{ "native", no_argument, NULL, OPT_NATIVE },
	{ "no-native", no_argument, NULL, OPT_NO_NATIVE },
	{ "all-native", no_argument, NULL, OPT_ALL_NATIVE },
	{ "kernel", no_argument, NULL, OPT_KERNEL },
	{ "async", no_argument, NULL, OPT_ASYNC },
	{ "stack-bytes", required_argument, NULL, OPT_STACK_BYTES },
	{ "unwind", required_argument, NULL, OPT_UNWIND },
	{ "record", required_argument, NULL, OPT_RECORD },
	{ "replay", required_argument, NULL, OPT_REPLAY },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ 0 }
};

static int handle_opt(int c, struct config *cfg)
{
	uint64_t v;

	switch (c) {
	case 'p':
		return add_pid(cfg, optarg);
	case 'd':
		cfg->duration_set = 1;
		return parse_u64("--duration", optarg, &cfg->duration_ms);
	case 'o':
		cfg->out = optarg;
		return 0;
	case 'e':
		if (strcmp(optarg, "cpu-clock") && strcmp(optarg, "task-clock") &&
		    strcmp(optarg, "cycles")) {
			fprintf(stderr, "pyperf-pprof: unknown event '%s': use cpu-clock, task-clock or cycles\n",
				optarg);
			return -1;
		}
		cfg->event = optarg;
		return 0;
	case 'c':
		if (parse_u64("--sample-period", optarg, &cfg->sample_period))
			return -1;
		cfg->frequency = 0;
		return cfg->sample_period ? 0 : (fprintf(stderr,
			"pyperf-pprof: --sample-period must be > 0\n"), -1);
	case 'F':
		if (parse_u64("--frequency", optarg, &cfg->frequency))
			return -1;
		cfg->sample_period = 0;
		return cfg->frequency ? 0 : (fprintf(stderr,
			"pyperf-pprof: --frequency must be > 0\n"), -1);
	case OPT_RINGBUF:
		if (parse_u64("--ringbuf-size", optarg, &v))
			return -1;
		if (v < 4096 || v > (1u << 30) || (v & (v - 1))) {
			fprintf(stderr, "pyperf-pprof: --ringbuf-size must be a power of two between 4096 and 1 GiB\n");
			return -1;
		}
		cfg->ringbuf_bytes = (uint32_t)v;
		return 0;
	case OPT_INTERVAL:
		if (parse_u64("--interval", optarg, &cfg->interval_s))
			return -1;
		return cfg->interval_s ? 0 : (fprintf(stderr,
			"pyperf-pprof: --interval must be at least 1 second\n"), -1);
	case OPT_KEEP:
		if (parse_u64("--keep", optarg, &v) || v > 1000000)
			return -1;
		cfg->keep = (int)v;
		return 0;
	case OPT_SUBPROCESSES:
		cfg->subprocesses = 1;
		return 0;
	case OPT_MODE:
		if (strcmp(optarg, "cpu") && strcmp(optarg, "wall")) {
			fprintf(stderr, "pyperf-pprof: --mode must be cpu or wall, got '%s'\n", optarg);
			return -1;
		}
		cfg->wall = strcmp(optarg, "wall") == 0;
		return 0;
	case OPT_GIL:
		cfg->gil_only = 1;
		return 0;
	case OPT_FORMAT:
		if (strcmp(optarg, "pprof") == 0) {
			cfg->format = FORMAT_PPROF;
		} else if (strcmp(optarg, "collapsed") == 0) {
			cfg->format = FORMAT_COLLAPSED;
		} else {
			fprintf(stderr, "pyperf-pprof: --format must be pprof or collapsed, got '%s'\n",
				optarg);
			return -1;
		}
		return 0;
	case OPT_NATIVE:
		if (!cfg->stack_bytes)
			cfg->stack_bytes = DEFAULT_STACK;
		return 0;
	case OPT_NO_NATIVE:
		cfg->stack_bytes = 0;
		return 0;
	case OPT_ALL_NATIVE:
		cfg->all_native = 1;
		return 0;
	case OPT_KERNEL:
		cfg->kernel = 1;
		return 0;
	case OPT_ASYNC:
		cfg->async_stacks = 1;
		return 0;
	case OPT_STACK_BYTES:
		if (parse_u64("--stack-bytes", optarg, &v))
			return -1;
		if (v < 512 || v > PYPERF_MAX_STACK) {
			fprintf(stderr, "pyperf-pprof: --stack-bytes must be between 512 and %u\n",
				PYPERF_MAX_STACK);
			return -1;
		}
		cfg->stack_bytes = (uint32_t)v & ~7u;
		cfg->stack_bytes_set = 1;
		return 0;
	case OPT_UNWIND:
		if (strcmp(optarg, "user") == 0)
			cfg->unwind_mode = PY_UNWIND_USER;
		else if (strcmp(optarg, "kernel") == 0)
			cfg->unwind_mode = PY_UNWIND_KERNEL;
		else if (strcmp(optarg, "both") == 0)
			cfg->unwind_mode = PY_UNWIND_BOTH;
		else {
			fprintf(stderr, "pyperf-pprof: --unwind must be user, kernel or both, got '%s'\n",
				optarg);
			return -1;
		}
		return 0;
	case OPT_RECORD:	/* record and replay: src/record/record.h */
		cfg->record = optarg;
		return 0;
	case OPT_REPLAY:
		cfg->replay = optarg;
		return 0;
	case 'v':
		cfg->verbose++;
		return 0;
	case 'q':
		cfg->quiet = 1;
		return 0;
	default:
		return -1;
	}
}

/*
 * The long name of an option --replay cannot honour: a replay reads what
 * was sampled with the recording's own settings, so only the output
 * options (-o, --format, --keep, --all-native, -v, -q) apply. NULL for
 * those.
 */
static const char *not_for_replay(int c)
{
	static const int live_only[] = {
		'p', 'd', 'e', 'c', 'F', OPT_INTERVAL, OPT_SUBPROCESSES, OPT_GIL, OPT_MODE,
		OPT_RINGBUF, OPT_NATIVE, OPT_NO_NATIVE, OPT_KERNEL, OPT_STACK_BYTES,
		OPT_UNWIND, OPT_RECORD,
	};

	for (size_t i = 0; i < sizeof(live_only) / sizeof(live_only[0]); i++) {
		if (live_only[i] != c)
			continue;
		for (const struct option *o = long_opts; o->name; o++) {
			if (o->val == c)
				return o->name;
		}
	}
	return NULL;
}

enum cli_result cli_parse(int argc, char **argv, struct config *cfg)
{
	const char *live_opt = NULL;	/* the first option --replay refuses */
	int c;

	memset(cfg, 0, sizeof(*cfg));
	cfg->duration_ms = 1000;
	cfg->event = "cpu-clock";
	cfg->sample_period = DEFAULT_PERIOD;
	cfg->ringbuf_bytes = 0;		/* from the rate (bpf_attach.c) */
	cfg->stack_bytes = DEFAULT_STACK;
	cfg->unwind_mode = PY_UNWIND_KERNEL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:d:o:e:c:F:vqh", long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return CLI_EXIT_OK;
		}
		if (c == OPT_VERSION) {
			printf("pyperf-pprof %s\n", PACKAGE_VERSION);
			return CLI_EXIT_OK;
		}
		if (handle_opt(c, cfg)) {
			if (c == '?')
				fprintf(stderr, "Try 'pyperf-pprof --help'.\n");
			return CLI_ERROR;
		}
		if (!live_opt)
			live_opt = not_for_replay(c);
	}
	if (optind < argc) {
		/* getopt stops at "--" (and, with "+", at the first non-option) */
		if (strcmp(argv[optind - 1], "--") != 0) {
			fprintf(stderr, "pyperf-pprof: unexpected argument '%s'; put a command to launch after '--' (try 'pyperf-pprof --help')\n",
				argv[optind]);
			return CLI_ERROR;
		}
		cfg->command = argv + optind;
	}
	/* --replay profiles a recording, not processes. */
	if (cfg->replay && (live_opt || cfg->command)) {
		fprintf(stderr, "pyperf-pprof: --replay reads a recording made with its own settings: it takes no %s%s (only -o, --format, --keep, --all-native, -v and -q apply)\n",
			live_opt ? "--" : "", live_opt ? live_opt : "command");
		return CLI_ERROR;
	}
	/* Unwinding in BPF, a stack is copied only where the tables lack
	 * the code (a process not attached yet, a library just loaded): rare,
	 * and then often during imports, whose stacks outgrow 32 KiB (docutils
	 * under -X perf: 300 native frames). Beyond the copy the unwinder
	 * would read the live stack, which has moved on since. */
	if (cfg->stack_bytes && !cfg->stack_bytes_set && cfg->unwind_mode == PY_UNWIND_KERNEL)
		cfg->stack_bytes = PYPERF_MAX_STACK;
	if (!cfg->out)		/* the default name says the format */
		cfg->out = cfg->format == FORMAT_COLLAPSED ? "profile.folded" : "profile.pb.gz";
	cfg->all = !cfg->npids && !cfg->command;
	if (cfg->command && !cfg->duration_set)
		cfg->duration_ms = 0;	/* until the command exits */
	cfg->cmdline = join_argv(argc, argv);
	return CLI_RUN;
}
