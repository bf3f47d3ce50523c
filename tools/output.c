/* Escaping text from a trace for the terminal (output.h). */
#include "output.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define OUT_NBUF 8
#define OUT_MAX_IN 4096

static char *bufs[OUT_NBUF];
static unsigned turn;

static void out_free(void)
{
	for (unsigned i = 0; i < OUT_NBUF; i++) {
		free(bufs[i]);
		bufs[i] = NULL;
	}
}

const char *out_esc(const char *s)
{
	static const char hex[] = "0123456789abcdef";
	static int registered;
	if (!s)
		return "";
	size_t n = strnlen(s, OUT_MAX_IN + 1), i;
	for (i = 0; i < n; i++) {
		unsigned char b = (unsigned char)s[i];
		if (b < 0x20 || b == 0x7f || b == 0xc2)
			break;
	}
	if (i == n && n <= OUT_MAX_IN)
		return s; /* nothing to escape: the text itself */
	if (!registered) {
		registered = 1;
		atexit(out_free);
	}
	char **slot = &bufs[turn++ % OUT_NBUF];
	if (!*slot && !(*slot = malloc(OUT_MAX_IN * 4 + 4)))
		return "(out of memory)";
	char *o = *slot;
	size_t m = n > OUT_MAX_IN ? OUT_MAX_IN : n;
	for (i = 0; i < m; i++) {
		unsigned char b = (unsigned char)s[i];
		unsigned char b2 = i + 1 < m ? (unsigned char)s[i + 1] : 0;
		int c1 = b == 0xc2 && b2 >= 0x80 && b2 <= 0x9f;
		if (b < 0x20 || b == 0x7f || c1) {
			for (int k = 0; k <= c1; k++) {
				unsigned char v = k ? b2 : b;
				*o++ = '\\';
				*o++ = 'x';
				*o++ = hex[v >> 4];
				*o++ = hex[v & 15];
			}
			i += (size_t)c1;
		} else {
			*o++ = (char)b;
		}
	}
	if (n > OUT_MAX_IN) {
		memcpy(o, "...", 3);
		o += 3;
	}
	*o = 0;
	return *slot;
}

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
			s->id, s->tid, out_esc(s->comm), s->events, s->dropped, s->overrun,
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
