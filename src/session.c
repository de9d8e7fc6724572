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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "collapsed.h"
#include "pprof_write.h"
#include "preflight.h"
#include "proc.h"
#include "profile.h"
#include "pysym.h"
#include "pyversion.h"
#include "sample.h"
#include "pyperf.skel.h"

#define SYMCACHE_ENTRIES	16384
#define POLL_MS			100

struct session {
	const struct config *cfg;
	struct py_target targets[CLI_MAX_PIDS];
	int ntargets;
	struct pyperf_bpf *skel;
	struct bpf_link **links;
	int *event_fds;
	int nevents;
	struct ring_buffer *rb;
	struct sample_sink sink;
	int hw_cycles;			/* sampling hardware cycles, not time */
	uint64_t bpf_stats[STAT__COUNT];
	struct timespec t0;
	int64_t time_nanos;
	int status_line;		/* live status on a terminal */
	int64_t last_status;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
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

static int find_targets(struct session *s)
{
	char err[512];

	for (int i = 0; i < s->cfg->npids; i++) {
		struct py_target *t = &s->targets[s->ntargets];

		if (pyversion_detect(s->cfg->pids[i], t, err, sizeof(err))) {
			fprintf(stderr, "pyperf-pprof: %s\n", err);
			continue;
		}
		say(s, "pyperf-pprof: pid %d (%s): Python %u.%u.%u in %s\n", t->pid, t->comm,
		    t->major, t->minor, t->micro, t->module);
		s->ntargets++;
	}
	return s->ntargets ? 0 : -1;
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
	bpf_map__set_max_entries(s->skel->maps.scratch, (__u32)libbpf_num_possible_cpus());
	s->skel->rodata->stack_bytes = s->cfg->stack_bytes;
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
	for (int i = 0; i < s->ntargets; i++) {
		__u32 key = (__u32)s->targets[i].pid;

		if (bpf_map__update_elem(s->skel->maps.procs, &key, sizeof(key),
					 &s->targets[i].bpf, sizeof(s->targets[i].bpf), BPF_ANY)) {
			fprintf(stderr, "pyperf-pprof: cannot register pid %d with the BPF program: %s\n",
				(int)key, strerror(errno));
			return -1;
		}
	}
	return 0;
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
			fprintf(stderr, "pyperf-pprof: cannot open perf event %s on CPU %d: %s (needs root or CAP_PERFMON)\n",
				s->cfg->event, cpu, strerror(errno));
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
	return s->nevents ? 0 : -1;
}

static const struct py_target *target_of(const struct session *s, uint32_t pid)
{
	for (int i = 0; i < s->ntargets; i++)
		if ((uint32_t)s->targets[i].pid == pid)
			return &s->targets[i];
	return NULL;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct py_sample_hdr *h = data;
	const struct py_target *t;

	if (size < sizeof(*h))
		return 0;
	t = target_of(s, h->pid);
	if (!t)
		return 0;
	if (sample_add(&s->sink, t, data, size)) {
		fprintf(stderr, "pyperf-pprof: out of memory while adding a sample; stopping early\n");
		return -ENOMEM;	/* ends polling; what we have is written */
	}
	return 0;
}

static int any_target_alive(const struct session *s)
{
	for (int i = 0; i < s->ntargets; i++)
		if (proc_alive(s->targets[i].pid) &&
		    proc_start_time(s->targets[i].pid) == s->targets[i].start_time)
			return 1;
	return 0;
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
		s->sink.n.records, s->ntargets, s->sink.n.threads, s->bpf_stats[STAT_LOST],
		s->sink.n.bad_frames + s->sink.n.read_errors + s->sink.n.malformed,
		final ? "\n" : "");
}

static int poll_loop(struct session *s)
{
	int64_t limit = (int64_t)s->cfg->duration_ms * 1000000LL;

	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_record, s, NULL);
	if (!s->rb) {
		fprintf(stderr, "pyperf-pprof: cannot create the ring buffer reader: %s\n", strerror(errno));
		return -1;
	}
	while (!stop_requested && (!limit || elapsed_ns(s) < limit)) {
		int r = ring_buffer__poll(s->rb, POLL_MS);

		if (r < 0 && r != -EINTR)
			return r == -ENOMEM ? 0 : -1;
		show_status(s, 0);
		if (!any_target_alive(s)) {
			say(s, "pyperf-pprof: target exited; writing what was collected\n");
			break;
		}
	}
	return 0;
}

static void stop_sampling(struct session *s)
{
	for (int i = 0; i < s->nevents; i++) {
		bpf_link__destroy(s->links[i]);
		close(s->event_fds[i]);
	}
	s->nevents = 0;
	/* Records already in the ring buffer are kept. */
	if (s->rb)
		ring_buffer__consume(s->rb);
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

static void add_comments(struct session *s)
{
	const struct sample_counts *n = &s->sink.n;
	char buf[512];

	snprintf(buf, sizeof(buf), "command: %s", s->cfg->cmdline ? s->cfg->cmdline : "");
	profile_add_comment(s->sink.prof, buf);
	snprintf(buf, sizeof(buf), "event: %s, %s %" PRIu64, s->hw_cycles ? "cycles" : s->cfg->event,
		 s->cfg->frequency ? "frequency Hz" : "period", s->cfg->frequency ?
		 s->cfg->frequency : s->cfg->sample_period);
	profile_add_comment(s->sink.prof, buf);
	snprintf(buf, sizeof(buf),
		 "counters: samples=%" PRIu64 " lost=%" PRIu64 " truncated=%" PRIu64
		 " no_python=%" PRIu64 " read_errors=%" PRIu64 " bad_frames=%" PRIu64
		 " max_depth=%" PRIu64 " native_stacks=%" PRIu64 " native_errors=%" PRIu64
		 " stack_errors=%" PRIu64 " merge_errors=%" PRIu64,
		 n->records, s->bpf_stats[STAT_LOST], n->truncated, n->no_python,
		 n->read_errors, n->bad_frames, n->max_depth, n->native_stacks,
		 n->native_errors, n->stack_errors, n->merge_errors);
	profile_add_comment(s->sink.prof, buf);
}

static int setup_profile(struct session *s)
{
	struct profile *p = profile_new();
	uint64_t period = s->cfg->frequency ? 1000000000ULL / s->cfg->frequency
					    : s->cfg->sample_period;

	if (!p)
		return -1;
	s->sink.prof = p;
	profile_add_sample_type(p, "samples", "count");
	if (s->hw_cycles) {
		profile_add_sample_type(p, "cycles", "count");
		profile_set_period(p, "cycles", "count", (int64_t)s->cfg->sample_period);
	} else {
		profile_add_sample_type(p, "cpu", "nanoseconds");
		profile_set_period(p, "cpu", "nanoseconds", (int64_t)period);
	}
	s->sink.syms = pysym_cache_new(SYMCACHE_ENTRIES);
	if (!s->sink.syms)
		return -1;
	if (!s->cfg->stack_bytes)
		return 0;
	s->sink.unw = unwind_ctx_new(NULL);
	s->sink.nsym = nsym_ctx_new(NULL);
	return s->sink.unw && s->sink.nsym ? 0 : -1;
}

static void print_native_stats(const struct session *s)
{
	const struct unwind_stats *u = unwind_get_stats(s->sink.unw);
	const struct nsym_stats *y = nsym_get_stats(s->sink.nsym);

	fprintf(stderr, "pyperf-pprof: unwind: stacks=%" PRIu64 " frames=%" PRIu64 " (dwarf %" PRIu64
		", fp %" PRIu64 ") ends: outermost=%" PRIu64 " max=%" PRIu64 " no_info=%" PRIu64
		" bad_frame=%" PRIu64 " read=%" PRIu64 "\n", u->stacks, u->frames, u->frames_dwarf,
		u->frames_fp, u->end_outermost, u->end_max, u->end_no_info, u->end_bad_frame,
		u->end_read);
	fprintf(stderr, "pyperf-pprof: unwind cache: objects hits=%" PRIu64 " misses=%" PRIu64
		" evictions=%" PRIu64 " failures=%" PRIu64 "; processes hits=%" PRIu64 " misses=%"
		PRIu64 "; maps reads=%" PRIu64 "; words from stack=%" PRIu64 " file=%" PRIu64
		" target=%" PRIu64 " failed=%" PRIu64 "\n", u->obj_hits, u->obj_misses,
		u->obj_evictions, u->obj_failures, u->proc_hits, u->proc_misses, u->maps_reads,
		u->mem_stack, u->mem_file, u->mem_target, u->mem_failed);
	fprintf(stderr, "pyperf-pprof: symbol cache: lookups=%" PRIu64 " found=%" PRIu64
		" objects hits=%" PRIu64 " misses=%" PRIu64 " evictions=%" PRIu64 " failures=%" PRIu64
		" debug files=%" PRIu64 " symbols=%" PRIu64 " bytes=%" PRIu64 "\n", y->lookups,
		y->found, y->obj_hits, y->obj_misses, y->obj_evictions, y->obj_failures,
		y->debug_files, y->symbols, y->bytes);
}

static void print_summary(struct session *s)
{
	const struct sample_counts *n = &s->sink.n;
	struct pysym_stats ps;

	say(s, "pyperf-pprof: %" PRIu64 " samples (%zu distinct stacks) from %d process%s, %"
	    PRIu64 " thread%s; lost %" PRIu64 "\n", n->records,
	    profile_sample_count(s->sink.prof), s->ntargets, s->ntargets == 1 ? "" : "es",
	    n->threads, n->threads == 1 ? "" : "s", s->bpf_stats[STAT_LOST]);
	say(s, "pyperf-pprof: errors: %" PRIu64 " without Python stack, %" PRIu64
	    " truncated, %" PRIu64 " unreadable frames, %" PRIu64 " partial reads, %"
	    PRIu64 " malformed records\n", n->no_python, n->truncated, n->bad_frames,
	    n->read_errors, n->malformed);
	if (s->sink.unw)
		say(s, "pyperf-pprof: native: %" PRIu64 " stacks unwound, %" PRIu64
		    " stopped early, %" PRIu64 " stack copies failed, %" PRIu64 " merge mismatches\n",
		    n->native_stacks, n->native_errors, n->stack_errors, n->merge_errors);
	if (!s->cfg->verbose)
		return;
	pysym_get_stats(s->sink.syms, &ps);
	fprintf(stderr, "pyperf-pprof: bpf: events=%" PRIu64 " sent=%" PRIu64 " lost=%" PRIu64
		" no_tstate=%" PRIu64 " read_err=%" PRIu64 " truncated=%" PRIu64
		" vma_err=%" PRIu64 " stack_read_err=%" PRIu64 " stack_partial=%" PRIu64 "\n",
		s->bpf_stats[STAT_EVENTS], s->bpf_stats[STAT_SENT], s->bpf_stats[STAT_LOST],
		s->bpf_stats[STAT_NO_TSTATE], s->bpf_stats[STAT_READ_ERR],
		s->bpf_stats[STAT_TRUNCATED], s->bpf_stats[STAT_VMA_ERR],
		s->bpf_stats[STAT_STACK_READ_ERR], s->bpf_stats[STAT_STACK_PARTIAL]);
	fprintf(stderr, "pyperf-pprof: code-object cache: hits=%" PRIu64 " misses=%" PRIu64
		" evictions=%" PRIu64 " stale=%" PRIu64 " errors=%" PRIu64 "\n", ps.hits, ps.misses,
		ps.evictions, ps.stale, ps.errors);
	if (s->sink.unw)
		print_native_stats(s);
}

static int write_output(struct session *s, char *err, size_t errlen)
{
	char *text;
	size_t len;
	int r;

	if (s->cfg->format == FORMAT_PPROF)
		return pprof_write_file(s->sink.prof, s->cfg->out, err, errlen);
	if (collapsed_encode(s->sink.prof, &text, &len)) {
		snprintf(err, errlen, "cannot encode %s: out of memory", s->cfg->out);
		return -1;
	}
	r = pprof_install_buffer(s->cfg->out, (const uint8_t *)text, len, err, errlen);
	free(text);
	return r;
}

static int write_profile(struct session *s)
{
	char err[512];

	read_bpf_stats(s);
	show_status(s, 1);
	add_comments(s);
	profile_set_time(s->sink.prof, s->time_nanos, elapsed_ns(s));
	print_summary(s);
	if (write_output(s, err, sizeof(err))) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		return -1;
	}
	if (s->cfg->format == FORMAT_PPROF)
		say(s, "pyperf-pprof: wrote %s; open it with: go tool pprof -http=: %s  (or -top)\n",
		    s->cfg->out, s->cfg->out);
	else
		say(s, "pyperf-pprof: wrote %s; draw it with: flamegraph.pl %s > flame.svg\n",
		    s->cfg->out, s->cfg->out);
	return 0;
}

static void cleanup(struct session *s)
{
	stop_sampling(s);
	ring_buffer__free(s->rb);
	pyperf_bpf__destroy(s->skel);
	free(s->links);
	free(s->event_fds);
	pysym_cache_free(s->sink.syms);
	unwind_ctx_free(s->sink.unw);
	nsym_ctx_free(s->sink.nsym);
	profile_free(s->sink.prof);
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int session_run(const struct config *cfg)
{
	struct session *s = calloc(1, sizeof(*s));
	struct timespec real;
	char err[512];
	int rc = 1;

	if (!s)
		return 1;
	s->cfg = cfg;
	libbpf_print((enum libbpf_print_level)cfg->verbose, NULL, NULL);
	libbpf_set_print(libbpf_print);
	install_signals();
	if (preflight_check(err, sizeof(err))) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		goto out;
	}
	if (find_targets(s))
		goto out;
	if (pprof_check_writable(cfg->out, err, sizeof(err))) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		goto out;
	}
	if (setup_profile(s) || load_bpf(s) || attach_events(s))
		goto out;
	clock_gettime(CLOCK_REALTIME, &real);
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	s->time_nanos = (int64_t)real.tv_sec * 1000000000LL + real.tv_nsec;
	s->status_line = !cfg->quiet && isatty(STDERR_FILENO);
	say(s, "pyperf-pprof: sampling %s every %" PRIu64 "%s on %d CPUs%s\n", cfg->event,
	    cfg->frequency ? 1000000000ULL / cfg->frequency : cfg->sample_period,
	    cfg->frequency ? " ns (frequency mode)" : " events", s->nevents,
	    cfg->duration_ms ? "" : " until Ctrl-C");
	if (poll_loop(s) == 0) {
		stop_sampling(s);
		rc = write_profile(s) ? 1 : 0;
	} else {
		stop_sampling(s);
		write_profile(s);	/* keep what was collected */
	}
out:
	cleanup(s);
	free(s);
	return rc;
}
