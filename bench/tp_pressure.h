/*
 * bench/tp_pressure.h - `ringtrace-bench tp --memcpy`: a disabled
 * tracepoint's cost under cache pressure (tp_pressure.c).
 */
#ifndef RINGTRACE_BENCH_TP_PRESSURE_H
#define RINGTRACE_BENCH_TP_PRESSURE_H

/*
 * Runs the cases, each until the 95% interval of its median difference
 * is no wider than resolve_ns or it has run for `seconds`; prints them
 * (an unresolved case says so). The calling thread is already pinned and
 * bench_int is disabled. Returns 0, or 1 when out of memory.
 */
int tp_pressure_run(double seconds, double resolve_ns);

#endif /* RINGTRACE_BENCH_TP_PRESSURE_H */
