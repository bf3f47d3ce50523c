/*
 * bench/cmp/cmp_harness.h - the one measuring program of bench/compare,
 * shared by every tracer.
 *
 * Each cmp-<tracer> program is one backend file (cmp_<tracer>.c) that
 * defines, before including this header:
 *
 *   static inline void cmp_emit(int v);      the event: one int field
 *   static int  backend_init(struct cmp_opts *o);     before anything is timed
 *   static void backend_ready(const struct cmp_opts *o);
 *                                                     after the warm-up,
 *                                                     just before timing,
 *                                                     in EVERY writer thread
 *                                                     (--threads): per-thread
 *                                                     work only, thread-safe
 *   static void backend_finish(struct cmp_opts *o, struct cmp_result *r);
 *   static const char backend_name[];
 *
 * and this header supplies main() and the loops. So every tracer's call
 * site is compiled into the very same loop, inline, exactly as a user of
 * that tracer would write it: nothing is called through an extra function
 * of ours, and no program carries another tracer's runtime (LTTng-UST's
 * listener threads, DPDK's EAL) that could disturb it.
 *
 * What is measured (--what):
 *   micro    N iterations of { cmp_emit(i); } with an opaque counter
 *            (CMP_KEEP: the loop cannot be vectorized or removed), timed
 *            with CLOCK_MONOTONIC around the whole loop: ns per iteration,
 *            loop overhead included (about 0.3 ns here; the "none" program
 *            shows it).
 *            --threads K: K writers run that loop at once, each pinned
 *            to its own CPU (writer i on (--cpu + i) mod online CPUs;
 *            writer 0 is the main thread), each on its own range of i
 *            (payloads stay distinct) and timed on its own; ns= is the
 *            mean of the writers' ns per event, ns_max= the slowest's.
 *            What one event costs each thread when K threads trace at
 *            once (bench/scaling).
 *   close    perf's close(-1) experiment: N iterations of { close(-1); cmp_emit(i); }: ns per
 *            call.
 *   latency  the cyclictest wake-up latency experiment: a SCHED_FIFO thread wakes up every --interval-us on
 *            clock_nanosleep(TIMER_ABSTIME), emits one event, then reads
 *            the clock: its lateness (now - programmed wake-up) includes
 *            the event, as a scheduler tracepoint on the wake-up path
 *            would be. min/avg/max of N wake-ups. As cyclictest -m: all
 *            memory locked, /dev/cpu_dma_latency held at 0 while it runs.
 *   tail     per-call latency: after the same warm-up as micro, each of N
 *            calls timed on its own with the cycle counter read just
 *            before and just after it (cmp_tail below), kept in an array
 *            filled before anything is timed; then p50, p99, p99.9,
 *            p99.99 and max in ns. Calibrated: the median of 100,000
 *            empty timed regions, measured the same way in the same
 *            process just before, is subtracted from every call. ns= is
 *            the mean calibrated call. --hist FILE writes the whole
 *            distribution ("ns count" per distinct value) for the plot.
 *
 * Order: backend_init (the tracer starts; its helper threads inherit the
 * CPU mask the program was started with, the script gives it the other
 * CPU), pin this thread to --cpu, --wait FIFO (block until the script has
 * attached bpftrace and writes a line), warm-up (--warmup events, same
 * loop), backend_ready, the timed loop, backend_finish (stop, save,
 * count). With --threads K (micro only): the K-1 extra writers are
 * created after backend_init (the tracer is up; they pin themselves, so
 * the mask its helpers got does not matter) and after --wait; every
 * writer does its own warm-up and backend_ready, then all wait on a
 * barrier and time their loops together, then wait on a second barrier
 * (no writer's exit disturbs another's timing); the extra writers are
 * joined before backend_finish, which counts over all threads. expected=
 * is K x (warm-up + N) unless the backend says otherwise.
 * The result is one line on stdout:
 *   RESULT tracer=... what=... n=... warmup=... ns=... [lat_min= lat_avg=
 *   lat_max=] expected=... recorded=... lost=... [p50= p99= p999= p9999=
 *   tmax= tmax_at= timer_ns= step_ns= tsc_ghz=] ns_max=... threads=...
 *   note="..."
 * (new tokens go just before note=: bench/compare's parser reads the
 * others by name).
 * recorded/lost are -1 where the program cannot know (the script counts
 * the trace itself).
 */
#ifndef CMP_HARNESS_H
#define CMP_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cmp.h"
#include "cmp_tick.h"

static __attribute__((noinline)) void cmp_loop_micro(uint64_t first, uint64_t n)
{
	for (uint64_t i = first; i < first + n; i++) {
		cmp_emit((int)i);
		CMP_KEEP(i);
	}
}

/*
 * --threads: the writers of the micro experiment. Each one is what the
 * single-threaded program always did: warm-up, backend_ready, the timed
 * loop, on its own CPU. The barriers make the timed loops overlap: all
 * start once every writer is prepared (so no writer's warm-up or buffer
 * fill runs beside another's timed loop), and none leaves before all are
 * done.
 */
#define CMP_MAX_THREADS 256

struct cmp_writer {
	const struct cmp_opts *o;
	unsigned index; /* 0: the main thread */
	int cpu;
	pthread_t tid;
	double ns; /* its own ns per event */
};

static pthread_barrier_t cmp_ready_barrier, cmp_done_barrier;

static void cmp_writer_run(struct cmp_writer *w)
{
	const struct cmp_opts *o = w->o;
	/* Writer i's events are i * (warm-up + N) ... : disjoint ranges. */
	uint64_t base = (uint64_t)w->index * (o->warmup + o->n);
	cmp_loop_micro(base, o->warmup);
	backend_ready(o);
	pthread_barrier_wait(&cmp_ready_barrier);
	uint64_t t0 = cmp_now_ns();
	cmp_loop_micro(base + o->warmup, o->n);
	uint64_t t1 = cmp_now_ns();
	w->ns = (double)(t1 - t0) / (double)o->n;
	pthread_barrier_wait(&cmp_done_barrier);
}

static void *cmp_writer_thread(void *arg)
{
	struct cmp_writer *w = arg;
	cmp_pin(w->cpu);
	cmp_writer_run(w);
	return NULL;
}

/* The micro experiment with o->threads writers (the main thread is writer
 * 0, already pinned to --cpu); fills r->ns (mean) and r->ns_max. */
static void cmp_micro_threads(const struct cmp_opts *o, struct cmp_result *r)
{
	static struct cmp_writer w[CMP_MAX_THREADS];
	unsigned k = o->threads;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 1)
		ncpu = 1;
	if (pthread_barrier_init(&cmp_ready_barrier, NULL, k) != 0 ||
	    pthread_barrier_init(&cmp_done_barrier, NULL, k) != 0)
		cmp_die("pthread_barrier_init failed");
	for (unsigned i = 0; i < k; i++) {
		w[i].o = o;
		w[i].index = i;
		w[i].cpu = (int)((o->cpu + (long)i) % ncpu);
	}
	for (unsigned i = 1; i < k; i++) {
		int e = pthread_create(&w[i].tid, NULL, cmp_writer_thread, &w[i]);
		if (e != 0)
			cmp_die("cannot create writer thread %u: %s", i, strerror(e));
	}
	cmp_writer_run(&w[0]);
	for (unsigned i = 1; i < k; i++)
		pthread_join(w[i].tid, NULL);
	pthread_barrier_destroy(&cmp_ready_barrier);
	pthread_barrier_destroy(&cmp_done_barrier);
	double sum = 0, mx = 0;
	for (unsigned i = 0; i < k; i++) {
		sum += w[i].ns;
		if (w[i].ns > mx)
			mx = w[i].ns;
	}
	r->ns = sum / (double)k;
	r->ns_max = mx;
}

static __attribute__((noinline)) void cmp_loop_close(uint64_t first, uint64_t n)
{
	for (uint64_t i = first; i < first + n; i++) {
		close(-1);
		cmp_emit((int)i);
	}
}

/*
 * tail: per-call latency, each call timed as cmp_tick.h says.
 */
#define CMP_TAIL_CAL 100000u /* empty regions timed for the calibration */

struct cmp_tail {
	uint32_t *ticks; /* one per call: raw region length in ticks */
	uint64_t n;
	double ticks_per_ns;
	uint32_t overhead; /* median empty region, ticks */
	uint32_t step;     /* smallest advance of the counter between two reads */
	uint64_t ns0, tick0;
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* A region's length, saturated: a call longer than 2^32 ticks (> 1 s) is
 * kept as the largest value rather than wrapping to a small one. */
static inline uint32_t cmp_tick_len(uint64_t t0, uint64_t t1)
{
	uint64_t d = t1 - t0;
	return d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

/* A CLOCK_MONOTONIC reading and the counter at (about) the same moment:
 * the counter read between two clock reads, paired with their midpoint. */
static void cmp_tick_pair(uint64_t *ns, uint64_t *tick)
{
	uint64_t a = cmp_now_ns();
	*tick = cmp_tick_begin();
	uint64_t b = cmp_now_ns();
	*ns = a + (b - a) / 2;
}

/* Everything the timed loop touches exists before it runs: the array is
 * allocated and written (page faults taken) here, not in the loop. */
static void cmp_tail_init(struct cmp_tail *t, uint64_t n)
{
	t->n = n;
	t->ticks = mmap(NULL, n * sizeof(uint32_t), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (t->ticks == MAP_FAILED)
		cmp_die("tail: cannot map %" PRIu64 " samples: %s", n, strerror(errno));
	memset(t->ticks, 0, n * sizeof(uint32_t));
}

/* The cost of the timer itself: empty regions timed exactly as a call is,
 * in this process, on this CPU, just before the calls. Also starts the
 * TSC-against-CLOCK_MONOTONIC measurement that cmp_tail_finish ends. */
static void cmp_tail_calibrate(struct cmp_tail *t)
{
	uint32_t *cal = t->ticks; /* the array is free until the loop: reuse it */
	uint64_t k = t->n < CMP_TAIL_CAL ? t->n : CMP_TAIL_CAL;
	cmp_tick_pair(&t->ns0, &t->tick0);
	for (uint64_t i = 0; i < k; i++) {
		uint64_t t0 = cmp_tick_begin();
		uint64_t t1 = cmp_tick_end();
		cal[i] = cmp_tick_len(t0, t1);
	}
	qsort(cal, k, sizeof(*cal), cmp_u32);
	t->overhead = cal[k / 2];
	/* The counter's step: the smallest advance between two reads in a row
	 * that at least 1% of such pairs show (a virtual TSC may move in steps
	 * of tens of ticks, about 10 ns here: no per-call figure is finer than
	 * that, and the output says so). Not the smallest seen: a virtual
	 * counter shows a one-tick advance once in a while (an adjustment of
	 * its offset, it seems) while every other pair is 21 or 42 apart. The
	 * advances are counted in cal, which the loop does not need yet. */
	memset(cal, 0, k * sizeof(*cal));
	uint64_t prev = cmp_tick_raw();
	for (uint64_t i = 0; i < k; i++) {
		uint64_t now = cmp_tick_raw();
		if (now > prev && now - prev < k)
			cal[now - prev]++;
		prev = now;
	}
	t->step = UINT32_MAX;
	uint32_t least = UINT32_MAX; /* (if no advance is that common) */
	for (uint64_t d = 1; d < k && t->step == UINT32_MAX; d++) {
		if (cal[d] && least == UINT32_MAX)
			least = (uint32_t)d;
		if ((uint64_t)cal[d] * 100 >= k)
			t->step = (uint32_t)d;
	}
	if (t->step == UINT32_MAX)
		t->step = least;
	memset(cal, 0, k * sizeof(*cal));
}

static __attribute__((noinline)) void cmp_loop_tail(struct cmp_tail *t, uint64_t first)
{
	uint32_t *ticks = t->ticks;
	for (uint64_t i = 0; i < t->n; i++) {
		uint64_t t0 = cmp_tick_begin();
		cmp_emit((int)(first + i));
		uint64_t t1 = cmp_tick_end();
		ticks[i] = cmp_tick_len(t0, t1);
	}
}

/* Nearest rank: the smallest value with at least q of the samples at or
 * below it. */
static uint32_t cmp_rank(const uint32_t *s, uint64_t n, double q)
{
	uint64_t k = (uint64_t)(q * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return s[k - 1];
}

/* Sorts the samples, fills the result's quantiles (calibrated, ns) and
 * writes the distribution to hist (if given). After all timing. */
static void cmp_tail_finish(struct cmp_tail *t, struct cmp_result *r, const char *hist)
{
	uint64_t ns1, tick1;
	/* The frequency over at least 50 ms (from the calibration on), so that
	 * the clock reads' own spread (~100 ns) is below 0.001%; the wait, if
	 * any, comes after every call has been timed. */
	do
		cmp_tick_pair(&ns1, &tick1);
	while (ns1 - t->ns0 < 50000000u);
#if defined(__x86_64__) || defined(__i386__)
	t->ticks_per_ns = (double)(tick1 - t->tick0) / (double)(ns1 - t->ns0);
#else
	t->ticks_per_ns = 1.0;
#endif
	uint32_t *s = t->ticks;
	uint64_t n = t->n, at = 0;
	for (uint64_t i = 1; i < n; i++)
		if (s[i] > s[at])
			at = i;
	r->tail_max_at = at;
	qsort(s, n, sizeof(*s), cmp_u32);
	double sum = 0;
	for (uint64_t i = 0; i < n; i++)
		s[i] = s[i] > t->overhead ? s[i] - t->overhead : 0;
	for (uint64_t i = 0; i < n; i++)
		sum += s[i];
	double k = 1.0 / t->ticks_per_ns;
	r->ns = sum / (double)n * k;
	r->p50 = cmp_rank(s, n, 0.5) * k;
	r->p99 = cmp_rank(s, n, 0.99) * k;
	r->p999 = cmp_rank(s, n, 0.999) * k;
	r->p9999 = cmp_rank(s, n, 0.9999) * k;
	r->tmax = s[n - 1] * k;
	r->timer_ns = t->overhead * k;
	r->step_ns = t->step * k;
	r->tsc_ghz = t->ticks_per_ns;
	if (hist) {
		FILE *f = fopen(hist, "w");
		if (!f)
			cmp_die("--hist %s: %s", hist, strerror(errno));
		fprintf(f, "# %s; calibrated (timer %.2f ns subtracted); ns count\n", CMP_TICK_NAME,
			r->timer_ns);
		for (uint64_t i = 0; i < n;) {
			uint64_t j = i;
			while (j < n && s[j] == s[i])
				j++;
			fprintf(f, "%.2f %" PRIu64 "\n", s[i] * k, j - i);
			i = j;
		}
		if (fclose(f) != 0)
			cmp_die("--hist %s: %s", hist, strerror(errno));
	}
	munmap(t->ticks, n * sizeof(uint32_t));
}

static void cmp_wait_fifo(const char *path)
{
	printf("READY pid=%d\n", (int)getpid());
	fflush(stdout);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		cmp_die("--wait %s: %s", path, strerror(errno));
	char c;
	if (read(fd, &c, 1) != 1)
		cmp_die("--wait %s: no go from the script", path);
	close(fd);
}

static void cmp_latency(const struct cmp_opts *o, struct cmp_result *r, uint64_t n, int record)
{
	uint64_t interval = (uint64_t)o->interval_us * 1000u;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	uint64_t sum = 0, mn = UINT64_MAX, mx = 0;
	for (uint64_t i = 0; i < n; i++) {
		next.tv_nsec += (long)interval;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		cmp_emit((int)i);
		uint64_t now = cmp_now_ns();
		uint64_t due = (uint64_t)next.tv_sec * 1000000000ull + (uint64_t)next.tv_nsec;
		uint64_t lat = now > due ? now - due : 0;
		if (record) {
			sum += lat;
			if (lat < mn)
				mn = lat;
			if (lat > mx)
				mx = lat;
		}
	}
	if (record) {
		r->lat_min = (double)mn;
		r->lat_avg = (double)sum / (double)n;
		r->lat_max = (double)mx;
	}
}

/* close, latency and tail: the measured (main) thread alone. */
static void cmp_run_single(const struct cmp_opts *o, struct cmp_result *r, int tail)
{
	/* Warm-up: the same code, so the call path, the tracer's per-thread
	 * state and the first pages of its buffer are ready before timing. */
	struct cmp_tail tl = {0};
	if (tail)
		cmp_tail_init(&tl, o->n);
	if (tail)
		cmp_loop_micro(0, o->warmup);
	else if (!strcmp(o->what, "close"))
		cmp_loop_close(0, o->warmup);
	else
		cmp_latency(o, r, o->warmup, 0);
	backend_ready(o);
	if (tail)
		cmp_tail_calibrate(&tl);

	uint64_t t0 = cmp_now_ns();
	if (tail)
		cmp_loop_tail(&tl, o->warmup);
	else if (!strcmp(o->what, "close"))
		cmp_loop_close(o->warmup, o->n);
	else
		cmp_latency(o, r, o->n, 1);
	uint64_t t1 = cmp_now_ns();
	r->ns = (double)(t1 - t0) / (double)o->n;
	if (tail) /* r->ns becomes the mean calibrated call */
		cmp_tail_finish(&tl, r, o->hist);
	r->ns_max = r->ns;
}

static void cmp_usage(FILE *f)
{
	fprintf(f,
		"usage: cmp-%s [options]   (run by bench/compare)\n"
		"  --what micro|close|latency|tail   the experiment (default micro)\n"
		"  --n N            events (iterations, calls, wake-ups) timed\n"
		"  --warmup N       events emitted first, not timed (default 100000)\n"
		"  --cpu C          CPU of the measured thread (default 0)\n"
		"  --mode discard|overwrite     the tracer's buffer mode\n"
		"  --off            tracer present, its tracepoint disabled\n"
		"  --dir DIR        trace output directory (ringtrace, dpdk)\n"
		"  --file PATH      file written by write() (ftrace: trace_marker_raw)\n"
		"  --buffer BYTES   buffer size (ringtrace pool, dpdk per-thread buffer)\n"
		"  --wait FIFO      print READY, then wait for a line on FIFO before the warm-up\n"
		"  --interval-us U  latency: wake-up interval (default 200)\n"
		"  --prio P         latency: SCHED_FIFO priority (default 95, 0 = none)\n"
		"  --hist FILE      tail: write the distribution (ns count per value)\n"
		"  --threads K      micro: K writer threads at once, writer i on CPU\n"
		"                   (C + i) mod online CPUs (default 1, at most %d)\n",
		backend_name, CMP_MAX_THREADS);
}

/* Reads the options into *o; returns -1 to go on, else the exit status. */
static int cmp_parse_args(int argc, char **argv, struct cmp_opts *o)
{
	static const struct option longopts[] = {
		{"what", required_argument, NULL, 'w'},
		{"n", required_argument, NULL, 'n'},
		{"warmup", required_argument, NULL, 'W'},
		{"cpu", required_argument, NULL, 'c'},
		{"mode", required_argument, NULL, 'm'},
		{"off", no_argument, NULL, 'o'},
		{"dir", required_argument, NULL, 'd'},
		{"file", required_argument, NULL, 'f'},
		{"buffer", required_argument, NULL, 'b'},
		{"wait", required_argument, NULL, 'a'},
		{"interval-us", required_argument, NULL, 'i'},
		{"prio", required_argument, NULL, 'p'},
		{"hist", required_argument, NULL, 'H'},
		{"threads", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w':
			o->what = optarg;
			break;
		case 'n':
			o->n = strtoull(optarg, NULL, 0);
			break;
		case 'W':
			o->warmup = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			o->cpu = atoi(optarg);
			break;
		case 'm':
			o->mode = optarg;
			break;
		case 'o':
			o->off = 1;
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'f':
			o->file = optarg;
			break;
		case 'b':
			o->buffer = strtoull(optarg, NULL, 0);
			break;
		case 'a':
			o->wait = optarg;
			break;
		case 'i':
			o->interval_us = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			o->prio = atoi(optarg);
			break;
		case 'H':
			o->hist = optarg;
			break;
		case 'T': {
			char *end;
			unsigned long k = strtoul(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || k < 1 ||
			    k > CMP_MAX_THREADS) {
				fprintf(stderr, "cmp: --threads: '%s' is not 1..%d\n", optarg,
					CMP_MAX_THREADS);
				return 2;
			}
			o->threads = (unsigned)k;
			break;
		}
		case 'h':
			cmp_usage(stdout);
			return 0;
		default:
			cmp_usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !o->n ||
	    (strcmp(o->what, "micro") && strcmp(o->what, "close") && strcmp(o->what, "latency") &&
	     strcmp(o->what, "tail")) ||
	    (strcmp(o->mode, "discard") && strcmp(o->mode, "overwrite")) || !o->interval_us) {
		cmp_usage(stderr);
		return 2;
	}
	/* Only the micro loop has a multi-writer form: close's system call
	 * and latency's wake-ups would measure the kernel's scaling, and
	 * tail's per-call array is one thread's. */
	if (o->threads > 1 && strcmp(o->what, "micro")) {
		fprintf(stderr, "cmp: --threads %u: only with --what micro\n", o->threads);
		return 2;
	}
	return -1;
}

/* The latency experiment's setup, as cyclictest's; returns the PM QoS file's fd or -1. */
static int cmp_latency_setup(void)
{
	int dma_fd = -1;
	mlockall(MCL_CURRENT | MCL_FUTURE); /* as cyclictest -m */
	/* As cyclictest: a PM QoS request for zero exit latency (no deep
	 * C-state) while the file is open; released when it closes. */
	int32_t zero = 0;
	dma_fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
	if (dma_fd >= 0 && write(dma_fd, &zero, sizeof(zero)) != (ssize_t)sizeof(zero)) {
		close(dma_fd);
		dma_fd = -1;
	}
	return dma_fd;
}

/* The one RESULT line bench/compare reads. */
static void cmp_print_result(const struct cmp_opts *o, const struct cmp_result *r, int tail)
{
	printf("RESULT tracer=%s what=%s mode=%s off=%d n=%" PRIu64 " warmup=%" PRIu64
	       " ns=%.3f lat_min=%.0f lat_avg=%.1f lat_max=%.0f expected=%" PRIu64
	       " recorded=%" PRId64 " lost=%" PRId64,
	       backend_name, o->what, o->mode, o->off, o->n, o->warmup, r->ns, r->lat_min,
	       r->lat_avg, r->lat_max, r->expected, r->recorded, r->lost);
	if (tail)
		printf(" p50=%.2f p99=%.2f p999=%.2f p9999=%.2f tmax=%.2f tmax_at=%" PRIu64
		       " timer_ns=%.2f step_ns=%.2f tsc_ghz=%.4f",
		       r->p50, r->p99, r->p999, r->p9999, r->tmax, r->tail_max_at, r->timer_ns,
		       r->step_ns, r->tsc_ghz);
	printf(" ns_max=%.3f threads=%u note=\"%s\"\n", r->ns_max, o->threads, r->note);
}

int main(int argc, char **argv)
{
	struct cmp_opts o = {
		.what = "micro",
		.n = 1000000,
		.warmup = 100000,
		.cpu = 0,
		.mode = "discard",
		.interval_us = 200,
		.prio = 95,
		.threads = 1,
	};
	int status = cmp_parse_args(argc, argv, &o);
	if (status >= 0)
		return status;
	o.overwrite = strcmp(o.mode, "overwrite") == 0;
	int latency = strcmp(o.what, "latency") == 0;
	int dma_fd = latency ? cmp_latency_setup() : -1;

	if (backend_init(&o) != 0)
		return 1;
	cmp_pin(o.cpu);
	if (o.wait)
		cmp_wait_fifo(o.wait);
	if (latency && o.prio > 0) {
		struct sched_param sp = {.sched_priority = o.prio};
		if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
			cmp_die("SCHED_FIFO %d: %s", o.prio, strerror(errno));
	}

	struct cmp_result r = {
		.recorded = -1, .lost = -1, .expected = o.threads * (o.warmup + o.n)};
	int tail = strcmp(o.what, "tail") == 0;
	if (!strcmp(o.what, "micro"))
		cmp_micro_threads(&o, &r);
	else
		cmp_run_single(&o, &r, tail);

	if (latency && o.prio > 0) {
		struct sched_param sp = {.sched_priority = 0};
		sched_setscheduler(0, SCHED_OTHER, &sp);
	}
	if (dma_fd >= 0)
		close(dma_fd);
	backend_finish(&o, &r);
	cmp_print_result(&o, &r, tail);
	return 0;
}

#endif /* CMP_HARNESS_H */
