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
 *  C. A thread whose first event comes from a thread-key destructor in the
 *     last round (PTHREAD_DESTRUCTOR_ITERATIONS) attaches a writer that its
 *     exit cannot retire. With max_writers = 1 that slot would be lost for
 *     good: the next flush finds the thread gone, publishes its event and
 *     frees the slot, and a new thread writes again. (Not under
 *     ThreadSanitizer, which itself runs in that last round: it says so.)
 *  D. Forked children (up to 3 alive) take the 2 writer slots, write, and
 *     end: half of them retiring their writer first, half not (_exit leaves
 *     it to a flush), while a thread of the parent and another process
 *     flush in a loop (the thread also reads the pages), reclaiming the dead
 *     children's slots as new children claim them and other children free
 *     theirs. Every child's events are read intact or counted as missed, no
 *     two children share a stream, slots were reclaimed during the run (more
 *     streams than slots), and they are all free at the end.
 *  E. A writer in another pid namespace (a thread, tid 2, of pid 1 of a
 *     new namespace) is alive, but its pid and tid are numbers of that
 *     namespace: flushes here, and by pid 1 of a third namespace (which
 *     would take pid 1 for its own process and tid 2 for a thread of its
 *     that is gone), must not judge it gone. Its slot stays its own until
 *     it exits, and all its events are read.
 *  F. A child made by _Fork() (no atfork handler runs) calls exit(): its
 *     copy of the parent's writer state must not retire the parent's
 *     writer, whose events all reach the reader once.
 *
 * Each part is a case of its own (the table at the end), with its own
 * buffer: `test_ring_churn --list` names them.
 */
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

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
		struct payload pl = {a->index, k, payload_check(a->index, k)};
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

/*
 * Decode every event of page p (the page and each event checked for
 * layout; each payload must be intact and, since a page belongs to one
 * writer, from one writer of at most `writers`) and hand it to fn.
 * Returns the number of events.
 */
typedef void (*event_fn)(const struct ringtrace_event *ev, const struct payload *pl, void *ctx);

static uint32_t page_payloads(const struct ringtrace_page_header *p, uint32_t writers, event_fn fn,
			      void *ctx)
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
		CHECKF(pl.thread < writers && pl.check == payload_check(pl.thread, pl.k),
		       "corrupt event: writer %u k %u check %" PRIx64, pl.thread, pl.k, pl.check);
		if (thread == UINT32_MAX)
			thread = pl.thread;
		CHECKF(pl.thread == thread,
		       "page of stream %" PRIu64 " holds events of writers "
		       "%u and %u",
		       p->stream_instance_id, thread, pl.thread);
		fn(&ev, &pl, ctx);
		n++;
	}
	CHECKF(rc == 0, "page_next: %d: %s", rc, ringtrace_last_error());
	CHECKF(n == p->events, "decoded %u, header %u", n, p->events);
	return n;
}

/* page_payloads() for every published page, each given back after; the events. */
static uint64_t drain_payloads(uint32_t writers, event_fn fn, void *ctx)
{
	uint64_t n = 0;
	const struct ringtrace_page_header *p;
	while ((p = ringtrace_rb_get_page(rb)) != NULL) {
		n += page_payloads(p, writers, fn, ctx);
		ringtrace_rb_put_page(rb, p);
	}
	return n;
}

static void a_event(const struct ringtrace_event *ev, const struct payload *pl, void *ctx)
{
	(void)ctx;
	CHECKF(pl->k < PER_THREAD, "thread %u: event %u", pl->thread, pl->k);
	CHECKF(pl->k >= read_cnt[pl->thread], "thread %u: event %u after %u events read",
	       pl->thread, pl->k, read_cnt[pl->thread]);
	if (stream_of[pl->thread] == 0)
		stream_of[pl->thread] = ev->stream;
	CHECKF(stream_of[pl->thread] == ev->stream,
	       "thread %u: events in streams %" PRIu64 " and %" PRIu64, pl->thread,
	       stream_of[pl->thread], ev->stream);
	read_cnt[pl->thread]++;
	total_read++;
}

static void consume(const struct ringtrace_page_header *p)
{
	page_payloads(p, NTHREADS, a_event, NULL);
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

/* A: thousands of short-lived threads leave no slot or page behind. */
static void part_a(void)
{
	memset(written_ok, 0, sizeof(written_ok));
	memset(read_cnt, 0, sizeof(read_cnt));
	memset(stream_of, 0, sizeof(stream_of));
	total_read = pages_read = 0;
	atomic_store(&done, 0);
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
	CHECKF(st.missed == missed0, "fresh round lost %" PRIu64 " events", st.missed - missed0);
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
		struct payload pl = {i, k, payload_check(i, k)};
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

static void b_event(const struct ringtrace_event *ev, const struct payload *pl, void *ctx)
{
	(void)ev;
	(void)ctx;
	CHECKF(b_ok[pl->thread] == B_EVENTS, "an event of thread %u, which had all refused",
	       pl->thread);
}

/* B: with max_writers slots taken, the other threads' events are refused
 * and counted as missed; the slots are claimed again after they exit. */
static void part_b(void)
{
	memset(b_ok, 0, sizeof(b_ok));
	memset(b_nospc, 0, sizeof(b_nospc));
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
			CHECKF(0,
			       "thread %u: %u events written, %u refused (all or nothing expected)",
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

	CHECK_EQ_U64(drain_payloads(B_THREADS, b_event, NULL), (uint64_t)B_SLOTS * B_EVENTS);

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

/* ---- part C: a writer attached after the thread's last destructor round ---- */

#ifndef PTHREAD_DESTRUCTOR_ITERATIONS
#define PTHREAD_DESTRUCTOR_ITERATIONS 4
#endif

#if !defined(RINGTRACE_TSAN) /* (see part_c) */
static pthread_key_t c_key;
static int c_rounds, c_rc = 1;
static uint32_t c_tid;

static void c_destructor(void *v)
{
	if (++c_rounds < PTHREAD_DESTRUCTOR_ITERATIONS) {
		pthread_setspecific(c_key, v); /* run again in the next round */
		return;
	}
	/* The last round: nothing will run ringtrace's own destructor after this. */
	struct payload pl = {7, 0, payload_check(7, 0)};
	c_rc = ringtrace_rb_write(rb, EV_ID, &pl, sizeof(pl));
}

static void *c_writer_once(void *arg)
{
	(void)arg;
	struct payload pl = {9, 0, payload_check(9, 0)};
	int rc = ringtrace_rb_write(rb, EV_ID, &pl, sizeof(pl));
	CHECKF(rc == 0, "part C: a new thread's write = %d (%s)", rc, ringtrace_strerror(rc));
	return NULL;
}

static void *c_thread(void *arg)
{
	(void)arg;
	c_tid = tu_gettid();
	CHECK(pthread_setspecific(c_key, (void *)1) == 0);
	return NULL;
}

/* ctx: the only writer whose events may be read; its tid is noted. */
struct c_expect {
	uint32_t thread, tid;
};

static void c_event(const struct ringtrace_event *ev, const struct payload *pl, void *ctx)
{
	struct c_expect *e = ctx;
	CHECKF(pl->thread == e->thread, "part C: an event of writer %u, not %u", pl->thread,
	       e->thread);
	e->tid = ev->tid;
}

#endif

/* C: a writer attached in the last destructor round, which its thread's
 * exit cannot retire, is reclaimed by a flush once the thread is gone. */
static void part_c(void)
{
#if defined(RINGTRACE_TSAN)
	/* ThreadSanitizer ends its own record of a thread in the last round of
	 * thread-key destructors, so any code run after it there crashes the
	 * sanitizer: this part runs in the other builds. */
	CHECK_SKIP("not run under ThreadSanitizer (it ends the thread in the last destructor "
		   "round itself); run in the gcc and ASan builds");
#else
	c_rounds = 0;
	c_rc = 1;
	c_tid = 0;
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 16, RINGTRACE_RB_DISCARD);
	cfg.max_writers = 1;
	rb = tu_create(&cfg);
	CHECK(pthread_key_create(&c_key, c_destructor) == 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, c_thread, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_EQ_U64(c_rounds, PTHREAD_DESTRUCTOR_ITERATIONS);
	CHECKF(c_rc == 0, "part C: the last-round write = %d (%s)", c_rc, ringtrace_strerror(c_rc));

	/* Its exit could not retire the writer: the one slot is still held. */
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 1);
	CHECK_EQ_U64(st.hit, 1);
	int rc = ringtrace_rb_write(rb, EV_ID, &(struct payload){8, 0, payload_check(8, 0)},
				    sizeof(struct payload));
	CHECKF(rc == -RINGTRACE_ENOSPC, "part C: a write with the slot held = %d, not ENOSPC", rc);

	/* (join returns when the thread's tid word is cleared, a little before
	 * the kernel lets go of its tid) */
	for (int i = 0; i < 10000 && syscall(SYS_tgkill, getpid(), c_tid, 0) == 0; i++)
		tu_sleep_us(100);
	CHECK(syscall(SYS_tgkill, getpid(), c_tid, 0) < 0 && errno == ESRCH);
	/* The flush finds the thread gone: its page published, its slot free. */
	int fr = ringtrace_rb_flush(rb, 60000);
	CHECKF(fr == 1,
	       "part C: flush = %d, did not publish the dead "
	       "thread's page",
	       fr);
	st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 0);
	struct c_expect e = {7, 0};
	CHECK_EQ_U64(drain_payloads(10, c_event, &e), 1);
	CHECK_EQ_U64(e.tid, c_tid);
	st = tu_stats(rb);
	CHECK_EQ_U64(st.hit, 1);
	CHECK_EQ_U64(st.read, 1);
	CHECK_EQ_U64(st.missed, 1); /* the ENOSPC above */
	CHECK_STATS_BALANCED(&st);

	/* The slot is usable again (this thread has been skipping attach
	 * attempts since its ENOSPC, so a new thread writes). */
	CHECK(pthread_key_delete(c_key) == 0);
	CHECK(pthread_create(&t, NULL, c_writer_once, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	e.thread = 9;
	CHECK_EQ_U64(drain_payloads(10, c_event, &e), 1);
	st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 0);
	CHECK_EQ_U64(st.hit, 2);
	CHECK_STATS_BALANCED(&st);
	ringtrace_rb_destroy(rb);
	printf("  part C: a writer attached in the last destructor round (of %d) was reclaimed "
	       "by flush once its thread was gone; its event read, its slot reused\n",
	       PTHREAD_DESTRUCTOR_ITERATIONS);
#endif
}

/* ---- part D: dead children's slots reclaimed while others claim them ---- */

#if defined(RINGTRACE_TSAN) || defined(RINGTRACE_SANITIZED)
#define D_CHILDREN 200u
#else
#define D_CHILDREN 600u
#endif
#define D_ALIVE 3
#define D_SLOTS 2u
#define D_EVENTS 20u

struct d_shared {
	uint32_t ok[D_CHILDREN]; /* written by each child */
	uint32_t refused[D_CHILDREN];
	atomic_int stop;  /* tells the flushing process to end */
	uint64_t flushes; /* its count */
};
static struct d_shared *d_sh;
static uint32_t d_read[D_CHILDREN];
static uint64_t d_stream[D_CHILDREN];
static atomic_int d_stop;
static uint64_t d_flushes;

static void d_event(const struct ringtrace_event *ev, const struct payload *pl, void *ctx)
{
	(void)ctx;
	CHECKF(pl->k < D_EVENTS, "part D: child %u: event %u", pl->thread, pl->k);
	CHECKF(d_stream[pl->thread] == 0 || d_stream[pl->thread] == ev->stream,
	       "part D: child %u wrote to streams %" PRIu64 " and %" PRIu64, pl->thread,
	       d_stream[pl->thread], ev->stream);
	d_stream[pl->thread] = ev->stream;
	d_read[pl->thread]++;
}

static void *d_flusher(void *arg)
{
	(void)arg;
	while (!atomic_load(&d_stop)) {
		CHECK(ringtrace_rb_flush(rb, 0) >= 0);
		d_flushes++;
		drain_payloads(D_CHILDREN, d_event, NULL);
	}
	return NULL;
}

/*
 * A second flush, in another process (as a recorder attached to the pool
 * would be), racing the first one's reclaims and page requests. (In a
 * thread, ThreadSanitizer would take pages that reach both flushes
 * through the children for races: it cannot see other processes.)
 */
static void d_flusher_process(void)
{
	uint64_t n = 0;
	while (!atomic_load(&d_sh->stop)) {
		if (ringtrace_rb_flush(rb, 0) < 0)
			_exit(2);
		n++;
	}
	d_sh->flushes = n;
	_exit(0);
}

static int cmp_u64_d(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* D: slots of forked children that died without retiring their writer are
 * reclaimed by flushes while other children claim and free slots. */
static void part_d(void)
{
	memset(d_read, 0, sizeof(d_read));
	memset(d_stream, 0, sizeof(d_stream));
	atomic_store(&d_stop, 0);
	d_flushes = 0;
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 64, RINGTRACE_RB_DISCARD);
	cfg.max_writers = D_SLOTS;
	rb = tu_create(&cfg);
	d_sh = mmap(NULL, sizeof(*d_sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(d_sh != MAP_FAILED);
	/* (forked while this process has one thread: see the children below) */
	fflush(stdout);
	pid_t fl2 = fork();
	CHECK(fl2 >= 0);
	if (fl2 == 0)
		d_flusher_process();
	pthread_t fl;
	CHECK(pthread_create(&fl, NULL, d_flusher, NULL) == 0);
	int alive = 0;
	for (uint32_t i = 0; i < D_CHILDREN; i++) {
		if (alive == D_ALIVE) {
			int ws;
			pid_t w;
			CHECK((w = wait(&ws)) > 0 && w != fl2 && WIFEXITED(ws) &&
			      WEXITSTATUS(ws) == 0);
			alive--;
		}
		fflush(stdout);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			for (uint32_t k = 0; k < D_EVENTS; k++) {
				struct payload pl = {i, k, payload_check(i, k)};
				int rc = ringtrace_rb_write(rb, EV_ID, &pl, sizeof(pl));
				if (rc == 0)
					d_sh->ok[i]++;
				else if (rc == -RINGTRACE_ENOSPC)
					d_sh->refused[i]++;
				else
					_exit(3);
			}
			/*
			 * (Not exit(), whose handlers, like a sanitizer's leak check,
			 * may wait for a lock that one of the parent's threads held
			 * at the fork.)
			 */
			if (i % 2)
				ringtrace_rb_writer_release(rb); /* what exit() would do */
			_exit(0); /* odd children: the writer is not retired */
		}
		alive++;
	}
	while (alive-- > 0) {
		int ws;
		pid_t w;
		CHECK((w = wait(&ws)) > 0 && w != fl2 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	}
	atomic_store(&d_stop, 1);
	CHECK(pthread_join(fl, NULL) == 0);
	atomic_store(&d_sh->stop, 1);
	int fws;
	CHECK(waitpid(fl2, &fws, 0) == fl2);
	CHECKF(WIFEXITED(fws) && WEXITSTATUS(fws) == 0,
	       "part D: the flushing process ended with "
	       "status %d",
	       fws);
	/* Every child is reaped now: one more flush reclaims what is left. */
	CHECK(ringtrace_rb_flush(rb, 0) >= 0);
	drain_payloads(D_CHILDREN, d_event, NULL);

	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 0);
	uint64_t ok = 0, refused = 0, nstreams = 0, read = 0, unretired = 0;
	uint64_t streams[D_CHILDREN];
	for (uint32_t i = 0; i < D_CHILDREN; i++) {
		CHECKF(d_sh->ok[i] + d_sh->refused[i] == D_EVENTS,
		       "part D: child %u: %u + %u events", i, d_sh->ok[i], d_sh->refused[i]);
		CHECKF(d_read[i] == d_sh->ok[i], "part D: child %u wrote %u events, %u read", i,
		       d_sh->ok[i], d_read[i]);
		ok += d_sh->ok[i];
		refused += d_sh->refused[i];
		read += d_read[i];
		if (d_stream[i]) {
			streams[nstreams++] = d_stream[i];
			unretired += i % 2 == 0;
		}
	}
	qsort(streams, nstreams, sizeof(streams[0]), cmp_u64_d);
	for (uint64_t k = 1; k < nstreams; k++)
		CHECKF(streams[k] != streams[k - 1], "part D: two children wrote stream %" PRIu64,
		       streams[k]);
	CHECK_EQ_U64(st.hit, ok);
	CHECK_EQ_U64(st.missed, refused);
	CHECK_EQ_U64(st.read, read);
	CHECK_STATS_BALANCED(&st);
	/* more children that did not retire got a slot than there are slots:
	 * flushes reclaimed theirs during the run */
	CHECKF(unretired > D_SLOTS,
	       "part D: only %" PRIu64 " children that do not retire got "
	       "one of the %u slots: none was reclaimed during the run",
	       unretired, D_SLOTS);
	uint64_t flushes2 = d_sh->flushes;
	CHECK(munmap(d_sh, sizeof(*d_sh)) == 0);
	ringtrace_rb_destroy(rb);
	printf("  part D: %u children (up to %d alive) through %u slots, half retiring their "
	       "writer, half _exiting without, %" PRIu64 " + %" PRIu64
	       " flushes meanwhile: %" PRIu64 " events read intact in %" PRIu64 " streams (%" PRIu64
	       " of children that did not "
	       "retire), %" PRIu64 " refused (counted), all slots free at the end\n",
	       D_CHILDREN, D_ALIVE, D_SLOTS, d_flushes, flushes2, ok, nstreams, unretired, refused);
}

/* ---- part E: a live writer in another pid namespace ---- */

#define E_EVENTS 50u

struct e_pipes {
	int ready_w, go_r;
};

/* The writer: a second thread of pid 1 in a new namespace (tid 2 there). */
static void *e_writer(void *arg)
{
	const struct e_pipes *pp = arg;
	for (uint32_t k = 0; k < E_EVENTS; k++) {
		struct payload pl = {1, k, payload_check(1, k)};
		if (ringtrace_rb_write(rb, EV_ID, &pl, sizeof(pl)) != 0)
			_exit(4);
	}
	char c = 'R';
	if (write(pp->ready_w, &c, 1) != 1 || read(pp->go_r, &c, 1) != 1)
		_exit(5);
	for (uint32_t k = E_EVENTS; k < 2 * E_EVENTS; k++) {
		struct payload pl = {1, k, payload_check(1, k)};
		if (ringtrace_rb_write(rb, EV_ID, &pl, sizeof(pl)) != 0)
			_exit(6);
	}
	return NULL; /* its thread's exit retires the writer */
}

/*
 * In a child: unshare(CLONE_NEWPID), then fork the process that runs fn as
 * pid 1 of the new namespace; exits with its status. If the namespace is
 * refused, writes 'P' (EPERM) or 'U' to report_w and exits 0.
 */
static void e_in_new_pidns(void (*fn)(void *), void *arg, int report_w)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* (if the test fails and exits, so do we) */
	if (unshare(CLONE_NEWPID) != 0) {
		char c = errno == EPERM ? 'P' : 'U';
		_exit(write(report_w, &c, 1) == 1 ? 0 : 7);
	}
	pid_t g = fork();
	if (g < 0)
		_exit(8);
	if (g == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getpid() != 1)
			_exit(9);
		fn(arg);
		_exit(0);
	}
	int ws;
	_exit(waitpid(g, &ws, 0) == g && WIFEXITED(ws) ? WEXITSTATUS(ws) : 10);
}

static void e_writer_main(void *arg)
{
	pthread_t t;
	if (pthread_create(&t, NULL, e_writer, arg) != 0 || pthread_join(t, NULL) != 0)
		_exit(11);
}

/* The flusher: pid 1 of a second namespace, as the writer is of its own. */
static void e_flusher_main(void *arg)
{
	int res_w = *(int *)arg;
	for (int i = 0; i < 100; i++)
		if (ringtrace_rb_flush(rb, 60000) < 0)
			_exit(12);
	struct ringtrace_rb_stats st;
	if (ringtrace_rb_get_stats(rb, &st) < 0)
		_exit(13);
	char c = (char)('0' + (st.writers_active < 9 ? st.writers_active : 9));
	if (write(res_w, &c, 1) != 1)
		_exit(14);
}

/* ctx: the events read so far, all of writer 1 in order, in one stream. */
struct e_seen {
	uint64_t n, stream;
};

static void e_event(const struct ringtrace_event *ev, const struct payload *pl, void *ctx)
{
	struct e_seen *e = ctx;
	CHECKF(pl->thread == 1 && pl->k == e->n, "part E: event %" PRIu64 " is (%u, %u)", e->n,
	       pl->thread, pl->k);
	CHECK(e->stream == 0 || e->stream == ev->stream);
	e->stream = ev->stream;
	e->n++;
}

static void e_wait(pid_t pid, const char *who)
{
	int ws;
	CHECK(waitpid(pid, &ws, 0) == pid);
	CHECKF(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "part E: the %s ended with status %d", who,
	       ws);
}

/* E: flushes here and by pid 1 of a third pid namespace do not take a live
 * writer of another pid namespace for gone. */
static void part_e(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 16, RINGTRACE_RB_DISCARD);
	cfg.max_writers = 2;
	rb = tu_create(&cfg);
	int ready[2], go[2], res[2];
	CHECK(pipe(ready) == 0 && pipe(go) == 0 && pipe(res) == 0);
	fflush(stdout);
	pid_t wchild = fork();
	CHECK(wchild >= 0);
	if (wchild == 0) {
		close(ready[0]);
		close(go[1]);
		struct e_pipes pp = {ready[1], go[0]};
		e_in_new_pidns(e_writer_main, &pp, ready[1]);
	}
	close(ready[1]);
	close(go[0]);
	char c = 0;
	CHECKF(read(ready[0], &c, 1) == 1, "part E: the writer ended before it wrote");
	if (c == 'P' || c == 'U') {
		e_wait(wchild, "writer's parent");
		ringtrace_rb_destroy(rb);
		close(ready[0]);
		close(go[1]);
		close(res[0]);
		close(res[1]);
		CHECK_SKIP("part E: unshare(CLONE_NEWPID) refused (%s)",
			   c == 'P' ? "needs CAP_SYS_ADMIN" : "not supported here");
	}
	CHECK(c == 'R');

	/*
	 * The writer is alive and holds a slot. Its pid and tid (1 and 2) are
	 * numbers of its namespace: neither a flush here (where pid 1 is
	 * another process) nor one run by pid 1 of another namespace (to which
	 * the slot's pid 1 looks like its own, and tid 2 like none of its
	 * threads) may judge it gone.
	 */
	fflush(stdout);
	pid_t fchild = fork();
	CHECK(fchild >= 0);
	if (fchild == 0) {
		close(res[0]);
		e_in_new_pidns(e_flusher_main, &res[1], res[1]);
	}
	close(res[1]);
	CHECKF(read(res[0], &c, 1) == 1, "part E: the flusher ended before it reported");
	e_wait(fchild, "flusher's parent");
	CHECKF(c == '1',
	       "part E: the flusher, pid 1 of another namespace, sees %c writers active: "
	       "it took the live writer of the first one for gone",
	       c);
	for (int i = 0; i < 100; i++)
		CHECK(ringtrace_rb_flush(rb, 60000) >= 0);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECKF(st.writers_active == 1,
	       "part E: %u writers active: a flush here took the live "
	       "writer of another pid namespace for gone",
	       st.writers_active);
	CHECK_EQ_U64(st.hit, E_EVENTS);

	CHECK(write(go[1], &c, 1) == 1);
	e_wait(wchild, "writer's parent");
	st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 0);
	CHECK_EQ_U64(st.hit, 2 * E_EVENTS);
	CHECK_EQ_U64(st.missed, 0);
	struct e_seen e = {0, 0};
	CHECK_EQ_U64(drain_payloads(2, e_event, &e), 2 * E_EVENTS);
	close(ready[0]);
	close(go[1]);
	close(res[0]);
	ringtrace_rb_destroy(rb);
	printf("  part E: a live writer in another pid namespace (pid 1, tid 2 there) kept its slot "
	       "through 100 flushes here and 100 by pid 1 of a third namespace; all its %u events "
	       "read in one stream\n",
	       2 * E_EVENTS);
}

/* ---- part F: the exit of a child that no atfork handler saw ---- */

static void f_event(const struct ringtrace_event *ev, const struct payload *pl, void *ctx)
{
	(void)ev;
	uint32_t *n = ctx;
	CHECKF(pl->thread == 3 && pl->k == *n, "part F: event %u is (%u, %u)", *n, pl->thread,
	       pl->k);
	(*n)++;
}

/* F: the exit() of a child made by _Fork() does not retire its parent's
 * writer. */
static void part_f(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 16, RINGTRACE_RB_DISCARD);
	cfg.max_writers = 1;
	rb = tu_create(&cfg);
	for (uint32_t k = 0; k < 10; k++) {
		struct payload pl = {3, k, payload_check(3, k)};
		CHECK(ringtrace_rb_write(rb, EV_ID, &pl, sizeof(pl)) == 0);
	}
	/* A child made by _Fork() has a copy of this thread's writer state
	 * and runs no atfork handler; its exit() must not retire our writer. */
	fflush(stdout);
	pid_t pid = _Fork();
	CHECK(pid >= 0);
	if (pid == 0)
		exit(0);
	int ws;
	CHECK(waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECKF(st.writers_active == 1,
	       "part F: %u writers active after the child's exit: it "
	       "retired its parent's writer",
	       st.writers_active);
	CHECK_EQ_U64(st.pages_published, 0);
	for (uint32_t k = 10; k < 20; k++) {
		struct payload pl = {3, k, payload_check(3, k)};
		CHECK(ringtrace_rb_write(rb, EV_ID, &pl, sizeof(pl)) == 0);
	}
	ringtrace_rb_writer_release(rb);
	uint32_t n = 0;
	CHECK_EQ_U64(drain_payloads(4, f_event, &n), 20);
	st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 0);
	CHECK_EQ_U64(st.hit, 20);
	CHECK_STATS_BALANCED(&st);
	ringtrace_rb_destroy(rb);
	printf("  part F: a _Fork() child's exit left its parent's writer alone; all 20 events "
	       "read once\n");
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(ring_churn_short_lived_threads_leave_no_slot_or_page_behind, part_a),
	CHECK_CASE(ring_churn_more_threads_than_slots_counted_as_missed, part_b),
	CHECK_CASE(ring_churn_dead_thread_slot_reclaimed_by_flush, part_c),
	CHECK_CASE(ring_churn_dead_children_slots_reclaimed_while_others_claim, part_d),
	CHECK_CASE(ring_churn_live_writer_in_other_pid_namespace_keeps_slot, part_e),
	CHECK_CASE(ring_churn_fork_child_exit_keeps_parent_writer, part_f),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
