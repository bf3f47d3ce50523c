/*
 * tests/events_probes.h - events of test_event_probes (defined in the test
 * itself, which defines RINGTRACE_CREATE_EVENTS).
 */
#ifndef RINGTRACE_TESTS_EVENTS_PROBES_H
#define RINGTRACE_TESTS_EVENTS_PROBES_H

#include <stdint.h>

#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(pr_ev, RINGTRACE_PROTO(int a, const char *s, double d, uint64_t u),
		RINGTRACE_ARGS(a, s, d, u),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, a, a) ringtrace_string(s, s)
					 ringtrace_float(double, d, d)
						 ringtrace_integer(uint64_t, u, u)),
		RINGTRACE_PRINT("a=%d s=%s d=%g u=%llu"))

/* Called from a probe of pr_ev: a tracepoint nested in a tracepoint. */
RINGTRACE_EVENT(pr_inner, RINGTRACE_PROTO(int a), RINGTRACE_ARGS(a),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, a, a)), RINGTRACE_PRINT("a=%d"))

/* The one the threads hammer. */
RINGTRACE_EVENT(pr_hot, RINGTRACE_PROTO(uint32_t th, uint64_t seq), RINGTRACE_ARGS(th, seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, th, th)
					 ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("th=%u seq=%llu"))

#endif
