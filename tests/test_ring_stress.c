/*
 * test_ring_stress: many writers, a tiny pool, one concurrent consumer.
 *
 * Cases: one per mode and consumer (each with 1, 2, 4 and 16 writers);
 * `test_ring_stress --list` names them. Also, as before:
 * Usage: test_ring_stress [discard|overwrite|all] [page|reader|all]
 *
 * Each writer w writes EVENTS events {writer = w, check, seq} with seq
 * counting every attempt (dropped ones included), so a dropped or
 * overwritten event is a gap in seq. The consumer (by page or by event)
 * checks every event and adds up the gaps; at the end every event is
 * accounted for, against the writers' own counts and against the stats.
 * The page consumer also checks each page's accounting fields:
 *   first seq of a page == events_discarded + events_before,
 *   seqs inside a page are consecutive,
 *   and between consecutive pages of a stream
 *   (discarded diff) + (events_before diff - previous page's events)
 *   == seq gap between the two pages.
 * The consumer pauses now and then so that the pool fills up and drops
 * (discard) or overruns (overwrite) happen.
 */
#include <stdatomic.h>

#include "testutil.h"

#define MAX_WRITERS 16
#define MAX_STREAMS 64
#define EV_ID_BASE 100u

#if defined(RINGTRACE_TSAN)
#define EVENTS_PER_WRITER 100000u
#elif defined(RINGTRACE_SANITIZED)
#define EVENTS_PER_WRITER 200000u
#else
#define EVENTS_PER_WRITER 600000u
#endif

struct payload {
	uint32_t writer;
	uint32_t check;
	uint64_t seq;
};

static uint32_t payload_check(uint32_t w, uint64_t seq)
{
	return ~w ^ (uint32_t)(seq * 2654435761u) ^ (uint32_t)(seq >> 32);
}

struct run {
	ringtrace_rb *rb;
	enum ringtrace_rb_mode mode;
	int by_reader;
	uint32_t nwriters;
	uint64_t events;
	pthread_barrier_t start;
	atomic_int done;

	/* writer side */
	uint32_t tid[MAX_WRITERS];
	uint64_t dropped[MAX_WRITERS];
	uint64_t attempted[MAX_WRITERS];

	/* consumer side */
	int64_t last_seq[MAX_WRITERS];
	uint64_t last_ts[MAX_WRITERS];
	uint64_t read[MAX_WRITERS];
	uint64_t gaps[MAX_WRITERS];
	uint64_t stream_of[MAX_WRITERS];
	uint64_t pages, pages_flushed_seen, page_pairs_checked;
	uint64_t total_read;
};

struct stream {
	uint64_t id;
	uint32_t writer;
	int have_prev;
	uint64_t prev_seq_num, prev_before, prev_discarded, prev_last_seq;
	uint32_t prev_events, prev_flags;
};

static struct stream streams[MAX_STREAMS];
static uint32_t n_streams;

static struct stream *stream_get(uint64_t id)
{
	for (uint32_t i = 0; i < n_streams; i++)
		if (streams[i].id == id)
			return &streams[i];
	CHECKF(n_streams < MAX_STREAMS, "more than %d streams", MAX_STREAMS);
	struct stream *s = &streams[n_streams++];
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->writer = UINT32_MAX;
	return s;
}

struct wargs {
	struct run *r;
	uint32_t w;
};

static void *writer_main(void *arg)
{
	struct wargs *a = (struct wargs *)arg;
	struct run *r = a->r;
	uint32_t w = a->w;
	r->tid[w] = tu_gettid();
	pthread_barrier_wait(&r->start);
	uint64_t dropped = 0;
	for (uint64_t seq = 0; seq < r->events; seq++) {
		struct payload pl = {w, payload_check(w, seq), seq};
		if (seq & 1) {
			void *p = ringtrace_rb_reserve(r->rb, EV_ID_BASE + w, sizeof(pl));
			if (p) {
				memcpy(p, &pl, sizeof(pl));
				ringtrace_rb_commit(r->rb);
			} else {
				dropped++;
			}
		} else {
			int rc = ringtrace_rb_write(r->rb, EV_ID_BASE + w, &pl, sizeof(pl));
			if (rc != 0) {
				CHECKF(rc == -RINGTRACE_ENOSPC,
				       "writer %u seq %" PRIu64 ": write = %d (%s), expected 0 or "
				       "ENOSPC",
				       w, seq, rc, ringtrace_strerror(rc));
				dropped++;
			}
		}
		/* Pace the writers a little so that the consumer runs while they
		 * write, and so that writers go idle (flush takes their page). */
		uint64_t phase = seq + (uint64_t)w * 97u;
		if ((phase & 1023) == 1023)
			tu_sleep_us(100);
		else if ((phase & 127) == 127)
			sched_yield();
	}
	r->dropped[w] = dropped;
	r->attempted[w] = r->events;
	return NULL; /* thread exit publishes the last page */
}

/* Checks one event; returns its seq. */
static uint64_t check_event(struct run *r, const struct ringtrace_event *ev)
{
	CHECKF(ev->len == sizeof(struct payload), "event len %u", ev->len);
	CHECKF(((uintptr_t)ev->data & 7u) == 0, "payload not aligned");
	struct payload pl;
	memcpy(&pl, ev->data, sizeof(pl));
	CHECKF(pl.writer < r->nwriters, "writer %u out of range (%u writers)", pl.writer,
	       r->nwriters);
	uint32_t w = pl.writer;
	CHECKF(ev->id == EV_ID_BASE + w, "event of writer %u has id %u", w, ev->id);
	CHECKF(pl.check == payload_check(w, pl.seq),
	       "writer %u seq %" PRIu64 ": check word 0x%08x, expected 0x%08x", w, pl.seq, pl.check,
	       payload_check(w, pl.seq));
	CHECKF(pl.seq < r->events, "writer %u: seq %" PRIu64 " beyond %" PRIu64, w, pl.seq,
	       r->events);
	CHECKF(ev->tid == r->tid[w], "writer %u: event tid %u, writer tid %u", w, ev->tid,
	       r->tid[w]);
	CHECKF((int64_t)pl.seq > r->last_seq[w],
	       "writer %u: seq %" PRIu64 " after %" PRId64 " (not increasing)", w, pl.seq,
	       r->last_seq[w]);
	CHECKF(ev->ts >= r->last_ts[w],
	       "writer %u seq %" PRIu64 ": ts %" PRIu64 " < previous %" PRIu64, w, pl.seq, ev->ts,
	       r->last_ts[w]);
	if (r->stream_of[w] == 0)
		r->stream_of[w] = ev->stream;
	CHECKF(ev->stream == r->stream_of[w],
	       "writer %u: event in stream %" PRIu64 ", earlier events in %" PRIu64, w, ev->stream,
	       r->stream_of[w]);
	r->gaps[w] += pl.seq - (uint64_t)(r->last_seq[w] + 1);
	r->last_seq[w] = (int64_t)pl.seq;
	r->last_ts[w] = ev->ts;
	r->read[w]++;
	r->total_read++;
	return pl.seq;
}

static void consume_page(struct run *r, const struct ringtrace_page_header *p)
{
	size_t psz = ringtrace_rb_page_size(r->rb);
	tu_check_page_header(p, psz);
	CHECKF(p->events > 0, "published page with 0 events");
	struct stream *s = stream_get(p->stream_instance_id);
	r->pages++;
	if (p->flags & RINGTRACE_PAGE_F_FLUSHED)
		r->pages_flushed_seen++;

	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	ringtrace_page_cursor_init(&c, p);
	uint64_t first_seq = 0, last_seq = 0;
	uint32_t n = 0;
	int rc;
	while ((rc = ringtrace_page_next(&c, &ev)) == 1) {
		tu_check_event_in_page(p, &ev);
		struct payload pl;
		memcpy(&pl, ev.data, sizeof(pl));
		if (n == 0 && pl.writer < r->nwriters)
			CHECKF((int64_t)pl.seq > r->last_seq[pl.writer],
			       "writer %u: page %" PRIu64 " (flags 0x%x) starts at seq %" PRIu64
			       ", but page %" PRIu64
			       " (flags 0x%x) read before it ended at %" PRId64
			       ": pages of one writer delivered out of order",
			       pl.writer, p->packet_seq_num, p->flags, pl.seq, s->prev_seq_num,
			       s->prev_flags, r->last_seq[pl.writer]);
		uint64_t seq = check_event(r, &ev);
		if (s->writer == UINT32_MAX)
			s->writer = pl.writer;
		CHECKF(pl.writer == s->writer, "stream %" PRIu64 ": events of writers %u and %u",
		       s->id, s->writer, pl.writer);
		if (n == 0)
			first_seq = seq;
		else
			CHECKF(seq == last_seq + 1,
			       "writer %u page %" PRIu64 ": seq %" PRIu64 " after %" PRIu64
			       " inside one page (drop inside a page?)",
			       pl.writer, p->packet_seq_num, seq, last_seq);
		last_seq = seq;
		n++;
	}
	CHECKF(rc == 0, "page_next: %d (%s): %s", rc, ringtrace_strerror(rc),
	       ringtrace_last_error());
	CHECKF(n == p->events, "decoded %u events, header says %u", n, p->events);

	/* Absolute accounting: every attempt before the page is either
	 * committed (events_before) or dropped (events_discarded). */
	CHECK(ringtrace_page_lost_before(NULL, p) == first_seq);
	CHECKF(first_seq == p->events_discarded + p->events_before,
	       "writer %u page %" PRIu64 ": first seq %" PRIu64 " != events_discarded %" PRIu64
	       " + events_before %" PRIu64,
	       s->writer, p->packet_seq_num, first_seq, p->events_discarded, p->events_before);

	if (s->have_prev) {
		CHECKF(p->packet_seq_num > s->prev_seq_num,
		       "stream %" PRIu64 ": packet_seq_num %" PRIu64 " after %" PRIu64, s->id,
		       p->packet_seq_num, s->prev_seq_num);
		CHECKF(p->events_discarded >= s->prev_discarded,
		       "stream %" PRIu64 ": events_discarded %" PRIu64 " after %" PRIu64, s->id,
		       p->events_discarded, s->prev_discarded);
		CHECKF(p->events_before >= s->prev_before + s->prev_events,
		       "stream %" PRIu64 ": events_before %" PRIu64 " < %" PRIu64 " + %u", s->id,
		       p->events_before, s->prev_before, s->prev_events);
		if (r->mode == RINGTRACE_RB_DISCARD) {
			CHECKF(p->packet_seq_num == s->prev_seq_num + 1,
			       "discard mode, stream %" PRIu64 ": packet_seq_num %" PRIu64
			       " (flags 0x%x) read right after %" PRIu64
			       " (flags 0x%x): a page lost or delivered out of order",
			       s->id, p->packet_seq_num, p->flags, s->prev_seq_num, s->prev_flags);
			CHECKF(p->events_before == s->prev_before + s->prev_events,
			       "discard mode, stream %" PRIu64 ": events_before %" PRIu64
			       " != %" PRIu64 " + %u",
			       s->id, p->events_before, s->prev_before, s->prev_events);
		}
		uint64_t acc = (p->events_discarded - s->prev_discarded) +
			       (p->events_before - s->prev_before - s->prev_events);
		struct ringtrace_page_header ph;
		memset(&ph, 0, sizeof(ph));
		ph.events_discarded = s->prev_discarded;
		ph.events_before = s->prev_before;
		ph.events = s->prev_events;
		CHECKF(ringtrace_page_lost_before(&ph, p) == acc,
		       "ringtrace_page_lost_before %" PRIu64 " != %" PRIu64,
		       ringtrace_page_lost_before(&ph, p), acc);
		uint64_t gap = first_seq - s->prev_last_seq - 1;
		CHECKF(acc == gap,
		       "writer %u pages %" PRIu64 " -> %" PRIu64 ": discarded diff %" PRIu64
		       " + (before diff %" PRIu64 " - prev events %u) = %" PRIu64
		       " but seq gap is %" PRIu64 " (%" PRIu64 " -> %" PRIu64 ")",
		       s->writer, s->prev_seq_num, p->packet_seq_num,
		       p->events_discarded - s->prev_discarded, p->events_before - s->prev_before,
		       s->prev_events, acc, gap, s->prev_last_seq, first_seq);
		r->page_pairs_checked++;
	}
	s->have_prev = 1;
	s->prev_seq_num = p->packet_seq_num;
	s->prev_before = p->events_before;
	s->prev_discarded = p->events_discarded;
	s->prev_events = p->events;
	s->prev_flags = p->flags;
	s->prev_last_seq = last_seq;
}

/* Pause now and then so that the pool fills up. */
static void consumer_pause(uint64_t count)
{
	if (count % 16 == 15)
		tu_sleep_us(1000);
	else
		sched_yield();
}

static void *consumer_pages(void *arg)
{
	struct run *r = (struct run *)arg;
	uint64_t idle = 0;
	for (;;) {
		const struct ringtrace_page_header *p = ringtrace_rb_get_page(r->rb);
		if (p) {
			consume_page(r, p);
			ringtrace_rb_put_page(r->rb, p);
			if (r->pages % 16 == 15)
				consumer_pause(r->pages / 16);
			continue;
		}
		if (atomic_load_explicit(&r->done, memory_order_acquire)) {
			/* Writers have exited: their last pages are published. */
			int rc = ringtrace_rb_flush(r->rb, 0);
			CHECKF(rc >= 0, "final flush: %d", rc);
			while ((p = ringtrace_rb_get_page(r->rb)) != NULL) {
				consume_page(r, p);
				ringtrace_rb_put_page(r->rb, p);
			}
			break;
		}
		/* Nothing ready: take pages from writers now and then (they may be
		 * in the middle of an event), otherwise wait a little. */
		if (++idle % 8 == 0)
			CHECK_OK(ringtrace_rb_flush(r->rb, 0));
		else if (idle % 64 == 1)
			tu_sleep_us(100);
		else
			sched_yield();
	}
	return NULL;
}

static void *consumer_events(void *arg)
{
	struct run *r = (struct run *)arg;
	ringtrace_rb_reader *rd = NULL;
	CHECK_OK(ringtrace_rb_reader_open(r->rb, &rd));
	struct ringtrace_event ev;
	uint64_t idle = 0, batch = 0;
	for (;;) {
		int rc = ringtrace_rb_reader_next(rd, &ev);
		CHECKF(rc >= 0, "reader_next: %d (%s): %s", rc, ringtrace_strerror(rc),
		       ringtrace_last_error());
		if (rc == 1) {
			check_event(r, &ev);
			if (r->total_read % 4096 == 4095)
				consumer_pause(batch++);
			continue;
		}
		if (atomic_load_explicit(&r->done, memory_order_acquire)) {
			rc = ringtrace_rb_flush(r->rb, 0);
			CHECKF(rc >= 0, "final flush: %d", rc);
			while ((rc = ringtrace_rb_reader_next(rd, &ev)) == 1)
				check_event(r, &ev);
			CHECKF(rc == 0, "reader_next at the end: %d (%s)", rc,
			       ringtrace_strerror(rc));
			break;
		}
		if (++idle % 8 == 0)
			CHECK_OK(ringtrace_rb_flush(r->rb, 0));
		else if (idle % 64 == 1)
			tu_sleep_us(100);
		else
			sched_yield();
	}
	ringtrace_rb_reader_close(rd);
	return NULL;
}

static uint64_t total_missed_overrun[2];

static void run_one(enum ringtrace_rb_mode mode, int by_reader, uint32_t nwriters)
{
	static struct run r;
	memset(&r, 0, sizeof(r));
	memset(streams, 0, sizeof(streams));
	n_streams = 0;
	r.mode = mode;
	r.by_reader = by_reader;
	r.nwriters = nwriters;
	r.events = EVENTS_PER_WRITER;
	for (uint32_t w = 0; w < MAX_WRITERS; w++)
		r.last_seq[w] = -1;
	atomic_init(&r.done, 0);

	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, nwriters > 4 ? 32 : 16, mode);
	cfg.flush_interval_ms = 1; /* get_page flushes idle writers often */
	r.rb = tu_create(&cfg);
	uint64_t t0 = tu_mono_ns();

	CHECK(pthread_barrier_init(&r.start, NULL, nwriters) == 0);
	pthread_t wt[MAX_WRITERS], ct;
	struct wargs wa[MAX_WRITERS];
	CHECK(pthread_create(&ct, NULL, by_reader ? consumer_events : consumer_pages, &r) == 0);
	for (uint32_t w = 0; w < nwriters; w++) {
		wa[w].r = &r;
		wa[w].w = w;
		CHECK(pthread_create(&wt[w], NULL, writer_main, &wa[w]) == 0);
	}
	for (uint32_t w = 0; w < nwriters; w++)
		CHECK(pthread_join(wt[w], NULL) == 0);
	atomic_store_explicit(&r.done, 1, memory_order_release);
	CHECK(pthread_join(ct, NULL) == 0);
	pthread_barrier_destroy(&r.start);

	const char *what = by_reader ? "reader" : "page";
	const char *mname = mode == RINGTRACE_RB_DISCARD ? "discard" : "overwrite";
	struct ringtrace_rb_stats st = tu_stats(r.rb);
	uint64_t attempted = 0, dropped = 0, gaps = 0;
	for (uint32_t w = 0; w < nwriters; w++) {
		uint64_t trailing = r.attempted[w] - (uint64_t)(r.last_seq[w] + 1);
		uint64_t g = r.gaps[w] + trailing;
		CHECKF(r.read[w] + g == r.attempted[w],
		       "%s/%s/%u writers: writer %u: read %" PRIu64 " + gaps %" PRIu64
		       " != attempted %" PRIu64,
		       mname, what, nwriters, w, r.read[w], g, r.attempted[w]);
		if (mode == RINGTRACE_RB_DISCARD)
			CHECKF(g == r.dropped[w],
			       "%s/%s/%u writers: writer %u: %" PRIu64 " seq gaps but %" PRIu64
			       " writes failed (discard mode: they must be equal)",
			       mname, what, nwriters, w, g, r.dropped[w]);
		else
			CHECKF(g >= r.dropped[w],
			       "%s/%s/%u writers: writer %u: %" PRIu64 " seq gaps < %" PRIu64
			       " failed writes",
			       mname, what, nwriters, w, g, r.dropped[w]);
		attempted += r.attempted[w];
		dropped += r.dropped[w];
		gaps += g;
	}
	if (st.missed + st.overrun != gaps || st.hit + st.missed != attempted ||
	    st.read != r.total_read || st.entries != 0 || st.missed != dropped ||
	    st.hit != st.read + st.overrun + st.entries) {
		check_print_stats("stats", &st);
		fprintf(stderr,
			"    counted: attempted %" PRIu64 " read %" PRIu64 " gaps %" PRIu64
			" failed writes %" PRIu64 "\n",
			attempted, r.total_read, gaps, dropped);
	}
	CHECK_EQ_U64(st.missed + st.overrun, gaps);
	CHECK_EQ_U64(st.hit + st.missed, attempted);
	CHECK_EQ_U64(st.missed, dropped);
	CHECK_EQ_U64(st.read, r.total_read);
	CHECK_EQ_U64(st.entries, 0);
	CHECK_STATS_BALANCED(&st);
	if (mode == RINGTRACE_RB_DISCARD) {
		CHECK_EQ_U64(st.overrun, 0);
		if (!by_reader) /* no page is recycled: every published page was read */
			CHECK_EQ_U64(st.pages_published, r.pages);
	}
	CHECK_EQ_U64(st.writers_active, 0);
	CHECK_EQ_U64(st.pages_free, ringtrace_rb_page_count(r.rb));
	CHECK(ringtrace_rb_get_page(r.rb) == NULL);
	total_missed_overrun[mode] += st.missed + st.overrun;

	ringtrace_rb_destroy(r.rb);
	printf("  %-9s %-6s %2u writers: %8" PRIu64 " attempted, %8" PRIu64 " read, %7" PRIu64
	       " missed, %7" PRIu64 " overrun, %" PRIu64 " pages published (%" PRIu64
	       " flushed), %.2f s\n",
	       mname, what, nwriters, attempted, r.total_read, st.missed, st.overrun,
	       st.pages_published, st.pages_flushed, (double)(tu_mono_ns() - t0) / 1e9);
	if (!by_reader)
		printf("  %27s %" PRIu64 " pages read (%" PRIu64 " flushed), %" PRIu64
		       " consecutive page pairs checked\n",
		       "", r.pages, r.pages_flushed_seen, r.page_pairs_checked);
	fflush(stdout);
}

/* Runs the matrix of modes x consumers x 1/2/4/16 writers selected. */
static unsigned run_matrix(const char *modes, const char *consumers)
{
	const uint32_t counts[] = {1, 2, 4, 16};
	total_missed_overrun[0] = total_missed_overrun[1] = 0;
	unsigned runs = 0;
	for (int m = 0; m < 2; m++) {
		if (strcmp(modes, "all") != 0 && strcmp(modes, m ? "overwrite" : "discard") != 0)
			continue;
		for (int c = 0; c < 2; c++) {
			if (strcmp(consumers, "all") != 0 &&
			    strcmp(consumers, c ? "reader" : "page") != 0)
				continue;
			for (unsigned i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
				run_one(m ? RINGTRACE_RB_OVERWRITE : RINGTRACE_RB_DISCARD, c,
					counts[i]);
				runs++;
			}
		}
		/* The consumer pauses make the pool fill up: losses must have happened. */
		if (runs)
			CHECKF(total_missed_overrun[m] > 0,
			       "%s mode: no event was ever dropped or overwritten; the test did "
			       "not exercise a full pool",
			       m ? "overwrite" : "discard");
	}
	printf("test_ring_stress: %u runs (modes %s, consumer %s, 1/2/4/16 writers, %u "
	       "events each): every event intact, per-writer seq increasing, every gap "
	       "accounted by stats and page headers\n",
	       runs, modes, consumers, EVENTS_PER_WRITER);
	return runs;
}

/* Each: every event of 1, 2, 4 and 16 writers on a tiny pool is read
 * intact, dropped (discard) or overwritten (overwrite), and every loss is
 * accounted by the stats and the page headers. */
static void discard_page(void)
{
	run_matrix("discard", "page");
}

static void discard_reader(void)
{
	run_matrix("discard", "reader");
}

static void overwrite_page(void)
{
	run_matrix("overwrite", "page");
}

static void overwrite_reader(void)
{
	run_matrix("overwrite", "reader");
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(ring_stress_discard_read_by_page_every_event_accounted, discard_page),
	CHECK_CASE(ring_stress_discard_read_by_event_every_event_accounted, discard_reader),
	CHECK_CASE(ring_stress_overwrite_read_by_page_every_event_accounted, overwrite_page),
	CHECK_CASE(ring_stress_overwrite_read_by_event_every_event_accounted, overwrite_reader),
};
/* clang-format on */

int main(int argc, char **argv)
{
	/* The matrix by mode and consumer, as before the cases. */
	if (argc > 1 && (strcmp(argv[1], "discard") == 0 || strcmp(argv[1], "overwrite") == 0 ||
			 strcmp(argv[1], "all") == 0)) {
		const char *modes = argv[1];
		const char *consumers = argc > 2 ? argv[2] : "all";
		unsigned runs = run_matrix(modes, consumers);
		CHECKF(runs > 0, "usage: %s [discard|overwrite|all] [page|reader|all]", argv[0]);
		return 0;
	}
	return CHECK_MAIN(cases, argc, argv);
}
