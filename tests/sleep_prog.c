/*
 * test_sleep_prog: one thread that records sl_tick(n), sleeps 1 ms and
 * repeats, N times: between two ticks the kernel switches the thread out,
 * wakes it up and switches it back in (tests/test_kernel.sh).
 *
 *   test_sleep_prog N
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
	if (argc != 2) {
		fprintf(stderr, "usage: test_sleep_prog N\n");
		return 2;
	}
	uint32_t n = (uint32_t)strtoul(argv[1], NULL, 10);
	struct timespec ms = {0, 1000 * 1000};
	for (uint32_t i = 1; i <= n; i++) {
		trace_sl_tick(i);
		nanosleep(&ms, NULL);
	}
	return 0;
}
