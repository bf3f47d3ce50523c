/*
 * test_hostile_prog: a traced program that damages its own pool while it
 * is recorded (tests/test_hostile.sh), as a wild pointer would.
 *
 *   test_hostile_prog WAY N
 *
 * Records hostile_ev(phase 0, seq) for seq = 0 .. N-1, waits until its
 * recorder has read all of them, then damages the pool in the way WAY
 * says (its recorder's pool, mapped a second time through the buffer's
 * fd), waits a little (the recorder's periodic flush looks at the pool),
 * records N more events (phase 1) from this thread and from a new one, and
 * exits normally. WAY:
 *   geometry     bits flipped in npages, max_writers (to 0), qcap and
 *                off_pages of the control block
 *   queue_index  a FIFO cell published with a page index past the pool
 *   slot_index   this thread's writer slot naming a page past the pool
 *   seq_ahead    the FIFO cell at the write position with its sequence
 *                ahead of the queue
 *   page_header  the header of this thread's current page scribbled over
 * Exit status: 0, or 2 on a usage or setup error (never because of the
 * damage: the library must neither crash nor hang the program).
 *
 *   test_hostile_prog --damage SHM WAY
 *
 * Damages the pool SHM (a POSIX shm name) of a program that is gone, for
 * `ringtrace recover` to read (queue_index, seq_ahead, geometry).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/session.h>
#include <ringtrace/tracepoint.h>

#include "pool_layout.h"

RINGTRACE_EVENT(hostile_ev, RINGTRACE_PROTO(uint32_t phase, uint64_t seq),
		RINGTRACE_ARGS(phase, seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, phase, phase)
					 ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("phase=%u seq=%llu"))

static unsigned long n_events;

static void sleep_ms(unsigned ms)
{
	struct timespec d = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000l};
	nanosleep(&d, NULL);
}

static void *phase1_thread(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < n_events; i++)
		trace_hostile_ev(1, n_events + i);
	return NULL;
}

/* Until the recorder has read every event committed so far (10 s at most). */
static void wait_read(void)
{
	ringtrace_rb *rb = ringtrace_session_buffer();
	if (!rb) {
		fprintf(stderr,
			"test_hostile_prog: not recording (run it under ringtrace record)\n");
		exit(2);
	}
	for (int i = 0; i < 1000; i++) {
		ringtrace_rb_flush(rb, 0);
		struct ringtrace_rb_stats st;
		ringtrace_rb_get_stats(rb, &st);
		if (st.read == st.hit && st.hit >= n_events)
			return;
		sleep_ms(10);
	}
	fprintf(stderr, "test_hostile_prog: the recorder did not read the first events\n");
	exit(2);
}

/* This thread's writer slot (active, our tid). */
static uint64_t my_slot(const char *b)
{
	uint32_t nw = pl_u32(b, PL_MAX_WRITERS), tid = (uint32_t)syscall(SYS_gettid);
	for (uint32_t i = 0; i < nw; i++) {
		uint64_t s = pl_slot(b, i);
		if ((pl_u32(b, s + PL_SLOT_STATE) & 3) == 1 && pl_u32(b, s + PL_SLOT_TID) == tid)
			return s;
	}
	fprintf(stderr, "test_hostile_prog: no writer slot of this thread\n");
	exit(2);
}

static void damage(char *b, const char *way)
{
	uint32_t np = pl_u32(b, PL_NPAGES);
	if (strcmp(way, "geometry") == 0) {
		pl_set_u32(b, PL_NPAGES, np ^ 0x100000u);
		pl_set_u32(b, PL_MAX_WRITERS, pl_u32(b, PL_MAX_WRITERS) ^ 0x80u); /* 128 -> 0 */
		pl_set_u32(b, PL_QCAP, pl_u32(b, PL_QCAP) ^ (1u << 24));
		pl_set_u64(b, PL_OFF_PAGES, pl_u64(b, PL_OFF_PAGES) ^ (1ull << 33));
	} else if (strcmp(way, "queue_index") == 0) {
		uint64_t enq = pl_u64(b, PL_ENQ_POS);
		pl_set_u32(b, pl_cell(b, enq) + 8, np + 1000);
		pl_set_u64(b, pl_cell(b, enq), enq + 1);
		pl_set_u64(b, PL_ENQ_POS, enq + 1);
	} else if (strcmp(way, "slot_index") == 0) {
		trace_hostile_ev(0, n_events); /* a page again, named by the slot */
		pl_set_u32(b, my_slot(b) + PL_SLOT_CUR_PAGE, np + 5);
	} else if (strcmp(way, "seq_ahead") == 0) {
		uint64_t enq = pl_u64(b, PL_ENQ_POS);
		pl_set_u64(b, pl_cell(b, enq), enq + 5);
	} else if (strcmp(way, "page_header") == 0) {
		trace_hostile_ev(0, n_events); /* a page again, named by the slot */
		uint32_t page = pl_u32(b, my_slot(b) + PL_SLOT_CUR_PAGE);
		if (page >= np) {
			fprintf(stderr, "test_hostile_prog: no current page\n");
			exit(2);
		}
		memset(b + pl_page(b, page), 0xA5, 48); /* magic, stream, timestamps, sizes */
	} else {
		fprintf(stderr, "test_hostile_prog: unknown way %s\n", way);
		exit(2);
	}
}

static int damage_by_name(const char *shm, const char *way)
{
	int fd = shm_open(shm, O_RDWR | O_CLOEXEC, 0);
	size_t size;
	char *b = fd >= 0 ? pl_map(fd, &size) : NULL;
	if (!b) {
		fprintf(stderr, "test_hostile_prog: cannot map %s\n", shm);
		return 2;
	}
	damage(b, way);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--damage") == 0)
		return damage_by_name(argv[2], argv[3]);
	if (argc != 3) {
		fprintf(stderr, "usage: test_hostile_prog WAY N\n");
		return 2;
	}
	n_events = strtoul(argv[2], NULL, 10);
	for (unsigned long i = 0; i < n_events; i++)
		trace_hostile_ev(0, i);
	wait_read();
	/* The recorder's pool, mapped a second time (as a wild pointer sees it). */
	size_t size;
	char *b = pl_map(ringtrace_rb_fd(ringtrace_session_buffer()), &size);
	if (!b) {
		fprintf(stderr, "test_hostile_prog: cannot map the pool\n");
		return 2;
	}
	damage(b, argv[1]);
	sleep_ms(300); /* the recorder's flush (every 100 ms) looks at the pool */
	pthread_t t;
	if (pthread_create(&t, NULL, phase1_thread, NULL) != 0)
		return 2;
	for (unsigned long i = 0; i < n_events; i++)
		trace_hostile_ev(1, i);
	pthread_join(t, NULL);
	printf("test_hostile_prog: %s: done\n", argv[1]);
	return 0;
}
