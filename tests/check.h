/*
 * tests/check.h - a tiny assertion helper and case runner for the ringtrace
 * tests.
 *
 * CHECK(expr)              fails with file:line and the expression.
 * CHECKF(expr, fmt, ...)   same, plus a printf-style explanation.
 * CHECK_EQ_U64(a, b)       compares two integers and prints both values.
 * CHECK_OK(call)           the call must return >= 0; prints the error code,
 *                          its name and ringtrace_last_error() otherwise.
 *
 * A failure prints to stderr (with the name of the case running) and exits
 * the process with status 1 (from any thread). Checks are always on: they
 * do not depend on NDEBUG.
 *
 * Cases. A test program proves several behaviours, each a case named after
 * what it proves and prefixed by its area (ring_churn_..., event_cache_...),
 * listed in a table that main() hands to the runner:
 *
 *   static const struct check_case cases[] = {
 *           CHECK_CASE(ring_fork_child_writes_its_own_stream, part_write),
 *           CHECK_CASE_ALONE(printf_disabled_by_default, test_disabled),
 *   };
 *   int main(int argc, char **argv) { return CHECK_MAIN(cases, argc, argv); }
 *
 *   prog              runs every case, in the table's order
 *   prog NAME...      runs the cases named, in the order given
 *   prog --list       prints the case names, one a line
 * A name that is not a case is a usage error (exit 2). Exit status: 0 when
 * every case run passed (or was skipped), 1 at the first failure, 77 when
 * every case run was skipped.
 *
 * Every case sets up what it needs, so that it passes alone and in any
 * order. CHECK_CASE_ALONE marks a case that needs a process in which no
 * other case has run (the first dlopen of a library, no printf call site
 * registered yet, no thread started yet): run after another case, the
 * runner runs it in a process of its own (this program re-executed with
 * the case's name).
 *
 * tests/CMakeLists.txt registers one CTest test per case, named after it,
 * reading the names from the source: keep each CHECK_CASE(name, fn) entry
 * on a line of its own, never inside #if. A CTest test checks that the
 * names registered and those --list prints are the same.
 *
 * CHECK_SKIP(fmt, ...) ends a case (in its own function body) as skipped,
 * with the reason printed: CTest shows it as "Skipped" (exit 77), never as
 * passed.
 */
#ifndef RINGTRACE_TESTS_CHECK_H
#define RINGTRACE_TESTS_CHECK_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* The case running (for failure messages), and whether it was skipped. */
static CHECK_UNUSED const char *check_case_name_;
static CHECK_UNUSED int check_case_skipped_;

static CHECK_UNUSED CHECK_NORETURN CHECK_PRINTF(4, 5) void check_fail_(const char *file, int line,
								       const char *expr,
								       const char *fmt, ...)
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
	if (check_case_name_)
		fprintf(stderr, "    in case %s\n", check_case_name_);
	fflush(stderr);
	fflush(stdout);
	exit(1);
}

#define CHECK(expr)                                                       \
	do {                                                              \
		if (!(expr))                                              \
			check_fail_(__FILE__, __LINE__, #expr, "%s", ""); \
	} while (0)

#define CHECKF(expr, ...)                                                    \
	do {                                                                 \
		if (!(expr))                                                 \
			check_fail_(__FILE__, __LINE__, #expr, __VA_ARGS__); \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                                       \
	do {                                                                                     \
		uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b);                     \
		if (check_a_ != check_b_)                                                        \
			check_fail_(__FILE__, __LINE__, #a " == " #b, "%" PRIu64 " != %" PRIu64, \
				    check_a_, check_b_);                                         \
	} while (0)

#define CHECK_OK(call)                                                                             \
	do {                                                                                       \
		long check_rc_ = (long)(call);                                                     \
		if (check_rc_ < 0)                                                                 \
			check_fail_(__FILE__, __LINE__, #call, "returned %ld (%s): %s", check_rc_, \
				    ringtrace_strerror((int)check_rc_), ringtrace_last_error());   \
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
		"    %s: entries=%" PRIu64 " hit=%" PRIu64 " missed=%" PRIu64 " overrun=%" PRIu64
		" read=%" PRIu64 " published=%" PRIu64 " flushed=%" PRIu64
		" writers_active=%u pages_free=%u\n",
		what, st->entries, st->hit, st->missed, st->overrun, st->read, st->pages_published,
		st->pages_flushed, st->writers_active, st->pages_free);
}

/* hit == read + overrun + entries, printing the stats on failure. */
#define CHECK_STATS_BALANCED(st)                                                                 \
	do {                                                                                     \
		if ((st)->hit != (st)->read + (st)->overrun + (st)->entries) {                   \
			check_print_stats(#st, (st));                                            \
			check_fail_(__FILE__, __LINE__, "hit == read + overrun + entries", "%s", \
				    "");                                                         \
		}                                                                                \
	} while (0)

/* ---- cases ---------------------------------------------------------------- */

/* Repeatable pseudo-random numbers for the differential tests: xorshift64
 * over a state each file seeds with a value of its own (a failure is then
 * the same in every run). */
static CHECK_UNUSED uint64_t check_rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One of 0 .. n-1 from check_rnd. */
static CHECK_UNUSED unsigned check_rndn(uint64_t *s, unsigned n)
{
	return (unsigned)(check_rnd(s) % n);
}

struct check_case {
	const char *name;
	void (*fn)(void);
	int alone; /* needs a process in which no other case has run */
};

#define CHECK_CASE(name, fn) \
	{                    \
#name, fn, 0 \
	}
#define CHECK_CASE_ALONE(name, fn) \
	{                          \
#name, fn, 1       \
	}
#define CHECK_EXIT_SKIPPED 77

static CHECK_UNUSED CHECK_PRINTF(1, 2) void check_skip_(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s: SKIPPED: ", check_case_name_ ? check_case_name_ : "?");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	check_case_skipped_ = 1;
}

/* Ends the case (call it in the case's own function) as skipped. */
#define CHECK_SKIP(...)                   \
	do {                              \
		check_skip_(__VA_ARGS__); \
		return;                   \
	} while (0)

/* The case in a process of its own: this program, re-executed with its
 * name. Returns 0 (passed), CHECK_EXIT_SKIPPED, or exits on a failure. */
static CHECK_UNUSED int check_run_alone_(const char *argv0, const struct check_case *c)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		char *args[] = {(char *)argv0, (char *)c->name, NULL};
		execv("/proc/self/exe", args);
		_exit(127);
	}
	CHECKF(pid > 0, "fork for case %s", c->name);
	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
	}
	CHECKF(w == pid, "waitpid for case %s", c->name);
	if (WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == CHECK_EXIT_SKIPPED))
		return WEXITSTATUS(st);
	fprintf(stderr, "case %s (run in a process of its own) failed: %s %d\n", c->name,
		WIFEXITED(st) ? "exit status" : "signal",
		WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	exit(1);
}

static CHECK_UNUSED int check_main_(const struct check_case *cases, size_t n, int argc, char **argv)
{
	const char *prog = argc > 0 ? argv[0] : "test";
	if (argc > 1 && (strcmp(argv[1], "--list") == 0 || strcmp(argv[1], "--help") == 0)) {
		if (argc > 2 || strcmp(argv[1], "--help") == 0) {
			fprintf(argc > 2 ? stderr : stdout,
				"usage: %s [--list | CASE...]\n"
				"  no argument: run every case; CASE...: run those, in that order;\n"
				"  --list: print the case names\n",
				prog);
			return argc > 2 ? 2 : 0;
		}
		for (size_t i = 0; i < n; i++)
			printf("%s\n", cases[i].name);
		return 0;
	}
	/* The cases to run, in order: all, or the ones named. */
	size_t nsel = argc > 1 ? (size_t)(argc - 1) : n;
	const struct check_case **sel = (const struct check_case **)calloc(nsel ? nsel : 1,
									   sizeof(*sel));
	CHECK(sel != NULL);
	for (size_t k = 0; k < nsel; k++) {
		if (argc <= 1) {
			sel[k] = &cases[k];
			continue;
		}
		for (size_t i = 0; i < n && !sel[k]; i++)
			if (strcmp(argv[k + 1], cases[i].name) == 0)
				sel[k] = &cases[i];
		if (!sel[k]) {
			fprintf(stderr, "%s: no case \"%s\" (%s --list prints them)\n", prog,
				argv[k + 1], prog);
			free(sel);
			return 2;
		}
	}
	size_t passed = 0, skipped = 0;
	for (size_t k = 0; k < nsel; k++) {
		const struct check_case *c = sel[k];
		int rc;
		if (c->alone && k > 0) {
			rc = check_run_alone_(prog, c);
		} else {
			check_case_name_ = c->name;
			check_case_skipped_ = 0;
			c->fn();
			rc = check_case_skipped_ ? CHECK_EXIT_SKIPPED : 0;
			if (!rc)
				printf("%s: OK\n", c->name);
			check_case_name_ = NULL;
		}
		fflush(stdout);
		if (rc == CHECK_EXIT_SKIPPED)
			skipped++;
		else
			passed++;
	}
	if (nsel > 1)
		printf("%s: %zu cases: %zu passed, %zu skipped\n", prog, nsel, passed, skipped);
	free(sel);
	return nsel && skipped == nsel ? CHECK_EXIT_SKIPPED : 0;
}

#define CHECK_MAIN(cases, argc, argv) \
	check_main_((cases), sizeof(cases) / sizeof((cases)[0]), (argc), (argv))

#endif /* RINGTRACE_TESTS_CHECK_H */
