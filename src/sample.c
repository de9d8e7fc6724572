/*
 * Turns the raw frame records of one BPF sample into pprof locations, leaf
 * first, and adds the sample with its labels. States that are not Python
 * code (no thread state, truncated stack, unreadable frame) become visible
 * bracketed frames, so their CPU time is shown rather than lost.
 */
#include "sample.h"

#include <string.h>

static uint64_t synthetic(struct sample_sink *k, const char *name)
{
	uint64_t fid = profile_function(k->prof, name, "", "", 0);

	return fid ? profile_location(k->prof, 0, 0, fid, 0) : 0;
}

/* Python frames belong to the interpreter binary: one mapping per target
 * marked as already symbolized, so pprof neither warns nor re-symbolizes. */
static uint64_t interpreter_mapping(struct sample_sink *k, const struct py_target *t)
{
	struct profile_mapping_desc m = {
		.filename = t->module,
		.has_functions = true,
		.has_filenames = true,
		.has_line_numbers = true,
	};

	return profile_mapping(k->prof, &m);
}

static int python_frames(struct sample_sink *k, const struct py_target *t,
			 const struct py_sample *s, size_t *n)
{
	uint64_t mid = interpreter_mapping(k, t);

	for (unsigned i = 0; i < s->h.nframes; i++) {
		const struct py_frame_rec *f = &s->frames[i];
		struct pyframe_info fi;
		uint64_t fid, loc;
		int r = pysym_resolve(k->syms, t, f->code, f->lasti, f->self, &fi);

		if (r == 1)
			continue;	/* frame pushed but not started */
		if (r < 0) {
			k->n.bad_frames++;
			loc = synthetic(k, "[unreadable Python frame]");
		} else {
			fid = profile_function(k->prof, fi.name, "", fi.filename,
						 fi.firstlineno);
			loc = fid ? profile_location(k->prof, mid, 0, fid,
						     fi.line > 0 ? fi.line : 0) : 0;
		}
		if (!loc)
			return -1;
		k->locs[(*n)++] = loc;
	}
	return 0;
}

static void count_thread(struct sample_sink *k, uint32_t tid)
{
	uint32_t h = tid * 2654435761u;

	if (!tid || k->n.threads >= TID_SET_SIZE / 2)
		return;		/* keep the table half empty: probes stay short */
	for (uint32_t i = 0; i < TID_SET_SIZE; i++) {
		uint32_t *slot = &k->tids[(h + i) % TID_SET_SIZE];

		if (*slot == tid)
			return;
		if (!*slot) {
			*slot = tid;
			k->n.threads++;
			return;
		}
	}
}

int sample_add(struct sample_sink *k, const struct py_target *t, const void *rec,
	       size_t size)
{
	const struct py_sample *s = rec;
	struct profile_label labels[3];
	char comm[PYPERF_COMM_LEN + 1];
	int64_t values[2];
	size_t n = 0;

	k->n.records++;
	if (size < sizeof(s->h) ||
	    s->h.nframes > PYPERF_MAX_FRAMES ||
	    size < sizeof(s->h) + s->h.nframes * sizeof(s->frames[0])) {
		k->n.malformed++;
		return 0;
	}
	count_thread(k, s->h.tid);
	if (python_frames(k, t, s, &n))
		return -1;
	if (s->h.nframes > k->n.max_depth)
		k->n.max_depth = s->h.nframes;
	if (s->h.flags & SAMPLE_F_READ_ERR)
		k->n.read_errors++;
	if (s->h.flags & SAMPLE_F_TRUNCATED) {
		k->n.truncated++;
		k->locs[n++] = synthetic(k, "[truncated]");
	}
	if (n == 0) {
		k->n.no_python++;
		k->locs[n++] = synthetic(k, (s->h.flags & SAMPLE_F_NO_INTERP) ?
					 "[Python not initialised]" : "[no Python stack]");
	}
	if (!k->locs[n - 1])
		return -1;
	memcpy(comm, s->h.comm, PYPERF_COMM_LEN);
	comm[PYPERF_COMM_LEN] = '\0';
	labels[0] = (struct profile_label){ .key = "pid", .num = s->h.pid };
	labels[1] = (struct profile_label){ .key = "tid", .num = s->h.tid };
	labels[2] = (struct profile_label){ .key = "thread_name", .str = comm };
	values[0] = 1;
	values[1] = (int64_t)s->h.period;
	return profile_add_sample(k->prof, k->locs, n, labels, 3, values);
}
