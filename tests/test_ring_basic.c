/*
 * test_ring_basic: single-threaded write/read round trips.
 *
 *  - defaults, getters, max payload;
 *  - events of lengths 0,1,7,8,100,max and ids 0,1,RINGTRACE_EV_MAX_ID,
 *    through ringtrace_rb_write and ringtrace_rb_reserve/commit;
 *  - refused events (too big, bad id) are counted as missed;
 *  - reading back by page after ringtrace_rb_flush(rb, 0) and after
 *    ringtrace_rb_writer_release: payloads, ids, timestamps, page headers
 *    (magic, sizes, counts, per-stream sequence, events_before, flags);
 *  - stats balance at each step; pool fully free after draining;
 *  - reading by event (reader) and by snapshot of the same data;
 *  - two buffers written by one thread keep separate writer state;
 *  - the clock: monotonic and close to CLOCK_MONOTONIC;
 *  - flush: a young page is left alone; a writer caught inside an event
 *    publishes at its next event; pages may be put back in any order;
 *  - ringtrace_page_check / ringtrace_page_next reject corrupt pages;
 *  - page headers carry the writer's thread name (comm), refreshed on
 *    ringtrace_rb_refresh_comm();
 *  - a gap of 2^32 ticks or more between events (extended header) decodes
 *    to the right timestamp;
 *  - pages fill to their end past the page switch's warm-up mark, through
 *    the inline and the general path, in both modes;
 *  - the general path takes the clock reading a declined inline attempt
 *    left, once, never a stale one (nor one left from before an attach).
 *
 * Each is a case (the table at the end). The round trips are phases of
 * one writer's life (write, flush and read, write on and release, write
 * again and read by event): the case for a later phase runs the earlier
 * ones first, on a buffer of its own.
 */
#include <stdatomic.h>

#include "pool_layout.h"
#include "ringtrace/static/ring.h"
#include "testutil.h"

#define MAX_EXPECTED 20000
#define MAX_STREAMS 16

struct expected {
	uint32_t id;
	uint32_t len;
	uint64_t key;
};

static struct expected exp_ev[MAX_EXPECTED];
static uint32_t n_exp;      /* events expected in the buffer, in order */
static uint32_t n_consumed; /* events matched so far */
static uint64_t attempts, drops;
static uint64_t next_key = 1;
static uint64_t t_start_ns;
static uint64_t g_clock_freq;
static int g_clock_tsc;

static int write_ev(ringtrace_rb *rb, uint32_t id, uint32_t len, int use_reserve)
{
	static uint8_t buf[RINGTRACE_EV_MAX_PAYLOAD + 16];
	uint64_t key = next_key++;
	attempts++;
	if (use_reserve) {
		void *p = ringtrace_rb_reserve(rb, id, len);
		CHECKF(p != NULL, "reserve(id %u, len %u) returned NULL", id, len);
		CHECKF(((uintptr_t)p & 7u) == 0, "reserve returned %p, not 8-aligned", p);
		tu_fill(p, key, len);
		ringtrace_rb_commit(rb);
	} else {
		tu_fill(buf, key, len);
		int rc = ringtrace_rb_write(rb, id, buf, len);
		CHECKF(rc == 0, "write(id %u, len %u) = %d (%s)", id, len, rc,
		       ringtrace_strerror(rc));
	}
	CHECK(n_exp < MAX_EXPECTED);
	exp_ev[n_exp].id = id;
	exp_ev[n_exp].len = len;
	exp_ev[n_exp].key = key;
	n_exp++;
	return 0;
}

struct stream_state {
	uint64_t stream;
	uint64_t next_seq;
	uint64_t events_before;
	uint64_t last_discarded;
};

static struct stream_state streams[MAX_STREAMS];
static uint32_t n_streams;

static struct stream_state *stream_get(uint64_t id)
{
	for (uint32_t i = 0; i < n_streams; i++)
		if (streams[i].stream == id)
			return &streams[i];
	CHECK(n_streams < MAX_STREAMS);
	struct stream_state *s = &streams[n_streams++];
	memset(s, 0, sizeof(*s));
	s->stream = id;
	return s;
}

static uint64_t last_ts;

/* Drain every readable page, checking everything against exp_ev. */
static uint32_t drain_pages(ringtrace_rb *rb, uint32_t want_flags_last_page, uint32_t *flags_seen)
{
	size_t psz = ringtrace_rb_page_size(rb);
	uint32_t pages = 0;
	const struct ringtrace_page_header *p;
	uint32_t last_flags = 0;
	*flags_seen = 0;
	while ((p = ringtrace_rb_get_page(rb)) != NULL) {
		pages++;
		tu_check_page_header(p, psz);
		CHECKF(p->tid == tu_gettid(), "page tid %u, writer is %u", p->tid, tu_gettid());
		struct stream_state *s = stream_get(p->stream_instance_id);
		CHECKF(p->packet_seq_num == s->next_seq,
		       "stream %" PRIu64 ": packet_seq_num %" PRIu64 " expected %" PRIu64,
		       s->stream, p->packet_seq_num, s->next_seq);
		CHECKF(p->events_before == s->events_before,
		       "stream %" PRIu64 " page %" PRIu64 ": events_before %" PRIu64
		       " expected %" PRIu64,
		       s->stream, p->packet_seq_num, p->events_before, s->events_before);
		CHECKF(p->events_discarded >= s->last_discarded,
		       "events_discarded went down: %" PRIu64 " < %" PRIu64, p->events_discarded,
		       s->last_discarded);
		CHECKF(p->events > 0, "published page %" PRIu64 " has no events",
		       p->packet_seq_num);

		struct ringtrace_page_cursor c;
		struct ringtrace_event ev;
		ringtrace_page_cursor_init(&c, p);
		uint32_t n = 0;
		int rc;
		while ((rc = ringtrace_page_next(&c, &ev)) == 1) {
			tu_check_event_in_page(p, &ev);
			CHECKF(n_consumed < n_exp, "more events read than written (%u)", n_exp);
			const struct expected *e = &exp_ev[n_consumed];
			CHECKF(ev.id == e->id && ev.len == e->len,
			       "event #%u: id %u len %u, expected id %u len %u", n_consumed, ev.id,
			       ev.len, e->id, e->len);
			long bad = tu_verify(ev.data, e->key, e->len);
			CHECKF(bad < 0, "event #%u (len %u): payload byte %ld differs", n_consumed,
			       e->len, bad);
			if (n == 0)
				CHECKF(ev.ts >= p->timestamp_begin &&
					       ev.ts - p->timestamp_begin < (1ull << 32),
				       "first event ts %" PRIu64 " vs timestamp_begin %" PRIu64,
				       ev.ts, p->timestamp_begin);
			CHECKF(ev.ts >= last_ts, "event #%u: ts %" PRIu64 " < previous %" PRIu64,
			       n_consumed, ev.ts, last_ts);
			last_ts = ev.ts;
			uint64_t ns = ringtrace_rb_ticks_to_ns(rb, ev.ts);
			uint64_t now = tu_mono_ns();
			CHECKF(ns + 50000000ull >= t_start_ns && ns <= now + 50000000ull,
			       "event ts %" PRIu64 " ns outside [start %" PRIu64 ", now %" PRIu64
			       "]",
			       ns, t_start_ns, now);
			n_consumed++;
			n++;
		}
		CHECKF(rc == 0, "page_next: %d (%s): %s", rc, ringtrace_strerror(rc),
		       ringtrace_last_error());
		CHECKF(n == p->events, "decoded %u events, header says %u", n, p->events);
		CHECKF(c.index == n, "cursor index %u, decoded %u", c.index, n);
		s->next_seq++;
		s->events_before += n;
		s->last_discarded = p->events_discarded;
		last_flags = p->flags;
		*flags_seen |= p->flags;
		ringtrace_rb_put_page(rb, p);
	}
	if (pages && want_flags_last_page)
		CHECKF((last_flags & want_flags_last_page) == want_flags_last_page,
		       "last page flags 0x%x, expected 0x%x set", last_flags, want_flags_last_page);
	return pages;
}

static void check_stats(ringtrace_rb *rb, uint64_t expect_read_total)
{
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_STATS_BALANCED(&st);
	CHECK_EQ_U64(st.hit, n_exp);
	CHECK_EQ_U64(st.missed, drops);
	CHECK_EQ_U64(st.hit + st.missed, attempts);
	CHECK_EQ_U64(st.overrun, 0);
	CHECK_EQ_U64(st.read, expect_read_total);
	CHECK_EQ_U64(st.entries, n_exp - expect_read_total);
}

/* Everything the round-trip phases count, back to nothing; a new start time. */
static void basic_reset(void)
{
	n_exp = n_consumed = 0;
	attempts = drops = 0;
	next_key = 1;
	memset(streams, 0, sizeof(streams));
	n_streams = 0;
	last_ts = 0;
	t_start_ns = tu_mono_ns();
}

static void test_defaults(void)
{
	struct ringtrace_rb_config cfg;
	memset(&cfg, 0x5A, sizeof(cfg));
	ringtrace_rb_config_init(&cfg);
	CHECK_EQ_U64(cfg.page_size, RINGTRACE_RB_DEFAULT_PAGE_SIZE);
	CHECK_EQ_U64(cfg.pool_size, RINGTRACE_RB_DEFAULT_POOL_SIZE);
	CHECK_EQ_U64(cfg.max_writers, RINGTRACE_RB_DEFAULT_MAX_WRITERS);
	CHECK(cfg.mode == RINGTRACE_RB_DISCARD);
	CHECK_EQ_U64(cfg.flush_interval_ms, RINGTRACE_RB_DEFAULT_FLUSH_MS);
	CHECK(cfg.shm_name == NULL);
}

static void test_clock_on(ringtrace_rb *rb)
{
	uint64_t freq = ringtrace_rb_clock_freq(rb);
	g_clock_freq = freq;
	g_clock_tsc = ringtrace_rb_clock_is_tsc(rb);
	CHECKF(freq >= 1000000ull, "clock freq %" PRIu64 " Hz", freq);
	if (!ringtrace_rb_clock_is_tsc(rb))
		CHECKF(freq == 1000000000ull, "non-TSC clock freq %" PRIu64, freq);

	/* Monotonic, in ticks and in ns. */
	uint64_t prev_t = ringtrace_rb_now(rb), prev_ns = ringtrace_rb_ticks_to_ns(rb, prev_t);
	for (int i = 0; i < CHECK_SCALE(200000, 20000); i++) {
		uint64_t t = ringtrace_rb_now(rb);
		uint64_t ns = ringtrace_rb_ticks_to_ns(rb, t);
		CHECKF(t >= prev_t, "ticks went back: %" PRIu64 " < %" PRIu64, t, prev_t);
		CHECKF(ns >= prev_ns, "ns went back: %" PRIu64 " < %" PRIu64, ns, prev_ns);
		prev_t = t;
		prev_ns = ns;
	}
	/* ticks_to_ns is monotonic in its argument. */
	uint64_t base = ringtrace_rb_now(rb);
	uint64_t p = ringtrace_rb_ticks_to_ns(rb, base);
	for (uint64_t d = 1; d < (1ull << 40); d = d * 3 + 1) {
		uint64_t ns = ringtrace_rb_ticks_to_ns(rb, base + d);
		CHECKF(ns >= p, "ticks_to_ns not monotonic at +%" PRIu64, d);
		p = ns;
	}
	/* Close to CLOCK_MONOTONIC, several times over ~20 ms. */
	for (int i = 0; i < 5; i++) {
		uint64_t a = tu_mono_ns();
		uint64_t ns = ringtrace_rb_ticks_to_ns(rb, ringtrace_rb_now(rb));
		uint64_t b = tu_mono_ns();
		CHECKF(ns + 50000000ull >= a && ns <= b + 50000000ull,
		       "ticks_to_ns(now) = %" PRIu64 ", CLOCK_MONOTONIC in [%" PRIu64 ", %" PRIu64
		       "]: off by more than 50 ms",
		       ns, a, b);
		tu_sleep_us(4000);
	}
	/* A 1 s interval of ticks converts to about 1 s. */
	uint64_t t0 = ringtrace_rb_now(rb);
	uint64_t t1 = t0 + freq;
	int64_t dn = (int64_t)(ringtrace_rb_ticks_to_ns(rb, t1) - ringtrace_rb_ticks_to_ns(rb, t0));
	CHECKF(dn > 999000000ll && dn < 1001000000ll, "freq ticks -> %" PRId64 " ns", dn);
}

/* ---- flush of a writer caught inside an event ---- */

static ringtrace_rb *fl_rb;
static atomic_int fl_step;

static void fl_wait(int v)
{
	while (atomic_load(&fl_step) < v)
		tu_sleep_us(100);
}

static void *fl_writer(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < 10; i++)
		CHECK_OK(ringtrace_rb_write(fl_rb, 1, &i, sizeof(i)));
	uint64_t *p = (uint64_t *)ringtrace_rb_reserve(fl_rb, 1, sizeof(uint64_t));
	CHECK(p != NULL);
	atomic_store(&fl_step, 1); /* inside an event */
	fl_wait(2);
	*p = 10;
	ringtrace_rb_commit(fl_rb);
	uint64_t v = 11;
	CHECK_OK(ringtrace_rb_write(fl_rb, 1, &v, sizeof(v))); /* the next event */
	atomic_store(&fl_step, 3);
	fl_wait(4);
	return NULL; /* exit publishes the last page */
}

static void test_flush_busy(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 8, RINGTRACE_RB_DISCARD);
	cfg.flush_interval_ms = 60000;
	fl_rb = tu_create(&cfg);
	atomic_store(&fl_step, 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, fl_writer, NULL) == 0);
	fl_wait(1);
	/* A page younger than min_age_ms is left alone. */
	CHECK_EQ_U64(ringtrace_rb_flush(fl_rb, 50000), 0);
	CHECK(ringtrace_rb_get_page(fl_rb) == NULL);
	/* Inside an event: nothing can be taken now... */
	int rc = ringtrace_rb_flush(fl_rb, 0);
	CHECKF(rc == 0, "flush of a writer inside an event returned %d", rc);
	CHECK(ringtrace_rb_get_page(fl_rb) == NULL);
	struct ringtrace_rb_stats st = tu_stats(fl_rb);
	CHECK_EQ_U64(st.hit, 10);
	CHECK_EQ_U64(st.entries, 10);
	/* ...but the writer publishes at its next event. */
	atomic_store(&fl_step, 2);
	fl_wait(3);
	const struct ringtrace_page_header *p = ringtrace_rb_get_page(fl_rb);
	CHECKF(p != NULL, "the writer did not publish its page at its next event after a flush "
			  "request");
	tu_check_page_header(p, 4096);
	CHECKF(p->events == 11, "flushed page has %u events, expected 11 (0..10)", p->events);
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	ringtrace_page_cursor_init(&c, p);
	for (uint64_t i = 0; i < 11; i++) {
		uint64_t v;
		CHECK(ringtrace_page_next(&c, &ev) == 1);
		memcpy(&v, ev.data, 8);
		CHECK_EQ_U64(v, i);
	}
	CHECK(ringtrace_page_next(&c, &ev) == 0);
	CHECK(ringtrace_rb_get_page(fl_rb) == NULL); /* event 11 is in the writer's new page */
	atomic_store(&fl_step, 4);
	CHECK(pthread_join(t, NULL) == 0);
	const struct ringtrace_page_header *q = ringtrace_rb_get_page(fl_rb);
	CHECKF(q != NULL && q->events == 1 && (q->flags & RINGTRACE_PAGE_F_LAST),
	       "last page after thread exit: %s", q ? "wrong" : "missing");
	CHECK_EQ_U64(q->packet_seq_num, p->packet_seq_num + 1);
	/* Pages may be put back in any order. */
	ringtrace_rb_put_page(fl_rb, q);
	ringtrace_rb_put_page(fl_rb, p);
	st = tu_stats(fl_rb);
	CHECK_EQ_U64(st.entries, 0);
	CHECK_EQ_U64(st.read, 12);
	CHECK_EQ_U64(st.pages_free, 8);
	ringtrace_rb_destroy(fl_rb);
}

/* ---- corrupt pages are rejected ---- */

static void test_corrupt(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 4, RINGTRACE_RB_DISCARD);
	ringtrace_rb *rb = tu_create(&cfg);
	for (uint32_t i = 0; i < 20; i++)
		CHECK_OK(ringtrace_rb_write(rb, 3, &i, sizeof(i)));
	ringtrace_rb_writer_release(rb);
	const struct ringtrace_page_header *p = ringtrace_rb_get_page(rb);
	CHECK(p != NULL);
	static uint64_t good[4096 / 8], bad[4096 / 8];
	memcpy(good, p, 4096);
	ringtrace_rb_put_page(rb, p);
	ringtrace_rb_destroy(rb);
	const struct ringtrace_page_header *g = (const struct ringtrace_page_header *)good;
	struct ringtrace_page_header *b = (struct ringtrace_page_header *)bad;
	CHECK_OK(ringtrace_page_check(g, 4096));

#define CORRUPT(field_name, mutate)                                                              \
	do {                                                                                     \
		memcpy(bad, good, 4096);                                                         \
		mutate;                                                                          \
		int rc_ = ringtrace_page_check(b, 4096);                                         \
		CHECKF(rc_ == -RINGTRACE_ECORRUPT, "page_check accepted a page with %s (rc %d)", \
		       #mutate, rc_);                                                            \
		CHECKF(strstr(ringtrace_last_error(), field_name) != NULL,                       \
		       "page_check message \"%s\" does not name %s", ringtrace_last_error(),     \
		       field_name);                                                              \
	} while (0)
	CORRUPT("magic", b->magic ^= 1);
	CORRUPT("packet_size", b->packet_size = 8192 * 8);
	CORRUPT("content_size", b->content_size = 4097 * 8);
	CORRUPT("content_size", b->content_size = 8 * 8);
	CORRUPT("content_size", b->content_size += 4);
	CORRUPT("timestamp_end", b->timestamp_end = b->timestamp_begin - 1);
	CORRUPT("events", b->events = 4000);
#undef CORRUPT

	/* An event whose payload runs past the content end. */
	memcpy(bad, good, 4096);
	b->content_size = (RINGTRACE_PAGE_HEADER_SIZE + 16 + 8) * 8; /* 1.5 events */
	b->events = 1;
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	ringtrace_page_cursor_init(&c, b);
	CHECK(ringtrace_page_next(&c, &ev) == 1);
	int rc = ringtrace_page_next(&c, &ev);
	CHECKF(rc == -RINGTRACE_ECORRUPT, "truncated event: page_next = %d", rc);
	CHECK(ringtrace_last_error()[0] != '\0');
	/* An event header claiming a huge payload. */
	memcpy(bad, good, 4096);
	uint64_t *w = (uint64_t *)((char *)bad + RINGTRACE_PAGE_HEADER_SIZE);
	*w = RINGTRACE_EV_WORD(*w, 3, 0xFFF0);
	ringtrace_page_cursor_init(&c, b);
	rc = ringtrace_page_next(&c, &ev);
	CHECKF(rc == -RINGTRACE_ECORRUPT, "oversized event: page_next = %d", rc);
}

/* ---- a gap of 2^32 ticks or more: extended event header ---- */

static void test_extended_ts(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 4, RINGTRACE_RB_DISCARD);
	ringtrace_rb *rb = tu_create(&cfg);
	uint64_t freq = ringtrace_rb_clock_freq(rb);
	uint64_t gap_ns = (uint64_t)((double)(1ull << 32) / (double)freq * 1e9) + 100000000ull;
	if (gap_ns > 5000000000ull) {
		ringtrace_rb_destroy(rb);
		CHECK_SKIP("extended timestamps not tested: 2^32 ticks = %.1f s", gap_ns / 1e9);
	}
	uint64_t v = 1;
	CHECK_OK(ringtrace_rb_write(rb, 7, &v, sizeof(v)));
	uint64_t t0 = tu_mono_ns();
	tu_sleep_us((unsigned)(gap_ns / 1000));
	v = 2;
	CHECK_OK(ringtrace_rb_write(rb, 7, &v, sizeof(v)));
	uint64_t t1 = tu_mono_ns();
	v = 3;
	CHECK_OK(ringtrace_rb_write(rb, 7, &v, sizeof(v)));
	ringtrace_rb_writer_release(rb);
	const struct ringtrace_page_header *p = ringtrace_rb_get_page(rb);
	CHECK(p != NULL);
	tu_check_page_header(p, 4096);
	CHECK_EQ_U64(p->events, 3);
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev[3];
	ringtrace_page_cursor_init(&c, p);
	for (int i = 0; i < 3; i++) {
		CHECK(ringtrace_page_next(&c, &ev[i]) == 1);
		uint64_t x;
		memcpy(&x, ev[i].data, 8);
		CHECK_EQ_U64(x, (uint64_t)i + 1);
		CHECK_EQ_U64(ev[i].id, 7);
		CHECK_EQ_U64(ev[i].len, 8);
	}
	uint64_t w1;
	memcpy(&w1, (const char *)p + ev[1].offset, 8);
	CHECKF(RINGTRACE_EV_WORD_ID(w1) == RINGTRACE_EV_EXTENDED,
	       "event after a %.2f s gap (> 2^32 ticks) has a compact header", gap_ns / 1e9);
	CHECKF(ev[1].ts - ev[0].ts >= (1ull << 32), "decoded gap %" PRIu64 " ticks",
	       ev[1].ts - ev[0].ts);
	uint64_t dn = ringtrace_rb_ticks_to_ns(rb, ev[1].ts) -
		      ringtrace_rb_ticks_to_ns(rb, ev[0].ts);
	CHECKF(dn + 20000000ull >= gap_ns && dn <= t1 - t0 + 50000000ull,
	       "decoded gap %" PRIu64 " ns, slept %" PRIu64 " ns", dn, gap_ns);
	CHECK(ev[2].ts >= ev[1].ts && ev[2].ts - ev[1].ts < (1ull << 32));
	ringtrace_rb_put_page(rb, p);
	ringtrace_rb_destroy(rb);
}

/* ---- the thread name in page headers ---- */

static void expect_comm(const struct ringtrace_page_header *p, const char *name, const char *when)
{
	char want[16];
	memset(want, 0, sizeof(want));
	strncpy(want, name, sizeof(want) - 1);
	char got[17];
	memcpy(got, p->comm, 16);
	got[16] = 0;
	CHECKF(memcmp(p->comm, want, 16) == 0,
	       "%s: page comm \"%s\", expected \"%s\" (NUL-padded to 16 bytes)", when, got, name);
}

static const struct ringtrace_page_header *one_page(ringtrace_rb *rb, uint64_t v)
{
	CHECK_OK(ringtrace_rb_write(rb, 1, &v, sizeof(v)));
	CHECK(ringtrace_rb_flush(rb, 0) == 1);
	const struct ringtrace_page_header *p = ringtrace_rb_get_page(rb);
	CHECK(p != NULL);
	tu_check_page_header(p, ringtrace_rb_page_size(rb));
	return p;
}

static void test_comm(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 4, RINGTRACE_RB_DISCARD);
	ringtrace_rb *rb = tu_create(&cfg);
	char orig[16] = "";
	CHECK(pthread_getname_np(pthread_self(), orig, sizeof(orig)) == 0);
	CHECK(pthread_setname_np(pthread_self(), "rt-first-name") == 0);
	const struct ringtrace_page_header *p = one_page(rb, 1);
	expect_comm(p, "rt-first-name", "first page");
	ringtrace_rb_put_page(rb, p);
	/* Renamed after the first event: the name is cached... */
	CHECK(pthread_setname_np(pthread_self(), "rt-second") == 0);
	p = one_page(rb, 2);
	expect_comm(p, "rt-first-name", "new page after a rename, before refresh_comm");
	ringtrace_rb_put_page(rb, p);
	/* ...until a reader refreshes it. */
	int n = ringtrace_rb_refresh_comm(rb);
	CHECKF(n >= 1, "refresh_comm returned %d (%s)", n, ringtrace_last_error());
	p = one_page(rb, 3);
	expect_comm(p, "rt-second", "new page after refresh_comm");
	ringtrace_rb_put_page(rb, p);
	ringtrace_rb_writer_release(rb);
	CHECK(pthread_setname_np(pthread_self(), orig) == 0);
	ringtrace_rb_destroy(rb);
}

/* ---- the default buffer and the round trips, phase by phase ---- */

struct basic {
	ringtrace_rb *rb;
	size_t psz, maxp;
	uint32_t lens[6];
	uint32_t ids[3];
	uint32_t np1, np2;
};

/* A buffer of the default configuration; counts reset. */
static void basic_open(struct basic *b)
{
	basic_reset();
	memset(b, 0, sizeof(*b));
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	b->rb = tu_create(&cfg);
	b->psz = ringtrace_rb_page_size(b->rb);
	b->maxp = ringtrace_rb_max_payload(b->rb);
	const uint32_t lens[] = {0, 1, 7, 8, 100, (uint32_t)b->maxp};
	const uint32_t ids[] = {0, 1, RINGTRACE_EV_MAX_ID};
	memcpy(b->lens, lens, sizeof(lens));
	memcpy(b->ids, ids, sizeof(ids));
}

static void basic_close(struct basic *b)
{
	ringtrace_rb_destroy(b->rb);
	b->rb = NULL;
}

/* Getters of the default buffer, its max payload, its stats when new. */
static void basic_geometry(struct basic *b)
{
	ringtrace_rb *rb = b->rb;
	CHECK_EQ_U64(ringtrace_rb_page_size(rb), RINGTRACE_RB_DEFAULT_PAGE_SIZE);
	CHECK_EQ_U64(ringtrace_rb_page_count(rb),
		     RINGTRACE_RB_DEFAULT_POOL_SIZE / RINGTRACE_RB_DEFAULT_PAGE_SIZE);
	CHECK(ringtrace_rb_mode(rb) == RINGTRACE_RB_DISCARD);
	CHECK(ringtrace_rb_fd(rb) >= 0);

	size_t psz = b->psz;
	size_t maxp = b->maxp;
	CHECKF(maxp >= 1024 && maxp <= RINGTRACE_EV_MAX_PAYLOAD, "max payload %zu", maxp);
	/* An event of max payload must fit a fresh page even in extended form. */
	CHECKF(maxp + RINGTRACE_PAGE_HEADER_SIZE + RINGTRACE_EV_EXT_HEADER_SIZE <= psz,
	       "max payload %zu does not fit a %zu-byte page with an extended header", maxp, psz);

	{
		struct ringtrace_rb_stats st = tu_stats(rb);
		CHECK_EQ_U64(st.hit, 0);
		CHECK_EQ_U64(st.entries, 0);
		CHECK_EQ_U64(st.writers_active, 0);
		CHECK_EQ_U64(st.pages_free, ringtrace_rb_page_count(rb));
	}
}

/*
 * Phase 1: every (id, len) combination through both write APIs, refused
 * events (counted as missed, nothing written) between them, then enough
 * small events to span several pages.
 */
static void basic_phase1_write(struct basic *b)
{
	ringtrace_rb *rb = b->rb;
	size_t maxp = b->maxp;
	const uint32_t *lens = b->lens;
	const uint32_t *ids = b->ids;

	/* ---- phase 1: every (id, len) combination, both write APIs ---- */
	for (int api = 0; api < 2; api++)
		for (unsigned i = 0; i < 3; i++)
			for (unsigned j = 0; j < 6; j++)
				write_ev(rb, ids[i], lens[j], api);

	/* Refused events: counted as missed, nothing written. */
	static uint8_t big[RINGTRACE_EV_MAX_PAYLOAD + 2];
	CHECK(ringtrace_rb_reserve(rb, 5, maxp + 1) == NULL);
	attempts++, drops++;
	int rc = ringtrace_rb_write(rb, 5, big, maxp + 1);
	CHECKF(rc == -RINGTRACE_E2BIG, "write(len max+1) = %d (%s)", rc, ringtrace_strerror(rc));
	attempts++, drops++;
	rc = ringtrace_rb_write(rb, 5, big, (size_t)RINGTRACE_EV_MAX_PAYLOAD + 1);
	CHECKF(rc == -RINGTRACE_E2BIG, "write(len 65536) = %d (%s)", rc, ringtrace_strerror(rc));
	attempts++, drops++;
	CHECK(ringtrace_rb_reserve(rb, 5, (size_t)1 << 32) == NULL);
	attempts++, drops++;
	CHECK(ringtrace_rb_reserve(rb, RINGTRACE_EV_MAX_ID + 1, 8) == NULL);
	attempts++, drops++;
	rc = ringtrace_rb_write(rb, RINGTRACE_EV_MAX_ID + 1, big, 8);
	CHECKF(rc < 0, "write(id 0xFFFF) = %d", rc);
	attempts++, drops++;
	rc = ringtrace_rb_write(rb, 0x10000u, big, 8);
	CHECKF(rc < 0, "write(id 0x10000) = %d", rc);
	attempts++, drops++;
	rc = ringtrace_rb_write(rb, 0xFFFFFFFFu, big, 8);
	CHECKF(rc < 0, "write(id 0xFFFFFFFF) = %d", rc);
	attempts++, drops++;
	/* The writer still works after refusals. */
	write_ev(rb, 42, 16, 0);

	/* Enough small events to span several pages. */
	for (int i = 0; i < 2000; i++)
		write_ev(rb, (uint32_t)(i % 7), (uint32_t)(i % 129), i & 1);
	check_stats(rb, 0);
}

/* The writer is visible in writer stats. */
static void basic_writer_stats(struct basic *b)
{
	ringtrace_rb *rb = b->rb;
	struct ringtrace_rb_writer_stats ws[4];
	memset(ws, 0, sizeof(ws));
	int n = ringtrace_rb_get_writer_stats(rb, ws, 4);
	CHECKF(n == 1, "writer_stats: %d writers active, expected 1", n);
	CHECKF(ws[0].tid == tu_gettid(), "writer tid %u, expected %u", ws[0].tid, tu_gettid());
	CHECK_EQ_U64(ws[0].hit, n_exp);
	CHECK_EQ_U64(ws[0].hit, ws[0].read + ws[0].overrun + ws[0].entries);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 1);
}

/* Non-consuming snapshot sees everything, including the live page. */
static void basic_snapshot(struct basic *b)
{
	ringtrace_rb *rb = b->rb;
	size_t psz = b->psz;
	int rc;
	ringtrace_snapshot *snap = NULL;
	CHECK_OK(ringtrace_rb_snapshot(rb, &snap));
	CHECK(snap != NULL);
	CHECK_EQ_U64(ringtrace_snapshot_pages_lost(snap), 0);
	uint32_t np = ringtrace_snapshot_page_count(snap);
	CHECK(np >= 2);
	for (uint32_t i = 0; i < np; i++) {
		const struct ringtrace_page_header *p = ringtrace_snapshot_page(snap, i);
		CHECK(p != NULL);
		tu_check_page_header(p, psz);
	}
	struct ringtrace_event ev;
	uint32_t k = 0;
	while ((rc = ringtrace_snapshot_next(snap, &ev)) == 1) {
		CHECKF(k < n_exp, "snapshot has more than %u events", n_exp);
		CHECKF(ev.id == exp_ev[k].id && ev.len == exp_ev[k].len,
		       "snapshot event #%u: id %u len %u, expected %u %u", k, ev.id, ev.len,
		       exp_ev[k].id, exp_ev[k].len);
		CHECKF(tu_verify(ev.data, exp_ev[k].key, ev.len) < 0, "snapshot event #%u payload",
		       k);
		k++;
	}
	CHECKF(rc == 0, "snapshot_next: %d", rc);
	CHECKF(k == n_exp, "snapshot has %u events, %u written", k, n_exp);
	ringtrace_snapshot_free(snap);
	check_stats(rb, 0);
}

/* Read back by page after flush(rb, 0): everything phase 1 wrote. */
static void basic_flush_read(struct basic *b)
{
	ringtrace_rb *rb = b->rb;
	/* ---- read back by page after flush(rb, 0) ---- */
	int rc = ringtrace_rb_flush(rb, 0);
	CHECKF(rc >= 1, "flush(rb, 0) = %d, expected >= 1 page (idle writer)", rc);
	uint32_t flags = 0;
	uint32_t np1 = drain_pages(rb, RINGTRACE_PAGE_F_FLUSHED, &flags);
	CHECKF(np1 >= 3, "only %u pages read", np1);
	CHECKF(n_consumed == n_exp, "read %u events of %u", n_consumed, n_exp);
	check_stats(rb, n_exp);
	{
		struct ringtrace_rb_stats st = tu_stats(rb);
		CHECKF(st.pages_flushed >= 1, "pages_flushed %" PRIu64, st.pages_flushed);
		CHECKF(st.pages_published >= np1, "pages_published %" PRIu64 " < %u read",
		       st.pages_published, np1);
	}
	CHECK(ringtrace_rb_get_page(rb) == NULL);
	CHECK_EQ_U64(ringtrace_rb_flush(rb, 0), 0);
	b->np1 = np1;
}

/* Phase 2: the writer continues in a new page; its release publishes it. */
static void basic_phase2(struct basic *b)
{
	ringtrace_rb *rb = b->rb;
	uint32_t flags = 0;
	/* ---- phase 2: the writer continues in a new page; release ---- */
	for (int i = 0; i < 300; i++)
		write_ev(rb, b->ids[i % 3], b->lens[i % 6], i & 1);
	check_stats(rb, n_consumed);
	ringtrace_rb_writer_release(rb);
	{
		struct ringtrace_rb_stats st = tu_stats(rb);
		CHECK_EQ_U64(st.writers_active, 0);
	}
	uint32_t np2 = drain_pages(rb, RINGTRACE_PAGE_F_LAST, &flags);
	CHECKF(np2 >= 2, "only %u pages in phase 2", np2);
	CHECKF(n_consumed == n_exp, "read %u events of %u", n_consumed, n_exp);
	check_stats(rb, n_exp);
	{
		struct ringtrace_rb_stats st = tu_stats(rb);
		CHECK_EQ_U64(st.entries, 0);
		CHECK_EQ_U64(st.pages_free, ringtrace_rb_page_count(rb));
	}
	b->np2 = np2;
}

/* Phase 3: write again after release, read by event. */
static void basic_phase3(struct basic *b)
{
	ringtrace_rb *rb = b->rb;
	int rc;
	/* ---- phase 3: write again after release, read by event ---- */
	uint32_t first3 = n_exp;
	for (int i = 0; i < 1000; i++)
		write_ev(rb, (uint32_t)i & 0xFF, (uint32_t)(i * 13) % 300, 0);
	ringtrace_rb_writer_release(rb);
	{
		ringtrace_rb_reader *r = NULL;
		CHECK_OK(ringtrace_rb_reader_open(rb, &r));
		struct ringtrace_event ev;
		uint64_t prev = 0;
		while ((rc = ringtrace_rb_reader_next(r, &ev)) == 1) {
			CHECKF(n_consumed < n_exp, "reader: more events than written");
			const struct expected *e = &exp_ev[n_consumed];
			CHECKF(ev.id == e->id && ev.len == e->len,
			       "reader event #%u: id %u len %u, expected %u %u", n_consumed, ev.id,
			       ev.len, e->id, e->len);
			CHECKF(tu_verify(ev.data, e->key, e->len) < 0, "reader event #%u payload",
			       n_consumed);
			CHECKF(((uintptr_t)ev.data & 7u) == 0, "reader payload not aligned");
			CHECKF(ev.tid == tu_gettid(), "reader event tid %u", ev.tid);
			CHECKF(ev.ts >= prev, "reader ts went back");
			prev = ev.ts;
			n_consumed++;
		}
		CHECKF(rc == 0, "reader_next: %d (%s)", rc, ringtrace_strerror(rc));
		ringtrace_rb_reader_close(r);
	}
	CHECKF(n_consumed == n_exp, "reader read %u of %u phase-3 events", n_consumed - first3,
	       n_exp - first3);
	check_stats(rb, n_exp);
	CHECK_EQ_U64(tu_stats(rb).pages_free, ringtrace_rb_page_count(rb));
}

/* ---- the cases ---- */

static void case_geometry(void)
{
	struct basic b;
	basic_open(&b);
	basic_geometry(&b);
	basic_close(&b);
}

static void case_clock(void)
{
	struct basic b;
	basic_open(&b);
	test_clock_on(b.rb);
	basic_close(&b);
	printf("  clock: %s, %" PRIu64 " Hz\n", g_clock_tsc ? "TSC" : "CLOCK_MONOTONIC",
	       g_clock_freq);
}

/* Oversized events and bad ids are refused and counted as missed, and
 * the writer goes on writing (phase 1's stats balance). */
static void case_refused(void)
{
	struct basic b;
	basic_open(&b);
	basic_phase1_write(&b);
	basic_close(&b);
	printf("  %" PRIu64 " refused events counted as missed among %u written\n", drops, n_exp);
}

/* Events of every id and length, by write and by reserve/commit, read back
 * by page after flush(rb, 0): payloads, ids, timestamps, page headers. */
static void case_flush_read(void)
{
	struct basic b;
	basic_open(&b);
	basic_phase1_write(&b);
	basic_flush_read(&b);
	basic_close(&b);
	printf("  %u events (lens 0..%zu, ids 0..0x%x, write+reserve) in %u pages\n", n_exp, b.maxp,
	       RINGTRACE_EV_MAX_ID, b.np1);
}

static void case_writer_stats(void)
{
	struct basic b;
	basic_open(&b);
	basic_phase1_write(&b);
	basic_writer_stats(&b);
	basic_close(&b);
}

static void case_snapshot(void)
{
	struct basic b;
	basic_open(&b);
	basic_phase1_write(&b);
	basic_snapshot(&b);
	basic_close(&b);
}

static void case_release(void)
{
	struct basic b;
	basic_open(&b);
	basic_phase1_write(&b);
	basic_flush_read(&b);
	basic_phase2(&b);
	basic_close(&b);
	printf("  %u+%u pages checked\n", b.np1, b.np2);
}

static void case_reader(void)
{
	struct basic b;
	basic_open(&b);
	basic_phase1_write(&b);
	basic_flush_read(&b);
	basic_phase2(&b);
	basic_phase3(&b);
	basic_close(&b);
}

/* ---- two buffers, one thread: separate writer state ---- */
static void case_two_buffers(void)
{
	int rc;
	struct ringtrace_rb_config c2;
	tu_config(&c2, 4096, 8, RINGTRACE_RB_DISCARD);
	ringtrace_rb *a = tu_create(&c2);
	ringtrace_rb *b = tu_create(&c2);
	for (uint32_t i = 0; i < 200; i++) {
		uint64_t va = 1000000 + i, vb = 2000000 + i;
		CHECK_OK(ringtrace_rb_write(a, 1, &va, sizeof(va)));
		CHECK_OK(ringtrace_rb_write(b, 2, &vb, sizeof(vb)));
	}
	ringtrace_rb_writer_release(a);
	ringtrace_rb_writer_release(b);
	ringtrace_rb *bufs[2] = {a, b};
	for (int k = 0; k < 2; k++) {
		const struct ringtrace_page_header *p;
		uint32_t i = 0;
		while ((p = ringtrace_rb_get_page(bufs[k])) != NULL) {
			tu_check_page_header(p, 4096);
			struct ringtrace_page_cursor c;
			struct ringtrace_event ev;
			ringtrace_page_cursor_init(&c, p);
			while ((rc = ringtrace_page_next(&c, &ev)) == 1) {
				uint64_t v;
				CHECK(ev.len == 8 && ev.id == (uint32_t)k + 1);
				memcpy(&v, ev.data, 8);
				CHECKF(v == (uint64_t)(k + 1) * 1000000 + i,
				       "buffer %d event %u: value %" PRIu64, k, i, v);
				i++;
			}
			CHECK(rc == 0);
			ringtrace_rb_put_page(bufs[k], p);
		}
		CHECKF(i == 200, "buffer %d: %u events read of 200", k, i);
	}
	ringtrace_rb_destroy(a);
	ringtrace_rb_destroy(b);
}

/*
 * ringtrace_rb_reserve_general_ (what a tracepoint's slow path calls after
 * its own inline reservation was declined) records like
 * ringtrace_rb_reserve: a thread's first event (attach), events in the
 * middle of a page and page switches alike, alternating with the inline
 * entry, commit by ringtrace_rb_commit; a bad id or size is refused and
 * counted as missed. Read back: every value in order, timestamps
 * monotonic, hit and missed exact.
 */
static void test_reserve_general(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 16, RINGTRACE_RB_DISCARD);
	ringtrace_rb *rb = tu_create(&cfg);
	const uint32_t n = 2000; /* ~8 pages of 4 KiB at 24 bytes an event */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t *p = (uint64_t *)((i % 3 != 1) ? ringtrace_rb_reserve_general_(rb, 7, 8)
							: ringtrace_rb_reserve(rb, 7, 8));
		CHECKF(p != NULL, "event %u: %s", i, ringtrace_last_error());
		*p = 5000000 + i;
		ringtrace_rb_commit(rb);
		if (i == n / 2) {
			CHECK(ringtrace_rb_reserve_general_(rb, RINGTRACE_EV_MAX_ID + 1, 8) ==
			      NULL);
			CHECK(ringtrace_rb_reserve_general_(rb, 7, cfg.page_size) == NULL);
		}
	}
	ringtrace_rb_writer_release(rb);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.hit, n);
	CHECK_EQ_U64(st.missed, 2);
	const struct ringtrace_page_header *p;
	uint32_t i = 0, pages = 0;
	uint64_t last = 0;
	int rc;
	while ((p = ringtrace_rb_get_page(rb)) != NULL) {
		tu_check_page_header(p, 4096);
		struct ringtrace_page_cursor c;
		struct ringtrace_event ev;
		ringtrace_page_cursor_init(&c, p);
		while ((rc = ringtrace_page_next(&c, &ev)) == 1) {
			uint64_t v;
			tu_check_event_in_page(p, &ev);
			CHECK(ev.len == 8 && ev.id == 7);
			memcpy(&v, ev.data, 8);
			CHECKF(v == 5000000 + (uint64_t)i, "event %u: value %" PRIu64, i, v);
			CHECKF(ev.ts >= last, "event %u: timestamp %" PRIu64 " after %" PRIu64, i,
			       ev.ts, last);
			last = ev.ts;
			i++;
		}
		CHECK(rc == 0);
		pages++;
		ringtrace_rb_put_page(rb, p);
	}
	CHECKF(i == n, "%u events read of %u", i, n);
	CHECKF(pages >= 5, "%u pages: too few page switches to test them", pages);
	ringtrace_rb_destroy(rb);
}

/*
 * ringtrace_rb_prepare_thread: the slot is claimed before any event and
 * nothing is counted; the thread's events then use that slot (no second
 * attach); a second call changes nothing.
 */
static void test_prepare_thread(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 16, RINGTRACE_RB_DISCARD);
	ringtrace_rb *rb = tu_create(&cfg);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 0);
	CHECKF(ringtrace_rb_prepare_thread(rb) == 0, "%s", ringtrace_last_error());
	st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 1);
	CHECK_EQ_U64(st.hit, 0);
	CHECK_EQ_U64(st.missed, 0);
	struct ringtrace_rb_writer_stats ws[2];
	CHECK(ringtrace_rb_get_writer_stats(rb, ws, 2) == 1);
	CHECK_EQ_U64(ws[0].tid, (uint64_t)gettid());
	uint32_t slot = ws[0].slot;
	CHECK_OK(ringtrace_rb_prepare_thread(rb));
	for (uint32_t i = 0; i < 10; i++)
		CHECK_OK(ringtrace_rb_write(rb, 1, &i, sizeof(i)));
	st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 1);
	CHECK_EQ_U64(st.hit, 10);
	CHECK(ringtrace_rb_get_writer_stats(rb, ws, 2) == 1);
	CHECK_EQ_U64(ws[0].slot, slot);
	CHECK_EQ_U64(ws[0].hit, 10);
	ringtrace_rb_writer_release(rb);
	ringtrace_rb_destroy(rb);
}

struct prep_arg {
	ringtrace_rb *rb;
	int prep, write;
	char err[256];
};

static void *prep_thread(void *p)
{
	struct prep_arg *a = p;
	a->prep = ringtrace_rb_prepare_thread(a->rb);
	snprintf(a->err, sizeof(a->err), "%s", ringtrace_last_error());
	uint32_t v = 7;
	a->write = ringtrace_rb_write(a->rb, 1, &v, sizeof(v));
	return NULL;
}

/* Every slot taken: -RINGTRACE_ENOSPC saying so, and no event counted
 * (the thread's event after it is dropped and counted, as before). */
static void test_prepare_thread_no_slot(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 16, RINGTRACE_RB_DISCARD);
	cfg.max_writers = 1;
	ringtrace_rb *rb = tu_create(&cfg);
	CHECK_OK(ringtrace_rb_prepare_thread(rb));
	struct prep_arg a = {.rb = rb};
	pthread_t th;
	CHECK(pthread_create(&th, NULL, prep_thread, &a) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	CHECKF(a.prep == -RINGTRACE_ENOSPC, "prepare_thread in a second thread: %d", a.prep);
	CHECKF(strstr(a.err, "writer slots") != NULL, "error: %s", a.err);
	CHECKF(a.write == -RINGTRACE_ENOSPC, "its event: %d", a.write);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.missed, 1); /* the event, not the prepare */
	CHECK_EQ_U64(st.writers_active, 1);
	ringtrace_rb_writer_release(rb);
	ringtrace_rb_destroy(rb);
}

/* A handle that only reads (attached by descriptor) cannot be written. */
static void test_prepare_thread_reader(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 16, RINGTRACE_RB_DISCARD);
	ringtrace_rb *rb = tu_create(&cfg);
	ringtrace_rb *ro = NULL;
	CHECKF(ringtrace_rb_attach_fd(ringtrace_rb_fd(rb), &ro) == 0, "%s", ringtrace_last_error());
	int rc = ringtrace_rb_prepare_thread(ro);
	CHECKF(rc == -RINGTRACE_EINVAL, "prepare_thread on a reader's handle: %d", rc);
	CHECKF(strstr(ringtrace_last_error(), "only reads") != NULL, "error: %s",
	       ringtrace_last_error());
	CHECK_EQ_U64(tu_stats(rb).writers_active, 0);
	ringtrace_rb_destroy(ro);
	ringtrace_rb_destroy(rb);
}

/*
 * The warm-up mark (ringtrace/static/ring.h): a page is taken with limit
 * RINGTRACE_WARM_AHEAD_ short of its end; the event that crosses it moves
 * limit to the end and goes on in the same page. So, through the inline
 * path and the general one, in both modes: limit is end less the mark
 * until an event crosses it and end after; a page is only left when the
 * next record does not fit before its end; every line the warm-up asks
 * for is in the pool's mapping; and (discard mode, read back) each full
 * page holds all the events that fit it.
 */
static void warm_case(enum ringtrace_rb_mode mode, int general)
{
	const uint32_t ps = 16384, np = 8, len = 8, span = RINGTRACE_EV_SPAN_(8);
	const uint32_t per_page = (ps - RINGTRACE_PAGE_HEADER_SIZE) / span;
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, ps, np, mode);
	ringtrace_rb *rb = tu_create(&cfg);
	const struct ringtrace_rb_head_ *hd = (const struct ringtrace_rb_head_ *)(const void *)rb;
	struct ringtrace_wtls_ *t = &ringtrace_wtls_[hd->idx];
	const char *lo = hd->base, *hi = hd->pages + (size_t)np * ps;
	const uint32_t n = 3 * per_page + 10; /* three switches, in discard mode no drop */
	uint32_t switches = 0, crossed = 0;
	const char *page = NULL;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t off = t->off, end = t->end;
		const char *before = t->page;
		uint64_t *p = (uint64_t *)(general ? ringtrace_rb_reserve_general_(rb, 3, len)
						   : ringtrace_rb_reserve(rb, 3, len));
		CHECKF(p != NULL, "event %u: %s", i, ringtrace_last_error());
		*p = i;
		ringtrace_rb_commit(rb);
		CHECK(t->end == ps);
		if (t->page != before) {
			/* a switch: the first page, or one whose end came */
			CHECKF(before == NULL || off + span > end,
			       "event %u: page left at offset %u of %u, with room for it", i, off,
			       end);
			switches += before != NULL;
			page = t->page;
			for (int k = 0; k < RINGTRACE_WARM_LINES_; k++) {
				const char *l = (const char *)t->slot + t->warm_off[k];
				CHECKF(l >= lo && l < hi,
				       "warm-up line %d at %td, outside [%td, %td)", k,
				       l - (const char *)t->slot, lo - (const char *)t->slot,
				       hi - (const char *)t->slot);
			}
			CHECK(t->warm_rb == (const char *)rb);
		}
		CHECK(t->page == page);
		if (t->off <= ps - RINGTRACE_WARM_AHEAD_) {
			CHECKF(t->limit == ps - RINGTRACE_WARM_AHEAD_,
			       "event %u: offset %u, limit %u before the mark", i, t->off,
			       t->limit);
		} else {
			CHECKF(t->limit == ps, "event %u: offset %u past the mark, limit %u", i,
			       t->off, t->limit);
			crossed += off <= ps - RINGTRACE_WARM_AHEAD_;
		}
	}
	CHECKF(switches == 3, "%u page switches for %u events of %u a page", switches, n, per_page);
	CHECKF(crossed == 3, "the mark crossed %u times in the 3 full pages", crossed);
	ringtrace_rb_writer_release(rb);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.hit, n);
	CHECK_EQ_U64(st.missed, 0);
	if (mode == RINGTRACE_RB_DISCARD) {
		const struct ringtrace_page_header *ph;
		uint32_t pages = 0, read = 0;
		while ((ph = ringtrace_rb_get_page(rb)) != NULL) {
			tu_check_page_header(ph, ps);
			CHECKF(pages == 3 || ph->events == per_page,
			       "page %u holds %u events, %u fit it", pages, (unsigned)ph->events,
			       per_page);
			read += (uint32_t)ph->events;
			pages++;
			ringtrace_rb_put_page(rb, ph);
		}
		CHECK(pages == 4 && read == n);
	}
	ringtrace_rb_destroy(rb);
}

/*
 * The clock reading an inline attempt leaves behind when it declines
 * (ringtrace_wtls_.decl_ts): the general path it falls back to takes it
 * instead of reading the clock again, once, and only a reading no older
 * than the thread's last event; a stale one is never used, nor one left
 * in the thread's state before its attach (last_ts is 0 then: the age
 * test cannot tell). An event's timestamp is the thread's last_ts after
 * it.
 */
/* A buffer of 16 pages of 4 KiB, and the calling thread's state there. */
static ringtrace_rb *decl_buffer(enum ringtrace_rb_mode mode, struct ringtrace_wtls_ **t,
				 int *is_tsc)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 16, mode);
	ringtrace_rb *rb = tu_create(&cfg);
	const struct ringtrace_rb_head_ *hd = (const struct ringtrace_rb_head_ *)(const void *)rb;
	*t = &ringtrace_wtls_[hd->idx];
	*is_tsc = (int)hd->is_tsc;
	return rb;
}

static uint64_t decl_write(ringtrace_rb *rb, struct ringtrace_wtls_ *t, int general)
{
	uint64_t *p = (uint64_t *)(general ? ringtrace_rb_reserve_general_(rb, 7, 8)
					   : ringtrace_rb_reserve(rb, 7, 8));
	CHECKF(p != NULL, "%s", ringtrace_last_error());
	*p = 1;
	ringtrace_rb_commit(rb);
	return ringtrace_last_ts_(t);
}

static void test_decl_taken(void)
{
	struct ringtrace_wtls_ *t;
	int is_tsc;
	ringtrace_rb *rb = decl_buffer(RINGTRACE_RB_DISCARD, &t, &is_tsc);
	uint64_t last = decl_write(rb, t, 0);
	CHECK_EQ_U64(t->decl_ts, 0);
	/* A reading just after the last event's: that is the next event's
	 * timestamp (a fresh reading would be later: time has passed). */
	t->decl_ts = last + 5;
	uint64_t ts = decl_write(rb, t, 1);
	if (is_tsc)
		CHECK_EQ_U64(ts, last + 5);
	else
		CHECK(ts != last + 5); /* (another clock: never taken) */
	CHECK_EQ_U64(t->decl_ts, 0);
	/* Taken once: the next general write reads the clock. */
	uint64_t ts2 = decl_write(rb, t, 1);
	CHECK(ts2 > ts);
	/* Through the inline path: the page's end declines it, which leaves
	 * its reading; the general path then records with that reading and
	 * switches pages. */
	if (is_tsc) {
		uint32_t switched = 0;
		for (int i = 0; i < 1000 && !switched; i++) {
			struct ringtrace_fres_ f;
			const char *page = t->page;
			uint64_t before = ringtrace_last_ts_(t);
			void *q = ringtrace_reserve_fast_(rb, 7, 8, &f);
			if (q) {
				*(uint64_t *)q = 2;
				ringtrace_commit_fast_(&f);
				continue;
			}
			CHECKF(t->decl_ts >= before,
			       "declined with reading %" PRIu64 " (last %" PRIu64 ")", t->decl_ts,
			       before);
			uint64_t r = t->decl_ts;
			CHECK_EQ_U64(decl_write(rb, t, 1), r);
			CHECK(t->page != page);
			CHECK_EQ_U64(((const struct ringtrace_page_header *)(const void *)t->page)
					     ->timestamp_begin,
				     r);
			switched = 1;
		}
		CHECK(switched);
	}
	ringtrace_rb_writer_release(rb);
	ringtrace_rb_destroy(rb);
}

static void test_decl_stale(void)
{
	struct ringtrace_wtls_ *t;
	int is_tsc;
	ringtrace_rb *rb = decl_buffer(RINGTRACE_RB_OVERWRITE, &t, &is_tsc);
	uint64_t last = decl_write(rb, t, 0);
	/* Older than the last event (a signal handler's event came after it):
	 * the clock is read, and the reading is gone. */
	t->decl_ts = last - 1;
	uint64_t ts = decl_write(rb, t, 1);
	CHECK(ts > last);
	CHECK_EQ_U64(t->decl_ts, 0);
	/* Left by an attempt whose general path never ran, then an event
	 * written inline: older than that event, not used. */
	t->decl_ts = ts + 1;
	uint64_t ts2 = decl_write(rb, t, 0);
	CHECK(ts2 > ts + 1);
	uint64_t ts3 = decl_write(rb, t, 1);
	CHECK(ts3 > ts2);
	CHECK_EQ_U64(t->decl_ts, 0);
	/* A record that goes the general way without a decline (an id above
	 * the largest: refused there, counted as missed) leaves the reading
	 * alone: only a decline's general path takes it. */
	t->decl_ts = ts3 + 1;
	uint64_t *p = (uint64_t *)ringtrace_rb_reserve(rb, RINGTRACE_EV_MAX_ID + 1, 8);
	CHECK(p == NULL); /* (refused: counted as missed) */
	CHECK_EQ_U64(t->decl_ts, ts3 + 1);
	ringtrace_rb_writer_release(rb);
	ringtrace_rb_destroy(rb);
}

static void test_decl_attach(void)
{
	struct ringtrace_wtls_ *t;
	int is_tsc;
	ringtrace_rb *rb = decl_buffer(RINGTRACE_RB_DISCARD, &t, &is_tsc);
	/* What a buffer that had this index before may have left. */
	t->decl_ts = 1;
	/* Attached before any event, then the general path directly, with
	 * no inline attempt in between to replace the reading: last_ts is 0,
	 * so only the attach's clearing keeps 1 out. */
	CHECK_OK(ringtrace_rb_prepare_thread(rb));
	CHECK_EQ_U64(t->decl_ts, 0);
	uint64_t ts = decl_write(rb, t, 1);
	CHECK(ts > 1);
	ringtrace_rb_writer_release(rb);
	ringtrace_rb_destroy(rb);
}

/*
 * The inline path's gap test works on the clock's two halves
 * (ringtrace/static/ring.h): it takes an event only if the high half is
 * the last event's and the low half not below it; anything else goes the
 * general way, which writes the header the real distance needs (the
 * compact one up to 2^32 - 1 ticks, the extended one beyond) and keeps
 * the stream's timestamps from going back. A planted last timestamp
 * stands for each case; the events read back with the timestamps the
 * writer gave them.
 */
struct halves_ev {
	uint64_t ts;   /* what the writer gave the event (its last_ts after) */
	uint32_t span; /* bytes it took in the page */
};

/* Fills a record reserved by the library (p) with key and commits it:
 * the event's timestamp and the bytes it took since offset off0. */
static struct halves_ev halves_commit(ringtrace_rb *rb, struct ringtrace_wtls_ *t, uint64_t *p,
				      uint32_t off0, uint64_t key)
{
	CHECKF(p != NULL, "%s", ringtrace_last_error());
	*p = key;
	ringtrace_rb_commit(rb);
	struct halves_ev e = {ringtrace_last_ts_(t), t->off - off0};
	return e;
}

/* One event after the thread's last timestamp is set to planted: the
 * inline attempt must decline, the general path then records it. */
static struct halves_ev halves_write(ringtrace_rb *rb, struct ringtrace_wtls_ *t, uint64_t planted,
				     uint64_t key)
{
	ringtrace_set_last_ts_(t, planted);
	uint32_t off0 = t->off;
	struct ringtrace_fres_ f;
	void *q = ringtrace_reserve_fast_(rb, 7, 8, &f);
	CHECKF(q == NULL,
	       "inline path took an event after last timestamp %#" PRIx64 " (declines: %#" PRIx64
	       ")",
	       planted, t->decl_ts);
	return halves_commit(rb, t, (uint64_t *)ringtrace_rb_reserve_general_(rb, 7, 8), off0, key);
}

/* One event through the inline path, which must take it unless the
 * counter's high half moved on since the last event (once in 2^32 ticks). */
static struct halves_ev halves_inline(ringtrace_rb *rb, struct ringtrace_wtls_ *t, uint64_t key)
{
	uint32_t off0 = t->off;
	struct ringtrace_fres_ f;
	uint64_t *q = (uint64_t *)ringtrace_reserve_fast_(rb, 7, 8, &f);
	if (!q) {
		CHECKF(t->decl_ts >> 32 != t->last_hi,
		       "inline path declined reading %#" PRIx64 " after the last %#" PRIx64,
		       t->decl_ts, ringtrace_last_ts_(t));
		return halves_commit(rb, t, (uint64_t *)ringtrace_rb_reserve_general_(rb, 7, 8),
				     off0, key);
	}
	*q = key;
	ringtrace_commit_fast_(&f);
	struct halves_ev e = {ringtrace_last_ts_(t), t->off - off0};
	return e;
}

/* Reads the one page back: n events, keys 1..n, timestamps as written. */
static void halves_read_back(ringtrace_rb *rb, const struct halves_ev *e, uint32_t n)
{
	ringtrace_rb_writer_release(rb);
	const struct ringtrace_page_header *p = ringtrace_rb_get_page(rb);
	CHECK(p != NULL);
	tu_check_page_header(p, 4096);
	CHECK_EQ_U64(p->events, n);
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	ringtrace_page_cursor_init(&c, p);
	for (uint32_t i = 0; i < n; i++) {
		CHECK(ringtrace_page_next(&c, &ev) == 1);
		uint64_t x;
		memcpy(&x, ev.data, 8);
		CHECK_EQ_U64(x, (uint64_t)i + 1);
		CHECKF(ev.ts == e[i].ts,
		       "event %u read back with ts %#" PRIx64 ", written %#" PRIx64, i + 1, ev.ts,
		       e[i].ts);
	}
	ringtrace_rb_put_page(rb, p);
}

/* The span of an 8-byte event with the compact header, with the extended. */
#define HALVES_COMPACT (RINGTRACE_EV_HEADER_SIZE + 8u)
#define HALVES_EXT (RINGTRACE_EV_EXT_HEADER_SIZE + 8u)

/* The buffer, or NULL (destroyed) if its clock is not the cycle counter. */
static ringtrace_rb *halves_buffer(struct ringtrace_wtls_ **t)
{
	int is_tsc;
	ringtrace_rb *rb = decl_buffer(RINGTRACE_RB_DISCARD, t, &is_tsc);
	if (!is_tsc) {
		ringtrace_rb_destroy(rb);
		return NULL;
	}
	return rb;
}

#define HALVES_NO_TSC "the buffer's clock is not the cycle counter: there is no inline path"

/* One event, whichever way ringtrace_rb_reserve() takes it. */
static struct halves_ev halves_any(ringtrace_rb *rb, struct ringtrace_wtls_ *t, uint64_t key)
{
	uint32_t off0 = t->off;
	return halves_commit(rb, t, (uint64_t *)ringtrace_rb_reserve(rb, 7, 8), off0, key);
}

static void test_halves_behind(void)
{
	struct ringtrace_wtls_ *t;
	ringtrace_rb *rb = halves_buffer(&t);
	if (!rb)
		CHECK_SKIP(HALVES_NO_TSC);
	struct halves_ev e[3];
	e[0] = halves_any(rb, t, 1); /* (attaches) */
	/* A last event 2^31 ticks ahead (~1 s at 2 GHz: a descheduled or
	 * sanitized test does not catch up with it), as after a clock that
	 * went back: the same high half, or, if this one is to move on within
	 * that, the next; a lower timestamp either way. (Less than 2^32: the
	 * reader decodes it as the distance from the first event.) */
	uint64_t planted = e[0].ts + (1ull << 31);
	e[1] = halves_write(rb, t, planted, 2);
	CHECKF(e[1].ts >= planted, "ts %#" PRIx64 " below the last event's %#" PRIx64, e[1].ts,
	       planted);
	CHECK_EQ_U64(e[1].span, HALVES_COMPACT);
	/* (the clock is still behind: the next event is clamped too) */
	e[2] = halves_any(rb, t, 3);
	CHECK(e[2].ts >= e[1].ts);
	CHECK_EQ_U64(e[2].span, HALVES_COMPACT);
	halves_read_back(rb, e, 3);
	ringtrace_rb_destroy(rb);
}

static void test_halves_carry(void)
{
	struct ringtrace_wtls_ *t;
	ringtrace_rb *rb = halves_buffer(&t);
	if (!rb)
		CHECK_SKIP(HALVES_NO_TSC);
	struct halves_ev e[3];
	e[0] = halves_any(rb, t, 1);
	if (e[0].ts >> 32 == 0) /* (an arm64 counter may be minutes after boot) */
		CHECK_SKIP("the counter (%#" PRIx64 ") is not past 2^32 yet", e[0].ts);
	/* A last event just before the high half moved on to this one's: a
	 * distance the compact header holds, although the halves differ. */
	uint64_t planted = ((e[0].ts >> 32) - 1) << 32 | 0xFFFFFF00u;
	e[1] = halves_write(rb, t, planted, 2);
	CHECK(e[1].ts > planted);
	CHECKF(e[1].span == (e[1].ts - planted <= 0xFFFFFFFFu ? HALVES_COMPACT : HALVES_EXT),
	       "%u bytes for a distance of %#" PRIx64 " ticks", e[1].span, e[1].ts - planted);
	e[2] = halves_inline(rb, t, 3);
	CHECK_EQ_U64(e[2].span, HALVES_COMPACT);
	halves_read_back(rb, e, 3);
	ringtrace_rb_destroy(rb);
}

static void test_halves_gap(void)
{
	struct ringtrace_wtls_ *t;
	ringtrace_rb *rb = halves_buffer(&t);
	if (!rb)
		CHECK_SKIP(HALVES_NO_TSC);
	struct halves_ev e[3];
	e[0] = halves_any(rb, t, 1);
	if (e[0].ts >> 33 == 0)
		CHECK_SKIP("the counter (%#" PRIx64 ") is not past 2^33 yet", e[0].ts);
	/* 2^33 ticks before: the high half 2 below, the low half the same. */
	e[1] = halves_write(rb, t, e[0].ts - (1ull << 33), 2);
	CHECK_EQ_U64(e[1].span, HALVES_EXT);
	e[2] = halves_inline(rb, t, 3);
	CHECK_EQ_U64(e[2].span, HALVES_COMPACT);
	halves_read_back(rb, e, 3);
	ringtrace_rb_destroy(rb);
}

/*
 * Overwrite mode's overrun, by who recycled the page: a writer that
 * recycles pages of its own stream counts them in its slot's overrun_own
 * (a plain add: no locked instruction on its page switch), pages of
 * another writer go to that writer's tagged counter. The stats and the
 * per-writer stats add both, and a released writer's overrun moves to
 * the retired totals. A later writer in the same slot (a new stream)
 * that recycles the earlier owner's pages does not count them as its
 * own. Once everything is drained every event is read or counted.
 */
#define OV_PS 4096u
#define OV_NPAGES 8u
#define OV_LEN 56u /* 64 bytes with the header */

static ringtrace_rb *ov_rb;
static atomic_int ov_step;

static void ov_wait(int step)
{
	while (atomic_load(&ov_step) < step)
		sched_yield();
}

static void ov_write(uint64_t n)
{
	char buf[OV_LEN];
	memset(buf, 0x5A, sizeof(buf));
	for (uint64_t i = 0; i < n; i++)
		CHECK_OK(ringtrace_rb_write(ov_rb, 3, buf, sizeof(buf)));
}

/* Thread A: three pages' worth, then idle (its slot kept) until told. */
static void *ov_writer_a(void *arg)
{
	(void)arg;
	ov_write(3 * 62 + 10);
	atomic_store(&ov_step, 1);
	ov_wait(2);
	ringtrace_rb_writer_release(ov_rb);
	return NULL;
}

static const struct ringtrace_rb_writer_stats *ov_find(const struct ringtrace_rb_writer_stats *w,
						       int n, uint32_t tid)
{
	for (int i = 0; i < n; i++)
		if (w[i].tid == tid)
			return &w[i];
	CHECKF(0, "no writer stats for tid %u", tid);
	return NULL;
}

static void test_overrun_own(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, OV_PS, OV_NPAGES, RINGTRACE_RB_OVERWRITE);
	cfg.max_writers = 4;
	cfg.flush_interval_ms = 60000;
	ov_rb = tu_create(&cfg);
	size_t size;
	char *b = pl_map(ringtrace_rb_fd(ov_rb), &size);
	CHECKF(b != NULL, "mapping the pool: %s", strerror(errno));
	atomic_store(&ov_step, 0);
	pthread_t ta;
	CHECK(pthread_create(&ta, NULL, ov_writer_a, NULL) == 0);
	ov_wait(1);
	/* B (this thread): forty pages' worth through an 8-page pool. A's
	 * three published pages are the oldest: B recycles them first. */
	ov_write(40 * 62);

	struct ringtrace_rb_writer_stats w[4];
	int n = ringtrace_rb_get_writer_stats(ov_rb, w, 4);
	CHECKF(n == 2, "%d writers", n);
	const struct ringtrace_rb_writer_stats *wb = ov_find(w, n, tu_gettid());
	const struct ringtrace_rb_writer_stats *wa = &w[wb == &w[0] ? 1 : 0];
	uint64_t sa = pl_slot(b, wa->slot), sb = pl_slot(b, wb->slot);
	/* A's pages were recycled by B: A's tagged counter, not its own. */
	CHECK_EQ_U64(wa->overrun, 3 * 62);
	CHECK_EQ_U64(pl_u64(b, sa + PL_SLOT_OVERRUN) & ((1ull << 48) - 1), 3 * 62);
	CHECK_EQ_U64(pl_u64(b, sa + PL_SLOT_OVERRUN_OWN), 0);
	/* B recycled its own: overrun_own, nothing tagged. */
	CHECKF(wb->overrun > 0 && wb->overrun % 62 == 0, "B's overrun %" PRIu64, wb->overrun);
	CHECK_EQ_U64(pl_u64(b, sb + PL_SLOT_OVERRUN_OWN), wb->overrun);
	CHECK_EQ_U64(pl_u64(b, sb + PL_SLOT_OVERRUN) & ((1ull << 48) - 1), 0);
	struct ringtrace_rb_stats st = tu_stats(ov_rb);
	CHECK_EQ_U64(st.overrun, wa->overrun + wb->overrun);
	CHECK_EQ_U64(st.hit, 3 * 62 + 10 + 40 * 62);
	CHECK_EQ_U64(st.entries, st.hit - st.overrun);

	/* Both released: their last pages published, their counters folded
	 * into the retired totals, none lost or counted twice, the slots' own
	 * counters cleared. */
	ringtrace_rb_writer_release(ov_rb);
	atomic_store(&ov_step, 2);
	CHECK(pthread_join(ta, NULL) == 0);
	st = tu_stats(ov_rb);
	CHECK_EQ_U64(st.writers_active, 0);
	CHECK_EQ_U64(st.overrun, wa->overrun + wb->overrun);
	CHECK_EQ_U64(pl_u64(b, sb + PL_SLOT_OVERRUN_OWN), 0);
	CHECK_EQ_U64(pl_u64(b, sa + PL_SLOT_OVERRUN) & ((1ull << 48) - 1), 0);

	/* C (this thread, attached again: a slot of A's or B's) recycles their
	 * last pages, still in the FIFO: pages of its slot's earlier stream
	 * are not its own (the retired totals take them), only its own pages
	 * go to its overrun_own. */
	uint64_t lost_ab = st.overrun;
	ov_write(40 * 62);
	n = ringtrace_rb_get_writer_stats(ov_rb, w, 4);
	CHECKF(n == 1, "%d writers", n);
	struct ringtrace_rb_writer_stats wc = w[0];
	CHECKF(wc.slot == wa->slot || wc.slot == wb->slot, "C in slot %u", wc.slot);
	uint64_t sc = pl_slot(b, wc.slot);
	CHECK_EQ_U64(pl_u64(b, sc + PL_SLOT_OVERRUN_OWN), wc.overrun);
	CHECK_EQ_U64(pl_u64(b, sc + PL_SLOT_OVERRUN) & ((1ull << 48) - 1), 0);
	ringtrace_rb_writer_release(ov_rb);

	/* Drained: every event is read or counted, C's exactly by C. */
	const struct ringtrace_page_header *p;
	uint64_t read_ab = 0, read_c = 0;
	while ((p = ringtrace_rb_get_page(ov_rb)) != NULL) {
		if (p->stream_instance_id == wc.stream)
			read_c += p->events;
		else if (p->stream_instance_id == wa->stream || p->stream_instance_id == wb->stream)
			read_ab += p->events;
		else
			CHECKF(0, "page of stream %" PRIu64, p->stream_instance_id);
		ringtrace_rb_put_page(ov_rb, p);
	}
	CHECK_EQ_U64(read_c + wc.overrun, 40 * 62);
	CHECKF(read_ab < 3 * 62 + 10 + 40 * 62 - lost_ab, "A's and B's last pages not recycled");
	st = tu_stats(ov_rb);
	CHECK_EQ_U64(st.writers_active, 0);
	CHECK_EQ_U64(st.hit, 3 * 62 + 10 + 2 * 40 * 62);
	CHECK_EQ_U64(st.read, read_ab + read_c);
	CHECK_EQ_U64(st.read + st.overrun, st.hit);
	CHECK_EQ_U64(st.entries, 0);
	CHECK_EQ_U64(pl_u64(b, sc + PL_SLOT_OVERRUN_OWN), 0);
	munmap(b, size);
	ringtrace_rb_destroy(ov_rb);
}

static void test_warm_inline_discard(void)
{
	warm_case(RINGTRACE_RB_DISCARD, 0);
}

static void test_warm_general_discard(void)
{
	warm_case(RINGTRACE_RB_DISCARD, 1);
}

static void test_warm_inline_overwrite(void)
{
	warm_case(RINGTRACE_RB_OVERWRITE, 0);
}

static void test_warm_general_overwrite(void)
{
	warm_case(RINGTRACE_RB_OVERWRITE, 1);
}

/*
 * In overwrite mode each page switch notes, for the next switch's
 * warm-up, the header of the page it will most likely recycle: the one in
 * the FIFO cell at the read position (writer.c, rt_warm_note). It does so
 * whatever the cell's place in its cache line: a guess read only when the
 * cell shared the popped one's line left one switch in four with that
 * header far away.
 */
static void test_warm_next_header(void)
{
	const uint32_t ps = 16384, np = 16, len = 8;
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, ps, np, RINGTRACE_RB_OVERWRITE);
	ringtrace_rb *rb = tu_create(&cfg);
	const struct ringtrace_rb_head_ *hd = (const struct ringtrace_rb_head_ *)(const void *)rb;
	const struct ringtrace_wtls_ *t = &ringtrace_wtls_[hd->idx];
	const char *b = hd->base;
	uint32_t i = 0, seen = 0, alignments = 0;
	while (seen < 12) {
		const char *before = t->page;
		uint64_t *p = (uint64_t *)ringtrace_rb_reserve(rb, 3, len);
		CHECKF(p != NULL, "event %u: %s", i, ringtrace_last_error());
		*p = i++;
		ringtrace_rb_commit(rb);
		/* (switches that recycle: the free list is empty by then) */
		if (t->page == before || tu_stats(rb).pages_published < 2 * np)
			continue;
		uint64_t deq = pl_u64(b, PL_DEQ_POS), cell = pl_cell(b, deq);
		CHECK_EQ_U64(pl_u64(b, cell), deq + 1); /* filled: the next pop's */
		const char *h = b + pl_page(b, pl_u32(b, cell + 8));
		int named = 0;
		for (int k = 0; k < RINGTRACE_WARM_LINES_; k++)
			named |= (const char *)t->slot + t->warm_off[k] == h;
		CHECKF(named,
		       "switch %u: next header not a warm-up line (position %llu, %llu in line)",
		       seen, (unsigned long long)deq, (unsigned long long)(deq % 4));
		alignments |= 1u << (deq % 4);
		seen++;
	}
	CHECK_EQ_U64(alignments, 0xF); /* each place in a line */
	ringtrace_rb_writer_release(rb);
	ringtrace_rb_destroy(rb);
}

/*
 * A page's header names the CPU its writer ran on when it began the page
 * (sched_getcpu at the take: writer.c, rt_take_page). The thread is pinned to each CPU it
 * may run on in turn, and fills a page there: the next page's header says
 * that CPU.
 */
static void test_header_cpu(void)
{
	const uint32_t ps = 16384, np = 8, len = 8;
	const uint32_t per_page = (ps - RINGTRACE_PAGE_HEADER_SIZE) / RINGTRACE_EV_SPAN_(len);
	cpu_set_t was, one;
	CHECK(sched_getaffinity(0, sizeof(was), &was) == 0);
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, ps, np, RINGTRACE_RB_OVERWRITE);
	ringtrace_rb *rb = tu_create(&cfg);
	const struct ringtrace_rb_head_ *hd = (const struct ringtrace_rb_head_ *)(const void *)rb;
	const struct ringtrace_wtls_ *t = &ringtrace_wtls_[hd->idx];
	uint32_t tried = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE && tried < 4; cpu++) {
		if (!CPU_ISSET(cpu, &was))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
		const char *page = t->page;
		for (uint32_t i = 0; i <= per_page && t->page == page; i++)
			CHECK_OK(ringtrace_rb_write(rb, 3, &i, sizeof(i)));
		CHECK(t->page != page);
		const struct ringtrace_page_header *h = (const struct ringtrace_page_header *)
								t->page;
		CHECK_EQ_U64(h->cpu, (uint64_t)cpu);
		tried++;
	}
	CHECK(tried > 0);
	CHECK(sched_setaffinity(0, sizeof(was), &was) == 0);
	ringtrace_rb_writer_release(rb);
	ringtrace_rb_destroy(rb);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(ring_basic_config_init_sets_the_defaults, test_defaults),
	CHECK_CASE(ring_basic_default_buffer_geometry_and_empty_stats, case_geometry),
	CHECK_CASE(ring_basic_clock_monotonic_and_close_to_clock_monotonic, case_clock),
	CHECK_CASE(ring_basic_oversized_or_bad_id_events_counted_as_missed, case_refused),
	CHECK_CASE(ring_basic_every_id_and_length_read_back_by_page_after_flush, case_flush_read),
	CHECK_CASE(ring_basic_writer_stats_show_the_writing_thread, case_writer_stats),
	CHECK_CASE(ring_basic_snapshot_sees_every_event_without_consuming, case_snapshot),
	CHECK_CASE(ring_basic_writer_release_publishes_its_last_page, case_release),
	CHECK_CASE(ring_basic_reader_reads_events_written_after_release, case_reader),
	CHECK_CASE(ring_basic_two_buffers_keep_separate_writer_state, case_two_buffers),
	CHECK_CASE(ring_basic_flush_leaves_busy_writer_until_its_next_event, test_flush_busy),
	CHECK_CASE(ring_basic_corrupt_pages_rejected_naming_the_field, test_corrupt),
	CHECK_CASE(ring_basic_page_header_thread_name_refreshed_on_request, test_comm),
	CHECK_CASE(ring_basic_gap_of_2_32_ticks_decodes_to_right_timestamp, test_extended_ts),
	CHECK_CASE(ring_basic_reserve_general_records_across_pages, test_reserve_general),
	CHECK_CASE(ring_basic_prepare_thread_claims_slot_before_first_event, test_prepare_thread),
	CHECK_CASE(ring_basic_prepare_thread_without_free_slot_is_enospc, test_prepare_thread_no_slot),
	CHECK_CASE(ring_basic_prepare_thread_on_reader_handle_is_einval, test_prepare_thread_reader),
	CHECK_CASE(ring_basic_general_path_takes_declined_inline_reading, test_decl_taken),
	CHECK_CASE(ring_basic_general_path_reads_clock_for_stale_reading, test_decl_stale),
	CHECK_CASE(ring_basic_first_event_after_attach_takes_no_stale_reading, test_decl_attach),
	CHECK_CASE(ring_basic_inline_path_declines_clock_behind_last_event, test_halves_behind),
	CHECK_CASE(ring_basic_inline_path_declines_high_half_change_compact_header, test_halves_carry),
	CHECK_CASE(ring_basic_inline_path_declines_gap_of_2_33_ticks_extended_header, test_halves_gap),
	CHECK_CASE(ring_basic_page_filled_past_warm_up_mark_inline_discard, test_warm_inline_discard),
	CHECK_CASE(ring_basic_page_filled_past_warm_up_mark_general_discard, test_warm_general_discard),
	CHECK_CASE(ring_basic_overwrite_overrun_split_by_who_recycled, test_overrun_own),
	CHECK_CASE(ring_basic_overwrite_warm_up_names_next_recycled_header_in_every_cell_place, test_warm_next_header),
	CHECK_CASE(ring_basic_page_header_names_the_cpu_its_writer_began_it_on, test_header_cpu),
	CHECK_CASE(ring_basic_page_filled_past_warm_up_mark_inline_overwrite, test_warm_inline_overwrite),
	CHECK_CASE(ring_basic_page_filled_past_warm_up_mark_general_overwrite, test_warm_general_overwrite),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
