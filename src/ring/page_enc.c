/*
 * The page encoder (page_api.h): events appended to a page that one caller
 * owns, then the page closed, in the layout the decoder (page.c) reads.
 */
#include <string.h>

#include "base/base.h"
#include "ring/page_api.h"
#include "ringtrace/format.h"
#include "ringtrace/ring.h"

void rt_page_enc_begin(struct rt_page_enc *e, void *page, uint32_t size)
{
	memset(page, 0, size);
	e->h = page;
	e->size = size;
	e->off = RINGTRACE_PAGE_HEADER_SIZE;
	e->last_ts = 0;
	e->h->magic = RINGTRACE_PAGE_MAGIC;
	e->h->stream_id = 0; /* (the one CTF stream class) */
	e->h->packet_size = (uint64_t)size * 8;
	e->h->content_size = (uint64_t)RINGTRACE_PAGE_HEADER_SIZE * 8;
	e->h->commit = RINGTRACE_PAGE_HEADER_SIZE;
}

int rt_page_enc_add(struct rt_page_enc *e, uint32_t id, uint64_t ts, const void *payload,
		    uint32_t len)
{
	struct ringtrace_page_header *h = e->h;
	uint64_t prev = h->events ? e->last_ts : ts; /* (the first sets timestamp_begin) */
	if (ts < prev)
		return rt_error(RINGTRACE_EINVAL,
				"page encoder: event at %llu ticks before the previous one (%llu)",
				(unsigned long long)ts, (unsigned long long)prev);
	int ext = id > RINGTRACE_EV_MAX_ID || ts - prev > UINT32_MAX;
	uint32_t hsz = ext ? RINGTRACE_EV_EXT_HEADER_SIZE : RINGTRACE_EV_HEADER_SIZE;
	if (len > RINGTRACE_EV_MAX_PAYLOAD ||
	    len > e->size - RINGTRACE_PAGE_HEADER_SIZE - RINGTRACE_EV_EXT_HEADER_SIZE)
		return rt_error(RINGTRACE_EINVAL,
				"page encoder: %u payload bytes do not fit in a page of %u", len,
				e->size);
	uint32_t start = (e->off + (RINGTRACE_EV_ALIGN - 1)) & ~(RINGTRACE_EV_ALIGN - 1);
	if (start > e->size || e->size - start < hsz + len)
		return 0;
	char *p = (char *)h + start;
	uint64_t w = RINGTRACE_EV_WORD(ts, ext ? RINGTRACE_EV_EXTENDED : id, len);
	memcpy(p, &w, 8);
	if (ext) {
		uint64_t idw = id; /* the 32-bit id, then 32 bits of zero */
		memcpy(p + 8, &idw, 8);
		memcpy(p + 16, &ts, 8);
	}
	if (len)
		memcpy(p + hsz, payload, len);
	if (h->events == 0)
		h->timestamp_begin = ts;
	h->events++;
	e->off = start + hsz + len;
	e->last_ts = ts;
	return 1;
}

void rt_page_enc_close(struct rt_page_enc *e)
{
	struct ringtrace_page_header *h = e->h;
	h->content_size = (uint64_t)e->off * 8;
	h->commit = e->off;
	h->timestamp_end = h->events ? e->last_ts : h->timestamp_begin;
}
