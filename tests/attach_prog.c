/*
 * test_attach_prog: a long-running program that checks its own work, for
 * the attach tests (tests/test_attach.sh): `ringtrace record -p` attaches
 * to it and detaches, many times, while it runs.
 *
 *   test_attach_prog THREADS SECONDS [--stop-file PATH] [--filter] [--own-session DIR]
 *
 * Each of THREADS workers loops: n += 1, records at_seq(worker, n) and
 * at_val(worker, n % 1000), and adds n to its sum; every 64 iterations it
 * yields the CPU for 20 us (a service, not a spin). It runs SECONDS seconds
 * (or until PATH exists), then each worker checks its sum against
 * n (n + 1) / 2 and the program exits 0 only if every one matches: a
 * session started and stopped under it must not change what it computes.
 *
 * --filter: the program sets a filter of its own (at_val: value < 500) and
 * a trigger (at_seq if seq == 1: traceon) before the workers start, so the
 * tests can check that a detach puts them back.
 *
 * --own-session DIR: on SIGUSR2 the program stops whatever session records
 * it (an attached one too) and starts its own into DIR (every event),
 * stopped at its exit; it prints "own session" when it has.
 *
 * SIGUSR1 prints the program's tracing state on stdout, one line:
 *   state at_seq=R/F at_val=R/F triggers=N tracing=T
 * (R: recorded, F: has a filter, N: number of triggers, T: tracing on).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/filter.h>
#include <ringtrace/session.h>
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(at_seq, RINGTRACE_PROTO(uint32_t worker, uint64_t seq), RINGTRACE_ARGS(worker, seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, worker, worker)
					 ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("worker=%u seq=%llu"))

RINGTRACE_EVENT(at_val, RINGTRACE_PROTO(uint32_t worker, int32_t value),
		RINGTRACE_ARGS(worker, value),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, worker, worker)
					 ringtrace_integer(int32_t, value, value)),
		RINGTRACE_PRINT("worker=%u value=%d"))

static volatile int stop;
static volatile sig_atomic_t want_state, want_own;

struct worker {
	pthread_t th;
	uint32_t idx;
	uint64_t n, sum;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct timespec pause = {0, 20 * 1000};
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		w->n++;
		trace_at_seq(w->idx, w->n);
		trace_at_val(w->idx, (int32_t)(w->n % 1000));
		w->sum += w->n;
		if ((w->n & 63) == 0)
			nanosleep(&pause, NULL);
	}
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	want_state = 1;
}

static void on_usr2(int sig)
{
	(void)sig;
	want_own = 1;
}

static void print_state(void)
{
	struct ringtrace_event_info a, b;
	if (ringtrace_event_lookup("at_seq", &a) < 0 || ringtrace_event_lookup("at_val", &b) < 0) {
		printf("state: events not found\n");
		return;
	}
	printf("state at_seq=%d/%d at_val=%d/%d triggers=%u tracing=%d\n", a.enabled, a.has_filter,
	       b.enabled, b.has_filter, ringtrace_trigger_count(), ringtrace_tracing_is_on());
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr,
			"usage: test_attach_prog THREADS SECONDS [--stop-file PATH] [--filter]\n");
		return 2;
	}
	int nthreads = atoi(argv[1]);
	double secs = atof(argv[2]);
	const char *stop_file = NULL, *own_dir = NULL;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--stop-file") == 0 && i + 1 < argc) {
			stop_file = argv[++i];
		} else if (strcmp(argv[i], "--own-session") == 0 && i + 1 < argc) {
			own_dir = argv[++i];
		} else if (strcmp(argv[i], "--filter") == 0) {
			if (ringtrace_event_set_filter("at_val", "value < 500", NULL) < 0 ||
			    ringtrace_trigger_add("at_seq if seq == 1: traceon", NULL) < 0) {
				fprintf(stderr, "test_attach_prog: %s\n", ringtrace_last_error());
				return 1;
			}
		} else {
			fprintf(stderr, "test_attach_prog: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > 64 || !(secs > 0)) {
		fprintf(stderr, "test_attach_prog: 1..64 threads, seconds > 0\n");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	if (own_dir)
		sigaction(SIGUSR2, &sa, NULL);
	struct worker *w = calloc((size_t)nthreads, sizeof(*w));
	if (!w)
		return 1;
	for (int i = 0; i < nthreads; i++) {
		w[i].idx = (uint32_t)i;
		if (pthread_create(&w[i].th, NULL, work, &w[i]) != 0) {
			fprintf(stderr, "test_attach_prog: pthread_create failed\n");
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	struct timespec t0, now, tick = {0, 10 * 1000 * 1000};
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (want_state) {
			want_state = 0;
			print_state();
		}
		if (want_own) {
			want_own = 0;
			(void)ringtrace_session_stop(); /* (whoever's it is) */
			struct ringtrace_session_config cfg;
			ringtrace_session_config_init(&cfg);
			cfg.output_dir = own_dir;
			if (ringtrace_session_start(&cfg) < 0) {
				fprintf(stderr, "test_attach_prog: %s\n", ringtrace_last_error());
				return 1;
			}
			printf("own session\n");
			fflush(stdout);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		double el = (double)(now.tv_sec - t0.tv_sec) +
			    (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
		if (el >= secs || (stop_file && access(stop_file, F_OK) == 0))
			break;
		nanosleep(&tick, NULL);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	int bad = 0;
	uint64_t total = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		uint64_t n = w[i].n;
		if (w[i].sum != n * (n + 1) / 2) {
			fprintf(stderr, "test_attach_prog: worker %d: sum %llu, expected %llu\n", i,
				(unsigned long long)w[i].sum,
				(unsigned long long)(n * (n + 1) / 2));
			bad = 1;
		}
		total += n;
	}
	if (own_dir && ringtrace_session_buffer() && ringtrace_session_stop() < 0) {
		fprintf(stderr, "test_attach_prog: %s\n", ringtrace_last_error());
		bad = 1;
	}
	printf("done %llu iterations, %s\n", (unsigned long long)total, bad ? "WRONG" : "ok");
	free(w);
	return bad;
}
