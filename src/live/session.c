/*
 * Session lifecycle: find the targets, check the output can be written,
 * load the BPF program, open one perf event per CPU, drain the ring buffer
 * into the profile until the duration ends, a signal arrives or the targets
 * exit, then write the profile. All mutable program state lives here.
 */
#define _GNU_SOURCE
#include "session.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "eventlog.h"
#include "ktables.h"
#include "pprof_write.h"
#include "output.h"
#include "pipeline.h"
#include "preflight.h"
#include "targets.h"
#include "proc.h"
#include "profile.h"
#include "pysym.h"
#include "pyversion.h"
#include "record.h"
#include "sample.h"
#include "pyperf.skel.h"

#define SYMCACHE_ENTRIES	16384
#define THREADCACHE_ENTRIES	8192
#define POLL_MS			25	/* records wait at most this long: a
					 * short-lived target may exit, and
					 * its memory go, soon after a sample */
#define PASS_NS			50000000LL	/* longest read of the ring
						 * buffers before the loop checks
						 * the clock, signals, targets */
#define PASS_CHECK_EVERY	64		/* records between clock reads */
#define SCAN_NS			500000000LL	/* /proc rescans and reaping */

struct session {
	const struct config *cfg;
	struct target_set ts;
	struct recorder *rec;		/* --record, else NULL */
	struct output out;
	pid_t child;			/* launched command, 0 if none */
	int child_status;		/* its exit code, once it exited */
	int child_exited;
	int64_t interval_t0;		/* start of the current interval (ns) */
	struct pyperf_bpf *skel;
	struct bpf_link **links;
	int *event_fds;
	int nevents;
	struct ring_buffer *rb;
	struct pipeline *pl;
	struct pipeline_log log;		/* --record: the pipeline's events */
	struct ksym_table *ksym;	/* --kernel; read before privileges go */
	int hw_cycles;			/* sampling hardware cycles, not time */
	struct bpf_link *exec_link, *fork_link, *switch_link;
	uint64_t bpf_stats[STAT__COUNT];
	struct timespec t0;
	int status_line;		/* live status on a terminal */
	int64_t last_status;
	int64_t pass_end;		/* this ring-buffer pass yields then */
	unsigned pass_records;
	struct ktables *kt;		/* --unwind kernel/both: the BPF tables */
	struct native_diff diff;	/* --unwind both */
};

static volatile sig_atomic_t stop_requested, write_requested;

/* What the pipeline counted and cached, for the status line and summary. */
#define SINK(s)	pipeline_sink((s)->pl)

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		write_requested = 1;
	else
		stop_requested = 1;
}

static uint64_t mono_ns(void);

/* --unwind kernel: a sample's walk met a mapping not loaded yet. */
static void on_native_miss(void *ctx, int pid)
{
	struct session *s = ctx;
	const struct py_target *t = s->kt ? targets_find(&s->ts, pid) : NULL;

	if (t)
		ktables_load_pid(s->kt, t->src, pid, mono_ns(), 0);
}

static void say(const struct session *s, const char *fmt, ...)
{
	va_list ap;

	if (s->cfg->quiet)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

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

/* A target came or went: keep the BPF map and the caches in step. */
static void on_target(void *ctx, const struct py_target *t, int event)
{
	struct session *s = ctx;
	__u32 key = (__u32)t->pid;

	if (event == 1) {
		if (s->pl)	/* else added when the pipeline starts */
			pipeline_target_add(s->pl, t);
		say(s, "pyperf-pprof: pid %d (%s): Python %u.%u.%u in %s\n", t->pid, t->comm,
		    t->major, t->minor, t->micro, t->module);
		if (s->skel && bpf_map__update_elem(s->skel->maps.procs, &key, sizeof(key), &t->bpf,
						    sizeof(t->bpf), BPF_ANY))
			fprintf(stderr, "pyperf-pprof: cannot register pid %d with the BPF program: %s\n",
				t->pid, strerror(errno));
		if (s->kt)
			ktables_load_pid(s->kt, t->src, t->pid, mono_ns(), 1);
		return;
	}
	if (event == 0) {
		if (s->cfg->verbose)
			fprintf(stderr, "pyperf-pprof: pid %d (%s) exited\n", t->pid, t->comm);
		if (s->skel)
			bpf_map__delete_elem(s->skel->maps.procs, &key, sizeof(key), 0);
		if (s->kt)
			ktables_forget_pid(s->kt, t->pid);
		return;
	}
	/* Forgotten: a new process may reuse the pid; drop what was cached. */
	if (s->pl)
		pipeline_target_forget(s->pl, t);
}

static int find_targets(struct session *s)
{
	targets_init(&s->ts, s->rec ? record_src(s->rec) : target_src_live(), s->cfg->all,
		     s->cfg->subprocesses, on_target, s);
	for (int i = 0; i < s->cfg->npids; i++)
		targets_add(&s->ts, s->cfg->pids[i], 0);
	if (s->cfg->npids && !s->ts.n)
		return -1;	/* every --pid was refused, each with its reason */
	if (s->cfg->all)
		targets_update(&s->ts, 0, 0);
	return 0;
}

/* --unwind kernel/both: the unwind tables of the targets found so far;
 * later ones are loaded as they are added, or on a sample's miss. */
static int load_tables(struct session *s)
{
	if (!s->cfg->stack_bytes || s->cfg->unwind_mode == PY_UNWIND_USER)
		return 0;
	s->kt = ktables_new(bpf_map__fd(s->skel->maps.unwind_rows),
			    bpf_map__fd(s->skel->maps.unwind_objs),
			    bpf_map__fd(s->skel->maps.unwind_procs),
			    bpf_map__fd(s->skel->maps.unwind_pages), PY_UNWIND_MAX_ROWS);
	if (!s->kt) {
		fprintf(stderr, "pyperf-pprof: out of memory for the unwind tables\n");
		return -1;
	}
	for (size_t i = 0; i < s->ts.n; i++)
		ktables_load_pid(s->kt, s->ts.v[i]->src, s->ts.v[i]->pid, mono_ns(), 1);
	return 0;
}

static int load_bpf(struct session *s)
{
	struct stat ns;
	int err;

	s->skel = pyperf_bpf__open();
	if (!s->skel) {
		fprintf(stderr, "pyperf-pprof: cannot open the BPF program: %s\n", strerror(errno));
		return -1;
	}
	bpf_map__set_max_entries(s->skel->maps.events, s->cfg->ringbuf_bytes);
	bpf_map__set_max_entries(s->skel->maps.procs, TARGETS_MAX);
	if (!s->cfg->wall)
		bpf_program__set_autoload(s->skel->progs.on_switch, false);
	if (!s->cfg->all && !s->cfg->subprocesses) {
		/* Fixed targets: no need to watch processes come and go. */
		bpf_program__set_autoload(s->skel->progs.on_exec, false);
		bpf_program__set_autoload(s->skel->progs.on_fork, false);
	}
	bpf_map__set_max_entries(s->skel->maps.scratch, (__u32)libbpf_num_possible_cpus());
	s->skel->rodata->stack_bytes = s->cfg->stack_bytes;
	s->skel->rodata->unwind_mode = s->cfg->stack_bytes ? (__u32)s->cfg->unwind_mode : 0;
	if (!s->cfg->stack_bytes || s->cfg->unwind_mode == PY_UNWIND_USER) {
		/* No tables: do not allocate them. */
		bpf_map__set_max_entries(s->skel->maps.unwind_rows, 1);
		bpf_map__set_max_entries(s->skel->maps.unwind_objs, 1);
		bpf_map__set_max_entries(s->skel->maps.unwind_pages, 1);
		bpf_map__set_max_entries(s->skel->maps.unwind_procs, 1);
	} else {
		bpf_map__set_max_entries(s->skel->maps.unwind_procs, TARGETS_MAX);
	}
	s->skel->rodata->gil_only = s->cfg->gil_only;
	s->skel->rodata->kernel_stacks = s->cfg->kernel;
	if (stat("/proc/self/ns/pid", &ns)) {
		fprintf(stderr, "pyperf-pprof: cannot stat /proc/self/ns/pid: %s (is /proc mounted?)\n",
			strerror(errno));
		return -1;
	}
	s->skel->rodata->pidns_ino = (__u32)ns.st_ino;
	err = pyperf_bpf__load(s->skel);
	if (err) {
		fprintf(stderr, "pyperf-pprof: cannot load the BPF program: %s (run as root, or grant CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE; the kernel needs BTF and bpf_loop, Linux 5.17+)\n",
			strerror(-err));
		return -1;
	}
	for (size_t i = 0; i < s->ts.n; i++) {
		__u32 key = (__u32)s->ts.v[i]->pid;

		if (bpf_map__update_elem(s->skel->maps.procs, &key, sizeof(key),
					 &s->ts.v[i]->bpf, sizeof(s->ts.v[i]->bpf), BPF_ANY)) {
			fprintf(stderr, "pyperf-pprof: cannot register pid %d with the BPF program: %s\n",
				(int)key, strerror(errno));
			return -1;
		}
	}
	return load_tables(s);
}

static int event_attr(struct session *s, struct perf_event_attr *a)
{
	const char *ev = s->cfg->event;

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
	if (s->cfg->frequency) {
		a->freq = 1;
		a->sample_freq = s->cfg->frequency;
	} else {
		a->sample_period = s->cfg->sample_period;
	}
	return 0;
}

static int open_event(struct perf_event_attr *a, int cpu)
{
	return (int)syscall(__NR_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Opens cycles on the first CPU to learn whether the hardware has it. */
static int resolve_event(struct session *s, struct perf_event_attr *a)
{
	int fd;

	if (a->type != PERF_TYPE_HARDWARE)
		return 0;
	fd = open_event(a, 0);
	if (fd >= 0) {
		close(fd);
		s->hw_cycles = 1;
		return 0;
	}
	if (errno != ENOENT && errno != EOPNOTSUPP && errno != ENODEV)
		return 0;	/* reported by the real open below */
	fprintf(stderr, "pyperf-pprof: warning: hardware event 'cycles' is not supported here (a VM?); sampling cpu-clock instead\n");
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	return 0;
}

/* The kernel refuses a frequency above kernel.perf_event_max_sample_rate
 * with EINVAL, which looks like a privilege problem unless it is named. */
static void explain_open_error(const struct session *s, int err, int cpu)
{
	unsigned long long max = 0;
	FILE *f;

	if (err == EINVAL && s->cfg->frequency &&
	    (f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r"))) {
		if (fscanf(f, "%llu", &max) != 1)
			max = 0;
		fclose(f);
	}
	if (max && s->cfg->frequency > max) {
		fprintf(stderr, "pyperf-pprof: -F %llu is above the kernel's limit of %llu samples per second (kernel.perf_event_max_sample_rate): use -F %llu or less, or raise the limit with sysctl -w kernel.perf_event_max_sample_rate=%llu\n",
			(unsigned long long)s->cfg->frequency, max, max,
			(unsigned long long)s->cfg->frequency);
		return;
	}
	fprintf(stderr, "pyperf-pprof: cannot open perf event %s on CPU %d: %s%s\n",
		s->cfg->event, cpu, strerror(err),
		err == EACCES || err == EPERM ? " (needs root or CAP_PERFMON)" : "");
}

static int attach_events(struct session *s)
{
	struct perf_event_attr a;
	int ncpu = libbpf_num_possible_cpus();

	if (event_attr(s, &a) || resolve_event(s, &a))
		return -1;
	if (ncpu <= 0) {
		fprintf(stderr, "pyperf-pprof: cannot count CPUs: %s\n", strerror(-ncpu));
		return -1;
	}
	s->links = calloc((size_t)ncpu, sizeof(*s->links));
	s->event_fds = calloc((size_t)ncpu, sizeof(*s->event_fds));
	if (!s->links || !s->event_fds)
		return -1;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = open_event(&a, cpu);

		if (fd < 0 && errno == ENODEV)
			continue;	/* offline CPU */
		if (fd < 0) {
			explain_open_error(s, errno, cpu);
			return -1;
		}
		s->event_fds[s->nevents] = fd;
		s->links[s->nevents] = bpf_program__attach_perf_event(s->skel->progs.on_sample, fd);
		if (!s->links[s->nevents]) {
			fprintf(stderr, "pyperf-pprof: cannot attach to perf event on CPU %d: %s\n",
				cpu, strerror(errno));
			close(fd);
			return -1;
		}
		s->nevents++;
	}
	if (!s->nevents)
		return -1;
	if (s->cfg->wall) {
		s->switch_link = bpf_program__attach(s->skel->progs.on_switch);
		if (!s->switch_link) {
			fprintf(stderr, "pyperf-pprof: cannot attach to sched_switch for --mode wall: %s\n",
				strerror(errno));
			return -1;
		}
	}
	if (!s->cfg->all && !s->cfg->subprocesses)
		return 0;
	s->exec_link = bpf_program__attach(s->skel->progs.on_exec);
	s->fork_link = bpf_program__attach(s->skel->progs.on_fork);
	if (!s->exec_link || !s->fork_link)
		fprintf(stderr, "pyperf-pprof: warning: cannot watch exec and fork (%s); new processes are found by scanning /proc every %lld ms\n",
			strerror(errno), SCAN_NS / 1000000);
	return 0;
}

static int pass_over(struct session *s);

static int on_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct py_sample_hdr *h = data;
	const struct py_target *t;
	int r;

	if (size < sizeof(*h))
		return 0;
	t = targets_find(&s->ts, (pid_t)h->pid);
	if (!t)
		return 0;
	r = pipeline_sample(s->pl, t, data, size);
	if (r) {
		fprintf(stderr, "pyperf-pprof: out of memory while adding a sample; stopping early\n");
		return -ENOMEM;	/* ends polling; what we have is written */
	}
	return pass_over(s);
}

static int64_t elapsed_ns(const struct session *s)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - s->t0.tv_sec) * 1000000000LL + (now.tv_nsec - s->t0.tv_nsec);
}

static void read_bpf_stats(struct session *s);

/* One-line live status, redrawn in place at most twice a second. */
static void show_status(struct session *s, int final)
{
	int64_t now = elapsed_ns(s);

	if (!s->status_line || (!final && now - s->last_status < 500000000LL))
		return;
	s->last_status = now;
	read_bpf_stats(s);
	fprintf(stderr, "\r\033[K%.1fs", now / 1e9);
	if (s->cfg->duration_ms)
		fprintf(stderr, "/%.1fs", s->cfg->duration_ms / 1e3);
	fprintf(stderr, "  samples %" PRIu64 "  processes %d  threads %" PRIu64
		"  lost %" PRIu64 "  errors %" PRIu64 "%s",
		SINK(s)->n.records, (int)s->ts.n, SINK(s)->n.threads, s->bpf_stats[STAT_LOST],
		SINK(s)->n.bad_frames + SINK(s)->n.read_errors + SINK(s)->n.malformed,
		final ? "\n" : "");
}

static int write_profile(struct session *s, int final, int rotate);

/* libbpf reads a ring buffer until it is empty: under a steady flood
 * (samples, or fork events of a fork bomb) that never ends, and intervals,
 * SIGTERM and target scans would starve. A callback's negative return
 * stops the pass after its record is consumed; -EAGAIN says "time is up". */
static int pass_over(struct session *s)
{
	if (++s->pass_records % PASS_CHECK_EVERY)
		return 0;
	return elapsed_ns(s) > s->pass_end || stop_requested ? -EAGAIN : 0;
}

static int on_proc_event(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct py_proc_event *e = data;

	if (size < sizeof(*e))
		return 0;
	if (e->kind == PROC_EXEC)
		targets_on_exec(&s->ts, (pid_t)e->pid, elapsed_ns(s));
	else if (e->kind == PROC_FORK)
		targets_on_fork(&s->ts, (pid_t)e->pid, (pid_t)e->ppid);
	return pass_over(s);
}

/* Has the launched command exited? Records its exit code. */
static void reap_child(struct session *s)
{
	int status;

	if (!s->child || s->child_exited || waitpid(s->child, &status, WNOHANG) != s->child)
		return;
	s->child_exited = 1;
	s->child_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Why sampling should end now, or NULL to go on. */
static const char *stop_reason(struct session *s, int64_t now)
{
	if (stop_requested)
		return "";
	if (s->cfg->duration_ms && now >= (int64_t)s->cfg->duration_ms * 1000000LL)
		return "";
	if (s->child)
		return s->child_exited ? "command exited" : NULL;
	if (!s->cfg->all && !s->ts.n && !s->ts.npending)
		return s->cfg->npids > 1 ? "targets exited" : "target exited";
	return NULL;
}

static int poll_loop(struct session *s)
{
	const char *why;

	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_record, s, NULL);
	if (!s->rb) {
		fprintf(stderr, "pyperf-pprof: cannot create the ring buffer reader: %s\n", strerror(errno));
		return -1;
	}
	if (s->exec_link &&
	    ring_buffer__add(s->rb, bpf_map__fd(s->skel->maps.proc_events), on_proc_event, s))
		fprintf(stderr, "pyperf-pprof: warning: cannot read exec events; relying on /proc scans\n");
	for (;;) {
		int64_t now = elapsed_ns(s);
		int r;

		reap_child(s);
		targets_update(&s->ts, now, SCAN_NS);
		if ((why = stop_reason(s, now)))
			break;
		if (write_requested ||
		    (s->cfg->interval_s && now - s->interval_t0 >= (int64_t)s->cfg->interval_s * 1000000000LL)) {
			write_requested = 0;
			write_profile(s, 0, s->cfg->interval_s != 0);
		}
		s->pass_end = now + PASS_NS;
		r = ring_buffer__poll(s->rb, POLL_MS);
		/* Records are sent without a wakeup until a batch piles up
		 * (see pyperf.bpf.c): read what came in since, every time. */
		if (r >= 0 || r == -EINTR)
			r = ring_buffer__consume(s->rb);
		if (r < 0 && r != -EINTR && r != -EAGAIN)
			return r == -ENOMEM ? 0 : -1;
		show_status(s, 0);
	}
	if (why[0])
		say(s, "pyperf-pprof: %s; writing what was collected\n", why);
	return 0;
}

static void stop_sampling(struct session *s)
{
	for (int i = 0; i < s->nevents; i++) {
		bpf_link__destroy(s->links[i]);
		close(s->event_fds[i]);
	}
	s->nevents = 0;
	bpf_link__destroy(s->exec_link);
	bpf_link__destroy(s->fork_link);
	bpf_link__destroy(s->switch_link);
	s->exec_link = s->fork_link = s->switch_link = NULL;
	/* Records already in the ring buffer are kept. Nothing is added any
	 * more, so the drain ends, in passes that may yield (pass_over). */
	if (s->rb)
		while (ring_buffer__consume(s->rb) == -EAGAIN)
			;
}

static void read_bpf_stats(struct session *s)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals = calloc((size_t)(ncpu > 0 ? ncpu : 1), sizeof(*vals));

	for (__u32 k = 0; vals && ncpu > 0 && k < STAT__COUNT; k++) {
		if (bpf_map__lookup_elem(s->skel->maps.stats, &k, sizeof(k), vals,
					 sizeof(*vals) * (size_t)ncpu, 0))
			continue;
		s->bpf_stats[k] = 0;
		for (int c = 0; c < ncpu; c++)
			s->bpf_stats[k] += vals[c];
	}
	free(vals);
}

static void print_kernel_unwind_stats(const struct session *s)
{
	const struct ktables_stats *k = ktables_get_stats(s->kt);
	const uint64_t *b = s->bpf_stats;

	fprintf(stderr, "pyperf-pprof: bpf unwind: walks=%" PRIu64 " frames=%" PRIu64 " (fp %" PRIu64
		", plt %" PRIu64 ", signal %" PRIu64 ") ends: max=%" PRIu64 " no_proc=%" PRIu64
		" no_map=%" PRIu64 " read=%" PRIu64 " bad=%" PRIu64 "\n", b[STAT_NATIVE_WALKS],
		b[STAT_NATIVE_FRAMES], b[STAT_NATIVE_FP], b[STAT_NATIVE_PLT], b[STAT_NATIVE_SIGNAL],
		b[STAT_NATIVE_END_MAX], b[STAT_NATIVE_END_NO_PROC], b[STAT_NATIVE_END_NO_MAP],
		b[STAT_NATIVE_END_READ], b[STAT_NATIVE_END_BAD]);
	fprintf(stderr, "pyperf-pprof: unwind tables: objects=%" PRIu64 " (no cfi %" PRIu64
		", failed %" PRIu64 ") rows=%" PRIu64 " (%" PRIu64 " KiB) loads=%" PRIu64
		" throttled=%" PRIu64 " resets=%" PRIu64 " maps_dropped=%" PRIu64 " build=%.1f ms\n",
		k->objects, k->objects_no_cfi, k->objects_failed, k->rows,
		k->rows * sizeof(struct py_unwind_row) / 1024, k->pid_loads, k->pid_throttled,
		k->resets, k->maps_dropped, (double)k->build_ns / 1e6);
}

/* --unwind both: how often the BPF walk and libunwind agreed. */
static void print_diff(const struct session *s)
{
	const struct native_diff *d = &s->diff;

	say(s, "pyperf-pprof: unwind diff: %" PRIu64 " of %" PRIu64 " stacks agree frame for frame"
	    " (%.2f%%); frames kernel %" PRIu64 " user %" PRIu64 "; %" PRIu64 " hit a mapping not loaded yet\n",
	    d->agree, d->stacks, d->stacks ? 100.0 * (double)d->agree / (double)d->stacks : 0.0,
	    d->frames_kernel, d->frames_user, d->not_loaded);
	for (size_t i = 0; i < d->nobj; i++)
		say(s, "pyperf-pprof: unwind diff: %" PRIu64 " in %s (e.g. kernel %#" PRIx64
		    " user %#" PRIx64 ")\n", d->obj[i].n, d->obj[i].path, d->obj[i].example[0],
		    d->obj[i].example[1]);
	if (d->other)
		say(s, "pyperf-pprof: unwind diff: %" PRIu64 " in other objects\n", d->other);
}

static void print_native_stats(const struct session *s)
{
	const struct unwind_stats *u = SINK(s)->unw ? unwind_get_stats(SINK(s)->unw) : NULL;
	const struct nsym_stats *y = nsym_get_stats(SINK(s)->nsym);
	char objs[512];

	if (s->kt)
		print_kernel_unwind_stats(s);
	if (!u)
		goto symbols;
	fprintf(stderr, "pyperf-pprof: unwind: stacks=%" PRIu64 " frames=%" PRIu64 " (dwarf %" PRIu64
		", fp %" PRIu64 ") ends: outermost=%" PRIu64 " max=%" PRIu64 " no_info=%" PRIu64
		" bad_frame=%" PRIu64 " read=%" PRIu64 "\n", u->stacks, u->frames, u->frames_dwarf,
		u->frames_fp, u->end_outermost, u->end_max, u->end_no_info, u->end_bad_frame,
		u->end_read);
	fprintf(stderr, "pyperf-pprof: unwind memory: words from stack=%" PRIu64 " file=%" PRIu64
		" target=%" PRIu64 " failed=%" PRIu64 "; .debug_frame tables=%" PRIu64 "\n",
		u->mem_stack, u->mem_file, u->mem_target, u->mem_failed, u->debug_frame_tables);
symbols:
	fprintf(stderr, "pyperf-pprof: symbols: lookups=%" PRIu64 " found=%" PRIu64
		" from debug files=%" PRIu64 " symbols=%" PRIu64 " bytes=%" PRIu64 "\n", y->lookups,
		y->found, y->debug_files, y->symbols, y->bytes);
	objcache_describe(SINK(s)->objs, objs, sizeof(objs));
	fprintf(stderr, "pyperf-pprof: %s\n", objs);
}

static void print_task_stats(const struct session *s)
{
	struct pyasyncio_stats a;

	pyasyncio_get_stats(SINK(s)->tasks, &a);
	fprintf(stderr, "pyperf-pprof: asyncio tasks: labelled=%" PRIu64 " hits=%" PRIu64
		" lookups=%" PRIu64 " mismatches=%" PRIu64 " evictions=%" PRIu64
		" refusals=%" PRIu64 "\n", a.labelled, a.hits, a.lookups, a.mismatches,
		a.evictions, a.refusals);
}

/* Objects whose native frames mostly stay unnamed: what to install. */
static void print_symbol_gaps(struct session *s)
{
	char line[1024];

	for (size_t i = 0; i < SINK(s)->gaps.n; i++)
		if (symgap_hint(&SINK(s)->gaps, i, 100, 10, line, sizeof(line)))
			say(s, "pyperf-pprof: %s\n", line);
}

static void print_summary(struct session *s)
{
	const struct sample_counts *n = &SINK(s)->n;
	struct pysym_stats ps;
	struct pythread_stats ts;

	say(s, "pyperf-pprof: %" PRIu64 " samples (%zu distinct stacks) from %d process%s, %"
	    PRIu64 " thread%s; lost %" PRIu64 "\n", n->records,
	    pipeline_stacks(s->pl), (int)s->ts.added, s->ts.added == 1 ? "" : "es",
	    n->threads, n->threads == 1 ? "" : "s", s->bpf_stats[STAT_LOST]);
	say(s, "pyperf-pprof: errors: %" PRIu64 " without Python stack, %" PRIu64
	    " truncated, %" PRIu64 " unreadable frames, %" PRIu64 " partial reads, %"
	    PRIu64 " malformed records\n", n->no_python, n->truncated, n->bad_frames,
	    n->read_errors, n->malformed);
	if (SINK(s)->diff)
		print_diff(s);
	if (SINK(s)->nsym)
		say(s, "pyperf-pprof: native: %" PRIu64 " stacks unwound, %" PRIu64
		    " stopped early, %" PRIu64 " stack copies failed, %" PRIu64 " merge mismatches, %"
		    PRIu64 " marked (mapping not loaded yet)\n", n->native_stacks, n->native_errors,
		    n->stack_errors, n->merge_errors, n->native_not_loaded);
	if (s->ksym)
		say(s, "pyperf-pprof: kernel: %" PRIu64 " samples with kernel frames (%zu kernel symbols)\n",
		    n->kernel_stacks, ksym_count(s->ksym));
	print_symbol_gaps(s);
	if (!s->cfg->verbose)
		return;
	pysym_get_stats(SINK(s)->syms, &ps);
	fprintf(stderr, "pyperf-pprof: records: %" PRIu64 " bytes, %.0f bytes per record\n",
		n->record_bytes, n->records ? (double)n->record_bytes / (double)n->records : 0.0);
	fprintf(stderr, "pyperf-pprof: bpf: events=%" PRIu64 " sent=%" PRIu64 " lost=%" PRIu64
		" no_tstate=%" PRIu64 " read_err=%" PRIu64 " truncated=%" PRIu64
		" vma_err=%" PRIu64 " stack_read_err=%" PRIu64 " stack_partial=%" PRIu64 "\n",
		s->bpf_stats[STAT_EVENTS], s->bpf_stats[STAT_SENT], s->bpf_stats[STAT_LOST],
		s->bpf_stats[STAT_NO_TSTATE], s->bpf_stats[STAT_READ_ERR],
		s->bpf_stats[STAT_TRUNCATED], s->bpf_stats[STAT_VMA_ERR],
		s->bpf_stats[STAT_STACK_READ_ERR], s->bpf_stats[STAT_STACK_PARTIAL]);
	fprintf(stderr, "pyperf-pprof: bpf time: %.2f us per target sample (%.2f us of it in the native walk)\n",
		s->bpf_stats[STAT_EVENTS] ? (double)s->bpf_stats[STAT_TARGET_NS] / 1e3 /
		(double)s->bpf_stats[STAT_EVENTS] : 0.0,
		s->bpf_stats[STAT_EVENTS] ? (double)s->bpf_stats[STAT_NATIVE_NS] / 1e3 /
		(double)s->bpf_stats[STAT_EVENTS] : 0.0);
	fprintf(stderr, "pyperf-pprof: code-object cache: hits=%" PRIu64 " misses=%" PRIu64
		" evictions=%" PRIu64 " stale=%" PRIu64 " errors=%" PRIu64 "\n", ps.hits, ps.misses,
		ps.evictions, ps.stale, ps.errors);
	pythread_get_stats(SINK(s)->threads, &ts);
	fprintf(stderr, "pyperf-pprof: thread-name cache: hits=%" PRIu64 " lookups=%" PRIu64
		" failures=%" PRIu64 " threading._active searches=%" PRIu64 " evictions=%" PRIu64
		"\n", ts.hits, ts.lookups, ts.failures, ts.resolves, ts.evictions);
	print_task_stats(s);
	if (SINK(s)->nsym)
		print_native_stats(s);
}

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static const struct py_target *find_target(void *ctx, int pid)
{
	return targets_find(&((struct session *)ctx)->ts, pid);
}

static int64_t wall_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* --kernel: kernel symbols, read while /proc/kallsyms still shows them. */
static int load_ksym(struct session *s)
{
	char err[512];

	if (!s->cfg->kernel)
		return 0;
	s->ksym = ksym_load("/proc/kallsyms", err, sizeof(err));
	if (s->ksym)
		return 0;
	fprintf(stderr, "pyperf-pprof: %s\n", err);
	return -1;
}

static int session_write(void *ctx, const struct profile *p, int64_t wall_ns, char *path,
			 size_t pathlen, char *err, size_t errlen)
{
	return output_write(&((struct session *)ctx)->out, p, wall_ns, path, pathlen, err, errlen);
}

/* The pipeline, once the event actually sampled is known; the targets
 * found so far enter it first. */
static int start_pipeline(struct session *s)
{
	const struct config *cfg = s->cfg;
	struct pipeline_conf c = {
		.event = cfg->event, .sample_period = cfg->sample_period,
		.frequency = cfg->frequency, .stack_bytes = cfg->stack_bytes,
		.kernel_unwind_only = cfg->unwind_mode == PY_UNWIND_KERNEL,
		.all_native = cfg->all_native, .hw_cycles = s->hw_cycles, .wall = cfg->wall,
		.gil_only = cfg->gil_only, .cmdline = cfg->cmdline,
	};
	struct pipeline_io io = {
		.write = session_write, .find = find_target, .ctx = s, .ksym = s->ksym,
		.native_miss = on_native_miss, .native_miss_ctx = s,
		.diff = cfg->unwind_mode == PY_UNWIND_BOTH ? &s->diff : NULL,
	};

	if (s->rec) {
		record_event_log(s->rec, &s->log);
		io.log = &s->log;
	}
	s->pl = pipeline_new(&c, &io);
	if (!s->pl) {
		fprintf(stderr, "pyperf-pprof: out of memory setting up the profile\n");
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	pipeline_start(s->pl, wall_ns(), mono_ns());
	for (size_t i = 0; i < s->ts.n; i++)
		pipeline_target_add(s->pl, s->ts.v[i]);
	return 0;
}

/* Writes the current profile: an interval boundary of the pipeline. With
 * rotate, a new interval starts (the caches are kept). */
static int write_profile(struct session *s, int final, int rotate)
{
	struct pipeline_tick k = { .final = final, .rotate = rotate, .nstats = STAT__COUNT };
	char err[512], path[4200];
	int64_t now = elapsed_ns(s);
	int r;

	read_bpf_stats(s);
	if (final)
		show_status(s, 1);
	memcpy(k.stats, s->bpf_stats, sizeof(s->bpf_stats));
	k.wall_ns = wall_ns();
	k.mono_ns = mono_ns();
	r = pipeline_write(s->pl, &k, path, sizeof(path), err, sizeof(err));
	if (final)
		print_summary(s);
	if (r) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		return -1;
	}
	if (final && s->cfg->format == FORMAT_PPROF)
		say(s, "pyperf-pprof: wrote %s; open it with: go tool pprof -http=: %s  (or -top)\n",
		    path, path);
	else if (final)
		say(s, "pyperf-pprof: wrote %s; draw it with: flamegraph.pl %s > flame.svg\n",
		    path, path);
	else if (s->cfg->verbose)
		fprintf(stderr, "pyperf-pprof: wrote %s\n", path);
	if (rotate)
		s->interval_t0 = now;
	return 0;
}

static void cleanup(struct session *s)
{
	stop_sampling(s);
	ring_buffer__free(s->rb);
	pyperf_bpf__destroy(s->skel);
	free(s->links);
	free(s->event_fds);
	ksym_free(s->ksym);
	ktables_free(s->kt);
	pipeline_free(s->pl);
	targets_free(&s->ts);
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
}

/* Starts the command after "--". Sampling is already running, so the
 * command is profiled from its first moments once it runs Python. */
static int launch(struct session *s)
{
	char *const *argv = s->cfg->command;
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
	s->child = pid;
	s->ts.root = pid;
	/* A shell or wrapper may exec Python a while later. */
	targets_add_pending(&s->ts, pid, elapsed_ns(s), 30 * 1000000000LL);
	return 0;
}

static int start(struct session *s)
{
	char err[512];

	if (preflight_check(err, sizeof(err))) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		return -1;
	}
	/* --record: opened before the targets are found, so what finding
	 * them reads (3.13+: _Py_DebugOffsets) is recorded too. */
	if (s->cfg->record &&
	    !(s->rec = record_open(s->cfg->record, target_src_live(), err, sizeof(err)))) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		return -1;
	}
	if (find_targets(s))
		return -1;
	if (output_init(&s->out, s->cfg, err, sizeof(err))) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		return -1;
	}
	if (load_ksym(s) || load_bpf(s) || attach_events(s) || start_pipeline(s))
		return -1;
	s->status_line = !s->cfg->quiet && isatty(STDERR_FILENO);
	say(s, "pyperf-pprof: sampling %s every %" PRIu64 "%s on %d CPUs%s%s\n", s->cfg->event,
	    s->cfg->frequency ? 1000000000ULL / s->cfg->frequency : s->cfg->sample_period,
	    s->cfg->frequency ? " ns (frequency mode)" : " events", s->nevents,
	    s->cfg->all ? ", every Python process" : "",
	    s->cfg->duration_ms ? "" : s->cfg->command ? " until the command exits"
						: " until Ctrl-C");
	if (s->cfg->command && launch(s))
		return -1;
	/* Everything privileged is done: the child got its own capabilities
	 * at exec, and what remains is reading targets and writing files. */
	preflight_drop_capabilities(s->cfg->verbose);
	return 0;
}

int session_run(const struct config *cfg)
{
	struct session *s = calloc(1, sizeof(*s));
	char err[512];
	int rc = 1;

	if (!s)
		return 1;
	s->cfg = cfg;
	libbpf_print((enum libbpf_print_level)cfg->verbose, NULL, NULL);
	libbpf_set_print(libbpf_print);
	install_signals();
	if (start(s) == 0) {
		int polled = poll_loop(s);

		stop_sampling(s);
		/* Whatever happened, what was collected is written. */
		rc = write_profile(s, 1, 0) || polled ? 1 : 0;
		if (s->child) {
			if (!s->child_exited)
				fprintf(stderr, "pyperf-pprof: the command (pid %d) is still running\n",
					(int)s->child);
			else if (rc == 0)
				rc = s->child_status;
		}
	}
	cleanup(s);
	if (record_close(s->rec, err, sizeof(err))) {	/* --record: no-op otherwise */
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		rc = rc ? rc : 1;
	}
	free(s);
	return rc;
}
