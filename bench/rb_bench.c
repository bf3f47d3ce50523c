/*
 * bench/rb_bench.c - `ringtrace-bench rb`: the ring buffer hammer.
 *
 * What it reproduces
 * ------------------
 * The Linux kernel's ring buffer benchmark (kernel/trace/ring_buffer_benchmark.c,
 * Steven Rostedt, 2009), moved to user space and to ringtrace's API:
 *
 *  - A producer hammers the buffer for --seconds (default 10) with 10-byte
 *    events: reserve 10 bytes, store an int into them, commit. A failed
 *    reserve counts as "missed", a commit as "hit". As in the kernel module
 *    (write_iteration = 50, do_gettimeofday), the clock is read only once
 *    every 50 writes to keep it off the hot path.
 *  - An "aggressive" consumer runs at the same time on another CPU, in a
 *    tight loop: by pages (the kernel's splice path: get_page, walk the
 *    events, put_page) or by events (the kernel's ring_buffer_consume path:
 *    ringtrace_rb_reader_next), or is disabled (disable_reader=1).
 *  - At the end the producers stop, the reader flushes the writers' partly
 *    filled pages and drains what is left, and the buffer's statistics are
 *    printed in the kernel module's shape:
 *
 *        Time: 9965321 (usecs)
 *        Overruns: 0
 *        Read: 76580325 (by pages)
 *        Entries: 75
 *        Total: 76580400           (entries + overruns + read)
 *        Missed: 0
 *        Hit: 76580400
 *        Entries per millisec: 7684
 *        130 ns per entry
 *
 *    (numbers from Steven Rostedt's 2010 run on lkml.) The kernel's buffer
 *    was in overwrite mode; here --mode picks discard (default) or
 *    overwrite (the default with --reader none).
 *
 * Additions over the kernel module
 * --------------------------------
 *  - "Producers:" and "Mode:" lines before "Time:". With K producers the
 *    "ns per entry" is the per-thread cost: the sum of the producers' busy
 *    times divided by the total hits (= time * K / hit). "Entries per
 *    millisec" is the total rate (all producers).
 *  - "cheapest event": a floor for any tracer, measured on the producer's
 *    CPU before and after the hammer: per iteration one timestamp read
 *    (rdtsc on x86, else clock_gettime), one 16-byte store (timestamp +
 *    payload) into a 64 KiB wrapping buffer and a release store of the new
 *    position. "ratio to cheapest" = ns per entry / cheapest.
 *  - Checks. The reader validates every event it decodes (id, length,
 *    payload = the index of the producer whose thread wrote it, the page's
 *    event count); the number it decoded must equal stats.read; and the
 *    buffer's accounting must hold:
 *        stats.hit + stats.missed == writes attempted,
 *        stats.hit == hits seen by the producers (same for missed),
 *        stats.hit == read + overrun + entries.
 *    Any failure prints a "WARNING: ..." line (or "Accounting: MISMATCH")
 *    and the command exits 1.
 *  - --runs R repeats the whole measurement (a fresh buffer each time) and
 *    ends with the medians of "ns per entry" and "ratio to cheapest".
 *
 * Notes on reading the numbers: in discard mode without a reader the pool
 * fills within milliseconds and every later write is a miss, so "ns per
 * entry" (time / hits, as in the kernel) is then dominated by the cost of
 * misses and is not the cost of a write; use --mode overwrite or a reader
 * to measure writes.
 *
 * Pinning: with a reader and at least two usable CPUs the reader gets the
 * last usable CPU and the producers are spread round-robin over the
 * others (on a 2-CPU machine: producers on CPU 0, reader on CPU 1);
 * without a reader the producers are spread over all usable CPUs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ringtrace/ring.h"

#include "bench.h"
#include "bench_common.h"

#define RB_WRITE_ITERATION 50 /* writes between clock reads (kernel: write_iteration) */
#define RB_EVENT_ID 1u
#define RB_EVENT_LEN 10u /* kernel: ring_buffer_lock_reserve(buffer, 10) */

#define RB_MAX_PRODUCERS 4096u
#define RB_MAX_RUNS 1000u
#define RB_MAX_SECONDS 86400.0

enum reader_kind { READER_NONE, READER_PAGE, READER_EVENT };

struct rb_opts {
	double seconds;
	enum reader_kind reader;
	enum ringtrace_rb_mode mode;
	unsigned producers;
	size_t page_size; /* 0: library default */
	size_t pool_size; /* 0: library default */
	unsigned runs;
};

struct rb_run;

struct producer {
	struct rb_run *run;
	pthread_t thread;
	unsigned index;
	int cpu;     /* -1: not pinned */
	int pin_err; /* errno of a failed pthread_setaffinity_np, else 0 */
	uint32_t tid;
	uint64_t attempts, hit, missed;
	uint64_t elapsed_ns;
} __attribute__((aligned(64)));

struct reader {
	struct rb_run *run;
	pthread_t thread;
	int cpu;
	int pin_err;
	ringtrace_rb_reader *iter; /* READER_EVENT */
	uint64_t read;             /* events decoded */
	uint64_t pages;
	uint64_t bad_events; /* wrong id, length, tid or payload */
	uint64_t bad_pages;  /* page check failed or count mismatch */
	int err;             /* first library error, 0 if none */
	char errmsg[256];
	char badmsg[256]; /* first validation failure */
	/* tid -> producer index cache */
	uint32_t last_tid;
	int last_idx;
} __attribute__((aligned(64)));

struct rb_run {
	const struct rb_opts *o;
	ringtrace_rb *rb;
	size_t page_size;
	uint64_t duration_ns;
	pthread_barrier_t start;
	int producers_done; /* atomic */
	struct producer *prod;
	struct reader reader;
};

struct run_result {
	double ns_per_entry; /* NAN if no hit */
	double ratio;        /* NAN if no hit */
	int failed;
};

/* ---- small helpers --------------------------------------------------------- */

static uint32_t my_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* ---- producer ------------------------------------------------------------ */

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	struct rb_run *run = p->run;
	ringtrace_rb *rb = run->rb;
	const int value = (int)p->index;
	uint64_t hit = 0, missed = 0, loops = 0;

	p->pin_err = bench_pin_self(p->cpu);
	p->tid = my_tid();
	pthread_barrier_wait(&run->start);

	const uint64_t start = bench_now_ns();
	const uint64_t deadline = start + run->duration_ns;
	uint64_t end;
	do {
		for (int i = 0; i < RB_WRITE_ITERATION; i++) {
			int *entry = ringtrace_rb_reserve(rb, RB_EVENT_ID, RB_EVENT_LEN);
			if (!entry) {
				missed++;
			} else {
				*entry = value;
				ringtrace_rb_commit(rb);
				hit++;
			}
		}
		loops++;
		end = bench_now_ns();
	} while (end < deadline);

	p->attempts = loops * RB_WRITE_ITERATION;
	p->hit = hit;
	p->missed = missed;
	p->elapsed_ns = end - start;
	/* Thread exit publishes the last page and frees the writer slot. */
	return NULL;
}

/* ---- reader -------------------------------------------------------------- */

static void reader_set_err(struct reader *r, int err, const char *what)
{
	if (r->err)
		return;
	r->err = err;
	const char *detail = ringtrace_last_error();
	snprintf(r->errmsg, sizeof(r->errmsg), "%s: %s%s%s", what, ringtrace_strerror(err),
		 detail && *detail ? ": " : "", detail ? detail : "");
}

static void reader_bad(struct reader *r, uint64_t *counter, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void reader_bad(struct reader *r, uint64_t *counter, const char *fmt, ...)
{
	if (!r->bad_events && !r->bad_pages) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(r->badmsg, sizeof(r->badmsg), fmt, ap);
		va_end(ap);
	}
	(*counter)++;
}

/* Producer index of a writer thread, or -1. */
static int producer_of_tid(struct reader *r, uint32_t tid)
{
	if (tid == r->last_tid && r->last_idx >= 0)
		return r->last_idx;
	const struct rb_run *run = r->run;
	for (unsigned i = 0; i < run->o->producers; i++) {
		if (run->prod[i].tid == tid) {
			r->last_tid = tid;
			r->last_idx = (int)i;
			return (int)i;
		}
	}
	return -1;
}

static inline void check_event(struct reader *r, const struct ringtrace_event *ev, int idx)
{
	if (__builtin_expect(ev->id != RB_EVENT_ID || ev->len != RB_EVENT_LEN, 0)) {
		reader_bad(r, &r->bad_events, "event at offset %u: id %u len %u (want %u/%u)",
			   ev->offset, ev->id, ev->len, RB_EVENT_ID, RB_EVENT_LEN);
		return;
	}
	int v;
	memcpy(&v, ev->data, sizeof(v));
	if (__builtin_expect(v != idx, 0))
		reader_bad(r, &r->bad_events,
			   "event at offset %u (tid %u): payload %d, want producer index %d",
			   ev->offset, ev->tid, v, idx);
}

static void read_one_page(struct reader *r, const struct ringtrace_page_header *pg)
{
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	uint32_t n = 0;
	int rc;

	rc = ringtrace_page_check(pg, r->run->page_size);
	if (rc < 0) {
		reader_set_err(r, rc, "ringtrace_page_check");
		reader_bad(r, &r->bad_pages, "page seq %" PRIu64 " failed ringtrace_page_check",
			   (uint64_t)pg->packet_seq_num);
	}
	int idx = producer_of_tid(r, pg->tid);
	if (idx < 0)
		reader_bad(r, &r->bad_pages, "page with tid %u, not a producer's", pg->tid);

	ringtrace_page_cursor_init(&c, pg);
	while ((rc = ringtrace_page_next(&c, &ev)) > 0) {
		n++;
		if (__builtin_expect(ev.tid != pg->tid, 0))
			reader_bad(r, &r->bad_events, "event tid %u in a page of tid %u", ev.tid,
				   pg->tid);
		check_event(r, &ev, idx);
	}
	if (rc < 0)
		reader_set_err(r, rc, "ringtrace_page_next");
	if (n != pg->events)
		reader_bad(r, &r->bad_pages,
			   "page seq %" PRIu64 ": decoded %u events, header says %u",
			   (uint64_t)pg->packet_seq_num, n, pg->events);
	r->read += n;
	r->pages++;
	ringtrace_rb_put_page(r->run->rb, pg);
}

static int drain_pages(struct reader *r)
{
	const struct ringtrace_page_header *pg;
	int got = 0;
	while ((pg = ringtrace_rb_get_page(r->run->rb)) != NULL) {
		read_one_page(r, pg);
		got++;
	}
	return got;
}

static void read_one_event(struct reader *r, const struct ringtrace_event *ev)
{
	r->read++;
	check_event(r, ev, producer_of_tid(r, ev->tid));
}

/* Returns the number of events read, stops at 0 or an error. */
static uint64_t drain_events(struct reader *r)
{
	struct ringtrace_event ev;
	uint64_t n = 0;
	int rc;
	while ((rc = ringtrace_rb_reader_next(r->iter, &ev)) > 0) {
		read_one_event(r, &ev);
		n++;
	}
	if (rc < 0)
		reader_set_err(r, rc, "ringtrace_rb_reader_next");
	return n;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct rb_run *run = r->run;
	ringtrace_rb *rb = run->rb;

	r->pin_err = bench_pin_self(r->cpu);
	r->last_idx = -1;
	pthread_barrier_wait(&run->start);

	/* The aggressive reader: spin as fast as possible. */
	if (run->o->reader == READER_PAGE) {
		while (!__atomic_load_n(&run->producers_done, __ATOMIC_ACQUIRE)) {
			const struct ringtrace_page_header *pg = ringtrace_rb_get_page(rb);
			if (pg)
				read_one_page(r, pg);
			else
				bench_cpu_relax();
		}
	} else {
		struct ringtrace_event ev;
		while (!__atomic_load_n(&run->producers_done, __ATOMIC_ACQUIRE)) {
			int rc = ringtrace_rb_reader_next(r->iter, &ev);
			if (rc > 0) {
				read_one_event(r, &ev);
			} else if (rc == 0) {
				bench_cpu_relax();
			} else {
				reader_set_err(r, rc, "ringtrace_rb_reader_next");
				break;
			}
		}
	}

	/*
	 * Producers are gone (their last pages were published at thread
	 * exit). Flush whatever is still held by writers and drain until a
	 * flush finds nothing more.
	 */
	for (int round = 0; round < 16; round++) {
		int f = ringtrace_rb_flush(rb, 0);
		if (f < 0) {
			reader_set_err(r, f, "ringtrace_rb_flush");
			f = 0;
		}
		uint64_t got = run->o->reader == READER_PAGE ? (uint64_t)drain_pages(r)
							     : drain_events(r);
		if (f == 0 && got == 0)
			break;
	}
	return NULL;
}

/* ---- CPU placement -------------------------------------------------------- */

struct placement {
	int *prod_cpu;  /* per producer, -1: not pinned */
	int reader_cpu; /* -1: not pinned */
};

static void place_threads(const struct rb_opts *o, struct placement *pl)
{
	cpu_set_t set;
	int cpus[CPU_SETSIZE];
	int n = 0;

	pl->reader_cpu = -1;
	for (unsigned i = 0; i < o->producers; i++)
		pl->prod_cpu[i] = -1;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	if (n == 0)
		return;
	int nprod = n;
	if (o->reader != READER_NONE && n >= 2) {
		pl->reader_cpu = cpus[n - 1];
		nprod = n - 1;
	}
	for (unsigned i = 0; i < o->producers; i++)
		pl->prod_cpu[i] = cpus[i % (unsigned)nprod];
}

/* ---- one measurement ------------------------------------------------------ */

static const char *mode_name(enum ringtrace_rb_mode m)
{
	return m == RINGTRACE_RB_OVERWRITE ? "overwrite" : "discard";
}

/* The buffer's configuration from the options: whole pages, enough writers. */
static void rb_config(struct ringtrace_rb_config *cfg, const struct rb_opts *o)
{
	ringtrace_rb_config_init(cfg);
	if (o->page_size)
		cfg->page_size = o->page_size;
	if (o->pool_size)
		cfg->pool_size = o->pool_size;
	else if (o->page_size && cfg->pool_size % o->page_size)
		cfg->pool_size = (cfg->pool_size / o->page_size + 1) * o->page_size;
	if (o->page_size && !o->pool_size && cfg->pool_size / o->page_size < RINGTRACE_RB_MIN_PAGES)
		cfg->pool_size = (size_t)RINGTRACE_RB_MIN_PAGES * o->page_size;
	if (cfg->max_writers < o->producers)
		cfg->max_writers = o->producers;
	cfg->mode = o->mode;
}

/* What the producers counted, added up. */
struct rb_sums {
	uint64_t attempts, hit, missed, busy_ns, max_ns;
};

/* Adds up the producers' counts; says which threads were not pinned. */
static void rb_sum_producers(const struct rb_run *run, int reader_started, struct rb_sums *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned i = 0; i < run->o->producers; i++) {
		const struct producer *p = &run->prod[i];
		sum->attempts += p->attempts;
		sum->hit += p->hit;
		sum->missed += p->missed;
		sum->busy_ns += p->elapsed_ns;
		if (p->elapsed_ns > sum->max_ns)
			sum->max_ns = p->elapsed_ns;
		if (p->pin_err)
			fprintf(stderr,
				"ringtrace-bench rb: note: producer %u not pinned to CPU %d: %s\n",
				i, p->cpu, strerror(p->pin_err));
	}
	if (reader_started && run->reader.pin_err)
		fprintf(stderr, "ringtrace-bench rb: note: reader not pinned to CPU %d: %s\n",
			run->reader.cpu, strerror(run->reader.pin_err));
}

/* The run's lines, in the shape of the kernel's ring buffer benchmark. */
static void rb_print_run(const struct rb_opts *o, unsigned run_no, const struct reader *r,
			 const struct ringtrace_rb_stats *st, const struct rb_sums *sum,
			 double cheapest, struct run_result *res)
{
	uint64_t time_us = sum->max_ns / 1000;
	uint64_t total = st->entries + st->overrun + st->read;

	if (o->runs > 1)
		printf("Run: %u/%u\n", run_no, o->runs);
	printf("Producers: %u\n", o->producers);
	printf("Mode: %s\n", mode_name(o->mode));
	printf("Time: %" PRIu64 " (usecs)\n", time_us);
	printf("Overruns: %" PRIu64 "\n", st->overrun);
	if (o->reader == READER_NONE)
		printf("Read: (reader disabled)\n");
	else
		printf("Read: %" PRIu64 " (by %s)\n", r->read,
		       o->reader == READER_PAGE ? "pages" : "events");
	printf("Entries: %" PRIu64 "\n", st->entries);
	printf("Total: %" PRIu64 "\n", total);
	printf("Missed: %" PRIu64 "\n", st->missed);
	printf("Hit: %" PRIu64 "\n", st->hit);
	if (time_us)
		printf("Entries per millisec: %" PRIu64 "\n", st->hit * 1000 / time_us);
	else
		printf("Entries per millisec: 0\nWARNING: time is zero\n");
	if (st->hit) {
		res->ns_per_entry = (double)sum->busy_ns / (double)st->hit;
		res->ratio = res->ns_per_entry / cheapest;
		printf("%" PRIu64 " ns per entry\n", (uint64_t)llround(res->ns_per_entry));
	} else {
		printf("WARNING: no event was committed (hit 0): no ns per entry\n");
	}
	printf("cheapest event: %.2f ns\n", cheapest);
	if (st->hit)
		printf("ratio to cheapest: %.2f\n", res->ratio);
}

/* The reader's and the buffer's accounting against the producers'; prints "Accounting". */
static void rb_check_run(const struct reader *r, const struct ringtrace_rb_stats *st,
			 const struct rb_sums *sum, struct run_result *res)
{
	uint64_t total = st->entries + st->overrun + st->read;

	if (r->read != st->read) {
		printf("WARNING: reader decoded %" PRIu64 " events but stats.read is %" PRIu64 "\n",
		       r->read, st->read);
		res->failed = 1;
	}
	if (r->err) {
		printf("WARNING: reader error: %s\n", r->errmsg);
		res->failed = 1;
	}
	if (r->bad_events || r->bad_pages) {
		printf("WARNING: %" PRIu64 " bad events, %" PRIu64 " bad pages; first: %s\n",
		       r->bad_events, r->bad_pages, r->badmsg);
		res->failed = 1;
	}
	if (st->writers_active != 0) {
		printf("WARNING: %u writers still active after every producer thread exited\n",
		       st->writers_active);
		res->failed = 1;
	}

	char mism[512];
	size_t ml = 0;
	mism[0] = 0;
#define MISMATCH(...)                                                                              \
	do {                                                                                       \
		if (ml < sizeof(mism))                                                             \
			ml += (size_t)snprintf(mism + ml, sizeof(mism) - ml, "%s", ml ? ";" : ""); \
		if (ml < sizeof(mism))                                                             \
			ml += (size_t)snprintf(mism + ml, sizeof(mism) - ml, __VA_ARGS__);         \
	} while (0)
	if (st->hit + st->missed != sum->attempts)
		MISMATCH(" hit+missed=%" PRIu64 " != written=%" PRIu64, st->hit + st->missed,
			 sum->attempts);
	if (st->hit != sum->hit)
		MISMATCH(" stats.hit=%" PRIu64 " != producers' hit=%" PRIu64, st->hit, sum->hit);
	if (st->missed != sum->missed)
		MISMATCH(" stats.missed=%" PRIu64 " != producers' missed=%" PRIu64, st->missed,
			 sum->missed);
	if (st->hit != total)
		MISMATCH(" hit=%" PRIu64 " != read+overrun+entries=%" PRIu64, st->hit, total);
#undef MISMATCH
	if (ml) {
		printf("Accounting: MISMATCH%s\n", mism);
		res->failed = 1;
	} else {
		printf("Accounting: ok\n");
	}
	fflush(stdout);
}

/* Returns 0, or BENCH_EXIT_FAIL / BENCH_EXIT_USAGE if the run could not be made. */
static int run_once(const struct rb_opts *o, unsigned run_no, struct run_result *res)
{
	struct ringtrace_rb_config cfg;
	struct rb_run run;
	struct placement pl;
	int rc, status = 0;
	unsigned nthreads = o->producers + (o->reader != READER_NONE ? 1 : 0);

	memset(&run, 0, sizeof(run));
	memset(res, 0, sizeof(*res));
	res->ns_per_entry = NAN;
	res->ratio = NAN;
	run.o = o;
	run.duration_ns = (uint64_t)llround(o->seconds * 1e9);
	if (run.duration_ns == 0)
		run.duration_ns = 1;

	rb_config(&cfg, o);

	rc = ringtrace_rb_create(&cfg, &run.rb);
	if (rc < 0) {
		fprintf(stderr, "ringtrace-bench rb: cannot create the ring buffer: %s: %s\n",
			ringtrace_strerror(rc), ringtrace_last_error());
		return rc == -RINGTRACE_EINVAL ? BENCH_EXIT_USAGE : BENCH_EXIT_FAIL;
	}
	run.page_size = ringtrace_rb_page_size(run.rb);

	run.prod = aligned_alloc(64, sizeof(*run.prod) * o->producers);
	pl.prod_cpu = calloc(o->producers, sizeof(int));
	if (!run.prod || !pl.prod_cpu) {
		fprintf(stderr, "ringtrace-bench rb: out of memory\n");
		free(run.prod);
		free(pl.prod_cpu);
		ringtrace_rb_destroy(run.rb);
		return BENCH_EXIT_FAIL;
	}
	memset(run.prod, 0, sizeof(*run.prod) * o->producers);
	place_threads(o, &pl);

	struct reader *r = &run.reader;
	r->run = &run;
	r->cpu = pl.reader_cpu;
	r->last_idx = -1;
	if (o->reader == READER_EVENT) {
		rc = ringtrace_rb_reader_open(run.rb, &r->iter);
		if (rc < 0) {
			fprintf(stderr, "ringtrace-bench rb: ringtrace_rb_reader_open: %s: %s\n",
				ringtrace_strerror(rc), ringtrace_last_error());
			free(run.prod);
			free(pl.prod_cpu);
			ringtrace_rb_destroy(run.rb);
			return BENCH_EXIT_FAIL;
		}
	}

	/* The floor, before the hammer, on the (first) producer's CPU. */
	double cheap_before = bench_measure_cheapest(pl.prod_cpu[0]);

	pthread_barrier_init(&run.start, NULL, nthreads);
	unsigned started = 0;
	int reader_started = 0;
	for (unsigned i = 0; i < o->producers; i++) {
		struct producer *p = &run.prod[i];
		p->run = &run;
		p->index = i;
		p->cpu = pl.prod_cpu[i];
		if ((rc = pthread_create(&p->thread, NULL, producer_main, p)) != 0) {
			fprintf(stderr, "ringtrace-bench rb: pthread_create: %s\n", strerror(rc));
			exit(BENCH_EXIT_FAIL); /* producers are parked on the barrier */
		}
		started++;
	}
	if (o->reader != READER_NONE) {
		if ((rc = pthread_create(&r->thread, NULL, reader_main, r)) != 0) {
			fprintf(stderr, "ringtrace-bench rb: pthread_create: %s\n", strerror(rc));
			exit(BENCH_EXIT_FAIL);
		}
		reader_started = 1;
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(run.prod[i].thread, NULL);
	__atomic_store_n(&run.producers_done, 1, __ATOMIC_RELEASE);
	if (reader_started)
		pthread_join(r->thread, NULL);
	pthread_barrier_destroy(&run.start);

	double cheap_after = bench_measure_cheapest(pl.prod_cpu[0]);
	double cheapest = fmin(cheap_before, cheap_after);

	struct ringtrace_rb_stats st;
	memset(&st, 0, sizeof(st));
	rc = ringtrace_rb_get_stats(run.rb, &st);
	if (rc < 0) {
		fprintf(stderr, "ringtrace-bench rb: ringtrace_rb_stats: %s: %s\n",
			ringtrace_strerror(rc), ringtrace_last_error());
		status = BENCH_EXIT_FAIL;
	}

	struct rb_sums sum;
	rb_sum_producers(&run, reader_started, &sum);

	rb_print_run(o, run_no, r, &st, &sum, cheapest, res);

	/* ---- checks ---- */
	rb_check_run(r, &st, &sum, res);

	if (r->iter)
		ringtrace_rb_reader_close(r->iter);
	ringtrace_rb_destroy(run.rb);
	free(run.prod);
	free(pl.prod_cpu);
	return status;
}

/* ---- options --------------------------------------------------------------- */

static void rb_usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace-bench rb [options]\n"
		"\n"
		"Hammer a ring buffer with 10-byte events for a while, as the Linux kernel's\n"
		"ring_buffer_benchmark does, and print its statistics and the cost per event.\n"
		"\n"
		"options:\n"
		"  --seconds N          how long each producer writes (default 10; fractions ok)\n"
		"  --reader KIND        none | page | event: the aggressive consumer (default page)\n"
		"  --mode MODE          discard | overwrite: what a full pool does (default discard;\n"
		"                       overwrite with --reader none, as the kernel's)\n"
		"  --producers K        writing threads (default 1), pinned round-robin\n"
		"  --page-size BYTES    page size (default %u; k/m suffixes ok)\n"
		"  --pool-size BYTES    pool size (default %u; k/m/g suffixes ok)\n"
		"  --runs R             repeat the measurement R times and print medians (default 1)\n"
		"  -h, --help           this help\n"
		"\n"
		"exit status: 0 ok, 1 a check failed (accounting, reader), 2 usage error\n",
		RINGTRACE_RB_DEFAULT_PAGE_SIZE, RINGTRACE_RB_DEFAULT_POOL_SIZE);
}

#define usage_error(fmt, arg) bench_usage_error("rb", fmt, arg)

enum {
	OPT_SECONDS = 256,
	OPT_READER,
	OPT_MODE,
	OPT_PRODUCERS,
	OPT_PAGE_SIZE,
	OPT_POOL_SIZE,
	OPT_RUNS
};

/* Reads the options into *o; returns -1 to go on, else the exit status. */
static int rb_parse_args(int argc, char **argv, struct rb_opts *o)
{
	static const struct option longopts[] = {
		{"seconds", required_argument, NULL, OPT_SECONDS},
		{"reader", required_argument, NULL, OPT_READER},
		{"mode", required_argument, NULL, OPT_MODE},
		{"producers", required_argument, NULL, OPT_PRODUCERS},
		{"page-size", required_argument, NULL, OPT_PAGE_SIZE},
		{"pool-size", required_argument, NULL, OPT_POOL_SIZE},
		{"runs", required_argument, NULL, OPT_RUNS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	int mode_given = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *arg = optarg;
		switch (c) {
		case 'h':
			rb_usage(stdout);
			return BENCH_EXIT_OK;
		case OPT_SECONDS: {
			char *end;
			errno = 0;
			double v = strtod(arg, &end);
			if (errno || end == arg || *end || !isfinite(v) || v <= 0 ||
			    v > RB_MAX_SECONDS)
				return usage_error("--seconds: '%s' is not a number of seconds > 0",
						   arg);
			o->seconds = v;
			break;
		}
		case OPT_READER:
			if (!strcmp(arg, "none"))
				o->reader = READER_NONE;
			else if (!strcmp(arg, "page"))
				o->reader = READER_PAGE;
			else if (!strcmp(arg, "event"))
				o->reader = READER_EVENT;
			else
				return usage_error("--reader: '%s' is not one of none, page, event",
						   arg);
			break;
		case OPT_MODE:
			mode_given = 1;
			if (!strcmp(arg, "discard"))
				o->mode = RINGTRACE_RB_DISCARD;
			else if (!strcmp(arg, "overwrite"))
				o->mode = RINGTRACE_RB_OVERWRITE;
			else
				return usage_error("--mode: '%s' is not one of discard, overwrite",
						   arg);
			break;
		case OPT_PRODUCERS:
			if (bench_parse_uint(arg, 1, RB_MAX_PRODUCERS, &o->producers))
				return usage_error(
					"--producers: '%s' is not a count from 1 to 4096", arg);
			break;
		case OPT_PAGE_SIZE:
			if (bench_parse_size(arg, &o->page_size))
				return usage_error("--page-size: '%s' is not a size in bytes", arg);
			break;
		case OPT_POOL_SIZE:
			if (bench_parse_size(arg, &o->pool_size))
				return usage_error("--pool-size: '%s' is not a size in bytes", arg);
			break;
		case OPT_RUNS:
			if (bench_parse_uint(arg, 1, RB_MAX_RUNS, &o->runs))
				return usage_error("--runs: '%s' is not a count from 1 to 1000",
						   arg);
			break;
		default: /* ':' missing value, '?' unknown option */
			return bench_getopt_error("rb", c, argv);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	/*
	 * Without a reader a discard-mode pool is full after a few ms and the
	 * rest of the run measures misses; like the kernel's benchmark (whose
	 * buffer overwrites), default to overwrite then.
	 */
	if (!mode_given && o->reader == READER_NONE)
		o->mode = RINGTRACE_RB_OVERWRITE;
	return -1;
}

int rb_bench_main(int argc, char **argv)
{
	struct rb_opts o = {
		.seconds = 10.0,
		.reader = READER_PAGE,
		.mode = RINGTRACE_RB_DISCARD,
		.producers = 1,
		.page_size = 0,
		.pool_size = 0,
		.runs = 1,
	};
	int status = rb_parse_args(argc, argv, &o);
	if (status >= 0)
		return status;

	double *ns = calloc(o.runs, sizeof(double));
	double *ratio = calloc(o.runs, sizeof(double));
	if (!ns || !ratio) {
		fprintf(stderr, "ringtrace-bench rb: out of memory\n");
		return BENCH_EXIT_FAIL;
	}
	status = BENCH_EXIT_OK;
	for (unsigned i = 0; i < o.runs; i++) {
		struct run_result res;
		if (i)
			printf("\n");
		int rc = run_once(&o, i + 1, &res);
		if (rc) {
			status = rc;
			break;
		}
		ns[i] = res.ns_per_entry;
		ratio[i] = res.ratio;
		if (res.failed) {
			status = BENCH_EXIT_FAIL;
			break;
		}
	}
	if (status == BENCH_EXIT_OK && o.runs > 1) {
		printf("\nmedian ns per entry: %.2f\n", bench_median(ns, o.runs));
		printf("median ratio to cheapest: %.2f\n", bench_median(ratio, o.runs));
	}
	free(ns);
	free(ratio);
	return status;
}
