/* What the command prints from a trace, shared by its verbs. */
#ifndef RINGTRACE_TOOLS_OUTPUT_H
#define RINGTRACE_TOOLS_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "ringtrace/trace.h"

/*
 * The reader's per-stream accounting of a trace (ringtrace_trace_stream:
 * events, dropped, overrun, bytes), which `ringtrace stat` prints and
 * `ringtrace record` sums up at its end, so that the two say the same.
 * Its counters grow as the trace is read: read it to its end first
 * (out_read_all).
 */
struct out_totals {
	uint32_t streams;
	uint64_t events, dropped, overrun, bytes;
	uint64_t unwritten;         /* events the recorder could not write (the disk full) */
	uint64_t first_ts, last_ts; /* ticks (first_ts UINT64_MAX: no event) */
};
/* Every record of t read (and dropped); the damage reported as t's callback does. */
void out_read_all(ringtrace_trace *t);
/* The sums over t's streams. */
void out_totals(const ringtrace_trace *t, struct out_totals *sum);
/*
 * The table, one line per stream and a total line: stream, tid, thread,
 * events, dropped, overrun, (unwritten, if any stream has some,) bytes,
 * time span (seconds of CLOCK_MONOTONIC); then, if events were not
 * written, one line per reason: how many and why.
 */
void out_stream_table(FILE *f, const ringtrace_trace *t);

/* A trace's damage as reading finds it (a ringtrace_trace_error_fn):
 * "ringtrace: MESSAGE" on stderr, escaped, after what stdout holds. */
void out_on_error(void *arg, const char *msg);
/* Say how much damage reading t found (the messages came on the way):
 * 1 if any, else 0. */
int out_trace_errors(const ringtrace_trace *t, const char *dir);

#endif
