/*
 * The page encoder (src/ring/page_api.h), the one that producers of whole
 * pages use (the kernel events' conversion): what it writes is a page the
 * decoder reads back exactly, with compact and extended event headers
 * where the format needs each, and what cannot be encoded is refused
 * rather than written wrong.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "ring/page_api.h"
#include "ringtrace/error.h"
#include "ringtrace/format.h"

#define PAGE 4096u

static _Alignas(8) unsigned char page[PAGE];

struct want {
	uint32_t id;
	uint64_t ts;
	const char *payload;
};

/* The events of the page decoded: exactly `want`, in order. */
static void expect_events(const struct want *w, uint32_t n)
{
	const struct ringtrace_page_header *h = (const void *)page;
	CHECK_OK(ringtrace_page_check(h, PAGE));
	CHECK_EQ_U64(h->events, n);
	CHECK_EQ_U64(h->timestamp_begin, w[0].ts);
	CHECK_EQ_U64(h->timestamp_end, w[n - 1].ts);
	CHECK_EQ_U64(h->content_size, (uint64_t)h->commit * 8);
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	ringtrace_page_cursor_init(&c, h);
	for (uint32_t i = 0; i < n; i++) {
		CHECKF(ringtrace_page_next(&c, &ev) == 1, "event %u not decoded", i);
		CHECK_EQ_U64(ev.id, w[i].id);
		CHECK_EQ_U64(ev.ts, w[i].ts);
		CHECK_EQ_U64(ev.len, strlen(w[i].payload));
		CHECK(memcmp(ev.data, w[i].payload, ev.len) == 0);
	}
	CHECKF(ringtrace_page_next(&c, &ev) == 0, "an event after the last");
}

static void case_round_trip(void)
{
	static const struct want w[] = {
		{3, 1000, "abc"},
		{70000, 1001, "an id beyond the compact header's"},
		{5, 1001 + (1ull << 33), "2^33 ticks later"},
		{RINGTRACE_EV_MAX_ID, 1002 + (1ull << 33), ""},
		{0, (1ull << 40) + 7, "x"},
	};
	uint32_t n = sizeof(w) / sizeof(w[0]);
	struct rt_page_enc e;
	rt_page_enc_begin(&e, page, PAGE);
	for (uint32_t i = 0; i < n; i++)
		CHECK_EQ_U64(rt_page_enc_add(&e, w[i].id, w[i].ts, w[i].payload,
					     (uint32_t)strlen(w[i].payload)),
			     1);
	rt_page_enc_close(&e);
	expect_events(w, n);
	/* the extended headers are where the format needs them, only there */
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	uint32_t ext = 0;
	ringtrace_page_cursor_init(&c, (const void *)page);
	while (ringtrace_page_next(&c, &ev) == 1) {
		uint64_t word;
		memcpy(&word, page + ev.offset, 8);
		ext += RINGTRACE_EV_WORD_ID(word) == RINGTRACE_EV_EXTENDED;
	}
	CHECK_EQ_U64(ext, 3);
}

static void case_full_and_refused(void)
{
	static const char big[PAGE] = {0};
	struct rt_page_enc e;
	rt_page_enc_begin(&e, page, PAGE);
	uint32_t n = 0;
	int rc;
	while ((rc = rt_page_enc_add(&e, 1, 10 + n, big, 100)) == 1)
		n++;
	CHECK_EQ_U64(rc, 0); /* full: a new page takes it */
	CHECK(n > 0);
	uint32_t commit = e.off;
	CHECK(rt_page_enc_add(&e, 1, 5, "", 0) == -RINGTRACE_EINVAL); /* backwards */
	CHECK(rt_page_enc_add(&e, 1, 10 + n, big, PAGE) == -RINGTRACE_EINVAL);
	CHECK_EQ_U64(e.off, commit); /* (nothing written by a refusal) */
	rt_page_enc_close(&e);
	CHECK_OK(ringtrace_page_check((const void *)page, PAGE));
	CHECK_EQ_U64(((const struct ringtrace_page_header *)(const void *)page)->events, n);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(page_enc_events_read_back_compact_and_extended_headers, case_round_trip),
	CHECK_CASE(page_enc_full_page_and_unencodable_events_refused, case_full_and_refused),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
