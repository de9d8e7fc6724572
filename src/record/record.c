/*
 * Recording and replay of what a session observes; the format is in
 * record.h. Recording is a memory source (src/target/target_src.h) that
 * wraps the live one and appends what passed through it to a zlib stream;
 * replay loads a recording into memory and is a memory source serving it.
 */
#define _GNU_SOURCE
#include "record.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "elffile.h"
#include "proc.h"

#define REC_HDR_LEN		16	/* magic, version, flags */
#define REC_MAX_RECORD		(256u << 20)	/* one record's payload */
#define REC_MAX_READ		(64u << 20)	/* one memory read kept */
#define REC_MAX_IMAGE		(1ull << 30)	/* ELF files reduced, at most */
#define REC_MAX_OBJECTS		65536
#define REC_EXTENT_GAP		64	/* zero runs shorter than this stay inside an extent */
#define REC_SCAN_BACK		512	/* replay: ranges looked at for a containing read */

/* ---- little-endian helpers ---------------------------------------------- */

struct buf {
	uint8_t *p;
	size_t n, cap;
	int oom;
};

static void b_put(struct buf *b, const void *p, size_t n)
{
	if (b->oom || !n)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *np;

		while (cap < b->n + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void b_u32(struct buf *b, uint32_t v)
{
	uint8_t x[4];

	for (int i = 0; i < 4; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	b_put(b, x, 4);
}

static void b_u64(struct buf *b, uint64_t v)
{
	uint8_t x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	b_put(b, x, 8);
}

static void b_str(struct buf *b, const char *s)
{
	size_t n = s ? strnlen(s, 65535) : 0;
	uint8_t x[2] = { (uint8_t)n, (uint8_t)(n >> 8) };

	b_put(b, x, 2);
	b_put(b, s, n);
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p)
{
	return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/* A cursor over one payload: reads past its end fail and stick. */
struct cur {
	const uint8_t *p;
	size_t n;
	int bad;
};

static const uint8_t *c_take(struct cur *c, size_t n)
{
	const uint8_t *p = c->p;

	if (c->bad || n > c->n) {
		c->bad = 1;
		return NULL;
	}
	c->p += n;
	c->n -= n;
	return p;
}

static uint32_t c_u32(struct cur *c)
{
	const uint8_t *p = c_take(c, 4);

	return p ? get_u32(p) : 0;
}

static uint64_t c_u64(struct cur *c)
{
	const uint8_t *p = c_take(c, 8);

	return p ? get_u64(p) : 0;
}

/* A string into out (cap bytes, NUL-terminated, truncated). */
static void c_str(struct cur *c, char *out, size_t cap)
{
	const uint8_t *lp = c_take(c, 2);
	size_t n = lp ? (size_t)lp[0] | (size_t)lp[1] << 8 : 0;
	const uint8_t *s = c_take(c, n);
	size_t k = n < cap ? n : cap - 1;

	if (!s)
		k = 0;
	memcpy(out, s ? (const char *)s : "", k);
	out[k] = '\0';
	/* A NUL inside is allowed but ends the string. */
}

static uint64_t hash_bytes(const void *data, size_t n, uint64_t seed)
{
	const uint8_t *p = data;
	uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ull);

	while (n >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
		p += 8;
		n -= 8;
	}
	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	h ^= h >> 29;
	h *= 0xc4ceb9fe1a85ec53ull;
	return (h ^ (h >> 32)) | 1;
}

/* ---- recording ------------------------------------------------------------ */

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
	int in_sample;
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

#define W_FAILED	0	/* hash_bytes() never returns 0 (| 1) */

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

static void w_buf(struct recorder *rec, uint8_t type, struct buf *b)
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
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct w_pair *nv = realloc(*v, nc * sizeof(*nv));

		if (!nv)
			return NULL;
		*v = nv;
		*cap = nc;
	}
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
		h = hash_bytes(&e->addr, 8, e->pid ^ ((uint64_t)e->len << 32)) & (cap - 1);
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
	hb = p ? hash_bytes(p, len, 0) : W_FAILED;
	h = hash_bytes(&addr, 8, pid ^ ((uint64_t)len << 32)) & (rec->mem_cap - 1);
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
	if (rec->nmaps == rec->maps_cap) {
		size_t nc = rec->maps_cap ? rec->maps_cap * 2 : 16;
		struct w_pair *nv = realloc(rec->maps, nc * sizeof(*nv));

		if (!nv)
			return NULL;
		rec->maps = nv;
		rec->maps_cap = nc;
	}
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
		uint64_t h = hash_bytes(text, *len, 1);
		uint32_t gen = w_gen(rec, pid);
		struct w_pair *m = maps_slot(rec, pid, gen);
		struct buf b = { 0 };

		if (m && m->h != h) {
			m->h = h;
			b_u32(&b, pid);
			b_u32(&b, gen);
			b_put(&b, text, *len);
			w_buf(rec, REC_MAPS, &b);
		}
	}
	errno = e;
	return text;
}

/* ---- ELF files: the reduced image ---------------------------------------- */

static void keep(uint8_t *shadow, const uint8_t *img, size_t size, uint64_t off, uint64_t len)
{
	if (off >= size)
		return;
	if (len > size - off)
		len = size - off;
	memcpy(shadow + off, img + off, len);
}

static int read_shdr(const uint8_t *img, size_t size, const Elf64_Ehdr *eh, uint64_t i,
		     Elf64_Shdr *sh)
{
	uint64_t off = eh->e_shoff + i * sizeof(*sh);

	if (off < eh->e_shoff || off > size || size - off < sizeof(*sh))
		return -1;
	memcpy(sh, img + off, sizeof(*sh));
	return 0;
}

/* FUNC symbols (what src/native/nsym.c collects) and their names; others zero. */
static void keep_functions(uint8_t *shadow, const uint8_t *img, size_t size,
			   const Elf64_Shdr *sym, const Elf64_Shdr *str)
{
	uint64_t n;

	if (sym->sh_entsize != sizeof(Elf64_Sym) || sym->sh_offset > size ||
	    sym->sh_size > size - sym->sh_offset)
		return;
	n = sym->sh_size / sizeof(Elf64_Sym);
	for (uint64_t j = 1; j < n; j++) {
		uint64_t off = sym->sh_offset + j * sizeof(Elf64_Sym);
		Elf64_Sym s;
		int type;

		memcpy(&s, img + off, sizeof(s));
		type = ELF64_ST_TYPE(s.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
		    !s.st_value)
			continue;
		memcpy(shadow + off, &s, sizeof(s));
		if (str && s.st_name < str->sh_size && str->sh_offset <= size &&
		    str->sh_size <= size - str->sh_offset) {
			const char *name = (const char *)img + str->sh_offset + s.st_name;
			size_t len = strnlen(name, str->sh_size - s.st_name);

			keep(shadow, img, size, str->sh_offset + s.st_name,
			     len < str->sh_size - s.st_name ? len + 1 : len);
		}
	}
}

static int kept_name(const char *name)
{
	/* The PLT stubs and their relocations: plt.c names the stubs. */
	static const char *const names[] = { ".gnu_debuglink", ".eh_frame", ".eh_frame_hdr",
					     ".debug_frame", ".plt", ".plt.sec", ".plt.got",
					     ".rela.plt", ".rela.dyn", NULL };

	for (const char *const *n = names; *n; n++)
		if (strcmp(name, *n) == 0)
			return 1;
	return 0;
}

/* A zeroed copy of img holding only what unwind.c and nsym.c read. */
static uint8_t *elf_reduce(const uint8_t *img, size_t size)
{
	Elf64_Ehdr eh;
	Elf64_Shdr s0 = { 0 }, shstr = { 0 };
	uint64_t shnum, phnum, strndx;
	uint8_t *shadow;
	int have_s0;

	if (size < sizeof(eh))
		return NULL;
	memcpy(&eh, img, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return NULL;
	shadow = calloc(1, size);
	if (!shadow)
		return NULL;
	keep(shadow, img, size, 0, sizeof(eh));
	have_s0 = eh.e_shoff && eh.e_shentsize == sizeof(Elf64_Shdr) &&
		  read_shdr(img, size, &eh, 0, &s0) == 0;
	shnum = eh.e_shnum ? eh.e_shnum : have_s0 ? s0.sh_size : 0;
	strndx = eh.e_shstrndx == SHN_XINDEX && have_s0 ? s0.sh_link : eh.e_shstrndx;
	if (!have_s0)
		shnum = 0;
	if (shnum > (size - (eh.e_shoff < size ? eh.e_shoff : size)) / sizeof(Elf64_Shdr))
		shnum = (size - (eh.e_shoff < size ? eh.e_shoff : size)) / sizeof(Elf64_Shdr);
	if (shnum) {
		keep(shadow, img, size, eh.e_shoff, shnum * sizeof(Elf64_Shdr));
		if (strndx < shnum && read_shdr(img, size, &eh, strndx, &shstr) == 0 &&
		    shstr.sh_type != SHT_NOBITS)
			keep(shadow, img, size, shstr.sh_offset, shstr.sh_size);
	}
	for (uint64_t i = 1; i < shnum; i++) {
		Elf64_Shdr sh, str;
		char name[32] = "";

		if (read_shdr(img, size, &eh, i, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		if (shstr.sh_size && sh.sh_name < shstr.sh_size && shstr.sh_offset <= size &&
		    shstr.sh_size <= size - shstr.sh_offset) {
			size_t max = shstr.sh_size - sh.sh_name;

			snprintf(name, sizeof(name), "%.*s", (int)(max < 31 ? max : 31),
				 (const char *)img + shstr.sh_offset + sh.sh_name);
		}
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
			int has_str = sh.sh_link < shnum &&
				      read_shdr(img, size, &eh, sh.sh_link, &str) == 0 &&
				      str.sh_type != SHT_NOBITS;

			keep_functions(shadow, img, size, &sh, has_str ? &str : NULL);
			/* .dynsym whole: the PLT's relocations name undefined
			 * symbols, which keep_functions() leaves out. */
			if (sh.sh_type == SHT_DYNSYM) {
				keep(shadow, img, size, sh.sh_offset, sh.sh_size);
				if (has_str)
					keep(shadow, img, size, str.sh_offset, str.sh_size);
			}
		} else if (sh.sh_type == SHT_NOTE || sh.sh_type == SHT_SYMTAB_SHNDX ||
			   kept_name(name)) {
			keep(shadow, img, size, sh.sh_offset, sh.sh_size);
		}
	}
	phnum = eh.e_phnum == PN_XNUM && have_s0 ? s0.sh_info : eh.e_phnum;
	if (eh.e_phoff && eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phoff < size) {
		if (phnum > (size - eh.e_phoff) / sizeof(Elf64_Phdr))
			phnum = (size - eh.e_phoff) / sizeof(Elf64_Phdr);
		keep(shadow, img, size, eh.e_phoff, phnum * sizeof(Elf64_Phdr));
		for (uint64_t i = 0; i < phnum; i++) {
			Elf64_Phdr ph;

			memcpy(&ph, img + eh.e_phoff + i * sizeof(ph), sizeof(ph));
			if (ph.p_type == PT_NOTE || ph.p_type == PT_GNU_EH_FRAME)
				keep(shadow, img, size, ph.p_offset, ph.p_filesz);
		}
	}
	return shadow;
}

/* FILE record of object id: the non-zero runs of the reduced image. */
static void w_file(struct recorder *rec, uint32_t id, uint64_t size, const uint8_t *img)
{
	struct buf hdr = { 0 }, ext = { 0 };
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
		b_u64(&ext, start);
		b_u32(&ext, (uint32_t)(end - start));
		n++;
		total += end - start;
		i = end;
	}
	b_u32(&hdr, id);
	b_u64(&hdr, size);
	b_u32(&hdr, (uint32_t)n);
	b_put(&hdr, ext.p, ext.n);
	if (hdr.oom || ext.oom || hdr.n + total > REC_MAX_RECORD) {
		free(hdr.p);
		free(ext.p);
		return;
	}
	w_head(rec, REC_FILE, hdr.n + total);
	w_deflate(rec, hdr.p, hdr.n, Z_NO_FLUSH);
	for (size_t k = 0; k < n; k++) {
		uint64_t off = get_u64(ext.p + 12 * k);
		uint32_t len = get_u32(ext.p + 12 * k + 8);

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
	if (rec->nobj == rec->obj_cap) {
		size_t nc = rec->obj_cap ? rec->obj_cap * 2 : 32;
		struct w_obj *nv = realloc(rec->obj, nc * sizeof(*nv));

		if (!nv)
			return UINT32_MAX;
		rec->obj = nv;
		rec->obj_cap = nc;
	}
	rec->obj[rec->nobj] = (struct w_obj){ .dev = st->st_dev, .ino = st->st_ino,
					  .size = (uint64_t)st->st_size, .mtime_ns = mt };
	w_file(rec, (uint32_t)rec->nobj, (uint64_t)st->st_size, NULL);
	return (uint32_t)rec->nobj++;
}

static void w_path(struct recorder *rec, const char *path, uint32_t obj)
{
	uint64_t h = hash_bytes(path, strlen(path), 2) | 1;
	struct buf b = { 0 };
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
	b_u32(&b, obj);
	b_u64(&b, rec->seq);
	b_str(&b, path);
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
	struct buf b = { 0 };

	if (!rec)
		return;
	b_u64(&b, m->sample_period);
	b_u64(&b, m->frequency);
	b_u32(&b, m->stack_bytes);
	b_u32(&b, m->flags);
	b_u32(&b, m->symcache_entries);
	b_u32(&b, m->threadcache_entries);
	b_u64(&b, (uint64_t)m->time_nanos);
	b_str(&b, m->event);
	b_str(&b, m->cmdline);
	b_u64(&b, m->start_mono_ns);
	w_buf(rec, REC_META, &b);
}

void record_target(struct recorder *rec, const struct py_target *t)
{
	struct w_pair *g;
	struct buf b = { 0 };

	if (!rec)
		return;
	g = pair_get(&rec->gens, &rec->ngens, &rec->gens_cap, (uint32_t)t->pid, 1);
	if (g)
		g->gen++;
	b_u32(&b, (uint32_t)t->pid);
	b_u64(&b, t->start_time);
	b_u32(&b, t->major);
	b_u32(&b, t->minor);
	b_u32(&b, t->micro);
	b_u32(&b, t->version_hex);
	b_u64(&b, t->runtime_addr);
	b_u64(&b, t->bpf.interp_head_addr);
	b_u64(&b, t->bpf.gil_locked_addr);
	b_u64(&b, t->bpf.gil_holder_addr);
	b_u64(&b, t->bpf.gil_current_addr);
	b_str(&b, t->module);
	b_str(&b, t->comm);
	b_str(&b, t->cmdline);
	b_str(&b, t->container_id);
	w_buf(rec, REC_TARGET, &b);
}

void record_forget(struct recorder *rec, const struct py_target *t)
{
	struct buf b = { 0 };

	if (!rec)
		return;
	b_u32(&b, (uint32_t)t->pid);
	b_u64(&b, t->start_time);
	w_buf(rec, REC_FORGET, &b);
}

void record_sample(struct recorder *rec, const void *data, size_t size)
{
	if (!rec)
		return;
	rec->seq++;
	w_record(rec, REC_SAMPLE, data, size, NULL, 0);
	rec->in_sample = 1;
}

void record_sample_end(struct recorder *rec)
{
	if (rec)
		rec->in_sample = 0;
}

void record_tick(struct recorder *rec, const struct pipeline_tick *k)
{
	struct buf b = { 0 };
	uint32_t n = k->nstats < REC_MAX_STATS ? k->nstats : REC_MAX_STATS;

	if (!rec)
		return;
	b_u64(&b, (uint64_t)k->wall_ns);
	b_u64(&b, k->mono_ns);
	b_u32(&b, (uint32_t)k->final);
	b_u32(&b, (uint32_t)k->rotate);
	b_u32(&b, n);
	for (uint32_t i = 0; i < n; i++)
		b_u64(&b, k->stats[i]);
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

/* ---- reading -------------------------------------------------------------- */

struct rec_mem {
	uint32_t pid, len;
	uint64_t addr, seq;
	const uint8_t *p;		/* NULL: the read failed */
	const uint8_t *at;		/* the record, for a stable order */
};

struct rec_maps {
	uint32_t pid, gen;
	const uint8_t *text;
	size_t len;
};

struct rec_file {
	int present, has_content;
	uint64_t size;
	uint32_t n;
	const uint8_t *ext;		/* n x (u64 offset, u32 length) */
	const uint8_t *data;
};

struct rec_path {
	const uint8_t *path;		/* not NUL-terminated */
	size_t len;
	uint32_t obj;
	uint64_t seq;
};

struct rec_gen {
	uint32_t pid, gen;
};

static int grow(void **v, size_t *cap, size_t need, size_t elem)
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

static int cmp_path_key(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : alen < blen ? -1 : alen > blen;
}

static int cmp_path(const void *a, const void *b)
{
	const struct rec_path *x = a, *y = b;
	int c = cmp_path_key(x->path, x->len, y->path, y->len);

	if (c)
		return c;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->path < y->path ? -1 : x->path > y->path;
}

static int parse_meta(struct recording *r, const uint8_t *p, size_t n)
{
	struct cur c = { p, n, 0 };
	const uint8_t *lp, *s;
	size_t len;

	r->meta.sample_period = c_u64(&c);
	r->meta.frequency = c_u64(&c);
	r->meta.stack_bytes = c_u32(&c);
	r->meta.flags = c_u32(&c);
	r->meta.symcache_entries = c_u32(&c);
	r->meta.threadcache_entries = c_u32(&c);
	r->meta.time_nanos = (int64_t)c_u64(&c);
	c_str(&c, r->meta.event, sizeof(r->meta.event));
	lp = c_take(&c, 2);
	len = lp ? (size_t)lp[0] | (size_t)lp[1] << 8 : 0;
	s = c_take(&c, len);
	if (c.bad)
		return -1;
	if (c.n >= 8) {
		r->meta.start_mono_ns = c_u64(&c);
		r->meta.has_start_mono = 1;
	}
	free(r->meta.cmdline);
	r->meta.cmdline = strndup((const char *)s, len);
	return r->meta.cmdline ? 0 : -1;
}

static int parse_file(struct recording *r, const uint8_t *p, size_t n)
{
	struct cur c = { p, n, 0 };
	uint32_t id = c_u32(&c), cnt;
	uint64_t size = c_u64(&c), total = 0;
	const uint8_t *ext;
	struct rec_file *f;

	cnt = c_u32(&c);
	if (c.bad || id >= REC_MAX_OBJECTS || size > r->lim.max_file ||
	    cnt > c.n / 12)
		return -1;
	ext = c_take(&c, (size_t)cnt * 12);
	for (uint32_t i = 0; ext && i < cnt; i++) {
		uint64_t off = get_u64(ext + 12 * i);
		uint32_t len = get_u32(ext + 12 * i + 8);

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

static int parse_records(struct recording *r)
{
	size_t pos = 0, cap_ev = 0, cap_mem = 0, cap_maps = 0, cap_paths = 0;

	while (r->body_len - pos >= 5) {
		uint8_t type = r->body[pos];
		uint32_t len = get_u32(r->body + pos + 1);
		const uint8_t *p = r->body + pos + 5;
		struct cur c = { p, len, 0 };
		int bad = 0;

		if (len > r->body_len - pos - 5)
			break;		/* truncated */
		pos += 5 + (size_t)len;
		switch (type) {
		case REC_META:
			bad = parse_meta(r, p, len);
			r->has_meta |= !bad;
			break;
		case REC_TARGET: case REC_FORGET: case REC_SAMPLE: case REC_WRITE: case REC_TICK:
			if (grow((void **)&r->ev, &cap_ev, r->nev + 1, sizeof(*r->ev)))
				return -1;
			r->ev[r->nev++] = (struct rec_event){ .type = type, .len = len, .p = p };
			if (type == REC_SAMPLE)
				r->nsamples++;
			break;
		case REC_MEM: {
			uint32_t pid = c_u32(&c);
			uint64_t addr = c_u64(&c), seq = c_u64(&c);

			if (c.bad || !c.n || addr + c.n < addr) {
				bad = 1;
				break;
			}
			if (grow((void **)&r->mem, &cap_mem, r->nmem + 1, sizeof(*r->mem)))
				return -1;
			r->mem[r->nmem++] = (struct rec_mem){ .pid = pid, .len = (uint32_t)c.n,
							      .addr = addr, .seq = seq, .p = c.p,
							      .at = p };
			break;
		}
		case REC_MEMFAIL: {
			uint32_t pid = c_u32(&c);
			uint64_t addr = c_u64(&c), seq = c_u64(&c);
			uint32_t n = c_u32(&c);

			if (c.bad || !n || addr + n < addr) {
				bad = 1;
				break;
			}
			if (grow((void **)&r->mem, &cap_mem, r->nmem + 1, sizeof(*r->mem)))
				return -1;
			r->mem[r->nmem++] = (struct rec_mem){ .pid = pid, .len = n, .addr = addr,
							      .seq = seq, .at = p };
			break;
		}
		case REC_MAPS: {
			uint32_t pid = c_u32(&c), gen = c_u32(&c);

			if (c.bad) {
				bad = 1;
				break;
			}
			if (grow((void **)&r->maps, &cap_maps, r->nmaps + 1, sizeof(*r->maps)))
				return -1;
			r->maps[r->nmaps++] = (struct rec_maps){ .pid = pid, .gen = gen,
								 .text = c.p, .len = c.n };
			break;
		}
		case REC_FILE:
			bad = parse_file(r, p, len);
			if (bad == -2)
				return -1;
			break;
		case REC_PATH: {
			uint32_t obj = c_u32(&c);
			uint64_t seq = c_u64(&c);
			const uint8_t *lp = c_take(&c, 2);
			size_t plen = lp ? (size_t)lp[0] | (size_t)lp[1] << 8 : 0;
			const uint8_t *s = c_take(&c, plen);

			if (c.bad || !plen || memchr(s, '\0', plen)) {
				bad = 1;
				break;
			}
			if (grow((void **)&r->paths, &cap_paths, r->npaths + 1, sizeof(*r->paths)))
				return -1;
			r->paths[r->npaths++] = (struct rec_path){ .path = s, .len = plen,
								   .obj = obj, .seq = seq };
			break;
		}
		case REC_END:
			r->complete = 1;
			break;
		default:
			break;		/* a newer writer's record: skipped */
		}
		if (bad)
			r->bad_records++;
	}
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
	version = get_u32(p + 8);
	flags = get_u32(p + 12);
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
	struct cur c = { e->p, e->len, 0 };

	memset(t, 0, sizeof(*t));
	t->pid = (pid_t)c_u32(&c);
	t->start_time = c_u64(&c);
	t->major = c_u32(&c);
	t->minor = c_u32(&c);
	t->micro = c_u32(&c);
	t->version_hex = c_u32(&c);
	t->runtime_addr = c_u64(&c);
	t->bpf.interp_head_addr = c_u64(&c);
	t->bpf.gil_locked_addr = c_u64(&c);
	t->bpf.gil_holder_addr = c_u64(&c);
	t->bpf.gil_current_addr = c_u64(&c);
	c_str(&c, t->module, sizeof(t->module));
	c_str(&c, t->comm, sizeof(t->comm));
	c_str(&c, t->cmdline, sizeof(t->cmdline));
	c_str(&c, t->container_id, sizeof(t->container_id));
	return c.bad || t->pid <= 0 ? -1 : 0;
}

int rec_decode_forget(const struct rec_event *e, uint32_t *pid, uint64_t *start_time)
{
	struct cur c = { e->p, e->len, 0 };

	*pid = c_u32(&c);
	*start_time = c_u64(&c);
	return c.bad ? -1 : 0;
}

int rec_decode_write(const struct rec_event *e, struct rec_write *w)
{
	struct cur c = { e->p, e->len, 0 };

	memset(w, 0, sizeof(*w));
	w->time_nanos = (int64_t)c_u64(&c);
	w->duration_nanos = (int64_t)c_u64(&c);
	w->offcpu_now_ns = c_u64(&c);
	w->final = c_u32(&c);
	w->rotate = c_u32(&c);
	w->nstats = c_u32(&c);
	if (w->nstats > REC_MAX_STATS)
		return -1;
	for (uint32_t i = 0; i < w->nstats; i++)
		w->stats[i] = c_u64(&c);
	return c.bad ? -1 : 0;
}

int rec_decode_tick(const struct rec_event *e, struct pipeline_tick *k)
{
	struct cur c = { e->p, e->len, 0 };

	memset(k, 0, sizeof(*k));
	k->wall_ns = (int64_t)c_u64(&c);
	k->mono_ns = c_u64(&c);
	k->final = c_u32(&c) != 0;
	k->rotate = c_u32(&c) != 0;
	k->nstats = c_u32(&c);
	if (k->nstats > PIPELINE_MAX_STATS)
		return -1;
	for (uint32_t i = 0; i < k->nstats; i++)
		k->stats[i] = c_u64(&c);
	return c.bad ? -1 : 0;
}

/* ---- replaying ------------------------------------------------------------ */

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

		if (cmp_path_key(r->paths[mid].path, r->paths[mid].len,
				 (const uint8_t *)path, plen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < r->npaths && !cmp_path_key(r->paths[i].path, r->paths[i].len,
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

	/* The paths live_map_file() (src/target/live_src.c) tries, in its order. */
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
		uint64_t at = get_u64(f->ext + 12 * i);
		uint32_t len = get_u32(f->ext + 12 * i + 8);
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
	if (grow((void **)&r->gens, &r->gens_cap, r->ngens + 1, sizeof(*r->gens)))
		return;
	r->gens[r->ngens++] = (struct rec_gen){ .pid = pid, .gen = 1 };
}
