/* Unit tests of merge_stacks() and merge_by_group(), the native/Python
 * merge rules, and of py_anchor_match() (bpf/pyperf.h), which gives the
 * second its input. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "merge.h"
#include "pyperf.h"

/* Renders a merged stack as "N0 P1 ..." (leaf first) for comparison. */
static void render(const struct merge_frame *f, size_t n, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && o + 8 < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%c%u", i ? " " : "",
				      f[i].kind == MERGE_NATIVE ? 'N' : 'P', f[i].index);
}

/* One merge scenario: the rendered stack and the mismatch count it must
 * give. */
static void check_merge(const char *name, const uint8_t *ev, size_t nn, const uint8_t *en,
			size_t np, const char *want, unsigned want_mis)
{
	struct merge_frame out[64];
	unsigned mis;
	char got[512];
	size_t n = merge_stacks(ev, nn, en, np, out, 64, &mis);

	render(out, n, got, sizeof(got));
	if (strcmp(got, want) || mis != want_mis)
		check(0, "%s: got '%s' (%u mismatches), want '%s' (%u)", name, got, mis, want,
		      want_mis);
	else
		check(1, "%s: %s", name, got);
}

static void check_group(const char *name, const int32_t *ng, size_t nn, const uint32_t *pg,
			size_t np, const char *want, unsigned want_mis)
{
	struct merge_frame out[64];
	unsigned mis;
	char got[512];
	size_t n = merge_by_group(ng, nn, pg, np, out, 64, &mis);

	render(out, n, got, sizeof(got));
	if (strcmp(got, want) || mis != want_mis)
		check(0, "%s: got '%s' (%u mismatches), want '%s' (%u)", name, got, mis, want,
		      want_mis);
	else
		check(1, "%s: %s", name, got);
}

/* The merge by address: groups by anchor, whatever the frames' names. */
static void test_by_group(void)
{
	/* Python calls C (qsort) which calls Python back: native leaf
	 * first eval(compare) qsort sort_impl eval(f,g,<module>) main. */
	static const int32_t ng1[] = { 0, -1, -1, 1, -1, -1 };
	static const uint32_t pg1[] = { 0, 1, 1, 1 };
	/* The anchor of group 0 was not read: its frames go with group 1's
	 * eval frame, leaf-ward, and count as a mismatch. */
	static const int32_t ng2[] = { -1, -1, 1, -1 };
	static const uint32_t pg2[] = { 0, 0, 1 };
	/* The native walk stopped before the outermost eval frame. */
	static const int32_t ng3[] = { 0, -1 };
	static const uint32_t pg3[] = { 0, 1, 1 };
	/* An eval frame whose group has no frame left (a frame pushed but
	 * not started) stays native; the next group still finds its own. */
	static const int32_t ng4[] = { 0, -1, 1, -1 };
	static const uint32_t pg4[] = { 1, 1 };

	check_group("group-callback-through-c", ng1, 6, pg1, 4, "P0 N1 N2 P1 P2 P3 N4 N5", 0);
	check_group("group-unread-anchor", ng2, 4, pg2, 3, "N0 N1 P0 P1 P2 N3", 1);
	check_group("group-native-cut-short", ng3, 2, pg3, 3, "P0 N1 P1 P2", 1);
	check_group("group-vanished", ng4, 4, pg4, 2, "N0 N1 P0 P1 N3", 0);
	check_group("group-python-only", NULL, 0, pg3, 3, "P0 P1 P2", 0);
}

/* Native frames' stack ranges against anchors, as the BPF walk and the
 * stack-copy path both do it. */
static void test_anchor_match(void)
{
	/* Two eval-loop calls: anchors inside frames 1 and 3 of a stack
	 * whose frames span [0x100,0x180) [0x180,0x300) [0x300,0x340)
	 * [0x340,0x500) [0x500,0x600). */
	static const __u64 a[] = { 0x200, 0x400 }, garbage[] = { 0x10, 0x20, 0x420 };
	static const __u64 lo[] = { 0x100, 0x180, 0x300, 0x340, 0x500, 0x600 };
	int got[5], want[5] = { -1, 0, -1, 1, -1 };
	__u32 next = 0;

	for (int i = 0; i < 5; i++)
		got[i] = py_anchor_match(a, 2, &next, lo[i], lo[i + 1]);
	check(!memcmp(got, want, sizeof(got)), "anchors: frames 1 and 3 hold groups 0 and 1");
	/* Anchors below every frame (unreadable, 0) are passed over. */
	next = 0;
	for (int i = 0; i < 5; i++)
		got[i] = py_anchor_match(garbage, 3, &next, lo[i], lo[i + 1]);
	check(got[3] == 2 && got[0] == -1 && got[1] == -1,
	      "anchors: unreadable ones passed, the next still matched");
	/* A range whose top is unknown (the step failed) holds nothing. */
	next = 0;
	check(py_anchor_match(a, 2, &next, 0x180, 0x180) == -1, "anchors: empty range");
}

int main(void)
{
	test_by_group();
	test_anchor_match();
	/* <=3.10: one eval call per Python frame. Native leaf first:
	 * deflate, zlib_compress, eval(f), eval(main), main, _start. */
	static const uint8_t ev1[] = { 0, 0, 1, 1, 0, 0 }, en1[] = { 1, 1 };
	/* 3.11+: one eval call runs f <- g <- <module> (entry), C qsort in
	 * between a second eval call running compare (entry). Native:
	 * eval(compare) qsort sort_impl eval(f,g,<module>) Py_RunMain main. */
	static const uint8_t ev2[] = { 1, 0, 0, 1, 0, 0 }, en2[] = { 1, 0, 0, 1 };
	/* Native unwind cut short after the first eval loop. */
	static const uint8_t ev3[] = { 0, 1 }, en3[] = { 1, 0, 1 };
	/* No Python frames at all (thread not running Python). */
	static const uint8_t ev4[] = { 0, 1, 0 };
	/* No native frames (native stacks off): Python only. */
	static const uint8_t en5[] = { 0, 1 };

	check_merge("c-extension-leaf", ev1, 6, en1, 2, "N0 N1 P0 P1 N4 N5", 0);
	check_merge("callback-through-c", ev2, 6, en2, 4, "P0 N1 N2 P1 P2 P3 N4 N5", 0);
	check_merge("native-cut-short", ev3, 2, en3, 3, "N0 P0 P1 P2", 1);
	check_merge("eval-without-python", ev4, 3, NULL, 0, "N0 N1 N2", 1);
	check_merge("python-only", NULL, 0, en5, 2, "P0 P1", 0);
	check_merge("empty", NULL, 0, NULL, 0, "", 0);
	{
		/* Output bounded by max even for long inputs. */
		static uint8_t ev[200], en[200];
		struct merge_frame out[10];
		unsigned mis;
		size_t n;

		memset(en, 1, sizeof(en));
		n = merge_stacks(ev, 200, en, 200, out, 10, &mis);
		if (n != 10)
			check(0, "bounded: wrote %zu frames into 10", n);
		else
			check(1, "bounded");
	}
	return check_exit();
}
