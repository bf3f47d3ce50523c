/*
 * test_latency_prog: requests with known waits, for `ringtrace latency`
 * (tests/test_latency.sh). Two threads (the main one, and "lt_worker"),
 * at the same time, each ROUNDS times: for each kind, a request with an
 * id of its own: lt_start(req, kind), a sleep of the kind's duration
 * (fast 2 ms, mid 5 ms, slow 10 ms), lt_stop(req). Around them:
 *
 *  - first, in the main thread, lt_stop(9002): a stop never started;
 *  - after the rounds, lt_start(500, "handoff") in the main thread and its
 *    lt_stop(500) in the worker (paired by req, not by thread);
 *  - last, in the main thread, lt_start(9001, "orphan"): never stopped.
 *
 * Paired by req: 6 * ROUNDS + 1 pairs, 1 start and 1 stop unpaired.
 * Paired by thread: 6 * ROUNDS pairs, 2 and 2 unpaired (the handoff's
 * halves are in two threads).
 *
 *   test_latency_prog ROUNDS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(lt_start, RINGTRACE_PROTO(uint32_t req, const char *kind),
		RINGTRACE_ARGS(req, kind),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, req, req)
					 ringtrace_string(kind, kind)),
		RINGTRACE_PRINT("req=%u kind=%s"))
RINGTRACE_EVENT(lt_stop, RINGTRACE_PROTO(uint32_t req), RINGTRACE_ARGS(req),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, req, req)), RINGTRACE_PRINT("req=%u"))

static const struct {
	const char *kind;
	long ms;
} kinds[] = {{"fast", 2}, {"mid", 5}, {"slow", 10}};

static unsigned rounds;
static int handoff[2]; /* pipe: the main thread tells the worker to stop 500 */

static void requests(uint32_t base)
{
	uint32_t req = base;
	for (unsigned r = 0; r < rounds; r++)
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			struct timespec d = {0, kinds[k].ms * 1000 * 1000};
			trace_lt_start(++req, kinds[k].kind);
			nanosleep(&d, NULL);
			trace_lt_stop(req);
		}
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "lt_worker");
	requests(2000);
	char c;
	if (read(handoff[0], &c, 1) != 1) {
		perror("test_latency_prog: read");
		exit(1);
	}
	trace_lt_stop(500);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_latency_prog ROUNDS\n");
		return 2;
	}
	rounds = (unsigned)strtoul(argv[1], NULL, 10);
	if (pipe(handoff) < 0) {
		perror("test_latency_prog: pipe");
		return 1;
	}
	trace_lt_stop(9002);
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0) {
		fprintf(stderr, "test_latency_prog: pthread_create failed\n");
		return 1;
	}
	requests(1000);
	trace_lt_start(500, "handoff");
	if (write(handoff[1], "x", 1) != 1) {
		perror("test_latency_prog: write");
		return 1;
	}
	pthread_join(t, NULL);
	trace_lt_start(9001, "orphan");
	return 0;
}
