/*
 * Reading a ring buffer: the validating page decoder, the consuming event
 * iterator, and non-consuming snapshots.
 *
 * The decoder trusts nothing in a page: every offset and length is checked
 * against the page's content size before it is used, so the same code can
 * later read pages from files that may be truncated or damaged.
 *
 * Both the iterator and the snapshot merge events of several pages by
 * timestamp with a binary heap of page cursors. Ties are broken by stream
 * id, then page sequence, then offset, so two runs over the same data give
 * the same order and one stream's events never swap.
 */
#include <stdlib.h>
#include <string.h>

#include "ring/ring_internal.h"

/* ---- the page decoder ---------------------------------------------------- */

int ringtrace_page_check(const struct ringtrace_page_header *h, size_t page_size)
{
	if (!h)
		return rt_error(RINGTRACE_EINVAL, "page_check: NULL page");
	if (h->magic != RINGTRACE_PAGE_MAGIC)
		return rt_error(RINGTRACE_ECORRUPT, "page header: bad magic 0x%08x at offset 0",
				h->magic);
	if (page_size && h->packet_size != (uint64_t)page_size * 8)
		return rt_error(RINGTRACE_ECORRUPT,
				"page header: packet_size %llu bits at offset 40, expected %llu",
				(unsigned long long)h->packet_size,
				(unsigned long long)page_size * 8);
	if (h->packet_size % 64 || h->packet_size < RINGTRACE_PAGE_HEADER_SIZE * 8 ||
	    h->packet_size > (uint64_t)RINGTRACE_RB_MAX_PAGE_SIZE * 8)
		return rt_error(RINGTRACE_ECORRUPT, "page header: packet_size %llu bits at offset 40 is invalid",
				(unsigned long long)h->packet_size);
	if (h->content_size % 8 || h->content_size < RINGTRACE_PAGE_HEADER_SIZE * 8 ||
	    h->content_size > h->packet_size)
		return rt_error(RINGTRACE_ECORRUPT,
				"page header: content_size %llu bits at offset 32 is invalid (packet %llu)",
				(unsigned long long)h->content_size,
				(unsigned long long)h->packet_size);
	if (h->timestamp_end < h->timestamp_begin)
		return rt_error(RINGTRACE_ECORRUPT,
				"page header: timestamp_end at offset 24 precedes timestamp_begin");
	if ((uint64_t)h->events * RINGTRACE_EV_HEADER_SIZE >
	    h->content_size / 8 - RINGTRACE_PAGE_HEADER_SIZE)
		return rt_error(RINGTRACE_ECORRUPT,
				"page header: %u events at offset 72 cannot fit in %llu bytes", h->events,
				(unsigned long long)(h->content_size / 8));
	return 0;
}

void ringtrace_page_cursor_init(struct ringtrace_page_cursor *c,
				const struct ringtrace_page_header *page)
{
	c->page = page;
	c->off = RINGTRACE_PAGE_HEADER_SIZE;
	c->end = (uint32_t)(page->content_size / 8);
	c->last_ts = page->timestamp_begin;
	c->index = 0;
}

int ringtrace_page_next(struct ringtrace_page_cursor *c, struct ringtrace_event *ev)
{
	const char *base = (const char *)c->page;
	/* Events start 8-aligned; c->off is where the previous payload ended. */
	uint32_t off = (c->off + (RINGTRACE_EV_ALIGN - 1)) & ~(RINGTRACE_EV_ALIGN - 1);
	if (off < c->off || off >= c->end)
		return 0;
	if (c->end - off < RINGTRACE_EV_HEADER_SIZE)
		return rt_error(RINGTRACE_ECORRUPT,
				"event header at page offset %u does not fit before content end %u", off,
				c->end);
	uint64_t w;
	memcpy(&w, base + off, 8);
	uint32_t id = RINGTRACE_EV_WORD_ID(w);
	uint32_t len = RINGTRACE_EV_WORD_LEN(w);
	uint32_t hsz = RINGTRACE_EV_HEADER_SIZE;
	uint64_t ts;
	if (id == RINGTRACE_EV_EXTENDED) {
		hsz = RINGTRACE_EV_EXT_HEADER_SIZE;
		if (c->end - off < hsz)
			return rt_error(RINGTRACE_ECORRUPT,
					"extended event header at page offset %u overruns content end %u",
					off, c->end);
		uint64_t idw;
		memcpy(&idw, base + off + 8, 8);
		memcpy(&ts, base + off + 16, 8);
		id = (uint32_t)idw;
		if (ts < c->last_ts)
			return rt_error(RINGTRACE_ECORRUPT,
					"event at page offset %u: timestamp goes backwards", off);
	} else {
		ts = (c->last_ts & ~0xFFFFFFFFull) | RINGTRACE_EV_WORD_TS(w);
		if (ts < c->last_ts)
			ts += 1ull << 32;
	}
	if (c->end - off - hsz < len)
		return rt_error(RINGTRACE_ECORRUPT,
				"event at page offset %u: %u payload bytes overrun content end %u", off,
				len, c->end);
	ev->ts = ts;
	ev->id = id;
	ev->len = len;
	ev->data = base + off + hsz;
	ev->stream = c->page->stream_instance_id;
	ev->tid = c->page->tid;
	ev->offset = off;
	c->off = off + hsz + len;
	c->last_ts = ts;
	c->index++;
	return 1;
}

/* ---- merging pages by timestamp ------------------------------------------ */

/*
 * One page taken into a merge. Pages of the same stream are chained in
 * order (a stream's pages are consecutive in time), and only the first of
 * each chain is in the heap: it walks its chain page by page. With one
 * writer the heap has one entry and costs nothing per event.
 */
struct rt_src {
	struct ringtrace_page_cursor cur; /* heads: the cursor of the stream */
	struct ringtrace_event ev;        /* heads: the stream's next event */
	const struct ringtrace_page_header *page;
	int32_t next;                     /* next page of the same stream, or -1 */
	int32_t chain;                    /* heads: next page to move to, or -1 */
	int32_t tail;                     /* heads: last page of the chain */
	int32_t head;                     /* 1 for the first page of its stream */
};

struct rt_merge {
	struct rt_src *src;
	uint32_t *heap;
	uint32_t n, cap, nheap;
	uint32_t corrupt;   /* pages whose decoding stopped at damage */
};

static int rt_merge_init(struct rt_merge *m, uint32_t cap)
{
	memset(m, 0, sizeof(*m));
	m->src = calloc(cap ? cap : 1, sizeof(*m->src));
	m->heap = calloc(cap ? cap : 1, sizeof(*m->heap));
	m->cap = cap;
	if (!m->src || !m->heap) {
		free(m->src);
		free(m->heap);
		return rt_error(RINGTRACE_ENOMEM, "reader: out of memory");
	}
	return 0;
}

static void rt_merge_free(struct rt_merge *m)
{
	free(m->src);
	free(m->heap);
}

static int rt_src_less(const struct rt_src *a, const struct rt_src *b)
{
	if (a->ev.ts != b->ev.ts)
		return a->ev.ts < b->ev.ts;
	if (a->ev.stream != b->ev.stream)
		return a->ev.stream < b->ev.stream;
	if (a->cur.page->packet_seq_num != b->cur.page->packet_seq_num)
		return a->cur.page->packet_seq_num < b->cur.page->packet_seq_num;
	return a->ev.offset < b->ev.offset;
}

static void rt_heap_down(struct rt_merge *m, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, min = i;
		if (l < m->nheap && rt_src_less(&m->src[m->heap[l]], &m->src[m->heap[min]]))
			min = l;
		if (r < m->nheap && rt_src_less(&m->src[m->heap[r]], &m->src[m->heap[min]]))
			min = r;
		if (min == i)
			return;
		uint32_t t = m->heap[i];
		m->heap[i] = m->heap[min];
		m->heap[min] = t;
		i = min;
	}
}

static void rt_heap_up(struct rt_merge *m, uint32_t i)
{
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!rt_src_less(&m->src[m->heap[i]], &m->src[m->heap[p]]))
			return;
		uint32_t t = m->heap[i];
		m->heap[i] = m->heap[p];
		m->heap[p] = t;
		i = p;
	}
}

/* Add a page (checked; its content_size bounds the decoding). Call
 * rt_merge_start() once all pages of a batch are added. */
static void rt_merge_add(struct rt_merge *m, const struct ringtrace_page_header *page)
{
	int32_t idx = (int32_t)m->n++;
	struct rt_src *s = &m->src[idx];
	memset(s, 0, sizeof(*s));
	s->page = page;
	s->next = -1;
	s->chain = -1;
	for (uint32_t i = 0; i < (uint32_t)idx; i++) {
		struct rt_src *h = &m->src[i];
		if (h->head && h->page->stream_instance_id == page->stream_instance_id) {
			m->src[h->tail].next = idx;
			h->tail = idx;
			return;
		}
	}
	s->head = 1;
	s->tail = idx;
}

/* Decode the next event of a stream, moving along its chain of pages. */
static int rt_src_advance(struct rt_merge *m, struct rt_src *s)
{
	for (;;) {
		int r = ringtrace_page_next(&s->cur, &s->ev);
		if (r == 1)
			return 1;
		if (r < 0)
			m->corrupt++;
		if (s->chain < 0)
			return 0;
		struct rt_src *n = &m->src[s->chain];
		s->chain = n->next;
		ringtrace_page_cursor_init(&s->cur, n->page);
	}
}

static void rt_merge_start(struct rt_merge *m)
{
	m->nheap = 0;
	for (uint32_t i = 0; i < m->n; i++) {
		struct rt_src *s = &m->src[i];
		if (!s->head)
			continue;
		s->chain = s->next;
		ringtrace_page_cursor_init(&s->cur, s->page);
		if (rt_src_advance(m, s)) {
			m->heap[m->nheap++] = i;
			rt_heap_up(m, m->nheap - 1);
		}
	}
}

static int rt_merge_next(struct rt_merge *m, struct ringtrace_event *ev)
{
	if (m->nheap == 0)
		return 0;
	struct rt_src *s = &m->src[m->heap[0]];
	*ev = s->ev;
	if (!rt_src_advance(m, s))
		m->heap[0] = m->heap[--m->nheap];
	if (m->nheap > 1)
		rt_heap_down(m, 0);
	return 1;
}

/* ---- the consuming event iterator --------------------------------------- */

struct ringtrace_rb_reader {
	ringtrace_rb *rb;
	struct rt_merge m;
	const struct ringtrace_page_header **held;
};

int ringtrace_rb_reader_open(ringtrace_rb *rb, ringtrace_rb_reader **out)
{
	if (!rb || !out)
		return rt_error(RINGTRACE_EINVAL, "reader_open: NULL argument");
	/* Hold at most half the pool so writers keep pages to write into. */
	uint32_t cap = rb->shm->npages / 2;
	if (cap > 64)
		cap = 64;
	if (cap < 1)
		cap = 1;
	struct ringtrace_rb_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return rt_error(RINGTRACE_ENOMEM, "reader_open: out of memory");
	int err = rt_merge_init(&r->m, cap);
	r->held = calloc(cap, sizeof(*r->held));
	if (err < 0 || !r->held) {
		if (err == 0)
			rt_merge_free(&r->m);
		free(r->held);
		free(r);
		return rt_error(RINGTRACE_ENOMEM, "reader_open: out of memory");
	}
	r->rb = rb;
	*out = r;
	return 0;
}

static void rt_reader_release(ringtrace_rb_reader *r)
{
	for (uint32_t i = 0; i < r->m.n; i++)
		ringtrace_rb_put_page(r->rb, r->held[i]);
	r->m.n = 0;
	r->m.nheap = 0;
}

int ringtrace_rb_reader_next(ringtrace_rb_reader *r, struct ringtrace_event *ev)
{
	for (;;) {
		if (rt_merge_next(&r->m, ev))
			return 1;
		rt_reader_release(r);
		const struct ringtrace_page_header *p;
		while (r->m.n < r->m.cap && (p = ringtrace_rb_get_page(r->rb)) != NULL) {
			r->held[r->m.n] = p;
			if (ringtrace_page_check(p, r->rb->page_size) < 0) {
				/* Never decode a damaged header; the page is still given back. */
				r->m.corrupt++;
				memset(&r->m.src[r->m.n], 0, sizeof(r->m.src[0]));
				r->m.src[r->m.n++].page = p;
				continue;
			}
			rt_merge_add(&r->m, p);
		}
		if (r->m.n == 0)
			return 0;
		rt_merge_start(&r->m);
	}
}

void ringtrace_rb_reader_close(ringtrace_rb_reader *r)
{
	if (!r)
		return;
	rt_reader_release(r);
	rt_merge_free(&r->m);
	free(r->held);
	free(r);
}

/* ---- snapshots ------------------------------------------------------------ */

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
static int rt_snap_copy(struct ringtrace_rb *rb, struct ringtrace_snapshot *s, uint32_t p,
			int live, const struct rt_qcell *cell, uint64_t pos)
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
	if (commit < RINGTRACE_PAGE_HEADER_SIZE || commit > rb->page_size) {
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
		h->packet_size = (uint64_t)rb->page_size * 8;
		h->timestamp_end = h->timestamp_begin;
		rt_page_finalize(rb, h, commit, RINGTRACE_PAGE_F_SNAPSHOT);
	}
	if (ringtrace_page_check(h, rb->page_size) < 0 || commit <= RINGTRACE_PAGE_HEADER_SIZE)
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

int ringtrace_rb_snapshot(ringtrace_rb *rb, ringtrace_snapshot **out)
{
	if (!rb || !out)
		return rt_error(RINGTRACE_EINVAL, "snapshot: NULL argument");
	*out = NULL;
	struct rt_shm *shm = rb->shm;
	struct ringtrace_snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return rt_error(RINGTRACE_ENOMEM, "snapshot: out of memory");
	uint32_t extra = shm->max_writers < shm->npages ? shm->max_writers : shm->npages;
	s->cap = shm->npages + extra;
	s->page_size = rb->page_size;
	s->mem = malloc((size_t)s->cap * s->page_size);
	if (!s->mem) {
		size_t want = (size_t)s->cap * rb->page_size;
		free(s);
		return rt_error(RINGTRACE_ENOMEM, "snapshot: cannot allocate %zu bytes", want);
	}
	/* Writers' current pages first, then the FIFO: a page that moves from
	 * one to the other meanwhile is seen at least once. */
	for (uint32_t i = 0; i < shm->max_writers; i++) {
		struct rt_slot *sl = &rb->slots[i];
		/* (also a slot being reclaimed: its page may not be in the FIFO
		 * yet when the loop below looks there) */
		uint32_t st = RT_SLOT_STATE(RT_LOAD_ACQ(&sl->state));
		if (st != RT_SLOT_ACTIVE && st != RT_SLOT_RECLAIMING)
			continue;
		uint32_t p = RT_LOAD_ACQ(&sl->cur_page);
		if (p != RT_NO_PAGE && p < shm->npages)
			rt_snap_copy(rb, s, p, 1, NULL, 0);
	}
	uint64_t mask = shm->qcap - 1;
	uint64_t head = RT_LOAD_ACQ(&shm->deq_pos), tail = RT_LOAD_ACQ(&shm->enq_pos);
	for (uint64_t pos = head; pos < tail; pos++) {
		struct rt_qcell *c = &rb->qcells[pos & mask];
		if (RT_LOAD_ACQ(&c->seq) != pos + 1)
			continue; /* consumed, or not yet filled */
		uint32_t p = RT_LOAD(&c->page);
		if (p < shm->npages)
			rt_snap_copy(rb, s, p, 0, c, pos);
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
	int err = rt_merge_init(&s->m, n ? n : 1);
	if (err < 0) {
		free(v);
		free(s->mem);
		free(s);
		return err;
	}
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
