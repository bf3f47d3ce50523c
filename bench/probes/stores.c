/*
 * bench/probes/stores.c - do more stores per event lengthen the tail?
 *
 * A probe for the tail latency, kept apart from the benchmarks.
 * ringtrace's recorded event makes ten stores (the read-side section's
 * two, nest twice, header, payload, last_ts, off, the page's commit, the
 * hit count) and a call; DPDK's makes three. A store that misses holds
 * back every later one (x86 stores become visible in order), so more
 * stores per event could make a stall reach the timed call sooner. This
 * models only that: each call reads the TSC and stores a header and a
 * payload, 16 bytes, streaming through BUF_MIB MiB (DPDK's and the
 * floor's pattern), then K more stores to lines that stay in the L1; each
 * call is timed as bench/cmp/cmp_harness.h times one (`lfence; rdtsc` ...
 * `rdtscp; lfence`), and the distribution is printed in ticks, the
 * timer's own cost included.
 *
 * What it showed is in docs/benchmarks-history.md ("the consumer's
 * give-backs").
 *
 * Build and run:
 *   gcc -O2 bench/probes/stores.c -o build/stores
 *   for k in 0 3 7 10; do taskset -c 1 build/stores 4 $k; done
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <x86intrin.h>

#define ST_N 2000000u
#define ST_WARMUP 50000u
#define ST_MAX_K 64

static char *st_buf;
static size_t st_size, st_off;
static uint64_t st_hot[ST_MAX_K][8] __attribute__((aligned(64)));
static int st_k;

/* Out of line, as ringtrace's recording function is. */
static __attribute__((noinline)) void st_emit(int v)
{
	uint64_t ts = __rdtsc();
	size_t o = st_off;
	if (o + 16 > st_size)
		o = 0;
	*(uint64_t *)(void *)(st_buf + o) = ts;
	*(int *)(void *)(st_buf + o + 8) = v;
	st_off = o + 16;
	for (int k = 0; k < st_k; k++)
		__atomic_store_n(&st_hot[k][0], ts, __ATOMIC_RELAXED);
}

static int st_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: stores BUF_MIB K   (K extra stores per call, 0-%d)\n",
			ST_MAX_K);
		return 2;
	}
	st_size = (size_t)strtoul(argv[1], NULL, 10) << 20;
	st_k = atoi(argv[2]);
	if (st_size < 4096 || st_k < 0 || st_k > ST_MAX_K) {
		fprintf(stderr, "stores: BUF_MIB >= 1, K in 0-%d\n", ST_MAX_K);
		return 2;
	}
	st_buf = mmap(NULL, st_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	uint32_t *t = mmap(NULL, ST_N * sizeof(*t), PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (st_buf == MAP_FAILED || t == MAP_FAILED) {
		perror("stores: mmap");
		return 1;
	}
	memset(st_buf, 1, st_size);
	memset(t, 0, ST_N * sizeof(*t));
	for (uint32_t i = 0; i < ST_WARMUP; i++)
		st_emit((int)i);
	unsigned aux;
	for (uint32_t i = 0; i < ST_N; i++) {
		_mm_lfence();
		uint64_t a = __rdtsc();
		st_emit((int)i);
		uint64_t b = __rdtscp(&aux);
		_mm_lfence();
		t[i] = (uint32_t)(b - a);
	}
	qsort(t, ST_N, sizeof(*t), st_cmp);
	printf("buffer %zu MiB, %d extra stores: ticks p50 %u, p99 %u, p99.5 %u, p99.9 %u, "
	       "p99.95 %u, p99.99 %u, max %u\n",
	       st_size >> 20, st_k, t[ST_N / 2], t[(uint64_t)ST_N * 99 / 100],
	       t[(uint64_t)ST_N * 995 / 1000], t[(uint64_t)ST_N * 999 / 1000],
	       t[(uint64_t)ST_N * 9995 / 10000], t[(uint64_t)ST_N * 9999 / 10000], t[ST_N - 1]);
	return 0;
}
