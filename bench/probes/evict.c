/*
 * bench/probes/evict.c - does evicting the L1 data cache between events
 * reproduce the machine's slow state?
 *
 * In the development VM's slow state (docs/benchmarks.md, "The machine")
 * ringtrace's event costs more over the floor (rdtsc and two stores)
 * while DPDK's does not. One explanation would be the host emptying the
 * guest's L1 data cache often (a flush on VM entry, another guest's
 * thread on the sibling), so that the lines an event touches are fetched
 * again, and ringtrace's event touches more lines than DPDK's. This probe
 * does that on demand: before every K-th event it reads a buffer of twice
 * the L1 data cache, one load per line (what is left in the L1 is that
 * buffer: every line of the event comes from the L2 again, dirty ones
 * written back first), and times, in alternating chunks of ~1 ms as
 * cmp-pair does:
 *
 *   none          the loop alone (bench/cmp's micro loop)
 *   ringtrace     trace_cmp_int(i) into a 4 MiB overwrite buffer, no reader
 *   dpdk          cmp_trace_ev(i), DPDK rte_trace, 4 MiB, overwrite
 *   floor         rdtsc, a 16-byte store into 64 KiB, a release store of
 *                 the position (cmp-pair's floor, with the probe's own rdtsc)
 *   floor-buffer  the same over 4 MiB
 *   rdtsc         the counter read alone: the machine's state
 *
 * for each row of --every (default none,1f,10,1): `none` no eviction;
 * `evict K` the read between two lfences before every K-th event (the
 * fences: the reads start after the previous event and the next event
 * after the reads, as around the host's flush, which a VM exit and entry
 * serialize; without them the events would overlap the reads and look
 * cheaper than they are); `fence K` the two lfences alone, to
 * tell what the eviction adds from what the serializing adds. An event's
 * own cost is its loop's time less the `none` loop's of the same row and
 * round (the eviction's time cancels): medians over rounds, with the
 * median's distribution-free 95% interval; the ratios are of the medians.
 * For row none, cmp-pair's whole-loop ratios are printed too.
 *
 * --busy spin|sweep starts, before anything else, a thread that runs
 * without pause on the CPUs the program was started with (evict.sh: the
 * other CPU): `spin` an add loop that touches no memory, `sweep` the
 * eviction's read of the buffer over and over. Where the two vCPUs share
 * a core on the host (SMT siblings share the L1 and the core's pipes),
 * `spin` slows every instruction and `sweep` evicts the L1 as a busy
 * neighbour would; where they do not, neither changes the figures.
 *
 * bench/probes/evict.sh BUILD_DIR builds this against any build of the
 * library (headers from that build's source tree) and runs it.
 *
 * Output: `EVICT key=value ...` lines (every=K case=... | net=... |
 * ratio=...), then a table.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ringtrace/event.h>
#include <ringtrace/ring.h>

#include "cmp_pair.h"
#include "cmp_rt_events.h"
#include "evict.h"

/* ---- the eviction ---------------------------------------------------------- */

static uint8_t *ev_buf;
static size_t ev_bytes; /* what an eviction reads */
static size_t ev_cur;   /* this row's: ev_bytes, or 0 (the fence alone) */

/*
 * A fence, the reads, a fence: the reads start once the previous event
 * is done and the next event once they are done, as around a flush by
 * the host (a VM exit and entry serialize the CPU); else the events would
 * overlap the eviction's loads and look cheaper than they are. Rows
 * "fence K" run the fences alone, to tell what the eviction adds from
 * what serializing the events every K adds.
 */
__attribute__((noinline)) void evict_touch(void)
{
	uint64_t s = 0;
	__asm__ __volatile__("lfence" : : : "memory");
	for (size_t o = 0; o < ev_cur; o += 64)
		s += *(volatile uint8_t *)(ev_buf + o);
	__asm__ __volatile__("lfence" : : "r"(s) : "memory");
}

/* ---- the busy neighbour (--busy) ------------------------------------------- */

static volatile int busy_stop;
static uint8_t *busy_buf;

static void *busy_thread(void *arg)
{
	int sweep = *(const int *)arg;
	uint64_t x = 1, s = 0;
	while (!busy_stop) {
		if (sweep) {
			for (size_t o = 0; o < ev_bytes; o += 64)
				s += *(volatile uint8_t *)(busy_buf + o);
		} else {
			for (int i = 0; i < 4096; i++) {
				x = x * 6364136223846793005ull + 1442695040888963407ull;
				__asm__ __volatile__("" : "+r"(x));
			}
		}
	}
	__asm__ __volatile__("" : : "r"(s), "r"(x));
	return NULL;
}

/* ---- the cases ------------------------------------------------------------- */

#define EVICT_NONE(v) ((void)(v))
EVICT_LOOP(none, EVICT_NONE)
EVICT_LOOP(rt, trace_cmp_int)

static inline uint64_t ev_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

#define EV_FLOOR_BIG (4u << 20)
static uint64_t floor_small[8192] __attribute__((aligned(64)));
static uint64_t floor_big[EV_FLOOR_BIG / sizeof(uint64_t)] __attribute__((aligned(4096)));
static uint64_t floor_small_pos __attribute__((aligned(64)));
static uint64_t floor_big_pos __attribute__((aligned(64)));

#define FLOOR_EMIT_TO(arr, posv, v)                                                          \
	do {                                                                                 \
		uint64_t pos = __atomic_load_n(&(posv), __ATOMIC_RELAXED);                   \
		uint64_t *slot = &(arr)[pos / sizeof(uint64_t)];                             \
		slot[0] = ev_rdtsc();                                                        \
		slot[1] = (uint64_t)(v);                                                     \
		__atomic_store_n(&(posv), (pos + 16) & (sizeof(arr) - 1), __ATOMIC_RELEASE); \
	} while (0)
#define FLOOR_EMIT(v) FLOOR_EMIT_TO(floor_small, floor_small_pos, v)
#define FLOOR_BUF_EMIT(v) FLOOR_EMIT_TO(floor_big, floor_big_pos, v)
EVICT_LOOP(floor, FLOOR_EMIT)
EVICT_LOOP(floor_buf, FLOOR_BUF_EMIT)

#define TSC_EMIT(v)                                 \
	do {                                        \
		uint64_t tsc_ = ev_rdtsc();         \
		__asm__ volatile("" : : "r"(tsc_)); \
		(void)(v);                          \
	} while (0)
EVICT_LOOP(tsc, TSC_EMIT)

enum { C_NONE, C_RT, C_DPDK, C_FLOOR, C_FLOOR_BUF, C_TSC, NCASE };
static const char *const names[NCASE] = {"none",  "ringtrace",    "dpdk",
					 "floor", "floor-buffer", "rdtsc"};
static double (*const loops[NCASE])(uint64_t, uint64_t, uint64_t) = {
	none_evict, rt_evict, dpdk_evict, floor_evict, floor_buf_evict, tsc_evict};

#define MAX_EVERY 8

struct ev_opts {
	int cpu, rounds, nevery;
	uint64_t every[MAX_EVERY];
	int fence_only[MAX_EVERY]; /* "Kf": the fence alone every K events, no read */
	uint64_t buffer;
	const char *dir;
	int busy; /* 0 none, 1 spin, 2 sweep */
};

/* ---- statistics -------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct q3 {
	double med, p10, p90, lo, hi; /* lo, hi: the median's 95% interval */
};

static struct q3 quantiles(const double *v, int n)
{
	double *s = malloc(sizeof(double) * (size_t)n);
	if (!s)
		cmp_die("out of memory");
	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	double h = 0.98 * sqrt((double)n);
	int l = (int)floor(n / 2.0 - h), u = (int)ceil(n / 2.0 + h);
	struct q3 q = {s[(n - 1) / 2], s[(int)(0.1 * (n - 1) + 0.5)], s[(int)(0.9 * (n - 1) + 0.5)],
		       s[l < 0 ? 0 : l], s[u > n - 1 ? n - 1 : u]};
	free(s);
	return q;
}

static void print_q(const char *row, const char *key, const char *name, const double *v, int n)
{
	struct q3 q = quantiles(v, n);
	printf("EVICT row=\"%s\" %s=%s median=%.4f p10=%.4f p90=%.4f lo95=%.4f hi95=%.4f\n", row,
	       key, name, q.med, q.p10, q.p90, q.lo, q.hi);
}

/* ---- options --------------------------------------------------------------- */

static uint64_t parse_u64(const char *s, uint64_t min)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > 1000000000000ull)
		cmp_die("bad number '%s'", s);
	return v;
}

static void parse_every(const char *s, struct ev_opts *o)
{
	char *copy = strdup(s), *save = NULL;
	if (!copy)
		cmp_die("out of memory");
	o->nevery = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (o->nevery == MAX_EVERY)
			cmp_die("--every: at most %d values", MAX_EVERY);
		size_t len = strlen(t);
		int fence = len > 1 && t[len - 1] == 'f';
		if (fence)
			t[len - 1] = 0;
		o->fence_only[o->nevery] = fence;
		o->every[o->nevery++] = strcmp(t, "none") == 0 ? 0 : parse_u64(t, fence);
	}
	free(copy);
	if (!o->nevery)
		cmp_die("--every: no value in '%s'", s);
}

static int ev_parse_args(int argc, char **argv, struct ev_opts *o)
{
	static const struct option lo[] = {
		{"cpu", 1, 0, 'c'},   {"rounds", 1, 0, 'r'}, {"every", 1, 0, 'e'},
		{"bytes", 1, 0, 'B'}, {"dir", 1, 0, 'd'},    {"buffer", 1, 0, 'b'},
		{"busy", 1, 0, 'y'},  {"help", 0, 0, 'h'},   {0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->cpu = (int)parse_u64(optarg, 0);
			break;
		case 'r':
			o->rounds = (int)parse_u64(optarg, 1);
			break;
		case 'e':
			parse_every(optarg, o);
			break;
		case 'B':
			ev_bytes = (size_t)parse_u64(optarg, 64);
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'b':
			o->buffer = parse_u64(optarg, 65536);
			break;
		case 'y':
			if (strcmp(optarg, "spin") && strcmp(optarg, "sweep") &&
			    strcmp(optarg, "none"))
				cmp_die("--busy: '%s' is not spin, sweep or none", optarg);
			o->busy = optarg[0] == 's' ? (optarg[1] == 'p' ? 1 : 2) : 0;
			break;
		default:
			fprintf(stderr,
				"usage: evict --dir DIR [--cpu C] [--rounds R] [--every K,K,...]\n"
				"             [--bytes EVICTION_BYTES] [--buffer BYTES] [--busy spin|sweep]\n"
				"  (run by bench/probes/evict.sh; --every 0 or none: no eviction;\n"
				"   Kf: the fence alone every K; default none,1f,10,1;\n"
				"   --bytes default: twice the L1 data cache)\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (!o->dir)
		cmp_die("--dir DIR is required (DPDK saves its trace there)");
	return -1;
}

/* ---- the run ---------------------------------------------------------------- */

/* Events per chunk for eviction every K: ~1 ms of the floor's loop, a multiple of K. */
static uint64_t chunk_for(uint64_t every, int fence_only)
{
	ev_cur = fence_only ? 0 : ev_bytes;
	uint64_t probe = every ? every * (2000 / every + 1) : 20000;
	floor_evict(0, probe, every); /* warm */
	double ns = floor_evict(0, probe, every);
	uint64_t n = (uint64_t)(1e6 / (ns > 1 ? ns : 1));
	if (n < 1000)
		n = 1000;
	if (every)
		n = (n + every - 1) / every * every;
	return n;
}

struct ev_run {
	const struct ev_opts *o;
	uint64_t chunk[MAX_EVERY];
	double *v[MAX_EVERY][NCASE]; /* [every][case][round]: ns per event, whole loop */
	uint64_t emitted_rt;
};

static void run_rounds(struct ev_run *R)
{
	const struct ev_opts *o = R->o;
	/* warm-up: each loop and buffer, twice */
	for (int w = 0; w < 2; w++)
		for (int e = 0; e < o->nevery; e++)
			for (int k = 0; k < NCASE; k++) {
				ev_cur = o->fence_only[e] ? 0 : ev_bytes;
				loops[k](0, R->chunk[e], o->every[e]);
				if (k == C_RT)
					R->emitted_rt += R->chunk[e];
			}
	for (int r = 0; r < o->rounds; r++)
		for (int e = 0; e < o->nevery; e++)
			for (int j = 0; j < NCASE; j++) {
				int k = (j + r) % NCASE;
				ev_cur = o->fence_only[e] ? 0 : ev_bytes;
				R->v[e][k][r] = loops[k]((uint64_t)r * R->chunk[e], R->chunk[e],
							 o->every[e]);
				if (k == C_RT)
					R->emitted_rt += R->chunk[e];
			}
}

/* Row e's label: "none", "fence K" or "evict K". */
static void row_label(const struct ev_opts *o, int e, char *lab, size_t len)
{
	if (!o->every[e])
		snprintf(lab, len, "none");
	else
		snprintf(lab, len, "%s %llu", o->fence_only[e] ? "fence" : "evict",
			 (unsigned long long)o->every[e]);
}

/* Prints the EVICT lines of row e; fills its cases' net costs (loop less none). */
static void report_row(const struct ev_run *R, int e, double **net, struct q3 *tab)
{
	const struct ev_opts *o = R->o;
	int n = o->rounds;
	char lab[32];
	row_label(o, e, lab, sizeof(lab));
	printf("EVICT row=\"%s\" chunk=%llu\n", lab, (unsigned long long)R->chunk[e]);
	for (int k = 0; k < NCASE; k++) {
		print_q(lab, "case", names[k], R->v[e][k], n);
		for (int r = 0; r < n; r++)
			net[k][r] = R->v[e][k][r] - R->v[e][C_NONE][r];
		if (k != C_NONE)
			print_q(lab, "net", names[k], net[k], n);
		tab[k] = quantiles(net[k], n);
	}
}

/* The table: each case's cost per row, the ratios of the medians, what each row adds. */
static void report(const struct ev_run *R)
{
	const struct ev_opts *o = R->o;
	int n = o->rounds;
	double *net[NCASE];
	struct q3 tab[MAX_EVERY][NCASE];
	for (int k = 0; k < NCASE; k++)
		if (!(net[k] = malloc(sizeof(double) * (size_t)n)))
			cmp_die("out of memory");
	for (int e = 0; e < o->nevery; e++)
		report_row(R, e, net, tab[e]);

	printf("\nns per event: the loop less the same loop without an event, same eviction and\n"
	       "round; median over %d rounds (ringtrace's and the floor's 95%% interval); ratios of\n"
	       "the medians\n",
	       n);
	printf("%-9s %7s %7s %20s %7s %7s %19s %8s %8s %8s\n", "row", "rdtsc", "dpdk", "ringtrace",
	       "floor4M", "loop", "floor", "rt/floor", "dpdk/fl", "dpdk/rt");
	for (int e = 0; e < o->nevery; e++) {
		char lab[32];
		row_label(o, e, lab, sizeof(lab));
		struct q3 *t = tab[e];
		double loop = quantiles(R->v[e][C_NONE], n).med;
		printf("%-9s %7.2f %7.2f %7.2f [%5.2f,%5.2f] %7.2f %7.2f %6.2f [%5.2f,%5.2f] %8.3f "
		       "%8.3f %8.3f\n",
		       lab, t[C_TSC].med, t[C_DPDK].med, t[C_RT].med, t[C_RT].lo, t[C_RT].hi,
		       t[C_FLOOR_BUF].med, loop, t[C_FLOOR].med, t[C_FLOOR].lo, t[C_FLOOR].hi,
		       t[C_RT].med / t[C_FLOOR].med, t[C_DPDK].med / t[C_FLOOR].med,
		       t[C_DPDK].med / t[C_RT].med);
	}
	for (int e = 0; e < o->nevery; e++) {
		if (o->every[e])
			continue;
		struct q3 ts = quantiles(R->v[e][C_TSC], n), fl = quantiles(R->v[e][C_FLOOR], n);
		double *t = net[0];
		for (int r = 0; r < n; r++)
			t[r] = R->v[e][C_RT][r] / R->v[e][C_FLOOR][r];
		struct q3 rf = quantiles(t, n);
		for (int r = 0; r < n; r++)
			t[r] = R->v[e][C_DPDK][r] / R->v[e][C_FLOOR][r];
		struct q3 df = quantiles(t, n);
		printf("machine state (row none, whole loops as cmp-pair's): rdtsc %.2f ns, floor "
		       "%.2f ns; per-round ratios ringtrace/floor %.3f [p10 %.3f, p90 %.3f], "
		       "dpdk/floor %.3f [p10 %.3f, p90 %.3f]\n",
		       ts.med, fl.med, rf.med, rf.p10, rf.p90, df.med, df.p10, df.p90);
		for (int f = 0; f < o->nevery; f++) {
			if (!o->every[f])
				continue;
			char lab[32];
			row_label(o, f, lab, sizeof(lab));
			printf("added by \"%s\" (ns per event): ringtrace %+.2f, dpdk %+.2f, floor "
			       "%+.2f, floor4M %+.2f, rdtsc %+.2f\n",
			       lab, tab[f][C_RT].med - tab[e][C_RT].med,
			       tab[f][C_DPDK].med - tab[e][C_DPDK].med,
			       tab[f][C_FLOOR].med - tab[e][C_FLOOR].med,
			       tab[f][C_FLOOR_BUF].med - tab[e][C_FLOOR_BUF].med,
			       tab[f][C_TSC].med - tab[e][C_TSC].med);
		}
	}
	for (int k = 0; k < NCASE; k++)
		free(net[k]);
}

static ringtrace_rb *make_buffer(uint64_t bytes)
{
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.mode = RINGTRACE_RB_OVERWRITE;
	cfg.pool_size = (size_t)bytes;
	ringtrace_rb *rb;
	if (ringtrace_rb_create(&cfg, &rb) < 0)
		cmp_die("ringtrace_rb_create: %s", ringtrace_last_error());
	return rb;
}

int main(int argc, char **argv)
{
	struct ev_opts o = {.cpu = 0,
			    .rounds = 200,
			    .nevery = 4,
			    .every = {0, 1, 10, 1},
			    .fence_only = {0, 1, 0, 0},
			    .buffer = 4u << 20,
			    .dir = NULL};
	int status = ev_parse_args(argc, argv, &o);
	if (status >= 0)
		return status;
	if (!ev_bytes) {
		long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
		ev_bytes = 2 * (size_t)(l1 > 0 ? l1 : 32768);
	}
	ev_buf = mmap(NULL, ev_bytes, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (ev_buf == MAP_FAILED)
		cmp_die("mmap: %s", strerror(errno));
	memset(ev_buf, 1, ev_bytes);
	memset(floor_big, 0, sizeof(floor_big));
	pthread_t busy;
	int sweep = o.busy == 2;
	if (o.busy) {
		busy_buf = mmap(NULL, ev_bytes, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (busy_buf == MAP_FAILED)
			cmp_die("mmap: %s", strerror(errno));
		memset(busy_buf, 2, ev_bytes);
		if (pthread_create(&busy, NULL, busy_thread, &sweep) != 0)
			cmp_die("cannot start the busy thread");
	}

	if (ringtrace_event_enable("cmp_int") < 1)
		cmp_die("cannot enable cmp_int: %s", ringtrace_last_error());
	ringtrace_rb *rb = make_buffer(o.buffer);
	if (ringtrace_events_set_buffer(rb) < 0)
		cmp_die("ringtrace_events_set_buffer: %s", ringtrace_last_error());
	if (cmp_pair_dpdk_init(o.cpu, o.dir, o.buffer) < 0)
		return 1;
	cmp_pin(o.cpu);

	struct ev_run R = {.o = &o, .emitted_rt = 0};
	for (int e = 0; e < o.nevery; e++) {
		R.chunk[e] = chunk_for(o.every[e], o.fence_only[e]);
		for (int k = 0; k < NCASE; k++)
			if (!(R.v[e][k] = calloc((size_t)o.rounds, sizeof(double))))
				cmp_die("out of memory");
	}
	printf("EVICT rounds=%d bytes=%zu buffer=%llu cpu=%d busy=%s\n", o.rounds, ev_bytes,
	       (unsigned long long)o.buffer, o.cpu,
	       o.busy ? (o.busy == 1 ? "spin" : "sweep") : "none");
	run_rounds(&R);

	ringtrace_events_set_buffer(NULL);
	if (o.busy) {
		busy_stop = 1;
		pthread_join(busy, NULL);
	}
	int ok = cmp_pair_dpdk_finish() == 0;
	report(&R);

	struct ringtrace_rb_stats st;
	if (ringtrace_rb_get_stats(rb, &st) < 0)
		cmp_die("ringtrace_rb_get_stats: %s", ringtrace_last_error());
	int counted = st.hit + st.missed == R.emitted_rt;
	printf("EVICT count=ringtrace emitted=%llu hit=%llu missed=%llu ok=%d\n",
	       (unsigned long long)R.emitted_rt, (unsigned long long)st.hit,
	       (unsigned long long)st.missed, counted);
	ringtrace_rb_destroy(rb);
	return ok && counted ? 0 : 1;
}
