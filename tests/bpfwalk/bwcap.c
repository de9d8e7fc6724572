/* Captures of one thread's state for the BPF walk; see bwcap.h. */
#include "bwcap.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "record_codec.h"

/* struct py_proc_config's fields the walk reads, by name. */
struct cfg_field {
	const char *name;
	size_t off, size;
};

#define CF(f) { #f, offsetof(struct py_proc_config, f), sizeof(((struct py_proc_config *)0)->f) }

static const struct cfg_field cfg_fields[] = {
	CF(interp_head_addr), CF(gil_locked_addr), CF(gil_holder_addr), CF(gil_current_addr),
	CF(gil_enabled_addr), CF(off.interp_tstate_head), CF(off.ts_next), CF(off.ts_frame),
	CF(off.cframe_current_frame), CF(off.ts_thread_id), CF(off.ts_native_thread_id),
	CF(off.frame_back), CF(off.frame_code), CF(off.frame_lasti), CF(off.frame_owner),
	CF(off.frame_localsplus), CF(off.frame_is_entry), CF(off.frame_kind), CF(off.tid_kind),
	CF(off.code_tag_mask), CF(off.entry_kind), CF(off.frame_span), CF(off.frame_tlbc_index),
	CF(off.owner_shim), CF(off.lasti_in_code), CF(off.cframe_previous), CF(off.code_name),
	CF(off.code_filename), CF(off.code_linetable),
	CF(off.code_argcount), CF(off.code_varnames), CF(off.tuple_items), CF(off.frame_globals), CF(off.code_span),
};

#define NCFG (sizeof(cfg_fields) / sizeof(cfg_fields[0]))

static uint64_t get_uint(const void *p, size_t size)
{
	uint64_t v = 0;

	memcpy(&v, p, size);	/* little-endian */
	return v;
}

static void put_uint(void *p, size_t size, uint64_t v)
{
	memcpy(p, &v, size);
}

/* A config field absent from a capture: an offset the version lacks. */
static void cfg_defaults(struct py_proc_config *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NCFG; i++)
		if (!strncmp(cfg_fields[i].name, "off.", 4) && cfg_fields[i].size == 2)
			put_uint((uint8_t *)c + cfg_fields[i].off, 2, PYPERF_NO_FIELD);
}

static void put_in(struct rec_buf *b, const char *label, const struct bpfwalk_in *in)
{
	rec_put_str(b, label, SIZE_MAX);
	rec_put_u32(b, in->pid);
	rec_put_u32(b, in->tid);
	rec_put_u64(b, in->ident);
	rec_put_u64(b, in->ip);
	rec_put_u64(b, in->sp);
	rec_put_u64(b, in->bp);
	rec_put_u64(b, in->top);
	rec_put_u32(b, in->flags);
	rec_put_u32(b, (uint32_t)in->compact);
	rec_put_u32(b, (uint32_t)in->native);
	rec_put_u32(b, (uint32_t)NCFG);
	for (size_t i = 0; i < NCFG; i++) {
		rec_put_str(b, cfg_fields[i].name, SIZE_MAX);
		rec_put_u64(b, get_uint((const uint8_t *)&in->cfg + cfg_fields[i].off,
					cfg_fields[i].size));
	}
}

static int take_in(struct rec_cur *c, char *label, size_t lcap, struct bpfwalk_in *in)
{
	char name[64];
	uint32_t n;

	memset(in, 0, sizeof(*in));
	rec_take_str(c, label, lcap);
	in->pid = rec_take_u32(c);
	in->tid = rec_take_u32(c);
	in->ident = rec_take_u64(c);
	in->ip = rec_take_u64(c);
	in->sp = rec_take_u64(c);
	in->bp = rec_take_u64(c);
	in->top = rec_take_u64(c);
	in->flags = rec_take_u32(c);
	in->compact = (int)rec_take_u32(c);
	in->native = (int)rec_take_u32(c);
	n = rec_take_u32(c);
	cfg_defaults(&in->cfg);
	for (uint32_t k = 0; k < n && !c->bad; k++) {
		size_t i;
		uint64_t v;

		rec_take_str(c, name, sizeof(name));
		v = rec_take_u64(c);
		for (i = 0; i < NCFG && strcmp(cfg_fields[i].name, name); i++)
			;
		if (i == NCFG)
			return -1;	/* a field this build does not have */
		put_uint((uint8_t *)&in->cfg + cfg_fields[i].off, cfg_fields[i].size, v);
	}
	return c->bad ? -1 : 0;
}

/* Map values field by field (bpf/pyperf.h's structs). */
static void put_value(struct rec_buf *b, enum bpfwalk_map map, const uint8_t *v)
{
	const struct py_unwind_proc *p = (const void *)v;
	const struct py_unwind_obj *o = (const void *)v;
	const struct py_unwind_row *r = (const void *)v;

	switch (map) {
	case BW_UNWIND_PROCS:
		rec_put_u32(b, p->n);
		rec_put_u32(b, p->gen);
		for (uint32_t i = 0; i < p->n && i < PY_UNWIND_MAX_MAPS; i++) {
			rec_put_u64(b, p->m[i].start);
			rec_put_u64(b, p->m[i].end);
			rec_put_u64(b, p->m[i].bias);
			rec_put_u32(b, p->m[i].obj);
			rec_put_u32(b, p->m[i].flags);
		}
		break;
	case BW_UNWIND_OBJS:
		rec_put_u32(b, o->first);
		rec_put_u32(b, o->count);
		rec_put_u32(b, o->page_first);
		rec_put_u32(b, o->page_count);
		rec_put_u32(b, o->page_base);
		break;
	case BW_UNWIND_PAGES:
		rec_put_u32(b, (uint32_t)get_uint(v, 4));
		break;
	case BW_UNWIND_ROWS:
		rec_put_u32(b, r->pc);
		rec_put_u32(b, (uint32_t)r->cfa_off);
		rec_put_u32(b, (uint32_t)(int32_t)r->rbp_off);
		rec_put_u32(b, r->kind);
		rec_put_u32(b, r->plt_thr);
		break;
	default:
		break;
	}
}

static void take_value(struct rec_cur *c, enum bpfwalk_map map, uint8_t *v)
{
	struct py_unwind_proc *p = (void *)v;
	struct py_unwind_obj *o = (void *)v;
	struct py_unwind_row *r = (void *)v;

	switch (map) {
	case BW_UNWIND_PROCS:
		p->n = rec_take_u32(c);
		p->gen = rec_take_u32(c);
		for (uint32_t i = 0; i < p->n && i < PY_UNWIND_MAX_MAPS && !c->bad; i++) {
			p->m[i].start = rec_take_u64(c);
			p->m[i].end = rec_take_u64(c);
			p->m[i].bias = rec_take_u64(c);
			p->m[i].obj = rec_take_u32(c);
			p->m[i].flags = rec_take_u32(c);
		}
		break;
	case BW_UNWIND_OBJS:
		o->first = rec_take_u32(c);
		o->count = rec_take_u32(c);
		o->page_first = rec_take_u32(c);
		o->page_count = rec_take_u32(c);
		o->page_base = rec_take_u32(c);
		break;
	case BW_UNWIND_PAGES:
		put_uint(v, 4, rec_take_u32(c));
		break;
	case BW_UNWIND_ROWS:
		r->pc = rec_take_u32(c);
		r->cfa_off = (int32_t)rec_take_u32(c);
		r->rbp_off = (int16_t)rec_take_u32(c);
		r->kind = (uint8_t)rec_take_u32(c);
		r->plt_thr = (uint8_t)rec_take_u32(c);
		break;
	default:
		c->bad = 1;
	}
}

static void put_want(struct rec_buf *b, const struct bwcap_want *w)
{
	rec_put_u64(b, w->tstate);
	rec_put_u32(b, w->flags);
	rec_put_u32(b, w->nframes);
	for (uint32_t i = 0; i < w->nframes; i++) {
		rec_put_u64(b, w->frames[i].code);
		rec_put_u64(b, w->frames[i].lasti);
		rec_put_u64(b, w->frames[i].self);
		rec_put_u32(b, w->frames[i].flags);
		rec_put_u32(b, w->frames[i].tlbc);
	}
	rec_put_u32(b, w->native_n);
	rec_put_u32(b, w->native_end);
	for (uint32_t i = 0; i < w->native_n; i++)
		rec_put_u64(b, w->pcs[i]);
	rec_put_u32(b, w->ncaps);
	for (uint32_t i = 0; i < w->ncaps; i++) {
		rec_put_u64(b, w->caps[i].code);
		rec_put_u32(b, w->caps[i].name_len);
		rec_put_u32(b, w->caps[i].file_len);
		rec_put(b, w->caps[i].name, w->caps[i].name_len);
		rec_put(b, w->caps[i].file, w->caps[i].file_len);
	}
}

static int take_want(struct rec_cur *c, struct bwcap_want *w)
{
	memset(w, 0, sizeof(*w));
	w->tstate = rec_take_u64(c);
	w->flags = rec_take_u32(c);
	w->nframes = rec_take_u32(c);
	if (w->nframes > PYPERF_MAX_FRAMES)
		return -1;
	for (uint32_t i = 0; i < w->nframes; i++) {
		w->frames[i].code = rec_take_u64(c);
		w->frames[i].lasti = rec_take_u64(c);
		w->frames[i].self = rec_take_u64(c);
		w->frames[i].flags = rec_take_u32(c);
		w->frames[i].tlbc = rec_take_u32(c);
	}
	w->native_n = rec_take_u32(c);
	w->native_end = rec_take_u32(c);
	if (w->native_n > PYPERF_MAX_NATIVE)
		return -1;
	for (uint32_t i = 0; i < w->native_n; i++)
		w->pcs[i] = rec_take_u64(c);
	w->ncaps = rec_take_u32(c);
	if (w->ncaps > sizeof(w->caps) / sizeof(w->caps[0]))
		return -1;
	for (uint32_t i = 0; i < w->ncaps && !c->bad; i++) {
		struct bwcap_name *n = &w->caps[i];
		const uint8_t *p;

		n->code = rec_take_u64(c);
		n->name_len = (uint16_t)rec_take_u32(c);
		n->file_len = (uint16_t)rec_take_u32(c);
		if (n->name_len > PY_CAPTURE_NAME || n->file_len > PY_CAPTURE_FILE)
			return -1;
		if ((p = rec_take(c, n->name_len)))
			memcpy(n->name, p, n->name_len);
		if ((p = rec_take(c, n->file_len)))
			memcpy(n->file, p, n->file_len);
	}
	return c->bad ? -1 : 0;
}

void bwcap_want_capture(struct bwcap_want *w, const struct py_code_capture *c)
{
	uint32_t i;

	for (i = 0; i < w->ncaps && w->caps[i].code != c->code; i++)
		;
	if (i == sizeof(w->caps) / sizeof(w->caps[0]))
		return;
	if (i == w->ncaps)
		w->ncaps++;
	w->caps[i].code = c->code;
	w->caps[i].name_len = c->name_len > PY_CAPTURE_NAME ? PY_CAPTURE_NAME : c->name_len;
	w->caps[i].file_len = c->file_len > PY_CAPTURE_FILE ? PY_CAPTURE_FILE : c->file_len;
	memcpy(w->caps[i].name, c->name, w->caps[i].name_len);
	memcpy(w->caps[i].file, c->file, w->caps[i].file_len);
}

void bwcap_write(struct recorder *rec, const char *label, const struct bpfwalk_in *in,
		 const struct bpfwalk_out *o, const struct bwcap_want *want)
{
	struct rec_buf b = { 0 };

	put_in(&b, label, in);
	record_raw(rec, REC_BPFWALK, b.p, b.n);
	for (size_t i = 0; i < o->nent; i++) {
		b.n = 0;
		rec_put_u32(&b, o->ent[i].map);
		rec_put_u32(&b, o->ent[i].key);
		rec_put_u32(&b, (uint32_t)o->ent[i].found);
		if (o->ent[i].found)
			put_value(&b, o->ent[i].map, o->ent[i].value);
		record_raw(rec, REC_BPFMAP, b.p, b.n);
	}
	b.n = 0;
	put_want(&b, want);
	record_raw(rec, REC_BPFWANT, b.p, b.n);
	free(b.p);
}

static int load_event(struct bwcap *c, const struct rec_event *e, size_t *cap)
{
	struct rec_cur cur = { e->p, e->len, 0 };
	struct bwcap_entry *n;

	switch (e->type) {
	case REC_BPFWALK:
		return take_in(&cur, c->label, sizeof(c->label), &c->in);
	case REC_BPFWANT:
		return take_want(&cur, &c->want);
	case REC_BPFMAP:
		if (c->nent == *cap) {
			*cap = *cap ? 2 * *cap : 64;
			n = realloc(c->ent, *cap * sizeof(*c->ent));
			if (!n)
				return -1;
			c->ent = n;
		}
		n = &c->ent[c->nent++];
		memset(n, 0, sizeof(*n));
		n->map = (enum bpfwalk_map)rec_take_u32(&cur);
		n->key = rec_take_u32(&cur);
		n->found = (int)rec_take_u32(&cur);
		if (n->map >= BW_NMAPS)
			return -1;
		if (n->found)
			take_value(&cur, n->map, n->value);
		return cur.bad ? -1 : 0;
	}
	return 0;
}

int bwcap_load(const char *path, struct bwcap *c, char *err, size_t errlen)
{
	size_t cap = 0;
	int has_in = 0, has_want = 0;

	memset(c, 0, sizeof(*c));
	c->r = rec_load_file(path, NULL, err, errlen);
	if (!c->r)
		return -1;
	for (size_t i = 0; i < c->r->nev; i++) {
		const struct rec_event *e = &c->r->ev[i];

		if (load_event(c, e, &cap)) {
			snprintf(err, errlen, "%s: a malformed capture record (type %u)", path,
				 e->type);
			return -1;
		}
		has_in |= e->type == REC_BPFWALK;
		has_want |= e->type == REC_BPFWANT;
	}
	if (!has_in || !has_want) {
		snprintf(err, errlen, "%s: not a capture (no BPFWALK or BPFWANT record)", path);
		return -1;
	}
	return 0;
}

void bwcap_free(struct bwcap *c)
{
	if (c->r)
		rec_free(c->r);
	free(c->ent);
	memset(c, 0, sizeof(*c));
}

static int cap_lookup(void *ctx, enum bpfwalk_map map, uint32_t key, void *v)
{
	const struct bwcap *c = ctx;

	for (size_t i = 0; i < c->nent; i++)
		if (c->ent[i].map == map && c->ent[i].key == key) {
			if (!c->ent[i].found)
				return -1;
			memcpy(v, c->ent[i].value, bpfwalk_value_size[map]);
			return 0;
		}
	return -1;	/* not consulted live: no such entry */
}

struct bpfwalk_tables bwcap_tables(struct bwcap *c)
{
	return (struct bpfwalk_tables){ .lookup = cap_lookup, .ctx = c };
}

#define WHY(...) do { if (why) fprintf(why, __VA_ARGS__); n++; } while (0)

/* Frames and pcs of a record whose header is h and frames start at f. */
static void want_fill(struct bwcap_want *w, const struct py_sample_hdr *h, const uint8_t *f,
		      int compact)
{
	uint32_t fsize = compact ? sizeof(struct py_frame_compact) : sizeof(struct py_frame_rec);

	memset(w, 0, sizeof(*w));
	w->tstate = h->tstate;
	w->flags = h->flags & BWCAP_WALK_FLAGS;
	w->nframes = h->nframes > PYPERF_MAX_FRAMES ? PYPERF_MAX_FRAMES : h->nframes;
	for (uint32_t i = 0; i < w->nframes; i++) {
		if (compact) {
			struct py_frame_compact fc;

			memcpy(&fc, f + i * fsize, sizeof(fc));
			w->frames[i].code = fc.code_flags & ~(uint64_t)7;
			w->frames[i].flags = (uint32_t)(fc.code_flags & 7);
			w->frames[i].lasti = fc.lasti;
		} else {
			memcpy(&w->frames[i], f + i * fsize, sizeof(w->frames[i]));
		}
	}
	if (h->flags & SAMPLE_F_NATIVE_PCS) {
		w->native_n = h->native_n > PYPERF_MAX_NATIVE ? PYPERF_MAX_NATIVE : h->native_n;
		w->native_end = h->native_end;
		memcpy(w->pcs, f + (size_t)w->nframes * fsize, (size_t)w->native_n * 8);
	}
}

int bwcap_want_of_record(const void *rec, size_t size, struct bwcap_want *w)
{
	struct py_sample_hdr h;
	const uint8_t *p = rec;
	size_t hlen = sizeof(h), fsize;
	uint32_t flags;

	if (size < PY_SAMPLE_COMPACT_HDR)
		return -1;
	memcpy(&flags, p + offsetof(struct py_sample_hdr, flags), sizeof(flags));
	memset(&h, 0, sizeof(h));
	if ((flags & SAMPLE_F_COMPACT) && !(flags & SAMPLE_F_COMPACT_REGS)) {
		hlen = PY_SAMPLE_COMPACT_HDR;
		memcpy(&h, p, PY_SAMPLE_REGS_OFF);
		memcpy((uint8_t *)&h + PY_SAMPLE_REGS_OFF + PY_SAMPLE_REGS_LEN,
		       p + PY_SAMPLE_REGS_OFF, hlen - PY_SAMPLE_REGS_OFF);
	} else {
		if (size < sizeof(h))
			return -1;
		memcpy(&h, p, sizeof(h));
	}
	fsize = (flags & SAMPLE_F_COMPACT) ? sizeof(struct py_frame_compact)
					   : sizeof(struct py_frame_rec);
	if (size < hlen + (size_t)h.nframes * fsize +
		   ((h.flags & SAMPLE_F_NATIVE_PCS) ? (size_t)h.native_n * 8 : 0))
		return -1;
	want_fill(w, &h, p + hlen, (flags & SAMPLE_F_COMPACT) != 0);
	return 0;
}

void bwcap_want_of_out(const struct bpfwalk_out *o, struct bwcap_want *w)
{
	want_fill(w, &o->s->h, (const uint8_t *)o->s->frames,
		  o->fsize == sizeof(struct py_frame_compact));
	for (size_t i = 0; i < o->ncaps; i++)
		bwcap_want_capture(w, &o->caps[i]);
}

/* A string object's head as captured: its bytes after the reference count. */
static int head_differs(const uint8_t *a, uint16_t alen, const uint8_t *b, uint16_t blen)
{
	return alen != blen || (alen > 8 && memcmp(a + 8, b + 8, alen - 8));
}

/* Each live capture must be the walk's capture of the same code object. */
static int compare_caps(const struct bwcap_want *want, const struct bwcap_want *got, FILE *why)
{
	int n = 0;

	for (uint32_t i = 0; i < want->ncaps; i++) {
		const struct bwcap_name *a = &want->caps[i], *b = NULL;

		for (uint32_t k = 0; k < got->ncaps; k++)
			if (got->caps[k].code == a->code)
				b = &got->caps[k];
		if (!b)
			WHY("  code %#llx: captured live, not by the walk\n", (unsigned long long)a->code);
		else if (head_differs(a->name, a->name_len, b->name, b->name_len) ||
			 head_differs(a->file, a->file_len, b->file, b->file_len))
			WHY("  code %#llx: the walk's capture of its name or file name differs\n",
			    (unsigned long long)a->code);
	}
	return n;
}

int bwcap_compare(const struct bwcap_want *want, const struct bwcap_want *got, FILE *why)
{
	int n = 0;

	if (want->tstate != got->tstate)
		WHY("  thread state: want %#llx, got %#llx\n", (unsigned long long)want->tstate,
		    (unsigned long long)got->tstate);
	if (want->flags != got->flags)
		WHY("  flags: want %#x, got %#x\n", want->flags, got->flags);
	if (want->nframes != got->nframes)
		WHY("  Python frames: want %u, got %u\n", want->nframes, got->nframes);
	for (uint32_t i = 0; i < want->nframes && i < got->nframes; i++) {
		const struct py_frame_rec *a = &want->frames[i], *b = &got->frames[i];

		if (memcmp(a, b, sizeof(*a)))
			WHY("  frame %u: want code %#llx lasti %#llx flags %u, got code %#llx lasti %#llx flags %u\n",
			    i, (unsigned long long)a->code, (unsigned long long)a->lasti, a->flags,
			    (unsigned long long)b->code, (unsigned long long)b->lasti, b->flags);
	}
	if (want->native_n != got->native_n || want->native_end != got->native_end)
		WHY("  native: want %u pcs (end %u), got %u (end %u)\n", want->native_n,
		    want->native_end, got->native_n, got->native_end);
	for (uint32_t i = 0; i < want->native_n && i < got->native_n; i++)
		if (want->pcs[i] != got->pcs[i])
			WHY("  pc %u: want %#llx, got %#llx\n", i, (unsigned long long)want->pcs[i],
			    (unsigned long long)got->pcs[i]);
	return n + compare_caps(want, got, why);
}

size_t bwcap_encode(const struct bpfwalk_in *in, const struct bpfwalk_out *o, void *buf,
		    size_t cap)
{
	struct py_sample_hdr h = o->s->h;
	size_t body = (size_t)h.nframes * o->fsize + (size_t)h.native_n * 8;
	size_t hlen = in->compact ? PY_SAMPLE_COMPACT_HDR : sizeof(h);
	uint8_t *p = buf;

	if (hlen + body > cap)
		return 0;
	if (in->compact) {
		h.flags |= SAMPLE_F_COMPACT;
		memcpy(p, &h, PY_SAMPLE_REGS_OFF);
		memcpy(p + PY_SAMPLE_REGS_OFF, (uint8_t *)&h + PY_SAMPLE_REGS_OFF + PY_SAMPLE_REGS_LEN,
		       hlen - PY_SAMPLE_REGS_OFF);
	} else {
		memcpy(p, &h, hlen);
	}
	memcpy(p + hlen, o->s->frames, body);
	return hlen + body;
}
