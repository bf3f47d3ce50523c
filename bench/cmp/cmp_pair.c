/*
 * cmp-pair: ringtrace and DPDK rte_trace in one process, timed in short
 * chunks that alternate between the tracers, so that every pair of
 * chunks is measured in the same state of the machine.
 *
 * Why: bench/compare's main figures come from one process per tracer and
 * run, interleaved, the median over rounds. On this shared VM the speed of
 * the whole machine drifts by 5-15% over seconds, which is more than the
 * difference between ringtrace and DPDK: process-level medians of the
 * two move by a few percent from one run to the next. Here each round
 * times one chunk of each case (~1 ms each, order rotated every round),
 * and the figure is the median over rounds of the per-round ratio: the
 * drift cancels within a round, and a few hundred rounds give the ratio
 * to about 0.1%.
 *
 * Cases: the microbenchmark loop of cmp_harness.h with no tracer, with
 * trace_cmp_int() into a ringtrace overwrite buffer, the same into a
 * discard buffer, with cmp_trace_ev() (DPDK, overwrite), and with the
 * two floors (the least a timestamped event does: see FLOOR_EMIT), and
 * the counter read alone (TSC_EMIT: the machine's state); perf's
 * loop (close(-1) then the event) with no tracer, ringtrace (overwrite)
 * and DPDK. Buffers of --buffer bytes each (4 MiB: a few hundred rounds
 * fit none of them). ringtrace's two buffers are made here
 * (ringtrace_rb_create), and the events buffer is switched between them
 * (ringtrace_events_set_buffer) before each chunk, outside the timing. The
 * discard buffer has a reader thread that takes and returns each page at
 * once; the overwrite one is not read (a flight recorder); DPDK has no
 * consumer. The reader thread is started before the EAL, so it runs on
 * the CPUs the program was started with (bench/compare: the other CPU);
 * the EAL pins this thread to --cpu.
 *
 * Checked: each ringtrace buffer's accounting (hit + missed) must equal
 * the events emitted into it, and the discard buffer must have dropped
 * none (a drop is cheaper than a record, and would flatter discard), or
 * the program fails. DPDK's overwrite buffer keeps only what follows its
 * last wrap and counts nothing: its events are not counted here
 * (cmp-dpdk's discard runs are).
 *
 * Output (stdout), one line per figure, `key=value` tokens:
 *   PAIR rounds= chunk= close_chunk= buffer=
 *   PAIR case=micro-<none|ringtrace|ringtrace-discard|dpdk|floor|floor-buffer|rdtsc> median= p10= p90= min= max=  (ns)
 *   PAIR case=close-<none|ringtrace|dpdk> ...
 *   PAIR ratio=<dpdk/ringtrace|overwrite/discard|ringtrace/floor|dpdk/floor|
 *               ringtrace/floor-buffer|dpdk/floor-buffer> median= ...
 *                                                      (per-round ratios)
 *   PAIR overhead=close-<ringtrace|dpdk> median= ...   (percent)
 *   PAIR count=<ringtrace|ringtrace-discard> emitted= hit= missed= overrun= ok=<0|1>
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ringtrace/event.h>

#include "cmp_pair.h"
#include "cmp_rt_events.h"
#include "ringtrace/static/cpu.h"

#define CMP_PAIR_NONE(v) ((void)(v))
CMP_PAIR_LOOPS(none, CMP_PAIR_NONE)
CMP_PAIR_LOOPS(rt, trace_cmp_int)

/*
 * The floor: the least that any event with a timestamp does, in the same
 * loop (bench_common.c's "cheapest event", with the position kept in memory
 * between events as a tracer's is): read the TSC, store it and the value
 * (16 bytes), store the new position (release). It keeps nothing a trace
 * needs beyond that (no event id, no per-thread state, no accounting), so
 * a tracer's time over it is what its own work costs: the figures
 * tracer/floor say how much room the comparison with DPDK has at all.
 *
 * Two floors, the same code over two arrays: "floor" writes 64 KiB over
 * and over, which stays in the CPU's L2; "floor-buffer" writes 4 MiB, the
 * tracers' buffer size in bench/compare, so that its stores stream through
 * the caches as theirs do (written once before the warm-up: no page fault
 * in a timed chunk). The first says what the instructions of an
 * event cost; the second adds what moving the event's 16 bytes through
 * the memory system costs, which every tracer keeping events in a buffer
 * of that size pays (on a host whose caches other guests share, that part
 * moves from run to run: tracer/floor then moves with it, while
 * tracer/floor-buffer does not).
 */
#define FLOOR_BUFFER_BYTES (4u << 20) /* cmp-pair's default --buffer, and bench/compare's */
static uint64_t floor_small[8192] __attribute__((aligned(64)));
static uint64_t floor_big[FLOOR_BUFFER_BYTES / sizeof(uint64_t)] __attribute__((aligned(4096)));
static uint64_t floor_small_pos __attribute__((aligned(64)));
static uint64_t floor_big_pos __attribute__((aligned(64)));

/* (a macro: each floor's array and mask stay constants in its loop, as in
 * the one-array floor this replaced) */
#define FLOOR_EMIT_TO(arr, posv, v)                                                          \
	do {                                                                                 \
		uint64_t pos = __atomic_load_n(&(posv), __ATOMIC_RELAXED);                   \
		uint64_t *slot = &(arr)[pos / sizeof(uint64_t)];                             \
		/* the cycle counter as ringtrace reads it (rdtsc), else the clock */        \
		if (!ringtrace_hw_ticks_(&slot[0]))                                          \
			slot[0] = cmp_now_ns();                                              \
		slot[1] = (uint64_t)(v);                                                     \
		__atomic_store_n(&(posv), (pos + 16) & (sizeof(arr) - 1), __ATOMIC_RELEASE); \
	} while (0)
#define FLOOR_EMIT(v) FLOOR_EMIT_TO(floor_small, floor_small_pos, v)
#define FLOOR_BUF_EMIT(v) FLOOR_EMIT_TO(floor_big, floor_big_pos, v)
CMP_PAIR_LOOPS(floor, FLOOR_EMIT)
CMP_PAIR_LOOPS(floor_buf, FLOOR_BUF_EMIT)

/*
 * The counter read alone, kept in a register (no store): what reading the
 * clock costs in the machine's present state. On a virtual machine that
 * cost moves between states of the host by several times, and with it the
 * floor and every tracer's event: printed beside the ratios, it tells two
 * runs in different states apart.
 */
#define TSC_EMIT(v)                                 \
	do {                                        \
		uint64_t tsc_;                      \
		if (!ringtrace_hw_ticks_(&tsc_))    \
			tsc_ = cmp_now_ns();        \
		__asm__ volatile("" : : "r"(tsc_)); \
		(void)(v);                          \
	} while (0)
CMP_PAIR_LOOPS(tsc, TSC_EMIT)

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Quantile q of the sorted s[0..n), nearest rank. */
static double quantile(const double *s, int n, double q)
{
	return s[(int)(q * (n - 1) + 0.5)];
}

static void print_stats(const char *key, const char *name, const double *v, int n)
{
	double *s = malloc(sizeof(double) * (size_t)n);
	if (!s)
		cmp_die("out of memory");
	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	printf("PAIR %s=%s median=%.4f p10=%.4f p90=%.4f min=%.4f max=%.4f\n", key, name,
	       quantile(s, n, 0.5), quantile(s, n, 0.1), quantile(s, n, 0.9), quantile(s, n, 0),
	       quantile(s, n, 1));
	free(s);
}

/* A decimal integer >= min, or exit with an error naming it. */
static uint64_t parse_u64(const char *s, uint64_t min)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > 1000000000000ull)
		cmp_die("bad number '%s'", s);
	return v;
}

/*
 * The discard buffer's reader: on the other CPU (created before the EAL pins
 * this thread), takes every published page and gives it back at once, as a
 * consumer that keeps up does. A page it is late for is a counted drop,
 * which the final check refuses (drops are cheaper than records).
 */
struct drain {
	ringtrace_rb *rb;
	int stop;
	uint64_t pages;
};

static void *drain_thread(void *arg)
{
	struct drain *d = arg;
	for (;;) {
		const struct ringtrace_page_header *p = ringtrace_rb_get_page(d->rb);
		if (p) {
			ringtrace_rb_put_page(d->rb, p);
			d->pages++;
			continue;
		}
		if (__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE))
			return NULL;
		struct timespec ts = {0, 20000};
		nanosleep(&ts, NULL);
	}
}

static ringtrace_rb *make_buffer(enum ringtrace_rb_mode mode, uint64_t bytes)
{
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.mode = mode;
	cfg.pool_size = (size_t)bytes;
	ringtrace_rb *rb;
	if (ringtrace_rb_create(&cfg, &rb) < 0)
		cmp_die("ringtrace_rb_create: %s", ringtrace_last_error());
	return rb;
}

static void use_buffer(ringtrace_rb *rb)
{
	if (ringtrace_events_set_buffer(rb) < 0)
		cmp_die("ringtrace_events_set_buffer: %s", ringtrace_last_error());
}

/* hit + missed must be what was emitted into rb; no drop if no_drops. */
static int check_buffer(const char *name, ringtrace_rb *rb, uint64_t emitted, int no_drops)
{
	struct ringtrace_rb_stats st;
	if (ringtrace_rb_get_stats(rb, &st) < 0)
		cmp_die("ringtrace_rb_get_stats: %s", ringtrace_last_error());
	int ok = st.hit + st.missed == emitted && (!no_drops || st.missed == 0);
	printf("PAIR count=%s emitted=%llu hit=%llu missed=%llu overrun=%llu ok=%d\n", name,
	       (unsigned long long)emitted, (unsigned long long)st.hit,
	       (unsigned long long)st.missed, (unsigned long long)st.overrun, ok);
	if (!ok)
		fprintf(stderr, "cmp-pair: %s: %llu recorded + %llu dropped of %llu emitted%s\n",
			name, (unsigned long long)st.hit, (unsigned long long)st.missed,
			(unsigned long long)emitted,
			no_drops && st.missed
				? " (its reader fell behind: the figures are not valid)"
				: "");
	return ok;
}

enum { C_NONE, C_RT, C_RT_DISCARD, C_DPDK, C_FLOOR, C_FLOOR_BUF, C_TSC, NCASE };

/* The command line; the defaults are bench/compare's. */
struct pair_opts {
	int cpu, rounds;
	uint64_t chunk, close_chunk, buffer;
	const char *dir;
};

/* Reads the options into *o; returns -1 to go on, else the exit status. */
static int pair_parse_args(int argc, char **argv, struct pair_opts *o)
{
	static const struct option lo[] = {{"cpu", 1, 0, 'c'},   {"rounds", 1, 0, 'r'},
					   {"chunk", 1, 0, 'n'}, {"close-chunk", 1, 0, 'C'},
					   {"dir", 1, 0, 'd'},   {"buffer", 1, 0, 'b'},
					   {"help", 0, 0, 'h'},  {0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->cpu = (int)parse_u64(optarg, 0);
			break;
		case 'r':
			o->rounds = (int)parse_u64(optarg, 1);
			break;
		case 'n':
			o->chunk = parse_u64(optarg, 1);
			break;
		case 'C':
			o->close_chunk = parse_u64(optarg, 1);
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'b':
			o->buffer = parse_u64(optarg, 1);
			break;
		default:
			fprintf(stderr,
				"usage: cmp-pair --dir DIR [--cpu C] [--rounds R] [--chunk N]\n"
				"                [--close-chunk N] [--buffer BYTES]   (run by bench/compare)\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (!o->dir)
		cmp_die("--dir DIR is required (DPDK saves its trace there)");
	return -1;
}

typedef double (*pair_loop_fn)(uint64_t, uint64_t);

/* Each case's figures, the micro cases' ratios and the close cases' overheads. */
static void pair_print(double *v[2][NCASE], pair_loop_fn const *closef, const char *const *names,
		       int rounds)
{
	for (int p = 0; p < 2; p++)
		for (int k = 0; k < NCASE; k++) {
			if (p && !closef[k])
				continue;
			char name[64];
			snprintf(name, sizeof(name), "%s-%s", p ? "close" : "micro", names[k]);
			print_stats("case", name, v[p][k], rounds);
		}
	double *t = malloc(sizeof(double) * (size_t)rounds);
	if (!t)
		cmp_die("out of memory");
	/* per-round ratios of micro cases */
	static const struct {
		const char *name;
		int num, den;
	} ratios[] = {
		{"dpdk/ringtrace", C_DPDK, C_RT},
		{"overwrite/discard", C_RT, C_RT_DISCARD},
		{"ringtrace/floor", C_RT, C_FLOOR},
		{"dpdk/floor", C_DPDK, C_FLOOR},
		{"ringtrace/floor-buffer", C_RT, C_FLOOR_BUF},
		{"dpdk/floor-buffer", C_DPDK, C_FLOOR_BUF},
	};
	for (size_t q = 0; q < sizeof(ratios) / sizeof(ratios[0]); q++) {
		for (int r = 0; r < rounds; r++)
			t[r] = v[0][ratios[q].num][r] / v[0][ratios[q].den][r];
		print_stats("ratio", ratios[q].name, t, rounds);
	}
	for (int k = C_RT; k < NCASE; k++) {
		if (!closef[k])
			continue;
		for (int r = 0; r < rounds; r++)
			t[r] = (v[1][k][r] - v[1][C_NONE][r]) / v[1][C_NONE][r] * 100.0;
		char name[64];
		snprintf(name, sizeof(name), "close-%s", names[k]);
		print_stats("overhead", name, t, rounds);
	}
	free(t);
}

int main(int argc, char **argv)
{
	struct pair_opts o = {.cpu = 0,
			      .rounds = 400,
			      .chunk = 100000,
			      .close_chunk = 5000,
			      .buffer = 4u << 20,
			      .dir = NULL};
	int status = pair_parse_args(argc, argv, &o);
	if (status >= 0)
		return status;
	int cpu = o.cpu, rounds = o.rounds;
	uint64_t chunk = o.chunk, close_chunk = o.close_chunk, buffer = o.buffer;
	const char *dir = o.dir;

	if (ringtrace_event_enable("cmp_int") < 1)
		cmp_die("cannot enable cmp_int: %s", ringtrace_last_error());
	memset(floor_big, 0, sizeof(floor_big));
	if (buffer != FLOOR_BUFFER_BYTES)
		fprintf(stderr,
			"cmp-pair: note: --buffer %llu, but floor-buffer writes %u bytes (the default)\n",
			(unsigned long long)buffer, FLOOR_BUFFER_BYTES);
	ringtrace_rb *rb_over = make_buffer(RINGTRACE_RB_OVERWRITE, buffer);
	ringtrace_rb *rb_disc = make_buffer(RINGTRACE_RB_DISCARD, buffer);
	struct drain drain = {rb_disc, 0, 0};
	pthread_t drainer;
	if (pthread_create(&drainer, NULL, drain_thread, &drain) != 0)
		cmp_die("cannot start the reader thread");
	if (cmp_pair_dpdk_init(cpu, dir, buffer) < 0)
		return 1;
	cmp_pin(cpu);

	/* micro: every case; close: none, ringtrace (overwrite), DPDK. */
	double (*micro[NCASE])(uint64_t, uint64_t) = {none_micro, rt_micro,    rt_micro,
						      dpdk_micro, floor_micro, floor_buf_micro,
						      tsc_micro};
	double (*closef[NCASE])(uint64_t, uint64_t) = {none_close, rt_close, NULL, dpdk_close,
						       NULL,       NULL,     NULL};
	ringtrace_rb *rb_of[NCASE] = {NULL, rb_over, rb_disc, NULL, NULL, NULL, NULL};
	static const char *names[NCASE] = {
		"none", "ringtrace", "ringtrace-discard", "dpdk", "floor", "floor-buffer", "rdtsc"};
	uint64_t emitted[NCASE] = {0};
	double *v[2][NCASE];
	for (int p = 0; p < 2; p++)
		for (int k = 0; k < NCASE; k++)
			if (!(v[p][k] = calloc((size_t)rounds, sizeof(double))))
				cmp_die("out of memory");
	use_buffer(rb_over);
	/* Warm-up: every loop and buffer, twice. */
	for (int w = 0; w < 2; w++)
		for (int k = 0; k < NCASE; k++) {
			if (rb_of[k])
				use_buffer(rb_of[k]);
			micro[k](0, chunk);
			emitted[k] += chunk;
			if (closef[k]) {
				closef[k](0, close_chunk);
				emitted[k] += close_chunk;
			}
		}
	for (int r = 0; r < rounds; r++) {
		for (int p = 0; p < 2; p++)
			for (int j = 0; j < NCASE; j++) {
				int k = (j + r) % NCASE;
				if (p && !closef[k])
					continue;
				if (rb_of[k])
					use_buffer(
						rb_of[k]); /* (the chunk's first event re-caches: 1 in 10^5) */
				v[p][k][r] = p ? closef[k]((uint64_t)r * close_chunk, close_chunk)
					       : micro[k]((uint64_t)r * chunk, chunk);
				emitted[k] += p ? close_chunk : chunk;
			}
	}

	use_buffer(NULL);
	__atomic_store_n(&drain.stop, 1, __ATOMIC_RELEASE);
	pthread_join(drainer, NULL);
	int ok = cmp_pair_dpdk_finish() == 0;

	printf("PAIR rounds=%d chunk=%llu close_chunk=%llu buffer=%llu\n", rounds,
	       (unsigned long long)chunk, (unsigned long long)close_chunk,
	       (unsigned long long)buffer);
	pair_print(v, closef, names, rounds);

	ok &= check_buffer("ringtrace", rb_over, emitted[C_RT], 0);
	ok &= check_buffer("ringtrace-discard", rb_disc, emitted[C_RT_DISCARD], 1);
	ringtrace_rb_destroy(rb_over);
	ringtrace_rb_destroy(rb_disc);
	return ok ? 0 : 1;
}
