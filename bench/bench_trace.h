/*
 * bench/bench_trace.h - what the reading benchmarks (`report`, `query`)
 * share: a trace of N one-int events recorded in-process, the trace
 * directory's size and removal, and the `ringtrace` tool timed as a
 * child process.
 *
 * Every function takes `cmd`, the subcommand's name, for its messages
 * ("ringtrace-bench CMD: ...", on stderr).
 */
#ifndef RINGTRACE_BENCH_TRACE_H
#define RINGTRACE_BENCH_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* Remove DIR and everything in it: 0 (also if it did not exist), or -1 (said). */
int bench_remove_tree(const char *cmd, const char *dir);

/* Total size of the regular files under DIR. */
uint64_t bench_tree_bytes(const char *dir);

/*
 * T threads emit N bench_int events (the one-int event) as fast as they
 * can into an in-process session (discard mode) writing DIR, removed
 * first. The default buffer first; if it dropped events, again with a
 * 256 MiB pool. 0 with every event recorded (the metadata's `stat hit`
 * and `stat missed`), or -1 (said).
 */
int bench_record_ints(const char *cmd, const char *dir, uint64_t events, unsigned threads);

/*
 * Run argv (argv[0] a path, or a name looked up in PATH if `search`) with
 * stdout on /dev/null (or into out[0..outsize-1], NUL-terminated, if out
 * is not NULL), stderr inherited (or on /dev/null too if `quiet`). Seconds
 * of wall time, or NAN if it could not be started or did not exit 0
 * (said, unless `quiet`); *status gets its exit status (-1: not started
 * or killed) if not NULL.
 */
double bench_time_command(const char *cmd, char *const argv[], int search, int quiet, char *out,
			  size_t outsize, int *status);

/*
 * From now on (on: 1) bench_time_command also samples its child's peak
 * resident memory (VmHWM, every 2 ms, which delays noticing its exit by
 * up to that much); bench_last_child_peak_kb() gives the last child's,
 * in KiB (-1: not sampled).
 */
void bench_measure_child_peak(int on);
long bench_last_child_peak_kb(void);

/* Median of `runs` (at most 9) timed runs (stdout on /dev/null); NAN if any failed. */
double bench_time_median(const char *cmd, char *const argv[], int runs);

/* Is `name` an executable file in a directory of PATH? */
int bench_in_path(const char *name);

/* The path of `name` in the directory of this executable, into path; -1 if
 * it is not there (said). */
int bench_find_sibling(const char *cmd, const char *name, char *path, size_t size);

#endif /* RINGTRACE_BENCH_TRACE_H */
