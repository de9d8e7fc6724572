/* Loading, attaching and reading the BPF program; see bpf_attach.h. */
#define _GNU_SOURCE
#include "bpf_attach.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "pyperf.skel.h"

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	static int verbose;

	if (!fmt) {		/* our own call to set the level */
		verbose = level;
		return 0;
	}
	if (level == LIBBPF_DEBUG || (level == LIBBPF_INFO && verbose < 2) ||
	    (level == LIBBPF_WARN && !verbose))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void bpf_attach_log_level(int verbose)
{
	libbpf_print((enum libbpf_print_level)verbose, NULL, NULL);
	libbpf_set_print(libbpf_print);
}

/* The ring buffer, unless --ringbuf-size: 100 ms of records (the reader
 * is woken at 256 KiB or 4 ms after its last wakeup) at the sampling rate
 * on every CPU. A record is
 * under 1 KiB without a stack copy (compact records, bpf/pyperf.h: ~0.8
 * KiB on a deep program) plus the copy, which is what the stack uses:
 * 2.5 KB on make bench's workload, 8 KB with threads, 12.8 KB on docutils
 * under -X perf; 8 KiB is counted. At least 2 MiB (the former fixed 8 MiB
 * was 16 MiB of the profiler's 29 MiB on a deep program at 1 ms); at
 * most 16 MiB, because the pages are touched as records go round and
 * count twice in the profiler's memory (the data area is mapped twice, for
 * records that wrap): sized from the largest copy, 2 CPUs at -F 19999 took
 * 256 MiB (558 MiB RSS), a 32 MiB cap still 72 MiB RSS, and a 64-CPU host
 * would have taken 256 MiB at the default rate. */
static uint32_t ring_bytes(const struct config *cfg, int ncpus)
{
	uint64_t hz = 1000, rec = 1024, want, ring = 2u << 20;

	if (cfg->frequency)
		hz = cfg->frequency;
	else if (cfg->sample_period && cfg->event && strstr(cfg->event, "clock"))
		hz = 1000000000ull / cfg->sample_period;	/* ns of a clock */
	if (cfg->stack_bytes && cfg->unwind_mode != PY_UNWIND_KERNEL)
		rec += cfg->stack_bytes < 8192 ? cfg->stack_bytes : 8192;
	want = hz * (uint64_t)(ncpus > 0 ? ncpus : 1) * rec / 10;
	while (ring < want && ring < (16u << 20))
		ring <<= 1;
	return (uint32_t)ring;
}

/* Settings the program reads as constants: fixed before it is loaded. */
static int configure(struct bpf_attach *a, const struct config *cfg)
{
	struct pyperf_bpf *skel = a->skel;
	struct stat ns;

	bpf_map__set_max_entries(skel->maps.events, cfg->ringbuf_bytes ? cfg->ringbuf_bytes :
				 ring_bytes(cfg, libbpf_num_possible_cpus()));
	bpf_map__set_max_entries(skel->maps.procs, TARGETS_MAX);
	if (!cfg->wall)
		bpf_program__set_autoload(skel->progs.on_switch, false);
	if (!cfg->all && !cfg->subprocesses) {
		/* Fixed targets: no need to watch processes come and go. */
		bpf_program__set_autoload(skel->progs.on_exec, false);
		bpf_program__set_autoload(skel->progs.on_fork, false);
		bpf_program__set_autoload(skel->progs.on_mmap, false);
		bpf_program__set_autoload(skel->progs.learn_root, false);
	}
	bpf_map__set_max_entries(skel->maps.scratch, (__u32)libbpf_num_possible_cpus());
	skel->rodata->stack_bytes = cfg->stack_bytes;
	skel->rodata->unwind_mode = cfg->stack_bytes ? (__u32)cfg->unwind_mode : 0;
	if (!cfg->stack_bytes || cfg->unwind_mode == PY_UNWIND_USER) {
		/* No tables: do not allocate them. */
		bpf_map__set_max_entries(skel->maps.unwind_rows, 1);
		bpf_map__set_max_entries(skel->maps.unwind_objs, 1);
		bpf_map__set_max_entries(skel->maps.unwind_pages, 1);
		bpf_map__set_max_entries(skel->maps.unwind_procs, 1);
		bpf_map__set_max_entries(skel->maps.rule_cache, 1);
	} else {
		bpf_map__set_max_entries(skel->maps.rule_cache,
					 (__u32)libbpf_num_possible_cpus() << PY_RULE_CACHE_BITS);
		bpf_map__set_max_entries(skel->maps.unwind_procs, TARGETS_MAX);
	}
	/* Nothing waits for a target's exit on the whole host. */
	skel->rodata->lazy_exits = cfg->all;
	skel->rodata->prompt_new_code = !cfg->all;
	skel->rodata->gil_only = cfg->gil_only;
	skel->rodata->kernel_stacks = cfg->kernel;
	/* Spans of time weigh samples whose period is time. */
	skel->rodata->wall_mode = cfg->wall && strcmp(cfg->event, "cycles") != 0;
	skel->rodata->sample_period_ns = cfg->frequency ? 1000000000ULL / cfg->frequency :
							  cfg->sample_period;
	if (stat("/proc/self/ns/pid", &ns)) {
		fprintf(stderr, "pyperf-pprof: cannot stat /proc/self/ns/pid: %s (is /proc mounted?)\n",
			strerror(errno));
		return -1;
	}
	skel->rodata->pidns_ino = (__u32)ns.st_ino;
	return 0;
}

/* A process started this long before it is registered ran before we
 * knew it: its first sample wakes us (py_proc_config.wake_first). One
 * exec'd just now has no asyncio tasks yet, and every new process of a
 * busy host would cost a wake-up. */
#define WAKE_FIRST_AGE_NS	500000000LL

static __u32 wake_first(const struct py_target *t)
{
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);
	int64_t now, start;

	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts))
		return 1;
	now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	start = (int64_t)(t->start_time / (uint64_t)hz) * 1000000000LL +
		(int64_t)(t->start_time % (uint64_t)hz) * (1000000000LL / hz);
	return !t->start_time || now - start >= WAKE_FIRST_AGE_NS;
}

int bpf_attach_load(struct bpf_attach *a, const struct config *cfg, const struct target_set *ts)
{
	int err;

	a->skel = pyperf_bpf__open();
	if (!a->skel) {
		fprintf(stderr, "pyperf-pprof: cannot open the BPF program: %s\n", strerror(errno));
		return -1;
	}
	if (configure(a, cfg))
		return -1;
	err = pyperf_bpf__load(a->skel);
	if (err) {
		fprintf(stderr, "pyperf-pprof: cannot load the BPF program: %s (run as root, or grant CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE; the kernel needs BTF and bpf_loop, Linux 5.17+)\n",
			strerror(-err));
		return -1;
	}
	for (size_t i = 0; i < ts->n; i++) {
		__u32 key = (__u32)ts->v[i]->pid;
		struct py_proc_config c = ts->v[i]->bpf;

		c.wake_first = wake_first(ts->v[i]);
		if (bpf_map__update_elem(a->skel->maps.procs, &key, sizeof(key), &c, sizeof(c),
					 BPF_ANY)) {
			fprintf(stderr, "pyperf-pprof: cannot register pid %d with the BPF program: %s\n",
				(int)key, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* CLOCK_MONOTONIC, bpf_ktime_get_ns()'s clock. */
static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

void bpf_attach_target(struct bpf_attach *a, const struct py_target *t, int add)
{
	struct py_proc_config c = t->bpf;
	__u32 key = (__u32)t->pid;

	if (!a->skel)
		return;	/* not loaded yet: bpf_attach_load() registers it */
	if (!add) {
		bpf_map__delete_elem(a->skel->maps.procs, &key, sizeof(key), 0);
		if (a->task_srcs_given)
			bpf_map__delete_elem(a->skel->maps.task_srcs, &key, sizeof(key), 0);
		return;
	}
	c.since_ns = now_ns();
	c.wake_first = wake_first(t);
	if (bpf_map__update_elem(a->skel->maps.procs, &key, sizeof(key), &c, sizeof(c), BPF_ANY))
		fprintf(stderr, "pyperf-pprof: cannot register pid %d with the BPF program: %s\n",
			t->pid, strerror(errno));
}

void bpf_attach_task_src(struct bpf_attach *a, int pid, const struct py_task_src *src)
{
	__u32 key = (__u32)pid;

	a->task_srcs_given = 1;
	if (a->skel && a->skel->bss)
		a->skel->bss->task_srcs_any = true;
	if (a->skel && bpf_map__update_elem(a->skel->maps.task_srcs, &key, sizeof(key), src,
					    sizeof(*src), BPF_ANY))
		fprintf(stderr, "pyperf-pprof: cannot give pid %d's asyncio tasks to the BPF program: %s\n",
			pid, strerror(errno));
}

static int event_attr(const struct config *cfg, struct perf_event_attr *a)
{
	const char *ev = cfg->event;

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	if (strcmp(ev, "cpu-clock") == 0) {
		a->config = PERF_COUNT_SW_CPU_CLOCK;
	} else if (strcmp(ev, "task-clock") == 0) {
		a->config = PERF_COUNT_SW_TASK_CLOCK;
	} else if (strcmp(ev, "cycles") == 0) {
		a->type = PERF_TYPE_HARDWARE;
		a->config = PERF_COUNT_HW_CPU_CYCLES;
	} else {
		fprintf(stderr, "pyperf-pprof: unknown event '%s': use cpu-clock, task-clock or cycles\n", ev);
		return -1;
	}
	if (cfg->frequency) {
		a->freq = 1;
		a->sample_freq = cfg->frequency;
	} else {
		a->sample_period = cfg->sample_period;
	}
	return 0;
}

static int open_event(struct perf_event_attr *a, int cpu)
{
	return (int)syscall(__NR_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Opens cycles on the first CPU to learn whether the hardware has it. */
static void resolve_event(struct bpf_attach *b, struct perf_event_attr *a)
{
	int fd;

	if (a->type != PERF_TYPE_HARDWARE)
		return;
	fd = open_event(a, 0);
	if (fd >= 0) {
		close(fd);
		b->hw_cycles = 1;
		return;
	}
	if (errno != ENOENT && errno != EOPNOTSUPP && errno != ENODEV)
		return;	/* reported by the real open */
	fprintf(stderr, "pyperf-pprof: warning: hardware event 'cycles' is not supported here (a VM?); sampling cpu-clock instead\n");
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
}

/* kernel.perf_event_max_sample_rate, or 0 if unreadable. */
static unsigned long long max_sample_rate(void)
{
	unsigned long long max = 0;
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");

	if (f) {
		if (fscanf(f, "%llu", &max) != 1)
			max = 0;
		fclose(f);
	}
	return max;
}

/* Past this rate samples stop coming evenly: each costs the CPU 5-10 us
 * in the kernel (make bench: "bpf time"), and the timer fires late,
 * skipping periods, or the kernel throttles it. A busy thread sampled
 * with cpu-clock on a loaded 2-CPU VM: 0.99-1.02 of its CPU time up to
 * -F 30000, 0.74 at -F 50000, 0.45 at -F 100000 (tests/rates.sh). */
#define MAX_EVEN_HZ 20000ULL

/* A clock's sampling rate, from -F or -c (1e9 / N per second), is
 * bounded by kernel.perf_event_max_sample_rate (which the kernel checks
 * for -F only: -c 1 was accepted and fired every 10 us, weighing 1 ns
 * each) and by MAX_EVEN_HZ. Hardware cycles are a count, not a rate. */
static int check_rate(const struct config *cfg, const struct perf_event_attr *a)
{
	unsigned long long kmax = max_sample_rate(), max, hz;
	const char *opt = cfg->frequency ? "-F" : "-c";
	unsigned long long given = cfg->frequency ? cfg->frequency : cfg->sample_period;

	if (a->type != PERF_TYPE_SOFTWARE)
		return 0;
	hz = cfg->frequency ? cfg->frequency : (1000000000ULL + cfg->sample_period - 1) / cfg->sample_period;
	max = kmax && kmax < MAX_EVEN_HZ ? kmax : MAX_EVEN_HZ;
	if (hz <= max)
		return 0;
	if (kmax && hz > kmax && cfg->frequency && hz <= MAX_EVEN_HZ)
		fprintf(stderr, "pyperf-pprof: -F %llu is above the kernel's limit of %llu samples per second (kernel.perf_event_max_sample_rate): use -F %llu or less, or raise the limit with sysctl -w kernel.perf_event_max_sample_rate=%llu\n",
			given, kmax, max, given);
	else if (kmax && hz > kmax && cfg->frequency)
		fprintf(stderr, "pyperf-pprof: -F %llu is above the kernel's limit of %llu samples per second (kernel.perf_event_max_sample_rate), and above %llu samples are not even: use -F %llu or less\n",
			given, kmax, MAX_EVEN_HZ, max);
	else if (kmax && hz > kmax)
		fprintf(stderr, "pyperf-pprof: -c %llu is %llu samples per second of %s, above the kernel's limit of %llu (kernel.perf_event_max_sample_rate): use -c %llu or more\n",
			given, hz, cfg->event, kmax, (1000000000ULL + max - 1) / max);
	else
		fprintf(stderr, "pyperf-pprof: %s %llu is %llu samples per second; above %llu the kernel throttles the events or fires them late and the profile undercounts (a busy thread: 74 %% at 50000, 45 %% at 100000): use %s %llu or %s\n",
			opt, given, hz, max, opt,
			cfg->frequency ? max : (1000000000ULL + max - 1) / max,
			cfg->frequency ? "less" : "more");
	return -1;
}

/* The kernel refuses a frequency above kernel.perf_event_max_sample_rate
 * with EINVAL, which looks like a privilege problem unless it is named. */
static void explain_open_error(const struct config *cfg, int err, int cpu)
{
	unsigned long long max = err == EINVAL && cfg->frequency ? max_sample_rate() : 0;

	if (max && cfg->frequency > max) {
		fprintf(stderr, "pyperf-pprof: -F %llu is above the kernel's limit of %llu samples per second (kernel.perf_event_max_sample_rate): use -F %llu or less, or raise the limit with sysctl -w kernel.perf_event_max_sample_rate=%llu\n",
			(unsigned long long)cfg->frequency, max, max,
			(unsigned long long)cfg->frequency);
		return;
	}
	fprintf(stderr, "pyperf-pprof: cannot open perf event %s on CPU %d: %s%s\n",
		cfg->event, cpu, strerror(err),
		err == EACCES || err == EPERM ? " (needs root or CAP_PERFMON)" : "");
}

/* One perf event per online CPU, each running the sampling program. */
static int attach_cpus(struct bpf_attach *b, const struct config *cfg,
		       struct perf_event_attr *a, int ncpu)
{
	b->links = calloc((size_t)ncpu, sizeof(*b->links));
	b->event_fds = calloc((size_t)ncpu, sizeof(*b->event_fds));
	if (!b->links || !b->event_fds)
		return -1;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = open_event(a, cpu);

		if (fd < 0 && errno == ENODEV)
			continue;	/* offline CPU */
		if (fd < 0) {
			explain_open_error(cfg, errno, cpu);
			return -1;
		}
		b->event_fds[b->nevents] = fd;
		b->links[b->nevents] = bpf_program__attach_perf_event(b->skel->progs.on_sample, fd);
		if (!b->links[b->nevents]) {
			fprintf(stderr, "pyperf-pprof: cannot attach to perf event on CPU %d: %s\n",
				cpu, strerror(errno));
			close(fd);
			return -1;
		}
		b->nevents++;
	}
	return b->nevents ? 0 : -1;
}

/* The mmap(2) tracepoint is known by an id that only tracefs gives:
 * mounted at /sys/kernel/tracing by systemd, absent where nothing mounted
 * it (a minimal VM after a reboot, this one included), and then
 * discovery fell back to scanning /proc every 500 ms (0.7 ms of CPU a
 * second on an idle host). perf mounts it when it needs it; so do we,
 * at the kernel's own mount point, if it is not mounted anywhere (a
 * failure leaves the attach to say why). */
static void mount_tracefs(const struct config *cfg)
{
	if (access("/sys/kernel/tracing/events", F_OK) == 0 ||
	    access("/sys/kernel/debug/tracing/events", F_OK) == 0 ||
	    mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL))
		return;
	if (cfg->verbose)
		fprintf(stderr, "pyperf-pprof: mounted tracefs at /sys/kernel/tracing (the mmap tracepoint's id is read there)\n");
}

/* The BPF program learns our root, in our context (learn_root runs on
 * this thread), to tell the exec of a process with the same root
 * (PROC_F_ROOT_OURS): a new process's root is then known without a
 * readlink and a stat of /proc/PID/root. If this fails, no exec says so
 * and every root is looked at as before. */
static void learn_root(struct bpf_attach *b)
{
	__u64 args[1] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = args, .ctx_size_in = sizeof(args));

	if (bpf_prog_test_run_opts(bpf_program__fd(b->skel->progs.learn_root), &opts))
		b->skel->bss->our_root_dentry = 0;
}

int bpf_attach_events(struct bpf_attach *b, const struct config *cfg, long scan_ms)
{
	struct perf_event_attr a;
	int ncpu = libbpf_num_possible_cpus();

	if (event_attr(cfg, &a))
		return -1;
	resolve_event(b, &a);
	if (check_rate(cfg, &a))
		return -1;
	/* Time events: late samples are told (on_sample). */
	b->skel->bss->time_events = a.type == PERF_TYPE_SOFTWARE;
	if (ncpu <= 0) {
		fprintf(stderr, "pyperf-pprof: cannot count CPUs: %s\n", strerror(-ncpu));
		return -1;
	}
	if (attach_cpus(b, cfg, &a, ncpu))
		return -1;
	if (cfg->wall) {
		b->switch_link = bpf_program__attach(b->skel->progs.on_switch);
		if (!b->switch_link) {
			fprintf(stderr, "pyperf-pprof: cannot attach to sched_switch for --mode wall: %s\n",
				strerror(errno));
			return -1;
		}
	}
	/* Exits of targets, in every mode: the session forgets a target, or
	 * ends, at once rather than at a scan of /proc. */
	b->exit_link = bpf_program__attach(b->skel->progs.on_exit);
	if (!b->exit_link)
		fprintf(stderr, "pyperf-pprof: warning: cannot watch process exits (%s); exited targets are found by scanning /proc every %ld ms\n",
			strerror(errno), scan_ms);
	if (!cfg->all && !cfg->subprocesses)
		return 0;
	learn_root(b);
	b->exec_link = bpf_program__attach(b->skel->progs.on_exec);
	b->fork_link = bpf_program__attach(b->skel->progs.on_fork);
	mount_tracefs(cfg);
	b->mmap_link = bpf_program__attach(b->skel->progs.on_mmap);
	if (!b->exec_link || !b->fork_link || !b->mmap_link)
		fprintf(stderr, "pyperf-pprof: warning: cannot watch exec, fork and mmap (%s); new processes are found by scanning /proc every %ld ms\n",
			strerror(errno), scan_ms);
	return 0;
}

void bpf_attach_unwind_fds(const struct bpf_attach *a, int fds[4])
{
	fds[0] = bpf_map__fd(a->skel->maps.unwind_rows);
	fds[1] = bpf_map__fd(a->skel->maps.unwind_objs);
	fds[2] = bpf_map__fd(a->skel->maps.unwind_procs);
	fds[3] = bpf_map__fd(a->skel->maps.unwind_pages);
}

int bpf_attach_events_fd(const struct bpf_attach *a)
{
	return bpf_map__fd(a->skel->maps.events);
}

uint64_t bpf_attach_own_start_ns(const struct bpf_attach *a)
{
	return a->skel && a->skel->bss ? a->skel->bss->our_start_ns : 0;
}

int bpf_attach_proc_events_fd(const struct bpf_attach *a)
{
	return a->exec_link || a->exit_link ? bpf_map__fd(a->skel->maps.proc_events) : -1;
}

int bpf_attach_proc_events_complete(const struct bpf_attach *a, const struct config *cfg)
{
	if (!a->exit_link)
		return 0;
	return (!cfg->all && !cfg->subprocesses) || (a->exec_link && a->fork_link && a->mmap_link);
}

uint64_t bpf_attach_proc_events_lost(const struct bpf_attach *a)
{
	return a->skel && a->skel->bss ? a->skel->bss->proc_events_lost : 0;
}

void bpf_attach_read_stats(const struct bpf_attach *a, uint64_t stats[STAT__COUNT])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;

	if (!a->skel || ncpu <= 0)
		return;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	for (__u32 k = 0; vals && k < STAT__COUNT; k++) {
		if (bpf_map__lookup_elem(a->skel->maps.stats, &k, sizeof(k), vals,
					 sizeof(*vals) * (size_t)ncpu, 0))
			continue;
		stats[k] = 0;
		for (int c = 0; c < ncpu; c++)
			stats[k] += vals[c];
	}
	free(vals);
}

void bpf_attach_stop_at(struct bpf_attach *a, uint64_t mono_ns)
{
	if (a->skel && a->skel->bss)
		a->skel->bss->stop_at_ns = mono_ns;
}

void bpf_attach_stop(struct bpf_attach *a)
{
	for (int i = 0; i < a->nevents; i++) {
		bpf_link__destroy(a->links[i]);
		close(a->event_fds[i]);
	}
	a->nevents = 0;
	bpf_link__destroy(a->exec_link);
	bpf_link__destroy(a->fork_link);
	bpf_link__destroy(a->exit_link);
	bpf_link__destroy(a->mmap_link);
	bpf_link__destroy(a->switch_link);
	a->exec_link = a->fork_link = a->exit_link = a->mmap_link = a->switch_link = NULL;
}

#define CHECKS_BYTES (PY_CHECK_SLOTS * sizeof(struct py_check))

int bpf_attach_checks(struct bpf_attach *a, struct py_check_req **req, struct py_check **slots)
{
	void *m;

	if (!a->skel || !a->skel->bss)
		return -1;
	if (!a->checks) {
		m = mmap(NULL, CHECKS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
			 bpf_map__fd(a->skel->maps.code_checks), 0);
		if (m == MAP_FAILED)
			return -1;
		a->checks = m;
	}
	*req = &a->skel->bss->check_req;
	*slots = a->checks;
	return 0;
}

void bpf_attach_free(struct bpf_attach *a)
{
	bpf_attach_stop(a);
	if (a->checks)
		munmap(a->checks, CHECKS_BYTES);
	a->checks = NULL;
	pyperf_bpf__destroy(a->skel);
	free(a->links);
	free(a->event_fds);
	a->skel = NULL;
	a->links = NULL;
	a->event_fds = NULL;
}
