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
 *
 *   test_latency_prog lossy
 *     Recorded with a buffer small enough: lt_start(7000, "lossy"), then
 *     lt_fill events until the buffer refused some, then lt_fill again
 *     (1 ms apart) until one is taken, then lt_stop(7000): one pair, with
 *     events lost inside it (its start and stop each written again until
 *     taken, so that the trace holds exactly one of each).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/ring.h>
#include <ringtrace/session.h>
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(lt_start, RINGTRACE_PROTO(uint32_t req, const char *kind),
		RINGTRACE_ARGS(req, kind),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, req, req)
					 ringtrace_string(kind, kind)),
		RINGTRACE_PRINT("req=%u kind=%s"))
RINGTRACE_EVENT(lt_stop, RINGTRACE_PROTO(uint32_t req), RINGTRACE_ARGS(req),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, req, req)), RINGTRACE_PRINT("req=%u"))
RINGTRACE_EVENT(lt_fill, RINGTRACE_PROTO(uint64_t seq), RINGTRACE_ARGS(seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("seq=%llu"))

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

/* This thread's refused events so far (its writer's `missed`). */
static uint64_t my_missed(ringtrace_rb *rb)
{
	struct ringtrace_rb_writer_stats ws[64];
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	int n = ringtrace_rb_get_writer_stats(rb, ws, 64);
	for (int i = 0; i < n && i < 64; i++)
		if (ws[i].tid == tid)
			return ws[i].missed;
	return 0;
}

#define LT_MAX_FILL 100000000ull
#define LT_MAX_TRIES 10000 /* 1 ms apart: 10 s */

static void emit_start(uint64_t seq)
{
	(void)seq;
	trace_lt_start(7000, "lossy");
}

static void emit_stop(uint64_t seq)
{
	(void)seq;
	trace_lt_stop(7000);
}

static void emit_fill(uint64_t seq)
{
	trace_lt_fill(seq);
}

/* emit(seq) again, 1 ms apart, until the buffer takes it: 0, or -1. */
static int until_taken(ringtrace_rb *rb, void (*emit)(uint64_t), uint64_t seq)
{
	struct timespec ms = {0, 1000 * 1000};
	for (int i = 0; i < LT_MAX_TRIES; i++) {
		uint64_t m = my_missed(rb);
		emit(seq);
		if (my_missed(rb) == m)
			return 0;
		nanosleep(&ms, NULL);
	}
	fprintf(stderr, "test_latency_prog: the buffer took no event for 10 s\n");
	return -1;
}

static int lossy(void)
{
	ringtrace_rb *rb = ringtrace_session_buffer();
	if (!rb) {
		fprintf(stderr,
			"test_latency_prog: not recorded (run it under ringtrace record)\n");
		return 2;
	}
	if (until_taken(rb, emit_start, 0) < 0)
		return 3;
	uint64_t m = my_missed(rb), seq = 0;
	while (my_missed(rb) == m && seq < LT_MAX_FILL)
		trace_lt_fill(seq++);
	if (seq == LT_MAX_FILL) {
		fprintf(stderr, "test_latency_prog: the buffer never filled\n");
		return 3;
	}
	/* (a fill taken after the loss, then the stop) */
	if (until_taken(rb, emit_fill, seq) < 0 || until_taken(rb, emit_stop, 0) < 0)
		return 3;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "lossy") == 0)
		return lossy();
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
