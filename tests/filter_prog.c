/*
 * test_filter_prog: a program with a known sequence of events, for the
 * filter and trigger tests of `ringtrace record` (tests/test_cli_filter.sh).
 *
 *   test_filter_prog N [--wait-for PATH]
 *
 * For i = 0 .. N-1, in this order: ft_value(value = i) (int32) then
 * ft_other(value = i (uint64), tag = "a;b:c" if i % 3 == 0, else
 * "plain"), from the main thread. Prints
 * "test_filter_prog: N calls of each event" on stdout, so that the test
 * can check counts against what the program says it did.
 *
 * --wait-for PATH: after the calls, wait (up to 30 s) until PATH exists
 * before exiting. A snapshot trigger's trace is written by the recorder's
 * thread while the program goes on; waiting for it keeps the test from
 * depending on how fast that thread is (sanitizer builds are slow).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(ft_value, RINGTRACE_PROTO(int32_t value), RINGTRACE_ARGS(value),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, value, value)),
		RINGTRACE_PRINT("value=%d"))

/* tag holds ';' and ':' for a third of the calls: filters compare it with
 * a quoted literal that must reach the library whole. */
RINGTRACE_EVENT(ft_other, RINGTRACE_PROTO(uint64_t value, const char *tag),
		RINGTRACE_ARGS(value, tag),
		RINGTRACE_FIELDS(ringtrace_integer(uint64_t, value, value)
					 ringtrace_string(tag, tag)),
		RINGTRACE_PRINT("value=%llu tag=%s"))

int main(int argc, char **argv)
{
	const char *wait_for = NULL;
	char *end;
	long n = argc > 1 ? strtol(argv[1], &end, 10) : -1;
	if (argc == 4 && strcmp(argv[2], "--wait-for") == 0)
		wait_for = argv[3];
	if (n < 0 || n > 1000000000L || *end || (argc != 2 && !wait_for)) {
		fprintf(stderr, "usage: test_filter_prog N [--wait-for PATH]\n");
		return 2;
	}
	for (long i = 0; i < n; i++) {
		trace_ft_value((int32_t)i);
		trace_ft_other((uint64_t)i, i % 3 == 0 ? "a;b:c" : "plain");
	}
	printf("test_filter_prog: %ld calls of each event\n", n);
	fflush(stdout);
	if (wait_for) {
		int i = 0;
		for (; i < 3000 && access(wait_for, F_OK) != 0; i++) {
			struct timespec d = {0, 10 * 1000 * 1000};
			nanosleep(&d, NULL);
		}
		if (i == 3000) {
			fprintf(stderr, "test_filter_prog: %s did not appear within 30 s\n",
				wait_for);
			return 3;
		}
	}
	return 0;
}
