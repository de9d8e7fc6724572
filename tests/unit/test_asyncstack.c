/* Unit tests of the --async stack rewrite (src/pipeline/asyncstack.c):
 * where a sample's stack is cut (the task's rootmost coroutine frame) and
 * what replaces the rest (markers and the awaiting tasks' frames; chains
 * with no awaiting frame here, so no target is read). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "asyncstack.h"
#include "check.h"
#include "profile.h"

/* The stack as "name;name;..." leaf first. */
static void render(struct profile *p, const uint64_t *locs, size_t n, char *buf, size_t len)
{
	struct profile_view v;
	size_t o = 0;

	profile_get_view(p, &v);
	buf[0] = '\0';
	for (size_t i = 0; i < n && o + 2 < len; i++) {
		const struct profile_location_rec *l = &v.locations[locs[i] - 1];
		const struct profile_function_rec *f =
			&v.functions[v.lines[l->line_off].function_id - 1];

		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ";" : "", v.strings[f->name]);
	}
}

static uint64_t frame(struct profile *p, const char *name)
{
	return profile_location(p, 0, 0, profile_function(p, name, "", "x.py", 1), 1);
}

static void link_to(struct pyawait_chain *ch, const char *label)
{
	struct pyawait_link *k = &ch->l[ch->n++];

	memset(k, 0, sizeof(*k));
	snprintf(k->label, sizeof(k->label), "%s", label);
}

int main(void)
{
	struct profile *p = profile_new();
	struct asyncstack_ctx a = { .prof = p };
	uint64_t locs[16], pylocs[8], pycodes[8];
	struct pyawait_chain ch = { 0 };
	char got[512];
	size_t n;
	long cut;

	/* Leaf first: crunch, handler (the task's coroutine, code 0x100),
	 * a C step, _run, _run_once, run_forever. handler also appears
	 * leafward (recursion): the rootmost one is the task's. */
	const char *names[] = { "handler", "crunch", "handler", "task_step", "Handle._run",
				"_run_once", "run_forever" };
	for (int i = 0; i < 7; i++)
		locs[i] = frame(p, names[i]);
	/* Python frames only (no task_step): their locations and codes. */
	const int py[] = { 0, 1, 2, 4, 5, 6 };
	const uint64_t codes[] = { 0x100, 0x200, 0x100, 0x300, 0x400, 0x500 };
	for (int i = 0; i < 6; i++) {
		pylocs[i] = locs[py[i]];
		pycodes[i] = codes[i];
	}
	cut = asyncstack_cut(locs, 7, pylocs, pycodes, 6, 0x100);
	check(cut == 2, "cut at the rootmost frame of the task's code: %ld", cut);
	check(asyncstack_cut(locs, 7, pylocs, pycodes, 6, 0x999) == -1,
	      "no cut when the stack does not hold the task's code");

	link_to(&ch, "handler-1");
	link_to(&ch, "supervisor");
	link_to(&ch, "Task-* (main)");
	ch.end = PYAWAIT_ROOT;
	n = asyncstack_apply(&a, locs, 7, 16, (size_t)cut, &ch);
	render(p, locs, n, got, sizeof(got));
	check(!strcmp(got, "handler;crunch;handler;[task handler-1];[task supervisor];[task Task-* (main)]"),
	      "loop frames replaced by the chain's markers: %s", got);

	ch.n = 1;
	ch.end = PYAWAIT_UNKNOWN;
	n = asyncstack_apply(&a, locs, 3, 16, 2, &ch);
	render(p, locs, n, got, sizeof(got));
	check(!strcmp(got, "handler;crunch;handler;[task handler-1];[awaited by ?]"),
	      "an awaiter not told exactly ends the chain: %s", got);

	ch.end = PYAWAIT_CUT;
	n = asyncstack_apply(&a, locs, 3, 4, 2, &ch);
	render(p, locs, n, got, sizeof(got));
	check(n == 4 && !strcmp(got, "handler;crunch;handler;[task handler-1]"),
	      "bounded by the room given: %s", got);
	profile_free(p);
	return check_exit();
}
