/*
 * test_crash_prog: records a known sequence, then dies without stopping
 * its recorder (tests/test_recover.sh).
 *
 *   test_crash_prog N DIR kill|abort|exit|live|orphan
 *
 * Two threads each call crash_ev(thread, seq) for seq = 0 .. N-1, then the
 * program waits until the recorder's live metadata in DIR names crash_ev
 * (so that the crash is not earlier than a real program's would be: a
 * few milliseconds after start), and dies: SIGKILL, abort() (SIGABRT) or
 * _exit(3) (no atexit handler, so no session stop). `live`: the main
 * thread stays alive (its writer slot with it) until it is killed, for the
 * tests of what recover refuses while a program runs. `orphan`: the main
 * thread then writes 100 events crash_ev(2, 0..99), and its page is made
 * what a flush that died in the middle of taking it leaves (the slot's
 * steal word TAKEN, the header not finalized: in no list, events 0),
 * before SIGKILL; it says "orphan page P: B bytes committed" (CRASH_SHM
 * names the pool; the layout is tests/pool_layout.h).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pool_layout.h"

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(crash_ev, RINGTRACE_PROTO(uint32_t thread, uint64_t seq),
		RINGTRACE_ARGS(thread, seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, thread, thread)
					 ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("thread=%u seq=%llu"))

static unsigned long n_events;

static void *emit(void *arg)
{
	uint32_t th = (uint32_t)(uintptr_t)arg;
	for (unsigned long i = 0; i < n_events; i++)
		trace_crash_ev(th, i);
	return NULL;
}

static int meta_names_event(const char *dir)
{
	char path[4200], line[1024];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *f = fopen(path, "r");
	int found = 0;
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, "crash_ev") != NULL;
	if (f)
		fclose(f);
	return found;
}

/* See the top: the main thread's page left as a dead flusher leaves it. */
static void make_orphan(void)
{
	for (uint64_t i = 0; i < 100; i++)
		trace_crash_ev(2, i);
	/* (the library takes RINGTRACE_SHM out of the environment) */
	const char *shm = getenv("CRASH_SHM");
	int fd = shm ? shm_open(shm, O_RDWR, 0) : -1;
	size_t size;
	char *base = fd >= 0 ? pl_map(fd, &size) : NULL;
	if (!base) {
		fprintf(stderr, "test_crash_prog: cannot map the pool %s\n", shm ? shm : "(unset)");
		_exit(4);
	}
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	for (uint32_t i = 0; i < pl_u32(base, PL_MAX_WRITERS); i++) {
		uint64_t s = pl_slot(base, i);
		uint32_t p = pl_u32(base, s + PL_SLOT_CUR_PAGE);
		if ((pl_u32(base, s + PL_SLOT_STATE) & 3) != 1 ||
		    pl_u32(base, s + PL_SLOT_TID) != tid || p >= pl_u32(base, PL_NPAGES))
			continue;
		uint64_t h = pl_page(base, p);
		uint32_t commit = pl_u32(base, h + 80), events = pl_u32(base, h + 72);
		if (events != 0 || commit <= 112)
			break;
		pl_set_u32(base, s + PL_SLOT_STEAL, 2); /* RT_STEAL_TAKEN */
		printf("orphan page %u: %u bytes committed\n", p, commit);
		fflush(stdout);
		raise(SIGKILL);
	}
	fprintf(stderr, "test_crash_prog: the main thread has no page with events to leave\n");
	_exit(4);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: test_crash_prog N DIR kill|abort|exit|live|orphan\n");
		return 2;
	}
	n_events = strtoul(argv[1], NULL, 10);
	pthread_t t;
	if (pthread_create(&t, NULL, emit, (void *)(uintptr_t)1) != 0)
		return 1;
	emit((void *)(uintptr_t)0);
	pthread_join(t, NULL);
	for (int i = 0; i < 3000 && !meta_names_event(argv[2]); i++) {
		struct timespec d = {0, 10 * 1000 * 1000};
		nanosleep(&d, NULL);
	}
	printf("test_crash_prog: %lu events per thread\n", n_events);
	fflush(stdout);
	/* CRASH_LINGER_MS: live a little longer (the recorder's poll writes
	 * what the exited thread left in memory into the live metadata) */
	const char *linger = getenv("CRASH_LINGER_MS");
	if (linger) {
		long ms = strtol(linger, NULL, 10);
		struct timespec d = {ms / 1000, (ms % 1000) * 1000 * 1000};
		nanosleep(&d, NULL);
	}
	if (strcmp(argv[3], "kill") == 0)
		raise(SIGKILL);
	if (strcmp(argv[3], "abort") == 0)
		abort();
	if (strcmp(argv[3], "orphan") == 0)
		make_orphan();
	if (strcmp(argv[3], "live") == 0)
		for (;;)
			pause();
	_exit(3);
}
