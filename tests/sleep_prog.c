/*
 * test_sleep_prog: one thread that records sl_tick(n), sleeps 1 ms and
 * repeats, N times: between two ticks the kernel switches the thread out,
 * wakes it up and switches it back in (tests/test_kernel.sh). With
 * LONG_MS, the sleep after tick N/2 lasts LONG_MS ms instead: the longest
 * off-CPU stretch of the thread, between two ticks (tests/test_sched.sh).
 * With "schedstat", it also records sl_stat(run_ns, delay_ns), the
 * kernel's own accounting of the thread (/proc/thread-self/schedstat: time
 * on a CPU, time runnable waiting for one), after its second tick and
 * after its last sleep (tests/test_query_kernel.sh): both just after a
 * wake-up, as the kernel brings the running time up to date only at a
 * switch or a scheduler tick (the time since is not in the count), and
 * both after a first read (after the first tick), so that they cost the
 * same.
 *
 *   test_sleep_prog N [LONG_MS [schedstat]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(sl_tick, RINGTRACE_PROTO(uint32_t n), RINGTRACE_ARGS(n),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, n, n)), RINGTRACE_PRINT("n=%u"))
RINGTRACE_EVENT(sl_stat, RINGTRACE_PROTO(uint64_t run_ns, uint64_t delay_ns),
		RINGTRACE_ARGS(run_ns, delay_ns),
		RINGTRACE_FIELDS(ringtrace_integer(uint64_t, run_ns, run_ns)
					 ringtrace_integer(uint64_t, delay_ns, delay_ns)),
		RINGTRACE_PRINT("run_ns=%lu delay_ns=%lu"))

/* The kernel's accounting of this thread, as an sl_stat event (record 0:
 * read only, so that the reads recorded cost the same: a first read
 * costs more, a sanitizer's interceptors and stdio setting up). */
static void record_schedstat(int record)
{
	unsigned long long run = 0, delay = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (!f || fscanf(f, "%llu %llu", &run, &delay) != 2) {
		fprintf(stderr, "test_sleep_prog: cannot read /proc/thread-self/schedstat\n");
		exit(1);
	}
	fclose(f);
	if (record)
		trace_sl_stat(run, delay);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4 || (argc == 4 && strcmp(argv[3], "schedstat") != 0)) {
		fprintf(stderr, "usage: test_sleep_prog N [LONG_MS [schedstat]]\n");
		return 2;
	}
	uint32_t n = (uint32_t)strtoul(argv[1], NULL, 10);
	unsigned long long_ms = argc >= 3 ? strtoul(argv[2], NULL, 10) : 1;
	int stat = argc == 4;
	struct timespec ms = {0, 1000 * 1000};
	struct timespec lng = {(time_t)(long_ms / 1000), (long)(long_ms % 1000) * 1000 * 1000};
	for (uint32_t i = 1; i <= n; i++) {
		trace_sl_tick(i);
		if (stat && i <= 2)
			record_schedstat(i == 2);
		nanosleep(i == n / 2 ? &lng : &ms, NULL);
	}
	if (stat)
		record_schedstat(1);
	return 0;
}
