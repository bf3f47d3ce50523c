/*
 * src/ring/page_api.h - the page decoder's step, inline: what every reader
 * of pages runs once per event (the ring buffer's iterator and snapshots,
 * the trace reader), without a call. ringtrace_page_next() (page.c) is
 * the same function for the public API. Not installed.
 */
#ifndef RINGTRACE_RING_PAGE_API_H
#define RINGTRACE_RING_PAGE_API_H

#include <stdint.h>
#include <string.h>

#include "base/base.h"
#include "ringtrace/format.h"

/* Decode the next event (ringtrace/format.h, ringtrace_page_next). */
static inline int rt_page_next(struct ringtrace_page_cursor *c, struct ringtrace_event *ev)
{
	const char *base = (const char *)c->page;
	/* Events start 8-aligned; c->off is where the previous payload ended. */
	uint32_t off = (c->off + (RINGTRACE_EV_ALIGN - 1)) & ~(RINGTRACE_EV_ALIGN - 1);
	if (off < c->off || off >= c->end)
		return 0;
	if (c->end - off < RINGTRACE_EV_HEADER_SIZE) {
		(void)rt_error(RINGTRACE_ECORRUPT,
			       "event header at page offset %u does not fit before content end %u",
			       off, c->end);
		return -RINGTRACE_ECORRUPT; /* (a constant: the callers test for 1) */
	}
	uint64_t w;
	memcpy(&w, base + off, 8);
	uint32_t id = RINGTRACE_EV_WORD_ID(w);
	uint32_t len = RINGTRACE_EV_WORD_LEN(w);
	uint32_t hsz = RINGTRACE_EV_HEADER_SIZE;
	uint64_t ts;
	if (id == RINGTRACE_EV_EXTENDED) {
		hsz = RINGTRACE_EV_EXT_HEADER_SIZE;
		if (c->end - off < hsz) {
			(void)rt_error(
				RINGTRACE_ECORRUPT,
				"extended event header at page offset %u overruns content end %u",
				off, c->end);
			return -RINGTRACE_ECORRUPT; /* (a constant: the callers test for 1) */
		}
		uint64_t idw;
		memcpy(&idw, base + off + 8, 8);
		memcpy(&ts, base + off + 16, 8);
		id = (uint32_t)idw;
		if (ts < c->last_ts) {
			(void)rt_error(RINGTRACE_ECORRUPT,
				       "event at page offset %u: timestamp goes backwards", off);
			return -RINGTRACE_ECORRUPT; /* (a constant: the callers test for 1) */
		}
	} else {
		ts = (c->last_ts & ~0xFFFFFFFFull) | RINGTRACE_EV_WORD_TS(w);
		if (ts < c->last_ts)
			ts += 1ull << 32;
	}
	if (c->end - off - hsz < len) {
		(void)rt_error(RINGTRACE_ECORRUPT,
			       "event at page offset %u: %u payload bytes overrun content end %u",
			       off, len, c->end);
		return -RINGTRACE_ECORRUPT; /* (a constant: the callers test for 1) */
	}
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

#endif /* RINGTRACE_RING_PAGE_API_H */
