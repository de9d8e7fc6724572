/*
 * bpfcapture: makes a capture (bwcap.h) of a thread blocked in a system
 * call while a live pyperf-pprof --mode wall --record samples its process.
 * A test tool, run by tests/bpfwalk/make-captures.sh as root; it stops
 * the thread for a moment (ptrace), which the profiler never does.
 *
 *   bpfcapture --profiler PID --recording REC --pid PID --tid TID
 *              --label TEXT -o CAPTURE [--live-record FILE]
 *
 * 1. The process's config and unwind tables: the profiler's own BPF maps
 *    (found through its file descriptors), read live.
 * 2. The registers: PTRACE_SEIZE + PTRACE_INTERRUPT + PTRACE_GETREGS, then
 *    detached; the thread goes back into its system call (restarted), its
 *    user state unchanged. sp and pc are checked against what
 *    /proc/PID/task/TID/syscall said before.
 * 3. The BPF walk (bpfwalk.c) run on that state against the live process
 *    through a recording memory source: every read is kept.
 * 4. The profiler is stopped (SIGINT) and its recording read: the last
 *    switch-out record of the thread before step 2 is what the program
 *    gave for this state (the thread has not run since it blocked).
 * 5. Only if the walk gave the same record: the capture is written (and
 *    with --live-record, that live record's bytes, for the names).
 */
#include <errno.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <bpf/bpf.h>

#include "bwcap.h"

struct maps {
	int fd[BW_NMAPS];
	int procs;
};

static const char *const map_names[BW_NMAPS] = {
	"unwind_procs", "unwind_objs", "unwind_pages", "unwind_rows",
};

static void die(const char *fmt, const char *a)
{
	fprintf(stderr, "bpfcapture: ");
	fprintf(stderr, fmt, a);
	fprintf(stderr, "\n");
	exit(1);
}

/* The id of the BPF map behind descriptor fdinfo file path, or 0. */
static __u32 fdinfo_map_id(const char *path)
{
	char line[256];
	__u32 id = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "map_id: %u", &id) == 1)
			break;
	fclose(f);
	return id;
}

/* The profiler's maps, by name, from its open descriptors. */
static void find_maps(pid_t prof, struct maps *m)
{
	char dir[64], path[320];
	struct dirent *d;
	DIR *dd;

	m->procs = -1;
	for (int i = 0; i < BW_NMAPS; i++)
		m->fd[i] = -1;
	snprintf(dir, sizeof(dir), "/proc/%d/fdinfo", prof);
	dd = opendir(dir);
	if (!dd)
		die("cannot read %s", dir);
	while ((d = readdir(dd))) {
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info), id;
		int fd;

		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		id = fdinfo_map_id(path);
		if (!id || (fd = bpf_map_get_fd_by_id(id)) < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
			close(fd);
			continue;
		}
		if (!strcmp(info.name, "procs") && m->procs < 0) {
			m->procs = fd;
			continue;
		}
		for (int i = 0; i < BW_NMAPS; i++)
			if (!strcmp(info.name, map_names[i]) && m->fd[i] < 0 &&
			    info.value_size == bpfwalk_value_size[i]) {
				m->fd[i] = fd;
				fd = -1;
				break;
			}
		if (fd >= 0)
			close(fd);
	}
	closedir(dd);
	if (m->procs < 0)
		die("no procs map among the descriptors of pyperf-pprof %s", "");
}

static int live_lookup(void *ctx, enum bpfwalk_map map, uint32_t key, void *v)
{
	const struct maps *m = ctx;

	return m->fd[map] >= 0 && !bpf_map_lookup_elem(m->fd[map], &key, v) ? 0 : -1;
}

static char *slurp(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* sp and pc of a thread in a system call (/proc/PID/task/TID/syscall). */
static void syscall_sp_pc(pid_t pid, pid_t tid, uint64_t *sp, uint64_t *pc)
{
	char path[96];
	char *s;
	unsigned long long a[8];
	long nr;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	s = slurp(path);
	if (!s || sscanf(s, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &nr, &a[0], &a[1],
			 &a[2], &a[3], &a[4], &a[5], &a[6], &a[7]) != 9 || nr < 0)
		die("thread %s is not blocked in a system call", path);
	*sp = a[6];
	*pc = a[7];
}

static void get_regs(pid_t tid, struct user_regs_struct *r)
{
	int st;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0) || ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		die("ptrace: %s", strerror(errno));
	if (waitpid(tid, &st, __WALL) != tid || ptrace(PTRACE_GETREGS, tid, 0, r))
		die("ptrace stop: %s", strerror(errno));
	if (ptrace(PTRACE_DETACH, tid, 0, 0))
		die("ptrace detach: %s", strerror(errno));
}

/* The thread's state as the entry points would take it. */
static void thread_in(pid_t pid, pid_t tid, const struct maps *m, struct bpfwalk_in *in,
		      uint64_t *t0)
{
	struct user_regs_struct r;
	struct timespec ts;
	uint64_t sp, pc;
	char path[96], *s, *p;

	memset(in, 0, sizeof(*in));
	in->pid = (uint32_t)pid;
	in->tid = (uint32_t)tid;
	if (bpf_map_lookup_elem(m->procs, &in->pid, &in->cfg))
		die("pid %s is not in the profiler's procs map", "");
	syscall_sp_pc(pid, tid, &sp, &pc);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	*t0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	get_regs(tid, &r);
	if (r.rsp != sp || r.rip != pc)
		die("the registers ptrace gave are not the blocked thread's%s", "");
	in->ip = r.rip;
	in->sp = r.rsp;
	in->bp = r.rbp;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	s = slurp(path);
	p = s ? strrchr(s, ')') : NULL;
	/* startstack is field 28; p is at the end of field 2. */
	for (int f = 2; p && f < 28; f++)
		p = strchr(p + 1, ' ');
	if (!p)
		die("cannot read %s", path);
	in->top = strtoull(p + 1, NULL, 10);
	in->ident = (uint64_t)tid;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	if ((s = slurp(path)) && (p = strstr(s, "\nNSpid:"))) {
		for (char *q = p + 7; *q && *q != '\n'; q++)
			if (q[-1] == '\t' || q[-1] == ' ')
				in->ident = strtoull(q, NULL, 10);
	}
	if (in->cfg.off.tid_kind == PY_TID_PTHREAD)
		in->ident = r.fs_base;
	in->flags = SAMPLE_F_OFFCPU;
	in->native = 1;
	in->compact = in->cfg.off.frame_localsplus == PYPERF_NO_FIELD &&
		      in->cfg.off.frame_tlbc_index == PYPERF_NO_FIELD;
}

static void stop_profiler(pid_t prof)
{
	if (kill(prof, SIGINT))
		die("cannot stop the profiler: %s", strerror(errno));
	for (int i = 0; i < 200 && !kill(prof, 0); i++)
		usleep(50000);
	if (!kill(prof, 0))
		die("the profiler did not exit%s", "");
}

/* The profiler's last switch-out record of tid taken before t0, and the
 * captures it sent of the code objects the walk captured (got). */
static int live_record(const char *path, uint32_t tid, uint64_t t0, const struct bwcap_want *got,
		       struct bwcap_want *w, const char *raw_out)
{
	struct py_code_capture cap;
	uint32_t pid = 0;
	char err[512];
	struct recording *r = rec_load_file(path, NULL, err, sizeof(err));
	const struct rec_event *best = NULL;

	if (!r)
		die("%s", err);
	for (size_t i = 0; i < r->nev; i++) {
		const struct rec_event *e = &r->ev[i];
		struct py_sample_hdr h;

		if (e->type != REC_SAMPLE || e->len < PY_SAMPLE_COMPACT_HDR)
			continue;
		memcpy(&h, e->p, PY_SAMPLE_REGS_OFF);	/* pid ... flags: same in both */
		if (h.tid == tid && (h.flags & SAMPLE_F_OFFCPU) &&
		    (h.flags & SAMPLE_F_NATIVE_PCS) && h.time_ns < t0) {
			best = e;
			pid = h.pid;
		}
	}
	if (!best || bwcap_want_of_record(best->p, best->len, w))
		die("no switch-out record of the thread in %s", path);
	if (raw_out) {
		FILE *f = fopen(raw_out, "w");

		if (!f || fwrite(best->p, 1, best->len, f) != best->len || fclose(f))
			die("cannot write %s", raw_out);
	}
	for (size_t i = 0; i < r->nev && (&r->ev[i]) <= best; i++) {
		const struct rec_event *e = &r->ev[i];

		if (e->type != REC_SAMPLE || e->len != sizeof(cap))
			continue;
		memcpy(&cap, e->p, sizeof(cap));
		if (!(cap.h.flags & SAMPLE_F_CODE_NAME) || cap.h.pid != pid)
			continue;
		for (uint32_t k = 0; k < got->ncaps; k++)
			if (got->caps[k].code == cap.code)
				bwcap_want_capture(w, &cap);
	}
	rec_free(r);
	return 0;
}

static struct bwcap_want want, got;

int main(int argc, char **argv)
{
	const char *rec_path = NULL, *label = "", *out_path = NULL, *raw_out = NULL;
	pid_t prof = 0, pid = 0, tid = 0;
	struct bpfwalk_out out = { 0 };
	struct bpfwalk_tables tb;
	struct bpfwalk_in in;
	struct recorder *rec;
	struct maps m;
	char err[512], tmp[4096];
	uint64_t t0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--profiler")) prof = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--recording")) rec_path = argv[i + 1];
		else if (!strcmp(argv[i], "--pid")) pid = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--tid")) tid = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--label")) label = argv[i + 1];
		else if (!strcmp(argv[i], "-o")) out_path = argv[i + 1];
		else if (!strcmp(argv[i], "--live-record")) raw_out = argv[i + 1];
		else die("unknown option %s", argv[i]);
	}
	if (!prof || !rec_path || !pid || !out_path)
		die("usage: bpfcapture --profiler PID --recording REC --pid PID [--tid TID] --label TEXT -o CAPTURE%s", "");
	if (!tid)
		tid = pid;
	find_maps(prof, &m);
	thread_in(pid, tid, &m, &in, &t0);
	snprintf(tmp, sizeof(tmp), "%s.tmp", out_path);
	rec = record_open(tmp, target_src_live(), err, sizeof(err));
	if (!rec)
		die("%s", err);
	tb = (struct bpfwalk_tables){ .lookup = live_lookup, .ctx = &m };
	if (bpfwalk_run(&in, record_src(rec), &tb, &out))
		die("out of memory%s", "");
	stop_profiler(prof);
	bwcap_want_of_out(&out, &got);
	live_record(rec_path, (uint32_t)tid, t0, &got, &want, raw_out);
	if (bwcap_compare(&want, &got, stderr)) {
		unlink(tmp);
		die("the walk in user space differs from the live program's record: no capture%s", "");
	}
	bwcap_write(rec, label, &in, &out, &want);
	if (record_close(rec, err, sizeof(err)) || rename(tmp, out_path))
		die("cannot write the capture: %s", err);
	printf("bpfcapture: %s: %u Python frames, %u native pcs, %zu table entries, %zu code captures (%u of them sent live)\n",
	       out_path, got.nframes, got.native_n, out.nent, out.ncaps, want.ncaps);
	bpfwalk_out_free(&out);
	return 0;
}
