/*
 * Numbers on the ringtrace command line, parsed strictly: the whole
 * argument is the number (no sign, no blank, no base prefix, nothing
 * after it), it does not overflow, and it is in its range. strtol and
 * friends accept " +12abc" and wrap "-1" to the largest value: a process
 * id parsed that way once sent SIGUSR2 to pid -1 (every process the
 * caller may signal).
 *
 * Each returns 0, or -1 with `why` (at least 160 bytes) saying what is
 * wrong with the value, for the caller to print after the option's name.
 */
#ifndef RINGTRACE_TOOLS_ARGS_H
#define RINGTRACE_TOOLS_ARGS_H

#include <stddef.h>
#include <stdint.h>

/* Decimal digits only ("0" alone, no leading zero), at most max. */
int arg_u64(const char *s, uint64_t max, uint64_t *out, char *why, size_t whylen);

/* A process id: 1 .. the kernel's pid_max (/proc/sys/kernel/pid_max). */
int arg_pid(const char *s, int *out, char *why, size_t whylen);

/*
 * (A size in bytes: rt_parse_size_in, src/base/base.h, the library's own
 * parser, so that the command accepts exactly what the library does.)
 */

/*
 * Seconds as SEC[.FRACTION] (digits after the point up to nanoseconds,
 * more are refused rather than dropped), to nanoseconds, at most
 * UINT64_MAX ns (about 584 years).
 */
int arg_seconds(const char *s, uint64_t *ns, char *why, size_t whylen);

/*
 * The ring buffer geometry `ringtrace record` will ask for: page_size a
 * power of two in the ring's range, pool_size a multiple of it holding an
 * allowed number of pages (either 0: the library's default).
 */
int arg_pool_geometry(uint64_t pool_size, uint64_t page_size, char *why, size_t whylen);

/*
 * A usage error of verb (NULL: of the command): "ringtrace VERB: " and
 * fmt with arg, then where help is. Returns 2, the exit status.
 */
int arg_usage_error(const char *verb, const char *fmt, const char *arg);

#endif
