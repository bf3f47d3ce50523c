/*
 * test_limits_prog: the traced program of the limits tests
 * (tests/test_limits.sh). Every event it writes is lim_seq(unit, seq): a
 * unit (a thread, a child process, a program) numbers its events 0, 1, 2,
 * ... so that a trace shows exactly which of them it holds.
 *
 *   test_limits_prog threads N EVENTS
 *       N threads, one after another, each writing EVENTS events (units
 *       0..N-1): a trace with N streams.
 *   test_limits_prog churn N EVENTS BATCH PAUSE_US STOP_FILE
 *       N short-lived threads, BATCH at a time (each batch joined before
 *       the next starts, PAUSE_US microseconds between batches), each
 *       writing EVENTS events; then it waits until STOP_FILE exists. It
 *       prints "ready" at its start and "churned N" when the threads are
 *       done.
 *   test_limits_prog threads-kill N EVENTS
 *       N threads at once, each writing EVENTS events (units 0..N-1) and
 *       waiting for the others; then the program kills itself (SIGKILL),
 *       its threads' pages still in its pool: what `ringtrace recover`
 *       takes from it.
 *   test_limits_prog wait N EVENTS STOP_FILE
 *       waits until a session records it (or STOP_FILE exists: an attach
 *       that failed), then N threads one after another write EVENTS
 *       events each (units 0..N-1); prints "emitted", waits until
 *       STOP_FILE exists.
 *   test_limits_prog fork N EVENTS
 *       forks N times, one child at a time: before each fork the parent
 *       writes lim_seq(0, i); child i writes EVENTS events as unit i + 1
 *       and exits (exit(), _exit() in the sanitizer builds, or every tenth
 *       one execs /bin/true, a program without ringtrace), and the parent
 *       waits for it. (Its "fds" line
 *       counts from after the first child.)
 *
 * Each mode prints "fds B A" at its end: the number of its open
 * descriptors at its start and at its end (from /proc/self/fd), for the
 * tests' leak checks, and exits 0 when everything it did succeeded.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/session.h>
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(lim_seq, RINGTRACE_PROTO(uint32_t unit, uint32_t seq), RINGTRACE_ARGS(unit, seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, unit, unit)
					 ringtrace_integer(uint32_t, seq, seq)),
		RINGTRACE_PRINT("unit=%u seq=%u"))

static uint32_t events_per_unit;

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* (the directory's own) */
}

static void emit(uint32_t unit)
{
	for (uint32_t s = 0; s < events_per_unit; s++)
		trace_lim_seq(unit, s);
}

static void *thread_main(void *arg)
{
	emit((uint32_t)(uintptr_t)arg);
	return NULL;
}

static void pause_us(long us)
{
	struct timespec t = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&t, NULL);
}

/* Waits (50 ms at a time: 200 programs waiting at once must leave the
 * machine to the recorder) until PATH exists. */
static void wait_file(const char *path)
{
	while (access(path, F_OK) != 0)
		pause_us(50000);
}

static int run_threads(uint32_t n, uint32_t batch, long pause)
{
	pthread_t th[64];
	for (uint32_t i = 0; i < n; i += batch) {
		uint32_t k = n - i < batch ? n - i : batch;
		for (uint32_t j = 0; j < k; j++)
			if (pthread_create(&th[j], NULL, thread_main, (void *)(uintptr_t)(i + j)) !=
			    0) {
				fprintf(stderr, "test_limits_prog: pthread_create failed\n");
				return 1;
			}
		for (uint32_t j = 0; j < k; j++)
			pthread_join(th[j], NULL);
		if (pause > 0)
			pause_us(pause);
	}
	return 0;
}

static int run_wait(uint32_t n, const char *stop_file)
{
	/* (an attached session starts in the program's listener thread) */
	while (!ringtrace_session_buffer() && access(stop_file, F_OK) != 0)
		pause_us(50000);
	int rc = run_threads(n, 1, 0);
	printf("emitted\n");
	fflush(stdout);
	wait_file(stop_file);
	return rc;
}

static pthread_barrier_t all_written;

static void *kill_thread_main(void *arg)
{
	emit((uint32_t)(uintptr_t)arg);
	pthread_barrier_wait(&all_written);
	pause(); /* (until the SIGKILL) */
	return NULL;
}

static int run_kill(uint32_t n)
{
	pthread_barrier_init(&all_written, NULL, n + 1);
	for (uint32_t i = 0; i < n; i++) {
		pthread_t th;
		if (pthread_create(&th, NULL, kill_thread_main, (void *)(uintptr_t)i) != 0) {
			fprintf(stderr, "test_limits_prog: pthread_create failed\n");
			return 1;
		}
	}
	pthread_barrier_wait(&all_written);
	raise(SIGKILL);
	return 1;
}

static int run_fork(uint32_t n, int *before)
{
	for (uint32_t i = 0; i < n; i++) {
		/* (counted once the first child is gone: the listener thread
		 * opens its descriptors beside main's start) */
		if (i == 1)
			*before = count_fds();
		trace_lim_seq(0, i);
		pid_t pid = fork();
		if (pid < 0) {
			perror("test_limits_prog: fork");
			return 1;
		}
		if (pid == 0) {
			emit(i + 1);
			if (i % 10 == 9) {
				execl("/bin/true", "true", (char *)NULL);
				_exit(127);
			}
#ifdef RINGTRACE_SANITIZED
			/* (LeakSanitizer's check at exit, in a child of a process
			 * with threads, which fork did not copy, sees their memory
			 * as leaked) */
			_exit(0);
#else
			exit(0);
#endif
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "test_limits_prog: child %u failed\n", i);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test_limits_prog threads|churn|wait|fork ARGS...\n");
		return 2;
	}
	int before = count_fds();
	const char *mode = argv[1];
	int rc;
	if (strcmp(mode, "threads") == 0 && argc == 4) {
		events_per_unit = (uint32_t)atoi(argv[3]);
		rc = run_threads((uint32_t)atoi(argv[2]), 1, 0);
	} else if (strcmp(mode, "churn") == 0 && argc == 7) {
		int batch = atoi(argv[4]);
		if (batch < 1 || batch > 64) {
			fprintf(stderr, "test_limits_prog: BATCH 1..64\n");
			return 2;
		}
		events_per_unit = (uint32_t)atoi(argv[3]);
		printf("ready\n");
		fflush(stdout);
		rc = run_threads((uint32_t)atoi(argv[2]), (uint32_t)batch, atol(argv[5]));
		printf("churned %s\n", argv[2]);
		fflush(stdout);
		wait_file(argv[6]);
	} else if (strcmp(mode, "threads-kill") == 0 && argc == 4) {
		events_per_unit = (uint32_t)atoi(argv[3]);
		rc = run_kill((uint32_t)atoi(argv[2]));
	} else if (strcmp(mode, "wait") == 0 && argc == 5) {
		events_per_unit = (uint32_t)atoi(argv[3]);
		rc = run_wait((uint32_t)atoi(argv[2]), argv[4]);
	} else if (strcmp(mode, "fork") == 0 && argc == 4) {
		events_per_unit = (uint32_t)atoi(argv[3]);
		rc = run_fork((uint32_t)atoi(argv[2]), &before);
	} else {
		fprintf(stderr, "test_limits_prog: bad arguments for %s\n", mode);
		return 2;
	}
	printf("fds %d %d\n", before, count_fds());
	fflush(stdout);
	return rc;
}
