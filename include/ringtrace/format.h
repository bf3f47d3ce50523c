/*
 * ringtrace/format.h - the byte layout of a ring-buffer page and of the
 * events in it.
 *
 * A page is the unit of everything: writers fill it, readers consume it
 * whole, and a later stage writes it unchanged to disk as one packet of a
 * Common Trace Format 1.8 stream. The header therefore carries exactly what
 * a CTF packet header and packet context need, at fixed offsets, in the
 * machine's byte order (little endian on every supported target).
 *
 * docs/format.md describes the same layout in prose, with the CTF mapping.
 * The page decoder at the end of this header (implemented in
 * src/ring/page.c) is what every reader uses: the ring buffer's own
 * iterators, the recovery tool and the trace reader (ringtrace/trace.h).
 * It trusts nothing in a page: every offset and length is checked against
 * the page's content size before use.
 *
 * This header compiles as C and as C++.
 */
#ifndef RINGTRACE_FORMAT_H
#define RINGTRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CTF 1.8 packet magic (the first 32 bits of every packet). */
#define RINGTRACE_PAGE_MAGIC 0xC1FC1FC1u

/* Layout version of the page header and event header. */
#define RINGTRACE_FORMAT_VERSION 1u

/*
 * The page header: 112 bytes at the start of every page.
 *
 * Fields marked (publish) are final once the page is published (handed to
 * readers); while a page is being written only magic, stream_id,
 * stream_instance_id, timestamp_begin, packet_size, packet_seq_num,
 * events_discarded, events_before, tid, writer, cpu and comm are valid, and `commit`
 * grows as events are committed.
 */
struct ringtrace_page_header {
	uint32_t magic;              /*  0: RINGTRACE_PAGE_MAGIC */
	uint32_t stream_id;          /*  4: CTF stream class id (always 0) */
	uint64_t stream_instance_id; /*  8: unique id of the writer stream */
	uint64_t timestamp_begin;    /* 16: ticks of the first event (full 64 bits) */
	uint64_t timestamp_end;      /* 24: (publish) ticks >= the last event's */
	uint64_t content_size;       /* 32: (publish) bits used, header included */
	uint64_t packet_size;        /* 40: page size in bits */
	uint64_t packet_seq_num;     /* 48: per-stream page sequence, from 0 */
	uint64_t events_discarded;   /* 56: stream's dropped events before this page (cumulative) */
	uint64_t events_before;      /* 64: stream's committed events before this page */
	uint32_t events;             /* 72: (publish) number of events in the page */
	uint32_t tid;                /* 76: thread id of the writer */
	uint32_t commit;             /* 80: bytes committed, header included (live) */
	uint32_t writer;             /* 84: writer slot index in the pool */
	uint32_t cpu;                /* 88: cpu at page start (informational) */
	uint32_t flags;              /* 92: RINGTRACE_PAGE_F_* */
	char comm[16];               /* 96: thread name when the page began, NUL-padded */
};

#define RINGTRACE_PAGE_HEADER_SIZE 112u

/* The page was taken from an idle writer by a reader flush. */
#define RINGTRACE_PAGE_F_FLUSHED 0x1u
/* The page is the writer's last (its thread exited or detached). */
#define RINGTRACE_PAGE_F_LAST 0x2u
/* The page was copied out of a live writer by a snapshot. */
#define RINGTRACE_PAGE_F_SNAPSHOT 0x4u

/*
 * Events of one stream lost between two of its pages as a reader saw them,
 * `prev` then `cur` (same stream_instance_id): dropped by the writer
 * (discard mode, nesting, oversize) plus lost to recycled pages (overwrite
 * mode). With prev NULL: everything the stream wrote before `cur` (its
 * dropped and its committed events), none of which this reader saw.
 */
static inline uint64_t ringtrace_page_lost_before(const struct ringtrace_page_header *prev,
						  const struct ringtrace_page_header *cur)
{
	if (!prev)
		return cur->events_discarded + cur->events_before;
	return (cur->events_discarded - prev->events_discarded) +
	       (cur->events_before - prev->events_before - prev->events);
}

/*
 * Event header. Every event starts at the first 8-byte boundary after the
 * previous event's payload (unpadded end; see docs/format.md).
 *
 * Compact form (8 bytes), one little-endian 64-bit word:
 *   bits  0..31  timestamp low 32 bits (ticks)
 *   bits 32..47  event id, 0 .. 65534
 *   bits 48..63  payload length in bytes
 * Extended form (24 bytes): the same word with id == RINGTRACE_EV_EXTENDED,
 * then a 32-bit event id, 32 bits of zero, and the full 64-bit timestamp.
 *
 * A reader reconstructs the full timestamp of a compact event from the
 * previous one (the page header's timestamp_begin for the first): take the
 * previous value, replace its low 32 bits, and add 2^32 if that made it go
 * backwards. The writer uses the extended form whenever the gap since its
 * previous event is 2^32 ticks or more, so this is exact.
 */
#define RINGTRACE_EV_EXTENDED 0xFFFFu
#define RINGTRACE_EV_MAX_ID 0xFFFEu
#define RINGTRACE_EV_HEADER_SIZE 8u
#define RINGTRACE_EV_EXT_HEADER_SIZE 24u
#define RINGTRACE_EV_MAX_PAYLOAD 0xFFFFu
#define RINGTRACE_EV_ALIGN 8u

#define RINGTRACE_EV_WORD(ts, id, len)                                 \
	((uint64_t)(uint32_t)(ts) | ((uint64_t)(uint16_t)(id) << 32) | \
	 ((uint64_t)(uint16_t)(len) << 48))
#define RINGTRACE_EV_WORD_TS(w) ((uint32_t)(w))
#define RINGTRACE_EV_WORD_ID(w) ((uint32_t)(((w) >> 32) & 0xFFFFu))
#define RINGTRACE_EV_WORD_LEN(w) ((uint32_t)((w) >> 48))

/* ---- decoding events within a page --------------------------------------- */

struct ringtrace_event {
	uint64_t ts; /* full timestamp, ticks (see ringtrace_rb_ticks_to_ns) */
	uint32_t id;
	uint32_t len;     /* payload bytes */
	const void *data; /* payload, 8-byte aligned */
	uint64_t stream;  /* stream_instance_id of the writer */
	uint32_t tid;
	uint32_t offset; /* byte offset of the event in its page */
};

struct ringtrace_page_cursor {
	const struct ringtrace_page_header *page;
	uint32_t off;     /* next event offset */
	uint32_t end;     /* content end, bytes */
	uint64_t last_ts; /* timestamp of the previous event */
	uint32_t index;   /* events decoded so far */
};

/*
 * Check a page header (magic, sizes, counts) against a page size (0: any
 * valid size). 0, or -RINGTRACE_ECORRUPT with a message naming the field.
 */
int ringtrace_page_check(const struct ringtrace_page_header *page, size_t page_size);
void ringtrace_page_cursor_init(struct ringtrace_page_cursor *c,
				const struct ringtrace_page_header *page);
/*
 * Decode the next event: 1 and *ev filled, 0 at the end of the page, or
 * -RINGTRACE_ECORRUPT (with a message naming the offset) if an event header
 * does not fit in the content.
 */
int ringtrace_page_next(struct ringtrace_page_cursor *c, struct ringtrace_event *ev);

#ifdef __cplusplus
}
#endif
#endif /* RINGTRACE_FORMAT_H */
