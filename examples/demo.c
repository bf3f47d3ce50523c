/*
 * ringtrace-demo: a small multi-threaded program instrumented with events
 * of every field type. It records itself into a ring buffer, reads the
 * buffer back with a consumer thread, and prints the head of the trace in
 * the ftrace text shape, per-thread counts and the buffer's accounting,
 * and checks that no demo_tick was lost or duplicated.
 *
 *   ringtrace-demo [--seconds S] [--threads N] [--lines L]
 *
 * Run under `ringtrace record` (or with RINGTRACE_OUTPUT set) it is just an
 * instrumented program: the recorder writes its events to a trace
 * directory, and `ringtrace stat` / `ringtrace report` read it.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RINGTRACE_CREATE_EVENTS
#include "demo_events.h"
#include <ringtrace/session.h>

#define MAX_THREADS 16

static ringtrace_rb *rb;
static int stop_workers, stop_reader; /* read and written with __atomic builtins */
static double run_seconds = 1.0;
static int nthreads = 4, nlines = 20;

struct tstat {
	uint64_t tid, ticks, next_seq, gaps, bad;
	char comm[16];
};
static struct tstat tstats[256];
static int ntstats;
static uint64_t total_events, printed;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *worker(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	char name[16];
	snprintf(name, sizeof(name), "worker-%u", id);
	pthread_setname_np(pthread_self(), name);
	uint64_t seq = 0, digest = 1469598103934665603ull;
	int32_t hist[4] = {0, 0, 0, 0};
	uint8_t buf[64];
	uint64_t end = now_ns() + (uint64_t)(run_seconds * 1e9);
	while (!__atomic_load_n(&stop_workers, __ATOMIC_RELAXED) && now_ns() < end) {
		int op = (int)(seq % 3);
		char item[32];
		snprintf(item, sizeof(item), "item-%u-%" PRIu64, id, seq);
		trace_demo_work_begin(op, item, (int16_t)(seq % 7 - 3));
		uint64_t t0 = now_ns();
		for (int k = 0; k < 200; k++) { /* the "work": FNV-1a over the item */
			for (const char *c = item; *c; c++)
				digest = (digest ^ (uint8_t)*c) * 1099511628211ull;
			buf[k % 64] = (uint8_t)digest;
		}
		hist[digest & 3]++;
		double ms = (double)(now_ns() - t0) / 1e6;
		trace_demo_work_end(op, digest, ms, (digest & 1) == 0, buf, 8, hist, &hist);
		trace_demo_tick(seq, id);
		if (seq % 1000 == 0)
			ringtrace_printf("worker %u passed %llu items, last digest %llx", id,
					 (unsigned long long)seq, (unsigned long long)digest);
		seq++;
	}
	if (rb)
		ringtrace_rb_writer_release(rb);
	return NULL;
}

static struct tstat *stat_for(uint64_t tid, const char *comm)
{
	for (int i = 0; i < ntstats; i++)
		if (tstats[i].tid == tid)
			return &tstats[i];
	if (ntstats == 256)
		return NULL;
	struct tstat *t = &tstats[ntstats++];
	t->tid = tid;
	memcpy(t->comm, comm, 16);
	t->comm[15] = 0;
	return t;
}

/* One ftrace-style line: comm-tid [cpu] seconds.micros: event: fields */
static void print_event(const struct ringtrace_page_header *p, const struct ringtrace_event *ev)
{
	char text[1024];
	const char *name = "?";
	struct ringtrace_event_info info;
	if (ev->id == RINGTRACE_EVENT_ID_PRINTF) {
		uint32_t site;
		memcpy(&site, ev->data, 4);
		const struct ringtrace_printf_site *s = ringtrace_printf_site_by_id(site);
		name = "ringtrace_printf";
		if (!s || ringtrace_printf_format(s->fmt, s->types, s->nargs, ev->data, ev->len,
						  text, sizeof(text)) < 0)
			snprintf(text, sizeof(text), "<%s>", ringtrace_last_error());
	} else if (ringtrace_event_by_id(ev->id, &info) == 0) {
		name = info.name;
		if (ringtrace_record_format(info.print_fmt, info.fields, info.nfields, ev->data,
					    ev->len, text, sizeof(text)) < 0)
			snprintf(text, sizeof(text), "<%s>", ringtrace_last_error());
	} else {
		snprintf(text, sizeof(text), "<unknown event id %u>", ev->id);
	}
	uint64_t ns = ringtrace_rb_ticks_to_ns(rb, ev->ts);
	printf("%16s-%-7u [%03u] %5" PRIu64 ".%06" PRIu64 ": %s: %s\n", p->comm, p->tid, p->cpu,
	       ns / UINT64_C(1000000000), (ns / 1000) % UINT64_C(1000000), name, text);
}

static void consume_page(const struct ringtrace_page_header *p)
{
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	struct tstat *ts = stat_for(p->tid, p->comm);
	ringtrace_page_cursor_init(&c, p);
	int r;
	while ((r = ringtrace_page_next(&c, &ev)) == 1) {
		total_events++;
		if (printed < (uint64_t)nlines) {
			print_event(p, &ev);
			printed++;
		}
		if (ts && ev.id == ringtrace_event_demo_tick.id) {
			uint64_t seq;
			memcpy(&seq, ev.data, 8);
			ts->ticks++;
			if (seq < ts->next_seq)
				ts->bad++;
			else
				ts->gaps += seq - ts->next_seq;
			ts->next_seq = seq + 1;
		}
	}
	if (r < 0)
		fprintf(stderr, "ringtrace-demo: damaged page: %s\n", ringtrace_last_error());
}

static void *reader(void *arg)
{
	(void)arg;
	for (;;) {
		const struct ringtrace_page_header *p = ringtrace_rb_get_page(rb);
		if (p) {
			consume_page(p);
			ringtrace_rb_put_page(rb, p);
			continue;
		}
		if (__atomic_load_n(&stop_reader, __ATOMIC_ACQUIRE)) {
			ringtrace_rb_flush(rb, 0);
			if (!(p = ringtrace_rb_get_page(rb)))
				break;
			consume_page(p);
			ringtrace_rb_put_page(rb, p);
			continue;
		}
		struct timespec d = {0, 1000000};
		nanosleep(&d, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			run_seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--lines") && i + 1 < argc)
			nlines = atoi(argv[++i]);
		else {
			fprintf(stderr,
				"usage: ringtrace-demo [--seconds S] [--threads N] [--lines L]\n");
			return !!strcmp(argv[i], "--help") * 2;
		}
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || run_seconds <= 0 || run_seconds > 60) {
		fprintf(stderr, "ringtrace-demo: --threads 1..%d, --seconds 0..60\n", MAX_THREADS);
		return 2;
	}
	pthread_t w[MAX_THREADS];
	if (ringtrace_session_buffer()) {
		/* Recorded by `ringtrace record`: just do the work. */
		for (int i = 0; i < nthreads; i++)
			pthread_create(&w[i], NULL, worker, (void *)(uintptr_t)i);
		for (int i = 0; i < nthreads; i++)
			pthread_join(w[i], NULL);
		printf("ringtrace-demo: %d workers ran %.1f s, recorded by the session\n", nthreads,
		       run_seconds);
		return 0;
	}
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.pool_size = 32u << 20;
	if (ringtrace_rb_create(&cfg, &rb) < 0) {
		fprintf(stderr, "ringtrace-demo: %s\n", ringtrace_last_error());
		return 1;
	}
	ringtrace_events_set_buffer(rb);
	if (ringtrace_events_configure("demo_*,ringtrace_printf") < 0) {
		fprintf(stderr, "ringtrace-demo: %s\n", ringtrace_last_error());
		return 1;
	}
	pthread_t rt;
	pthread_create(&rt, NULL, reader, NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&w[i], NULL, worker, (void *)(uintptr_t)i);
	for (int i = 0; i < nthreads; i++)
		pthread_join(w[i], NULL);
	__atomic_store_n(&stop_reader, 1, __ATOMIC_RELEASE);
	pthread_join(rt, NULL);
	ringtrace_events_set_buffer(NULL);

	struct ringtrace_rb_stats st;
	ringtrace_rb_get_stats(rb, &st);
	printf("\n%-16s %8s %10s %8s\n", "thread", "tid", "demo_tick", "lost");
	int bad = 0;
	for (int i = 0; i < ntstats; i++) {
		printf("%-16s %8" PRIu64 " %10" PRIu64 " %8" PRIu64 "%s\n", tstats[i].comm,
		       tstats[i].tid, tstats[i].ticks, tstats[i].gaps,
		       tstats[i].bad ? "  OUT OF ORDER" : "");
		bad |= tstats[i].bad != 0;
	}
	printf("\nevents read: %" PRIu64 "  hit: %" PRIu64 "  missed: %" PRIu64
	       "  overrun: %" PRIu64 "  entries: %" PRIu64 "  pages: %" PRIu64 " (%" PRIu64
	       " flushed)\n",
	       total_events, st.hit, st.missed, st.overrun, st.entries, st.pages_published,
	       st.pages_flushed);
	int ok = !bad && st.read == total_events && st.hit == st.read + st.overrun + st.entries;
	printf("accounting: %s\n",
	       ok ? "ok (hit = read + overrun + entries; every demo_tick gap is counted)"
		  : "MISMATCH");
	ringtrace_rb_destroy(rb);
	return ok ? 0 : 1;
}
