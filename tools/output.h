/*
 * Text from a trace on the terminal: names, thread names, formats and
 * file names come from a trace's metadata or page headers, which anyone
 * can write, and a control byte in them (an ESC sequence, a newline) would
 * reach the terminal or forge a line of output. out_esc() gives the text
 * with each such byte as \xNN (C0 controls, DEL, and the C1 controls in
 * their UTF-8 form, 0xc2 0x80..0x9f; other UTF-8 as it is), the same
 * rule as `ringtrace report` (ringtrace_trace_format_line).
 */
#ifndef RINGTRACE_TOOLS_OUTPUT_H
#define RINGTRACE_TOOLS_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "ringtrace/trace.h"

/*
 * s escaped, in one of eight buffers used in turn (so up to eight may
 * appear in one printf); "" for NULL; cut at 4096 bytes of input with
 * "..." after it. Not thread-safe: the command prints from one thread.
 */
const char *out_esc(const char *s);

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
	uint64_t first_ts, last_ts; /* ticks (first_ts UINT64_MAX: no event) */
};
/* Every record of t read (and dropped); the damage reported as t's callback does. */
void out_read_all(ringtrace_trace *t);
/* The sums over t's streams. */
void out_totals(const ringtrace_trace *t, struct out_totals *sum);
/*
 * The table, one line per stream and a total line: stream, tid, thread,
 * events, dropped, overrun, bytes, time span (seconds of CLOCK_MONOTONIC).
 */
void out_stream_table(FILE *f, const ringtrace_trace *t);

#endif
