/*
 * ringtrace-soak-check: the accounting of one trace of bench/soak, from
 * the sequence numbers that ringtrace-soak-prog puts in its events.
 *
 *   ringtrace-soak-check [--counts FILE] [--head-counted] TRACE_DIR
 *
 * Per stream (one writing thread), in the order the trace gives them:
 * every event's seq (worker << 40 | n) must be its predecessor's + 1, or
 * the difference must be exactly the events the trace says were lost in
 * between (its "lost" records, dropped or overrun). What the trace cannot
 * explain is counted as unexplained: events missing without a count (a
 * gap larger than the lost count), events counted as lost that are not
 * missing (smaller), a worker's seq going backwards, another worker's
 * event in a thread's stream, damage the reader reports. The lost
 * records' sum must match the stream's counters too.
 *
 * --head-counted: the events before a stream's first one (n = 1 .. first
 * - 1) must be counted as lost before it (a trace that saw the thread
 * from its first event: `record -- CMD`, a flight recorder's snapshot).
 * --counts FILE (ringtrace-soak-prog's, with its "final" line): each
 * worker's emitted count must be its last seq + the lost counted after
 * it, so that emitted = in the trace + counted as lost, exactly; a worker
 * with no stream must have emitted nothing.
 *
 * Output: one line of key=value pairs (streams, events, lost, dropped,
 * overrun, tail_lost, unexplained, errors, first and last seq summed over
 * the streams, then last_W: worker W's last seq, for each worker in the
 * trace); then one "problem:" line per finding (at most 20).
 * Exit status 0 if nothing is unexplained, 1 otherwise, 2 on bad usage or
 * a trace that cannot be opened.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringtrace/ctf.h>
#include <ringtrace/trace.h>

#define MAX_STREAMS 4096
#define MAX_WORKERS 64
#define WORKER_SHIFT 40
#define SEQ_MASK ((UINT64_C(1) << WORKER_SHIFT) - 1)

struct stream_acc {
	int seen;        /* an event was read */
	uint64_t worker; /* of the first event */
	uint64_t first, last;
	uint64_t events;
	uint64_t head_lost; /* lost records before the first event */
	uint64_t pending;   /* lost records since the last event */
	uint64_t lost, dropped, overrun;
};

static struct stream_acc acc[MAX_STREAMS];
static uint64_t unexplained, problems, damage;

static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void problem(const char *fmt, ...)
{
	if (++problems > 20)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("problem: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
}

static void on_damage(void *arg, const char *msg)
{
	(void)arg;
	damage++;
	problem("damage: %s", msg);
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static void add_event(struct stream_acc *s, uint32_t si, uint64_t v)
{
	uint64_t w = v >> WORKER_SHIFT, n = v & SEQ_MASK;
	if (!s->seen) {
		s->seen = 1;
		s->worker = w;
		s->first = s->last = n;
		s->events = 1;
		s->head_lost = s->pending;
		s->pending = 0;
		return;
	}
	s->events++;
	if (w != s->worker) {
		unexplained++;
		problem("stream %u: worker %" PRIu64 "'s event in worker %" PRIu64 "'s stream", si,
			w, s->worker);
		return;
	}
	if (n <= s->last) {
		unexplained++;
		problem("stream %u: seq %" PRIu64 " after %" PRIu64, si, n, s->last);
		return;
	}
	uint64_t gap = n - s->last - 1;
	if (gap != s->pending) {
		unexplained += absdiff(gap, s->pending);
		problem("stream %u (worker %" PRIu64 "): %" PRIu64
			" events missing between seq %" PRIu64 " and %" PRIu64 ", %" PRIu64
			" counted as lost",
			si, w, gap, s->last, n, s->pending);
	}
	s->pending = 0;
	s->last = n;
}

/* The counts file: emitted[w] for each "worker W emitted N" line; -1 if it
 * cannot be read or has no "final" line. */
static int read_counts(const char *path, uint64_t emitted[MAX_WORKERS], int *nworkers)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[256];
	int final = 0;
	*nworkers = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned w;
		unsigned long long n;
		if (sscanf(line, "worker %u emitted %llu", &w, &n) == 2 && w < MAX_WORKERS) {
			emitted[w] = n;
			if ((int)w + 1 > *nworkers)
				*nworkers = (int)w + 1;
		} else if (!strncmp(line, "final 1", 7)) {
			final = 1;
		}
	}
	fclose(f);
	return final ? 0 : -1;
}

/* --counts: emitted = last seq + lost after it, per worker. */
static void check_emitted(const char *counts, uint32_t nstreams)
{
	uint64_t emitted[MAX_WORKERS] = {0};
	int nworkers = 0, found[MAX_WORKERS] = {0};
	if (read_counts(counts, emitted, &nworkers) < 0) {
		unexplained++;
		problem("%s: no final counts", counts);
		return;
	}
	for (uint32_t i = 0; i < nstreams; i++) {
		const struct stream_acc *s = &acc[i];
		if (!s->seen)
			continue;
		if (s->worker >= (uint64_t)nworkers || found[s->worker]++) {
			unexplained++;
			problem("stream %u: worker %" PRIu64 " unknown or in two streams", i,
				s->worker);
			continue;
		}
		uint64_t want = emitted[s->worker];
		if (s->last + s->pending != want) {
			unexplained += absdiff(s->last + s->pending, want);
			problem("worker %" PRIu64 ": emitted %" PRIu64 ", last seq %" PRIu64
				" + %" PRIu64 " lost after it",
				s->worker, want, s->last, s->pending);
		}
	}
	for (int w = 0; w < nworkers; w++)
		if (!found[w] && emitted[w]) {
			unexplained += emitted[w];
			problem("worker %d: emitted %" PRIu64 ", no stream in the trace", w,
				emitted[w]);
		}
}

int main(int argc, char **argv)
{
	const char *counts = NULL, *dir = NULL;
	int head_counted = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--counts") && i + 1 < argc)
			counts = argv[++i];
		else if (!strcmp(argv[i], "--head-counted"))
			head_counted = 1;
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else
			dir = NULL, i = argc;
	}
	if (!dir) {
		fprintf(stderr, "usage: ringtrace-soak-check [--counts FILE] [--head-counted] "
				"TRACE_DIR\n");
		return 2;
	}
	ringtrace_trace *t;
	if (ringtrace_trace_open(dir, on_damage, NULL, &t) < 0) {
		fprintf(stderr, "ringtrace-soak-check: %s\n", ringtrace_trace_open_error());
		return 2;
	}
	struct ringtrace_trace_record r;
	uint64_t others = 0;
	while (ringtrace_trace_next(t, &r) == 1) {
		if (r.stream_index >= MAX_STREAMS) {
			others++;
			continue;
		}
		struct stream_acc *s = &acc[r.stream_index];
		if (r.kind == RINGTRACE_TRACE_LOST) {
			s->pending += r.lost;
			s->lost += r.lost;
			s->dropped += r.dropped;
			s->overrun += r.overrun;
			continue;
		}
		uint64_t v;
		if (r.len < sizeof(v) || !r.def || strcmp(r.def->name, "soak_seq")) {
			others++;
			continue;
		}
		memcpy(&v, r.data, sizeof(v));
		add_event(s, r.stream_index, v);
	}
	uint32_t nstreams = ringtrace_trace_stream_count(t);
	if (nstreams > MAX_STREAMS)
		nstreams = MAX_STREAMS;
	uint64_t events = 0, lost = 0, dropped = 0, overrun = 0, tail = 0, firsts = 0, lasts = 0;
	for (uint32_t i = 0; i < nstreams; i++) {
		struct stream_acc *s = &acc[i];
		const struct ringtrace_trace_stream_info *si = ringtrace_trace_stream(t, i);
		if (si->dropped != s->dropped || si->overrun != s->overrun) {
			unexplained += absdiff(si->dropped + si->overrun, s->lost);
			problem("stream %u: counters dropped %" PRIu64 " overrun %" PRIu64
				", lost records %" PRIu64 " + %" PRIu64,
				i, si->dropped, si->overrun, s->dropped, s->overrun);
		}
		if (head_counted && s->seen && s->head_lost != s->first - 1) {
			unexplained += absdiff(s->head_lost, s->first - 1);
			problem("stream %u (worker %" PRIu64 "): first seq %" PRIu64 ", %" PRIu64
				" counted as lost before it",
				i, s->worker, s->first, s->head_lost);
		}
		events += s->events;
		lost += s->lost;
		dropped += s->dropped;
		overrun += s->overrun;
		tail += s->pending;
		if (s->seen) {
			firsts += s->first;
			lasts += s->last;
		}
	}
	if (counts)
		check_emitted(counts, nstreams);
	unexplained += damage;
	printf("streams=%u events=%" PRIu64 " lost=%" PRIu64 " dropped=%" PRIu64 " overrun=%" PRIu64
	       " tail_lost=%" PRIu64 " first_sum=%" PRIu64 " last_sum=%" PRIu64 " other=%" PRIu64
	       " errors=%" PRIu64 " unexplained=%" PRIu64,
	       nstreams, events, lost, dropped, overrun, tail, firsts, lasts, others, damage,
	       unexplained);
	for (uint32_t i = 0; i < nstreams; i++)
		if (acc[i].seen)
			printf(" last_%" PRIu64 "=%" PRIu64, acc[i].worker, acc[i].last);
	printf("\n");
	ringtrace_trace_close(t);
	return unexplained ? 1 : 0;
}
