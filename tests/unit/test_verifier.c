/*
 * The BPF program's verification cost, per configuration the profiler
 * loads: instructions the kernel's verifier walked, which must stay far
 * below its limit of 1,000,000. The kernel-mode program once took 933,671
 * here (a loop over the mappings unrolled for every state reaching it) and
 * would have failed on a kernel pruning a little worse; it also took 0.35 s
 * of every start. Each configuration must load and stay under
 * VERIFY_BUDGET. Needs root (BPF); skips with the reason otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "check.h"
#include "pyperf.h"
#include "pyperf.skel.h"

#define VERIFY_BUDGET 250000	/* a quarter of the kernel's limit */

static char log_buf[1 << 20];

struct variant {
	const char *what;
	__u32 stack_bytes, unwind_mode, kernel_stacks;
	int wall;
};

/* Loads the program as configured; returns the instructions the verifier
 * processed, -1 if the load failed. */
static long verify(const struct variant *v)
{
	struct pyperf_bpf *s = pyperf_bpf__open();
	struct stat ns;
	const char *p;
	long n = -1;

	if (!s)
		return -1;
	/* The PID namespace, as the profiler sets it: the program's fast
	 * path for the host's. */
	if (!stat("/proc/self/ns/pid", &ns))
		s->rodata->pidns_ino = (__u32)ns.st_ino;
	s->rodata->stack_bytes = v->stack_bytes;
	s->rodata->unwind_mode = v->unwind_mode;
	s->rodata->kernel_stacks = v->kernel_stacks;
	bpf_program__set_autoload(s->progs.on_switch, v->wall);
	log_buf[0] = '\0';
	bpf_program__set_log_level(s->progs.on_sample, 4);	/* statistics */
	bpf_program__set_log_buf(s->progs.on_sample, log_buf, sizeof(log_buf));
	if (!pyperf_bpf__load(s) && (p = strstr(log_buf, "processed ")))
		n = strtol(p + strlen("processed "), NULL, 10);
	pyperf_bpf__destroy(s);
	return n;
}

int main(void)
{
	static const struct variant v[] = {
		{ "native, --unwind kernel (default)", 32768, PY_UNWIND_KERNEL, 0, 0 },
		{ "native, --unwind kernel, --kernel, wall mode", 32768, PY_UNWIND_KERNEL, 1, 1 },
		{ "native, --unwind user", 32768, PY_UNWIND_USER, 0, 0 },
		{ "native, --unwind both", 32768, PY_UNWIND_BOTH, 0, 0 },
		{ "--no-native", 0, PY_UNWIND_USER, 0, 0 },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("SKIP: loading BPF programs needs root\n");
		return 77;
	}
	libbpf_set_print(NULL);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		long n = verify(&v[i]);

		check(n >= 0 && n <= VERIFY_BUDGET, "%s: loads, %ld instructions verified (at most %d)",
		      v[i].what, n, VERIFY_BUDGET);
	}
	return check_exit();
}
