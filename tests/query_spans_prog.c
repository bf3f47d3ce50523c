/*
 * test_query_spans_prog: begin/end spans of known nesting, for the SQL
 * layer's slices (tests/test_query_import.c), recorded by `ringtrace
 * record`.
 *
 *   test_query_spans_prog [ROUNDS]
 *     The main thread (named "spans-main") first records a span_end with
 *     no span_begin before it, then ROUNDS (default 20) rounds of
 *       span_begin(0) span_begin(1) span_begin(2) span_mark(round)
 *       span_end(2) span_end(1) span_end(0) span_count(round, round / 2.0)
 *       ringtrace_printf("round %d", round)
 *     and last a span_begin(7) never ended. A second thread
 *     ("spans-worker") records the same rounds at the same time, without
 *     the unpaired begin and end, so that the pairs are per thread.
 *
 *   test_query_spans_prog deep
 *     300 span_begin(i) nested, then 300 span_end(299 - i): deeper than
 *     the import's 256 levels.
 *
 *   test_query_spans_prog minval
 *     Three span_flags(bits, low, ratio), in this order:
 *       (2^63, INT64_MIN, 0.5), (2^63 + 1, INT64_MIN + 1, 1.5), (4, -3, 2.5)
 *     the values the SQL layer's NULL (INT64_MIN) could be taken for.
 *
 * A span_end's level is its span_begin's, so that a test can check each
 * slice's end. Exit status 0, 2 on a usage error.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/printf.h>
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT_KIND(RINGTRACE_KIND_BEGIN, span_begin, RINGTRACE_PROTO(uint32_t level),
		     RINGTRACE_ARGS(level),
		     RINGTRACE_FIELDS(ringtrace_integer(uint32_t, level, level)),
		     RINGTRACE_PRINT("level=%u"))

RINGTRACE_EVENT_KIND(RINGTRACE_KIND_END, span_end, RINGTRACE_PROTO(uint32_t level),
		     RINGTRACE_ARGS(level),
		     RINGTRACE_FIELDS(ringtrace_integer(uint32_t, level, level)),
		     RINGTRACE_PRINT("level=%u"))

RINGTRACE_EVENT(span_mark, RINGTRACE_PROTO(int32_t round), RINGTRACE_ARGS(round),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, round, round)),
		RINGTRACE_PRINT("round=%d"))

RINGTRACE_EVENT_KIND(RINGTRACE_KIND_COUNTER, span_count, RINGTRACE_PROTO(int64_t n, double half),
		     RINGTRACE_ARGS(n, half),
		     RINGTRACE_FIELDS(ringtrace_integer(int64_t, n, n)
					      ringtrace_float(double, half, half)),
		     RINGTRACE_PRINT("n=%lld half=%g"))

RINGTRACE_EVENT(span_flags, RINGTRACE_PROTO(uint64_t bits, int64_t low, double ratio),
		RINGTRACE_ARGS(bits, low, ratio),
		RINGTRACE_FIELDS(ringtrace_integer(uint64_t, bits, bits)
					 ringtrace_integer(int64_t, low, low)
						 ringtrace_float(double, ratio, ratio)),
		RINGTRACE_PRINT("bits=%llu low=%lld ratio=%g"))

static int rounds = 20;

static void run_rounds(void)
{
	for (int r = 0; r < rounds; r++) {
		trace_span_begin(0);
		trace_span_begin(1);
		trace_span_begin(2);
		trace_span_mark(r);
		trace_span_end(2);
		trace_span_end(1);
		trace_span_end(0);
		trace_span_count(r, r / 2.0);
		ringtrace_printf("round %d", r);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "spans-worker");
	run_rounds();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_setname_np(pthread_self(), "spans-main");
	if (argc > 1 && strcmp(argv[1], "deep") == 0) {
		for (uint32_t i = 0; i < 300; i++)
			trace_span_begin(i);
		for (uint32_t i = 0; i < 300; i++)
			trace_span_end(299 - i);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "minval") == 0) {
		trace_span_flags(UINT64_C(1) << 63, INT64_MIN, 0.5);
		trace_span_flags((UINT64_C(1) << 63) + 1, INT64_MIN + 1, 1.5);
		trace_span_flags(4, -3, 2.5);
		return 0;
	}
	if (argc > 1 && (rounds = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: test_query_spans_prog [ROUNDS] | deep | minval\n");
		return 2;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 2;
	trace_span_end(5);
	run_rounds();
	trace_span_begin(7);
	pthread_join(t, NULL);
	return 0;
}
