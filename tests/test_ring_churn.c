/*
 * test_ring_churn: writer slots and pages are reclaimed from exiting threads.
 *
 *  A. Thousands of short-lived threads (4 alive at a time) each write a few
 *     events and exit, while a consumer reads pages. Afterwards no writer is
 *     active, every event that was not counted as missed was read, each
 *     thread's events are in a stream of their own, and the whole pool is
 *     free again; a fresh round of writers then writes without any loss.
 *  B. max_writers = 4 with 8 threads alive and writing at once: 4 get slots,
 *     the other 4 have every event refused (ENOSPC) and counted as missed;
 *     after they exit, the slots can be claimed again.
 */
#include <stdatomic.h>

#include "testutil.h"

#if defined(RINGTRACE_TSAN)
#define NTHREADS 5000u
#elif defined(RINGTRACE_SANITIZED)
#define NTHREADS 10000u
#else
#define NTHREADS 10000u
#endif
#define PER_THREAD 5u
#define BATCH 4u
#define EV_ID 9u

struct payload {
	uint32_t thread;
	uint32_t k;
	uint64_t check;
};

static uint64_t payload_check(uint32_t t, uint32_t k)
{
	return ((uint64_t)t << 32 | k) * 0x9E3779B97F4A7C15ull ^ 0x5555AAAA5555AAAAull;
}

static ringtrace_rb *rb;
static uint8_t written_ok[NTHREADS];
static uint8_t read_cnt[NTHREADS];
static uint64_t stream_of[NTHREADS];
static uint64_t total_read, pages_read;
static atomic_int done;

struct targ {
	uint32_t index;
	uint32_t events;
};

static void *short_writer(void *arg)
{
	struct targ *a = (struct targ *)arg;
	uint32_t ok = 0;
	for (uint32_t k = 0; k < a->events; k++) {
		struct payload pl = { a->index, k, payload_check(a->index, k) };
		int rc = ringtrace_rb_write(rb, EV_ID, &pl, sizeof(pl));
		if (rc == 0)
			ok++;
		else
			CHECKF(rc == -RINGTRACE_ENOSPC, "thread %u: write = %d (%s)", a->index, rc,
			       ringtrace_strerror(rc));
	}
	if (a->index < NTHREADS)
		written_ok[a->index] = (uint8_t)ok;
	return NULL;
}

static void consume(const struct ringtrace_page_header *p)
{
	tu_check_page_header(p, ringtrace_rb_page_size(rb));
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	ringtrace_page_cursor_init(&c, p);
	int rc;
	uint32_t n = 0, thread = UINT32_MAX;
	while ((rc = ringtrace_page_next(&c, &ev)) == 1) {
		tu_check_event_in_page(p, &ev);
		CHECKF(ev.id == EV_ID && ev.len == sizeof(struct payload), "event id %u len %u",
		       ev.id, ev.len);
		struct payload pl;
		memcpy(&pl, ev.data, sizeof(pl));
		CHECKF(pl.thread < NTHREADS && pl.k < PER_THREAD &&
			       pl.check == payload_check(pl.thread, pl.k),
		       "corrupt event: thread %u k %u check %" PRIx64, pl.thread, pl.k, pl.check);
		if (thread == UINT32_MAX)
			thread = pl.thread;
		CHECKF(pl.thread == thread, "page holds events of threads %u and %u", thread,
		       pl.thread);
		CHECKF(pl.k >= read_cnt[pl.thread],
		       "thread %u: event %u after %u events read", pl.thread, pl.k,
		       read_cnt[pl.thread]);
		if (stream_of[pl.thread] == 0)
			stream_of[pl.thread] = ev.stream;
		CHECKF(stream_of[pl.thread] == ev.stream,
		       "thread %u: events in streams %" PRIu64 " and %" PRIu64, pl.thread,
		       stream_of[pl.thread], ev.stream);
		read_cnt[pl.thread]++;
		total_read++;
		n++;
	}
	CHECKF(rc == 0, "page_next: %d: %s", rc, ringtrace_last_error());
	CHECKF(n == p->events, "decoded %u, header %u", n, p->events);
	pages_read++;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		const struct ringtrace_page_header *p = ringtrace_rb_get_page(rb);
		if (p) {
			consume(p);
			ringtrace_rb_put_page(rb, p);
			continue;
		}
		if (atomic_load(&done)) {
			CHECK(ringtrace_rb_flush(rb, 0) >= 0);
			while ((p = ringtrace_rb_get_page(rb)) != NULL) {
				consume(p);
				ringtrace_rb_put_page(rb, p);
			}
			return NULL;
		}
		tu_sleep_us(100);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void part_a(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 256, RINGTRACE_RB_DISCARD);
	cfg.max_writers = 16;
	rb = tu_create(&cfg);
	pthread_t ct;
	CHECK(pthread_create(&ct, NULL, consumer, NULL) == 0);

	static struct targ args[NTHREADS];
	uint64_t t0 = tu_mono_ns();
	for (uint32_t base = 0; base < NTHREADS; base += BATCH) {
		pthread_t t[BATCH];
		uint32_t n = 0;
		for (uint32_t i = base; i < base + BATCH && i < NTHREADS; i++, n++) {
			args[i].index = i;
			args[i].events = PER_THREAD;
			int rc = pthread_create(&t[n], NULL, short_writer, &args[i]);
			CHECKF(rc == 0, "pthread_create #%u: %s", i, strerror(rc));
		}
		for (uint32_t i = 0; i < n; i++)
			CHECK(pthread_join(t[i], NULL) == 0);
	}
	double churn_s = (double)(tu_mono_ns() - t0) / 1e9;
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECKF(st.writers_active == 0, "%u writers still active after all threads exited",
	       st.writers_active);
	atomic_store(&done, 1);
	CHECK(pthread_join(ct, NULL) == 0);

	uint64_t ok = 0;
	for (uint32_t i = 0; i < NTHREADS; i++) {
		CHECKF(read_cnt[i] == written_ok[i], "thread %u: %u events read, %u written", i,
		       read_cnt[i], written_ok[i]);
		ok += written_ok[i];
	}
	uint64_t attempted = (uint64_t)NTHREADS * PER_THREAD;
	st = tu_stats(rb);
	CHECK_STATS_BALANCED(&st);
	CHECK_EQ_U64(st.hit + st.missed, attempted);
	CHECK_EQ_U64(st.hit, ok);
	CHECK_EQ_U64(total_read, attempted - st.missed);
	CHECK_EQ_U64(st.read, total_read);
	CHECK_EQ_U64(st.entries, 0);
	CHECK_EQ_U64(st.writers_active, 0);
	CHECKF(st.pages_free == ringtrace_rb_page_count(rb),
	       "after draining, %u pages free of %u (pages leaked by exited threads?)",
	       st.pages_free, ringtrace_rb_page_count(rb));

	/* Every thread wrote into a stream of its own. */
	static uint64_t sorted[NTHREADS];
	uint32_t ns = 0;
	for (uint32_t i = 0; i < NTHREADS; i++)
		if (read_cnt[i])
			sorted[ns++] = stream_of[i];
	qsort(sorted, ns, sizeof(sorted[0]), cmp_u64);
	for (uint32_t i = 1; i < ns; i++)
		CHECKF(sorted[i] != sorted[i - 1], "two threads shared stream %" PRIu64, sorted[i]);

	/* A fresh round: slots and pages are all reusable, nothing is lost. */
	uint64_t hit0 = st.hit, missed0 = st.missed;
	pthread_t t[8];
	static struct targ fresh[8];
	for (uint32_t i = 0; i < 8; i++) {
		fresh[i].index = UINT32_MAX; /* not recorded in written_ok */
		fresh[i].events = PER_THREAD;
		CHECK(pthread_create(&t[i], NULL, short_writer, &fresh[i]) == 0);
	}
	for (uint32_t i = 0; i < 8; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	/* ...and the main thread too, many pages' worth. */
	uint64_t main_ok = 0;
	for (uint32_t k = 0; k < 3000; k++) {
		uint64_t v = k;
		CHECK_OK(ringtrace_rb_write(rb, EV_ID + 1, &v, sizeof(v)));
		main_ok++;
	}
	ringtrace_rb_writer_release(rb);
	st = tu_stats(rb);
	CHECKF(st.missed == missed0, "fresh round lost %" PRIu64 " events",
	       st.missed - missed0);
	CHECK_EQ_U64(st.hit - hit0, 8 * PER_THREAD + main_ok);
	uint64_t n = 0;
	const struct ringtrace_page_header *p;
	while ((p = ringtrace_rb_get_page(rb)) != NULL) {
		n += p->events;
		ringtrace_rb_put_page(rb, p);
	}
	CHECK_EQ_U64(n, 8 * PER_THREAD + main_ok);
	st = tu_stats(rb);
	CHECK_EQ_U64(st.entries, 0);
	CHECK_EQ_U64(st.pages_free, ringtrace_rb_page_count(rb));
	ringtrace_rb_destroy(rb);
	printf("  part A: %u threads x %u events in %.2f s: %" PRIu64 " read, %" PRIu64
	       " missed, %" PRIu64 " pages, %u distinct streams; pool fully free; fresh round "
	       "lossless\n",
	       NTHREADS, PER_THREAD, churn_s, total_read, attempted - ok, pages_read, ns);
}

/* ---- part B: more threads than writer slots ---- */

#define B_THREADS 8u
#define B_SLOTS 4u
#define B_EVENTS 1000u

static pthread_barrier_t b_start, b_written, b_exit;
static uint32_t b_ok[B_THREADS], b_nospc[B_THREADS];

static void *b_writer(void *arg)
{
	uint32_t i = (uint32_t)(uintptr_t)arg;
	pthread_barrier_wait(&b_start);
	for (uint32_t k = 0; k < B_EVENTS; k++) {
		struct payload pl = { i, k, payload_check(i, k) };
		int rc = ringtrace_rb_write(rb, EV_ID, &pl, sizeof(pl));
		if (rc == 0)
			b_ok[i]++;
		else {
			CHECKF(rc == -RINGTRACE_ENOSPC, "part B thread %u: write = %d (%s)", i, rc,
			       ringtrace_strerror(rc));
			b_nospc[i]++;
		}
	}
	pthread_barrier_wait(&b_written);
	pthread_barrier_wait(&b_exit);
	return NULL;
}

static void part_b(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 64, RINGTRACE_RB_DISCARD);
	cfg.max_writers = B_SLOTS;
	rb = tu_create(&cfg);
	CHECK(pthread_barrier_init(&b_start, NULL, B_THREADS) == 0);
	CHECK(pthread_barrier_init(&b_written, NULL, B_THREADS + 1) == 0);
	CHECK(pthread_barrier_init(&b_exit, NULL, B_THREADS + 1) == 0);
	pthread_t t[B_THREADS];
	for (uintptr_t i = 0; i < B_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, b_writer, (void *)i) == 0);
	pthread_barrier_wait(&b_written);

	/* All 8 threads are alive; 4 hold slots. */
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECKF(st.writers_active == B_SLOTS, "writers_active %u with max_writers %u",
	       st.writers_active, B_SLOTS);
	struct ringtrace_rb_writer_stats ws[B_THREADS];
	int nw = ringtrace_rb_get_writer_stats(rb, ws, B_THREADS);
	CHECKF(nw == (int)B_SLOTS, "writer_stats: %d active", nw);
	uint32_t full = 0, none = 0;
	for (uint32_t i = 0; i < B_THREADS; i++) {
		if (b_ok[i] == B_EVENTS)
			full++;
		else if (b_ok[i] == 0)
			none++;
		else
			CHECKF(0, "thread %u: %u events written, %u refused (all or nothing expected)",
			       i, b_ok[i], b_nospc[i]);
	}
	CHECKF(full == B_SLOTS && none == B_THREADS - B_SLOTS,
	       "%u threads wrote everything, %u nothing", full, none);
	CHECK_EQ_U64(st.hit, (uint64_t)B_SLOTS * B_EVENTS);
	CHECK_EQ_U64(st.missed, (uint64_t)(B_THREADS - B_SLOTS) * B_EVENTS);
	CHECK_STATS_BALANCED(&st);

	pthread_barrier_wait(&b_exit);
	for (uint32_t i = 0; i < B_THREADS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 0);

	uint64_t n = 0;
	const struct ringtrace_page_header *p;
	while ((p = ringtrace_rb_get_page(rb)) != NULL) {
		struct ringtrace_page_cursor c;
		struct ringtrace_event ev;
		ringtrace_page_cursor_init(&c, p);
		int rc;
		while ((rc = ringtrace_page_next(&c, &ev)) == 1) {
			struct payload pl;
			memcpy(&pl, ev.data, sizeof(pl));
			CHECKF(pl.thread < B_THREADS && b_ok[pl.thread] == B_EVENTS &&
				       pl.check == payload_check(pl.thread, pl.k),
			       "unexpected event from thread %u", pl.thread);
			n++;
		}
		CHECK(rc == 0);
		ringtrace_rb_put_page(rb, p);
	}
	CHECK_EQ_U64(n, (uint64_t)B_SLOTS * B_EVENTS);

	/* The slots are free again: 4 new writers all succeed. */
	memset(b_ok, 0, sizeof(b_ok));
	memset(b_nospc, 0, sizeof(b_nospc));
	pthread_barrier_destroy(&b_start);
	pthread_barrier_destroy(&b_written);
	pthread_barrier_destroy(&b_exit);
	CHECK(pthread_barrier_init(&b_start, NULL, B_SLOTS) == 0);
	CHECK(pthread_barrier_init(&b_written, NULL, B_SLOTS + 1) == 0);
	CHECK(pthread_barrier_init(&b_exit, NULL, B_SLOTS + 1) == 0);
	for (uintptr_t i = 0; i < B_SLOTS; i++)
		CHECK(pthread_create(&t[i], NULL, b_writer, (void *)i) == 0);
	pthread_barrier_wait(&b_written);
	for (uint32_t i = 0; i < B_SLOTS; i++)
		CHECKF(b_ok[i] == B_EVENTS, "second round: thread %u wrote %u of %u", i, b_ok[i],
		       B_EVENTS);
	pthread_barrier_wait(&b_exit);
	for (uint32_t i = 0; i < B_SLOTS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	pthread_barrier_destroy(&b_start);
	pthread_barrier_destroy(&b_written);
	pthread_barrier_destroy(&b_exit);
	st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 0);
	ringtrace_rb_destroy(rb);
	printf("  part B: max_writers %u, %u threads at once: %u wrote all %u events, %u had "
	       "all refused (missed); slots reusable afterwards\n",
	       B_SLOTS, B_THREADS, full, B_EVENTS, none);
}

int main(void)
{
	part_a();
	part_b();
	printf("test_ring_churn: OK\n");
	return 0;
}
