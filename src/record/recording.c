/*
 * A recording read back (--replay, tests, fuzzing): the file is loaded
 * whole, its body inflated, and its records indexed (memory reads and
 * paths sorted for replay_src.c's searches); the events are kept in order
 * and decoded one by one as replay.c drives them. The input is untrusted:
 * a malformed record is counted and skipped, a truncated body is read up
 * to its last whole record.
 */
#define _GNU_SOURCE
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "record_codec.h"
#include "record_internal.h"

int rec_grow(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t nc = *cap ? *cap : 64;
	void *nv;

	if (need <= *cap)
		return 0;
	while (nc < need)
		nc *= 2;
	nv = realloc(*v, nc * elem);
	if (!nv)
		return -1;
	*v = nv;
	*cap = nc;
	return 0;
}

static int inflate_body(const uint8_t *in, size_t len, size_t max, uint8_t **out,
			size_t *outlen, int *truncated)
{
	z_stream z = { 0 };
	size_t cap = len * 4 + 4096, n = 0;
	uint8_t *buf;
	int r = Z_OK;

	*truncated = 0;
	if (cap > max)
		cap = max;
	buf = malloc(cap ? cap : 1);
	if (!buf || inflateInit(&z) != Z_OK) {
		free(buf);
		return -1;
	}
	z.next_in = (Bytef *)in;
	while (r != Z_STREAM_END) {
		size_t chunk;

		if (n == cap) {
			uint8_t *nb;
			size_t nc = cap * 2 < max ? cap * 2 : max;

			if (cap >= max) {
				*truncated = 1;	/* larger than allowed: what fits */
				break;
			}
			nb = realloc(buf, nc);
			if (!nb) {
				inflateEnd(&z);
				free(buf);
				return -1;
			}
			buf = nb;
			cap = nc;
		}
		if (!z.avail_in && len) {
			chunk = len < (1u << 30) ? len : (1u << 30);
			z.avail_in = (uInt)chunk;
			len -= chunk;
		}
		chunk = cap - n < (1u << 30) ? cap - n : (1u << 30);
		z.next_out = buf + n;
		z.avail_out = (uInt)chunk;
		r = inflate(&z, Z_NO_FLUSH);
		n += chunk - z.avail_out;
		if (r == Z_BUF_ERROR && !z.avail_in && !len) {
			*truncated = 1;		/* the stream stops early */
			break;
		}
		if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR) {
			*truncated = 1;		/* corrupt: keep what decoded */
			break;
		}
	}
	inflateEnd(&z);
	*out = buf;
	*outlen = n;
	return 0;
}

static int cmp_mem(const void *a, const void *b)
{
	const struct rec_mem *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;	/* stable: record order */
}

int rec_path_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : alen < blen ? -1 : alen > blen;
}

static int cmp_path(const void *a, const void *b)
{
	const struct rec_path *x = a, *y = b;
	int c = rec_path_cmp(x->path, x->len, y->path, y->len);

	if (c)
		return c;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->path < y->path ? -1 : x->path > y->path;
}

static int parse_meta(struct recording *r, const uint8_t *p, size_t n)
{
	struct rec_cur c = { p, n, 0 };
	const uint8_t *s;
	size_t len;

	r->meta.sample_period = rec_take_u64(&c);
	r->meta.frequency = rec_take_u64(&c);
	r->meta.stack_bytes = rec_take_u32(&c);
	r->meta.flags = rec_take_u32(&c);
	r->meta.symcache_entries = rec_take_u32(&c);
	r->meta.threadcache_entries = rec_take_u32(&c);
	r->meta.time_nanos = (int64_t)rec_take_u64(&c);
	rec_take_str(&c, r->meta.event, sizeof(r->meta.event));
	s = rec_take_strp(&c, &len);
	if (c.bad)
		return -1;
	if (c.n >= 8) {
		r->meta.start_mono_ns = rec_take_u64(&c);
		r->meta.has_start_mono = 1;
	}
	if (c.n >= 4)
		r->meta.run_id = rec_take_u32(&c);
	free(r->meta.cmdline);
	r->meta.cmdline = strndup((const char *)s, len);
	return r->meta.cmdline ? 0 : -1;
}

static int parse_file(struct recording *r, const uint8_t *p, size_t n)
{
	struct rec_cur c = { p, n, 0 };
	uint32_t id = rec_take_u32(&c), cnt;
	uint64_t size = rec_take_u64(&c), total = 0;
	const uint8_t *ext;
	struct rec_file *f;

	cnt = rec_take_u32(&c);
	if (c.bad || id >= REC_MAX_OBJECTS || size > r->lim.max_file ||
	    cnt > c.n / 12)
		return -1;
	ext = rec_take(&c, (size_t)cnt * 12);
	for (uint32_t i = 0; ext && i < cnt; i++) {
		uint64_t off = rec_get_u64(ext + 12 * i);
		uint32_t len = rec_get_u32(ext + 12 * i + 8);

		if (off > size || len > size - off)
			return -1;
		total += len;
	}
	if (!ext && cnt)
		return -1;
	if (total != c.n)
		return -1;
	if (id >= r->nfiles) {
		size_t cap = r->nfiles;
		struct rec_file *nv = realloc(r->files, (id + 1) * sizeof(*nv));

		if (!nv)
			return -2;
		r->files = nv;
		r->nfiles = id + 1;
		memset(r->files + cap, 0, (r->nfiles - cap) * sizeof(*nv));
	}
	f = &r->files[id];
	/* A later record with content completes an object first seen bare. */
	if (f->present && f->has_content && !cnt)
		return 0;
	if (f->present && f->size != size)
		return -1;
	*f = (struct rec_file){ .present = 1, .has_content = cnt > 0, .size = size, .n = cnt,
				.ext = ext, .data = c.p };
	return 0;
}

/* Capacities of the index arrays while the records are read. */
struct caps {
	size_t ev, mem, maps, paths;
};

/* The parse_* of one record: 0 when it is indexed, -1 when it is
 * malformed (skipped and counted), -2 when memory ran out (the load
 * fails). */

/* Targets, forgets, samples and interval ends: replay.c decodes them in
 * order, so they are only kept in place here. */
static int parse_event(struct recording *r, struct caps *cap, uint8_t type, const uint8_t *p,
		       uint32_t len)
{
	if (rec_grow((void **)&r->ev, &cap->ev, r->nev + 1, sizeof(*r->ev)))
		return -2;
	r->ev[r->nev++] = (struct rec_event){ .type = type, .len = len, .p = p };
	if (type == REC_SAMPLE)
		r->nsamples++;
	return 0;
}

static int parse_mem(struct recording *r, struct caps *cap, const uint8_t *p, uint32_t len)
{
	struct rec_cur c = { p, len, 0 };
	uint32_t pid = rec_take_u32(&c);
	uint64_t addr = rec_take_u64(&c), seq = rec_take_u64(&c);

	if (c.bad || !c.n || addr + c.n < addr)
		return -1;
	if (rec_grow((void **)&r->mem, &cap->mem, r->nmem + 1, sizeof(*r->mem)))
		return -2;
	r->mem[r->nmem++] = (struct rec_mem){ .pid = pid, .len = (uint32_t)c.n, .addr = addr,
					      .seq = seq, .p = c.p, .at = p };
	return 0;
}

static int parse_memfail(struct recording *r, struct caps *cap, const uint8_t *p, uint32_t len)
{
	struct rec_cur c = { p, len, 0 };
	uint32_t pid = rec_take_u32(&c);
	uint64_t addr = rec_take_u64(&c), seq = rec_take_u64(&c);
	uint32_t n = rec_take_u32(&c);

	if (c.bad || !n || addr + n < addr)
		return -1;
	if (rec_grow((void **)&r->mem, &cap->mem, r->nmem + 1, sizeof(*r->mem)))
		return -2;
	r->mem[r->nmem++] = (struct rec_mem){ .pid = pid, .len = n, .addr = addr, .seq = seq,
					      .at = p };
	return 0;
}

static int parse_maps(struct recording *r, struct caps *cap, const uint8_t *p, uint32_t len)
{
	struct rec_cur c = { p, len, 0 };
	uint32_t pid = rec_take_u32(&c), gen = rec_take_u32(&c);

	if (c.bad)
		return -1;
	if (rec_grow((void **)&r->maps, &cap->maps, r->nmaps + 1, sizeof(*r->maps)))
		return -2;
	r->maps[r->nmaps++] = (struct rec_maps){ .pid = pid, .gen = gen, .text = c.p,
						 .len = c.n };
	return 0;
}

static int parse_path(struct recording *r, struct caps *cap, const uint8_t *p, uint32_t len)
{
	struct rec_cur c = { p, len, 0 };
	uint32_t obj = rec_take_u32(&c);
	uint64_t seq = rec_take_u64(&c);
	size_t plen;
	const uint8_t *s = rec_take_strp(&c, &plen);

	/* A NUL inside could never match a path replay is asked for. */
	if (c.bad || !plen || memchr(s, '\0', plen))
		return -1;
	if (rec_grow((void **)&r->paths, &cap->paths, r->npaths + 1, sizeof(*r->paths)))
		return -2;
	r->paths[r->npaths++] = (struct rec_path){ .path = s, .len = plen, .obj = obj,
						   .seq = seq };
	return 0;
}

static int parse_record(struct recording *r, struct caps *cap, uint8_t type, const uint8_t *p,
			uint32_t len)
{
	int rc;

	switch (type) {
	case REC_META:
		rc = parse_meta(r, p, len);
		r->has_meta |= !rc;
		return rc;
	case REC_TARGET: case REC_FORGET: case REC_SAMPLE: case REC_WRITE: case REC_TICK:
	case REC_BPFWALK: case REC_BPFMAP: case REC_BPFWANT:
		return parse_event(r, cap, type, p, len);
	case REC_MEM:
		return parse_mem(r, cap, p, len);
	case REC_MEMFAIL:
		return parse_memfail(r, cap, p, len);
	case REC_MAPS:
		return parse_maps(r, cap, p, len);
	case REC_FILE:
		return parse_file(r, p, len);
	case REC_PATH:
		return parse_path(r, cap, p, len);
	case REC_END:
		r->complete = 1;
		return 0;
	default:
		return 0;	/* a newer writer's record: skipped */
	}
}

static int parse_records(struct recording *r)
{
	struct caps cap = { 0 };
	size_t pos = 0;

	while (r->body_len - pos >= 5) {
		uint8_t type = r->body[pos];
		uint32_t len = rec_get_u32(r->body + pos + 1);
		const uint8_t *p = r->body + pos + 5;
		int rc;

		if (len > r->body_len - pos - 5)
			break;		/* truncated */
		pos += 5 + (size_t)len;
		rc = parse_record(r, &cap, type, p, len);
		if (rc == -2)
			return -1;
		if (rc)
			r->bad_records++;
	}
	/* Sorted once here, searched by replay_src.c for every read. */
	if (r->nmem)
		qsort(r->mem, r->nmem, sizeof(*r->mem), cmp_mem);
	if (r->npaths)
		qsort(r->paths, r->npaths, sizeof(*r->paths), cmp_path);
	return 0;
}

struct recording *rec_load_mem(const void *data, size_t len, const struct rec_limits *lim,
			       char *err, size_t errlen)
{
	const uint8_t *p = data;
	struct recording *r;
	uint32_t version, flags;
	int truncated = 0;

	if (len < REC_HDR_LEN || memcmp(p, REC_MAGIC, 8)) {
		snprintf(err, errlen, "not a pyperf-pprof recording (no %s header)", REC_MAGIC);
		return NULL;
	}
	version = rec_get_u32(p + 8);
	flags = rec_get_u32(p + 12);
	if (version != REC_VERSION) {
		snprintf(err, errlen, "recording format version %u is not supported (this build reads version %d)",
			 version, REC_VERSION);
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		goto oom;
	if (lim)
		r->lim = *lim;
	if (!r->lim.max_body)
		r->lim.max_body = (size_t)4 << 30;
	if (!r->lim.max_file)
		r->lim.max_file = (size_t)4 << 30;
	p += REC_HDR_LEN;
	len -= REC_HDR_LEN;
	if (flags & REC_F_STORED) {
		r->body_len = len < r->lim.max_body ? len : r->lim.max_body;
		r->body = malloc(r->body_len ? r->body_len : 1);
		if (!r->body)
			goto oom;
		memcpy(r->body, p, r->body_len);
	} else if (inflate_body(p, len, r->lim.max_body, &r->body, &r->body_len, &truncated)) {
		goto oom;
	}
	if (parse_records(r))
		goto oom;
	if (truncated)
		r->complete = 0;
	return r;
oom:
	rec_free(r);
	snprintf(err, errlen, "out of memory reading the recording");
	return NULL;
}

struct recording *rec_load_file(const char *path, const struct rec_limits *lim,
				char *err, size_t errlen)
{
	struct recording *r;
	struct stat st;
	uint8_t *buf;
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "cannot open the recording %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "cannot read the recording %s: not a regular file", path);
		close(fd);
		return NULL;
	}
	buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	if (!buf) {
		snprintf(err, errlen, "cannot read the recording %s: out of memory", path);
		close(fd);
		return NULL;
	}
	while (n < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + n, (size_t)st.st_size - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	r = rec_load_mem(buf, n, lim, err, errlen);
	free(buf);
	if (!r) {
		char why[400];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s: %s", path, why);
	}
	return r;
}

void rec_free(struct recording *r)
{
	if (!r)
		return;
	free(r->meta.cmdline);
	free(r->body);
	free(r->ev);
	free(r->mem);
	free(r->maps);
	free(r->files);
	free(r->paths);
	free(r->gens);
	free(r);
}

int rec_decode_target(const struct rec_event *e, struct py_target *t)
{
	struct rec_cur c = { e->p, e->len, 0 };

	memset(t, 0, sizeof(*t));
	t->pid = (pid_t)rec_take_u32(&c);
	t->start_time = rec_take_u64(&c);
	t->major = rec_take_u32(&c);
	t->minor = rec_take_u32(&c);
	t->micro = rec_take_u32(&c);
	t->version_hex = rec_take_u32(&c);
	t->runtime_addr = rec_take_u64(&c);
	t->bpf.interp_head_addr = rec_take_u64(&c);
	t->bpf.gil_locked_addr = rec_take_u64(&c);
	t->bpf.gil_holder_addr = rec_take_u64(&c);
	t->bpf.gil_current_addr = rec_take_u64(&c);
	rec_take_str(&c, t->module, sizeof(t->module));
	rec_take_str(&c, t->comm, sizeof(t->comm));
	rec_take_str(&c, t->cmdline, sizeof(t->cmdline));
	rec_take_str(&c, t->container_id, sizeof(t->container_id));
	if (c.n && !c.bad) {	/* absent in recordings older than roots */
		t->root.kind = (int)rec_take_u32(&c);
		t->root.pid = t->pid;
		t->root.dev = rec_take_u64(&c);
		t->root.ino = rec_take_u64(&c);
		rec_take_str(&c, t->root.dir, sizeof(t->root.dir));
		if (t->root.kind > PROC_ROOT_NS)
			t->root.kind = PROC_ROOT_OURS;
	}
	return c.bad || t->pid <= 0 ? -1 : 0;
}

int rec_decode_forget(const struct rec_event *e, uint32_t *pid, uint64_t *start_time)
{
	struct rec_cur c = { e->p, e->len, 0 };

	*pid = rec_take_u32(&c);
	*start_time = rec_take_u64(&c);
	return c.bad ? -1 : 0;
}

int rec_decode_write(const struct rec_event *e, struct rec_write *w)
{
	struct rec_cur c = { e->p, e->len, 0 };

	memset(w, 0, sizeof(*w));
	w->time_nanos = (int64_t)rec_take_u64(&c);
	w->duration_nanos = (int64_t)rec_take_u64(&c);
	w->offcpu_now_ns = rec_take_u64(&c);
	w->final = rec_take_u32(&c);
	w->rotate = rec_take_u32(&c);
	w->nstats = rec_take_u32(&c);
	if (w->nstats > REC_MAX_STATS)
		return -1;
	for (uint32_t i = 0; i < w->nstats; i++)
		w->stats[i] = rec_take_u64(&c);
	return c.bad ? -1 : 0;
}

int rec_decode_tick(const struct rec_event *e, struct pipeline_tick *k)
{
	struct rec_cur c = { e->p, e->len, 0 };

	memset(k, 0, sizeof(*k));
	k->wall_ns = (int64_t)rec_take_u64(&c);
	k->mono_ns = rec_take_u64(&c);
	k->final = rec_take_u32(&c) != 0;
	k->rotate = rec_take_u32(&c) != 0;
	k->nstats = rec_take_u32(&c);
	if (k->nstats > PIPELINE_MAX_STATS)
		return -1;
	for (uint32_t i = 0; i < k->nstats; i++)
		k->stats[i] = rec_take_u64(&c);
	return c.bad ? -1 : 0;
}
