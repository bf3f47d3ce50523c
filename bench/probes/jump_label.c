/*
 * bench/probes/jump_label.c - what would a patched-code switch save over
 * ringtrace's load-and-branch check of a disabled tracepoint?
 *
 * ringtrace's call site tests the event's `state` word (a relaxed load and
 * a predicted branch). The kernel's tracepoints instead patch the code: a
 * jump label (a 5-byte nop that becomes a jmp to the out-of-line call when
 * the event is enabled), or, in the markers of the Kernel Markers
 * microbenchmark, an immediate value (`mov $0, %al; test; jne`, the 0
 * patched to 1). Neither reads data, so neither meets a cache miss when
 * the loop around it has evicted the state word. This probe times, in the
 * loops of `ringtrace-bench tp --memcpy`, each against the same loop with
 * no check:
 *
 *   load    ringtrace's check, reproduced (one relaxed load of a word on a
 *           line of its own, __builtin_expect, a call out of line)
 *   jump    a jump label: `.p2align 3` then the 5-byte nop (0f 1f 44 00 00),
 *           its address and the out-of-line label in a section of sites
 *   imm     an immediate value: `mov $0, %al` (b0 00), then test and jne
 *
 * Switching (jl_set): each site's bytes are rewritten while other threads
 * may be executing them, in the way that keeps them safe without
 * stopping them: the new instruction is written with one aligned store
 * (the jump: the 8-byte word that holds the whole 5-byte instruction,
 * which `.p2align 3` keeps from straddling two words; the immediate: its
 * one byte), so that a thread fetches the old instruction or the new one,
 * never a mix; the page is made writable for the store and executable-only
 * again after it (mprotect), and membarrier(PRIVATE_EXPEDITED_SYNC_CORE)
 * then makes every thread of the process execute a core-serializing
 * instruction before it returns, as Intel's rule for cross-modifying code
 * asks, so that no thread runs the old instruction after the switch has
 * returned. (The kernel's text_poke_bp writes an int3 first instead, so
 * that no alignment is needed; a library could not own SIGTRAP.)
 *
 * Cases (loops as tp_pressure.c's): tight loop; memcpy 4 KiB (in cache);
 * memcpy 4 KiB sweeping 8 MiB; the same with the state word's line
 * flushed (clflush, in every loop of the case) after each copy. The
 * loops of a case alternate in ~1 ms chunks, in blocks of 4 rounds whose
 * orders make each loop follow each other loop once; per block each
 * check's mean less the plain loop's; median over blocks and its
 * distribution-free 95% interval; blocks go on until every interval is
 * at most 0.1 ns wide or the case's time is up.
 *
 * Then the switch itself: enabled, each check takes its out-of-line path
 * (counted); the time of one switch (jl_set); and a thread that runs the
 * patched loop without pause while the main thread switches it on and off
 * 2,000 times, to show the switch is safe for a running thread (a torn
 * instruction would crash it or jump elsewhere; its calls of the
 * out-of-line function are counted).
 *
 * Built by CMake on x86-64 Linux (build/bin/probe-jump-label); run:
 *   taskset -c 0 build/bin/probe-jump-label [SECONDS_PER_CASE]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define JL_COPY 4096u
#define JL_SWEEP (8u << 20)
#define JL_CHUNK_NS 1000000.0
#define JL_MIN_ROUNDS 15 /* blocks of 4 rounds */
#define JL_MAX_ROUNDS 100000
#define JL_KEEP(i) __asm__ __volatile__("" : "+r"(i))

/* ---- the checks ------------------------------------------------------------- */

/* ringtrace's: the word leads a line of its own, as `state` leads the event's descriptor */
static struct {
	uint32_t state;
} jl_desc __attribute__((aligned(64)));

static volatile uint64_t jl_calls; /* the out-of-line path's calls */

static __attribute__((noinline, cold)) void jl_slow(int v)
{
	(void)v;
	jl_calls = jl_calls + 1;
}

/* a jump label: the nop, or (enabled) a jmp to l_on */
static inline __attribute__((always_inline)) int jl_jump(void)
{
	__asm__ goto(".p2align 3\n"
		     "1: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
		     ".pushsection jl_jumps, \"aw\"\n"
		     ".balign 8\n"
		     ".quad 1b, %l[l_on]\n"
		     ".popsection\n"
		     :
		     :
		     :
		     : l_on);
	return 0;
l_on:
	return 1;
}

/* an immediate value: mov $0, %al (b0 00); the 0 is patched */
static inline __attribute__((always_inline)) int jl_imm(void)
{
	uint8_t v;
	__asm__ __volatile__("1: movb $0, %0\n"
			     ".pushsection jl_imms, \"aw\"\n"
			     ".balign 8\n"
			     ".quad 1b\n"
			     ".popsection\n"
			     : "=a"(v));
	return v;
}

struct jl_jump_site {
	uint64_t code, target;
};
extern struct jl_jump_site __start_jl_jumps[], __stop_jl_jumps[];
extern uint64_t __start_jl_imms[], __stop_jl_imms[];

#define CHECK_NONE(i) ((void)0)
#define CHECK_LOAD(i)                                                                       \
	do {                                                                                \
		if (__builtin_expect(__atomic_load_n(&jl_desc.state, __ATOMIC_RELAXED), 0)) \
			jl_slow((int)(i));                                                  \
	} while (0)
#define CHECK_JUMP(i)                      \
	do {                               \
		if (jl_jump())             \
			jl_slow((int)(i)); \
	} while (0)
#define CHECK_IMM(i)                               \
	do {                                       \
		if (__builtin_expect(jl_imm(), 0)) \
			jl_slow((int)(i));         \
	} while (0)

/* ---- the loops -------------------------------------------------------------- */

static uint8_t *jl_src, *jl_dst;
static size_t jl_mask;

static inline void jl_flush_state(void)
{
	__builtin_ia32_clflush((const void *)&jl_desc.state);
}

#define JL_TIGHT(fname, CHECK)                                  \
	static __attribute__((noinline)) void fname(uint64_t n) \
	{                                                       \
		for (uint64_t i = 0; i < n; i++) {              \
			CHECK(i);                               \
			JL_KEEP(i);                             \
		}                                               \
	}
#define JL_COPYLOOP(fname, CHECK, FLUSH)                                  \
	static __attribute__((noinline)) void fname(uint64_t n)           \
	{                                                                 \
		uint8_t *src = jl_src, *dst = jl_dst;                     \
		size_t mask = jl_mask;                                    \
		for (uint64_t i = 0; i < n; i++) {                        \
			CHECK(i);                                         \
			size_t o = ((size_t)i * JL_COPY) & mask;          \
			memcpy(dst + o, src + o, JL_COPY);                \
			if (FLUSH)                                        \
				jl_flush_state();                         \
			__asm__ __volatile__("" : : "r"(dst) : "memory"); \
			JL_KEEP(i);                                       \
		}                                                         \
	}
JL_TIGHT(tight_none, CHECK_NONE)
JL_TIGHT(tight_load, CHECK_LOAD)
JL_TIGHT(tight_jump, CHECK_JUMP)
JL_TIGHT(tight_imm, CHECK_IMM)
JL_COPYLOOP(copy_none, CHECK_NONE, 0)
JL_COPYLOOP(copy_load, CHECK_LOAD, 0)
JL_COPYLOOP(copy_jump, CHECK_JUMP, 0)
JL_COPYLOOP(copy_imm, CHECK_IMM, 0)
JL_COPYLOOP(flush_none, CHECK_NONE, 1)
JL_COPYLOOP(flush_load, CHECK_LOAD, 1)
JL_COPYLOOP(flush_jump, CHECK_JUMP, 1)
JL_COPYLOOP(flush_imm, CHECK_IMM, 1)

typedef void (*jl_fn)(uint64_t);
enum { K_NONE, K_LOAD, K_JUMP, K_IMM, NK };
static const char *const jl_kind[NK] = {"none", "load", "jump", "imm"};

static const struct jl_case {
	const char *name;
	jl_fn fn[NK];
	size_t span;
} jl_cases[] = {
	{"tight loop", {tight_none, tight_load, tight_jump, tight_imm}, JL_COPY},
	{"memcpy 4 KiB", {copy_none, copy_load, copy_jump, copy_imm}, JL_COPY},
	{"memcpy 4 KiB sweeping 8 MiB", {copy_none, copy_load, copy_jump, copy_imm}, JL_SWEEP},
	{"memcpy 4 KiB sweeping 8 MiB, state line flushed",
	 {flush_none, flush_load, flush_jump, flush_imm},
	 JL_SWEEP},
};

/* ---- the switch -------------------------------------------------------------- */

static long jl_page;

static int jl_membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* Makes [p, p + len) writable (on) or executable-only again (off). */
static void jl_protect(void *p, size_t len, int writable)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(jl_page - 1);
	uintptr_t e = ((uintptr_t)p + len + (uintptr_t)jl_page - 1) & ~(uintptr_t)(jl_page - 1);
	int prot = PROT_READ | PROT_EXEC | (writable ? PROT_WRITE : 0);
	if (mprotect((void *)a, e - a, prot) != 0) {
		fprintf(stderr, "jump_label: mprotect: %s (a W^X policy?)\n", strerror(errno));
		exit(1);
	}
}

/* Every jump site to a jmp (on) or the nop, every immediate to 1 or 0. */
static void jl_set(int on)
{
	static const uint8_t nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	for (struct jl_jump_site *s = __start_jl_jumps; s < __stop_jl_jumps; s++) {
		uint8_t *code = (uint8_t *)(uintptr_t)s->code;
		uint64_t *word = (uint64_t *)((uintptr_t)code & ~(uintptr_t)7);
		size_t off = (size_t)(code - (uint8_t *)word);
		uint8_t b[8];
		uint64_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
		memcpy(b, &w, 8);
		if (on) {
			int32_t rel = (int32_t)((int64_t)s->target - (int64_t)(s->code + 5));
			b[off] = 0xe9;
			memcpy(b + off + 1, &rel, 4);
		} else {
			memcpy(b + off, nop5, 5);
		}
		memcpy(&w, b, 8);
		jl_protect(word, 8, 1);
		__atomic_store_n(word, w, __ATOMIC_RELEASE); /* one aligned store */
		jl_protect(word, 8, 0);
	}
	for (uint64_t *s = __start_jl_imms; s < __stop_jl_imms; s++) {
		uint8_t *imm = (uint8_t *)(uintptr_t)*s + 1;
		jl_protect(imm, 1, 1);
		__atomic_store_n(imm, (uint8_t)(on ? 1 : 0), __ATOMIC_RELEASE);
		jl_protect(imm, 1, 0);
	}
	if (jl_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) != 0) {
		fprintf(stderr, "jump_label: membarrier(SYNC_CORE): %s\n", strerror(errno));
		exit(1);
	}
}

/* Checks the sites are what the probe expects before it patches any. */
static void jl_check_sites(void)
{
	for (struct jl_jump_site *s = __start_jl_jumps; s < __stop_jl_jumps; s++)
		if ((s->code & 7) > 3 ||
		    memcmp((void *)(uintptr_t)s->code, "\x0f\x1f\x44\x00\x00", 5)) {
			fprintf(stderr,
				"jump_label: a jump site straddles a word or is not the nop\n");
			exit(1);
		}
	for (uint64_t *s = __start_jl_imms; s < __stop_jl_imms; s++)
		if (memcmp((void *)(uintptr_t)*s, "\xb0\x00", 2)) {
			fprintf(stderr, "jump_label: an immediate site is not mov $0, %%al\n");
			exit(1);
		}
}

/* ---- timing ------------------------------------------------------------------ */

static uint64_t jl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double jl_time(jl_fn fn, uint64_t n)
{
	uint64_t t0 = jl_now();
	fn(n);
	return (double)(jl_now() - t0) / (double)n;
}

static int jl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct jl_stat {
	double med, lo, hi;
};

/* median of d[0..n) and its distribution-free 95% interval (s: scratch) */
static struct jl_stat jl_interval(const double *d, double *s, int n)
{
	memcpy(s, d, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), jl_cmp);
	double h = 0.98 * sqrt((double)n);
	int l = (int)floor(n / 2.0 - h), u = (int)ceil(n / 2.0 + h);
	struct jl_stat r = {n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s[l < 0 ? 0 : l],
			    s[u > n - 1 ? n - 1 : u]};
	return r;
}

/* d[k][r]: check k's loop less the plain loop in round r; base[r]: the plain loop */
static double *jl_d[NK], *jl_base, *jl_scratch;

/* Alternates the case's loops until every check is resolved or time is up. */
static void jl_run_case(const struct jl_case *c, double seconds)
{
	jl_mask = c->span - 1;
	for (int k = 0; k < NK; k++)
		c->fn[k](1000);
	double ns = jl_time(c->fn[K_NONE], 10000);
	uint64_t chunk = (uint64_t)(JL_CHUNK_NS / (ns > 0.01 ? ns : 0.01));
	chunk = chunk < 100 ? 100 : chunk;
	uint64_t end = jl_now() + (uint64_t)(seconds * 1e9);
	int n = 0, resolved = 0;
	double t[NK];
	while (n < JL_MAX_ROUNDS && !resolved) {
		/* a block of 4 rounds in the orders of a balanced Latin square:
		 * each loop follows each other loop once, so what a loop leaves
		 * in the caches for the next cancels within the block */
		static const int order[NK][NK] = {
			{0, 1, 3, 2}, {1, 2, 0, 3}, {2, 3, 1, 0}, {3, 0, 2, 1}};
		for (int k = 0; k < NK; k++)
			t[k] = 0;
		for (int r = 0; r < NK; r++)
			for (int j = 0; j < NK; j++)
				t[order[r][j]] += jl_time(c->fn[order[r][j]], chunk) / NK;
		jl_base[n] = t[K_NONE];
		for (int k = 1; k < NK; k++)
			jl_d[k][n] = t[k] - t[K_NONE];
		n++;
		if (n >= JL_MIN_ROUNDS && n % 5 == 0) {
			resolved = 1;
			for (int k = 1; k < NK; k++) {
				struct jl_stat st = jl_interval(jl_d[k], jl_scratch, n);
				resolved &= st.hi - st.lo <= 0.1;
			}
		}
		if (jl_now() >= end && n >= JL_MIN_ROUNDS)
			break;
	}
	struct jl_stat b = jl_interval(jl_base, jl_scratch, n);
	printf("%s: plain loop %.2f ns (%d rounds of %llu)%s\n", c->name, b.med, NK * n,
	       (unsigned long long)chunk, resolved ? "" : " NOT RESOLVED to 0.1 ns");
	for (int k = 1; k < NK; k++) {
		struct jl_stat st = jl_interval(jl_d[k], jl_scratch, n);
		printf("  %-5s %+8.3f ns [95%% %+.3f, %+.3f]\n", jl_kind[k], st.med, st.lo, st.hi);
	}
	fflush(stdout);
}

/* ---- the switch under a running thread ----------------------------------------- */

static volatile int jl_stop;

static void *jl_runner(void *arg)
{
	uint64_t *iters = arg;
	while (!jl_stop) {
		tight_jump(1000);
		tight_imm(1000);
		*iters += 2000;
	}
	return NULL;
}

static void jl_switch_checks(void)
{
	jl_calls = 0;
	jl_set(1);
	__atomic_store_n(&jl_desc.state, 1, __ATOMIC_RELAXED);
	tight_jump(1000);
	tight_imm(1000);
	tight_load(1000);
	uint64_t on = jl_calls;
	jl_set(0);
	__atomic_store_n(&jl_desc.state, 0, __ATOMIC_RELAXED);
	tight_jump(1000);
	tight_imm(1000);
	tight_load(1000);
	printf("switched on: %llu of 3000 checks took the out-of-line path; off: %llu\n",
	       (unsigned long long)on, (unsigned long long)(jl_calls - on));

	enum { SWITCHES = 2000 };
	uint64_t t0 = jl_now();
	for (int i = 0; i < 1000; i++)
		jl_set(i & 1);
	double per = (double)(jl_now() - t0) / 1000.0;
	printf("one switch (%zu jump and %zu immediate sites: mprotect, store, mprotect each; "
	       "membarrier): %.1f us\n",
	       (size_t)(__stop_jl_jumps - __start_jl_jumps),
	       (size_t)(__stop_jl_imms - __start_jl_imms), per / 1000.0);

	uint64_t iters = 0;
	pthread_t th;
	jl_calls = 0;
	if (pthread_create(&th, NULL, jl_runner, &iters) != 0) {
		fprintf(stderr, "jump_label: pthread_create failed\n");
		exit(1);
	}
	while (!__atomic_load_n(&iters, __ATOMIC_RELAXED))
		sched_yield();
	for (int i = 0; i < SWITCHES; i++)
		jl_set(!(i & 1));
	jl_stop = 1;
	pthread_join(th, NULL);
	printf("a thread ran the patched loops %llu times while they were switched %d times: "
	       "no fault, %llu out-of-line calls\n",
	       (unsigned long long)iters, SWITCHES, (unsigned long long)jl_calls);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 20;
	if (argc > 2 || !(seconds > 0)) {
		fprintf(stderr, "usage: probe-jump-label [SECONDS_PER_CASE]   (default 20)\n");
		return 2;
	}
	jl_page = sysconf(_SC_PAGESIZE);
	if (jl_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) != 0) {
		fprintf(stderr, "jump_label: membarrier register SYNC_CORE: %s\n", strerror(errno));
		return 1;
	}
	jl_check_sites();
	jl_src = mmap(NULL, JL_SWEEP, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	jl_dst = mmap(NULL, JL_SWEEP, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	for (int k = 0; k < NK; k++)
		jl_d[k] = malloc(sizeof(double) * JL_MAX_ROUNDS);
	jl_base = jl_d[0];
	jl_scratch = malloc(sizeof(double) * JL_MAX_ROUNDS);
	if (jl_src == MAP_FAILED || jl_dst == MAP_FAILED || !jl_d[1] || !jl_d[2] || !jl_d[3] ||
	    !jl_base || !jl_scratch) {
		fprintf(stderr, "jump_label: out of memory\n");
		return 1;
	}
	memset(jl_src, 0x5a, JL_SWEEP);
	memset(jl_dst, 0, JL_SWEEP);
	printf("disabled checks, ns per iteration over the plain loop (median of per-round "
	       "differences, 95%% interval)\n");
	for (size_t c = 0; c < sizeof(jl_cases) / sizeof(jl_cases[0]); c++)
		jl_run_case(&jl_cases[c], seconds);
	jl_switch_checks();
	return 0;
}
