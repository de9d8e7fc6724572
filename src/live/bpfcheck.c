/* Code-object checks answered by the BPF program; see bpfcheck.h. */
#include "bpfcheck.h"

#include <string.h>

#include "pipeline.h"
#include "pyversion.h"

size_t bpfcheck_issue(struct bpfcheck *c, struct pipeline *pl, uint64_t now_ns)
{
	const struct py_target *t;
	uint16_t len;
	size_t n;

	if (!c->req || c->n)
		return 0;
	n = pipeline_precheck_queue(pl, &t, c->addr, PY_CHECK_SLOTS, &len);
	if (n < BPFCHECK_MIN || len > PY_CHECK_BYTES)
		return 0;
	for (size_t i = 0; i < n; i++)
		c->slots[i].addr = c->addr[i];
	c->gen++;
	c->n = n;
	c->issued_ns = now_ns;
	/* The slots, then the request; the request's count last: the program
	 * reads nothing until it is set (x86-64 keeps stores in order; the
	 * barrier keeps the compiler from moving them). */
	__atomic_store_n(&c->req->n, 0, __ATOMIC_RELEASE);
	c->req->tgid = (uint32_t)t->pid;
	c->req->len = len;
	c->req->next = 0;
	c->req->gen = c->gen;
	__atomic_store_n(&c->req->n, (uint32_t)n, __ATOMIC_RELEASE);
	return n;
}

int bpfcheck_done(const struct bpfcheck *c)
{
	for (size_t i = 0; i < c->n; i++)
		if (__atomic_load_n(&c->slots[i].gen, __ATOMIC_ACQUIRE) != c->gen)
			return 0;
	return 1;
}

void bpfcheck_collect(struct bpfcheck *c, struct pipeline *pl)
{
	if (!c->n)
		return;
	__atomic_store_n(&c->req->n, 0, __ATOMIC_RELEASE);
	for (size_t i = 0; i < c->n; i++) {
		const struct py_check *s = &c->slots[i];

		/* A slot of an older request, or a read that failed: left
		 * for pipeline_precheck_end (which drops a code object gone). */
		if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != c->gen || s->err || !s->addr)
			continue;
		pipeline_precheck_answer(pl, i, s->bytes, s->done_ns);
	}
	c->n = 0;
}
