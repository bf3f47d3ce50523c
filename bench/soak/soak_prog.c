/*
 * ringtrace-soak-prog: the traced program of bench/soak.
 *
 *   ringtrace-soak-prog --threads N [--seconds S] [--counts FILE]
 *
 * N workers each call trace_soak_seq(W << 40 | n) for n = 1, 2, 3, ...
 * as fast as they can (no pause: the full rate), so that a reader of the
 * trace knows, per thread, which events were emitted and which are
 * missing. The program runs S seconds (0, the default: until SIGTERM or
 * SIGINT). With --counts, FILE is rewritten (to FILE.tmp, then renamed:
 * a reader never sees half of it) once a second and at the end with one
 * line per worker, "worker W emitted N", and "final 1" after the last
 * one when the workers have stopped: the emitted counts that the
 * accounting compares with the trace.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(soak_seq, RINGTRACE_PROTO(uint64_t seq), RINGTRACE_ARGS(seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("seq=%llu"))

#define MAX_WORKERS 64

static volatile sig_atomic_t stop_signal;

struct worker {
	pthread_t th;
	uint64_t idx;
	uint64_t n; /* events emitted, read by the main thread (relaxed) */
	char pad[64];
};

static struct worker workers[MAX_WORKERS];
static int stop_workers;

static void *work(void *arg)
{
	struct worker *w = arg;
	char name[16];
	snprintf(name, sizeof(name), "soak-%u", (unsigned)w->idx);
	pthread_setname_np(pthread_self(), name);
	uint64_t n = 0;
	while (!__atomic_load_n(&stop_workers, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 256; i++)
			trace_soak_seq(w->idx << 40 | ++n);
		__atomic_store_n(&w->n, n, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&w->n, n, __ATOMIC_RELEASE);
	return NULL;
}

static void on_stop(int sig)
{
	stop_signal = sig;
}

static int write_counts(const char *path, int nthreads, int final)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -1;
	for (int i = 0; i < nthreads; i++)
		fprintf(f, "worker %d emitted %" PRIu64 "\n", i,
			__atomic_load_n(&workers[i].n, __ATOMIC_ACQUIRE));
	if (final)
		fprintf(f, "final 1\n");
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

static int usage(void)
{
	fprintf(stderr, "usage: ringtrace-soak-prog --threads N [--seconds S] [--counts FILE]\n");
	return 2;
}

int main(int argc, char **argv)
{
	int nthreads = 2;
	double seconds = 0;
	const char *counts = NULL;
	for (int i = 1; i < argc; i++) {
		char *end = NULL;
		if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > MAX_WORKERS)
				return usage();
			nthreads = (int)v;
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = strtod(argv[++i], &end);
			if (*end || !(seconds >= 0))
				return usage();
		} else if (!strcmp(argv[i], "--counts") && i + 1 < argc) {
			counts = argv[++i];
		} else {
			return usage();
		}
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	for (int i = 0; i < nthreads; i++) {
		workers[i].idx = (uint64_t)i;
		if (pthread_create(&workers[i].th, NULL, work, &workers[i]) != 0) {
			fprintf(stderr, "ringtrace-soak-prog: cannot start worker %d\n", i);
			return 1;
		}
	}
	struct timespec t0, now, tick = {0, 100 * 1000 * 1000};
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int ticks = 0;
	for (;;) {
		nanosleep(&tick, NULL); /* a signal cuts it short: checked at once */
		clock_gettime(CLOCK_MONOTONIC, &now);
		double el = (double)(now.tv_sec - t0.tv_sec) +
			    (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
		if (stop_signal || (seconds > 0 && el >= seconds))
			break;
		if (counts && ++ticks % 10 == 0 && write_counts(counts, nthreads, 0) < 0)
			fprintf(stderr, "ringtrace-soak-prog: %s: %s\n", counts, strerror(errno));
	}
	__atomic_store_n(&stop_workers, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nthreads; i++)
		pthread_join(workers[i].th, NULL);
	if (counts && write_counts(counts, nthreads, 1) < 0) {
		fprintf(stderr, "ringtrace-soak-prog: %s: %s\n", counts, strerror(errno));
		return 1;
	}
	return 0;
}
