/*
 * The consuming event iterator: takes every page that is ready (up to a
 * bound), merges their events by timestamp (merge.c) and gives the pages
 * back once read.
 */
#include <stdlib.h>
#include <string.h>

#include "ring/ring_internal.h"

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
	uint32_t cap = rb->g.npages / 2;
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
	r->m.page_size = rb->g.page_size;
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
			if (ringtrace_page_check(p, r->rb->h.page_size) < 0) {
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
