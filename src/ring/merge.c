/*
 * Merging the events of several pages by timestamp, for the consuming
 * event iterator (reader.c) and snapshots (snapshot.c), with the merge
 * heap of src/base/heap.h. Ties are broken by stream id, then page
 * sequence, then offset, so two runs over the same data give the same
 * order and one stream's events never swap.
 *
 * Pages of the same stream are chained in order (a stream's pages are
 * consecutive in time), and only the first of each chain is in the heap:
 * it walks its chain page by page. With one writer the heap has one entry
 * and costs nothing per event.
 */
#include <stdlib.h>
#include <string.h>

#include "base/heap.h"
#include "ring/page_api.h"
#include "ring/ring_internal.h"

int rt_merge_init(struct rt_merge *m, uint32_t cap)
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

void rt_merge_free(struct rt_merge *m)
{
	free(m->src);
	free(m->heap);
}

static inline int rt_src_less(const void *ctx, uint32_t ia, uint32_t ib)
{
	const struct rt_src *a = &((const struct rt_merge *)ctx)->src[ia];
	const struct rt_src *b = &((const struct rt_merge *)ctx)->src[ib];
	if (a->ev.ts != b->ev.ts)
		return a->ev.ts < b->ev.ts;
	if (a->ev.stream != b->ev.stream)
		return a->ev.stream < b->ev.stream;
	if (a->cur.page->packet_seq_num != b->cur.page->packet_seq_num)
		return a->cur.page->packet_seq_num < b->cur.page->packet_seq_num;
	return a->ev.offset < b->ev.offset;
}

/* Add a page (checked; its content_size bounds the decoding). Call
 * rt_merge_start() once all pages of a batch are added. */
void rt_merge_add(struct rt_merge *m, const struct ringtrace_page_header *page)
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

/*
 * A cursor on a page, its end clamped to the page size: the page was
 * checked when it was added, but a page in shared memory may be written
 * again after that (by a wild pointer of the traced program), and the
 * decoder must not follow a content size that grew beyond the page.
 */
static void rt_merge_cursor(const struct rt_merge *m, struct ringtrace_page_cursor *c,
			    const struct ringtrace_page_header *page)
{
	ringtrace_page_cursor_init(c, page);
	if (m->page_size && c->end > m->page_size)
		c->end = m->page_size;
}

/* Decode the next event of a stream, moving along its chain of pages. */
static int rt_src_advance(struct rt_merge *m, struct rt_src *s)
{
	for (;;) {
		int r = rt_page_next(&s->cur, &s->ev);
		if (r == 1)
			return 1;
		if (r < 0)
			m->corrupt++;
		if (s->chain < 0)
			return 0;
		struct rt_src *n = &m->src[s->chain];
		s->chain = n->next;
		rt_merge_cursor(m, &s->cur, n->page);
	}
}

void rt_merge_start(struct rt_merge *m)
{
	m->nheap = 0;
	for (uint32_t i = 0; i < m->n; i++) {
		struct rt_src *s = &m->src[i];
		if (!s->head)
			continue;
		s->chain = s->next;
		rt_merge_cursor(m, &s->cur, s->page);
		if (rt_src_advance(m, s))
			rt_heap_push(m->heap, &m->nheap, i, rt_src_less, m);
	}
}

int rt_merge_next(struct rt_merge *m, struct ringtrace_event *ev)
{
	if (m->nheap == 0)
		return 0;
	struct rt_src *s = &m->src[m->heap[0]];
	*ev = s->ev;
	rt_heap_fix_top(m->heap, &m->nheap, rt_src_advance(m, s), rt_src_less, m);
	return 1;
}
