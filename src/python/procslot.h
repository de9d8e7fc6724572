/*
 * The state a reader keeps per interpreter of a process (thread names:
 * pythread.c; asyncio tasks: pyasyncio.c), in a fixed array of slots:
 * keyed by pid, the process's start time (a reused pid is another
 * process, whose state starts afresh) and the interpreter's address; the
 * least recently used slot is taken when none matches.
 */
#ifndef PROCSLOT_H
#define PROCSLOT_H

#include <stddef.h>
#include <stdint.h>

#include "pyversion.h"

/* The first member of each slot. pid 0: empty. */
struct proc_slot {
	int pid;
	uint64_t start_time;
	uint64_t interp;
	uint32_t age;		/* the owner's clock when last used */
};

/*
 * The slot of (t, interp) among n slots of size bytes each, used at clock.
 * *fresh is 0 when it held this state already; 1 when it is taken anew
 * (the old state of a reused pid, or the least recently used slot): the
 * caller then clears what it held and calls proc_slot_take().
 */
static inline struct proc_slot *proc_slot_get(void *slots, size_t n, size_t size,
					      const struct py_target *t, uint64_t interp,
					      uint32_t clock, int *fresh)
{
	struct proc_slot *victim = slots;

	for (size_t i = 0; i < n; i++) {
		struct proc_slot *s = (struct proc_slot *)((uint8_t *)slots + i * size);

		if (s->pid == t->pid && s->interp == interp) {
			if (s->start_time == t->start_time) {
				s->age = clock;
				*fresh = 0;
				return s;
			}
			victim = s;	/* the pid was reused */
			break;
		}
		if (!s->pid || (victim->pid && s->age < victim->age))
			victim = s;
	}
	*fresh = 1;
	return victim;
}

/* Keys a cleared slot to (t, interp). */
static inline void proc_slot_take(struct proc_slot *s, const struct py_target *t,
				  uint64_t interp, uint32_t clock)
{
	s->pid = t->pid;
	s->start_time = t->start_time;
	s->interp = interp;
	s->age = clock;
}

#endif
