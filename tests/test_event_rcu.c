/*
 * test_event_rcu: the read-side sections that tracepoints run in, and the
 * grace period that updaters wait for (src/event/rcu.c).
 *
 *  1. An object that a grace period retired is never read by a section:
 *     reader threads enter sections continuously, by the recording path's
 *     fast entry and by the general one, and signal handlers enter nested
 *     and outermost sections on them; each section reads the published
 *     object twice, a while apart. The updater publishes a new object,
 *     waits a grace period, then poisons the old one: a section that sees
 *     the poison, or the value change under it, read an object after its
 *     grace period ended.
 *  2. A grace period ends while threads keep entering sections with no
 *     pause between them: each waits for the sections open when it began,
 *     not for a moment when no thread is inside one. The case finishes (no
 *     timed assertion: a grace period that never ended would be stopped by
 *     the test's timeout).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/time.h>

#include <ringtrace/event.h>
#include <ringtrace/static/event.h>

#include "testutil.h"

/* Grace periods per case: the first case's sections are long, and a
 * reader preempted inside one holds a grace period up for its time slice. */
#ifdef RINGTRACE_SANITIZED
#define ROUNDS_LONG 60u
#define ROUNDS_SHORT 300u
#else
#define ROUNDS_LONG 300u
#define ROUNDS_SHORT 3000u
#endif
#define NOBJ 8u
#define POISON 0u
#define NREADERS 3u

struct obj {
	uint64_t v; /* an odd value while published or in a grace period; POISON after */
};

static struct obj objs[NOBJ];
static struct obj *cur;
static int stop;
static int spin_inside; /* iterations between a section's two reads */

struct reader {
	pthread_t th;
	unsigned kind;       /* 0: fast entry; 1: general; 2: both, alternating */
	uint64_t sections;   /* entered */
	uint64_t violations; /* poison or a change seen inside a section */
};
static struct reader readers[NREADERS];

/* Added to by the handlers (on the reader threads); read at the end. */
static uint64_t h_sections, h_violations;

/* Read the published object twice inside a section: 1 if it was retired. */
static int read_twice(void)
{
	struct obj *p = __atomic_load_n(&cur, __ATOMIC_ACQUIRE);
	uint64_t a = __atomic_load_n(&p->v, __ATOMIC_RELAXED);
	for (int i = 0; i < spin_inside; i++)
		__asm__ __volatile__("" ::: "memory");
	uint64_t b = __atomic_load_n(&p->v, __ATOMIC_RELAXED);
	return a == POISON || b != a;
}

static void handler(int sig)
{
	(void)sig;
	unsigned rd = ringtrace_read_lock();
	uint64_t bad = (uint64_t)read_twice();
	ringtrace_read_unlock(rd);
	__atomic_fetch_add(&h_sections, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h_violations, bad, __ATOMIC_RELAXED);
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	for (uint64_t i = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++) {
		struct ringtrace_reader_node *n;
		int fast = r->kind == 0 || (r->kind == 2 && (i & 1));
		if (fast && ringtrace_read_lock_fast_(&n)) {
			r->violations += (uint64_t)read_twice();
			ringtrace_read_unlock_fast_(n);
		} else {
			unsigned rd = ringtrace_read_lock();
			r->violations += (uint64_t)read_twice();
			ringtrace_read_unlock(rd);
		}
		__atomic_store_n(&r->sections, r->sections + 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Readers running, SIGALRM (to the readers only) at 5 kHz if `signals`. */
static void readers_start(int signals)
{
	for (unsigned i = 0; i < NOBJ; i++)
		objs[i].v = POISON;
	objs[0].v = 1;
	__atomic_store_n(&cur, &objs[0], __ATOMIC_RELEASE);
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h_sections, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h_violations, 0, __ATOMIC_RELAXED);
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	if (signals) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = handler;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
	}
	/* The readers start with SIGALRM unblocked, this thread blocks it. */
	for (unsigned i = 0; i < NREADERS; i++) {
		memset(&readers[i], 0, sizeof(readers[i]));
		readers[i].kind = i % 3;
		CHECK(pthread_create(&readers[i].th, NULL, reader_main, &readers[i]) == 0);
	}
	CHECK(pthread_sigmask(SIG_BLOCK, &alrm, NULL) == 0);
	/* The updates begin once every reader is entering sections. */
	for (unsigned i = 0; i < NREADERS; i++)
		while (__atomic_load_n(&readers[i].sections, __ATOMIC_RELAXED) == 0)
			sched_yield();
	if (signals) {
		struct itimerval it = {{0, 200}, {0, 200}};
		CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
	}
}

static void readers_stop(void)
{
	struct itimerval off;
	memset(&off, 0, sizeof(off));
	CHECK(setitimer(ITIMER_REAL, &off, NULL) == 0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < NREADERS; i++)
		CHECK(pthread_join(readers[i].th, NULL) == 0);
	signal(SIGALRM, SIG_IGN);
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	CHECK(pthread_sigmask(SIG_UNBLOCK, &alrm, NULL) == 0);
}

/* Publish a new object, wait a grace period, poison the old one: `rounds` times. */
static void update_rounds(uint32_t rounds)
{
	for (uint32_t k = 1; k <= rounds; k++) {
		struct obj *old = __atomic_load_n(&cur, __ATOMIC_RELAXED);
		struct obj *next = &objs[k % NOBJ];
		/* (next was poisoned a grace period ago: no section holds it) */
		__atomic_store_n(&next->v, 2 * (uint64_t)k + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&cur, next, __ATOMIC_RELEASE);
		ringtrace_synchronize();
		__atomic_store_n(&old->v, POISON, __ATOMIC_RELAXED);
	}
}

static void test_retired_never_read(void)
{
	spin_inside = 200;
	readers_start(1);
	update_rounds(ROUNDS_LONG);
	readers_stop();
	uint64_t sections = __atomic_load_n(&h_sections, __ATOMIC_RELAXED);
	uint64_t violations = __atomic_load_n(&h_violations, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < NREADERS; i++) {
		printf("  reader %u (%s entry): %" PRIu64 " sections\n", i,
		       readers[i].kind == 0   ? "fast"
		       : readers[i].kind == 1 ? "general"
					      : "both",
		       readers[i].sections);
		sections += readers[i].sections;
		violations += readers[i].violations;
	}
	printf("  handlers: %" PRIu64 " sections; %u grace periods\n",
	       __atomic_load_n(&h_sections, __ATOMIC_RELAXED), ROUNDS_LONG);
	CHECKF(violations == 0,
	       "%" PRIu64 " of %" PRIu64 " sections read an object after its grace period",
	       violations, sections);
	for (unsigned i = 0; i < NREADERS; i++)
		CHECKF(readers[i].sections > 0, "reader %u entered no section", i);
}

static void test_ends_under_back_to_back_sections(void)
{
	spin_inside = 0;
	readers_start(0);
	update_rounds(ROUNDS_SHORT);
	readers_stop();
	uint64_t violations = 0;
	for (unsigned i = 0; i < NREADERS; i++) {
		violations += readers[i].violations;
		CHECKF(readers[i].sections > 0, "reader %u entered no section", i);
	}
	printf("  %u grace periods ended while %u threads entered %" PRIu64 ", %" PRIu64
	       " and %" PRIu64 " sections\n",
	       ROUNDS_SHORT, NREADERS, readers[0].sections, readers[1].sections,
	       readers[2].sections);
	CHECK_EQ_U64(violations, 0);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(event_rcu_retired_object_never_read_by_a_section, test_retired_never_read),
	CHECK_CASE(event_rcu_grace_period_ends_while_threads_enter_sections_back_to_back, test_ends_under_back_to_back_sections),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
