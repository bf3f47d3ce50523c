/*
 * bench/bench.h - subcommands of ringtrace-bench.
 *
 * Each subcommand gets argv with argv[0] = its own name and returns the
 * process exit status: 0 success, 1 the measurement or a check failed,
 * 2 usage error (message already on stderr).
 */
#ifndef RINGTRACE_BENCH_H
#define RINGTRACE_BENCH_H

#define BENCH_EXIT_OK 0
#define BENCH_EXIT_FAIL 1
#define BENCH_EXIT_USAGE 2

int rb_bench_main(int argc, char **argv);
int tp_bench_main(int argc, char **argv);
int filter_bench_main(int argc, char **argv);
int event_bench_main(int argc, char **argv);
int record_bench_main(int argc, char **argv);
int report_bench_main(int argc, char **argv);
int start_bench_main(int argc, char **argv);
int query_bench_main(int argc, char **argv);
int stall_bench_main(int argc, char **argv);

#endif /* RINGTRACE_BENCH_H */
