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
 * trace_cmp_int() (ringtrace) and with cmp_trace_ev() (DPDK); seed 004's
 * loop (close(-1) then the event) with each. Both tracers in overwrite
 * mode (flight recorder, 4 MiB by default: a few hundred rounds do not
 * fit any buffer), so neither consumes while timing: ringtrace's session
 * writes its buffer at stop, DPDK saves its own. The session starts
 * before the EAL, so ringtrace's recorder thread runs on the CPUs the
 * program was started with (bench/compare: the other CPU); the EAL pins
 * this thread to --cpu.
 *
 * Checked: ringtrace's own accounting (hit + missed, from the trace's
 * metadata) must equal the events emitted, or the program fails. DPDK's
 * overwrite buffer keeps only what follows its last wrap and counts
 * nothing: its event count is not checked (cmp-dpdk's discard runs are).
 *
 * Output (stdout), one line per figure, `key=value` tokens:
 *   PAIR rounds= chunk= close_chunk= buffer=
 *   PAIR case=<micro|close>-<none|ringtrace|dpdk> median= p10= p90= min= max=  (ns)
 *   PAIR ratio=dpdk/ringtrace median= p10= p90= min= max=   (per-round ratios)
 *   PAIR overhead=close-<ringtrace|dpdk> median= ...   (percent)
 *   PAIR count=ringtrace emitted= hit= missed= overrun= ok=<0|1>
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ringtrace/session.h>

#include "cmp_pair.h"
#include "cmp_rt_events.h"

#define CMP_PAIR_NONE(v) ((void)(v))
CMP_PAIR_LOOPS(none, CMP_PAIR_NONE)
CMP_PAIR_LOOPS(rt, trace_cmp_int)

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Quantile q of v[0..n) (sorted in place), nearest rank. */
static double quantile(double *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	int i = (int)(q * (n - 1) + 0.5);
	return v[i];
}

static void print_stats(const char *key, const char *name, const double *v, int n)
{
	double *s = malloc(sizeof(double) * (size_t)n);
	if (!s)
		cmp_die("out of memory");
	memcpy(s, v, sizeof(double) * (size_t)n);
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

int main(int argc, char **argv)
{
	int cpu = 0, rounds = 400;
	uint64_t chunk = 100000, close_chunk = 5000, buffer = 4u << 20;
	const char *dir = NULL;
	static const struct option lo[] = {
		{"cpu", 1, 0, 'c'},   {"rounds", 1, 0, 'r'}, {"chunk", 1, 0, 'n'},
		{"close-chunk", 1, 0, 'C'}, {"dir", 1, 0, 'd'}, {"buffer", 1, 0, 'b'},
		{"help", 0, 0, 'h'},  {0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'c': cpu = (int)parse_u64(optarg, 0); break;
		case 'r': rounds = (int)parse_u64(optarg, 1); break;
		case 'n': chunk = parse_u64(optarg, 1); break;
		case 'C': close_chunk = parse_u64(optarg, 1); break;
		case 'd': dir = optarg; break;
		case 'b': buffer = parse_u64(optarg, 1); break;
		default:
			fprintf(stderr, "usage: cmp-pair --dir DIR [--cpu C] [--rounds R] [--chunk N]\n"
					"                [--close-chunk N] [--buffer BYTES]   (run by bench/compare)\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (!dir)
		cmp_die("--dir DIR is required (scratch: DIR/ringtrace, DIR/dpdk)");
	char rt_dir[4096], dp_dir[4096];
	snprintf(rt_dir, sizeof(rt_dir), "%s/ringtrace", dir);
	snprintf(dp_dir, sizeof(dp_dir), "%s/dpdk", dir);
	if (mkdir(dp_dir, 0755) != 0 && errno != EEXIST)
		cmp_die("cannot create %s: %s", dp_dir, strerror(errno));

	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = rt_dir;
	cfg.events = "cmp_int";
	cfg.mode = RINGTRACE_RB_OVERWRITE;
	cfg.pool_size = (size_t)buffer;
	if (ringtrace_session_start(&cfg) < 0)
		cmp_die("ringtrace_session_start: %s", ringtrace_last_error());
	if (cmp_pair_dpdk_init(cpu, dp_dir, buffer) < 0)
		return 1;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		cmp_die("cannot pin to the CPU: %s", strerror(errno));

	double (*micro[3])(uint64_t, uint64_t) = {none_micro, rt_micro, dpdk_micro};
	double (*closef[3])(uint64_t, uint64_t) = {none_close, rt_close, dpdk_close};
	static const char *names[3] = {"none", "ringtrace", "dpdk"};
	double *v[2][3];
	for (int p = 0; p < 2; p++)
		for (int k = 0; k < 3; k++)
			if (!(v[p][k] = calloc((size_t)rounds, sizeof(double))))
				cmp_die("out of memory");
	uint64_t rt_emitted = 0;
	/* Warm-up: every loop, code and buffers, twice. */
	for (int w = 0; w < 2; w++)
		for (int k = 0; k < 3; k++) {
			micro[k](0, chunk);
			closef[k](0, close_chunk);
		}
	rt_emitted += 2 * (chunk + close_chunk);
	for (int r = 0; r < rounds; r++) {
		for (int j = 0; j < 3; j++) {
			int k = (j + r) % 3;
			v[0][k][r] = micro[k]((uint64_t)r * chunk, chunk);
		}
		for (int j = 0; j < 3; j++) {
			int k = (j + r) % 3;
			v[1][k][r] = closef[k]((uint64_t)r * close_chunk, close_chunk);
		}
		rt_emitted += chunk + close_chunk;
	}

	if (ringtrace_session_stop() < 0)
		cmp_die("ringtrace_session_stop: %s", ringtrace_last_error());
	cmp_pair_dpdk_finish();

	printf("PAIR rounds=%d chunk=%llu close_chunk=%llu buffer=%llu\n", rounds,
	       (unsigned long long)chunk, (unsigned long long)close_chunk, (unsigned long long)buffer);
	for (int p = 0; p < 2; p++)
		for (int k = 0; k < 3; k++) {
			char name[64];
			snprintf(name, sizeof(name), "%s-%s", p ? "close" : "micro", names[k]);
			print_stats("case", name, v[p][k], rounds);
		}
	double *t = malloc(sizeof(double) * (size_t)rounds);
	if (!t)
		cmp_die("out of memory");
	for (int r = 0; r < rounds; r++)
		t[r] = v[0][2][r] / v[0][1][r];
	print_stats("ratio", "dpdk/ringtrace", t, rounds);
	for (int k = 1; k < 3; k++) {
		for (int r = 0; r < rounds; r++)
			t[r] = (v[1][k][r] - v[1][0][r]) / v[1][0][r] * 100.0;
		char name[64];
		snprintf(name, sizeof(name), "close-%s", names[k]);
		print_stats("overhead", name, t, rounds);
	}
	free(t);

	/* ringtrace's accounting, from the metadata its session wrote. */
	unsigned long long hit, missed, overrun;
	cmp_ringtrace_stats(rt_dir, &hit, &missed, &overrun);
	int ok = hit + missed == rt_emitted;
	printf("PAIR count=ringtrace emitted=%llu hit=%llu missed=%llu overrun=%llu ok=%d\n",
	       (unsigned long long)rt_emitted, hit, missed, overrun, ok);
	if (!ok) {
		fprintf(stderr, "cmp-pair: ringtrace accounted %llu + %llu events of %llu emitted\n", hit,
			missed, (unsigned long long)rt_emitted);
		return 1;
	}
	return 0;
}
