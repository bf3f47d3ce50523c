/*
 * test_ring_snapshot: non-consuming snapshots of an overwrite-mode buffer
 * while writers run, interleaved with consuming reads by event.
 *
 *  - every event in every snapshot is intact; per writer, seq strictly
 *    increasing in snapshot order; timestamps non-decreasing (merged);
 *  - snapshot pages pass ringtrace_page_check; a snapshot does not consume
 *    (stats.read unchanged);
 *  - the consuming reader, interleaved, sees per-writer increasing seqs;
 *  - after the writers stop: a snapshot holds exactly stats.entries events,
 *    including the last event of every writer, and a full drain by page
 *    then reads exactly the same events.
 *
 * Two cases: the snapshots while writers run (phase 1), and the quiescent
 * snapshot after them (phase 2, which runs phase 1 first to get there).
 */
#include <stdatomic.h>

#include "testutil.h"

#define NWRITERS 4
#define TAIL_EVENTS 100u
#define EV_ID 77u

#define PHASE1_NS 700000000ull /* writers run this long while snapshots are taken */
#define SEQ_LIMIT (1ull << 40)

struct payload {
	uint32_t writer;
	uint32_t check;
	uint64_t seq;
	uint64_t pad[2]; /* a 32-byte payload */
};

static uint32_t payload_check(uint32_t w, uint64_t seq)
{
	return 0xA5A5A5A5u ^ (w * 0x01000193u) ^ (uint32_t)(seq * 0x9E3779B1u);
}

static ringtrace_rb *rb;
static atomic_int stop_phase1;
static atomic_int phase1_done;
static atomic_int go_phase2;
static uint32_t wtid[NWRITERS];
static uint64_t wdropped[NWRITERS];
static uint64_t wattempted[NWRITERS];

static void *writer_main(void *arg)
{
	uint32_t w = (uint32_t)(uintptr_t)arg;
	wtid[w] = tu_gettid();
	uint64_t seq = 0, dropped = 0;
	for (int phase = 1; phase <= 2; phase++) {
		uint64_t end = phase == 1 ? SEQ_LIMIT : seq + TAIL_EVENTS;
		for (; seq < end; seq++) {
			if (phase == 1 && (seq & 63) == 0 && atomic_load(&stop_phase1))
				break;
			struct payload pl = {w, payload_check(w, seq), seq, {seq, ~seq}};
			int rc = ringtrace_rb_write(rb, EV_ID, &pl, sizeof(pl));
			if (rc != 0) {
				CHECKF(rc == -RINGTRACE_ENOSPC, "writer %u: write = %d (%s)", w, rc,
				       ringtrace_strerror(rc));
				dropped++;
			}
			if ((seq & 2047) == 2047)
				tu_sleep_us(50);
			else if ((seq & 255) == 255)
				sched_yield();
		}
		if (phase == 1) {
			atomic_fetch_add(&phase1_done, 1);
			while (!atomic_load(&go_phase2))
				tu_sleep_us(200);
		}
	}
	wdropped[w] = dropped;
	wattempted[w] = seq;
	return NULL;
}

/* Checks an event; returns its writer. */
static uint32_t check_event(const struct ringtrace_event *ev, uint64_t *seq_out)
{
	CHECKF(ev->id == EV_ID, "event id %u", ev->id);
	CHECKF(ev->len == sizeof(struct payload), "event len %u", ev->len);
	CHECKF(((uintptr_t)ev->data & 7u) == 0, "payload not aligned");
	struct payload pl;
	memcpy(&pl, ev->data, sizeof(pl));
	CHECKF(pl.writer < NWRITERS, "writer %u", pl.writer);
	CHECKF(pl.check == payload_check(pl.writer, pl.seq) && pl.pad[0] == pl.seq &&
		       pl.pad[1] == ~pl.seq,
	       "writer %u seq %" PRIu64 ": payload corrupt (check 0x%08x pad %" PRIx64 " %" PRIx64
	       ")",
	       pl.writer, pl.seq, pl.check, pl.pad[0], pl.pad[1]);
	CHECKF(pl.seq < SEQ_LIMIT, "seq %" PRIu64, pl.seq);
	CHECKF(ev->tid == wtid[pl.writer], "writer %u: tid %u, expected %u", pl.writer, ev->tid,
	       wtid[pl.writer]);
	*seq_out = pl.seq;
	return pl.writer;
}

struct snap_result {
	uint64_t events;
	uint32_t pages, lost;
	int64_t last_seq[NWRITERS];
};

static void take_snapshot(struct snap_result *res)
{
	size_t psz = ringtrace_rb_page_size(rb);
	struct ringtrace_rb_stats before = tu_stats(rb);
	ringtrace_snapshot *s = NULL;
	CHECK_OK(ringtrace_rb_snapshot(rb, &s));
	CHECK(s != NULL);
	struct ringtrace_rb_stats after = tu_stats(rb);
	CHECKF(after.read == before.read,
	       "a snapshot consumed events: stats.read %" PRIu64 " -> %" PRIu64, before.read,
	       after.read);

	memset(res, 0, sizeof(*res));
	res->pages = ringtrace_snapshot_page_count(s);
	res->lost = ringtrace_snapshot_pages_lost(s);
	uint64_t page_events = 0;
	for (uint32_t i = 0; i < res->pages; i++) {
		const struct ringtrace_page_header *p = ringtrace_snapshot_page(s, i);
		CHECKF(p != NULL, "snapshot page %u of %u is NULL", i, res->pages);
		tu_check_page_header(p, psz);
		struct ringtrace_page_cursor c;
		struct ringtrace_event ev;
		ringtrace_page_cursor_init(&c, p);
		uint32_t n = 0;
		int rc;
		while ((rc = ringtrace_page_next(&c, &ev)) == 1) {
			uint64_t seq;
			tu_check_event_in_page(p, &ev);
			check_event(&ev, &seq);
			n++;
		}
		CHECKF(rc == 0, "snapshot page %u: page_next %d: %s", i, rc,
		       ringtrace_last_error());
		CHECKF(n == p->events, "snapshot page %u: %u events decoded, header says %u", i, n,
		       p->events);
		page_events += n;
	}
	CHECK(ringtrace_snapshot_page(s, res->pages) == NULL);

	for (int w = 0; w < NWRITERS; w++)
		res->last_seq[w] = -1;
	struct ringtrace_event ev;
	uint64_t prev_ts = 0;
	int rc;
	while ((rc = ringtrace_snapshot_next(s, &ev)) == 1) {
		uint64_t seq;
		uint32_t w = check_event(&ev, &seq);
		CHECKF((int64_t)seq > res->last_seq[w],
		       "snapshot: writer %u seq %" PRIu64 " after %" PRId64 " (not increasing)", w,
		       seq, res->last_seq[w]);
		CHECKF(ev.ts >= prev_ts, "snapshot: ts %" PRIu64 " < previous %" PRIu64 " (merge)",
		       ev.ts, prev_ts);
		prev_ts = ev.ts;
		res->last_seq[w] = (int64_t)seq;
		res->events++;
	}
	CHECKF(rc == 0, "snapshot_next: %d (%s): %s", rc, ringtrace_strerror(rc),
	       ringtrace_last_error());
	CHECKF(res->events == page_events,
	       "snapshot_next gave %" PRIu64 " events, pages hold %" PRIu64, res->events,
	       page_events);
	ringtrace_snapshot_free(s);
}

/* What phase 1 leaves for phase 2: the writers, parked. */
struct phase1 {
	pthread_t t[NWRITERS];
	size_t page_size;
	uint64_t n_snap, snap_events, snap_lost, rd_events;
};

/*
 * Phase 1: snapshots and consuming reads while 4 writers run on an
 * overwrite-mode buffer; returns with the writers parked before their
 * last TAIL_EVENTS events.
 */
static void snapshot_phase1(struct phase1 *ph)
{
	atomic_store(&stop_phase1, 0);
	atomic_store(&phase1_done, 0);
	atomic_store(&go_phase2, 0);
	memset(wtid, 0, sizeof(wtid));
	memset(wdropped, 0, sizeof(wdropped));
	memset(wattempted, 0, sizeof(wattempted));
	memset(ph, 0, sizeof(*ph));
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 64, RINGTRACE_RB_OVERWRITE);
	cfg.flush_interval_ms = 60000; /* no automatic flush: nothing is published early */
	rb = tu_create(&cfg);

	for (uintptr_t w = 0; w < NWRITERS; w++)
		CHECK(pthread_create(&ph->t[w], NULL, writer_main, (void *)w) == 0);

	/* Phase 1: snapshots and consuming reads while writers run. */
	ringtrace_rb_reader *rd = NULL;
	CHECK_OK(ringtrace_rb_reader_open(rb, &rd));
	int64_t rd_last[NWRITERS];
	for (int w = 0; w < NWRITERS; w++)
		rd_last[w] = -1;
	uint64_t n_snap = 0, snap_events = 0, snap_lost = 0, rd_events = 0;
	uint64_t t0 = tu_mono_ns();
	while (atomic_load(&phase1_done) < NWRITERS || n_snap < 3) {
		if (tu_mono_ns() - t0 > PHASE1_NS)
			atomic_store(&stop_phase1, 1);
		struct snap_result res;
		take_snapshot(&res);
		n_snap++;
		snap_events += res.events;
		snap_lost += res.lost;
		for (int i = 0; i < 500; i++) {
			struct ringtrace_event ev;
			int rc = ringtrace_rb_reader_next(rd, &ev);
			CHECKF(rc >= 0, "reader_next: %d (%s): %s", rc, ringtrace_strerror(rc),
			       ringtrace_last_error());
			if (rc == 0)
				break;
			uint64_t seq;
			uint32_t w = check_event(&ev, &seq);
			CHECKF((int64_t)seq > rd_last[w],
			       "reader: writer %u seq %" PRIu64 " after %" PRId64, w, seq,
			       rd_last[w]);
			rd_last[w] = (int64_t)seq;
			rd_events++;
		}
		tu_sleep_us(500);
	}
	/* Writers are parked: read what the reader has taken or can take now,
	 * so that stats.read equals the events it delivered. */
	for (;;) {
		struct ringtrace_event ev;
		int rc = ringtrace_rb_reader_next(rd, &ev);
		CHECKF(rc >= 0, "reader_next: %d (%s)", rc, ringtrace_strerror(rc));
		if (rc == 0)
			break;
		uint64_t seq;
		uint32_t w = check_event(&ev, &seq);
		CHECKF((int64_t)seq > rd_last[w],
		       "reader: writer %u seq %" PRIu64 " after %" PRId64, w, seq, rd_last[w]);
		rd_last[w] = (int64_t)seq;
		rd_events++;
	}
	ringtrace_rb_reader_close(rd);
	ph->page_size = cfg.page_size;
	ph->n_snap = n_snap;
	ph->snap_events = snap_events;
	ph->snap_lost = snap_lost;
	ph->rd_events = rd_events;
}

/* Lets the parked writers write their last events, and joins them. */
static void snapshot_writers_finish(struct phase1 *ph)
{
	/* Phase 2: the writers write their last events and exit. */
	atomic_store(&go_phase2, 1);
	for (int w = 0; w < NWRITERS; w++)
		CHECK(pthread_join(ph->t[w], NULL) == 0);
}

/* Every snapshot taken while the writers ran was intact and consumed
 * nothing; the consuming reader interleaved saw increasing seqs. */
static void case_concurrent(void)
{
	struct phase1 ph;
	snapshot_phase1(&ph);
	snapshot_writers_finish(&ph);
	ringtrace_rb_destroy(rb);
	printf("  %" PRIu64 " snapshots while %d writers ran (%" PRIu64 " events checked, %" PRIu64
	       " pages lost to recycling), %" PRIu64 " events consumed meanwhile\n",
	       ph.n_snap, NWRITERS, ph.snap_events, ph.snap_lost, ph.rd_events);
}

/* After the writers stop, a snapshot holds exactly the entries, the last
 * event of every writer included, and a drain by page reads the same. */
static void case_quiescent(void)
{
	struct phase1 ph;
	snapshot_phase1(&ph);
	uint64_t rd_events = ph.rd_events;

	snapshot_writers_finish(&ph);
	int rc = ringtrace_rb_flush(rb, 0);
	CHECKF(rc >= 0, "flush: %d", rc);

	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_STATS_BALANCED(&st);
	CHECK_EQ_U64(st.writers_active, 0);
	uint64_t attempted = 0, dropped = 0;
	for (int w = 0; w < NWRITERS; w++) {
		dropped += wdropped[w];
		attempted += wattempted[w];
	}
	CHECK_EQ_U64(st.hit + st.missed, attempted);
	CHECK_EQ_U64(st.missed, dropped);

	struct snap_result fin;
	take_snapshot(&fin);
	CHECK_EQ_U64(fin.lost, 0);
	CHECKF(fin.events == st.entries,
	       "quiescent snapshot holds %" PRIu64 " events, stats.entries is %" PRIu64, fin.events,
	       st.entries);
	for (int w = 0; w < NWRITERS; w++)
		CHECKF(fin.last_seq[w] == (int64_t)wattempted[w] - 1,
		       "final snapshot: last seq of writer %d is %" PRId64 ", its last event was "
		       "%" PRIu64 " (%" PRIu64 " writes dropped)",
		       w, fin.last_seq[w], wattempted[w] - 1, wdropped[w]);
	struct ringtrace_rb_stats st2 = tu_stats(rb);
	CHECK_EQ_U64(st2.read, st.read);
	CHECK_EQ_U64(st2.entries, st.entries);

	/* Draining by page reads exactly what the snapshot showed. */
	int64_t last[NWRITERS];
	for (int w = 0; w < NWRITERS; w++)
		last[w] = -1;
	uint64_t drained = 0;
	const struct ringtrace_page_header *p;
	while ((p = ringtrace_rb_get_page(rb)) != NULL) {
		tu_check_page_header(p, ph.page_size);
		struct ringtrace_page_cursor c;
		struct ringtrace_event ev;
		ringtrace_page_cursor_init(&c, p);
		while ((rc = ringtrace_page_next(&c, &ev)) == 1) {
			uint64_t seq;
			uint32_t w = check_event(&ev, &seq);
			CHECK((int64_t)seq > last[w]);
			last[w] = (int64_t)seq;
			drained++;
		}
		CHECK(rc == 0);
		ringtrace_rb_put_page(rb, p);
	}
	CHECKF(drained == fin.events, "drained %" PRIu64 " events, snapshot had %" PRIu64, drained,
	       fin.events);
	for (int w = 0; w < NWRITERS; w++)
		CHECK_EQ_U64(last[w], fin.last_seq[w]);
	st = tu_stats(rb);
	CHECK_STATS_BALANCED(&st);
	CHECK_EQ_U64(st.entries, 0);
	CHECK_EQ_U64(st.read, rd_events + drained);
	CHECK_EQ_U64(st.pages_free, ringtrace_rb_page_count(rb));

	ringtrace_rb_destroy(rb);
	printf("  %" PRIu64 " snapshots while %d writers ran (%" PRIu64 " events written, %" PRIu64
	       " events checked, %" PRIu64 " pages lost to recycling), %" PRIu64
	       " events consumed meanwhile, overrun %" PRIu64 "; final snapshot = %" PRIu64
	       " events = entries, last event of every writer "
	       "present\n",
	       ph.n_snap, NWRITERS, attempted, ph.snap_events, ph.snap_lost, rd_events, st.overrun,
	       fin.events);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(ring_snapshot_taken_while_writers_run_is_intact_and_consumes_nothing, case_concurrent),
	CHECK_CASE(ring_snapshot_after_writers_stop_holds_exactly_what_drain_reads, case_quiescent),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
