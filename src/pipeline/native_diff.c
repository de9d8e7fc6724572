/* Frame-for-frame comparison of two native unwinds (native_diff.h). */
#include "native_diff.h"

#include <inttypes.h>

#include <stdio.h>
#include <string.h>

static void blame(struct native_diff *d, const char *path, uint64_t kpc, uint64_t upc)
{
	for (size_t i = 0; i < d->nobj; i++) {
		if (strcmp(d->obj[i].path, path) == 0) {
			d->obj[i].n++;
			return;
		}
	}
	if (d->nobj == NATIVE_DIFF_OBJS) {
		d->other++;
		return;
	}
	snprintf(d->obj[d->nobj].path, NATIVE_DIFF_PATH, "%s", path);
	d->obj[d->nobj].n = 1;
	d->obj[d->nobj].example[0] = kpc;
	d->obj[d->nobj].example[1] = upc;
	d->nobj++;
}

int native_diff_add(struct native_diff *d, const uint64_t *kp, size_t nk, const uint64_t *up,
		    size_t nu, int truncated, int not_loaded,
		    const char *(*object_of)(void *ctx, uint64_t pc), void *ctx)
{
	size_t common = nk < nu ? nk : nu, i;
	const char *path;

	d->stacks++;
	d->frames_kernel += nk;
	d->frames_user += nu;
	for (i = 0; i < common && kp[i] == up[i]; i++)
		;
	if (i == common && (nk == nu || truncated)) {
		d->agree++;
		return 1;
	}
	if (not_loaded) {
		d->not_loaded++;
		blame(d, "(mapping not loaded yet)", i < nk ? kp[i] : 0, i < nu ? up[i] : 0);
		return 0;
	}
	path = object_of(ctx, i < nk ? kp[i] : i < nu ? up[i] : kp[nk - 1]);
	blame(d, path && *path ? path : "(anonymous memory)", i < nk ? kp[i] : 0,
	      i < nu ? up[i] : 0);
	return 0;
}

void native_diff_print(const struct native_diff *d, FILE *out)
{
	fprintf(out, "pyperf-pprof: unwind diff: %" PRIu64 " of %" PRIu64 " stacks agree frame for frame"
		" (%.2f%%); frames kernel %" PRIu64 " user %" PRIu64 "; %" PRIu64 " hit a mapping not loaded yet\n",
		d->agree, d->stacks, d->stacks ? 100.0 * (double)d->agree / (double)d->stacks : 0.0,
		d->frames_kernel, d->frames_user, d->not_loaded);
	for (size_t i = 0; i < d->nobj; i++)
		fprintf(out, "pyperf-pprof: unwind diff: %" PRIu64 " in %s (e.g. kernel %#" PRIx64
			" user %#" PRIx64 ")\n", d->obj[i].n, d->obj[i].path, d->obj[i].example[0],
			d->obj[i].example[1]);
	if (d->other)
		fprintf(out, "pyperf-pprof: unwind diff: %" PRIu64 " in other objects\n", d->other);
}
