/*
 * test_fleet_prog: the workload of the fleet loader's end-to-end test
 * (tests/test_fleet_cluster.sh), recorded by `ringtrace record`: every
 * kind of row the loader carries, with strings the caller chooses.
 *
 *   test_fleet_prog ROUNDS [NAME [TEXT]]
 *
 * The main thread, named NAME (default "fleet-main"; the process name in
 * the trace, 15 bytes at most), and a second thread ("fleet-worker")
 * each record ROUNDS rounds of
 *   fleet_begin(0, TEXT) fleet_begin(1, TEXT)     slices, nested
 *   fleet_mark(round, -round, 2^64 - 1 - round, TEXT) an instant event
 *   fleet_end(1, round / 4.0, 1) fleet_end(0, round / 8.0, round & 1)
 *   fleet_gauge(round, round / 2.0)               a counter, two tracks
 *   ringtrace_printf("%s %d", TEXT, round)
 * (TEXT default "item"), so that the args hold signed, unsigned, real,
 * bool and string values and the strings hold whatever TEXT holds (quotes,
 * SQL). Exit status 0, 2 on a usage error.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/printf.h>
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT_KIND(RINGTRACE_KIND_BEGIN, fleet_begin,
		     RINGTRACE_PROTO(uint32_t level, const char *what), RINGTRACE_ARGS(level, what),
		     RINGTRACE_FIELDS(ringtrace_integer(uint32_t, level, level)
					      ringtrace_string(what, what)),
		     RINGTRACE_PRINT("level=%u what=%s"))

RINGTRACE_EVENT_KIND(RINGTRACE_KIND_END, fleet_end,
		     RINGTRACE_PROTO(uint32_t level, double ms, bool ok),
		     RINGTRACE_ARGS(level, ms, ok),
		     RINGTRACE_FIELDS(ringtrace_integer(uint32_t, level, level)
					      ringtrace_float(double, ms, ms)
						      ringtrace_bool(ok, ok)),
		     RINGTRACE_PRINT("level=%u ms=%g ok=%d"))

RINGTRACE_EVENT(fleet_mark,
		RINGTRACE_PROTO(int32_t round, int64_t neg, uint64_t big, const char *text),
		RINGTRACE_ARGS(round, neg, big, text),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, round, round)
					 ringtrace_integer(int64_t, neg, neg)
						 ringtrace_integer(uint64_t, big, big)
							 ringtrace_string(text, text)),
		RINGTRACE_PRINT("round=%d neg=%lld big=%llu text=%s"))

RINGTRACE_EVENT_KIND(RINGTRACE_KIND_COUNTER, fleet_gauge, RINGTRACE_PROTO(int64_t n, double half),
		     RINGTRACE_ARGS(n, half),
		     RINGTRACE_FIELDS(ringtrace_integer(int64_t, n, n)
					      ringtrace_float(double, half, half)),
		     RINGTRACE_PRINT("n=%lld half=%g"))

static int rounds;
static const char *text = "item";

static void run_rounds(void)
{
	for (int r = 0; r < rounds; r++) {
		trace_fleet_begin(0, text);
		trace_fleet_begin(1, text);
		trace_fleet_mark(r, -(int64_t)r, UINT64_MAX - (uint64_t)r, text);
		trace_fleet_end(1, r / 4.0, true);
		trace_fleet_end(0, r / 8.0, r & 1);
		trace_fleet_gauge(r, r / 2.0);
		ringtrace_printf("%s %d", text, r);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "fleet-worker");
	run_rounds();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *name = argc > 2 ? argv[2] : "fleet-main";
	if (argc < 2 || argc > 4 || (rounds = atoi(argv[1])) <= 0 || strlen(name) > 15) {
		fprintf(stderr, "usage: test_fleet_prog ROUNDS [NAME (15 bytes at most) [TEXT]]\n");
		return 2;
	}
	if (argc > 3)
		text = argv[3];
	pthread_setname_np(pthread_self(), name);
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 2;
	run_rounds();
	pthread_join(t, NULL);
	return 0;
}
