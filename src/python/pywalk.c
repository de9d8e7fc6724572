/* The Python stack of a thread that is not running; see pywalk.h. */
#include "pywalk.h"

#include <string.h>

#include "target_src.h"

static int rd64(const struct py_target *t, uint64_t addr, void *v)
{
	return target_read(t->src, t->pid, addr, v, sizeof(uint64_t));
}

/* 1 if thread state ts is the thread ns_tid's, 0 if not; *err on a read
 * that failed. */
static int tstate_is(const struct py_target *t, uint64_t ts, uint32_t ns_tid, int *err)
{
	const struct py_walk_offsets *off = &t->bpf.off;
	uint64_t v = 0;
	uint32_t tid = 0;

	if (off->tid_kind == PY_TID_NATIVE) {
		if (rd64(t, ts + off->ts_native_thread_id, &v)) {
			*err = 1;
			return 0;
		}
		return v == ns_tid;
	}
	/* thread_id is pthread_self(): the thread's struct pthread, which
	 * holds its tid (a pthread_t of another C library reads as no match,
	 * and the thread gets no Python stack rather than another's). */
	if (rd64(t, ts + off->ts_thread_id, &v)) {
		*err = 1;
		return 0;
	}
	if (!v || target_read(t->src, t->pid, v + PYWALK_PTHREAD_TID_OFF, &tid, sizeof(tid)))
		return 0;
	return tid == ns_tid;
}

uint64_t pywalk_find_tstate(const struct py_target *t, uint32_t ns_tid, int *err)
{
	const struct py_walk_offsets *off = &t->bpf.off;
	uint64_t interp = 0, cur = 0;

	if (rd64(t, t->bpf.interp_head_addr, &interp) || !interp ||
	    rd64(t, interp + off->interp_tstate_head, &cur)) {
		*err = 1;
		return 0;
	}
	for (int i = 0; cur && i < PYPERF_MAX_THREADS; i++) {
		if (tstate_is(t, cur, ns_tid, err))
			return cur;
		if (*err || rd64(t, cur + off->ts_next, &cur)) {
			*err = 1;
			return 0;
		}
	}
	return 0;
}

/* The GIL's words, decided as the BPF program does (gil_state). */
static uint32_t gil_flags(const struct py_target *t, uint64_t tstate)
{
	const struct py_proc_config *c = &t->bpf;
	struct py_gil_read g = { 0 };

	if (c->gil_enabled_addr)
		g.has_enabled = !target_read(t->src, t->pid, c->gil_enabled_addr, &g.enabled,
					     sizeof(g.enabled));
	if (c->gil_locked_addr && c->gil_holder_addr)
		g.has_locked = !target_read(t->src, t->pid, c->gil_locked_addr, &g.locked,
					    sizeof(g.locked)) &&
			       !rd64(t, c->gil_holder_addr, &g.holder);
	if (c->gil_current_addr)
		g.has_current = !rd64(t, c->gil_current_addr, &g.current);
	return py_gil_flags(&g, tstate);
}

static void put_anchor(struct py_sample *s, uint64_t addr)
{
	if (s->na < PY_ANCHORS_MAX)
		s->anchors[s->na] = addr;
	s->na++;
}

/* The BPF walk's entry_anchor: PY_ENTRY_FLAG closes a group with the
 * _PyCFrame cf and returns the next one in the chain. */
static uint64_t entry_anchor(const struct py_target *t, struct py_sample *s, uint64_t cf)
{
	uint64_t prev = 0;

	if (t->bpf.off.entry_kind != PY_ENTRY_FLAG)
		return cf;
	put_anchor(s, cf);
	if (!cf || rd64(t, cf + t->bpf.off.cframe_previous, &prev))
		return 0;
	return prev;
}

/* The BPF walk's first_frame. */
static uint64_t first_frame(const struct py_target *t, uint64_t tstate, uint64_t *cframe,
			    int *err)
{
	const struct py_walk_offsets *off = &t->bpf.off;
	uint64_t f = 0;

	if (rd64(t, tstate + off->ts_frame, &f)) {
		*err = 1;
		return 0;
	}
	if (off->frame_kind != PY_FRAMES_CFRAME || !f)
		return f;
	*cframe = f;
	if (rd64(t, f + off->cframe_current_frame, &f)) {
		*err = 1;
		return 0;
	}
	return f;
}

/* One step of the walk (bpf/pyperf.bpf.c, walk_step): 1 when it ends. */
static int walk_step(const struct py_target *t, struct py_sample *s, uint64_t *frame,
		     uint64_t *mark, uint64_t *cframe, uint32_t i, int *err)
{
	const struct py_walk_offsets *off = &t->bpf.off;
	uint8_t win[PYPERF_FRAME_WIN + 8] = { 0 };
	struct py_frame_fields f = { 0 };
	uint64_t addr = *frame;
	uint32_t n = s->h.nframes;
	int verdict;

	if (n >= PYPERF_MAX_FRAMES) {
		s->h.flags |= SAMPLE_F_TRUNCATED;
		return 1;
	}
	if (!off->frame_span || target_read(t->src, t->pid, addr, win, off->frame_span)) {
		*err = 1;
		return 1;
	}
	py_frame_decode(off, win, &f);
	verdict = py_frame_classify(off, &f);
	if (verdict == PY_FRAME_BAD || (addr & 7) || (*mark && f.back == *mark)) {
		s->h.flags |= SAMPLE_F_BAD_CHAIN;
		return 1;
	}
	if ((i & (i + 1)) == 0)
		*mark = addr;
	*frame = f.back;
	if (verdict == PY_FRAME_SHIM) {
		put_anchor(s, addr);
		if (n > 0 && !(s->frames[n - 1].flags & FRAME_F_ENTRY)) {
			s->frames[n - 1].flags |= FRAME_F_ENTRY;
			return 0;
		}
		/* An eval-loop call between frames, or the thread's base
		 * frame: an empty group keeps the merge paired. */
		s->frames[n] = (struct py_frame_rec){ .flags = FRAME_F_ENTRY | FRAME_F_EMPTY };
		s->h.nframes = (uint16_t)(n + 1);
		return 0;
	}
	s->frames[n] = (struct py_frame_rec){ .code = f.code, .lasti = f.lasti, .self = f.self,
		.flags = py_frame_flags(off, &f), .tlbc = f.tlbc };
	if (s->frames[n].flags & FRAME_F_ENTRY)
		*cframe = entry_anchor(t, s, *cframe);
	s->h.nframes = (uint16_t)(n + 1);
	return 0;
}

void pywalk_thread(const struct py_target *t, uint32_t ns_tid, struct py_sample *s)
{
	uint64_t tstate, frame, mark = 0, cframe = 0;
	int err = 0;
	uint32_t i;

	s->h.nframes = 0;
	s->na = 0;
	tstate = pywalk_find_tstate(t, ns_tid, &err);
	s->h.tstate = tstate;
	s->h.flags |= gil_flags(t, tstate);
	if (!tstate) {
		s->h.flags |= err ? SAMPLE_F_NO_INTERP : SAMPLE_F_NO_TSTATE;
		return;
	}
	frame = first_frame(t, tstate, &cframe, &err);
	/* Two steps a frame at most, as in BPF: every call may have a shim. */
	for (i = 0; frame && i < 2 * PYPERF_MAX_FRAMES + 2; i++)
		if (walk_step(t, s, &frame, &mark, &cframe, i, &err))
			break;
	if (frame && !err && !(s->h.flags & (SAMPLE_F_BAD_CHAIN | SAMPLE_F_TRUNCATED)) &&
	    i >= 2 * PYPERF_MAX_FRAMES + 2)
		s->h.flags |= SAMPLE_F_TRUNCATED;
	if (t->bpf.off.entry_kind != PY_ENTRY_EVERY)
		s->h.flags |= SAMPLE_F_ANCHORED;
	if (err)
		s->h.flags |= SAMPLE_F_READ_ERR;
}
