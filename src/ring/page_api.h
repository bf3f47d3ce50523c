/*
 * src/ring/page_api.h - the page decoder's step, inline: what every reader
 * of pages runs once per event (the ring buffer's iterator and snapshots,
 * the trace reader), without a call. ringtrace_page_next() (page.c) is
 * the same function for the public API. And the page encoder (page_enc.c)
 * for producers of whole pages. Not installed.
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

/*
 * The page encoder: whole pages made by a producer that is not one of the
 * ring's writers (the kernel events' conversion, src/kernel; tests), in
 * the format of ringtrace/format.h, with its named constants only. The
 * ring's writers encode in place, inline (ringtrace/static/ring.h): a
 * page there is filled by its thread and published by the ring; here it
 * is filled and closed by one caller that owns it.
 *
 *   rt_page_enc_begin   a cleared page: magic, stream class, packet size,
 *                       no content. The caller then sets the stream's
 *                       fields of the header (stream_instance_id,
 *                       packet_seq_num, events_discarded, events_before,
 *                       tid, writer, cpu, flags, comm) when it knows them.
 *   rt_page_enc_add     one event, its header compact where the format
 *                       allows (id up to RINGTRACE_EV_MAX_ID, less than
 *                       2^32 ticks after the previous event), extended
 *                       otherwise; timestamp_begin is the first event's.
 *   rt_page_enc_close   the fields final at publication (content_size,
 *                       commit, timestamp_end): a page that
 *                       ringtrace_page_check accepts.
 */
struct rt_page_enc {
	struct ringtrace_page_header *h; /* the page, `size` bytes */
	uint32_t size;
	uint32_t off;     /* the end of the last event's payload */
	uint64_t last_ts; /* the last event's timestamp */
};

/* size: a multiple of RINGTRACE_EV_ALIGN that holds at least the header
 * and one extended event header (callers pass a constant). */
RT_HIDDEN void rt_page_enc_begin(struct rt_page_enc *e, void *page, uint32_t size);
/*
 * 1 appended; 0 it does not fit in what is left of the page (close it and
 * begin another); -RINGTRACE_EINVAL (said) it can never be encoded here:
 * a payload over RINGTRACE_EV_MAX_PAYLOAD or over what an empty page
 * holds, or a timestamp before the page's previous event.
 */
RT_HIDDEN int rt_page_enc_add(struct rt_page_enc *e, uint32_t id, uint64_t ts, const void *payload,
			      uint32_t len);
RT_HIDDEN void rt_page_enc_close(struct rt_page_enc *e);

#endif /* RINGTRACE_RING_PAGE_API_H */
