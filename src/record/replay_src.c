/*
 * Replay's memory source (rec_replay_src()): reads of target memory,
 * /proc/PID/maps and ELF files are served from a loaded recording as they
 * were seen live at the sample being replayed, never from this host. The
 * recorded ELF objects are written out as sparse files under a temporary
 * directory, because the unwinder and the symbolizer open files by path.
 */
#define _GNU_SOURCE
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "elffile.h"
#include "proc.h"
#include "record_codec.h"
#include "record_internal.h"

#define REC_SCAN_BACK		512	/* ranges looked at for a containing read */

/* Of two versions, the one replay serves at seq cur: the newest seen at
 * or before cur, else the oldest. */
static int better(uint64_t cand, uint64_t best, uint64_t cur)
{
	if (cand <= cur)
		return best > cur || cand > best;
	return best > cur && cand < best;
}

static const uint8_t *mem_find(struct recording *r, uint32_t pid, uint64_t addr, size_t len)
{
	const struct rec_mem *best = NULL;
	size_t lo = 0, hi = r->nmem;

	if (!len || addr + len < addr)
		return NULL;
	/* The same read: the first entry >= (pid, addr, len). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rec_mem *m = &r->mem[mid];

		if (m->pid < pid || (m->pid == pid && (m->addr < addr ||
		    (m->addr == addr && m->len < len))))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < r->nmem && r->mem[i].pid == pid && r->mem[i].addr == addr &&
	     r->mem[i].len == len; i++)
		if (!best || better(r->mem[i].seq, best->seq, r->seq))
			best = &r->mem[i];
	if (best)
		return best->p;		/* NULL if it failed then */
	/* Else a recorded range holding it: entries before (pid, addr + 1). */
	lo = 0;
	hi = r->nmem;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rec_mem *m = &r->mem[mid];

		if (m->pid < pid || (m->pid == pid && m->addr <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i-- > 0 && k < REC_SCAN_BACK; k++) {
		const struct rec_mem *m = &r->mem[i];

		if (m->pid != pid)
			break;
		if (m->p && addr - m->addr <= m->len && m->len - (addr - m->addr) >= len &&
		    (!best || better(m->seq, best->seq, r->seq)))
			best = m;
	}
	return best ? best->p + (addr - best->addr) : NULL;
}

static ssize_t rp_vm_readv(void *ctx, pid_t pid, const struct iovec *local, unsigned long nl,
			   const struct iovec *remote, unsigned long nr)
{
	struct recording *rp = ctx;
	size_t li = 0, loff = 0, total = 0;

	for (unsigned long i = 0; i < nr; i++) {
		size_t len = remote[i].iov_len, k = 0;
		const uint8_t *src;

		if (!len)
			continue;
		src = mem_find(rp, (uint32_t)pid, (uint64_t)(uintptr_t)remote[i].iov_base, len);
		if (!src) {
			rp->reads_missed++;
			break;	/* like the kernel: stop at the first unreadable element */
		}
		rp->reads++;
		while (k < len && li < nl) {
			size_t take = local[li].iov_len - loff;

			if (take > len - k)
				take = len - k;
			memcpy((uint8_t *)local[li].iov_base + loff, src + k, take);
			k += take;
			loff += take;
			if (loff == local[li].iov_len) {
				li++;
				loff = 0;
			}
		}
		total += k;
		if (k < len)
			break;		/* local buffers full */
	}
	if (!total && nr) {
		errno = EFAULT;
		return -1;
	}
	return (ssize_t)total;
}

static uint32_t rp_gen(struct recording *r, uint32_t pid)
{
	for (size_t i = 0; i < r->ngens; i++)
		if (r->gens[i].pid == pid)
			return r->gens[i].gen;
	return 0;
}

static char *rp_read_file(void *ctx, const char *path, size_t max, size_t *len)
{
	struct recording *rp = ctx;
	const struct rec_maps *m = NULL, *any = NULL;
	unsigned pid;
	uint32_t gen;
	char *out;
	int n = 0;

	if (sscanf(path, "/proc/%u/maps%n", &pid, &n) != 1 || path[n] != '\0') {
		errno = ENOENT;		/* only maps are recorded */
		return NULL;
	}
	gen = rp_gen(rp, pid);
	/* The last snapshot of this process. */
	for (size_t i = 0; i < rp->nmaps; i++) {
		if (rp->maps[i].pid != pid)
			continue;
		any = &rp->maps[i];
		if (rp->maps[i].gen == gen)
			m = &rp->maps[i];
	}
	if (!m)
		m = any;
	if (!m) {
		errno = ENOENT;
		return NULL;
	}
	*len = m->len < max ? m->len : max;
	out = malloc(*len ? *len : 1);
	if (!out)
		return NULL;
	memcpy(out, m->text, *len);
	return out;
}

/* The object a recorded path resolves to at the current seq, or -1. */
static long rp_path_obj(struct recording *r, const char *path)
{
	size_t plen = strlen(path), lo = 0, hi = r->npaths;
	const struct rec_path *best = NULL;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rec_path_cmp(r->paths[mid].path, r->paths[mid].len,
				 (const uint8_t *)path, plen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < r->npaths && !rec_path_cmp(r->paths[i].path, r->paths[i].len,
							     (const uint8_t *)path, plen); i++)
		if (!best || better(r->paths[i].seq, best->seq, r->seq))
			best = &r->paths[i];
	if (!best || best->obj >= r->nfiles || !r->files[best->obj].present)
		return -1;
	return best->obj;
}

static void rp_map_file(void *ctx, pid_t pid, const struct proc_map *m, char *buf, size_t len)
{
	struct recording *rp = ctx;
	char key[PATH_MAX + 64];
	long obj;

	/* The paths live_map_file() (src/memsource/live_src.c) tries, in its order. */
	snprintf(key, sizeof(key), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	obj = rp_path_obj(rp, key);
	if (obj < 0) {
		snprintf(key, sizeof(key), "/proc/%d/root%s", (int)pid, m->path);
		obj = rp_path_obj(rp, key);
	}
	/* "map_files" in the name: the unwinder and the symbolizer then trust
	 * the file as the one mapped, as they trust /proc/PID/map_files. */
	if (obj >= 0)
		snprintf(buf, len, "%s/map_files/%ld", rp->dir, obj);
	else
		snprintf(buf, len, "%s/map_files/none", rp->dir);
}

static struct elf_file *rp_open_elf(void *ctx, const char *path)
{
	struct recording *rp = ctx;
	char buf[PATH_MAX];
	size_t dl = strlen(rp->dir);
	long obj;

	if (strncmp(path, rp->dir, dl) == 0 && path[dl] == '/')
		return elf_file_open(path);	/* ours, from rp_map_file() */
	obj = rp_path_obj(rp, path);
	if (obj < 0)
		return NULL;	/* never on this host's files */
	snprintf(buf, sizeof(buf), "%s/map_files/%ld", rp->dir, obj);
	return elf_file_open(buf);
}

static const struct target_src_ops replay_ops = {
	.readv = rp_vm_readv,
	.read_file = rp_read_file,
	.map_file = rp_map_file,
	.open_elf = rp_open_elf,
};

const struct target_src *rec_replay_src(struct recording *r)
{
	return &r->src;
}

static int write_object(struct recording *r, size_t id, char *err, size_t errlen)
{
	const struct rec_file *f = &r->files[id];
	char path[PATH_MAX];
	size_t off = 0;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/map_files/%zu", r->dir, id);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)f->size)) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (uint32_t i = 0; i < f->n && !rc; i++) {
		uint64_t at = rec_get_u64(f->ext + 12 * i);
		uint32_t len = rec_get_u32(f->ext + 12 * i + 8);
		size_t done = 0;

		while (done < len) {
			ssize_t k = pwrite(fd, f->data + off + done, len - done, (off_t)(at + done));

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				snprintf(err, errlen, "cannot write %s: %s", path,
					 k < 0 ? strerror(errno) : "short write");
				rc = -1;
				break;
			}
			done += (size_t)k;
		}
		off += len;
	}
	close(fd);
	return rc;
}

static void remove_dir(struct recording *r)
{
	char path[PATH_MAX];

	if (!r->dir[0])
		return;
	for (size_t i = 0; i < r->nfiles; i++) {
		snprintf(path, sizeof(path), "%s/map_files/%zu", r->dir, i);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/map_files", r->dir);
	rmdir(path);
	rmdir(r->dir);
	r->dir[0] = '\0';
}

int rec_replay_begin(struct recording *r, char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX];

	if (r->dir[0]) {
		snprintf(err, errlen, "this recording is already being replayed");
		return -1;
	}
	snprintf(r->dir, sizeof(r->dir), "%s/pyperf-replay.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	if (!mkdtemp(r->dir)) {
		snprintf(err, errlen, "cannot create a directory for the replay in %s: %s",
			 tmp && tmp[0] ? tmp : "/tmp", strerror(errno));
		r->dir[0] = '\0';
		return -1;
	}
	snprintf(path, sizeof(path), "%s/map_files", r->dir);
	if (mkdir(path, 0700)) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		remove_dir(r);
		return -1;
	}
	for (size_t i = 0; i < r->nfiles; i++) {
		if (r->files[i].present && write_object(r, i, err, errlen)) {
			remove_dir(r);
			return -1;
		}
	}
	r->seq = 0;
	r->ngens = 0;
	r->src = (struct target_src){ .ops = &replay_ops, .ctx = r };
	return 0;
}

void rec_replay_end(struct recording *r)
{
	r->src = (struct target_src){ 0 };
	remove_dir(r);
}

void rec_replay_set_seq(struct recording *r, uint64_t seq)
{
	r->seq = seq;
}

void rec_replay_target(struct recording *r, uint32_t pid)
{
	for (size_t i = 0; i < r->ngens; i++) {
		if (r->gens[i].pid == pid) {
			r->gens[i].gen++;
			return;
		}
	}
	if (rec_grow((void **)&r->gens, &r->gens_cap, r->ngens + 1, sizeof(*r->gens)))
		return;
	r->gens[r->ngens++] = (struct rec_gen){ .pid = pid, .gen = 1 };
}
