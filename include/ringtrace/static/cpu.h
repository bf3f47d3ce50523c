/*
 * ringtrace/static/cpu.h - the few machine instructions ringtrace depends on.
 *
 * VERSION-LOCKED INLINE CODE, NOT AN API (see ringtrace/static/layout.h).
 *
 * This file is the one place that reads the cycle counter: the library's
 * clock (src/base/clock.c) and the inline write path both use it.
 */
#ifndef RINGTRACE_STATIC_CPU_H
#define RINGTRACE_STATIC_CPU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The invariant cycle counter: the TSC on x86, the virtual counter on
 * arm64, read as its two halves. 1 where the machine has one, else 0 (the
 * caller falls back to CLOCK_MONOTONIC). Whether the TSC is invariant is
 * decided once by the library (src/base/clock.c); a buffer whose clock is
 * not the counter never takes the inline path.
 *
 * Halves, for the inline write path, which needs no 64-bit value: an
 * event header holds the low half, and its tests compare each half with
 * the previous event's. On x86 `rdtsc` returns the halves in two
 * registers; joining them (a shift and an or) and taking the low half
 * back out would put two more instructions between the counter and the
 * header's store, on every event's path. Both 0 where there is no
 * counter.
 */
static inline __attribute__((always_inline)) int ringtrace_hw_ticks_halves_(uint64_t *lo,
									    uint32_t *hi)
{
#if defined(__x86_64__)
	/* (rdtsc clears the registers' upper halves: lo needs no zero
	 * extension to be or-ed into a header) */
	uint64_t a, d;
	__asm__ __volatile__("rdtsc" : "=a"(a), "=d"(d));
	*lo = a;
	*hi = (uint32_t)d;
	return 1;
#elif defined(__i386__)
	uint32_t a, d;
	__asm__ __volatile__("rdtsc" : "=a"(a), "=d"(d));
	*lo = a;
	*hi = d;
	return 1;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	*lo = (uint32_t)v;
	*hi = (uint32_t)(v >> 32);
	return 1;
#else
	*lo = *hi = 0;
	return 0;
#endif
}

/* The same reading as one 64-bit value (the library's clock). */
static inline __attribute__((always_inline)) int ringtrace_hw_ticks_(uint64_t *ts)
{
	uint64_t lo;
	uint32_t hi;
	int hw = ringtrace_hw_ticks_halves_(&lo, &hi);
	*ts = (uint64_t)hi << 32 | lo;
	return hw;
}

/* A pause in a spin loop (lets the sibling hyperthread run). */
static inline void ringtrace_cpu_relax_(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/*
 * Add 1 to a counter that only the calling thread writes and other threads
 * read (relaxed): on x86-64 one add to memory instead of a load and a
 * store (one instruction fewer on the write path; an aligned 8-byte
 * store, so readers never see a torn value). Elsewhere, and under
 * ThreadSanitizer (which must see the access as atomic), a relaxed atomic
 * load and store. Callers hold the writer slot's nest flag, so no signal
 * handler of the thread writes the counter in between either way.
 */
#if defined(__x86_64__) && !defined(RINGTRACE_TSAN) && !defined(__SANITIZE_THREAD__)
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RINGTRACE_INC_ATOMIC_ 1
#endif
#endif
#else
#define RINGTRACE_INC_ATOMIC_ 1
#endif
static inline __attribute__((always_inline)) void ringtrace_inc_own_(uint64_t *c)
{
#ifndef RINGTRACE_INC_ATOMIC_
	__asm__ __volatile__("addq $1, %0" : "+m"(*c));
#else
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
#endif
}

/*
 * Whether a word that other threads store to (relaxed) is non-zero: on
 * x86-64 one compare of memory with 0, which needs no register (a
 * relaxed atomic load is loaded into one first, and on the recording
 * path that one register more is one the compiler saves and restores on
 * every event); an aligned 4-byte load, atomic as the atomic load is.
 * Volatile and with a memory input: the compiler keeps it where the
 * program has it, after the fences before it. Elsewhere, and under
 * ThreadSanitizer, a relaxed atomic load.
 */
static inline __attribute__((always_inline)) int ringtrace_nonzero_(const uint32_t *w)
{
#ifndef RINGTRACE_INC_ATOMIC_
	int r;
	__asm__ __volatile__("cmpl $0, %1" : "=@ccne"(r) : "m"(*w));
	return r;
#else
	return __atomic_load_n(w, __ATOMIC_RELAXED) != 0;
#endif
}
#undef RINGTRACE_INC_ATOMIC_

#ifdef __cplusplus
}
#endif
#endif /* RINGTRACE_STATIC_CPU_H */
