/*
 * test_stall_prog: writes at full rate while its recorder is stopped,
 * stalled or killed (tests/test_stall.sh, tests/test_stall_fault.sh).
 *
 *   test_stall_prog THREADS QUOTA CTL [--stall [--snapshot PATH]] [--live]
 *
 * THREADS writers each call stall_ev(thread, seq), seq = 0, 1, 2, ...
 * without pause, in three phases of QUOTA events each. Before phase K the
 * program waits for the file CTL/goK (the test stops, kills or lets its
 * recorder go in between), after it makes CTL/doneK; a file is looked
 * for every millisecond; CTL/tids, made first, has a line per writer,
 * "thread I tid T". After phase 3, once the pool has free pages
 * again (discard mode: two a writer), each writer writes a tail of
 * STALL_TAIL events: the recording's last events, which the trace must
 * hold whatever was dropped before. Then CTL/written gets a line per
 * writer, "thread I tid T written N", and the program exits 0 (its
 * session, if any, stops at exit) or, with --live, waits to be killed.
 *
 * --stall: the recorder's consumer thread is made to stall in one of its
 * writes (RINGTRACE_FAULT=write:K:stall=MS, a fault-injection build).
 * Phase 2 then starts once the consumer is in the stall (its thread
 * "ringtrace-rec" is in nanosleep, which it calls nowhere else) and the
 * program checks after it that the consumer is still there and has
 * written no page meanwhile: the writers did their phase while the
 * recorder wrote nothing (exit 5 if not: the stall ended first). Phase 3
 * starts once the consumer has left the stall. The lines "stall: ..."
 * on stdout say what phase 2 cost and what the recorder counted.
 *
 * --snapshot PATH (with --stall): after phase 2, still inside the stall,
 * the program asks for a snapshot (SIGUSR2, as `ringtrace snapshot`
 * does), checks that PATH (the snapshot's directory) is not there yet,
 * and before its tail waits for PATH/metadata: the snapshot written once
 * the consumer is back (exit 6 if it came during the stall).
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/ctf.h>
#include <ringtrace/ring.h>
#include <ringtrace/session.h>
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(stall_ev, RINGTRACE_PROTO(uint32_t thread, uint64_t seq),
		RINGTRACE_ARGS(thread, seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, thread, thread)
					 ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("thread=%u seq=%llu"))

#define STALL_TAIL 16
#define MAX_THREADS 16

struct writer {
	pthread_t th;
	uint32_t idx;
	pid_t tid;
	uint64_t seq; /* events written so far */
};

static struct writer W[MAX_THREADS];
static unsigned nthreads;
static uint64_t quota;
static const char *ctl;
/* the phase the writers are asked to write (0: none yet), and how many are done with it */
static unsigned phase;
static unsigned done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void nap_ms(long ms)
{
	struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&d, NULL);
}

static int ctl_exists(const char *name)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", ctl, name);
	return access(p, F_OK) == 0;
}

static void ctl_make(const char *name, const char *text)
{
	char p[4200], tmp[4300];
	snprintf(p, sizeof(p), "%s/%s", ctl, name);
	snprintf(tmp, sizeof(tmp), "%s.new", p);
	FILE *f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, p) != 0) {
		fprintf(stderr, "test_stall_prog: cannot write %s\n", p);
		exit(3);
	}
}

/* The phase's events, then wait for the next phase (the tail is phase 4). */
static void *work(void *arg)
{
	struct writer *w = arg;
	pthread_mutex_lock(&lock);
	w->tid = (pid_t)syscall(SYS_gettid);
	done++;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (unsigned ph = 1; ph <= 4; ph++) {
		pthread_mutex_lock(&lock);
		while (phase < ph)
			pthread_cond_wait(&cond, &lock);
		pthread_mutex_unlock(&lock);
		uint64_t n = ph == 4 ? STALL_TAIL : quota;
		for (uint64_t i = 0; i < n; i++)
			trace_stall_ev(w->idx, w->seq++);
		pthread_mutex_lock(&lock);
		done++;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void run_phase(unsigned ph)
{
	pthread_mutex_lock(&lock);
	done = 0;
	phase = ph;
	pthread_cond_broadcast(&cond);
	while (done < nthreads)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
}

/*
 * 1 if the session's consumer thread is in nanosleep now: in the injected
 * stall (it sleeps on a futex otherwise). /proc/self/task/T/syscall's
 * first number is the system call the thread is blocked in.
 */
static int consumer_stalled(void)
{
	DIR *d = opendir("/proc/self/task");
	int in = 0;
	struct dirent *e;
	while (d && !in && (e = readdir(d)) != NULL) {
		char p[300], buf[64] = "";
		snprintf(p, sizeof(p), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(p, "r");
		int rec = f && fgets(buf, sizeof(buf), f) && strcmp(buf, "ringtrace-rec\n") == 0;
		if (f)
			fclose(f);
		if (!rec)
			continue;
		snprintf(p, sizeof(p), "/proc/self/task/%s/syscall", e->d_name);
		f = fopen(p, "r");
		long nr = -1;
		if (f && fscanf(f, "%ld", &nr) == 1)
			in = nr == SYS_nanosleep || nr == SYS_clock_nanosleep;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return in;
}

static uint64_t pages_written(void)
{
	struct ringtrace_trace_stats st;
	return ringtrace_session_stats(&st) == 0 ? st.pages : 0;
}

static uint64_t lost_so_far(void)
{
	struct ringtrace_trace_stats st;
	return ringtrace_session_stats(&st) == 0 ? st.missed + st.overrun : 0;
}

/* Wait (every ms, up to 120 s) for cond(); 0 if it came. */
static int wait_for(int (*cond_fn)(void), const char *what)
{
	for (int i = 0; i < 120000; i++) {
		if (cond_fn())
			return 0;
		nap_ms(1);
	}
	fprintf(stderr, "test_stall_prog: %s did not come in 120 s\n", what);
	return -1;
}

static unsigned waited_phase;
static int go_file(void)
{
	char name[16];
	snprintf(name, sizeof(name), "go%u", waited_phase);
	return ctl_exists(name);
}

static int consumer_running(void)
{
	return !consumer_stalled();
}

/* Discard mode: two free pages a writer, so that the tail is recorded. */
static int pool_has_room(void)
{
	ringtrace_rb *rb = ringtrace_session_buffer();
	struct ringtrace_rb_stats s;
	if (!rb || ringtrace_rb_mode(rb) != RINGTRACE_RB_DISCARD)
		return 1;
	return ringtrace_rb_get_stats(rb, &s) == 0 && s.pages_free >= 2 * nthreads;
}

/* --stall's phase 2: the writers' whole phase inside the consumer's stall. */
static int phase_in_stall(void)
{
	if (wait_for(consumer_stalled, "the consumer's stall") < 0)
		return 4;
	uint64_t p0 = pages_written(), l0 = lost_so_far();
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	run_phase(2);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	uint64_t p1 = pages_written(), l1 = lost_so_far();
	int still = consumer_stalled();
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	printf("stall: phase 2: %llu events in %.1f ms, pages written %llu -> %llu, lost %llu -> "
	       "%llu, consumer %s\n",
	       (unsigned long long)(quota * nthreads), ms, (unsigned long long)p0,
	       (unsigned long long)p1, (unsigned long long)l0, (unsigned long long)l1,
	       still ? "still stalled" : "running");
	fflush(stdout);
	if (!still || p1 != p0) {
		fprintf(stderr, "test_stall_prog: the consumer's stall ended before the writers' "
				"phase 2 did\n");
		return 5;
	}
	return 0;
}

/* CTL/tids: which thread is which stream of the trace (a writer whose
 * events were all dropped has no event that would say it). */
static void write_tids(void)
{
	pthread_mutex_lock(&lock);
	while (done < nthreads)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	char text[MAX_THREADS * 80] = "";
	size_t len = 0;
	for (unsigned i = 0; i < nthreads; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "thread %u tid %d\n", i,
					(int)W[i].tid);
	ctl_make("tids", text);
}

static const char *snap_path;
static int snapshot_written(void)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/metadata", snap_path);
	return access(p, F_OK) == 0;
}

/* --snapshot: asked for inside the stall, not written before its end. */
static int snapshot_in_stall(void)
{
	raise(SIGUSR2);
	if (access(snap_path, F_OK) == 0 || !consumer_stalled()) {
		fprintf(stderr, "test_stall_prog: the snapshot was written during the stall, or "
				"the stall ended first\n");
		return 6;
	}
	printf("stall: snapshot asked for during the stall, not written\n");
	fflush(stdout);
	return 0;
}

static int run_all(int stall)
{
	write_tids();
	for (unsigned ph = 1; ph <= 3; ph++) {
		waited_phase = ph;
		if (wait_for(go_file, "the go file") < 0)
			return 4;
		if (ph == 2 && stall) {
			int rc = phase_in_stall();
			if (!rc && snap_path)
				rc = snapshot_in_stall();
			if (rc)
				return rc;
		} else {
			if (ph == 3 && stall && wait_for(consumer_running, "the stall's end") < 0)
				return 4;
			run_phase(ph);
		}
		char name[16];
		snprintf(name, sizeof(name), "done%u", ph);
		ctl_make(name, "");
	}
	if (snap_path && wait_for(snapshot_written, "the snapshot") < 0)
		return 4;
	if (snap_path) {
		printf("stall: snapshot written after the stall\n");
		fflush(stdout);
	}
	if (wait_for(pool_has_room, "free pages in the pool") < 0)
		return 4;
	run_phase(4);
	char text[MAX_THREADS * 80] = "";
	size_t len = 0;
	for (unsigned i = 0; i < nthreads; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"thread %u tid %d written %llu\n", i, (int)W[i].tid,
					(unsigned long long)W[i].seq);
	ctl_make("written", text);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr,
			"usage: test_stall_prog THREADS QUOTA CTL [--stall [--snapshot PATH]] "
			"[--live]\n");
		return 2;
	}
	nthreads = (unsigned)strtoul(argv[1], NULL, 10);
	quota = strtoull(argv[2], NULL, 10);
	ctl = argv[3];
	int stall = 0, live = 0;
	for (int i = 4; i < argc; i++) {
		if (strcmp(argv[i], "--stall") == 0)
			stall = 1;
		else if (strcmp(argv[i], "--live") == 0)
			live = 1;
		else if (strcmp(argv[i], "--snapshot") == 0 && i + 1 < argc)
			snap_path = argv[++i];
		else {
			fprintf(stderr, "test_stall_prog: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || quota < 1) {
		fprintf(stderr, "test_stall_prog: THREADS 1..%d, QUOTA at least 1\n", MAX_THREADS);
		return 2;
	}
	for (unsigned i = 0; i < nthreads; i++) {
		W[i].idx = i;
		if (pthread_create(&W[i].th, NULL, work, &W[i]) != 0) {
			fprintf(stderr, "test_stall_prog: cannot start a thread\n");
			return 1;
		}
	}
	int rc = run_all(stall);
	if (rc)
		_exit(rc);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(W[i].th, NULL);
	while (live)
		pause();
	return 0;
}
