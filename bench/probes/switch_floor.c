/*
 * bench/probes/switch_floor.c - how cheap can a page switch be?
 *
 * A probe for the overwrite p99.99 target (docs/benchmarks-history.md,
 * "where a page switch's time goes"). bench/compare's tail part puts
 * ringtrace's page switch (one call in 4,089) at its p99.99, against
 * DPDK's overwrite mode, which has no periodic work. This probe times,
 * the way bench/compare's harness does (`lfence; rdtsc` ... `rdtscp;
 * lfence` around each call, one 4-byte time a call kept in a 4 MB array,
 * the timer's median cost subtracted), minimal tracers written for the
 * question, beside ringtrace itself:
 *
 *   flat      a 4 MiB ring of 16-byte records that wraps (what DPDK's
 *             overwrite mode does: no page, no header, nothing shared)
 *   paged     64 KiB pages of a 4 MiB pool, each with a header: an event
 *             is a 16-byte record and the page's commit offset; at a
 *             page's end a switch (a function of its own) closes the page
 *             (3 header fields), takes the next page of a private ring
 *             and writes its header (10 fields); 2 KiB before the end the
 *             next header's lines are prefetched (ringtrace's warm-up)
 *   paged+pub the same, and the switch publishes the full page as a
 *             shared queue would (a locked add on a shared position and a
 *             store into the position's cell) and reads the recycled
 *             page's event count for the overrun (a plain add)
 *   rb        ringtrace's ring buffer alone: ringtrace_rb_reserve() and
 *             ringtrace_rb_commit() of a 4-byte payload into an overwrite
 *             pool of 4 MiB (64 KiB pages) of its own, no session: its
 *             switch without the events layer's slow function
 *   ringtrace trace_cmp_int() (bench/compare's event) in an overwrite
 *             session of 4 MiB, as bench/compare's tail part runs it
 *
 * It prints, per case and round, the calibrated p50, p99.9, p99.99 and
 * max in ns and, for every paged case, the p50, p75 and p90 of its
 * switching calls (ringtrace's: those after which the thread's writer
 * state holds another page) and of its warm-up marks (the calls that
 * passed the mark: ringtrace's thread state's limit moved), steadier
 * figures than a p99.99 on a noisy machine; and how many other calls
 * took more than 30 ns (interrupts and the like: compare with "flat"),
 * and of those how many came just after a switch or a mark. What the
 * paged cases show is a floor: no tracer that keeps
 * headered pages can switch for less than its "paged" figure on
 * this machine, and none that publishes them for less than "paged+pub".
 *
 * Build (after `cmake --build build`):
 *   gcc -O2 -Iinclude -Ibench/cmp bench/probes/switch_floor.c bench/cmp/cmp_rt_events.c \
 *       build/lib/libringtrace.a -lpthread -o build/switch_floor
 * Run (x86 only; the measured thread pins itself to CPU 0, the session's
 * recorder runs where the program was started):
 *   taskset -c 1 build/switch_floor /dev/shm/sf
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <x86intrin.h>

#include <ringtrace/ring.h>
#include <ringtrace/session.h>

#include "cmp_rt_events.h"
#include "cmp_tick.h"

#define SF_N 1000000u
#define SF_WARM 50000u
#define SF_ROUNDS 3
#define SF_POOL (4u << 20)
#define SF_PAGE 65536u
#define SF_NPAGES (SF_POOL / SF_PAGE)
#define SF_HDR 112u
#define SF_AHEAD 2048u

/* ---- flat: DPDK's overwrite mode, reduced to its stores ---- */

static char *sf_flat;
static uint32_t sf_flat_off;

static __attribute__((noinline)) void sf_flat_ev(int v)
{
	uint64_t *r = (uint64_t *)(void *)(sf_flat + sf_flat_off);
	r[0] = __rdtsc() | (7ull << 48);
	r[1] = (uint64_t)(uint32_t)v;
	sf_flat_off = (sf_flat_off + 16) & (SF_POOL - 1);
}

/* ---- paged: headered pages in a private ring ---- */

struct sf_hdr {
	uint64_t magic, stream, ts_begin, ts_end, content_size, packet_size, seq, events_before;
	uint32_t commit, events, tid, cpu, flags, pad;
	uint64_t comm[2];
};
_Static_assert(sizeof(struct sf_hdr) <= SF_HDR, "header");

static char *sf_pool;
static struct {
	char *page;
	uint32_t off, limit, idx;
	uint64_t seq, hit, overrun, switches, last_ts;
} sf;
static uint64_t sf_pos __attribute__((aligned(64)));
static uint32_t sf_cells[256] __attribute__((aligned(64)));

static inline struct sf_hdr *sf_h(uint32_t i)
{
	return (struct sf_hdr *)(void *)(sf_pool + (size_t)i * SF_PAGE);
}

static void sf_open(uint32_t i, uint64_t ts)
{
	struct sf_hdr *h = sf_h(i);
	h->magic = 0xC1FC1FC1;
	h->stream = 1;
	h->ts_begin = ts;
	h->ts_end = ts;
	h->content_size = SF_HDR * 8;
	h->packet_size = SF_PAGE * 8;
	h->seq = sf.seq++;
	h->events_before = sf.hit;
	h->events = 0;
	__atomic_store_n(&h->commit, SF_HDR, __ATOMIC_RELEASE);
	sf.page = (char *)h;
	sf.idx = i;
	sf.off = SF_HDR;
	sf.limit = SF_PAGE - SF_AHEAD;
}

static __attribute__((noinline)) void sf_switch(uint64_t ts, int publish)
{
	if (sf.limit < SF_PAGE) { /* the warm-up mark: the next header's lines */
		const char *n = (const char *)sf_h((sf.idx + 1) % SF_NPAGES);
		__builtin_prefetch(n, 1, 3);
		__builtin_prefetch(n + 64, 1, 3);
		if (publish) {
			__builtin_prefetch(&sf_pos, 1, 3);
			__builtin_prefetch(&sf_cells[(sf_pos + 1) & 255], 1, 3);
		}
		sf.limit = SF_PAGE;
		if (sf.off + 16 <= SF_PAGE)
			return;
	}
	struct sf_hdr *h = (struct sf_hdr *)(void *)sf.page;
	h->ts_end = sf.last_ts;
	h->events = (uint32_t)(sf.hit - h->events_before);
	h->content_size = (uint64_t)h->commit * 8;
	uint32_t next = (sf.idx + 1) % SF_NPAGES;
	if (publish) {
		uint64_t pos = __atomic_fetch_add(&sf_pos, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&sf_cells[pos & 255], sf.idx, __ATOMIC_RELEASE);
		sf.overrun += sf_h(next)->events;
	}
	sf.switches++;
	sf_open(next, ts);
}

static inline void sf_paged_ev(int v, int publish)
{
	uint64_t ts = __rdtsc();
	if (sf.off + 16 > sf.limit)
		sf_switch(ts, publish);
	uint64_t *r = (uint64_t *)(void *)(sf.page + sf.off);
	r[0] = ts | (7ull << 48);
	r[1] = (uint64_t)(uint32_t)v;
	sf.off += 16;
	sf.hit++;
	sf.last_ts = ts;
	__atomic_store_n(&((struct sf_hdr *)(void *)sf.page)->commit, sf.off, __ATOMIC_RELEASE);
}

static __attribute__((noinline)) void sf_paged(int v)
{
	sf_paged_ev(v, 0);
}

static __attribute__((noinline)) void sf_paged_pub(int v)
{
	sf_paged_ev(v, 1);
}

/* ---- the harness ---- */

enum { SF_EMPTY, SF_FLAT, SF_PAGED, SF_PAGED_PUB, SF_RB, SF_RINGTRACE, SF_KINDS };
static const char *const sf_names[] = {"empty", "flat", "paged", "paged+pub", "rb", "ringtrace"};
static ringtrace_rb *sf_rb;

static __attribute__((noinline)) void sf_rb_ev(int v)
{
	int32_t *p = ringtrace_rb_reserve(sf_rb, 7, sizeof(int32_t));
	if (p) {
		*p = v;
		ringtrace_rb_commit(sf_rb);
	}
}

static void sf_call(int kind, int v)
{
	switch (kind) {
	case SF_FLAT:
		sf_flat_ev(v);
		break;
	case SF_PAGED:
		sf_paged(v);
		break;
	case SF_PAGED_PUB:
		sf_paged_pub(v);
		break;
	case SF_RB:
		sf_rb_ev(v);
		break;
	case SF_RINGTRACE:
		trace_cmp_int(v);
		break;
	}
}

static int sf_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static uint32_t sf_rank(const uint32_t *s, uint32_t n, double q)
{
	uint64_t k = (uint64_t)(q * n + 0.999999);
	return s[(k < 1 ? 1 : k > n ? n : k) - 1];
}

/* times of each call; the switching calls'; the warm-up marks' */
static uint32_t *sf_t, *sf_sw, *sf_mk;

/*
 * The page the calling thread's writer state holds in rb's buffer (NULL
 * before its first event): a call after which it differs switched pages.
 * Read between timed calls, so the ring buffer's switches are told apart
 * as the minimal tracers' are (sf.switches).
 */
static char *sf_cur_page(ringtrace_rb *rb)
{
	const struct ringtrace_rb_head_ *h = (const struct ringtrace_rb_head_ *)(const void *)rb;
	return rb ? ringtrace_wtls_[h->idx].page : NULL;
}

/* Its warm-up mark (limit below the page's end until the mark is passed). */
static uint32_t sf_cur_limit(ringtrace_rb *rb)
{
	const struct ringtrace_rb_head_ *h = (const struct ringtrace_rb_head_ *)(const void *)rb;
	return rb ? ringtrace_wtls_[h->idx].limit : sf.limit;
}

static void sf_pcts(const char *what, uint32_t *v, uint32_t n, uint32_t overhead, double k)
{
	if (!n)
		return;
	qsort(v, n, sizeof(*v), sf_u32);
#define SF_CALK(x) ((x) > overhead ? (x)-overhead : 0) * k
	printf("   %s %u: p50 %.1f p75 %.1f p90 %.1f ns", what, n, SF_CALK(v[n / 2]),
	       SF_CALK(v[n * 3 / 4]), SF_CALK(v[n * 9 / 10]));
}

/* One case: warm-up, then SF_N calls each timed into the array. */
static void sf_case(int kind, uint32_t overhead, double tpn, uint32_t round)
{
	for (uint32_t i = 0; i < SF_WARM; i++)
		sf_call(kind, (int)i);
	uint32_t nsw = 0, nmk = 0, others = 0, after = 0, last = UINT32_MAX - 1;
	const uint32_t slow = overhead + (uint32_t)(30 * tpn); /* 30 ns, calibrated */
	ringtrace_rb *trb = kind == SF_RB          ? sf_rb
			    : kind == SF_RINGTRACE ? (ringtrace_rb *)ringtrace_events_rb_
						   : NULL;
	for (uint32_t i = 0; i < SF_N; i++) {
		uint64_t s0 = sf.switches, a, b;
		char *p0 = sf_cur_page(trb);
		uint32_t l0 = sf_cur_limit(trb);
		if (kind == SF_EMPTY) {
			a = cmp_tick_begin();
			b = cmp_tick_end();
		} else if (kind == SF_PAGED) {
			a = cmp_tick_begin();
			sf_paged((int)i);
			b = cmp_tick_end();
		} else if (kind == SF_PAGED_PUB) {
			a = cmp_tick_begin();
			sf_paged_pub((int)i);
			b = cmp_tick_end();
		} else {
			a = cmp_tick_begin();
			sf_call(kind, (int)i);
			b = cmp_tick_end();
		}
		uint64_t d = b - a;
		sf_t[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
		if (sf.switches != s0 || sf_cur_page(trb) != p0) {
			last = i;
			if (nsw < SF_N / 64)
				sf_sw[nsw++] = sf_t[i];
		} else if (sf_cur_limit(trb) != l0 && (kind == SF_RB || kind == SF_RINGTRACE ||
						       kind == SF_PAGED || kind == SF_PAGED_PUB)) {
			last = i;
			if (nmk < SF_N / 64)
				sf_mk[nmk++] = sf_t[i];
		} else if (sf_t[i] > slow) {
			others++;
			after += i == last + 1;
		}
	}
	qsort(sf_t, SF_N, sizeof(*sf_t), sf_u32);
	double k = 1.0 / tpn;
#define SF_CAL(x) ((x) > overhead ? (x)-overhead : 0) * k
	printf("  round %u %-10s p50 %6.1f  p99.9 %6.1f  p99.99 %6.1f  max %9.1f ns", round,
	       sf_names[kind], SF_CAL(sf_rank(sf_t, SF_N, 0.5)), SF_CAL(sf_rank(sf_t, SF_N, 0.999)),
	       SF_CAL(sf_rank(sf_t, SF_N, 0.9999)), SF_CAL(sf_t[SF_N - 1]));
	sf_pcts("switches", sf_sw, nsw, overhead, k);
	sf_pcts("marks", sf_mk, nmk, overhead, k);
	printf("   others > 30 ns %u (just after one of those %u)\n", others, after);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: switch_floor DIR   (a session's output directory)\n");
		return 2;
	}
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
	int pf = MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE;
	sf_flat = mmap(NULL, SF_POOL, PROT_READ | PROT_WRITE, pf, -1, 0);
	sf_pool = mmap(NULL, SF_POOL, PROT_READ | PROT_WRITE, pf, -1, 0);
	sf_t = mmap(NULL, SF_N * sizeof(*sf_t), PROT_READ | PROT_WRITE, pf, -1, 0);
	sf_sw = malloc(SF_N / 64 * sizeof(*sf_sw));
	sf_mk = malloc(SF_N / 64 * sizeof(*sf_mk));
	if (sf_flat == MAP_FAILED || sf_pool == MAP_FAILED || sf_t == MAP_FAILED || !sf_sw ||
	    !sf_mk) {
		perror("switch_floor: mmap");
		return 1;
	}
	memset(sf_flat, 1, SF_POOL);
	memset(sf_pool, 1, SF_POOL);
	memset(sf_t, 0, SF_N * sizeof(*sf_t));
	sf_open(0, __rdtsc());

	struct ringtrace_session_config c;
	ringtrace_session_config_init(&c);
	c.output_dir = argv[1];
	c.events = "cmp_int";
	c.mode = RINGTRACE_RB_OVERWRITE;
	c.pool_size = SF_POOL;
	if (ringtrace_session_start(&c) < 0) {
		fprintf(stderr, "switch_floor: %s\n", ringtrace_last_error());
		return 1;
	}
	struct ringtrace_rb_config rc;
	ringtrace_rb_config_init(&rc);
	rc.page_size = SF_PAGE;
	rc.pool_size = SF_POOL;
	rc.mode = RINGTRACE_RB_OVERWRITE;
	if (ringtrace_rb_create(&rc, &sf_rb) < 0) {
		fprintf(stderr, "switch_floor: rb: %s\n", ringtrace_last_error());
		return 1;
	}

	/* The timer: its median empty region; ticks per ns over the run. */
	uint64_t n0 = cmp_now_ns(), k0 = __rdtsc();
	for (uint32_t i = 0; i < 100000; i++) {
		uint64_t a = cmp_tick_begin();
		sf_t[i] = (uint32_t)(cmp_tick_end() - a);
	}
	qsort(sf_t, 100000, sizeof(*sf_t), sf_u32);
	uint32_t overhead = sf_t[50000];
	struct timespec pause = {0, 50000000};
	nanosleep(&pause, NULL);
	double tpn = (double)(__rdtsc() - k0) / (double)(cmp_now_ns() - n0);
	printf("timer %u ticks (subtracted), %.3f ticks/ns; %u calls a case after %u, times kept "
	       "in a 4 MB array as bench/compare does\n",
	       overhead, tpn, SF_N, SF_WARM);
	for (uint32_t r = 1; r <= SF_ROUNDS; r++)
		for (int kind = 0; kind < SF_KINDS; kind++)
			sf_case(kind, overhead, tpn, r);
	uint64_t sum = sf.overrun + sf_pos;
	for (uint32_t i = 0; i < SF_POOL; i += 8)
		sum += *(uint64_t *)(void *)(sf_flat + i) + *(uint64_t *)(void *)(sf_pool + i);
	printf("(the minimal tracers' records, summed: %llu)\n", (unsigned long long)sum);
	ringtrace_rb_destroy(sf_rb);
	if (ringtrace_session_stop() < 0) {
		fprintf(stderr, "switch_floor: stop: %s\n", ringtrace_last_error());
		return 1;
	}
	return 0;
}
