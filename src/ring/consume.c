/*
 * Consuming by page: a reader takes the oldest published page (zero-copy,
 * the page is the reader's until it is put back), and recovery tools find
 * the pages a dead reader or flusher left in no list.
 */
#include <stdlib.h>

#include "ring/ring_internal.h"

const struct ringtrace_page_header *ringtrace_rb_get_page(ringtrace_rb *rb)
{
	uint32_t idx;
	if (!rt_fifo_pop(rb, &idx)) {
		uint64_t now = rt_ticks(rb->h.is_tsc);
		uint64_t last = RT_LOAD(&rb->shm->last_flush_ticks);
		uint64_t iv = (uint64_t)rb->shm->flush_ms * (rb->clock.freq / 1000);
		if (now - last < iv)
			return NULL;
		ringtrace_rb_refresh_comm(rb);
		if (ringtrace_rb_flush(rb, rb->shm->flush_ms) <= 0 || !rt_fifo_pop(rb, &idx))
			return NULL;
	}
	struct ringtrace_page_header *h = rt_page(rb, idx);
	rt_account_read(rb, h);
	return h;
}

uint32_t ringtrace_rb_orphan_pages(const ringtrace_rb *rb, uint32_t *out, uint32_t max)
{
	const struct rt_shm *shm = rb->shm;
	uint32_t np = shm->npages, n = 0;
	uint8_t *seen = calloc(np, 1);
	if (!seen)
		return 0;
	/* the free list (bounded: a damaged link cannot loop forever) */
	uint32_t top = (uint32_t)RT_LOAD(&shm->free_head);
	for (uint32_t steps = 0; top != 0 && top <= np && steps < np; steps++) {
		seen[top - 1] = 1;
		top = RT_LOAD(&rb->free_next[top - 1]);
	}
	/* queued pages: the filled cells between the read and write positions */
	uint64_t mask = shm->qcap - 1, deq = RT_LOAD(&shm->deq_pos), enq = RT_LOAD(&shm->enq_pos);
	for (uint64_t pos = deq; pos < enq && pos - deq <= mask; pos++) {
		const struct rt_qcell *c = &rb->qcells[pos & mask];
		if (RT_LOAD(&c->seq) == pos + 1 && RT_LOAD(&c->page) < np)
			seen[RT_LOAD(&c->page)] = 1;
	}
	/* writers' pages, unless a flusher had taken one away (then it is
	 * either queued, seen above, or in nobody's hands) */
	for (uint32_t i = 0; i < shm->max_writers; i++) {
		const struct rt_slot *s = &rb->slots[i];
		uint32_t p = RT_LOAD(&s->h.cur_page);
		if (RT_SLOT_STATE(RT_LOAD(&s->h.state)) == RT_SLOT_ACTIVE && p < np &&
		    RT_LOAD(&s->h.steal) != RT_STEAL_TAKEN)
			seen[p] = 1;
	}
	for (uint32_t i = 0; i < np; i++) {
		if (seen[i])
			continue;
		if (n < max)
			out[n] = i;
		n++;
	}
	free(seen);
	return n;
}

const struct ringtrace_page_header *ringtrace_rb_page_at(const ringtrace_rb *rb, uint32_t index)
{
	return index < rb->shm->npages ? rt_page(rb, index) : NULL;
}

/*
 * Give a page back. Its cache lines are first evicted from every cache
 * (clflush): a reader that walked the page holds them, and the writer that
 * reuses the page would otherwise pay a cross-core invalidation for each
 * line it writes, where an evicted line streams in from memory with the
 * prefetchers' help. Measured with ringtrace-bench rb: an aggressive page
 * reader made each write 1.5x dearer without this, about 1.0x with it.
 * The reader, which has time to spare, pays instead.
 */
void ringtrace_rb_put_page(ringtrace_rb *rb, const struct ringtrace_page_header *page)
{
#if defined(__x86_64__) || defined(__i386__)
	size_t used = (size_t)(page->content_size / 8);
	if (used > rb->h.page_size)
		used = rb->h.page_size;
	for (size_t off = 0; off < used; off += RT_CACHELINE)
		__builtin_ia32_clflush((const char *)page + off);
#endif
	rt_free_push(rb, rt_page_index(rb, page));
}
