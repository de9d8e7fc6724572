/*
 * Unit tests of src/cli.c: the defaults a user gets without options, and
 * options that touch the same settings in either order (--native after
 * --unwind once reset the unwind mode), the default name following the
 * format, and --replay refusing what it cannot honour.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli.h"
#include "pyperf.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

/* cli_parse on a NULL-terminated argv; cmdline freed. */
static enum cli_result parse(char **argv, int argc, struct config *cfg)
{
	enum cli_result r = cli_parse(argc, argv, cfg);

	free((char *)cfg->cmdline);
	cfg->cmdline = NULL;
	return r;
}

static void test_defaults(void)
{
	char *argv[] = { "pyperf-pprof", NULL };
	struct config cfg;

	check(parse(argv, ARGC(argv), &cfg) == CLI_RUN, "no options: runs");
	check(cfg.unwind_mode == PY_UNWIND_KERNEL, "default: native frames unwound in BPF");
	check(cfg.stack_bytes == 65536, "default: native frames on, 64 KiB copies where copied");
	check(cfg.all && cfg.duration_ms == 1000, "default: whole host for 1 s");
	check(!strcmp(cfg.out, "profile.pb.gz") && cfg.format == FORMAT_PPROF,
	      "default: profile.pb.gz, pprof");
}

static void test_unwind_and_native(void)
{
	char *user_native[] = { "pyperf-pprof", "--unwind", "user", "--native", NULL };
	char *native_user[] = { "pyperf-pprof", "--native", "--unwind", "user", NULL };
	char *no_native[] = { "pyperf-pprof", "--no-native", "--unwind", "both", NULL };
	char *renative[] = { "pyperf-pprof", "--no-native", "--native", NULL };
	char *bad[] = { "pyperf-pprof", "--unwind", "sideways", NULL };
	char *set[] = { "pyperf-pprof", "--stack-bytes", "4096", NULL };
	struct config cfg;

	check(parse(user_native, ARGC(user_native), &cfg) == CLI_RUN &&
	      cfg.unwind_mode == PY_UNWIND_USER && cfg.stack_bytes,
	      "--unwind user --native: user mode kept");
	check(parse(native_user, ARGC(native_user), &cfg) == CLI_RUN &&
	      cfg.unwind_mode == PY_UNWIND_USER && cfg.stack_bytes,
	      "--native --unwind user: user mode");
	check(parse(no_native, ARGC(no_native), &cfg) == CLI_RUN &&
	      cfg.stack_bytes == 0 && cfg.unwind_mode == PY_UNWIND_BOTH,
	      "--no-native: no stack, whatever the unwind mode");
	check(parse(renative, ARGC(renative), &cfg) == CLI_RUN &&
	      cfg.stack_bytes == 65536 && cfg.unwind_mode == PY_UNWIND_KERNEL,
	      "--no-native --native: native frames back, default mode");
	check(parse(user_native, ARGC(user_native), &cfg) == CLI_RUN && cfg.stack_bytes == 32768,
	      "--unwind user: 32 KiB copies, one per sample");
	check(parse(set, ARGC(set), &cfg) == CLI_RUN && cfg.stack_bytes == 4096 &&
	      cfg.unwind_mode == PY_UNWIND_KERNEL, "--stack-bytes 4096: kept in kernel mode");
	fprintf(stderr, "(an error line about --unwind is expected below)\n");
	check(parse(bad, ARGC(bad), &cfg) == CLI_ERROR, "--unwind sideways: refused");
}

static void test_format_and_replay(void)
{
	char *folded[] = { "pyperf-pprof", "--format", "collapsed", NULL };
	char *named[] = { "pyperf-pprof", "--format", "collapsed", "-o", "x.txt", NULL };
	char *replay_ok[] = { "pyperf-pprof", "--replay", "r.rec", "--keep", "3", "--all-native",
			      "--format", "collapsed", "-o", "d/", "-v", NULL };
	char *replay_gil[] = { "pyperf-pprof", "--replay", "r.rec", "--gil", NULL };
	char *gil_replay[] = { "pyperf-pprof", "-F", "99", "--replay", "r.rec", NULL };
	struct config cfg;

	check(parse(folded, ARGC(folded), &cfg) == CLI_RUN && !strcmp(cfg.out, "profile.folded"),
	      "--format collapsed: default profile.folded");
	check(parse(named, ARGC(named), &cfg) == CLI_RUN && !strcmp(cfg.out, "x.txt"),
	      "--format collapsed -o x.txt: x.txt");
	check(parse(replay_ok, ARGC(replay_ok), &cfg) == CLI_RUN,
	      "--replay with output options only: runs");
	fprintf(stderr, "(two error lines about --replay are expected below)\n");
	check(parse(replay_gil, ARGC(replay_gil), &cfg) == CLI_ERROR, "--replay --gil: refused");
	check(parse(gil_replay, ARGC(gil_replay), &cfg) == CLI_ERROR,
	      "-F before --replay: refused");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_defaults();
	test_unwind_and_native();
	test_format_and_replay();
	return check_exit();
}
