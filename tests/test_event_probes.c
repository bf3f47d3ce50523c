/*
 * test_event_probes: callbacks attached to events.
 *
 *  1. A typed probe (ringtrace_probe_register_<event>) receives the
 *     event's arguments; it runs whether or not the event is recorded; the
 *     registry counts it; a probe may call another tracepoint.
 *  2. Three probes on one event (two functions, one of them twice with
 *     different data) plus recording: each runs once per call.
 *  3. Errors: a duplicate (fn, data) is -RINGTRACE_EINVAL, so is a NULL
 *     function; unregistering what is not attached is -RINGTRACE_ENOENT.
 *  4. Once ringtrace_probe_unregister() returns, the probe never runs
 *     again, although two threads keep calling the tracepoint.
 *  5. Register/unregister in a loop for about a second while two threads
 *     call the tracepoint; each probe's data is malloc'ed, written by the
 *     probe, and freed as soon as unregister returns. ASan proves that no
 *     probe runs on freed data; TSan that the writes are ordered before the
 *     free.
 * Cases: 1-3 are steps on one event's probes (a probe alone, several with
 * recording, errors, one unregistered, a probe calling a tracepoint, all
 * removed): the case for a later step runs the earlier ones first. 4 and 5
 * each start threads of their own.
 */
#include <pthread.h>

#define RINGTRACE_CREATE_EVENTS
#include "events_probes.h"
#include "events_util.h"
#include "testutil.h"

#define CHECK_RC(call, want)                                                              \
	do {                                                                              \
		int rc_ = (call);                                                         \
		CHECKF(rc_ == (want), "%s returned %d (%s), expected %d: %s", #call, rc_, \
		       ringtrace_strerror(rc_), (int)(want), ringtrace_last_error());     \
	} while (0)

static uint64_t probes_of(const char *name)
{
	struct ringtrace_event_info info;
	CHECK_OK(ringtrace_event_lookup(name, &info));
	return info.probes;
}

static void probe_frozen(void *data, uint32_t th, uint64_t seq);

/* ---- 1, 2, 3 ---------------------------------------------------------------- */

struct args_seen {
	int calls;
	int a;
	char s[64];
	double d;
	uint64_t u;
};

static void probe_args(void *data, int a, const char *s, double d, uint64_t u)
{
	struct args_seen *x = data;
	x->calls++;
	x->a = a;
	snprintf(x->s, sizeof(x->s), "%s", s ? s : "(NULL)");
	x->d = d;
	x->u = u;
}

static int count_a, count_b;
static void probe_count(void *data, int a, const char *s, double d, uint64_t u)
{
	(void)s;
	(void)d;
	(void)u;
	*(int *)data += 1;
	(void)a;
}

static void probe_nested(void *data, int a, const char *s, double d, uint64_t u)
{
	(void)s;
	(void)d;
	(void)u;
	*(int *)data += 1;
	trace_pr_inner(a * 10);
}

/* The steps' state: the buffer, the events read, what the probes saw. */
static struct {
	ringtrace_rb *rb;
	struct evu_list l;
	struct args_seen seen;
	int nested;
} pc;

/* 1. A typed probe alone: it gets the arguments; nothing is recorded. */
static void step_probe_only(void)
{
	memset(&pc, 0, sizeof(pc));
	count_a = count_b = 0;
	pc.rb = evu_buffer(16u << 10, 16);

	CHECK(ringtrace_event_pr_ev.state == 0);
	CHECK_RC(ringtrace_probe_register_pr_ev(probe_args, &pc.seen), 0);
	CHECK(ringtrace_event_pr_ev.state != 0);
	CHECK_EQ_U64(ringtrace_event_pr_ev.state, RINGTRACE_EV_PROBES);
	CHECK_EQ_U64(probes_of("pr_ev"), 1);
	CHECK(!evu_enabled("pr_ev"));

	/* probe only: called, nothing recorded */
	trace_pr_ev(-7, "hello", 2.5, UINT64_MAX);
	CHECK_EQ_U64(pc.seen.calls, 1);
	CHECK(pc.seen.a == -7 && strcmp(pc.seen.s, "hello") == 0 && pc.seen.d == 2.5 &&
	      pc.seen.u == UINT64_MAX);
	trace_pr_ev(INT32_MIN, NULL, -0.0, 0);
	CHECK_EQ_U64(pc.seen.calls, 2);
	CHECK(pc.seen.a == INT32_MIN && strcmp(pc.seen.s, "(NULL)") == 0 && pc.seen.u == 0);
	evu_collect(pc.rb, &pc.l);
	CHECK_EQ_U64(pc.l.n, 0);
}

/* 2. Recording on, three probes: each runs once per call. */
static void step_record(void)
{
	/* and recording */
	CHECK_RC(ringtrace_event_enable("pr_*"), 3);
	CHECK_EQ_U64(ringtrace_event_pr_ev.state, RINGTRACE_EV_PROBES | RINGTRACE_EV_RECORD);
	CHECK_RC(ringtrace_probe_register_pr_ev(probe_count, &count_a), 0);
	CHECK_RC(ringtrace_probe_register_pr_ev(probe_count, &count_b), 0);
	CHECK_EQ_U64(probes_of("pr_ev"), 3);
	for (int i = 0; i < 10; i++)
		trace_pr_ev(i, "x", i * 0.5, (uint64_t)i);
	CHECK(pc.seen.calls == 12 && count_a == 10 && count_b == 10);
	CHECK(pc.seen.a == 9 && pc.seen.u == 9 && pc.seen.d == 4.5);
	evu_collect(pc.rb, &pc.l);
	CHECK_EQ_U64(pc.l.n, 10);
	for (int i = 0; i < 10; i++) {
		struct ringtrace_value v[8];
		CHECK_EQ_U64(pc.l.ev[i].id, evu_id("pr_ev"));
		CHECK_EQ_U64(evu_decode(&pc.l.ev[i], v, 8, NULL), 5);
		CHECK(v[1].v.i == i && v[2].len == 1 && v[3].v.f == i * 0.5 &&
		      v[4].v.u == (uint64_t)i);
	}
	evu_list_free(&pc.l);
}

/* 3. A duplicate or NULL probe is refused; so is removing a missing one. */
static void step_errors(void)
{
	/* 3. errors */
	CHECK_RC(ringtrace_probe_register_pr_ev(probe_count, &count_a), -RINGTRACE_EINVAL);
	CHECKF(evu_has(ringtrace_last_error(), "pr_ev"), "message: %s", ringtrace_last_error());
	CHECK_RC(ringtrace_probe_register_pr_ev(NULL, &count_a), -RINGTRACE_EINVAL);
	CHECK_RC(ringtrace_probe_unregister_pr_ev(probe_nested, &count_a), -RINGTRACE_ENOENT);
	CHECK_RC(ringtrace_probe_unregister_pr_ev(probe_count, &pc.seen), -RINGTRACE_ENOENT);
	CHECK_RC(ringtrace_probe_unregister_pr_hot(probe_frozen, NULL), -RINGTRACE_ENOENT);
	CHECK_RC(ringtrace_probe_unregister_pr_ev(NULL, &count_a), -RINGTRACE_EINVAL);
	CHECK_EQ_U64(probes_of("pr_ev"), 3);
}

/* One probe removed: the others keep running. */
static void step_unregister_one(void)
{
	/* unregister the middle one: the others keep running */
	CHECK_RC(ringtrace_probe_unregister_pr_ev(probe_count, &count_a), 0);
	CHECK_RC(ringtrace_probe_unregister_pr_ev(probe_count, &count_a), -RINGTRACE_ENOENT);
	CHECK_EQ_U64(probes_of("pr_ev"), 2);
	trace_pr_ev(1, "y", 1, 1);
	CHECK(pc.seen.calls == 13 && count_a == 10 && count_b == 11);
}

/* A probe that calls another tracepoint: it is recorded. */
static void step_nested(void)
{
	/* a probe calling a tracepoint (nested read-side section) */
	pc.nested = 0;
	CHECK_RC(ringtrace_probe_register_pr_ev(probe_nested, &pc.nested), 0);
	trace_pr_ev(4, "z", 0, 0);
	CHECK(pc.nested == 1 && count_b == 12);
	evu_collect(pc.rb, &pc.l);
	CHECK_EQ_U64(pc.l.n, 3); /* pr_ev, pr_ev, pr_inner */
	CHECK_EQ_U64(evu_count_id(&pc.l, evu_id("pr_inner")), 1);
	{
		struct ringtrace_value v[4];
		size_t k = pc.l.ev[2].id == evu_id("pr_inner") ? 2 : 1;
		CHECK_EQ_U64(evu_decode(&pc.l.ev[k], v, 4, NULL), 1);
		CHECK(v[0].v.i == 40);
	}
	evu_list_free(&pc.l);
}

/* Every probe removed and recording off: the call site's word is 0. */
static void step_all_gone(void)
{
	/* all gone, recording off: the call site's word is 0 again */
	CHECK_RC(ringtrace_probe_unregister_pr_ev(probe_args, &pc.seen), 0);
	CHECK_RC(ringtrace_probe_unregister_pr_ev(probe_count, &count_b), 0);
	CHECK_RC(ringtrace_probe_unregister_pr_ev(probe_nested, &pc.nested), 0);
	CHECK_EQ_U64(probes_of("pr_ev"), 0);
	CHECK_EQ_U64(ringtrace_event_pr_ev.state, RINGTRACE_EV_RECORD);
	CHECK_RC(ringtrace_event_disable("pr_*"), 3);
	CHECK(ringtrace_event_pr_ev.state == 0);
	CHECK(ringtrace_event_pr_ev.probes == NULL);
	trace_pr_ev(5, "w", 0, 0);
	CHECK(pc.seen.calls == 14 && count_b == 12 && pc.nested == 1);
	evu_collect(pc.rb, &pc.l);
	CHECK_EQ_U64(pc.l.n, 0);
}

/* Whatever the steps left attached or on is removed; the buffer goes. */
static void steps_done(void)
{
	ringtrace_probe_unregister_pr_ev(probe_args, &pc.seen);
	ringtrace_probe_unregister_pr_ev(probe_count, &count_a);
	ringtrace_probe_unregister_pr_ev(probe_count, &count_b);
	ringtrace_probe_unregister_pr_ev(probe_nested, &pc.nested);
	ringtrace_event_disable("pr_*");
	evu_list_free(&pc.l);
	evu_buffer_done(pc.rb);
}

static void case_probe_only(void)
{
	step_probe_only();
	steps_done();
}

static void case_record(void)
{
	step_probe_only();
	step_record();
	steps_done();
}

static void case_errors(void)
{
	step_probe_only();
	step_record();
	step_errors();
	steps_done();
}

static void case_unregister_one(void)
{
	step_probe_only();
	step_record();
	step_errors();
	step_unregister_one();
	steps_done();
}

static void case_nested(void)
{
	step_probe_only();
	step_record();
	step_errors();
	step_unregister_one();
	step_nested();
	steps_done();
}

static void case_all_gone(void)
{
	step_probe_only();
	step_record();
	step_errors();
	step_unregister_one();
	step_nested();
	step_all_gone();
	steps_done();
}

/* ---- 4, 5: threads ---------------------------------------------------------- */

#define PD_MAGIC 0x5052424544415441ull /* "PROBEDATA" */

struct probe_data {
	uint64_t magic;
	uint64_t calls[2];
	uint64_t last[2];
	uint64_t bad;
};

static uint64_t total_calls;
static int stop_flag;
static uint64_t thread_calls[2];

static void probe_hot(void *data, uint32_t th, uint64_t seq)
{
	struct probe_data *d = data;
	if (d->magic != PD_MAGIC || th > 1 || seq <= d->last[th])
		d->bad++; /* each thread writes only its own slots */
	d->calls[th & 1]++;
	d->last[th & 1] = seq;
	__atomic_fetch_add(&total_calls, 1, __ATOMIC_RELAXED);
}

static uint64_t frozen_calls;
static void probe_frozen(void *data, uint32_t th, uint64_t seq)
{
	(void)data;
	(void)th;
	(void)seq;
	__atomic_fetch_add(&frozen_calls, 1, __ATOMIC_RELAXED);
}

static void *hammer(void *arg)
{
	uint32_t th = (uint32_t)(uintptr_t)arg;
	uint64_t seq = 0;
	while (!__atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE)) {
		for (int i = 0; i < 32; i++)
			trace_pr_hot(th, ++seq);
	}
	__atomic_store_n(&thread_calls[th], seq, __ATOMIC_RELEASE);
	return NULL;
}

static void check_data(struct probe_data *d)
{
	CHECK(d->magic == PD_MAGIC);
	CHECKF(d->bad == 0, "probe saw %" PRIu64 " bad calls", d->bad);
}

/* Two threads calling trace_pr_hot until threads_stop(). */
static pthread_t hammers[2];

static void threads_start(void)
{
	__atomic_store_n(&stop_flag, 0, __ATOMIC_RELEASE);
	for (uintptr_t i = 0; i < 2; i++)
		CHECK(pthread_create(&hammers[i], NULL, hammer, (void *)i) == 0);
}

static void threads_stop(void)
{
	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(hammers[i], NULL) == 0);
}

/* 4. Once unregister returns, the probe never runs again. */
static void test_unregister_stops(void)
{
	__atomic_store_n(&frozen_calls, 0, __ATOMIC_RELAXED);
	threads_start();

	/* 4. unregister stops the calls */
	CHECK_RC(ringtrace_probe_register_pr_hot(probe_frozen, NULL), 0);
	while (__atomic_load_n(&frozen_calls, __ATOMIC_RELAXED) < 1000)
		tu_sleep_us(100);
	CHECK_RC(ringtrace_probe_unregister_pr_hot(probe_frozen, NULL), 0);
	uint64_t c1 = __atomic_load_n(&frozen_calls, __ATOMIC_RELAXED);
	tu_sleep_us(20000);
	uint64_t c2 = __atomic_load_n(&frozen_calls, __ATOMIC_RELAXED);
	CHECKF(c1 == c2, "probe ran %" PRIu64 " times after unregister returned", c2 - c1);
	threads_stop();
}

/* 5. Probes registered, unregistered and freed in a loop while threads
 * call the tracepoint: no probe runs on freed data. */
static void test_register_loop(void)
{
	__atomic_store_n(&total_calls, 0, __ATOMIC_RELAXED);
	threads_start();

	/* 5. register / unregister / free in a loop */
	const uint64_t dur_ns = CHECK_SCALE(1000, 700) * 1000000ull;
	uint64_t t0 = tu_mono_ns();
	unsigned iters = 0;
	uint64_t seen_calls = 0;
	struct probe_data *held = NULL; /* sometimes a second probe stays across iterations */
	while (tu_mono_ns() - t0 < dur_ns) {
		struct probe_data *d = malloc(sizeof(*d));
		CHECK(d != NULL);
		memset(d, 0, sizeof(*d));
		d->magic = PD_MAGIC;
		CHECK_RC(ringtrace_probe_register_pr_hot(probe_hot, d), 0);
		if (iters % 3 == 0)
			sched_yield();
		else if (iters % 3 == 1)
			tu_sleep_us(50);
		if (iters % 4 == 0) {
			if (held) {
				CHECK_RC(ringtrace_probe_unregister_pr_hot(probe_hot, held), 0);
				check_data(held);
				seen_calls += held->calls[0] + held->calls[1];
				memset(held, 0xEE, sizeof(*held));
				free(held);
			}
			held = d;
		} else {
			CHECK_RC(ringtrace_probe_unregister_pr_hot(probe_hot, d), 0);
			check_data(d);
			seen_calls += d->calls[0] + d->calls[1];
			/* poison, then free: a late probe would trip over either */
			memset(d, 0xEE, sizeof(*d));
			free(d);
		}
		iters++;
	}
	if (held) {
		CHECK_RC(ringtrace_probe_unregister_pr_hot(probe_hot, held), 0);
		check_data(held);
		seen_calls += held->calls[0] + held->calls[1];
		free(held);
	}
	CHECK_EQ_U64(probes_of("pr_hot"), 0);
	CHECK(ringtrace_event_pr_hot.state == 0);
	uint64_t tot = __atomic_load_n(&total_calls, __ATOMIC_RELAXED);
	CHECKF(seen_calls == tot, "calls counted in the data %" PRIu64 ", by the probes %" PRIu64,
	       seen_calls, tot);

	threads_stop();
	fprintf(stderr,
		"    %u register/unregister rounds, %" PRIu64 " probe calls, %" PRIu64 "+%" PRIu64
		" tracepoint calls\n",
		iters, tot, thread_calls[0], thread_calls[1]);
	CHECK(iters >= 20);
	CHECK(tot > 0);
	CHECK_EQ_U64(__atomic_load_n(&total_calls, __ATOMIC_RELAXED), tot);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(event_probes_typed_probe_gets_arguments_of_unrecorded_event, case_probe_only),
	CHECK_CASE(event_probes_each_probe_runs_once_per_recorded_call, case_record),
	CHECK_CASE(event_probes_duplicate_null_and_missing_probes_refused, case_errors),
	CHECK_CASE(event_probes_unregistering_one_leaves_the_others_running, case_unregister_one),
	CHECK_CASE(event_probes_probe_calling_a_tracepoint_records_it, case_nested),
	CHECK_CASE(event_probes_last_probe_removed_and_recording_off_clear_call_site, case_all_gone),
	CHECK_CASE(event_probes_unregistered_probe_never_runs_again, test_unregister_stops),
	CHECK_CASE(event_probes_register_unregister_free_loop_under_concurrent_calls, test_register_loop),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
