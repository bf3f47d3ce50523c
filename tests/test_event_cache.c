/*
 * test_event_cache: the recorded-event fast path writes through a
 * per-thread cache (the events cookie it last recorded under and its
 * writer state for that buffer; ringtrace_thr_, ring_inline.h). Every way
 * that cache can go stale must send the next event the general way, and
 * no event may be lost or land in the wrong buffer:
 *
 *  1. the thread gives its writer up (ringtrace_rb_writer_release, as a
 *     flush-and-read does), then records again;
 *  2. the events buffer changes A -> B -> A, and tracing goes off and on
 *     (a trigger's action): each buffer holds exactly the events recorded
 *     while it was the events buffer and tracing was on;
 *  3. the buffer is detached and destroyed, and a new one is created (it
 *     may get the same address and the same per-thread index);
 *  4. fork: the child's first events must not write through the parent's
 *     cached state (its writer state is reset at fork); the child's and
 *     the parent's events all arrive, each in order, in the shared pool;
 *  5. signal handlers record while the thread records: every event of the
 *     interrupted loop arrives, in order; each handler event is recorded
 *     or counted as missed (nested inside a write), never corrupted;
 *  6. the same while the thread gives its writer up after every second
 *     event (a handler landing inside the release must not cache the
 *     state being retired);
 *  7. ringtrace_events_prepare_thread() attaches and caches before the
 *     thread's first event, which then goes through that state;
 *  8. without an events buffer it only registers the read-side node;
 *  9. an event recorded inside a read-side section does not take a clock
 *     reading that another call's declined inline attempt left.
 * Every event carries (tag, sequence) and is checked. Each of 1-9 is a
 * case, enabling the events itself (cache_setup).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/filter.h>
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(cache_ev, RINGTRACE_PROTO(uint32_t tag, uint32_t seq), RINGTRACE_ARGS(tag, seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, tag, tag)
					 ringtrace_integer(uint32_t, seq, seq)),
		RINGTRACE_PRINT("tag=%u seq=%u"))
RINGTRACE_EVENT(cache_sig, RINGTRACE_PROTO(uint32_t seq), RINGTRACE_ARGS(seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, seq, seq)), RINGTRACE_PRINT("seq=%u"))

#include "events_util.h"
#include "testutil.h"

struct rec {
	uint32_t tag, seq;
};

/* The (tag, seq) payloads of the cache_ev events in l, in order. */
static size_t payloads(const struct evu_list *l, uint32_t id, struct rec *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (l->ev[i].id != id)
			continue;
		CHECK_EQ_U64(l->ev[i].len, sizeof(struct rec));
		CHECK(n < max);
		memcpy(&out[n++], l->ev[i].data, sizeof(struct rec));
	}
	return n;
}

/* l holds, for tag, exactly the sequence first..first+count-1, in order. */
static void expect_seq(const struct evu_list *l, uint32_t tag, uint32_t first, uint32_t count)
{
	struct rec *r = malloc((l->n + 1) * sizeof(*r));
	CHECK(r != NULL);
	size_t n = payloads(l, evu_id("cache_ev"), r, l->n);
	uint32_t next = first, got = 0;
	for (size_t i = 0; i < n; i++) {
		if (r[i].tag != tag)
			continue;
		CHECKF(r[i].seq == next, "tag %u: event %u has seq %u, expected %u", tag, got,
		       r[i].seq, next);
		next++;
		got++;
	}
	CHECKF(got == count, "tag %u: %u events, expected %u", tag, got, count);
	free(r);
}

static void record(uint32_t tag, uint32_t first, uint32_t count)
{
	for (uint32_t i = 0; i < count; i++)
		trace_cache_ev(tag, first + i);
}

/* Every case records cache_ev and cache_sig. */
static void cache_setup(void)
{
	CHECK_OK(ringtrace_event_enable("cache_*"));
}

/* 1. writer released, then more events. */
static void test_release(void)
{
	cache_setup();
	ringtrace_rb *rb = evu_buffer(4096, 64);
	struct evu_list l = {0};
	record(1, 0, 1000);
	evu_collect(rb, &l);
	expect_seq(&l, 1, 0, 1000);
	evu_list_free(&l);
	/* The cache named the released writer: these must re-attach. */
	record(1, 1000, 1000);
	evu_collect(rb, &l);
	expect_seq(&l, 1, 1000, 1000);
	evu_list_free(&l);
	evu_buffer_done(rb);
}

/* 2. buffer switches, tracing off and on. */
static void test_switch(void)
{
	cache_setup();
	ringtrace_rb *a = evu_buffer(4096, 64);
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.page_size = 4096;
	cfg.pool_size = 4096 * 64;
	ringtrace_rb *b = NULL;
	CHECK_OK(ringtrace_rb_create(&cfg, &b));
	record(2, 0, 500);
	CHECK_OK(ringtrace_events_set_buffer(b));
	record(3, 0, 500);
	CHECK_OK(ringtrace_events_set_buffer(a));
	record(2, 500, 500);
	ringtrace_tracing_off();
	CHECK(!ringtrace_tracing_is_on());
	record(4, 0, 300); /* not recorded anywhere */
	ringtrace_tracing_on();
	CHECK(ringtrace_tracing_is_on());
	record(2, 1000, 200);
	/* off while no buffer is attached, then a buffer: still off */
	CHECK_OK(ringtrace_events_set_buffer(NULL));
	ringtrace_tracing_off();
	CHECK_OK(ringtrace_events_set_buffer(b));
	record(4, 300, 100);
	ringtrace_tracing_on();
	record(3, 500, 100);
	CHECK_OK(ringtrace_events_set_buffer(a));

	struct evu_list la = {0}, lb = {0};
	evu_collect(a, &la);
	evu_collect(b, &lb);
	expect_seq(&la, 2, 0, 1200);
	expect_seq(&la, 3, 0, 0);
	expect_seq(&la, 4, 0, 0);
	expect_seq(&lb, 3, 0, 600);
	expect_seq(&lb, 2, 0, 0);
	expect_seq(&lb, 4, 0, 0);
	evu_list_free(&la);
	evu_list_free(&lb);
	ringtrace_rb_destroy(b);
	evu_buffer_done(a);
}

/* 3. destroy and create again, many times. */
static void test_recreate(void)
{
	cache_setup();
	for (uint32_t round = 0; round < 20; round++) {
		ringtrace_rb *rb = evu_buffer(4096, 16);
		struct evu_list l = {0};
		record(5, round * 100, 100);
		evu_collect(rb, &l);
		expect_seq(&l, 5, round * 100, 100);
		evu_list_free(&l);
		evu_buffer_done(rb);
	}
}

/* 4. fork with a warm cache. */
static void test_fork(void)
{
	cache_setup();
	ringtrace_rb *rb = evu_buffer(4096, 256);
	record(6, 0, 100); /* the parent's cache is warm */
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		record(7, 0, 20000);
		/* exit() publishes the child's last page (ring.c: atexit). */
		exit(0);
	}
	record(6, 100, 20000);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
	struct evu_list l = {0};
	evu_collect(rb, &l);
	expect_seq(&l, 6, 0, 20100);
	expect_seq(&l, 7, 0, 20000);
	for (size_t i = 0; i < l.n; i++) {
		uint32_t tag;
		memcpy(&tag, l.ev[i].data, sizeof(tag));
		if (tag == 7)
			CHECKF(l.ev[i].tid == (uint32_t)pid, "child event from tid %u",
			       l.ev[i].tid);
	}
	evu_list_free(&l);
	evu_buffer_done(rb);
}

/*
 * 5. signal handlers recording during a storm.
 *
 * The timer is one-shot and each handler call arms the next one as it
 * returns, so the interrupted loop always runs a full period between two
 * calls. A periodic timer (ITIMER_REAL) does not promise that: a handler
 * that takes longer than the period (an attach's two system calls under
 * AddressSanitizer on a loaded machine) finds the next signal already
 * pending when it returns, and the loop can starve for minutes (a CI run
 * timed out so at aea6217).
 */
static volatile uint32_t sig_calls;
static volatile sig_atomic_t sig_period_us;
static timer_t sig_timer;

static void sig_arm(long us)
{
	struct itimerspec it = {{0, 0}, {us / 1000000, (us % 1000000) * 1000}};
	/* (timer_settime is async-signal-safe) */
	timer_settime(sig_timer, 0, &it, NULL);
}

static void on_alarm(int sig)
{
	(void)sig;
	uint32_t n = sig_calls;
	trace_cache_sig(n);
	sig_calls = n + 1;
	long us = sig_period_us;
	if (us)
		sig_arm(us);
}

/* on_alarm `us` microseconds after the loop resumes from the last call,
 * counting calls from 0; 0 stops it. */
static void alarm_every(long us)
{
	static int created;
	if (!created) {
		struct sigevent sev;
		memset(&sev, 0, sizeof(sev));
		sev.sigev_notify = SIGEV_SIGNAL;
		sev.sigev_signo = SIGALRM;
		CHECK(timer_create(CLOCK_MONOTONIC, &sev, &sig_timer) == 0);
		created = 1;
	}
	if (us) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sa.sa_flags = SA_RESTART;
		CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
		sig_calls = 0;
	}
	/* (the period first: a handler landing after this store arms nothing) */
	sig_period_us = us;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	sig_arm(us);
}

static void test_signals(void)
{
	cache_setup();
	ringtrace_rb *rb = evu_buffer(65536, 512);
	alarm_every(50);
	/* (a multiple of the 250000 of a round; the sanitizers' slower writes
	 * meet as many signals in fewer events) */
	const uint32_t n = CHECK_SCALE(3000000, 500000);
	struct evu_list l = {0};
	for (uint32_t done = 0; done < n; done += 250000) {
		record(8, done, 250000);
		evu_drain(rb, &l);
	}
	alarm_every(0);
	CHECKF(sig_calls > 0, "no signal arrived while %u events were recorded", (unsigned)n);
	evu_collect(rb, &l);
	expect_seq(&l, 8, 0, n);
	struct ringtrace_rb_stats st;
	CHECK_OK(ringtrace_rb_get_stats(rb, &st));
	uint64_t sig_rec = evu_count_id(&l, evu_id("cache_sig"));
	/* A handler's event is recorded or, nested inside a write, missed. */
	CHECKF(sig_rec + st.missed == sig_calls,
	       "signal events: %llu recorded + %llu missed != %u calls",
	       (unsigned long long)sig_rec, (unsigned long long)st.missed, (unsigned)sig_calls);
	CHECK_EQ_U64(st.hit, (uint64_t)n + sig_rec);
	/* Their sequence numbers only ever increase. */
	uint32_t last = 0;
	int first = 1;
	for (size_t i = 0; i < l.n; i++) {
		if (l.ev[i].id != evu_id("cache_sig"))
			continue;
		uint32_t s;
		memcpy(&s, l.ev[i].data, sizeof(s));
		CHECKF(first || s > last, "signal event %u after %u", s, last);
		last = s;
		first = 0;
	}
	printf("signals: %u handler calls, %llu recorded, %llu missed (nested)\n",
	       (unsigned)sig_calls, (unsigned long long)sig_rec, (unsigned long long)st.missed);
	evu_list_free(&l);
	evu_buffer_done(rb);
}

/*
 * 6. signal handlers recording while the thread keeps giving its writer up
 * (each release retires the slot the cache names) and attaching again.
 */
static void test_release_signals(void)
{
	cache_setup();
	ringtrace_rb *rb = evu_buffer(4096, 512);
	alarm_every(20);
	const uint32_t n = 10000;
	struct evu_list l = {0};
	for (uint32_t i = 0; i < n; i++) {
		trace_cache_ev(9, i);
		trace_cache_ev(9, i + n);
		ringtrace_rb_writer_release(rb);
		if (i % 64 == 63)
			evu_drain(rb, &l);
	}
	alarm_every(0);
	CHECKF(sig_calls > 0, "no signal arrived during %u releases", (unsigned)n);
	evu_collect(rb, &l);
	/* tag 9: 0, n, 1, n+1, ... : check the two interleaved sequences */
	uint32_t next_lo = 0, next_hi = n;
	uint32_t id = evu_id("cache_ev");
	for (size_t i = 0; i < l.n; i++) {
		if (l.ev[i].id != id)
			continue;
		struct rec r;
		memcpy(&r, l.ev[i].data, sizeof(r));
		CHECK_EQ_U64(r.tag, 9);
		if (r.seq < n) {
			CHECKF(r.seq == next_lo, "seq %u, expected %u", r.seq, next_lo);
			next_lo++;
		} else {
			CHECKF(r.seq == next_hi, "seq %u, expected %u", r.seq, next_hi);
			next_hi++;
		}
	}
	CHECK_EQ_U64(next_lo, n);
	CHECK_EQ_U64(next_hi, 2 * n);
	struct ringtrace_rb_stats st;
	CHECK_OK(ringtrace_rb_get_stats(rb, &st));
	uint64_t sig_rec = evu_count_id(&l, evu_id("cache_sig"));
	CHECKF(sig_rec + st.missed == sig_calls,
	       "signal events: %llu recorded + %llu missed != %u calls",
	       (unsigned long long)sig_rec, (unsigned long long)st.missed, (unsigned)sig_calls);
	printf("release + signals: %u handler calls, %llu recorded, %llu missed\n",
	       (unsigned)sig_calls, (unsigned long long)sig_rec, (unsigned long long)st.missed);
	evu_list_free(&l);
	evu_buffer_done(rb);
}

/*
 * 7. ringtrace_events_prepare_thread(), in a thread of its own: the thread
 * is a writer of the events buffer and its state cached before its first
 * event; its events then go through that state (the same slot, the cache
 * untouched) and all arrive.
 */
static void *prepare_thread_body(void *arg)
{
	ringtrace_rb *rb = arg;
	struct ringtrace_rb_stats st;
	CHECK_OK(ringtrace_rb_get_stats(rb, &st));
	uint32_t writers = st.writers_active;
	uint64_t hit = st.hit;
	CHECK(ringtrace_thr_.cookie == RINGTRACE_THR_NO_COOKIE_);
	CHECKF(ringtrace_events_prepare_thread() == 0, "%s", ringtrace_last_error());
	uint64_t c = __atomic_load_n(&ringtrace_events_cookie_, __ATOMIC_ACQUIRE);
	CHECKF(ringtrace_thr_.cookie == c, "cookie cached %#llx, events cookie %#llx",
	       (unsigned long long)ringtrace_thr_.cookie, (unsigned long long)c);
	const struct ringtrace_wtls_ *t = ringtrace_thr_.last_t;
	CHECK(t != NULL && t->slot != NULL);
	CHECK_OK(ringtrace_rb_get_stats(rb, &st));
	CHECK_EQ_U64(st.writers_active, writers + 1);
	CHECK_EQ_U64(st.hit, hit);
	record(7, 0, 100);
	CHECK(ringtrace_thr_.last_t == t && ringtrace_thr_.cookie == c);
	CHECK_OK(ringtrace_rb_get_stats(rb, &st));
	CHECK_EQ_U64(st.writers_active, writers + 1);
	CHECK_EQ_U64(st.hit, hit + 100);
	return NULL;
}

static void test_prepare(void)
{
	cache_setup();
	ringtrace_rb *rb = evu_buffer(4096, 64);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, prepare_thread_body, rb) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	struct evu_list l = {0};
	evu_collect(rb, &l);
	expect_seq(&l, 7, 0, 100);
	evu_list_free(&l);
	evu_buffer_done(rb);
}

/* 8. ... with no events buffer: the read-side node only, nothing cached. */
static void *prepare_nobuf_body(void *arg)
{
	(void)arg;
	CHECK(ringtrace_thr_.rnode == &ringtrace_rnode_none_);
	CHECK_OK(ringtrace_events_prepare_thread());
	CHECK(ringtrace_thr_.rnode != &ringtrace_rnode_none_);
	CHECK(ringtrace_thr_.cookie == RINGTRACE_THR_NO_COOKIE_);
	return NULL;
}

static void test_prepare_nobuf(void)
{
	cache_setup();
	CHECK_OK(ringtrace_events_set_buffer(NULL));
	pthread_t th;
	CHECK(pthread_create(&th, NULL, prepare_nobuf_body, NULL) == 0);
	CHECK(pthread_join(th, NULL) == 0);
}

/*
 * 9. An event recorded inside a read-side section (a signal handler that
 * interrupted a tracepoint, a probe's tracepoint) goes the general way
 * without an inline attempt of its own: it must not be stamped with a
 * clock reading another call left in the thread's writer state (decl_ts,
 * there for the general path of the call whose attempt declined).
 */
static void test_nested_no_decl(void)
{
	cache_setup();
	ringtrace_rb *rb = evu_buffer(4096, 64);
	record(9, 0, 1); /* attached, cached */
	struct ringtrace_wtls_ *t = ringtrace_thr_.last_t;
	CHECK(t != NULL);
	/* A reading left by an attempt whose own general path has not run
	 * yet: just after the last event, as a real one would be. */
	uint64_t planted = ringtrace_last_ts_(t) + 1;
	t->decl_ts = planted;
	unsigned rd = ringtrace_read_lock();
	trace_cache_ev(9, 1);
	ringtrace_read_unlock(rd);
	CHECKF(ringtrace_last_ts_(t) > planted,
	       "the nested event's timestamp %" PRIu64 ", the reading left there %" PRIu64,
	       ringtrace_last_ts_(t), planted);
	record(9, 2, 1);
	struct evu_list l = {0};
	evu_collect(rb, &l);
	expect_seq(&l, 9, 0, 3);
	evu_list_free(&l);
	evu_buffer_done(rb);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(event_cache_stale_after_writer_release, test_release),
	CHECK_CASE(event_cache_follows_buffer_switches_and_tracing_off_on, test_switch),
	CHECK_CASE(event_cache_stale_after_buffer_destroyed_and_recreated, test_recreate),
	CHECK_CASE(event_cache_not_used_by_forked_child, test_fork),
	CHECK_CASE(event_cache_signal_handler_events_recorded_or_missed, test_signals),
	CHECK_CASE(event_cache_signal_during_writer_release_loses_nothing, test_release_signals),
	CHECK_CASE(event_cache_prepare_thread_attaches_and_caches_before_first_event, test_prepare),
	CHECK_CASE(event_cache_prepare_thread_without_buffer_registers_node_only, test_prepare_nobuf),
	CHECK_CASE(event_cache_nested_section_event_not_stamped_with_declined_reading, test_nested_no_decl),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
