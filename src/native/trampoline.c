/* The known trampoline shapes; see trampoline.h. */
#include "trampoline.h"

#include <string.h>

#define ROWS_MAX	6

/* One row per instruction boundary: where ip may be, and the rule there. */
struct tramp_row {
	uint8_t at;		/* bytes from the shape's start */
	struct tramp_rule rule;
};

struct tramp_shape {
	const char *what;
	uint8_t len;
	uint8_t bytes[TRAMP_BEFORE];
	uint8_t nrows;
	struct tramp_row row[ROWS_MAX];
};

/* CPython's Python/asm_trampoline.S for x86_64 (3.12, 3.13, 3.14):
 * sub $8,%rsp; call *%rcx; add $8,%rsp; ret, with endbr64 first in CET
 * builds. It keeps rbp and every callee-saved register as they are. */
static const struct tramp_shape shapes[] = {
	{ "CPython perf trampoline", 11,
	  { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3 }, 4,
	  { { 0, { 8, 0 } }, { 4, { 16, 0 } }, { 6, { 16, 0 } }, { 10, { 8, 0 } } } },
	{ "CPython perf trampoline (CET)", 15,
	  { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4,
	    0x08, 0xc3 }, 5,
	  { { 0, { 8, 0 } }, { 4, { 8, 0 } }, { 8, { 16, 0 } }, { 10, { 16, 0 } },
	    { 14, { 8, 0 } } } },
};

int tramp_match(const uint8_t code[TRAMP_BEFORE + TRAMP_AFTER], struct tramp_rule *rule)
{
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		const struct tramp_shape *sh = &shapes[s];

		for (unsigned r = 0; r < sh->nrows; r++) {
			const uint8_t *start = code + TRAMP_BEFORE - sh->row[r].at;

			if (memcmp(start, sh->bytes, sh->len) == 0) {
				*rule = sh->row[r].rule;
				return 1;
			}
		}
	}
	return 0;
}
