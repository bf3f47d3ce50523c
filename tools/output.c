/* The reader's per-stream accounting as the command prints it (output.h). */
#include "output.h"

#include <inttypes.h>
#include <string.h>

#include "base/base.h"

void out_read_all(ringtrace_trace *t)
{
	struct ringtrace_trace_record r;
	while (ringtrace_trace_next(t, &r) == 1)
		;
}

void out_totals(const ringtrace_trace *t, struct out_totals *sum)
{
	memset(sum, 0, sizeof(*sum));
	sum->first_ts = UINT64_MAX;
	sum->streams = ringtrace_trace_stream_count(t);
	for (uint32_t i = 0; i < sum->streams; i++) {
		const struct ringtrace_trace_stream_info *s = ringtrace_trace_stream(t, i);
		sum->events += s->events;
		sum->dropped += s->dropped;
		sum->overrun += s->overrun;
		sum->bytes += s->bytes;
		if (s->events && s->first_ts < sum->first_ts)
			sum->first_ts = s->first_ts;
		if (s->events && s->last_ts > sum->last_ts)
			sum->last_ts = s->last_ts;
	}
}

static void out_span(FILE *f, const ringtrace_trace *t, uint64_t a, uint64_t b)
{
	uint64_t na = ringtrace_trace_ticks_to_ns(t, a), nb = ringtrace_trace_ticks_to_ns(t, b);
	fprintf(f, " %" PRIu64 ".%06" PRIu64 " .. %" PRIu64 ".%06" PRIu64 " (%.6f s)",
		na / 1000000000, na % 1000000000 / 1000, nb / 1000000000, nb % 1000000000 / 1000,
		(double)(nb - na) / 1e9);
}

void out_stream_table(FILE *f, const ringtrace_trace *t)
{
	struct out_totals sum;
	out_totals(t, &sum);
	fprintf(f, "%-10s %-8s %-16s %12s %10s %10s %12s  %s\n", "stream", "tid", "comm", "events",
		"dropped", "overrun", "bytes", "time span");
	for (uint32_t i = 0; i < sum.streams; i++) {
		const struct ringtrace_trace_stream_info *s = ringtrace_trace_stream(t, i);
		fprintf(f,
			"%-10" PRIu64 " %-8u %-16s %12" PRIu64 " %10" PRIu64 " %10" PRIu64
			" %12" PRIu64 " ",
			s->id, s->tid, rt_esc(s->comm), s->events, s->dropped, s->overrun,
			s->bytes);
		if (s->events)
			out_span(f, t, s->first_ts, s->last_ts);
		if (s->errors)
			fprintf(f, " [%" PRIu64 " errors]", s->errors);
		fputc('\n', f);
	}
	fprintf(f, "%-10s %-8s %-16u %12" PRIu64 " %10" PRIu64 " %10" PRIu64 " %12" PRIu64 " ",
		"total", "", sum.streams, sum.events, sum.dropped, sum.overrun, sum.bytes);
	if (sum.events)
		out_span(f, t, sum.first_ts, sum.last_ts);
	fputc('\n', f);
}

void out_on_error(void *arg, const char *msg)
{
	(void)arg;
	fflush(stdout);
	fprintf(stderr, "ringtrace: %s\n", rt_esc(msg));
}

int out_trace_errors(const ringtrace_trace *t, const char *dir)
{
	uint64_t n = ringtrace_trace_errors(t);
	if (n)
		fprintf(stderr, "ringtrace: %s: %" PRIu64 " error%s found in the trace\n", dir, n,
			n == 1 ? "" : "s");
	return n != 0;
}
