/*
 * test_sleep_prog: one thread that records sl_tick(n), sleeps 1 ms and
 * repeats, N times: between two ticks the kernel switches the thread out,
 * wakes it up and switches it back in (tests/test_kernel.sh). With
 * LONG_MS, the sleep after tick N/2 lasts LONG_MS ms instead: the longest
 * off-CPU stretch of the thread, between two ticks (tests/test_sched.sh).
 *
 *   test_sleep_prog N [LONG_MS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(sl_tick, RINGTRACE_PROTO(uint32_t n), RINGTRACE_ARGS(n),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, n, n)), RINGTRACE_PRINT("n=%u"))

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: test_sleep_prog N [LONG_MS]\n");
		return 2;
	}
	uint32_t n = (uint32_t)strtoul(argv[1], NULL, 10);
	unsigned long long_ms = argc == 3 ? strtoul(argv[2], NULL, 10) : 1;
	struct timespec ms = {0, 1000 * 1000};
	struct timespec lng = {(time_t)(long_ms / 1000), (long)(long_ms % 1000) * 1000 * 1000};
	for (uint32_t i = 1; i <= n; i++) {
		trace_sl_tick(i);
		nanosleep(i == n / 2 ? &lng : &ms, NULL);
	}
	return 0;
}
