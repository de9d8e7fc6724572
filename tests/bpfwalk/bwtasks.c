/*
 * The running task's search (bpf/asynctask.bpf.h, find_tasks) on made-up
 * memory: when it may say that the thread runs no task at the sample
 * (SAMPLE_F_NO_TASK, which spares user space every read for the label)
 * and when it must not. No capture holds these states (the captures are
 * of programs without asyncio), so each case builds one: a 3.14 thread
 * state, the current-tasks dict with its keys, a C Task and its
 * coroutine, at the offsets of sid's 3.14 (GIL build); before 3.14 the
 * same dict alone.
 */
#include "bwtasks.h"

#include <errno.h>
#include <string.h>

#include "bpfwalk.h"

#define BASE		0x100000ull
#define IMG		4096
#define TSTATE		(BASE + 0x000)
#define DICT		(BASE + 0x400)
#define KEYS		(BASE + 0x500)
#define TASK		(BASE + 0x800)
#define CORO		(BASE + 0x900)
#define TS_TASK		872		/* asyncio_running_task, sid's 3.14 */
#define NOWHERE		0x7000ull	/* not in the image: a failed read */

/* struct PyDictKeysObject (3.11+): log2 size, log2 index bytes, kind,
 * nentries, indices; entries of 24 bytes follow the indices. */
#define DK_LOG2		8
#define DK_LOG2_IX	9
#define DK_KIND		10
#define DK_NENTRIES	24
#define DK_INDICES	32

static uint8_t img[IMG];

static ssize_t img_readv(void *ctx, pid_t pid, const struct iovec *local, unsigned long nlocal,
			 const struct iovec *remote, unsigned long nremote)
{
	uint64_t at = (uint64_t)(uintptr_t)remote[0].iov_base;
	size_t n = remote[0].iov_len;

	(void)ctx; (void)pid; (void)nremote;
	if (nlocal != 1 || at < BASE || at + n > BASE + IMG || local[0].iov_len < n) {
		errno = EFAULT;
		return -1;
	}
	memcpy(local[0].iov_base, img + (at - BASE), n);
	return (ssize_t)n;
}

static const struct target_src_ops img_ops = { .readv = img_readv };
static const struct target_src img_src = { .ops = &img_ops };

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(img + (addr - BASE), &v, 8);
}

/* The source user space writes for a 3.14 process (note_src, in
 * src/python/pyasyncio.c). */
static struct py_task_src src_314(void)
{
	return (struct py_task_src){
		.dict = DICT, .ts_task = TS_TASK, .dict_keys = 32,
		.dk_size = PYPERF_NO_FIELD, .dk_log2_index_bytes = DK_LOG2_IX,
		.dk_kind = DK_KIND, .dk_kind_general = 0, .dk_nentries = DK_NENTRIES,
		.dk_indices = DK_INDICES, .entry_size = 24, .entry_value = 16,
		.ob_type = 8, .task_coro = 32, .task_name = 40,
		.cr_frame = PYPERF_NO_FIELD, .cr_iframe = 64, .cr_qualname = 56,
		.task_read = 48,
	};
}

/* The dict's keys: the shared empty keys (log2 size 0, unicode kind, no
 * entry), or a table of 8 with n entries whose values are vals. */
static void keys(int n, const uint64_t *vals)
{
	memset(img + (KEYS - BASE), 0, 0x200);
	put64(DICT + 32, KEYS);
	if (n < 0) {
		img[KEYS - BASE + DK_KIND] = 1;
		return;
	}
	img[KEYS - BASE + DK_LOG2] = 3;
	img[KEYS - BASE + DK_LOG2_IX] = 3;
	put64(KEYS + DK_NENTRIES, (uint64_t)n);
	for (int i = 0; i < n && i < 8; i++) {
		put64(KEYS + DK_INDICES + 8 + 24 * i + 8, vals[i] ? 0x5000 : 0);
		put64(KEYS + DK_INDICES + 8 + 24 * i + 16, vals[i]);
	}
}

/* A fresh image: no running task, an empty dict, a C Task at TASK. */
static void reset(void)
{
	memset(img, 0, sizeof(img));
	put64(TSTATE + TS_TASK, 0);
	keys(-1, NULL);
	put64(TASK + 8, 0xabc000);	/* ob_type */
	put64(TASK + 32, CORO);		/* task_coro */
}

static int check(FILE *out, const char *what, const struct py_task_src *tsrc, uint64_t tstate,
		 int want, uint32_t want_cands)
{
	static struct py_sample s;
	int none;

	memset(&s, 0, sizeof(s));
	none = bpfwalk_find_tasks(tsrc, &img_src, 1, tstate, &s);
	if (none == want && s.ntask == want_cands) {
		fprintf(out, "ok tasks: %s: %s\n", what, none ? "none running" : "not said");
		return 0;
	}
	fprintf(out, "FAIL tasks: %s: find_tasks gave %d with %u candidates, expected %d with %u\n",
		what, none, s.ntask, want, want_cands);
	return 1;
}

int bwtasks_run(FILE *out)
{
	struct py_task_src src = src_314(), old = src_314();
	uint64_t none2[2] = { 0, 0 }, one[2] = { 0, TASK };
	int bad = 0;

	old.ts_task = 0;	/* before 3.14: no thread state's task */
	reset();
	bad += check(out, "no task, dict of the shared empty keys", &src, TSTATE, 1, 0);
	keys(2, none2);
	bad += check(out, "no task, dict whose entries were deleted", &src, TSTATE, 1, 0);
	keys(2, one);
	bad += check(out, "a pure-Python task in the dict (some loop's)", &src, TSTATE, 0, 0);
	keys(0, NULL);
	put64(KEYS + DK_NENTRIES, PY_TASK_DICT_ENTRIES + 1);
	bad += check(out, "more dict entries than read", &src, TSTATE, 0, 0);
	reset();
	put64(TSTATE + TS_TASK, TASK);
	bad += check(out, "a C Task in the thread state", &src, TSTATE, 0, 1);
	reset();
	bad += check(out, "thread state unreadable", &src, NOWHERE, 0, 0);
	put64(DICT + 32, NOWHERE);
	bad += check(out, "dict's keys unreadable", &src, TSTATE, 0, 0);
	reset();
	src.dict = 0;
	bad += check(out, "no dict known", &src, TSTATE, 0, 0);
	bad += check(out, "before 3.14, the dict not known to hold every task", &old, TSTATE, 0, 0);
	old.dict_all = 1;
	bad += check(out, "before 3.14, the dict of every task, empty", &old, 0, 1, 0);
	keys(2, one);
	bad += check(out, "before 3.14, the dict of every task, one running", &old, TSTATE, 0, 1);
	return bad;
}
