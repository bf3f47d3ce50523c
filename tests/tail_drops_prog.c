/*
 * test_tail_drops_prog: a writer whose last events are dropped after its
 * last page (tests/test_cli.sh), for `ringtrace record` with a small
 * buffer in discard mode: it emits td_ev(seq) as fast as it can, so that
 * the pool fills before the recorder drains it, and stops on an event its
 * buffer refused once it has seen at least MIN such refusals. The events
 * dropped since its last page are then reported by no page header: only
 * the metadata's `dropped` line says them.
 *
 *   test_tail_drops_prog [MIN]     (default 100)
 *
 * Exit status: 0; 2 on a usage error or when not recorded (no session);
 * 3 if the pool never filled within a bound of events.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/ring.h>
#include <ringtrace/session.h>
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(td_ev, RINGTRACE_PROTO(uint64_t seq), RINGTRACE_ARGS(seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("seq=%llu"))

#define TD_MAX_EVENTS 100000000ull

/* This thread's refused events so far (its writer's `missed`), or -1. */
static int64_t my_missed(ringtrace_rb *rb, uint32_t tid)
{
	struct ringtrace_rb_writer_stats ws[64];
	int n = ringtrace_rb_get_writer_stats(rb, ws, 64);
	for (int i = 0; i < n && i < 64; i++)
		if (ws[i].tid == tid)
			return (int64_t)ws[i].missed;
	return -1;
}

int main(int argc, char **argv)
{
	char *end = NULL;
	unsigned long min = argc == 2 ? strtoul(argv[1], &end, 10) : 100;
	if (argc > 2 || (end && *end) || min == 0) {
		fprintf(stderr, "usage: test_tail_drops_prog [MIN]\n");
		return 2;
	}
	ringtrace_rb *rb = ringtrace_session_buffer();
	if (!rb) {
		fprintf(stderr,
			"test_tail_drops_prog: not recorded (run it under ringtrace record)\n");
		return 2;
	}
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	int64_t before = 0;
	for (uint64_t seq = 0; seq < TD_MAX_EVENTS; seq++) {
		trace_td_ev(seq);
		int64_t now = my_missed(rb, tid);
		/* (this event was refused: the last one, if enough were) */
		if (now > before && (uint64_t)now >= min)
			return 0;
		before = now;
	}
	fprintf(stderr, "test_tail_drops_prog: the pool never filled in %llu events\n",
		TD_MAX_EVENTS);
	return 3;
}
