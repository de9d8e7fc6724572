/*
 * Tests of src/native/unwind_table.c, the CFI -> unwind table converter:
 *
 *  - every kind of rule, on functions whose CFI this test wrote itself
 *    (tests/unit/unwind_table_cfi.c), once from .eh_frame and once from
 *    .debug_frame: rsp-based, rbp-based after push rbp / mov rsp,rbp,
 *    remember/restore state, the PLT expression (synthesised rule), other
 *    expressions and registers (unsupported), signal and outermost frames;
 *  - a hand-built .debug_frame: gaps between FDEs, truncation, bad CIEs;
 *  - the whole table of this binary, libc and Debian's python3.11 against
 *    binutils' own CFA interpreter (readelf --debug-dump=frames-interp),
 *    row by row, with the time and size of each table.
 *
 * One "ok ..." / "FAIL ..." / "skip ..." line per check; exits 1 if any
 * check failed, 77 if every check was skipped, else 0.
 */
#define _GNU_SOURCE
#include "check.h"
#include "elffile.h"
#include "unwind_table.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CIES	65536

static const char *const kind_name[] = {
	"none", "rsp", "rbp", "plt", "signal", "outermost", "unsupported",
};

static void fmt_row(const struct ut_row *r, char *buf, size_t cap)
{
	if (!r) {
		snprintf(buf, cap, "(no row)");
		return;
	}
	snprintf(buf, cap, "%s%+d rbp=%s%+d thr=%u", r->cfa < 7 ? kind_name[r->cfa] : "?",
		 r->cfa_off, r->rbp == UT_RBP_CFA ? "cfa" : r->rbp ? "unsup" : "same",
		 r->rbp_off, r->plt_thr);
}

/* ---- functions with known CFI (unwind_table_cfi.c) ---------------------- */

#define L(x) extern char ut_eh_##x[], ut_dbg_##x[];
L(rsp) L(rsp_1) L(rsp_2) L(rsp_3) L(rbp) L(rbp_1) L(rbp_2) L(rbp_3) L(rbp_4)
L(plt) L(expr) L(r10) L(r10_1) L(sig) L(outer)
#undef L

struct want {
	const char *label;
	uintptr_t addr;
	uint8_t cfa, rbp, thr;
	int32_t cfa_off;
	int16_t rbp_off;
};

static void check_known(const struct ut_table *t, uint64_t bias, const char *src,
			const struct want *w, size_t n)
{
	char got[96];

	for (size_t i = 0; i < n; i++) {
		const struct ut_row *r = ut_lookup(t, w[i].addr - bias);
		int ok = r && r->cfa == w[i].cfa && r->rbp == w[i].rbp &&
			 r->plt_thr == w[i].thr &&
			 (w[i].cfa > UT_CFA_PLT || r->cfa_off == w[i].cfa_off) &&
			 (w[i].rbp != UT_RBP_CFA || r->rbp_off == w[i].rbp_off);

		fmt_row(r, got, sizeof(got));
		check(ok, "%s %s: %s", src, w[i].label, got);
	}
}

#define W(p, x, c, off, rb, rboff, thr) { #x, (uintptr_t)ut_##p##_##x, c, rb, thr, off, rboff }
#define KNOWN(p) { \
	W(p, rsp, UT_CFA_RSP, 8, UT_RBP_SAME, 0, 0), \
	W(p, rsp_1, UT_CFA_RSP, 16, UT_RBP_SAME, 0, 0), \
	W(p, rsp_2, UT_CFA_RSP, 56, UT_RBP_SAME, 0, 0), \
	W(p, rsp_3, UT_CFA_RSP, 8, UT_RBP_SAME, 0, 0), \
	W(p, rbp, UT_CFA_RSP, 8, UT_RBP_SAME, 0, 0), \
	W(p, rbp_1, UT_CFA_RSP, 16, UT_RBP_CFA, -16, 0), \
	W(p, rbp_2, UT_CFA_RBP, 16, UT_RBP_CFA, -16, 0), \
	W(p, rbp_3, UT_CFA_RSP, 8, UT_RBP_SAME, 0, 0), \
	W(p, rbp_4, UT_CFA_RBP, 16, UT_RBP_CFA, -16, 0), \
	W(p, plt, UT_CFA_PLT, 8, UT_RBP_SAME, 0, 11), \
	W(p, expr, UT_CFA_UNSUPPORTED, 0, UT_RBP_SAME, 0, 0), \
	W(p, r10, UT_CFA_RSP, 8, UT_RBP_SAME, 0, 0), \
	W(p, r10_1, UT_CFA_UNSUPPORTED, 0, UT_RBP_SAME, 0, 0), \
	W(p, sig, UT_CFA_SIGNAL, 0, UT_RBP_SAME, 0, 0), \
	W(p, outer, UT_CFA_OUTERMOST, 0, UT_RBP_SAME, 0, 0), \
}

static void test_known(const struct ut_table *t, struct elf_file *self)
{
	const struct want eh[] = KNOWN(eh), dbg[] = KNOWN(dbg);
	uint64_t v, sz;

	if (elf_file_symbol(self, "ut_eh_rsp", &v, &sz)) {
		check(0, "symbol ut_eh_rsp in /proc/self/exe");
		return;
	}
	/* One bias for the whole executable: both sets live in its .text. */
	check_known(t, (uintptr_t)ut_eh_rsp - v, ".eh_frame", eh, sizeof(eh) / sizeof(eh[0]));
	check_known(t, (uintptr_t)ut_eh_rsp - v, ".debug_frame", dbg, sizeof(dbg) / sizeof(dbg[0]));
	check(t->st.fdes_debug_frame >= 7, "FDEs taken from .debug_frame: %" PRIu64,
	      t->st.fdes_debug_frame);
	check(t->st.expr_plt >= 2 && t->st.expr_unsupported >= 2 && t->st.signal_fdes >= 2,
	      "counted: %" PRIu64 " PLT expressions, %" PRIu64 " other, %" PRIu64 " signal FDEs",
	      t->st.expr_plt, t->st.expr_unsupported, t->st.signal_fdes);
}

/* The linker's own .plt carries the PLT expression too. */
static void test_linker_plt(const struct ut_table *t, struct elf_file *self)
{
	struct elf_section plt;
	const struct ut_row *r;
	char got[96];

	if (elf_file_section(self, ".plt", &plt) || plt.size < 32) {
		check_skip("no .plt in this binary (linked without lazy binding)");
		return;
	}
	r = ut_lookup(t, plt.addr + 16);
	fmt_row(r, got, sizeof(got));
	check(r && r->cfa == UT_CFA_PLT && r->cfa_off == 8 && r->plt_thr >= 10,
	      ".plt entry at %#" PRIx64 ": %s", plt.addr + 16, got);
}

/* ---- a hand-built .debug_frame ---------------------------------------- */

struct buf {
	uint8_t b[512];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void put64(struct buf *b, uint64_t v) { put(b, &v, 8); }

/* CIE at 0: CFA rsp+8, ra at cfa-8. Then FDEs [lo, lo+len): one push. */
static void build_debug_frame(struct buf *b, const uint64_t (*fde)[2], size_t n)
{
	static const uint8_t cie[] = { 0xff, 0xff, 0xff, 0xff, 1, 0, 1, 0x78, 16,
				       0x0c, 7, 8, 0x90, 1, 0, 0 };
	static const uint8_t prog[] = { 0x41, 0x0e, 0x10, 0 };

	b->n = 0;
	put32(b, sizeof(cie));
	put(b, cie, sizeof(cie));
	for (size_t i = 0; i < n; i++) {
		put32(b, 4 + 16 + sizeof(prog));
		put32(b, 0);
		put64(b, fde[i][0]);
		put64(b, fde[i][1]);
		put(b, prog, sizeof(prog));
	}
}

static void test_handmade(void)
{
	const uint64_t fde[][2] = { { 0x1000, 0x10 }, { 0x1100, 0x20 }, { 0x1120, 0x8 } };
	struct buf b;
	struct ut_section dbg;
	struct ut_table t;
	const struct ut_row *r;
	size_t bad = 0;

	build_debug_frame(&b, fde, 3);
	dbg = (struct ut_section){ b.b, b.n, 0 };
	check(ut_build(NULL, &dbg, 0, &t) == 0 && t.st.fdes == 3, "hand-built: 3 FDEs");
	r = ut_lookup(&t, 0x0fff);
	check(r == NULL, "hand-built: nothing before the first FDE");
	r = ut_lookup(&t, 0x1000);
	check(r && r->cfa == UT_CFA_RSP && r->cfa_off == 8, "hand-built: FDE start rsp+8");
	r = ut_lookup(&t, 0x100f);
	check(r && r->cfa == UT_CFA_RSP && r->cfa_off == 16, "hand-built: after push rsp+16");
	r = ut_lookup(&t, 0x1050);
	check(r && r->cfa == UT_CFA_NONE, "hand-built: gap between FDEs has no rule");
	r = ut_lookup(&t, 0x1120);
	check(r && r->cfa == UT_CFA_RSP && r->cfa_off == 8,
	      "hand-built: adjacent FDE starts where the other ends");
	r = ut_lookup(&t, 0x2000);
	check(r && r->cfa == UT_CFA_NONE, "hand-built: past the last FDE has no rule");
	/* rows: 1000 +8, 1001 +16, 1010 none, 1100 +8, 1101 +16, 1120 +8,
	 * 1121 +16, 1128 none: nothing to merge but nothing lost. */
	check(t.n == 8, "hand-built: %zu rows (8 expected)", t.n);
	ut_table_free(&t);

	/* Every truncation of the section: no crash, no row past the cut. */
	for (size_t cut = 0; cut < b.n; cut++) {
		dbg.size = cut;
		if (ut_build(NULL, &dbg, 0, &t)) {
			bad++;
			continue;
		}
		for (size_t i = 0; i < t.n; i++)
			if (t.rows[i].start > 0x1128)
				bad++;
		ut_table_free(&t);
	}
	check(bad == 0, "hand-built: %zu truncations parsed without a stray row", b.n);

	/* A CIE with an unknown version: its FDEs are skipped and counted. */
	build_debug_frame(&b, fde, 1);
	b.b[8] = 9;
	dbg = (struct ut_section){ b.b, b.n, 0 };
	check(ut_build(NULL, &dbg, 0, &t) == 0 && t.n == 0 && t.st.bad_entries == 1,
	      "bad CIE version: FDE skipped and counted (%" PRIu64 ")", t.st.bad_entries);
	ut_table_free(&t);

	/* A row limit is a refusal, not a silently cut table. */
	build_debug_frame(&b, fde, 3);
	dbg = (struct ut_section){ b.b, b.n, 0 };
	check(ut_build(NULL, &dbg, 4, &t) == -1, "more rows than max_rows: refused");
}

/* ---- against binutils' CFA interpreter -------------------------------- */

struct cie_seen {
	uint64_t off;
	int eh, signal;
	char cfa[32], rbp[32], ra[32];	/* its last row */
};

struct diff {
	const struct ut_table *t;
	struct cie_seen *cies;
	size_t ncies;
	uint64_t (*eh_ranges)[2];
	size_t neh, eh_cap;
	uint64_t rows, mismatches, shadowed;
};

/* What readelf's columns mean in our terms. */
static void expected(const char *cfa, const char *rbp, const char *ra, int signal,
		     struct ut_row *w, int *either_expr)
{
	long off;
	char reg[8];

	memset(w, 0, sizeof(*w));
	*either_expr = 0;
	if (!strcmp(ra, "u")) {
		w->cfa = UT_CFA_OUTERMOST;
		return;
	}
	if (signal) {
		w->cfa = UT_CFA_SIGNAL;
		return;
	}
	if (strcmp(ra, "c-8")) {
		w->cfa = UT_CFA_UNSUPPORTED;
		return;
	}
	if (sscanf(cfa, "%7[a-z0-9]%ld", reg, &off) == 2 && (!strcmp(reg, "rsp") || !strcmp(reg, "rbp"))) {
		w->cfa = !strcmp(reg, "rsp") ? UT_CFA_RSP : UT_CFA_RBP;
		w->cfa_off = (int32_t)off;
	} else {
		/* "exp": the PLT's or another; the known-CFI checks tell them
		 * apart, readelf's summary does not. */
		w->cfa = UT_CFA_UNSUPPORTED;
		*either_expr = !strcmp(cfa, "exp");
		return;
	}
	if (!*rbp || !strcmp(rbp, "u") || !strcmp(rbp, "s"))
		return;
	if (sscanf(rbp, "c%ld", &off) == 1) {
		w->rbp = UT_RBP_CFA;
		w->rbp_off = (int16_t)off;
	} else {
		w->rbp = UT_RBP_UNSUPPORTED;
	}
}

static void compare_row(struct diff *d, const char *obj, uint64_t loc, const char *cfa,
			const char *rbp, const char *ra, int signal)
{
	const struct ut_row *r = ut_lookup(d->t, loc);
	struct ut_row w;
	int ex, ok;

	expected(cfa, rbp, ra, signal, &w, &ex);
	d->rows++;
	if (!r)
		ok = 0;
	else if (ex)
		ok = r->cfa == UT_CFA_PLT || r->cfa == UT_CFA_UNSUPPORTED;
	else
		ok = r->cfa == w.cfa && (w.cfa > UT_CFA_RBP ||
			(r->cfa_off == w.cfa_off && r->rbp == w.rbp &&
			 (w.rbp != UT_RBP_CFA || r->rbp_off == w.rbp_off)));
	if (ok)
		return;
	if (++d->mismatches <= 10) {
		char got[96];

		fmt_row(r, got, sizeof(got));
		printf("  %s %#" PRIx64 ": readelf CFA=%s rbp=%s ra=%s%s, table %s\n", obj, loc,
		       cfa, *rbp ? rbp : "-", ra, signal ? " (signal frame)" : "", got);
	}
}

static struct cie_seen *find_cie(struct diff *d, uint64_t off, int eh)
{
	for (size_t i = d->ncies; i > 0; i--)
		if (d->cies[i - 1].off == off && d->cies[i - 1].eh == eh)
			return &d->cies[i - 1];
	return NULL;
}

static int shadowed(const struct diff *d, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < d->neh; i++)
		if (d->eh_ranges[i][0] < hi && lo < d->eh_ranges[i][1])
			return 1;
	return 0;
}

/* A table row of readelf: tokens by column. */
static void on_row(struct diff *d, const char *obj, char *line, int rbp_col, int ra_col,
		   struct cie_seen *cie, int in_fde, uint64_t hi, int *rows_in_fde)
{
	char *tok[64], *save = NULL;
	int n = 0;
	uint64_t loc;

	/* readelf prints a register-in-register rule as "r10 (r10)": one
	 * column, two words. */
	for (char *s = strtok_r(line, " \t\n", &save); s && n < 64; s = strtok_r(NULL, " \t\n", &save))
		if (s[0] != '(' || n == 0)
			tok[n++] = s;
	if (n < 2 || ra_col < 0 || ra_col >= n)
		return;
	loc = strtoull(tok[0], NULL, 16);
	if (!in_fde) {
		if (cie) {
			snprintf(cie->cfa, sizeof(cie->cfa), "%s", tok[1]);
			snprintf(cie->rbp, sizeof(cie->rbp), "%s", rbp_col > 0 && rbp_col < n ? tok[rbp_col] : "");
			snprintf(cie->ra, sizeof(cie->ra), "%s", tok[ra_col]);
		}
		return;
	}
	(*rows_in_fde)++;
	if (loc < hi)
		compare_row(d, obj, loc, tok[1], rbp_col > 0 && rbp_col < n ? tok[rbp_col] : "",
			    tok[ra_col], cie && cie->signal);
}

struct fde_cur {
	int active;		/* an FDE being compared */
	uint64_t lo, hi;
	struct cie_seen *cie;
	int rows;
};

/* An FDE readelf printed no rows for runs its CIE's program only. */
static void end_fde(struct diff *d, const char *obj, struct fde_cur *f)
{
	if (f->active && f->rows == 0 && f->cie && f->cie->ra[0])
		compare_row(d, obj, f->lo, f->cie->cfa, f->cie->rbp, f->cie->ra, f->cie->signal);
	f->active = 0;
}

static void on_entry(struct diff *d, const char *line, int eh, struct fde_cur *f,
		     struct cie_seen **cur_cie)
{
	unsigned long long off, len, id, cie, lo, hi;
	/* An empty augmentation ("") matches no character of %[^"], which
	 * leaves aug untouched: it must start empty. */
	char aug[32] = "";

	*cur_cie = NULL;
	if (sscanf(line, "%llx %llx %llx CIE \"%31[^\"]\"", &off, &len, &id, aug) >= 3 &&
	    strstr(line, " CIE")) {
		if (d->ncies >= MAX_CIES)
			return;
		*cur_cie = &d->cies[d->ncies++];
		memset(*cur_cie, 0, sizeof(**cur_cie));
		(*cur_cie)->off = off;
		(*cur_cie)->eh = eh;
		(*cur_cie)->signal = strchr(aug, 'S') != NULL;
		return;
	}
	if (sscanf(line, "%llx %llx %llx FDE cie=%llx pc=%llx..%llx", &off, &len, &id, &cie,
		   &lo, &hi) != 6)
		return;
	if (!eh && shadowed(d, lo, hi)) {
		d->shadowed++;
		return;
	}
	if (eh && d->neh < d->eh_cap) {
		d->eh_ranges[d->neh][0] = lo;
		d->eh_ranges[d->neh][1] = hi;
		d->neh++;
	}
	*f = (struct fde_cur){ 1, lo, hi, find_cie(d, cie, eh), 0 };
}

static int diff_readelf(const char *path, const struct ut_table *t, struct diff *d)
{
	char cmd[4200], line[4096];
	int eh = 1, rbp_col = -1, ra_col = -1;
	struct fde_cur f = { 0 };
	struct cie_seen *cie = NULL;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		if (strstr(line, "Contents of the .eh_frame")) {
			end_fde(d, path, &f);
			eh = 1;
		} else if (strstr(line, "Contents of the .debug_frame")) {
			end_fde(d, path, &f);
			eh = 0;
		} else if (strstr(line, " CIE") || strstr(line, " FDE cie=")) {
			end_fde(d, path, &f);
			on_entry(d, line, eh, &f, &cie);
		} else if (strstr(line, "LOC") && strstr(line, "CFA")) {
			char *save = NULL;
			int i = 0;

			rbp_col = ra_col = -1;
			for (char *s = strtok_r(line, " \t\n", &save); s; s = strtok_r(NULL, " \t\n", &save), i++) {
				if (!strcmp(s, "rbp"))
					rbp_col = i;
				else if (!strcmp(s, "ra"))
					ra_col = i;
			}
		} else if (strspn(line, "0123456789abcdef") >= 16 && line[strspn(line, "0123456789abcdef")] == ' ') {
			on_row(d, path, line, rbp_col, ra_col, f.active ? f.cie : cie, f.active,
			       f.hi, &f.rows);
		}
	}
	end_fde(d, path, &f);
	/* Its exit status is 1 on warnings about sections we do not read. */
	pclose(p);
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_object(const char *path, int must_exist)
{
	struct diff d = { 0 };
	struct elf_file *ef = elf_file_open(path);
	struct ut_table t;
	double t0, ms;

	if (!ef) {
		if (must_exist)
			check(0, "open %s", path);
		else
			check_skip("%s: not installed", path);
		return;
	}
	t0 = now_ms();
	if (ut_build_elf(ef, 0, &t)) {
		check(0, "%s: table built", path);
		elf_file_close(ef);
		return;
	}
	ms = now_ms() - t0;
	printf("# %s: %" PRIu64 " FDEs -> %zu rows (%" PRIu64 " before merging), %zu KiB, %.1f ms;"
	       " %" PRIu64 " PLT, %" PRIu64 " other expressions, %" PRIu64 " bad entries\n",
	       path, t.st.fdes, t.n, t.st.rows_raw, t.n * 12 / 1024, ms, t.st.expr_plt,
	       t.st.expr_unsupported, t.st.bad_entries);
	d.t = &t;
	d.cies = calloc(MAX_CIES, sizeof(*d.cies));
	d.eh_cap = 1u << 20;
	d.eh_ranges = calloc(d.eh_cap, sizeof(*d.eh_ranges));
	if (!d.cies || !d.eh_ranges) {
		check(0, "allocation");
	} else if (diff_readelf(path, &t, &d) || d.rows == 0) {
		check_skip("%s: readelf --debug-dump=frames-interp failed or printed no rows", path);
	} else {
		check(d.mismatches == 0 && t.st.bad_entries == 0,
		      "%s: %" PRIu64 " readelf rows, %" PRIu64 " differ (%" PRIu64
		      " .debug_frame FDEs shadowed by .eh_frame)", path, d.rows, d.mismatches,
		      d.shadowed);
	}
	free(d.cies);
	free(d.eh_ranges);
	ut_table_free(&t);
	elf_file_close(ef);
}

static const char *libc_path(char *buf, size_t cap)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	const char *found = NULL;

	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (p && strstr(p, "/libc.so")) {
			p[strcspn(p, "\n")] = '\0';
			snprintf(buf, cap, "%s", p);
			found = buf;
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

int main(void)
{
	struct elf_file *self = elf_file_open("/proc/self/exe");
	struct ut_table t;
	char libc[4096];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!self || ut_build_elf(self, 0, &t)) {
		printf("FAIL cannot read or convert /proc/self/exe\n");
		return 1;
	}
	test_known(&t, self);
	test_linker_plt(&t, self);
	ut_table_free(&t);
	elf_file_close(self);
	test_handmade();
	if (access("/usr/bin/readelf", X_OK) != 0) {
		check_skip("readelf (binutils) not installed: no comparison with its CFA interpreter");
	} else {
		char self_path[4096];
		ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);

		self_path[n > 0 ? n : 0] = '\0';
		test_object(self_path, 1);
		if (libc_path(libc, sizeof(libc)))
			test_object(libc, 1);
		test_object("/usr/bin/python3.11", 0);
	}
	return check_exit();
}
