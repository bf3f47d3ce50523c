/*
 * The in-process recorder: a session in discard mode writes a trace
 * directory holding every event (checked event by event with
 * babeltrace2, the reference CTF reader, and against the recorder's
 * accounting); overwrite mode keeps the newest events; a snapshot taken
 * while recording is a complete trace; RINGTRACE_OUTPUT traces a program
 * without code changes (this binary re-executed with the variable set).
 * A session's start pays most of what threads' first events would (the
 * starting thread's read-side node, nodes mapped for the next threads).
 * Each is a case, in a directory of its own; the overwrite-mode trace and
 * the snapshot come from one recording (made for each of their cases).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/session.h>
#include <ringtrace/tracepoint.h>

#include "check.h"

RINGTRACE_EVENT(rec_tick, RINGTRACE_PROTO(uint32_t thread, uint64_t seq),
		RINGTRACE_ARGS(thread, seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, thread, thread)
					 ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("thread=%u seq=%llu"))

#ifdef RINGTRACE_SANITIZED
#define NPER 20000u
#else
#define NPER 200000u
#endif
#define NTHREADS 3u

static void *worker(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	for (uint64_t i = 0; i < NPER; i++)
		trace_rec_tick(id, i);
	return NULL;
}

static void run_workers(void)
{
	pthread_t t[NTHREADS];
	for (uint32_t i = 0; i < NTHREADS; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) == 0);
	for (uint32_t i = 0; i < NTHREADS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
}

/*
 * Read a trace with babeltrace2: count rec_tick events per thread, check
 * each thread's seq strictly increases, and return the last seq seen per
 * thread and the total.
 */
static uint64_t bt_read(const char *dir, uint64_t last[NTHREADS], uint64_t count[NTHREADS])
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "babeltrace2 %s 2>%s.err", dir, dir);
	CHECKF(system("command -v babeltrace2 >/dev/null 2>&1") == 0,
	       "babeltrace2 is not installed (make check installs it)");
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	char line[1024];
	uint64_t total = 0;
	int64_t prev[NTHREADS];
	for (unsigned i = 0; i < NTHREADS; i++) {
		prev[i] = -1;
		last[i] = 0;
		count[i] = 0;
	}
	while (fgets(line, sizeof(line), p)) {
		char *e = strstr(line, "rec_tick: ");
		if (!e)
			continue;
		char *pl = strstr(e, "thread = ");
		CHECKF(pl != NULL, "line: %s", line);
		unsigned th;
		unsigned long long seq;
		CHECKF(sscanf(pl, "thread = %u, seq = %llu", &th, &seq) == 2, "line: %s", line);
		CHECK(th < NTHREADS);
		CHECKF((int64_t)seq > prev[th], "thread %u: seq %llu after %lld", th, seq,
		       (long long)prev[th]);
		prev[th] = (int64_t)seq;
		last[th] = seq;
		count[th]++;
		total++;
	}
	int st = pclose(p);
	if (st != 0) {
		snprintf(cmd, sizeof(cmd), "tail -5 %s.err >&2", dir);
		CHECKF(system(cmd) >= 0 && 0, "babeltrace2 failed on %s (status %d)", dir, st);
	}
	snprintf(cmd, sizeof(cmd), "%s.err", dir);
	unlink(cmd);
	return total;
}

static void rmtree(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

/* Read the "stat KEY VALUE" line of the metadata's schema block. */
static uint64_t meta_stat(const char *dir, const char *key)
{
	char path[512], line[4096];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *f = fopen(path, "r");
	CHECKF(f != NULL, "%s: no metadata", dir);
	size_t kl = strlen(key);
	uint64_t v = UINT64_MAX;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "stat ", 5) == 0 && strncmp(line + 5, key, kl) == 0 &&
		    line[5 + kl] == ' ')
			v = strtoull(line + 6 + kl, NULL, 10);
	fclose(f);
	CHECKF(v != UINT64_MAX, "%s: no stat %s", dir, key);
	return v;
}

static void test_discard(const char *base)
{
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/discard", base);
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.events = "rec_*";
	CHECKF(ringtrace_session_start(&cfg) == 0, "%s", ringtrace_last_error());
	CHECK(ringtrace_session_start(&cfg) < 0); /* one at a time */
	run_workers();
	CHECKF(ringtrace_session_stop() == 0, "%s", ringtrace_last_error());
	CHECK(ringtrace_session_stop() < 0);
	uint64_t last[NTHREADS], count[NTHREADS];
	uint64_t total = bt_read(dir, last, count);
	uint64_t hit = meta_stat(dir, "hit"), missed = meta_stat(dir, "missed");
	uint64_t overrun = meta_stat(dir, "overrun");
	/* Every event is either in the trace or counted as lost. */
	CHECKF(hit + missed == (uint64_t)NTHREADS * NPER, "hit %" PRIu64 " + missed %" PRIu64, hit,
	       missed);
	CHECKF(total == hit && overrun == 0, "trace %" PRIu64 " events, hit %" PRIu64, total, hit);
	printf("discard: %" PRIu64 " events in the trace, %" PRIu64 " counted as dropped\n", total,
	       missed);
	rmtree(dir);
}

/* An overwrite-mode session (a pool far smaller than what is written),
 * with a snapshot taken while recording: dir and snap. */
static void record_overwrite(const char *dir, const char *snap)
{
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.events = "rec_*";
	cfg.mode = RINGTRACE_RB_OVERWRITE;
	cfg.page_size = 4096;
	cfg.pool_size = 64 * 4096; /* far smaller than what is written */
	CHECKF(ringtrace_session_start(&cfg) == 0, "%s", ringtrace_last_error());
	run_workers();
	/* A flight-recorder dump while still recording. */
	CHECKF(ringtrace_session_snapshot(snap) == 0, "%s", ringtrace_last_error());
	CHECKF(ringtrace_session_stop() == 0, "%s", ringtrace_last_error());
}

/* Overwrite mode keeps the newest events, losses counted as overrun. */
static void test_overwrite(const char *base)
{
	char dir[256], snap[256];
	snprintf(dir, sizeof(dir), "%s/overwrite", base);
	snprintf(snap, sizeof(snap), "%s/overwrite-snap", base);
	record_overwrite(dir, snap);
	uint64_t last[NTHREADS], count[NTHREADS];
	uint64_t total = bt_read(dir, last, count);
	uint64_t overrun = meta_stat(dir, "overrun");
	CHECK(overrun > 0);
	CHECK(total > 0 && total < (uint64_t)NTHREADS * NPER);
	/* The oldest pages, whoever wrote them, were recycled: the thread that
	 * finished last has its final event in the trace. */
	int newest = 0;
	for (unsigned i = 0; i < NTHREADS; i++)
		newest |= count[i] && last[i] == NPER - 1;
	CHECKF(newest, "no thread's final event (seq %u) is in the flight-recorder trace",
	       NPER - 1);
	printf("overwrite: %" PRIu64 " newest events kept, %" PRIu64 " overrun\n", total, overrun);
	rmtree(dir);
	rmtree(snap);
}

/* A snapshot taken while recording is a complete trace (babeltrace2 reads
 * it, each thread's events in order). */
static void test_snapshot(const char *base)
{
	char dir[256], snap[256];
	snprintf(dir, sizeof(dir), "%s/overwrite", base);
	snprintf(snap, sizeof(snap), "%s/overwrite-snap", base);
	record_overwrite(dir, snap);
	uint64_t slast[NTHREADS], scount[NTHREADS];
	uint64_t stotal = bt_read(snap, slast, scount);
	CHECK(stotal > 0);
	printf("snapshot: %" PRIu64 " events\n", stotal);
	rmtree(dir);
	rmtree(snap);
}

static void test_env(const char *self, const char *base)
{
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/env", base);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		setenv("RINGTRACE_OUTPUT", dir, 1);
		setenv("RINGTRACE_EVENTS", "rec_tick", 1);
		execl(self, self, "--child", (char *)NULL);
		_exit(127);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	uint64_t last[NTHREADS], count[NTHREADS];
	uint64_t total = bt_read(dir, last, count);
	CHECK(total + meta_stat(dir, "missed") == (uint64_t)NTHREADS * NPER);
	printf("RINGTRACE_OUTPUT: a program without tracing code recorded %" PRIu64 " events\n",
	       total);
	rmtree(dir);
}

/*
 * Most of what a thread's first event would pay is paid by
 * ringtrace_session_start: the starting thread has its
 * read-side node before any event, and threads started afterwards take
 * nodes mapped at the start (their node lies in memory that was mapped
 * before they were created). No writer slot is claimed for the starting
 * thread (it may never record: no stream number without a stream).
 */
struct range {
	uintptr_t lo, hi;
};

/* The process's mappings now (at most max). */
static size_t maps_now(struct range *r, size_t max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL);
	size_t n = 0;
	char line[512];
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			r[n++] = (struct range){lo, hi};
	}
	fclose(f);
	return n;
}

#define SPARE_THREADS 3u
static pthread_barrier_t spare_barrier;

static void *spare_worker(void *arg)
{
	trace_rec_tick(100, 0);
	*(const void **)arg = ringtrace_thr_.rnode;
	/* (alive until every node is seen: an exited thread's node is reused) */
	pthread_barrier_wait(&spare_barrier);
	return NULL;
}

static void test_prepared(const char *base)
{
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/prepared", base);
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.events = "rec_*";
	CHECK(ringtrace_thr_.rnode == &ringtrace_rnode_none_);
	CHECKF(ringtrace_session_start(&cfg) == 0, "%s", ringtrace_last_error());
	ringtrace_rb *rb = ringtrace_session_buffer();
	CHECK(rb != NULL);
	CHECK(ringtrace_thr_.rnode != &ringtrace_rnode_none_);
	struct ringtrace_rb_stats st;
	CHECK_OK(ringtrace_rb_get_stats(rb, &st));
	CHECK_EQ_U64(st.writers_active, 0);
	CHECK_EQ_U64(st.hit, 0);
	static struct range before[4096];
	size_t nb = maps_now(before, 4096);
	CHECK(nb < 4096);
	const void *node[SPARE_THREADS];
	pthread_t th[SPARE_THREADS];
	CHECK(pthread_barrier_init(&spare_barrier, NULL, SPARE_THREADS + 1) == 0);
	for (uint32_t i = 0; i < SPARE_THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, spare_worker, (void *)&node[i]) == 0);
	pthread_barrier_wait(&spare_barrier);
	for (uint32_t i = 0; i < SPARE_THREADS; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	for (uint32_t i = 0; i < SPARE_THREADS; i++) {
		uintptr_t a = (uintptr_t)node[i];
		int mapped = 0;
		for (size_t k = 0; k < nb && !mapped; k++)
			mapped = a >= before[k].lo && a < before[k].hi;
		CHECKF(mapped, "thread %u's read-side node %p was mapped after the session started",
		       i, node[i]);
	}
	for (uint64_t i = 0; i < 10; i++)
		trace_rec_tick(0, i);
	CHECK_OK(ringtrace_rb_get_stats(rb, &st));
	CHECK_EQ_U64(st.hit, 10 + SPARE_THREADS);
	CHECKF(ringtrace_session_stop() == 0, "%s", ringtrace_last_error());
	CHECK_EQ_U64(meta_stat(dir, "hit"), 10 + SPARE_THREADS);
	CHECK_EQ_U64(meta_stat(dir, "missed"), 0);
	rmtree(dir);
}

/* Each case in a directory of its own. */
static const char *self; /* argv[0]: the environment case runs it again */

static void in_base(void (*fn)(const char *base))
{
	char base[] = "/tmp/ringtrace-rec-XXXXXX";
	CHECK(mkdtemp(base) != NULL);
	fn(base);
	rmtree(base);
}

static void case_discard(void)
{
	in_base(test_discard);
}

static void case_overwrite(void)
{
	in_base(test_overwrite);
}

static void case_snapshot(void)
{
	in_base(test_snapshot);
}

static void case_prepared(void)
{
	in_base(test_prepared);
}

static void env_in(const char *base)
{
	test_env(self, base);
}

static void case_env(void)
{
	in_base(env_in);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(record_discard_session_traces_every_event_or_counts_it, case_discard),
	CHECK_CASE(record_overwrite_session_keeps_the_newest_events, case_overwrite),
	CHECK_CASE(record_snapshot_while_recording_is_a_complete_trace, case_snapshot),
	CHECK_CASE(record_env_output_traces_a_program_without_tracing_code, case_env),
	CHECK_CASE(record_session_start_maps_read_side_nodes_before_first_events, case_prepared),
};
/* clang-format on */

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--child") == 0) {
		/* Traced from the environment only: no session calls here. */
		CHECK(ringtrace_session_buffer() != NULL);
		run_workers();
		return 0;
	}
	self = argv[0];
	return CHECK_MAIN(cases, argc, argv);
}
