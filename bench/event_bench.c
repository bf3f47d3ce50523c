/*
 * bench/event_bench.c - `ringtrace-bench event`: the trace event benchmark.
 *
 * What it reproduces
 * ------------------
 * The Linux kernel's trace event benchmark (kernel/trace/trace_benchmark.c,
 * CONFIG_TRACEPOINT_BENCHMARK), in user space:
 *
 *     start = clock();
 *     trace_benchmark_event(str);
 *     stop = clock();
 *
 * in a loop, where `str` is the text the previous iteration built from the
 * statistics of the durations (stop - start, ns) measured so far:
 *
 *     last=%llu first=%llu max=%llu min=%llu avg=%llu std=%llu std^2=%llu
 *
 * so every recorded event carries the cost of the one before it. As in the
 * kernel: the clock is the tracer's own (ringtrace_rb_now(), the buffer's
 * ticks, converted to ns with ringtrace_rb_ticks_to_ns()); the first call
 * is cold (here it also attaches the thread to the buffer: writer slot,
 * first page, RCU reader node) and is kept apart: "first" is its duration,
 * the string passed to the second call is "first=N [COLD CACHED]", and
 * last/max/min/avg/std/std^2 are over the later calls only. Arithmetic is
 * integer, as in the kernel: std^2 = (n * sum(x^2) - sum(x)^2) / n / (n-1)
 * (128-bit intermediates, so no overflow however long it runs), avg =
 * sum(x) / n, std = the integer square root of std^2 (Newton's method
 * seeded with avg, as the kernel does, but run to convergence).
 *
 * The event (bench_events.h: one string field) is recorded into a ring
 * buffer (discard mode, default size) that a consumer thread on another
 * CPU empties page by page (get_page / put_page, every event decoded and
 * its id checked), so the run goes on for --seconds without filling.
 * The producer (the calling thread) is pinned to the first usable CPU,
 * the consumer to the last (on a 1-CPU machine neither is pinned).
 *
 * Output: every second the current string (one line), then at the end
 *     final: last=... first=... max=... min=... avg=... std=... std^2=...
 *     events: N     (stats.hit: events committed)
 *     lost: N       (stats.missed + stats.overrun)
 * Checks: hit + missed == calls, the consumer decoded stats.read events,
 * all with the event's id, and hit == read + overrun + entries; a failure
 * prints "WARNING: ..." and exits 1.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringtrace/event.h"
#include "ringtrace/ring.h"

#include "bench.h"
#include "bench_common.h"
#include "bench_events.h"

#define EV_STRLEN 256 /* kernel: BENCHMARK_EVENT_STRLEN 128 */
#define EV_MAX_SECONDS 86400.0
#define EV_READER_IDLE_US 100 /* consumer's sleep when no page is ready */

struct ev_reader {
	ringtrace_rb *rb;
	pthread_t thread;
	int cpu;
	int pin_err;
	uint32_t event_id;
	int done;      /* atomic: the producer has finished */
	uint64_t read; /* events decoded */
	uint64_t pages;
	uint64_t bad; /* wrong id or undecodable page */
	int err;
	char msg[256]; /* first problem */
};

static void reader_note(struct ev_reader *r, const char *what, int rc)
{
	if (r->err || r->bad)
		return;
	snprintf(r->msg, sizeof(r->msg), "%s: %s: %s", what, ringtrace_strerror(rc),
		 ringtrace_last_error());
}

static uint64_t drain_pages(struct ev_reader *r)
{
	const struct ringtrace_page_header *pg;
	uint64_t got = 0;
	while ((pg = ringtrace_rb_get_page(r->rb)) != NULL) {
		struct ringtrace_page_cursor cur;
		struct ringtrace_event ev;
		int rc;
		ringtrace_page_cursor_init(&cur, pg);
		while ((rc = ringtrace_page_next(&cur, &ev)) > 0) {
			r->read++;
			if (ev.id != r->event_id) {
				if (!r->bad && !r->err)
					snprintf(r->msg, sizeof(r->msg),
						 "event with id %u, want %u", ev.id, r->event_id);
				r->bad++;
			}
		}
		if (rc < 0) {
			reader_note(r, "ringtrace_page_next", rc);
			r->bad++;
		}
		r->pages++;
		ringtrace_rb_put_page(r->rb, pg);
		got++;
	}
	return got;
}

static void *reader_main(void *arg)
{
	struct ev_reader *r = arg;
	r->pin_err = bench_pin_self(r->cpu);
	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
		if (drain_pages(r) == 0)
			bench_sleep_us(EV_READER_IDLE_US);
	}
	/* The producer released its writer: flush and drain until nothing is left. */
	for (int round = 0; round < 16; round++) {
		int f = ringtrace_rb_flush(r->rb, 0);
		if (f < 0) {
			if (!r->err)
				reader_note(r, "ringtrace_rb_flush", f);
			r->err = f;
			f = 0;
		}
		if (drain_pages(r) == 0 && f == 0)
			break;
	}
	return NULL;
}

/* ---- the statistics (integer, as the kernel's) ---------------------------- */

struct ev_stats {
	uint64_t calls;
	uint64_t first, last, max, min;
	uint64_t n; /* durations after the first */
	unsigned __int128 total, totalsq;
	uint64_t avg, std, stddev; /* stddev: the variance, "std^2" */
};

/*
 * floor(sqrt(v)) by Newton's method, x = (x + v/x) / 2, seeded with `seed`
 * (the kernel seeds with the average). One step from any x > 0 lands at or
 * above the root; from there the iteration decreases to it.
 */
static uint64_t isqrt_u64(uint64_t v, uint64_t seed)
{
	if (v < 2)
		return v;
	unsigned __int128 x = seed ? seed : v;
	x = (x + v / x) / 2;
	for (;;) {
		unsigned __int128 y = (x + v / x) / 2;
		if (y >= x)
			return (uint64_t)x;
		x = y;
	}
}

static void stats_add(struct ev_stats *s, uint64_t delta, char *str, size_t size)
{
	s->calls++;
	if (s->calls == 1) {
		s->first = delta;
		snprintf(str, size, "first=%" PRIu64 " [COLD CACHED]", delta);
		return;
	}
	s->last = delta;
	if (delta > s->max)
		s->max = delta;
	if (!s->min || delta < s->min)
		s->min = delta;
	s->n++;
	s->total += delta;
	s->totalsq += (unsigned __int128)delta * delta;
	s->avg = (uint64_t)(s->total / s->n);
	if (s->n > 1) {
		unsigned __int128 var = ((unsigned __int128)s->n * s->totalsq -
					 s->total * s->total) /
					s->n / (s->n - 1);
		s->stddev = var > UINT64_MAX ? UINT64_MAX : (uint64_t)var;
	} else {
		s->stddev = 0;
	}
	s->std = isqrt_u64(s->stddev, s->avg);
	snprintf(str, size,
		 "last=%" PRIu64 " first=%" PRIu64 " max=%" PRIu64 " min=%" PRIu64 " avg=%" PRIu64
		 " std=%" PRIu64 " std^2=%" PRIu64,
		 s->last, s->first, s->max, s->min, s->avg, s->std, s->stddev);
}

/* ---- options and main ------------------------------------------------------ */

static void event_usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace-bench event [options]\n"
		"\n"
		"The trace event benchmark (in the shape of the kernel's trace_benchmark.c): a loop\n"
		"that times each call of a tracepoint with a string field and passes the\n"
		"statistics of the durations so far (last, first, max, min, avg, std, std^2,\n"
		"in ns) as the string of the next call; the events are recorded into a ring\n"
		"buffer that a consumer thread reads by pages. Prints the string every second,\n"
		"then 'final: ...', 'events: N' and 'lost: N'.\n"
		"\n"
		"options:\n"
		"  --seconds N          how long to run (default 10; fractions ok)\n"
		"  -h, --help           this help\n"
		"\n"
		"exit status: 0 ok, 1 a check failed (accounting, reader), 2 usage error\n");
}

#define usage_error(fmt, arg) bench_usage_error("event", fmt, arg)

enum { OPT_SECONDS = 256 };

/* Reads the options into *seconds; returns 1 when the program ends here, with *status. */
static int ev_parse_args(int argc, char **argv, double *seconds, int *status)
{
	static const struct option longopts[] = {
		{"seconds", required_argument, NULL, OPT_SECONDS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *arg = optarg;
		switch (c) {
		case 'h':
			event_usage(stdout);
			*status = BENCH_EXIT_OK;
			return 1;
		case OPT_SECONDS:
			if (bench_parse_seconds(arg, EV_MAX_SECONDS, seconds)) {
				*status = usage_error(
					"--seconds: '%s' is not a number of seconds > 0", arg);
				return 1;
			}
			break;
		default: /* ':' missing value, '?' unknown option */
			*status = bench_getopt_error("event", c, argv);
			return 1;
		}
	}
	if (optind < argc) {
		*status = usage_error("unexpected argument '%s'", argv[optind]);
		return 1;
	}
	return 0;
}

/* A discarding buffer with benchmark_event enabled into it; -1 on failure (said). */
static int ev_setup(ringtrace_rb **rbp, struct ringtrace_event_info *info)
{
	/* ---- set up: buffer, event, consumer ---- */
	struct ringtrace_rb_config cfg;
	ringtrace_rb *rb;
	ringtrace_rb_config_init(&cfg);
	cfg.mode = RINGTRACE_RB_DISCARD;
	int rc = ringtrace_rb_create(&cfg, &rb);
	if (rc < 0) {
		fprintf(stderr, "ringtrace-bench event: cannot create the ring buffer: %s: %s\n",
			ringtrace_strerror(rc), ringtrace_last_error());
		return -1;
	}
	rc = ringtrace_event_lookup("benchmark_event", info);
	if (rc == 0)
		rc = ringtrace_events_set_buffer(rb);
	if (rc == 0) {
		rc = ringtrace_event_enable("benchmark_event");
		if (rc > 0)
			rc = 0;
	}
	if (rc < 0) {
		fprintf(stderr, "ringtrace-bench event: cannot enable benchmark_event: %s: %s\n",
			ringtrace_strerror(rc), ringtrace_last_error());
		ringtrace_events_set_buffer(NULL);
		ringtrace_rb_destroy(rb);
		return -1;
	}
	*rbp = rb;
	return 0;
}

/* Prints the totals and checks the buffer's accounting; returns the exit status. */
static int ev_report(ringtrace_rb *rb, const struct ev_reader *r, const struct ev_stats *st,
		     const char *str)
{
	int rc;

	struct ringtrace_rb_stats rs;
	memset(&rs, 0, sizeof(rs));
	int status = BENCH_EXIT_OK;
	rc = ringtrace_rb_get_stats(rb, &rs);
	if (rc < 0) {
		fprintf(stderr, "ringtrace-bench event: ringtrace_rb_get_stats: %s: %s\n",
			ringtrace_strerror(rc), ringtrace_last_error());
		status = BENCH_EXIT_FAIL;
	}

	printf("final: %s\n", str);
	printf("events: %" PRIu64 "\n", rs.hit);
	printf("lost: %" PRIu64 "\n", rs.missed + rs.overrun);

	if (r->pin_err)
		fprintf(stderr, "ringtrace-bench event: note: consumer not pinned to CPU %d: %s\n",
			r->cpu, strerror(r->pin_err));
	if (rs.hit + rs.missed != st->calls) {
		printf("WARNING: hit + missed = %" PRIu64 " but %" PRIu64 " events were offered\n",
		       rs.hit + rs.missed, st->calls);
		status = BENCH_EXIT_FAIL;
	}
	if (rs.hit != rs.read + rs.overrun + rs.entries) {
		printf("WARNING: hit %" PRIu64 " != read %" PRIu64 " + overrun %" PRIu64
		       " + entries %" PRIu64 "\n",
		       rs.hit, rs.read, rs.overrun, rs.entries);
		status = BENCH_EXIT_FAIL;
	}
	if (r->read != rs.read) {
		printf("WARNING: the consumer decoded %" PRIu64 " events but stats.read is %" PRIu64
		       "\n",
		       r->read, rs.read);
		status = BENCH_EXIT_FAIL;
	}
	if (r->bad || r->err) {
		printf("WARNING: consumer: %" PRIu64 " bad events or pages; first: %s\n", r->bad,
		       r->msg);
		status = BENCH_EXIT_FAIL;
	}
	fflush(stdout);
	return status;
}

int event_bench_main(int argc, char **argv)
{
	double seconds = 10.0;
	int rc, status;

	if (ev_parse_args(argc, argv, &seconds, &status))
		return status;

	ringtrace_rb *rb;
	struct ringtrace_event_info info;
	if (ev_setup(&rb, &info) < 0)
		return BENCH_EXIT_FAIL;

	/* producer on the first usable CPU, consumer on the last */
	static int cpus[CPU_SETSIZE];
	int ncpu = bench_usable_cpus(cpus, CPU_SETSIZE);
	int prod_cpu = ncpu >= 2 ? cpus[0] : -1;
	int reader_cpu = ncpu >= 2 ? cpus[ncpu - 1] : -1;
	struct ev_reader r;
	memset(&r, 0, sizeof(r));
	r.rb = rb;
	r.cpu = reader_cpu;
	r.event_id = info.id;
	rc = pthread_create(&r.thread, NULL, reader_main, &r);
	if (rc != 0) {
		fprintf(stderr, "ringtrace-bench event: pthread_create: %s\n", strerror(rc));
		ringtrace_events_set_buffer(NULL);
		ringtrace_rb_destroy(rb);
		return BENCH_EXIT_FAIL;
	}
	int perr = bench_pin_self(prod_cpu);
	if (perr)
		fprintf(stderr, "ringtrace-bench event: note: producer not pinned to CPU %d: %s\n",
			prod_cpu, strerror(perr));

	/* ---- the loop ---- */
	char str[EV_STRLEN] = "START";
	struct ev_stats st;
	memset(&st, 0, sizeof(st));
	const uint64_t t_start = bench_now_ns();
	const uint64_t deadline = t_start + (uint64_t)llround(seconds * 1e9);
	uint64_t next_print = t_start + 1000000000ull;
	for (;;) {
		uint64_t start = ringtrace_rb_now(rb);
		trace_benchmark_event(str);
		uint64_t stop = ringtrace_rb_now(rb);
		uint64_t stop_ns = ringtrace_rb_ticks_to_ns(rb, stop);
		uint64_t start_ns = ringtrace_rb_ticks_to_ns(rb, start);
		stats_add(&st, stop_ns > start_ns ? stop_ns - start_ns : 0, str, sizeof(str));
		if (stop_ns >= deadline)
			break;
		if (stop_ns >= next_print) {
			printf("%s\n", str);
			fflush(stdout);
			next_print += 1000000000ull;
		}
	}

	/* ---- stop: detach, publish the last page, drain ---- */
	ringtrace_event_disable("benchmark_event");
	ringtrace_events_set_buffer(NULL);
	ringtrace_rb_writer_release(rb);
	__atomic_store_n(&r.done, 1, __ATOMIC_RELEASE);
	pthread_join(r.thread, NULL);

	status = ev_report(rb, &r, &st, str);
	ringtrace_rb_destroy(rb);
	return status;
}
