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
		sum->unwritten += s->unwritten;
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

/* What an error name that stops a recorder writing means, for the user. */
static const char *out_reason_text(const char *name)
{
	static const struct {
		const char *name, *text;
	} known[] = {
		{"ENOSPC", "no space left on device"}, {"EDQUOT", "disk quota exceeded"},
		{"EIO", "input/output error"},         {"EFBIG", "file too large"},
		{"EROFS", "read-only file system"},    {"EACCES", "permission denied"},
		{"EMFILE", "too many open files"},     {"ENFILE", "too many open files in system"},
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(known[i].name, name) == 0)
			return known[i].text;
	return "a write error";
}

/* "unwritten: N events in P pages (ENOSPC: no space left on device)", once
 * per reason. */
static void out_unwritten(FILE *f, const ringtrace_trace *t, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct ringtrace_trace_stream_info *s = ringtrace_trace_stream(t, i);
		const char *r = s->unwritten_reason;
		if (!r)
			continue;
		uint32_t k = 0;
		while (k < i && !(ringtrace_trace_stream(t, k)->unwritten_reason &&
				  strcmp(ringtrace_trace_stream(t, k)->unwritten_reason, r) == 0))
			k++;
		if (k < i)
			continue; /* (told with the first stream of its reason) */
		uint64_t ev = 0, pg = 0, ns = 0;
		for (k = i; k < n; k++) {
			const struct ringtrace_trace_stream_info *o = ringtrace_trace_stream(t, k);
			if (o->unwritten_reason && strcmp(o->unwritten_reason, r) == 0) {
				ev += o->unwritten;
				pg += o->unwritten_pages;
				ns++;
			}
		}
		fprintf(f,
			"unwritten: %" PRIu64 " events in %" PRIu64 " pages of %" PRIu64
			" stream%s not written by the recorder: %s (%s); counted as lost\n",
			ev, pg, ns, ns == 1 ? "" : "s", rt_esc(r), out_reason_text(r));
	}
}

void out_stream_table(FILE *f, const ringtrace_trace *t)
{
	struct out_totals sum;
	out_totals(t, &sum);
	/* (the column only where the recorder could not write everything:
	 * the table as it always was otherwise) */
	int uw = 0;
	for (uint32_t i = 0; i < sum.streams; i++)
		uw |= ringtrace_trace_stream(t, i)->unwritten_reason != NULL;
	fprintf(f, "%-10s %-8s %-16s %12s %10s %10s ", "stream", "tid", "comm", "events", "dropped",
		"overrun");
	if (uw)
		fprintf(f, "%10s ", "unwritten");
	fprintf(f, "%12s  %s\n", "bytes", "time span");
	for (uint32_t i = 0; i < sum.streams; i++) {
		const struct ringtrace_trace_stream_info *s = ringtrace_trace_stream(t, i);
		fprintf(f, "%-10" PRIu64 " %-8u %-16s %12" PRIu64 " %10" PRIu64 " %10" PRIu64 " ",
			s->id, s->tid, rt_esc(s->comm), s->events, s->dropped, s->overrun);
		if (uw)
			fprintf(f, "%10" PRIu64 " ", s->unwritten);
		fprintf(f, "%12" PRIu64 " ", s->bytes);
		if (s->events)
			out_span(f, t, s->first_ts, s->last_ts);
		if (s->errors)
			fprintf(f, " [%" PRIu64 " errors]", s->errors);
		fputc('\n', f);
	}
	fprintf(f, "%-10s %-8s %-16u %12" PRIu64 " %10" PRIu64 " %10" PRIu64 " ", "total", "",
		sum.streams, sum.events, sum.dropped, sum.overrun);
	if (uw)
		fprintf(f, "%10" PRIu64 " ", sum.unwritten);
	fprintf(f, "%12" PRIu64 " ", sum.bytes);
	if (sum.events)
		out_span(f, t, sum.first_ts, sum.last_ts);
	fputc('\n', f);
	if (uw)
		out_unwritten(f, t, sum.streams);
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
