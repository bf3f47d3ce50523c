/*
 * The page decoder (ringtrace/format.h): the one piece of the ring buffer
 * every reader links, the trace reader included. It trusts nothing in a
 * page: every offset and length is checked against the page's content
 * size before it is used, so the same code reads pages from a live pool,
 * a crashed program's pool and files that may be truncated or damaged.
 */
#include <string.h>

#include "base/base.h"
#include "ring/page_api.h"
#include "ringtrace/format.h"
#include "ringtrace/ring.h"

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
		return rt_error(RINGTRACE_ECORRUPT,
				"page header: packet_size %llu bits at offset 40 is invalid",
				(unsigned long long)h->packet_size);
	if (h->content_size % 8 || h->content_size < RINGTRACE_PAGE_HEADER_SIZE * 8 ||
	    h->content_size > h->packet_size)
		return rt_error(
			RINGTRACE_ECORRUPT,
			"page header: content_size %llu bits at offset 32 is invalid (packet %llu)",
			(unsigned long long)h->content_size, (unsigned long long)h->packet_size);
	if (h->timestamp_end < h->timestamp_begin)
		return rt_error(RINGTRACE_ECORRUPT,
				"page header: timestamp_end at offset 24 precedes timestamp_begin");
	if ((uint64_t)h->events * RINGTRACE_EV_HEADER_SIZE >
	    h->content_size / 8 - RINGTRACE_PAGE_HEADER_SIZE)
		return rt_error(RINGTRACE_ECORRUPT,
				"page header: %u events at offset 72 cannot fit in %llu bytes",
				h->events, (unsigned long long)(h->content_size / 8));
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
	return rt_page_next(c, ev);
}
