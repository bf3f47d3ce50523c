/*
 * tests/testutil.h - small helpers shared by the ringtrace tests.
 */
#ifndef RINGTRACE_TESTS_TESTUTIL_H
#define RINGTRACE_TESTS_TESTUTIL_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static CHECK_UNUSED uint32_t tu_gettid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static CHECK_UNUSED uint64_t tu_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static CHECK_UNUSED void tu_sleep_us(unsigned us)
{
	struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000l};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

/* A small configuration helper: page size and page count, mode. */
static CHECK_UNUSED void tu_config(struct ringtrace_rb_config *cfg, size_t page_size,
				   uint32_t pages, enum ringtrace_rb_mode mode)
{
	ringtrace_rb_config_init(cfg);
	cfg->page_size = page_size;
	cfg->pool_size = page_size * pages;
	cfg->mode = mode;
}

static CHECK_UNUSED ringtrace_rb *tu_create(const struct ringtrace_rb_config *cfg)
{
	ringtrace_rb *rb = NULL;
	int rc = ringtrace_rb_create(cfg, &rb);
	CHECKF(rc == 0 && rb != NULL, "ringtrace_rb_create: %d (%s): %s", rc,
	       ringtrace_strerror(rc), ringtrace_last_error());
	return rb;
}

static CHECK_UNUSED struct ringtrace_rb_stats tu_stats(const ringtrace_rb *rb)
{
	struct ringtrace_rb_stats st;
	memset(&st, 0xA5, sizeof(st));
	int rc = ringtrace_rb_get_stats(rb, &st);
	CHECKF(rc == 0, "ringtrace_rb_stats: %d (%s): %s", rc, ringtrace_strerror(rc),
	       ringtrace_last_error());
	return st;
}

/* Deterministic payload byte pattern. */
static CHECK_UNUSED uint8_t tu_pattern(uint64_t key, uint32_t i)
{
	uint64_t x = key * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull;
	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17));
}

static CHECK_UNUSED void tu_fill(void *dst, uint64_t key, uint32_t len)
{
	uint8_t *p = (uint8_t *)dst;
	for (uint32_t i = 0; i < len; i++)
		p[i] = tu_pattern(key, i);
}

/* Index of the first byte that differs from the pattern, or -1. */
static CHECK_UNUSED long tu_verify(const void *src, uint64_t key, uint32_t len)
{
	const uint8_t *p = (const uint8_t *)src;
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != tu_pattern(key, i))
			return (long)i;
	return -1;
}

/* Checks on a page handed out by a read interface (published or snapshot). */
#define TU_PAGE_CHECK(p, cond, fmt, ...)                                                           \
	CHECKF(cond,                                                                               \
	       fmt " [page: stream %" PRIu64 " seq %" PRIu64 " flags 0x%x events %u "              \
		   "commit %u tid %u]",                                                            \
	       __VA_ARGS__, (p)->stream_instance_id, (p)->packet_seq_num, (p)->flags, (p)->events, \
	       (p)->commit, (p)->tid)

static CHECK_UNUSED void tu_check_page_header(const struct ringtrace_page_header *p,
					      size_t page_size)
{
	int rc = ringtrace_page_check(p, page_size);
	TU_PAGE_CHECK(p, rc == 0, "ringtrace_page_check: %d (%s): %s", rc, ringtrace_strerror(rc),
		      ringtrace_last_error());
	TU_PAGE_CHECK(p, p->magic == RINGTRACE_PAGE_MAGIC, "magic 0x%08x", p->magic);
	TU_PAGE_CHECK(p, p->stream_id == 0, "stream_id %u", p->stream_id);
	TU_PAGE_CHECK(p, p->packet_size == (uint64_t)page_size * 8,
		      "packet_size %" PRIu64 " page_size %zu", p->packet_size, page_size);
	TU_PAGE_CHECK(p, p->commit >= RINGTRACE_PAGE_HEADER_SIZE && p->commit <= page_size,
		      "commit %u page_size %zu", p->commit, page_size);
	/* commit is where the last payload ends (unpadded, like CTF's content_size) */
	TU_PAGE_CHECK(p, p->content_size == (uint64_t)p->commit * 8,
		      "content_size %" PRIu64 " bits != commit %u bytes * 8", p->content_size,
		      p->commit);
	TU_PAGE_CHECK(p, p->timestamp_end >= p->timestamp_begin,
		      "timestamp_end %" PRIu64 " < timestamp_begin %" PRIu64, p->timestamp_end,
		      p->timestamp_begin);
	/*
	 * The content ends exactly where the last event's payload ends: the
	 * writers keep their next offset rounded up to 8, and that padding
	 * must never reach commit or content_size.
	 */
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	uint32_t end = RINGTRACE_PAGE_HEADER_SIZE;
	int n;
	ringtrace_page_cursor_init(&c, p);
	while ((n = ringtrace_page_next(&c, &ev)) > 0)
		end = (uint32_t)((const char *)ev.data - (const char *)p) + ev.len;
	TU_PAGE_CHECK(p, n == 0, "page does not decode: %s", ringtrace_last_error());
	if (n == 0)
		TU_PAGE_CHECK(p, end == p->commit, "last event ends at %u, commit is %u", end,
			      p->commit);
}

/*
 * Per-event checks common to every reader of a page: offsets, alignment,
 * the event belongs to the page's stream. Call for events from page cursors.
 */
static CHECK_UNUSED void tu_check_event_in_page(const struct ringtrace_page_header *p,
						const struct ringtrace_event *ev)
{
	const char *base = (const char *)p;
	const char *d = (const char *)ev->data;
	CHECKF(ev->offset >= RINGTRACE_PAGE_HEADER_SIZE && ev->offset % 8 == 0, "event offset %u",
	       ev->offset);
	CHECKF(((uintptr_t)ev->data & 7u) == 0, "payload %p not 8-aligned", ev->data);
	CHECKF(ev->len == 0 || (d >= base + ev->offset + RINGTRACE_EV_HEADER_SIZE &&
				d + ev->len <= base + p->commit),
	       "payload [%ld, +%u) outside the page's content (offset %u, commit %u)",
	       (long)(d - base), ev->len, ev->offset, p->commit);
	CHECKF(ev->stream == p->stream_instance_id, "event stream %" PRIu64 " page stream %" PRIu64,
	       ev->stream, p->stream_instance_id);
	CHECKF(ev->tid == p->tid, "event tid %u page tid %u", ev->tid, p->tid);
	CHECKF(ev->id <= RINGTRACE_EV_MAX_ID, "event id %u", ev->id);
	CHECKF(ev->ts >= p->timestamp_begin && ev->ts <= p->timestamp_end,
	       "event ts %" PRIu64 " outside page [%" PRIu64 ", %" PRIu64 "]", ev->ts,
	       p->timestamp_begin, p->timestamp_end);
}

#endif /* RINGTRACE_TESTS_TESTUTIL_H */
