/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Code objects: those seen lately (code_is_new), the capture of a new one
 * sent before its sample (capture_code, struct py_code_capture), and the
 * checks user space asks of the program (do_checks, struct py_check_req).
 * Part of pyperf.bpf.c; needs common.bpf.h.
 */
#ifndef CHECKS_BPF_H
#define CHECKS_BPF_H

/* Code objects seen lately, 2-way set-associative by address: a miss is
 * a code object new to this program (or one evicted by others), worth a
 * prompt wakeup and a capture. Direct-mapped, two hot code objects of one
 * slot took turns in it: up to 10,000 captures in a docutils run, not
 * ~500. A set holds 32 bits of each tag, the bits its index leaves (a new
 * code object taken for one seen: 2 in 2^31 a check): 16 KiB in all, the
 * cache lines a deep stack's walk misses fewer. */
#define SEEN_CODE_SETS 2048

struct seen_set {
	__u32 tag[2];		/* [0] the newer; 0 empty */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SEEN_CODE_SETS);
	__type(key, __u32);
	__type(value, struct seen_set);
} seen_code SEC(".maps");

/* The record capture_code() builds, one per CPU (too large for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_code_capture);
} capture_buf SEC(".maps");

/* The first bytes of the object at addr into buf (len of them, or 64
 * near the end of a mapping); the bytes read. */
static __always_inline __u16 capture_str(__u8 *buf, __u32 len, __u64 addr)
{
	if (!addr)
		return 0;
	if (!bpf_probe_read_user(buf, len, (const void *)addr))
		return (__u16)len;
	return bpf_probe_read_user(buf, 64, (const void *)addr) ? 0 : 64;
}

/* Before 3.11: the first bytes of the str naming the first argument of the
 * code object captured in c, if it has arguments; the bytes read. */
static __always_inline __u16 capture_arg(const struct py_walk_offsets *off,
					 struct py_code_capture *c, __u32 span)
{
	__u32 argc_off = off->code_argcount, names_off = off->code_varnames;
	__u32 items = off->tuple_items;
	__u64 names, name = 0;
	__s32 argc;

	if (argc_off > PY_CAPTURE_CODE - 8 || names_off > PY_CAPTURE_CODE - 8 ||
	    argc_off + 4 > span || names_off + 8 > span || items > 64)
		return 0;
	__builtin_memcpy(&argc, c->obj + argc_off, sizeof(argc));
	__builtin_memcpy(&names, c->obj + names_off, sizeof(names));
	if (argc < 1 || !names || bpf_probe_read_user(&name, sizeof(name),
						      (const void *)(names + items)))
		return 0;
	return capture_str(c->arg, PY_CAPTURE_ARG, name);
}

/* What code_is_new() says of a code object: new to the program, and
 * (with CODE_URGENT) not captured whole, so that user space must read it
 * before it may be freed: a wake-up now. */
#define CODE_NEW	1
#define CODE_URGENT	2

/* Does buf, the first got bytes of a str object, hold all of it: what
 * pysym.c decodes with no read (str_from)? Of a layout's captures
 * (str_length 0: none) and compact strs only. */
static __always_inline int str_whole(const struct py_walk_offsets *off, const __u8 *buf,
				     __u32 got)
{
	__u32 lo = off->str_length, so = off->str_state, state, kind, hdr;
	__s64 n;

	if (!lo || lo > 56 || so > 60 || got < off->str_compact_size || got < lo + 8 ||
	    got < so + 4)
		return 0;
	__builtin_memcpy(&n, buf + lo, sizeof(n));
	__builtin_memcpy(&state, buf + so, sizeof(state));
	state >>= off->str_shift & 15;
	kind = state >> 2 & 7;
	if (!(state >> 5 & 1) || (kind != 1 && kind != 2 && kind != 4) || n < 0 ||
	    n > PY_CAPTURE_FILE)
		return 0;
	hdr = state >> 6 & 1 ? off->str_ascii_size : off->str_compact_size;
	return hdr + (__u64)n * kind <= got;
}

/* The same of a bytes object (a line table): pysym.c's bytes_from(). */
static __always_inline int bytes_whole(const struct py_walk_offsets *off, const __u8 *buf,
				       __u32 got)
{
	__u32 so = off->bytes_size;
	__s64 n;

	if (!off->str_length || so > 56 || got < so + 8)
		return 0;
	__builtin_memcpy(&n, buf + so, sizeof(n));
	return n >= 0 && n <= PY_CAPTURE_TABLE + PY_CAPTURE_TABLE_MORE &&
	       off->bytes_sval + (__u64)n <= got;
}

/* The bytes of the line table c holds: table[] and, once that is full,
 * table_more[]'s. */
static __always_inline __u32 table_got(const struct py_code_capture *c)
{
	return c->table_len == PY_CAPTURE_TABLE ? PY_CAPTURE_TABLE + c->more_len : c->table_len;
}

/* Is the line table longer than table[] holds (a layout whose captures
 * can be whole, whose table[] is full)? Then table_more[] is read. */
static __always_inline int table_longer(const struct py_walk_offsets *off,
					const struct py_code_capture *c)
{
	__u32 so = off->bytes_size;
	__s64 n;

	if (!off->str_length || so > 56 || c->table_len != PY_CAPTURE_TABLE)
		return 0;
	__builtin_memcpy(&n, c->table + so, sizeof(n));
	return n > 0 && off->bytes_sval + (__u64)n > PY_CAPTURE_TABLE;
}

/* Does the capture c (span bytes of the code object) name a first
 * argument user space needs (before 3.11: a method's self or cls)? */
static __always_inline int needs_arg(const struct py_walk_offsets *off,
				     const struct py_code_capture *c, __u32 span)
{
	__u32 argc_off = off->code_argcount;
	__s32 argc;

	if (off->code_varnames == PYPERF_NO_FIELD || argc_off > PY_CAPTURE_CODE - 8 ||
	    argc_off + 4 > span)
		return 0;
	__builtin_memcpy(&argc, c->obj + argc_off, sizeof(argc));
	return argc >= 1;
}

/* Is c all pysym.c needs to make the entry with nothing read (its name,
 * file name and line table whole, and the first argument's name where
 * it names the method)? Then the reader may come by later. */
static __always_inline int capture_whole(const struct py_walk_offsets *off,
					 const struct py_code_capture *c, __u32 span)
{
	return str_whole(off, c->name, c->name_len) && str_whole(off, c->file, c->file_len) &&
	       bytes_whole(off, c->table, table_got(c)) &&
	       (!needs_arg(off, c, span) || str_whole(off, c->arg, c->arg_len));
}

/* Sends a struct py_code_capture (bpf/pyperf.h) for the code object at
 * code, new to this program: called for fresh code only, so a steady
 * program pays nothing. Global: verified once, and its state stays out of
 * the walk's context (a field more there kept the verifier from pruning
 * the walk's states). 1 if sent and whole (capture_whole), else 0. */
__noinline int capture_code(const struct py_walk_offsets *off, const struct py_sample *s,
			    __u64 code)
{
	struct py_code_capture *c;
	__u32 zero = 0, name_off, file_off, table_off, span;
	__u64 name, file, table = 0;

	if (!off || !s)
		return 0;
	name_off = off->code_name;
	file_off = off->code_filename;
	table_off = off->code_linetable;
	span = off->code_span;
	if (name_off > PY_CAPTURE_CODE - 8 || file_off > PY_CAPTURE_CODE - 8 ||
	    span < 8 || span > PY_CAPTURE_CODE)
		return 0;
	c = bpf_map_lookup_elem(&capture_buf, &zero);
	if (!c || bpf_probe_read_user(c->obj, span, (const void *)code))
		return 0;
	__builtin_memcpy(&name, c->obj + name_off, sizeof(name));
	__builtin_memcpy(&file, c->obj + file_off, sizeof(file));
	if (table_off <= PY_CAPTURE_CODE - 8 && table_off + 8 <= span)
		__builtin_memcpy(&table, c->obj + table_off, sizeof(table));
	c->h.pid = s->h.pid;
	c->h.tid = s->h.tid;
	c->h.time_ns = s->h.time_ns;
	c->h.flags = SAMPLE_F_CODE_NAME;
	c->h.nframes = 0;
	c->code = code;
	c->name_len = capture_str(c->name, PY_CAPTURE_NAME, name);
	c->file_len = capture_str(c->file, PY_CAPTURE_FILE, file);
	c->table_len = capture_str(c->table, PY_CAPTURE_TABLE, table);
	c->more_len = table_longer(off, c) ?
		      capture_str(c->table_more, PY_CAPTURE_TABLE_MORE, table + PY_CAPTURE_TABLE) : 0;
	c->arg_len = capture_arg(off, c, span);
	if (bpf_ringbuf_output(&events, c, sizeof(*c), BPF_RB_NO_WAKEUP)) {
		stat_inc(STAT_LOST);
		return 0;
	}
	stat_inc(STAT_CODE_CAPTURES);
	return capture_whole(off, c, span);
}

/* CODE_NEW if the code object at code, run with globals, is new to the
 * program (then captured: capture_code), with CODE_URGENT unless the
 * capture is whole; else 0. Global: the walk's bpf_loop callback calls it
 * and takes a scalar back (or'ed over the frames), one path for the
 * verifier there. */
__noinline int code_is_new(const struct py_walk_offsets *off, const struct py_sample *s,
			   __u64 code, __u64 globals)
{
	/* By process: a forked child has its parent's code objects at the
	 * same addresses, but user space has yet to read them in the child.
	 * By globals: a module's body freed at the end of its import and
	 * another module's code object at its address are two objects. */
	struct seen_set *v;
	__u64 h;
	__u32 k, tag;

	if (!s)
		return 0;
	h = code ^ ((__u64)s->h.pid * 0x9E3779B97F4A7C15ULL) ^
	    (globals * 0xC2B2AE3D27D4EB4FULL);
	/* Mixed, so that the index (top bits) and the tag (the 32 below)
	 * both depend on every bit of the three. */
	h = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ULL;
	k = (__u32)(h >> 53) & (SEEN_CODE_SETS - 1);
	tag = (__u32)(h >> 21) | 1;
	v = bpf_map_lookup_elem(&seen_code, &k);
	if (!v || v->tag[0] == tag || v->tag[1] == tag)
		return 0;
	v->tag[1] = v->tag[0];
	v->tag[0] = tag;
	return capture_code(off, s, code) ? CODE_NEW : CODE_NEW | CODE_URGENT;
}

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, PY_CHECK_SLOTS);
	__type(key, __u32);
	__type(value, struct py_check);
} code_checks SEC(".maps");

struct py_check_req check_req;	/* see bpf/pyperf.h */

static long check_one(__u32 i, void *unused)
{
	__u32 k = check_req.next, len = check_req.len;
	__u64 gen = check_req.gen;
	struct py_check *c;

	/* Not atomic (clang 14 has no fetch-add for BPF v2): two CPUs may
	 * both read slot k, which costs a read, not a slot. */
	check_req.next = k + 1;
	if (k >= check_req.n || k >= PY_CHECK_SLOTS)
		return 1;
	c = bpf_map_lookup_elem(&code_checks, &k);
	if (!c || len > PY_CHECK_BYTES)
		return 1;
	c->done_ns = bpf_ktime_get_ns();
	c->err = bpf_probe_read_user(c->bytes, len, (const void *)c->addr);
	/* Last: user space takes a slot whose gen is its request's. */
	c->gen = gen;
	stat_inc(STAT_CODE_CHECKS);
	return 0;
}

/* Reads code objects user space asked about (bpf/pyperf.h). 1 if that
 * ended the request: the reader, waiting for it, is to be woken. */
static __always_inline int do_checks(__u32 tgid)
{
	if (!check_req.n || check_req.tgid != tgid || check_req.next >= check_req.n)
		return 0;
	bpf_loop(PY_CHECKS_PER_SAMPLE, check_one, NULL, 0);
	return check_req.next >= check_req.n;
}

#endif /* CHECKS_BPF_H */
