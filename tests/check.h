/*
 * tests/check.h - a tiny assertion helper for the ringtrace tests.
 *
 * CHECK(expr)              fails with file:line and the expression.
 * CHECKF(expr, fmt, ...)   same, plus a printf-style explanation.
 * CHECK_EQ_U64(a, b)       compares two integers and prints both values.
 * CHECK_OK(call)           the call must return >= 0; prints the error code,
 *                          its name and ringtrace_last_error() otherwise.
 *
 * A failure prints to stderr and exits the process with status 1 (from any
 * thread). Checks are always on: they do not depend on NDEBUG.
 */
#ifndef RINGTRACE_TESTS_CHECK_H
#define RINGTRACE_TESTS_CHECK_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringtrace/ring.h"

#if defined(__GNUC__)
#define CHECK_UNUSED __attribute__((unused))
#define CHECK_NORETURN __attribute__((noreturn))
#define CHECK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CHECK_UNUSED
#define CHECK_NORETURN
#define CHECK_PRINTF(a, b)
#endif

static CHECK_UNUSED CHECK_NORETURN CHECK_PRINTF(4, 5) void
check_fail_(const char *file, int line, const char *expr, const char *fmt, ...)
{
	fprintf(stderr, "%s:%d: CHECK FAILED: %s\n", file, line, expr);
	if (fmt && fmt[0]) {
		va_list ap;
		va_start(ap, fmt);
		fprintf(stderr, "    ");
		vfprintf(stderr, fmt, ap);
		fprintf(stderr, "\n");
		va_end(ap);
	}
	fflush(stderr);
	fflush(stdout);
	exit(1);
}

#define CHECK(expr)                                                            \
	do {                                                                   \
		if (!(expr))                                                   \
			check_fail_(__FILE__, __LINE__, #expr, "%s", "");     \
	} while (0)

#define CHECKF(expr, ...)                                                      \
	do {                                                                   \
		if (!(expr))                                                   \
			check_fail_(__FILE__, __LINE__, #expr, __VA_ARGS__);   \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                     \
	do {                                                                   \
		uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b);   \
		if (check_a_ != check_b_)                                      \
			check_fail_(__FILE__, __LINE__, #a " == " #b,          \
				    "%" PRIu64 " != %" PRIu64, check_a_,       \
				    check_b_);                                 \
	} while (0)

#define CHECK_OK(call)                                                         \
	do {                                                                   \
		long check_rc_ = (long)(call);                                 \
		if (check_rc_ < 0)                                             \
			check_fail_(__FILE__, __LINE__, #call,                 \
				    "returned %ld (%s): %s", check_rc_,        \
				    ringtrace_strerror((int)check_rc_),        \
				    ringtrace_last_error());                   \
	} while (0)

/* Iteration scaling: sanitizer builds run fewer iterations. */
#ifdef RINGTRACE_SANITIZED
#define CHECK_SCALE(normal, sanitized) (sanitized)
#else
#define CHECK_SCALE(normal, sanitized) (normal)
#endif

static CHECK_UNUSED void check_print_stats(const char *what, const struct ringtrace_rb_stats *st)
{
	fprintf(stderr,
		"    %s: entries=%" PRIu64 " hit=%" PRIu64 " missed=%" PRIu64
		" overrun=%" PRIu64 " read=%" PRIu64 " published=%" PRIu64
		" flushed=%" PRIu64 " writers_active=%u pages_free=%u\n",
		what, st->entries, st->hit, st->missed, st->overrun, st->read,
		st->pages_published, st->pages_flushed, st->writers_active,
		st->pages_free);
}

/* hit == read + overrun + entries, printing the stats on failure. */
#define CHECK_STATS_BALANCED(st)                                               \
	do {                                                                   \
		if ((st)->hit != (st)->read + (st)->overrun + (st)->entries) { \
			check_print_stats(#st, (st));                          \
			check_fail_(__FILE__, __LINE__,                        \
				    "hit == read + overrun + entries", "%s",   \
				    "");                                       \
		}                                                              \
	} while (0)

#endif /* RINGTRACE_TESTS_CHECK_H */
