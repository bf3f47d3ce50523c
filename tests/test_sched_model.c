/*
 * The scheduling view's thread-state model (src/analysis/sched_model.c) fed
 * synthetic event sequences: the states and their times, wake-up
 * latencies, off-CPU stretches with the user events around them; and
 * what untrusted data does to it (events out of order, unknown tids,
 * missing and contradicting events, lost events, more threads than the
 * cap, undecodable records): no negative time, no crash.
 */
#include <stdint.h>
#include <string.h>

#include "analysis/analysis_api.h"
#include "check.h"

#define S_SLEEP 1       /* prev_state "S" */
#define S_DISK 2        /* "D" */
#define S_PREEMPT 0x100 /* "R+" */
#define S_ZOMBIE 0x20   /* "Z": the thread's last switch */
#define S_DEAD 0x10     /* "X" */

/* The common sequence: switched out asleep, woken, switched in. */
static void test_sleep(void)
{
	struct sm_model *m = sm_new(0, 5);
	CHECK(m);
	sm_switch(m, 1000, 0, "swapper/0", 0, 100, "app");
	sm_user_event(m, 2000, 100, "tick");
	sm_switch(m, 5000, 100, "app", S_SLEEP, 0, "swapper/0");
	sm_wakeup(m, 8000, 100, "app");
	sm_switch(m, 8250, 0, "swapper/0", 0, 100, "app");
	sm_user_event(m, 8300, 100, "tock");
	sm_finish(m, 10000);
	struct sm_thread *t = sm_find(m, 100);
	CHECK(t);
	CHECK(strcmp(t->comm, "app") == 0);
	CHECK_EQ_U64(t->ns[SM_RUNNING], 4000 + 1750);
	CHECK_EQ_U64(t->ns[SM_BLOCKED], 3000);
	CHECK_EQ_U64(t->ns[SM_RUNNABLE], 250);
	CHECK_EQ_U64(t->ns[SM_UNKNOWN], 0);
	CHECK_EQ_U64(t->lat_count, 1);
	CHECK_EQ_U64(t->lat_max, 250);
	CHECK_EQ_U64(sm_latency_quantile(t, 0.5), 250);
	CHECK_EQ_U64(sm_latency_quantile(t, 0.99), 250);
	CHECK_EQ_U64(t->ntop, 1);
	CHECK_EQ_U64(t->top[0].start, 5000);
	CHECK_EQ_U64(t->top[0].end, 8250);
	CHECK_EQ_U64(t->top[0].wake, 8000);
	CHECK(!t->top[0].preempted && !t->top[0].open);
	CHECK(t->top[0].before.name && strcmp(t->top[0].before.name, "tick") == 0);
	CHECK_EQ_U64(t->top[0].before.ns, 2000);
	CHECK(t->top[0].after.name && strcmp(t->top[0].after.name, "tock") == 0);
	CHECK_EQ_U64(t->top[0].after.ns, 8300);
	CHECK(!sm_find(m, 0)); /* the idle task is no thread */
	CHECK_EQ_U64(sm_stats(m)->switches, 3);
	CHECK_EQ_U64(sm_stats(m)->wakeups, 1);
	sm_free(m);
}

/* Switched out runnable ("R", or "R+" on newer kernels: bit 0x100): the
 * wait to be switched back in is runnable time, not a wake-up latency. */
static void test_preempted(void)
{
	struct sm_model *m = sm_new(0, 5);
	CHECK(m);
	sm_switch(m, 100, 0, NULL, 0, 7, "a");
	sm_switch(m, 200, 7, "a", S_PREEMPT, 8, "b");
	sm_switch(m, 500, 8, "b", 0, 7, "a");
	sm_switch(m, 600, 7, "a", S_DISK, 8, "b");
	sm_wakeup(m, 650, 7, "a");
	sm_wakeup(m, 660, 7, "a"); /* a second wake-up: the first one counts */
	sm_switch(m, 700, 8, "b", S_SLEEP, 7, "a");
	const struct sm_thread *a = sm_find(m, 7), *b = sm_find(m, 8);
	CHECK(a && b);
	CHECK_EQ_U64(a->ns[SM_RUNNING], 100 + 100);
	CHECK_EQ_U64(a->ns[SM_RUNNABLE], 300 + 50);
	CHECK_EQ_U64(a->ns[SM_BLOCKED], 50);
	CHECK_EQ_U64(a->lat_count, 1);
	CHECK_EQ_U64(a->lat_max, 50);
	CHECK_EQ_U64(a->ntop, 2);
	CHECK(a->top[0].preempted && a->top[0].start == 200 && a->top[0].end == 500);
	CHECK(!a->top[1].preempted && a->top[1].wake == 650);
	/* b: unknown before its first switch in, then running twice */
	CHECK_EQ_U64(b->ns[SM_RUNNING], 300 + 100);
	CHECK_EQ_U64(b->ns[SM_RUNNABLE], 100);
	CHECK_EQ_U64(b->lat_count, 0);
	CHECK_EQ_U64(sm_latency_quantile(b, 0.5), 0);
	sm_free(m);
}

/* No wake-up recorded: the off-CPU time counts as blocked, no sample. */
static void test_missing_wakeup(void)
{
	struct sm_model *m = sm_new(0, 5);
	CHECK(m);
	sm_switch(m, 0 + 10, 0, NULL, 0, 5, "x");
	sm_switch(m, 20, 5, "x", S_SLEEP, 0, NULL);
	sm_switch(m, 90, 0, NULL, 0, 5, "x");
	const struct sm_thread *t = sm_find(m, 5);
	CHECK(t);
	CHECK_EQ_U64(t->ns[SM_BLOCKED], 70);
	CHECK_EQ_U64(t->no_wakeup, 1);
	CHECK_EQ_U64(t->lat_count, 0);
	CHECK_EQ_U64(t->ntop, 1);
	CHECK_EQ_U64(t->top[0].wake, 0);
	sm_free(m);
}

/* Events out of time order count as happening when the thread's state
 * began: no negative time, no latency from the future. */
static void test_out_of_order(void)
{
	struct sm_model *m = sm_new(0, 5);
	CHECK(m);
	sm_switch(m, 1000, 0, NULL, 0, 9, "t");
	sm_switch(m, 400, 9, "t", S_SLEEP, 0, NULL); /* before its switch in */
	sm_wakeup(m, 300, 9, "t");
	sm_switch(m, 200, 0, NULL, 0, 9, "t");
	sm_finish(m, 100); /* an end before everything */
	const struct sm_thread *t = sm_find(m, 9);
	CHECK(t);
	for (int s = 0; s < SM_NSTATES; s++)
		CHECKF(t->ns[s] == 0, "state %d: %" PRIu64 " ns", s, t->ns[s]);
	CHECK_EQ_U64(t->lat_count, 1);
	CHECK_EQ_U64(t->lat_max, 0);
	CHECK_EQ_U64(t->ntop, 1);
	CHECK(t->top[0].end >= t->top[0].start);
	CHECK_EQ_U64(sm_stats(m)->out_of_order, 3);
	CHECK_EQ_U64(sm_stats(m)->first_ns, 200);
	CHECK_EQ_U64(sm_stats(m)->last_ns, 1000);
	sm_free(m);
}

/* Any tid; a switch out of a thread never seen switched in; a switch in
 * of one already running; a wake-up of a running thread. */
static void test_unknown(void)
{
	struct sm_model *m = sm_new(0, 5);
	CHECK(m);
	const int64_t odd[] = {-1, INT64_MIN, INT64_MAX, 1, 4194304, (int64_t)0x80000000u};
	for (unsigned i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		sm_switch(m, 10 + i, odd[i], "odd", S_SLEEP, odd[(i + 1) % 6], NULL);
		sm_wakeup(m, 20 + i, odd[i], NULL);
	}
	for (unsigned i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		CHECKF(sm_find(m, odd[i]), "tid %" PRId64 " not kept", odd[i]);
	/* 50: first seen switched out: running before it is unknown, not counted */
	sm_switch(m, 1000, 50, "new", S_SLEEP, 51, "other");
	struct sm_thread *t = sm_find(m, 50);
	CHECK(t && t->state == SM_BLOCKED);
	CHECK_EQ_U64(t->ns[SM_RUNNING] + t->ns[SM_UNKNOWN], 0);
	/* 51 switched in again without its switch out: the time is unknown */
	sm_switch(m, 1100, 52, NULL, S_SLEEP, 51, NULL);
	t = sm_find(m, 51);
	CHECK(t);
	CHECK_EQ_U64(t->inconsistent, 1);
	CHECK_EQ_U64(t->ns[SM_UNKNOWN], 100);
	CHECK_EQ_U64(t->ns[SM_RUNNING], 0);
	/* a wake-up of a running thread changes nothing */
	sm_wakeup(m, 1150, 51, NULL);
	CHECK(sm_find(m, 51)->state == SM_RUNNING);
	/* 50 switched out again while blocked: its switch in was missed */
	sm_switch(m, 1200, 50, NULL, S_SLEEP, 0, NULL);
	t = sm_find(m, 50);
	CHECK_EQ_U64(t->inconsistent, 1);
	CHECK_EQ_U64(t->ns[SM_UNKNOWN], 200);
	CHECK_EQ_U64(t->ns[SM_BLOCKED], 0);
	sm_free(m);
}

/* A thread's last switch (Z or X) ends its time; a tid seen again is a
 * new thread, counted from then. */
static void test_exit(void)
{
	struct sm_model *m = sm_new(0, 5);
	CHECK(m);
	sm_switch(m, 100, 0, NULL, 0, 3, "t");
	sm_switch(m, 200, 3, "t", S_ZOMBIE, 0, NULL);
	sm_switch(m, 300, 0, NULL, 0, 4, "u");
	sm_switch(m, 400, 4, "u", S_DEAD | S_PREEMPT, 0, NULL);
	sm_finish(m, 1000);
	const struct sm_thread *t = sm_find(m, 3);
	CHECK(t && t->state == SM_EXITED);
	CHECK_EQ_U64(t->ns[SM_RUNNING], 100);
	CHECK_EQ_U64(t->ns[SM_RUNNABLE] + t->ns[SM_BLOCKED] + t->ns[SM_UNKNOWN], 0);
	CHECK_EQ_U64(t->ntop, 0);
	CHECK(sm_find(m, 4)->state == SM_EXITED);
	sm_free(m);

	m = sm_new(0, 5);
	CHECK(m);
	sm_switch(m, 100, 0, NULL, 0, 3, "t");
	sm_switch(m, 200, 3, "t", S_ZOMBIE, 0, NULL);
	sm_wakeup(m, 5000, 3, "t2"); /* sched_wakeup_new of a tid used again */
	sm_switch(m, 5100, 0, NULL, 0, 3, "t2");
	sm_finish(m, 5200);
	t = sm_find(m, 3);
	CHECK_EQ_U64(t->ns[SM_RUNNING], 100 + 100);
	CHECK_EQ_U64(t->ns[SM_RUNNABLE], 100);
	CHECK_EQ_U64(t->ns[SM_BLOCKED] + t->ns[SM_UNKNOWN], 0);
	CHECK(strcmp(t->comm, "t2") == 0);
	sm_free(m);
}

/* Lost kernel events: every thread's state unknown until told again; the
 * wake-up before the loss gives no latency sample. */
static void test_lost(void)
{
	struct sm_model *m = sm_new(0, 5);
	CHECK(m);
	sm_switch(m, 100, 0, NULL, 0, 1, "a");
	sm_switch(m, 200, 1, "a", S_SLEEP, 2, "b");
	sm_wakeup(m, 300, 1, "a");
	sm_lost(m, 400, 17);
	sm_switch(m, 600, 2, "b", S_SLEEP, 1, "a");
	sm_finish(m, 700);
	const struct sm_thread *a = sm_find(m, 1), *b = sm_find(m, 2);
	CHECK_EQ_U64(a->ns[SM_RUNNING], 100 + 100);
	CHECK_EQ_U64(a->ns[SM_BLOCKED], 100);
	CHECK_EQ_U64(a->ns[SM_RUNNABLE], 100);
	CHECK_EQ_U64(a->ns[SM_UNKNOWN], 200);
	CHECK_EQ_U64(a->lat_count, 0);
	CHECK_EQ_U64(a->ntop, 0); /* its stretch's start is before the loss */
	CHECK_EQ_U64(b->ns[SM_RUNNING], 200);
	CHECK_EQ_U64(b->ns[SM_UNKNOWN], 200);
	CHECK_EQ_U64(sm_stats(m)->lost_marks, 1);
	CHECK_EQ_U64(sm_stats(m)->lost_events, 17);
	sm_free(m);
}

/* The thread cap bounds memory; the threads beyond it are counted. */
static void test_cap(void)
{
	struct sm_model *m = sm_new(10, 3);
	CHECK(m);
	for (int64_t i = 1; i <= 1000; i++) {
		sm_switch(m, (uint64_t)i * 10, i, "t", S_SLEEP, i + 1, "t");
		sm_user_event(m, (uint64_t)i * 10 + 1, i + 5000, "u");
	}
	CHECK_EQ_U64(sm_count(m), 10);
	CHECK(sm_stats(m)->beyond_cap >= 1990 - 10);
	sm_free(m);
}

/* The longest stretches first, at most top of them, each with the user
 * events just before and after it. */
static void test_top(void)
{
	struct sm_model *m = sm_new(0, 2);
	CHECK(m);
	const uint64_t len[] = {30, 50, 10, 50, 40};
	uint64_t now = 1000;
	sm_switch(m, now, 0, NULL, 0, 1, "a");
	for (int i = 0; i < 5; i++) {
		static const char *const ev[] = {"e0", "e1", "e2", "e3", "e4", "e5"};
		sm_user_event(m, now + 1, 1, ev[i]);
		sm_switch(m, now + 2, 1, "a", S_SLEEP, 0, NULL);
		sm_wakeup(m, now + 2 + len[i] - 1, 1, NULL);
		sm_switch(m, now + 2 + len[i], 0, NULL, 0, 1, "a");
		sm_user_event(m, now + 3 + len[i], 1, ev[i + 1]);
		now += 1000;
	}
	const struct sm_thread *t = sm_find(m, 1);
	CHECK_EQ_U64(t->ntop, 2);
	/* the two of 50, the earlier first */
	CHECK_EQ_U64(t->top[0].end - t->top[0].start, 50);
	CHECK_EQ_U64(t->top[1].end - t->top[1].start, 50);
	CHECK(strcmp(t->top[0].before.name, "e1") == 0 && strcmp(t->top[0].after.name, "e2") == 0);
	CHECK(strcmp(t->top[1].before.name, "e3") == 0 && strcmp(t->top[1].after.name, "e4") == 0);
	CHECK_EQ_U64(t->npending, 0);
	CHECK_EQ_U64(t->lat_count, 5);
	CHECK_EQ_U64(t->lat_max, 1);
	sm_free(m);

	/* top 0: no stretches kept */
	m = sm_new(0, 0);
	sm_switch(m, 1, 0, NULL, 0, 1, "a");
	sm_switch(m, 2, 1, "a", S_SLEEP, 0, NULL);
	sm_switch(m, 3, 0, NULL, 0, 1, "a");
	CHECK_EQ_U64(sm_find(m, 1)->ntop, 0);
	sm_free(m);
}

/* p50 and p99 within the histogram's 1/32, the maximum exact. */
static void test_quantiles(void)
{
	struct sm_model *m = sm_new(0, 0);
	CHECK(m);
	uint64_t now = 0;
	sm_switch(m, now, 0, NULL, 0, 1, "a");
	for (uint64_t i = 1; i <= 100; i++) {
		sm_switch(m, now + 10, 1, "a", S_SLEEP, 0, NULL);
		sm_wakeup(m, now + 20, 1, NULL);
		sm_switch(m, now + 20 + i * 1000, 0, NULL, 0, 1, "a");
		now += 1000000;
	}
	const struct sm_thread *t = sm_find(m, 1);
	CHECK_EQ_U64(t->lat_count, 100);
	CHECK_EQ_U64(t->lat_min, 1000);
	CHECK_EQ_U64(t->lat_max, 100000);
	uint64_t p50 = sm_latency_quantile(t, 0.5), p99 = sm_latency_quantile(t, 0.99);
	CHECKF(p50 >= 50000 - 50000 / 32 && p50 <= 50000 + 50000 / 32, "p50 %" PRIu64, p50);
	CHECKF(p99 >= 99000 - 99000 / 32 && p99 <= 99000 + 99000 / 32, "p99 %" PRIu64, p99);
	CHECK_EQ_U64(sm_latency_quantile(t, 1.0), 100000);
	CHECK(sm_latency_quantile(t, 0.001) >= 1000);
	sm_free(m);
}

/* ---- records of a kernel trace, read by their fields' names ------------ */

static const struct ringtrace_field_desc sw_fields[] = {
	{"_truncated", RINGTRACE_FT_INT, 1, 0, 1, 0, NULL},
	{"prev_comm", RINGTRACE_FT_STRING, 1, 0, 1, 17, NULL},
	{"prev_pid", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
	{"prev_state", RINGTRACE_FT_INT, 8, 1, 8, 0, NULL},
	{"next_comm", RINGTRACE_FT_STRING, 1, 0, 1, 17, NULL},
	{"next_pid", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
};
static const struct ringtrace_field_desc wk_fields[] = {
	{"pid", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
	{"comm", RINGTRACE_FT_STRING, 1, 0, 1, 17, NULL},
};
static const struct ringtrace_field_desc other_fields[] = {
	{"pid", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
};
/* a sched_switch without prev_state: not one the model can read */
static const struct ringtrace_field_desc bad_fields[] = {
	{"prev_pid", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
	{"next_pid", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
};
static const struct ringtrace_trace_event_def sw_def = {3,         0, "sched_switch", "",
							sw_fields, 6, NULL,           0};
static const struct ringtrace_trace_event_def wk_def = {4,         0, "sched_wakeup", "",
							wk_fields, 2, NULL,           0};
static const struct ringtrace_trace_event_def other_def = {
	5, 0, "sched_process_exit", "", other_fields, 1, NULL, 0};
static const struct ringtrace_trace_event_def bad_def = {6,          0, "sched_switch", "",
							 bad_fields, 2, NULL,           0};

static _Alignas(8) unsigned char payload[128];

static size_t put_str(size_t off, const char *s)
{
	size_t l = strlen(s) + 1;
	memcpy(payload + off, s, l);
	return off + l;
}

static size_t align(size_t off, size_t a)
{
	return (off + a - 1) & ~(a - 1);
}

static struct ringtrace_trace_record rec_switch(uint64_t ns, const char *pc, int32_t prev,
						int64_t state, const char *nc, int32_t next)
{
	memset(payload, 0, sizeof(payload));
	size_t off = put_str(1, pc);
	off = align(off, 4);
	memcpy(payload + off, &prev, 4);
	off = align(off + 4, 8);
	memcpy(payload + off, &state, 8);
	off = put_str(off + 8, nc);
	off = align(off, 4);
	memcpy(payload + off, &next, 4);
	struct ringtrace_trace_record r = {.kind = RINGTRACE_TRACE_EVENT,
					   .id = 3,
					   .ns = ns,
					   .data = payload,
					   .len = (uint32_t)off + 4,
					   .def = &sw_def};
	return r;
}

static struct ringtrace_trace_record rec_wakeup(uint64_t ns, int32_t pid, const char *comm)
{
	memset(payload, 0, sizeof(payload));
	memcpy(payload, &pid, 4);
	size_t off = put_str(4, comm);
	struct ringtrace_trace_record r = {.kind = RINGTRACE_TRACE_EVENT,
					   .id = 4,
					   .ns = ns,
					   .data = payload,
					   .len = (uint32_t)off,
					   .def = &wk_def};
	return r;
}

static void test_records(void)
{
	struct sm_model *m = sm_new(0, 5);
	CHECK(m);
	struct ringtrace_trace_record r = rec_switch(1000, "swapper/0", 0, 0, "app", 100);
	CHECK(sm_kernel_record(m, &r) == 1);
	r = rec_switch(5000, "app", 100, S_SLEEP, "swapper/0", 0);
	CHECK(sm_kernel_record(m, &r) == 1);
	r = rec_wakeup(8000, 100, "app");
	CHECK(sm_kernel_record(m, &r) == 1);
	r = rec_switch(8250, "swapper/0", 0, 0, "app-renamed", 100);
	CHECK(sm_kernel_record(m, &r) == 1);
	/* not a scheduling event */
	memset(payload, 0, 4);
	r = (struct ringtrace_trace_record){.kind = RINGTRACE_TRACE_EVENT,
					    .id = 5,
					    .ns = 8300,
					    .data = payload,
					    .len = 4,
					    .def = &other_def};
	CHECK(sm_kernel_record(m, &r) == 0);
	/* a cut record, and a sched_switch without prev_state */
	r = rec_switch(8400, "app", 100, S_SLEEP, "swapper/0", 0);
	r.len = 10;
	CHECK(sm_kernel_record(m, &r) == -1);
	r = (struct ringtrace_trace_record){.kind = RINGTRACE_TRACE_EVENT,
					    .id = 6,
					    .ns = 8500,
					    .data = payload,
					    .len = 8,
					    .def = &bad_def};
	CHECK(sm_kernel_record(m, &r) == -1);
	r = (struct ringtrace_trace_record){.kind = RINGTRACE_TRACE_EVENT, .id = 9, .ns = 8600};
	CHECK(sm_kernel_record(m, &r) == 0); /* no definition */
	/* a lost-events record */
	r = (struct ringtrace_trace_record){.kind = RINGTRACE_TRACE_LOST, .ns = 9000, .lost = 3};
	CHECK(sm_kernel_record(m, &r) == 1);
	const struct sm_thread *t = sm_find(m, 100);
	CHECK(t);
	CHECK(strcmp(t->comm, "app-renamed") == 0);
	CHECK_EQ_U64(t->lat_count, 1);
	CHECK_EQ_U64(t->lat_max, 250);
	CHECK_EQ_U64(t->ns[SM_BLOCKED], 3000);
	CHECK_EQ_U64(t->ns[SM_RUNNING], 4000 + 750);
	CHECK_EQ_U64(sm_stats(m)->undecodable, 2);
	CHECK_EQ_U64(sm_stats(m)->lost_events, 3);
	CHECK_EQ_U64(sm_stats(m)->switches, 3);
	sm_free(m);
}

/* ---- random sequences: the invariants hold for anything -------------- */

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t interval_sum[SM_NSTATES];
static int interval_bad;
static void on_interval(void *arg, const struct sm_thread *t, enum sm_state st, uint64_t a,
			uint64_t b)
{
	(void)arg;
	(void)t;
	if (a >= b || st == SM_UNKNOWN || (int)st >= SM_NSTATES)
		interval_bad = 1;
	else
		interval_sum[st] += b - a;
}

static void test_random(void)
{
	struct sm_model *m = sm_new(64, 4);
	CHECK(m);
	memset(interval_sum, 0, sizeof(interval_sum));
	interval_bad = 0;
	sm_set_interval_fn(m, on_interval, NULL);
	uint64_t now = 1000000, lo = now, hi = now;
	int n = CHECK_SCALE(200000, 50000);
	for (int i = 0; i < n; i++) {
		uint64_t r = next_rand();
		/* mostly forward, sometimes back */
		if (r % 10 == 0 && now > 500)
			now -= r % 500;
		else
			now += r % 1000;
		if (now < lo)
			lo = now;
		if (now > hi)
			hi = now;
		int64_t a = (int64_t)(next_rand() % 100) - 2, b = (int64_t)(next_rand() % 100) - 2;
		static const int64_t states[] = {0, 1, 2, 0x100, 0x10, 0x20, 0x80, -1, 0x7fffffff};
		switch (r >> 60) {
		case 0:
			sm_lost(m, now, 1);
			break;
		case 1:
		case 2:
		case 3:
		case 4:
			sm_wakeup(m, now, a, "w");
			break;
		case 5:
			sm_user_event(m, now, a, "u");
			break;
		default:
			sm_switch(m, now, a, "p", states[(r >> 8) % 9], b, "n");
		}
	}
	sm_finish(m, now);
	CHECK(!interval_bad);
	uint64_t sum[SM_NSTATES] = {0};
	for (uint32_t i = 0; i < sm_count(m); i++) {
		const struct sm_thread *t = sm_at(m, i);
		uint64_t span = 0;
		for (int s = 0; s < SM_NSTATES; s++) {
			span += t->ns[s];
			sum[s] += t->ns[s];
		}
		CHECKF(span <= hi - lo, "tid %" PRId64 ": %" PRIu64 " ns in %" PRIu64, t->tid, span,
		       hi - lo);
		CHECK(t->lat_count == 0 || (t->lat_min <= t->lat_max && t->lat_max <= hi - lo));
		CHECK(t->ntop <= 4);
		for (uint32_t k = 0; k < t->ntop; k++) {
			CHECK(t->top[k].end >= t->top[k].start);
			CHECK(k == 0 || t->top[k - 1].end - t->top[k - 1].start >=
						t->top[k].end - t->top[k].start);
		}
	}
	for (int s = SM_RUNNING; s < SM_NSTATES; s++)
		CHECK_EQ_U64(interval_sum[s], sum[s]);
	CHECK(sm_count(m) <= 64);
	sm_free(m);
}

static const struct check_case cases[] = {
	CHECK_CASE(sched_model_sleep_wakeup_switch_in_one_latency_sample, test_sleep),
	CHECK_CASE(sched_model_preempted_is_runnable_not_a_wakeup, test_preempted),
	CHECK_CASE(sched_model_missing_wakeup_counts_as_blocked, test_missing_wakeup),
	CHECK_CASE(sched_model_out_of_order_never_negative, test_out_of_order),
	CHECK_CASE(sched_model_unknown_tids_and_contradictions_counted, test_unknown),
	CHECK_CASE(sched_model_exit_ends_a_thread_and_tid_reuse_starts_anew, test_exit),
	CHECK_CASE(sched_model_lost_events_make_states_unknown, test_lost),
	CHECK_CASE(sched_model_thread_cap_bounds_memory, test_cap),
	CHECK_CASE(sched_model_top_stretches_longest_first_with_user_events, test_top),
	CHECK_CASE(sched_model_latency_quantiles_within_a_bucket, test_quantiles),
	CHECK_CASE(sched_model_kernel_records_read_by_field_name, test_records),
	CHECK_CASE(sched_model_random_sequences_keep_the_invariants, test_random),
};

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
