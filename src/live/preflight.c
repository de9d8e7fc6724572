/* Privilege and kernel feature checks, before anything is loaded. */
#include "preflight.h"

#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int have_cap(const struct __user_cap_data_struct *d, int cap)
{
	return (d[cap / 32].effective >> (cap % 32)) & 1;
}

static int check_caps(char *err, size_t errlen)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	const char *missing[4];
	int n = 0;

	if (syscall(SYS_capget, &h, d))
		return 0;	/* cannot tell: let the real calls report */
	if (!have_cap(d, CAP_SYS_ADMIN)) {
		if (!have_cap(d, CAP_BPF))
			missing[n++] = "CAP_BPF";
		if (!have_cap(d, CAP_PERFMON))
			missing[n++] = "CAP_PERFMON";
	}
	if (!have_cap(d, CAP_SYS_PTRACE))
		missing[n++] = "CAP_SYS_PTRACE";
	if (!n)
		return 0;
	snprintf(err, errlen, "not enough privilege: missing %s%s%s%s%s (run as root, or grant CAP_BPF and CAP_PERFMON to load BPF and open perf events, and CAP_SYS_PTRACE to read target memory)",
		 missing[0], n > 1 ? ", " : "", n > 1 ? missing[1] : "", n > 2 ? ", " : "",
		 n > 2 ? missing[2] : "");
	return -1;
}

int preflight_check(char *err, size_t errlen)
{
	static const struct { enum bpf_func_id id; const char *name; } helpers[] = {
		{ BPF_FUNC_loop, "bpf_loop" },
		{ BPF_FUNC_find_vma, "bpf_find_vma" },
		{ BPF_FUNC_task_pt_regs, "bpf_task_pt_regs" },
		{ BPF_FUNC_ringbuf_output, "bpf_ringbuf_output" },
	};

	if (check_caps(err, errlen))
		return -1;
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(err, errlen, "the kernel has no BTF (/sys/kernel/btf/vmlinux is missing): use a kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian's kernels are)");
		return -1;
	}
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++) {
		/* 0: not supported; <0: could not probe (let the load say). */
		if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, helpers[i].id, NULL) == 0) {
			snprintf(err, errlen, "the kernel lacks the BPF helper %s for perf_event programs: Linux 5.17 or later is needed",
				 helpers[i].name);
			return -1;
		}
	}
	return 0;
}

void preflight_drop_capabilities(int verbose)
{
	static const int keep[] = { CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_DAC_READ_SEARCH,
				    CAP_DAC_OVERRIDE };
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	__u32 mask[2] = { 0, 0 };

	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		mask[keep[i] / 32] |= 1u << (keep[i] % 32);
	if (syscall(SYS_capget, &h, d))
		goto fail;
	for (int i = 0; i < 2; i++) {
		d[i].effective &= mask[i];
		d[i].permitted &= mask[i];
		d[i].inheritable &= mask[i];
	}
	/* The bounding set first: it needs CAP_SETPCAP, dropped below. */
	for (int cap = 0; cap <= 63; cap++)
		if (!((mask[cap / 32] >> (cap % 32)) & 1))
			prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	if (syscall(SYS_capset, &h, d))
		goto fail;
	return;
fail:
	if (verbose)
		fprintf(stderr, "pyperf-pprof: warning: cannot drop capabilities: %s\n", strerror(errno));
}
