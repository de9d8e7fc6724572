/*
 * Tests of src/native/unwind.c and src/native/nsym.c on live processes, without BPF and
 * without stopping anyone: each target takes its own snapshot (registers
 * and the top 16 KiB of its stack, like the BPF program) into shared
 * memory and then sleeps; we unwind the snapshot against the live process
 * and symbolize the result.
 *
 *  - a C chain built with the test's flags (no frame pointers at -O2),
 *  - a C chain described only by .debug_frame (tests/unit/unwind_nocfi.c),
 *  - a frame without any CFI (code in anonymous memory) that keeps a frame
 *    pointer, crossed with it,
 *  - a CPython perf trampoline (anonymous memory, no CFI, no frame
 *    pointer) crossed by its known shape, and that shape's table,
 *  - a short stack copy whose rest is read from the live target,
 *  - the same C chain run from a deleted copy of this binary,
 *  - Debian's stripped /usr/bin/python3.11, snapshotting from a ctypes call
 *    so the stack crosses libffi, _ctypes, the eval loop and libc,
 *  - symbol lookups (exported, inside a function, .cold clones), cache
 *    bounds, bad input, and cost per stack and per address.
 *
 * By hand:
 *   gcc -O2 -g -fno-asynchronous-unwind-tables -fno-unwind-tables -Itests \
 *       -c tests/unit/unwind_nocfi.c -o /tmp/nocfi.o
 *   gcc -Wall -Wextra -O2 -g -Isrc -Ibpf -Itests tests/unit/test_unwind.c /tmp/nocfi.o \
 *       src/native/unwind.c src/native/nsym.c src/memsource/proc.c src/memsource/elffile.c \
 *       $(pkg-config --cflags --libs libunwind-generic libelf zlib) -o /tmp/tu && /tmp/tu
 *
 * One "ok ..." / "FAIL ..." / "skip ..." line per check; exits 1 if any
 * check failed, 77 if every check was skipped, else 0.
 */
#define _GNU_SOURCE
#include "check.h"
#include "elffile.h"
#include "nsym.h"
#include "objcache.h"
#include "proc.h"
#include "target_src.h"
#include "pyperf.h"
#include "trampoline.h"
#include "unwind.h"
#include "unwind_snap.h"
#include "unwind_table.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Every target here is read live. */
#define LIVE target_src_live()

_Static_assert((int)UNWIND_REG_COUNT == (int)PYPERF_NREGS, "register sets differ");
_Static_assert((int)UNWIND_REG_R11 == (int)PYREG_R11 && (int)UNWIND_REG_RBP == (int)PYREG_BP &&
	       (int)UNWIND_REG_RSP == (int)PYREG_SP && (int)UNWIND_REG_RIP == (int)PYREG_IP,
	       "register order differs from bpf/pyperf.h");
_Static_assert(SNAP_NREGS == UNWIND_REG_COUNT, "snapshot register count");

#define PYTHON		"/usr/bin/python3.11"
#define SHM_SIZE	(64u << 10)	/* struct snap, then the code copy */
#define CODE_OFF	(32u << 10)
#define MAX_NAMES	UNWIND_MAX_FRAMES

/*
 * rdi = struct snap *, rsi = end of the stack mapping, rdx = max bytes.
 * Position-independent and self-contained: Python copies these bytes into
 * its own memory and calls them through ctypes.
 */
__asm__(".pushsection .text\n"
	".globl snap_capture\n"
	".type snap_capture, @function\n"
	"snap_capture:\n"
	"	lea 8(%rsp), %rax\n"	/* the caller's rsp after our ret */
	"	mov %rax, 16(%rdi)\n"
	"	mov (%rsp), %rcx\n"	/* the caller's rip: our return address */
	"	mov %rcx, 8(%rdi)\n"
	"	mov %rbp, 24(%rdi)\n"
	"	mov %rbx, 32(%rdi)\n"
	"	mov %r12, 40(%rdi)\n"
	"	mov %r13, 48(%rdi)\n"
	"	mov %r14, 56(%rdi)\n"
	"	mov %r15, 64(%rdi)\n"
	"	mov %rsi, %rcx\n"
	"	sub %rax, %rcx\n"	/* bytes left in the stack mapping */
	"	cmp %rdx, %rcx\n"
	"	cmova %rdx, %rcx\n"
	"	mov %rcx, 144(%rdi)\n"
	"	mov %rdi, %r8\n"
	"	mov %rax, %rsi\n"
	"	lea 152(%rdi), %rdi\n"
	"	cld\n"
	"	rep movsb\n"
	"	movq $1, (%r8)\n"
	"	ret\n"
	".size snap_capture, .-snap_capture\n"
	".globl snap_capture_end\n"
	"snap_capture_end:\n"
	".popsection\n");
extern const char snap_capture_end[];

static const char py_script[] =
	"import ctypes, mmap, sys, time\n"
	"fd, size, off, n, most = map(int, sys.argv[1:6])\n"
	"mm = mmap.mmap(fd, size)\n"
	"libc = ctypes.CDLL(None)\n"
	"libc.mmap.restype = ctypes.c_void_p\n"
	"libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,"
	" ctypes.c_int, ctypes.c_int, ctypes.c_long]\n"
	"libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]\n"
	"code = libc.mmap(None, 4096, 3, 0x22, -1, 0)\n"
	"ctypes.memmove(code, mm[off:off + n], n)\n"
	"libc.mprotect(code, 4096, 5)\n"
	"end = [int(l.split()[0].split('-')[1], 16) for l in open('/proc/self/maps')"
	" if l.rstrip().endswith('[stack]')][0]\n"
	"snap = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64,"
	" ctypes.c_uint64)(code)\n"
	"def leaf():\n"
	"    snap(ctypes.addressof(ctypes.c_char.from_buffer(mm)), end, most)\n"
	"    time.sleep(60)\n"
	"leaf()\n";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- targets ---------------------------------------------------------- */

static volatile int chain_stop;

__attribute__((noipa)) static int chain_c(struct snap *s, uint64_t stack_end)
{
	snap_capture(s, stack_end, SNAP_STACK);
	while (!chain_stop)
		pause();
	return 1;
}

__attribute__((noipa)) static int chain_b(struct snap *s, uint64_t stack_end)
{
	return chain_c(s, stack_end) + 1;
}

__attribute__((noipa)) static int chain_a(struct snap *s, uint64_t stack_end)
{
	return chain_b(s, stack_end) + 1;
}

static void wait_forever(void)
{
	for (;;)
		pause();
}

/* JIT-like code in anonymous memory, so without CFI, keeping a frame
 * pointer: push rbp; mov rbp,rsp; push rbx; push r12; mov rbx,r8;
 * call *rcx (snap_capture); call *rbx (wait_forever). */
static const uint8_t jit_code[] = {
	0x55, 0x48, 0x89, 0xe5, 0x53, 0x41, 0x54, 0x4c, 0x89, 0xc3,
	0xff, 0xd1, 0xff, 0xd3, 0x41, 0x5c, 0x5b, 0x5d, 0xc3,
};

typedef void (*jit_fn)(struct snap *s, uint64_t stack_end, uint64_t max,
		       void (*capture)(struct snap *, uint64_t, uint64_t),
		       void (*wait)(void));

__attribute__((noipa)) static int jit_caller(struct snap *s, uint64_t stack_end)
{
	void *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		_exit(3);
	memcpy(mem, jit_code, sizeof(jit_code));
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC))
		_exit(3);
	((jit_fn)mem)(s, stack_end, SNAP_STACK, snap_capture, wait_forever);
	return 1;
}

/* CPython's x86_64 perf trampoline templates (Python/asm_trampoline.S):
 * 3.12/3.13 sub $8,%rsp; call *%rcx; add $8,%rsp; ret (no frame pointer),
 * 3.14+ (Debian's CET build) endbr64; push %rbp; mov %rsp,%rbp;
 * call *%rcx; pop %rbp; ret. No CFI either way. */
static const uint8_t tramp_code[] = {
	0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3,
};
static const uint8_t tramp14_code[] = {
	0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3,
};

typedef void (*tramp_fn)(struct snap *s, uint64_t stack_end, uint64_t max,
			 void (*capture)(struct snap *, uint64_t, uint64_t));

__attribute__((noipa)) static int tramp_caller(struct snap *s, uint64_t stack_end,
						      const uint8_t *code, size_t len)
{
	void *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		_exit(3);
	/* Near the end of the page, so the code read crosses into the next
	 * (unmapped) one only after the trampoline's last byte. */
	memcpy((char *)mem + 4096 - 16 - len, code, len);
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC))
		_exit(3);
	((tramp_fn)((char *)mem + 4096 - 16 - len))(s, stack_end, SNAP_STACK, snap_capture);
	wait_forever();
	return 1;
}

/* Child mode: test_unwind --child FD c|nocfi|jit|tramp|tramp14. Never returns. */
static int child_main(int fd, const char *chain)
{
	struct snap *s = mmap(NULL, SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	struct proc_maps maps;
	const struct proc_map *m;
	int here;

	if (s == MAP_FAILED || proc_maps_read(LIVE, getpid(), &maps))
		_exit(3);
	m = proc_maps_find(&maps, (uint64_t)(uintptr_t)&here);
	if (!m)
		_exit(3);
	if (strcmp(chain, "nocfi") == 0)
		nocfi_a(s, m->end);
	else if (strcmp(chain, "jit") == 0)
		jit_caller(s, m->end);
	else if (strcmp(chain, "tramp") == 0)
		tramp_caller(s, m->end, tramp_code, sizeof(tramp_code));
	else if (strcmp(chain, "tramp14") == 0)
		tramp_caller(s, m->end, tramp14_code, sizeof(tramp14_code));
	else
		chain_a(s, m->end);
	_exit(0);
}

struct target {
	pid_t pid;
	int fd;
	struct snap *s;
};

static int shm_open_snap(struct target *t)
{
	t->fd = memfd_create("unwind-snap", 0);	/* inherited across exec */
	if (t->fd < 0 || ftruncate(t->fd, SHM_SIZE))
		return -1;
	t->s = mmap(NULL, SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	return t->s == MAP_FAILED ? -1 : 0;
}

static int wait_ready(struct target *t)
{
	for (int i = 0; i < 10000; i++) {
		int st;

		if (t->s->ready)
			return 0;
		if (waitpid(t->pid, &st, WNOHANG) == t->pid) {
			t->pid = 0;
			return -1;
		}
		usleep(1000);
	}
	return -1;
}

static void target_stop(struct target *t)
{
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
	}
	if (t->s && t->s != MAP_FAILED)
		munmap(t->s, SHM_SIZE);
	if (t->fd >= 0)
		close(t->fd);
	memset(t, 0, sizeof(*t));
	t->fd = -1;
}

/* Runs exe (this binary or a copy) in child mode with the given chain. */
static int start_c_target(struct target *t, const char *exe, const char *chain)
{
	char fd[16];

	memset(t, 0, sizeof(*t));
	if (shm_open_snap(t))
		return -1;
	snprintf(fd, sizeof(fd), "%d", t->fd);
	t->pid = fork();
	if (t->pid == 0) {
		execl(exe, exe, "--child", fd, chain, (char *)NULL);
		_exit(127);
	}
	return t->pid < 0 ? -1 : wait_ready(t);
}

static int start_py_target(struct target *t)
{
	size_t n = (size_t)(snap_capture_end - (const char *)(uintptr_t)snap_capture);
	char a[5][24];

	memset(t, 0, sizeof(*t));
	if (n > SHM_SIZE - CODE_OFF || shm_open_snap(t))
		return -1;
	memcpy((char *)t->s + CODE_OFF, (const void *)(uintptr_t)snap_capture, n);
	snprintf(a[0], sizeof(a[0]), "%d", t->fd);
	snprintf(a[1], sizeof(a[1]), "%u", SHM_SIZE);
	snprintf(a[2], sizeof(a[2]), "%u", CODE_OFF);
	snprintf(a[3], sizeof(a[3]), "%zu", n);
	snprintf(a[4], sizeof(a[4]), "%u", SNAP_STACK);
	t->pid = fork();
	if (t->pid == 0) {
		execl(PYTHON, PYTHON, "-c", py_script, a[0], a[1], a[2], a[3], a[4],
		      (char *)NULL);
		_exit(127);
	}
	return t->pid < 0 ? -1 : wait_ready(t);
}

static void snap_input(const struct target *t, struct unwind_input *in)
{
	memset(in, 0, sizeof(*in));
	in->src = LIVE;
	in->pid = t->pid;
	memcpy(in->regs, t->s->regs, sizeof(in->regs));
	in->stack = t->s->stack;
	in->stack_len = (uint32_t)t->s->stack_len;
	in->stack_addr = t->s->regs[UNWIND_REG_RSP];
}

/* ---- helpers ---------------------------------------------------------- */

struct stack {
	uint64_t pcs[MAX_NAMES];
	char names[MAX_NAMES][128];
	size_t n;
	int end;
};

static int unwind_and_name(struct unwind_ctx *u, struct nsym_ctx *ns,
			   const struct unwind_input *in, struct stack *st)
{
	st->end = unwind_stack(u, in, st->pcs, MAX_NAMES, &st->n);
	for (size_t i = 0; i < st->n; i++) {
		struct nsym_result r;
		uint64_t pc = i ? st->pcs[i] - 1 : st->pcs[i];

		if (nsym_resolve(ns, LIVE, in->pid, pc, 0, &r) == NSYM_OK)
			snprintf(st->names[i], sizeof(st->names[i]), "%s", r.name);
		else
			snprintf(st->names[i], sizeof(st->names[i]), "[%s+0x%llx]",
				 strrchr(r.path, '/') ? strrchr(r.path, '/') + 1 : r.path,
				 (unsigned long long)(pc - r.map_start + r.map_offset));
	}
	return st->end;
}

static void print_stack(const char *what, const struct stack *st)
{
	printf("# %s: %zu frames, end %d:", what, st->n, st->end);
	for (size_t i = 0; i < st->n; i++)
		printf(" %s", st->names[i]);
	putchar('\n');
}

/* 1 if the names appear in the stack in this order (gaps allowed). */
static int has_in_order(const struct stack *st, const char *const *names)
{
	size_t i = 0;

	for (; *names; names++) {
		while (i < st->n && strcmp(st->names[i], *names))
			i++;
		if (i == st->n)
			return 0;
		i++;
	}
	return 1;
}

static int starts_with(const struct stack *st, const char *const *names)
{
	for (size_t i = 0; names[i]; i++)
		if (i >= st->n || strcmp(st->names[i], names[i]))
			return 0;
	return 1;
}

/* libc's path in pid and its separate debug file, if installed. */
static struct elf_file *libc_debug(int pid, char *path, size_t len)
{
	struct proc_maps maps;
	struct elf_file *ef, *dbg = NULL;

	path[0] = '\0';
	if (proc_maps_read(LIVE, pid, &maps))
		return NULL;
	for (size_t i = 0; i < maps.n && !path[0]; i++)
		if (strstr(maps.v[i].path, "/libc.so.6"))
			snprintf(path, len, "%s", maps.v[i].path);
	proc_maps_free(&maps);
	ef = path[0] ? elf_file_open(path) : NULL;
	if (ef)
		dbg = elf_file_open_debug(LIVE, ef, "", path);
	elf_file_close(ef);
	return dbg;
}

/* Runtime address of a link-time address of the object at path in pid. */
static uint64_t runtime_addr(int pid, const char *path, struct elf_file *ef, uint64_t vaddr)
{
	struct proc_maps maps;
	uint64_t off, r = 0;

	if (elf_file_vaddr_to_offset(ef, vaddr, &off) || proc_maps_read(LIVE, pid, &maps))
		return 0;
	for (size_t i = 0; i < maps.n && !r; i++) {
		const struct proc_map *m = &maps.v[i];

		if (!strcmp(m->path, path) && off >= m->offset && off - m->offset < m->end - m->start)
			r = m->start + off - m->offset;
	}
	proc_maps_free(&maps);
	return r;
}

/* ---- C chains --------------------------------------------------------- */

/* A shorter stack copy: the frames above it are read from the live target,
 * or the unwind stops when that is not allowed. The C chain's frames stay
 * as they were (it sleeps in chain_c), unlike Python's ctypes frames. */
static void test_partial(const struct unwind_input *full, const struct stack *want)
{
	struct unwind_opts local = { .no_target_reads = 1 };
	struct objcache *oc = objcache_new(NULL), *ocl = objcache_new(NULL);
	struct unwind_ctx *u = unwind_ctx_new(oc, NULL), *ul = unwind_ctx_new(ocl, &local);
	struct unwind_input in = *full;
	uint64_t pcs[MAX_NAMES];
	size_t n;
	int r;

	in.stack_len = 64;
	r = unwind_stack(u, &in, pcs, MAX_NAMES, &n);
	check(r == UNWIND_END_OUTERMOST && n == want->n && !memcmp(pcs, want->pcs, n * sizeof(pcs[0])) &&
	      unwind_get_stats(u)->mem_target > 0,
	      "C chain: 64-byte copy, rest read from the target: same stack (%llu reads)",
	      (unsigned long long)unwind_get_stats(u)->mem_target);
	r = unwind_stack(ul, &in, pcs, MAX_NAMES, &n);
	check(r == UNWIND_END_READ && n >= 1 && n < want->n && !memcmp(pcs, want->pcs, n * sizeof(pcs[0])),
	      "C chain: 64-byte copy, no target reads: a correct prefix (%zu frames, end %d)", n, r);
	objcache_forget_pid(oc, in.pid);
	unwind_stack(u, full, pcs, MAX_NAMES, &n);
	check(objcache_get_stats(oc)->proc_misses == 2 && n == want->n,
	      "objcache_forget_pid: maps read again, same stack");
	check(objcache_get_stats(oc)->fid_hits > 0,
	      "objcache_forget_pid: the mapped files known again by their maps lines, not stat'ed (%llu)",
	      (unsigned long long)objcache_get_stats(oc)->fid_hits);
	unwind_ctx_free(u);
	unwind_ctx_free(ul);
	objcache_free(oc);
	objcache_free(ocl);
}

static void test_c_chain(const char *self)
{
	static const char *const top[] = { "chain_c", "chain_b", "chain_a", NULL };
	static const char *const tail[] = { "chain_a", "main", "__libc_start_main", NULL };
	struct unwind_opts dwarf_only = { .no_fp_fallback = 1 };
	struct objcache *oc = objcache_new(NULL), *ocd = objcache_new(NULL);
	struct unwind_ctx *u = unwind_ctx_new(oc, NULL), *ud = unwind_ctx_new(ocd, &dwarf_only);
	struct nsym_ctx *ns = nsym_ctx_new(oc);
	struct target t;
	struct unwind_input in;
	struct stack st;
	char libc[4096];
	struct elf_file *dbg;

	if (start_c_target(&t, self, "c")) {
		check(0, "C target started");
		goto out;
	}
	snap_input(&t, &in);
	unwind_and_name(u, ns, &in, &st);
	print_stack("C chain", &st);
	check(starts_with(&st, top), "C chain: leaf frames are chain_c, chain_b, chain_a");
	check(has_in_order(&st, tail), "C chain: ... main, __libc_start_main");
	check(st.end == UNWIND_END_OUTERMOST, "C chain: unwound to the outermost frame (%d)", st.end);
	check(unwind_get_stats(u)->frames_fp == 0, "C chain: no frame-pointer steps");
	dbg = libc_debug(t.pid, libc, sizeof(libc));
	if (dbg) {
		static const char *const start[] = { "main", "__libc_start_call_main",
						     "__libc_start_main", NULL };

		check(has_in_order(&st, start),
		      "C chain: static __libc_start_call_main named from libc's debug file");
		elf_file_close(dbg);
	} else {
		check_skip("libc debug file (libc6-dbg) not installed");
	}
	test_partial(&in, &st);
	unwind_and_name(ud, ns, &in, &st);
	check(starts_with(&st, top) && st.end == UNWIND_END_OUTERMOST,
	      "C chain: same with DWARF only");
out:
	target_stop(&t);
	unwind_ctx_free(u);
	unwind_ctx_free(ud);
	nsym_ctx_free(ns);
	objcache_free(oc);
	objcache_free(ocd);
}

static int has_debug_frame(const char *self)
{
	struct elf_file *ef = elf_file_open(self);
	struct elf_section sec;
	int r = ef && elf_file_section(ef, ".debug_frame", &sec) == 0 && sec.size;

	elf_file_close(ef);
	return r;
}

static void test_nocfi_chain(const char *self)
{
	static const char *const top[] = { "nocfi_c", "nocfi_b", "nocfi_a", NULL };
	static const char *const tail[] = { "nocfi_a", "main", "__libc_start_main", NULL };
	struct objcache *oc = objcache_new(NULL);
	struct unwind_ctx *u = unwind_ctx_new(oc, NULL);
	struct nsym_ctx *ns = nsym_ctx_new(oc);
	const struct unwind_stats *s = unwind_get_stats(u);
	struct target t;
	struct unwind_input in;
	struct stack st;

	if (!has_debug_frame(self)) {
		check_skip(".debug_frame chain: %s has no .debug_frame", self);
		goto out;
	}
	if (start_c_target(&t, self, "nocfi")) {
		check(0, ".debug_frame target started");
		goto out;
	}
	snap_input(&t, &in);
	unwind_and_name(u, ns, &in, &st);
	print_stack(".debug_frame chain", &st);
	check(starts_with(&st, top) && has_in_order(&st, tail),
	      ".debug_frame chain: nocfi_c, nocfi_b, nocfi_a ... main");
	check(st.end == UNWIND_END_OUTERMOST, ".debug_frame chain: outermost frame (%d)", st.end);
	check(s->debug_frame_tables == 1 && s->frames_fp == 0,
	      ".debug_frame chain: one .debug_frame indexed, no frame-pointer steps");
	target_stop(&t);
out:
	unwind_ctx_free(u);
	nsym_ctx_free(ns);
	objcache_free(oc);
}

/* A frame without CFI (anonymous memory) is crossed with its frame pointer. */
static void test_jit_frame(const char *self)
{
	static const char *const tail[] = { "jit_caller", "main", "__libc_start_main", NULL };
	struct unwind_opts dwarf_only = { .no_fp_fallback = 1 };
	struct objcache *oc = objcache_new(NULL), *ocd = objcache_new(NULL);
	struct unwind_ctx *u = unwind_ctx_new(oc, NULL), *ud = unwind_ctx_new(ocd, &dwarf_only);
	struct nsym_ctx *ns = nsym_ctx_new(oc);
	struct nsym_result r;
	struct target t;
	struct unwind_input in;
	struct stack st;

	if (start_c_target(&t, self, "jit")) {
		check(0, "JIT target started");
		goto out;
	}
	snap_input(&t, &in);
	unwind_and_name(u, ns, &in, &st);
	print_stack("JIT frame", &st);
	check(st.n > 1 && nsym_resolve(ns, LIVE, t.pid, st.pcs[0], 0, &r) == NSYM_NO_FILE &&
	      !strcmp(st.names[1], "jit_caller") && has_in_order(&st, tail) &&
	      st.end == UNWIND_END_OUTERMOST,
	      "JIT frame: anonymous leaf, then jit_caller ... main via its frame pointer");
	check(unwind_get_stats(u)->frames_fp == 1, "JIT frame: exactly one frame-pointer step");
	unwind_and_name(ud, ns, &in, &st);
	check(st.n == 1 && st.end == UNWIND_END_NO_INFO,
	      "JIT frame: DWARF only stops there (end %d after %zu)", st.end, st.n);
out:
	target_stop(&t);
	unwind_ctx_free(u);
	unwind_ctx_free(ud);
	nsym_ctx_free(ns);
	objcache_free(oc);
	objcache_free(ocd);
}

/* A perf trampoline is crossed by the rules of the template it copies
 * (in->tramp), not by a frame pointer, and reported as such; without the
 * template the same stack stops at it. mode: "tramp" (3.12/3.13 shape),
 * "tramp14" (3.14+). */
static void test_trampoline(const char *self, const char *mode)
{
	static const char *const tail[] = { "tramp_caller", "main", "__libc_start_main", NULL };
	struct unwind_opts dwarf_only = { .no_fp_fallback = 1 };
	struct objcache *oc = objcache_new(NULL);
	struct unwind_ctx *u = unwind_ctx_new(oc, &dwarf_only);
	struct nsym_ctx *ns = nsym_ctx_new(oc);
	int v14 = strcmp(mode, "tramp14") == 0;
	uint8_t kinds[MAX_NAMES];
	struct tramp_shape sh;
	struct target t = { .fd = -1 };
	struct unwind_input in;
	struct stack st;

	if (tramp_shape_derive(v14 ? tramp14_code : tramp_code,
			       v14 ? sizeof(tramp14_code) : sizeof(tramp_code), &sh)) {
		check(0, "%s: template decoded", mode);
		goto out;
	}
	if (start_c_target(&t, self, mode)) {
		check(0, "%s: trampoline target started", mode);
		goto out;
	}
	snap_input(&t, &in);
	unwind_and_name(u, ns, &in, &st);
	check(st.end != UNWIND_END_OUTERMOST && unwind_get_stats(u)->frames_trampoline == 0,
	      "%s: without the template: stops at the trampoline (end %d)", mode, st.end);
	in.tramp = &sh;
	unwind_and_name(u, ns, &in, &st);
	print_stack(mode, &st);
	check(st.n > 2 && !strcmp(st.names[1], "tramp_caller") && has_in_order(&st, tail) &&
	      st.end == UNWIND_END_OUTERMOST,
	      "%s: anonymous leaf, then tramp_caller ... main (end %d)", mode, st.end);
	check(unwind_get_stats(u)->frames_trampoline == 1 && unwind_get_stats(u)->frames_fp == 0,
	      "%s: one trampoline step, no frame-pointer step", mode);
	memset(kinds, 0xff, sizeof(kinds));
	st.end = unwind_stack_kinds(u, &in, st.pcs, kinds, MAX_NAMES, &st.n);
	check(st.n > 2 && kinds[0] == UNWIND_FRAME_TRAMPOLINE && kinds[1] == UNWIND_FRAME_CODE &&
	      kinds[st.n - 1] == UNWIND_FRAME_CODE,
	      "%s: kinds say which frame is the trampoline", mode);
out:
	target_stop(&t);
	unwind_ctx_free(u);
	nsym_ctx_free(ns);
	objcache_free(oc);
}

/* A copy of this binary, deleted while it runs: map_files still opens it. */
static void test_deleted(const char *self)
{
	static const char *const top[] = { "chain_c", "chain_b", "chain_a", NULL };
	char dir[] = "/tmp/test_unwind.XXXXXX", copy[64] = "", cmd[8300];
	struct objcache *oc = objcache_new(NULL);
	struct unwind_ctx *u = unwind_ctx_new(oc, NULL);
	struct nsym_ctx *ns = nsym_ctx_new(oc);
	struct nsym_result r;
	struct target t = { .fd = -1 };
	struct unwind_input in;
	struct stack st;

	if (geteuid() != 0) {
		check_skip("deleted binary: /proc/PID/map_files needs root (CAP_SYS_ADMIN)");
		goto out;
	}
	if (!mkdtemp(dir))
		goto out;
	snprintf(copy, sizeof(copy), "%s/copy", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", self, copy);
	if (system(cmd) || start_c_target(&t, copy, "c")) {
		check(0, "deleted copy: target started");
		goto out;
	}
	unlink(copy);
	rmdir(dir);
	snap_input(&t, &in);
	unwind_and_name(u, ns, &in, &st);
	check(starts_with(&st, top) && st.end == UNWIND_END_OUTERMOST,
	      "deleted binary: unwound and named through /proc/PID/map_files");
	nsym_resolve(ns, LIVE, t.pid, st.pcs[0], 0, &r);
	check(r.deleted && strcmp(r.path, copy) == 0 && r.build_id[0],
	      "deleted binary: path %s, deleted flag, build-id %s", r.path, r.build_id);
out:
	target_stop(&t);
	if (copy[0]) {
		unlink(copy);
		rmdir(dir);
	}
	unwind_ctx_free(u);
	nsym_ctx_free(ns);
	objcache_free(oc);
}

/* A file known by its maps line: watched (inotify), it is trusted without a
 * stat until it changes, and a change in place (same inode, new mtime) is
 * seen at once and the file opened again; without a watch (no inotify
 * here), it is stat'ed again after OC_FID_NS (by its name now): unchanged,
 * it is the same entry without an open; touched, it is opened again. */
static void fid_again(struct objcache *oc, struct nsym_ctx *ns, uint64_t pc, int wait,
		      struct nsym_result *r)
{
	objcache_forget_pid(oc, getpid());
	if (wait)
		usleep(1050000);
	nsym_resolve(ns, LIVE, getpid(), pc, 0, r);
}

static void test_fid_recheck(const char *self)
{
	char dir[] = "/tmp/test_unwind.XXXXXX", copy[64] = "", cmd[8300];
	struct objcache *oc = objcache_new(NULL);
	struct nsym_ctx *ns = nsym_ctx_new(oc);
	const struct objcache_stats *s = objcache_get_stats(oc);
	struct nsym_result r;
	void *map = MAP_FAILED;
	uint64_t pc, opens;
	int fd = -1, watched;

	if (!mkdtemp(dir))
		goto out;
	snprintf(copy, sizeof(copy), "%s/copy", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", self, copy);
	fd = system(cmd) ? -1 : open(copy, O_RDONLY);
	map = fd >= 0 ? mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	if (map == MAP_FAILED) {
		check(0, "fid recheck: a mapped copy");
		goto out;
	}
	pc = (uint64_t)(uintptr_t)map + 16;
	nsym_resolve(ns, LIVE, getpid(), pc, 0, &r);
	opens = s->elf_opens;
	watched = s->watches == 1;
	printf("# fid recheck: %s\n", watched ? "watched" : "no watch: stat'ed again");
	fid_again(oc, ns, pc, !watched, &r);
	check(s->elf_opens == opens && s->fid_checks == (watched ? 0 : 1) && !strcmp(r.path, copy),
	      "fid recheck: an unchanged file known again, not opened (%llu stats)",
	      (unsigned long long)s->fid_checks);
	if (utimensat(AT_FDCWD, copy, NULL, 0)) {
		check(0, "fid recheck: touch the copy");
		goto out;
	}
	fid_again(oc, ns, pc, !watched, &r);
	check(s->elf_opens == opens + 1 && s->watch_fired == (watched ? 1 : 0) &&
	      !strcmp(r.path, copy),
	      "fid recheck: a file changed in place is opened again%s",
	      watched ? ", at once" : "");
out:
	if (map != MAP_FAILED)
		munmap(map, 4096);
	if (fd >= 0)
		close(fd);
	if (copy[0]) {
		unlink(copy);
		rmdir(dir);
	}
	nsym_ctx_free(ns);
	objcache_free(oc);
}

/* ---- python3.11 ------------------------------------------------------- */

static void test_py_stack(struct target *t)
{
	static const char *const order[] = { "_PyEval_EvalFrameDefault", "PyEval_EvalCode",
					     "Py_RunMain", "Py_BytesMain", "__libc_start_main",
					     NULL };
	struct unwind_opts dwarf_only = { .no_fp_fallback = 1 };
	struct objcache_opts small = { .max_objects = 2, .max_procs = 1 };
	struct objcache *oc = objcache_new(NULL), *ocd = objcache_new(NULL);
	struct objcache *ocs = objcache_new(&small);
	struct unwind_ctx *u = unwind_ctx_new(oc, NULL), *ud = unwind_ctx_new(ocd, &dwarf_only);
	struct unwind_ctx *us = unwind_ctx_new(ocs, NULL);
	struct nsym_ctx *ns = nsym_ctx_new(oc), *nss = nsym_ctx_new(ocs);
	struct unwind_input in;
	struct stack st, st2;

	snap_input(t, &in);
	unwind_and_name(u, ns, &in, &st);
	print_stack("python3.11", &st);
	check(has_in_order(&st, order), "python3.11: eval loop ... Py_BytesMain, __libc_start_main");
	check(st.end == UNWIND_END_OUTERMOST, "python3.11: outermost frame (%d)", st.end);
	unwind_and_name(ud, ns, &in, &st2);
	check(st2.n == st.n && st2.end == UNWIND_END_OUTERMOST &&
	      !memcmp(st.pcs, st2.pcs, st.n * sizeof(st.pcs[0])),
	      "python3.11: same stack with DWARF only (no frame pointers needed)");
	unwind_and_name(us, nss, &in, &st2);
	check(st2.n == st.n && !memcmp(st.pcs, st2.pcs, st.n * sizeof(st.pcs[0])) &&
	      objcache_get_stats(ocs)->obj_evictions > 0,
	      "python3.11: same stack with 2 objects cached (%llu evictions)",
	      (unsigned long long)objcache_get_stats(ocs)->obj_evictions);
	check(has_in_order(&st2, order), "python3.11: same names with evictions");
	unwind_ctx_free(u);
	unwind_ctx_free(ud);
	unwind_ctx_free(us);
	nsym_ctx_free(ns);
	nsym_ctx_free(nss);
	objcache_free(oc);
	objcache_free(ocd);
	objcache_free(ocs);
}

/* Looks sym up in syms (the object or its debug file), places it with the
 * segments of the object file itself, and resolves it in pid. */
static void check_symbol(struct nsym_ctx *ns, int pid, const char *path, struct elf_file *syms,
			 const char *sym, uint64_t delta_div, const char *want)
{
	struct elf_file *ef = elf_file_open(path);
	struct nsym_result r;
	uint64_t value, size, pc;

	if (!ef || elf_file_symbol(syms, sym, &value, &size)) {
		check_skip("%s not in %s", sym, path);
		elf_file_close(ef);
		return;
	}
	pc = runtime_addr(pid, path, ef, value + (delta_div ? size / delta_div : 0));
	elf_file_close(ef);
	nsym_resolve(ns, LIVE, pid, pc, 0, &r);
	check(pc && r.status == NSYM_OK && strcmp(r.name, want) == 0 &&
	      r.file_vaddr == value + (delta_div ? size / delta_div : 0) &&
	      strcmp(r.path, path) == 0,
	      "nsym: %s%s in %s -> %s (got %s)", sym, delta_div ? "+size/2" : "", path, want,
	      r.name ? r.name : "no symbol");
}

static void test_py_symbols(struct target *t)
{
	struct objcache *oc = objcache_new(NULL);
	struct nsym_ctx *ns = nsym_ctx_new(oc);
	struct elf_file *ef = elf_file_open(PYTHON), *dbg;
	struct nsym_result r;
	char libc[4096], hex[2 * 64 + 1] = "";
	uint8_t id[64];
	size_t len = 0;

	if (!ef) {
		check(0, "open %s", PYTHON);
		goto out;
	}
	check_symbol(ns, t->pid, PYTHON, ef, "PyEval_EvalCode", 0, "PyEval_EvalCode");
	check_symbol(ns, t->pid, PYTHON, ef, "_PyEval_EvalFrameDefault", 2,
		     "_PyEval_EvalFrameDefault");
	if (elf_file_build_id(ef, id, sizeof(id), &len) == 0)
		for (size_t i = 0; i < len; i++)
			snprintf(hex + 2 * i, 3, "%02x", id[i]);
	nsym_resolve(ns, LIVE, t->pid, runtime_addr(t->pid, PYTHON, ef, 0x401000), 0, &r);
	/* Stripped: symbols come from python3.11-dbg's file when installed. */
	dbg = elf_file_open_debug(LIVE, ef, "", PYTHON);
	check(strcmp(r.build_id, hex) == 0 && r.map_limit > r.map_start &&
	      r.from_debug_file == (dbg != NULL), "nsym: build-id %s and mapping of %s%s",
	      r.build_id, PYTHON, dbg ? " (symbols from its debug file)" : "");
	elf_file_close(dbg);
	dbg = libc_debug(t->pid, libc, sizeof(libc));
	if (dbg) {
		check_symbol(ns, t->pid, libc, dbg, "strfromd.cold", 0, "strfromd");
		check_symbol(ns, t->pid, libc, dbg, "__libc_start_call_main", 2,
			     "__libc_start_call_main");
		elf_file_close(dbg);
	} else {
		check_skip("clone symbols: libc debug file not installed");
	}
	check(nsym_resolve(ns, LIVE, t->pid, 0x10, 0, &r) == NSYM_NO_MAPPING, "nsym: pc 0x10 unmapped");
	check(nsym_resolve(ns, LIVE, t->pid, t->s->regs[UNWIND_REG_RSP], 0, &r) == NSYM_NO_FILE &&
	      strcmp(r.path, "[stack]") == 0, "nsym: a stack address has no file");
out:
	elf_file_close(ef);
	nsym_ctx_free(ns);
	objcache_free(oc);
}

/* The byte budget evicts older symbol tables but keeps the one in use. */
static void test_py_budget(struct target *t, const struct stack *want)
{
	struct objcache_opts tiny = { .max_bytes = 1 };
	struct objcache *oct = objcache_new(&tiny), *oc = objcache_new(NULL);
	const struct objcache_stats *st = objcache_get_stats(oct);
	struct nsym_ctx *ns = nsym_ctx_new(oct), *big = nsym_ctx_new(oc);
	int same = 1;

	for (size_t i = 0; i < want->n; i++) {
		struct nsym_result a, b;
		uint64_t pc = want->pcs[i] - !!i;

		nsym_resolve(ns, LIVE, t->pid, pc, 0, &a);
		nsym_resolve(big, LIVE, t->pid, pc, 0, &b);
		same &= a.status == b.status && (!a.name || !strcmp(a.name, b.name));
		same &= st->obj_loads - st->obj_evictions <= 1;
	}
	check(same && st->obj_evictions > 0,
	      "nsym: 1-byte budget keeps one table (%llu evictions), same names",
	      (unsigned long long)st->obj_evictions);
	nsym_ctx_free(ns);
	nsym_ctx_free(big);
	objcache_free(oct);
	objcache_free(oc);
}

/* Maps are re-read when a pc misses them, at most once per 20 ms. */
static uint64_t mono_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_refresh(const char *self)
{
	struct objcache *oc = objcache_new(NULL);
	struct nsym_ctx *ns = nsym_ctx_new(oc);
	const struct objcache_stats *s = objcache_get_stats(oc);
	struct nsym_result r;
	int fd = open(self, O_RDONLY);
	void *map, *map2;
	uint64_t reads;

	nsym_resolve(ns, LIVE, getpid(), (uint64_t)(uintptr_t)chain_a, 0, &r);
	usleep(30000);
	map = fd >= 0 ? mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	if (map == MAP_FAILED) {
		check(0, "map %s", self);
		goto out;
	}
	reads = s->maps_reads;
	nsym_resolve(ns, LIVE, getpid(), (uint64_t)(uintptr_t)map + 16, 0, &r);
	check(s->maps_reads == reads + 1 && r.status != NSYM_NO_MAPPING && !strcmp(r.path, self),
	      "nsym: a new mapping is found by re-reading the maps");
	nsym_resolve(ns, LIVE, getpid(), 0x10, 0, &r);
	check(s->maps_reads == reads + 1 && r.status == NSYM_NO_MAPPING,
	      "nsym: an unmapped pc right after does not re-read them");
	/* A pc the target ran after the last read is worth a read whatever
	 * the throttle (a mapping made since); one seen before it is not. */
	map2 = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map2 == MAP_FAILED) {
		check(0, "map %s again", self);
		goto out;
	}
	nsym_resolve(ns, LIVE, getpid(), (uint64_t)(uintptr_t)map2 + 16, 1, &r);
	check(s->maps_reads == reads + 1 && r.status == NSYM_NO_MAPPING,
	      "nsym: a miss seen before the last read (seen_ns 1) stays throttled");
	nsym_resolve(ns, LIVE, getpid(), (uint64_t)(uintptr_t)map2 + 16, mono_now_ns(), &r);
	check(s->maps_reads == reads + 2 && r.status != NSYM_NO_MAPPING && !strcmp(r.path, self),
	      "nsym: a miss seen after the last read re-reads the maps at once");
	munmap(map2, 4096);
	munmap(map, 4096);
out:
	if (fd >= 0)
		close(fd);
	nsym_ctx_free(ns);
	objcache_free(oc);
}

/* Every process of a kernel maps the same vDSO: a second process's is
 * found by its bytes, not copied into an entry of its own. */
static void test_vdso(void)
{
	struct objcache *oc = objcache_new(NULL);
	struct nsym_ctx *ns = nsym_ctx_new(oc);
	const struct objcache_stats *s = objcache_get_stats(oc);
	const struct proc_map *m = NULL;
	struct nsym_result r, r2;
	struct proc_maps maps;
	uint64_t pc = 0, hits;
	pid_t child;

	if (proc_maps_read(LIVE, getpid(), &maps)) {
		check(0, "vdso: our maps");
		goto out;
	}
	for (size_t i = 0; i < maps.n && !m; i++)
		if (!strcmp(maps.v[i].path, "[vdso]"))
			m = &maps.v[i];
	/* A pc that has a name: the first of the functions. */
	for (uint64_t a = m ? m->start : 0; m && a < m->end && !pc; a += 16)
		if (nsym_resolve(ns, LIVE, getpid(), a, 0, &r) == NSYM_OK)
			pc = a;
	proc_maps_free(&maps);
	if (!pc) {
		printf("skip vdso: no named vDSO pc\n");
		goto out;
	}
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	hits = s->obj_hits;
	check(s->vdso_copies == 1, "vdso: one copy for our process (%llu)",
	      (unsigned long long)s->vdso_copies);
	nsym_resolve(ns, LIVE, child, pc, 0, &r2);
	check(r2.status == NSYM_OK && !strcmp(r2.name, r.name) && s->vdso_copies == 1 &&
	      s->obj_hits > hits, "vdso: another process's is the same entry, found by its bytes (%s)",
	      r2.status == NSYM_OK ? r2.name : "?");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
out:
	nsym_ctx_free(ns);
	objcache_free(oc);
}

static void bench(struct target *t)
{
	struct objcache *oc = objcache_new(NULL);
	struct unwind_ctx *u = unwind_ctx_new(oc, NULL);
	struct nsym_ctx *ns = nsym_ctx_new(oc);
	struct unwind_input in;
	struct nsym_result r;
	struct stack st;
	double t0, t1, t2;
	size_t lookups = 0;
	int rounds = 2000;

	snap_input(t, &in);
	t0 = now_s();
	unwind_stack(u, &in, st.pcs, MAX_NAMES, &st.n);
	t1 = now_s();
	for (size_t i = 0; i < st.n; i++)
		nsym_resolve(ns, LIVE, in.pid, st.pcs[i] - !!i, 0, &r);
	t2 = now_s();
	printf("bench cold: first unwind %.0f us (%zu frames), first symbolization %.0f us\n",
	       (t1 - t0) * 1e6, st.n, (t2 - t1) * 1e6);
	t0 = now_s();
	for (int k = 0; k < rounds; k++)
		unwind_stack(u, &in, st.pcs, MAX_NAMES, &st.n);
	t1 = now_s();
	for (int k = 0; k < rounds * 10; k++)
		for (size_t i = 0; i < st.n; i++, lookups++)
			nsym_resolve(ns, LIVE, in.pid, st.pcs[i] - !!i, 0, &r);
	t2 = now_s();
	printf("bench warm: unwind %.2f us per stack (%zu frames), nsym_resolve %.0f ns per address\n",
	       (t1 - t0) * 1e6 / rounds, st.n, (t2 - t1) * 1e9 / (double)lookups);
	printf("# unwind stats: frames dwarf %llu fp %llu, mem stack %llu file %llu target %llu "
	       "failed %llu, objects %llu loaded %llu hits\n",
	       (unsigned long long)unwind_get_stats(u)->frames_dwarf,
	       (unsigned long long)unwind_get_stats(u)->frames_fp,
	       (unsigned long long)unwind_get_stats(u)->mem_stack,
	       (unsigned long long)unwind_get_stats(u)->mem_file,
	       (unsigned long long)unwind_get_stats(u)->mem_target,
	       (unsigned long long)unwind_get_stats(u)->mem_failed,
	       (unsigned long long)objcache_get_stats(oc)->obj_loads,
	       (unsigned long long)objcache_get_stats(oc)->obj_hits);
	unwind_ctx_free(u);
	nsym_ctx_free(ns);
	objcache_free(oc);
}

static void test_python(void)
{
	struct target t;

	if (access(PYTHON, X_OK)) {
		check_skip("%s not installed", PYTHON);
		return;
	}
	if (start_py_target(&t)) {
		check(0, "python3.11 target started and took its snapshot");
		target_stop(&t);
		return;
	}
	test_py_stack(&t);
	test_py_symbols(&t);
	{
		struct objcache *oc = objcache_new(NULL);
		struct unwind_ctx *u = unwind_ctx_new(oc, NULL);
		struct unwind_input in;
		struct stack st;

		snap_input(&t, &in);
		st.end = unwind_stack(u, &in, st.pcs, MAX_NAMES, &st.n);
		test_py_budget(&t, &st);
		unwind_ctx_free(u);
		objcache_free(oc);
	}
	bench(&t);
	target_stop(&t);
}

/* ---- no live target needed -------------------------------------------- */

static void test_base_len(void)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "foo.cold", "foo" }, { "foo.part.0", "foo" }, { "foo.isra.0", "foo" },
		{ "foo.constprop.3", "foo" }, { "foo.lto_priv.0", "foo" },
		{ "foo.isra.0.cold", "foo" }, { "foo.constprop.0.isra.0", "foo" },
		{ "foo.part.1.cold.12", "foo" }, { "foo.localalias", "foo" },
		{ "_ZN1a1bEv.llvm.1234567", "_ZN1a1bEv" }, { "foo.1", "foo.1" },
		{ "foo.part", "foo.part" }, { "a.b.cold", "a.b" }, { ".cold", ".cold" },
		{ "cold", "cold" }, { "foo", "foo" }, { "foo.", "foo." },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = nsym_base_len(cases[i].in, strlen(cases[i].in));

		check(n == strlen(cases[i].out) && !strncmp(cases[i].in, cases[i].out, n),
		      "clone suffix: %s -> %s (got %.*s)", cases[i].in, cases[i].out,
		      (int)n, cases[i].in);
	}
}

/* Garbage registers and stacks: bounded, no crash, a sane end. */
static void test_bad_input(void)
{
	struct objcache *oc = objcache_new(NULL);
	struct unwind_ctx *u = unwind_ctx_new(oc, NULL);
	struct unwind_input in = { .pid = getpid() };
	uint64_t pcs[8], junk[512];
	size_t n = 99;
	int r;

	check(unwind_stack(u, NULL, pcs, 8, &n) == -1, "unwind: NULL input refused");
	check(unwind_stack(u, &in, pcs, 8, &n) == -1, "unwind: input without a source refused");
	in.src = LIVE;
	in.stack_len = 16;
	check(unwind_stack(u, &in, pcs, 8, &n) == -1, "unwind: stack_len without stack refused");
	for (size_t i = 0; i < 512; i++)
		junk[i] = 0x5555555555555555ull * (i + 1);
	memcpy(in.regs, junk, sizeof(in.regs));
	in.stack = (const uint8_t *)junk;
	in.stack_len = sizeof(junk);
	in.stack_addr = in.regs[UNWIND_REG_RSP];
	r = unwind_stack(u, &in, pcs, 8, &n);
	check(r > UNWIND_END_OUTERMOST && n <= 8, "unwind: garbage registers end %d after %zu", r, n);
	in.pid = 0x7ffffff0;	/* no such process */
	r = unwind_stack(u, &in, pcs, 8, &n);
	check(r == UNWIND_END_NO_INFO && n == 1, "unwind: unknown pid gives the leaf only");
	check(unwind_stack(u, &in, pcs, 0, &n) == UNWIND_END_MAX && n == 0, "unwind: max 0");
	unwind_ctx_free(u);
	objcache_free(oc);
}

int main(int argc, char **argv)
{
	char self[4096];
	ssize_t len;

	if (argc == 4 && strcmp(argv[1], "--child") == 0)
		return child_main(atoi(argv[2]), argv[3]);
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return 1;
	self[len] = '\0';
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_base_len();
	test_bad_input();
	test_c_chain(self);
	test_nocfi_chain(self);
	test_jit_frame(self);
	test_trampoline(self, "tramp");
	test_trampoline(self, "tramp14");
	test_deleted(self);
	test_refresh(self);
	test_vdso();
	test_fid_recheck(self);
	test_python();
	return check_exit();
}
