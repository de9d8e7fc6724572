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
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "blocked.h"
#include "bpf_attach.h"
#include "eventlog.h"
#include "ktables.h"
#include "maps_iter.h"
#include "objcache.h"
#include "launch.h"
#include "output.h"
#include "pipeline.h"
#include "preflight.h"
#include "report.h"
#include "targets.h"
#include "record.h"
#include "bpfcheck.h"
#include "pytramp.h"

#define SYMCACHE_ENTRIES	16384
#define THREADCACHE_ENTRIES	8192
#define IDLE_POLL_MS		1000	/* ... or this long when nothing came
					 * for IDLE_POLLS polls (an idle host:
					 * each wake-up costs ~50-80 us of CPU
					 * here, 0.8 ms a second at POLL_MS) */
#define IDLE_POLLS		10
#define POLL_MS			100	/* the reader sleeps at most this long;
					 * records that cannot wait wake it
					 * (pyperf.bpf.c: wakeup_flag) */
#define PASS_NS			50000000LL	/* longest read of the ring
						 * buffers before the loop checks
						 * the clock, signals, targets */
#define PASS_CHECK_EVERY	64		/* records between clock reads */
#define SCAN_NS			500000000LL	/* /proc rescans and reaping
						 * without process events */
#define SAFETY_SCAN_NS		20000000000LL	/* ... with them: a safety net
						 * (a libpython linked statically
						 * into a program named otherwise) */
#define BATCH_BYTES		(4u << 20)	/* records held back at most */
#define HOLD_NS			200000000LL	/* ... for at most this long */
#define HOLD_DUE_NS		(HOLD_NS - 20000000LL)	/* ... and are added at a
						 * wake-up that finds them held
						 * this long: after a sleep of
						 * HOLD_NS the first record is a
						 * few ms younger, and waiting for
						 * it cost a wake-up of its own */
#define PROMPT_MAX		8	/* targets a batch due early adds alone */
#define CHECK_WAIT_NS		50000000LL	/* then for the BPF program's checks
						 * (it wakes us when done) */
#define CHILD_WAIT_NS		5000000000LL	/* launch mode: the command's time
						 * to exit after SIGINT/SIGTERM */

/* Records copied out of the ring buffer and held back, so that their code
 * objects are checked against their targets together (pipeline_precheck)
 * before they are added: a code object costs one check per batch however
 * many samples name it (a program at 1 kHz names the same few dozen in
 * every drain). A record that names a code object user space has yet to
 * read, or whose native walk waits for tables, makes its batch due at
 * once (pipeline_is_prompt). Each entry is a batch_rec, then the record,
 * padded to 8 bytes. Targets are forgotten only at a scan
 * (targets_update) or a process event, and the batch is added before
 * either, so the pointers hold until then. */
struct rec_batch {
	uint8_t *buf;
	size_t len, cap;
	int64_t since;		/* session time of the first record */
	size_t prompt_end;	/* a record before this byte is to be added
				 * now (pipeline_is_prompt); 0: none */
	uint64_t added, early;	/* batches added; of them, cut short */
	/* Whose records are prompt: a batch due early adds theirs alone
	 * (batch_front), and the other targets' records wait their HOLD_NS,
	 * each of their code objects checked once per batch, not again at
	 * every new process's prompt record. nprompt > PROMPT_MAX: all. */
	const struct py_target *prompt_t[PROMPT_MAX];
	size_t nprompt;
	uint8_t *tmp;		/* batch_front's scratch, tmp_cap bytes */
	size_t tmp_cap;
};

struct batch_rec {
	const struct py_target *t;
	uint64_t size;
};

_Static_assert(sizeof(struct batch_rec) + sizeof(struct py_sample) + 8 <= BATCH_BYTES,
	       "a record fits in a batch");

struct session {
	const struct config *cfg;
	struct target_set ts;
	struct recorder *rec;		/* --record, else NULL */
	struct output out;
	pid_t child;			/* launched command, 0 if none */
	int child_status;		/* its exit code, once it exited */
	int child_exited;
	int64_t child_wait_end;		/* a stop signal came: wait for the
					 * command until then; 0: none yet */
	int64_t interval_t0;		/* start of the current interval (ns) */
	struct bpf_attach bpf;
	struct ring_buffer *rb;
	struct pipeline *pl;
	struct pipeline_log log;		/* --record: the pipeline's events */
	struct ksym_table *ksym;	/* --kernel; read before privileges go */
	uint64_t bpf_stats[STAT__COUNT];
	struct timespec t0;		/* the events were attached (start_mono) */
	int status_line;		/* live status on a terminal */
	int64_t last_status;
	int64_t pass_end;		/* this ring-buffer pass yields then */
	unsigned pass_records;
	struct objcache *objs;		/* every ELF file, opened once (probe, unwind, symbols) */
	struct maps_iter *mapsi;	/* mappings without /proc text; NULL: the file */
	struct live_maps_reader mapsr;
	struct target_src *live;	/* the live system, read through mapsi */
	struct ktables *kt;		/* --unwind kernel/both: the BPF tables */
	struct native_diff diff;	/* --unwind both */
	struct rec_batch batch;
	struct bpfcheck chk;		/* checks the BPF program answers */
	uint64_t start_mono;		/* CLOCK_MONOTONIC when the events attached */
	int64_t start_wall;		/* ... and CLOCK_REALTIME */
	uint64_t stop_mono;		/* when they were detached; 0: not yet */
	int64_t stop_wall;
	size_t chk_upto;		/* ... for the batch's bytes before this */
	int64_t scan_ns;		/* SCAN_NS or SAFETY_SCAN_NS */
	int started;			/* the targets found at start are named */
	unsigned idle_polls;		/* polls in a row that read no sample */
	uint64_t samples_read;		/* records read from the ring buffer */
	uint64_t attached;		/* whole host: targets added since the
					 * last profile, said as a count */
	uint64_t events_lost;		/* process events lost, as last seen */
	pid_t bpf_forgot;		/* the target whose exit is being handled
					 * if the BPF program deleted its entries */
	uint64_t write_failures;	/* writes failed in a row */
	int final_write;		/* the last one: tried whatever the probe says */
};

/* stop_requested counts SIGINT/SIGTERM; stop_signal is the first, and
 * stop_from_tty says the terminal sent it (to its whole foreground process
 * group, the launched command included). */
static volatile sig_atomic_t stop_requested, write_requested, stop_signal, stop_from_tty;

/* What the pipeline counted and cached, for the status line and summary. */
#define SINK(s)	pipeline_sink((s)->pl)

static void on_signal(int sig, siginfo_t *si, void *uctx)
{
	(void)uctx;
	if (sig == SIGUSR1) {
		write_requested = 1;
		return;
	}
	if (!stop_requested) {
		stop_signal = sig;
		stop_from_tty = si && si->si_code == SI_KERNEL;
	}
	stop_requested++;
}

static uint64_t mono_ns(void);
static int64_t wall_ns(void);

/* --unwind kernel: a sample's walk met a mapping not loaded yet. */
static void on_native_miss(void *ctx, int pid, uint64_t taken_ns)
{
	struct session *s = ctx;
	const struct py_target *t = s->kt ? targets_find(&s->ts, pid) : NULL;

	if (t)
		ktables_load_pid(s->kt, t->src, pid, &t->tramp, mono_ns(), taken_ns);
}

static int batch_add(struct session *s, const struct py_target *t, const void *data,
		     size_t size);

static int emit_blocked(void *ctx, const struct py_target *t, const void *rec, size_t size)
{
	return batch_add(ctx, t, rec, size);
}

/* Wall mode: t's threads off the CPU now, blocked perhaps since long
 * before, wait from time_ns on (blocked.h). Called once the BPF program
 * samples t, so a thread that runs after this has its switch-in seen. */
static void snapshot_blocked(struct session *s, const struct py_target *t, uint64_t time_ns)
{
	if (s->cfg->wall &&
	    blocked_snapshot(t, s->cfg->stack_bytes, s->cfg->gil_only, time_ns, emit_blocked, s))
		fprintf(stderr, "pyperf-pprof: out of memory reading the waiting threads of pid %d; "
			"their waits count from their next switch-out only\n", (int)t->pid);
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

/* A target came or went: keep the BPF map and the caches in step. */
static void on_target(void *ctx, const struct py_target *t, int event)
{
	struct session *s = ctx;
	char note[320];

	if (event == 1) {
		if (s->pl)	/* else added when the pipeline starts */
			pipeline_target_add(s->pl, t);
		proc_root_note(&t->root, note, sizeof(note));
		/* A host's churn would be a line per process (285,000 a day
		 * at one every 0.3 s): counted per profile instead. */
		if (s->started && s->cfg->all && !s->cfg->verbose)
			s->attached++;
		else
			say(s, "pyperf-pprof: pid %d (%s): Python %u.%u.%u in %s%s\n", t->pid,
			    t->comm, t->major, t->minor, t->micro, t->module, note);
		if (s->cfg->verbose && t->tramp.status != TRAMP_NONE)
			fprintf(stderr, "pyperf-pprof: pid %d: perf trampoline template: %s, %u bytes, %u rules\n",
				t->pid, pytramp_status_name(&t->tramp), t->tramp.len, t->tramp.nrows);
		bpf_attach_target(&s->bpf, t, 1);
		if (s->kt && (!t->forked_from ||
			      ktables_copy_pid(s->kt, t->forked_from, t->pid, mono_ns())))
			ktables_load_pid(s->kt, t->src, t->pid, &t->tramp, mono_ns(), KT_FORCE);
		if (s->pl)	/* else when the pipeline starts */
			snapshot_blocked(s, t, mono_ns());
		return;
	}
	if (event == 0) {
		if (s->cfg->verbose)
			fprintf(stderr, "pyperf-pprof: pid %d (%s) exited\n", t->pid, t->comm);
		/* Its BPF entries went at its exit (PROC_F_FORGOTTEN). */
		if (s->bpf_forgot != t->pid)
			bpf_attach_target(&s->bpf, t, 0);
		if (s->kt)
			ktables_forget_pid(s->kt, t->pid, s->bpf_forgot == t->pid);
		return;
	}
	/* Forgotten: a new process may reuse the pid; drop what was cached. */
	if (s->pl)
		pipeline_target_forget(s->pl, t);
}

/* A thread's id names the same /proc entry as its process, and would be
 * attached, but samples are matched by process id: none would come. The
 * process id (Tgid) it belongs to, or pid itself. */
static pid_t thread_group_of(pid_t pid)
{
	char path[64], line[128];
	long tgid = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return pid;	/* the target check says why */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	fclose(f);
	return (pid_t)tgid;
}

/* The live system as this session reads it: through the task_vma
 * iterator for mappings where it loads (a new process's /proc/PID/maps
 * text was most of its attach), else as target_src_live(). */
static const struct target_src *live_src(struct session *s)
{
	if (!s->live && !s->mapsi && (s->mapsi = maps_iter_open(s->cfg->verbose))) {
		s->mapsr = (struct live_maps_reader){ .read = maps_iter_read, .ctx = s->mapsi };
		s->live = target_src_live_new(&s->mapsr);
	}
	return s->live ? s->live : target_src_live();
}

static int find_targets(struct session *s)
{
	/* Before the targets: the interpreter probe opens their files here. */
	s->objs = objcache_new(NULL);
	if (!s->objs)
		return -1;
	targets_init(&s->ts, s->rec ? record_src(s->rec) : live_src(s), s->objs,
		     s->cfg->all, s->cfg->subprocesses, on_target, s);
	for (int i = 0; i < s->cfg->npids; i++) {
		pid_t pid = s->cfg->pids[i], tgid = thread_group_of(pid);

		if (tgid != pid)
			fprintf(stderr, "pyperf-pprof: --pid %d is a thread of process %d, not a process: use --pid %d\n",
				(int)pid, (int)tgid, (int)tgid);
		else
			targets_add(&s->ts, pid, 0);
	}
	if (s->cfg->npids && !s->ts.n)
		return -1;	/* every --pid was refused, each with its reason */
	if (s->cfg->all)
		targets_update(&s->ts, 0, 0);
	return 0;
}

static int64_t elapsed_ns(const struct session *s);

/* Processes that exec'd or forked while the program was loading (the
 * events were not watched yet), and a --pid's existing children: one more
 * look, since the next scan is only a safety net, 20 s away. */
static void catch_up(struct session *s)
{
	if (s->cfg->all || s->cfg->subprocesses)
		targets_update(&s->ts, elapsed_ns(s), 0);
	/* From here on the counts say how later targets are found. */
	s->ts.scans = s->ts.found_by_scan = 0;
	s->started = 1;
}

/* --unwind kernel/both: the unwind tables of the targets found so far;
 * later ones are loaded as they are added, or on a sample's miss. */
static int load_tables(struct session *s)
{
	int fd[4];

	if (!s->cfg->stack_bytes || s->cfg->unwind_mode == PY_UNWIND_USER)
		return 0;
	bpf_attach_unwind_fds(&s->bpf, fd);
	s->kt = ktables_new(fd[0], fd[1], fd[2], fd[3], PY_UNWIND_MAX_ROWS, s->objs);
	if (!s->kt) {
		fprintf(stderr, "pyperf-pprof: out of memory for the unwind tables\n");
		return -1;
	}
	for (size_t i = 0; i < s->ts.n; i++)
		ktables_load_pid(s->kt, s->ts.v[i]->src, s->ts.v[i]->pid, &s->ts.v[i]->tramp,
				 mono_ns(), KT_FORCE);
	return 0;
}

/* The tables before the events: a sample taken before them would only be
 * marked "mapping not loaded yet" (25 of the first ~1000 at 1 kHz). */
static int load_bpf(struct session *s)
{
	if (bpf_attach_load(&s->bpf, s->cfg, &s->ts) || load_tables(s))
		return -1;
	/* A recording keeps the checks' reads, for replay to repeat. */
	if (!s->rec && bpf_attach_checks(&s->bpf, &s->chk.req, &s->chk.slots))
		s->chk.req = NULL;
	return 0;
}

/* Attaches the perf events: the window starts with the first sample it
 * may hold, and a thread running from then on counts from then (wall
 * mode, pyperf.bpf.c: oncpu_span, from each target's since_ns). */
static int attach_events(struct session *s)
{
	for (size_t i = 0; s->cfg->wall && i < s->ts.n; i++)
		bpf_attach_target(&s->bpf, s->ts.v[i], 1);
	return bpf_attach_events(&s->bpf, s->cfg, (long)(SCAN_NS / 1000000));
}

static int pass_over(struct session *s);

/* The entry at *o of s's batch, and *o moved past it; NULL at the end. */
static const struct batch_rec *batch_next(const struct rec_batch *b, size_t *o)
{
	const struct batch_rec *e = (const void *)(b->buf + *o);

	if (*o >= b->len)
		return NULL;
	*o += sizeof(*e) + ((e->size + 7) & ~(uint64_t)7);
	return e;
}


/* The session time of a BPF clock reading (bpf_ktime_get_ns), or now if
 * it says no earlier time. */
static int64_t session_time(const struct session *s, uint64_t mono, int64_t now)
{
	int64_t t = (int64_t)(mono - s->start_mono);

	return mono >= s->start_mono && t < now ? t : now;
}

/* The session time record data was taken at: a batch is held HOLD_NS
 * from its first record's sample, not from when the reader came by. */
static int64_t taken_at(const struct session *s, const void *data, int64_t now)
{
	return session_time(s, ((const struct py_sample_hdr *)data)->time_ns, now);
}

/* Is t one of the batch's prompt targets? */
static int prompt_target(const struct rec_batch *b, const struct py_target *t)
{
	if (b->nprompt > PROMPT_MAX)
		return 1;
	for (size_t i = 0; i < b->nprompt; i++)
		if (b->prompt_t[i] == t)
			return 1;
	return 0;
}

/* A record of t is prompt: the batch is due, for t's records at least. */
static void mark_prompt(struct rec_batch *b, const struct py_target *t)
{
	b->prompt_end = b->len;
	if (prompt_target(b, t))
		return;
	if (b->nprompt < PROMPT_MAX)
		b->prompt_t[b->nprompt++] = t;
	else
		b->nprompt = PROMPT_MAX + 1;
}

/* Moves the prompt targets' records to the batch's front, each part in
 * the order taken (the pipeline needs a target's records in order, not
 * the order between targets: a process event or a scan that changes a
 * target adds the whole batch first); returns the front's bytes. All of
 * the batch when every target is prompt or there is no memory to sort. */
static size_t batch_front(struct rec_batch *b)
{
	const struct batch_rec *e;
	size_t o = 0, front = 0, back, at;

	if (b->nprompt > PROMPT_MAX)
		return b->len;
	if (b->tmp_cap < b->len) {
		uint8_t *t = realloc(b->tmp, b->cap);

		if (!t)
			return b->len;
		b->tmp = t;
		b->tmp_cap = b->cap;
	}
	while ((e = batch_next(b, &o)))
		front += prompt_target(b, e->t) ? o - ((const uint8_t *)e - b->buf) : 0;
	back = front;
	front = 0;
	o = 0;
	while ((at = o, e = batch_next(b, &o))) {
		size_t n = o - at, *to = prompt_target(b, e->t) ? &front : &back;

		memcpy(b->tmp + *to, e, n);
		*to += n;
	}
	memcpy(b->buf, b->tmp, b->len);
	b->prompt_end = front;
	return front;
}

/* Notes the code objects of the batch's records before byte upto. */
static void note_batch(struct session *s, size_t upto)
{
	const struct batch_rec *e;
	size_t o = 0;

	while (o < upto && (e = batch_next(&s->batch, &o)))
		pipeline_precheck(s->pl, e->t, e + 1, e->size);
}

/* The asyncio task sources the samples just added revealed go to the
 * BPF program, which names its processes' running tasks from then on. */
static void push_task_srcs(struct session *s)
{
	struct py_task_src src[4];
	int pid[4];
	size_t n;

	while ((n = pipeline_task_srcs(s->pl, pid, src, 4)) > 0)
		for (size_t i = 0; i < n; i++)
			bpf_attach_task_src(&s->bpf, pid[i], &src[i]);
}

/* Ends the checks noted (reading those not answered), adds the records
 * before byte upto and keeps the rest. 0, or -ENOMEM (the session then
 * ends, writing what it has). */
static int add_batch(struct session *s, size_t upto)
{
	const struct batch_rec *e;
	size_t o = 0;
	int r = 0;

	pipeline_precheck_end(s->pl);
	while (!r && o < upto && (e = batch_next(&s->batch, &o)))
		r = pipeline_sample(s->pl, e->t, e + 1, e->size) ? -ENOMEM : 0;
	push_task_srcs(s);
	if (!upto)
		return r;
	s->batch.added++;
	s->batch.early += s->batch.prompt_end && s->batch.prompt_end <= upto;
	memmove(s->batch.buf, s->batch.buf + upto, s->batch.len - upto);
	s->batch.len -= upto;
	s->batch.prompt_end = s->batch.prompt_end > upto ? s->batch.prompt_end - upto : 0;
	if (!s->batch.prompt_end)
		s->batch.nprompt = 0;
	if (s->batch.len) {	/* came during the BPF program's checks */
		o = 0;
		e = batch_next(&s->batch, &o);
		s->batch.since = taken_at(s, e + 1, elapsed_ns(s));
	}
	if (r)
		fprintf(stderr, "pyperf-pprof: out of memory while adding a sample; stopping early\n");
	return r;
}

/* Adds every record held now: those whose checks the BPF program is
 * answering first, with the answers so far; the others checked and
 * added together. 0, or -ENOMEM. */
static int flush_batch(struct session *s)
{
	int r;

	if (s->chk.n) {
		bpfcheck_collect(&s->chk, s->pl);
		if ((r = add_batch(s, s->chk_upto)))
			return r;
	}
	note_batch(s, s->batch.len);
	return add_batch(s, s->batch.len);
}

/* Is it time to add the records held back? */
static int batch_due(const struct session *s)
{
	return s->batch.len && (s->batch.prompt_end || elapsed_ns(s) - s->batch.since >= HOLD_DUE_NS);
}

/* The poll loop's turn: a batch due (a prompt record in it, or held
 * HOLD_NS) is checked, by the BPF program when it can (the records wait
 * up to CHECK_WAIT_NS more for its answers; it reads them at the
 * target's next samples, as soon as a process_vm_readv would), and
 * added. 0, or -ENOMEM. */
static int advance_batch(struct session *s)
{
	size_t upto;
	int r;

	if (s->chk.n) {
		if (!bpfcheck_done(&s->chk) && (int64_t)(mono_ns() - s->chk.issued_ns) < CHECK_WAIT_NS)
			return 0;
		bpfcheck_collect(&s->chk, s->pl);
		if ((r = add_batch(s, s->chk_upto)))
			return r;
	}
	if (!batch_due(s))
		return 0;
	/* Due early: the prompt targets' records alone. */
	upto = elapsed_ns(s) - s->batch.since >= HOLD_DUE_NS ? s->batch.len : batch_front(&s->batch);
	note_batch(s, upto);
	if (bpfcheck_issue(&s->chk, s->pl, mono_ns())) {
		s->chk_upto = upto;
		return 0;
	}
	return add_batch(s, upto);
}

static int batch_add(struct session *s, const struct py_target *t, const void *data,
		     size_t size)
{
	struct batch_rec e = { .t = t, .size = size };
	size_t need = sizeof(e) + ((size + 7) & ~(size_t)7);
	int r;

	if (s->batch.len + need > BATCH_BYTES && (r = flush_batch(s)))
		return r;
	if (s->batch.len + need > s->batch.cap) {
		size_t cap = s->batch.cap ? s->batch.cap : 64 << 10;
		uint8_t *b;

		while (cap < s->batch.len + need)
			cap *= 2;
		if (!(b = realloc(s->batch.buf, cap))) {
			fprintf(stderr, "pyperf-pprof: out of memory while reading samples; stopping early\n");
			return -ENOMEM;
		}
		s->batch.buf = b;
		s->batch.cap = cap;
	}
	if (!s->batch.len)
		s->batch.since = taken_at(s, data, elapsed_ns(s));
	memcpy(s->batch.buf + s->batch.len, &e, sizeof(e));
	memcpy(s->batch.buf + s->batch.len + sizeof(e), data, size);
	s->batch.len += need;
	return 0;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct py_sample_hdr *h = data;
	const struct py_target *t;
	int r;

	s->samples_read++;
	if (size < PY_SAMPLE_COMPACT_HDR || !(t = targets_find(&s->ts, (pid_t)h->pid)))
		return 0;
	if ((r = batch_add(s, t, data, size)))
		return r;	/* ends polling; what we have is written */
	/* A pure-Python asyncio task is read when its record is added: while
	 * it runs if that is now (SAMPLE_F_NEW_TASK, at a change of task). */
	if (((h->flags & (SAMPLE_F_NEW_CODE | SAMPLE_F_NO_TABLES)) &&
	     pipeline_is_prompt(s->pl, t, data, size)) || (h->flags & SAMPLE_F_NEW_TASK))
		mark_prompt(&s->batch, t);
	return pass_over(s);
}

static int64_t elapsed_ns(const struct session *s)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - s->t0.tv_sec) * 1000000000LL + (now.tv_nsec - s->t0.tv_nsec);
}


/* One-line live status, redrawn in place at most twice a second. */
static struct report_view view(struct session *s)
{
	return (struct report_view){
		.cfg = s->cfg, .sink = SINK(s), .stacks = pipeline_stacks(s->pl),
		.processes = (int)s->ts.n, .processes_seen = s->ts.added, .bpf = s->bpf_stats,
		.elapsed_ns = elapsed_ns(s), .ksym = s->ksym, .kt = s->kt,
		.batches = s->batch.added, .batches_early = s->batch.early,
	};
}

static void show_status(struct session *s, int final)
{
	struct report_view v;

	if (!s->status_line || (!final && elapsed_ns(s) - s->last_status < 500000000LL))
		return;
	bpf_attach_read_stats(&s->bpf, s->bpf_stats);
	v = view(s);
	s->last_status = v.elapsed_ns;
	report_status(&v, final);
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

/* Does the batch hold a record of pid? */
static int batch_has_pid(const struct session *s, pid_t pid)
{
	const struct batch_rec *e;
	size_t o = 0;

	while ((e = batch_next(&s->batch, &o)))
		if (e->t->pid == pid)
			return 1;
	return 0;
}

static int on_proc_event(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct py_proc_event *e = data;
	int64_t at;

	if (size < sizeof(*e))
		return 0;
	/* The event's own time: one read when its wake-up was due (a fork
	 * or exec a few ms ago, pyperf.bpf.c: event_wake) is late, and what
	 * it starts (the first try of an exec'd interpreter) may be due now. */
	at = session_time(s, e->time_ns, elapsed_ns(s));
	/* A target that exec'd becomes another program under the same pid,
	 * to be attached anew: its records so far are added first, in the
	 * order the pipeline (and a recording) saw them. Other events leave
	 * the records' targets as they are (one that exits is retired, not
	 * freed, until a scan, which adds them first): adding the batch at
	 * every event cost a code-object check per new process on a host
	 * that starts them often. */
	if (e->kind == PROC_EXEC && batch_has_pid(s, (pid_t)e->pid) && flush_batch(s))
		return -ENOMEM;
	if (e->kind == PROC_EXEC)
		targets_on_exec(&s->ts, e, at);
	else if (e->kind == PROC_FORK)
		targets_on_fork(&s->ts, (pid_t)e->pid, (pid_t)e->ppid, at);
	else if (e->kind == PROC_EXIT) {
		s->bpf_forgot = e->flags & PROC_F_FORGOTTEN ? (pid_t)e->pid : 0;
		targets_on_exit(&s->ts, (pid_t)e->pid);
		s->bpf_forgot = 0;
	}
	else if (e->kind == PROC_MAP)
		targets_on_map(&s->ts, (pid_t)e->pid, at);
	return pass_over(s);
}

/* Has the launched command exited? Records its exit code. */
static void reap_child(struct session *s)
{
	if (s->child && !s->child_exited)
		s->child_exited = launch_reap(s->child, &s->child_status);
}

/* Launch mode, a stop signal came: it is the command's to act on. A
 * signal from the terminal reached it too (same process group); one sent
 * to the profiler alone (kill, a service manager's main-pid stop) is
 * passed on, once. Sampling goes on while the command ends (its
 * KeyboardInterrupt, its clean-up), up to CHILD_WAIT_NS, or until a
 * second signal. 1 while waiting. */
static int wait_for_child(struct session *s, int64_t now)
{
	const char *name = stop_signal == SIGTERM ? "SIGTERM" : "SIGINT";

	if (!s->child || s->child_exited)
		return 0;
	if (!s->child_wait_end) {
		s->child_wait_end = now + CHILD_WAIT_NS;
		if (!stop_from_tty && kill(s->child, stop_signal) == 0)
			say(s, "pyperf-pprof: %s passed to the command (pid %d); waiting up to %lld s for it to exit\n",
			    name, (int)s->child, CHILD_WAIT_NS / 1000000000LL);
		else
			say(s, "pyperf-pprof: %s: waiting up to %lld s for the command (pid %d) to exit\n",
			    name, CHILD_WAIT_NS / 1000000000LL, (int)s->child);
	}
	return stop_requested == 1 && now < s->child_wait_end;
}

/* Why sampling should end now, or NULL to go on. */
static const char *stop_reason(struct session *s, int64_t now)
{
	if (stop_requested && wait_for_child(s, now))
		return NULL;
	if (stop_requested)
		return s->child && s->child_exited ? "command exited" : "";
	if (s->cfg->duration_ms && now >= (int64_t)s->cfg->duration_ms * 1000000LL)
		return "";
	if (s->child)
		return s->child_exited ? "command exited" : NULL;
	if (!s->cfg->all && !s->ts.n && !s->ts.npending)
		return s->cfg->npids > 1 ? "targets exited" : "target exited";
	return NULL;
}

/* How long to wait for records: POLL_MS, IDLE_POLL_MS while nothing
 * happens (a record piling up or a process event wakes us), or less when
 * -d or the interval ends or the BPF program's checks time out sooner. */
static int poll_ms(const struct session *s, int64_t now)
{
	int64_t left, ms = POLL_MS, most = POLL_MS;

	/* Records held, pending processes, a command to reap (SIGCHLD does
	 * not interrupt the wait) and the status line need the short tick. */
	if (s->idle_polls >= IDLE_POLLS && !s->batch.len && !s->chk.n && !s->ts.npending &&
	    !s->child && !s->status_line) {
		ms = most = IDLE_POLL_MS;
	} else if (!s->ts.npending && !s->child && !s->status_line) {
		/* Samples come without a wakeup until a batch piles up: read
		 * them when the batch they make is due (HOLD_NS after the
		 * first was taken), not every POLL_MS (at 99 Hz that was
		 * four wake-ups per batch, ~13 a second, each ~30 us). */
		most = HOLD_NS / 1000000;
		ms = s->batch.len ? (s->batch.since + HOLD_DUE_NS - now) / 1000000 + 1 : most;
	}
	if (s->ts.npending) {	/* until the next one is to be tried */
		left = (targets_next_try_ns(&s->ts) - now) / 1000000 + 1;
		ms = left < ms ? left : ms;
	}
	if (s->chk.n)	/* until the checks time out */
		ms = ((int64_t)s->chk.issued_ns + CHECK_WAIT_NS - (int64_t)mono_ns()) / 1000000 + 1;
	if (s->cfg->duration_ms && (left = (int64_t)s->cfg->duration_ms - now / 1000000 + 1) < ms)
		ms = left;
	if (s->cfg->interval_s &&
	    (left = (s->interval_t0 + (int64_t)s->cfg->interval_s * 1000000000LL - now) / 1000000 + 1) < ms)
		ms = left;
	return ms < 1 ? 1 : ms > most ? (int)most : (int)ms;
}

static int poll_loop(struct session *s)
{
	const char *why;

	s->rb = ring_buffer__new(bpf_attach_events_fd(&s->bpf), on_record, s, NULL);
	if (!s->rb) {
		fprintf(stderr, "pyperf-pprof: cannot create the ring buffer reader: %s\n", strerror(errno));
		return -1;
	}
	s->scan_ns = SCAN_NS;
	if (bpf_attach_proc_events_fd(&s->bpf) >= 0) {
		if (ring_buffer__add(s->rb, bpf_attach_proc_events_fd(&s->bpf), on_proc_event, s))
			fprintf(stderr, "pyperf-pprof: warning: cannot read process events; relying on /proc scans\n");
		else if (bpf_attach_proc_events_complete(&s->bpf, s->cfg))
			s->scan_ns = SAFETY_SCAN_NS;
		targets_exec_clock(&s->ts, bpf_attach_own_start_ns(&s->bpf));
	}
	for (;;) {
		int64_t now = elapsed_ns(s);
		uint64_t before;
		int r;

		reap_child(s);
		if (s->events_lost != bpf_attach_proc_events_lost(&s->bpf)) {
			/* Some came and went unseen: look now. */
			s->events_lost = bpf_attach_proc_events_lost(&s->bpf);
			s->ts.last_scan_ns = now - s->scan_ns;
		}
		/* A scan may forget targets the held records point to. */
		if (targets_scan_due(&s->ts, now, s->scan_ns) && flush_batch(s))
			return 0;
		targets_update(&s->ts, now, s->scan_ns);
		if ((why = stop_reason(s, now)))
			break;
		if (write_requested ||
		    (s->cfg->interval_s && now - s->interval_t0 >= (int64_t)s->cfg->interval_s * 1000000000LL)) {
			write_requested = 0;
			/* What the ring buffer holds so far belongs to this
			 * interval: a wait that ended before the boundary is
			 * not to be counted on in the next. */
			s->pass_end = now + PASS_NS;
			ring_buffer__consume(s->rb);
			if (flush_batch(s))
				return 0;
			write_profile(s, 0, s->cfg->interval_s != 0);
		}
		s->pass_end = now + PASS_NS;
		before = s->samples_read;
		r = ring_buffer__poll(s->rb, poll_ms(s, now));
		/* Records are sent without a wakeup until a batch piles up
		 * (see pyperf.bpf.c): read what came in since, every time. */
		if (r >= 0 || r == -EINTR)
			r = ring_buffer__consume(s->rb);
		/* Process events do not count: a host's every exec would keep
		 * the short tick (5 execs a second: 0.7 ms of CPU a second). */
		s->idle_polls = s->samples_read == before ? s->idle_polls + 1 : 0;
		if (r != -ENOMEM && advance_batch(s))
			r = -ENOMEM;
		if (r < 0 && r != -EINTR && r != -EAGAIN)
			return r == -ENOMEM ? 0 : -1;
		show_status(s, 0);
	}
	if (why[0])
		say(s, "pyperf-pprof: %s; writing what was collected\n", why);
	if (s->cfg->verbose)
		fprintf(stderr, "pyperf-pprof: discovery: %" PRIu64 " scans of /proc after the first (every %" PRId64 " s), %" PRIu64 " targets found by process events (%" PRIu64 " tries too early), %" PRIu64 " by scans, %" PRIu64 " process events lost\n",
			s->ts.scans, s->scan_ns / 1000000000, s->ts.found_by_event, s->ts.tries_failed,
			s->ts.found_by_scan, s->events_lost);
	if (s->cfg->verbose) {
		unsigned long written, read;

		target_src_live_maps_counts(s->live, &written, &read);
		fprintf(stderr, "pyperf-pprof: mappings: %lu lists written from the task_vma iterator, %lu read from /proc/PID/maps (%s)\n",
			written, read, s->mapsi ? "a file not seen before, deleted, or of shared memory" :
			"the iterator did not load");
	}
	return 0;
}

/* now, or the duration's end if that came first (the events took no
 * sample after it, or in wall mode none that counts past it:
 * bpf_attach_stop_at). */
static uint64_t window_end(const struct session *s, uint64_t now)
{
	uint64_t end = s->start_mono + s->cfg->duration_ms * 1000000ULL;

	return s->cfg->duration_ms && end < now ? end : now;
}

/* Wall mode: a thread on the CPU at the window's end has run since its
 * last record, which its next record (a sample within a period, or its
 * switch-out) carries; the BPF program cuts records at the end, so wait
 * two periods for them (at most WALL_GRACE_MAX_NS). */
#define WALL_GRACE_MAX_NS	100000000ULL

static void wall_grace(struct session *s)
{
	uint64_t period = s->cfg->frequency ? 1000000000ULL / s->cfg->frequency :
			  s->cfg->sample_period;
	uint64_t grace = 2 * period + 2000000, until, now;

	if (!s->cfg->wall || !s->rb)
		return;
	bpf_attach_stop_at(&s->bpf, s->stop_mono);
	until = s->stop_mono + (grace < WALL_GRACE_MAX_NS ? grace : WALL_GRACE_MAX_NS);
	while ((now = mono_ns()) < until) {
		s->pass_end = now + PASS_NS;
		if (ring_buffer__poll(s->rb, (int)((until - now) / 1000000) + 1) < 0 &&
		    errno != EINTR)
			break;
	}
}

static void stop_sampling(struct session *s)
{
	/* The window ends here, not once the drain below is done: a busy
	 * thread has no sample after it, a waiting one would count on; or at
	 * the duration's end if that came first (the events took no sample
	 * after it: bpf_attach_stop_at). */
	if (!s->stop_mono) {
		uint64_t now = mono_ns();

		s->stop_mono = window_end(s, now);
		s->stop_wall = wall_ns() - (int64_t)(now - s->stop_mono);
		wall_grace(s);
	}
	bpf_attach_stop(&s->bpf);
	/* Records already in the ring buffer are kept. Nothing is added any
	 * more, so the drain ends, in passes that may yield (pass_over). */
	if (!s->rb)
		return;
	while (ring_buffer__consume(s->rb) == -EAGAIN)
		if (flush_batch(s))
			return;
	flush_batch(s);
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

/* --kernel: kernel symbols, read while /proc/kallsyms still shows them
 * and once the BPF program is loaded, so that its own frames (wall mode
 * samples inside it) have their names and are dropped. */
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
	struct session *s = ctx;

	/* While writes fail, a page written first tells whether one can work
	 * now: the profile held may take half a second to encode. */
	if (s->write_failures && !s->final_write && output_probe(&s->out, err, errlen))
		return -1;
	return output_write(&s->out, p, wall_ns, path, pathlen, err, errlen);
}

/* The pipeline, once the event actually sampled is known; the targets
 * found so far enter it first. */
static int start_pipeline(struct session *s)
{
	const struct config *cfg = s->cfg;
	struct pipeline_conf c = {
		.event = cfg->event, .sample_period = cfg->sample_period,
		.frequency = cfg->frequency, .stack_bytes = cfg->stack_bytes,
		.all_native = cfg->all_native, .hw_cycles = s->bpf.hw_cycles, .wall = cfg->wall,
		.gil_only = cfg->gil_only, .cmdline = cfg->cmdline, .host = cfg->all,
		.async_stacks = cfg->async_stacks,
	};
	struct pipeline_io io = {
		.write = session_write, .find = find_target, .ctx = s, .ksym = s->ksym,
		.native_miss = on_native_miss, .native_miss_ctx = s,
		.diff = cfg->unwind_mode == PY_UNWIND_BOTH ? &s->diff : NULL,
		.objs = s->objs, .clock = mono_ns,
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
	pipeline_start(s->pl, s->start_wall, s->start_mono);
	for (size_t i = 0; i < s->ts.n; i++)
		pipeline_target_add(s->pl, s->ts.v[i]);
	for (size_t i = 0; i < s->ts.n; i++)
		snapshot_blocked(s, s->ts.v[i], s->start_mono);
	return 0;
}

/* A write failed (full disk, read-only or vanished directory, quota).
 * The first failure in a row says so and what happens next; the others
 * are quiet (one line each with -v): continuous mode tries again at the
 * next interval boundary, not at once. The last write says it always. */
static void write_failed(struct session *s, int final, const char *err)
{
	if (final || !s->write_failures++ || s->cfg->verbose) {
		fprintf(stderr, "pyperf-pprof: %s", err);
		if (final)
			fprintf(stderr, "\n");
		else if (s->write_failures > 1)
			fprintf(stderr, " (%" PRIu64 " failures in a row)\n", s->write_failures);
		else if (s->cfg->interval_s)
			fprintf(stderr, "; keeping the samples in memory (up to %u MiB; past that they are dropped, and counted in the next profile) and trying again every %" PRIu64 " s\n",
				PIPELINE_HOLD_BYTES >> 20, s->cfg->interval_s);
		else
			fprintf(stderr, "; keeping the samples for the next write\n");
	}
}

/* A tick carries every BPF counter (enum pyperf_stat). */
_Static_assert(STAT__COUNT <= PIPELINE_MAX_STATS, "PIPELINE_MAX_STATS below STAT__COUNT");

/* Writes the current profile: an interval boundary of the pipeline. With
 * rotate, a new interval starts (the caches are kept); so it does after a
 * failed write, which is tried again at the next boundary. */
static int write_profile(struct session *s, int final, int rotate)
{
	struct pipeline_tick k = { .final = final, .rotate = rotate, .nstats = STAT__COUNT };
	char err[512], path[4200];
	int64_t now = elapsed_ns(s);
	int r, recovered;

	bpf_attach_read_stats(&s->bpf, s->bpf_stats);
	if (final)
		show_status(s, 1);
	memcpy(k.stats, s->bpf_stats, sizeof(s->bpf_stats));
	k.wall_ns = final && s->stop_mono ? s->stop_wall : wall_ns();
	k.mono_ns = final && s->stop_mono ? s->stop_mono : mono_ns();
	s->final_write = final;
	r = pipeline_write(s->pl, &k, path, sizeof(path), err, sizeof(err));
	if (final) {
		struct report_view v = view(s);

		report_summary(&v);
	}
	if (rotate)
		s->interval_t0 = now;
	if (r) {
		write_failed(s, final, err);
		return -1;
	}
	if (s->attached)
		say(s, "%spyperf-pprof: %" PRIu64 " new Python process%s found %s (-v names each)\n",
		    s->status_line ? "\r\033[K" : "", s->attached, s->attached == 1 ? "" : "es",
		    s->cfg->interval_s ? "in this interval" : "while sampling");
	s->attached = 0;
	recovered = s->write_failures != 0;
	if (recovered)
		fprintf(stderr, "pyperf-pprof: writing works again after %" PRIu64 " failure%s: wrote %s, with the samples kept since\n",
			s->write_failures, s->write_failures == 1 ? "" : "s", path);
	s->write_failures = 0;
	if (final && s->cfg->format == FORMAT_PPROF)
		say(s, "pyperf-pprof: wrote %s; open it with: go tool pprof -http=: %s  (or -top)\n",
		    path, path);
	else if (final)
		say(s, "pyperf-pprof: wrote %s; draw it with: flamegraph.pl %s > flame.svg\n",
		    path, path);
	else if (!recovered)	/* one line per interval: a journal shows the run is alive */
		say(s, "%spyperf-pprof: wrote %s\n", s->status_line ? "\r\033[K" : "", path);
	return 0;
}

static void cleanup(struct session *s)
{
	stop_sampling(s);
	ring_buffer__free(s->rb);
	free(s->batch.buf);
	free(s->batch.tmp);
	bpf_attach_free(&s->bpf);
	ksym_free(s->ksym);
	ktables_free(s->kt);
	pipeline_free(s->pl);
	targets_free(&s->ts);
	objcache_free(s->objs);
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };

	/* One handler at a time: stop_requested is counted without races. */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
}

/* Starts the command after "--". Sampling is already running, so the
 * command is profiled from its first moments once it runs Python. */
static int launch(struct session *s)
{
	pid_t pid = launch_command(s->cfg->command);

	if (pid < 0)
		return -1;
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
	    !(s->rec = record_open(s->cfg->record, live_src(s), err, sizeof(err)))) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		return -1;
	}
	if (find_targets(s))
		return -1;
	/* The run id in the series' names: our pid (eventlog.c records it). */
	if (output_init(&s->out, s->cfg, (uint32_t)getpid(), err, sizeof(err))) {
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		return -1;
	}
	/* --kernel reads /proc/kallsyms (~80 ms, seconds under load) before
	 * the events run: the duration counts from their first sample. */
	if (load_bpf(s) || load_ksym(s) || attach_events(s))
		return -1;
	/* The window starts with the first sample it may hold. */
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	s->start_mono = (uint64_t)s->t0.tv_sec * 1000000000ULL + (uint64_t)s->t0.tv_nsec;
	s->start_wall = wall_ns();
	if (s->cfg->duration_ms)
		bpf_attach_stop_at(&s->bpf, s->start_mono + s->cfg->duration_ms * 1000000ULL);
	if (start_pipeline(s))
		return -1;
	catch_up(s);
	s->status_line = !s->cfg->quiet && isatty(STDERR_FILENO);
	say(s, "pyperf-pprof: sampling %s every %" PRIu64 "%s on %d CPUs%s%s\n", s->cfg->event,
	    s->cfg->frequency ? 1000000000ULL / s->cfg->frequency : s->cfg->sample_period,
	    s->cfg->frequency ? " ns (frequency mode)" : " events", s->bpf.nevents,
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

/* Launch mode's exit status: the command's (128 + signal when one
 * killed it) once the profile is written. A command still running (-d
 * ended first, or it outlived CHILD_WAIT_NS after a stop signal) goes
 * on, detached; the status is then the profiler's own. */
static int child_outcome(struct session *s, int rc)
{
	reap_child(s);
	if (s->child_exited)
		return rc ? rc : s->child_status;
	if (s->child_wait_end)
		fprintf(stderr, "pyperf-pprof: the command (pid %d) did not exit within %lld s of the signal; it goes on\n",
			(int)s->child, CHILD_WAIT_NS / 1000000000LL);
	else
		say(s, "pyperf-pprof: -d %" PRIu64 " ended before the command; it goes on (pid %d)\n",
		    s->cfg->duration_ms, (int)s->child);
	return rc;
}

int session_run(const struct config *cfg)
{
	struct session *s = calloc(1, sizeof(*s));
	char err[512];
	int rc = 1;

	if (!s)
		return 1;
	s->cfg = cfg;
	/* Another pyperf-pprof knows us by this name, however our file is
	 * called (targets_is_profiler); so do we know it. */
	prctl(PR_SET_NAME, TARGETS_PROFILER_COMM);
	bpf_attach_log_level(cfg->verbose);
	install_signals();
	if (start(s) == 0) {
		int polled = poll_loop(s), empty;
		struct report_view v;

		stop_sampling(s);
		/* Whatever happened, what was collected is written. */
		rc = write_profile(s, 1, 0) || polled ? 1 : 0;
		v = view(s);
		empty = report_empty(&v);
		if (s->child)
			rc = child_outcome(s, rc);
		if (rc == 0 && empty)
			rc = SESSION_EXIT_EMPTY;
	}
	cleanup(s);
	if (record_close(s->rec, err, sizeof(err))) {	/* --record: no-op otherwise */
		fprintf(stderr, "pyperf-pprof: %s\n", err);
		rc = rc ? rc : 1;
	}
	target_src_live_free(s->live);
	maps_iter_close(s->mapsi);
	free(s);
	return rc;
}
