/* Unit tests of merge_stacks(): the native/Python merge rule. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "merge.h"

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

int main(void)
{
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
