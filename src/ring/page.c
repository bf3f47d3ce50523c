/*
 * The page decoder (ringtrace/format.h): the one piece of the ring buffer
 * every reader links, the trace reader included. It trusts nothing in a
 * page: every offset and length is checked against the page's content
 * size before it is used, so the same code reads pages from a live pool,
 * a crashed program's pool and files that may be truncated or damaged.
 */
#include <string.h>

#include "base/base.h"
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
	const char *base = (const char *)c->page;
	/* Events start 8-aligned; c->off is where the previous payload ended. */
	uint32_t off = (c->off + (RINGTRACE_EV_ALIGN - 1)) & ~(RINGTRACE_EV_ALIGN - 1);
	if (off < c->off || off >= c->end)
		return 0;
	if (c->end - off < RINGTRACE_EV_HEADER_SIZE)
		return rt_error(RINGTRACE_ECORRUPT,
				"event header at page offset %u does not fit before content end %u",
				off, c->end);
	uint64_t w;
	memcpy(&w, base + off, 8);
	uint32_t id = RINGTRACE_EV_WORD_ID(w);
	uint32_t len = RINGTRACE_EV_WORD_LEN(w);
	uint32_t hsz = RINGTRACE_EV_HEADER_SIZE;
	uint64_t ts;
	if (id == RINGTRACE_EV_EXTENDED) {
		hsz = RINGTRACE_EV_EXT_HEADER_SIZE;
		if (c->end - off < hsz)
			return rt_error(
				RINGTRACE_ECORRUPT,
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
				"event at page offset %u: %u payload bytes overrun content end %u",
				off, len, c->end);
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
