/*
 * Exact per-stream accounting in a trace: for every
 * thread, the events of its stream plus the stream's dropped count equal
 * what the thread emitted, read from the trace by the reader library and
 * by `ringtrace stat`. Threads write into a full pool through an
 * in-process session in discard mode (nobody flushes for them), so that
 * they drop events after their last page, which no page header reports:
 * the recorder writes those drops into the metadata (`dropped` lines) and
 * the reader adds them to the stream. One case with a heavy load (4
 * threads x 600,000 events into the default pool), one with threads that
 * exit with such drops while others keep writing.
 */
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/session.h>
#include <ringtrace/trace.h>
#include <ringtrace/tracepoint.h>

#include "check.h"

RINGTRACE_EVENT(acct_ev, RINGTRACE_PROTO(uint32_t thread, uint64_t seq),
		RINGTRACE_ARGS(thread, seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, thread, thread)
					 ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("thread=%u seq=%llu"))

#define NTHREADS 4u
#ifdef RINGTRACE_SANITIZED
#define NPER 150000u
/* (slow writers: only a tiny pool, 4 pages of 4 KiB, fills) */
#define POOL (4u << 12)
#define PAGE (4u << 10)
#else
#define NPER 600000u
#define POOL 0u /* the default pool */
#define PAGE 0u
#endif

static const char *self;

struct worker {
	uint32_t id;
	uint64_t n;       /* events to emit (0: until `stop`) */
	uint64_t emitted; /* out */
	uint32_t tid;     /* out */
	const int *stop;  /* for n == 0 */
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	uint64_t i = 0;
	while (w->n ? i < w->n : !__atomic_load_n(w->stop, __ATOMIC_ACQUIRE))
		trace_acct_ev(w->id, i++);
	w->emitted = i;
	w->tid = (uint32_t)syscall(SYS_gettid);
	return NULL;
}

static void record(const char *dir, struct worker *w, uint32_t nfirst, uint32_t nlater, int *stop,
		   size_t pool, size_t page)
{
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.events = "acct_*";
	cfg.pool_size = pool;
	cfg.page_size = page;
	CHECKF(ringtrace_session_start(&cfg) == 0, "%s", ringtrace_last_error());
	pthread_t t[NTHREADS];
	for (uint32_t i = 0; i < nfirst + nlater; i++)
		CHECK(pthread_create(&t[i], NULL, worker, &w[i]) == 0);
	/* the first ones exit (with the drops after their last page), then
	 * the later ones are stopped */
	for (uint32_t i = 0; i < nfirst; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	if (stop)
		__atomic_store_n(stop, 1, __ATOMIC_RELEASE);
	for (uint32_t i = nfirst; i < nfirst + nlater; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	CHECKF(ringtrace_session_stop() == 0, "%s", ringtrace_last_error());
}

/*
 * Read the trace: per stream, its thread (from the events' payload), and
 * check events + dropped == emitted for each thread; returns the dropped
 * total. Also checks `ringtrace stat` says the same per stream.
 */
static uint64_t check_trace(const char *dir, const struct worker *w, uint32_t nw)
{
	ringtrace_trace *t = NULL;
	CHECKF(ringtrace_trace_open(dir, NULL, NULL, &t) == 0, "%s", ringtrace_last_error());
	uint32_t ns = ringtrace_trace_stream_count(t);
	CHECKF(ns == nw, "%u streams, %u threads", ns, nw);
	/* each stream's thread: by the events' payload, and by its tid (a
	 * thread that dropped every event has a stream without events) */
	int64_t thread_of[NTHREADS];
	for (uint32_t i = 0; i < NTHREADS; i++)
		thread_of[i] = -1;
	/* the lost records' dropped parts, per stream (tail drops included) */
	uint64_t rec_dropped[NTHREADS] = {0};
	struct ringtrace_trace_record r;
	while (ringtrace_trace_next(t, &r) == 1) {
		if (r.kind != RINGTRACE_TRACE_EVENT) {
			CHECK(r.stream_index < ns && r.stream_index < NTHREADS);
			CHECK(r.overrun == 0 && r.dropped == r.lost);
			rec_dropped[r.stream_index] += r.dropped;
			continue;
		}
		uint32_t th;
		memcpy(&th, r.data, sizeof(th));
		CHECK(r.stream_index < ns && th < nw);
		CHECKF(thread_of[r.stream_index] < 0 || thread_of[r.stream_index] == th,
		       "stream %u holds events of threads %lld and %u", r.stream_index,
		       (long long)thread_of[r.stream_index], th);
		thread_of[r.stream_index] = th;
	}
	for (uint32_t i = 0; i < ns; i++)
		for (uint32_t k = 0; thread_of[i] < 0 && k < nw; k++)
			if (ringtrace_trace_stream(t, i)->tid == w[k].tid)
				thread_of[i] = k;
	uint64_t dropped = 0;
	for (uint32_t i = 0; i < ns; i++) {
		const struct ringtrace_trace_stream_info *s = ringtrace_trace_stream(t, i);
		CHECKF(thread_of[i] >= 0, "stream %" PRIu64 " has no event", s->id);
		const struct worker *wk = &w[thread_of[i]];
		CHECKF(s->events + s->dropped == wk->emitted && s->overrun == 0,
		       "thread %u (stream %" PRIu64 "): %" PRIu64 " events + %" PRIu64
		       " dropped (+ %" PRIu64 " overrun) != %" PRIu64 " emitted",
		       wk->id, s->id, s->events, s->dropped, s->overrun, wk->emitted);
		CHECKF(rec_dropped[i] == s->dropped,
		       "stream %" PRIu64 ": its lost records say %" PRIu64
		       " dropped, its counter %" PRIu64,
		       s->id, rec_dropped[i], s->dropped);
		dropped += s->dropped;
	}
	ringtrace_trace_close(t);

	/* `ringtrace stat`: one line per stream, "id tid comm events dropped ..." */
	char cmd[1024], line[1024];
	char *copy = strdup(self);
	CHECK(copy != NULL);
	snprintf(cmd, sizeof(cmd), "%s/ringtrace stat %s", dirname(copy), dir);
	free(copy);
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	uint64_t sum = 0, lines = 0;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long id, events, drop;
		unsigned tid;
		char comm[64];
		if (sscanf(line, "%llu %u %63s %llu %llu", &id, &tid, comm, &events, &drop) != 5)
			continue;
		sum += events + drop;
		lines++;
	}
	CHECK(pclose(p) == 0);
	uint64_t emitted = 0;
	for (uint32_t i = 0; i < nw; i++)
		emitted += w[i].emitted;
	CHECKF(lines == nw && sum == emitted,
	       "ringtrace stat: %" PRIu64 " stream lines, events + dropped %" PRIu64
	       " (emitted %" PRIu64 ")",
	       lines, sum, emitted);
	return dropped;
}

static void rmtree(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

static void case_full_pool(void)
{
	char dir[256];
	snprintf(dir, sizeof(dir), "/tmp/ringtrace-acct-%d", (int)getpid());
	rmtree(dir);
	/*
	 * The case proves nothing about drops if there were none, and whether
	 * the pool fills depends on the machine: on a loaded one the writers
	 * are descheduled and the recorder keeps up. Each try's accounting is
	 * checked; a try without drops is followed by one with a tiny pool
	 * (4 pages of 4 KiB) and twice the events, up to 4 tries.
	 */
	uint64_t dropped = 0, n = NPER;
	size_t pool = POOL, page = PAGE;
	for (int attempt = 0; attempt < 4 && dropped == 0; attempt++) {
		struct worker w[NTHREADS];
		for (uint32_t i = 0; i < NTHREADS; i++)
			w[i] = (struct worker){.id = i, .n = n};
		record(dir, w, NTHREADS, 0, NULL, pool, page);
		dropped = check_trace(dir, w, NTHREADS);
		rmtree(dir);
		pool = 4u << 12;
		page = 4u << 10;
		n *= 2;
	}
	CHECKF(dropped > 0, "no event was dropped in 4 tries: the pool never filled");
}

static void case_exit_with_tail_drops(void)
{
	char dir[256];
	snprintf(dir, sizeof(dir), "/tmp/ringtrace-acct-exit-%d", (int)getpid());
	rmtree(dir);
	int stop = 0;
	struct worker w[NTHREADS];
	/* two exit after NPER events, two write until then */
	for (uint32_t i = 0; i < NTHREADS; i++)
		w[i] = (struct worker){.id = i, .n = i < 2 ? NPER : 0, .stop = &stop};
	/* (a pool of 4 pages of 4 KiB: full nearly all the time, so that
	 * every thread drops events after its last page) */
	record(dir, w, 2, 2, &stop, 4 << 12, 4 << 10);
	uint64_t dropped = check_trace(dir, w, NTHREADS);
	rmtree(dir);
	CHECKF(dropped > 0, "no event was dropped: the pool never filled");
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(record_full_pool_every_thread_events_plus_dropped_equals_emitted, case_full_pool),
	CHECK_CASE(record_threads_exiting_with_tail_drops_counted_in_their_streams, case_exit_with_tail_drops),
};
/* clang-format on */

int main(int argc, char **argv)
{
	self = argv[0];
	return CHECK_MAIN(cases, argc, argv);
}
