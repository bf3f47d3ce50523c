/*
 * Consuming by page: a reader takes the oldest published page (zero-copy,
 * the page is the reader's until it is put back), and recovery tools find
 * the pages a dead reader or flusher left in no list.
 *
 * A page is handed out only once its index and its header passed their
 * checks (see "UNTRUSTED POOLS" in ring_internal.h); a published page
 * whose header does not is skipped: given back to the free list and
 * counted (rb->pages_skipped, ringtrace_rb_stats.pages_skipped), and the
 * next one is taken. The writing program's own consumer gets the page in
 * place. A reader that attached a pool made by another process gets a
 * private copy instead, taken under the SIGBUS guard: its reading of the
 * page can then neither fault (the object shrunk) nor see the page change
 * under it (whoever else maps the pool may write it at any time).
 */
#include <stdio.h>
#include <stdlib.h>

#include "ring/page_api.h"
#include "ring/ring_internal.h"

/* A private copy of a page: this header, then the page (64-aligned). */
struct rt_copy {
	struct rt_copy *next, *prev;
	uint32_t index;
	char pad[64 - 2 * sizeof(void *) - sizeof(uint32_t)];
	char page[];
};
_Static_assert(sizeof(struct rt_copy) == 64, "copy header is one cache line");

static struct rt_copy *rt_copy_new(const struct ringtrace_rb *rb)
{
	struct rt_copy *c = aligned_alloc(64, sizeof(struct rt_copy) + rb->g.page_size);
	if (c)
		memset(c, 0, sizeof(*c));
	return c;
}

static void rt_copy_link(struct ringtrace_rb *rb, struct rt_copy *c)
{
	c->prev = NULL;
	c->next = rb->copies;
	if (rb->copies)
		rb->copies->prev = c;
	rb->copies = c;
}

static void rt_copy_unlink(struct ringtrace_rb *rb, struct rt_copy *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		rb->copies = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

void rt_copies_free(struct ringtrace_rb *rb)
{
	struct rt_copy *c = rb->copies;
	while (c) {
		struct rt_copy *n = c->next;
		free(c);
		c = n;
	}
	rb->copies = NULL;
	if (rb->at_copies) {
		for (uint32_t i = 0; i < rb->g.npages; i++)
			free(rb->at_copies[i]);
		free(rb->at_copies);
		rb->at_copies = NULL;
	}
}

/*
 * Copy page idx out of the mapping (inside a guarded pass). The copy is
 * what the caller reads; the live page may change as it likes afterwards.
 */
__attribute__((no_sanitize("thread"))) static void rt_copy_page(const struct ringtrace_rb *rb,
								uint32_t idx, char *dst)
{
	/* (volatile word loads: not an intercepted memcpy, and a writer
	 * scribbling meanwhile is the pool's problem, not a data race of
	 * ours: the copy is checked after) */
	const volatile uint64_t *s = (const volatile uint64_t *)(const void *)rt_page(rb, idx);
	uint64_t *d = (uint64_t *)(void *)dst;
	for (size_t i = 0; i < rb->g.page_size / 8; i++)
		d[i] = s[i];
}

struct rt_get_pass {
	struct rt_copy *copy; /* attached handles: where the page goes */
	const struct ringtrace_page_header *page;
	int err;
};

/*
 * Reports a page whose header failed its checks, once per handle on the
 * writing program's stderr (the damage of one page is not the pool's:
 * the pages after it are still read).
 */
static void rt_page_skipped(struct ringtrace_rb *rb, uint32_t idx)
{
	if (__atomic_add_fetch(&rb->pages_skipped, 1, __ATOMIC_RELAXED) != 1 || !rb->owner)
		return;
	fprintf(stderr,
		"ringtrace: buffer %s: published page %u damaged (%s); skipped, with its events "
		"(later ones are counted, not reported)\n",
		rb->shm_name ? rb->shm_name : "(memfd)", idx, ringtrace_last_error());
}

/* Pop pages until one passes its checks (at most npages are skipped). */
static int rt_get_page_pass(struct ringtrace_rb *rb, void *arg)
{
	struct rt_get_pass *a = arg;
	for (uint32_t n = 0; n <= rb->g.npages; n++) {
		uint32_t idx;
		int r = rt_fifo_pop(rb, &idx, NULL, 0);
		if (r == 0 && n == 0) {
			uint64_t now = rt_ticks(rb->h.is_tsc);
			uint64_t last = RT_LOAD(&rb->shm->last_flush_ticks);
			uint64_t iv = (uint64_t)rb->g.flush_ms * (rb->clock.freq / 1000);
			if (now - last < iv)
				return 0;
			ringtrace_rb_refresh_comm(rb);
			if (ringtrace_rb_flush(rb, rb->g.flush_ms) <= 0)
				return 0;
			r = rt_fifo_pop(rb, &idx, NULL, 0);
		}
		if (r <= 0)
			return a->err = r;
		const struct ringtrace_page_header *h = rt_page(rb, idx);
		if (a->copy) {
			rt_copy_page(rb, idx, a->copy->page);
			h = (const struct ringtrace_page_header *)(const void *)a->copy->page;
		}
		if (ringtrace_page_check(h, rb->g.page_size) < 0) {
			rt_page_skipped(rb, idx);
			if ((r = rt_free_push(rb, idx, 0)) < 0)
				return a->err = r;
			continue;
		}
		rt_account_read(rb, h);
		if (a->copy)
			a->copy->index = idx;
		a->page = h;
		return 1;
	}
	return 0;
}

const struct ringtrace_page_header *ringtrace_rb_get_page(ringtrace_rb *rb)
{
	struct rt_get_pass a = {NULL, NULL, 0};
	if (!rb->owner && !(a.copy = rt_copy_new(rb))) {
		rt_error(RINGTRACE_ENOMEM, "get_page: cannot allocate a page copy");
		return NULL;
	}
	int r = rt_guard_run(rb, rt_get_page_pass, &a);
	if (r <= 0 || !a.page) {
		free(a.copy);
		return NULL;
	}
	if (a.copy)
		rt_copy_link(rb, a.copy);
	return a.page;
}

struct rt_orphan_pass {
	uint8_t *seen;
	uint32_t *out;
	uint32_t max, n;
};

static int rt_orphan_pass(struct ringtrace_rb *rb, void *arg)
{
	struct rt_orphan_pass *a = arg;
	const struct rt_shm *shm = rb->shm;
	uint32_t np = rb->g.npages;
	uint8_t *seen = a->seen;
	/* the free list (bounded: a damaged link cannot loop forever) */
	uint32_t top = (uint32_t)RT_LOAD(&shm->free_head);
	for (uint32_t steps = 0; top != 0 && steps < np; steps++) {
		if (top > np) {
			rt_pool_damaged(rb, 0, "free list: link %u names no page (%u pages)", top,
					np);
			break;
		}
		seen[top - 1] = 1;
		top = RT_LOAD(&rb->free_next[top - 1]);
	}
	/* queued pages: the filled cells between the read and write positions */
	uint64_t mask = rb->g.qcap - 1, deq = RT_LOAD(&shm->deq_pos), enq = RT_LOAD(&shm->enq_pos);
	for (uint64_t pos = deq; pos < enq && pos - deq <= mask; pos++) {
		const struct rt_qcell *c = &rb->qcells[pos & mask];
		uint32_t p = RT_LOAD(&c->page);
		if (RT_LOAD(&c->seq) != pos + 1 || p == RT_NO_PAGE)
			continue;
		if (p < np)
			seen[p] = 1;
		else
			rt_pool_damaged(
				rb, 0, "FIFO cell %llu (position %llu): page index %u >= %u pages",
				(unsigned long long)(pos & mask), (unsigned long long)pos, p, np);
	}
	/* writers' pages, unless a flusher had taken one away (then it is
	 * either queued, seen above, or in nobody's hands) */
	for (uint32_t i = 0; i < rb->g.max_writers; i++) {
		const struct rt_slot *s = &rb->slots[i];
		uint32_t p = RT_LOAD(&s->h.cur_page);
		if (RT_SLOT_STATE(RT_LOAD(&s->h.state)) != RT_SLOT_ACTIVE || p == RT_NO_PAGE ||
		    RT_LOAD(&s->h.steal) == RT_STEAL_TAKEN)
			continue;
		if (p < np)
			seen[p] = 1;
		else
			rt_pool_damaged(rb, 0, "writer slot %u: current page %u >= %u pages", i, p,
					np);
	}
	for (uint32_t i = 0; i < np; i++) {
		if (seen[i])
			continue;
		if (a->n < a->max)
			a->out[a->n] = i;
		a->n++;
	}
	return 0;
}

uint32_t ringtrace_rb_orphan_pages(const ringtrace_rb *rb, uint32_t *out, uint32_t max)
{
	struct rt_orphan_pass a = {calloc(rb->g.npages, 1), out, out ? max : 0, 0};
	if (!a.seen)
		return 0;
	int r = rt_guard_run(rb, rt_orphan_pass, &a);
	free(a.seen);
	return r < 0 ? 0 : a.n;
}

struct rt_at_pass {
	uint32_t index;
	struct rt_copy *copy;
};

static int rt_at_pass(struct ringtrace_rb *rb, void *arg)
{
	struct rt_at_pass *a = arg;
	rt_copy_page(rb, a->index, a->copy->page);
	return 0;
}

const struct ringtrace_page_header *ringtrace_rb_page_at(const ringtrace_rb *crb, uint32_t index)
{
	struct ringtrace_rb *rb = (struct ringtrace_rb *)(uintptr_t)crb; /* its copies */
	if (index >= rb->g.npages)
		return NULL;
	if (rb->owner)
		return rt_page(rb, index);
	/* An attached reader gets a copy, kept until the handle is destroyed. */
	if (!rb->at_copies && !(rb->at_copies = calloc(rb->g.npages, sizeof(*rb->at_copies))))
		return NULL;
	struct rt_at_pass a = {index, rb->at_copies[index]};
	if (!a.copy && !(a.copy = rt_copy_new(rb)))
		return NULL;
	rb->at_copies[index] = a.copy;
	a.copy->index = index;
	if (rt_guard_run(rb, rt_at_pass, &a) < 0)
		return NULL;
	return (const struct ringtrace_page_header *)(const void *)a.copy->page;
}

struct rt_put_pass {
	uint32_t index;
};

static int rt_put_pass(struct ringtrace_rb *rb, void *arg)
{
	return rt_free_push(rb, ((struct rt_put_pass *)arg)->index, 0);
}

/*
 * Give a page back. Its cache lines are first evicted from every cache
 * (clflush): a reader that walked the page holds them, and the writer that
 * reuses the page would otherwise pay a cross-core invalidation for each
 * line it writes, where an evicted line streams in from memory with the
 * prefetchers' help: an aggressive page reader would make every write
 * dearer. The reader, which has time to spare, pays instead. (An attached reader
 * read a copy: nothing of the page is in its caches.)
 *
 * A pointer that is no page this handle handed out is ignored (with
 * ringtrace_last_error() set): it names no page of the pool.
 */
void ringtrace_rb_put_page(ringtrace_rb *rb, const struct ringtrace_page_header *page)
{
	struct rt_put_pass a;
	if (!rb->owner) {
		struct rt_copy *c = rb->copies;
		while (c && (const void *)c->page != (const void *)page)
			c = c->next;
		if (!c) {
			rt_error(RINGTRACE_EINVAL, "put_page: %p is no page this reader took",
				 page);
			return;
		}
		rt_copy_unlink(rb, c);
		a.index = c->index;
		free(c);
		rt_guard_run(rb, rt_put_pass, &a);
		return;
	}
	const char *p = (const char *)page;
	size_t span = (size_t)rb->g.npages * rb->g.page_size;
	if (p < rb->h.pages || (size_t)(p - rb->h.pages) >= span ||
	    (size_t)(p - rb->h.pages) % rb->g.page_size) {
		rt_error(RINGTRACE_EINVAL, "put_page: %p is no page of this buffer", page);
		return;
	}
#if defined(__x86_64__) || defined(__i386__)
	size_t used = (size_t)(RT_LOAD(&page->content_size) / 8);
	if (used > rb->h.page_size)
		used = rb->h.page_size;
	for (size_t off = 0; off < used; off += RT_CACHELINE)
		__builtin_ia32_clflush((const char *)page + off);
#endif
	rt_free_push(rb, rt_page_index(rb, page), 0);
}
