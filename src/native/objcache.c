/* The shared native object layer; see objcache.h. */
#define _GNU_SOURCE
#include "objcache.h"

#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "target_src.h"

#define OC_DEF_OBJECTS		256
#define OC_DEF_PROCS		64
#define OC_DEF_BYTES		(256u << 20)
#define OC_MAX_OBJECTS		4096
#define OC_MAX_PROCS		4096
#define OC_MAX_PHDRS		64
#define OC_VDSO_MAX		(1u << 20)
#define OC_NO_OBJ		UINT64_MAX	/* memo: mapping has no usable object */
#define OC_SEEN_SLOTS		8192	/* identities remembered for stats.distinct */
#define OC_DEBUG_TAG		0x9e3779b97f4a7c15ull
#define OC_FIDS			1024	/* mapped files remembered by their maps
					 * identity (a power of two) */
#define OC_FID_NS		1000000000ull	/* ... and stat'ed again this often
						 * when their object has no watch */
/* What can change a watched file's bytes or stat identity in place: writes,
 * truncation, a touch (mtime) and a close after writing (writes through a
 * shared mapping send no IN_MODIFY). A rename or unlink changes neither:
 * the maps line's path, part of a fid's key, tells those. */
#define OC_WATCH_MASK		(IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE)
#define OC_WATCH_READS		8	/* reads per drain; more: as if lost */

struct oc_memo {
	uint64_t serial;		/* 0: not resolved yet; OC_NO_OBJ */
	uint32_t slot;
};

/* A file as /proc/PID/maps names it (device, inode and path) and the
 * object found behind it: a new process of an interpreter already seen
 * maps the same files, found here without a look through its map_files
 * (an access() and a stat() per mapping, most of the system calls of its
 * attach). While mapped, the dev and inode name that very inode, so only
 * a write in place can make it differ from the object: an inotify watch on
 * the object's file tells that, and a fid of it is trusted until an event
 * comes. Without a watch (no inotify, limits, a file system whose stat
 * numbers differ from its maps'), the file is stat'ed again at most every
 * OC_FID_NS. Changed in place, it is another object from then on. */
struct oc_fid {
	uint64_t dev, ino, path_hash;	/* path_hash 0: empty */
	uint64_t serial;		/* the object's, and its slot */
	uint32_t slot;
	uint64_t checked_ns;		/* when it was last stat'ed; 0: its
					 * object's watch fired */
};

struct objcache {
	struct objcache_opts opt;
	struct oc_obj *obj;
	struct oc_proc *proc;
	struct oc_proc *last;		/* the last one found: samples come in
					 * runs of one process, each native
					 * frame asks, and a scan of every
					 * slot was 4 % of a busy host's cost */
	uint64_t tick, serial;
	uint64_t maps_reads;		/* maps_gen of the latest read */
	void *user_ctx[OC_USERS];
	void (*obj_free[OC_USERS])(void *ctx, void *data);
	void (*proc_free[OC_USERS])(void *ctx, void *data);
	struct oc_fid fid[OC_FIDS];	/* by hash of the maps identity */
	int nfd;			/* inotify, made on first use; -1: none */
	int nfd_tried;
	uint64_t drained_ns;		/* when its events were last read */
	uint64_t seen[OC_SEEN_SLOTS];	/* identity hashes, 0: empty */
	size_t nseen;
	struct objcache_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h ? h : 1;
}

/* Counts an opened object in stats.distinct unless its identity was seen;
 * stops counting (bounded) when the set is three quarters full. */
static void note_identity(struct objcache *oc, uint64_t id)
{
	size_t i = id & (OC_SEEN_SLOTS - 1);

	if (oc->nseen >= OC_SEEN_SLOTS / 4 * 3)
		return;
	for (; oc->seen[i]; i = (i + 1) & (OC_SEEN_SLOTS - 1))
		if (oc->seen[i] == id)
			return;
	oc->seen[i] = id;
	oc->nseen++;
	oc->st.distinct++;
}

static uint64_t identity(const struct oc_obj *o)
{
	uint64_t h = 0xcbf29ce484222325ull;

	if (o->build_id_len)
		return hash_bytes(o->build_id, o->build_id_len, h);
	h = hash_bytes(&o->dev, sizeof(o->dev), h);
	h = hash_bytes(&o->ino, sizeof(o->ino), h);
	h = hash_bytes(&o->size, sizeof(o->size), h);
	return hash_bytes(&o->mtime_ns, sizeof(o->mtime_ns), h);
}

/* ---- processes -------------------------------------------------------- */

static void proc_user_clear(struct objcache *oc, struct oc_proc *p, int u)
{
	if (p->user[u] && oc->proc_free[u])
		oc->proc_free[u](oc->user_ctx[u], p->user[u]);
	p->user[u] = NULL;
}

static void proc_clear(struct objcache *oc, struct oc_proc *p)
{
	for (int u = 0; u < OC_USERS; u++)
		proc_user_clear(oc, p, u);
	proc_maps_free(&p->maps);
	free(p->memo);
	memset(p, 0, sizeof(*p));
}

/* (Re)reads the maps; keeps the old ones if that fails. */
static int load_maps(struct objcache *oc, struct oc_proc *p)
{
	struct proc_maps m;
	struct oc_memo *memo;

	oc->st.maps_reads++;
	p->read_ns = now_ns();
	if (proc_maps_read(p->src, p->pid, &m))
		return -1;
	memo = calloc(m.n ? m.n : 1, sizeof(*memo));
	if (!memo) {
		proc_maps_free(&m);
		return -1;
	}
	proc_maps_free(&p->maps);
	free(p->memo);
	p->maps = m;
	p->memo = memo;
	p->maps_gen = ++oc->maps_reads;
	return 0;
}

struct oc_proc *objcache_proc(struct objcache *oc, const struct target_src *src, int pid)
{
	struct oc_proc *p, *victim = &oc->proc[0];

	/* A slot cleared or reused has another pid (0 when free). */
	if (pid && oc->last && oc->last->pid == pid) {
		oc->st.proc_hits++;
		oc->last->tick = ++oc->tick;
		return oc->last;
	}
	for (size_t i = 0; i < oc->opt.max_procs; i++) {
		p = &oc->proc[i];
		if (p->pid == pid) {
			oc->st.proc_hits++;
			p->tick = ++oc->tick;
			oc->last = p;
			return p;
		}
		if (victim->pid && (!p->pid || p->tick < victim->tick))
			victim = p;
	}
	oc->st.proc_misses++;
	if (victim->pid) {
		oc->st.proc_evictions++;
		proc_clear(oc, victim);
	}
	victim->pid = pid;
	victim->src = src;
	victim->tick = ++oc->tick;
	if (load_maps(oc, victim)) {
		proc_clear(oc, victim);
		return NULL;
	}
	oc->last = victim;
	return victim;
}

/* An address missed the maps: a library may have been loaded since. At
 * most every OC_REFRESH_NS, so garbage addresses cannot make every sample
 * re-read /proc/PID/maps. */
int objcache_refresh(struct objcache *oc, struct oc_proc *p, uint64_t seen_ns)
{
	if (!oc_reread_due(p->read_ns, seen_ns, now_ns(), OC_REFRESH_NS))
		return -1;
	return load_maps(oc, p);
}

void objcache_forget_pid(struct objcache *oc, int pid)
{
	for (size_t i = 0; pid && i < oc->opt.max_procs; i++)
		if (oc->proc[i].pid == pid)
			proc_clear(oc, &oc->proc[i]);
}

/* ---- object entries --------------------------------------------------- */

static void obj_user_clear(struct objcache *oc, struct oc_obj *o, int u)
{
	if (o->user[u] && oc->obj_free[u])
		oc->obj_free[u](oc->user_ctx[u], o->user[u]);
	oc->st.bytes -= o->user_bytes[u];
	o->user[u] = NULL;
	o->user_bytes[u] = 0;
}

/* Is wd another entry's watch too? (An inode changed in place can have
 * two entries, the old one and the new; the kernel gives both one wd.) */
static int wd_shared(const struct objcache *oc, const struct oc_obj *o, int wd)
{
	for (size_t i = 0; i < oc->opt.max_objects; i++)
		if (&oc->obj[i] != o && oc->obj[i].serial && oc->obj[i].wd == wd)
			return 1;
	return 0;
}

/* o no longer relies on its watch; removed unless another entry has it. */
static void watch_drop(struct objcache *oc, struct oc_obj *o)
{
	if (!o->wd)
		return;
	if (!wd_shared(oc, o, o->wd))
		inotify_rm_watch(oc->nfd, o->wd);
	o->wd = 0;
	oc->st.watches--;
}

static void obj_clear(struct objcache *oc, struct oc_obj *o)
{
	watch_drop(oc, o);
	for (int u = 0; u < OC_USERS; u++)
		obj_user_clear(oc, o, u);
	elf_file_close(o->ef);
	elf_file_close(o->dbg);
	memset(o, 0, sizeof(*o));
}

static struct oc_obj *obj_lru(struct objcache *oc, const struct oc_obj *keep)
{
	struct oc_obj *victim = NULL;

	for (size_t i = 0; i < oc->opt.max_objects; i++) {
		struct oc_obj *o = &oc->obj[i];

		if (o->serial && o != keep && (!victim || o->tick < victim->tick))
			victim = o;
	}
	return victim;
}

/* A free slot, else the least recently used one, emptied. */
static struct oc_obj *obj_slot(struct objcache *oc)
{
	struct oc_obj *victim;

	for (size_t i = 0; i < oc->opt.max_objects; i++)
		if (!oc->obj[i].serial)
			return &oc->obj[i];
	victim = obj_lru(oc, NULL);
	oc->st.obj_evictions++;
	obj_clear(oc, victim);
	return victim;
}

/* Does st describe object o as it was loaded? */
static int same_file(const struct stat *st, const struct oc_obj *o)
{
	return st->st_ino == o->ino && st->st_dev == o->dev && (uint64_t)st->st_size == o->size &&
	       st->st_mtim.tv_sec * 1000000000ll + st->st_mtim.tv_nsec == o->mtime_ns;
}

static struct oc_obj *obj_find(struct objcache *oc, const struct stat *st,
			       const uint8_t *id, size_t idlen)
{
	for (size_t i = 0; i < oc->opt.max_objects; i++) {
		struct oc_obj *o = &oc->obj[i];

		if (!o->serial)
			continue;
		if (st && same_file(st, o))
			return o;
		if (idlen && o->build_id_len == idlen && memcmp(o->build_id, id, idlen) == 0)
			return o;
	}
	return NULL;
}

static struct oc_obj *obj_hit(struct objcache *oc, struct oc_obj *o)
{
	oc->st.obj_hits++;
	o->tick = ++oc->tick;
	return o;
}

/* A vDSO entry holding the very bytes img: every process of a kernel
 * maps the same vDSO, found so without a copy and parse of its own. */
static struct oc_obj *vdso_find(struct objcache *oc, const void *img, size_t len)
{
	for (size_t i = 0; i < oc->opt.max_objects; i++) {
		struct oc_obj *o = &oc->obj[i];
		const void *have;

		if (!o->serial || o->ino || o->dev || !o->ef || elf_file_size(o->ef) != len)
			continue;
		have = elf_file_data(o->ef, 0, len);
		if (have && memcmp(have, img, len) == 0)
			return o;
	}
	return NULL;
}

/* p's vDSO: an entry with the same bytes (*hit), else a new image. */
static struct elf_file *open_vdso(struct objcache *oc, const struct oc_proc *p,
				  const struct proc_map *m, struct oc_obj **hit)
{
	size_t len = m->end - m->start;
	struct elf_file *ef = NULL;
	void *buf;

	*hit = NULL;
	if (len > OC_VDSO_MAX)
		return NULL;
	buf = malloc(len);
	if (buf && target_read(p->src, p->pid, m->start, buf, len) == 0 &&
	    !(*hit = vdso_find(oc, buf, len)))
		ef = elf_file_open_mem(buf, len);
	free(buf);
	return ef;
}

/* The file behind m, as the target sees it. Through /proc/PID/root the name
 * may now be another file than the one mapped (replaced on disk): refused
 * when the inode differs. map_files always opens the mapped file. */
static int stat_mapped(const struct oc_proc *p, const struct proc_map *m, char *path,
		       size_t len, struct stat *st)
{
	target_map_file(p->src, p->pid, m, path, len);
	if (stat(path, st) || !S_ISREG(st->st_mode))
		return -1;
	if (!strstr(path, "/map_files/") && st->st_ino != m->inode)
		return -1;
	return 0;
}

static int obj_init(struct oc_obj *o, struct elf_file *ef, const struct stat *st,
		    const uint8_t *id, size_t idlen)
{
	struct elf_segment seg[OC_MAX_PHDRS];
	size_t n = elf_file_segments(ef, seg, OC_MAX_PHDRS);

	for (size_t i = 0; i < n; i++) {
		if (seg[i].type == PT_LOAD && o->nload < OC_MAX_LOADS) {
			o->load[o->nload++] = seg[i];
		} else if (seg[i].type == PT_GNU_RELRO) {
			o->relro_lo = seg[i].vaddr;
			o->relro_hi = seg[i].vaddr + seg[i].memsz;
		}
	}
	if (!o->nload)
		return -1;
	o->ef = ef;
	if (st) {
		o->dev = st->st_dev;
		o->ino = st->st_ino;
		o->size = (uint64_t)st->st_size;
		o->mtime_ns = st->st_mtim.tv_sec * 1000000000ll + st->st_mtim.tv_nsec;
	}
	memcpy(o->build_id, id, idlen);
	o->build_id_len = idlen;
	for (size_t i = 0; i < idlen; i++)
		snprintf(o->build_id_hex + 2 * i, 3, "%02x", id[i]);
	return 0;
}

/* Mapping m's entry in the maps-identity cache. Only live processes
 * are looked up there: a recording must see every look-up through its
 * source (it records the file's name per process), and a replay's files
 * are its own. NULL for other mappings. */
static struct oc_fid *fid_of(struct objcache *oc, const struct oc_proc *p,
			     const struct proc_map *m, uint64_t *hash)
{
	uint64_t h;

	if (!target_src_is_live(p->src) || !m->inode || m->path[0] != '/')
		return NULL;
	h = hash_bytes(m->path, strlen(m->path), 0xcbf29ce484222325ull);
	*hash = h;
	h = hash_bytes(&m->inode, sizeof(m->inode), h);
	h ^= (uint64_t)m->dev_major << 32 | m->dev_minor;
	return &oc->fid[(h ^ h >> 29) & (OC_FIDS - 1)];
}

/* The mapped file's stat by its name under the target's root: no lock
 * of the target's mappings (a map_files lookup takes it, contended while
 * a new process still maps its libraries) and no map_files entries made
 * for it. Only an inode with the maps line's device and inode numbers
 * counts: that is the very inode mapped (alive while mapped, so its
 * numbers name no other). -1 otherwise (renamed, deleted, a file system
 * whose stat numbers differ from its maps' numbers). */
/* The name of m's file through p's root; -1 if it does not fit. */
static int root_path(char *path, size_t len, const struct oc_proc *p, const struct proc_map *m)
{
	int n = snprintf(path, len, "/proc/%d/root%s", p->pid, m->path);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int stat_by_name(const struct oc_proc *p, const struct proc_map *m, struct stat *st)
{
	char path[PATH_MAX + 32];

	return root_path(path, sizeof(path), p, m) || stat(path, st) || st->st_ino != m->inode ||
	       st->st_dev != makedev(m->dev_major, m->dev_minor) ? -1 : 0;
}

/* ---- watches on the objects' files ------------------------------------- */

/* Does mapping m map o's very file (its maps identity is o's stat one)? */
static int maps_obj_file(const struct proc_map *m, const struct oc_obj *o)
{
	return o->ino == m->inode && o->dev == makedev(m->dev_major, m->dev_minor);
}

/* Watches o's file, found by m's name in p: only if a stat after the watch
 * is made still finds o's identity (a write between o's load and the watch
 * would go unseen otherwise). No watch, on any failure: o's fids are then
 * stat'ed every OC_FID_NS. The cache maps the file, so the watch pins no
 * inode it did not already. */
static void watch_arm(struct objcache *oc, const struct oc_proc *p, const struct proc_map *m,
		      struct oc_obj *o)
{
	char path[PATH_MAX + 32];
	struct stat st;
	int wd;

	if (!oc->nfd_tried) {
		oc->nfd_tried = 1;
		oc->nfd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	}
	if (oc->nfd < 0 || o->wd || !maps_obj_file(m, o) || root_path(path, sizeof(path), p, m))
		return;
	wd = inotify_add_watch(oc->nfd, path, OC_WATCH_MASK);
	if (wd <= 0)
		return;
	if (stat_by_name(p, m, &st) == 0 && same_file(&st, o)) {
		o->wd = wd;
		oc->st.watches++;
	} else if (!wd_shared(oc, o, wd)) {
		inotify_rm_watch(oc->nfd, wd);
	}
}

/* An event on wd (-1: events were lost): each object watched so may have
 * changed in place; its watch goes and its fids are stat'ed when next
 * used (then loaded again if they differ, and watched anew). */
static void watch_fired(struct objcache *oc, int wd)
{
	for (size_t i = 0; i < oc->opt.max_objects; i++) {
		struct oc_obj *o = &oc->obj[i];

		if (!o->serial || !o->wd || (wd >= 0 && o->wd != wd))
			continue;
		oc->st.watch_fired++;
		watch_drop(oc, o);
		for (size_t k = 0; k < OC_FIDS; k++)
			if (oc->fid[k].serial == o->serial)
				oc->fid[k].checked_ns = 0;
	}
}

/* Reads the pending events, without blocking: before a watched fid is
 * trusted, if p's maps were read since the last drain (a change made
 * before they were read is seen) or OC_REFRESH_NS have passed, so that
 * runs of look-ups read it once. Any failure counts as lost events. */
static void watch_drain(struct objcache *oc, const struct oc_proc *p, uint64_t now)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	if (p->read_ns <= oc->drained_ns && now - oc->drained_ns < OC_REFRESH_NS)
		return;
	oc->drained_ns = now;
	for (int r = 0; r < OC_WATCH_READS; r++) {
		ssize_t n = read(oc->nfd, buf, sizeof(buf));
		const struct inotify_event *ev;

		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0)
			break;
		for (ssize_t at = 0; at + (ssize_t)sizeof(*ev) <= n; at += sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)(buf + at);
			watch_fired(oc, ev->mask & IN_Q_OVERFLOW ? -1 : ev->wd);
		}
	}
	watch_fired(oc, -1);
}

/* The object f names, if f is mapping m's: as it is if f was stat'ed
 * recently, else if a stat of the mapped file (by name, else through
 * map_files: one system call, not map_file's two) still finds the
 * object's identity. */
static struct oc_obj *fid_find(struct objcache *oc, struct oc_fid *f, const struct oc_proc *p,
			       const struct proc_map *m, uint64_t hash, uint64_t now)
{
	char path[96];
	struct stat st;
	struct oc_obj *o;

	if (!f || f->path_hash != hash || f->ino != m->inode ||
	    f->dev != ((uint64_t)m->dev_major << 32 | m->dev_minor))
		return NULL;
	o = &oc->obj[f->slot];
	if (o->serial != f->serial)
		return NULL;
	if (o->wd)
		watch_drain(oc, p, now);
	if (o->wd && maps_obj_file(m, o))
		return o;
	if (now - f->checked_ns < OC_FID_NS)
		return o;
	if (stat_by_name(p, m, &st)) {
		snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, p->pid,
			 m->start, m->end);
		if (stat(path, &st))
			return NULL;
	}
	if (!same_file(&st, o))
		return NULL;
	oc->st.fid_checks++;
	f->checked_ns = now;
	return o;
}

static void fid_note(struct oc_fid *f, const struct proc_map *m, uint64_t hash,
		     const struct objcache *oc, const struct oc_obj *o, uint64_t now)
{
	if (!f || !o)
		return;
	*f = (struct oc_fid){ .dev = (uint64_t)m->dev_major << 32 | m->dev_minor,
			      .ino = m->inode, .path_hash = hash, .serial = o->serial,
			      .slot = (uint32_t)(o - oc->obj), .checked_ns = now };
}

/* The object behind mapping m, through the file's name: keyed by its stat
 * identity, then by build-id, so the same library seen through another
 * mount namespace or path is loaded once. */
static struct oc_obj *obj_load(struct objcache *oc, const struct oc_proc *p,
			       const struct proc_map *m)
{
	char path[PATH_MAX + 64];
	uint8_t id[OC_BUILD_ID_MAX];
	struct stat st, *stp = NULL;
	struct elf_file *ef;
	struct oc_obj *o;
	size_t idlen = 0;

	if (strcmp(m->path, "[vdso]") == 0) {
		ef = open_vdso(oc, p, m, &o);
		if (o)
			return obj_hit(oc, o);
	} else {
		if (stat_mapped(p, m, path, sizeof(path), &st))
			goto fail;
		stp = &st;
		o = obj_find(oc, stp, NULL, 0);
		if (o)
			return obj_hit(oc, o);
		ef = target_open_elf(p->src, path);
	}
	if (!ef)
		goto fail;
	if (stp)
		oc->st.elf_opens++;
	else
		oc->st.vdso_copies++;
	if (elf_file_build_id(ef, id, sizeof(id), &idlen))
		idlen = 0;
	o = idlen ? obj_find(oc, NULL, id, idlen) : NULL;
	if (o) {
		elf_file_close(ef);
		return obj_hit(oc, o);
	}
	o = obj_slot(oc);
	if ((!stp && !idlen) || obj_init(o, ef, stp, id, idlen)) {
		elf_file_close(ef);
		memset(o, 0, sizeof(*o));	/* a free slot is all zero */
		goto fail;
	}
	elf_file_drop_fd(ef);
	o->serial = ++oc->serial;
	o->tick = ++oc->tick;
	oc->st.obj_loads++;
	if (stp)
		note_identity(oc, identity(o));
	return o;
fail:
	oc->st.obj_failures++;
	return NULL;
}

/* Finds or loads the object behind mapping m: by its maps identity if
 * stat'ed recently, else by name (obj_load). */
static struct oc_obj *obj_resolve(struct objcache *oc, const struct oc_proc *p,
				  const struct proc_map *m)
{
	uint64_t hash = 0, now = 0;
	struct oc_fid *f = fid_of(oc, p, m, &hash);
	struct oc_obj *o;

	if (f) {
		now = now_ns();
		o = fid_find(oc, f, p, m, hash, now);
		if (o) {
			oc->st.fid_hits++;
			return obj_hit(oc, o);
		}
	}
	o = obj_load(oc, p, m);
	fid_note(f, m, hash, oc, o, now);
	if (f && o && !o->wd)
		watch_arm(oc, p, m, o);
	return o;
}

struct oc_obj *objcache_obj(struct objcache *oc, struct oc_proc *p, size_t i)
{
	struct oc_memo *mm = &p->memo[i];
	const struct proc_map *m = &p->maps.v[i];
	struct oc_obj *o;

	if (mm->serial == OC_NO_OBJ)
		return NULL;
	if (mm->serial) {
		o = &oc->obj[mm->slot];
		if (o->serial == mm->serial) {
			o->tick = ++oc->tick;
			return o;
		}
	}
	o = m->path[0] == '/' || strcmp(m->path, "[vdso]") == 0 ? obj_resolve(oc, p, m) : NULL;
	mm->serial = o ? o->serial : OC_NO_OBJ;
	mm->slot = o ? (uint32_t)(o - oc->obj) : 0;
	return o;
}

struct oc_obj *objcache_map_obj(struct objcache *oc, const struct target_src *src, int pid,
				const struct proc_map *m)
{
	/* Read now: a watch event pending is read before a fid is trusted. */
	const struct oc_proc p = { .pid = pid, .src = src, .read_ns = now_ns() };

	if (m->path[0] != '/' && strcmp(m->path, "[vdso]"))
		return NULL;
	return obj_resolve(oc, &p, m);
}

struct elf_file *objcache_debug_file(struct objcache *oc, struct oc_obj *o,
				     const struct oc_proc *p, const struct proc_map *m)
{
	char root[64], path[PATH_MAX];
	char *del;

	if (o->dbg_state)
		return o->dbg;
	o->dbg_state = -1;
	if (m->path[0] != '/')
		return NULL;
	/* Maps say "/path (deleted)" for a deleted file. */
	snprintf(path, sizeof(path), "%s", m->path);
	del = strstr(path, " (deleted)");
	if (del)
		*del = '\0';
	snprintf(root, sizeof(root), "/proc/%d/root", p->pid);
	o->dbg = elf_file_open_debug(p->src, o->ef, root, path);
	if (!o->dbg)
		o->dbg = elf_file_open_debug(p->src, o->ef, "", path);
	if (!o->dbg)
		return NULL;
	o->dbg_state = 1;
	oc->st.elf_opens++;
	oc->st.debug_files++;
	note_identity(oc, identity(o) ^ OC_DEBUG_TAG);
	return o->dbg;
}

size_t objcache_capacity(const struct objcache *oc)
{
	return oc->opt.max_objects;
}

struct oc_obj *objcache_slot(struct objcache *oc, size_t k)
{
	return k < oc->opt.max_objects ? &oc->obj[k] : NULL;
}

void objcache_account(struct objcache *oc, struct oc_obj *o, enum oc_user u, size_t bytes)
{
	struct oc_obj *victim;

	o->user_bytes[u] += bytes;
	oc->st.bytes += bytes;
	while (oc->st.bytes > oc->opt.max_bytes && (victim = obj_lru(oc, o))) {
		oc->st.obj_evictions++;
		obj_clear(oc, victim);
	}
}

/* ---- the cache -------------------------------------------------------- */

struct objcache *objcache_new(const struct objcache_opts *opts)
{
	struct objcache *oc = calloc(1, sizeof(*oc));

	if (!oc)
		return NULL;
	if (opts)
		oc->opt = *opts;
	if (!oc->opt.max_objects)
		oc->opt.max_objects = OC_DEF_OBJECTS;
	if (!oc->opt.max_procs)
		oc->opt.max_procs = OC_DEF_PROCS;
	if (!oc->opt.max_bytes)
		oc->opt.max_bytes = OC_DEF_BYTES;
	/* >= 2 objects: the one in use, most recently used, is never the
	 * victim when a read loads another. */
	if (oc->opt.max_objects < 2)
		oc->opt.max_objects = 2;
	if (oc->opt.max_objects > OC_MAX_OBJECTS)
		oc->opt.max_objects = OC_MAX_OBJECTS;
	if (oc->opt.max_procs > OC_MAX_PROCS)
		oc->opt.max_procs = OC_MAX_PROCS;
	oc->nfd = -1;
	oc->obj = calloc(oc->opt.max_objects, sizeof(*oc->obj));
	oc->proc = calloc(oc->opt.max_procs, sizeof(*oc->proc));
	if (!oc->obj || !oc->proc) {
		objcache_free(oc);
		return NULL;
	}
	return oc;
}

void objcache_free(struct objcache *oc)
{
	if (!oc)
		return;
	for (size_t i = 0; oc->proc && i < oc->opt.max_procs; i++)
		if (oc->proc[i].pid)
			proc_clear(oc, &oc->proc[i]);
	for (size_t i = 0; oc->obj && i < oc->opt.max_objects; i++)
		if (oc->obj[i].serial)
			obj_clear(oc, &oc->obj[i]);
	if (oc->nfd >= 0)
		close(oc->nfd);
	free(oc->proc);
	free(oc->obj);
	free(oc);
}

void objcache_set_user(struct objcache *oc, enum oc_user u, void *ctx,
		       void (*obj_free)(void *ctx, void *data),
		       void (*proc_free)(void *ctx, void *data))
{
	oc->user_ctx[u] = ctx;
	oc->obj_free[u] = obj_free;
	oc->proc_free[u] = proc_free;
}

void objcache_drop_user(struct objcache *oc, enum oc_user u)
{
	for (size_t i = 0; i < oc->opt.max_procs; i++)
		proc_user_clear(oc, &oc->proc[i], u);
	for (size_t i = 0; i < oc->opt.max_objects; i++)
		obj_user_clear(oc, &oc->obj[i], u);
	objcache_set_user(oc, u, NULL, NULL, NULL);
}

const struct objcache_stats *objcache_get_stats(const struct objcache *oc)
{
	return &oc->st;
}

void objcache_describe(const struct objcache *oc, char *buf, size_t len)
{
	const struct objcache_stats *s = &oc->st;

	snprintf(buf, len, "native objects: %llu opened, %llu maps parses, %llu vDSO images read"
		 " (%llu distinct files and debug files, %llu debug files; entries: %llu loaded,"
		 " %llu hits, %llu evicted, %llu failures; processes: %llu hits, %llu misses,"
		 " %llu evicted; %llu files known by their maps line, %llu stat'ed again, %llu watched,"
		 " %llu watches fired; %llu table bytes)",
		 (unsigned long long)s->elf_opens, (unsigned long long)s->maps_reads,
		 (unsigned long long)s->vdso_copies,
		 (unsigned long long)s->distinct, (unsigned long long)s->debug_files,
		 (unsigned long long)s->obj_loads, (unsigned long long)s->obj_hits,
		 (unsigned long long)s->obj_evictions, (unsigned long long)s->obj_failures,
		 (unsigned long long)s->proc_hits, (unsigned long long)s->proc_misses,
		 (unsigned long long)s->proc_evictions, (unsigned long long)s->fid_hits,
		 (unsigned long long)s->fid_checks, (unsigned long long)s->watches,
		 (unsigned long long)s->watch_fired, (unsigned long long)s->bytes);
}
