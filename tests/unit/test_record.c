/*
 * Unit tests of recordings (src/record/recorder.c, recording.c, replay_src.c,
 * elf_reduce.c), on this test process itself:
 * memory reads, /proc/PID/maps and ELF files pass the seam while recording
 * and are served from the recording when replaying (changed memory by
 * sample, ranges inside a recorded read, unrecorded reads failing, batched
 * reads stopping at the first unrecorded element); the reduced ELF images
 * keep every FUNC symbol, the build-id and .eh_frame of the real files;
 * damaged recordings (every truncation, overwritten bytes, hostile stored
 * records) are read without a crash. No root needed.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "check.h"
#include "elffile.h"
#include "proc.h"
#include "record.h"

static uint8_t target_mem[8192];
static uint8_t *gone;		/* a page unmapped between two samples */

/* ---- FUNC symbols of a file, as src/native/nsym.c collects them ---------------- */

struct syms {
	char *text;
	size_t n, cap, count;
};

static int sym_cb(const struct elf_symbol *s, void *arg)
{
	struct syms *k = arg;
	char line[600];
	int n;

	if ((s->type != STT_FUNC && s->type != STT_GNU_IFUNC) || !s->value)
		return 0;
	n = snprintf(line, sizeof(line), "%s %llx %llx %d\n", s->name,
		     (unsigned long long)s->value, (unsigned long long)s->size, s->dynamic);
	if (k->n + (size_t)n + 1 > k->cap) {
		k->cap = (k->cap + (size_t)n + 1) * 2;
		k->text = realloc(k->text, k->cap);
		if (!k->text)
			abort();
	}
	memcpy(k->text + k->n, line, (size_t)n + 1);
	k->n += (size_t)n;
	k->count++;
	return 0;
}

struct facts {
	struct syms syms;
	uint8_t id[64];
	size_t idlen;
	uint8_t *eh;
	size_t ehlen;
	char link[256];
};

static int facts_of(const struct target_src *src, const char *path, struct facts *f)
{
	struct elf_file *ef = target_open_elf(src, path);

	memset(f, 0, sizeof(*f));
	if (!ef)
		return -1;
	elf_file_symbols(ef, sym_cb, &f->syms);
	if (elf_file_build_id(ef, f->id, sizeof(f->id), &f->idlen))
		f->idlen = 0;
	elf_file_section_copy(ef, ".eh_frame", 64u << 20, &f->eh, &f->ehlen);
	if (elf_file_debuglink(ef, f->link, sizeof(f->link)))
		f->link[0] = '\0';
	elf_file_close(ef);
	return 0;
}

static int facts_equal(const struct facts *a, const struct facts *b)
{
	return a->syms.count == b->syms.count && a->syms.n == b->syms.n &&
	       (!a->syms.n || memcmp(a->syms.text, b->syms.text, a->syms.n) == 0) &&
	       a->idlen == b->idlen && memcmp(a->id, b->id, a->idlen) == 0 &&
	       a->ehlen == b->ehlen && (!a->ehlen || memcmp(a->eh, b->eh, a->ehlen) == 0) &&
	       strcmp(a->link, b->link) == 0;
}

static void facts_free(struct facts *f)
{
	free(f->syms.text);
	free(f->eh);
}

static int find_lib(char *out, size_t len, const char *needle)
{
	struct proc_maps m;
	int found = -1;

	if (proc_maps_read(target_src_live(), getpid(), &m))
		return -1;
	for (size_t i = 0; i < m.n && found; i++)
		if (strstr(m.v[i].path, needle) && m.v[i].path[0] == '/') {
			snprintf(out, len, "%s", m.v[i].path);
			found = 0;
		}
	proc_maps_free(&m);
	return found;
}

/* ---- a recording of this process ----------------------------------------- */

static const char *exe_path = "/proc/self/exe";

static void make_recording(const char *path, const char *libc)
{
	struct rec_meta m = { .sample_period = 1000000, .stack_bytes = 16384,
			      .symcache_entries = 64, .threadcache_entries = 32,
			      .time_nanos = 1234567890, .cmdline = "pyperf-pprof --test",
			      .start_mono_ns = 555 };
	struct py_target t = { .pid = getpid(), .start_time = 42, .major = 3, .minor = 11,
			       .micro = 7, .version_hex = 0x030b07f0, .runtime_addr = 0x1000 };
	struct pipeline_tick w = { .wall_ns = 1234567890, .mono_ns = 1000,
				   .final = 1, .nstats = 3, .stats = { 7, 8, 9 } };
	struct py_sample_hdr h = { .pid = (uint32_t)getpid(), .tid = 1 };
	uint8_t buf[64], two[2][16];
	struct iovec local[2] = { { two[0], 16 }, { two[1], 16 } };
	struct iovec remote[2] = { { target_mem + 100, 16 }, { (void *)8, 16 } };
	struct proc_maps maps;
	struct elf_file *ef;
	char err[256], mp[512];
	uint64_t a = (uint64_t)(uintptr_t)target_mem;
	const struct target_src *src;
	struct recorder *rec;

	snprintf(m.event, sizeof(m.event), "cpu-clock");
	snprintf(t.module, sizeof(t.module), "/usr/bin/python3.11");
	snprintf(t.comm, sizeof(t.comm), "test_record");
	rec = record_open(path, target_src_live(), err, sizeof(err));
	check(rec != NULL, "record: open");
	if (!rec)
		return;
	src = record_src(rec);
	record_meta(rec, &m);
	/* Before any sample: memory is recorded (seq 0), files are not. */
	memset(target_mem, 0x11, sizeof(target_mem));
	target_read(src, getpid(), a, buf, 64);
	ef = target_open_elf(src, exe_path);
	elf_file_close(ef);
	record_target(rec, &t);

	record_sample(rec, &h, sizeof(h));		/* seq 1 */
	memset(target_mem, 0xaa, sizeof(target_mem));
	target_read(src, getpid(), a, buf, 64);
	target_read(src, getpid(), a, buf, 64);	/* unchanged: not written again */

	record_sample(rec, &h, sizeof(h));		/* seq 2 */
	memset(target_mem, 0xbb, sizeof(target_mem));
	target_read(src, getpid(), a, buf, 64);
	/* Read live, not through the recording's source: not recorded. */
	target_read(target_src_live(), getpid(), a + 2048, buf, 64);
	check(target_readv(src, getpid(), local, 2, remote, 2) == 16,
	      "record: a batch read stops at its unreadable element");
	if (proc_maps_read(src, getpid(), &maps) == 0) {
		for (size_t i = 0; i < maps.n; i++)
			if (maps.v[i].offset == 0 && strstr(maps.v[i].path, "test_record")) {
				target_map_file(src, getpid(), &maps.v[i], mp, sizeof(mp));
				break;
			}
		proc_maps_free(&maps);
	}
	ef = target_open_elf(src, exe_path);
	elf_file_close(ef);
	if (libc[0]) {
		ef = target_open_elf(src, libc);
		elf_file_close(ef);
	}

	record_sample(rec, &h, sizeof(h));		/* seq 3 */
	target_read(src, getpid(), (uint64_t)(uintptr_t)gone, buf, 64);
	target_read(src, getpid(), (uint64_t)(uintptr_t)gone + 64, buf, 64);
	munmap(gone, 4096);

	record_sample(rec, &h, sizeof(h));		/* seq 4 */
	check(target_read(src, getpid(), (uint64_t)(uintptr_t)gone, buf, 64) != 0,
	      "record: the page is gone");
	record_tick(rec, &w);
	check(record_close(rec, err, sizeof(err)) == 0, "record: close");
}

static void test_roundtrip(void)
{
	char path[] = "/tmp/test_record.XXXXXX", libc[512] = "", err[256];
	struct facts exe_live, exe_rec, libc_live, libc_rec;
	struct recording *r;
	struct py_target t;
	struct pipeline_tick w;
	struct proc_maps live_maps, rec_maps;
	uint8_t buf[64], want[64], two[2][16];
	struct iovec local[2] = { { two[0], 16 }, { two[1], 16 } };
	struct iovec remote[2] = { { target_mem + 100, 16 }, { target_mem + 4000, 16 } };
	uint64_t a = (uint64_t)(uintptr_t)target_mem;
	char mp[512];
	const struct target_src *live = target_src_live(), *src;
	int fd = mkstemp(path), ok;

	if (fd < 0) {
		check(0, "mkstemp");
		return;
	}
	close(fd);
	find_lib(libc, sizeof(libc), "libc.so");
	gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(gone, 0x77, 4096);
	facts_of(live, exe_path, &exe_live);
	if (libc[0])
		facts_of(live, libc, &libc_live);
	proc_maps_read(live, getpid(), &live_maps);
	make_recording(path, libc);

	r = rec_load_file(path, NULL, err, sizeof(err));
	check(r != NULL, "load: the recording reads back");
	if (!r) {
		printf("  %s\n", err);
		return;
	}
	check(r->has_meta && r->complete && r->nsamples == 4 && !r->bad_records,
	      "load: meta, END, 4 samples, nothing malformed");
	check(r->meta.sample_period == 1000000 && r->meta.stack_bytes == 16384 &&
	      r->meta.time_nanos == 1234567890 && strcmp(r->meta.event, "cpu-clock") == 0 &&
	      r->meta.has_start_mono && r->meta.start_mono_ns == 555 &&
	      strcmp(r->meta.cmdline, "pyperf-pprof --test") == 0, "load: meta fields");
	check(r->nev == 6 && r->ev[0].type == REC_TARGET && r->ev[1].type == REC_SAMPLE &&
	      r->ev[5].type == REC_TICK, "load: events in order");
	check(r->nev == 6 && rec_decode_target(&r->ev[0], &t) == 0 && t.pid == getpid() &&
	      t.minor == 11 && t.runtime_addr == 0x1000 && strcmp(t.comm, "test_record") == 0 &&
	      strcmp(t.module, "/usr/bin/python3.11") == 0, "load: target fields");
	check(r->nev == 6 && rec_decode_tick(&r->ev[5], &w) == 0 && w.final == 1 &&
	      w.nstats == 3 && w.stats[2] == 9 && w.wall_ns == 1234567890 && w.mono_ns == 1000,
	      "load: tick fields");
	check(r->nmem == 8, "load: 8 memory reads kept (a repeat dropped; 2 failures)");

	check(rec_replay_begin(r, err, sizeof(err)) == 0, "replay: begin");
	src = rec_replay_src(r);
	memset(target_mem, 0xcc, sizeof(target_mem));	/* replay must not see this */

	rec_replay_set_seq(r, 0);
	memset(want, 0x11, 64);
	check(target_read(src, getpid(), a, buf, 64) == 0 && memcmp(buf, want, 64) == 0,
	      "replay: seq 0 gets what was read before the samples");
	rec_replay_set_seq(r, 1);
	memset(want, 0xaa, 64);
	check(target_read(src, getpid(), a, buf, 64) == 0 && memcmp(buf, want, 64) == 0,
	      "replay: seq 1 gets what sample 1 read");
	rec_replay_set_seq(r, 2);
	memset(want, 0xbb, 64);
	check(target_read(src, getpid(), a, buf, 64) == 0 && memcmp(buf, want, 64) == 0,
	      "replay: seq 2 gets what sample 2 read");
	rec_replay_set_seq(r, 3);
	check(target_read(src, getpid(), a + 8, buf, 16) == 0 && memcmp(buf, want, 16) == 0,
	      "replay: a range inside a recorded read, newest version");
	check(target_read(src, getpid(), a + 60, buf, 16) != 0, "replay: a range past a recorded read fails");
	check(target_read(src, getpid(), a + 6000, buf, 8) != 0, "replay: an unrecorded read fails");
	check(target_read(src, getpid(), a + 2048, buf, 64) != 0,
	      "replay: a live read made while recording was not recorded");
	check(target_readv(src, getpid(), local, 2, remote, 2) == 16,
	      "replay: a batch stops at its first unrecorded element");
	remote[0].iov_base = target_mem + 3000;
	check(target_readv(src, getpid(), local, 2, remote, 2) == -1,
	      "replay: a batch whose first element is unrecorded fails");
	remote[0].iov_base = target_mem + 100;
	remote[1].iov_base = (void *)8;
	check(target_readv(src, getpid(), local, 2, remote, 2) == 16,
	      "replay: the element that failed live fails");
	rec_replay_set_seq(r, 3);
	memset(want, 0x77, 64);
	check(target_read(src, getpid(), (uint64_t)(uintptr_t)gone, buf, 64) == 0 &&
	      memcmp(buf, want, 64) == 0, "replay: the page read at seq 3");
	rec_replay_set_seq(r, 4);
	check(target_read(src, getpid(), (uint64_t)(uintptr_t)gone, buf, 64) != 0,
	      "replay: the read that failed live at seq 4 fails, not served from seq 3");
	rec_replay_set_seq(r, 3);

	ok = proc_maps_read(src, getpid(), &rec_maps) == 0;
	check(ok && rec_maps.n > 0 && live_maps.n > 0 &&
	      rec_maps.v[0].start == live_maps.v[0].start &&
	      strcmp(rec_maps.v[0].path, live_maps.v[0].path) == 0, "replay: /proc/PID/maps served");
	if (ok)
		proc_maps_free(&rec_maps);
	check(proc_comm(src, getpid(), mp, sizeof(mp)) != 0, "replay: other /proc files are not served");

	ok = facts_of(src, exe_path, &exe_rec) == 0;
	check(ok && exe_rec.syms.count > 10 && facts_equal(&exe_live, &exe_rec),
	      "replay: reduced image of the test binary: same FUNC symbols, build-id, .eh_frame");
	if (ok)
		facts_free(&exe_rec);
	if (libc[0]) {
		ok = facts_of(src, libc, &libc_rec) == 0;
		check(ok && libc_rec.syms.count > 100 && facts_equal(&libc_live, &libc_rec),
		      "replay: reduced image of libc: same FUNC symbols, build-id, .eh_frame, debuglink");
		if (ok)
			facts_free(&libc_rec);
		facts_free(&libc_live);
	}
	check(target_open_elf(src, "/bin/sh") == NULL, "replay: a file not in the recording does not open");
	if (live_maps.n) {
		struct proc_map pm = live_maps.v[0];

		for (size_t i = 0; i < live_maps.n; i++)
			if (live_maps.v[i].offset == 0 && strstr(live_maps.v[i].path, "test_record")) {
				pm = live_maps.v[i];
				break;
			}
		target_map_file(src, getpid(), &pm, mp, sizeof(mp));
		check(strncmp(mp, r->dir, strlen(r->dir)) == 0 && strstr(mp, "/map_files/") &&
		      access(mp, R_OK) == 0, "replay: a mapped file is served from the recording");
	}
	{
		char dir[256];
		struct stat st;

		snprintf(dir, sizeof(dir), "%s", r->dir);
		rec_replay_end(r);
		check(stat(dir, &st) != 0, "replay: directory deleted at the end");
	}
	rec_free(r);
	facts_free(&exe_live);
	proc_maps_free(&live_maps);

	/* Damaged: every truncation and a byte overwritten at many places. */
	{
		FILE *f = fopen(path, "rb");
		uint8_t *data = NULL, *copy;
		long size = 0;
		struct rec_limits lim = { .max_body = 1 << 26, .max_file = 1 << 26 };
		size_t loaded = 0;

		if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 &&
		    fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)size)) &&
		    fread(data, 1, (size_t)size, f) == (size_t)size) {
			for (long n = 0; n <= size; n += n < 64 ? 1 : 97) {
				copy = malloc((size_t)n + 1);
				memcpy(copy, data, (size_t)n);
				r = rec_load_mem(copy, (size_t)n, &lim, err, sizeof(err));
				loaded += r != NULL;
				rec_free(r);
				free(copy);
			}
			for (long off = 0; off < size; off += 1 + size / 300) {
				uint8_t old = data[off];

				data[off] ^= 0x5a;
				r = rec_load_mem(data, (size_t)size, &lim, err, sizeof(err));
				if (r && rec_replay_begin(r, err, sizeof(err)) == 0)
					rec_replay_end(r);
				rec_free(r);
				data[off] = old;
			}
			check(loaded > 0, "damaged: truncations and overwritten bytes read without a crash");
		} else {
			check(0, "damaged: read the recording back");
		}
		if (f)
			fclose(f);
		free(data);
	}
	unlink(path);
}

/* Hand-made stored bodies: hostile lengths and references. */
static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void test_hostile(void)
{
	uint8_t b[512] = "PYPFREC1";
	size_t n = 16;
	struct recording *r;
	char err[256];

	put32(b + 8, REC_VERSION);
	put32(b + 12, REC_F_STORED);
	/* FILE whose extent lies past its size */
	b[n] = REC_FILE;
	put32(b + n + 1, 16 + 12 + 4);
	put32(b + n + 5, 3);
	put64(b + n + 9, 100);
	put32(b + n + 17, 1);
	put64(b + n + 21, 98);
	put32(b + n + 29, 4);
	memcpy(b + n + 33, "ABCD", 4);
	n += 5 + 32;
	/* FILE with an object id out of range */
	b[n] = REC_FILE;
	put32(b + n + 1, 16);
	put32(b + n + 5, 0xffffffff);
	put64(b + n + 9, 10);
	put32(b + n + 17, 0);
	n += 5 + 16;
	/* MEM without bytes, and one wrapping around the address space */
	b[n] = REC_MEM;
	put32(b + n + 1, 20);
	n += 5 + 20;
	b[n] = REC_MEM;
	put32(b + n + 1, 24);
	put64(b + n + 9, UINT64_MAX - 1);
	n += 5 + 24;
	/* PATH with a NUL inside, and META cut short */
	b[n] = REC_PATH;
	put32(b + n + 1, 16);
	b[n + 17] = 2;
	memcpy(b + n + 19, "a\0", 2);
	n += 5 + 16;
	b[n] = REC_META;
	put32(b + n + 1, 10);
	n += 5 + 10;
	/* a record longer than the rest */
	b[n] = REC_SAMPLE;
	put32(b + n + 1, 0xfffffff0);
	n += 5;
	r = rec_load_mem(b, n, NULL, err, sizeof(err));
	check(r && r->bad_records == 6 && !r->has_meta && !r->complete && r->nsamples == 0 &&
	      r->nmem == 0 && r->npaths == 0, "hostile: 6 malformed records skipped, cut record dropped");
	if (r && rec_replay_begin(r, err, sizeof(err)) == 0) {
		uint8_t x[4];

		check(target_read(rec_replay_src(r), 1, UINT64_MAX - 8, x, 4) != 0 &&
		      target_read(rec_replay_src(r), 1, 4096, x, 4) != 0, "hostile: nothing served");
		rec_replay_end(r);
	}
	rec_free(r);
}

int main(void)
{
	test_roundtrip();
	test_hostile();
	return check_exit();
}
