/*
 * Non-consuming snapshots: a copy of everything in the buffer (published
 * pages and the committed part of every writer's current page) without
 * stopping writers. Pages it does not own are copied under their
 * generation counter (a sequence lock, "PAGE OWNERSHIP" in
 * ring_internal.h) and kept only if nothing rewrote them meanwhile.
 */
#include <stdlib.h>
#include <string.h>

#include "ring/ring_internal.h"

struct ringtrace_snapshot {
	uint32_t npages, cap, lost;
	size_t page_size;
	char *mem;
	int merged;
	struct rt_merge m;
};

/*
 * Copy bytes of a page we do not own. A writer may recycle the page while
 * we copy; the generation check around the copy throws such a copy away,
 * so the race is benign, and it is hidden from ThreadSanitizer on purpose
 * (a sequence lock is a data race by the letter of C11). Volatile word
 * loads keep the compiler from turning the loop into an intercepted
 * memcpy.
 */
__attribute__((no_sanitize("thread"))) static void rt_racy_copy(void *dst, const void *src,
								size_t n)
{
	const volatile uint64_t *s = (const volatile uint64_t *)src;
	uint64_t *d = (uint64_t *)dst;
	for (size_t i = 0; i < n / 8; i++)
		d[i] = s[i];
}

/* Copy page `p` into the next snapshot slot if it stays unchanged. */
static int rt_snap_copy(struct ringtrace_rb *rb, struct ringtrace_snapshot *s, uint32_t p, int live,
			const struct rt_qcell *cell, uint64_t pos)
{
	if (s->npages >= s->cap)
		return 0;
	uint64_t g1 = RT_LOAD_ACQ(&rb->gen[p]);
	if (g1 & 1) {
		s->lost++;
		return 0;
	}
	/*
	 * A queued page must still be queued now that its generation is read:
	 * had it been popped and recycled before, the generation read would be
	 * its new owner's and the copy would take the new owner's header for
	 * a published one.
	 */
	if (cell && (RT_LOAD_ACQ(&cell->seq) != pos + 1 || RT_LOAD(&cell->page) != p))
		return 0;
	struct ringtrace_page_header *src = rt_page(rb, p);
	uint32_t commit = RT_LOAD_ACQ(&src->commit);
	char *dst = s->mem + (size_t)s->npages * s->page_size;
	if (commit < RINGTRACE_PAGE_HEADER_SIZE || commit > rb->h.page_size) {
		s->lost++;
		return 0;
	}
	rt_racy_copy(dst, src, RT_ALIGN8(commit)); /* the page size is a multiple of 8 */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (RT_LOAD(&rb->gen[p]) != g1) {
		s->lost++;
		return 0;
	}
	struct ringtrace_page_header *h = (struct ringtrace_page_header *)dst;
	if (live) {
		h->commit = commit; /* the live value may have moved on while we copied */
		h->packet_size = (uint64_t)rb->h.page_size * 8;
		h->timestamp_end = h->timestamp_begin;
		rt_page_finalize(h, commit, RINGTRACE_PAGE_F_SNAPSHOT);
	}
	if (ringtrace_page_check(h, rb->h.page_size) < 0 || commit <= RINGTRACE_PAGE_HEADER_SIZE)
		return 0;
	s->npages++;
	return 1;
}

static int rt_snap_cmp(const void *a, const void *b)
{
	const struct ringtrace_page_header *x = *(const struct ringtrace_page_header *const *)a;
	const struct ringtrace_page_header *y = *(const struct ringtrace_page_header *const *)b;
	if (x->stream_instance_id != y->stream_instance_id)
		return x->stream_instance_id < y->stream_instance_id ? -1 : 1;
	if (x->packet_seq_num != y->packet_seq_num)
		return x->packet_seq_num < y->packet_seq_num ? -1 : 1;
	/* The longer copy of the same page first. */
	return x->content_size > y->content_size ? -1 : x->content_size < y->content_size;
}

/*
 * The copying pass (under the SIGBUS guard for an attached reader): every
 * loop bounded by the handle's geometry, every index checked.
 */
static int rt_snap_pass(struct ringtrace_rb *rb, void *arg)
{
	struct ringtrace_snapshot *s = arg;
	struct rt_shm *shm = rb->shm;
	/* (a changed control block is damage; the copy goes on: every index
	 * is checked against the handle's own geometry) */
	rt_check_control(rb);
	/* Writers' current pages first, then the FIFO: a page that moves from
	 * one to the other meanwhile is seen at least once. */
	for (uint32_t i = 0; i < rb->g.max_writers; i++) {
		struct rt_slot *sl = &rb->slots[i];
		/* (also a slot being reclaimed: its page may not be in the FIFO
		 * yet when the loop below looks there) */
		uint32_t st = RT_SLOT_STATE(RT_LOAD_ACQ(&sl->h.state));
		if (st != RT_SLOT_ACTIVE && st != RT_SLOT_RECLAIMING)
			continue;
		uint32_t p = RT_LOAD_ACQ(&sl->h.cur_page);
		if (p == RT_NO_PAGE)
			continue;
		if (p < rb->g.npages)
			rt_snap_copy(rb, s, p, 1, NULL, 0);
		else
			rt_pool_damaged(rb, 0, "writer slot %u: current page %u >= %u pages", i, p,
					rb->g.npages);
	}
	/* (at most one lap of cells: the positions come from the pool) */
	uint64_t mask = rb->g.qcap - 1;
	uint64_t head = RT_LOAD_ACQ(&shm->deq_pos), tail = RT_LOAD_ACQ(&shm->enq_pos);
	for (uint64_t pos = head; pos < tail && pos - head <= mask; pos++) {
		struct rt_qcell *c = &rb->qcells[pos & mask];
		if (RT_LOAD_ACQ(&c->seq) != pos + 1)
			continue; /* consumed, or not yet filled */
		uint32_t p = RT_LOAD(&c->page);
		if (p == RT_NO_PAGE)
			continue;
		if (p < rb->g.npages)
			rt_snap_copy(rb, s, p, 0, c, pos);
		else
			rt_pool_damaged(rb, 0,
					"FIFO cell %llu (position %llu): page index %u >= %u pages",
					(unsigned long long)(pos & mask), (unsigned long long)pos,
					p, rb->g.npages);
	}
	return 0;
}

int ringtrace_rb_snapshot(ringtrace_rb *rb, ringtrace_snapshot **out)
{
	if (!rb || !out)
		return rt_error(RINGTRACE_EINVAL, "snapshot: NULL argument");
	*out = NULL;
	struct ringtrace_snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return rt_error(RINGTRACE_ENOMEM, "snapshot: out of memory");
	uint32_t extra = rb->g.max_writers < rb->g.npages ? rb->g.max_writers : rb->g.npages;
	s->cap = rb->g.npages + extra;
	s->page_size = rb->h.page_size;
	s->mem = malloc((size_t)s->cap * s->page_size);
	if (!s->mem) {
		size_t want = (size_t)s->cap * rb->h.page_size;
		free(s);
		return rt_error(RINGTRACE_ENOMEM, "snapshot: cannot allocate %zu bytes", want);
	}
	int err = rt_guard_run(rb, rt_snap_pass, s);
	if (err == 0)
		err = rt_pool_check_damaged(rb, 1);
	if (err < 0) {
		free(s->mem);
		free(s);
		return err;
	}
	/* Drop duplicates (same stream and sequence), keeping the longest. */
	const struct ringtrace_page_header **v = malloc(sizeof(*v) * (s->npages ? s->npages : 1));
	if (!v) {
		free(s->mem);
		free(s);
		return rt_error(RINGTRACE_ENOMEM, "snapshot: out of memory");
	}
	for (uint32_t i = 0; i < s->npages; i++)
		v[i] = (const struct ringtrace_page_header *)(s->mem + (size_t)i * s->page_size);
	qsort(v, s->npages, sizeof(*v), rt_snap_cmp);
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->npages; i++) {
		if (n && v[n - 1]->stream_instance_id == v[i]->stream_instance_id &&
		    v[n - 1]->packet_seq_num == v[i]->packet_seq_num)
			continue;
		v[n++] = v[i];
	}
	err = rt_merge_init(&s->m, n ? n : 1);
	if (err < 0) {
		free(v);
		free(s->mem);
		free(s);
		return err;
	}
	s->m.page_size = (uint32_t)s->page_size;
	for (uint32_t i = 0; i < n; i++)
		rt_merge_add(&s->m, v[i]);
	rt_merge_start(&s->m);
	free(v);
	*out = s;
	return 0;
}

uint32_t ringtrace_snapshot_page_count(const ringtrace_snapshot *s)
{
	return s->m.n;
}

const struct ringtrace_page_header *ringtrace_snapshot_page(const ringtrace_snapshot *s, uint32_t i)
{
	return i < s->m.n ? s->m.src[i].page : NULL;
}

uint32_t ringtrace_snapshot_pages_lost(const ringtrace_snapshot *s)
{
	return s->lost;
}

int ringtrace_snapshot_next(ringtrace_snapshot *s, struct ringtrace_event *ev)
{
	return rt_merge_next(&s->m, ev);
}

void ringtrace_snapshot_free(ringtrace_snapshot *s)
{
	if (!s)
		return;
	rt_merge_free(&s->m);
	free(s->mem);
	free(s);
}
