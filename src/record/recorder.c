/*
 * Recording (--record): the memory source of a recorded session wraps the
 * live one (src/memsource/target_src.h) and appends what passed through it,
 * plus the pipeline's events, to a zlib stream in the format of record.h.
 * It runs inside the sampling loop, so it writes each range, maps text and
 * file once and only again when it changed.
 */
#define _GNU_SOURCE
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "elf_reduce.h"
#include "elffile.h"
#include "proc.h"
#include "record_codec.h"
#include "record_internal.h"

#define REC_MAX_RECORD		(256u << 20)	/* one record's payload */
#define REC_MAX_READ		(64u << 20)	/* one memory read kept */
#define REC_MAX_IMAGE		(1ull << 30)	/* ELF files reduced, at most */
#define REC_EXTENT_GAP		64	/* zero runs shorter than this stay inside an extent */

struct w_mem {			/* last bytes seen at (pid, addr, len) */
	uint64_t addr, h;		/* h: hash of the bytes; W_FAILED: the read failed */
	uint32_t pid, len;
	int used;
};

struct w_pair {			/* small maps: pid -> value */
	uint32_t pid, gen;
	uint64_t h;
};

struct w_obj {			/* a file, by its stat identity */
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	int has_content;
};

struct w_path {
	uint64_t h;		/* of the path; 0: free */
	uint32_t obj;
};

struct recorder {
	int fd;
	z_stream z;
	uint8_t out[1 << 16];
	int err;			/* errno of the first failure: recording stops */
	uint64_t seq;
	struct w_mem *mem;
	size_t mem_n, mem_cap;		/* cap: power of two */
	struct w_pair *gens, *maps;
	size_t ngens, nmaps, gens_cap, maps_cap;
	struct w_obj *obj;
	size_t nobj, obj_cap;
	struct w_path *paths;
	size_t npaths, paths_cap;	/* cap: power of two */
	char name[512];
	const struct target_src *live;	/* what is read, and recorded */
	struct target_src src;		/* record_src(): live, teed */
};

#define W_FAILED	0	/* rec_hash() never returns 0 (| 1) */

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = write(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static void w_deflate(struct recorder *rec, const void *p, size_t n, int flush)
{
	const uint8_t *in = p;

	do {
		size_t chunk = n < (1u << 30) ? n : (1u << 30);

		if (rec->err)
			return;
		rec->z.next_in = (Bytef *)in;
		rec->z.avail_in = (uInt)chunk;
		in += chunk;
		n -= chunk;
		do {
			size_t have;
			int r;

			rec->z.next_out = rec->out;
			rec->z.avail_out = sizeof(rec->out);
			r = deflate(&rec->z, n ? Z_NO_FLUSH : flush);
			if (r == Z_STREAM_ERROR) {
				rec->err = EIO;
				return;
			}
			have = sizeof(rec->out) - rec->z.avail_out;
			if (have && write_all(rec->fd, rec->out, have)) {
				rec->err = errno ? errno : EIO;
				return;
			}
		} while (rec->z.avail_out == 0);
	} while (n);
}

static void w_head(struct recorder *rec, uint8_t type, size_t len)
{
	uint8_t h[5] = { type, (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
			 (uint8_t)(len >> 24) };

	w_deflate(rec, h, sizeof(h), Z_NO_FLUSH);
}

/* One record: payload a, then b. */
static void w_record(struct recorder *rec, uint8_t type, const void *a, size_t alen,
		     const void *b, size_t blen)
{
	if (rec->err || alen + blen > REC_MAX_RECORD)
		return;
	w_head(rec, type, alen + blen);
	if (alen)
		w_deflate(rec, a, alen, Z_NO_FLUSH);
	if (blen)
		w_deflate(rec, b, blen, Z_NO_FLUSH);
}

static void w_buf(struct recorder *rec, uint8_t type, struct rec_buf *b)
{
	if (b->oom)
		rec->err = ENOMEM;
	else
		w_record(rec, type, b->p, b->n, NULL, 0);
	free(b->p);
}

static struct w_pair *pair_get(struct w_pair **v, size_t *n, size_t *cap, uint32_t pid, int add)
{
	for (size_t i = 0; i < *n; i++)
		if ((*v)[i].pid == pid)
			return &(*v)[i];
	if (!add)
		return NULL;
	if (rec_grow((void **)v, cap, *n + 1, sizeof(**v)))
		return NULL;
	(*v)[*n] = (struct w_pair){ .pid = pid };
	return &(*v)[(*n)++];
}

static uint32_t w_gen(struct recorder *rec, uint32_t pid)
{
	struct w_pair *g = pair_get(&rec->gens, &rec->ngens, &rec->gens_cap, pid, 0);

	return g ? g->gen : 0;
}

/* Memory: a read is written unless the same range last read the same. */
static int mem_grow(struct recorder *rec)
{
	size_t cap = rec->mem_cap ? rec->mem_cap * 2 : 4096;
	struct w_mem *v = calloc(cap, sizeof(*v));

	if (!v)
		return -1;
	for (size_t i = 0; i < rec->mem_cap; i++) {
		struct w_mem *e = &rec->mem[i];
		size_t h;

		if (!e->used)
			continue;
		h = rec_hash(&e->addr, 8, e->pid ^ ((uint64_t)e->len << 32)) & (cap - 1);
		while (v[h].used)
			h = (h + 1) & (cap - 1);
		v[h] = *e;
	}
	free(rec->mem);
	rec->mem = v;
	rec->mem_cap = cap;
	return 0;
}

/* A read of (pid, addr, len): its bytes, or p NULL when it failed. Written
 * unless the same range's last read ended the same way. */
static void w_mem(struct recorder *rec, uint32_t pid, uint64_t addr, const uint8_t *p, size_t len)
{
	uint8_t hdr[24];
	struct w_mem *e;
	uint64_t hb;
	size_t h;

	if (!len || len > REC_MAX_READ || rec->err)
		return;
	if (rec->mem_n * 2 >= rec->mem_cap && mem_grow(rec)) {
		rec->err = ENOMEM;
		return;
	}
	hb = p ? rec_hash(p, len, 0) : W_FAILED;
	h = rec_hash(&addr, 8, pid ^ ((uint64_t)len << 32)) & (rec->mem_cap - 1);
	for (;; h = (h + 1) & (rec->mem_cap - 1)) {
		e = &rec->mem[h];
		if (!e->used) {
			*e = (struct w_mem){ .addr = addr, .pid = pid, .len = (uint32_t)len,
					     .h = ~hb, .used = 1 };
			rec->mem_n++;
			break;
		}
		if (e->addr == addr && e->pid == pid && e->len == len)
			break;
	}
	if (e->h == hb)
		return;		/* as last recorded */
	e->h = hb;
	for (int i = 0; i < 4; i++) {
		hdr[i] = (uint8_t)(pid >> (8 * i));
		hdr[20 + i] = (uint8_t)(len >> (8 * i));
	}
	for (int i = 0; i < 8; i++) {
		hdr[4 + i] = (uint8_t)(addr >> (8 * i));
		hdr[12 + i] = (uint8_t)(rec->seq >> (8 * i));
	}
	if (p)
		w_record(rec, REC_MEM, hdr, 20, p, len);
	else
		w_record(rec, REC_MEMFAIL, hdr, 24, NULL, 0);
}

/* The remote elements the kernel transferred in full (it never splits
 * one), with their bytes gathered from the local vectors. */
static void w_iov(struct recorder *rec, pid_t pid, const struct iovec *local, unsigned long nl,
		  const struct iovec *remote, unsigned long nr, size_t got)
{
	size_t li = 0, loff = 0, done = 0;

	for (unsigned long i = 0; i < nr; i++) {
		size_t len = remote[i].iov_len, k = 0;
		uint8_t *tmp = NULL;
		const uint8_t *src;

		if (len > got - done) {
			/* The kernel stopped here: this element failed. */
			if (len)
				w_mem(rec, (uint32_t)pid, (uint64_t)(uintptr_t)remote[i].iov_base, NULL, len);
			break;
		}
		while (li < nl && loff == local[li].iov_len) {
			li++;
			loff = 0;
		}
		if (li < nl && local[li].iov_len - loff >= len) {
			src = (const uint8_t *)local[li].iov_base + loff;
			loff += len;
		} else {
			tmp = malloc(len ? len : 1);
			if (!tmp)
				return;
			while (k < len && li < nl) {
				size_t take = local[li].iov_len - loff;

				if (take > len - k)
					take = len - k;
				memcpy(tmp + k, (const uint8_t *)local[li].iov_base + loff, take);
				k += take;
				loff += take;
				if (loff == local[li].iov_len) {
					li++;
					loff = 0;
				}
			}
			src = tmp;
		}
		w_mem(rec, (uint32_t)pid, (uint64_t)(uintptr_t)remote[i].iov_base, src, len);
		free(tmp);
		done += len;
	}
}

/* ---- the recording memory source: the live one, teed ------------------- */

static ssize_t rec_vm_readv(void *ctx, pid_t pid, const struct iovec *local, unsigned long nl,
			    const struct iovec *remote, unsigned long nr)
{
	struct recorder *rec = ctx;
	ssize_t got = target_readv(rec->live, pid, local, nl, remote, nr);
	int e = errno;

	if (!rec->err)
		w_iov(rec, pid, local, nl, remote, nr, got > 0 ? (size_t)got : 0);
	errno = e;
	return got;
}

/* The last maps text recorded for (pid, gen): h 0 until there is one. */
static struct w_pair *maps_slot(struct recorder *rec, uint32_t pid, uint32_t gen)
{
	for (size_t i = 0; i < rec->nmaps; i++)
		if (rec->maps[i].pid == pid && rec->maps[i].gen == gen)
			return &rec->maps[i];
	if (rec_grow((void **)&rec->maps, &rec->maps_cap, rec->nmaps + 1, sizeof(*rec->maps)))
		return NULL;
	rec->maps[rec->nmaps] = (struct w_pair){ .pid = pid, .gen = gen };
	return &rec->maps[rec->nmaps++];
}

static char *rec_read_file(void *ctx, const char *path, size_t max, size_t *len)
{
	struct recorder *rec = ctx;
	char *text = target_read_file(rec->live, path, max, len);
	int e = errno;
	unsigned pid;
	int n = 0;

	if (text && !rec->err &&
	    sscanf(path, "/proc/%u/maps%n", &pid, &n) == 1 && path[n] == '\0') {
		uint64_t h = rec_hash(text, *len, 1);
		uint32_t gen = w_gen(rec, pid);
		struct w_pair *m = maps_slot(rec, pid, gen);
		struct rec_buf b = { 0 };

		if (m && m->h != h) {
			m->h = h;
			rec_put_u32(&b, pid);
			rec_put_u32(&b, gen);
			rec_put(&b, text, *len);
			w_buf(rec, REC_MAPS, &b);
		}
	}
	errno = e;
	return text;
}
/* FILE record of object id: the non-zero runs of the reduced image. */
static void w_file(struct recorder *rec, uint32_t id, uint64_t size, const uint8_t *img)
{
	struct rec_buf hdr = { 0 }, ext = { 0 };
	size_t n = 0, total = 0, i = 0;

	while (img && i < size) {
		size_t start, end, zeros;

		while (i < size && !img[i])
			i++;
		if (i == size)
			break;
		start = end = i;
		for (zeros = 0; i < size && zeros < REC_EXTENT_GAP; i++) {
			if (img[i]) {
				zeros = 0;
				end = i + 1;
			} else {
				zeros++;
			}
		}
		/* Extents are at most 1 GiB, so a u32 length holds them. */
		rec_put_u64(&ext, start);
		rec_put_u32(&ext, (uint32_t)(end - start));
		n++;
		total += end - start;
		i = end;
	}
	rec_put_u32(&hdr, id);
	rec_put_u64(&hdr, size);
	rec_put_u32(&hdr, (uint32_t)n);
	rec_put(&hdr, ext.p, ext.n);
	if (hdr.oom || ext.oom || hdr.n + total > REC_MAX_RECORD) {
		free(hdr.p);
		free(ext.p);
		return;
	}
	w_head(rec, REC_FILE, hdr.n + total);
	w_deflate(rec, hdr.p, hdr.n, Z_NO_FLUSH);
	for (size_t k = 0; k < n; k++) {
		uint64_t off = rec_get_u64(ext.p + 12 * k);
		uint32_t len = rec_get_u32(ext.p + 12 * k + 8);

		w_deflate(rec, img + off, len, Z_NO_FLUSH);
	}
	free(hdr.p);
	free(ext.p);
}

/* The object of a file's stat identity, recorded (without content) when
 * first seen. UINT32_MAX if it cannot be recorded. */
static uint32_t w_object(struct recorder *rec, const struct stat *st)
{
	int64_t mt = st->st_mtim.tv_sec * 1000000000ll + st->st_mtim.tv_nsec;

	for (size_t i = 0; i < rec->nobj; i++) {
		const struct w_obj *o = &rec->obj[i];

		if (o->dev == (uint64_t)st->st_dev && o->ino == (uint64_t)st->st_ino &&
		    o->size == (uint64_t)st->st_size && o->mtime_ns == mt)
			return (uint32_t)i;
	}
	if (rec->nobj >= REC_MAX_OBJECTS)
		return UINT32_MAX;
	if (rec_grow((void **)&rec->obj, &rec->obj_cap, rec->nobj + 1, sizeof(*rec->obj)))
		return UINT32_MAX;
	rec->obj[rec->nobj] = (struct w_obj){ .dev = st->st_dev, .ino = st->st_ino,
					  .size = (uint64_t)st->st_size, .mtime_ns = mt };
	w_file(rec, (uint32_t)rec->nobj, (uint64_t)st->st_size, NULL);
	return (uint32_t)rec->nobj++;
}

static void w_path(struct recorder *rec, const char *path, uint32_t obj)
{
	uint64_t h = rec_hash(path, strlen(path), 2) | 1;
	struct rec_buf b = { 0 };
	size_t i;

	if (rec->npaths * 2 >= rec->paths_cap) {
		size_t cap = rec->paths_cap ? rec->paths_cap * 2 : 256;
		struct w_path *v = calloc(cap, sizeof(*v));

		if (!v)
			return;
		for (size_t k = 0; k < rec->paths_cap; k++) {
			if (!rec->paths[k].h)
				continue;
			for (i = rec->paths[k].h & (cap - 1); v[i].h; i = (i + 1) & (cap - 1))
				;
			v[i] = rec->paths[k];
		}
		free(rec->paths);
		rec->paths = v;
		rec->paths_cap = cap;
	}
	for (i = h & (rec->paths_cap - 1); rec->paths[i].h; i = (i + 1) & (rec->paths_cap - 1))
		if (rec->paths[i].h == h)
			break;
	if (rec->paths[i].h == h && rec->paths[i].obj == obj)
		return;
	if (!rec->paths[i].h)
		rec->npaths++;
	rec->paths[i] = (struct w_path){ .h = h, .obj = obj };
	rec_put_u32(&b, obj);
	rec_put_u64(&b, rec->seq);
	rec_put_str(&b, path, SIZE_MAX);
	w_buf(rec, REC_PATH, &b);
}

/* Files, their names and maps are recorded whenever they are looked up, in
 * a sample or not: the object cache opens each file once, often while a
 * target is probed, and every later sample uses that one open. */
static void rec_map_file(void *ctx, pid_t pid, const struct proc_map *m, char *buf, size_t len)
{
	struct recorder *rec = ctx;
	struct stat st;
	uint32_t obj;

	target_map_file(rec->live, pid, m, buf, len);
	if (rec->err)
		return;
	if (!strstr(buf, "/map_files/")) {
		char key[128];

		/* map_files was refused: replay must take the other path too. */
		snprintf(key, sizeof(key), "/proc/%d/map_files/%llx-%llx", (int)pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		w_path(rec, key, UINT32_MAX);
	}
	if (stat(buf, &st) || !S_ISREG(st.st_mode)) {
		w_path(rec, buf, UINT32_MAX);	/* replay: not there either */
		return;
	}
	obj = w_object(rec, &st);
	if (obj != UINT32_MAX)
		w_path(rec, buf, obj);
}

static void rec_opened(struct recorder *rec, const char *path, const uint8_t *image, size_t size)
{
	struct stat st;
	uint32_t obj;

	if (rec->err || stat(path, &st) || !S_ISREG(st.st_mode))
		return;
	obj = w_object(rec, &st);
	if (obj == UINT32_MAX)
		return;
	if (!rec->obj[obj].has_content && size <= REC_MAX_IMAGE) {
		uint8_t *r = elf_reduce(image, size);

		if (r) {
			w_file(rec, obj, size, r);
			rec->obj[obj].has_content = 1;
			free(r);
		}
	}
	w_path(rec, path, obj);
}

static struct elf_file *rec_open_elf(void *ctx, const char *path)
{
	struct recorder *rec = ctx;
	struct elf_file *ef = target_open_elf(rec->live, path);

	if (ef)
		rec_opened(rec, path, elf_file_data(ef, 0, elf_file_size(ef)), elf_file_size(ef));
	return ef;
}

static const struct target_src_ops record_ops = {
	.readv = rec_vm_readv,
	.read_file = rec_read_file,
	.map_file = rec_map_file,
	.open_elf = rec_open_elf,
};

const struct target_src *record_src(struct recorder *rec)
{
	return &rec->src;
}

struct recorder *record_open(const char *path, const struct target_src *live, char *err,
			     size_t errlen)
{
	uint8_t hdr[REC_HDR_LEN];
	struct recorder *rec = calloc(1, sizeof(*rec));

	if (!rec) {
		snprintf(err, errlen, "cannot record to %s: out of memory", path);
		return NULL;
	}
	rec->live = live;
	rec->src = (struct target_src){ .ops = &record_ops, .ctx = rec };
	snprintf(rec->name, sizeof(rec->name), "%s", path);
	rec->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (rec->fd < 0) {
		snprintf(err, errlen, "cannot create the recording %s: %s", path, strerror(errno));
		goto fail;
	}
	/* Fastest: the recorder runs in the sampling loop, and a slow reader of
	 * the ring buffer loses samples. */
	if (deflateInit(&rec->z, Z_BEST_SPEED) != Z_OK) {
		snprintf(err, errlen, "cannot record to %s: zlib initialisation failed", path);
		close(rec->fd);
		goto fail;
	}
	memcpy(hdr, REC_MAGIC, 8);
	memset(hdr + 8, 0, 8);
	hdr[8] = REC_VERSION;
	if (write_all(rec->fd, hdr, sizeof(hdr))) {
		snprintf(err, errlen, "cannot write the recording %s: %s", path, strerror(errno));
		deflateEnd(&rec->z);
		close(rec->fd);
		goto fail;
	}
	return rec;
fail:
	free(rec);
	return NULL;
}

void record_meta(struct recorder *rec, const struct rec_meta *m)
{
	struct rec_buf b = { 0 };

	if (!rec)
		return;
	rec_put_u64(&b, m->sample_period);
	rec_put_u64(&b, m->frequency);
	rec_put_u32(&b, m->stack_bytes);
	rec_put_u32(&b, m->flags);
	rec_put_u32(&b, m->symcache_entries);
	rec_put_u32(&b, m->threadcache_entries);
	rec_put_u64(&b, (uint64_t)m->time_nanos);
	rec_put_str(&b, m->event, sizeof(m->event));
	rec_put_str(&b, m->cmdline, SIZE_MAX);
	rec_put_u64(&b, m->start_mono_ns);
	rec_put_u32(&b, m->run_id);
	w_buf(rec, REC_META, &b);
}

void record_target(struct recorder *rec, const struct py_target *t)
{
	struct w_pair *g;
	struct rec_buf b = { 0 };

	if (!rec)
		return;
	g = pair_get(&rec->gens, &rec->ngens, &rec->gens_cap, (uint32_t)t->pid, 1);
	if (g)
		g->gen++;
	rec_put_u32(&b, (uint32_t)t->pid);
	rec_put_u64(&b, t->start_time);
	rec_put_u32(&b, t->major);
	rec_put_u32(&b, t->minor);
	rec_put_u32(&b, t->micro);
	rec_put_u32(&b, t->version_hex);
	rec_put_u64(&b, t->runtime_addr);
	rec_put_u64(&b, t->bpf.interp_head_addr);
	rec_put_u64(&b, t->bpf.gil_locked_addr);
	rec_put_u64(&b, t->bpf.gil_holder_addr);
	rec_put_u64(&b, t->bpf.gil_current_addr);
	rec_put_str(&b, t->module, sizeof(t->module));
	rec_put_str(&b, t->comm, sizeof(t->comm));
	rec_put_str(&b, t->cmdline, sizeof(t->cmdline));
	rec_put_str(&b, t->container_id, sizeof(t->container_id));
	rec_put_u32(&b, (uint32_t)t->root.kind);
	rec_put_u64(&b, t->root.dev);
	rec_put_u64(&b, t->root.ino);
	rec_put_str(&b, t->root.dir, sizeof(t->root.dir));
	w_buf(rec, REC_TARGET, &b);
}

void record_forget(struct recorder *rec, const struct py_target *t)
{
	struct rec_buf b = { 0 };

	if (!rec)
		return;
	rec_put_u32(&b, (uint32_t)t->pid);
	rec_put_u64(&b, t->start_time);
	w_buf(rec, REC_FORGET, &b);
}

void record_sample(struct recorder *rec, const void *data, size_t size)
{
	if (!rec)
		return;
	rec->seq++;
	w_record(rec, REC_SAMPLE, data, size, NULL, 0);
}

void record_raw(struct recorder *rec, uint8_t type, const void *p, size_t len)
{
	if (rec)
		w_record(rec, type, p, len, NULL, 0);
}

void record_tick(struct recorder *rec, const struct pipeline_tick *k)
{
	struct rec_buf b = { 0 };
	uint32_t n = k->nstats < REC_MAX_STATS ? k->nstats : REC_MAX_STATS;

	if (!rec)
		return;
	rec_put_u64(&b, (uint64_t)k->wall_ns);
	rec_put_u64(&b, k->mono_ns);
	rec_put_u32(&b, (uint32_t)k->final);
	rec_put_u32(&b, (uint32_t)k->rotate);
	rec_put_u32(&b, n);
	for (uint32_t i = 0; i < n; i++)
		rec_put_u64(&b, k->stats[i]);
	w_buf(rec, REC_TICK, &b);
	/* Each profile written is a point a killed run can be read back to. */
	if (!rec->err)
		w_deflate(rec, "", 0, Z_FULL_FLUSH);
}

int record_close(struct recorder *rec, char *err, size_t errlen)
{
	uint8_t end[8];
	int rc = 0;

	if (!rec)
		return 0;
	for (int i = 0; i < 8; i++)
		end[i] = (uint8_t)(rec->seq >> (8 * i));
	w_record(rec, REC_END, end, sizeof(end), NULL, 0);
	if (!rec->err)
		w_deflate(rec, "", 0, Z_FINISH);
	if (!rec->err && fsync(rec->fd) && errno != EINVAL)
		rec->err = errno;
	if (close(rec->fd) && !rec->err)
		rec->err = errno;
	if (rec->err) {
		snprintf(err, errlen, "cannot write the recording %s: %s", rec->name,
			 strerror(rec->err));
		rc = -1;
	}
	deflateEnd(&rec->z);
	free(rec->mem);
	free(rec->gens);
	free(rec->maps);
	free(rec->obj);
	free(rec->paths);
	free(rec);
	return rc;
}
