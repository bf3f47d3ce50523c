/*
 * A session's start and stop with each of ringtrace's own calls failed in
 * turn (src/base/fault.h; built only with RINGTRACE_FAULT_INJECTION): for
 * N = 1, 2, ... the Nth counted call of ringtrace_session_start() and
 * ringtrace_session_stop() fails, while a worker thread of the program
 * keeps emitting events, until N passes the last call. For every N:
 *
 *   - start and stop return 0 or a negative error, and then
 *     ringtrace_last_error() names what failed (a sentence, not empty);
 *   - the worker's own work is unaffected (its sum is right);
 *   - whatever a failed session left in its directory (a metadata file)
 *     is read by `ringtrace report` and by babeltrace2;
 *   - a start and stop without a fault then succeeds, and its trace holds
 *     the worker's events (read by report);
 *   - no leak: ASan checks at the program's exit (the loop runs in it).
 *
 * One case per kind of call (alloc, open, write, and the rest: ftruncate,
 * mmap, socket), so that every counted call is failed once by one of
 * them, and the cases run in parallel.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/session.h>
#include <ringtrace/tracepoint.h>

#include "base/fault.h"
#include "check.h"

RINGTRACE_EVENT(fs_tick, RINGTRACE_PROTO(uint64_t seq), RINGTRACE_ARGS(seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("seq=%llu"))

/* More calls than any start and stop make: a loop that does not end is a
 * failure too. */
#define MAX_CALLS 2000u

static struct {
	pthread_t th;
	int stop;
	uint64_t n, sum;
} W;

/* The program's own work: it records as it goes, whatever the sessions do. */
static void *work(void *arg)
{
	(void)arg;
	struct timespec pause = {0, 50 * 1000};
	while (!__atomic_load_n(&W.stop, __ATOMIC_RELAXED)) {
		uint64_t n = __atomic_add_fetch(&W.n, 1, __ATOMIC_RELAXED);
		trace_fs_tick(n);
		W.sum += n;
		if ((n & 255) == 0)
			nanosleep(&pause, NULL);
	}
	return NULL;
}

/* Until the worker has recorded k more events (into the session that was
 * started before: it then holds some), at most 10 s. */
static void wait_worker(uint64_t k)
{
	uint64_t until = __atomic_load_n(&W.n, __ATOMIC_RELAXED) + k;
	struct timespec d = {0, 1000 * 1000};
	for (int i = 0; i < 10000 && __atomic_load_n(&W.n, __ATOMIC_RELAXED) < until; i++)
		nanosleep(&d, NULL);
	CHECKF(__atomic_load_n(&W.n, __ATOMIC_RELAXED) >= until, "the worker does not run");
}

static char tmp[64];

static int run(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* DIR, if a session left a metadata there, is read by report and
 * babeltrace2 (up to what was written); `events`: it must hold events. */
static void check_readable(const char *dir, int events)
{
	char path[512], cmd[1400];
	struct stat st;
	snprintf(path, sizeof(path), "%s/metadata", dir);
	if (stat(path, &st) != 0) {
		CHECKF(!events, "no metadata in %s", dir);
		return;
	}
	snprintf(cmd, sizeof(cmd), "%s report %s >%s/report 2>%s/report.err", RINGTRACE_TOOL, dir,
		 tmp, tmp);
	CHECKF(run(cmd) == 0, "ringtrace report %s fails (%s/report.err)", dir, tmp);
	if (events) {
		snprintf(cmd, sizeof(cmd), "grep -q ' fs_tick: ' %s/report", tmp);
		CHECKF(run(cmd) == 0, "no fs_tick event in %s", dir);
	}
	snprintf(cmd, sizeof(cmd), "babeltrace2 %s >/dev/null 2>%s/bt.err", dir, tmp);
	CHECKF(run(cmd) == 0, "babeltrace2 cannot read %s (%s/bt.err)", dir, tmp);
	/* (with the recorder's counts: every event taken was read from the
	 * pool, none left out silently) */
	snprintf(
		cmd, sizeof(cmd),
		"%s stat %s | awk '$1 == \"hit\" {h = $2} $1 == \"read\" {r = $2} END {exit h != r}'",
		RINGTRACE_TOOL, dir);
	CHECKF(run(cmd) == 0, "%s: the events taken (hit) and read differ", dir);
}

static void start_in(const char *dir, int *err)
{
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.pool_size = 256 * 1024;
	cfg.page_size = 16 * 1024;
	*err = ringtrace_session_start(&cfg);
}

/* The message of a failed call: a sentence saying what failed. */
static void check_error(int err, const char *what, uint64_t n)
{
	if (err >= 0)
		return;
	const char *m = ringtrace_last_error();
	printf("fault %llu: %s: %s\n", (unsigned long long)n, what, m ? m : "");
	CHECKF(m && strlen(m) > 10, "%s failed (%d) at fault %llu with no message: \"%s\"", what,
	       err, (unsigned long long)n, m ? m : "");
}

/* One N: start, let the worker record, stop, all under the fault. */
static uint64_t one(const char *kind, uint64_t n)
{
	char dir[256], spec[64];
	snprintf(dir, sizeof(dir), "%s/t%llu", tmp, (unsigned long long)n);
	snprintf(spec, sizeof(spec), "%s:%llu", kind, (unsigned long long)n);
	int e1, e2 = 0;
	CHECK(rt_fault_arm(spec) == 0);
	start_in(dir, &e1);
	check_error(e1, "session_start", n);
	if (e1 == 0) {
		wait_worker(1000);
		e2 = ringtrace_session_stop();
	}
	uint64_t fired = rt_fault_fired();
	rt_fault_disarm();
	check_error(e2, "session_stop", n);
	CHECKF(e1 <= 0 && e2 <= 0, "start %d, stop %d", e1, e2);
	/* (a session that started and stopped without error holds events) */
	check_readable(dir, e1 == 0 && e2 == 0 && fired == 0);
	return fired;
}

static void loop(const char *kind)
{
	snprintf(tmp, sizeof(tmp), "/tmp/rt-fault-session-XXXXXX");
	CHECK(mkdtemp(tmp) != NULL);
	CHECK(pthread_create(&W.th, NULL, work, NULL) == 0);
	uint64_t n = 1;
	while (one(kind, n) > 0) {
		/* afterwards, without a fault: a session records as before */
		char dir[256];
		int err;
		snprintf(dir, sizeof(dir), "%s/after%llu", tmp, (unsigned long long)n);
		start_in(dir, &err);
		CHECK_OK(err);
		wait_worker(300);
		CHECK_OK(ringtrace_session_stop());
		check_readable(dir, 1);
		CHECKF(++n <= MAX_CALLS, "%s still fails at call %u", kind, MAX_CALLS);
	}
	__atomic_store_n(&W.stop, 1, __ATOMIC_RELAXED);
	CHECK(pthread_join(W.th, NULL) == 0);
	CHECKF(W.sum == W.n * (W.n + 1) / 2, "the worker's sum is wrong");
	printf("%s: %llu calls failed in turn\n", kind, (unsigned long long)(n - 1));
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	CHECK(run(cmd) == 0);
}

static void alloc(void)
{
	loop("alloc");
}
static void opens(void)
{
	loop("open");
}
static void writes(void)
{
	loop("write");
}
static void rest(void)
{
	loop("ftruncate");
	W.stop = 0;
	loop("mmap");
	W.stop = 0;
	loop("socket");
}

static const struct check_case cases[] = {
	CHECK_CASE(fault_session_start_stop_each_alloc_failed, alloc),
	CHECK_CASE(fault_session_start_stop_each_open_failed, opens),
	CHECK_CASE(fault_session_start_stop_each_write_failed, writes),
	CHECK_CASE(fault_session_start_stop_each_ftruncate_mmap_socket_failed, rest),
};

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
