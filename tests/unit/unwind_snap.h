/*
 * A process's own register and stack snapshot, taken the way the BPF
 * program takes one, for tests/unit/test_unwind.c. snap_capture() (assembly in
 * test_unwind.c) records the state its caller resumes with: rip = return
 * address, rsp = just above it, callee-saved registers as they are, and
 * copies the stack from that rsp up to stack_end, at most max bytes.
 */
#ifndef UNWIND_SNAP_H
#define UNWIND_SNAP_H

#include <stddef.h>
#include <stdint.h>

#define SNAP_NREGS	17		/* enum unwind_reg order */
#define SNAP_STACK	(16u << 10)	/* the BPF side's default copy */

struct snap {
	volatile uint64_t ready;	/* set last, by snap_capture */
	uint64_t regs[SNAP_NREGS];
	uint64_t stack_len;
	uint8_t stack[SNAP_STACK];
};

/* The assembly hard-codes these offsets. */
_Static_assert(offsetof(struct snap, regs) == 8, "snap layout");
_Static_assert(offsetof(struct snap, stack_len) == 144, "snap layout");
_Static_assert(offsetof(struct snap, stack) == 152, "snap layout");

void snap_capture(struct snap *s, uint64_t stack_end, uint64_t max);

/* The chain in tests/unit/unwind_nocfi.c, built without .eh_frame: only its
 * .debug_frame describes these frames. Never returns. */
int nocfi_a(struct snap *s, uint64_t stack_end);

#endif
