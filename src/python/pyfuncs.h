/*
 * CPython's own C functions, for the default filter of native frames
 * (src/pipeline/native_filter.c applies it): which of the interpreter's
 * functions say what a program is doing (sleeping, waiting for a lock or
 * the GIL, I/O, str/bytes methods, re, gc, builtins doing work, modules
 * some builds link in) and so stay in a merged stack, while the rest of
 * the interpreter (calls, the eval loop, start-up) is machinery; and the
 * perf trampolines' symbol prefix. CPython knowledge, so it lives here.
 */
#ifndef PYFUNCS_H
#define PYFUNCS_H

#include <stdint.h>

enum nf_match { NF_PREFIX = 0, NF_EXACT };
enum nf_scope { NF_INTERPRETER = 0, NF_ANYWHERE };
enum nf_action { NF_KEEP = 0, NF_HIDE };

/* One entry of a rule table; the first entry that matches decides. */
struct nf_rule {
	const char *name;
	uint8_t match;		/* enum nf_match */
	uint8_t scope;		/* enum nf_scope */
	uint8_t action;		/* enum nf_action */
};

/* CPython's rules (3.6-3.15), ending with a NULL name. */
const struct nf_rule *pyfuncs_rules(void);

#endif
