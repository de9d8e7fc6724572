/* The text of /proc/PID/maps from the task_vma iterator's records. */
#include "maps_text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"
#include "pyperf.h"

#define NAME_COLUMN	73	/* the kernel pads the header to 72, then a space */
#define HEADER_MAX	96	/* 16+1+16+6+16+1+5+1+5+1+20+1 at most */
#define PATH_SLOTS	2048	/* files of every process of a host, with room */
#define PATH_MAX_LEN	4096

struct path_slot {
	uint64_t key, ino;
	uint32_t dev, gen;
	char *path;		/* as the maps text has it; NULL: empty slot */
};

struct maps_paths {
	struct path_slot s[PATH_SLOTS];
};

static const char *const anon_names[] = {
	[PY_VMA_NAME_HEAP] = "[heap]",
	[PY_VMA_NAME_STACK] = "[stack]",
	[PY_VMA_NAME_VDSO] = "[vdso]",
};

struct maps_paths *maps_paths_new(void)
{
	return calloc(1, sizeof(struct maps_paths));
}

void maps_paths_free(struct maps_paths *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < PATH_SLOTS; i++)
		free(c->s[i].path);
	free(c);
}

static struct path_slot *slot_of(const struct maps_paths *c, const struct py_vma_rec *r)
{
	uint64_t h = (r->key ^ r->ino * 0x9e3779b97f4a7c15ull ^ r->gen) * 0xff51afd7ed558ccdull;

	return (struct path_slot *)&c->s[(h >> 32) % PATH_SLOTS];
}

static const char *path_of(const struct maps_paths *c, const struct py_vma_rec *r)
{
	const struct path_slot *s = slot_of(c, r);

	return s->path && s->key == r->key && s->ino == r->ino && s->dev == r->dev &&
	       s->gen == r->gen ? s->path : NULL;
}

/* Appends n bytes; -1 if out of memory. */
static int put(char **out, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n > *cap) {
		size_t ncap = *cap ? *cap : 8192;
		char *nb;

		while (ncap < *len + n)
			ncap *= 2;
		nb = realloc(*out, ncap);
		if (!nb)
			return -1;
		*out = nb;
		*cap = ncap;
	}
	memcpy(*out + *len, s, n);
	*len += n;
	return 0;
}

/* v in hex, at least width digits, at p; returns the end. (snprintf of
 * the header was most of writing the text.) */
static char *hex(char *p, unsigned long long v, int width)
{
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v && n < 16);
	while (n < width)
		tmp[n++] = '0';
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *dec(char *p, unsigned long long v)
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < 20);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* One line, with its file's path or an anonymous mapping's name, if any. */
static int put_line(char **out, size_t *len, size_t *cap, const struct py_vma_rec *r,
		    const char *path)
{
	const char *name = path ? path : r->name < sizeof(anon_names) / sizeof(anon_names[0]) ?
			   anon_names[r->name] : NULL;
	char h[HEADER_MAX + NAME_COLUMN], *p = h;
	int hl;

	p = hex(p, r->start, 8);
	*p++ = '-';
	p = hex(p, r->end, 8);
	*p++ = ' ';
	*p++ = (r->vm_flags & 1) ? 'r' : '-';
	*p++ = (r->vm_flags & 2) ? 'w' : '-';
	*p++ = (r->vm_flags & 4) ? 'x' : '-';
	*p++ = (r->vm_flags & 0x80) ? 's' : 'p';
	*p++ = ' ';
	p = hex(p, r->pgoff, 8);
	*p++ = ' ';
	p = hex(p, r->dev >> 20, 2);
	*p++ = ':';
	p = hex(p, r->dev & 0xfffff, 2);
	*p++ = ' ';
	p = dec(p, r->ino);
	*p++ = ' ';
	hl = (int)(p - h);
	if (name) {
		while (hl < NAME_COLUMN - 1)
			h[hl++] = ' ';
		h[hl++] = ' ';
	}
	if (put(out, len, cap, h, (size_t)hl) || (name && put(out, len, cap, name, strlen(name))))
		return -1;
	return put(out, len, cap, "\n", 1);
}

/* The records, checked: NULL unless they are whole and from one state. */
static const struct py_vma_rec *records(const void *recs, size_t len, size_t *n)
{
	const struct py_vma_rec *r = recs;

	*n = len / sizeof(*r);
	if (!*n || len % sizeof(*r) || ((uintptr_t)recs % _Alignof(struct py_vma_rec)))
		return NULL;
	for (size_t i = 0; i < *n; i++)
		if (r[i].map_count != *n || (r[i].flags & PY_VMA_F_FALLBACK))
			return NULL;
	return r;
}

char *maps_text_from_vmas(const struct maps_paths *c, const void *recs, size_t len,
			  size_t *text_len)
{
	const struct py_vma_rec *r;
	size_t n, out_len = 0, cap = 0;
	char *out = NULL;

	if (!c || !(r = records(recs, len, &n)))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *path = NULL;

		if ((r[i].flags & PY_VMA_F_FILE) && !(path = path_of(c, &r[i])))
			goto refuse;
		if (put_line(&out, &out_len, &cap, &r[i], path))
			goto refuse;
	}
	*text_len = out_len;
	return out;
refuse:
	free(out);
	return NULL;
}

void maps_paths_learn(struct maps_paths *c, const void *recs, size_t len, const char *text,
		      size_t text_len)
{
	const struct py_vma_rec *r;
	struct proc_maps m;
	size_t n;

	if (!c || !(r = records(recs, len, &n)) || proc_maps_parse(text, text_len, &m))
		return;
	for (size_t i = 0; i < n; i++) {
		const struct proc_map *pm = proc_maps_find(&m, r[i].start);
		struct path_slot *s;
		char *p;

		if (!(r[i].flags & PY_VMA_F_FILE) || !pm || pm->start != r[i].start ||
		    pm->inode != r[i].ino || pm->dev_major != r[i].dev >> 20 ||
		    pm->dev_minor != (r[i].dev & 0xfffff) || pm->path[0] != '/' ||
		    strlen(pm->path) >= PATH_MAX_LEN || strstr(pm->path, " (deleted)") ||
		    path_of(c, &r[i]))
			continue;
		if (!(p = strdup(pm->path)))
			break;
		s = slot_of(c, &r[i]);
		free(s->path);
		*s = (struct path_slot){ .key = r[i].key, .ino = r[i].ino, .dev = r[i].dev,
					 .gen = r[i].gen, .path = p };
	}
	proc_maps_free(&m);
}
