/*
 * bench/bench_events.h - the trace events of ringtrace-bench.
 *
 * Defined (RINGTRACE_CREATE_EVENTS) in bench/bench_events.c only, which
 * includes nothing else; every other file that includes this header gets
 * the inline call sites trace_<name>() and ringtrace_probe_register_<name>().
 */
#ifndef RINGTRACE_BENCH_EVENTS_H
#define RINGTRACE_BENCH_EVENTS_H

#include <stdint.h>

#include "ringtrace/tracepoint.h"

/* `tp`: the Linux Kernel Markers microbenchmark: one int, the cheapest event. */
RINGTRACE_EVENT(bench_int, RINGTRACE_PROTO(int v), RINGTRACE_ARGS(v),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, v, v)), RINGTRACE_PRINT("v=%d"))

/* `filter`: the event of the filter benchmark (`value & 1`, as the kernel's trace event benchmark filters). */
RINGTRACE_EVENT(bench_value, RINGTRACE_PROTO(int value), RINGTRACE_ARGS(value),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, value, value)),
		RINGTRACE_PRINT("value=%d"))

/* `filter`: an int and a string, for filters with a string glob. */
RINGTRACE_EVENT(bench_named, RINGTRACE_PROTO(int value, const char *name),
		RINGTRACE_ARGS(value, name),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, value, value)
					 ringtrace_string(name, name)),
		RINGTRACE_PRINT("value=%d name=%s"))

/* `filter`: a double, for a filter's float comparison. */
RINGTRACE_EVENT(bench_real, RINGTRACE_PROTO(double x), RINGTRACE_ARGS(x),
		RINGTRACE_FIELDS(ringtrace_float(double, x, x)), RINGTRACE_PRINT("x=%g"))

/*
 * `event`: the kernel's trace_benchmark: the string carries the
 * timing statistics of the previous calls.
 */
RINGTRACE_EVENT(benchmark_event, RINGTRACE_PROTO(const char *str), RINGTRACE_ARGS(str),
		RINGTRACE_FIELDS(ringtrace_string(str, str)), RINGTRACE_PRINT("%s"))

#endif /* RINGTRACE_BENCH_EVENTS_H */
