/*
 * A call chain described only by .debug_frame: built with
 * -fno-asynchronous-unwind-tables -fno-unwind-tables -g (see Makefile.am),
 * so the linker's .eh_frame_hdr has no entry for these functions and the
 * unwinder must use .debug_frame. noipa keeps each call a real call.
 */
#include "unwind_snap.h"

#include <unistd.h>

static volatile int nocfi_stop;

__attribute__((noipa)) static int nocfi_c(struct snap *s, uint64_t stack_end)
{
	snap_capture(s, stack_end, SNAP_STACK);
	while (!nocfi_stop)
		pause();
	return 1;
}

__attribute__((noipa)) static int nocfi_b(struct snap *s, uint64_t stack_end)
{
	return nocfi_c(s, stack_end) + 1;
}

__attribute__((noipa)) int nocfi_a(struct snap *s, uint64_t stack_end)
{
	return nocfi_b(s, stack_end) + 1;
}
