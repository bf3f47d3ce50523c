/*
 * cmp-ringtrace: trace_cmp_int(v), recorded by ringtrace's in-process
 * recorder (ringtrace_session_start), as a program traced with
 * `ringtrace record` or RINGTRACE_OUTPUT is.
 *
 * Enabled: a session writing a CTF trace to --dir (tmpfs), mode --mode,
 * pool --buffer bytes (64 KiB pages, the default). Its consumer thread is
 * created before this thread pins itself to --cpu, so it runs on the CPU
 * mask bench/compare started the program with (the other CPU). In
 * discard mode it appends pages to the stream files while the loop runs;
 * in overwrite mode (flight recorder) it writes the last buffer's worth at
 * stop. --off: no session, the event is disabled (its call site is one
 * load and a predicted branch).
 *
 * CMP_ATTACHED=1 in the environment (bench/attach_paired.sh): no session of
 * its own; the program waits (up to 30 s) until `ringtrace record -p`
 * attaches to it, then runs as usual, and the attached session is stopped
 * by the program's exit. For the cost of the write path under a session
 * started by attaching against one started in-process. Counts are then
 * the recorder's, not reported here.
 *
 * CMP_RECORDED=1 in the environment (bench/compare's part "kernel"): run
 * as `ringtrace record [-k SPEC] -- cmp-ringtrace ...`: no session of its
 * own; the one the library started from record's environment
 * (RINGTRACE_OUTPUT, before main) records the events, and stops at exit.
 * Counts are then the recorder's (the script reads them with `ringtrace
 * stat`): recorded and lost are reported as unknown (-1), expected as
 * usual.
 *
 * Counts: the recorder's own accounting, written in the trace's metadata
 * at stop (stat hit / missed / overrun), gives recorded and lost here; the
 * script also counts the events in the trace with babeltrace2.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/session.h>

#include "cmp.h"
#include "cmp_rt_events.h"

static const char backend_name[] = "ringtrace";

static inline void cmp_emit(int v)
{
	trace_cmp_int(v);
}

static int attached, recorded;

static int backend_init(struct cmp_opts *o)
{
	if (o->off)
		return 0;
	const char *rec = getenv("CMP_RECORDED");
	if (rec && strcmp(rec, "1") == 0) {
		recorded = 1;
		if (!ringtrace_session_buffer())
			cmp_die("CMP_RECORDED: no session from the environment (run it under "
				"`ringtrace record -- CMD`)");
		return 0;
	}
	const char *a = getenv("CMP_ATTACHED");
	if (a && strcmp(a, "1") == 0) {
		attached = 1;
		printf("WAITING for ringtrace record -p %d\n", (int)getpid());
		fflush(stdout);
		struct timespec ms = {0, 1000 * 1000};
		for (int i = 0; i < 30000 && !ringtrace_session_buffer(); i++)
			nanosleep(&ms, NULL);
		if (!ringtrace_session_buffer())
			cmp_die("CMP_ATTACHED: nobody attached within 30 s");
		return 0;
	}
	if (!o->dir)
		cmp_die("cmp-ringtrace needs --dir");
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = o->dir;
	cfg.events = "cmp_int";
	cfg.mode = o->overwrite ? RINGTRACE_RB_OVERWRITE : RINGTRACE_RB_DISCARD;
	cfg.pool_size = (size_t)o->buffer;
	if (ringtrace_session_start(&cfg) < 0)
		cmp_die("ringtrace_session_start: %s", ringtrace_last_error());
	return 0;
}

CMP_NO_READY

static void backend_finish(struct cmp_opts *o, struct cmp_result *r)
{
	if (o->off || attached) {
		cmp_result_none(r);
		return;
	}
	if (recorded) {
		/* the environment's session stops at exit (atexit) and writes
		 * its counts into the trace; the script reads them there */
		snprintf(r->note, sizeof(r->note), "recorded by ringtrace record's session");
		return;
	}
	if (ringtrace_session_stop() < 0)
		cmp_die("ringtrace_session_stop: %s", ringtrace_last_error());
	unsigned long long hit, missed, overrun;
	cmp_ringtrace_stats(o->dir, &hit, &missed, &overrun);
	/* hit: committed; overrun: overwritten (flight recorder) pages' events;
	 * missed: dropped because the buffer was full. */
	r->recorded = (int64_t)(hit - overrun);
	r->lost = (int64_t)missed;
	snprintf(r->note, sizeof(r->note), "hit=%llu missed=%llu overrun=%llu", hit, missed,
		 overrun);
}

#include "cmp_harness.h"
