/*
 * test_fault_prog: a short program for the fault-injection tests of
 * `ringtrace record -- CMD` (tests/test_faults_record.sh): it does a known
 * amount of work, recording as it goes, and says whether the work came out
 * right, so that a fault in its library (RINGTRACE_FAULT_ONLY=
 * test_fault_prog) can be seen not to change it.
 *
 *   test_fault_prog EVENTS [STATUS]
 *
 * Two threads (main and a worker) each record EVENTS fp_tick events and
 * sum their sequence numbers; it prints "test_fault_prog: ok" if both sums
 * are right, and exits with STATUS (default 0), or 1 if a sum is wrong.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(fp_tick, RINGTRACE_PROTO(uint32_t thread, uint64_t seq),
		RINGTRACE_ARGS(thread, seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, thread, thread)
					 ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("thread=%u seq=%llu"))

static uint64_t events;

static void *work(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	uint64_t sum = 0;
	for (uint64_t i = 1; i <= events; i++) {
		trace_fp_tick(id, i);
		sum += i;
	}
	return (void *)(uintptr_t)(sum == events * (events + 1) / 2);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_fault_prog EVENTS [STATUS]\n");
		return 2;
	}
	events = strtoull(argv[1], NULL, 10);
	int status = argc > 2 ? atoi(argv[2]) : 0;
	pthread_t th;
	if (pthread_create(&th, NULL, work, (void *)(uintptr_t)1) != 0) {
		fprintf(stderr, "test_fault_prog: pthread_create failed\n");
		return 1;
	}
	void *ok_main = work((void *)(uintptr_t)0), *ok_worker;
	pthread_join(th, &ok_worker);
	int ok = ok_main && ok_worker;
	printf("test_fault_prog: %s\n", ok ? "ok" : "WRONG");
	return ok ? status : 1;
}
