/*
 * bench/probes/fastpath.c - where the recording fast path's nanoseconds go
 * on a machine where it does not hide under the cycle counter's read.
 *
 * A probe kept apart from the benchmarks. Where the `rdtsc` is slow
 * (microcoded) it covers the rest of the event, and cmp-pair puts
 * ringtrace's event at the floor (rdtsc and three stores); where it is
 * cheaper, part of the event shows beyond it, and cmp-pair puts ringtrace
 * well above DPDK's event, which is near the floor. This probe says which
 * pieces of the path that part is.
 *
 * This program is a model of the real path, not the real path: the same
 * loads and stores in the same order, with the same placement (the call
 * site calls run(), which tail-calls rec(); the thread's RCU reader node
 * mapped on its own page; the writer slot in a MAP_SHARED mapping with the
 * pages; the cached writer state in TLS), compiled with knobs that drop
 * one piece at a time, so that each piece's cost can be seen without
 * breaking the library. The real path (include/ringtrace/static/ring.h,
 * event.h, tracepoint.h) was measured with the same pieces removed
 * through a copy of the headers and cmp-pair (docs/benchmarks-history.md,
 * "where the steady-state nanoseconds go"); this probe reproduces those figures
 * (1.2-1.25 x the floor for the whole path) so that the experiment can be
 * repeated on any machine in a minute.
 *
 * Each round times 100,000 events of the floor, then 100,000 of the model,
 * in one process; printed: the median, p10 and p90 over 400 rounds of the
 * per-round ratio model/floor (the machine's drift cancels within a
 * round), then one long block of each in ns an event.
 *
 * Knobs (-D at compile time):
 *   PROBE_NO_RCU     no read-side section (the node's seq store and clear)
 *   PROBE_NO_COOKIE  no check of the events cookie against the cached one
 *   PROBE_NO_NEST    no nest flag (load, raise, clear: signal safety)
 *   PROBE_NO_COMMIT  no store of the page's commit offset (live readers,
 *                    flush and crash recovery read it)
 *   PROBE_NO_HIT     no increment of the slot's committed-event counter
 *                    (the accounting)
 *   PROBE_INLINE     run() and rec() inline in the loop (no calls)
 *   PROBE_NO_TSC     a load instead of rdtsc, in the model and the floor:
 *                    what the path costs when nothing hides it
 *
 * Build and run, every variant (x86-64):
 *   for v in "" -DPROBE_NO_RCU -DPROBE_NO_COOKIE -DPROBE_NO_NEST -DPROBE_NO_COMMIT \
 *            -DPROBE_NO_HIT -DPROBE_INLINE -DPROBE_NO_TSC; do
 *     gcc -O2 $v bench/probes/fastpath.c -o /tmp/fastpath && \
 *       echo "${v:-all}: $(/tmp/fastpath)"; done
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define PROBE_PAGE 65536u
#define PROBE_PAGES 64u
#define PROBE_HEADER 0x60u /* the page header's size; events start here */
#define PROBE_COMMIT 0x50u /* offset of the header's commit field */
#define PROBE_N 100000
#define PROBE_ROUNDS 400

#ifdef PROBE_INLINE
#define PROBE_FN static inline __attribute__((always_inline))
#else
#define PROBE_FN static __attribute__((noinline))
#endif

static uint64_t probe_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#ifdef PROBE_NO_TSC
static uint64_t probe_fake_clock;
static inline uint64_t probe_ticks(void)
{
	uint64_t x;
	__asm__ __volatile__("mov %1, %0" : "=r"(x) : "m"(probe_fake_clock));
	return x;
}
#else
static inline uint64_t probe_ticks(void)
{
	return __builtin_ia32_rdtsc();
}
#endif

/* The shapes of the real structures' first fields (ringtrace/static/ring.h). */
struct probe_slot {
	uint32_t nest, steal, state, cur_page;
	uint64_t hit;
};
struct probe_wtls {
	uint64_t epoch;
	struct probe_slot *slot;
	char *page;
	uint32_t off, limit, res_end, pad;
	uint64_t last_ts;
};
struct probe_node {
	uint64_t seq;
};
struct probe_thr {
	struct probe_node *rnode;
	uint64_t cookie;
	struct probe_wtls *last_t;
};

static char *probe_pool;
static __thread struct probe_wtls probe_w;
static __thread struct probe_thr probe_thr;
static uint64_t probe_gp = 2;
static uint64_t probe_cookie = 6;
static uint32_t probe_state = 1;
static uint64_t probe_id_hdr = 5ull << 32;

/* The page switch, out of line as the real one: the next page of the pool. */
static __attribute__((noinline)) void probe_slow(int v)
{
	struct probe_wtls *t = probe_thr.last_t;
	size_t at = (size_t)(t->page - probe_pool);
	t->page = probe_pool + (at + PROBE_PAGE) % ((size_t)PROBE_PAGE * PROBE_PAGES);
	t->off = PROBE_HEADER;
	(void)v;
}

PROBE_FN void probe_rec(int v)
{
	struct probe_node *n = probe_thr.rnode;
#ifndef PROBE_NO_RCU
	if (__atomic_load_n(&n->seq, __ATOMIC_RELAXED))
		goto slow;
	__atomic_store_n(&n->seq, __atomic_load_n(&probe_gp, __ATOMIC_ACQUIRE), __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
#ifndef PROBE_NO_COOKIE
	if (__atomic_load_n(&probe_cookie, __ATOMIC_RELAXED) != probe_thr.cookie)
		goto out;
#endif
	struct probe_wtls *t = probe_thr.last_t;
	struct probe_slot *s = t->slot;
#ifndef PROBE_NO_NEST
	if (__atomic_load_n(&s->nest, __ATOMIC_RELAXED))
		goto out;
	__atomic_store_n(&s->nest, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
	uint32_t start = t->off, next = start + 16;
	__asm__("" : "+r"(next));
	uint64_t ts = probe_ticks();
	if (__builtin_expect(next > t->limit || ts - t->last_ts > 0xFFFFFFFFull ||
				     __atomic_load_n(&s->steal, __ATOMIC_RELAXED),
			     0)) {
#ifndef PROBE_NO_NEST
		__atomic_store_n(&s->nest, 0, __ATOMIC_RELAXED);
#endif
		goto out;
	}
	char *page = t->page;
	uint64_t *h = (uint64_t *)(void *)(page + start);
	*h = (uint64_t)(uint32_t)ts | probe_id_hdr | (4ull << 48);
	t->last_ts = ts;
	*(int *)(h + 1) = v;
	t->off = next;
#ifndef PROBE_NO_COMMIT
	__atomic_store_n((uint32_t *)(void *)(page + PROBE_COMMIT), next - 4, __ATOMIC_RELEASE);
#endif
#ifndef PROBE_NO_HIT
	__asm__ __volatile__("addq $1, %0" : "+m"(s->hit));
#endif
#ifndef PROBE_NO_NEST
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&s->nest, 0, __ATOMIC_RELEASE);
#endif
#ifndef PROBE_NO_RCU
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&n->seq, 0, __ATOMIC_RELEASE);
#endif
	return;
out:
#ifndef PROBE_NO_RCU
	__atomic_store_n(&n->seq, 0, __ATOMIC_RELEASE);
slow:
#endif
	(void)n;
	probe_slow(v);
}

PROBE_FN void probe_run(int v)
{
	if (__builtin_expect(__atomic_load_n(&probe_state, __ATOMIC_RELAXED) == 1, 1)) {
		probe_rec(v);
		return;
	}
	probe_slow(v);
}

static uint64_t probe_floor_buf[8192] __attribute__((aligned(64)));
static uint64_t probe_floor_pos __attribute__((aligned(64)));

/* bench/cmp/cmp_pair.c's floor: the least an event with a timestamp does. */
static __attribute__((noinline)) void probe_floor_loop(int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t p = __atomic_load_n(&probe_floor_pos, __ATOMIC_RELAXED);
		probe_floor_buf[p / 8] = probe_ticks();
		probe_floor_buf[p / 8 + 1] = (uint64_t)i;
		__atomic_store_n(&probe_floor_pos, (p + 16) & (sizeof(probe_floor_buf) - 1),
				 __ATOMIC_RELEASE);
		__asm__ __volatile__("" : : "r"(i));
	}
}

/* The call site: one load and a predicted branch, as a tracepoint's. */
static __attribute__((noinline)) void probe_model_loop(int n)
{
	for (int i = 0; i < n; i++) {
		if (__atomic_load_n(&probe_state, __ATOMIC_RELAXED))
			probe_run(i);
		__asm__ __volatile__("" : : "r"(i));
	}
}

static int probe_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(void)
{
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus) != 0)
		perror("fastpath: sched_setaffinity (measuring where the thread is)");
	/* The pages and, after them, the slot: one shared mapping, as a pool. */
	probe_pool = mmap(NULL, (size_t)PROBE_PAGE * (PROBE_PAGES + 1), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	/* The reader node: a private page of its own (src/event/rcu.c). */
	struct probe_node *node = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (probe_pool == MAP_FAILED || node == MAP_FAILED) {
		perror("fastpath: mmap");
		return 1;
	}
	probe_thr.rnode = node;
	probe_thr.cookie = probe_cookie;
	probe_thr.last_t = &probe_w;
	probe_w.slot = (struct probe_slot *)(void *)(probe_pool + (size_t)PROBE_PAGE * PROBE_PAGES +
						     0x580);
	probe_w.page = probe_pool;
	probe_w.off = PROBE_HEADER;
	probe_w.limit = PROBE_PAGE;
	probe_w.last_ts = probe_ticks();

	static double ratio[PROBE_ROUNDS];
	for (int r = 0; r < PROBE_ROUNDS; r++) {
		uint64_t t0 = probe_now();
		probe_floor_loop(PROBE_N);
		uint64_t t1 = probe_now();
		probe_model_loop(PROBE_N);
		uint64_t t2 = probe_now();
		ratio[r] = (double)(t2 - t1) / (double)(t1 - t0);
	}
	qsort(ratio, PROBE_ROUNDS, sizeof(ratio[0]), probe_cmp);
	uint64_t t0 = probe_now();
	probe_floor_loop(PROBE_N * 20);
	uint64_t t1 = probe_now();
	probe_model_loop(PROBE_N * 20);
	uint64_t t2 = probe_now();
	printf("model/floor median %.4f p10 %.4f p90 %.4f; floor %.2f ns, model %.2f ns an event\n",
	       ratio[PROBE_ROUNDS / 2], ratio[PROBE_ROUNDS / 10], ratio[PROBE_ROUNDS * 9 / 10],
	       (double)(t1 - t0) / (PROBE_N * 20.0), (double)(t2 - t1) / (PROBE_N * 20.0));
	return 0;
}
